//! A snapshot as a client holds it: the player state and every entity it
//! sees, decoded, in number order.

use crate::framing::{AreaMask, BaseInfo, Delivery, RATE_DELAYED};

/// One snapshot held by a [`Client`](crate::Client).
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot<E, P> {
    pub(crate) sequence: u32,
    pub(crate) frame: u32,
    pub(crate) server_time: u32,
    pub(crate) base: Option<u32>,
    pub(crate) flags: u8,
    pub(crate) area_mask: AreaMask,
    pub(crate) delivery: Delivery,
    pub(crate) player: P,
    /// Sorted by number.
    pub(crate) entities: Vec<(u32, E)>,
}

impl<E, P> Snapshot<E, P> {
    pub(crate) fn empty(player: P) -> Self {
        Snapshot {
            sequence: 0,
            frame: 0,
            server_time: 0,
            base: None,
            flags: 0,
            area_mask: AreaMask::EMPTY,
            delivery: Delivery::FULL,
            player,
            entities: Vec::new(),
        }
    }

    /// Entity `number`'s state, if held, with the snapshot's server time
    /// (what a delta from it is timed against).
    pub(crate) fn entity_entry(&self, number: u32) -> Option<(&E, u32)> {
        let index = self
            .entities
            .binary_search_by_key(&number, |(n, _)| *n)
            .ok()?;
        Some((&self.entities[index].1, self.server_time))
    }

    /// Its sequence number.
    pub fn sequence(&self) -> u32 {
        self.sequence
    }

    /// The server frame it shows.
    pub fn frame(&self) -> u32 {
        self.frame
    }

    /// That frame's server time in milliseconds (for interpolation).
    pub fn server_time(&self) -> u32 {
        self.server_time
    }

    /// The snapshot it was a delta from (`None`: a full update).
    pub fn base(&self) -> Option<u32> {
        self.base
    }

    /// Whether it was a full update.
    pub fn is_full_update(&self) -> bool {
        self.base.is_none()
    }

    /// Whether the server said an earlier snapshot was rate-delayed.
    pub fn rate_delayed(&self) -> bool {
        self.flags & RATE_DELAYED != 0
    }

    /// Its flags: [`RATE_DELAYED`] and the game's own (see
    /// [`Server::set_snapshot_flags`](crate::Server::set_snapshot_flags)).
    pub fn flags(&self) -> u8 {
        self.flags
    }

    /// The area mask the server sent with it.
    pub fn area_mask(&self) -> &[u8] {
        self.area_mask.as_bytes()
    }

    /// How the message that delivered it was coded against its base.
    pub fn delivery(&self) -> Delivery {
        self.delivery
    }

    /// What a later message coded against it needs of it.
    pub(crate) fn base_info(&self) -> BaseInfo {
        BaseInfo {
            sequence: self.sequence,
            frame: self.frame,
            server_time: self.server_time,
            flags: self.flags,
            area_mask: self.area_mask,
            delivery: self.delivery,
        }
    }

    /// The player state.
    pub fn player(&self) -> &P {
        &self.player
    }

    /// Every entity as `(number, state)`, in number order.
    pub fn entities(&self) -> impl ExactSizeIterator<Item = (u32, &E)> {
        self.entities.iter().map(|(n, e)| (*n, e))
    }

    /// Entity `number`, if present.
    pub fn entity(&self, number: u32) -> Option<&E> {
        self.entities
            .binary_search_by_key(&number, |(n, _)| *n)
            .ok()
            .map(|i| &self.entities[i].1)
    }

    /// Number of entities.
    pub fn len(&self) -> usize {
        self.entities.len()
    }

    /// Whether it holds no entity.
    pub fn is_empty(&self) -> bool {
        self.entities.is_empty()
    }
}
