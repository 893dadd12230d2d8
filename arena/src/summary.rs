//! The end-of-match summary: per-client numbers, the server's, the
//! invariants checked, a readable table and the JSON file.
//!
//! JSON layout (`--summary-json FILE`):
//!
//! ```text
//! { "lag_comp": true, "clients": N, "seconds": S, "codec": "native", "tick_hz": H,
//!   "transport": "udp", "seed": n,
//!   "server": { "frames": n, "frame_ms_p50": x, "frame_ms_p99": x, "timeouts": n, ...
//!               "rail_shots": n, "rail_hits": n, "rewind_ms_p50": x, "rewind_ms_max": x, ... },
//!   "per_client": [ { "id": n, "kbps_down": x, "kbps_up": x, "snapshots": n,
//!       "full_snapshots": n, "delta_snapshots": n, "mean_snapshot_bytes": x,
//!       "p99_snapshot_bytes": x, "max_datagram_bytes": n, "reliable_sent": n,
//!       "reliable_delivered": n, "reliable_lost": n, "reliable_out_of_order": n,
//!       "checksum_mismatches": n, "prediction_error_mean": x, "rtt_ms": x,
//!       "name": "bot0", "status": "connected", ..., "rail_shots": n, "rail_hits": n } ],
//!   "violations": [ "..." ] }
//! ```

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::time::Duration;

use serde::Serialize;

use crate::client::{ClientPhase, GameClient};
use crate::game::Match;
use crate::server::PeerStatus;

/// The server's part of the summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerSummary {
    /// Ticks run.
    pub frames: u64,
    /// Median tick time, ms.
    pub frame_ms_p50: f64,
    /// 99th-percentile tick time, ms.
    pub frame_ms_p99: f64,
    /// Connections timed out.
    pub timeouts: u64,
    /// Connections refused (no free slot).
    pub refused: u64,
    /// Projectiles fired.
    pub shots: u64,
    /// Projectiles that hit.
    pub hits: u64,
    /// Kills.
    pub kills: u64,
    /// Items picked up.
    pub pickups: u64,
    /// Chat lines broadcast.
    pub chat: u64,
    /// Rail shots fired.
    pub rail_shots: u64,
    /// Rail shots that hit.
    pub rail_hits: u64,
    /// Median of how far back rail shots were judged (lag compensation), ms.
    pub rewind_ms_p50: f64,
    /// Furthest a rail shot was judged back, ms.
    pub rewind_ms_max: f64,
    /// Rail shots whose view the server bounded (too old, too new, unverified).
    pub rewinds_clamped: u64,
    /// Snapshots recorded to the demo.
    pub recorded_snapshots: u64,
    /// Of which keyframes.
    pub recorded_keyframes: u64,
    /// Largest datagram the engine sent (server or any client).
    pub max_datagram_bytes: usize,
    /// Datagrams the server dropped as bad input, by netchan's reason (a
    /// stranger's traffic: counted, never a broken invariant).
    pub rejected_input: BTreeMap<&'static str, u64>,
    /// Digest of the final world state (same seed, same game).
    pub world_checksum: String,
    /// Whether every guaranteed message was acknowledged before the end.
    pub drain_complete: bool,
}

