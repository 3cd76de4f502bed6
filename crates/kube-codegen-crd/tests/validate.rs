//! `validate_crd` against the invalid CRDs of `testdata/invalid-crds/` (each names the causes it
//! must produce), the valid CRDs of `testdata/crds/` and the public corpus (no violations), and
//! hostile input (no panic, no stack overflow).

use std::path::{Path, PathBuf};

use kube_codegen_crd::validate::{Report, validate_crd};
use proptest::prelude::*;
use serde_json::{Map, Value, json};

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out);
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            out.push(path);
        }
    }
}

fn sorted_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    files_under(dir, &mut files);
    files.sort();
    files
}

/// A file's documents, read by the crate's own reader (as the generator and the server read it).
fn documents(path: &Path) -> Vec<Value> {
    kube_codegen_crd::read::read_documents(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .into_iter()
        .map(|d| d.value)
        .collect()
}

fn is_crd(doc: &Value) -> bool {
    doc.get("kind").and_then(Value::as_str) == Some("CustomResourceDefinition")
        && doc
            .get("apiVersion")
            .and_then(Value::as_str)
            .is_some_and(|v| v.starts_with("apiextensions.k8s.io/"))
}

fn describe(report: &Report) -> String {
    report
        .violations
        .iter()
        .map(|v| {
            format!(
                "  {}{}",
                v.cause,
                if v.structural { "  [structural]" } else { "" }
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// One `testdata/invalid-crds/<nn>-<rule>.yaml` case: `# expect: <field>: <message>` lines (see
/// `kube_codegen_crd::cases`), optionally `# structural: true`, then one CRD document.
struct Case {
    expect: Vec<String>,
    structural: bool,
    generated: bool,
    doc: Value,
}

fn read_case(path: &Path) -> Case {
    let text = std::fs::read_to_string(path).unwrap();
    let header = kube_codegen_crd::cases::parse_invalid_case(&text);
    Case {
        expect: header.expect,
        structural: header.structural,
        generated: header.generated,
        doc: documents(path).swap_remove(0),
    }
}

#[test]
fn expectation_escapes() {
    use kube_codegen_crd::cases::unescape;
    assert_eq!(unescape("a\\nb"), "a\nb");
    assert_eq!(unescape("a\\\\nb"), "a\\nb");
    assert_eq!(unescape("(\\.[a-z])"), "(\\.[a-z])");
}

#[test]
fn invalid_crds_produce_the_expected_causes() {
    let dir = repo_root().join("testdata/invalid-crds");
    let files = sorted_files(&dir);
    assert!(
        files.len() >= 45,
        "only {} cases in {}",
        files.len(),
        dir.display()
    );
    let mut failures = Vec::new();
    for path in &files {
        let case = read_case(path);
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if case.expect.is_empty() {
            failures.push(format!("{name}: no `# expect:` line"));
            continue;
        }
        let report = validate_crd(&case.doc);
        for e in &case.expect {
            match report.violations.iter().find(|v| &v.cause.to_string() == e) {
                None => failures.push(format!(
                    "{name}: missing\n  {e}\ngot:\n{}",
                    describe(&report)
                )),
                Some(v) if v.structural != case.structural => failures.push(format!(
                    "{name}: {e}\n  structural is {}, expected {}",
                    v.structural, case.structural
                )),
                Some(_) => {}
            }
        }
        let outside = report
            .violations
            .iter()
            .all(|v| !v.affects_generated_code());
        if outside != case.generated {
            failures.push(format!(
                "{name}: every violation outside the generated code is {outside}, `# generated: true` says {}\n{}",
                case.generated,
                describe(&report)
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// What a generator may warn about and go on: conversion (a webhook's service or caBundle left to
/// be filled at install time), annotations (the approval of protected groups), labels, status,
/// selectable fields; and what it must refuse: names, versions, scope, schemas, subresources,
/// printer columns.
#[test]
fn violations_say_whether_they_touch_the_generated_code() {
    let crd = |group: &str, annotations: Value, spec_extra: Value| {
        let mut doc = json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": format!("widgets.{group}"), "annotations": annotations},
            "spec": {
                "group": group,
                "scope": "Namespaced",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                        "spec": {"type": "object", "properties": {"size": {"type": "integer"}}}
                    }}}
                }]
            }
        });
        for (k, v) in spec_extra.as_object().unwrap() {
            doc["spec"][k] = v.clone();
        }
        doc
    };
    let unfilled_webhook = json!({"conversion": {
        "strategy": "Webhook",
        "webhook": {
            "clientConfig": {"service": {"name": "", "namespace": ""}, "caBundle": ""},
            "conversionReviewVersions": ["v1"]
        }
    }});
    for (what, doc) in [
        (
            "unfilled webhook service",
            crd("example.com", json!({}), unfilled_webhook),
        ),
        (
            "review versions",
            crd(
                "example.com",
                json!({}),
                json!({"conversion": {"strategy": "Webhook", "webhook": {
                    "clientConfig": {"url": "https://conv.example.com/"},
                    "conversionReviewVersions": ["v9", "v9"]
                }}}),
            ),
        ),
        (
            "unapproved protected group",
            crd("apps.k8s.io", json!({}), json!({})),
        ),
        (
            "bad annotation key",
            crd("example.com", json!({"a/b/c": "x"}), json!({})),
        ),
        (
            "conversion of the wrong JSON type",
            crd("example.com", json!({}), json!({"conversion": "Webhook"})),
        ),
    ] {
        let report = validate_crd(&doc);
        assert!(!report.is_ok(), "{what}: the server refuses it");
        for v in &report.violations {
            assert!(!v.affects_generated_code(), "{what}: {}", v.cause);
        }
    }
    for (what, doc) in [
        (
            "bad scope",
            crd("example.com", json!({}), json!({"scope": "Galaxy"})),
        ),
        (
            "printer column",
            crd(
                "example.com",
                json!({}),
                json!({"versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object"}},
                    "additionalPrinterColumns": [{"name": "Size", "type": "bogus", "jsonPath": ".spec.size"}]
                }]}),
            ),
        ),
        (
            "no storage version",
            crd(
                "example.com",
                json!({}),
                json!({"versions": [{
                    "name": "v1", "served": true, "storage": false,
                    "schema": {"openAPIV3Schema": {"type": "object"}}
                }]}),
            ),
        ),
        (
            "kind",
            crd(
                "example.com",
                json!({}),
                json!({"names": {"plural": "widgets", "kind": "wid get"}}),
            ),
        ),
    ] {
        let report = validate_crd(&doc);
        assert!(
            report.violations.iter().any(|v| v.affects_generated_code()),
            "{what}:\n{}",
            describe(&report)
        );
    }
}

