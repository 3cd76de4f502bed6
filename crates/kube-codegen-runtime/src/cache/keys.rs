//! Cache keys: `namespace/name` for namespaced objects, `name` for cluster-scoped ones
//! (client-go's `MetaNamespaceKeyFunc` and `SplitMetaNamespaceKey`). Workqueues carry these
//! keys from event handlers to workers, who look the object up again by key.

use kube::Resource;

use super::error::CacheError;
use super::store::Key;

/// The cache key of `obj`: `namespace/name`, or `name` when it has no namespace.
///
/// Errors when the object has no name (a server never returns one, but a hand-built object
/// may lack it).
pub fn key_of<K: Resource>(obj: &K) -> Result<String, CacheError> {
    store_key(obj).map(Key::into_string)
}

/// [`key_of`] as the store keeps it: keys up to 24 bytes (`ns-1/name-1234`; not most
/// generated names) are built in place, with no allocation. Built by hand: this runs once or
/// twice per event, and `format!` costs more.
pub(crate) fn store_key<K: Resource>(obj: &K) -> Result<Key, CacheError> {
    let meta = obj.meta();
    let name = meta
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .ok_or(CacheError::NoName)?;
    Ok(match meta.namespace.as_deref() {
        Some(ns) if !ns.is_empty() => {
            let mut key = Key::with_capacity(ns.len() + 1 + name.len());
            key.push_str(ns);
            key.push('/');
            key.push_str(name);
            key
        }
        _ => Key::from(name),
    })
}

/// Splits a key made by [`key_of`] into `(namespace, name)`; the namespace is `""` for a
/// cluster-scoped key.
pub fn split_key(key: &str) -> Result<(&str, &str), CacheError> {
    let mut parts = key.split('/');
    match (parts.next(), parts.next(), parts.next()) {
        (Some(name), None, None) => Ok(("", name)),
        (Some(ns), Some(name), None) => Ok((ns, name)),
        _ => Err(CacheError::KeyFormat(key.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn cm(ns: Option<&str>, name: Option<&str>) -> ConfigMap {
        ConfigMap {
            metadata: ObjectMeta {
                namespace: ns.map(str::to_owned),
                name: name.map(str::to_owned),
                ..ObjectMeta::default()
            },
            ..ConfigMap::default()
        }
    }

    #[test]
    fn keys_are_namespace_slash_name_or_name() {
        assert_eq!(
            key_of(&cm(Some("default"), Some("a"))).unwrap(),
            "default/a"
        );
        assert_eq!(key_of(&cm(Some(""), Some("a"))).unwrap(), "a");
        let ns = Namespace {
            metadata: ObjectMeta {
                name: Some("kube-system".into()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        assert_eq!(key_of(&ns).unwrap(), "kube-system");
    }

    #[test]
    fn an_object_without_a_name_has_no_key() {
        assert!(matches!(
            key_of(&cm(Some("default"), None)),
            Err(CacheError::NoName)
        ));
        assert!(matches!(
            key_of(&cm(Some("default"), Some(""))),
            Err(CacheError::NoName)
        ));
    }

    #[test]
    fn store_keys_equal_key_of_short_and_long() {
        let long = "a-namespace-name-well-past-24-bytes";
        for (ns, name) in [
            (Some("ns-1"), "name-1"),
            (Some(long), "x"),
            (Some(long), long),
            (None, long),
            (Some(""), "a"),
        ] {
            let obj = cm(ns, Some(name));
            assert_eq!(store_key(&obj).unwrap().as_str(), key_of(&obj).unwrap());
        }
        assert!(matches!(
            store_key(&cm(Some("default"), None)),
            Err(CacheError::NoName)
        ));
    }

    #[test]
    fn split_inverts_key_of_and_rejects_extra_slashes() {
        assert_eq!(split_key("default/a").unwrap(), ("default", "a"));
        assert_eq!(split_key("a").unwrap(), ("", "a"));
        let err = split_key("a/b/c").unwrap_err();
        assert_eq!(err.to_string(), "unexpected key format: \"a/b/c\"");
    }
}
