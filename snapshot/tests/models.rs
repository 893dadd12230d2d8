//! Native models given to the engine instead of the types' own: a server
//! and a client given the same models round-trip every snapshot, code
//! other bytes than with the types' models, and a client given other
//! models refuses the server's gamestate instead of decoding garbage.

use std::sync::Arc;

use fields::model::NativeModel;
use fields::{net_struct, q3_float, unsigned, NetFields};
use netq3_snapshot::{
    AllInScope, BuildOutcome, Client, ClientError, ClientSettings, ConfigError, Models, Received,
    Server, ServerConfig, ServerError,
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

fn mover(n: u32, frame: u32) -> Mover {
    Mover {
        x: (n * 40 + frame * (n % 3 + 1)) as f32,
        frame: (frame % 4096) as u16,
        kind: (n % 5) as u8,
    }
}

fn eye(frame: u32) -> Eye {
    Eye {
        score: (frame / 7) as u16,
        z: (frame % 9) as f32,
    }
}

/// A model of `T` trained on the deltas `pairs` gives.
fn trained<T: NetFields>(pairs: impl Iterator<Item = (T, T)>) -> Arc<NativeModel> {
    Arc::new(NativeModel::train_on_deltas(pairs).unwrap())
}

fn models() -> Models {
    let entity =
        trained((0..16).flat_map(|n| (1..64).map(move |f| (mover(n, f - 1), mover(n, f)))));
    let player = trained((1..64).map(|f| (eye(f - 1), eye(f))));
    Models::new(entity, player)
}

/// Runs `frames` frames of 12 movers through a server with `server_models`
/// and a client with `client_models`; returns the bytes of every snapshot,
/// or the client's error at the gamestate.
fn run(
    server_models: Option<Models>,
    client_models: Option<Models>,
    frames: u32,
) -> Result<Vec<usize>, ClientError> {
    let mut server: Server<Mover, Eye> = Server::new(ServerConfig::default()).unwrap();
    if let Some(models) = server_models {
        server.set_models(models).unwrap();
    }
    let mut client: Client<Mover, Eye> = Client::new();
    if let Some(models) = client_models {
        client.set_models(models).unwrap();
    }
    let id = server.add_client(ClientSettings::unlimited()).unwrap();
    let mut gamestate = Vec::new();
    server.write_gamestate(&mut gamestate).unwrap();
    assert_eq!(client.read_message(&gamestate)?, Received::Gamestate);
    let mut sizes = Vec::new();
    let mut out = Vec::new();
    for frame in 0..frames {
        for n in 0..12 {
            server.set_entity(n, mover(n, frame)).unwrap();
        }
        server.set_player_state(id, eye(frame)).unwrap();
        server.commit_frame(frame * 50).unwrap();
        let BuildOutcome::Built(info) = server
            .build_snapshot(id, &mut AllInScope, &mut out)
            .unwrap()
        else {
            panic!("frame {frame}: no snapshot");
        };
        client.read_snapshot(info.sequence, &out).unwrap();
        let held = client.snapshot(info.sequence).unwrap();
        let sent = server.sent_snapshot(id, info.sequence).unwrap();
        assert_eq!(held.player(), sent.player(), "frame {frame}");
        let held: Vec<(u32, &Mover)> = held.entities().collect();
        let sent: Vec<(u32, &Mover)> = sent.entities().collect();
        assert_eq!(held, sent, "frame {frame}");
        // Every snapshot is acknowledged: a delta from the previous one.
        server.acknowledge(id, info.sequence).unwrap();
        sizes.push(out.len());
    }
    Ok(sizes)
}

#[test]
fn given_models_round_trip_and_code_other_bytes() {
    let defaults = run(None, None, 40).unwrap();
    let given = run(Some(models()), Some(models()), 40).unwrap();
    assert_eq!(defaults.len(), 40);
    assert_eq!(given.len(), 40);
    // Without a committed model the types code in exp-Golomb; the trained
    // models code the same stream in fewer bytes.
    let (default_total, given_total): (usize, usize) = (defaults.iter().sum(), given.iter().sum());
    assert!(
        given_total < default_total,
        "trained models {given_total} bytes, the types' {default_total}"
    );
    assert_ne!(defaults, given);
}

#[test]
fn a_client_with_other_models_refuses_the_gamestate() {
    let mismatch = |result: Result<Vec<usize>, ClientError>| {
        let error = result.unwrap_err();
        assert!(
            matches!(error, ClientError::FingerprintMismatch { .. }),
            "{error:?}"
        );
        assert!(error.to_string().contains("native models"), "{error}");
    };
    // Server with given models, client with the types'.
    mismatch(run(Some(models()), None, 1));
    // And the other way round.
    mismatch(run(None, Some(models()), 1));
    // Same entity model, another player-state model.
    let other_player = trained((1..64).map(|f| (eye(f - 1), eye(f + 5))));
    let other = models().with_player(Some(other_player));
    mismatch(run(Some(models()), Some(other), 1));
}

#[test]
fn models_are_checked_against_their_types_and_fixed_by_the_gamestate() {
    let mut server: Server<Mover, Eye> = Server::new(ServerConfig::default()).unwrap();
    // A player-state model given for entities: another field count.
    let swapped = Models::new(
        models().player().unwrap().clone(),
        models().entity().unwrap().clone(),
    );
    assert!(matches!(
        server.set_models(swapped.clone()),
        Err(ServerError::Config(ConfigError::ModelMismatch {
            what: "entity",
            ..
        }))
    ));
    let mut client: Client<Mover, Eye> = Client::new();
    assert!(client.set_models(swapped).is_err());
    let fingerprint = server.fingerprint();
    server.set_models(models()).unwrap();
    assert_ne!(server.fingerprint(), fingerprint);
    server.write_gamestate(&mut Vec::new()).unwrap();
    assert_eq!(
        server.set_models(Models::of_types()),
        Err(ServerError::ModelsSealed)
    );
}
