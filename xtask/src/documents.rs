//! Reading YAML/JSON files that hold Kubernetes objects.

use std::path::Path;

use anyhow::{Context, Result};
use serde_json::Value;

/// Every object in a file: YAML multi-document streams and JSON files, read as kubectl reads them
/// (kube-codegen-crd's reader, shared with the generator and the in-memory API server), with
/// `kind: List` (and `*List`) wrappers flattened into their items and empty documents skipped.
pub fn load(path: &Path) -> Result<Vec<Value>> {
    let docs = kube_codegen_crd::read::read_documents(path)
        .with_context(|| format!("reading {}", path.display()))?;
    Ok(kube_codegen_crd::read::flatten(docs)
        .into_iter()
        .map(|d| d.value)
        .filter(|v| !v.is_null())
        .collect())
}

/// `(apiVersion, kind)` of an object, when both are strings.
pub fn api_version_kind(doc: &Value) -> Option<(&str, &str)> {
    Some((doc.get("apiVersion")?.as_str()?, doc.get("kind")?.as_str()?))
}

/// `namespace/name` (or `name`) of an object, for messages.
pub fn object_name(doc: &Value) -> String {
    let meta = doc.get("metadata");
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("<unnamed>");
    match meta
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
    {
        Some(ns) => format!("{ns}/{name}"),
        None => name.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flattens_lists_and_skips_empty_documents() {
        let dir = tempdir();
        let path = dir.join("x.yaml");
        std::fs::write(
            &path,
            "---\n---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: a/v1, kind: A}\n- {apiVersion: a/v1, kind: B}\n---\napiVersion: a/v1\nkind: C\n",
        )
        .unwrap();
        let docs = load(&path).unwrap();
        let kinds: Vec<_> = docs
            .iter()
            .map(|d| api_version_kind(d).unwrap().1)
            .collect();
        assert_eq!(kinds, ["A", "B", "C"]);
        std::fs::write(&path, "apiVersion: a/v1\nkind: A\nmode: 0444\nflag: yes\n").unwrap();
        let doc = &load(&path).unwrap()[0];
        assert_eq!(
            (doc["mode"].as_i64(), doc["flag"].as_bool()),
            (Some(0o444), Some(true))
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// The shared YAML table reads here exactly as kubectl sent it (`testdata/yaml/scalars.json`).
    #[test]
    fn reads_the_shared_yaml_table_as_kubectl() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../testdata/yaml");
        let docs = load(&dir.join("scalars.yaml")).unwrap();
        let expected: Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("scalars.json")).unwrap())
                .unwrap();
        assert_eq!(docs, vec![expected]);
    }

    fn tempdir() -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("xtask-documents-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir
    }
}
