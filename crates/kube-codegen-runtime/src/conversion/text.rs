//! Reading an object's JSON text without decoding it: the top-level fields the text path needs
//! (`apiVersion`, `kind`, `metadata`), read only as far as they stand, and the name and
//! namespace a message names the object by.

use serde::Deserialize;
use serde::Deserializer as _;
use serde::de::{IgnoredAny, MapAccess, Visitor};
use serde_json::value::RawValue;

/// The texts of the top-level fields `keys` of the object `text` (the first occurrence of
/// each), reading its fields in order only until all are found: kube-apiserver writes
/// `apiVersion`, `kind` and `metadata` first, so the rest of the object is not even scanned.
/// A key with an escape in it, or a text that is no object, finds nothing.
pub(super) fn leading<'de, const N: usize>(
    text: &'de str,
    keys: [&str; N],
) -> [Option<&'de RawValue>; N] {
    struct Find<'s, 'de, const N: usize> {
        keys: [&'s str; N],
        found: &'s mut [Option<&'de RawValue>; N],
    }
    impl<'de, const N: usize> Visitor<'de> for Find<'_, 'de, N> {
        type Value = ();
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            let mut missing = N;
            while let Some(key) = map.next_key::<&'de str>()? {
                match self.keys.iter().position(|k| *k == key) {
                    Some(i) if self.found[i].is_none() => {
                        self.found[i] = Some(map.next_value()?);
                        missing -= 1;
                        if missing == 0 {
                            return Ok(());
                        }
                    }
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
            }
            Ok(())
        }
    }
    let mut found = [None; N];
    // Stopping early leaves the object unfinished, which the deserializer then reports: what
    // was found before that is the answer.
    let _ = serde_json::Deserializer::from_str(text).deserialize_map(Find {
        keys,
        found: &mut found,
    });
    found
}

/// `metadata.namespace` and `metadata.name` of the object `text` ("" where absent), for a
/// message.
pub(super) fn identity(text: &str) -> (String, String) {
    #[derive(Deserialize, Default)]
    struct Meta {
        namespace: Option<String>,
        name: Option<String>,
    }
    let [metadata] = leading(text, ["metadata"]);
    let meta: Meta = metadata
        .and_then(|m| serde_json::from_str(m.get()).ok())
        .unwrap_or_default();
    (
        meta.namespace.unwrap_or_default(),
        meta.name.unwrap_or_default(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leading_fields_are_found_in_any_order() {
        let text =
            r#"{"kind":"Foo","spec":{"kind":"x"},"apiVersion":"a/v1","metadata":{"name":"n"}}"#;
        let [api, kind, missing] = leading(text, ["apiVersion", "kind", "status"]);
        assert_eq!(api.map(RawValue::get), Some(r#""a/v1""#));
        assert_eq!(kind.map(RawValue::get), Some(r#""Foo""#));
        assert!(missing.is_none());
        assert_eq!(identity(text), (String::new(), "n".to_owned()));
        assert!(leading("[1]", ["kind"])[0].is_none());
        assert_eq!(identity("null"), Default::default());
    }
}
