//! Naming determinism: input order, hash seeds and unrelated CRDs never change existing names.

use std::collections::BTreeMap;
use std::path::PathBuf;

use kube_codegen::{Builder, Options};
use serde_json::json;

fn crd(group: &str, kind: &str, props: serde_json::Value) -> String {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{}s.{group}", kind.to_lowercase())},
        "spec": {
            "group": group,
            "names": {"kind": kind, "plural": format!("{}s", kind.to_lowercase())},
            "scope": "Namespaced",
            "versions": [{"name": "v1", "served": true, "storage": true,
                          "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                              "type": "object", "properties": props}}}}}]
        }
    })
    .to_string()
}

fn colliding() -> serde_json::Value {
    json!({
        "fooBar": {"type": "object", "properties": {"x": {"type": "string"}}},
        "foo_bar": {"type": "object", "properties": {"y": {"type": "string"}}},
        "foo-bar": {"type": "string"},
        "FooBar": {"type": "integer"},
        "nested": {"type": "object", "properties": {"bar": {"type": "object", "properties": {"z": {"type": "boolean"}}}}},
        "nestedBar": {"type": "object", "properties": {"w": {"type": "boolean"}}},
        "left": {"type": "object", "properties": {"x": {"type": "string"}}},
        "right": {"type": "object", "properties": {"x": {"type": "string"}}},
    })
}

fn render(docs: &[(&str, String)], options: Options) -> BTreeMap<PathBuf, String> {
    let mut b = Builder::new().options(options);
    for (name, text) in docs {
        b = b.input_text(name, text.clone());
    }
    b.render().unwrap().files
}

#[test]
fn input_order_does_not_matter() {
    let a = ("a.yaml", crd("alpha.example.com", "Widget", colliding()));
    let b = ("b.yaml", crd("beta.example.com", "Gizmo", colliding()));
    let c = (
        "c.yaml",
        crd(
            "gamma.example.com",
            "Gadget",
            json!({"x": {"type": "string"}}),
        ),
    );
    for options in [
        Options::default(),
        Options::from_args(&["--single-file", "all.rs"]).unwrap(),
    ] {
        let one = render(&[a.clone(), b.clone(), c.clone()], options.clone());
        let two = render(&[c.clone(), a.clone(), b.clone()], options.clone());
        let three = render(&[b.clone(), c.clone(), a.clone()], options);
        assert_eq!(one, two);
        assert_eq!(one, three);
    }
}

#[test]
fn property_order_does_not_matter() {
    // Same schema with properties listed in another order (a YAML file, not a JSON map).
    let yaml1 = "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: ws.e.com}\nspec:\n  group: e.com\n  names: {kind: W, plural: ws}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n          aB: {type: object, properties: {q: {type: string}}}\n          a_b: {type: object, properties: {r: {type: string}}}\n";
    let yaml2 = yaml1.replace(
        "          aB: {type: object, properties: {q: {type: string}}}\n          a_b: {type: object, properties: {r: {type: string}}}\n",
        "          a_b: {type: object, properties: {r: {type: string}}}\n          aB: {type: object, properties: {q: {type: string}}}\n",
    );
    assert_ne!(yaml1, yaml2);
    let one = render(&[("w.yaml", yaml1.to_string())], Options::default());
    let two = render(&[("w.yaml", yaml2)], Options::default());
    assert_eq!(one, two);
}

#[test]
fn unrelated_crd_changes_no_existing_file() {
    let a = ("a.yaml", crd("alpha.example.com", "Widget", colliding()));
    let before = render(std::slice::from_ref(&a), Options::default());
    let after = render(
        &[
            a,
            (
                "z.yaml",
                crd(
                    "zeta.example.com",
                    "Widget",
                    json!({"other": {"type": "string"}}),
                ),
            ),
        ],
        Options::default(),
    );
    for (path, text) in &before {
        if path.as_os_str() == "mod.rs" {
            continue; // the root module lists the new group too
        }
        assert_eq!(after.get(path), Some(text), "{} changed", path.display());
    }
    assert!(after.contains_key(&PathBuf::from("zeta/v1/widget.rs")));
}

#[test]
fn groups_sharing_a_first_label_use_full_names() {
    let files = render(
        &[
            ("a.yaml", crd("monitoring.coreos.com", "Alert", json!({}))),
            ("b.yaml", crd("monitoring.example.io", "Probe", json!({}))),
        ],
        Options::default(),
    );
    assert!(files.contains_key(&PathBuf::from("monitoring_coreos_com/v1/alert.rs")));
    assert!(files.contains_key(&PathBuf::from("monitoring_example_io/v1/probe.rs")));
}

