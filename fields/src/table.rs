//! The field table of a networked struct and the trait that exposes it.

use std::sync::Arc;

use crate::kind::FieldKind;
use crate::model::NativeModel;
use crate::schema::Schema;

/// Most fields a networked struct may declare (Quake 3's `lc` is a byte).
pub const MAX_FIELDS: usize = 255;

/// A set of field indices: bit `i % 64` of word `i / 64` for field `i`.
pub type FieldSet = [u64; MAX_FIELDS.div_ceil(64)];

/// Whether field `field` is in `set`.
#[inline]
pub fn field_in(set: &FieldSet, field: usize) -> bool {
    set.get(field / 64)
        .is_some_and(|word| word & (1 << (field % 64)) != 0)
}

/// One field of a networked struct, as declared with [`net_struct!`](crate::net_struct).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldDesc {
    /// Field name as written in the declaration.
    pub name: &'static str,
    /// Byte offset of the field in the struct (`core::mem::offset_of!`).
    pub offset: usize,
    /// Wire kind.
    pub kind: FieldKind,
}

impl FieldDesc {
    /// Bits of the plain encoding of one element (see [`ScalarKind::wire_bits`](crate::kind::ScalarKind::wire_bits)).
    pub const fn bits(&self) -> u32 {
        self.kind.element().wire_bits()
    }
}

/// The static table of a networked struct: its name and its fields in
/// declaration order, which is also their order on the wire.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FieldTable {
    /// Struct name.
    pub name: &'static str,
    /// Fields in declaration (wire) order.
    pub fields: &'static [FieldDesc],
}

impl FieldTable {
    /// Looks a field up by name.
    pub fn field(&self, name: &str) -> Option<(usize, &FieldDesc)> {
        self.fields.iter().enumerate().find(|(_, f)| f.name == name)
    }

    /// Number of scalar (non-array) fields.
    pub fn scalar_count(&self) -> usize {
        self.fields.iter().filter(|f| !f.kind.is_array()).count()
    }

    /// The table as an owned, serializable [`Schema`].
    pub fn schema(&self) -> Schema {
        Schema::from_table(self)
    }
}

/// Read and write access to the field words of a networked value: all the
/// codecs in [`crate::codec`] need.
///
/// Every [`NetFields`] struct implements it through its static table;
/// [`DynamicState`](crate::dynamic::DynamicState) implements it from a
/// [`Schema`] read at run time, which is how a demo is decoded without the
/// game's Rust types.
pub trait Fields: Clone {
    /// Name of the struct (for error messages).
    fn type_name(&self) -> &str;

    /// Number of fields.
    fn field_count(&self) -> usize;

    /// Kind of field `field` (`field < field_count()`).
    fn field_kind(&self, field: usize) -> FieldKind;

    /// Word of element `element` of field `field` (element 0 for scalars).
    fn word(&self, field: usize, element: usize) -> u32;

    /// Stores a word into element `element` of field `field`.
    fn set_word(&mut self, field: usize, element: usize, word: u32);

    /// Whether field `field` differs between `self` and `other` on the wire.
    fn field_differs(&self, other: &Self, field: usize) -> bool {
        let elements = self.field_kind(field).elements();
        (0..elements).any(|e| self.word(field, e) != other.word(field, e))
    }

    /// Mask of the elements of field `field` that differ (bit `i` for element `i`).
    fn element_changes(&self, other: &Self, field: usize) -> u32 {
        let elements = self.field_kind(field).elements();
        (0..elements).fold(0, |mask, e| {
            mask | (((self.word(field, e) != other.word(field, e)) as u32) << e)
        })
    }

    /// Whether any field differs on the wire.
    fn wire_differs(&self, other: &Self) -> bool {
        (0..self.field_count()).any(|field| self.field_differs(other, field))
    }

    /// A copy holding exactly what the wire keeps (what a decoder produces):
    /// every word of `self` stored into a copy of `zero`, a value of the same
    /// shape with every word zero.
    fn wire_normalized(&self, zero: &Self) -> Self {
        let mut out = zero.clone();
        for field in 0..self.field_count() {
            for element in 0..self.field_kind(field).elements() {
                out.set_word(field, element, self.word(field, element));
            }
        }
        out
    }

