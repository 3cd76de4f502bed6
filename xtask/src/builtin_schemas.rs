//! `cargo xtask builtin-schemas <path>`: turn the Kubernetes 1.35 definitions as the PyPI package
//! `kubernetes-validate` 1.37.0 ships them (`kubernetes-json-schema/v1.35.0-local/_definitions.json`,
//! JSON Schema flavoured) back into OpenAPI v2 definitions, as kube-apiserver's `/openapi/v2`
//! serves them, and write them to `crates/kube-fake-apiserver/data/builtin-definitions.json`.
//!
//! What the JSON Schema flavour added and this undoes:
//! - `"type": ["string", "null"]` → `"type": "string"`;
//! - `$ref: "#/$defs/<name>"` → `"#/definitions/<name>"`;
//! - `enum` on a kind's `apiVersion` and `kind` (kube-apiserver has none there);
//! - `IntOrString` and `Quantity` as `oneOf` of two types → the server's `type: string`
//!   (`format: int-or-string` for the former), with their descriptions, which the source lacks.
//!
//! The `x-kubernetes-*` extensions and the descriptions are kept as they are.

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::{Map, Value, json};

use crate::paths;

#[derive(clap::Args)]
pub struct Args {
    /// The `_definitions.json` of kubernetes-validate (`pip download --no-deps kubernetes-validate==1.37.0`,
    /// unzip, `kubernetes_validate/kubernetes-json-schema/v1.35.0-local/_definitions.json`).
    pub source: PathBuf,
    /// Where to write the definitions (default: the server crate's data file).
    #[arg(long)]
    pub out: Option<PathBuf>,
}

const INT_OR_STRING: &str = "io.k8s.apimachinery.pkg.util.intstr.IntOrString";
const QUANTITY: &str = "io.k8s.apimachinery.pkg.api.resource.Quantity";

pub fn run(args: &Args) -> anyhow::Result<std::process::ExitCode> {
    let text = std::fs::read_to_string(&args.source)
        .with_context(|| format!("reading {}", args.source.display()))?;
    let doc: Value = serde_json::from_str(&text).context("parsing the definitions")?;
    let Some(Value::Object(defs)) = doc.get("$defs") else {
        bail!("{}: no `$defs` object", args.source.display());
    };
    let mut out = Map::new();
    for (name, schema) in defs {
        let mut schema = schema.clone();
        let has_gvk = schema.get("x-kubernetes-group-version-kind").is_some();
        convert(&mut schema);
        if has_gvk {
            drop_kind_enums(&mut schema);
        }
        out.insert(name.clone(), schema);
    }
    out.insert(
        INT_OR_STRING.into(),
        json!({
            "description": "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML marshalling and unmarshalling, it produces or consumes the inner type.  This allows you to have, for example, a JSON field that can accept a name or number.",
            "format": "int-or-string",
            "type": "string"
        }),
    );
    out.insert(
        QUANTITY.into(),
        json!({
            "description": "Quantity is a fixed-point representation of a number. It provides convenient marshaling/unmarshaling in JSON and YAML, in addition to String() and AsInt64() accessors.",
            "type": "string"
        }),
    );
    let target = args.out.clone().unwrap_or_else(default_out);
    write(&target, &out)?;
    println!("{} definitions written to {}", out.len(), target.display());
    Ok(std::process::ExitCode::SUCCESS)
}

fn default_out() -> PathBuf {
    paths::repo_root().join("crates/kube-fake-apiserver/data/builtin-definitions.json")
}

/// One definition per line: small diffs on regeneration, a tenth of the pretty-printed size.
fn write(target: &Path, defs: &Map<String, Value>) -> anyhow::Result<()> {
    let mut text = String::from("{\n");
    let last = defs.len().saturating_sub(1);
    for (i, (name, schema)) in defs.iter().enumerate() {
        text.push_str(&serde_json::to_string(name)?);
        text.push(':');
        text.push_str(&serde_json::to_string(schema)?);
        text.push_str(if i == last { "\n" } else { ",\n" });
    }
    text.push_str("}\n");
    if let Some(dir) = target.parent() {
        std::fs::create_dir_all(dir)?;
    }
    std::fs::write(target, text).with_context(|| format!("writing {}", target.display()))
}

fn convert(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(Value::Array(types)) = m.get("type") {
                let first = types.iter().find(|t| t.as_str() != Some("null")).cloned();
                match first {
                    Some(t) => m.insert("type".into(), t),
                    None => m.remove("type"),
                };
            }
            if let Some(Value::String(r)) = m.get_mut("$ref")
                && let Some(name) = r.strip_prefix("#/$defs/")
            {
                *r = format!("#/definitions/{name}");
            }
            // Properties are names, not keywords: convert each schema under them.
            for (k, child) in m.iter_mut() {
                if k == "x-kubernetes-group-version-kind" || k == "x-kubernetes-unions" {
                    continue;
                }
                convert(child);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(convert),
        _ => {}
    }
}

fn drop_kind_enums(schema: &mut Value) {
    if let Some(Value::Object(props)) = schema.get_mut("properties") {
        for key in ["apiVersion", "kind"] {
            if let Some(Value::Object(p)) = props.get_mut(key) {
                p.remove("enum");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn undoes_the_json_schema_flavour() {
        let mut v = json!({
            "type": ["object", "null"],
            "properties": {
                "apiVersion": {"type": ["string", "null"], "enum": ["apps/v1"]},
                "spec": {"$ref": "#/$defs/io.k8s.api.apps.v1.DeploymentSpec", "description": "d"},
                "items": {"type": ["array", "null"], "items": {"$ref": "#/$defs/X"},
                          "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"]}
            },
            "x-kubernetes-group-version-kind": [{"group": "apps", "kind": "Deployment", "version": "v1"}]
        });
        convert(&mut v);
        drop_kind_enums(&mut v);
        assert_eq!(v["type"], "object");
        assert_eq!(
            v["properties"]["apiVersion"],
            json!({"type": "string"}),
            "no enum on apiVersion"
        );
        assert_eq!(
            v["properties"]["spec"]["$ref"],
            "#/definitions/io.k8s.api.apps.v1.DeploymentSpec"
        );
        assert_eq!(v["properties"]["items"]["type"], "array");
        assert_eq!(v["properties"]["items"]["items"]["$ref"], "#/definitions/X");
        assert_eq!(
            v["properties"]["items"]["x-kubernetes-list-map-keys"],
            json!(["name"])
        );
        assert_eq!(
            v["x-kubernetes-group-version-kind"][0]["kind"],
            "Deployment"
        );
    }
}
