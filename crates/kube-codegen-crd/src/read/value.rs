//! A JSON value built the way kubectl turns YAML or JSON into what it sends: numbers that are
//! whole become integers (Go marshals `float64(1)` as `1`), non-finite numbers are an error,
//! and mapping keys that are not strings (`yes:`, `1:`) become their string spelling. A key
//! repeated in one mapping keeps its last value, as kubectl keeps it; each repeat is recorded
//! (with its line and column when the input is YAML) for the document's warnings.

use std::cell::RefCell;
use std::fmt;

use serde::de::{self, Deserialize, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Largest magnitude Go's `encoding/json` prints without an exponent; kubectl's decoder reads
/// such a number back as an integer.
const PLAIN_FLOAT_LIMIT: f64 = 1e21;

pub(crate) struct KubectlValue(pub(crate) Value);

/// A mapping key seen again in the same mapping: the later value replaced the earlier one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct DuplicateKey {
    /// The key in its JSON spelling (`yes:` and `on:` are both `"true"`).
    pub key: String,
    /// 1-based line and column of the repeated key; `None` for JSON input (serde_json does not
    /// tell a visitor where it is).
    pub at: Option<(usize, usize)>,
}

thread_local! {
    /// The repeated keys of the document being read on this thread (see [`TopValue`]).
    static DUPLICATES: RefCell<Vec<DuplicateKey>> = const { RefCell::new(Vec::new()) };
}

/// One whole document: its value and the keys repeated anywhere in it. Reading one document is
/// synchronous on one thread, so the mappings below record their repeats in a thread-local list
/// that this wrapper empties before and takes after.
pub(crate) struct TopValue {
    pub value: Value,
    pub duplicates: Vec<DuplicateKey>,
}

impl<'de> Deserialize<'de> for TopValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let outer = DUPLICATES.with(|c| std::mem::take(&mut *c.borrow_mut()));
        let value = KubectlValue::deserialize(d);
        let duplicates = DUPLICATES.with(|c| std::mem::replace(&mut *c.borrow_mut(), outer));
        Ok(TopValue {
            value: value?.0,
            duplicates,
        })
    }
}

impl<'de> Deserialize<'de> for KubectlValue {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(ValueVisitor).map(KubectlValue)
    }
}

pub(crate) fn float<E: de::Error>(v: f64) -> Result<Value, E> {
    if !v.is_finite() {
        // What kubectl prints for the same document.
        let shown = if v.is_nan() {
            "NaN"
        } else if v > 0.0 {
            "+Inf"
        } else {
            "-Inf"
        };
        return Err(E::custom(format!("json: unsupported value: {shown}")));
    }
    if v.fract() == 0.0 && v.abs() < PLAIN_FLOAT_LIMIT {
        if v >= i64::MIN as f64 && v < i64::MAX as f64 {
            return Ok(Value::from(v as i64));
        }
        if v >= 0.0 && v < u64::MAX as f64 {
            return Ok(Value::from(v as u64));
        }
    }
    Ok(Number::from_f64(v).map_or(Value::Null, Value::Number))
}

struct ValueVisitor;

impl<'de> Visitor<'de> for ValueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a YAML or JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_i128<E: de::Error>(self, v: i128) -> Result<Value, E> {
        match i64::try_from(v) {
            Ok(i) => Ok(Value::from(i)),
            Err(_) => match u64::try_from(v) {
                Ok(u) => Ok(Value::from(u)),
                // go-yaml falls back to a float for integers past 64 bits.
                Err(_) => float(v as f64),
            },
        }
    }
    fn visit_u128<E: de::Error>(self, v: u128) -> Result<Value, E> {
        match u64::try_from(v) {
            Ok(u) => Ok(Value::from(u)),
            Err(_) => float(v as f64),
        }
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Value, E> {
        float(v)
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element::<KubectlValue>()? {
            out.push(v.0);
        }
        Ok(Value::Array(out))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        while let Some(key) = map.next_key::<serde_saphyr::Spanned<Key>>()? {
            let value = map.next_value::<KubectlValue>()?;
            match out.entry(key.value.0) {
                serde_json::map::Entry::Vacant(e) => {
                    e.insert(value.0);
                }
                serde_json::map::Entry::Occupied(mut e) => {
                    let at = key.referenced;
                    let duplicate = DuplicateKey {
                        key: e.key().clone(),
                        at: (at.line() > 0).then(|| (at.line() as usize, at.column() as usize)),
                    };
                    DUPLICATES.with(|c| c.borrow_mut().push(duplicate));
                    e.insert(value.0);
                }
            }
        }
        Ok(Value::Object(out))
    }
}

/// A mapping key in its JSON spelling (sigs.k8s.io/yaml stringifies non-string keys).
struct Key(String);

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        d.deserialize_any(KeyVisitor).map(Key)
    }
}

struct KeyVisitor;

impl Visitor<'_> for KeyVisitor {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scalar mapping key")
    }
    fn visit_bool<E>(self, v: bool) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_i64<E>(self, v: i64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_u64<E>(self, v: u64) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<String, E> {
        Ok(match float::<E>(v) {
            Ok(Value::Number(n)) => n.to_string(),
            // go-yaml's own spelling of the special floats, as sigs.k8s.io/yaml keeps it for keys.
            _ if v.is_nan() => ".nan".into(),
            _ if v > 0.0 => ".inf".into(),
            _ => "-.inf".into(),
        })
    }
    fn visit_str<E>(self, v: &str) -> Result<String, E> {
        Ok(v.to_string())
    }
    fn visit_string<E>(self, v: String) -> Result<String, E> {
        Ok(v)
    }
    fn visit_unit<E>(self) -> Result<String, E> {
        Ok("null".into())
    }
    fn visit_none<E>(self) -> Result<String, E> {
        Ok("null".into())
    }
}
