//! Arbitrary schema trees: generation returns an error or output that parses with syn. Never a panic.

use kube_codegen::{Builder, Options};
use proptest::prelude::*;
use serde_json::{Value, json};

fn key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("type".to_string()),
        Just("self".to_string()),
        Just("gen".to_string()),
        Just("@type".to_string()),
        Just("fooBar".to_string()),
        Just("foo_bar".to_string()),
        Just("".to_string()),
        Just("extra_fields".to_string()),
        Just("9lives".to_string()),
        "[a-zA-Z$@._ -]{1,8}",
        "\\PC{0,4}",
    ]
}

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": "integer", "format": "int32"})),
        Just(json!({"type": "integer", "enum": [1, -2, 1]})),
        Just(json!({"type": "number", "nullable": true})),
        Just(json!({"type": "boolean", "default": true})),
        Just(json!({"x-kubernetes-int-or-string": true})),
        Just(json!({"x-kubernetes-preserve-unknown-fields": true})),
        Just(json!({"type": "object", "additionalProperties": true})),
        Just(json!({"type": "object"})),
        Just(json!({})),
        Just(json!({"anyOf": [{"type": "integer"}, {"type": "string"}]})),
        Just(json!({"oneOf": [{"required": ["a"]}, {"required": ["b"]}]})),
        prop::collection::vec("\\PC{0,6}", 0..5)
            .prop_map(|v| json!({"type": "string", "enum": v, "description": "see [x] <y> ```rust\nfn main() {}"})),
    ]
}

fn schema() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(5, 48, 6, |inner| {
        prop_oneof![
            (
                prop::collection::btree_map(key(), inner.clone(), 0..6),
                prop::collection::vec(key(), 0..3),
                any::<bool>(),
                any::<bool>()
            )
                .prop_map(|(props, required, puf, embedded)| {
                    json!({
                        "type": "object",
                        "properties": props,
                        "required": required,
                        "x-kubernetes-preserve-unknown-fields": puf,
                        "x-kubernetes-embedded-resource": embedded,
                        "nullable": puf && embedded,
                    })
                }),
            inner.clone().prop_map(|i| json!({"type": "array", "items": i})),
            inner.clone().prop_map(|i| json!({"type": "object", "additionalProperties": i})),
            (inner.clone(), inner.clone())
                .prop_map(|(a, b)| json!({"oneOf": [a, b]})),
            (inner.clone(), inner)
                .prop_map(|(a, b)| json!({"type": "object", "properties": {"a": a}, "additionalProperties": b})),
        ]
    })
}

fn crd(schema: &Value, kind: &str) -> String {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "things.example.com"},
        "spec": {
            "group": "example.com",
            "names": {"kind": kind, "plural": "things"},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": schema}}]
        }
    })
    .to_string()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_schemas_generate_parseable_code(
        s in schema(),
        kind in prop_oneof![Just("Thing".to_string()), Just("Self".to_string()), Just("option".to_string()), "[A-Za-z][a-zA-Z0-9-]{0,6}"],
        no_docs in any::<bool>(),
    ) {
        let root = json!({"type": "object", "properties": {"spec": s.clone(), "status": s}});
        let options = Options { single_file: Some("out.rs".into()), no_docs, ..Options::default() };
        match Builder::new().input_text("p.json", crd(&root, &kind)).options(options).render() {
            Ok(g) => {
                for (path, text) in &g.files {
                    prop_assert!(syn::parse_file(text).is_ok(), "{} does not parse", path.display());
                }
            }
            // Errors are fine; a panic fails the test.
            Err(e) => prop_assert!(!e.to_string().contains("internal error"), "{e}"),
        }
    }
}
