//! The report of a lockstep match: per client turns, turn length, input
//! latency, desyncs, final checksum and traffic; the table, the JSON, and
//! the checks that decide the exit code.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::path::PathBuf;

use lockstep::Plan;
use serde_json::{json, Value};

use crate::transport::TransportKind;

/// One participant at the end.
#[derive(Debug, Clone, PartialEq)]
pub struct LockstepClient {
    /// The bot (its index in the match schedule).
    pub bot: usize,
    /// Participant number the host gave it (in order of connection).
    pub id: u8,
    /// Turns executed.
    pub turns: u32,
    /// Mean turn length, ms.
    pub turn_ms: f64,
    /// The newest turn's length, ms.
    pub last_turn_ms: u32,
    /// Mean time from issuing a command to executing it, ms.
    pub input_latency_ms: f64,
    /// Turns that were due before their message arrived.
    pub stalls: u32,
    /// Out-of-sync reports it stopped on (0 or 1).
    pub desyncs: u32,
    /// Checksum of its final state.
    pub final_checksum: Option<u64>,
    /// The last turn it executed.
    pub final_turn: Option<u32>,
    /// Upload, kbit/s of UDP payload.
    pub kbps_up: f64,
    /// Download, kbit/s.
    pub kbps_down: f64,
    /// Commands it issued.
    pub commands: u32,
    /// It left on schedule.
    pub left: bool,
    /// It went silent on schedule.
    pub silent: bool,
    /// Why it stopped, if it did.
    pub error: Option<String>,
}

impl LockstepClient {
    /// Whether it played to the end.
    pub fn stayed(&self) -> bool {
        !self.left && !self.silent
    }
}

/// A detected divergence.
#[derive(Debug, Clone, PartialEq)]
pub struct Desync {
    /// The sync turn whose checksums disagreed.
    pub turn: u32,
    /// Who disagreed with the majority.
    pub participants: Vec<u8>,
    /// The sync turn before, which agreed.
    pub last_agreed: Option<u32>,
    /// The dump of every participant's state at `turn`.
    pub dump: Option<PathBuf>,
    /// The turn `--inject-desync` perturbed, if it was asked to.
    pub injected_at: Option<u32>,
}

/// The whole lockstep match.
#[derive(Debug, Clone, PartialEq)]
pub struct LockstepSummary {
    /// Transport.
    pub transport: TransportKind,
    /// Seed.
    pub seed: u64,
    /// Loss of the conditioner.
    pub loss: f64,
    /// Playing time, s.
    pub seconds: f64,
    /// Turns the host sent.
    pub turns_sent: u32,
    /// Speed control's plan at the end.
    pub plan: Plan,
    /// Dropped participants and the first turn without them.
    pub drops: BTreeMap<u8, u32>,
    /// Every participant.
    pub clients: Vec<LockstepClient>,
    /// The divergence, if one was detected.
    pub desync: Option<Desync>,
    /// Protocol errors the host saw.
    pub host_errors: Vec<String>,
    /// The recording, if any.
    pub record: Option<PathBuf>,
    /// The turn `--inject-desync` asked to perturb, if any.
    pub inject_desync: Option<u32>,
    /// Every participant left on purpose before the session's end (a bots
    /// process told to stop): nobody playing to the end is then no failure.
    pub left_on_purpose: bool,
}

impl LockstepSummary {
    /// Participants that played to the end.
    pub fn stayed(&self) -> impl Iterator<Item = &LockstepClient> {
        self.clients.iter().filter(|c| c.stayed())
    }

    /// Broken invariants, each as a sentence (empty: the match is good).
    pub fn failures(&self) -> Vec<String> {
        let mut out = Vec::new();
        if let Some(d) = &self.desync {
            out.push(
                format!(
                "out of sync at turn {}: participant(s) {:?} disagree (last agreed at turn {}){}",
                d.turn,
                d.participants,
                d.last_agreed
                    .map_or_else(|| "none".to_string(), |t| t.to_string()),
                d.dump
                    .as_ref()
                    .map_or_else(String::new, |p| format!("; state dump: {}", p.display()))
            ) + &d
                    .injected_at
                    .map_or_else(String::new, |t| format!(" [--inject-desync {t}]")),
            );
        }
        if let (Some(turn), None) = (self.inject_desync, &self.desync) {
            out.push(format!(
                "--inject-desync {turn}: no desync detected (the host sent turns up to {})",
                self.turns_sent.saturating_sub(1)
            ));
        }
        let stayed: Vec<&LockstepClient> = self.stayed().collect();
        if stayed.is_empty() && !self.left_on_purpose {
            out.push("nobody played to the end".into());
        }
        if self.desync.is_none() {
            if let Some(first) = stayed.first() {
                for c in &stayed {
                    if c.final_turn != first.final_turn || c.final_checksum != first.final_checksum
                    {
                        out.push(format!(
                            "participant {} ended at turn {:?} with checksum {:?}, participant {} \
                             at {:?} with {:?}",
                            c.id,
                            c.final_turn,
                            c.final_checksum,
                            first.id,
                            first.final_turn,
                            first.final_checksum
                        ));
                    }
                    if c.error.is_some() {
                        out.push(format!(
                            "participant {} stopped: {}",
                            c.id,
                            c.error.as_deref().unwrap_or("")
                        ));
                    }
                }
                if first.turns == 0 {
                    out.push("no turn was played".into());
                }
            }
        }
        for c in self.clients.iter().filter(|c| !c.stayed()) {
            if !self.drops.contains_key(&c.id) {
                out.push(format!("participant {} left but was never dropped", c.id));
            }
        }
        out.extend(self.host_errors.iter().map(|e| format!("host: {e}")));
        out
    }

