//! The thin driver: a UDP socket, the wall clock, and a [`LiveClient`].

use std::io::ErrorKind;
use std::net::{SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use super::client::{Event, LiveClient, LiveConfig, Stage};
use super::error::LiveError;
use super::oob::{self, parse_server_oob, ServerOob};
use super::session::SnapshotMark;

/// One datagram of a captured session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CapturedDatagram {
    /// Microseconds since the session started.
    pub micros: u64,
    /// Whether the server sent it.
    pub from_server: bool,
    /// Its bytes.
    pub bytes: Vec<u8>,
}

/// Every datagram of a session, both ways, with the client's settings
/// needed to replay the server's side.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capture {
    /// 68 or 71.
    pub protocol: u32,
    /// The client's qport.
    pub qport: u16,
    /// The client challenge it sent.
    pub client_challenge: i32,
    /// The datagrams in the order they were sent or received.
    pub datagrams: Vec<CapturedDatagram>,
    /// The snapshots the live session decoded, in order.
    pub snapshots: Vec<SnapshotMark>,
    /// When the client's time was up and it left (microseconds).
    pub stop_micros: Option<u64>,
}

/// Runs a session with `server` for `duration` (then leaves cleanly),
/// calling `observe` for each event. Returns the client, whose
/// [`LiveClient::end`] says how it ended.
pub fn run(
    server: SocketAddr,
    config: LiveConfig,
    duration: Duration,
    mut capture: Option<&mut Capture>,
    observe: &mut dyn FnMut(&LiveClient, &Event, Instant) -> Result<(), LiveError>,
) -> Result<LiveClient, LiveError> {
    let bind: SocketAddr = if server.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(bind)?;
    socket.connect(server)?;
    if let Some(capture) = capture.as_deref_mut() {
        capture.protocol = config.protocol.number();
        capture.qport = config.qport;
        capture.client_challenge = config.client_challenge;
    }
    let start = Instant::now();
    let stop = start + duration;
    let mut client = LiveClient::new(config, start);
    let mut buf = vec![0u8; 65_536];
    loop {
        let now = Instant::now();
        if now >= stop && client.stage() != Stage::Ended {
            client.disconnect(now);
            if let Some(capture) = capture.as_deref_mut() {
                capture.stop_micros = Some(now.duration_since(start).as_micros() as u64);
            }
        }
        client.poll(now);
        while let Some(datagram) = client.next_datagram() {
            socket.send(&datagram)?;
            if let Some(capture) = capture.as_deref_mut() {
                capture.datagrams.push(CapturedDatagram {
                    micros: now.duration_since(start).as_micros() as u64,
                    from_server: false,
                    bytes: datagram,
                });
            }
        }
        while let Some(event) = client.next_event() {
            observe(&client, &event, now)?;
        }
        if client.stage() == Stage::Ended {
            return Ok(client);
        }
        let deadline = client.deadline().unwrap_or(now).min(stop);
        let wait = deadline
            .saturating_duration_since(Instant::now())
            .max(Duration::from_millis(1));
        socket.set_read_timeout(Some(wait))?;
        match socket.recv(&mut buf) {
            Ok(n) => {
                let now = Instant::now();
                if let Some(capture) = capture.as_deref_mut() {
                    capture.datagrams.push(CapturedDatagram {
                        micros: now.duration_since(start).as_micros() as u64,
                        from_server: true,
                        bytes: buf[..n].to_vec(),
                    });
                }
                client.handle_datagram(now, &buf[..n]);
            }
            // Nothing yet, or an ICMP "port unreachable" from a server not
            // (yet) listening: the handshake retries cover both.
            Err(e)
                if matches!(
                    e.kind(),
                    ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::ConnectionRefused
                ) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// What `getinfo` and `getstatus` returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerStatus {
    /// The `infoResponse` info string.
    pub info: String,
    /// The `statusResponse` info string.
    pub status: String,
    /// The `statusResponse` player lines.
    pub players: Vec<String>,
}

/// Asks `server` for `getinfo` and `getstatus` (each retried 3 times,
/// waiting `wait` for each answer).
pub fn query_status(server: SocketAddr, wait: Duration) -> Result<ServerStatus, LiveError> {
    let bind: SocketAddr = if server.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = UdpSocket::bind(bind)?;
    socket.connect(server)?;
    socket.set_read_timeout(Some(wait))?;
    let mut buf = vec![0u8; 65_536];
    let mut ask = |request: &str, stage: &'static str| -> Result<ServerOob, LiveError> {
        for _ in 0..3 {
            socket.send(&oob::text_packet(request))?;
            let deadline = Instant::now() + wait;
            while Instant::now() < deadline {
                match socket.recv(&mut buf) {
                    Ok(n) => match parse_server_oob(&buf[..n]) {
                        Some(
                            answer
                            @ (ServerOob::InfoResponse(_) | ServerOob::StatusResponse { .. }),
                        ) if matches!(
                            (&answer, stage),
                            (ServerOob::InfoResponse(_), "infoResponse")
                                | (ServerOob::StatusResponse { .. }, "statusResponse")
                        ) =>
                        {
                            return Ok(answer)
                        }
                        _ => continue,
                    },
                    Err(e)
                        if matches!(
                            e.kind(),
                            ErrorKind::WouldBlock
                                | ErrorKind::TimedOut
                                | ErrorKind::ConnectionRefused
                        ) =>
                    {
                        break
                    }
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Err(LiveError::NoAnswer { stage, attempts: 3 })
    };
    let info = match ask("getinfo netq3", "infoResponse")? {
        ServerOob::InfoResponse(info) => info,
        _ => String::new(),
    };
    let (status, players) = match ask("getstatus netq3", "statusResponse")? {
        ServerOob::StatusResponse { info, players } => (info, players),
        _ => (String::new(), Vec::new()),
    };
    Ok(ServerStatus {
        info,
        status,
        players,
    })
}
