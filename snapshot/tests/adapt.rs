//! Models adapting along each client's acknowledged delta chain: the
//! server and its clients stay in step under loss, duplication and
//! reordering (every message decodes to what the server sent, with the
//! models the server coded it with), several clients with their own
//! chains never get another chain's cached encodings, a reconnect starts
//! again from the trained models, and the stream codes in fewer bytes than
//! with the trained models fixed.

use std::collections::HashMap;
use std::sync::Arc;

use fields::model::{AdaptPolicy, NativeModel};
use fields::{net_struct, q3_float, unsigned, NetFields};
use netchan::SeededRng;
use netq3_snapshot::{
    AllInScope, BuildOutcome, Client, ClientId, ClientSettings, Compact, CompactRange, Framing,
    Models, Received, Scope, Server, ServerConfig, SymbolOf,
};

net_struct! {
    /// A moving thing.
    pub struct Mover {
        /// Position.
        pub x: f32 = q3_float(),
        /// Frame counter.
        pub frame: u16 = unsigned(12),
        /// Kind.
        pub kind: u8 = unsigned(4),
    }
}

net_struct! {
    /// The viewer.
    pub struct Eye {
        /// Points.
        pub score: u16 = unsigned(12),
        /// Height.
        pub z: f32 = q3_float(),
    }
}

/// How the stream moves: its own habits, which training never saw.
fn mover(n: u32, frame: u32) -> Mover {
    Mover {
        x: (n * 64 + frame * 7 * (n % 2 + 1)) as f32,
        frame: ((frame * 3) % 4096) as u16,
        kind: ((n + frame / 40) % 16) as u8,
    }
}

fn eye(frame: u32) -> Eye {
    Eye {
        score: (frame / 3) as u16,
        z: (frame % 17) as f32 * 2.0,
    }
}

/// A model of `T` trained on the deltas `pairs` gives.
fn trained<T: NetFields>(pairs: impl Iterator<Item = (T, T)>) -> Arc<NativeModel> {
    Arc::new(NativeModel::train_on_deltas(pairs).unwrap())
}

/// Models trained on other habits: slow movers, a slow score.
fn models() -> Models {
    let slow = |n: u32, f: u32| Mover {
        x: (n * 40 + f) as f32,
        frame: (f % 4096) as u16,
        kind: (n % 5) as u8,
    };
    let entity =
        trained((0..16).flat_map(move |n| (1..64).map(move |f| (slow(n, f - 1), slow(n, f)))));
    let calm = |f: u32| Eye {
        score: (f / 50) as u16,
        z: 0.0,
    };
    let player = trained((1..64).map(move |f| (calm(f - 1), calm(f))));
    Models::new(entity, player)
}

const POLICY: AdaptPolicy = AdaptPolicy {
    chain_length: 8,
    first_chain: 0,
    weight: 256,
    lead: 0,
};

/// Each client sees the movers of its own parity band, and both see the
/// first four: views differ, so chains (and their models) differ.
struct Bands;

impl Scope<Mover, Eye> for Bands {
    fn priority(&mut self, viewer: ClientId, _: &Eye, number: u32, _: &Mover) -> Option<f32> {
        (number < 4 || number % 3 == viewer.index() as u32 % 3).then_some(1.0)
    }
}

/// One client's end of a lossy link, with its own random loss,
/// duplication and reordering of snapshots, and loss of acknowledgements.
struct Link {
    rng: SeededRng,
    /// Messages on their way: (tick of arrival, sequence, bytes).
    down: Vec<(u32, u32, Vec<u8>)>,
    /// Acknowledgements on their way: (tick of arrival, sequence).
    up: Vec<(u32, u32)>,
}

impl Link {
    fn new(seed: u64) -> Self {
        Link {
            rng: SeededRng::new(seed),
            down: Vec::new(),
            up: Vec::new(),
        }
    }

