//! Label and field selectors (STUB: signatures fixed, body being written).
use serde_json::Value;

/// Error for a selector string that does not parse; the message is what the API server returns in a 400.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(pub String);

/// A parsed `labelSelector` (`=`, `==`, `!=`, `in`, `notin`, `key`, `!key`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {}

impl LabelSelector {
    pub fn parse(_s: &str) -> Result<Self, SelectorError> {
        Ok(Self {})
    }
    /// Matches against the object's `metadata.labels`.
    pub fn matches(&self, _obj: &Value) -> bool {
        true
    }
    pub fn is_empty(&self) -> bool {
        true
    }
}

/// A parsed `fieldSelector` (`metadata.name`, `metadata.namespace`, `=`, `==`, `!=`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {}

impl FieldSelector {
    pub fn parse(_s: &str) -> Result<Self, SelectorError> {
        Ok(Self {})
    }
    pub fn matches(&self, _obj: &Value) -> bool {
        true
    }
    pub fn is_empty(&self) -> bool {
        true
    }
}
