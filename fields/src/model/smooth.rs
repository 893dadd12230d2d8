//! From counts to code weights: the trained counts plus a structured prior.
//!
//! Counts taken on one set of games meet symbols on another that were rare
//! or never seen in training; with raw counts such a symbol gets one of the
//! longest code words (up to 24 bits). The prior spreads a little weight
//! where a symbol *like* the observed ones would fall, so an unfamiliar game
//! pays a few bits, not twenty:
//!
//! * value classes: each count also weighs on the neighbouring classes of
//!   the same path (a field that changes by 2^5 in training changes by 2^6
//!   elsewhere), plus a small uniform floor;
//! * change patterns: the fields of a group modelled as changing
//!   independently, each with its trained rate — a pattern never seen in
//!   training is priced by the fields it contains;
//! * the last changed group: a small uniform floor.

use super::{VALUE_SYMBOLS, ZERO_SYMBOL};

/// Weight units per observed symbol: leaves room below one count for the prior.
const SCALE: f64 = 64.0;

// Strengths, chosen by leave-one-out on the real Quake 3 demos (each demo
// coded with models trained on the others): the duel went from 0.711 to
// 0.675 of Quake 3's bytes, the others by up to 0.015, in-sample by +0.002.

/// Share of a value count spread over the other classes of its path.
const VALUE_SPREAD: f64 = 0.1;
/// Weight decay per class of distance.
const VALUE_DECAY: f64 = 0.5;
/// Uniform floor, as a share of the field's counts.
const VALUE_FLOOR: f64 = 0.01;
/// Weight of a field's pooled counts in each of its value contexts: as a
/// share of the context's counts, plus a fixed number of counts (so a
/// context seen rarely in training codes like the field as a whole).
const BACKOFF_SHARE: f64 = 0.02;
/// See [`BACKOFF_SHARE`].
const BACKOFF_COUNT: f64 = 16.0;
/// Weight of the independent-fields prior, as a share of the group's counts.
const PATTERN_PRIOR: f64 = 0.1;
/// Uniform floor of the last-group symbol, as a share of its counts.
const LAST_GROUP_FLOOR: f64 = 0.05;
/// Uniform floor of an element-set symbol, as a share of its counts.
const ELEMENTS_FLOOR: f64 = 0.02;
/// Counts every element-set symbol starts from: a set that training never
/// saw in a field still gets a code of a few bits.
const ELEMENTS_PRIOR: f64 = 0.5;

fn to_weights(weights: impl Iterator<Item = f64>) -> [u32; 256] {
    let mut out = [0u32; 256];
    for (slot, w) in out.iter_mut().zip(weights) {
        *slot = (w * SCALE).round().min(u32::MAX as f64) as u32;
    }
    out
}

/// Tables of counts summed symbol by symbol (one field's value counts over
/// its contexts, a group's pattern counts over its pattern sets): the prior
/// of each table, which matters where a table saw little in training.
pub(super) fn pooled(contexts: &[Vec<u32>]) -> Vec<u32> {
    let len = contexts.iter().map(Vec::len).max().unwrap_or(0);
    let mut sum = vec![0u32; len];
    for table in contexts {
        for (slot, &count) in sum.iter_mut().zip(table) {
            *slot = slot.saturating_add(count);
        }
    }
    sum
}

/// Counts with each count also spread over its neighbouring classes and
/// a uniform floor: weights, in count units.
fn spread_classes(counts: &[u32]) -> Vec<f64> {
    let total: f64 = counts.iter().map(|&c| f64::from(c)).sum();
    let (spread, decay, floor) = (VALUE_SPREAD, VALUE_DECAY, VALUE_FLOOR);
    const CLASSES: usize = 33;
    // The decay at each distance, once (the same products as computing
    // it per pair: the weights do not change).
    let decays: [f64; CLASSES] = std::array::from_fn(|distance| decay.powi(distance as i32));
    (0..VALUE_SYMBOLS)
        .map(|symbol| {
            let floor = floor * total / VALUE_SYMBOLS as f64;
            if symbol == usize::from(ZERO_SYMBOL) {
                // No neighbours: a reset is its own kind of change.
                return f64::from(counts[symbol]) + floor;
            }
            let (path, class) = (symbol / CLASSES, symbol % CLASSES);
            let neighbours: f64 = (0..CLASSES)
                .filter(|&other| other != class)
                .map(|other| {
                    f64::from(counts[path * CLASSES + other]) * decays[other.abs_diff(class)]
                })
                .sum();
            f64::from(counts[symbol]) + spread * neighbours + floor
        })
        .collect()
}