/// One client's part of the summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ClientSummary {
    /// Bot index.
    pub id: usize,
    /// Downstream rate over its session, kbit/s (UDP payload).
    pub kbps_down: f64,
    /// Upstream rate.
    pub kbps_up: f64,
    /// Snapshots decoded.
    pub snapshots: u64,
    /// Full updates among them.
    pub full_snapshots: u64,
    /// Deltas among them.
    pub delta_snapshots: u64,
    /// Mean snapshot message size.
    pub mean_snapshot_bytes: f64,
    /// 99th-percentile snapshot message size.
    pub p99_snapshot_bytes: f64,
    /// Largest datagram it sent (its commands, acks and guaranteed
    /// messages up; the engine promises at most 1400 bytes).
    pub max_datagram_bytes: usize,
    /// Guaranteed messages the server queued to it (by the end of the drain).
    pub reliable_sent: u64,
    /// Guaranteed messages it received (by the end of the drain).
    pub reliable_delivered: u64,
    /// Sent but never received, counted for clients connected at the end.
    pub reliable_lost: u64,
    /// Received out of sequence.
    pub reliable_out_of_order: u64,
    /// Sync checksums that disagreed.
    pub checksum_mismatches: u64,
    /// Mean prediction error, units.
    pub prediction_error_mean: f64,
    /// Smoothed round-trip time at the end of its session, ms.
    pub rtt_ms: f64,
    /// Its name.
    pub name: String,
    /// How its session ended (server's view).
    pub status: PeerStatus,
    /// Seconds it was connected during play.
    pub session_seconds: f64,
    /// Largest prediction error, units.
    pub prediction_error_max: f32,
    /// Prediction comparisons made.
    pub prediction_samples: u64,
    /// Sync checksums that matched.
    pub checksums_matched: u64,
    /// Full updates it asked for.
    pub full_requests: u64,
    /// Snapshot messages its snapshot client rejected.
    pub snapshot_errors: u64,
    /// Commands it sent.
    pub commands: u64,
    /// Its guaranteed messages to the server received out of sequence.
    pub upstream_out_of_order: u64,
    /// Frames whose render time ran past the newest snapshot.
    pub interp_stalls: u64,
    /// Frags, as its newest snapshot showed them.
    pub score: i32,
    /// Rail shots it fired (the server's count; 0 in `arena bots`, whose
    /// server has them in its own summary).
    pub rail_shots: u64,
    /// Of which hit a player.
    pub rail_hits: u64,
}

/// A client's guaranteed-message figures, as its summary counts them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reliable {
    /// Guaranteed messages the server queued to it.
    pub sent: u64,
    /// Of which it received.
    pub delivered: u64,
    /// Whether `sent - delivered` counts as lost (connected to the end).
    pub count_lost: bool,
    /// Its guaranteed messages to the server received out of sequence.
    pub upstream_out_of_order: u64,
}

impl ClientSummary {
    /// The summary of one client's session.
    pub fn of(id: usize, client: &GameClient, status: PeerStatus, reliable: Reliable) -> Self {
        let s = client.stats();
        let meter = client.meter();
        let session = match (client.connected_at(), client.ended_at()) {
            (Some(a), Some(b)) => b.saturating_duration_since(a),
            _ => Duration::ZERO,
        }
        .as_secs_f64();
        let kbps = |bytes: u64| {
            if session > 0.0 {
                bytes as f64 * 8.0 / 1000.0 / session
            } else {
                0.0
            }
        };
        let mut sizes: Vec<f64> = s.snapshot_bytes.iter().map(|&b| b as f64).collect();
        sizes.sort_by(f64::total_cmp);
        let mean = if sizes.is_empty() {
            0.0
        } else {
            sizes.iter().sum::<f64>() / sizes.len() as f64
        };
        let prediction = client.predictor().stats();
        ClientSummary {
            id,
            kbps_down: kbps(meter.bytes_received),
            kbps_up: kbps(meter.bytes_sent),
            snapshots: s.snapshots,
            full_snapshots: s.full_snapshots,
            delta_snapshots: s.delta_snapshots,
            mean_snapshot_bytes: mean,
            p99_snapshot_bytes: quantile(&sizes, 0.99),
            max_datagram_bytes: meter.largest,
            reliable_sent: reliable.sent,
            reliable_delivered: reliable.delivered,
            reliable_lost: if reliable.count_lost {
                reliable.sent.saturating_sub(reliable.delivered)
            } else {
                0
            },
            reliable_out_of_order: s.reliable_out_of_order,
            checksum_mismatches: s.checksum_mismatches,
            prediction_error_mean: prediction.mean(),
            rtt_ms: millis(client.rtt()),
            name: client.name().to_owned(),
            status,
            session_seconds: session,
            prediction_error_max: prediction.error_max,
            prediction_samples: prediction.samples,
            checksums_matched: s.checksums_matched,
            full_requests: s.full_requests,
            snapshot_errors: s.snapshot_errors,
            commands: s.commands,
            upstream_out_of_order: reliable.upstream_out_of_order,
            interp_stalls: s.interp_stalls,
            score: client
                .snapshots()
                .newest()
                .map_or(0, |s| s.player().score as i32),
            rail_shots: 0,
            rail_hits: 0,
        }
    }

