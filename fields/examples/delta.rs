//! Declares a networked struct, prints its field table, and compares the
//! size of the same deltas under the Quake 3 and native codecs.
//!
//! Run with `cargo run -p netq3-fields --example delta`.

use netq3_fields::{
    array, boolean, net_struct, q3_float, signed, unsigned, BitSink, BitWriter, Codec, NetFields,
};

net_struct! {
    /// A player as a small shooter might network it.
    pub struct Player {
        /// Game time of the state, in milliseconds.
        pub time: i32 = signed(32),
        /// Position (Quake 3 snaps positions to integers, which both codecs exploit).
        pub x: f32 = q3_float(),
        /// Position.
        pub y: f32 = q3_float(),
        /// Position.
        pub z: f32 = q3_float(),
        /// Animation frame.
        pub frame: u16 = unsigned(9),
        /// Whether the trigger is held.
        pub firing: bool = boolean(),
        /// Health.
        pub health: i16 = signed(10),
        /// Ammo per weapon.
        pub ammo: [i16; 8] = array(signed(16), 8),
    }
}

fn delta_bits(codec: Codec, base: &Player, new: &Player) -> usize {
    let mut buf = [0u8; 256];
    let mut writer = BitWriter::new(&mut buf);
    codec
        .write_delta(&mut writer, base, new)
        .expect("a 256-byte buffer holds any Player delta");
    writer.bits_written()
}

fn main() {
    println!("{} fields:", Player::TABLE.name);
    for field in Player::TABLE.fields {
        println!(
            "  {:<8} offset {:>2}  {:>2} bits  {:?}",
            field.name,
            field.offset,
            field.bits(),
            field.kind
        );
    }
    println!(
        "schema fingerprint {:016x}\n",
        Player::TABLE.schema().fingerprint()
    );

    let zero = Player::default();
    let spawned = Player {
        time: 52_000,
        x: 1024.0,
        y: -312.0,
        z: 24.0,
        health: 125,
        ammo: [0, 50, 0, 10, 0, 0, 0, 0],
        ..zero
    };
    let running = Player {
        time: 52_050,
        x: 1040.0,
        y: -306.0,
        frame: 3,
        ..spawned
    };
    let shooting = Player {
        time: 52_100,
        firing: true,
        ammo: [0, 49, 0, 10, 0, 0, 0, 0],
        ..running
    };

    println!("{:<28} {:>6} {:>8}", "delta", "q3", "native");
    for (label, base, new) in [
        ("full update (from zero)", &zero, &spawned),
        ("moving", &spawned, &running),
        ("firing one shot", &running, &shooting),
        ("nothing changed", &shooting, &shooting),
    ] {
        println!(
            "{label:<28} {:>4} b {:>6} b",
            delta_bits(Codec::Q3, base, new),
            delta_bits(Codec::Native, base, new)
        );
    }
}
