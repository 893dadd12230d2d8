//! Where the arena's native snapshot bits go, field by field: plays a
//! match (8 bots, 20 s, the default lossy link on the simulated clock, as
//! the default match does) and prices every symbol its server's snapshots
//! code, with the committed models and with models trained on that match
//! alone (an in-sample floor: what the model's contexts allow at best).
//!
//! ```sh
//! cargo run --release -p arena --example field_bits -- [SEED] [BOTS] [SECONDS]
//! ```
//!
//! Per row: code-word bits and raw bits (below a value's leading one) per
//! snapshot, committed then in-sample. Headers, the player's arrays'
//! element sets and the sync checksum are not symbols and not counted.

use std::collections::BTreeMap;

use arena::model::{trace_match, train_committed, train_on_matches, Coded, TrainingMatch};
use arena::protocol::{EntityState, PlayerState};
use fields::model::{Context, NativeModel, TracedSymbol};
use fields::NetFields;

/// A report row: what the symbols were coded for, and which field or
/// kind of symbol.
type Row = (Coded, String);

fn row_of(of: Coded, context: Context) -> String {
    let names = match of {
        Coded::Entity(..) | Coded::List => EntityState::TABLE.fields,
        Coded::Player(_) => PlayerState::TABLE.fields,
    };
    match context {
        Context::LastGroup(set) | Context::Group(set, _) => format!("patterns (set {set})"),
        Context::Value(field, _) | Context::TopBits(field, ..) => {
            names.get(field).map_or("?", |f| f.name).to_string()
        }
        Context::EntityNumber(_) => "entity numbers".into(),
        Context::ListStart => "list starts".into(),
        Context::Elements(field, _) => {
            format!("{} elements", names.get(field).map_or("?", |f| f.name))
        }
    }
}

/// Code-word bits, raw bits and symbols per row.
type Rows = BTreeMap<Row, (u64, u64, u64)>;

/// The [`Rows`] of `training` under `models`, and its snapshots.
fn price(
    training: TrainingMatch,
    models: &arena::model::ArenaModels,
) -> Result<(Rows, usize), Box<dyn std::error::Error>> {
    let entity = NativeModel::new(models.entity.clone())?;
    let player = NativeModel::new(models.player.clone())?;
    let mut rows = Rows::new();
    let snapshots = trace_match(training, models, |of, symbol: TracedSymbol| {
        let model = match of {
            Coded::Entity(..) | Coded::List => &entity,
            Coded::Player(_) => &player,
        };
        let bits = model
            .stream_bits(symbol.context, symbol.symbol)
            .map_or(0, u64::from);
        let slot = rows.entry((of, row_of(of, symbol.context))).or_default();
        slot.0 += bits;
        slot.1 += u64::from(symbol.raw_bits);
        slot.2 += 1;
    })?;
    Ok((rows, snapshots))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<u64> = std::env::args()
        .skip(1)
        .map(|a| a.parse())
        .collect::<Result<_, _>>()?;
    let training = TrainingMatch {
        seed: args.first().copied().unwrap_or(1),
        bots: args.get(1).copied().unwrap_or(8) as usize,
        seconds: args.get(2).copied().unwrap_or(20) as u32,
    };
    let committed = train_committed()?;
    let own = train_on_matches(&[training])?;
    let (rows, snapshots) = price(training, &committed)?;
    let (own_rows, _) = price(training, &own)?;
    let per = |bits: u64| bits as f64 / snapshots as f64;
    println!("{training:?}: {snapshots} snapshots; bits per snapshot");
    println!(
        "{:16} {:24} {:>8} {:>8} {:>8} {:>8} {:>9}",
        "coded for", "row", "code", "raw", "own code", "own raw", "symbols"
    );
    let mut totals = [0u64; 4];
    for ((of, name), (code, raw, count)) in &rows {
        let (own_code, own_raw, _) = own_rows
            .get(&(*of, name.clone()))
            .copied()
            .unwrap_or_default();
        for (total, bits) in totals.iter_mut().zip([*code, *raw, own_code, own_raw]) {
            *total += bits;
        }
        println!(
            "{:16} {:24} {:8.2} {:8.2} {:8.2} {:8.2} {:9.2}",
            format!("{of:?}"),
            name,
            per(*code),
            per(*raw),
            per(own_code),
            per(own_raw),
            *count as f64 / snapshots as f64
        );
    }
    println!(
        "{:16} {:24} {:8.2} {:8.2} {:8.2} {:8.2}",
        "",
        "TOTAL",
        per(totals[0]),
        per(totals[1]),
        per(totals[2]),
        per(totals[3])
    );
    Ok(())
}
