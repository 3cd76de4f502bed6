//! What the generator refuses and what it only warns about: a violation kube-apiserver would
//! report refuses a CRD only when it touches what is generated (under `--strict`, always); a
//! v1beta1 CRD a 1.21 server accepted generates; duplicate YAML keys, a CRD serving no version
//! and a CRD defined twice are warnings naming the file.

use kube_codegen::{Builder, Error, Generated, Options};

/// A v1 CRD `widgets.<group>` with one version (`served` as given) and `extra` appended to its
/// `spec` (YAML, indented by two spaces), `annotations` under `metadata`.
fn widget(group: &str, annotations: &str, served: bool, extra: &str) -> String {
    format!(
        "apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.{group}
  annotations: {{{annotations}}}
spec:
  group: {group}
  scope: Namespaced
  names:
    plural: widgets
    kind: Widget
  versions:
  - name: v1
    served: {served}
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer
{extra}"
    )
}

/// A conversion webhook as Helm charts and kustomize bases ship it: the service and the CA
/// bundle are filled at install time.
const UNFILLED_WEBHOOK: &str = "  conversion:
    strategy: Webhook
    webhook:
      conversionReviewVersions: [v1]
      clientConfig:
        caBundle: \"\"
        service:
          name: \"\"
          namespace: \"\"
          path: /convert
";

fn render(inputs: &[(&str, &str)], args: &[&str]) -> Result<Generated, Error> {
    let mut b = Builder::new().options(Options::from_args(args)?);
    for (name, text) in inputs {
        b = b.input_text(name, *text);
    }
    b.render()
}

fn has_warning(g: &Generated, parts: &[&str]) -> bool {
    g.warnings
        .iter()
        .any(|w| parts.iter().all(|p| w.contains(p)))
}

fn invalid_causes(err: Error) -> Vec<String> {
    match err {
        Error::Invalid(list) => list.into_iter().flat_map(|c| c.causes).collect(),
        other => panic!("not Error::Invalid: {other}"),
    }
}

#[test]
fn a_conversion_webhook_left_to_install_time_warns_and_generates() {
    let crd = widget("example.com", "", true, UNFILLED_WEBHOOK);
    let g = render(&[("crds/widget.yaml", &crd)], &[]).unwrap();
    assert_eq!(g.resources.len(), 1);
    for field in [
        "spec.conversion.webhookClientConfig.service.name: Required value",
        "spec.conversion.webhookClientConfig.service.namespace: Required value",
    ] {
        assert!(
            has_warning(
                &g,
                &[
                    "crds/widget.yaml: document 0: CRD \"widgets.example.com\": ",
                    field,
                    "--strict"
                ]
            ),
            "{field}: {:#?}",
            g.warnings
        );
    }
    // --strict: refused, in the server's words.
    let causes = invalid_causes(render(&[("crds/widget.yaml", &crd)], &["--strict"]).unwrap_err());
    assert!(
        causes
            .iter()
            .any(|c| c == "spec.conversion.webhookClientConfig.service.name: Required value"),
        "{causes:?}"
    );
}

#[test]
fn a_protected_group_without_approval_warns_and_generates() {
    let crd = widget("widgets.k8s.io", "", true, "");
    let g = render(&[("crds/k8s.yaml", &crd)], &[]).unwrap();
    assert_eq!(g.resources.len(), 1);
    assert!(
        has_warning(
            &g,
            &[
                "crds/k8s.yaml: document 0: CRD \"widgets.widgets.k8s.io\": ",
                "metadata.annotations[api-approved.kubernetes.io]: Required value: protected groups must have approval annotation",
            ]
        ),
        "{:#?}",
        g.warnings
    );
    let approved = widget(
        "widgets.k8s.io",
        "api-approved.kubernetes.io: \"https://github.com/kubernetes/kubernetes/pull/1\"",
        true,
        "",
    );
    let g = render(&[("crds/k8s.yaml", &approved)], &["--strict"]).unwrap();
    assert!(g.warnings.is_empty(), "{:#?}", g.warnings);
    assert!(matches!(
        render(&[("crds/k8s.yaml", &crd)], &["--strict"]),
        Err(Error::Invalid(_))
    ));
}

