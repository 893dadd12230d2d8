//! Shared helpers of the live tests: Debian's `ioq3ded` with the OpenArena
//! data, started on a free loopback port with 4 bots (no master servers)
//! and killed by its pid on drop.

#![allow(dead_code)]

use std::net::{SocketAddr, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use netq3_q3::live::pak::PakIndex;
use netq3_q3::live::udp::query_status;

pub const IOQ3DED: &str = "/usr/lib/ioquake3/ioq3ded";
pub const OPENARENA: &str = "/usr/lib/openarena-server";
const RCON_PASSWORD: &str = "netq3-live-test";

/// Whether the real server is here; panics if it must be and is not.
pub fn server_available(test: &str) -> bool {
    let present = Path::new(IOQ3DED).is_file() && Path::new(OPENARENA).join("baseoa").is_dir();
    if !present {
        if std::env::var("NETQ3_REQUIRE_IOQ3").as_deref() == Ok("1") {
            panic!("{test}: NETQ3_REQUIRE_IOQ3=1 but {IOQ3DED} or {OPENARENA}/baseoa is missing (run .ci/ioq3)");
        }
        eprintln!("SKIPPED {test}: no ioquake3 server ({IOQ3DED} with {OPENARENA}); install it with .ci/ioq3");
    }
    present
}

/// A dedicated server on a free loopback port, killed on drop.
pub struct Server {
    child: Child,
    pub address: SocketAddr,
    home: PathBuf,
    console: PathBuf,
}

/// How a test server is started. All are left at ioquake3's default
/// `sv_pure 1`: clients must answer with their pak checksums.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// ioquake3's defaults (protocol 71 with its challenge word, 68 legacy).
    Ioq3,
    /// As Debian's `/usr/games/openarena-server` wrapper starts it:
    /// `com_legacyprotocol 71` and `com_protocol 71`, OpenArena's "71" (the
    /// legacy framing under the number 71).
    OpenArena71,
}

impl Server {
    pub fn start(tag: &str) -> Server {
        Server::start_as(tag, Flavour::Ioq3)
    }

    /// What the server printed so far.
    pub fn console_text(&self) -> String {
        std::fs::read_to_string(&self.console).unwrap_or_default()
    }

    pub fn start_as(tag: &str, flavour: Flavour) -> Server {
        let port = {
            let probe = UdpSocket::bind("127.0.0.1:0").unwrap();
            probe.local_addr().unwrap().port()
        };
        let home =
            std::env::temp_dir().join(format!("netq3-ioq3-{tag}-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&home).unwrap();
        let port_text = port.to_string();
        let home_text = home.to_string_lossy().into_owned();
        let mut args: Vec<&str> = vec![
            "+set",
            "dedicated",
            "1",
            "+set",
            "net_ip",
            "127.0.0.1",
            "+set",
            "net_port",
            &port_text,
            "+set",
            "net_enabled",
            "1",
            "+set",
            "sv_master1",
            "",
            "+set",
            "sv_master2",
            "",
            "+set",
            "sv_master3",
            "",
            "+set",
            "com_basegame",
            "baseoa",
            "+set",
            "fs_basepath",
            OPENARENA,
            "+set",
            "fs_homepath",
            &home_text,
            "+set",
            "rconPassword",
            RCON_PASSWORD,
            "+set",
            "bot_enable",
            "1",
            "+set",
            "bot_minplayers",
            "4",
        ];
        if flavour == Flavour::OpenArena71 {
            args.extend([
                "+set",
                "com_legacyprotocol",
                "71",
                "+set",
                "com_protocol",
                "71",
            ]);
        }
        args.extend(["+map", "oa_dm1"]);
        let console = home.join("console.log");
        let log = std::fs::File::create(&console).unwrap();
        let child = Command::new(IOQ3DED)
            .args(&args)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("ioq3ded starts");
        let server = Server {
            child,
            address: ([127, 0, 0, 1], port).into(),
            home,
            console,
        };
        // Ready when it answers getinfo (loading the map and bots takes a few seconds).
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            match query_status(server.address, Duration::from_millis(300)) {
                Ok(status) => {
                    assert!(status.info.contains("oa_dm1"), "{}", status.info);
                    return server;
                }
                Err(e) if Instant::now() > deadline => {
                    panic!("ioq3ded on {} never answered: {e}", server.address)
                }
                Err(_) => std::thread::sleep(Duration::from_millis(200)),
            }
        }
    }

    /// Runs a console command through rcon.
    pub fn rcon(&self, command: &str) {
        let socket = UdpSocket::bind("127.0.0.1:0").unwrap();
        let packet = netq3_q3::live::oob::text_packet(&format!("rcon {RCON_PASSWORD} {command}"));
        socket.send_to(&packet, self.address).unwrap();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.home);
    }
}

/// The server's own paks, read once.
pub fn paks() -> Arc<PakIndex> {
    static PAKS: OnceLock<Arc<PakIndex>> = OnceLock::new();
    PAKS.get_or_init(|| {
        Arc::new(PakIndex::scan(&[PathBuf::from(OPENARENA)]).expect("the paks read"))
    })
    .clone()
}
