//! The CRD normalised to the `apiextensions.k8s.io/v1` shape: v1 and v1beta1 read into one model.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::Value;

use crate::Error;

/// A CustomResourceDefinition, normalised to the `apiextensions.k8s.io/v1` shape.
#[derive(Debug, Clone)]
pub struct Crd {
    pub source: PathBuf,
    pub doc_index: usize,
    pub name: String,
    pub group: String,
    pub kind: String,
    pub plural: String,
    pub singular: Option<String>,
    pub short_names: Vec<String>,
    pub list_kind: String,
    pub categories: Vec<String>,
    pub namespaced: bool,
    pub versions: Vec<CrdVersion>,
}

#[derive(Debug, Clone)]
pub struct CrdVersion {
    pub name: String,
    pub served: bool,
    pub storage: bool,
    pub deprecated: bool,
    pub deprecation_warning: Option<String>,
    /// The raw openAPIV3Schema; shared, not copied,
    /// between v1beta1 versions that inherit the top-level schema.
    pub raw_schema: Arc<Value>,
    pub status_subresource: bool,
    pub scale: Option<Scale>,
    pub printer_columns: Vec<PrinterColumn>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Scale {
    pub spec_replicas_path: String,
    pub status_replicas_path: String,
    pub label_selector_path: Option<String>,
}

/// One `additionalPrinterColumns` entry (v1beta1's `JSONPath` read as `jsonPath`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub json_path: String,
    pub description: Option<String>,
    pub priority: i64,
    pub format: Option<String>,
}

/// What a document turned out to be, for the per-document report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Classified {
    /// An `apiextensions.k8s.io` CustomResourceDefinition.
    Crd,
    /// Not a CRD; the string says what it was, e.g. `a scalar, not an object` or
    /// `kind Deployment (apps/v1) is not a CustomResourceDefinition`.
    Other(String),
}

/// Says whether a document (already unwrapped from any `List`, see [`crate::read::flatten`]) is a
/// CRD, and if not, what it is.
pub fn classify(value: &Value) -> Classified {
    let obj = match value {
        Value::Object(obj) => obj,
        Value::Null => return Classified::Other("an empty document".into()),
        Value::Array(_) => {
            return Classified::Other("a sequence, not a Kubernetes object (a mapping)".into());
        }
        Value::String(_) | Value::Number(_) | Value::Bool(_) => {
            return Classified::Other("a scalar, not a Kubernetes object (a mapping)".into());
        }
    };
    let kind = obj.get("kind").and_then(Value::as_str).unwrap_or("");
    let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    match kind {
        "CustomResourceDefinition" if api_version.starts_with("apiextensions.k8s.io/") => {
            Classified::Crd
        }
        "" => Classified::Other("a mapping without kind".into()),
        other => Classified::Other(format!(
            "kind {other} ({api_version}) is not a CustomResourceDefinition"
        )),
    }
}

struct Ctx<'a> {
    source: &'a Path,
    index: usize,
    name: String,
}

impl Ctx<'_> {
    fn err(&self, pointer: &str, message: impl Into<String>) -> Error {
        Error::Crd {
            file: self.source.to_path_buf(),
            document: self.index,
            crd: self.name.clone(),
            pointer: pointer.to_string(),
            message: message.into(),
        }
    }
    fn str_at<'v>(&self, v: &'v Value, pointer: &str) -> Result<Option<&'v str>, Error> {
        match v.pointer(pointer) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s)),
            Some(_) => Err(self.err(pointer, "expected a string")),
        }
    }
    fn req_str<'v>(&self, v: &'v Value, pointer: &str) -> Result<&'v str, Error> {
        match self.str_at(v, pointer)? {
            Some(s) if !s.is_empty() => Ok(s),
            _ => Err(self.err(pointer, "required string is missing")),
        }
    }
    fn bool_at(&self, v: &Value, pointer: &str, default: bool) -> Result<bool, Error> {
        match v.pointer(pointer) {
            None | Some(Value::Null) => Ok(default),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(self.err(pointer, "expected a boolean")),
        }
    }
    fn str_list(&self, v: &Value, pointer: &str) -> Result<Vec<String>, Error> {
        match v.pointer(pointer) {
            None | Some(Value::Null) => Ok(Vec::new()),
            Some(Value::Array(a)) => a
                .iter()
                .enumerate()
                .map(|(i, x)| {
                    x.as_str()
                        .map(str::to_string)
                        .ok_or_else(|| self.err(&format!("{pointer}/{i}"), "expected a string"))
                })
                .collect(),
            Some(_) => Err(self.err(pointer, "expected a list of strings")),
        }
    }
}

impl Crd {
    /// Reads a CRD document (v1 or v1beta1; [`classify`] said [`Classified::Crd`]) into the model.
    /// The schemas are moved out of `value`, not copied.
    pub fn from_value(source: &Path, index: usize, value: Value) -> Result<Crd, Error> {
        parse_crd(source, index, value)
    }
}

