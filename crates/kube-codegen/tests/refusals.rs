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
