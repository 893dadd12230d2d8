//! Recording through `demo`'s recorder: a spectator's view and a client's
//! view, across a map change, play back with every sync checksum verified.

mod support;

use std::io::Write;
use std::sync::{Arc, Mutex};

use demo::{DemoHeader, DemoReader, MessageFraming, Player, Recorder};
use fields::model::AdaptPolicy;
use fields::Codec;
use netq3_session::{ClientConfig, ClientKey, Models, RecordView, SessionError};
use support::{link, other_habits_models, Mark, Me, Sim};

/// A writer whose bytes the test can read after the session dropped it.
#[derive(Clone, Default)]
struct Shared(Arc<Mutex<Vec<u8>>>);

impl Write for Shared {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn record(view: impl Fn(&Sim) -> RecordView<Me>) -> (Vec<u8>, u64, u64) {
    record_framed(view, MessageFraming::Compact)
}

fn record_framed(
    view: impl Fn(&Sim) -> RecordView<Me>,
    framing: MessageFraming,
) -> (Vec<u8>, u64, u64) {
    record_coded(view, framing, Models::of_types())
}

/// A recording of `view` by a session whose server and clients frame
/// snapshots as `framing` says and code them with `models`, the header
/// saying so too.
fn record_coded(
    view: impl Fn(&Sim) -> RecordView<Me>,
    framing: MessageFraming,
    models: Models,
) -> (Vec<u8>, u64, u64) {
    let lossy = link(0.1, 30, 5, 0.0, 0.0);
    let mut sim = Sim::new(21, lossy.clone());
    sim.server_config.keyframe_ms = 1000;
    sim.server_config.framing = framing.framing();
    sim.server_config.models = models.clone();
    sim.stop_server(false);
    sim.start_server();
    for (index, name) in ["a", "b"].into_iter().enumerate() {
        let mut config = ClientConfig::named(name);
        config.connection.idle_timeout = std::time::Duration::from_secs(3);
        config.framing = framing.framing();
        config.models = models.clone();
        sim.add_bot_with(config, lossy.clone(), index);
    }
    sim.run_ms(1_500);
    assert!(sim.all_active());
    let shared = Shared::default();
    let header = DemoHeader::for_types::<Mark, Me>(Codec::Native, 20, 20)
        .with_framing(framing)
        .with_models(&models);
    let recorder = Recorder::create(Box::new(shared.clone()) as Box<dyn Write + Send>, header)
        .expect("header written");
    let view = view(&sim);
    sim.server_mut().record(view, recorder).expect("recording");
    sim.run_ms(2_500);
    sim.change_map(2);
    sim.run_ms(2_500);
    let (_, stats) = sim
        .server_mut()
        .finish_recording()
        .expect("finished")
        .expect("a recording");
    let bytes = shared.0.lock().unwrap().clone();
    (bytes, stats.snapshots, stats.keyframes)
}

fn play(bytes: &[u8]) -> (u64, u64, Option<u8>) {
    let reader = DemoReader::new(bytes).expect("valid demo");
    let mut player = Player::new(reader).expect("player");
    player.set_verify(true);
    let (mut snapshots, mut gamestates) = (0, 0);
    while let Some(played) = player.next_record() {
        let played = played.expect("every record plays and verifies");
        match played.received {
            snapshot::Received::Snapshot(_) => snapshots += 1,
            snapshot::Received::Gamestate => gamestates += 1,
            _ => {}
        }
    }
    assert!(player.reached_end());
    assert!(player.checksums_verified() > 0);
    let map = player
        .client()
        .gamestate()
        .and_then(|g| g.configstring(0))
        .and_then(|m| m.strip_prefix("map\\m"))
        .and_then(|m| m.parse().ok());
    (snapshots, gamestates, map)
}

#[test]
fn a_spectator_recording_spans_a_map_change_and_verifies() {
    let (bytes, recorded, keyframes) = record(|_| RecordView::Spectator(Me::default()));
    let (snapshots, gamestates, map) = play(&bytes);
    assert_eq!(snapshots, recorded);
    // 5 s at 20 Hz, one snapshot per frame.
    assert_eq!(recorded, 100);
    // A keyframe a second, and a full snapshot after the new gamestate.
    assert!(keyframes >= 5, "{keyframes}");
    assert_eq!(gamestates, 2);
    assert_eq!(map, Some(2));
}

#[test]
fn a_clients_view_is_recorded_too() {
    let first = |sim: &Sim| -> RecordView<Me> {
        let key: ClientKey = *sim.names.keys().min().unwrap();
        RecordView::Client(key)
    };
    let (bytes, recorded, _) = record(first);
    let (snapshots, gamestates, map) = play(&bytes);
    assert_eq!(snapshots, recorded);
    assert_eq!(recorded, 100);
    assert_eq!(gamestates, 2);
    assert_eq!(map, Some(2));
}

#[test]
fn a_range_coded_session_records_a_demo_that_plays_and_verifies() {
    let (bytes, recorded, keyframes) = record_framed(
        |_| RecordView::Spectator(Me::default()),
        MessageFraming::CompactRange,
    );
    let reader = DemoReader::new(&bytes).expect("valid demo");
    assert_eq!(reader.header().framing, MessageFraming::CompactRange);
    let (snapshots, gamestates, map) = play(&bytes);
    assert_eq!(snapshots, recorded);
    assert_eq!(recorded, 100);
    assert!(keyframes >= 5, "{keyframes}");
    assert_eq!(gamestates, 2);
    assert_eq!(map, Some(2));
    // The same game recorded as a bit stream: its messages leave out a
    // last zero byte (`snapshot::framing::MessageCoding::sent_len`),
    // which a range-coded message, whose symbols end at its last byte,
    // cannot; this small game's idle messages come out smaller so.
    let (plain, _, _) = record(|_| RecordView::Spectator(Me::default()));
    assert_eq!((bytes.len(), plain.len()), (2802, 2791));
}

#[test]
fn a_header_framed_otherwise_than_the_server_is_refused() {
    let lossy = link(0.0, 30, 5, 0.0, 0.0);
    let mut sim = Sim::new(22, lossy.clone());
    sim.add_bot("a", lossy);
    sim.run_ms(500);
    assert!(sim.all_active());
    let header = DemoHeader::for_types::<Mark, Me>(Codec::Native, 20, 20)
        .with_framing(MessageFraming::CompactRange);
    let error = record_spectator(&mut sim, header)
        .expect_err("a range-coded header on a bit-stream server");
    assert!(error.to_string().contains("compact-range"), "{error}");
}

#[test]
fn an_adapting_session_records_a_demo_that_plays_and_verifies() {
    let policy = AdaptPolicy {
        chain_length: 16,
        first_chain: 4,
        weight: 256,
        lead: 4,
    };
    let models = other_habits_models().with_adaptation(Some(policy));
    let (bytes, recorded, keyframes) = record_coded(
        |_| RecordView::Spectator(Me::default()),
        MessageFraming::CompactRange,
        models,
    );
    let reader = DemoReader::new(&bytes).expect("valid demo");
    assert_eq!(reader.header().adaptation, Some(policy));
    assert!(reader.header().coded_entity_model.is_some());
    let (snapshots, gamestates, map) = play(&bytes);
    assert_eq!(snapshots, recorded);
    assert_eq!(recorded, 100);
    assert!(keyframes >= 5, "{keyframes}");
    assert_eq!(gamestates, 2);
    assert_eq!(map, Some(2));
    // The player's models changed along the chains, as the server's did:
    // the trained model, and the rebuilds after 4, 12 and 28 messages (and
    // every 16 after) of each stretch before a keyframe restarted it from
    // the trained one.
    let mut player = Player::new(reader).expect("player");
    let mut entity_models = std::collections::HashSet::new();
    while let Some(played) = player.next_record() {
        if let snapshot::Received::Snapshot(report) = played.expect("plays").received {
            entity_models.insert(
                player
                    .client()
                    .coded_with(report.sequence)
                    .expect("adapting")[0],
            );
        }
    }
    assert_eq!(entity_models.len(), 11);
}

#[test]
fn a_header_without_the_servers_models_is_refused() {
    let lossy = link(0.0, 30, 5, 0.0, 0.0);
    let mut sim = Sim::new(22, lossy.clone());
    let models = other_habits_models().with_adaptation(Some(AdaptPolicy::DEFAULT));
    sim.stop_server(false);
    sim.server_config.models = models.clone();
    sim.start_server();
    let mut config = ClientConfig::named("a");
    config.models = models.clone();
    sim.add_bot_with(config, lossy, 0);
    sim.run_ms(500);
    assert!(sim.all_active());
    let fixed = DemoHeader::for_types::<Mark, Me>(Codec::Native, 20, 20)
        .with_models(&models.clone().with_adaptation(None));
    let error = record_spectator(&mut sim, fixed)
        .expect_err("a header whose models do not adapt, on an adapting server");
    assert!(error.to_string().contains("adapting None"), "{error}");
    let right = DemoHeader::for_types::<Mark, Me>(Codec::Native, 20, 20).with_models(&models);
    record_spectator(&mut sim, right).expect("the server's own models are recorded");
}

/// Starts recording a spectator's view into memory under `header`.
fn record_spectator(sim: &mut Sim, header: DemoHeader) -> Result<(), SessionError> {
    let recorder = Recorder::create(Box::new(Vec::new()) as Box<dyn Write + Send>, header)
        .expect("header written");
    sim.server_mut()
        .record(RecordView::Spectator(Me::default()), recorder)
}