/// kube-apiserver 1.21 defaulted a v1beta1 CRD's missing scope to Namespaced (v1 has no such
/// default), so such a file was accepted.
#[test]
fn v1beta1_scope_defaults_to_namespaced() {
    let v1beta1 = json!({
        "apiVersion": "apiextensions.k8s.io/v1beta1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "version": "v1",
            "names": {"plural": "widgets", "kind": "Widget"},
            "validation": {"openAPIV3Schema": {"type": "object"}}
        }
    });
    let report = validate_crd(&v1beta1);
    assert!(report.is_ok(), "{}", describe(&report));
    let v1 = json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"plural": "widgets", "kind": "Widget"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object"}}}]
        }
    });
    let causes: Vec<String> = validate_crd(&v1)
        .causes()
        .map(ToString::to_string)
        .collect();
    assert_eq!(causes, ["spec.scope: Required value"]);
}

#[test]
fn v1beta1_documents_warn_about_the_removed_api() {
    let doc = json!({
        "apiVersion": "apiextensions.k8s.io/v1beta1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "version": "v1",
            "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget"}
        }
    });
    let report = validate_crd(&doc);
    assert!(report.is_ok(), "{}", describe(&report));
    assert!(report.warnings.iter().any(|w| w
        == "apiextensions.k8s.io/v1beta1 CustomResourceDefinition is deprecated in v1.16+, unavailable in v1.22+; use apiextensions.k8s.io/v1 CustomResourceDefinition"));
}

