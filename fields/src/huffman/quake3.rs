//! Quake 3's message code, rebuilt by replaying its adaptive construction.
//!
//! Quake 3 builds its code once at start-up with an adaptive Huffman coder of
//! the FGK family: it starts from a tree holding only the "not yet
//! transmitted" (NYT) leaf and, for each byte value in order, adds one
//! reference to that byte as many times as [`QUAKE3_FREQUENCIES`] says. The
//! frozen tree is what both ends use from then on.
//!
//! Every detail of the update shapes the final tree, so the replay below keeps
//! the same state the original keeps and performs the same steps in the same
//! order:
//!
//! * all nodes sit in one doubly-linked list ordered by rank; the NYT node is
//!   its permanent head (lowest rank) and new nodes are linked in right after it;
//! * nodes of equal weight form a block whose *leader* (highest-ranked member)
//!   is stored in a slot that all members point to. Slots come from a pool
//!   with a LIFO free list, and are freed when their block empties;
//! * a new byte turns the NYT leaf into an internal node of weight 1 whose
//!   left child is the NYT leaf and whose right child is the new leaf (also
//!   weight 1), then increments the ancestors;
//! * incrementing a node first exchanges it, in the tree and in the list, with
//!   its block leader (unless the leader is its parent, in which case only the
//!   list positions are exchanged), moves the block leadership to the node
//!   just below, bumps the weight, joins or opens the block above, increments
//!   the parent and finally, if the parent now sits directly below the node
//!   in the list, exchanges their list positions too.
//!
//! Two quirks of the original matter for exactness and are reproduced on
//! purpose: the tree exchange rewires the first node's parent before looking
//! at the second's, so exchanging two siblings only takes effect when the
//! first one is the right child; and a block's leader slot is only updated
//! through the node being incremented, so other members may keep pointing at
//! a slot that has since been reused. Where the original would read a slot
//! that is on the free list (undefined behaviour in C), the replay stops with
//! [`HuffmanError::ReplayInconsistent`] instead; this never happens for
//! Quake 3's table.

use std::sync::OnceLock;

pub(super) mod adaptive;
mod words;

pub use words::{QUAKE3_CODE_WORDS, QUAKE3_NYT_WORD};

use super::{CodeWord, HuffmanCode, HuffmanError, MAX_CODE_LEN};

/// Quake 3's byte frequencies (`msg_hData` in ioquake3's `code/qcommon/msg.c`):
/// how often each byte value occurred in the message traffic id Software
/// sampled. Replaying them through the adaptive coder gives
/// [`HuffmanCode::quake3`].
#[rustfmt::skip]
pub const QUAKE3_FREQUENCIES: [u32; 256] = [
    250315, 41193, 6292, 7106, 3730, 3750, 6110, 23283,     // 0x00
    33317, 6950, 7838, 9714, 9257, 17259, 3949, 1778,       // 0x08
    8288, 1604, 1590, 1663, 1100, 1213, 1238, 1134,         // 0x10
    1749, 1059, 1246, 1149, 1273, 4486, 2805, 3472,         // 0x18
    21819, 1159, 1670, 1066, 1043, 1012, 1053, 1070,        // 0x20
    1726, 888, 1180, 850, 960, 780, 1752, 3296,             // 0x28
    10630, 4514, 5881, 2685, 4650, 3837, 2093, 1867,        // 0x30
    2584, 1949, 1972, 940, 1134, 1788, 1670, 1206,          // 0x38
    5719, 6128, 7222, 6654, 3710, 3795, 1492, 1524,         // 0x40
    2215, 1140, 1355, 971, 2180, 1248, 1328, 1195,          // 0x48
    1770, 1078, 1264, 1266, 1168, 965, 1155, 1186,          // 0x50
    1347, 1228, 1529, 1600, 2617, 2048, 2546, 3275,         // 0x58
    2410, 3585, 2504, 2800, 2675, 6146, 3663, 2840,         // 0x60
    14253, 3164, 2221, 1687, 3208, 2739, 3512, 4796,        // 0x68
    4091, 3515, 5288, 4016, 7937, 6031, 5360, 3924,         // 0x70
    4892, 3743, 4566, 4807, 5852, 6400, 6225, 8291,         // 0x78
    23243, 7838, 7073, 8935, 5437, 4483, 3641, 5256,        // 0x80
    5312, 5328, 5370, 3492, 2458, 1694, 1821, 2121,         // 0x88
    1916, 1149, 1516, 1367, 1236, 1029, 1258, 1104,         // 0x90
    1245, 1006, 1149, 1025, 1241, 952, 1287, 997,           // 0x98
    1713, 1009, 1187, 879, 1099, 929, 1078, 951,            // 0xA0
    1656, 930, 1153, 1030, 1262, 1062, 1214, 1060,          // 0xA8
    1621, 930, 1106, 912, 1034, 892, 1158, 990,             // 0xB0
    1175, 850, 1121, 903, 1087, 920, 1144, 1056,            // 0xB8
    3462, 2240, 4397, 12136, 7758, 1345, 1307, 3278,        // 0xC0
    1950, 886, 1023, 1112, 1077, 1042, 1061, 1071,          // 0xC8
    1484, 1001, 1096, 915, 1052, 995, 1070, 876,            // 0xD0
    1111, 851, 1059, 805, 1112, 923, 1103, 817,             // 0xD8
    1899, 1872, 976, 841, 1127, 956, 1159, 950,             // 0xE0
    7791, 954, 1289, 933, 1127, 3207, 1020, 927,            // 0xE8
    1355, 768, 1040, 745, 952, 805, 1073, 740,              // 0xF0
    1013, 805, 1008, 796, 996, 1057, 11457, 13504,          // 0xF8
];