    /// Sends a snapshot: lost 20%, duplicated 10%, delayed 0–3 ticks
    /// (so reordered).
    fn send(&mut self, now: u32, sequence: u32, bytes: &[u8]) {
        if self.rng.chance(0.2) {
            return;
        }
        let copies = if self.rng.chance(0.1) { 2 } else { 1 };
        for _ in 0..copies {
            let delay = self.rng.next_u32() % 4;
            self.down.push((now + delay, sequence, bytes.to_vec()));
        }
    }

    /// The snapshots arriving at `now`.
    fn arrivals(&mut self, now: u32) -> Vec<(u32, Vec<u8>)> {
        let (due, later): (Vec<_>, Vec<_>) = self.down.drain(..).partition(|m| m.0 <= now);
        self.down = later;
        due.into_iter().map(|(_, s, b)| (s, b)).collect()
    }

    /// Sends an acknowledgement back: lost 20%, delayed 1–2 ticks.
    fn ack(&mut self, now: u32, sequence: u32) {
        if !self.rng.chance(0.2) {
            let delay = 1 + self.rng.next_u32() % 2;
            self.up.push((now + delay, sequence));
        }
    }

    fn acks(&mut self, now: u32) -> Vec<u32> {
        let (due, later): (Vec<_>, Vec<_>) = self.up.drain(..).partition(|a| a.0 <= now);
        self.up = later;
        due.into_iter().map(|(_, s)| s).collect()
    }
}

/// What a run came to.
#[derive(Debug, Default)]
struct Outcome {
    /// Snapshot bytes the server sent, summed.
    bytes: usize,
    /// Snapshots decoded by the clients (late ones kept included).
    decoded: u64,
    /// Distinct entity models the snapshots were coded with.
    entity_models: usize,
    /// Snapshots whose entity model was another client's at the same
    /// sequence (proves the chains' models differ between clients).
    differing: usize,
}

/// `ticks` ticks of 24 movers and `clients` clients over their own lossy
/// links, with `models`; client 0 reconnects at `reconnect` (if any).
fn run(models: Models, clients: usize, ticks: u32, reconnect: Option<u32>) -> Outcome {
    run_framed(models, Arc::new(Compact), clients, ticks, reconnect)
}

