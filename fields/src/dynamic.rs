//! Networked values described by a [`Schema`] known only at run time.
//!
//! A demo file carries the schemas of the structs it encodes. With them,
//! [`DynamicState`] decodes and prints any recording through the same codecs
//! as the game's own types, without the game's code.

use std::fmt;
use std::sync::Arc;

use serde::ser::{SerializeMap, SerializeSeq};
use serde::{Serialize, Serializer};

use crate::error::BitError;
use crate::kind::{FieldKind, ScalarKind};
use crate::model::{ModelData, NativeModel};
use crate::schema::Schema;
use crate::table::Fields;

/// A schema plus where each field's words start in a [`DynamicState`].
#[derive(Debug)]
pub struct DynamicLayout {
    schema: Schema,
    starts: Vec<usize>,
    words: usize,
    model: Option<Arc<NativeModel>>,
}

/// Most fields and words a dynamic layout accepts: schemas come from files,
/// so their size must be bounded before anything is allocated from them.
pub const MAX_DYNAMIC_FIELDS: usize = crate::table::MAX_FIELDS;

impl DynamicLayout {
    /// Validates `schema` (field count, every kind in range) and lays it out.
    pub fn new(schema: Schema) -> Result<Arc<Self>, BitError> {
        Self::with_model(schema, None)
    }

    /// Like [`DynamicLayout::new`], with the native-codec model the values
    /// were encoded with (it must have been trained on this schema).
    pub fn with_model(schema: Schema, model: Option<ModelData>) -> Result<Arc<Self>, BitError> {
        if schema.fields.len() > MAX_DYNAMIC_FIELDS {
            return Err(BitError::invalid(
                "schema",
                0,
                format!(
                    "{} fields exceed the limit of {MAX_DYNAMIC_FIELDS}",
                    schema.fields.len()
                ),
            ));
        }
        let mut starts = Vec::with_capacity(schema.fields.len());
        let mut words = 0;
        for field in &schema.fields {
            if !field.kind.is_valid() {
                return Err(BitError::invalid(
                    "schema",
                    0,
                    format!(
                        "field `{}` has an invalid kind {:?}",
                        field.name, field.kind
                    ),
                ));
            }
            starts.push(words);
            words += field.kind.elements();
        }
        let model = match model {
            Some(data)
                if data.schema_fingerprint != schema.fingerprint()
                    || data.fields() != schema.fields.len() =>
            {
                return Err(BitError::invalid(
                    "native model",
                    0,
                    "the model was trained on another schema",
                ));
            }
            Some(data) => Some(Arc::new(NativeModel::new(data)?)),
            None => None,
        };
        Ok(Arc::new(DynamicLayout {
            schema,
            starts,
            words,
            model,
        }))
    }

    /// The schema.
    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// The dummy baseline: every field holds the word of a zero value, as
    /// in a `Default` instance of a `net_struct!` type (a quantized float's
    /// zero is not word 0), so static and dynamic decoders share baselines.
    pub fn zeroed(self: &Arc<Self>) -> DynamicState {
        let mut words = vec![0; self.words].into_boxed_slice();
        for (field, &start) in self.schema.fields.iter().zip(&self.starts) {
            let zero = field.kind.element().to_word(0);
            words[start..start + field.kind.elements()].fill(zero);
        }
        DynamicState {
            layout: Arc::clone(self),
            words,
        }
    }
}

/// One value of a dynamic struct: its words under a shared [`DynamicLayout`].
#[derive(Clone)]
pub struct DynamicState {
    layout: Arc<DynamicLayout>,
    words: Box<[u32]>,
}

impl DynamicState {
    /// The layout (and through it the schema).
    pub fn layout(&self) -> &Arc<DynamicLayout> {
        &self.layout
    }

    /// Field `field` as a readable value.
    pub fn value(&self, field: usize) -> FieldView<'_> {
        FieldView { state: self, field }
    }

    /// Iterates `(name, value)` over every field.
    pub fn values(&self) -> impl Iterator<Item = (&str, FieldView<'_>)> {
        self.layout
            .schema
            .fields
            .iter()
            .enumerate()
            .map(move |(i, f)| (f.name.as_str(), self.value(i)))
    }

    fn index(&self, field: usize, element: usize) -> Option<usize> {
        let start = *self.layout.starts.get(field)?;
        (element < self.layout.schema.fields[field].kind.elements()).then_some(start + element)
    }
}

impl Fields for DynamicState {
    fn type_name(&self) -> &str {
        &self.layout.schema.name
    }

    fn field_count(&self) -> usize {
        self.layout.schema.fields.len()
    }

    fn field_kind(&self, field: usize) -> FieldKind {
        self.layout.schema.fields[field].kind
    }

    fn word(&self, field: usize, element: usize) -> u32 {
        self.index(field, element).map_or(0, |i| self.words[i])
    }

    fn native_model(&self) -> Option<Arc<NativeModel>> {
        self.layout.model.clone()
    }

    fn set_word(&mut self, field: usize, element: usize, word: u32) {
        if let Some(i) = self.index(field, element) {
            let kind = self.layout.schema.fields[field].kind;
            // Keep words canonical so comparisons match the static types'.
            self.words[i] = kind.element().to_word(kind.element().from_word(word));
        }
    }
}