/// Weights for the value-class symbols of one field in one context, given
/// the field's counts over all its contexts (`pooled`) and, for a float
/// field, how many classes a float-bits change is above a whole-number
/// change of the same size (`shift`): the prior then also carries each
/// path's counts over to the other path, so a context that saw whole
/// numbers in training codes the float-bits changes of a game that does
/// not snap the field (and the reverse) at about their size, not as
/// strangers.
pub(super) fn value(counts: &[u32], pooled: &[u32], shift: Option<usize>) -> [u32; 256] {
    const CLASSES: usize = 33;
    let total: f64 = counts.iter().map(|&c| f64::from(c)).sum();
    let own = spread_classes(counts);
    let mut mixed = pooled.to_vec();
    if let Some(shift) = shift {
        for whole in 0..CLASSES - shift.min(CLASSES) {
            let float = CLASSES + whole + shift;
            mixed[whole] = mixed[whole].saturating_add(pooled[float]);
            mixed[float] = mixed[float].saturating_add(pooled[whole]);
        }
    }
    back_off(&own, &spread_classes(&mixed), total)
}

/// A context's own weights plus its prior's distribution, the prior
/// weighing [`BACKOFF_SHARE`] of the context's `total` counts plus
/// [`BACKOFF_COUNT`]; just the own weights when the prior is empty.
fn back_off(own: &[f64], prior: &[f64], total: f64) -> [u32; 256] {
    let prior_total: f64 = prior.iter().sum();
    if prior_total == 0.0 {
        return to_weights(own.iter().copied());
    }
    let prior_mass = BACKOFF_SHARE * total + BACKOFF_COUNT;
    to_weights(
        own.iter()
            .zip(prior)
            .map(|(own, prior)| own + prior_mass * prior / prior_total),
    )
}

/// Weights for the 256 change patterns of one group of eight fields in
/// one pattern set, backed off to the group's counts over all held sets
/// (`pooled`).
pub(super) fn pattern(counts: &[u32], pooled: &[u32]) -> [u32; 256] {
    let total: f64 = counts.iter().map(|&c| f64::from(c)).sum();
    back_off(&pattern_weights(counts), &pattern_weights(pooled), total)
}

/// Pattern counts plus the independent-fields prior, in count units.
fn pattern_weights(counts: &[u32]) -> Vec<f64> {
    let total: f64 = counts.iter().map(|&c| f64::from(c)).sum();
    if total == 0.0 {
        return vec![0.0; 256];
    }
    let strength = PATTERN_PRIOR;
    let mut rates = [0f64; 8];
    for (pattern, &count) in counts.iter().enumerate() {
        for (bit, rate) in rates.iter_mut().enumerate() {
            if pattern & (1 << bit) != 0 {
                *rate += f64::from(count);
            }
        }
    }
    let epsilon = 0.5 / (total + 1.0);
    for rate in &mut rates {
        *rate = (*rate / total).clamp(epsilon, 1.0 - epsilon);
    }
    let weights = (0..256usize).map(|pattern| {
        let prior: f64 = rates
            .iter()
            .enumerate()
            .map(|(bit, &rate)| {
                if pattern & (1 << bit) != 0 {
                    rate
                } else {
                    1.0 - rate
                }
            })
            .product();
        f64::from(counts[pattern]) + strength * total * prior
    });
    weights.collect()
}

/// Weights of an entity-number context: its own counts, backed off to the
/// counts of every context and, below those, to a universal prior that
/// halves a gap class's weight per bit of length (what exp-Golomb codes
/// assume), so a game's first far jump or rare removal is not priced at
/// the longest code word.
pub(super) fn numbers(counts: &[u32], pooled: &[u32]) -> [u32; 256] {
    use super::{NUMBER_END, NUMBER_SYMBOLS};
    let universal = |symbol: usize| -> f64 {
        if symbol == usize::from(NUMBER_END) {
            1.0
        } else {
            0.5f64.powi(symbol as i32 / 2 + 1)
        }
    };
    let pooled_total: f64 = pooled.iter().map(|&c| f64::from(c)).sum();
    let prior: Vec<f64> = (0..NUMBER_SYMBOLS)
        .map(|s| {
            let seen = pooled.get(s).map_or(0.0, |&c| f64::from(c));
            seen + (BACKOFF_SHARE * pooled_total + BACKOFF_COUNT) * universal(s)
        })
        .collect();
    let own: Vec<f64> = (0..NUMBER_SYMBOLS)
        .map(|s| counts.get(s).map_or(0.0, |&c| f64::from(c)))
        .collect();
    let total: f64 = own.iter().sum();
    back_off(&own, &prior, total)
}

/// Weights for the last-changed-group symbol of one pattern set, backed
/// off to the counts of all held sets (`pooled`).
pub(super) fn last_group(counts: &[u32], pooled: &[u32]) -> [u32; 256] {
    let weights = |counts: &[u32]| -> Vec<f64> {
        let total: f64 = counts.iter().map(|&c| f64::from(c)).sum();
        let floor = LAST_GROUP_FLOOR * total / counts.len().max(1) as f64;
        counts.iter().map(|&c| f64::from(c) + floor).collect()
    };
    let total: f64 = counts.iter().map(|&c| f64::from(c)).sum();
    back_off(&weights(counts), &weights(pooled), total)
}