/// [`run`] with messages in `framing`.
fn run_framed(
    models: Models,
    framing: Arc<dyn Framing>,
    clients: usize,
    ticks: u32,
    reconnect: Option<u32>,
) -> Outcome {
    let adapting = models.adaptation().is_some();
    let mut server: Server<Mover, Eye> = Server::new(ServerConfig::default()).unwrap();
    server.set_models(models.clone()).unwrap();
    server.set_framing(Arc::clone(&framing)).unwrap();
    let new_client = || {
        let mut client: Client<Mover, Eye> = Client::new();
        client.set_models(models.clone()).unwrap();
        client.set_framing(Arc::clone(&framing));
        client
    };
    let mut gamestate = Vec::new();
    server.write_gamestate(&mut gamestate).unwrap();
    let mut ends: Vec<(ClientId, Client<Mover, Eye>, Link)> = (0..clients)
        .map(|c| {
            let id = server.add_client(ClientSettings::unlimited()).unwrap();
            let mut client = new_client();
            assert_eq!(
                client.read_message(&gamestate).unwrap(),
                Received::Gamestate
            );
            (id, client, Link::new(0xada9 + c as u64))
        })
        .collect();
    // What the server coded each (client, sequence) with.
    let mut coded: HashMap<(usize, u32), [u64; 2]> = HashMap::new();
    let trained_entity = models.entity().unwrap().id();
    let mut outcome = Outcome::default();
    let mut entity_models = std::collections::HashSet::new();
    let mut out = Vec::new();
    for tick in 0..ticks {
        for n in 0..24 {
            server.set_entity(n, mover(n, tick)).unwrap();
        }
        for (c, (id, _, _)) in ends.iter().enumerate() {
            server.set_player_state(*id, eye(tick + c as u32)).unwrap();
        }
        server.commit_frame(tick * 50).unwrap();
        if Some(tick) == reconnect {
            // Client 0 restarts: a new client, the gamestate again, and a
            // full update from the server.
            // The old connection's messages in flight are gone with it.
            let (id, client, link) = &mut ends[0];
            link.down.clear();
            link.up.clear();
            *client = new_client();
            client.read_message(&gamestate).unwrap();
            server.request_full_update(*id).unwrap();
        }
        for (c, (id, client, link)) in ends.iter_mut().enumerate() {
            for sequence in link.acks(tick) {
                server.acknowledge(*id, sequence).unwrap();
            }
            let BuildOutcome::Built(info) =
                server.build_snapshot(*id, &mut Bands, &mut out).unwrap()
            else {
                panic!("tick {tick}: unlimited clients get every frame");
            };
            outcome.bytes += out.len();
            assert_eq!(info.coded_with.is_some(), adapting);
            if let Some(ids) = info.coded_with {
                entity_models.insert(ids[0]);
                if info.base.is_none() {
                    assert_eq!(
                        ids[0], trained_entity,
                        "a full snapshot starts from training"
                    );
                }
                coded.insert((c, info.sequence), ids);
            }
            link.send(tick, info.sequence, &out);
            for (sequence, bytes) in link.arrivals(tick) {
                let received = client
                    .read_snapshot(sequence, &bytes)
                    .unwrap_or_else(|error| {
                        panic!("client {c}, tick {tick}, snapshot {sequence}: {error}")
                    });
                let coded_with = match received {
                    Received::Snapshot(report) => report.coded_with,
                    Received::Stale { kept: true, .. } => None,
                    Received::Stale { kept: false, .. } => continue,
                    other => panic!("{other:?}"),
                };
                outcome.decoded += 1;
                if let Some(ids) = coded_with {
                    assert_eq!(
                        Some(&ids),
                        coded.get(&(c, sequence)),
                        "client {c}, {sequence}"
                    );
                }
                let held = client.snapshot(sequence).unwrap();
                // The server's record of it may have left its ring.
                if let Some(sent) = server.sent_snapshot(*id, sequence) {
                    assert_eq!(held.player(), sent.player(), "client {c}, {sequence}");
                    let held: Vec<(u32, &Mover)> = held.entities().collect();
                    let sent: Vec<(u32, &Mover)> = sent.entities().collect();
                    assert_eq!(held, sent, "client {c}, {sequence}");
                }
            }
            if let Some(ack) = client.ack() {
                link.ack(tick, ack);
            }
            assert_eq!(client.stats().rejected(), 0, "client {c}");
        }
    }
    outcome.entity_models = entity_models.len();
    outcome.differing = coded
        .iter()
        .filter(|((c, sequence), ids)| {
            *c == 1
                && coded
                    .get(&(2, *sequence))
                    .is_some_and(|other| other[0] != ids[0])
        })
        .count();
    outcome
}

#[test]
fn adapting_clients_stay_in_step_under_loss_duplication_reordering_and_a_reconnect() {
    let adapting = run(models().with_adaptation(Some(POLICY)), 3, 600, Some(300));
    let fixed = run(models(), 3, 600, Some(300));
    // Every client decoded what the link delivered (20% lost, 10%
    // duplicated, up to 3 ticks late), the same with either models.
    assert_eq!((adapting.decoded, fixed.decoded), (1430, 1430));
    // The models did adapt: many rebuilds, and the clients' chains (their
    // views differ) rebuilt different ones, whose encodings were never
    // mixed up in the shared caches (every snapshot decoded equal, with
    // the models it was coded with).
    assert_eq!((adapting.entity_models, adapting.differing), (84, 572));
    assert_eq!((fixed.entity_models, fixed.differing), (0, 0));
    // And they code the stream's own habits in fewer bytes: 0.65 x. (The
    // header's history flag, one more bit in every header with
    // exceptions, costs these streams 3 and 12 bytes: 47,264 and 72,526 B
    // before it. None of their messages gains enough to name a history
    // snapshot. Leaving out a message's last zero byte saved them 182 and
    // 868 bytes, 47,267 and 72,538 B before it, and a steady header's one
    // answer for two 115 and 137 more.)
    assert_eq!((adapting.bytes, fixed.bytes), (46_970, 71_533));
}

