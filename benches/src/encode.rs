//! The encodings the report compares, behind one trait.

use fields::Fields;
use serde::Serialize;

use crate::state::{merge, Change, Step, Zeros};
use crate::Error;

/// Largest message any encoder here writes: room for a full snapshot of the
/// stress workload's 1023 entities in any format.
pub const MAX_MESSAGE_BYTES: usize = 1 << 20;

/// Turns steps into messages and accounts for their bits.
pub trait Encoder<E, P> {
    /// The encoding's name in the report (`q3`, `native`, `naive`, …).
    fn name(&self) -> &str;

    /// Encodes one step and returns the message size in bits, with
    /// `breakdown` filled (at least its updates and counts).
    fn encode(
        &mut self,
        step: &Step<'_, E, P>,
        zeros: &Zeros<E, P>,
        breakdown: &mut Breakdown,
    ) -> Result<usize, Error>;

    /// Whether [`Encoder::encode`] accounts for every section of the
    /// message in the breakdown (header, player state, removals, end), not
    /// only the entity updates.
    fn accounts_sections(&self) -> bool {
        true
    }
}

/// Where the bits of one message went.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Breakdown {
    /// Header bits.
    pub header_bits: usize,
    /// Player-state delta bits.
    pub player_bits: usize,
    /// Bits of each entity update that carries a state (changed or added),
    /// entity header included, in list order.
    pub updates: Vec<u32>,
    /// Entities changed from the client's copy.
    pub changed: u32,
    /// Entities new to the client.
    pub added: u32,
    /// Entities removed.
    pub removed: u32,
    /// Bits of the removals.
    pub removal_bits: usize,
    /// Bits of the end marker.
    pub end_bits: usize,
    /// The bytes the message is sent in, when that is not its bits in
    /// whole bytes (the engine's bit-stream messages leave a last zero
    /// byte out: `snapshot::framing::MessageCoding::sent_len`).
    pub sent_bytes: Option<usize>,
}

impl Breakdown {
    /// Clears the account for the next message.
    pub fn clear(&mut self) {
        self.header_bits = 0;
        self.player_bits = 0;
        self.updates.clear();
        self.changed = 0;
        self.added = 0;
        self.removed = 0;
        self.removal_bits = 0;
        self.end_bits = 0;
        self.sent_bytes = None;
    }

    /// Bits of all state-carrying entity updates.
    pub fn update_bits(&self) -> u64 {
        self.updates.iter().map(|&b| u64::from(b)).sum()
    }
}

/// What a user without a delta scheme sends: the whole state, every
/// snapshot, serialized with postcard.
#[derive(Debug, Serialize)]
pub struct NaiveMessage<'a, E, P> {
    /// Server time.
    pub server_time: i32,
    /// Snapshot flags.
    pub flags: u8,
    /// Area mask.
    pub areamask: &'a [u8],
    /// The player state.
    pub player: &'a P,
    /// Every entity in view, with its number.
    pub entities: &'a [(u32, E)],
}

/// The naive baseline: [`NaiveMessage`] with postcard.
#[derive(Debug, Clone)]
pub struct NaiveEncoder {
    buf: Vec<u8>,
}

impl Default for NaiveEncoder {
    fn default() -> Self {
        NaiveEncoder {
            buf: vec![0; MAX_MESSAGE_BYTES],
        }
    }
}

impl<E: Fields + Serialize, P: Serialize> Encoder<E, P> for NaiveEncoder {
    fn name(&self) -> &str {
        "naive"
    }

    fn accounts_sections(&self) -> bool {
        false
    }

    fn encode(
        &mut self,
        step: &Step<'_, E, P>,
        _zeros: &Zeros<E, P>,
        breakdown: &mut Breakdown,
    ) -> Result<usize, Error> {
        breakdown.clear();
        let snapshot = &**step.snapshot;
        let message = NaiveMessage {
            server_time: snapshot.server_time,
            flags: snapshot.flags,
            areamask: &snapshot.areamask,
            player: &snapshot.player,
            entities: &snapshot.entities,
        };
        let bytes = postcard::to_slice(&message, &mut self.buf)?.len();
        // Postcard concatenates fields, so each entity's share of the
        // message is its own serialized size.
        let old = step.base.map_or(&[][..], |b| &b.entities[..]);
        for change in merge(old, &snapshot.entities) {
            let (number, state) = match change {
                Change::Changed { number, new, .. } => {
                    breakdown.changed += 1;
                    (number, new)
                }
                Change::Added { number, new } => {
                    breakdown.added += 1;
                    (number, new)
                }
                Change::Removed { .. } => {
                    breakdown.removed += 1;
                    continue;
                }
                Change::Unchanged { .. } => continue,
            };
            let size = postcard::to_slice(&(number, state), &mut self.buf)?.len();
            breakdown.updates.push(size as u32 * 8);
        }
        Ok(bytes * 8)
    }
}
