//! The live one-line status shown on a terminal while a match runs.

use std::io::Write;
use std::time::{Duration, Instant};

use crate::client::ClientPhase;
use crate::game::Seat;
use crate::server::GameServer;
use crate::transport::Meter;

/// How often the line is redrawn.
const PERIOD: Duration = Duration::from_millis(250);

/// A status line redrawn in place (`\r`) on stdout.
#[derive(Debug)]
pub struct StatusLine {
    epoch: Instant,
    last: Instant,
    last_sent: u64,
    last_received: u64,
    width: usize,
}

impl StatusLine {
    /// A line for a match that started at `epoch`.
    pub fn new(epoch: Instant) -> StatusLine {
        StatusLine {
            epoch,
            last: epoch,
            last_sent: 0,
            last_received: 0,
            width: 0,
        }
    }

    /// Redraws the line if its period passed.
    pub fn update(&mut self, now: Instant, server: &GameServer, seats: &[Seat]) {
        let endpoint = server.net().endpoint();
        let losses: Vec<f32> = endpoint
            .connections()
            .filter_map(|id| endpoint.connection(id))
            .map(|c| c.metrics().loss)
            .collect();
        let loss = if losses.is_empty() {
            0.0
        } else {
            losses.iter().sum::<f32>() / losses.len() as f32
        };
        let playing = seats
            .iter()
            .filter_map(|s| s.client.as_ref())
            .filter(|c| c.phase() == ClientPhase::Playing)
            .count();
        let frames = server.stats().frames;
        let epoch = self.epoch;
        self.draw(now, server.net().meter(), |down, up| {
            format!(
                "t {:5.1}s | clients {playing:2}/{} | down {down:7.1} kbps | up {up:6.1} kbps | loss {:4.1}% | frames {frames}",
                now.saturating_duration_since(epoch).as_secs_f64(),
                seats.len(),
                loss * 100.0,
            )
        });
    }

    /// Redraws the line `make(down_kbps, up_kbps)` if its period passed;
    /// the rates are the server socket's since the last draw.
    pub fn draw(&mut self, now: Instant, meter: Meter, make: impl FnOnce(f64, f64) -> String) {
        let since = now.saturating_duration_since(self.last);
        if since < PERIOD {
            return;
        }
        let secs = since.as_secs_f64();
        let down = (meter.bytes_sent - self.last_sent) as f64 * 8.0 / 1000.0 / secs;
        let up = (meter.bytes_received - self.last_received) as f64 * 8.0 / 1000.0 / secs;
        self.last = now;
        self.last_sent = meter.bytes_sent;
        self.last_received = meter.bytes_received;
        let line = make(down, up);
        let pad = self.width.saturating_sub(line.len());
        self.width = line.len();
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "\r{line}{:pad$}", "");
        let _ = out.flush();
    }

    /// Erases the line.
    pub fn clear(&mut self) {
        let mut out = std::io::stdout().lock();
        let _ = write!(out, "\r{:width$}\r", "", width = self.width);
        let _ = out.flush();
    }
}