/// Length of the longest code word in [`HuffmanCode::quake3`], in bits.
pub const QUAKE3_MAX_CODE_LEN: u32 = 11;

/// Largest sum of frequencies [`HuffmanCode::from_adaptive_replay`] accepts.
/// The replay costs one tree update per reference; this allows about fifty
/// times Quake 3's table (which sums to about 1.3 million).
pub const MAX_REPLAY_TOTAL: u64 = 1 << 26;

impl HuffmanCode {
    /// Quake 3's message code, exactly as every protocol-68 client and server
    /// builds it. Its code words are compiled in ([`QUAKE3_CODE_WORDS`], the
    /// output of the adaptive replay, checked against a fresh replay by the
    /// tests), so the first use only lays out the decoding tables: a few
    /// microseconds, where replaying the 1.3 million tree updates cost
    /// 60–140 ms at every start of a program. Shared after the first use.
    ///
    /// # Panics
    ///
    /// Never in practice: the words are a fixed, valid prefix code, and the
    /// tests check that they build and match real Quake 3 demo files.
    pub fn quake3() -> &'static HuffmanCode {
        static CODE: OnceLock<HuffmanCode> = OnceLock::new();
        CODE.get_or_init(|| {
            HuffmanCode::from_code_words(&QUAKE3_CODE_WORDS)
                .expect("Quake 3's compiled-in code words form a valid code")
        })
    }

    /// Quake 3's message code rebuilt the slow way, by replaying the
    /// adaptive construction over [`QUAKE3_FREQUENCIES`] (about 1.3 million
    /// tree updates). It equals [`HuffmanCode::quake3`]; it is here for the
    /// tests and benchmarks that check or time the replay.
    pub fn quake3_replayed() -> Result<HuffmanCode, HuffmanError> {
        HuffmanCode::from_adaptive_replay(&QUAKE3_FREQUENCIES)
    }

    /// The code Quake 3's adaptive construction produces from `frequencies`
    /// (byte `i` referenced `frequencies[i]` times, bytes in increasing
    /// order). With [`QUAKE3_FREQUENCIES`] this is [`HuffmanCode::quake3`];
    /// other tables give the codes of engines that ship their own.
    ///
    /// Every frequency must be non-zero (a byte never referenced has no code
    /// word) and their sum at most [`MAX_REPLAY_TOTAL`]. The NYT leaf's code
    /// word decodes as [`crate::BitError::InvalidCode`].
    pub fn from_adaptive_replay(frequencies: &[u32; 256]) -> Result<HuffmanCode, HuffmanError> {
        let replayed = replay(frequencies)?;
        HuffmanCode::from_code_words(&replayed.words)
    }
}

/// The outcome of a replay: the byte code words and the NYT leaf's word.
#[derive(Debug, Clone)]
pub(super) struct Replayed {
    pub(super) words: [CodeWord; 256],
    /// Only the tests look at it: decoding it must fail.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(super) nyt: CodeWord,
}