#[test]
fn range_coded_messages_stay_in_step_through_the_shared_caches() {
    // The same links and streams, the symbols range-coded: the server's
    // entity and list caches copy raw bits and re-code logged symbol spans
    // (a span left out, or coded with another client's model, would
    // misread every symbol after it).
    let framing: Arc<dyn Framing> = Arc::new(CompactRange);
    let adapting = run_framed(
        models().with_adaptation(Some(POLICY)),
        Arc::clone(&framing),
        3,
        600,
        Some(300),
    );
    let fixed = run_framed(models(), framing, 3, 600, Some(300));
    assert_eq!((adapting.decoded, fixed.decoded), (1430, 1430));
    assert_eq!((adapting.entity_models, adapting.differing), (84, 572));
    // Adapting: fewer bytes than the same symbols' Huffman code words
    // (47,267 B). Fixed models trained on other habits price this
    // stream's symbols as rare, and a range coder charges a rare symbol
    // its full information where a Huffman code of a small alphabet
    // charges a few bits (72,538 B): adapting is what range coding needs.
    // The header's answers range-coded by their chances took 903 and 879
    // bytes off (41,671 and 80,604 when they were raw bits). The bits
    // below values' leading ones, range-coded by top-bit trees that adapt
    // with the models, took 8,420 more off the adapting stream (40,768
    // before); the fixed models' trees, trained on other habits, cost it
    // 4 bytes (79,725 before). The next four bits' chances, one per
    // position below each tree (`fields::top_bits::DEEP_BITS`), took
    // 4,084 more off the adapting stream and 71 off the fixed one (32,349
    // and 79,733 before). A steady header's one answer at chance 27/32
    // instead of two at 31/32 and 7/8 moved them by -3 and +11 bytes
    // (these streams skip frames; 28,265 and 79,662 before). A class its
    // model never counted has its bits below the leading one written in
    // the message's raw part, not decided by an even tree: about a bit
    // each either way, and these streams moved by +1 and +61 bytes where
    // the raw part meets the range-coded one (28,262 and 79,673 before;
    // the fixed models, trained on calmer values, leave more classes
    // uncounted). A fifth deep position, and each top-bit chance leaning
    // towards even by six imaginary observations of each answer, not two,
    // took 64 more off the adapting stream; the fixed one is unchanged
    // (28,263 and 79,734 before).
    assert_eq!((adapting.bytes, fixed.bytes), (28_199, 79_734));
}

#[test]
fn adapting_with_a_lead_rebuilds_off_the_frame_path_and_stays_in_step() {
    let live = AdaptPolicy { lead: 3, ..POLICY };
    let outcome = run(models().with_adaptation(Some(live)), 2, 300, None);
    assert!(outcome.entity_models > 10, "{outcome:?}");
}

#[test]
fn short_early_chains_stay_in_step_under_loss_duplication_reordering_and_a_reconnect() {
    // Chains of 2, 4, then 8 messages after each full snapshot, with
    // their rebuilds made at the chain's end or started early (a lead of
    // 3, one message in the first chain): both ends count each chain's
    // generation along it, so they agree on every chain's length.
    let schedule = AdaptPolicy {
        first_chain: 2,
        ..POLICY
    };
    let mut models_seen = Vec::new();
    for policy in [
        schedule,
        AdaptPolicy {
            lead: 3,
            ..schedule
        },
    ] {
        let outcome = run(models().with_adaptation(Some(policy)), 3, 600, Some(300));
        assert_eq!(outcome.decoded, 1430, "{policy:?}");
        models_seen.push(outcome.entity_models);
    }
    // The entity models the clients' snapshots were coded with (fixed
    // chains of 8 code with 84).
    assert_eq!(models_seen, [98, 73]);
}

