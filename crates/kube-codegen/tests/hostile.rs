//! Hostile input: every case must end in an error (or output), never a panic or a hang.

use kube_codegen::{Builder, Error};

fn render(text: &str) -> Result<kube_codegen::Generated, Error> {
    Builder::new().input_text("hostile.yaml", text).render()
}

fn crd_with_schema(schema: &serde_json::Value) -> String {
    serde_json::json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": "Thing", "plural": "things"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": schema}}]
        }
    })
    .to_string()
}

#[test]
fn malformed_yaml_is_a_located_error() {
    for text in [
        "a: [1, 2",
        "a: b\n\tc: d\n",
        // kubectl cannot send a non-finite number as JSON, and refuses the file.
        "a: 1\nb: .inf\n",
        "{\"a\": }",
        "- ]",
    ] {
        match render(text) {
            Err(Error::Input(kube_codegen_crd::Error::Syntax { line, .. })) => {
                assert!(line > 0, "{text:?}")
            }
            other => panic!("{text:?}: expected a syntax error, got {other:?}"),
        }
    }
}

#[test]
fn alias_bomb_is_rejected() {
    let mut s = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let mut prev = 'a';
    for c in 'b'..='z' {
        s.push_str(&format!(
            "{c}: &{c} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
        prev = c;
    }
    let err = render(&s).unwrap_err();
    assert!(
        matches!(err, Error::Input(kube_codegen_crd::Error::Syntax { .. })),
        "{err}"
    );
}

#[test]
fn deep_nesting_is_rejected_yaml_and_json() {
    let deep_yaml = format!("{}1{}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(matches!(
        render(&deep_yaml),
        Err(Error::Input(kube_codegen_crd::Error::Syntax { .. }))
    ));
    let deep_json = format!("{{\"kind\":{}1{}}}", "[".repeat(10_000), "]".repeat(10_000));
    assert!(matches!(
        render(&deep_json),
        Err(Error::Input(kube_codegen_crd::Error::Syntax { .. }))
    ));
    // Deep but syntactically fine schema: the schema depth limit answers with a pointer.
    let mut schema = serde_json::json!({"type": "string"});
    for _ in 0..150 {
        schema = serde_json::json!({"type": "object", "properties": {"a": schema}});
    }
    let text = crd_with_schema(&schema);
    match Builder::new().input_text("deep.json", text).render() {
        Err(Error::Schema {
            pointer, message, ..
        }) => {
            assert!(
                pointer.starts_with("/properties/a/properties/a"),
                "{pointer}"
            );
            assert!(message.contains("deeper"), "{message}");
        }
        Err(Error::Input(kube_codegen_crd::Error::Syntax { .. })) => {}
        other => panic!("expected an error, got {other:?}"),
    }
}

#[test]
fn huge_strings_are_fine() {
    let huge = "x".repeat(1_000_000);
    let schema = serde_json::json!({"type": "object", "description": huge, "properties": {
        "spec": {"type": "string", "description": "[y]".repeat(100_000)}}});
    let g = render(&crd_with_schema(&schema)).unwrap();
    assert_eq!(g.resources.len(), 1);
}

#[test]
fn invalid_crds_are_refused_with_field_paths() {
    let cases = [
        (
            r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"x.y"},"spec":{"group":"y","names":{"plural":"x"},"versions":[]}}"#,
            "spec.names.kind: Required value",
        ),
        (
            r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"x.y"},"spec":{"group":"y","names":{"kind":"X","plural":"x"}}}"#,
            "spec.versions",
        ),
        (
            r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"x.y"},"spec":{"group":"y","scope":"Galaxy","names":{"kind":"X","plural":"x"},"versions":[{"name":"v1"}]}}"#,
            "spec.scope: Unsupported value: \"Galaxy\"",
        ),
        (
            r#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"x.y"},"spec":{"group":"y","names":{"kind":"X","plural":"x"},"versions":[{"name":"v1","served":"yes"}]}}"#,
            "spec.versions[0].served",
        ),
    ];
    for (text, field) in cases {
        assert_invalid(render(text), field, text);
    }
    let bad_schemas = [
        (
            serde_json::json!({"type": "object", "properties": {"a": {"type": 5}}}),
            "openAPIV3Schema.properties[a].type",
        ),
        (
            serde_json::json!({"type": "object", "properties": {"a": "string"}}),
            "openAPIV3Schema.properties[a]",
        ),
        (
            serde_json::json!({"type": "object", "required": "a"}),
            "openAPIV3Schema.required",
        ),
        (
            serde_json::json!({"type": "object", "properties": {"a/b": {"type": "array", "items": 3}}}),
            "openAPIV3Schema.properties[a/b].items",
        ),
    ];
    for (schema, field) in bad_schemas {
        assert_invalid(
            render(&crd_with_schema(&schema)),
            field,
            &schema.to_string(),
        );
    }
}

/// The CRD was refused as kube-apiserver would refuse it, with a cause at `field`.
fn assert_invalid(r: Result<kube_codegen::Generated, Error>, field: &str, input: &str) {
    match r {
        Err(Error::Invalid(list)) => {
            assert_eq!(list.len(), 1, "{input}");
            assert!(
                list[0].causes.iter().any(|c| c.starts_with(field)
                    || c.contains(&format!(": {field}"))
                    || c.contains(&format!(".{field}"))),
                "{input}: no cause at {field}: {:#?}",
                list[0].causes
            );
        }
        other => panic!("{input}: expected Error::Invalid, got {other:?}"),
    }
}

#[test]
fn odd_but_valid_documents() {
    // Empty stream, null documents and scalars are skipped, not fatal, when a CRD is present.
    let crd = crd_with_schema(&serde_json::json!({"type": "object"}));
    let text = format!("---\n~\n---\n42\n---\n{crd}\n");
    let g = render(&text).unwrap();
    assert_eq!(g.resources.len(), 1);
    assert!(
        g.warnings
            .iter()
            .any(|w| w.contains("hostile.yaml: document")),
        "{:?}",
        g.warnings
    );
    // An unquoted `- =` enum item (a real corpus quirk) reads as the string "=".
    let yaml = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: things.example.com}\nspec:\n  group: example.com\n  names: {kind: Thing, plural: things}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          op:\n            type: string\n            enum:\n            - =\n            - '!='\n";
    let options = kube_codegen::Options::from_args(&["--single-file", "one.rs"]).unwrap();
    let g = Builder::new()
        .input_text("quirk.yaml", yaml)
        .options(options)
        .render()
        .unwrap();
    let text = &g.files[std::path::Path::new("one.rs")];
    assert!(
        text.contains("#[serde(rename = \"=\")]") && text.contains("Eq,"),
        "{text}"
    );
    assert!(text.contains("#[serde(rename = \"!=\")]") && text.contains("NotEq,"));
}
