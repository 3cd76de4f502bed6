//! The reader: YAML read as kubectl reads it, located errors, per-document classification.

use std::path::{Path, PathBuf};

use kube_codegen_crd::read::{self, Document};
use kube_codegen_crd::{Classified, Error, classify};
use serde_json::{Value, json};

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(rel)
}

fn parse(text: &str) -> Result<Vec<Document>, Error> {
    read::parse_documents(Path::new("input.yaml"), text)
}

fn one(text: &str) -> Value {
    let mut docs = parse(text).unwrap_or_else(|e| panic!("{text:?}: {e}"));
    assert_eq!(docs.len(), 1, "{text:?}");
    docs.remove(0).value
}

/// `scalars.json` is what `kubectl create --dry-run=client -o json -f scalars.yaml` printed
/// (kubectl v1.32): octals, YAML 1.1 booleans (as values and as keys), `~`, timestamps kept as
/// strings, whole floats sent as integers, duplicate keys resolved to the last.
#[test]
fn reads_the_scalar_table_as_kubectl_sends_it() {
    let docs = read::read_documents(&testdata("yaml/scalars.yaml")).unwrap();
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(testdata("yaml/scalars.json")).unwrap())
            .unwrap();
    assert_eq!(docs.len(), 1);
    let got = &docs[0].value;
    for (key, want) in expected["spec"].as_object().unwrap() {
        assert_eq!(&got["spec"][key], want, "spec.{key}");
    }
    assert_eq!(got, &expected);
}

#[test]
fn single_scalars() {
    assert_eq!(one("a: 0644")["a"], json!(420));
    assert_eq!(one("a: '0644'")["a"], json!("0644"));
    assert_eq!(one("a: yes")["a"], json!(true));
    assert_eq!(one("a: Off")["a"], json!(false));
    assert_eq!(one("a: ~")["a"], Value::Null);
    assert_eq!(one("a: 2001-12-14")["a"], json!("2001-12-14"));
    assert_eq!(one("a: 1.0")["a"], json!(1));
    assert_eq!(one("a: 2.5")["a"], json!(2.5));
    assert_eq!(one("a: 1_000")["a"], json!(1000));
    assert_eq!(one("x: {a: 1, a: 2}")["x"]["a"], json!(2));
    assert_eq!(one("on: x")["true"], json!("x"));
    // JSON input goes through the same number rules.
    assert_eq!(one("{\"a\": 1.0, \"b\": 0.5}"), json!({"a": 1, "b": 0.5}));
}

#[test]
fn non_finite_numbers_are_refused_with_their_place() {
    for (text, shown) in [
        ("a: 1\nb: .inf\n", "+Inf"),
        ("a: 1\nb: -.Inf\n", "-Inf"),
        ("a: 1\nb: .nan\n", "NaN"),
    ] {
        match parse(text) {
            Err(Error::Syntax {
                file,
                line,
                message,
                ..
            }) => {
                assert_eq!(file, Path::new("input.yaml"));
                assert_eq!(line, 2, "{text:?}: {message}");
                assert!(
                    message.contains(&format!("json: unsupported value: {shown}")),
                    "{message}"
                );
            }
            other => panic!("{text:?}: {other:?}"),
        }
    }
}

#[test]
fn syntax_errors_carry_file_line_and_column() {
    let err = parse("a: 1\nb: [1, 2\nc: 3\n").unwrap_err();
    let Error::Syntax { line, column, .. } = &err else {
        panic!("{err:?}")
    };
    assert!(*line >= 2 && *column > 0, "{err}");
    assert!(err.to_string().starts_with("input.yaml:"), "{err}");
    let err = parse("{\"a\": 1,\n \"b\": }").unwrap_err();
    assert!(matches!(err, Error::Syntax { line: 2, .. }), "{err:?}");
}

/// A long run of comments is valid YAML that kubectl reads; the parser's look-ahead buffer for
/// comments must not turn it into an error.
#[test]
fn long_comment_runs_read() {
    let mut text = String::from("apiVersion: v1\nkind: ConfigMap\n");
    for i in 0..2_000 {
        text.push_str(&format!("# comment line {i}\n"));
    }
    text.push_str("metadata:\n");
    for i in 0..500 {
        text.push_str(&format!("  # nested comment {i}\n"));
    }
    text.push_str("  name: x\n");
    assert_eq!(one(&text)["metadata"]["name"], json!("x"));
}