#[test]
fn clients_with_identical_chains_share_models_and_lists() {
    // Lossless, every snapshot acknowledged at once, everyone sees
    // everything: the chains are identical, so are the rebuilt models, and
    // the lists stay shared (identical bytes).
    let models = models().with_adaptation(Some(POLICY));
    let mut server: Server<Mover, Eye> = Server::new(ServerConfig::default()).unwrap();
    server.set_models(models).unwrap();
    let ids: Vec<ClientId> = (0..3)
        .map(|_| server.add_client(ClientSettings::unlimited()).unwrap())
        .collect();
    let mut out = Vec::new();
    for tick in 0..40 {
        for n in 0..12 {
            server.set_entity(n, mover(n, tick)).unwrap();
        }
        server.commit_frame(tick * 50).unwrap();
        let mut seen = Vec::new();
        for &id in &ids {
            let BuildOutcome::Built(info) = server
                .build_snapshot(id, &mut AllInScope, &mut out)
                .unwrap()
            else {
                panic!()
            };
            server.acknowledge(id, info.sequence).unwrap();
            seen.push((info.coded_with.unwrap(), out.clone()));
        }
        assert!(seen.windows(2).all(|w| w[0] == w[1]), "tick {tick}");
    }
}

#[test]
fn adapting_asks_for_a_model_to_start_from() {
    net_struct! {
        struct Bare { a: u8 = unsigned(8) }
    }
    let mut server: Server<Bare, Bare> = Server::new(ServerConfig::default()).unwrap();
    let error = server
        .set_models(Models::of_types().with_adaptation(Some(POLICY)))
        .unwrap_err();
    assert!(error.to_string().contains("no native model"), "{error}");
    // The q3 codec has no models: nothing to adapt, nothing refused.
    let mut q3: Server<Bare, Bare> =
        Server::new(ServerConfig::for_codec(fields::Codec::Q3)).unwrap();
    q3.set_models(Models::of_types().with_adaptation(Some(POLICY)))
        .unwrap();
    // The policy is part of the fingerprint both ends check.
    let fixed = models().fingerprint(1, &Mover::default(), &Eye::default());
    let adapting =
        models()
            .with_adaptation(Some(POLICY))
            .fingerprint(1, &Mover::default(), &Eye::default());
    assert_ne!(fixed, adapting);
}