    /// Adds the client's broken invariants to `violations`.
    pub fn check(&self, client: &GameClient, violations: &mut Vec<String>) {
        let who = &self.name;
        if self.checksum_mismatches > 0 {
            violations.push(format!(
                "{who}: {} checksum mismatches",
                self.checksum_mismatches
            ));
        }
        if self.reliable_lost > 0 {
            violations.push(format!(
                "{who}: {} guaranteed messages lost",
                self.reliable_lost
            ));
        }
        if self.reliable_out_of_order > 0 || self.upstream_out_of_order > 0 {
            violations.push(format!(
                "{who}: {} guaranteed messages out of order ({} upstream)",
                self.reliable_out_of_order, self.upstream_out_of_order
            ));
        }
        if client.stats().reliable_malformed > 0 {
            violations.push(format!(
                "{who}: {} malformed guaranteed messages",
                client.stats().reliable_malformed
            ));
        }
    }
}

/// The per-client table: a header and one row per client.
pub fn client_table(per_client: &[ClientSummary]) -> String {
    let mut out = String::new();
    let _ = writeln!(
            out,
            "{:<6} {:<9} {:>7} {:>6} {:>5} {:>9} {:>6} {:>6} {:>5} {:>9} {:>6} {:>4} {:>5} {:>6} {:>6} {:>5}",
            "client",
            "status",
            "kbps↓",
            "kbps↑",
            "snaps",
            "full/Δ",
            "mean B",
            "p99 B",
            "max B",
            "rel s/d",
            "lost",
            "ooo",
            "csum✗",
            "pred",
            "rtt ms",
            "score"
        );
    for c in per_client {
        let status = match c.status {
            PeerStatus::Connected => "connected",
            PeerStatus::Left => "left",
            PeerStatus::TimedOut => "timed out",
            PeerStatus::Dropped => "dropped",
            PeerStatus::Shutdown => "shutdown",
        };
        let _ = writeln!(
                out,
                "{:<6} {:<9} {:>7.1} {:>6.1} {:>5} {:>9} {:>6.1} {:>6.0} {:>5} {:>9} {:>6} {:>4} {:>5} {:>6.2} {:>6.0} {:>5}",
                c.name,
                status,
                c.kbps_down,
                c.kbps_up,
                c.snapshots,
                format!("{}/{}", c.full_snapshots, c.delta_snapshots),
                c.mean_snapshot_bytes,
                c.p99_snapshot_bytes,
                c.max_datagram_bytes,
                format!("{}/{}", c.reliable_sent, c.reliable_delivered),
                c.reliable_lost,
                c.reliable_out_of_order,
                c.checksum_mismatches,
                c.prediction_error_mean,
                c.rtt_ms,
                c.score
            );
    }
    out
}

/// The whole summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Whether rail shots were lag compensated.
    pub lag_comp: bool,
    /// Bots.
    pub clients: usize,
    /// Match length, s.
    pub seconds: f64,
    /// Codec name.
    pub codec: &'static str,
    /// Server ticks per second.
    pub tick_hz: u32,
    /// Transport name.
    pub transport: &'static str,
    /// Seed.
    pub seed: u64,
    /// The server.
    pub server: ServerSummary,
    /// Each client, in bot order.
    pub per_client: Vec<ClientSummary>,
    /// Broken invariants (empty: all held).
    pub violations: Vec<String>,
}