#[test]
fn documents_keep_their_index_and_lists_flatten() {
    let text = "---\napiVersion: v1\nkind: List\nitems:\n- {apiVersion: a/v1, kind: A}\n- {apiVersion: a/v1, kind: B}\n---\n42\n---\n- {apiVersion: apiextensions.k8s.io/v1, kind: CustomResourceDefinition}\n---\nplain\n---\n{kind: C}\n";
    let docs = read::flatten(parse(text).unwrap());
    let shown: Vec<(usize, String)> = docs
        .iter()
        .map(|d| {
            let what = match classify(&d.value) {
                Classified::Crd => "crd".to_string(),
                Classified::Other(w) => w,
            };
            (d.index, what)
        })
        .collect();
    assert_eq!(
        shown,
        [
            (
                0,
                "kind A (a/v1) is not a CustomResourceDefinition".to_string()
            ),
            (
                0,
                "kind B (a/v1) is not a CustomResourceDefinition".to_string()
            ),
            (
                1,
                "a scalar, not a Kubernetes object (a mapping)".to_string()
            ),
            (
                2,
                "a sequence, not a Kubernetes object (a mapping)".to_string()
            ),
            (
                3,
                "a scalar, not a Kubernetes object (a mapping)".to_string()
            ),
            (4, "kind C () is not a CustomResourceDefinition".to_string()),
        ]
    );
}

#[test]
fn budgets_stop_hostile_input() {
    let deep = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(matches!(parse(&deep), Err(Error::Syntax { .. })));
    let mut bomb = String::from("a: &a [x, x, x, x, x, x, x, x, x, x]\n");
    for (name, prev) in [
        ("b", "a"),
        ("c", "b"),
        ("d", "c"),
        ("e", "d"),
        ("f", "e"),
        ("g", "f"),
    ] {
        let refs = vec![format!("*{prev}"); 10].join(", ");
        bomb.push_str(&format!("{name}: &{name} [{refs}]\n"));
    }
    bomb.push_str(&format!("h: [{}]\n", ["*g"; 10].join(", ")));
    assert!(matches!(parse(&bomb), Err(Error::Syntax { .. })));
}

/// A key given twice in one mapping: the value kubectl sends (the last), and a warning on the
/// document naming file, line and column of the repeat.
#[test]
fn duplicate_keys_keep_the_last_value_and_are_reported_with_their_place() {
    let text = "\
apiVersion: v1
kind: ConfigMap
metadata:
  name: a
  name: b
data:
  x: \"1\"
  z: \"2\"
  x: \"3\"
---
kind: Clean
base: &b {p: 1}
merged:
  <<: *b
  p: 2
---
yes: 1
on: 2
";
    let docs = parse(text).unwrap();
    assert_eq!(docs.len(), 3);
    assert_eq!(docs[0].value["metadata"]["name"], json!("b"));
    assert_eq!(docs[0].value["data"], json!({"x": "3", "z": "2"}));
    assert_eq!(
        docs[0].warnings,
        [
            "input.yaml:5:3: duplicate mapping key \"name\": the last value is used, as kubectl uses it",
            "input.yaml:9:3: duplicate mapping key \"x\": the last value is used, as kubectl uses it",
        ]
    );
    // A key overriding a merged one is not a repeat.
    assert_eq!(docs[1].value["merged"], json!({"p": 2}));
    assert!(docs[1].warnings.is_empty(), "{:?}", docs[1].warnings);
    // `yes` and `on` are both the key `true` to kubectl (YAML 1.1).
    assert_eq!(docs[2].value, json!({"true": 2}));
    assert_eq!(
        docs[2].warnings,
        [
            "input.yaml:18:1: duplicate mapping key \"true\": the last value is used, as kubectl uses it"
        ]
    );

    // JSON: serde_json does not say where; the document index does.
    let json_docs = read::parse_documents(
        Path::new("input.json"),
        "{\"a\": 1}\n{\"b\": {\"c\": 1, \"c\": 2}}",
    )
    .unwrap();
    assert_eq!(json_docs[1].value, json!({"b": {"c": 2}}));
    assert!(json_docs[0].warnings.is_empty());
    assert_eq!(
        json_docs[1].warnings,
        [
            "input.json: document 1: duplicate mapping key \"c\": the last value is used, as kubectl uses it"
        ]
    );

    // A List's warnings stay with its first item when flattened.
    let list = read::flatten(parse("kind: List\nitems:\n- {k: 1, k: 2}\n- {z: 1}\n").unwrap());
    assert_eq!(list.len(), 2);
    assert_eq!(list[0].value, json!({"k": 2}));
    assert_eq!(list[0].warnings.len(), 1, "{:?}", list[0].warnings);
    assert!(
        list[0].warnings[0].starts_with("input.yaml:3:10: "),
        "{:?}",
        list[0].warnings
    );
    assert!(list[1].warnings.is_empty());
}