/// Equal when both have the same schema and the same words.
impl PartialEq for DynamicState {
    fn eq(&self, other: &Self) -> bool {
        (Arc::ptr_eq(&self.layout, &other.layout) || self.layout.schema == other.layout.schema)
            && self.words == other.words
    }
}

impl fmt::Debug for DynamicState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut map = f.debug_map();
        for (name, value) in self.values() {
            map.entry(&name, &value);
        }
        map.finish()
    }
}

/// Serializes as a map from field name to value.
impl Serialize for DynamicState {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.field_count()))?;
        for (name, value) in self.values() {
            map.serialize_entry(name, &value)?;
        }
        map.end()
    }
}

/// One decoded scalar, typed by its kind.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ScalarValue {
    /// An unsigned integer.
    Unsigned(u32),
    /// A signed integer.
    Signed(i32),
    /// A boolean.
    Bool(bool),
    /// A float.
    Float(f32),
}

impl ScalarValue {
    /// Interprets `word` under `kind`.
    pub fn from_word(kind: &ScalarKind, word: u32) -> Self {
        let raw = kind.from_word(word);
        match kind {
            ScalarKind::Unsigned { .. } => ScalarValue::Unsigned(raw),
            ScalarKind::Signed { .. } => ScalarValue::Signed(raw as i32),
            ScalarKind::Bool => ScalarValue::Bool(raw != 0),
            ScalarKind::Q3Float | ScalarKind::Quantized { .. } => {
                ScalarValue::Float(f32::from_bits(raw))
            }
        }
    }
}

impl fmt::Display for ScalarValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarValue::Unsigned(v) => write!(f, "{v}"),
            ScalarValue::Signed(v) => write!(f, "{v}"),
            ScalarValue::Bool(v) => write!(f, "{v}"),
            ScalarValue::Float(v) => write!(f, "{v}"),
        }
    }
}

impl Serialize for ScalarValue {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match *self {
            ScalarValue::Unsigned(v) => serializer.serialize_u32(v),
            ScalarValue::Signed(v) => serializer.serialize_i32(v),
            ScalarValue::Bool(v) => serializer.serialize_bool(v),
            // JSON has no NaN or infinity; keep such values readable as their bits.
            ScalarValue::Float(v) if !v.is_finite() => serializer.serialize_str(&format!("{v}")),
            ScalarValue::Float(v) => serializer.serialize_f32(v),
        }
    }
}

/// A field of a [`DynamicState`], printable and serializable.
#[derive(Clone, Copy)]
pub struct FieldView<'a> {
    state: &'a DynamicState,
    field: usize,
}

impl FieldView<'_> {
    fn elements(&self) -> impl Iterator<Item = ScalarValue> + '_ {
        let kind = self.state.field_kind(self.field);
        (0..kind.elements())
            .map(move |e| ScalarValue::from_word(kind.element(), self.state.word(self.field, e)))
    }

    /// The value of a scalar field, or element 0 of an array.
    pub fn scalar(&self) -> ScalarValue {
        self.elements().next().unwrap_or(ScalarValue::Unsigned(0))
    }
}

impl fmt::Debug for FieldView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for FieldView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.state.field_kind(self.field).is_array() {
            f.write_str("[")?;
            for (i, value) in self.elements().enumerate() {
                if i > 0 {
                    f.write_str(", ")?;
                }
                write!(f, "{value}")?;
            }
            f.write_str("]")
        } else {
            write!(f, "{}", self.scalar())
        }
    }
}

impl Serialize for FieldView<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let kind = self.state.field_kind(self.field);
        if kind.is_array() {
            let mut seq = serializer.serialize_seq(Some(kind.elements()))?;
            for value in self.elements() {
                seq.serialize_element(&value)?;
            }
            seq.end()
        } else {
            self.scalar().serialize(serializer)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bits::{BitReader, BitSink, BitWriter};
    use crate::codec::Codec;
    use crate::kind::{array, q3_float, signed, unsigned};
    use crate::net_struct;
    use crate::table::NetFields;

    net_struct! {
        struct Probe {
            a: u16 = unsigned(12),
            b: f32 = q3_float(),
            c: [i16; 3] = array(signed(16), 3),
        }
    }

    #[test]
    fn dynamic_decodes_what_the_static_type_encoded() {
        let layout = DynamicLayout::new(Probe::TABLE.schema()).unwrap();
        let base = Probe::default();
        let new = Probe {
            a: 700,
            b: -2.5,
            c: [0, -9, 4],
        };
        for codec in [Codec::Q3, Codec::Native] {
            let mut buf = [0u8; 64];
            let mut w = BitWriter::new(&mut buf);
            codec.write_delta(&mut w, &base, &new).unwrap();
            let bits = w.bits_written();
            let mut dynamic = layout.zeroed();
            codec
                .read_delta(&mut BitReader::with_bit_len(&buf, bits), &mut dynamic)
                .unwrap();
            assert_eq!(
                format!("{dynamic:?}"),
                r#"{"a": 700, "b": -2.5, "c": [0, -9, 4]}"#
            );
            for field in 0..3 {
                for e in 0..Probe::TABLE.fields[field].kind.elements() {
                    assert_eq!(dynamic.word(field, e), new.word(field, e));
                }
            }
        }
    }

    #[test]
    fn invalid_schemas_are_rejected() {
        let mut schema = Probe::TABLE.schema();
        schema.fields[0].kind = unsigned(40);
        assert!(DynamicLayout::new(schema).is_err());
    }
}
