//! [`to_value_reusing`]: `serde_json::to_value`, taking the allocations of a template `Value`
//! wherever the result holds the same thing.
//!
//! A converted object is mostly what came in: the same strings, maps and lists under the same
//! keys. Building its JSON afresh allocates every key and string again (and frees the input's);
//! this serializer walks the template beside the value instead, keeps a template string that is
//! equal (or its buffer, rewritten, when it is not), and fills the template's own maps and
//! lists in place. The result is always exactly `to_value`'s: a template entry the value does
//! not write is removed, one it writes is overwritten, and whatever is not walked that way
//! goes through `serde_json`'s own serializer. (With `serde_json`'s `preserve_order`, a reused
//! map keeps the template's key order.)

use serde::Serialize;
use serde::ser::{self, Serializer as _};
use serde_json::value::Serializer as Plain;
use serde_json::{Error, Map, Value};

/// `serde_json::to_value(value)`, reusing `template`'s allocations where they hold the same.
pub(crate) fn to_value_reusing<T: Serialize + ?Sized>(
    value: &T,
    template: Value,
) -> Result<Value, Error> {
    value.serialize(Reuse(template))
}

/// Serializes into a `Value`, reusing the template it holds (`Null`: none).
struct Reuse(Value);

type PlainTupleVariant = <Plain as ser::Serializer>::SerializeTupleVariant;
type PlainStructVariant = <Plain as ser::Serializer>::SerializeStructVariant;
type PlainStruct = <Plain as ser::Serializer>::SerializeStruct;

impl ser::Serializer for Reuse {
    type Ok = Value;
    type Error = Error;
    type SerializeSeq = Seq;
    type SerializeTuple = Seq;
    type SerializeTupleStruct = Seq;
    type SerializeTupleVariant = PlainTupleVariant;
    type SerializeMap = MapOut;
    type SerializeStruct = Struct;
    type SerializeStructVariant = PlainStructVariant;

