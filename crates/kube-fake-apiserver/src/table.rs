//! `Table` output (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`) with printer columns.
//! (STUB: signatures fixed, bodies being written.)
use serde_json::Value;

/// One additionalPrinterColumn of a CRD version (v1 spelling: `jsonPath`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PrinterColumn {
    pub name: String,
    /// `string`, `integer`, `number`, `boolean`, `date`
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i32,
    pub json_path: String,
}

/// Builds a `meta.k8s.io/v1` `Table` for `objects`. No columns means the default `Name` + `Age` columns.
/// `include_object` is the `includeObject` query parameter (`None`, `Metadata` (default), `Object`).
/// `list_meta` is copied into the table's `metadata` (resourceVersion, continue).
pub fn to_table(_columns: &[PrinterColumn], objects: &[Value], _include_object: &str, list_meta: Value) -> Value {
    serde_json::json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": list_meta, "columnDefinitions": [], "rows": objects.iter().map(|o| serde_json::json!({"cells": [], "object": o})).collect::<Vec<_>>()})
}
