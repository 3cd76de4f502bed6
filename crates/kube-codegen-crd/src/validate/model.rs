//! The CustomResourceDefinition as kube-apiserver validates it: the *internal* apiextensions
//! type, after decoding, defaulting and conversion from v1 (per-version fields identical across
//! all versions hoisted to the top level) or v1beta1.

use std::collections::BTreeMap;

use serde_json::Value;

/// Which served API the document was written against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flavor {
    V1,
    V1beta1,
}

#[derive(Debug, Default)]
pub(crate) struct Crd {
    pub name: String,
    pub generate_name: String,
    pub labels: Vec<(String, String)>,
    pub annotations: Vec<(String, String)>,
    pub spec: Spec,
}

#[derive(Debug, Default)]
pub(crate) struct Spec {
    pub group: String,
    /// The internal top-level version (v1: `versions[0].name`).
    pub version: String,
    pub names: Names,
    pub scope: String,
    pub validation: Option<Validation>,
    pub subresources: Option<Subresources>,
    pub versions: Vec<Version>,
    pub columns: Vec<Column>,
    pub selectable_fields: Vec<SelectableField>,
    pub conversion: Option<Conversion>,
    pub preserve_unknown_fields: Option<bool>,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Names {
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub kind: String,
    pub list_kind: String,
    pub categories: Vec<String>,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Version {
    pub name: String,
    pub served: bool,
    pub storage: bool,
    pub deprecated: bool,
    pub deprecation_warning: Option<String>,
    pub schema: Option<Validation>,
    pub subresources: Option<Subresources>,
    pub columns: Vec<Column>,
    pub selectable_fields: Vec<SelectableField>,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Validation {
    pub open_api_v3_schema: Option<Box<Schema>>,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Subresources {
    pub status: bool,
    pub scale: Option<Scale>,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Scale {
    pub spec_replicas_path: String,
    pub status_replicas_path: String,
    pub label_selector_path: Option<String>,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Column {
    pub name: String,
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub json_path: String,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct SelectableField {
    pub json_path: String,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Conversion {
    pub strategy: String,
    pub webhook_client_config: Option<WebhookClientConfig>,
    pub conversion_review_versions: Vec<String>,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct WebhookClientConfig {
    pub url: Option<String>,
    pub service: Option<ServiceReference>,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct ServiceReference {
    pub namespace: String,
    pub name: String,
    pub path: Option<String>,
    pub port: i64,
}

/// `items`: one schema, or (not allowed, but readable) an array of schemas.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Items {
    Schema(Box<Schema>),
    Array(Vec<Schema>),
}

/// `additionalProperties` / `additionalItems`.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SchemaOrBool {
    pub allows: bool,
    pub schema: Option<Box<Schema>>,
}

/// A `dependencies` entry.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SchemaOrStringArray {
    pub schema: Option<Box<Schema>>,
    pub property: Vec<String>,
}

#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct ExternalDocs {
    pub description: String,
    pub url: String,
}

/// One `x-kubernetes-validations` entry.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct ValidationRule {
    pub rule: String,
    pub message: String,
    pub message_expression: String,
    pub reason: Option<String>,
    pub field_path: String,
    pub optional_old_self: Option<bool>,
}

/// `JSONSchemaProps`. Slices and maps follow Go's semantic equality (nil == empty).
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct Schema {
    pub id: String,
    pub schema: String,
    pub ref_: Option<String>,
    pub description: String,
    pub type_: String,
    pub nullable: bool,
    pub format: String,
    pub title: String,
    pub default: Option<Value>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub pattern: String,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub multiple_of: Option<f64>,
    pub enum_: Vec<Value>,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub required: Vec<String>,
    pub items: Option<Items>,
    pub all_of: Vec<Schema>,
    pub one_of: Vec<Schema>,
    pub any_of: Vec<Schema>,
    pub not: Option<Box<Schema>>,
    pub properties: BTreeMap<String, Schema>,
    pub additional_properties: Option<SchemaOrBool>,
    pub pattern_properties: BTreeMap<String, Schema>,
    pub dependencies: BTreeMap<String, SchemaOrStringArray>,
    pub additional_items: Option<SchemaOrBool>,
    pub definitions: BTreeMap<String, Schema>,
    pub external_docs: Option<ExternalDocs>,
    pub example: Option<Value>,
    pub x_preserve_unknown_fields: Option<bool>,
    pub x_embedded_resource: bool,
    pub x_int_or_string: bool,
    pub x_list_map_keys: Vec<String>,
    pub x_list_type: Option<String>,
    pub x_map_type: Option<String>,
    pub x_validations: Vec<ValidationRule>,
    /// Not read (nested too deep, or not an object): every rule skips this node.
    pub unreadable: bool,
}

impl Schema {
    /// `x-kubernetes-preserve-unknown-fields: true`.
    pub(crate) fn preserves_unknown(&self) -> bool {
        self.x_preserve_unknown_fields == Some(true)
    }

    /// The single `items` schema, if that is what `items` is.
    pub(crate) fn items_schema(&self) -> Option<&Schema> {
        match &self.items {
            Some(Items::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// The `additionalProperties` schema, if any.
    pub(crate) fn additional_properties_schema(&self) -> Option<&Schema> {
        self.additional_properties
            .as_ref()
            .and_then(|a| a.schema.as_deref())
    }

    /// True if this node or any node below it satisfies `pred` (bounded by the decoded depth).
    pub(crate) fn any(&self, pred: &dyn Fn(&Schema) -> bool) -> bool {
        if pred(self) {
            return true;
        }
        match &self.items {
            Some(Items::Schema(s)) if s.any(pred) => return true,
            Some(Items::Array(a)) if a.iter().any(|s| s.any(pred)) => return true,
            _ => {}
        }
        if self.all_of.iter().any(|s| s.any(pred))
            || self.any_of.iter().any(|s| s.any(pred))
            || self.one_of.iter().any(|s| s.any(pred))
            || self.not.as_ref().is_some_and(|s| s.any(pred))
            || self.properties.values().any(|s| s.any(pred))
            || self.pattern_properties.values().any(|s| s.any(pred))
            || self.definitions.values().any(|s| s.any(pred))
        {
            return true;
        }
        if self
            .additional_properties
            .as_ref()
            .and_then(|a| a.schema.as_ref())
            .is_some_and(|s| s.any(pred))
            || self
                .additional_items
                .as_ref()
                .and_then(|a| a.schema.as_ref())
                .is_some_and(|s| s.any(pred))
        {
            return true;
        }
        self.dependencies
            .values()
            .any(|d| d.schema.as_ref().is_some_and(|s| s.any(pred)))
    }
}
