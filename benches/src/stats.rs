//! Summary statistics of per-message sizes.

use serde::Serialize;

/// Mean, median, 99th percentile and maximum of a set of sizes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Summary {
    /// Number of values.
    pub count: usize,
    /// Arithmetic mean (0 when empty).
    pub mean: f64,
    /// Median: [`percentile`] 50.
    pub p50: u64,
    /// [`percentile`] 99.
    pub p99: u64,
    /// Largest value (0 when empty).
    pub max: u64,
}

impl Summary {
    /// Summarises `values` (sorted in place).
    pub fn of(values: &mut [u64]) -> Summary {
        values.sort_unstable();
        let total: u128 = values.iter().map(|&v| u128::from(v)).sum();
        Summary {
            count: values.len(),
            mean: if values.is_empty() {
                0.0
            } else {
                total as f64 / values.len() as f64
            },
            p50: percentile(values, 50.0),
            p99: percentile(values, 99.0),
            max: values.last().copied().unwrap_or(0),
        }
    }
}

/// The nearest-rank `p`-th percentile of sorted `values`: the smallest value
/// that at least `p`% of the values are less than or equal to (0 when empty).
pub fn percentile(sorted: &[u64], p: f64) -> u64 {
    if sorted.is_empty() {
        return 0;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// Bytes a message of `bits` bits occupies on its own: whole bytes.
pub fn bytes_of_bits(bits: usize) -> u64 {
    bits.div_ceil(8) as u64
}

/// The rate of a stream of `mean_bytes`-byte messages at `per_second`
/// messages per second, in kilobits (1000 bits) per second.
pub fn kbps(mean_bytes: f64, per_second: f64) -> f64 {
    mean_bytes * 8.0 * per_second / 1000.0
}

/// Messages per second of a stream whose message times (ms) are `times`,
/// judged by the median gap between consecutive messages, so that pauses,
/// map changes and the odd late snapshot do not skew it. `None` with fewer
/// than two distinct times.
pub fn rate_from_times(times: &[i32]) -> Option<f64> {
    let mut gaps: Vec<u64> = times
        .windows(2)
        .filter_map(|w| {
            let gap = i64::from(w[1]) - i64::from(w[0]);
            (gap > 0).then_some(gap as u64)
        })
        .collect();
    gaps.sort_unstable();
    let median = percentile(&gaps, 50.0);
    (median > 0).then(|| 1000.0 / median as f64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_use_the_nearest_rank() {
        let mut values: Vec<u64> = (1..=100).rev().collect();
        let s = Summary::of(&mut values);
        assert_eq!(s.count, 100);
        assert_eq!(s.mean, 50.5);
        assert_eq!(s.p50, 50);
        assert_eq!(s.p99, 99);
        assert_eq!(s.max, 100);

        let mut few = vec![7, 3, 5];
        let s = Summary::of(&mut few);
        assert_eq!((s.p50, s.p99, s.max), (5, 7, 7));
        assert_eq!(s.mean, 5.0);

        let s = Summary::of(&mut []);
        assert_eq!((s.count, s.mean, s.p50, s.p99, s.max), (0, 0.0, 0, 0, 0));
    }

    #[test]
    fn rates_come_from_the_median_gap() {
        // 20 Hz with one pause and one time reset (a map change).
        let times = [0, 50, 100, 150, 2000, 2050, 10, 60, 110];
        assert_eq!(rate_from_times(&times), Some(20.0));
        assert_eq!(rate_from_times(&[5]), None);
        assert!((kbps(100.0, 20.0) - 16.0).abs() < 1e-12);
        assert_eq!(bytes_of_bits(0), 0);
        assert_eq!(bytes_of_bits(1), 1);
        assert_eq!(bytes_of_bits(16), 2);
    }
}
