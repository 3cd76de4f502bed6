//! Encoding a typed object with its top-level `metadata` replaced by other JSON: how
//! [`hub::convert_text`](super::hub::convert_text) gives back the metadata exactly as it was
//! sent (its own text, a `null` or a timestamp format included) while the rest of the object is
//! encoded straight from its converted type.
//!
//! [`Swap`] is a serializer that forwards everything to the one it wraps, except the fields of
//! the outermost struct, where the one named `metadata` is written from the replacement. Nested
//! values go to the wrapped serializer directly, so only the top level is touched.

use std::cell::Cell;

use serde::ser::{Serialize, SerializeStruct, Serializer};

/// `object` encoded with its outermost struct's `metadata` field written from `metadata`; `None`
/// when `object` has no such field (it is then not encoded: the caller falls back).
pub(super) fn with_metadata<T: Serialize + ?Sized, M: Serialize + ?Sized>(
    object: &T,
    metadata: &M,
) -> Option<Result<Box<serde_json::value::RawValue>, serde_json::Error>> {
    let swapped = Cell::new(false);
    let encoded = serde_json::value::to_raw_value(&Swapping {
        object,
        metadata,
        swapped: &swapped,
    });
    match encoded {
        Ok(_) if !swapped.get() => None,
        other => Some(other),
    }
}

struct Swapping<'a, T: ?Sized, M: ?Sized> {
    object: &'a T,
    metadata: &'a M,
    swapped: &'a Cell<bool>,
}

impl<T: Serialize + ?Sized, M: Serialize + ?Sized> Serialize for Swapping<'_, T, M> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.object.serialize(Swap {
            inner: serializer,
            metadata: self.metadata,
            swapped: self.swapped,
        })
    }
}

struct Swap<'a, S, M: ?Sized> {
    inner: S,
    metadata: &'a M,
    swapped: &'a Cell<bool>,
}

struct SwapStruct<'a, S, M: ?Sized> {
    inner: S,
    metadata: &'a M,
    swapped: &'a Cell<bool>,
}

impl<S: SerializeStruct, M: Serialize + ?Sized> SerializeStruct for SwapStruct<'_, S, M> {
    type Ok = S::Ok;
    type Error = S::Error;

    fn serialize_field<T: Serialize + ?Sized>(
        &mut self,
        key: &'static str,
        value: &T,
    ) -> Result<(), S::Error> {
        if key == "metadata" {
            self.swapped.set(true);
            self.inner.serialize_field(key, self.metadata)
        } else {
            self.inner.serialize_field(key, value)
        }
    }

    fn skip_field(&mut self, key: &'static str) -> Result<(), S::Error> {
        self.inner.skip_field(key)
    }

    fn end(self) -> Result<S::Ok, S::Error> {
        self.inner.end()
    }
}

/// Forwards a `Serializer` method to the wrapped serializer.
macro_rules! forward {
    ($($name:ident($($arg:ident: $ty:ty),*) -> $ret:ty;)*) => {
        $(fn $name(self, $($arg: $ty),*) -> $ret {
            self.inner.$name($($arg),*)
        })*
    };
}

impl<'a, S: Serializer, M: Serialize + ?Sized> Serializer for Swap<'a, S, M> {
    type Ok = S::Ok;
    type Error = S::Error;
    type SerializeSeq = S::SerializeSeq;
    type SerializeTuple = S::SerializeTuple;
    type SerializeTupleStruct = S::SerializeTupleStruct;
    type SerializeTupleVariant = S::SerializeTupleVariant;
    type SerializeMap = S::SerializeMap;
    type SerializeStruct = SwapStruct<'a, S::SerializeStruct, M>;
    type SerializeStructVariant = S::SerializeStructVariant;

    fn serialize_struct(
        self,
        name: &'static str,
        len: usize,
    ) -> Result<Self::SerializeStruct, S::Error> {
        Ok(SwapStruct {
            inner: self.inner.serialize_struct(name, len)?,
            metadata: self.metadata,
            swapped: self.swapped,
        })
    }

