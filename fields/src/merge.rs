//! The walk every snapshot encoder and decoder makes: a base's entity list
//! against a newer one, both sorted by entity number (Quake 3's
//! `SV_EmitPacketEntities` on the server, `CL_ParsePacketEntities` on the
//! client).
//!
//! * Encoders hold both lists: [`merge_by_number`] yields each number once,
//!   in order, as [`Merged::Added`], [`Merged::Removed`] or [`Merged::Both`]
//!   (whether a `Both` is a change is the caller's test: field words,
//!   `wire_differs`, a cached encoding…).
//! * Decoders learn the new numbers one at a time from the wire: a
//!   [`BaseCursor`] over the base list hands out, for each number read, the
//!   base entries before it (carried over unchanged) and the base state of
//!   that number, if any; [`BaseCursor::rest`] is what follows the last one.
//!
//! ```
//! use netq3_fields::merge::{merge_by_number, BaseCursor, Merged};
//!
//! let base = [(1, 'a'), (3, 'b'), (4, 'c')];
//! let new = [(2, 'x'), (3, 'y')];
//! let walk: Vec<(u32, &str)> = merge_by_number(&base, &new)
//!     .map(|m| (m.number(), match m {
//!         Merged::Removed { .. } => "removed",
//!         Merged::Added { .. } => "added",
//!         Merged::Both { .. } => "both",
//!     }))
//!     .collect();
//! assert_eq!(walk, [(1, "removed"), (2, "added"), (3, "both"), (4, "removed")]);
//!
//! // A decoder reads number 3 from the wire: entity 1 carries over, and 3
//! // deltas from its base state 'b'.
//! let mut cursor = BaseCursor::new(&base);
//! let (carried, held) = cursor.advance_to(3);
//! assert_eq!((carried, held), (&[(1, 'a')][..], Some(&'b')));
//! assert_eq!(cursor.rest(), &[(4, 'c')]);
//! ```

use crate::bits::{BitSink, BitSource};
use crate::codec::native::ListModel;
use crate::codec::{
    Codec, DeltaContext, EntityBody, EntityUpdate, Held, ListEntries, ModelCodec, Q3Entries,
    StartChoice,
};
use crate::error::BitError;
use crate::table::Fields;

/// One entity number of a merge.
#[derive(Debug, PartialEq, Eq)]
pub enum Merged<'a, A, B = A> {
    /// Only in the base list.
    Removed {
        /// Entity number.
        number: u32,
        /// Its state in the base.
        old: &'a A,
    },
    /// Only in the new list.
    Added {
        /// Entity number.
        number: u32,
        /// Its new state.
        new: &'a B,
    },
    /// In both lists.
    Both {
        /// Entity number.
        number: u32,
        /// Its state in the base.
        old: &'a A,
        /// Its new state.
        new: &'a B,
    },
}

// Manual impls: the derive would demand `A: Clone`, but only references are held.
impl<A, B> Clone for Merged<'_, A, B> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<A, B> Copy for Merged<'_, A, B> {}

impl<A, B> Merged<'_, A, B> {
    /// The entity number.
    pub fn number(&self) -> u32 {
        match *self {
            Merged::Removed { number, .. }
            | Merged::Added { number, .. }
            | Merged::Both { number, .. } => number,
        }
    }
}

/// The merge of two lists sorted by entity number: see [`merge_by_number`].
#[derive(Debug)]
pub struct MergeByNumber<'a, A, B = A> {
    old: &'a [(u32, A)],
    new: &'a [(u32, B)],
}

// Manual impl for the same reason as `Merged`'s.
impl<A, B> Clone for MergeByNumber<'_, A, B> {
    fn clone(&self) -> Self {
        MergeByNumber {
            old: self.old,
            new: self.new,
        }
    }
}

/// Walks `old` and `new` (each sorted by number, no number twice) in number
/// order, yielding every number that is in either once.
pub fn merge_by_number<'a, A, B>(
    old: &'a [(u32, A)],
    new: &'a [(u32, B)],
) -> MergeByNumber<'a, A, B> {
    MergeByNumber { old, new }
}

