//! SIGINT and SIGTERM as a graceful-shutdown request (`signal-hook`).
//!
//! The first signal only sets a flag, which the server loop polls: it then
//! tells every client, finalizes the demo and writes its summary. A second
//! signal while that runs ends the process at once (exit code 1), so a
//! stuck drain can still be interrupted from the terminal.

use std::io;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use signal_hook::consts::{SIGINT, SIGTERM};

/// A shutdown request, set from a signal handler.
#[derive(Debug, Clone, Default)]
pub struct Shutdown {
    /// The signal number received, 0 for none.
    signal: Arc<AtomicUsize>,
}

impl Shutdown {
    /// A flag no signal sets (for tests and embedding).
    pub fn manual() -> Shutdown {
        Shutdown::default()
    }

    /// Installs handlers for SIGINT and SIGTERM.
    pub fn install() -> io::Result<Shutdown> {
        let shutdown = Shutdown::default();
        let flag = Arc::new(std::sync::atomic::AtomicBool::new(false));
        for signal in [SIGINT, SIGTERM] {
            // Order matters: the conditional exit sees the flag the first
            // signal set, so only a second signal exits.
            signal_hook::flag::register_conditional_shutdown(signal, 1, Arc::clone(&flag))?;
            signal_hook::flag::register(signal, Arc::clone(&flag))?;
            signal_hook::flag::register_usize(
                signal,
                Arc::clone(&shutdown.signal),
                signal as usize,
            )?;
        }
        Ok(shutdown)
    }

    /// Asks for shutdown as if `signal` had arrived.
    pub fn request(&self, signal: i32) {
        self.signal.store(signal as usize, Ordering::SeqCst);
    }

    /// Whether shutdown was asked for.
    pub fn requested(&self) -> bool {
        self.signal.load(Ordering::SeqCst) != 0
    }

    /// The name of the signal that asked for it, if any.
    pub fn signal_name(&self) -> Option<&'static str> {
        match self.signal.load(Ordering::SeqCst) as i32 {
            0 => None,
            SIGINT => Some("SIGINT"),
            SIGTERM => Some("SIGTERM"),
            _ => Some("a signal"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signal_sets_the_flag() {
        let shutdown = Shutdown::install().unwrap();
        assert!(!shutdown.requested());
        signal_hook::low_level::raise(SIGTERM).unwrap();
        assert!(shutdown.requested());
        assert_eq!(shutdown.signal_name(), Some("SIGTERM"));
        let manual = Shutdown::manual();
        manual.request(SIGINT);
        assert_eq!(manual.signal_name(), Some("SIGINT"));
    }
}