/// A CRD refused for something that touches the code lists every violation, the downgradable
/// ones too, as the server's answer would.
#[test]
fn a_refused_crd_lists_every_violation() {
    let crd = widget("example.com", "", true, UNFILLED_WEBHOOK)
        .replace("scope: Namespaced", "scope: Galaxy");
    let causes = invalid_causes(render(&[("crds/widget.yaml", &crd)], &[]).unwrap_err());
    assert!(
        causes
            .iter()
            .any(|c| c.starts_with("spec.scope: Unsupported value: \"Galaxy\"")),
        "{causes:?}"
    );
    assert!(
        causes
            .iter()
            .any(|c| c.starts_with("spec.conversion.webhookClientConfig.service.name")),
        "{causes:?}"
    );
}

#[test]
fn strict_and_lenient_together_are_a_usage_error() {
    let crd = widget("example.com", "", true, "");
    let options = Options {
        strict: true,
        lenient: true,
        ..Options::default()
    };
    let err = Builder::new()
        .input_text("crds/widget.yaml", crd)
        .options(options)
        .render()
        .unwrap_err();
    assert!(matches!(err, Error::Usage(_)), "{err}");
    assert!(
        err.to_string().contains("--lenient") && err.to_string().contains("--strict"),
        "{err}"
    );
}

/// kube-apiserver 1.21 defaulted a v1beta1 CRD's missing `scope` to Namespaced.
#[test]
fn a_v1beta1_crd_without_scope_generates_as_namespaced() {
    let crd = "apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata:
  name: gizmos.example.com
spec:
  group: example.com
  version: v1alpha1
  names:
    plural: gizmos
    kind: Gizmo
  validation:
    openAPIV3Schema:
      type: object
      properties:
        spec:
          type: object
";
    let g = render(&[("crds/gizmo.yaml", crd)], &[]).unwrap();
    assert_eq!(g.resources.len(), 1);
    assert!(g.resources[0].namespaced);
}

#[test]
fn duplicate_yaml_keys_are_warnings_naming_file_line_and_column() {
    // `type` given twice in `size`: kubectl sends the last, `string`.
    let crd = widget("example.com", "", true, "").replace(
        "              size:\n                type: integer\n",
        "              size:\n                type: integer\n                type: string\n",
    );
    let g = render(&[("crds/dup.yaml", &crd)], &[]).unwrap();
    assert_eq!(
        g.resources[0].schema["properties"]["spec"]["properties"]["size"]["type"],
        "string"
    );
    assert!(
        has_warning(
            &g,
            &["crds/dup.yaml:25:17: duplicate mapping key \"type\": the last value is used"]
        ),
        "{:#?}",
        g.warnings
    );
}

#[test]
fn a_crd_serving_no_version_generates_nothing_with_a_warning() {
    let unserved = widget("example.com", "", false, "");
    let served = widget("other.example.com", "", true, "");
    let g = render(
        &[
            ("crds/unserved.yaml", &unserved),
            ("crds/served.yaml", &served),
        ],
        &[],
    )
    .unwrap();
    let crds: Vec<&str> = g.resources.iter().map(|r| r.crd_name.as_str()).collect();
    assert_eq!(crds, ["widgets.other.example.com"]);
    assert!(
        has_warning(
            &g,
            &[
                "crds/unserved.yaml: document 0: CRD widgets.example.com serves no version",
                "nothing is generated for it",
            ]
        ),
        "{:#?}",
        g.warnings
    );
    // `--versions all` generates its versions, without the warning.
    let g = render(&[("crds/unserved.yaml", &unserved)], &["--versions", "all"]).unwrap();
    assert_eq!(g.resources.len(), 1);
    assert!(
        !has_warning(&g, &["serves no version"]),
        "{:#?}",
        g.warnings
    );
}

/// `kubectl apply -f dir/` applies every file in order, so the last definition of a CRD is the
/// one left on the server.
#[test]
fn the_last_definition_of_a_crd_wins_as_with_kubectl_apply() {
    let old = widget("example.com", "", true, "");
    let new = old.replace("size:", "replicas:");
    let g = render(&[("crds/a-old.yaml", &old), ("crds/b-new.yaml", &new)], &[]).unwrap();
    assert_eq!(g.resources.len(), 1);
    let spec = &g.resources[0].schema["properties"]["spec"]["properties"];
    assert!(spec.get("replicas").is_some(), "{spec}");
    assert!(spec.get("size").is_none(), "{spec}");
    assert!(g.resources[0].source.ends_with("b-new.yaml"));
    assert!(
        has_warning(
            &g,
            &[
                "crds/a-old.yaml: document 0: CRD widgets.example.com is defined again in crds/b-new.yaml (document 0); the later one is used",
                "kubectl apply -f",
            ]
        ),
        "{:#?}",
        g.warnings
    );
}