    /// Calls `visit` with every word of every field, fields in table order
    /// and elements in order (what a hash of the wire state walks).
    fn visit_words<V: FnMut(u32)>(&self, mut visit: V)
    where
        Self: Sized,
    {
        for field in 0..self.field_count() {
            for element in 0..self.field_kind(field).elements() {
                visit(self.word(field, element));
            }
        }
    }

    /// The word of every field (element 0 of an array) by field index, into
    /// `out`; `false` (and nothing written) if `out` has fewer slots than
    /// there are fields.
    fn scalar_words(&self, out: &mut [u32]) -> bool {
        if out.len() < self.field_count() {
            return false;
        }
        for (field, slot) in out.iter_mut().enumerate().take(self.field_count()) {
            *slot = self.word(field, 0);
        }
        true
    }

    /// Stores `words[i]` into every scalar field `i` in `set` (arrays are
    /// left alone): the inverse of [`scalar_words`](Self::scalar_words) for
    /// the fields a delta changed.
    fn store_scalar_words(&mut self, words: &[u32], set: &FieldSet) {
        for (field, &word) in words.iter().enumerate().take(self.field_count()) {
            if field_in(set, field) && !self.field_kind(field).is_array() {
                self.set_word(field, 0, word);
            }
        }
    }

    /// Every field that differs from `other` on the wire, into `set`
    /// (cleared first); returns how many.
    fn changed_fields(&self, other: &Self, set: &mut FieldSet) -> usize {
        set.fill(0);
        let mut count = 0;
        for field in
            (0..self.field_count().min(MAX_FIELDS)).filter(|&f| self.field_differs(other, f))
        {
            set[field / 64] |= 1 << (field % 64);
            count += 1;
        }
        count
    }

    /// [`changed_fields`](Self::changed_fields) of `self` against `other`,
    /// and the [`scalar_words`](Self::scalar_words) of both (`words` for
    /// `self`, `other_words` for `other`): what an encoder needs, where a
    /// generated struct allows it with each word read once. Returns the
    /// count of changed fields and whether the words were written (each
    /// slice needs a slot per field).
    fn changed_fields_and_words(
        &self,
        other: &Self,
        set: &mut FieldSet,
        words: &mut [u32],
        other_words: &mut [u32],
    ) -> (usize, bool) {
        let count = self.changed_fields(other, set);
        (
            count,
            self.scalar_words(words) && other.scalar_words(other_words),
        )
    }

    /// The trained model the native codec codes this struct's symbols with,
    /// if it has one (see [`crate::model`]).
    fn native_model(&self) -> Option<Arc<NativeModel>> {
        None
    }

    /// The native model when it lives as long as the program (a
    /// `net_struct!` type's): the codec borrows it instead of taking a
    /// counted reference per struct, two atomic operations saved per delta.
    fn static_model(&self) -> Option<&'static NativeModel> {
        None
    }
}

/// A struct declared with [`net_struct!`](crate::net_struct): it has a static
/// field table and generated accessors for every field element.
///
/// Through the blanket implementation of [`Fields`] the codecs work on any
/// `NetFields` type, so no struct has hand-written encode/decode code.
pub trait NetFields: Clone + Default + PartialEq + core::fmt::Debug + 'static {
    /// The field table.
    const TABLE: FieldTable;

    /// Word of element `element` of field `field` (generated).
    fn field_word(&self, field: usize, element: usize) -> u32;

    /// Stores a word into element `element` of field `field` (generated).
    fn set_field_word(&mut self, field: usize, element: usize, word: u32);

    /// [`Fields::visit_words`] for this struct (generated).
    fn visit_field_words<V: FnMut(u32)>(&self, visit: V);

    /// [`Fields::scalar_words`] for this struct (generated).
    fn scalar_field_words(&self, out: &mut [u32]) -> bool;

    /// [`Fields::store_scalar_words`] for this struct (generated).
    fn store_scalar_field_words(&mut self, words: &[u32], set: &FieldSet);

    /// [`Fields::changed_fields`] for this struct (generated: one
    /// straight-line comparison per field, no call through the accessor
    /// tables, whose data-dependent targets the CPU mispredicts).
    fn changed_field_set(&self, other: &Self, set: &mut FieldSet) -> usize;

    /// [`Fields::changed_fields_and_words`] for this struct (generated).
    fn changed_field_set_words(
        &self,
        other: &Self,
        set: &mut FieldSet,
        words: &mut [u32],
        other_words: &mut [u32],
    ) -> (usize, bool);

    /// The struct's trained native-codec model, if declared with
    /// `native_model = …;` in [`net_struct!`](crate::net_struct).
    fn static_native_model() -> Option<&'static Arc<NativeModel>> {
        None
    }

    /// A copy with every field reduced to what the wire keeps (masked
    /// integers, quantized floats, `-0.0` as `0.0`): what a decoder produces.
    /// Generated: straight-line code, no call through the accessor tables.
    fn normalized(&self) -> Self;
}

