//! Counters: what the server sent each client, and what a client received
//! and rejected.

use crate::error::ClientError;

/// What the server sent one client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SendStats {
    /// Snapshots built.
    pub snapshots: u64,
    /// Of which full updates (no usable acknowledged base).
    pub full_updates: u64,
    /// Bytes of snapshot messages.
    pub bytes: u64,
    /// Times a due snapshot was held back by the byte rate.
    pub rate_delayed: u64,
    /// Snapshots that left entity changes out for budget.
    pub budget_limited: u64,
    /// Entity updates left out for budget, summed over snapshots.
    pub entities_deferred: u64,
    /// Snapshots carrying a sync checksum.
    pub checksums: u64,
    /// Chained snapshots: the previous frame's list again, then this
    /// frame's (sent while an acknowledgement was outstanding).
    pub chained: u64,
    /// Acknowledgements that advanced the baseline.
    pub acks: u64,
    /// Snapshots that waited for their chain's model rebuild to finish
    /// (adapting models only: see [`crate::adapt`]; 0 when every rebuild
    /// finished in its lead).
    pub adapt_waits: u64,
}

/// What a client received and rejected.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Snapshots decoded and stored.
    pub snapshots: u64,
    /// Of which full updates.
    pub full_updates: u64,
    /// Snapshots that said an earlier one was rate-delayed.
    pub rate_delayed: u64,
    /// Chained snapshots (two entity lists, through an intermediate frame).
    pub chained: u64,
    /// Snapshots that arrived late (no newer than the newest held).
    pub stale: u64,
    /// Of those, decoded into the ring as possible bases (see
    /// [`Received::Stale`](crate::Received::Stale)); also counted in `snapshots`.
    pub late_kept: u64,
    /// Gamestates applied.
    pub gamestates: u64,
    /// Configstring changes applied.
    pub configstrings: u64,
    /// Sync checksums that matched.
    pub checksums_matched: u64,
    /// Sync checksums that did not: the client's state diverged.
    pub checksum_mismatches: u64,
    /// Messages rejected because their base snapshot is not held.
    pub base_missing: u64,
    /// Messages rejected for an entity number out of range.
    pub out_of_range: u64,
    /// Snapshots rejected because no gamestate had arrived.
    pub no_gamestate: u64,
    /// Messages rejected as malformed (bad bits, unknown kinds, trailing
    /// data, removals of unknown entities, gamestate mismatches).
    pub malformed: u64,
}

impl ClientStats {
    /// Messages rejected, all causes.
    pub fn rejected(&self) -> u64 {
        self.base_missing + self.out_of_range + self.no_gamestate + self.malformed
    }

    /// Counts a rejection under its cause.
    pub(crate) fn count(&mut self, error: &ClientError) {
        match error {
            ClientError::BaseMissing { .. } => self.base_missing += 1,
            ClientError::EntityOutOfRange { .. } => self.out_of_range += 1,
            ClientError::NoGamestate => self.no_gamestate += 1,
            ClientError::Malformed(_)
            | ClientError::NotASnapshot(_)
            | ClientError::SnapshotWithoutSequence
            | ClientError::BadDeltaDistance { .. }
            | ClientError::RemovedUnknownEntity { .. }
            | ClientError::EntityLimit { .. }
            | ClientError::UnknownCodec(_)
            | ClientError::FingerprintMismatch { .. }
            | ClientError::TrailingData { .. } => self.malformed += 1,
        }
    }
}
