//! The data-loss lint of CRDs served in several versions without conversion.
//!
//! Under `spec.conversion.strategy: None` (the default) kube-apiserver converts between versions
//! by rewriting `apiVersion` only, and then prunes the object by the target version's
//! structural schema (`schemaCoercingConverter.ConvertToVersion` in apiextensions-apiserver).
//! So when served versions' schemas differ, fields vanish silently: an object written in a
//! version other than the storage version loses, when stored, every field the storage schema
//! lacks; an object read in another version lacks every field that version's schema lacks (and
//! a client writing it back in that version erases them from storage). This module finds those
//! fields, per served version against the storage version, both ways. It only warns: the server
//! accepts such CRDs, and the loss may be intended.
//!
//! Paths use the conversion hooks' notation: `spec.deploymentName`, `[]` for list items, `{}`
//! for map values, `.*` for the undeclared fields a `x-kubernetes-preserve-unknown-fields`
//! node keeps (`*` alone at the root).

use kube_codegen_crd::Crd;
use kube_codegen_crd::schema::{AdditionalProperties, Schema};
use serde_json::Value;

/// Paths listed per warning before the rest is counted.
const MAX_PATHS: usize = 20;

/// Warnings for `crd`, whose document [`converts_by_apiversion_and_prunes`] said yes to.
pub fn lint(crd: &Crd) -> Vec<String> {
    let Some(storage) = crd.versions.iter().find(|v| v.storage) else {
        return Vec::new();
    };
    // The versions served with a schema of their own; most CRDs have none, and then no schema
    // is parsed here.
    let served: Vec<_> = crd
        .versions
        .iter()
        .filter(|v| {
            v.served
                && v.name != storage.name
                && !std::sync::Arc::ptr_eq(&v.raw_schema, &storage.raw_schema)
        })
        .collect();
    if served.is_empty() {
        return Vec::new();
    }
    let Ok(stored) = parse(&storage.raw_schema) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    let place = format!(
        "{}: document {}: CRD {}",
        crd.source.display(),
        crd.doc_index,
        crd.name
    );
    for v in served {
        let Ok(other) = parse(&v.raw_schema) else {
            continue;
        };
        let why = format!(
            "serves {} and {} (the storage version) with different schemas under spec.conversion.strategy: None (the API server converts by rewriting apiVersion only, then prunes by the other version's schema)",
            v.name, storage.name
        );
        let written = dropped(other.as_ref(), stored.as_ref());
        if !written.is_empty() {
            out.push(format!(
                "{place} {why}: an object written as {} loses {} when stored as {}",
                v.name,
                list(&written),
                storage.name
            ));
        }
        let read = dropped(stored.as_ref(), other.as_ref());
        if !read.is_empty() {
            out.push(format!(
                "{place} {why}: an object read as {} lacks {}, which only {} declares (and writing it back as {} erases them)",
                v.name,
                list(&read),
                storage.name,
                v.name
            ));
        }
    }
    if !out.is_empty() {
        out.push(format!(
            "{place}: to keep every field, make the schemas agree or serve a conversion webhook (spec.conversion.strategy: Webhook; `--emit conversion` generates the conversions and the runtime's webhook Converter serves them)"
        ));
    }
    out
}

/// Whether the CRD document's `spec.conversion.strategy` is `None` or absent, with pruning on:
/// v1 always prunes, v1beta1 only with `spec.preserveUnknownFields: false`.
pub fn converts_by_apiversion_and_prunes(doc: &Value) -> bool {
    let strategy = doc
        .pointer("/spec/conversion/strategy")
        .and_then(Value::as_str);
    if !matches!(strategy, None | Some("None")) {
        return false;
    }
    let v1beta1 =
        doc.get("apiVersion").and_then(Value::as_str) == Some("apiextensions.k8s.io/v1beta1");
    let preserve = doc
        .pointer("/spec/preserveUnknownFields")
        .and_then(Value::as_bool)
        .unwrap_or(v1beta1);
    !preserve
}

/// `None` for a version without a schema (everything is kept).
fn parse(schema: &Value) -> Result<Option<Schema<'_>>, ()> {
    if schema.is_null() {
        return Ok(None);
    }
    Schema::parse(schema).map(Some).map_err(|_| ())
}

