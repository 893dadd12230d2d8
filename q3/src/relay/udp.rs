//! The thin driver of the relay: its UDP socket, the wall clock, and the
//! source — a live server followed by our client in a thread of its own, or
//! a recorded match played in the relay's thread.

use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::source::{updates_of, FileSource, SourceUpdate};
use super::{Relay, RelayConfig, RelayError, RelayEvent, RelayStats};
use crate::live::{udp as live_udp, Event, LiveConfig, Session};

/// Where the game comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A live server, joined with this client configuration (typically a
    /// spectator following a player: `team spectator`, `follownext`).
    Server {
        /// The server.
        address: SocketAddr,
        /// How our client connects.
        config: LiveConfig,
        /// Record the source's stream as a `.dm_68` here (what the
        /// spectators were shown, to compare their recordings with). Written
        /// beside as `PATH.part` and renamed once complete.
        record: Option<PathBuf>,
    },
    /// A recorded `.dm_68`.
    File {
        /// Its bytes.
        bytes: Arc<Vec<u8>>,
        /// Start again at the end.
        looping: bool,
    },
}

/// What a relay run did.
#[derive(Debug, Clone, Default)]
pub struct RelayRun {
    /// The relay's counters.
    pub stats: RelayStats,
    /// Snapshots the source gave.
    pub source_snapshots: u64,
    /// Why the source ended early, if it did.
    pub source_end: Option<String>,
    /// Seeds for the client-packet fuzz target: for each spectator that
    /// sent sequenced datagrams, its harness input (see
    /// [`super::fuzzing`]).
    pub captured: Vec<Vec<u8>>,
}

/// How many client datagrams per spectator go into a captured seed.
const CAPTURED_DATAGRAMS: usize = 64;

