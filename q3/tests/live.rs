//! Live tests against a real ioquake3 server: Debian's `ioq3ded` with the
//! OpenArena data (`apt-get install openarena-server`; `.ci/ioq3` installs
//! it). Each test starts its own server on a free loopback port with 4 bots
//! and kills it (by its pid) when done. The servers are pure (`sv_pure 1`,
//! the default): clients answer with the checksums of the server's own
//! paks, and the servers' consoles must show no "Unpure client".
//!
//! Without the server the tests print why they skip and pass, unless
//! `NETQ3_REQUIRE_IOQ3=1`, which makes a missing server a failure (CI).
//!
//! All sessions run at once (three servers, five clients) so the whole file
//! takes about 25 seconds.

mod ioq3;

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use ioq3::{paks, server_available, Flavour, Server, OPENARENA};
use netq3_q3::live::udp;
use netq3_q3::live::{End, Event, LiveClient, LiveConfig, Protocol, Session, Summary};
use netq3_q3::{Dm68Decoder, Snapshot};

const SESSION: Duration = Duration::from_secs(22);

/// What one session produced.
struct Outcome {
    summary: Summary,
    client: LiveClient,
    session: Session,
    recording: Vec<u8>,
    /// Snapshots (alive, after entering) whose view yaw is what our keyed
    /// usercmd asked for, and all such snapshots.
    yaw_checks: (u32, u32),
}

/// The server applied our usercmd: its view yaw is the command's plus the
/// player's `delta_angles` (`PM_UpdateViewAngles`). A wrong usercmd key
/// gives garbage angles, so this checks the key. `None` when the player
/// cannot turn (dead, spectating) or the command is gone.
fn yaw_applied(client: &LiveClient, snapshot: &Snapshot) -> Option<bool> {
    let ps = &snapshot.ps;
    if ps.pm_type != 0 || ps.stats[0] <= 0 {
        return None;
    }
    let cmd = client.usercmd_at(ps.command_time)?;
    let expected = cmd.angles[1].wrapping_add(ps.delta_angles_1 as u16);
    let got = ((f64::from(ps.viewangles_1) * 65536.0 / 360.0) as i64 & 0xffff) as u16;
    let d = expected.wrapping_sub(got);
    Some(d <= 1 || d == u16::MAX)
}

fn run_session(
    server: SocketAddr,
    protocol: Protocol,
    name: &str,
    during: impl FnMut(Duration) + Send,
) -> Outcome {
    let config = LiveConfig {
        protocol,
        paks: Some(paks()),
        name: name.into(),
        qport: 1000 + protocol.number() as u16,
        client_challenge: 0x0102_0304 + protocol.number() as i32,
        commands_on_enter: vec![format!("say {name} here")],
        ..LiveConfig::default()
    };
    let path = std::env::temp_dir().join(format!("netq3-live-{name}-{}.dm_68", std::process::id()));
    let file = std::fs::File::create(&path).unwrap();
    let mut session = Session::new(server.to_string(), protocol.number()).record_to(Box::new(file));
    let mut yaw_checks = (0, 0);
    let mut during = during;
    let started = Instant::now();
    let client = udp::run(server, config, SESSION, None, &mut |client, event, now| {
        during(now.saturating_duration_since(started));
        if let Event::Message { message, .. } = event {
            for snap in message.snapshots() {
                if let Some(ok) = yaw_applied(client, &snap.snapshot) {
                    yaw_checks.0 += ok as u32;
                    yaw_checks.1 += 1;
                }
            }
        }
        session.observe(client, event, now)
    })
    .expect("the session runs");
    session.finish_recording().unwrap();
    let recording = std::fs::read(&path).unwrap();
    let _ = std::fs::remove_file(&path);
    Outcome {
        summary: session.summary(&client),
        client,
        session,
        recording,
        yaw_checks,
    }
}

