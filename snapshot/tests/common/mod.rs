//! Types and helpers shared by the integration tests.
#![allow(dead_code)]

use fields::{array, boolean, net_struct, q3_float, quantized, signed, unsigned, Codec};
use netq3_snapshot::{AllInScope, BuildOutcome, Client, ClientId, Received, Server, SnapshotInfo};

net_struct! {
    /// A game entity: position, a few integers, a quantized angle, a flag.
    pub struct Ent {
        pub x: f32 = q3_float(),
        pub y: f32 = q3_float(),
        pub z: f32 = q3_float(),
        pub health: i16 = signed(10),
        pub model: u16 = unsigned(9),
        pub flags: u32 = unsigned(24),
        pub angle: f32 = quantized(-180.0, 180.0, 12),
        pub firing: bool = boolean(),
    }
}

net_struct! {
    /// A player state with an array section (Quake 3's stats).
    pub struct Player {
        pub origin: [f32; 3] = array(q3_float(), 3),
        pub health: i16 = signed(10),
        pub weapon: u8 = unsigned(4),
        pub stats: [i16; 4] = array(signed(16), 4),
    }
}

/// Index of an `Ent` field by name.
pub fn field(name: &str) -> usize {
    use fields::NetFields;
    Ent::TABLE.field(name).unwrap().0
}

pub const CODECS: [Codec; 2] = [Codec::Q3, Codec::Native];

/// The workspace's seeded generator (`netchan::SeededRng`), so failures
/// reproduce by seed, with an integer range on top.
#[derive(Debug, Clone)]
pub struct Rng(netchan::SeededRng);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(netchan::SeededRng::new(seed))
    }

    /// Uniform in `0..n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.0.below(n)
    }

    /// True with probability `p`.
    pub fn chance(&mut self, p: f64) -> bool {
        self.0.chance(p)
    }

    /// Uniform integer in `lo..=hi`.
    pub fn range(&mut self, lo: i32, hi: i32) -> i32 {
        lo + self.below((hi - lo + 1) as u64) as i32
    }
}

/// Builds the snapshot for `id` with everything in scope; panics if none is due.
pub fn build(server: &mut Server<Ent, Player>, id: ClientId, out: &mut Vec<u8>) -> SnapshotInfo {
    match server.build_snapshot(id, &mut AllInScope, out).unwrap() {
        BuildOutcome::Built(info) => info,
        other => panic!("expected a snapshot, got {other:?}"),
    }
}

/// Sends the gamestate of `server` to `client`.
pub fn connect(server: &mut Server<Ent, Player>, client: &mut Client<Ent, Player>) {
    let mut bytes = Vec::new();
    server.write_gamestate(&mut bytes).unwrap();
    assert_eq!(client.read_message(&bytes).unwrap(), Received::Gamestate);
}

/// Asserts that the client's newest snapshot is exactly what the server
/// recorded as sent under that sequence.
pub fn assert_matches_record(
    server: &Server<Ent, Player>,
    id: ClientId,
    client: &Client<Ent, Player>,
) {
    let held = client.newest().expect("client holds a snapshot");
    let sent = server
        .sent_snapshot(id, held.sequence())
        .expect("server still has the record");
    assert_eq!(held.frame(), sent.frame());
    assert_eq!(held.server_time(), sent.server_time());
    assert_eq!(held.base(), sent.base());
    assert_eq!(
        held.player(),
        sent.player(),
        "player state of {}",
        held.sequence()
    );
    let held_entities: Vec<_> = held.entities().collect();
    let sent_entities: Vec<_> = sent.entities().collect();
    assert_eq!(
        held_entities,
        sent_entities,
        "entities of snapshot {}",
        held.sequence()
    );
}
