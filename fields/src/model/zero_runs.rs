//! Count tables stored with their runs of zeros shortened.
//!
//! A field's top-bit counts ([`super::ModelData::top_bits`]) span every
//! value class a tree may cover, and most classes of most fields are never
//! seen: a table is mostly zeros. Stored as they are, those zeros were
//! two fifths of the Quake 3 models file. Here a run of zeros is stored as
//! one zero and the run's length, so a class never seen costs a few bytes
//! however wide its tree, and the counts in memory keep their flat shape.

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// `table` with each run of zeros as a zero and the run's length.
pub(crate) fn pack(table: &[u32]) -> Vec<u32> {
    let mut packed = Vec::new();
    let mut zeros = 0u32;
    for &count in table {
        if count == 0 {
            zeros += 1;
            continue;
        }
        if zeros > 0 {
            packed.extend([0, zeros]);
            zeros = 0;
        }
        packed.push(count);
    }
    if zeros > 0 {
        packed.extend([0, zeros]);
    }
    packed
}

/// What [`pack`] made of a table of at most `limit` counts, or `None` if
/// `packed` is not such a table (a zero without a length, a run of none,
/// or more than `limit` counts in all).
pub(crate) fn unpack(packed: &[u32], limit: usize) -> Option<Vec<u32>> {
    let mut table = Vec::new();
    let mut tokens = packed.iter();
    while let Some(&count) = tokens.next() {
        let run = if count == 0 {
            usize::try_from(*tokens.next()?).ok()?
        } else {
            1
        };
        if run == 0 || run > limit - table.len().min(limit) {
            return None;
        }
        table.resize(table.len() + run, count);
    }
    Some(table)
}

/// Serde for [`super::ModelData::top_bits`]: each table packed, at most
/// [`super::TOP_BITS_COUNTS`] counts unpacked and at most
/// [`crate::table::MAX_FIELDS`] tables, so a hostile header cannot make
/// a few bytes into much memory.
pub(crate) mod top_bits {
    use super::*;
    use crate::model::TOP_BITS_COUNTS;
    use crate::table::MAX_FIELDS;

    /// Writes the tables packed.
    pub(crate) fn serialize<S: Serializer>(
        tables: &[Vec<u32>],
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        let packed: Vec<Vec<u32>> = tables.iter().map(|table| pack(table)).collect();
        packed.serialize(serializer)
    }

    /// Reads packed tables back.
    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Vec<Vec<u32>>, D::Error> {
        let packed = Vec::<Vec<u32>>::deserialize(deserializer)?;
        if packed.len() > MAX_FIELDS {
            return Err(D::Error::custom("more top-bit tables than fields"));
        }
        packed
            .iter()
            .map(|table| {
                unpack(table, TOP_BITS_COUNTS)
                    .ok_or_else(|| D::Error::custom("top-bit counts badly packed"))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn runs_of_zeros_shrink_to_two_counts() {
        let table = [0, 0, 0, 5, 7, 0, 9, 0, 0];
        assert_eq!(pack(&table), [0, 3, 5, 7, 0, 1, 9, 0, 2]);
        assert_eq!(pack(&[0; 2134]), [0, 2134]);
        assert_eq!(unpack(&[0, 3, 5, 7, 0, 1, 9, 0, 2], 9).unwrap(), table);
        assert!(pack(&[]).is_empty());
        assert_eq!(unpack(&[], 0).unwrap(), Vec::<u32>::new());
    }

    #[test]
    fn bad_packing_is_refused() {
        // A zero without its length, a run of none, more than the limit.
        assert!(unpack(&[4, 0], 10).is_none());
        assert!(unpack(&[0, 0], 10).is_none());
        assert!(unpack(&[0, 11], 10).is_none());
        assert!(unpack(&[1, 0, 10], 10).is_none());
        assert!(unpack(&[0, u32::MAX], 10).is_none());
        assert_eq!(unpack(&[1, 0, 9], 10).unwrap().len(), 10);
    }

    proptest! {
        #[test]
        fn packing_round_trips(table in proptest::collection::vec(
            prop_oneof![3 => Just(0u32), 1 => any::<u32>()], 0..300)) {
            let packed = pack(&table);
            prop_assert!(packed.len() <= 2 * table.len());
            prop_assert_eq!(unpack(&packed, table.len()).unwrap(), table);
        }
    }
}