fn parse_crd(source: &Path, index: usize, mut value: Value) -> Result<Crd, Error> {
    // Schemas are moved out of the document (they are the bulk of it) before it is read.
    let top_schema = Arc::new(
        value
            .pointer_mut("/spec/validation/openAPIV3Schema")
            .map(Value::take)
            .unwrap_or(Value::Null),
    );
    let mut own_schemas: Vec<Option<Value>> = Vec::new();
    if let Some(Value::Array(list)) = value.pointer_mut("/spec/versions") {
        for ver in list {
            own_schemas.push(
                ver.pointer_mut("/schema/openAPIV3Schema")
                    .map(Value::take)
                    .filter(|s| !s.is_null()),
            );
        }
    }
    let v = &value;
    let mut cx = Ctx {
        source,
        index,
        name: String::new(),
    };
    cx.name = cx.req_str(v, "/metadata/name")?.to_string();
    let group = cx.req_str(v, "/spec/group")?.to_string();
    let kind = cx.req_str(v, "/spec/names/kind")?.to_string();
    let plural = cx.req_str(v, "/spec/names/plural")?.to_string();
    let singular = cx.str_at(v, "/spec/names/singular")?.map(str::to_string);
    let list_kind = cx
        .str_at(v, "/spec/names/listKind")?
        .map(str::to_string)
        .unwrap_or_else(|| format!("{kind}List"));
    let short_names = cx.str_list(v, "/spec/names/shortNames")?;
    let categories = cx.str_list(v, "/spec/names/categories")?;
    let namespaced = match cx.str_at(v, "/spec/scope")? {
        None | Some("Namespaced") => true,
        Some("Cluster") => false,
        Some(other) => {
            return Err(cx.err(
                "/spec/scope",
                format!("scope must be Namespaced or Cluster, not {other:?}"),
            ));
        }
    };

    // v1beta1 top-level fields act as defaults for every version.
    let top_sub = v.pointer("/spec/subresources");
    let top_cols = v.pointer("/spec/additionalPrinterColumns");

    let mut versions = Vec::new();
    match v.pointer("/spec/versions") {
        Some(Value::Array(list)) if !list.is_empty() => {
            for (i, ver) in list.iter().enumerate() {
                let p = format!("/spec/versions/{i}");
                let name = cx.req_str(v, &format!("{p}/name"))?.to_string();
                let raw_schema = match own_schemas.get_mut(i).and_then(Option::take) {
                    Some(own) => Arc::new(own),
                    None => Arc::clone(&top_schema),
                };
                let sub = ver.get("subresources").or(top_sub);
                let cols = ver.get("additionalPrinterColumns").or(top_cols);
                versions.push(CrdVersion {
                    served: cx.bool_at(v, &format!("{p}/served"), true)?,
                    storage: cx.bool_at(v, &format!("{p}/storage"), list.len() == 1)?,
                    deprecated: cx.bool_at(v, &format!("{p}/deprecated"), false)?,
                    deprecation_warning: cx
                        .str_at(v, &format!("{p}/deprecationWarning"))?
                        .map(str::to_string),
                    raw_schema,
                    status_subresource: sub
                        .and_then(|s| s.get("status"))
                        .is_some_and(|s| !s.is_null()),
                    scale: parse_scale(&cx, sub, &p)?,
                    printer_columns: parse_columns(&cx, cols, &p)?,
                    name,
                });
            }
        }
        Some(Value::Array(_)) | None | Some(Value::Null) => {
            let Some(name) = cx.str_at(v, "/spec/version")? else {
                return Err(cx.err("/spec/versions", "the CRD lists no versions"));
            };
            versions.push(CrdVersion {
                name: name.to_string(),
                served: true,
                storage: true,
                deprecated: false,
                deprecation_warning: None,
                raw_schema: top_schema,
                status_subresource: top_sub
                    .and_then(|s| s.get("status"))
                    .is_some_and(|s| !s.is_null()),
                scale: parse_scale(&cx, top_sub, "/spec")?,
                printer_columns: parse_columns(&cx, top_cols, "/spec")?,
            });
        }
        Some(_) => return Err(cx.err("/spec/versions", "expected a list")),
    }
    Ok(Crd {
        source: source.to_path_buf(),
        doc_index: index,
        name: cx.name,
        group,
        kind,
        plural,
        singular,
        short_names,
        list_kind,
        categories,
        namespaced,
        versions,
    })
}

fn parse_scale(cx: &Ctx<'_>, sub: Option<&Value>, base: &str) -> Result<Option<Scale>, Error> {
    let Some(scale) = sub.and_then(|s| s.get("scale")).filter(|s| !s.is_null()) else {
        return Ok(None);
    };
    let p = format!("{base}/subresources/scale");
    let get = |k: &str| -> Result<Option<String>, Error> {
        match scale.get(k) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(cx.err(&format!("{p}/{k}"), "expected a string")),
        }
    };
    Ok(Some(Scale {
        spec_replicas_path: get("specReplicasPath")?.unwrap_or_default(),
        status_replicas_path: get("statusReplicasPath")?.unwrap_or_default(),
        label_selector_path: get("labelSelectorPath")?,
    }))
}

fn parse_columns(
    cx: &Ctx<'_>,
    cols: Option<&Value>,
    base: &str,
) -> Result<Vec<PrinterColumn>, Error> {
    let Some(cols) = cols.filter(|c| !c.is_null()) else {
        return Ok(Vec::new());
    };
    let p = format!("{base}/additionalPrinterColumns");
    let Some(list) = cols.as_array() else {
        return Err(cx.err(&p, "expected a list"));
    };
    let mut out = Vec::new();
    for (i, c) in list.iter().enumerate() {
        let s = |k: &str| c.get(k).and_then(Value::as_str).map(str::to_string);
        // v1beta1 spells it `JSONPath`.
        let Some(json_path) = s("jsonPath").or_else(|| s("JSONPath")) else {
            return Err(cx.err(
                &format!("{p}/{i}/jsonPath"),
                "printer column without jsonPath",
            ));
        };
        out.push(PrinterColumn {
            name: s("name")
                .ok_or_else(|| cx.err(&format!("{p}/{i}/name"), "printer column without name"))?,
            type_: s("type").unwrap_or_else(|| "string".into()),
            json_path,
            description: s("description"),
            priority: c.get("priority").and_then(Value::as_i64).unwrap_or(0),
            format: s("format"),
        });
    }
    Ok(out)
}
