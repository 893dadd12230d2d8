//! The viewer anchor in the engine: an entity entering the view from a
//! zeroed baseline is coded against the receiving viewer's position, and
//! the server's shared lists and cached updates never hand one viewer's
//! anchored encoding to another.

mod common;

use std::sync::Arc;

use common::Ent;
use fields::dynamic::{DynamicLayout, DynamicState};
use fields::model::ModelTrainer;
use fields::{net_struct, q3_float, signed, Codec, DeltaContext, Fields, NetFields};
use netq3_snapshot::{
    BuildOutcome, Client, ClientId, ClientSettings, Received, Server, ServerConfig,
};

net_struct! {
    /// A viewer: its position and one more field.
    pub struct Viewer {
        /// East.
        pub x: f32 = q3_float(),
        /// North.
        pub y: f32 = q3_float(),
        /// Up.
        pub z: f32 = q3_float(),
        /// Health.
        pub health: i16 = signed(10),
    }
}

/// Where the near viewer stands, and where the entity enters.
const NEAR: [f32; 3] = [1000.0, -2000.0, 300.0];
const FAR: [f32; 3] = [-6000.0, 5000.0, -900.0];

/// Layouts whose models hold the position in fields 0, 1 and 2 of both
/// types; the entity model learned spawns entering near an anchor.
fn layouts() -> (Arc<DynamicLayout>, Arc<DynamicLayout>) {
    let schema = Ent::TABLE.schema();
    let mut trainer = ModelTrainer::new(schema.fingerprint(), schema.fields.len())
        .with_axis(0, 0)
        .with_axis(1, 1)
        .with_axis(2, 2);
    let spawn = DeltaContext::default()
        .with_spawn(true)
        .with_anchor(Some([1000, -2000, 300]));
    for step in 0..200 {
        let near = entity([
            1000.0 + (step % 9) as f32,
            -2000.0 - (step % 7) as f32,
            300.0 + (step % 3) as f32,
        ]);
        trainer.observe(&Ent::default(), &near, &spawn);
        // Held deltas: a small move.
        let moved = entity([near.x + 4.0, near.y, near.z]);
        trainer.observe(&near, &moved, &DeltaContext::default());
    }
    let entities = DynamicLayout::with_model(schema, Some(trainer.finish())).unwrap();
    let schema = Viewer::TABLE.schema();
    let viewer = ModelTrainer::new(schema.fingerprint(), schema.fields.len())
        .with_axis(0, 0)
        .with_axis(1, 1)
        .with_axis(2, 2);
    let viewers = DynamicLayout::with_model(schema, Some(viewer.finish())).unwrap();
    (entities, viewers)
}

fn entity([x, y, z]: [f32; 3]) -> Ent {
    Ent {
        x,
        y,
        z,
        health: 100,
        model: 7,
        flags: 0x10,
        angle: 90.0,
        firing: false,
    }
}

/// `value` as a state of `layout` (same schema).
fn dynamic<T: Fields>(layout: &Arc<DynamicLayout>, value: &T) -> DynamicState {
    let mut state = layout.zeroed();
    for field in 0..value.field_count() {
        for element in 0..value.field_kind(field).elements() {
            state.set_word(field, element, value.word(field, element));
        }
    }
    state
}

fn viewer(layout: &Arc<DynamicLayout>, [x, y, z]: [f32; 3]) -> DynamicState {
    dynamic(
        layout,
        &Viewer {
            x,
            y,
            z,
            health: 100,
        },
    )
}

type Dyn = (
    Server<DynamicState, DynamicState>,
    [Client<DynamicState, DynamicState>; 2],
);