fn list(paths: &[String]) -> String {
    let mut s = paths
        .iter()
        .take(MAX_PATHS)
        .cloned()
        .collect::<Vec<_>>()
        .join(", ");
    if paths.len() > MAX_PATHS {
        s.push_str(&format!(" and {} more", paths.len() - MAX_PATHS));
    }
    s
}

/// The paths of values an object valid for `from` loses when pruned by `to` (`None`: no schema,
/// nothing pruned).
fn dropped(from: Option<&Schema<'_>>, to: Option<&Schema<'_>>) -> Vec<String> {
    let (Some(from), Some(to)) = (from, to) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    walk(from, to, "", true, &mut out);
    out
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() {
        name.to_string()
    } else {
        format!("{path}.{name}")
    }
}

/// Whether `to` keeps an undeclared field at its level.
fn keeps_unknown(to: &Schema<'_>) -> bool {
    to.preserve_unknown_fields
        || matches!(
            to.additional_properties,
            Some(AdditionalProperties::Bool(true))
        )
}

fn walk(from: &Schema<'_>, to: &Schema<'_>, path: &str, root: bool, out: &mut Vec<String>) {
    let to_values = match &to.additional_properties {
        Some(AdditionalProperties::Schema(s)) => Some(&**s),
        _ => None,
    };
    for (name, f) in &from.properties {
        // Always kept: the object's identity at the root, an embedded resource's own.
        if (root || to.embedded_resource) && matches!(*name, "apiVersion" | "kind" | "metadata") {
            continue;
        }
        let here = join(path, name);
        match to.properties.iter().find(|(n, _)| n == name) {
            Some((_, t)) => walk(f, t, &here, false, out),
            None => match to_values {
                Some(t) => walk(f, t, &here, false, out),
                None if keeps_unknown(to) => {}
                None => out.push(here),
            },
        }
    }
    // Values under keys `from` does not declare: a map's, or what it preserves.
    let from_values = match &from.additional_properties {
        Some(AdditionalProperties::Schema(s)) => Some(&**s),
        _ => None,
    };
    if let Some(f) = from_values {
        let here = format!("{path}{{}}");
        match to_values {
            Some(t) => walk(f, t, &here, false, out),
            None if keeps_unknown(to) => {}
            // Declared keys of `to` are kept, the others are not: the map loses entries.
            None => out.push(here),
        }
    } else if keeps_unknown(from) && !keeps_unknown(to) && to_values.is_none() {
        out.push(join(path, "*"));
    }
    if let (Some(f), Some(t)) = (&from.items, &to.items) {
        walk(f, t, &format!("{path}[]"), false, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    /// A CRD serving `v1alpha1` (`alpha`'s spec properties) and `v1beta1` (`beta`'s, storage),
    /// `extra` appended to `spec`.
    fn crd(alpha: &str, beta: &str, extra: &str) -> (Crd, Value) {
        let text = format!(
            "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: foos.samplecontroller.k8s.io
spec:
  group: samplecontroller.k8s.io
  scope: Namespaced
  names: {{kind: Foo, plural: foos}}
{extra}  versions:
  - name: v1alpha1
    served: true
    storage: false
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties: {alpha}
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties: {beta}
"
        );
        let doc = kube_codegen_crd::read::parse_documents(Path::new("foo.yaml"), &text)
            .unwrap()
            .remove(0);
        let value = doc.value.clone();
        (
            Crd::from_value(Path::new("foo.yaml"), 0, doc.value).unwrap(),
            value,
        )
    }

    fn warnings(alpha: &str, beta: &str, extra: &str) -> Vec<String> {
        let (crd, doc) = crd(alpha, beta, extra);
        if converts_by_apiversion_and_prunes(&doc) {
            lint(&crd)
        } else {
            Vec::new()
        }
    }

    const SAMPLE_ALPHA: &str = "{deploymentName: {type: string}, replicas: {type: integer}}";
    const SAMPLE_BETA: &str = "{deployment: {type: object, properties: {name: {type: string}}}, replicas: {type: integer}}";

    #[test]
    fn names_what_each_direction_drops_under_strategy_none() {
        for extra in ["", "  conversion: {strategy: None}\n"] {
            let w = warnings(SAMPLE_ALPHA, SAMPLE_BETA, extra);
            assert_eq!(w.len(), 3, "{w:#?}");
            assert!(
                w[0].starts_with("foo.yaml: document 0: CRD foos.samplecontroller.k8s.io serves v1alpha1 and v1beta1 (the storage version)")
                    && w[0].ends_with(
                        "an object written as v1alpha1 loses spec.deploymentName when stored as v1beta1"
                    ),
                "{}",
                w[0]
            );
            assert!(
                w[1].contains(
                    "an object read as v1alpha1 lacks spec.deployment, which only v1beta1 declares"
                ),
                "{}",
                w[1]
            );
            assert!(w[2].contains("strategy: Webhook"), "{}", w[2]);
        }
    }

    #[test]
    fn says_nothing_when_nothing_is_pruned() {
        // A webhook converts; the same schemas; v1beta1's default keeps unknown fields.
        let webhook = "  conversion:\n    strategy: Webhook\n    webhook: {conversionReviewVersions: [v1], clientConfig: {url: \"https://x.example.com/convert\"}}\n";
        assert!(warnings(SAMPLE_ALPHA, SAMPLE_BETA, webhook).is_empty());
        assert!(warnings(SAMPLE_ALPHA, SAMPLE_ALPHA, "").is_empty());
        let (crd, mut doc) = crd(SAMPLE_ALPHA, SAMPLE_BETA, "");
        doc["apiVersion"] = "apiextensions.k8s.io/v1beta1".into();
        assert!(!converts_by_apiversion_and_prunes(&doc));
        doc["spec"]["preserveUnknownFields"] = false.into();
        assert!(converts_by_apiversion_and_prunes(&doc));
        assert_eq!(lint(&crd).len(), 3);
    }

    #[test]
    fn an_unserved_version_is_never_written_or_read() {
        let (mut crd, _) = crd(SAMPLE_ALPHA, SAMPLE_BETA, "");
        crd.versions[0].served = false;
        assert!(lint(&crd).is_empty());
    }

    #[test]
    fn follows_lists_maps_and_what_the_target_preserves() {
        let alpha = "{items: {type: array, items: {type: object, properties: {a: {type: string}, b: {type: string}}}}, \
             labels: {type: object, additionalProperties: {type: object, properties: {x: {type: string}, other: {type: string}}}}, \
             free: {type: object, x-kubernetes-preserve-unknown-fields: true}, \
             kept: {type: object, properties: {z: {type: string}}}}";
        let beta = "{items: {type: array, items: {type: object, properties: {a: {type: string}}}}, \
             labels: {type: object, additionalProperties: {type: object, properties: {x: {type: string}}}}, \
             free: {type: object, properties: {known: {type: string}}}, \
             kept: {type: object, x-kubernetes-preserve-unknown-fields: true}}";
        let w = warnings(alpha, beta, "");
        assert!(
            w[0].ends_with(
                "an object written as v1alpha1 loses spec.free.*, spec.items[].b, spec.labels{}.other when stored as v1beta1"
            ),
            "{w:#?}"
        );
        // v1beta1's spec.free.known lands in v1alpha1's free-form object, v1alpha1's spec.kept.z
        // in v1beta1's; what v1beta1 keeps undeclared in spec.kept, v1alpha1 prunes.
        assert_eq!(w.len(), 3, "{w:#?}");
        assert!(
            w[1].contains("an object read as v1alpha1 lacks spec.kept.*, which only"),
            "{w:#?}"
        );
    }

    #[test]
    fn long_lists_are_cut() {
        let many: Vec<String> = (0..25)
            .map(|i| format!("f{i:02}: {{type: string}}"))
            .collect();
        let alpha = format!("{{{}}}", many.join(", "));
        let w = warnings(&alpha, "{}", "");
        assert!(w[0].contains("spec.f19 and 5 more when stored"), "{}", w[0]);
    }
}