/// Weights for one array field's element-set symbol: its counts, each
/// symbol of its dictionary of `sets` entries (and the escape) with a
/// small floor; no weight past the dictionary, where no symbol is valid.
pub(super) fn elements(counts: &[u32], sets: usize) -> [u32; 256] {
    let used = (sets + 1).min(counts.len());
    let total: f64 = counts[..used].iter().map(|&c| f64::from(c)).sum();
    let floor = ELEMENTS_FLOOR * total / used.max(1) as f64 + ELEMENTS_PRIOR;
    to_weights(counts[..used].iter().map(|&c| f64::from(c) + floor))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::huffman::HuffmanCode;

    fn lengths(weights: [u32; 256]) -> [u8; 256] {
        HuffmanCode::from_frequencies(&weights)
            .expect("a code")
            .code_lengths()
    }

    #[test]
    fn unseen_value_classes_near_seen_ones_get_shorter_codes() {
        // Integer classes 5 and 6 seen, all else unseen.
        let mut counts = vec![0u32; VALUE_SYMBOLS];
        counts[5] = 1000;
        counts[6] = 3000;
        let smoothed = lengths(value(&counts, &counts, None));
        // Class 7 (next to 6) is cheaper than class 20 (far away) and than
        // an unseen float-bits class.
        assert!(
            smoothed[7] < smoothed[20],
            "{} vs {}",
            smoothed[7],
            smoothed[20]
        );
        assert!(smoothed[7] < smoothed[33 + 7]);
        // Without the prior every unseen symbol costs the same, and a lot.
        let mut raw = [0u32; 256];
        raw[5] = 1000;
        raw[6] = 3000;
        let raw = lengths(raw);
        assert_eq!(raw[7], raw[20]);
        assert!(smoothed[7] < raw[7]);
        // The seen classes keep short codes.
        assert!(smoothed[6] <= 2 && smoothed[5] <= 3);
    }

    #[test]
    fn the_zero_symbol_keeps_its_count_and_lends_none() {
        let mut counts = vec![0u32; VALUE_SYMBOLS];
        counts[usize::from(ZERO_SYMBOL)] = 3000;
        counts[5] = 1000;
        let weights = value(&counts, &counts, None);
        let floor = (VALUE_FLOOR * 4000.0 / VALUE_SYMBOLS as f64 * SCALE).round() as u32;
        // Own count, the floor, and the back-off's share of itself.
        let zero = weights[usize::from(ZERO_SYMBOL)];
        assert!(zero >= (3000.0 * SCALE) as u32 + floor, "{zero}");
        // Its neighbours by index (the top grid classes) get the floor
        // and the back-off only, nothing spread from the zero symbol.
        let top_grid = weights[usize::from(ZERO_SYMBOL) - 1];
        assert!(top_grid < 2 * floor + (SCALE as u32), "{top_grid}");
        let lengths = lengths(weights);
        assert_eq!(lengths[usize::from(ZERO_SYMBOL)], 1);
    }

    #[test]
    fn a_context_seen_rarely_codes_like_its_field() {
        // The field as a whole changes by classes 3 and 4; one context saw
        // nothing, another saw only float-bits class 20.
        let mut pooled = vec![0u32; VALUE_SYMBOLS];
        pooled[3] = 4000;
        pooled[4] = 4000;
        let empty = vec![0u32; VALUE_SYMBOLS];
        let unseen = lengths(value(&empty, &pooled, None));
        assert!(unseen[3] <= 2 && unseen[4] <= 2, "{:?}", &unseen[..8]);
        let mut floaty = vec![0u32; VALUE_SYMBOLS];
        floaty[33 + 20] = 5000;
        pooled[33 + 20] = 5000;
        let seen = lengths(value(&floaty, &pooled, None));
        assert!(seen[33 + 20] <= 1);
        assert!(
            seen[3] < seen[33 + 2],
            "the pooled classes stay cheaper than unseen ones"
        );
        // Nothing seen anywhere: no weights.
        assert_eq!(value(&empty, &empty, None), [0; 256]);
    }

    #[test]
    fn unseen_patterns_are_priced_by_their_fields() {
        // Field 0 changes almost always, field 7 rarely; patterns seen:
        // {0} often, {0, 7} sometimes, {7} never.
        let mut counts = vec![0u32; 256];
        counts[0b0000_0001] = 5000;
        counts[0b1000_0001] = 50;
        counts[0b0000_0011] = 500;
        let smoothed = lengths(pattern(&counts, &counts));
        // {0, 1, 7} (never seen) combines likely fields: cheaper than
        // {2, 3, 4, 5} (never seen, fields that never changed).
        assert!(smoothed[0b1000_0011] < smoothed[0b0011_1100]);
        assert!(smoothed[0b0000_0001] <= 1);
    }
}
