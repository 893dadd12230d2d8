//! Lag compensation's query: the entities exactly as a client drew them
//! when it made a command, from the shared frame history.
//!
//! Every client draws the others in the past ([`crate::interp`]); a player
//! who aims at what they see would miss by the time the server reads the
//! shot. With the [`ViewStamp`] the client sent with the command,
//! [`Server::rewind`] returns what that client drew — the same two
//! snapshots as they were sent to it (its scope, its entity states: the
//! client ring's records into the shared frame history), interpolated by
//! the same code at the same render time — so the game can test the shot
//! against that.
//!
//! ## Never trusted blindly
//!
//! The stamp comes from the client, so the server checks it against what it
//! knows, and bounds it:
//!
//! * the render time is clamped to `[now − max_rewind, t_sent]`, where `now`
//!   is the server's newest frame and `t_sent` the server time of the newest
//!   snapshot sent to this client — a client cannot have seen anything newer,
//!   and the game decides how far back it will look at all
//!   ([`Clamp::TooOld`], [`Clamp::TooNew`]);
//! * the snapshots it names must be ones sent to this client and still in
//!   its ring ([`Clamp::Unverified`] if not: an invented sequence, or one
//!   so old the ring no longer holds it — the render time is then taken as
//!   the oldest allowed), and what they show must not be older than the
//!   bound; when the stamp was bounded in any way, the server draws between
//!   the snapshots it sent around the bounded render time itself (unless
//!   the ones named already surround it).
//!
//! So a lying client gets at most what an honest client with a round trip of
//! the maximum rewind would get: it can neither see the future nor reach
//! further back than the game allows, and anything it names must be what
//! the server really sent it.
//!
//! ## Cost
//!
//! The query reads the history and changes nothing. Its time is one
//! interpolation of the client's view — a pass over the entities of one
//! snapshot, no allocation beyond the caller's reused `out` (the
//! unverifiable path looks at the ring's 32 records once). Its memory is
//! nothing new: the shared history already keeps every frame a client's
//! ring of [`RING_SIZE`] snapshots refers to (at 20 snapshots a second,
//! 1.6 s), which is why the rewind can never reach further than that, and
//! [`REWIND_LIMIT_MS`] caps it below.
//!
//! ## The trade-off
//!
//! Judging a shot by what the shooter saw is fair to the shooter and unfair
//! to the target: a target that ducked behind cover on its own screen can
//! still be hit, up to the rewind later — the shooter saw it in the open.
//! The longer the round trips the game accepts (its maximum rewind), the
//! further behind cover such hits happen. Quake 3's Unlagged, Source and
//! Overwatch all make this trade (Source's `sv_maxunlag`); the bound is
//! where the game says a player on a bad link stops being compensated.

use fields::Fields;

use crate::config::RING_SIZE;
use crate::interp::{interpolate_into, Interpolate, RenderPoint, ViewStamp, STAMP_SEQUENCE_BITS};
use crate::server::{ClientId, Server};

/// Most milliseconds a rewind may ever reach back, whatever the game asks.
pub const REWIND_LIMIT_MS: u32 = 1000;

/// Why a rewind could not be made.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum RewindError {
    /// No such client.
    #[error("unknown client {0:?}")]
    UnknownClient(ClientId),
    /// No frame committed yet.
    #[error("no frame committed yet")]
    NoFrame,
    /// Nothing was sent to the client within the maximum rewind.
    #[error("nothing sent to the client in the last {max_rewind_ms} ms")]
    NothingRecent {
        /// The bound.
        max_rewind_ms: u32,
    },
}

/// How a stamp was bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Clamp {
    /// The render time was older than the maximum rewind.
    TooOld,
    /// The render time was newer than anything sent to the client.
    TooNew,
    /// The snapshots named were not sent to the client, are no longer in
    /// its ring, or show something older than the bound: the server chose.
    Unverified,
}

/// A rewind: what the client drew, and how it was found.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rewind {
    /// The newest snapshot drawn (its sequence).
    pub newest: u32,
    /// The previous snapshot, if any.
    pub previous: Option<u32>,
    /// The render time and fraction used.
    pub point: RenderPoint,
    /// How far behind the server's newest frame the render time is, ms.
    pub rewind_ms: u32,
    /// How the stamp was bounded (`None`: used as the client sent it).
    pub clamp: Option<Clamp>,
}

/// One sent snapshot of the ring: sequence and server time.
#[derive(Debug, Clone, Copy)]
struct Held {
    sequence: u32,
    time: u32,
}