    fn serialize_bool(self, v: bool) -> Result<Value, Error> {
        Plain.serialize_bool(v)
    }
    fn serialize_i8(self, v: i8) -> Result<Value, Error> {
        Plain.serialize_i8(v)
    }
    fn serialize_i16(self, v: i16) -> Result<Value, Error> {
        Plain.serialize_i16(v)
    }
    fn serialize_i32(self, v: i32) -> Result<Value, Error> {
        Plain.serialize_i32(v)
    }
    fn serialize_i64(self, v: i64) -> Result<Value, Error> {
        Plain.serialize_i64(v)
    }
    fn serialize_i128(self, v: i128) -> Result<Value, Error> {
        Plain.serialize_i128(v)
    }
    fn serialize_u8(self, v: u8) -> Result<Value, Error> {
        Plain.serialize_u8(v)
    }
    fn serialize_u16(self, v: u16) -> Result<Value, Error> {
        Plain.serialize_u16(v)
    }
    fn serialize_u32(self, v: u32) -> Result<Value, Error> {
        Plain.serialize_u32(v)
    }
    fn serialize_u64(self, v: u64) -> Result<Value, Error> {
        Plain.serialize_u64(v)
    }
    fn serialize_u128(self, v: u128) -> Result<Value, Error> {
        Plain.serialize_u128(v)
    }
    fn serialize_f32(self, v: f32) -> Result<Value, Error> {
        Plain.serialize_f32(v)
    }
    fn serialize_f64(self, v: f64) -> Result<Value, Error> {
        Plain.serialize_f64(v)
    }
    fn serialize_char(self, v: char) -> Result<Value, Error> {
        Plain.serialize_char(v)
    }
    fn serialize_str(self, v: &str) -> Result<Value, Error> {
        match self.0 {
            // Equal, or at least the template's buffer when it is large enough.
            Value::String(mut s) if s.capacity() >= v.len() => {
                if s != v {
                    s.clear();
                    s.push_str(v);
                }
                Ok(Value::String(s))
            }
            _ => Plain.serialize_str(v),
        }
    }
    fn serialize_bytes(self, v: &[u8]) -> Result<Value, Error> {
        Plain.serialize_bytes(v)
    }
    fn serialize_none(self) -> Result<Value, Error> {
        Plain.serialize_none()
    }
    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<Value, Error> {
        value.serialize(self)
    }
    fn serialize_unit(self) -> Result<Value, Error> {
        Plain.serialize_unit()
    }
    fn serialize_unit_struct(self, name: &'static str) -> Result<Value, Error> {
        Plain.serialize_unit_struct(name)
    }
    fn serialize_unit_variant(
        self,
        _name: &'static str,
        _index: u32,
        variant: &'static str,
    ) -> Result<Value, Error> {
        // As `serde_json` does.
        self.serialize_str(variant)
    }
    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        _name: &'static str,
        value: &T,
    ) -> Result<Value, Error> {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<Value, Error> {
        Plain.serialize_newtype_variant(name, index, variant, value)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Seq, Error> {
        let items = match self.0 {
            Value::Array(items) => items,
            _ => Vec::with_capacity(len.unwrap_or(0)),
        };
        Ok(Seq { items, len: 0 })
    }
    fn serialize_tuple(self, len: usize) -> Result<Seq, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_struct(self, _name: &'static str, len: usize) -> Result<Seq, Error> {
        self.serialize_seq(Some(len))
    }
    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeTupleVariant, Error> {
        Plain.serialize_tuple_variant(name, index, variant, len)
    }
    fn serialize_map(self, _len: Option<usize>) -> Result<MapOut, Error> {
        let template = match self.0 {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Ok(MapOut {
            template,
            out: Map::new(),
            next: None,
        })
    }
    fn serialize_struct(self, name: &'static str, len: usize) -> Result<Struct, Error> {
        // `serde_json`'s own markers (arbitrary-precision numbers, raw values) stay its own.
        if name.starts_with("$serde_json::private::") {
            return Ok(Struct::Plain(Plain.serialize_struct(name, len)?));
        }
        let map = match self.0 {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        Ok(Struct::reused(map, len))
    }
    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStructVariant, Error> {
        Plain.serialize_struct_variant(name, index, variant, len)
    }
    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<Value, Error> {
        Plain.collect_str(value)
    }
}

/// A list filled in the template's own `Vec`, item by item over the template's items.
struct Seq {
    items: Vec<Value>,
    len: usize,
}

impl Seq {
    fn push<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        match self.items.get_mut(self.len) {
            Some(slot) => *slot = value.serialize(Reuse(slot.take()))?,
            None => self.items.push(value.serialize(Reuse(Value::Null))?),
        }
        self.len += 1;
        Ok(())
    }
    fn finish(mut self) -> Result<Value, Error> {
        self.items.truncate(self.len);
        Ok(Value::Array(self.items))
    }
}

impl ser::SerializeSeq for Seq {
    type Ok = Value;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<Value, Error> {
        self.finish()
    }
}

impl ser::SerializeTuple for Seq {
    type Ok = Value;
    type Error = Error;
    fn serialize_element<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<Value, Error> {
        self.finish()
    }
}

impl ser::SerializeTupleStruct for Seq {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        self.push(value)
    }
    fn end(self) -> Result<Value, Error> {
        self.finish()
    }
}

/// A struct filled in the template's own map: each field replaces the template's entry of the
/// same key (its value the template of the field's), and template keys no field wrote are
/// removed at the end.
enum Struct {
    Reused {
        map: Map<String, Value>,
        /// Keys in the template when it came (none: nothing to remove at the end).
        template_len: usize,
        written: Written,
    },
    Plain(PlainStruct),
}

/// Which entries of a reused map were written: a bit per position while the map has fewer
/// than 64 entries (no allocation per struct), else the keys.
enum Written {
    Positions(u64),
    Keys(Vec<String>),
}

impl Struct {
    fn reused(map: Map<String, Value>, fields: usize) -> Struct {
        let template_len = map.len();
        let written = if template_len + fields < 64 {
            Written::Positions(0)
        } else {
            Written::Keys(Vec::new())
        };
        Struct::Reused {
            map,
            template_len,
            written,
        }
    }
}

impl ser::SerializeStruct for Struct {
    type Ok = Value;
    type Error = Error;
    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), Error> {
        let (map, written) = match self {
            Struct::Reused { map, written, .. } => (map, written),
            Struct::Plain(s) => return s.serialize_field(key, value),
        };
        if let Written::Positions(bits) = written {
            // A struct serializing more fields than it announced outgrows the bits.
            if map.len() >= 64 {
                let keys = map
                    .keys()
                    .enumerate()
                    .filter(|(i, _)| *bits & (1 << i) != 0)
                    .map(|(_, k)| k.clone())
                    .collect();
                *written = Written::Keys(keys);
            }
        }
        match written {
            Written::Positions(bits) => {
                // One pass finds the entry and its position (maps here are small).
                match map.iter_mut().enumerate().find(|(_, (k, _))| *k == key) {
                    Some((i, (_, slot))) => {
                        *slot = value.serialize(Reuse(slot.take()))?;
                        *bits |= 1 << i;
                    }
                    None => {
                        map.insert(key.to_owned(), value.serialize(Reuse(Value::Null))?);
                        // The new entry's position (below 64: the map had fewer entries);
                        // the entries after it moved up one.
                        let i = map.keys().position(|k| k == key).unwrap_or(0);
                        let low = *bits & ((1u64 << i) - 1);
                        let high = (*bits >> i).checked_shl(i as u32 + 1).unwrap_or(0);
                        *bits = low | high | (1 << i);
                    }
                }
            }
            Written::Keys(keys) => {
                match map.get_mut(key) {
                    Some(slot) => *slot = value.serialize(Reuse(slot.take()))?,
                    None => {
                        map.insert(key.to_owned(), value.serialize(Reuse(Value::Null))?);
                    }
                }
                keys.push(key.to_owned());
            }
        }
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        match self {
            Struct::Reused {
                mut map,
                template_len,
                written,
            } => {
                // Template keys no field wrote (unknown to the type, or not serialized).
                if template_len > 0 {
                    match written {
                        Written::Positions(bits) if bits.count_ones() as usize != map.len() => {
                            let mut i = 0;
                            map.retain(|_, _| {
                                let keep = bits & (1 << i) != 0;
                                i += 1;
                                keep
                            });
                        }
                        Written::Keys(keys) => map.retain(|k, _| keys.contains(k)),
                        _ => {}
                    }
                }
                Ok(Value::Object(map))
            }
            Struct::Plain(s) => s.end(),
        }
    }
}