impl<'a, A, B> Iterator for MergeByNumber<'a, A, B> {
    type Item = Merged<'a, A, B>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = match (self.old.split_first(), self.new.split_first()) {
            (None, None) => return None,
            (Some(((o, old), old_rest)), Some(((n, new), new_rest))) if o == n => {
                self.old = old_rest;
                self.new = new_rest;
                Merged::Both {
                    number: *n,
                    old,
                    new,
                }
            }
            (Some(((o, old), old_rest)), Some(((n, _), _))) if o < n => {
                self.old = old_rest;
                Merged::Removed { number: *o, old }
            }
            (Some(((o, old), old_rest)), None) => {
                self.old = old_rest;
                Merged::Removed { number: *o, old }
            }
            (_, Some(((n, new), new_rest))) => {
                self.new = new_rest;
                Merged::Added { number: *n, new }
            }
        };
        Some(item)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let (old, new) = (self.old.len(), self.new.len());
        (old.max(new), Some(old + new))
    }
}

/// A decoder's position in a base entity list (sorted by number) while it
/// reads the new numbers from the wire in increasing order.
#[derive(Debug)]
pub struct BaseCursor<'a, E> {
    rest: &'a [(u32, E)],
}

impl<'a, E> BaseCursor<'a, E> {
    /// At the start of `base`.
    pub fn new(base: &'a [(u32, E)]) -> Self {
        BaseCursor { rest: base }
    }

    /// Moves past `number`: returns the base entries before it (unchanged by
    /// this message) and the base state of `number` itself, if the base has
    /// it. Numbers must be passed in increasing order; a number at or below
    /// one already passed finds nothing and carries nothing over.
    pub fn advance_to(&mut self, number: u32) -> (&'a [(u32, E)], Option<&'a E>) {
        let before = self.rest.partition_point(|(n, _)| *n < number);
        let (carried, rest) = self.rest.split_at(before);
        match rest.split_first() {
            Some(((n, state), after)) if *n == number => {
                self.rest = after;
                (carried, Some(state))
            }
            _ => {
                self.rest = rest;
                (carried, None)
            }
        }
    }

    /// The base entries after every number passed so far.
    pub fn rest(&self) -> &'a [(u32, E)] {
        self.rest
    }
}

/// Writes the entity list from the base's entities `held` to `new` (both
/// sorted by number) with `codec`, through its end marker: removals, deltas
/// of changed entities (unchanged ones are skipped), and new entities as
/// deltas from `baseline(number)` (or `zero`) in the spawn context.
/// Returns how many entries were written. The plain encoder side of
/// [`read_entity_list`]; the snapshot server's builder, which shares
/// encodings between clients and selects under a byte budget, has its own.
pub fn write_entity_list<'b, 'm, E, S>(
    codec: impl Into<ModelCodec<'m>>,
    context: &DeltaContext,
    sink: &mut S,
    held: &[(u32, E)],
    new: &[(u32, E)],
    zero: &'b E,
    baseline: impl Fn(u32) -> Option<&'b E>,
) -> Result<usize, BitError>
where
    E: Fields + 'b,
    S: BitSink + ?Sized,
{
    let codec = codec.into();
    let mut last = None;
    let mut written = 0;
    for merged in merge_by_number(held, new) {
        let number = merged.number();
        let (update, spawn) = match merged {
            Merged::Removed { old, .. } => (
                EntityUpdate::Removed {
                    old,
                    held: Held(&held),
                },
                false,
            ),
            Merged::Both { old, new, .. } => (
                EntityUpdate::Delta {
                    base: old,
                    new,
                    force: false,
                },
                false,
            ),
            Merged::Added { new, .. } => (
                EntityUpdate::Delta {
                    base: baseline(number).unwrap_or(zero),
                    new,
                    force: true,
                },
                true,
            ),
        };
        if codec.write_entity_in(&context.with_spawn(spawn), sink, last, number, update)? {
            last = Some(number);
            written += 1;
        }
    }
    codec.write_entities_end(sink, last, zero)?;
    Ok(written)
}

/// What [`read_entity_list`] reports as it reads.
#[derive(Debug)]
pub enum ListRead<'a, E> {
    /// An entry's number, before its body is read (the caller may refuse
    /// it, e.g. out of its entity range).
    Number(u32),
    /// An entry read.
    Entry {
        /// Its entity number.
        number: u32,
        /// Whether the base held it (else its body was read against its
        /// spawn baseline, in a spawn context).
        held: bool,
        /// The state its body was read against.
        start: &'a E,
        /// The context its body was read in.
        context: DeltaContext,
        /// For an entity new to the base offered two starts
        /// ([`AddedStart::Either`]): the writer's choice, read between its
        /// number and its body (a removal carries none).
        choice: Option<StartChoice>,
        /// Its new state; `None` when the entry removes it (an entry that
        /// removes an entity the base did not hold is the caller's to
        /// refuse or ignore).
        new: Option<&'a E>,
        /// Bit position of its body in the source.
        at: usize,
        /// What the message had spent before the entry (its number), by
        /// [`BitSource::bits_spent`].
        from: usize,
        /// The same just after it: `to - from` is the entry's bits, its
        /// range-coded symbols included.
        to: usize,
    },
}

