//! What a decoded snapshot carried, field by field: for tests, demo dumps
//! and debugging. Opt-in ([`Client::set_trace`](crate::Client::set_trace)),
//! since it compares every decoded state with its base.

use std::fmt;

use fields::Fields;

/// A set of field indices (a table has at most 255 fields).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct FieldMask([u64; 4]);

impl FieldMask {
    /// The empty set.
    pub const fn new() -> Self {
        FieldMask([0; 4])
    }

    /// The fields whose words differ between `a` and `b`.
    pub fn diff<T: Fields>(a: &T, b: &T) -> Self {
        let mut mask = FieldMask::new();
        for field in 0..a.field_count().min(256) {
            if a.field_differs(b, field) {
                mask.insert(field);
            }
        }
        mask
    }

    /// Adds field `index` (below 256).
    pub fn insert(&mut self, index: usize) {
        if let Some(word) = self.0.get_mut(index / 64) {
            *word |= 1 << (index % 64);
        }
    }

    /// Whether field `index` is in the set.
    pub fn contains(&self, index: usize) -> bool {
        self.0
            .get(index / 64)
            .is_some_and(|word| word & (1 << (index % 64)) != 0)
    }

    /// Members in increasing order.
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        (0..256).filter(move |&i| self.contains(i))
    }

    /// Number of members.
    pub fn len(&self) -> usize {
        self.0.iter().map(|w| w.count_ones() as usize).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.0.iter().all(|&w| w == 0)
    }
}

impl fmt::Debug for FieldMask {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl FromIterator<usize> for FieldMask {
    fn from_iter<I: IntoIterator<Item = usize>>(iter: I) -> Self {
        let mut mask = FieldMask::new();
        for index in iter {
            mask.insert(index);
        }
        mask
    }
}

/// How an entity appeared in a snapshot message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpdateKind {
    /// New to the client: a delta from its spawn baseline or the zeroed entity.
    Added,
    /// Held before: a delta from its state in the base snapshot.
    Changed,
    /// Removed from the client's view.
    Removed,
}

/// One entity update of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntityTrace {
    /// Entity number.
    pub number: u32,
    /// What kind of update.
    pub kind: UpdateKind,
    /// Fields that differ from the state it was decoded against.
    pub fields: FieldMask,
    /// Its bits in the message, entity number included.
    pub bits: u32,
}

/// Everything one snapshot message carried.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SnapshotTrace {
    /// Its sequence number.
    pub sequence: u32,
    /// Its base (`None`: a full update).
    pub base: Option<u32>,
    /// Player-state fields that differ from the base's player state.
    pub player_fields: FieldMask,
    /// Entity updates in message order.
    pub entities: Vec<EntityTrace>,
    /// Message length in bits, padding excluded.
    pub bits: usize,
    /// Bits of the header.
    pub header_bits: usize,
    /// Bits of the player-state delta.
    pub player_bits: usize,
    /// Bits after the entity updates: the lists' end markers and the
    /// sync checksum.
    pub end_bits: usize,
}