/// Runs the adaptive construction over `frequencies` and reads off the code.
pub(super) fn replay(frequencies: &[u32; 256]) -> Result<Replayed, HuffmanError> {
    if let Some(symbol) = frequencies.iter().position(|&f| f == 0) {
        return Err(HuffmanError::ZeroFrequency {
            symbol: symbol as u8,
        });
    }
    let total: u64 = frequencies.iter().map(|&f| u64::from(f)).sum();
    if total > MAX_REPLAY_TOTAL {
        return Err(HuffmanError::ReplayTooLong { total });
    }
    let mut tree = AdaptiveTree::new();
    for (symbol, &count) in frequencies.iter().enumerate() {
        for _ in 0..count {
            tree.add_reference(symbol as u8)?;
        }
    }
    tree.code_words()
}

/// "No node" in the index links below.
const NONE: u16 = u16::MAX;
/// The NYT node is created first and is always the list head.
const NYT: u16 = 0;

/// A node of the adaptive tree. Links are indices into [`AdaptiveTree::nodes`].
#[derive(Debug, Clone, Copy)]
struct Node {
    left: u16,
    right: u16,
    parent: u16,
    /// Next higher rank in the list.
    next: u16,
    /// Next lower rank in the list.
    prev: u16,
    /// The slot naming this node's block leader.
    block: u16,
    weight: u64,
    /// The byte of a leaf; `None` for internal nodes and for the NYT leaf.
    symbol: Option<u8>,
}

impl Node {
    fn new(weight: u64, symbol: Option<u8>) -> Node {
        Node {
            left: NONE,
            right: NONE,
            parent: NONE,
            next: NONE,
            prev: NONE,
            block: NONE,
            weight,
            symbol,
        }
    }
}

/// A leader slot: either naming a node, or on the free list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Slot {
    Leader(u16),
    Free { next_free: u16 },
}

struct AdaptiveTree {
    nodes: Vec<Node>,
    slots: Vec<Slot>,
    /// Most recently freed slot (reused first), or `NONE`.
    free_top: u16,
    root: u16,
    /// The leaf of each byte once it has been referenced.
    leaf_of: [u16; 256],
    /// Nodes whose increment waits for their parent's (reused between calls).
    pending: Vec<u16>,
}

const BROKEN_LEADER: HuffmanError = HuffmanError::ReplayInconsistent("block leader slot is free");
const BROKEN_FREE_LIST: HuffmanError =
    HuffmanError::ReplayInconsistent("free list reaches a slot in use");
const BROKEN_TREE: HuffmanError = HuffmanError::ReplayInconsistent("tree links disagree");

impl AdaptiveTree {
    fn new() -> AdaptiveTree {
        AdaptiveTree {
            // 256 leaves, 256 internal nodes and the NYT leaf.
            nodes: {
                let mut nodes = Vec::with_capacity(513);
                nodes.push(Node::new(0, None));
                nodes
            },
            slots: Vec::new(),
            free_top: NONE,
            root: NYT,
            leaf_of: [NONE; 256],
            pending: Vec::new(),
        }
    }

    fn node(&mut self, index: u16) -> &mut Node {
        &mut self.nodes[usize::from(index)]
    }

    fn weight(&self, index: u16) -> u64 {
        self.nodes[usize::from(index)].weight
    }

    /// Takes a slot: the most recently freed one, else a fresh one.
    fn alloc_slot(&mut self) -> Result<u16, HuffmanError> {
        if self.free_top == NONE {
            self.slots.push(Slot::Leader(NONE));
            return Ok((self.slots.len() - 1) as u16);
        }
        let slot = self.free_top;
        match self.slots[usize::from(slot)] {
            Slot::Free { next_free } => self.free_top = next_free,
            Slot::Leader(_) => return Err(BROKEN_FREE_LIST),
        }
        Ok(slot)
    }

    fn free_slot(&mut self, slot: u16) {
        self.slots[usize::from(slot)] = Slot::Free {
            next_free: self.free_top,
        };
        self.free_top = slot;
    }

    fn leader(&self, node: u16) -> Result<u16, HuffmanError> {
        match self.slots[usize::from(self.nodes[usize::from(node)].block)] {
            Slot::Leader(leader) if leader != NONE => Ok(leader),
            _ => Err(BROKEN_LEADER),
        }
    }

    fn set_leader(&mut self, slot: u16, leader: u16) {
        self.slots[usize::from(slot)] = Slot::Leader(leader);
    }

