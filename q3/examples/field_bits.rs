//! Where the native codec's bits go, per field, on one demo: the demo's
//! symbols under each model (its grids and predictors) priced with that
//! model's codes, plus the raw bits below each class's leading one. Compares
//! the model trained on the demo alone (an in-sample floor), on every
//! training demo, and on the others only (leave-one-out).
//!
//! ```sh
//! cargo run --release -p netq3-q3 --example field_bits -- DIR/dm_68_osp_duel_2.dm_68 DIR/*.dm_68
//! ```
//!
//! The first file is measured; the rest are the training set (the measured
//! one is skipped for leave-one-out).

use fields::model::{
    Context, ModelData, NativeModel, ValueContext, DICTIONARY_SYMBOLS, VALUE_CONTEXTS,
};
use fields::NetFields;
use netq3_q3::{EntityState, PlayerState};

/// Bits of the raw part of value symbol `symbol` (its class minus one; none
/// for an entry of the field's dictionary, which integer fields code from
/// [`DICTIONARY_SYMBOLS`] on).
fn extra_bits(symbol: usize, dictionary: &[u32]) -> u64 {
    let entry = symbol.checked_sub(usize::from(DICTIONARY_SYMBOLS));
    if entry.is_some_and(|entry| entry < dictionary.len()) {
        return 0;
    }
    let class = symbol % 33;
    class.saturating_sub(1) as u64
}

const VALUE_CONTEXT_ORDER: [ValueContext; VALUE_CONTEXTS] = [
    ValueContext::Spawn,
    ValueContext::Zero,
    ValueContext::Whole,
    ValueContext::Fraction,
];

/// Field `f`'s value tables, one per context.
fn value_tables(m: &ModelData, f: usize) -> Vec<(&[u32], Context)> {
    VALUE_CONTEXT_ORDER
        .iter()
        .map(|&c| {
            (
                &m.values[f * VALUE_CONTEXTS + c as usize][..],
                Context::Value(f, c),
            )
        })
        .collect()
}

fn price(counts: &[u32], model: &NativeModel, context: Context, value: bool) -> u64 {
    let code = model.code(context).expect("a context of the model");
    let dictionary = match context {
        Context::Value(field, _) => model
            .data()
            .dictionaries
            .get(field)
            .map_or(&[][..], Vec::as_slice),
        _ => &[],
    };
    counts
        .iter()
        .enumerate()
        .map(|(s, &c)| {
            c as u64
                * (u64::from(code.bits(s as u8))
                    + if value { extra_bits(s, dictionary) } else { 0 })
        })
        .sum()
}

/// The count tables of one report row, with their contexts.
type Tables<'a> = dyn Fn(&ModelData) -> Vec<(&[u32], Context)> + 'a;

/// One column: a model, and the measured demo's symbol counts under it.
type Column<'a> = (&'a str, NativeModel, &'a ModelData);

fn report(name: &str, names: &[&str], models: &[Column<'_>]) {
    let messages = u64::from(models[0].2.last_group.iter().flatten().sum::<u32>());
    println!("== {name}: bits per message (mean over {messages} deltas)");
    print!("{:24}", "context");
    for (model, _, _) in models {
        print!("{model:>10}");
    }
    println!("{:>10}", "count");
    let per = |bits: u64| bits as f64 / messages as f64;
    let mut totals = vec![0u64; models.len()];
    let groups = models[0].2.groups.len() / models[0].2.pattern_sets();
    let mut row = |label: &str, tables: &Tables<'_>, value: bool| {
        let n: u64 = tables(models[0].2)
            .iter()
            .flat_map(|(t, _)| t.iter())
            .map(|&c| c as u64)
            .sum();
        if n == 0 {
            return;
        }
        print!("{label:24}");
        for (i, (_, model, counts)) in models.iter().enumerate() {
            let bits: u64 = tables(counts)
                .iter()
                .map(|(counts, context)| price(counts, model, *context, value))
                .sum();
            totals[i] += bits;
            print!("{:>10.2}", per(bits));
        }
        println!("{n:>10}");
    };
    let sets = models[0].2.pattern_sets();
    let spawn_sets = models[0].2.spawn_sets();
    for set in 0..sets {
        let name = if set < spawn_sets {
            format!("spawn {set}")
        } else {
            format!("held {}", set - spawn_sets)
        };
        let s = set as u8;
        row(
            &format!("last_group {name}"),
            &|m| vec![(&m.last_group[set][..], Context::LastGroup(s))],
            false,
        );
        for g in 0..groups {
            row(
                &format!("group {g} {name}"),
                &|m| vec![(&m.groups[set * groups + g][..], Context::Group(s, g))],
                false,
            );
        }
    }
    for (f, field) in names.iter().enumerate() {
        row(field, &|m| value_tables(m, f), true);
    }
    print!("{:24}", "TOTAL");
    for t in totals {
        print!("{:>10.2}", per(t));
    }
    println!();
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let paths: Vec<String> = std::env::args().skip(1).collect();
    let measured = paths
        .first()
        .ok_or("usage: field_bits MEASURED.dm_68 TRAINING...")?;
    let read = |p: &String| std::fs::read(p);
    let own_bytes = read(measured)?;
    let others: Vec<Vec<u8>> = paths[1..]
        .iter()
        .filter(|p| *p != measured)
        .map(read)
        .collect::<Result<_, _>>()?;
    let all: Vec<Vec<u8>> = paths[1..].iter().map(read).collect::<Result<_, _>>()?;
    let own = netq3_q3::model::train([own_bytes.as_slice()])?;
    let loo = netq3_q3::model::train(others.iter().map(Vec::as_slice))?;
    let full = netq3_q3::model::train(all.iter().map(Vec::as_slice))?;
    let measured_under =
        |models: &netq3_q3::model::Q3Models| netq3_q3::model::count([own_bytes.as_slice()], models);
    let counts = [
        measured_under(&own)?,
        measured_under(&full)?,
        measured_under(&loo)?,
    ];
    let entity_names: Vec<&str> = EntityState::TABLE.fields.iter().map(|f| f.name).collect();
    let player_names: Vec<&str> = PlayerState::TABLE.fields.iter().map(|f| f.name).collect();
    let columns = |pick: fn(&netq3_q3::model::Q3Models) -> &ModelData| {
        let models = [("own", &own), ("all", &full), ("loo", &loo)];
        let mut columns = Vec::new();
        for ((name, model), counts) in models.into_iter().zip(&counts) {
            let code = NativeModel::new(pick(model).clone()).expect("a model");
            columns.push((name, code, pick(counts)));
        }
        columns
    };
    report("player", &player_names, &columns(|m| &m.player));
    report("entity", &entity_names, &columns(|m| &m.entity));
    Ok(())
}
