//! Read-only view of one JSON-schema node, answering the structural questions the algorithms ask.
use serde_json::{Map, Value};

/// `additionalProperties` of a node: absent, a boolean, or a schema.
#[derive(Clone, Copy)]
pub(crate) enum Additional<'a> {
    /// `additionalProperties: true` (or `false`): keys are allowed but carry no schema.
    Bool,
    Schema(Node<'a>),
}

#[derive(Clone, Copy)]
pub(crate) struct Node<'a>(pub(crate) &'a Value);

impl<'a> Node<'a> {
    fn get(self, key: &str) -> Option<&'a Value> {
        self.0.as_object()?.get(key)
    }

    fn flag(self, key: &str) -> bool {
        self.get(key).and_then(Value::as_bool).unwrap_or(false)
    }

    pub(crate) fn type_(self) -> Option<&'a str> {
        self.get("type")
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())
    }

    pub(crate) fn properties(self) -> Option<&'a Map<String, Value>> {
        self.get("properties").and_then(Value::as_object)
    }

    pub(crate) fn property(self, name: &str) -> Option<Node<'a>> {
        self.properties()?.get(name).map(Node)
    }

    pub(crate) fn additional(self) -> Option<Additional<'a>> {
        match self.get("additionalProperties")? {
            Value::Bool(_) => Some(Additional::Bool),
            v @ Value::Object(_) => Some(Additional::Schema(Node(v))),
            _ => None,
        }
    }

    /// The schema for the value under `key`: the declared property, else `additionalProperties`.
    /// `Some(None)` means "allowed, without schema" (`additionalProperties: true`).
    pub(crate) fn field(self, key: &str) -> Option<Option<Node<'a>>> {
        if let Some(p) = self.property(key) {
            return Some(Some(p));
        }
        match self.additional()? {
            Additional::Bool => Some(None),
            Additional::Schema(s) => Some(Some(s)),
        }
    }

    /// `items` as a single schema (tuple-form `items` arrays are not structural; ignored).
    pub(crate) fn items(self) -> Option<Node<'a>> {
        self.get("items").filter(|v| v.is_object()).map(Node)
    }

    pub(crate) fn preserve_unknown(self) -> bool {
        self.flag("x-kubernetes-preserve-unknown-fields")
    }

    pub(crate) fn embedded(self) -> bool {
        self.flag("x-kubernetes-embedded-resource")
    }

    pub(crate) fn int_or_string(self) -> bool {
        self.flag("x-kubernetes-int-or-string")
    }

    pub(crate) fn nullable(self) -> bool {
        self.flag("nullable")
    }

    /// The `default`, if any (a `default: null` counts as none, as in Go where it decodes to nil).
    pub(crate) fn default(self) -> Option<&'a Value> {
        self.get("default").filter(|v| !v.is_null())
    }

    pub(crate) fn raw(self, key: &str) -> Option<&'a Value> {
        self.get(key)
    }
}