    /// Whether every invariant held.
    pub fn ok(&self) -> bool {
        self.failures().is_empty()
    }

    /// The summary as one JSON object.
    pub fn to_json(&self) -> String {
        let clients: Vec<Value> = self
            .clients
            .iter()
            .map(|c| {
                json!({
                    "bot": c.bot,
                    "id": c.id,
                    "turns": c.turns,
                    "turn_ms": round1(c.turn_ms),
                    "last_turn_ms": c.last_turn_ms,
                    "input_latency_ms": round1(c.input_latency_ms),
                    "stalls": c.stalls,
                    "desyncs": c.desyncs,
                    "final_checksum": c.final_checksum.map(|s| format!("{s:016x}")),
                    "final_turn": c.final_turn,
                    "kbps_up": round1(c.kbps_up * 10.0) / 10.0,
                    "kbps_down": round1(c.kbps_down * 10.0) / 10.0,
                    "commands": c.commands,
                    "left": c.left,
                    "silent": c.silent,
                    "error": c.error,
                })
            })
            .collect();
        json!({
            "model": "lockstep",
            "transport": self.transport.name(),
            "seed": self.seed,
            "loss": self.loss,
            "seconds": round1(self.seconds * 10.0) / 10.0,
            "turns": self.turns_sent,
            "turn_ms": self.plan.turn_ms,
            "steps_per_turn": self.plan.steps,
            "dropped": self.drops.iter().map(|(p, t)| json!({"participant": p, "turn": t})).collect::<Vec<_>>(),
            "desync": self.desync.as_ref().map(|d| json!({
                "turn": d.turn,
                "participants": d.participants,
                "last_agreed": d.last_agreed,
                "dump": d.dump.as_ref().map(|p| p.display().to_string()),
                "injected_at": d.injected_at,
            })),
            "clients": clients,
            "ok": self.ok(),
            "failures": self.failures(),
        })
        .to_string()
    }

    /// The summary table.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "lockstep match: {} transport, {:.0}% loss, seed {}, {:.1} s, {} turns; \
             speed control at the end: {} ms turns of {} step(s)",
            self.transport.name(),
            self.loss * 100.0,
            self.seed,
            self.seconds,
            self.turns_sent,
            self.plan.turn_ms,
            self.plan.steps
        );
        let _ = writeln!(
            out,
            "{:>4} {:>4} {:>6} {:>8} {:>11} {:>7} {:>7} {:>7} {:>8} {:>17} {:>7}",
            "bot",
            "id",
            "turns",
            "turn_ms",
            "latency_ms",
            "stalls",
            "up_kbps",
            "dn_kbps",
            "desyncs",
            "final_checksum",
            "status"
        );
        for c in &self.clients {
            let _ = writeln!(
                out,
                "{:>4} {:>4} {:>6} {:>8.0} {:>11.0} {:>7} {:>7.2} {:>7.2} {:>8} {:>17} {:>7}",
                c.bot,
                c.id,
                c.turns,
                c.turn_ms,
                c.input_latency_ms,
                c.stalls,
                c.kbps_up,
                c.kbps_down,
                c.desyncs,
                c.final_checksum
                    .map_or_else(|| "-".to_string(), |s| format!("{s:016x}")),
                if c.left {
                    "left"
                } else if c.silent {
                    "silent"
                } else if c.error.is_some() {
                    "stopped"
                } else {
                    "played"
                }
            );
        }
        for (p, t) in &self.drops {
            let _ = writeln!(out, "participant {p} dropped from turn {t}");
        }
        let failures = self.failures();
        if failures.is_empty() {
            let _ = writeln!(out, "all invariants held");
        }
        for f in failures {
            let _ = writeln!(out, "FAILED: {f}");
        }
        out
    }
}

fn round1(v: f64) -> f64 {
    (v * 10.0).round() / 10.0
}
