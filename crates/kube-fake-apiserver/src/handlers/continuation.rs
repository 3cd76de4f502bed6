//! List continue tokens as the etcd3 storage writes them: unpadded URL-safe base64 of
//! `{"v":"meta.k8s.io/v1","rv":<revision>,"start":"<next key>"}`, where the key is relative to
//! the list's prefix (`name` in one namespace, `namespace/name` across namespaces) and ends in
//! `\0` (the first key after the last one returned). `rv: -1` continues at the newest revision.
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use serde_json::{Value, json};

use crate::status::ApiError;
use crate::store::Key;

const VERSION: &str = "meta.k8s.io/v1";

/// Where a list continues: objects whose (namespace, name) is at or after `start`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continue {
    /// The snapshot's resourceVersion; `None` for an inconsistent token (`rv: -1`).
    pub rv: Option<u64>,
    pub start: (String, String),
}

impl Continue {
    /// The token for the page after `last`.
    pub fn after(rv: Option<u64>, last: &Key) -> Self {
        Continue {
            rv,
            start: (last.namespace.clone(), format!("{}\0", last.name)),
        }
    }

    /// Whether an object at `key` belongs to this or a later page.
    pub fn includes(&self, key: &Key) -> bool {
        (&key.namespace, &key.name) >= (&self.start.0, &self.start.1)
    }

    /// The same position at the newest revision, handed out when the snapshot is gone.
    pub fn inconsistent(&self) -> Self {
        Continue {
            rv: None,
            start: self.start.clone(),
        }
    }

    /// `request_ns` is the namespace in the list's URL (its keys are then relative to it).
    pub fn encode(&self, request_ns: Option<&str>) -> String {
        let start = match request_ns {
            Some(_) => self.start.1.clone(),
            None if self.start.0.is_empty() => self.start.1.clone(),
            None => format!("{}/{}", self.start.0, self.start.1),
        };
        let rv = self.rv.map_or(-1, |r| r as i64);
        URL_SAFE_NO_PAD.encode(json!({"v": VERSION, "rv": rv, "start": start}).to_string())
    }

    /// `namespaced`: the resource is namespaced (a cross-namespace key is `namespace/name`).
    pub fn decode(
        token: &str,
        request_ns: Option<&str>,
        namespaced: bool,
    ) -> Result<Self, ApiError> {
        let bad = |why: &str| {
            ApiError::bad_request(format!(
                "invalid continue token: continue key is not valid{why}"
            ))
        };
        let raw = URL_SAFE_NO_PAD
            .decode(token.trim_end_matches('='))
            .map_err(|e| bad(&format!(": {e}")))?;
        let v: Value = serde_json::from_slice(&raw).map_err(|e| bad(&format!(": {e}")))?;
        if v.get("v").and_then(Value::as_str) != Some(VERSION) {
            return Err(bad(": server does not recognize this encoded version"));
        }
        let rv = match v.get("rv").and_then(Value::as_i64) {
            Some(-1) => None,
            Some(r) if r > 0 => Some(r as u64),
            _ => {
                return Err(bad(
                    ": incorrect encoded start resourceVersion (version meta.k8s.io/v1)",
                ));
            }
        };
        let start = v.get("start").and_then(Value::as_str).unwrap_or("");
        if start.is_empty() {
            return Err(bad(": encoded start key empty (version meta.k8s.io/v1)"));
        }
        let start = match request_ns {
            Some(ns) => (ns.to_string(), start.to_string()),
            None if !namespaced => (String::new(), start.to_string()),
            None => {
                let (ns, name) = start.split_once('/').unwrap_or(("", start));
                (ns.to_string(), name.to_string())
            }
        };
        Ok(Continue { rv, start })
    }
}

/// `interpretListError` for a continue token whose snapshot was compacted: 410 with the token
/// that continues at the newest revision.
pub fn expired(token: &Continue, request_ns: Option<&str>) -> ApiError {
    let mut e = ApiError::expired(
        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
    );
    e.list_continue = Some(Box::new(token.inconsistent().encode(request_ns)));
    e
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(ns: &str, name: &str) -> Key {
        Key {
            group: String::new(),
            resource: "configmaps".into(),
            namespace: ns.into(),
            name: name.into(),
        }
    }

    #[test]
    fn round_trips_in_the_etcd_format() {
        let c = Continue::after(Some(42), &key("team", "b"));
        let t = c.encode(None);
        let raw = URL_SAFE_NO_PAD.decode(&t).unwrap();
        let v: Value = serde_json::from_slice(&raw).unwrap();
        assert_eq!(
            v,
            json!({"v": "meta.k8s.io/v1", "rv": 42, "start": "team/b\u{0}"})
        );
        assert_eq!(Continue::decode(&t, None, true).unwrap(), c);
        let in_ns = c.encode(Some("team"));
        assert_eq!(Continue::decode(&in_ns, Some("team"), true).unwrap(), c);
        assert!(!c.includes(&key("team", "b")));
        assert!(c.includes(&key("team", "ba")));
        assert!(c.includes(&key("zoo", "a")));
        let i = Continue::decode(&c.inconsistent().encode(None), None, true).unwrap();
        assert_eq!(i.rv, None);
    }

    #[test]
    fn bad_tokens_are_400() {
        for t in [
            "%%%",
            "garbage",
            &URL_SAFE_NO_PAD.encode(r#"{"v":"x","rv":1,"start":"a"}"#),
        ] {
            assert_eq!(
                Continue::decode(t, None, true).unwrap_err().code,
                400,
                "{t}"
            );
        }
        let zero = URL_SAFE_NO_PAD.encode(r#"{"v":"meta.k8s.io/v1","rv":0,"start":"a"}"#);
        let e = Continue::decode(&zero, None, true).unwrap_err();
        assert!(
            e.message
                .contains("incorrect encoded start resourceVersion"),
            "{}",
            e.message
        );
    }
}
