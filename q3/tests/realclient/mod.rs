//! The real Quake 3 client as a test oracle: Debian's `openarena` (ioquake3
//! with OpenArena's data), run headless under `xvfb-run` with a fresh home
//! folder, its console read from stderr, ended by its process group.
//!
//! Without it the tests print why they skip and pass, unless
//! `NETQ3_REQUIRE_OPENARENA=1` (CI, after `.ci/openarena`), which makes a
//! missing client a failure.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Debian's OpenArena client.
pub const CLIENT: &str = "/usr/games/openarena";
/// What the client prints when it reaches the game (`activeAction`).
pub const ACTIVE_MARK: &str = "CLIENT_ACTIVE";

/// Whether the real client (and a virtual X server) is here; panics if it
/// must be and is not.
pub fn available(test: &str) -> bool {
    let present = Path::new(CLIENT).is_file()
        && ["/usr/bin/xvfb-run", "/usr/bin/Xvfb", "/usr/bin/xauth"]
            .iter()
            .all(|p| Path::new(p).is_file());
    if !present {
        if std::env::var("NETQ3_REQUIRE_OPENARENA").as_deref() == Ok("1") {
            panic!("{test}: NETQ3_REQUIRE_OPENARENA=1 but {CLIENT}, xvfb-run, Xvfb or xauth is missing (run .ci/openarena)");
        }
        eprintln!("SKIPPED {test}: no OpenArena client ({CLIENT} under xvfb-run); install it with .ci/openarena");
    }
    present
}

/// A running real client, killed (its whole process group: xvfb-run, Xvfb
/// and the game) on drop.
pub struct RealClient {
    child: Child,
    home: PathBuf,
    console: PathBuf,
    started: Instant,
}