impl<T: NetFields> Fields for T {
    fn type_name(&self) -> &str {
        T::TABLE.name
    }

    #[inline]
    fn field_count(&self) -> usize {
        T::TABLE.fields.len()
    }

    #[inline]
    fn field_kind(&self, field: usize) -> FieldKind {
        T::TABLE.fields[field].kind
    }

    #[inline]
    fn word(&self, field: usize, element: usize) -> u32 {
        self.field_word(field, element)
    }

    #[inline]
    fn set_word(&mut self, field: usize, element: usize, word: u32) {
        self.set_field_word(field, element, word)
    }

    fn native_model(&self) -> Option<Arc<NativeModel>> {
        T::static_native_model().cloned()
    }

    #[inline]
    fn static_model(&self) -> Option<&'static NativeModel> {
        T::static_native_model().map(|model| &**model)
    }

    /// `==` first: most entities are unchanged between snapshots, and a
    /// derived comparison is much cheaper than walking the fields.
    fn wire_differs(&self, other: &Self) -> bool {
        self != other && self.changed_field_set(other, &mut [0; MAX_FIELDS.div_ceil(64)]) > 0
    }

    #[inline]
    fn changed_fields(&self, other: &Self, set: &mut FieldSet) -> usize {
        self.changed_field_set(other, set)
    }

    #[inline]
    fn changed_fields_and_words(
        &self,
        other: &Self,
        set: &mut FieldSet,
        words: &mut [u32],
        other_words: &mut [u32],
    ) -> (usize, bool) {
        self.changed_field_set_words(other, set, words, other_words)
    }

    #[inline]
    fn visit_words<V: FnMut(u32)>(&self, visit: V) {
        self.visit_field_words(visit)
    }

    #[inline]
    fn scalar_words(&self, out: &mut [u32]) -> bool {
        self.scalar_field_words(out)
    }

    #[inline]
    fn store_scalar_words(&mut self, words: &[u32], set: &FieldSet) {
        self.store_scalar_field_words(words, set)
    }

    /// Every word of every field is stored, so `zero` adds nothing.
    #[inline]
    fn wire_normalized(&self, _zero: &Self) -> Self {
        self.normalized()
    }
}

#[doc(hidden)]
pub mod __private {
    //! Helpers the macro expands to; not part of the API.
    pub use crate::kind::FieldValue;

    /// The element kind of a field kind, for the generated accessors.
    pub const fn element_kind(kind: &crate::kind::FieldKind) -> &crate::kind::ScalarKind {
        kind.element()
    }

    /// The scalar (non-array) fields of `table`, as a set: the fields
    /// `store_scalar_field_words` may store.
    pub const fn scalar_fields(table: &crate::FieldTable) -> crate::table::FieldSet {
        let mut set = [0u64; crate::table::MAX_FIELDS.div_ceil(64)];
        let mut field = 0;
        while field < table.fields.len() && field < crate::table::MAX_FIELDS {
            if !table.fields[field].kind.is_array() {
                set[field / 64] |= 1 << (field % 64);
            }
            field += 1;
        }
        set
    }

    /// Whether any element of `a` from `from` on differs from `b`'s on the
    /// wire (no branch per element: which ones changed is data).
    #[inline(always)]
    pub fn elements_differ<V: FieldValue>(
        a: &V,
        b: &V,
        kind: &crate::kind::ScalarKind,
        from: usize,
    ) -> bool {
        let mut differs = false;
        for element in from..V::ELEMENTS {
            differs |= a.word(kind, element) != b.word(kind, element);
        }
        differs
    }
}

