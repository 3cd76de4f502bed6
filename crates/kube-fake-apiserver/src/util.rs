//! Small helpers: timestamps, uids, query strings, metadata access.
use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};

use serde_json::{Map, Value};

/// RFC 3339 UTC timestamp with second precision, as Kubernetes prints `metav1.Time`.
pub fn now() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

pub fn random_u64() -> u64 {
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0),
    );
    h.finish()
}

/// A random version-4 style UUID.
pub fn uid() -> String {
    let a = random_u64();
    let b = random_u64();
    format!(
        "{:08x}-{:04x}-4{:03x}-{:04x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0x0fff,
        0x8000 | (b >> 48) & 0x3fff,
        b & 0xffff_ffff_ffff
    )
}

/// The 5-character suffix `generateName` gets (same alphabet as the API server).
pub fn name_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    let mut r = random_u64();
    (0..5)
        .map(|_| {
            let c = ALPHABET[(r % ALPHABET.len() as u64) as usize] as char;
            r /= ALPHABET.len() as u64;
            c
        })
        .collect()
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

/// Decodes `application/x-www-form-urlencoded` text.
pub fn url_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h * 16 + l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            c => out.push(c),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Parses a query string; a repeated key keeps its first value.
pub fn parse_query(q: Option<&str>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for pair in q.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        out.entry(url_decode(k)).or_insert_with(|| url_decode(v));
    }
    out
}

/// `metadata` of an object, created when missing.
pub fn meta_mut(obj: &mut Value) -> &mut Map<String, Value> {
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = Value::Object(Map::new());
    }
    obj["metadata"]
        .as_object_mut()
        .expect("metadata was just made an object")
}

/// A string field read the way Go reads a missing or mistyped one: `""`.
pub fn str_of(v: Option<&Value>) -> &str {
    v.and_then(Value::as_str).unwrap_or("")
}

/// The strings of a list field (non-strings skipped, missing: empty).
pub fn str_list(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default()
}

/// An integer field (missing or not an integer: `None`).
pub fn int_of(v: Option<&Value>) -> Option<i64> {
    v.and_then(Value::as_i64)
}

/// A field of `metadata`. Fields are read one way: [`meta`] or `Value::pointer` finds the
/// value, then [`str_of`], [`int_of`] or [`str_list`] reads it as Go would.
pub fn meta<'a>(obj: &'a Value, field: &str) -> Option<&'a Value> {
    obj.get("metadata").and_then(|m| m.get(field))
}

/// A string field of `metadata` (missing: `""`).
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    str_of(meta(obj, field))
}

/// Whether the object has a `deletionTimestamp` (it goes once its finalizers are gone).
pub fn is_deleting(obj: &Value) -> bool {
    meta(obj, "deletionTimestamp").is_some_and(|t| !t.is_null())
}

/// `metadata.finalizers`.
pub fn finalizers(obj: &Value) -> Vec<String> {
    str_list(meta(obj, "finalizers"))
}

/// Reads a `.spec.replicas` style path.
pub fn get_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    path.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .try_fold(obj, |cur, seg| cur.get(seg))
}

/// Writes a `.spec.replicas` style path, creating intermediate objects.
pub fn set_path(obj: &mut Value, path: &str, value: Value) {
    let segs: Vec<&str> = path
        .trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .collect();
    let mut cur = obj;
    for (i, seg) in segs.iter().enumerate() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let m = cur.as_object_mut().expect("made an object above");
        if i + 1 == segs.len() {
            m.insert(seg.to_string(), value);
            return;
        }
        cur = m
            .entry(seg.to_string())
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

/// `[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*`, at most 253 characters.
pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 253
        && s.split('.').all(|label| {
            let b = label.as_bytes();
            !b.is_empty()
                && b.iter()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
                && b[0] != b'-'
                && b[b.len() - 1] != b'-'
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_decoding() {
        let q = parse_query(Some("labelSelector=app%3Dx%2Cb+in+(1)&watch=1&x"));
        assert_eq!(q["labelSelector"], "app=x,b in (1)");
        assert_eq!(q["watch"], "1");
        assert_eq!(q["x"], "");
        assert_eq!(url_decode("100%"), "100%");
    }

    #[test]
    fn subdomains() {
        assert!(is_dns_subdomain("foos.example.com"));
        assert!(!is_dns_subdomain("Foo"));
        assert!(!is_dns_subdomain("-a"));
        assert!(!is_dns_subdomain(""));
    }

    #[test]
    fn paths() {
        let mut v = serde_json::json!({});
        set_path(&mut v, ".spec.replicas", 3.into());
        assert_eq!(get_path(&v, ".spec.replicas"), Some(&Value::from(3)));
        assert_eq!(uid().len(), 36);
        assert_eq!(name_suffix().len(), 5);
    }
}