    /// Exchanges the subtrees at `a` and `b`. The parent of `a` is rewired
    /// before the parent of `b` is inspected; for siblings this order decides
    /// whether anything changes (see the module docs).
    fn tree_swap(&mut self, a: u16, b: u16) {
        let parent_a = self.node(a).parent;
        let parent_b = self.node(b).parent;
        self.replace_child(parent_a, a, b);
        self.replace_child(parent_b, b, a);
        self.node(a).parent = parent_b;
        self.node(b).parent = parent_a;
    }

    /// Points `parent`'s link to `old` (its left link if that is `old`, else
    /// its right link) at `new`; with no parent, `new` becomes the root.
    fn replace_child(&mut self, parent: u16, old: u16, new: u16) {
        if parent == NONE {
            self.root = new;
        } else if self.node(parent).left == old {
            self.node(parent).left = new;
        } else {
            self.node(parent).right = new;
        }
    }

    /// Exchanges the list positions (ranks) of `a` and `b`, adjacent or not.
    fn list_swap(&mut self, a: u16, b: u16) {
        let (a_next, a_prev) = (self.node(a).next, self.node(a).prev);
        let (b_next, b_prev) = (self.node(b).next, self.node(b).prev);
        // Take over each other's neighbours; when the two were adjacent, the
        // neighbour taken over is the node itself and must become the other.
        self.node(a).next = if b_next == a { b } else { b_next };
        self.node(b).next = if a_next == b { a } else { a_next };
        self.node(a).prev = b_prev;
        self.node(b).prev = a_prev;
        // Re-link the neighbours back. For adjacent nodes the first of these
        // writes also repairs the self-reference left in a `prev` above.
        for node in [a, b] {
            let next = self.node(node).next;
            if next != NONE {
                self.node(next).prev = node;
            }
        }
        for node in [a, b] {
            let prev = self.node(node).prev;
            if prev != NONE {
                self.node(prev).next = node;
            }
        }
    }

    fn add_reference(&mut self, byte: u8) -> Result<(), HuffmanError> {
        let leaf = self.leaf_of[usize::from(byte)];
        if leaf != NONE {
            return self.increment(leaf);
        }
        // First reference: the NYT leaf's place goes to a new internal node
        // with the NYT leaf on the left and the byte's new leaf on the right.
        let leaf = self.nodes.len() as u16;
        let inner = leaf + 1;
        self.nodes.push(Node::new(1, Some(byte)));
        self.nodes.push(Node::new(1, None));

        // List: NYT, leaf, inner, then whatever followed NYT before.
        let first = self.node(NYT).next;
        self.node(inner).next = first;
        let inner_block = if first != NONE && self.weight(first) == 1 {
            self.node(first).block
        } else {
            let slot = self.alloc_slot()?;
            self.set_leader(slot, inner);
            slot
        };
        if first != NONE {
            self.node(first).prev = inner;
        }
        self.node(inner).block = inner_block;
        self.node(inner).prev = leaf;
        *self.node(leaf) = Node {
            next: inner,
            prev: NYT,
            block: inner_block,
            ..*self.node(leaf)
        };
        self.node(NYT).next = leaf;

        // Tree.
        let above = self.node(NYT).parent;
        self.replace_child(above, NYT, inner);
        *self.node(inner) = Node {
            left: NYT,
            right: leaf,
            parent: above,
            ..*self.node(inner)
        };
        self.node(NYT).parent = inner;
        self.node(leaf).parent = inner;
        self.leaf_of[usize::from(byte)] = leaf;

        if above == NONE {
            Ok(())
        } else {
            self.increment(above)
        }
    }

    /// Adds one to the weight of `start` and of each of its ancestors.
    ///
    /// The original is recursive: a node's own update, then its parent's whole
    /// increment, then a final list fix-up of the node. Here the own updates
    /// run going up and the fix-ups coming back down, in the same order.
    fn increment(&mut self, start: u16) -> Result<(), HuffmanError> {
        let mut pending = std::mem::take(&mut self.pending);
        pending.clear();
        let mut node = start;
        let result = loop {
            if let Err(e) = self.bump(node) {
                break Err(e);
            }
            // Read after the bump: moving to the block leader's place may
            // have given the node a new parent.
            let parent = self.node(node).parent;
            if parent == NONE {
                break Ok(());
            }
            pending.push(node);
            node = parent;
        };
        if result.is_ok() {
            while let Some(node) = pending.pop() {
                self.settle_below_parent(node)?;
            }
        }
        self.pending = pending;
        result
    }

