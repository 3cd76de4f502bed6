//! Defaulting from `default` values in a structural schema.
use super::MAX_DEPTH;
use super::node::{Additional, Node};
use super::prune::prune_value;
use serde_json::Value;

/// A default as the server stores it: pruned against its own schema (the server prunes defaults
/// when it loads the CRD).
fn pruned_default(s: Node<'_>) -> Option<Value> {
    let mut d = s.default()?.clone();
    prune_value(s, &mut d);
    Some(d)
}

/// The `default` of the schema node `schema` as the server applies it (pruned against the
/// node), `None` when the node has none: what generated typed defaulting embeds.
pub fn default_of(schema: &Value) -> Option<Value> {
    pruned_default(Node(schema))
}

/// Null in a field that may not be null: replaced by the default when there is one.
fn non_nullable_null(x: &Value, s: Node<'_>) -> bool {
    x.is_null() && !s.nullable()
}

pub(super) fn apply(schema: &Value, obj: &mut Value, depth: usize) {
    default_node(Node(schema), obj, depth);
}

fn default_node(s: Node<'_>, x: &mut Value, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match x {
        Value::Object(map) => {
            if let Some(props) = s.properties() {
                for (k, prop) in props {
                    let prop = Node(prop);
                    if prop.default().is_none() {
                        continue;
                    }
                    let missing = match map.get(k) {
                        None => true,
                        Some(v) => non_nullable_null(v, prop),
                    };
                    if missing && let Some(d) = pruned_default(prop) {
                        map.insert(k.clone(), d);
                    }
                }
            }
            let additional = match s.additional() {
                Some(Additional::Schema(a)) => Some(a),
                _ => None,
            };
            for (k, v) in map.iter_mut() {
                if let Some(prop) = s.property(k) {
                    default_node(prop, v, depth + 1);
                } else if let Some(a) = additional {
                    if non_nullable_null(v, a)
                        && let Some(d) = pruned_default(a)
                    {
                        *v = d;
                    }
                    default_node(a, v, depth + 1);
                }
            }
        }
        Value::Array(items) => {
            let Some(item_schema) = s.items() else { return };
            for v in items.iter_mut() {
                if non_nullable_null(v, item_schema)
                    && let Some(d) = pruned_default(item_schema)
                {
                    *v = d;
                }
                default_node(item_schema, v, depth + 1);
            }
        }
        _ => {}
    }
}