#[test]
fn collision_rule_and_dedupe() {
    let files = render(
        &[("a.yaml", crd("alpha.example.com", "Widget", colliding()))],
        Options::from_args(&["--single-file", "w.rs", "--no-docs"]).unwrap(),
    );
    let text: String = files[&PathBuf::from("w.rs")].split_whitespace().collect();
    // Fields: exact snake-case wire name keeps `foo_bar`; the others, by wire-name order.
    assert!(text.contains("#[serde(rename=\"FooBar\",skip_serializing_if=\"Option::is_none\")]pubfoo_bar_2:Option<i64>"), "{text}");
    assert!(text.contains("#[serde(rename=\"foo-bar\",skip_serializing_if=\"Option::is_none\")]pubfoo_bar_3:Option<String>"));
    assert!(text.contains("#[serde(rename=\"fooBar\",skip_serializing_if=\"Option::is_none\")]pubfoo_bar_4:Option<WidgetSpecFooBar"));
    // Types: `WidgetSpecFooBar` wanted by /fooBar and /foo_bar: JSON-pointer order decides.
    assert!(text.contains("pubfoo_bar:Option<WidgetSpecFooBar2>"));
    assert!(text.contains("pubfoo_bar_4:Option<WidgetSpecFooBar>"));
    // `nested.bar` and `nestedBar` both want `WidgetSpecNestedBar`.
    assert!(
        text.contains("pubstructWidgetSpecNestedBar{")
            && text.contains("pubstructWidgetSpecNestedBar2{")
    );
    // `fooBar`, `left` and `right` are identical: one struct (the name sorting first), two aliases.
    assert!(text.contains("pubtypeWidgetSpecLeft=WidgetSpecFooBar;"));
    assert!(text.contains("pubtypeWidgetSpecRight=WidgetSpecFooBar;"));
    assert!(!text.contains("pubstructWidgetSpecLeft"));
}

/// Hook methods whose field paths snake to the same name (`fooBar` only in v1alpha1, `foo_bar`
/// only in v1) are told apart deterministically, whatever the version order in the CRD.
#[test]
fn conversion_hook_names_are_unique_and_order_independent() {
    let version = |name: &str, storage: bool, props: serde_json::Value| {
        json!({"name": name, "served": true, "storage": storage,
               "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                   "type": "object", "properties": props}}}}})
    };
    let crd = |versions: Vec<serde_json::Value>| {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "CustomResourceDefinition",
            "metadata": {"name": "things.hooks.example.com"},
            "spec": {"group": "hooks.example.com",
                     "names": {"kind": "Thing", "plural": "things"},
                     "scope": "Namespaced", "versions": versions}
        })
        .to_string()
    };
    let alpha = version(
        "v1alpha1",
        false,
        json!({"fooBar": {"type": "string"}, "same": {"type": "string"}}),
    );
    let hub = version(
        "v1",
        true,
        json!({"foo_bar": {"type": "integer"}, "same": {"type": "string"}}),
    );
    let a = render(
        &[("a", crd(vec![alpha.clone(), hub.clone()]))],
        Options::default(),
    );
    let b = render(&[("a", crd(vec![hub, alpha]))], Options::default());
    assert_eq!(a, b);
    let conversion = &a[&PathBuf::from("hooks/conversion.rs")];
    for name in [
        "fn v1alpha1_spec_foo_bar_to_hub(",
        "fn v1alpha1_spec_foo_bar_to_hub_2(",
        "fn v1alpha1_spec_foo_bar_from_hub(",
        "fn v1alpha1_spec_foo_bar_from_hub_2(",
        "pub struct ThingConversion<H = DefaultThingHooks>",
    ] {
        assert!(conversion.contains(name), "{name} missing in\n{conversion}");
    }
    assert!(!conversion.contains("spec_same"), "`same` maps: no hook");
    // `--emit types` has no conversion module.
    let types = render(
        &[(
            "a",
            crd(vec![
                version("v1", true, json!({})),
                version("v2", false, json!({})),
            ]),
        )],
        Options {
            emit: kube_codegen::Emit::TYPES,
            ..Options::default()
        },
    );
    assert!(
        !types.keys().any(|p| p.ends_with("conversion.rs")),
        "{:?}",
        types.keys()
    );
}