/// A map built afresh (its keys in the order they come), each value over the template's value
/// of the same key.
struct MapOut {
    template: Map<String, Value>,
    out: Map<String, Value>,
    next: Option<(String, Value)>,
}

impl ser::SerializeMap for MapOut {
    type Ok = Value;
    type Error = Error;
    fn serialize_key<T: Serialize + ?Sized>(&mut self, key: &T) -> Result<(), Error> {
        // A string key is the string; any other goes through `serde_json`'s own map so it
        // converts (or fails) exactly as there.
        let key = match key.serialize(Plain) {
            Ok(Value::String(s)) => s,
            _ => {
                let mut one = Plain.serialize_map(Some(1))?;
                ser::SerializeMap::serialize_entry(&mut one, key, &())?;
                match ser::SerializeMap::end(one)? {
                    Value::Object(m) => m.into_iter().next().map(|(k, _)| k).unwrap_or_default(),
                    _ => String::new(),
                }
            }
        };
        let template = self.template.remove(&key).unwrap_or(Value::Null);
        self.next = Some((key, template));
        Ok(())
    }
    fn serialize_value<T: Serialize + ?Sized>(&mut self, value: &T) -> Result<(), Error> {
        // As `serde_json` does: a bug in the caller, not a failure to report.
        let (key, template) = self
            .next
            .take()
            .expect("serialize_value called before serialize_key");
        self.out.insert(key, value.serialize(Reuse(template))?);
        Ok(())
    }
    fn end(self) -> Result<Value, Error> {
        Ok(Value::Object(self.out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::collections::BTreeMap;

    #[derive(Serialize)]
    struct Spec {
        name: String,
        #[serde(skip_serializing_if = "Option::is_none")]
        size: Option<i64>,
        ports: Vec<Port>,
        labels: BTreeMap<String, String>,
        ints: BTreeMap<i32, bool>,
        kind: Kind,
        tuple: (u8, String),
        #[serde(flatten)]
        rest: BTreeMap<String, Value>,
    }

    #[derive(Serialize)]
    struct Port {
        name: Option<String>,
        port: i32,
    }

    #[derive(Serialize)]
    enum Kind {
        Plain,
        Wrapped(String),
        Pair(u8, u8),
        Named { a: u8 },
    }

    fn spec(kind: Kind) -> Spec {
        Spec {
            name: "web".into(),
            size: Some(3),
            ports: vec![
                Port {
                    name: Some("http".into()),
                    port: 80,
                },
                Port {
                    name: None,
                    port: 53,
                },
            ],
            labels: [("a".into(), "1".into()), ("b".into(), "2".into())].into(),
            ints: [(1, true), (-2, false)].into(),
            kind,
            tuple: (7, "x".into()),
            rest: [("extra".into(), json!({"k": [1, 2]}))].into(),
        }
    }

    /// Whatever the template, the result is `to_value`'s.
    #[test]
    fn gives_to_values_result_whatever_the_template() {
        let kinds = || {
            [
                Kind::Plain,
                Kind::Wrapped("w".into()),
                Kind::Pair(1, 2),
                Kind::Named { a: 1 },
            ]
        };
        for (kind, same) in kinds().into_iter().zip(kinds()) {
            let value = spec(kind);
            let want = serde_json::to_value(&value).unwrap();
            let templates = [
                Value::Null,
                json!("web"),
                json!([1, 2, 3]),
                want.clone(),
                serde_json::to_value(spec(same)).unwrap(),
                json!({"name": "other", "size": "3", "unknown": {"x": 1}, "ports": [{"port": 80, "name": "http", "more": 1}],
                       "labels": {"b": "2", "c": "3"}, "ints": {"1": false}, "tuple": [7], "extra": null, "kind": "Plain"}),
                json!({"ports": [{"name": "http"}, {"name": "dns"}, {"name": "x"}], "labels": [], "kind": {"Named": {"a": 2, "b": 3}}}),
                json!({"ports": {}, "tuple": {"0": 7}, "name": ["web"], "size": null}),
            ];
            for template in templates {
                let got = to_value_reusing(&value, template.clone()).unwrap();
                assert_eq!(got, want, "template {template}");
            }
        }
    }

    /// A struct of many fields (announcing none), one field written twice.
    struct Wide;

    static NAMES: std::sync::LazyLock<Vec<&'static str>> =
        std::sync::LazyLock::new(|| (0..70).map(|i| &*format!("f{i:02}").leak()).collect());

    impl Serialize for Wide {
        fn serialize<S: ser::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
            use ser::SerializeStruct as _;
            let mut st = s.serialize_struct("Wide", 0)?;
            for (i, name) in NAMES.iter().enumerate().filter(|(i, _)| i % 3 != 1) {
                st.serialize_field(name, &i)?;
            }
            st.serialize_field("f00", "again")?;
            st.end()
        }
    }

    #[test]
    fn wide_structs_and_repeated_fields() {
        let want = serde_json::to_value(Wide).unwrap();
        let mut template: Map<String, Value> =
            NAMES.iter().map(|n| (n.to_string(), json!(n))).collect();
        template.insert("zz".into(), json!(1));
        for template in [Value::Null, Value::Object(template), want.clone()] {
            assert_eq!(to_value_reusing(&Wide, template).unwrap(), want);
        }
        let small: Map<String, Value> = [("f00".into(), json!(1)), ("f01".into(), json!(2))]
            .into_iter()
            .collect();
        assert_eq!(to_value_reusing(&Wide, Value::Object(small)).unwrap(), want);
    }

    /// Keys `serde_json` cannot make a string of fail the same way.
    #[test]
    fn fails_where_to_value_fails() {
        let value: BTreeMap<(u8, u8), u8> = [((1, 2), 3)].into();
        let want = serde_json::to_value(&value).unwrap_err().to_string();
        let got = to_value_reusing(&value, json!({"x": 1}))
            .unwrap_err()
            .to_string();
        assert_eq!(got, want);
    }
}