impl<E: Fields + PartialEq + Interpolate, P: Fields + PartialEq> Server<E, P> {
    /// The entities as client `id` drew them for a command stamped `stamp`
    /// (in number order, into `out`, cleared first), bounded by
    /// `max_rewind_ms` (at most [`REWIND_LIMIT_MS`]); see the module docs.
    pub fn rewind(
        &self,
        id: ClientId,
        stamp: ViewStamp,
        max_rewind_ms: u32,
        out: &mut Vec<(u32, E)>,
    ) -> Result<Rewind, RewindError> {
        out.clear();
        let slot = self.slot(id).map_err(|_| RewindError::UnknownClient(id))?;
        let now = self.time().ok_or(RewindError::NoFrame)?;
        let max_rewind_ms = max_rewind_ms.min(REWIND_LIMIT_MS);
        let floor = now.saturating_sub(max_rewind_ms);
        let held = |sequence: u32| -> Option<Held> {
            let sent = &slot.ring[sequence as usize % RING_SIZE];
            (sent.valid && sent.sequence == sequence).then_some(Held {
                sequence,
                time: sent.time,
            })
        };
        let latest = slot
            .next_sequence
            .checked_sub(1)
            .and_then(held)
            .ok_or(RewindError::NothingRecent { max_rewind_ms })?;
        if latest.time < floor {
            return Err(RewindError::NothingRecent { max_rewind_ms });
        }
        let ceiling = latest.time;

        // The snapshots the stamp names, if they were sent and are held.
        let mask = (1u32 << STAMP_SEQUENCE_BITS) - 1;
        let back = latest.sequence.wrapping_sub(stamp.newest as u32) & mask;
        // (A stamp older than 2^8 snapshots would alias to a newer one: it
        // is bounded like any other claim, and honest ones are never that old
        // when the ring holds 32.)
        let claimed_newest = latest.sequence.checked_sub(back).and_then(held);
        let claimed_previous = match (claimed_newest, stamp.previous_back) {
            (Some(_), 0) => Some(None),
            (Some(n), b) if (b as usize) < RING_SIZE => {
                n.sequence.checked_sub(b as u32).and_then(held).map(Some)
            }
            _ => None,
        };
        let mut clamp = None;
        let render = match claimed_newest {
            Some(n) => {
                let claimed = n.time as i64 + stamp.offset_ms as i64;
                if claimed < floor as i64 {
                    clamp = Some(Clamp::TooOld);
                } else if claimed > ceiling as i64 {
                    clamp = Some(Clamp::TooNew);
                }
                claimed.clamp(floor as i64, ceiling as i64) as u32
            }
            None => floor,
        };
        let fallback = || {
            self.bracket(slot.next_sequence, render, &held)
                .unwrap_or((latest, None))
        };
        let (newest, previous) = match (claimed_newest, claimed_previous) {
            (Some(n), Some(p)) => {
                if n.time < floor {
                    // What it names is older than the bound.
                    clamp.get_or_insert(Clamp::TooOld);
                }
                let brackets = p.map_or(n.time, |p| p.time) <= render && render <= n.time;
                if n.time >= floor && (clamp.is_none() || brackets) {
                    (n, p)
                } else {
                    fallback()
                }
            }
            _ => {
                clamp = Some(Clamp::Unverified);
                fallback()
            }
        };
        let point = RenderPoint::between(previous.map(|p| p.time), newest.time, render);
        let newest_snapshot = self
            .sent_snapshot(id, newest.sequence)
            .ok_or(RewindError::NothingRecent { max_rewind_ms })?;
        let previous_snapshot = previous.and_then(|p| self.sent_snapshot(id, p.sequence));
        interpolate_into(
            newest_snapshot.entities(),
            |number| previous_snapshot.as_ref().and_then(|p| p.entity(number)),
            &point,
            out,
        );
        Ok(Rewind {
            newest: newest.sequence,
            previous: previous.map(|p| p.sequence),
            point,
            rewind_ms: now - render,
            clamp,
        })
    }

    /// The sent snapshots around `render`: the oldest held one at or after
    /// it (else the newest held), and the held one before that.
    fn bracket(
        &self,
        next_sequence: u32,
        render: u32,
        held: &impl Fn(u32) -> Option<Held>,
    ) -> Option<(Held, Option<Held>)> {
        let oldest = next_sequence.saturating_sub(RING_SIZE as u32);
        let ring: Vec<Held> = (oldest..next_sequence).filter_map(held).collect();
        let at = ring
            .iter()
            .position(|h| h.time >= render)
            .unwrap_or(ring.len().checked_sub(1)?);
        Some((ring[at], at.checked_sub(1).map(|i| ring[i])))
    }
}