/// Runs a relay on `socket` fed by `source` for `duration` (or until a
/// non-looping file or the live source ends), calling `observe` with each
/// relay event. With `capture`, the first datagrams of each spectator are
/// kept as fuzz seeds.
pub fn run(
    socket: UdpSocket,
    config: RelayConfig,
    source: Source,
    duration: Option<Duration>,
    capture: bool,
    observe: &mut dyn FnMut(&Relay, &RelayEvent),
) -> Result<RelayRun, RelayError> {
    let start = Instant::now();
    let stop = duration.map(|d| start + d);
    let mut relay = Relay::new(config, start);
    let mut run = RelayRun::default();
    let mut buf = vec![0u8; 65_536];
    let mut updates = Vec::new();
    // Captured client datagrams per address, with the keys they need.
    let mut captures: Vec<(SocketAddr, Vec<u8>, usize)> = Vec::new();

    let (sender, receiver) = mpsc::channel::<Result<Vec<SourceUpdate>, String>>();
    let mut file = None;
    let live = match source {
        Source::File { bytes, looping } => {
            file = Some(FileSource::new(&bytes, looping, start)?);
            None
        }
        Source::Server {
            address,
            config,
            record,
        } => {
            let seconds = duration.unwrap_or(Duration::from_secs(86_400 * 365));
            let mut recording = match &record {
                Some(path) => {
                    let part = part_path(path);
                    let file = std::fs::File::create(&part)?;
                    let session = Session::new(address.to_string(), config.protocol.number())
                        .record_to(Box::new(std::io::BufWriter::new(file)));
                    Some((session, part, path.clone()))
                }
                None => None,
            };
            Some(std::thread::spawn(move || {
                let mut batch = Vec::new();
                let result =
                    live_udp::run(address, config, seconds, None, &mut |client, event, now| {
                        if let Some((session, ..)) = recording.as_mut() {
                            session.observe(client, event, now)?;
                        }
                        if let Event::Message { message, .. } = event {
                            batch.clear();
                            updates_of(message, &mut batch);
                            if !batch.is_empty() && sender.send(Ok(batch.clone())).is_err() {
                                return Err(crate::live::LiveError::Usage("the relay stopped"));
                            }
                        }
                        Ok(())
                    });
                if let Some((mut session, part, path)) = recording {
                    let kept = session
                        .finish_recording()
                        .ok()
                        .and_then(|()| std::fs::rename(&part, &path).ok());
                    if kept.is_none() {
                        let _ = std::fs::remove_file(&part);
                        let _ = sender.send(Err(format!(
                            "the source's recording {} could not be written",
                            path.display()
                        )));
                    }
                }
                let end = match result {
                    Ok(client) => match client.end() {
                        Some(crate::live::End::Error(e)) => Some(e.to_string()),
                        _ => None,
                    },
                    Err(e) => Some(e.to_string()),
                };
                if let Some(end) = end {
                    let _ = sender.send(Err(end));
                }
            }))
        }
    };

    loop {
        let now = Instant::now();
        if stop.is_some_and(|stop| now >= stop) {
            break;
        }
        // The source.
        updates.clear();
        if let Some(file) = file.as_mut() {
            if !file.poll(now, &mut updates) && updates.is_empty() {
                break;
            }
        }
        while let Ok(batch) = receiver.try_recv() {
            match batch {
                Ok(batch) => updates.extend(batch),
                Err(end) => run.source_end = Some(end),
            }
        }
        for update in updates.drain(..) {
            match update {
                SourceUpdate::Gamestate(gamestate) => relay.load_gamestate(&gamestate),
                SourceUpdate::Command(text) => relay.server_command(&text),
                SourceUpdate::Snapshot(snapshot) => {
                    run.source_snapshots += 1;
                    relay.snapshot(now, &snapshot);
                }
            }
        }
        if run.source_end.is_some() {
            break;
        }
        relay.poll(now);
        while let Some((to, datagram)) = relay.next_datagram() {
            // A client gone away makes sends fail now and then: not fatal.
            let _ = socket.send_to(&datagram, to);
        }
        while let Some(event) = relay.next_event() {
            observe(&relay, &event);
        }
        let mut deadline = relay.deadline().unwrap_or(now + Duration::from_millis(50));
        if let Some(due) = file.as_ref().and_then(FileSource::next_due) {
            deadline = deadline.min(due);
        }
        if live.is_some() {
            // Source updates arrive on a channel: look at it often.
            deadline = deadline.min(now + Duration::from_millis(5));
        }
        if let Some(stop) = stop {
            deadline = deadline.min(stop);
        }
        let wait = deadline
            .saturating_duration_since(Instant::now())
            .clamp(Duration::from_millis(1), Duration::from_millis(50));
        socket.set_read_timeout(Some(wait))?;
        match socket.recv_from(&mut buf) {
            Ok((n, from)) => {
                let now = Instant::now();
                let datagram = &buf[..n];
                relay.handle_datagram(now, from, datagram);
                if capture && !crate::live::oob::is_oob(datagram) {
                    capture_datagram(&relay, &mut captures, from, datagram);
                }
            }
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock
                        | ErrorKind::TimedOut
                        | ErrorKind::ConnectionRefused
                        | ErrorKind::ConnectionReset
                ) => {}
            Err(e) => return Err(e.into()),
        }
    }
    drop(receiver);
    if let Some(thread) = live {
        // The live client leaves when its time is up or its channel closes.
        let _ = thread.join();
    }
    run.stats = relay.stats();
    run.captured = captures.into_iter().map(|(_, seed, _)| seed).collect();
    Ok(run)
}

/// `PATH.part`: where a recording is written until it is complete.
fn part_path(path: &std::path::Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".part");
    PathBuf::from(name)
}

fn capture_datagram(
    relay: &Relay,
    captures: &mut Vec<(SocketAddr, Vec<u8>, usize)>,
    from: SocketAddr,
    datagram: &[u8],
) {
    let Some((_, spectator)) = relay.spectators().find(|(_, s)| s.address() == from) else {
        return;
    };
    let index = match captures.iter().position(|(a, _, _)| *a == from) {
        Some(index) => index,
        None => {
            let seed = super::fuzzing::harness_header(
                spectator.protocol,
                spectator.challenge,
                relay.server_id(),
                relay.checksum_feed,
            );
            captures.push((from, seed, 0));
            captures.len() - 1
        }
    };
    let (_, seed, count) = &mut captures[index];
    if *count < CAPTURED_DATAGRAMS {
        super::fuzzing::push_datagram(seed, datagram);
        *count += 1;
    }
}
