//! Entities re-entering the view, coded from the client's own history.
//!
//! An entity the client's base does not hold is *added*: a delta from its
//! spawn baseline or, without one, from the zeroed dummy. A player who
//! steps behind a wall for a second and back, or a missile that leaves and
//! re-enters the view, then costs a whole state. But the client often held
//! it a few snapshots ago. So a native delta may name a *history snapshot*
//! in its header ([`SnapshotHeader::history`](crate::framing::SnapshotHeader::history),
//! 1 + 5 bits among the header's exceptions): every added entity **without
//! a spawn baseline** that it holds is *offered* its state there, and its
//! entry carries the server's choice
//! ([`fields::StartChoice`]: one decision between its number and its
//! body) of a change from that state, in its delta context (held, not
//! spawn; the time elapsed since its server time), or the usual delta
//! from the dummy.
//!
//! **Why a choice per entity.** Without it, measured worse everywhere
//! (duel 0.4445 → 0.4485 of Quake 3's bytes): re-entering players won
//! (134.8 → 93.3 bits each), but an event or missile reusing a freed
//! number was coded from the unrelated entity that held it before (events
//! 48.3 → 58.7 bits). The server codes each offered entity both ways and
//! takes the cheaper.
//!
//! The server names only a snapshot of the base's *chain* — the base's own
//! base, its base, and so on, no further than [`MAX_DELTA_DISTANCE`] back:
//! each was the newest snapshot the client acknowledged, so the client
//! decoded it, and neither ring has overwritten it since (a ring slot is
//! only reused by a snapshot [`RING_SIZE`] sequence numbers later). Of
//! those, it names the one whose offered entities save the most bits, and
//! only when they save more than naming it costs (most messages name
//! none, and their headers stay as short as without history). A client
//! that lacks the snapshot named (it cleared its ring) refuses the message
//! with [`ClientError::BaseMissing`](crate::ClientError::BaseMissing), as
//! for a missing base. Because the reference is named, not implied, a
//! re-encoded message ([`crate::encode`]) simply names none, and a
//! client-side recording keeps a message as received only when it
//! recorded the history snapshot too.
//!
//! Entities with a spawn baseline (Quake 3's items) keep it: their
//! baseline deltas cost a bit or two, and coding them from history
//! measured worse on two of three real demos. A list naming a history
//! snapshot is the client's own: it is never shared with, or copied from,
//! another client's identical view, and its offered entries bypass the
//! entity cache (see `build.rs`).

use crate::config::{MAX_DELTA_DISTANCE, RING_SIZE};

/// The sequence numbers of a message's chain snapshots, newest first.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BaseChain {
    sequences: [u32; RING_SIZE],
    len: usize,
}

/// What one end knows of snapshot `sequence` in its ring.
pub(crate) enum Link {
    /// It holds it; the snapshot's base (`None`: a full update).
    Held(Option<u32>),
    /// It does not.
    Missing,
}

impl BaseChain {
    /// No chain.
    pub const EMPTY: BaseChain = BaseChain {
        sequences: [0; RING_SIZE],
        len: 0,
    };

    /// The chain of message `sequence` coded from `base`, whose own base
    /// is `first`: each snapshot `link` says is held, through the bases,
    /// while within [`MAX_DELTA_DISTANCE`] of `sequence`, up to the first
    /// one that is not.
    pub fn walk(
        sequence: u32,
        base: u32,
        first: Option<u32>,
        mut link: impl FnMut(u32) -> Link,
    ) -> BaseChain {
        let mut chain = BaseChain::EMPTY;
        let mut newer = sequence.wrapping_sub(base);
        let mut next = first;
        while let Some(member) = next {
            let distance = sequence.wrapping_sub(member);
            // Bases only go back: one that does not ends the walk (a
            // corrupt chain cannot loop).
            if distance <= newer || distance > MAX_DELTA_DISTANCE {
                break;
            }
            match link(member) {
                Link::Held(base) => {
                    chain.sequences[chain.len] = member;
                    chain.len += 1;
                    newer = distance;
                    next = base;
                }
                Link::Missing => break,
            }
        }
        chain
    }

    /// The chain's snapshots, newest first.
    pub fn sequences(&self) -> &[u32] {
        &self.sequences[..self.len]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_walk_follows_bases_within_the_distance_and_stops_at_a_gap_or_a_full_update() {
        // 40 <- 38 <- 35 <- 20 <- 5: message 41, base 40 (first: 38).
        let base_of = |s: u32| match s {
            38 => Link::Held(Some(35)),
            35 => Link::Held(Some(20)),
            20 => Link::Held(Some(5)),
            5 => Link::Held(None),
            _ => Link::Missing,
        };
        let chain = BaseChain::walk(41, 40, Some(38), base_of);
        // 5 is 36 back: past the distance limit.
        assert_eq!(chain.sequences(), [38, 35, 20]);
        let chain = BaseChain::walk(40, 39, Some(38), |s| match s {
            38 => Link::Held(Some(30)),
            _ => Link::Missing,
        });
        assert_eq!(chain.sequences(), [38]);
        // A full update ends it; so does a base that does not go back.
        let chain = BaseChain::walk(40, 39, Some(38), |_| Link::Held(None));
        assert_eq!(chain.sequences(), [38]);
        let chain = BaseChain::walk(40, 39, Some(38), |_| Link::Held(Some(39)));
        assert_eq!(chain.sequences(), [38]);
        let chain = BaseChain::walk(40, 39, Some(38), |_| Link::Held(Some(38)));
        assert_eq!(chain.sequences(), [38]);
        let chain = BaseChain::walk(40, 39, None, base_of);
        assert!(chain.sequences().is_empty());
        // Across the wrap of sequence numbers.
        let chain = BaseChain::walk(3, 1, Some(u32::MAX), |s| match s {
            u32::MAX => Link::Held(Some(u32::MAX - 4)),
            _ => Link::Held(None),
        });
        assert_eq!(chain.sequences(), [u32::MAX, u32::MAX - 4]);
    }
}