/// The symbol trace names the models each message was coded with and
/// accounts for its symbols: on a lossless link with a client one ack
/// behind, every entity update's bits are its traced symbols' code words
/// and raw bits (and the first one's the list's "not empty" bit), the
/// player state's too, and each list ends with one end marker. Off, there
/// is no trace.
#[test]
fn the_symbol_trace_prices_every_symbol_with_the_model_that_coded_it() {
    for adapt in [Some(POLICY), None] {
        let models = models().with_adaptation(adapt);
        let mut server: Server<Mover, Eye> = Server::new(ServerConfig::default()).unwrap();
        server.set_models(models.clone()).unwrap();
        let id = server.add_client(ClientSettings::unlimited()).unwrap();
        let mut client: Client<Mover, Eye> = Client::new();
        client.set_models(models.clone()).unwrap();
        let mut gamestate = Vec::new();
        server.write_gamestate(&mut gamestate).unwrap();
        client.read_message(&gamestate).unwrap();
        assert!(client.symbol_trace().is_none(), "off by default");
        client.set_trace(true);
        client.set_symbol_trace(true);
        let (mut out, mut symbols, mut rebuilt) = (Vec::new(), 0usize, 0usize);
        let trained = models.entity().unwrap().id();
        for tick in 0..40u32 {
            // Movers come and go, so lists add and remove entities.
            for n in 0..24 {
                if (n + tick / 5) % 7 == 0 {
                    server.remove_entity(n);
                } else {
                    server.set_entity(n, mover(n, tick)).unwrap();
                }
            }
            server.set_player_state(id, eye(tick)).unwrap();
            server.commit_frame(tick * 50).unwrap();
            let BuildOutcome::Built(info) = server
                .build_snapshot(id, &mut AllInScope, &mut out)
                .unwrap()
            else {
                panic!("tick {tick}: unlimited clients get every frame");
            };
            let Received::Snapshot(report) = client.read_snapshot(info.sequence, &out).unwrap()
            else {
                panic!("tick {tick}: not decoded");
            };
            server.acknowledge(id, info.sequence).unwrap();
            let trace = client.trace().unwrap();
            let coded = client.symbol_trace().unwrap();
            let ids = [
                coded.entity_model.as_ref().unwrap().id(),
                coded.player_model.as_ref().unwrap().id(),
            ];
            assert_eq!(report.coded_with.is_some(), adapt.is_some());
            assert_eq!(report.coded_with.unwrap_or(ids), ids, "tick {tick}");
            rebuilt += usize::from(ids[0] != trained);
            let bits_of = |of: &dyn Fn(SymbolOf) -> bool| -> usize {
                coded
                    .symbols
                    .iter()
                    .filter(|s| of(s.of))
                    .map(|s| {
                        let code = coded.model_of(s.of).unwrap().code(s.symbol.context);
                        (code.unwrap().bits(s.symbol.symbol) + s.symbol.raw_bits) as usize
                    })
                    .sum()
            };
            assert_eq!(
                bits_of(&|of| of == SymbolOf::PlayerState),
                trace.player_bits,
                "tick {tick}"
            );
            for (i, entity) in trace.entities.iter().enumerate() {
                let of = SymbolOf::Entity {
                    number: entity.number,
                    kind: entity.kind,
                };
                // The list's first entry carries its one "not empty" bit.
                assert_eq!(
                    bits_of(&|o| o == of) + usize::from(i == 0),
                    entity.bits as usize,
                    "tick {tick}, {entity:?}"
                );
            }
            let ends = coded.symbols.iter().filter(|s| s.of == SymbolOf::ListEnd);
            assert_eq!(ends.count(), usize::from(!trace.entities.is_empty()));
            symbols += coded.symbols.len();
        }
        // Nearly the same symbols whatever the models (their code words
        // differ, and so does which start is cheaper for the entities
        // re-entering the view: 4,316 each before they could be coded from
        // the client's history); adapting, every message from the ninth on
        // is coded with a rebuilt model (chains of 8).
        assert_eq!(symbols, if adapt.is_some() { 4306 } else { 4297 });
        assert_eq!(rebuilt, if adapt.is_some() { 32 } else { 0 });
        client.set_symbol_trace(false);
        assert!(client.symbol_trace().is_none());
    }
}

#[test]
fn a_range_coded_message_is_not_appended_to_other_bits() {
    let mut server: Server<Mover, Eye> = Server::new(ServerConfig::default()).unwrap();
    server.set_models(models()).unwrap();
    server.set_framing(Arc::new(CompactRange)).unwrap();
    let id = server.add_client(ClientSettings::unlimited()).unwrap();
    server.set_entity(1, mover(1, 0)).unwrap();
    server.commit_frame(0).unwrap();
    let mut buf = [0u8; 256];
    let mut out = fields::BitWriter::new(&mut buf);
    let error = server
        .build_snapshot_into(id, &mut AllInScope, &mut out)
        .unwrap_err();
    assert!(matches!(
        error,
        netq3_snapshot::ServerError::NotAppendable { .. }
    ));
    // Nothing was built: the client's first snapshot is still to come.
    let mut message = Vec::new();
    let BuildOutcome::Built(info) = server
        .build_snapshot(id, &mut AllInScope, &mut message)
        .unwrap()
    else {
        panic!("an unlimited client gets its snapshot");
    };
    assert_eq!((info.sequence, info.base), (0, None));
}
