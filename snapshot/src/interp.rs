//! Interpolation between two snapshots: one definition for the client that
//! draws the world and the server that rewinds it to what that client drew
//! (lag compensation, [`crate::rewind`]).
//!
//! A client renders the others in the past, between the two newest
//! snapshots it holds (Quake 3's `CG_InterpolateEntityPosition`): at a
//! render time `t` a little behind its estimate of the server's clock, each
//! entity is drawn `fraction = (t − t_prev) / (t_newest − t_prev)` of the way
//! from the previous snapshot to the newest. How an entity moves between two
//! states (a straight line, a trajectory, not at all after a teleport) is the
//! game's: it implements [`Interpolate`] for its entity type. Everything
//! else — where the render time falls, which snapshots, the loop over
//! entities — is here, and both ends call the same code with the same
//! inputs, so the server's rewind reproduces the client's render bit for bit.
//!
//! Render times are whole milliseconds of server time (Quake 3's
//! `usercmd_t.serverTime`), so the two ends agree exactly on the fraction.
//! What the client tells the server for each command is a [`ViewStamp`]:
//! which snapshots it drew between and its render time, in a few bytes.

/// Where a render time falls between two snapshots.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RenderPoint {
    /// The render time, server milliseconds.
    pub render_ms: u32,
    /// How far from the previous snapshot to the newest, `0.0..=1.0` (1.0
    /// without a previous snapshot).
    pub fraction: f32,
    /// The render time is past the newest snapshot: entities are held at
    /// the newest (the next snapshot is late).
    pub stalled: bool,
}

impl RenderPoint {
    /// The point of `render_ms` between a snapshot of server time
    /// `previous_ms` (if there is one) and the newest, of `newest_ms`.
    pub fn between(previous_ms: Option<u32>, newest_ms: u32, render_ms: u32) -> RenderPoint {
        let (fraction, stalled) = match previous_ms {
            Some(previous) if newest_ms > previous => {
                let span = (newest_ms - previous) as f64;
                let f = (render_ms as f64 - previous as f64) / span;
                (f.clamp(0.0, 1.0) as f32, f > 1.0)
            }
            _ => (1.0, render_ms > newest_ms),
        };
        RenderPoint {
            render_ms,
            fraction,
            stalled,
        }
    }
}

/// How the game draws an entity between two snapshots.
pub trait Interpolate: Sized {
    /// The entity as drawn at `at`, from its state in the newest snapshot
    /// and in the previous one (`None`: it was not in it, or there is no
    /// previous snapshot). Must depend on nothing else, so that the client
    /// and the server compute the same state.
    fn interpolate(newest: &Self, previous: Option<&Self>, at: &RenderPoint) -> Self;
}

/// Fills `out` (cleared first) with every entity of the newest snapshot,
/// in the order given, drawn at `at`: `previous` looks an entity number up
/// in the previous snapshot.
pub fn interpolate_into<'a, E: Interpolate + 'a>(
    newest: impl Iterator<Item = (u32, &'a E)>,
    previous: impl Fn(u32) -> Option<&'a E>,
    at: &RenderPoint,
    out: &mut Vec<(u32, E)>,
) {
    out.clear();
    for (number, state) in newest {
        out.push((number, E::interpolate(state, previous(number), at)));
    }
}

/// Bits of a snapshot sequence a [`ViewStamp`] carries: ample for the
/// [`RING_SIZE`](crate::config::RING_SIZE) snapshots a server holds per
/// client, so a stamp resolves to one of them or to none.
pub const STAMP_SEQUENCE_BITS: u32 = 8;

/// Largest render-time offset a [`ViewStamp`] carries, ms (either way).
pub const MAX_VIEW_OFFSET_MS: i32 = 1 << 20;

/// What a client drew for one command, as it tells the server: the newest
/// snapshot (the low bits of its sequence — the server resolves them
/// against the snapshots it still holds for the client; 8 are enough, as
/// it holds 32), how many sequences before it the previous one was, and the
/// render time relative to the newest snapshot's server time.
/// Nothing in it is trusted: [`crate::Server::rewind`] checks it against
/// what was really sent and bounds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ViewStamp {
    /// The low [`STAMP_SEQUENCE_BITS`] bits of the newest snapshot's
    /// sequence.
    pub newest: u8,
    /// The previous snapshot is this many sequences older (0: none), at
    /// most [`RING_SIZE`](crate::config::RING_SIZE) − 1.
    pub previous_back: u8,
    /// Render time minus the newest snapshot's server time, ms, within
    /// ±[`MAX_VIEW_OFFSET_MS`].
    pub offset_ms: i32,
}

/// What a client drew ([`crate::Client::render`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rendered {
    /// Where the render time fell.
    pub point: RenderPoint,
    /// The stamp that tells the server.
    pub stamp: ViewStamp,
    /// The newest snapshot's sequence.
    pub newest: u32,
    /// The previous snapshot's sequence, if there was one.
    pub previous: Option<u32>,
}

impl<E: fields::Fields + Interpolate, P: fields::Fields> crate::Client<E, P> {
    /// Draws every entity of the newest snapshot at server time
    /// `render_ms`, interpolated from the previous snapshot, into `out`
    /// (cleared first); `None` (and `out` empty) before the first snapshot.
    /// The [`ViewStamp`] it returns lets the server rewind to exactly this.
    pub fn render(&self, render_ms: u32, out: &mut Vec<(u32, E)>) -> Option<Rendered> {
        out.clear();
        let newest = self.newest()?;
        let previous = self.previous().filter(|p| p.sequence() < newest.sequence());
        let point = RenderPoint::between(
            previous.map(|p| p.server_time()),
            newest.server_time(),
            render_ms,
        );
        interpolate_into(
            newest.entities(),
            |number| previous.and_then(|p| p.entity(number)),
            &point,
            out,
        );
        let offset = (render_ms as i64 - newest.server_time() as i64)
            .clamp(-(MAX_VIEW_OFFSET_MS as i64), MAX_VIEW_OFFSET_MS as i64);
        Some(Rendered {
            point,
            stamp: ViewStamp {
                newest: newest.sequence() as u8,
                previous_back: previous
                    .map_or(0, |p| (newest.sequence() - p.sequence()).min(255) as u8),
                offset_ms: offset as i32,
            },
            newest: newest.sequence(),
            previous: previous.map(|p| p.sequence()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_render_point_follows_the_render_time() {
        let at = |previous, render| RenderPoint::between(previous, 150, render);
        assert_eq!(at(Some(100), 125).fraction, 0.5);
        assert!(!at(Some(100), 125).stalled);
        assert_eq!(at(Some(100), 90).fraction, 0.0);
        let late = at(Some(100), 170);
        assert_eq!((late.fraction, late.stalled), (1.0, true));
        let alone = at(None, 140);
        assert_eq!((alone.fraction, alone.stalled), (1.0, false));
        assert!(at(None, 151).stalled);
        // Same times (a repeated frame): held at the newest.
        assert_eq!(RenderPoint::between(Some(150), 150, 140).fraction, 1.0);
    }
}