#[cfg(feature = "cli")]
#[test]
fn the_cli_prints_the_warnings_and_refuses_strict_with_lenient() {
    use assert_cmd::Command;
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("widget.yaml");
    std::fs::write(&input, widget("example.com", "", true, UNFILLED_WEBHOOK)).unwrap();
    let out = dir.path().join("out");
    let run = |args: &[&str]| {
        Command::cargo_bin("kube-codegen")
            .unwrap()
            .arg("gen")
            .arg(&input)
            .arg("-o")
            .arg(&out)
            .args(args)
            .output()
            .unwrap()
    };
    let ok = run(&[]);
    let stderr = String::from_utf8_lossy(&ok.stderr);
    assert_eq!(ok.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "warning: {}: document 0: CRD \"widgets.example.com\": spec.conversion.webhookClientConfig.service.name: Required value",
            input.display()
        )),
        "{stderr}"
    );
    let strict = run(&["--strict"]);
    assert_eq!(
        strict.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&strict.stderr)
    );
    let both = run(&["--strict", "--lenient"]);
    let stderr = String::from_utf8_lossy(&both.stderr);
    assert_eq!(both.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--strict") && stderr.contains("--lenient"),
        "{stderr}"
    );
}

/// Volcano's old `v1beta1` Job CRD in miniature: a list-map key without a default and not
/// required, which kube-apiserver refuses and which does not change the types.
const VOLCANO_LIKE: &str = "apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata:
  name: jobs.batch.volcano.sh
spec:
  group: batch.volcano.sh
  names:
    kind: Job
    plural: jobs
  scope: Namespaced
  version: v1alpha1
  validation:
    openAPIV3Schema:
      type: object
      properties:
        spec:
          type: object
          properties:
            tasks:
              type: array
              x-kubernetes-list-type: map
              x-kubernetes-list-map-keys: [name]
              items:
                type: object
                properties:
                  name:
                    type: string
                  replicas:
                    type: integer
";

const LIST_MAP_KEY_CAUSE: &str = "spec.validation.openAPIV3Schema.properties[spec].properties[tasks].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property";

#[test]
fn lenient_generates_a_crd_refused_for_a_rule_that_does_not_change_its_types() {
    let input = [("crds/volcano.yaml", VOLCANO_LIKE)];
    let causes = invalid_causes(render(&input, &[]).unwrap_err());
    assert!(causes.iter().any(|c| c == LIST_MAP_KEY_CAUSE), "{causes:?}");

    let g = render(&input, &["--lenient"]).unwrap();
    assert_eq!(g.resources.len(), 1);
    assert_eq!(g.resources[0].rust_path, "batch::v1alpha1::Job");
    assert!(
        has_warning(
            &g,
            &[
                "crds/volcano.yaml: document 0: CRD \"jobs.batch.volcano.sh\": ",
                LIST_MAP_KEY_CAUSE,
                "generated anyway under --lenient",
            ]
        ),
        "{:#?}",
        g.warnings
    );
    assert!(render(&input, &["--strict"]).is_err());
}

#[test]
fn lenient_still_refuses_a_schema_the_generator_cannot_map_listing_the_servers_causes() {
    // The list-map key (a warning alone under --lenient) and a type no schema may have, which no
    // Rust type stands for (a 1.21 server checked types only in structural schemas, so the
    // server's causes for this v1beta1 CRD do not name it; the generator's does).
    let crd = VOLCANO_LIKE.replace(
        "                  replicas:\n                    type: integer",
        "                  replicas:\n                    type: decimal",
    );
    let input = [
        ("crds/volcano.yaml", crd.as_str()),
        ("crds/fine.yaml", &widget("example.com", "", true, "")),
    ];
    let err = render(&input, &["--lenient"]).unwrap_err();
    let text = err.to_string();
    let causes = invalid_causes(err);
    assert!(causes.iter().any(|c| c == LIST_MAP_KEY_CAUSE), "{causes:?}");
    assert!(
        causes.last().is_some_and(
            |c| c.contains("unknown type \"decimal\"") && c.contains("even under --lenient")
        ),
        "{causes:?}"
    );
    assert!(
        text.contains("crds/volcano.yaml: document 0: The CustomResourceDefinition \"jobs.batch.volcano.sh\" is invalid"),
        "{text}"
    );
}