    /// A node's own part of an increment.
    fn bump(&mut self, node: u16) -> Result<(), HuffmanError> {
        let weight = self.weight(node);
        let next = self.node(node).next;
        if next != NONE && self.weight(next) == weight {
            // Take the block leader's place so the node stays ranked above
            // every node that is now lighter.
            let leader = self.leader(node)?;
            if leader != self.node(node).parent {
                self.tree_swap(leader, node);
            }
            self.list_swap(leader, node);
        }
        // The node leaves its block: leadership passes down, or the block dies.
        let (prev, block) = (self.node(node).prev, self.node(node).block);
        if prev != NONE && self.weight(prev) == weight {
            self.set_leader(block, prev);
        } else {
            self.free_slot(block);
        }
        self.node(node).weight = weight + 1;
        // Join the block above if it has the new weight, else open a new one.
        let next = self.node(node).next;
        if next != NONE && self.weight(next) == weight + 1 {
            self.node(node).block = self.node(next).block;
        } else {
            let slot = self.alloc_slot()?;
            self.set_leader(slot, node);
            self.node(node).block = slot;
        }
        Ok(())
    }

    /// After the parent's increment: a parent ranked directly below its child
    /// trades list places with it (and takes over the leadership the child held).
    fn settle_below_parent(&mut self, node: u16) -> Result<(), HuffmanError> {
        let parent = self.node(node).parent;
        if self.node(node).prev != parent {
            return Ok(());
        }
        if parent == NONE {
            return Err(BROKEN_TREE);
        }
        self.list_swap(node, parent);
        let block = self.node(node).block;
        if self.slots[usize::from(block)] == Slot::Leader(node) {
            self.set_leader(block, parent);
        }
        Ok(())
    }

    /// Reads the code words off the finished tree, from the root down, and
    /// checks them against the upward walk the original encoder does.
    fn code_words(&self) -> Result<Replayed, HuffmanError> {
        let mut words = [CodeWord::default(); 256];
        let mut nyt = None;
        let mut stack = vec![(self.root, CodeWord::default())];
        while let Some((index, word)) = stack.pop() {
            let node = &self.nodes[usize::from(index)];
            if node.left == NONE && node.right == NONE {
                match node.symbol {
                    Some(byte) => words[usize::from(byte)] = word,
                    None if index == NYT => nyt = Some(word),
                    None => return Err(BROKEN_TREE),
                }
                if self.upward_word(index)? != word {
                    return Err(BROKEN_TREE);
                }
                continue;
            }
            if node.left == NONE || node.right == NONE {
                return Err(BROKEN_TREE);
            }
            if u32::from(word.len) == MAX_CODE_LEN {
                // Name a byte whose word is too long: the right-most leaf
                // below (the NYT leaf is always a left child).
                let mut deepest = index;
                while self.nodes[usize::from(deepest)].right != NONE {
                    deepest = self.nodes[usize::from(deepest)].right;
                }
                return Err(HuffmanError::BadLength {
                    symbol: self.nodes[usize::from(deepest)].symbol.unwrap_or(0),
                    len: MAX_CODE_LEN + 1,
                });
            }
            for (child, bit) in [(node.left, 0), (node.right, 1)] {
                let longer = CodeWord {
                    bits: word.bits | (bit << word.len),
                    len: word.len + 1,
                };
                stack.push((child, longer));
            }
        }
        Ok(Replayed {
            words,
            nyt: nyt.ok_or(BROKEN_TREE)?,
        })
    }

    /// The code word of a leaf as the encoder sees it: walking up the parent
    /// links, a right child contributes a 1 and a left child a 0.
    fn upward_word(&self, leaf: u16) -> Result<CodeWord, HuffmanError> {
        let mut path = Vec::new();
        let mut child = leaf;
        loop {
            let parent = self.nodes[usize::from(child)].parent;
            if parent == NONE {
                break;
            }
            let links = &self.nodes[usize::from(parent)];
            path.push(match child {
                c if links.right == c => true,
                c if links.left == c => false,
                _ => return Err(BROKEN_TREE),
            });
            if path.len() > self.nodes.len() {
                return Err(BROKEN_TREE);
            }
            child = parent;
        }
        if child != self.root {
            return Err(BROKEN_TREE);
        }
        CodeWord::from_bits_in_order(path.into_iter().rev()).ok_or(BROKEN_TREE)
    }
}