/// A server with two viewers, one near the spot where entity 20 will
/// enter and one far from it, both holding the first frame (entities 1 to
/// 3) acknowledged.
fn setup(codec: Codec) -> (Dyn, [ClientId; 2], Arc<DynamicLayout>) {
    let (entities, viewers) = layouts();
    let mut server = Server::with_prototypes(
        ServerConfig::for_codec(codec),
        entities.zeroed(),
        viewers.zeroed(),
    )
    .unwrap();
    for number in 1..=3 {
        let state = entity([number as f32 * 64.0, 32.0, 8.0]);
        server
            .set_entity(number, dynamic(&entities, &state))
            .unwrap();
    }
    let ids = [NEAR, FAR].map(|at| {
        let id = server.add_client(ClientSettings::unlimited()).unwrap();
        *server.player_state_mut(id).unwrap() = viewer(&viewers, at);
        id
    });
    let mut gamestate = Vec::new();
    server.write_gamestate(&mut gamestate).unwrap();
    let clients = [(); 2].map(|()| {
        let mut client = Client::with_prototypes(entities.zeroed(), viewers.zeroed());
        assert_eq!(
            client.read_message(&gamestate).unwrap(),
            Received::Gamestate
        );
        client
    });
    let mut dyn_ = (server, clients);
    dyn_.0.commit_frame(50).unwrap();
    for (index, &id) in ids.iter().enumerate() {
        let bytes = send(&mut dyn_, index, id, &mut |_, _, _, _| Some(1.0));
        assert!(!bytes.is_empty());
    }
    (dyn_, ids, entities)
}

/// Builds client `index`'s snapshot, has it read and acknowledged, checks
/// it decoded to what the server recorded; returns its bytes.
fn send(
    (server, clients): &mut Dyn,
    index: usize,
    id: ClientId,
    scope: &mut dyn FnMut(ClientId, &DynamicState, u32, &DynamicState) -> Option<f32>,
) -> Vec<u8> {
    let mut bytes = Vec::new();
    let BuildOutcome::Built(info) = server
        .build_snapshot(id, &mut &mut *scope, &mut bytes)
        .unwrap()
    else {
        panic!("no snapshot built");
    };
    let client = &mut clients[index];
    client.read_snapshot(info.sequence, &bytes).unwrap();
    server.acknowledge(id, info.sequence).unwrap();
    let held = client.newest().unwrap();
    let sent = server.sent_snapshot(id, info.sequence).unwrap();
    assert_eq!(held.player(), sent.player());
    assert_eq!(
        held.entities().collect::<Vec<_>>(),
        sent.entities().collect::<Vec<_>>(),
        "entities of client {index}"
    );
    bytes
}

/// Entity 20 enters next to the near viewer; returns each viewer's
/// snapshot bytes, built in `order`. With `split_views`, the far viewer
/// does not see entity 3, so the two lists differ and only the per-update
/// cache is shared.
fn entering(codec: Codec, order: [usize; 2], split_views: bool) -> [Vec<u8>; 2] {
    let ((mut server, clients), ids, entities) = setup(codec);
    let state = entity([NEAR[0] + 3.0, NEAR[1] - 2.0, NEAR[2] + 1.0]);
    server.set_entity(20, dynamic(&entities, &state)).unwrap();
    server.commit_frame(100).unwrap();
    let far = ids[1];
    let mut scope = |viewer: ClientId, _: &DynamicState, number: u32, _: &DynamicState| {
        (!(split_views && viewer == far && number == 3)).then_some(1.0)
    };
    let mut dyn_ = (server, clients);
    let mut bytes = [Vec::new(), Vec::new()];
    for index in order {
        bytes[index] = send(&mut dyn_, index, ids[index], &mut scope);
    }
    // Both hold the new entity as the server sent it.
    for client in &dyn_.1 {
        let held = client.newest().unwrap();
        let (_, got) = held.entities().find(|(n, _)| *n == 20).unwrap();
        assert_eq!(*got, dynamic(&entities, &state));
    }
    bytes
}

#[test]
fn an_entity_entering_near_the_viewer_costs_less_for_that_viewer() {
    for split_views in [false, true] {
        for order in [[0, 1], [1, 0]] {
            let [near, far] = entering(Codec::Native, order, split_views);
            // The far viewer's list (less entity 3's removal when split)
            // codes the same update against a distant anchor: a shared
            // list or update would make the two the same size, and decode
            // to another position for the viewer it was not coded for.
            let removal = usize::from(split_views);
            assert!(
                near.len() + 3 + removal <= far.len(),
                "{split_views} {order:?}: near {} vs far {}",
                near.len(),
                far.len()
            );
        }
    }
}

#[test]
fn quake3s_codec_ignores_the_anchor_and_keeps_sharing() {
    for order in [[0, 1], [1, 0]] {
        let [near, far] = entering(Codec::Q3, order, false);
        assert_eq!(near, far);
    }
}