#[test]
fn lenient_refuses_a_crd_without_a_kind_with_the_servers_causes() {
    let crd = widget("example.com", "", true, "").replace("    kind: Widget\n", "");
    let err = render(&[("crds/w.yaml", &crd)], &["--lenient"]).unwrap_err();
    let causes = invalid_causes(err);
    assert!(
        causes
            .iter()
            .any(|c| c == "spec.names.kind: Required value"),
        "{causes:?}"
    );
    assert!(
        causes
            .last()
            .is_some_and(|c| c.contains("/spec/names/kind") && c.contains("even under --lenient")),
        "{causes:?}"
    );
}

/// `testdata/crds/lenient-many-violations.yaml` (also a golden, so its output compiles): three
/// CRDs breaking dozens of rules at once, among them names that are no identifiers, a version
/// defined twice, no storage version and two storage versions.
#[test]
fn lenient_generates_crds_breaking_many_rules_at_once() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/crds/lenient-many-violations.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let input = [("lenient.yaml", text.as_str())];
    let err = render(&input, &["--emit", "all"]).unwrap_err();
    let Error::Invalid(refused) = err else {
        panic!("not Error::Invalid: {err}")
    };
    assert_eq!(refused.len(), 3, "{refused:#?}");
    assert!(refused.iter().all(|c| c.causes.len() >= 2), "{refused:#?}");
    let causes = refused.iter().map(|c| c.causes.len()).sum::<usize>();
    assert!(causes >= 30, "{refused:#?}");

    for emit in ["all", "types"] {
        let g = render(&input, &["--lenient", "--emit", emit]).unwrap();
        let mut got: Vec<_> = g.resources.iter().map(|r| r.rust_path.as_str()).collect();
        got.sort();
        assert_eq!(
            got,
            [
                "batch::v1beta1::Job",
                "lenient::v1::Widget",
                "lenient::v2::Widget",
                "lenientnodot::v1_beta::CronTab",
                "lenientnodot::v1alpha1::CronTab",
            ]
        );
        for crd in [
            "jobs.batch.lenient.example.com",
            "crontabs.elsewhere.example.com",
            "widgets.lenient.example.com",
        ] {
            let n = g
                .warnings
                .iter()
                .filter(|w| w.contains(&format!("CRD {crd:?}: ")) && w.contains("generated anyway"))
                .count();
            assert!(n >= 1, "{crd}: {:#?}", g.warnings);
        }
        assert!(
            has_warning(
                &g,
                &["crontabs.elsewhere.example.com defines version \"v1alpha1\" more than once"]
            ),
            "{:#?}",
            g.warnings
        );
        for (name, file) in &g.files {
            syn::parse_file(file).unwrap_or_else(|e| panic!("{}: {e}", name.display()));
        }
    }
}

#[test]
fn versions_whose_schemas_differ_without_conversion_warn_naming_the_dropped_fields() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata/crds/multi-version.yaml");
    let text = std::fs::read_to_string(&path).unwrap();
    let g = render(&[("mv.yaml", &text)], &[]).unwrap();
    assert!(
        has_warning(
            &g,
            &[
                "mv.yaml: document 0: CRD certificates.multiversion.example.com serves v1alpha1 and v1 (the storage version)",
                "an object written as v1alpha1 loses spec.commonName when stored as v1",
            ]
        ),
        "{:#?}",
        g.warnings
    );
    // A webhook converts: nothing to warn about.
    let webhook = text.replacen(
        "  conversion:\n    strategy: None\n",
        "  conversion:\n    strategy: Webhook\n    webhook:\n      conversionReviewVersions: [v1]\n      clientConfig: {url: \"https://convert.example.com/\"}\n",
        1,
    );
    assert_ne!(webhook, text);
    let g = render(&[("mv.yaml", &webhook)], &[]).unwrap();
    assert!(!has_warning(&g, &["strategy: None"]), "{:#?}", g.warnings);
}