/// Every CRD under `dir` is valid, except the listed (file name, document index, exact causes)
/// and the fixtures generated under `--lenient` (which must be invalid).
fn assert_all_valid(dir: &Path, min_crds: usize, known_invalid: &[(&str, usize, &[&str])]) {
    let mut failures = Vec::new();
    let mut crds = 0;
    for path in sorted_files(dir) {
        let file = path.file_name().unwrap().to_string_lossy().to_string();
        // A fixture generated under `--lenient` is there because a server refuses it: each of
        // its CRDs must be refused, for at least one cause.
        let lenient = std::fs::read_to_string(&path)
            .unwrap()
            .lines()
            .next()
            .is_some_and(|l| l.starts_with("# kube-codegen-flags:") && l.contains("--lenient"));
        for (i, doc) in documents(&path).iter().enumerate() {
            if !is_crd(doc) {
                continue;
            }
            crds += 1;
            let report = validate_crd(doc);
            if lenient {
                if report.is_ok() {
                    failures.push(format!(
                        "{} (document {i}): a --lenient fixture the server would accept",
                        path.display()
                    ));
                }
                continue;
            }
            let got: Vec<String> = report.causes().map(ToString::to_string).collect();
            let expected: Vec<String> = known_invalid
                .iter()
                .find(|(f, d, _)| *f == file && *d == i)
                .map(|(_, _, causes)| causes.iter().map(|c| c.to_string()).collect())
                .unwrap_or_default();
            if got != expected {
                failures.push(format!(
                    "{} (document {i}):\n{}",
                    path.display(),
                    describe(&report)
                ));
            }
        }
    }
    assert!(crds >= min_crds, "only {crds} CRDs under {}", dir.display());
    assert!(
        failures.is_empty(),
        "{} of {crds} CRDs rejected:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

#[test]
fn testdata_crds_are_valid() {
    assert_all_valid(&repo_root().join("testdata/crds"), 20, &[]);
}

#[test]
fn public_corpus_crds_are_valid() {
    let dir = repo_root().join("../shared/corpus/public/crds");
    if !dir.is_dir() {
        // Straight to stderr: the harness hides `eprintln!` of a passing test, and a skip must show.
        // The corpus is optional (CI runs without it too), so its absence is no failure.
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "SKIPPED public_corpus_crds_are_valid: {} not present",
            dir.display()
        );
        return;
    }
    assert_all_valid(&dir, 100, &[]);
}

fn object<const N: usize>(entries: [(&str, Value); N]) -> Value {
    Value::Object(
        entries
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
    )
}

/// A CRD whose schema nests `depth` levels of `properties`, built without recursion.
fn deeply_nested_crd(depth: usize) -> Value {
    let mut schema = json!({"type": "string"});
    for _ in 0..depth {
        // moved, not serialized (`json!` would copy the value on every level)
        schema = object([
            ("type", json!("object")),
            ("properties", object([("a", schema)])),
        ]);
    }
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "deeps.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "deeps", "kind": "Deep"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": schema}}]
        }
    })
}

/// Runs `validate_crd` on a small (1 MiB) stack while the hostile value, whose own drop recurses,
/// lives on a big one.
fn validate_on_small_stack(build: impl FnOnce() -> Value + Send + 'static) -> Report {
    std::thread::Builder::new()
        .stack_size(512 << 20)
        .spawn(move || {
            let value = build();
            let report = std::thread::scope(|s| {
                std::thread::Builder::new()
                    .stack_size(1 << 20)
                    .spawn_scoped(s, || validate_crd(&value))
                    .unwrap()
                    .join()
                    .unwrap()
            });
            drop(value);
            report
        })
        .unwrap()
        .join()
        .unwrap()
}