/// Declares a networked struct: the struct itself, its [`FieldTable`] and an
/// implementation of [`NetFields`].
///
/// Each field is written `name: Type = kind`, where `kind` is one of
/// [`unsigned`](crate::unsigned), [`signed`](crate::signed),
/// [`boolean`](crate::boolean), [`q3_float`](crate::q3_float),
/// [`quantized`](crate::quantized) or [`array`](crate::array). Declaration
/// order is wire order. The kind is checked against the Rust type at compile
/// time (an `f32` cannot be declared `signed(8)`, an array's length must
/// match). The struct derives `Debug`, `Clone`, `Copy`, `Default` and
/// `PartialEq`; further attributes are passed through.
///
/// ```
/// use netq3_fields::{net_struct, q3_float, signed, unsigned, array, NetFields};
///
/// net_struct! {
///     /// A player as the server sends it.
///     pub struct Player {
///         /// Position.
///         pub x: f32 = q3_float(),
///         /// Health, may go negative on gibbing.
///         pub health: i16 = signed(10),
///         /// Weapon number.
///         pub weapon: u8 = unsigned(4),
///         /// Ammo per weapon.
///         pub ammo: [i16; 8] = array(signed(16), 8),
///     }
/// }
///
/// assert_eq!(Player::TABLE.fields.len(), 4);
/// assert_eq!(Player::TABLE.fields[1].name, "health");
/// assert_eq!(Player::TABLE.fields[1].bits(), 10);
/// ```
#[macro_export]
macro_rules! net_struct {
    (
        $(#[$meta:meta])*
        $vis:vis struct $name:ident {
            $(
                $(#[$fmeta:meta])*
                $fvis:vis $field:ident : $ty:ty = $kind:expr
            ),* $(,)?
        }
        $(native_model = $model:expr;)?
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, Default, PartialEq)]
        $vis struct $name {
            $(
                $(#[$fmeta])*
                $fvis $field: $ty,
            )*
        }

        // Reject kinds that are out of range or do not fit the Rust type,
        // at compile time, naming the field.
        const _: () = {
            assert!(
                [$(stringify!($field)),*].len() <= $crate::table::MAX_FIELDS,
                "net_struct!: more than 255 fields"
            );
            $(
                assert!(
                    $crate::FieldKind::is_valid(&$kind),
                    concat!("net_struct!: invalid kind for field `", stringify!($field), "`")
                );
                assert!(
                    $crate::FieldKind::accepts(
                        &$kind,
                        <$ty as $crate::table::__private::FieldValue>::CLASS,
                        <$ty as $crate::table::__private::FieldValue>::ELEMENTS,
                        <$ty as $crate::table::__private::FieldValue>::IS_ARRAY,
                    ),
                    concat!("net_struct!: kind does not fit the type of field `", stringify!($field), "`")
                );
            )*
        };

        impl $name {
            const __GETTERS: &'static [fn(&$name, usize) -> u32] = &[
                $(
                    |value: &$name, element: usize| {
                        $crate::table::__private::FieldValue::word(
                            &value.$field,
                            $crate::table::__private::element_kind(&$kind),
                            element,
                        )
                    },
                )*
            ];
            const __SETTERS: &'static [fn(&mut $name, usize, u32)] = &[
                $(
                    |value: &mut $name, element: usize, word: u32| {
                        $crate::table::__private::FieldValue::set_word(
                            &mut value.$field,
                            $crate::table::__private::element_kind(&$kind),
                            element,
                            word,
                        )
                    },
                )*
            ];
            /// The fields `store_scalar_field_words` stores (the arrays'
            /// elements are stored where they are read).
            const __SCALARS: $crate::table::FieldSet =
                $crate::table::__private::scalar_fields(&<$name as $crate::NetFields>::TABLE);
        }

        impl $crate::NetFields for $name {
            const TABLE: $crate::FieldTable = $crate::FieldTable {
                name: stringify!($name),
                fields: &[
                    $(
                        $crate::FieldDesc {
                            name: stringify!($field),
                            offset: ::core::mem::offset_of!($name, $field),
                            kind: $kind,
                        },
                    )*
                ],
            };

            #[inline]
            fn field_word(&self, field: usize, element: usize) -> u32 {
                Self::__GETTERS.get(field).map_or(0, |get| get(self, element))
            }

            #[inline]
            fn set_field_word(&mut self, field: usize, element: usize, word: u32) {
                if let Some(set) = Self::__SETTERS.get(field) {
                    set(self, element, word)
                }
            }

            #[inline]
            fn visit_field_words<V: FnMut(u32)>(&self, mut visit: V) {
                $(
                    for element in 0..<$ty as $crate::table::__private::FieldValue>::ELEMENTS {
                        visit($crate::table::__private::FieldValue::word(
                            &self.$field,
                            &*$crate::table::__private::element_kind(&$kind),
                            element,
                        ));
                    }
                )*
            }

            #[inline]
            fn scalar_field_words(&self, out: &mut [u32]) -> bool {
                let Some(out) = out.get_mut(..Self::TABLE.fields.len()) else {
                    return false;
                };
                let mut field = 0usize;
                $(
                    out[field] = $crate::table::__private::FieldValue::word(
                        &self.$field,
                        &*$crate::table::__private::element_kind(&$kind),
                        0,
                    );
                    field += 1;
                )*
                let _ = field;
                true
            }

            #[inline]
            fn store_scalar_field_words(&mut self, words: &[u32], set: &$crate::table::FieldSet) {
                // Only the fields in `set`, found a word of the set at a
                // time: a delta changes a few fields of many, and a select
                // per field (what this was) cost the duel's decode more
                // than a setter call per changed field. Unchanged fields
                // keep their value as it is (storing their word could
                // normalize it).
                for (chunk, (&bits, &scalars)) in set.iter().zip(&Self::__SCALARS).enumerate() {
                    let mut bits = bits & scalars;
                    while bits != 0 {
                        let field = chunk * 64 + bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        if let (Some(&word), Some(store)) =
                            (words.get(field), Self::__SETTERS.get(field))
                        {
                            store(self, 0, word);
                        }
                    }
                }
            }

            fn normalized(&self) -> Self {
                let mut out = Self::default();
                $(
                    let kind = *$crate::table::__private::element_kind(&$kind);
                    for element in 0..<$ty as $crate::table::__private::FieldValue>::ELEMENTS {
                        $crate::table::__private::FieldValue::set_word(
                            &mut out.$field,
                            &kind,
                            element,
                            $crate::table::__private::FieldValue::word(&self.$field, &kind, element),
                        );
                    }
                )*
                out
            }

            #[inline]
            fn changed_field_set(&self, other: &Self, set: &mut $crate::table::FieldSet) -> usize {
                set.fill(0);
                let mut field = 0usize;
                let mut count = 0usize;
                $(
                    // Branch-free per field: which fields changed is data.
                    let kind = *$crate::table::__private::element_kind(&$kind);
                    let differs =
                        $crate::table::__private::elements_differ(&self.$field, &other.$field, &kind, 0);
                    set[field / 64] |= (differs as u64) << (field % 64);
                    count += differs as usize;
                    field += 1;
                )*
                let _ = field;
                count
            }

            #[inline]
            fn changed_field_set_words(
                &self,
                other: &Self,
                set: &mut $crate::table::FieldSet,
                words: &mut [u32],
                other_words: &mut [u32],
            ) -> (usize, bool) {
                if !(self.scalar_field_words(words) && other.scalar_field_words(other_words)) {
                    return (self.changed_field_set(other, set), false);
                }
                // The words in hand, a scalar field changed if its word did;
                // an array also compares its other elements.
                set.fill(0);
                let mut field = 0usize;
                let mut count = 0usize;
                $(
                    // Element 0 is in the words already.
                    let kind = *$crate::table::__private::element_kind(&$kind);
                    let differs = (words[field] != other_words[field])
                        | $crate::table::__private::elements_differ(&self.$field, &other.$field, &kind, 1);
                    set[field / 64] |= (differs as u64) << (field % 64);
                    count += differs as usize;
                    field += 1;
                )*
                let _ = field;
                (count, true)
            }

            $(
                // Inline, with the game's accessor: the native codec asks
                // for the model once an entity's number and again for its
                // body, and out of line each look-up was a call into the
                // struct's crate and another to its `OnceLock`.
                #[inline]
                fn static_native_model() -> Option<&'static ::std::sync::Arc<$crate::model::NativeModel>> {
                    $model
                }
            )?
        }
    };
}