    fn serialize_some<T: Serialize + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        self.inner.serialize_some(value)
    }

    fn serialize_newtype_struct<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        self.inner.serialize_newtype_struct(name, value)
    }

    fn serialize_newtype_variant<T: Serialize + ?Sized>(
        self,
        name: &'static str,
        index: u32,
        variant: &'static str,
        value: &T,
    ) -> Result<S::Ok, S::Error> {
        self.inner
            .serialize_newtype_variant(name, index, variant, value)
    }

    fn collect_str<T: std::fmt::Display + ?Sized>(self, value: &T) -> Result<S::Ok, S::Error> {
        self.inner.collect_str(value)
    }

    fn is_human_readable(&self) -> bool {
        self.inner.is_human_readable()
    }

    forward! {
        serialize_bool(v: bool) -> Result<S::Ok, S::Error>;
        serialize_i8(v: i8) -> Result<S::Ok, S::Error>;
        serialize_i16(v: i16) -> Result<S::Ok, S::Error>;
        serialize_i32(v: i32) -> Result<S::Ok, S::Error>;
        serialize_i64(v: i64) -> Result<S::Ok, S::Error>;
        serialize_i128(v: i128) -> Result<S::Ok, S::Error>;
        serialize_u8(v: u8) -> Result<S::Ok, S::Error>;
        serialize_u16(v: u16) -> Result<S::Ok, S::Error>;
        serialize_u32(v: u32) -> Result<S::Ok, S::Error>;
        serialize_u64(v: u64) -> Result<S::Ok, S::Error>;
        serialize_u128(v: u128) -> Result<S::Ok, S::Error>;
        serialize_f32(v: f32) -> Result<S::Ok, S::Error>;
        serialize_f64(v: f64) -> Result<S::Ok, S::Error>;
        serialize_char(v: char) -> Result<S::Ok, S::Error>;
        serialize_str(v: &str) -> Result<S::Ok, S::Error>;
        serialize_bytes(v: &[u8]) -> Result<S::Ok, S::Error>;
        serialize_none() -> Result<S::Ok, S::Error>;
        serialize_unit() -> Result<S::Ok, S::Error>;
        serialize_unit_struct(name: &'static str) -> Result<S::Ok, S::Error>;
        serialize_unit_variant(name: &'static str, index: u32, variant: &'static str) -> Result<S::Ok, S::Error>;
        serialize_seq(len: Option<usize>) -> Result<S::SerializeSeq, S::Error>;
        serialize_tuple(len: usize) -> Result<S::SerializeTuple, S::Error>;
        serialize_tuple_struct(name: &'static str, len: usize) -> Result<S::SerializeTupleStruct, S::Error>;
        serialize_tuple_variant(name: &'static str, index: u32, variant: &'static str, len: usize) -> Result<S::SerializeTupleVariant, S::Error>;
        serialize_map(len: Option<usize>) -> Result<S::SerializeMap, S::Error>;
        serialize_struct_variant(name: &'static str, index: u32, variant: &'static str, len: usize) -> Result<S::SerializeStructVariant, S::Error>;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(serde::Serialize)]
    struct Object {
        #[serde(rename = "apiVersion")]
        api_version: &'static str,
        metadata: Inner,
        spec: Inner,
    }

    #[derive(serde::Serialize)]
    struct Inner {
        metadata: u8,
    }

    #[test]
    fn only_the_outermost_metadata_is_replaced() {
        let object = Object {
            api_version: "v1",
            metadata: Inner { metadata: 1 },
            spec: Inner { metadata: 2 },
        };
        let sent = json!({"name": "a", "creationTimestamp": null});
        let raw = with_metadata(&object, &sent).unwrap().unwrap();
        let got: serde_json::Value = serde_json::from_str(raw.get()).unwrap();
        assert_eq!(
            got,
            json!({"apiVersion": "v1", "metadata": {"name": "a", "creationTimestamp": null},
                   "spec": {"metadata": 2}})
        );
    }

    #[test]
    fn no_metadata_field_is_none() {
        assert!(with_metadata(&json!({"metadata": 1}), &json!(2)).is_none());
        assert!(with_metadata(&Inner { metadata: 1 }.metadata, &json!(2)).is_none());
    }
}
