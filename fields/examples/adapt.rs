//! A model trained on one game adapting to another as it codes it: the
//! symbols of each delta chain are counted on both ends, and every few
//! messages the codes are rebuilt from them, with nothing sent.
//!
//! Run with `cargo run -p netq3-fields --example adapt`.

use std::sync::Arc;

use netq3_fields::model::{AdaptPolicy, Adaptation, ModelTrainer, NativeModel, SymbolTally};
use netq3_fields::{net_struct, signed, unsigned, DeltaContext, NetFields};

net_struct! {
    /// A unit in a small strategy game.
    pub struct Unit {
        /// Hit points.
        pub health: i16 = signed(10),
        /// Animation frame.
        pub frame: u16 = unsigned(9),
    }
}

/// A game where units lose health one point at a time.
fn training_delta(i: u16) -> (Unit, Unit) {
    let base = Unit {
        health: 100,
        frame: i % 500,
    };
    let new = Unit {
        health: 99,
        frame: i % 500,
    };
    (base, new)
}

/// A game where the animation jumps by 37 frames and health holds.
fn stream_delta(i: u16) -> (Unit, Unit) {
    let base = Unit {
        health: 50,
        frame: i % 400,
    };
    let new = Unit {
        health: 50,
        frame: i % 400 + 37,
    };
    (base, new)
}

fn main() -> Result<(), netq3_fields::BitError> {
    let mut trainer = ModelTrainer::new(Unit::TABLE.schema().fingerprint(), 2);
    for i in 0..1000 {
        let (base, new) = training_delta(i);
        trainer.observe(&base, &new, &DeltaContext::default());
    }
    let trained = Arc::new(NativeModel::new(trainer.finish())?);

    let policy = AdaptPolicy {
        chain_length: 16,
        first_chain: 0,
        weight: 64,
        lead: 0,
    };
    // Each message deltas from the one before, so one chain runs through
    // the whole stream: a rebuild every 16 messages.
    let mut state = Adaptation::new(Arc::clone(&trained));
    let mut tally = SymbolTally::new();
    for i in 0..64u16 {
        let coding = state.for_next(&policy)?;
        let (base, new) = stream_delta(i);
        tally.clear();
        tally.delta(coding.model(), &base, &new, &DeltaContext::default());
        if i % 16 == 0 {
            println!(
                "message {i:2}: {} bits of symbols (the trained model: {})",
                tally.price(coding.model()),
                tally.price(&trained)
            );
        }
        state = coding.after(&tally);
    }
    Ok(())
}