/// The figures every healthy session must show.
fn check_healthy(name: &str, outcome: &Outcome) {
    let summary = &outcome.summary;
    eprintln!(
        "{name}: {summary:?}; yaw applied {}/{}; stats {:?}; netchan {:?}",
        outcome.yaw_checks.0,
        outcome.yaw_checks.1,
        outcome.client.stats(),
        outcome.client.netchan_stats()
    );
    assert!(
        matches!(outcome.client.end(), Some(End::Quit)),
        "{name}: {:?}",
        outcome.client.end()
    );
    assert_eq!(summary.disconnect_reason, None, "{name}: never dropped");
    assert_eq!(summary.decode_errors, 0, "{name}");
    assert!(summary.seconds_connected >= 20.0, "{name}: {summary:?}");
    // 20 snapshots a second are asked for.
    assert!(summary.snapshots >= 300, "{name}: {summary:?}");
    assert!(
        summary.delta_snapshots * 10 >= summary.snapshots * 9,
        "{name}: delta share {summary:?}"
    );
    assert!(summary.native_mean_snapshot_bytes > 0.0 && summary.mean_snapshot_bytes > 0.0);
    assert_eq!(outcome.session.native_errors(), 0);
    // Every reliable server command arrived (and is acknowledged in each
    // packet); every client command was acknowledged except the final
    // `disconnect`, which the server acts on instead.
    assert_eq!(outcome.client.stats().server_command_gaps, 0, "{name}");
    assert!(outcome.client.stats().server_commands >= 1, "{name}");
    // The pure server got one `cp` answer per gamestate.
    let answers = outcome.client.stats().pure_answers as i32;
    assert_eq!(answers, 1, "{name}");
    let (sent, acknowledged) = outcome.client.reliable_sequences();
    assert_eq!(
        (sent, acknowledged),
        (answers + 2, answers + 1),
        "{name}: cp and say acknowledged, then disconnect"
    );
    // The server applied our keyed usercmds.
    let (ok, all) = outcome.yaw_checks;
    assert!(
        all >= 50 && ok * 10 >= all * 9,
        "{name}: yaw applied in {ok} of {all} snapshots"
    );
    // The recording decodes with the q3 reader: the same snapshots.
    let marks = outcome.session.marks();
    let mut snapshots = 0;
    for record in Dm68Decoder::new(&outcome.recording).expect("a .dm_68") {
        let record = record.unwrap_or_else(|e| panic!("{name}: recording: {e}"));
        for snap in record.message.snapshots() {
            assert_eq!(snap.snapshot.message_num, marks[snapshots].message_num);
            snapshots += 1;
        }
    }
    assert_eq!(
        snapshots as u64, summary.snapshots,
        "{name}: recording holds every snapshot"
    );
}

