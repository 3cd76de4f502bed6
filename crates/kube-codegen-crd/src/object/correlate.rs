//! Which old value a new value is compared with on update (validation ratcheting, `oldSelf`):
//! object fields and map values by key, `listType: map` items by their key fields, `listType:
//! set` items by value. Items of atomic lists have no old counterpart, as on the server.
use super::node::Node;
use serde_json::Value;

/// The old value of field or map key `key`.
pub(super) fn field<'a>(old: Option<&'a Value>, key: &str) -> Option<&'a Value> {
    old?.as_object()?.get(key)
}

/// The old counterpart of list item `item` of a list with schema `list` (old list `old`).
pub(super) fn item<'a>(list: Node<'_>, old: Option<&'a Value>, item: &Value) -> Option<&'a Value> {
    let old_items = old?.as_array()?;
    match list.raw("x-kubernetes-list-type").and_then(Value::as_str) {
        Some("map") => {
            let keys = map_keys(list);
            if keys.is_empty() {
                return None;
            }
            old_items
                .iter()
                .find(|o| keys.iter().all(|k| o.get(*k) == item.get(*k)))
        }
        Some("set") => old_items.iter().find(|o| *o == item),
        _ => None,
    }
}

/// `x-kubernetes-list-map-keys` of a list schema.
pub(super) fn map_keys<'a>(list: Node<'a>) -> Vec<&'a str> {
    match list.raw("x-kubernetes-list-map-keys") {
        Some(Value::Array(k)) => k.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    }
}
