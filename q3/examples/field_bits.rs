//! Where the native codec's bits go, per field, on one demo: the demo's own
//! symbol counts priced with a model's Huffman code lengths (plus the raw
//! bits below each class's leading one). Compares the model trained on the
//! demo alone (an in-sample floor), on every training demo, and on the
//! others only (leave-one-out).
//!
//! ```sh
//! cargo run --release -p q3 --example field_bits -- DIR/dm_68_osp_duel_2.dm_68 DIR/*.dm_68
//! ```
//!
//! The first file is measured; the rest are the training set (the measured
//! one is skipped for leave-one-out).

use fields::huffman::HuffmanCode;
use fields::model::ModelData;
use fields::NetFields;
use q3::{EntityState, PlayerState};

/// Bits of the raw part of value symbol `symbol` (its class minus one).
fn extra_bits(symbol: usize) -> u64 {
    let class = symbol % 33;
    class.saturating_sub(1) as u64
}

fn lengths(counts: &[u32]) -> [u8; 256] {
    let mut table = [0u32; 256];
    table[..counts.len()].copy_from_slice(counts);
    HuffmanCode::from_frequencies(&table)
        .expect("a code")
        .code_lengths()
}

fn price(counts: &[u32], model: &[u32], value: bool) -> u64 {
    let lengths = lengths(model);
    counts
        .iter()
        .enumerate()
        .map(|(s, &c)| c as u64 * (lengths[s] as u64 + if value { extra_bits(s) } else { 0 }))
        .sum()
}

fn report(
    name: &str,
    names: &[&str],
    own: &ModelData,
    models: &[(&str, &ModelData)],
    messages: u64,
) {
    println!("== {name}: bits per message (mean over {messages} snapshots)");
    print!("{:24}", "context");
    for (model, _) in models {
        print!("{model:>10}");
    }
    println!("{:>10}", "count");
    let per = |bits: u64| bits as f64 / messages as f64;
    let mut totals = vec![0u64; models.len()];
    let mut row = |label: &str, pick: &dyn Fn(&ModelData) -> &[u32], value: bool| {
        let counts = pick(own);
        let n: u64 = counts.iter().map(|&c| c as u64).sum();
        if n == 0 {
            return;
        }
        print!("{label:24}");
        for (i, (_, model)) in models.iter().enumerate() {
            let bits = price(counts, pick(model), value);
            totals[i] += bits;
            print!("{:>10.2}", per(bits));
        }
        println!("{n:>10}");
    };
    row("last_group", &|m| &m.last_group, false);
    for g in 0..own.groups.len() {
        row(&format!("group {g}"), &|m| &m.groups[g], false);
    }
    for (f, field) in names.iter().enumerate() {
        row(field, &|m| &m.values[f], true);
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
    let own = q3::model::train([own_bytes.as_slice()])?;
    let loo = q3::model::train(others.iter().map(Vec::as_slice))?;
    let full = q3::model::train(all.iter().map(Vec::as_slice))?;
    let messages = u64::from(own.player.last_group.iter().sum::<u32>());
    let entity_names: Vec<&str> = EntityState::TABLE.fields.iter().map(|f| f.name).collect();
    let player_names: Vec<&str> = PlayerState::TABLE.fields.iter().map(|f| f.name).collect();
    let models = |pick: fn(&q3::model::Q3Models) -> &ModelData| {
        vec![
            ("own", pick(&own)),
            ("all", pick(&full)),
            ("loo", pick(&loo)),
        ]
    };
    if std::env::var_os("DUMP").is_some() {
        for f in [1usize, 4, 5, 3, 0] {
            dump(&models(|m| &m.player), f);
        }
    }
    report(
        "player",
        &player_names,
        &own.player,
        &models(|m| &m.player),
        messages,
    );
    report(
        "entity",
        &entity_names,
        &own.entity,
        &models(|m| &m.entity),
        messages,
    );
    Ok(())
}

/// Prints one player field's grid, predictor and symbol counts per model.
fn dump(models: &[(&str, &ModelData)], field: usize) {
    for (name, m) in models {
        let nz: Vec<(usize, u32)> = m.values[field]
            .iter()
            .copied()
            .enumerate()
            .filter(|(_, c)| *c > 0)
            .collect();
        println!(
            "{name}: grid {:?} pred {:?} symbols {:?}",
            m.grids[field], m.predictors[field], nz
        );
    }
}