#[test]
fn live_sessions_against_ioquake3() {
    if !server_available("live_sessions_against_ioquake3") {
        return;
    }
    let steady = Server::start("steady");
    let changing = Server::start("changing");
    let openarena = Server::start_as("openarena71", Flavour::OpenArena71);
    let refused_dir = std::env::temp_dir().join(format!("netq3-refused-{}", std::process::id()));
    std::fs::create_dir_all(&refused_dir).unwrap();
    let (a, b, c, oa, refused, missing) = std::thread::scope(|scope| {
        let oa = scope.spawn(|| run_session(openarena.address, Protocol::V71, "netq3_oa", |_| {}));
        // Forced into ioquake3's framing, a client never reads the
        // OpenArena server's gamestate: the CLI must say so and fail,
        // leaving its summary but no recording (nor a temporary file).
        let refused = scope.spawn(|| {
            std::process::Command::new(env!("CARGO_BIN_EXE_q3"))
                .args(["connect", &openarena.address.to_string(), "--seconds", "4"])
                .args(["--framing", "ioq3", "--name", "netq3_wrong"])
                .arg("--record")
                .arg(refused_dir.join("refused.dm_68"))
                .arg("--summary-json")
                .arg(refused_dir.join("refused.json"))
                .output()
                .expect("q3 runs")
        });
        // A user without a pak the pure server requires gets an error
        // naming it.
        let missing = scope.spawn(|| {
            let base =
                std::env::temp_dir().join(format!("netq3-missing-pak-{}", std::process::id()));
            let game = base.join("baseoa");
            std::fs::create_dir_all(&game).unwrap();
            for entry in std::fs::read_dir(Path::new(OPENARENA).join("baseoa")).unwrap() {
                let path = entry.unwrap().path();
                let name = path.file_name().unwrap().to_string_lossy().into_owned();
                if name.ends_with(".pk3") && name != "pak6-patch088.pk3" {
                    let _ = std::os::unix::fs::symlink(&path, game.join(&name));
                }
            }
            let output = std::process::Command::new(env!("CARGO_BIN_EXE_q3"))
                .args(["connect", &steady.address.to_string(), "--seconds", "4"])
                .args(["--name", "netq3_nopak", "--basepath"])
                .arg(&base)
                .output()
                .expect("q3 runs");
            let _ = std::fs::remove_dir_all(&base);
            output
        });
        let p71 = scope.spawn(|| run_session(steady.address, Protocol::V71, "netq3_71", |_| {}));
        let p68 = scope.spawn(|| run_session(steady.address, Protocol::V68, "netq3_68", |_| {}));
        let changed = scope.spawn(|| {
            let mut step = 0;
            run_session(changing.address, Protocol::V71, "netq3_map", |elapsed| {
                if step == 0 && elapsed >= Duration::from_secs(6) {
                    changing.rcon("map_restart");
                    step = 1;
                } else if step == 1 && elapsed >= Duration::from_secs(12) {
                    changing.rcon("map oa_dm2");
                    step = 2;
                }
            })
        });
        (
            p71.join().unwrap(),
            p68.join().unwrap(),
            changed.join().unwrap(),
            oa.join().unwrap(),
            refused.join().unwrap(),
            missing.join().unwrap(),
        )
    });
    let consoles = [
        ("steady", steady.console_text()),
        ("changing", changing.console_text()),
        ("openarena71", openarena.console_text()),
    ];
    drop((steady, changing, openarena));
    // Every pure server took our answers: no client was found unpure, and
    // the consoles did record our players entering.
    for (server, console) in &consoles {
        assert!(!console.contains("Unpure"), "{server}: {console}");
        assert!(
            console.contains("^7 entered the game"),
            "{server}: {console}"
        );
    }
    for name in ["netq3_71", "netq3_68"] {
        assert!(consoles[0]
            .1
            .contains(&format!("{name}^7 entered the game")));
    }
    assert!(consoles[2].1.contains("netq3_oa^7 entered the game"));
    let stderr = String::from_utf8_lossy(&missing.stderr);
    eprintln!("missing pak: {:?}; {stderr}", missing.status);
    assert_eq!(missing.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("requires baseoa/pak6-patch088.pk3"),
        "{stderr}"
    );
    check_healthy("protocol 71", &a);
    assert_eq!(a.summary.framing, Some("ioq3"));
    check_healthy("protocol 68", &b);
    assert_eq!(b.summary.framing, Some("legacy"));
    // OpenArena's 71: the client told the legacy framing by itself.
    check_healthy("OpenArena 71", &oa);
    assert_eq!(oa.summary.framing, Some("legacy"));
    let stderr = String::from_utf8_lossy(&refused.stderr);
    eprintln!(
        "forced ioq3 framing on OpenArena 71: {:?}; {stderr}",
        refused.status
    );
    assert_eq!(refused.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("never entered the game") || stderr.contains("no gamestate"),
        "{stderr}"
    );
    let mut left: Vec<String> = std::fs::read_dir(&refused_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    left.sort();
    let _ = std::fs::remove_dir_all(&refused_dir);
    assert_eq!(left, ["refused.json"], "only the summary of a failed run");

    // The console's map_restart and map change were followed: a restart
    // command, then a second gamestate for the new map, and the session
    // went on (and stayed healthy) after both.
    let summary = &c.summary;
    eprintln!(
        "map change: {summary:?}; maps {:?}; restarts {}",
        c.session.maps(),
        c.session.map_restarts()
    );
    assert!(
        matches!(c.client.end(), Some(End::Quit)),
        "{:?}",
        c.client.end()
    );
    assert_eq!(summary.decode_errors, 0);
    assert!(
        c.session.map_restarts() >= 1,
        "map_restart reached the client"
    );
    assert_eq!(c.session.maps(), ["oa_dm1", "oa_dm2"]);
    // A new map, a new checksum feed: answered again.
    assert_eq!(c.client.stats().pure_answers, 2);
    assert_eq!(c.client.stats().server_command_gaps, 0);
    let after = c
        .session
        .marks()
        .iter()
        .rev()
        .take_while(|m| m.message_num > 0)
        .count();
    assert!(after >= 300, "{after} snapshots");
    let last_gamestate_snapshots = c
        .session
        .marks()
        .windows(2)
        .filter(|w| w[1].server_time < w[0].server_time)
        .count();
    assert!(
        last_gamestate_snapshots <= 2,
        "server time runs forward except at a map change"
    );
    let tail = &c.session.marks()[c.session.marks().len() - 100..];
    assert!(
        tail.iter().filter(|m| m.delta_num != 0).count() >= 90,
        "deltas again after the map change"
    );
}