#[test]
fn hostile_nesting_is_bounded() {
    let report = validate_on_small_stack(|| deeply_nested_crd(10_000));
    assert!(
        report
            .causes()
            .any(|c| c.message.contains("must not be nested more than")),
        "{}",
        describe(&report)
    );
    let report = validate_on_small_stack(|| {
        let mut v = json!(1);
        for _ in 0..10_000 {
            v = object([("a", Value::Array(vec![v]))]);
        }
        let mut crd = deeply_nested_crd(3);
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["a"]["default"] =
            v.clone();
        crd["spec"]["names"] = v.clone();
        crd["metadata"]["labels"] = v;
        crd
    });
    assert!(!report.is_ok());
    let report = validate_on_small_stack(|| {
        let mut crd = deeply_nested_crd(2);
        let rule = format!("{}self{}", "(".repeat(10_000), ")".repeat(10_000));
        crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["x-kubernetes-validations"] =
            json!([{"rule": rule}]);
        crd
    });
    assert!(
        report
            .causes()
            .any(|c| c.message.contains("expression recursion limit exceeded")),
        "{}",
        describe(&report)
    );
    let report = validate_on_small_stack(|| deeply_nested_crd(20));
    assert!(report.is_ok(), "{}", describe(&report));
}

const KEYS: &[&str] = &[
    "apiVersion",
    "kind",
    "metadata",
    "name",
    "spec",
    "group",
    "names",
    "plural",
    "singular",
    "kind",
    "listKind",
    "shortNames",
    "scope",
    "versions",
    "served",
    "storage",
    "schema",
    "openAPIV3Schema",
    "type",
    "properties",
    "items",
    "additionalProperties",
    "default",
    "enum",
    "required",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "nullable",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-int-or-string",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
    "rule",
    "message",
    "messageExpression",
    "fieldPath",
    "reason",
    "optionalOldSelf",
    "pattern",
    "subresources",
    "status",
    "scale",
    "specReplicasPath",
    "additionalPrinterColumns",
    "jsonPath",
    "JSONPath",
    "conversion",
    "strategy",
    "webhook",
    "clientConfig",
    "service",
    "url",
    "validation",
    "version",
    "selectableFields",
    "$ref",
    "preserveUnknownFields",
    "deprecated",
    "deprecationWarning",
    "labels",
    "annotations",
    "priority",
];

const STRINGS: &[&str] = &[
    "",
    "object",
    "string",
    "array",
    "integer",
    "number",
    "boolean",
    "null",
    "map",
    "set",
    "atomic",
    "granular",
    "v1",
    "v1beta1",
    "Namespaced",
    "Cluster",
    "Webhook",
    "None",
    "self.a > 0",
    "self.all(x, x)",
    "((",
    "oldSelf",
    ".spec.replicas",
    ".status.x",
    "example.com",
    "a.b",
    "foo",
    "FieldValueInvalid",
    "(abc",
    "[a-z]+",
    "\u{0}",
];

fn hostile_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>()
            .prop_filter("finite", |f| f.is_finite())
            .prop_map(|f| json!(f)),
        prop::sample::select(STRINGS).prop_map(|s| json!(s)),
        ".{0,12}".prop_map(Value::String),
    ];
    leaf.prop_recursive(12, 256, 8, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((prop::sample::select(KEYS), inner), 0..8).prop_map(|entries| {
                let mut m = Map::new();
                for (k, v) in entries {
                    m.insert(k.to_string(), v);
                }
                Value::Object(m)
            }),
        ]
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_hostile_documents(
        api in prop::sample::select(&["apiextensions.k8s.io/v1", "apiextensions.k8s.io/v1beta1", "v1"][..]),
        spec in hostile_value(),
        metadata in hostile_value(),
        anything in hostile_value(),
    ) {
        let doc = json!({"apiVersion": api, "kind": "CustomResourceDefinition", "metadata": metadata, "spec": spec});
        let _ = validate_crd(&doc);
        let _ = validate_crd(&anything);
    }

    #[test]
    fn never_panics_on_hostile_schemas(schema in hostile_value(), version in hostile_value()) {
        let mut doc = deeply_nested_crd(1);
        doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema;
        let mut other = deeply_nested_crd(1);
        other["spec"]["versions"] = json!([version]);
        let _ = validate_crd(&doc);
        let _ = validate_crd(&other);
    }
}
