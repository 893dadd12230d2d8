//! Counters of both ends.

/// The server's counters for one client.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerClientStats {
    /// Snapshots sent.
    pub snapshots: u64,
    /// Of which full updates.
    pub full_snapshots: u64,
    /// Bytes of snapshot messages sent.
    pub snapshot_bytes: u64,
    /// Snapshots acknowledged through netchan's delivery reports.
    pub acks: u64,
    /// Commands executed (delivered to the game).
    pub commands: u64,
    /// Command repeats received and skipped (already executed).
    pub repeated_commands: u64,
    /// Commands never received (a gap in the numbers; stays 0).
    pub missed_commands: u64,
    /// Command packets decoded.
    pub command_packets: u64,
    /// Command packets that failed to decode or came before the hello.
    pub bad_packets: u64,
    /// Reliable messages that failed to decode or made no sense.
    pub bad_messages: u64,
    /// Begin / full-update requests for an earlier gamestate (ignored).
    pub stale_messages: u64,
    /// Full updates the client asked for.
    pub full_requests: u64,
    /// Reliable messages (gamestates, configstrings, game commands) queued to it.
    pub reliable_sent: u64,
    /// Reliable game commands received from it.
    pub reliable_received: u64,
}

/// The server's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServerStats {
    /// Frames committed.
    pub frames: u64,
    /// Connections accepted by netchan.
    pub connects: u64,
    /// Connections refused: no free player slot.
    pub refused: u64,
    /// Clients timed out.
    pub timeouts: u64,
    /// Clients disconnected for reliable-queue overflow.
    pub overflows: u64,
    /// Map changes and restarts.
    pub map_changes: u64,
    /// Events for connections the session does not know.
    pub stray_events: u64,
}

/// A client's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ClientStats {
    /// Connect attempts (netchan handshakes started).
    pub connect_attempts: u64,
    /// Sessions established.
    pub sessions: u64,
    /// Automatic reconnects after a server restart or timeout.
    pub reconnects: u64,
    /// Connect attempts a restarting server refused (each followed by a
    /// longer wait before the next).
    pub connect_refusals: u64,
    /// Gamestates received.
    pub gamestates: u64,
    /// Snapshots decoded as the newest.
    pub snapshots: u64,
    /// Of which full updates.
    pub full_snapshots: u64,
    /// Late snapshots (older than the newest held).
    pub stale_snapshots: u64,
    /// Snapshots of an earlier gamestate, dropped unread.
    pub old_epoch_snapshots: u64,
    /// Snapshot messages the snapshot client rejected.
    pub snapshot_errors: u64,
    /// Sync checksums that matched.
    pub checksums_matched: u64,
    /// Sync checksums that did not.
    pub checksum_mismatches: u64,
    /// Full updates asked for.
    pub full_requests: u64,
    /// Commands queued.
    pub commands: u64,
    /// Commands acknowledged (a packet holding them was delivered).
    pub commands_acked: u64,
    /// Command packets sent.
    pub command_packets: u64,
    /// Bytes of command packets sent.
    pub command_bytes: u64,
    /// Reliable game commands received.
    pub reliable_received: u64,
    /// Reliable game commands sent.
    pub reliable_sent: u64,
    /// Reliable messages that failed to decode.
    pub bad_messages: u64,
}
