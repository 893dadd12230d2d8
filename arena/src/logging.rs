//! Logging through `tracing`: a `RUST_LOG`-style filter
//! (`tracing-subscriber`'s `EnvFilter`) and a writer on stderr, so the live
//! status line keeps stdout. Connects, disconnects with their reasons and
//! map changes are logged as they happen; rejected datagrams, which an
//! attacker controls, are summed and logged at most once per period.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use tracing_subscriber::EnvFilter;

use netchan::DropReason;

use crate::metrics::Totals;

/// Installs the global subscriber: `RUST_LOG` if set, else `default`
/// (e.g. `"info"`). A second call (tests) is harmless.
pub fn init(default: &str) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_target(false)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

/// Rejected datagrams, summed and reported at most once per period.
#[derive(Debug, Clone)]
pub struct RejectLog {
    period: Duration,
    last: Totals,
    next: Option<Instant>,
}

impl RejectLog {
    /// A log that reports at most once per `period`.
    pub fn new(period: Duration) -> RejectLog {
        RejectLog {
            period,
            last: Totals::default(),
            next: None,
        }
    }

    /// Given the running totals at `now`: the line to log, if the period
    /// has passed and anything was rejected since the last line. The
    /// caller logs it (at `warn`).
    pub fn poll(&mut self, now: Instant, totals: &Totals) -> Option<String> {
        if self.next.is_some_and(|t| now < t) {
            return None;
        }
        let mut line = String::new();
        let mut sum = 0;
        for (i, reason) in DropReason::ALL.into_iter().enumerate() {
            let new = totals.rejected[i].saturating_sub(self.last.rejected[i]);
            if new > 0 {
                sum += new;
                let _ = write!(line, " {}={new}", reason.name());
            }
        }
        self.last = *totals;
        if sum == 0 {
            return None;
        }
        self.next = Some(now + self.period);
        Some(format!("rejected {sum} datagrams:{line}"))
    }
}

/// Logs a line from [`RejectLog::poll`] (a helper so callers need no
/// `tracing` import).
pub fn log_rejected(line: &str) {
    tracing::warn!("{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flood_of_rejections_is_one_line_per_period() {
        let t0 = Instant::now();
        let mut log = RejectLog::new(Duration::from_secs(1));
        let mut totals = Totals::default();
        let mut lines = Vec::new();
        // 10 000 badly framed datagrams over 3 s, one every 0.3 ms, polled each time.
        for i in 1..=10_000u64 {
            totals.set_rejected(DropReason::BadFraming, i);
            if i % 1000 == 0 {
                totals.set_rejected(DropReason::Stale, i / 1000);
            }
            let now = t0 + Duration::from_micros(300 * i);
            lines.extend(log.poll(now, &totals));
        }
        // At 0.3 ms, 1.0003 s, 2.0004 s (first poll at or past each period end).
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(lines[0], "rejected 1 datagrams: bad_framing=1");
        // 1.0003 s is datagram 3335: 3334 new badly framed, stale 1..=3.
        assert_eq!(
            lines[1],
            "rejected 3337 datagrams: bad_framing=3334 stale=3"
        );
        // The rest (after 2.0007 s, datagram 6669) comes with the next poll
        // past the period; then nothing new, nothing logged.
        let later = t0 + Duration::from_secs(60);
        assert_eq!(
            log.poll(later, &totals).as_deref(),
            Some("rejected 3335 datagrams: bad_framing=3331 stale=4")
        );
        assert_eq!(log.poll(later + Duration::from_secs(60), &totals), None);
    }
}