/// The `p`-quantile (0..=1) of sorted values, nearest rank.
pub fn quantile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

impl Summary {
    /// Summarizes a finished match and checks its invariants.
    pub fn of(game: &Match) -> Summary {
        let config = game.config();
        let server = game.server();
        let stats = server.stats();
        let mut frame_ms: Vec<f64> = stats.frame_times.iter().copied().map(millis).collect();
        frame_ms.sort_by(f64::total_cmp);
        let world = server.world();
        let mut violations = Vec::new();
        let server_meter = server.net().meter();
        let mut max_datagram = server_meter.largest;
        let mut oversized = server_meter.oversized;

        let mut per_client = Vec::new();
        for (id, seat) in game.seats().iter().enumerate() {
            let Some(client) = seat.client.as_ref() else {
                continue;
            };
            let report = server.reports().get(&client.client_id());
            let meter = client.meter();
            max_datagram = max_datagram.max(meter.largest);
            oversized += meter.oversized;
            let status = report.map_or(PeerStatus::Dropped, |r| r.status);
            // Counted when the drain ended: what was sent while the match
            // still waited for delivery (leave notices queued while everyone
            // disconnects afterwards are not waited for).
            let (reliable_sent, reliable_delivered) = seat.reliable_at_drain.unwrap_or((
                report.map_or(0, |r| r.reliable_sent),
                client.stats().reliable_delivered,
            ));
            // Lost only counts for clients connected to the end of the drain
            // (they disconnect cleanly after it): the others left with
            // messages legitimately in flight.
            let stayed = seat.plan.leave_at.is_none() && seat.plan.silent_at.is_none();
            let connected_at_end = stayed
                && matches!(status, PeerStatus::Connected | PeerStatus::Left)
                && client.phase() != ClientPhase::Silent;
            if stayed && !connected_at_end {
                violations.push(format!(
                    "{}: disconnected unexpectedly ({status:?}, {:?})",
                    client.name(),
                    client.disconnect_reason()
                ));
            }
            let reliable = Reliable {
                sent: reliable_sent,
                delivered: reliable_delivered,
                count_lost: connected_at_end,
                upstream_out_of_order: report.map_or(0, |r| r.upstream_out_of_order),
            };
            let mut summary = ClientSummary::of(id, client, status, reliable);
            summary.rail_shots = report.map_or(0, |r| r.rail_shots);
            summary.rail_hits = report.map_or(0, |r| r.rail_hits);
            summary.check(client, &mut violations);
            if seat.plan.silent_at.is_some() && status != PeerStatus::TimedOut {
                violations.push(format!(
                    "{}: went silent but was not timed out ({status:?})",
                    summary.name
                ));
            }
            per_client.push(summary);
        }
        if oversized > 0 {
            violations.push(format!(
                "{oversized} datagrams over {} bytes",
                netchan::MAX_DATAGRAM
            ));
        }
        if !game.drain_complete() {
            violations.push("guaranteed messages still unacknowledged after the drain".into());
        }
        let world_stats = world.stats();
        let mut rewinds: Vec<f64> = stats.rewind_ms.iter().map(|&r| r as f64).collect();
        rewinds.sort_by(f64::total_cmp);
        Summary {
            lag_comp: config.lag_comp,
            clients: config.clients,
            seconds: config.duration.as_secs_f64(),
            codec: config.codec.name(),
            tick_hz: config.tick_hz,
            transport: config.transport.name(),
            seed: config.seed,
            server: ServerSummary {
                frames: stats.frames,
                frame_ms_p50: quantile(&frame_ms, 0.5),
                frame_ms_p99: quantile(&frame_ms, 0.99),
                timeouts: stats.timeouts,
                refused: server.session().stats().refused,
                shots: world_stats.shots,
                hits: world_stats.hits,
                kills: world_stats.kills,
                pickups: world_stats.pickups,
                chat: stats.chat,
                rail_shots: world_stats.rail_shots,
                rail_hits: world_stats.rail_hits,
                rewind_ms_p50: quantile(&rewinds, 0.5),
                rewind_ms_max: rewinds.last().copied().unwrap_or(0.0),
                rewinds_clamped: stats.rewinds_clamped,
                recorded_snapshots: stats.recorded,
                recorded_keyframes: stats.recorded_keyframes,
                max_datagram_bytes: max_datagram,
                rejected_input: server
                    .net()
                    .endpoint()
                    .metrics()
                    .rejected
                    .iter()
                    .filter(|(_, n)| *n > 0)
                    .map(|(reason, n)| (reason.name(), n))
                    .collect(),
                world_checksum: format!("{:016x}", world.checksum()),
                drain_complete: game.drain_complete(),
            },
            per_client,
            violations,
        }
    }

    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.violations.is_empty()
    }

    /// Rail hits per rail shot, over all clients (0 without shots).
    pub fn rail_hit_ratio(&self) -> f64 {
        if self.server.rail_shots == 0 {
            0.0
        } else {
            self.server.rail_hits as f64 / self.server.rail_shots as f64
        }
    }

    /// Share of decoded snapshots that were deltas, over all clients.
    pub fn delta_share(&self) -> f64 {
        let (delta, all) = self
            .per_client
            .iter()
            .fold((0, 0), |(d, a), c| (d + c.delta_snapshots, a + c.snapshots));
        if all == 0 {
            0.0
        } else {
            delta as f64 / all as f64
        }
    }

    /// The JSON document.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
    }

    /// The readable report: a header, one row per client, the server line
    /// and the verdict.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "arena: {} bots, {:.0} s, {} codec, {} Hz ticks, {} transport, seed {}",
            self.clients, self.seconds, self.codec, self.tick_hz, self.transport, self.seed
        );
        out.push_str(&client_table(&self.per_client));
        let s = &self.server;
        let _ = writeln!(
            out,
            "server: {} frames, frame p50 {:.3} ms, p99 {:.3} ms, {} timeouts, {} shots, {} hits, {} kills, {} pickups, {} chat lines, largest datagram {} B, {} datagrams rejected",
            s.frames, s.frame_ms_p50, s.frame_ms_p99, s.timeouts, s.shots, s.hits, s.kills, s.pickups, s.chat, s.max_datagram_bytes, s.rejected_input.values().sum::<u64>()
        );
        let _ = writeln!(
            out,
            "rail: {} shots, {} hits ({:.1}%), lag compensation {}{}",
            s.rail_shots,
            s.rail_hits,
            self.rail_hit_ratio() * 100.0,
            if self.lag_comp { "on" } else { "off" },
            if self.lag_comp {
                format!(
                    ": rewind p50 {:.0} ms, max {:.0} ms, {} bounded",
                    s.rewind_ms_p50, s.rewind_ms_max, s.rewinds_clamped
                )
            } else {
                String::new()
            }
        );
        let _ = writeln!(
            out,
            "snapshots: {:.1}% deltas; recorded {} ({} keyframes); world checksum {}",
            self.delta_share() * 100.0,
            s.recorded_snapshots,
            s.recorded_keyframes,
            s.world_checksum
        );
        if self.violations.is_empty() {
            let _ = writeln!(out, "invariants: all held");
        } else {
            for v in &self.violations {
                let _ = writeln!(out, "INVARIANT BROKEN: {v}");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_use_the_nearest_rank() {
        let values: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(quantile(&values, 0.5), 50.0);
        assert_eq!(quantile(&values, 0.99), 99.0);
        assert_eq!(quantile(&values, 1.0), 100.0);
        assert_eq!(quantile(&[], 0.5), 0.0);
        assert_eq!(quantile(&[7.0], 0.99), 7.0);
    }
}