impl RealClient {
    /// Starts the client connecting to `server`, with a fresh home folder
    /// and the settings (320x240, OpenGL 1, no sound, 30 fps, no
    /// downloads, every session recorded as a demo).
    pub fn connect(server: SocketAddr, tag: &str) -> RealClient {
        let home = std::env::temp_dir().join(format!(
            "netq3-oa-client-{tag}-{}-{}",
            std::process::id(),
            server.port()
        ));
        let _ = std::fs::remove_dir_all(&home);
        std::fs::create_dir_all(&home).unwrap();
        let console = home.join("console.txt");
        let log = std::fs::File::create(&console).unwrap();
        let home_text = home.to_string_lossy().into_owned();
        let server_text = server.to_string();
        let mut command = Command::new("xvfb-run");
        command
            .args(["-a", "-s", "-screen 0 640x480x24", CLIENT])
            .args(["+set", "fs_homepath", &home_text])
            .args(["+set", "r_mode", "-1"])
            .args(["+set", "r_customwidth", "320"])
            .args(["+set", "r_customheight", "240"])
            .args(["+set", "cl_renderer", "opengl1"])
            .args(["+set", "s_initsound", "0"])
            .args(["+set", "com_maxfps", "30"])
            .args(["+set", "cl_allowDownload", "0"])
            .args(["+set", "cl_autoRecordDemo", "1"])
            .args(["+set", "activeAction", &format!("echo {ACTIVE_MARK}")])
            .args(["+connect", &server_text])
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log);
        // Its own process group, so the game and Xvfb end with it.
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        let child = command.spawn().expect("xvfb-run starts");
        RealClient {
            child,
            home,
            console,
            started: Instant::now(),
        }
    }

    /// The console so far.
    pub fn console(&self) -> String {
        std::fs::read_to_string(&self.console).unwrap_or_default()
    }

    /// Waits (at most `limit`) until the console holds `text`.
    pub fn wait_for(&self, text: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while Instant::now() < deadline {
            if self.console().contains(text) {
                return true;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        self.console().contains(text)
    }

    /// Lines of the console with a Quake 3 error banner.
    pub fn errors(&self) -> Vec<String> {
        self.console()
            .lines()
            .filter(|l| l.contains("ERROR:"))
            .map(str::to_owned)
            .collect()
    }

    /// The demos it recorded (`cl_autoRecordDemo`), under its home folder.
    pub fn demos(&self) -> Vec<PathBuf> {
        fn walk(dir: &Path, out: &mut Vec<PathBuf>, depth: u32) {
            let Ok(entries) = std::fs::read_dir(dir) else {
                return;
            };
            for entry in entries.flatten() {
                let path = entry.path();
                if path.is_dir() && depth < 4 {
                    walk(&path, out, depth + 1);
                } else if path
                    .extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| e.starts_with("dm_"))
                {
                    out.push(path);
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.home, &mut out, 0);
        out
    }

    /// How long it has run.
    pub fn age(&self) -> Duration {
        self.started.elapsed()
    }

    /// Ends it: SIGTERM to its process group (the game writes its demo's
    /// end and quits), then SIGKILL if it lingers.
    pub fn stop(&mut self) {
        if !matches!(self.child.try_wait(), Ok(None)) {
            return; // already ended (and reaped)
        }
        let group = format!("-{}", self.child.id());
        let _ = Command::new("kill").args(["-TERM", "--", &group]).status();
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = Command::new("kill").args(["-KILL", "--", &group]).status();
        let _ = self.child.wait();
    }
}

impl Drop for RealClient {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            self.stop();
        }
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

/// The snapshots of a recorded stream by server time (a `.dm_68` or
/// `.dm_71`; one that stops early gives what it holds).
pub fn snapshots_by_time(
    bytes: &[u8],
) -> Result<std::collections::BTreeMap<i32, std::sync::Arc<netq3_q3::Snapshot>>, String> {
    let mut out = std::collections::BTreeMap::new();
    let decoder = netq3_q3::Dm68Decoder::new(bytes).map_err(|e| e.to_string())?;
    let mut updates = Vec::new();
    for record in decoder {
        let Ok(record) = record else { break };
        updates.clear();
        netq3_q3::relay::source::updates_of(&record.message, &mut updates);
        for update in updates.drain(..) {
            if let netq3_q3::relay::source::SourceUpdate::Snapshot(s) = update {
                out.insert(s.server_time, s);
            }
        }
    }
    Ok(out)
}

/// A real client's recording held against the source's stream.
#[derive(Debug, Default, Clone, Copy)]
pub struct DemoCheck {
    /// Valid snapshots in the recording.
    pub snapshots: usize,
    /// Of which deltas.
    pub deltas: usize,
    /// The source's snapshots over the recording's span: what it should
    /// hold.
    pub expected: usize,
    /// Recorded snapshots whose server time the source has.
    pub compared: usize,
    /// Of those, equal to the source's in every entity and the player
    /// state (marked as followed).
    pub matched: usize,
}

impl DemoCheck {
    /// Sums two checks (a client records one demo per gamestate).
    pub fn add(self, other: DemoCheck) -> DemoCheck {
        DemoCheck {
            snapshots: self.snapshots + other.snapshots,
            deltas: self.deltas + other.deltas,
            expected: self.expected + other.expected,
            compared: self.compared + other.compared,
            matched: self.matched + other.matched,
        }
    }
}

/// Decodes a real client's recording and holds each snapshot against the
/// source's at the same server time.
pub fn check_demo(
    bytes: &[u8],
    source: &std::collections::BTreeMap<i32, std::sync::Arc<netq3_q3::Snapshot>>,
) -> Result<DemoCheck, String> {
    let recorded = snapshots_by_time(bytes)?;
    let mut check = DemoCheck::default();
    let (Some(first), Some(last)) = (recorded.keys().next(), recorded.keys().next_back()) else {
        return Ok(check);
    };
    check.expected = source.range(*first..=*last).count();
    for (time, snapshot) in &recorded {
        check.snapshots += 1;
        check.deltas += usize::from(snapshot.base_message().is_some());
        if let Some(original) = source.get(time) {
            check.compared += 1;
            let same = snapshot.entities == original.entities
                && snapshot.ps == netq3_q3::relay::view::follow_view(&original.ps);
            check.matched += usize::from(same);
        }
    }
    Ok(check)
}