impl<E> ListRead<'_, E> {
    /// For an entry that removes an entity the base did not hold (which a
    /// strict reader refuses): its number and bit position.
    pub fn removes_absent(&self) -> Option<(u32, usize)> {
        match *self {
            ListRead::Entry {
                number,
                held: false,
                new: None,
                at,
                ..
            } => Some((number, at)),
            _ => None,
        }
    }
}

/// Why [`read_entity_list`] stopped.
#[derive(Debug, Clone, PartialEq)]
pub enum ListError<X> {
    /// An entry's number (or the end marker) did not decode.
    Number(BitError),
    /// Entity `number`'s body did not decode.
    Body {
        /// The entity.
        number: u32,
        /// What went wrong.
        error: BitError,
    },
    /// The caller's `visit` refused an entry.
    Refused(X),
}

/// Reads one entity list of `codec` through its end marker and merges it
/// with the base's entities `held` into `out` (cleared first), in number
/// order: base entities the list skips carry over, an entry for a held
/// entity deltas from (or removes) it, and one for an entity the base does
/// not hold deltas from `baseline(number)` (or `zero`) in the spawn
/// context. `visit` sees every number and entry and may stop the read.
/// The client side of every entity list in the workspace (the snapshot
/// client, Quake 3's packet entities, the benches' message reader).
#[allow(clippy::too_many_arguments)]
pub fn read_entity_list<'b, 'm, E, S, X>(
    codec: impl Into<ModelCodec<'m>>,
    context: &DeltaContext,
    source: &mut S,
    limit: u32,
    held: &[(u32, E)],
    zero: &'b E,
    baseline: impl Fn(u32) -> Option<&'b E>,
    out: &mut Vec<(u32, E)>,
    visit: impl FnMut(ListRead<'_, E>) -> Result<(), X>,
) -> Result<(), ListError<X>>
where
    E: Fields + Clone + 'b,
    S: BitSource + ?Sized,
{
    let spawn = context.with_spawn(true);
    read_entity_list_from(
        codec,
        context,
        source,
        limit,
        held,
        zero,
        |number| Ok(AddedStart::Only(baseline(number).unwrap_or(zero), spawn)),
        out,
        visit,
    )
}

/// Where an entry for an entity the base does not hold deltas from, as
/// the caller of [`read_entity_list_from`] offers it.
#[derive(Debug, Clone, Copy)]
pub enum AddedStart<'b, E> {
    /// One state and the context its delta is coded in: a spawn baseline
    /// (or the zeroed dummy) in the spawn context.
    Only(&'b E, DeltaContext),
    /// Two: the usual one and a state the receiver held in an older
    /// snapshot, in that snapshot's context. The writer's
    /// [`StartChoice`], between the entry's number and
    /// its body, picks (native codec only).
    Either {
        /// The spawn baseline or the zeroed dummy, in the spawn context.
        usual: (&'b E, DeltaContext),
        /// The older state, in its context.
        held: (&'b E, DeltaContext),
    },
}

/// [`read_entity_list`] where `added(number)` says what an entity the base
/// does not hold deltas from (see [`AddedStart`]), or refuses the entry.
#[allow(clippy::too_many_arguments)]
pub fn read_entity_list_from<'b, 'm, E, S, X>(
    codec: impl Into<ModelCodec<'m>>,
    context: &DeltaContext,
    source: &mut S,
    limit: u32,
    held: &[(u32, E)],
    zero: &'b E,
    added: impl FnMut(u32) -> Result<AddedStart<'b, E>, X>,
    out: &mut Vec<(u32, E)>,
    visit: impl FnMut(ListRead<'_, E>) -> Result<(), X>,
) -> Result<(), ListError<X>>
where
    E: Fields + Clone + 'b,
    S: BitSource + ?Sized,
{
    let codec = codec.into();
    // One instance of the loop per codec, each with its entries' coder
    // resolved once: the native model's view is built once a list, not
    // once an entry, and neither loop chooses its codec per entry.
    match codec.codec() {
        Codec::Q3 => read_entries(&Q3Entries, context, source, limit, held, added, out, visit),
        Codec::Native => {
            let entries = ListModel::new(codec.model(), zero);
            read_entries(&entries, context, source, limit, held, added, out, visit)
        }
    }
}

/// [`read_entity_list_from`] with its codec's [`ListEntries`].
#[allow(clippy::too_many_arguments)]
fn read_entries<'b, E, S, X>(
    codec: &impl ListEntries,
    context: &DeltaContext,
    source: &mut S,
    limit: u32,
    held: &[(u32, E)],
    mut added: impl FnMut(u32) -> Result<AddedStart<'b, E>, X>,
    out: &mut Vec<(u32, E)>,
    mut visit: impl FnMut(ListRead<'_, E>) -> Result<(), X>,
) -> Result<(), ListError<X>>
where
    E: Fields + Clone + 'b,
    S: BitSource + ?Sized,
{
    out.clear();
    let mut cursor = BaseCursor::new(held);
    let mut last = None;
    let mut scratch: Option<E> = None;
    loop {
        let from = source.bits_spent();
        let Some(mut header) = codec
            .read_number(source, last, limit, &held)
            .map_err(ListError::Number)?
        else {
            break;
        };
        let number = header.number();
        visit(ListRead::Number(number)).map_err(ListError::Refused)?;
        let (carried, previous) = cursor.advance_to(number);
        out.extend_from_slice(carried);
        let mut choice = None;
        let (start, entry_context) = match previous {
            Some(state) => (state, context.with_spawn(false)),
            None => match added(number).map_err(ListError::Refused)? {
                AddedStart::Only(state, context) => (state, context),
                AddedStart::Either { usual, held } => {
                    choice = codec
                        .read_start(source, &mut header)
                        .map_err(|error| ListError::Body { number, error })?;
                    match choice {
                        Some(StartChoice::Held) => held,
                        // A removal (refused or ignored by the caller)
                        // writes no choice.
                        Some(StartChoice::Usual) | None => usual,
                    }
                }
            },
        };
        // Decoded in place at the end of `out`: one copy of the start
        // state per entity, not a copy and then a move of a large state.
        // An entry whose number says it removes its entity (two in five of
        // the duel's) changes no state: its body is read into a scratch
        // state, copied once per list, not a copy of its start pushed and
        // taken off again.
        let slot = out.len();
        let removes = header.removes();
        let target = if removes {
            &mut *scratch.get_or_insert_with(|| start.clone())
        } else {
            out.push((number, start.clone()));
            &mut out[slot].1
        };
        let at = source.bits_read();
        let body = match codec.read_body(&entry_context, source, header, target) {
            Ok(body) => body,
            Err(error) => {
                out.truncate(slot);
                return Err(ListError::Body { number, error });
            }
        };
        let removed = body == EntityBody::Removed;
        if removes && !removed {
            // A codec whose header says "removed" reads a removal's body.
            return Err(ListError::Body {
                number,
                error: BitError::invalid("entity body", at, "a removal's body changed the entity"),
            });
        }
        let seen = visit(ListRead::Entry {
            number,
            held: previous.is_some(),
            start,
            context: entry_context,
            choice,
            // No slot was pushed for a removal its number announced.
            new: if removed { None } else { Some(&out[slot].1) },
            at,
            from,
            to: source.bits_spent(),
        });
        if removed || seen.is_err() {
            out.truncate(slot);
        }
        seen.map_err(ListError::Refused)?;
        last = Some(number);
    }
    out.extend_from_slice(cursor.rest());
    Ok(())
}

#[cfg(test)]
mod list_tests {
    use super::*;
    use crate::bits::{BitReader, BitWriter};
    use crate::codec::Codec;
    use crate::fuzzing::Everything;

    fn state(time: i32) -> Everything {
        Everything {
            time,
            ..Everything::default()
        }
    }

    /// Writes base `held` to `new` as one list of `codec`.
    fn write_list(codec: Codec, held: &[(u32, Everything)], new: &[(u32, Everything)]) -> Vec<u8> {
        let mut buf = vec![0u8; 512];
        let mut w = BitWriter::new(&mut buf);
        let zero = state(0);
        let written = write_entity_list(
            codec,
            &DeltaContext::default(),
            &mut w,
            held,
            new,
            &zero,
            |_| None,
        )
        .unwrap();
        // Entity 4 changed, 5 added, 7 removed; 1 and 9 unchanged.
        assert_eq!(written, 3);
        let len = w.finish();
        buf.truncate(len);
        buf
    }

    #[test]
    fn an_entity_offered_two_starts_is_read_from_the_one_its_writer_chose() {
        // Entity 5 enters; the reader holds an older state of it too. Each
        // choice is one bit between its number and its body, and the body
        // is a delta from the chosen state.
        let old = Everything {
            x: 3.5,
            stats: [123; 16],
            ..state(50)
        };
        let new = Everything { x: 4.0, ..old };
        let zero = state(0);
        let context = DeltaContext::default();
        let held_context = DeltaContext {
            elapsed_ms: 100,
            ..context
        };
        let mut sizes = Vec::new();
        for (start, base, chosen_context) in [
            (StartChoice::Held, &old, held_context),
            (StartChoice::Usual, &zero, context.with_spawn(true)),
        ] {
            let mut buf = vec![0u8; 512];
            let mut w = BitWriter::new(&mut buf);
            let codec = ModelCodec::from(Codec::Native);
            let update = EntityUpdate::Delta {
                base,
                new: &new,
                force: true,
            };
            assert!(codec
                .write_entity_from_in(&chosen_context, &mut w, None, 5, update, start)
                .unwrap());
            codec.write_entities_end(&mut w, Some(5), &zero).unwrap();
            let bits = w.bits_written();
            let len = w.finish();
            let mut out = Vec::new();
            let mut seen = None;
            read_entity_list_from(
                codec,
                &context,
                &mut BitReader::with_bit_len(&buf[..len], bits),
                1023,
                &[],
                &zero,
                |_| {
                    Ok::<_, ()>(AddedStart::Either {
                        usual: (&zero, context.with_spawn(true)),
                        held: (&old, held_context),
                    })
                },
                &mut out,
                |read| {
                    if let ListRead::Entry {
                        choice,
                        context,
                        from,
                        to,
                        ..
                    } = read
                    {
                        seen = Some((choice, context, to - from));
                    }
                    Ok(())
                },
            )
            .unwrap();
            assert_eq!(out, [(5, new)], "{start:?}");
            let (choice, read_context, entry_bits) = seen.unwrap();
            assert_eq!((choice, read_context), (Some(start), chosen_context));
            sizes.push(entry_bits);
        }
        // From the older state: only x; from zero: x, time and 16 stats.
        assert_eq!(sizes, [16, 272]);
        // Quake 3's lists offer no choice.
        let mut buf = [0u8; 64];
        let update = EntityUpdate::Delta {
            base: &zero,
            new: &new,
            force: true,
        };
        assert!(ModelCodec::from(Codec::Q3)
            .write_entity_from_in(
                &context,
                &mut BitWriter::new(&mut buf),
                None,
                5,
                update,
                StartChoice::Usual
            )
            .is_err());
    }

    #[test]
    fn a_list_merges_with_its_base_and_reports_every_entry() {
        let held = [
            (1, state(10)),
            (4, state(40)),
            (7, state(70)),
            (9, state(90)),
        ];
        // Entity 4 changes much (a long body), 5 is new, 7 leaves.
        let busy = Everything {
            x: 3.5,
            stats: [123; 16],
            ..state(41)
        };
        let new = [(1, state(10)), (4, busy), (5, state(50)), (9, state(90))];
        for codec in [Codec::Q3, Codec::Native] {
            let bytes = write_list(codec, &held, &new);
            let mut out = vec![(99, state(0))];
            // Reads the first `bits` of the list against `held`.
            let mut read = |bits: usize,
                            visit: &mut dyn FnMut(
                ListRead<'_, Everything>,
            ) -> Result<(), &'static str>| {
                read_entity_list(
                    codec,
                    &DeltaContext::default(),
                    &mut BitReader::with_bit_len(&bytes, bits),
                    1023,
                    &held,
                    &state(0),
                    |_| None,
                    &mut out,
                    visit,
                )
                .map(|()| out.clone())
            };
            let mut seen = Vec::new();
            let merged = read(bytes.len() * 8, &mut |read| {
                seen.push(match read {
                    ListRead::Number(n) => (n, "number"),
                    ListRead::Entry {
                        number, held, new, ..
                    } => (
                        number,
                        match (held, new.is_some()) {
                            (true, true) => "changed",
                            (true, false) => "removed",
                            (false, true) => "added",
                            (false, false) => "removed absent",
                        },
                    ),
                });
                Ok(())
            });
            assert_eq!(merged.unwrap(), new, "{codec:?}");
            assert_eq!(
                seen,
                [
                    (4, "number"),
                    (4, "changed"),
                    (5, "number"),
                    (5, "added"),
                    (7, "number"),
                    (7, "removed"),
                ],
                "{codec:?}"
            );
            // The visitor's refusal stops the read with its own error.
            let refused = read(bytes.len() * 8, &mut |read| match read {
                ListRead::Number(5) => Err("no 5"),
                _ => Ok(()),
            });
            assert_eq!(refused, Err(ListError::Refused("no 5")));
            // A cut inside the first body (16 stats of 16 bits and more)
            // is that entity's error.
            let cut = read(40, &mut |_| Ok(()));
            // Read against a base without entity 7, its removal is of an
            // absent entity: reported, and refused by a strict reader.
            let without_7 = [held[0], held[1], held[3]];
            let mut absent = Vec::new();
            read_entity_list(
                codec,
                &DeltaContext::default(),
                &mut BitReader::new(&bytes),
                1023,
                &without_7,
                &state(0),
                |_| None,
                &mut Vec::new(),
                |read| {
                    absent.extend(read.removes_absent().map(|(number, _)| number));
                    Ok::<(), ()>(())
                },
            )
            .unwrap();
            assert_eq!(absent, [7], "{codec:?}");
            assert!(
                matches!(cut, Err(ListError::Body { number: 4, .. })),
                "{codec:?}: {cut:?}"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::BTreeMap;

    fn sorted(map: &BTreeMap<u32, u8>) -> Vec<(u32, u8)> {
        map.iter().map(|(&n, &v)| (n, v)).collect()
    }

    proptest! {
        /// Against a model: every number of either list exactly once, in
        /// order, classified by which lists hold it, with the right states.
        #[test]
        fn the_merge_visits_the_union_in_order(
            old in proptest::collection::btree_map(0u32..64, any::<u8>(), 0..24),
            new in proptest::collection::btree_map(0u32..64, any::<u8>(), 0..24),
        ) {
            let (o, n) = (sorted(&old), sorted(&new));
            let walked: Vec<(u32, Option<u8>, Option<u8>)> = merge_by_number(&o, &n)
                .map(|m| match m {
                    Merged::Removed { number, old } => (number, Some(*old), None),
                    Merged::Added { number, new } => (number, None, Some(*new)),
                    Merged::Both { number, old, new } => (number, Some(*old), Some(*new)),
                })
                .collect();
            let mut numbers: Vec<u32> = old.keys().chain(new.keys()).copied().collect();
            numbers.sort_unstable();
            numbers.dedup();
            let expected: Vec<(u32, Option<u8>, Option<u8>)> = numbers
                .iter()
                .map(|n| (*n, old.get(n).copied(), new.get(n).copied()))
                .collect();
            prop_assert_eq!(walked, expected);
        }

        /// A decoder walking the new numbers with a cursor rebuilds the same
        /// list as the merge: carried-over entries, then each new number.
        #[test]
        fn the_cursor_agrees_with_the_merge(
            old in proptest::collection::btree_map(0u32..64, any::<u8>(), 0..24),
            new in proptest::collection::btree_set(0u32..64, 0..24),
        ) {
            let o = sorted(&old);
            let mut cursor = BaseCursor::new(&o);
            let mut seen = Vec::new();
            for &number in &new {
                let (carried, held) = cursor.advance_to(number);
                seen.extend(carried.iter().map(|(n, v)| (*n, Some(*v), false)));
                seen.push((number, held.copied(), true));
            }
            seen.extend(cursor.rest().iter().map(|(n, v)| (*n, Some(*v), false)));
            let n: Vec<(u32, ())> = new.iter().map(|&n| (n, ())).collect();
            let expected: Vec<(u32, Option<u8>, bool)> = merge_by_number(&o, &n)
                .map(|m| match m {
                    Merged::Removed { number, old } => (number, Some(*old), false),
                    Merged::Added { number, .. } => (number, None, true),
                    Merged::Both { number, old, .. } => (number, Some(*old), true),
                })
                .collect();
            prop_assert_eq!(seen, expected);
        }
    }

    #[test]
    fn a_number_passed_twice_finds_nothing() {
        let base = [(2, 'a'), (5, 'b')];
        let mut cursor = BaseCursor::new(&base);
        assert_eq!(cursor.advance_to(5), (&base[..1], Some(&'b')));
        assert_eq!(cursor.advance_to(5), (&[][..], None));
        assert_eq!(cursor.advance_to(1), (&[][..], None));
        assert!(cursor.rest().is_empty());
    }
}
