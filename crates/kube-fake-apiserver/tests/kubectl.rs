//! kubectl — a real client nobody here wrote — against the in-memory server: apply a CRD, wait for
//! `Established`, create/apply, `get -o json`, label selectors, the printer-column table, merge
//! patches (and a 422), `explain`, `api-resources`, delete, and `get --watch` while objects change.
//! When kubectl is not installed each test prints a `SKIPPED` line and passes, except under
//! `CI=true`, where a missing kubectl fails the run.
use std::path::{Path, PathBuf};
use std::time::Duration;

use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::common;
use common::kubectl::{Kubectl, kubectl_or_skip};

/// Bound for a line to show up on a watching kubectl.
const LINE_TIMEOUT: Duration = Duration::from_secs(20);

const CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: crontabs.stable.example.com
spec:
  group: stable.example.com
  scope: Namespaced
  names:
    plural: crontabs
    singular: crontab
    kind: CronTab
    listKind: CronTabList
    shortNames: [ct]
  versions:
  - name: v1
    served: true
    storage: true
    subresources:
      status: {}
    additionalPrinterColumns:
    - name: Spec
      type: string
      jsonPath: .spec.cronSpec
    - name: Replicas
      type: integer
      jsonPath: .spec.replicas
    - name: Age
      type: date
      jsonPath: .metadata.creationTimestamp
    - name: Image
      type: string
      priority: 1
      jsonPath: .spec.image
    schema:
      openAPIV3Schema:
        type: object
        description: CronTab runs an image on a schedule.
        properties:
          spec:
            type: object
            description: The desired schedule.
            properties:
              cronSpec:
                type: string
                description: The cron schedule, in cron format.
              image:
                type: string
              replicas:
                type: integer
                minimum: 1
                maximum: 10
                default: 1
          status:
            type: object
            properties:
              phase:
                type: string
"#;

fn crontab(name: &str, app: &str) -> String {
    format!(
        "apiVersion: stable.example.com/v1\nkind: CronTab\nmetadata:\n  name: {name}\n  labels:\n    app: {app}\n\
         spec:\n  cronSpec: \"* * * * */5\"\n  image: my-image\n"
    )
}

impl Kubectl {
    /// `kubectl get ct <args> -o jsonpath=<template>`; returns stdout.
    async fn jsonpath(&self, args: &[&str], template: &str) -> String {
        let output = format!("jsonpath={template}");
        self.ok(&[&["get", "ct"], args, &["-o", &output]].concat())
            .await
    }

    /// A long-running kubectl (`get --watch ...`) whose stdout is read line by line.
    fn watch(&self, args: &[&str]) -> Watcher {
        let mut child = self.command(args).spawn().expect("kubectl starts");
        let stdout = child.stdout.take().expect("stdout piped");
        Watcher {
            child,
            lines: BufReader::new(stdout).lines(),
            seen: Vec::new(),
        }
    }

    async fn apply_crd(&self) {
        let out = self.apply(CRD).await;
        assert_has(
            &out,
            "customresourcedefinition.apiextensions.k8s.io/crontabs.stable.example.com created",
        );
        let out = self
            .ok(&[
                "wait",
                "--for=condition=Established",
                "crd/crontabs.stable.example.com",
                "--timeout=20s",
            ])
            .await;
        assert_has(&out, "condition met");
    }
}

/// A server with the CronTab CRD applied through `bin`, and the kubectl that applied it.
async fn with_crontabs(bin: PathBuf) -> (FakeApiServer, Kubectl) {
    let srv = FakeApiServer::start().await.expect("server starts");
    let k = Kubectl::new(bin, &srv);
    k.apply_crd().await;
    (srv, k)
}

/// Fails with `text` when it does not contain `part`.
fn assert_has(text: &str, part: &str) {
    assert!(text.contains(part), "{part:?} not in:\n{text}");
}

/// [`with_crontabs`], or return from the test `$test` when kubectl is not installed (see
/// [`kubectl_or_skip`]).
macro_rules! crontabs_or_skip {
    ($test:literal) => {
        match kubectl_or_skip($test) {
            Some(bin) => with_crontabs(bin).await,
            None => return,
        }
    };
}

/// `patch ct <name> [--type <type>] -p <patch>` (kubectl's default type is strategic merge).
fn patch_args<'a>(name: &'a str, type_: Option<&'a str>, patch: &'a str) -> Vec<&'a str> {
    let mut args = vec!["patch", "ct", name];
    if let Some(t) = type_ {
        args.extend(["--type", t]);
    }
    args.extend(["-p", patch]);
    args
}

/// Splits a table line into its whitespace-separated cells.
fn cells(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_crd_and_custom_resource_lifecycle() {
    let (srv, k) = crontabs_or_skip!("kubectl_crd_and_custom_resource_lifecycle");

    // Discovery: the kind is listed with its short name.
    let resources = k
        .ok(&["api-resources", "--api-group=stable.example.com"])
        .await;
    let row = resources
        .lines()
        .find(|l| l.starts_with("crontabs"))
        .unwrap_or_else(|| panic!("{resources}"));
    assert_eq!(
        cells(row),
        ["crontabs", "ct", "stable.example.com/v1", "true", "CronTab"]
    );

    // Create through apply (client-side apply: a create, with the last-applied annotation).
    let out = k.apply(&crontab("my-crontab", "web")).await;
    assert_has(&out, "crontab.stable.example.com/my-crontab created");
    let out = k.create(&crontab("other", "db")).await;
    assert_has(&out, "crontab.stable.example.com/other created");

    // get -o json: pruned, defaulted, server-managed fields set.
    let obj: Value = serde_json::from_str(&k.ok(&["get", "ct", "my-crontab", "-o", "json"]).await)
        .expect("json");
    assert_eq!(obj["apiVersion"], "stable.example.com/v1");
    assert_eq!(obj["kind"], "CronTab");
    assert_eq!(obj["metadata"]["namespace"], "default");
    assert_eq!(obj["metadata"]["generation"], 1);
    assert!(
        obj["metadata"]["uid"]
            .as_str()
            .is_some_and(|u| !u.is_empty())
    );
    assert!(
        obj["metadata"]["resourceVersion"]
            .as_str()
            .is_some_and(|rv| !rv.is_empty())
    );
    assert!(
        obj["metadata"]["annotations"]["kubectl.kubernetes.io/last-applied-configuration"]
            .is_string()
    );
    assert_eq!(
        obj["spec"],
        json!({"cronSpec": "* * * * */5", "image": "my-image", "replicas": 1})
    );

    // Re-applying the same manifest is a no-op; a changed one is a merge patch.
    let out = k.apply(&crontab("my-crontab", "web")).await;
    assert_has(&out, "crontab.stable.example.com/my-crontab unchanged");
    let changed = crontab("my-crontab", "web").replace("my-image", "image-2");
    let out = k.apply(&changed).await;
    assert_has(&out, "crontab.stable.example.com/my-crontab configured");
    let got = k
        .jsonpath(&["my-crontab"], "{.spec.image} {.metadata.generation}")
        .await;
    assert_eq!(got.trim(), "image-2 2");

    // Without validation, unknown fields are pruned by the structural schema.
    let extra = crontab("pruned", "other").replace(
        "image: my-image",
        "image: my-image\n  unknownField: dropped",
    );
    k.ok_stdin(&["apply", "--validate=false", "-f", "-"], Some(&extra))
        .await;
    let spec = k.jsonpath(&["pruned"], "{.spec}").await;
    let spec: Value = serde_json::from_str(&spec).expect("spec as json");
    assert_eq!(
        spec,
        json!({"cronSpec": "* * * * */5", "image": "my-image", "replicas": 1})
    );

    // Server-side apply records the field manager.
    let ssa = crontab("ssa", "other");
    let out = k
        .ok_stdin(
            &[
                "apply",
                "--server-side",
                "--field-manager=tester",
                "-f",
                "-",
            ],
            Some(&ssa),
        )
        .await;
    assert_has(&out, "crontab.stable.example.com/ssa serverside-applied");
    let managers = k
        .jsonpath(
            &["ssa", "--show-managed-fields"],
            "{.metadata.managedFields[*].manager}",
        )
        .await;
    assert!(
        managers.split_whitespace().any(|m| m == "tester"),
        "{managers}"
    );

    // Label selectors on list.
    let names = k
        .ok(&["get", "crontabs", "-l", "app=web", "-o", "name"])
        .await;
    assert_eq!(names.trim(), "crontab.stable.example.com/my-crontab");
    let names = k
        .ok(&["get", "crontabs", "-l", "app in (web,db)", "-o", "name"])
        .await;
    assert_eq!(names.lines().count(), 2, "{names}");
    let names = k
        .ok(&["get", "crontabs", "-l", "app!=web,app!=other", "-o", "name"])
        .await;
    assert_eq!(names.trim(), "crontab.stable.example.com/other");
    let names = k.ok(&["get", "crontabs", "-l", "!app", "-o", "name"]).await;
    assert!(names.trim().is_empty(), "{names}");
    let none = k.run(&["get", "crontabs", "-l", "app=nothing"], None).await;
    assert!(none.ok && none.stdout.trim().is_empty(), "{}", none.stdout);
    assert_has(&none.stderr, "No resources found in default namespace.");
    let bad = k.fails(&["get", "crontabs", "-l", "a$b=c"], None).await;
    assert_has(
        &bad,
        r#"field selector "": unable to parse requirement: <nil>: Invalid value: "a$b": name part must consist of"#,
    );

    // Field selector on metadata.name.
    let names = k
        .ok(&[
            "get",
            "crontabs",
            "--field-selector",
            "metadata.name=other",
            "-o",
            "name",
        ])
        .await;
    assert_eq!(names.trim(), "crontab.stable.example.com/other");

    // The table: kubectl asks for a Table and prints the printer columns.
    let table = k.ok(&["get", "ct", "my-crontab"]).await;
    let mut lines = table.lines();
    assert_eq!(
        cells(lines.next().unwrap_or_default()),
        ["NAME", "SPEC", "REPLICAS", "AGE"],
        "{table}"
    );
    let row = cells(lines.next().unwrap_or_default());
    assert_eq!(
        &row[..7],
        ["my-crontab", "*", "*", "*", "*", "*/5", "1"],
        "{table}"
    );
    assert!(
        row[7].ends_with('s') || row[7].ends_with('m'),
        "age cell {:?}",
        row[7]
    );
    assert_eq!(row.len(), 8, "the priority-1 column is hidden: {table}");
    let wide = k.ok(&["get", "ct", "my-crontab", "-o", "wide"]).await;
    let mut lines = wide.lines();
    assert_eq!(
        cells(lines.next().unwrap_or_default()),
        ["NAME", "SPEC", "REPLICAS", "AGE", "IMAGE"],
        "{wide}"
    );
    assert_eq!(
        cells(lines.next().unwrap_or_default()).last(),
        Some(&"image-2"),
        "{wide}"
    );
    // Label columns come from the metadata kubectl finds in each row's object.
    let labelled = k.ok(&["get", "ct", "my-crontab", "-L", "app"]).await;
    let mut lines = labelled.lines();
    assert_eq!(
        cells(lines.next().unwrap_or_default()).last(),
        Some(&"APP"),
        "{labelled}"
    );
    assert_eq!(
        cells(lines.next().unwrap_or_default()).last(),
        Some(&"web"),
        "{labelled}"
    );
    let all = k.ok(&["get", "ct", "-A"]).await;
    assert!(
        all.lines()
            .next()
            .unwrap_or_default()
            .starts_with("NAMESPACE"),
        "{all}"
    );
    assert!(
        all.lines()
            .any(|l| cells(l)[..2] == ["default", "my-crontab"]),
        "{all}"
    );

    // Merge patch: spec change bumps generation; out-of-range value is a 422 with the schema message.
    let out = k
        .ok(&patch_args(
            "my-crontab",
            Some("merge"),
            r#"{"spec":{"replicas":5}}"#,
        ))
        .await;
    assert_has(&out, "crontab.stable.example.com/my-crontab patched");
    let got = k
        .jsonpath(&["my-crontab"], "{.spec.replicas} {.metadata.generation}")
        .await;
    assert_eq!(got.trim(), "5 3");
    k.ok(&patch_args(
        "my-crontab",
        Some("json"),
        r#"[{"op":"replace","path":"/spec/image","value":"j"}]"#,
    ))
    .await;
    k.ok(&["label", "ct", "my-crontab", "tier=batch"]).await;
    let got = k
        .jsonpath(
            &["-l", "tier=batch"],
            "{.items[*].spec.image} {.items[*].metadata.generation}",
        )
        .await;
    assert_eq!(
        got.trim(),
        "j 4",
        "a label change does not bump the generation"
    );
    // A strategic merge patch (kubectl's default) is refused for custom resources.
    let smp = k
        .fails(
            &patch_args("my-crontab", None, r#"{"spec":{"image":"s"}}"#),
            None,
        )
        .await;
    assert_has(
        &smp,
        "application/strategic-merge-patch+json is not supported",
    );
    let bad = k
        .fails(
            &patch_args("my-crontab", Some("merge"), r#"{"spec":{"replicas":50}}"#),
            None,
        )
        .await;
    assert_has(
        &bad,
        "spec.replicas: Invalid value: 50: spec.replicas in body should be less than or equal to 10",
    );

    // explain reads the CRD schema from /openapi/v3.
    let doc = k.ok(&["explain", "crontabs"]).await;
    assert_has(&doc, "KIND:       CronTab");
    assert_has(&doc, "GROUP:      stable.example.com");
    assert_has(&doc, "CronTab runs an image on a schedule.");
    assert_has(&doc, "spec\t<Object>");
    assert_has(&doc, "metadata\t<ObjectMeta>");
    let field = k.ok(&["explain", "crontab.spec.cronSpec"]).await;
    assert_has(&field, "FIELD: cronSpec <string>");
    assert_has(&field, "The cron schedule, in cron format.");

    // Delete, then it is gone.
    let out = k.ok(&["delete", "ct", "my-crontab"]).await;
    assert_has(&out, "crontab.stable.example.com \"my-crontab\" deleted");
    let gone = k.fails(&["get", "ct", "my-crontab"], None).await;
    assert_has(
        &gone,
        r#"crontabs.stable.example.com "my-crontab" not found"#,
    );

    // Removing the CRD removes its objects first (kubectl waits for the CRD to go).
    k.create(&crontab("left-over", "web")).await;
    let out = k
        .ok(&["delete", "crd", "crontabs.stable.example.com"])
        .await;
    assert_has(
        &out,
        "customresourcedefinition.apiextensions.k8s.io \"crontabs.stable.example.com\" deleted",
    );
    let gone = k
        .fails(&["get", "crd", "crontabs.stable.example.com"], None)
        .await;
    assert_has(
        &gone,
        r#"customresourcedefinitions.apiextensions.k8s.io "crontabs.stable.example.com" not found"#,
    );
    let ar = ApiResource::from_gvk(&GroupVersionKind::gvk(
        "stable.example.com",
        "v1",
        "CronTab",
    ));
    let r = Api::<DynamicObject>::namespaced_with(srv.client(), "default", &ar)
        .get("left-over")
        .await;
    assert!(
        matches!(r, Err(kube::Error::Api(ref e)) if e.code == 404),
        "the custom resource is still served: {r:?}"
    );
    srv.shutdown().await;
}

/// A watching kubectl and the lines it printed so far.
struct Watcher {
    child: tokio::process::Child,
    lines: tokio::io::Lines<BufReader<tokio::process::ChildStdout>>,
    seen: Vec<String>,
}

impl Watcher {
    /// Reads lines until one's cells satisfy `want`, and returns that line.
    async fn next_matching(&mut self, want: impl Fn(&[&str]) -> bool) -> String {
        let seen = &mut self.seen;
        loop {
            let line = tokio::time::timeout(LINE_TIMEOUT, self.lines.next_line())
                .await
                .unwrap_or_else(|_| panic!("kubectl --watch printed nothing matching within {LINE_TIMEOUT:?}; saw {seen:#?}"))
                .expect("kubectl stdout readable")
                .unwrap_or_else(|| panic!("kubectl --watch ended; saw {seen:#?}"));
            seen.push(line.clone());
            if want(&cells(&line)) {
                return line;
            }
        }
    }

    async fn stop(mut self) {
        self.child.kill().await.expect("watching kubectl killed");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_watch_prints_events_while_objects_change() {
    let (srv, k) = crontabs_or_skip!("kubectl_watch_prints_events_while_objects_change");
    k.apply(&crontab("first", "web")).await;

    let mut w = k.watch(&["get", "crontabs", "--watch", "--output-watch-events"]);

    // The header, then the existing object (the watch is established once it shows up).
    let header = w.next_matching(|c| c.first() == Some(&"EVENT")).await;
    assert_eq!(cells(&header), ["EVENT", "NAME", "SPEC", "REPLICAS", "AGE"]);
    w.next_matching(|c| c[..2] == ["ADDED", "first"]).await;

    // A change made through the library's kube::Client ...
    let gvk = GroupVersionKind::gvk("stable.example.com", "v1", "CronTab");
    let api: Api<DynamicObject> =
        Api::namespaced_with(srv.client(), "default", &ApiResource::from_gvk(&gvk));
    api.patch(
        "first",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 3}})),
    )
    .await
    .expect("merge patch through kube::Api");
    let modified = w.next_matching(|c| c.first() == Some(&"MODIFIED")).await;
    assert_eq!(cells(&modified)[..2], ["MODIFIED", "first"]);
    assert_eq!(cells(&modified)[7], "3", "{modified}");

    // ... and changes made by another kubectl.
    k.create(&crontab("second", "db")).await;
    let added = w.next_matching(|c| c.first() == Some(&"ADDED")).await;
    assert_eq!(cells(&added)[..2], ["ADDED", "second"]);
    k.ok(&["delete", "ct", "second"]).await;
    let deleted = w.next_matching(|c| c.first() == Some(&"DELETED")).await;
    assert_eq!(cells(&deleted)[..2], ["DELETED", "second"]);

    w.stop().await;
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_watch_with_names_and_a_selector() {
    let (srv, k) = crontabs_or_skip!("kubectl_watch_with_names_and_a_selector");
    k.apply(&crontab("seed", "web")).await;

    let mut w = k.watch(&["get", "ct", "--watch", "-l", "app=web", "-o", "name"]);
    w.next_matching(|c| c == ["crontab.stable.example.com/seed"])
        .await;

    // An object outside the selector is never printed; the next matching one is.
    k.create(&crontab("hidden", "db")).await;
    k.create(&crontab("shown", "web")).await;
    w.next_matching(|c| c == ["crontab.stable.example.com/shown"])
        .await;
    assert!(
        !w.seen.iter().any(|l| l.contains("hidden")),
        "{:#?}",
        w.seen
    );

    w.stop().await;
    srv.shutdown().await;
}

/// kubectl's default `--validate=strict` sends `fieldValidation=Strict`, which a real server answers
/// with a 400 for unknown fields; `--validate=warn` gets `Warning` headers instead.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_field_validation_reports_unknown_fields() {
    let (srv, k) = crontabs_or_skip!("kubectl_field_validation_reports_unknown_fields");
    let extra =
        crontab("strict", "web").replace("image: my-image", "image: my-image\n  unknownField: x");

    let strict = k.fails(&["create", "-f", "-"], Some(&extra)).await;
    assert_has(
        &strict,
        r#"CronTab in version "v1" cannot be handled as a CronTab: strict decoding error: unknown field "spec.unknownField""#,
    );

    let warn = k
        .run(&["create", "--validate=warn", "-f", "-"], Some(&extra))
        .await;
    assert!(warn.ok, "{}", warn.stderr);
    assert_has(
        &warn.stderr,
        r#"Warning: unknown field "spec.unknownField""#,
    );
    srv.shutdown().await;
}

fn testdata(rel: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../testdata")
        .join(rel)
}

/// The shared YAML table: what kubectl sends for `scalars.yaml` is `scalars.json` (so the
/// fixture every reader is tested against stays true to kubectl), the server stores exactly that
/// when kubectl creates it, and the server reading the same YAML as a request body stores the
/// same again.
#[tokio::test]
async fn kubectl_and_the_server_read_the_yaml_table_alike() {
    let Some(bin) = kubectl_or_skip("kubectl_and_the_server_read_the_yaml_table_alike") else {
        return;
    };
    let srv = FakeApiServer::start().await.expect("server starts");
    let crd = kube_codegen_crd::read::read_documents(&testdata("yaml/scalars-crd.yaml")).unwrap();
    srv.register_crd(crd[0].value.clone()).unwrap();
    let k = Kubectl::new(bin, &srv);
    let table = testdata("yaml/scalars.yaml");
    let table = table.to_str().unwrap();
    let expected: Value =
        serde_json::from_str(&std::fs::read_to_string(testdata("yaml/scalars.json")).unwrap())
            .unwrap();
    let sent: Value = serde_json::from_str(
        &k.ok(&["create", "--dry-run=client", "-o", "json", "-f", table])
            .await,
    )
    .unwrap();
    assert_eq!(sent, expected, "kubectl no longer sends scalars.json");
    let ours = kube_codegen_crd::read::read_documents(Path::new(table)).unwrap();
    assert_eq!(
        ours[0].value, expected,
        "the shared reader differs from kubectl"
    );

    k.ok(&["create", "-f", table]).await;
    let stored: Value = serde_json::from_str(
        &k.ok(&["get", "scalars", "table", "-n", "default", "-o", "json"])
            .await,
    )
    .unwrap();
    assert_eq!(stored["spec"], expected["spec"]);

    let client = srv.in_process_client();
    let yaml = std::fs::read_to_string(table)
        .unwrap()
        .replace("name: table", "name: as-yaml-body");
    let req = http::Request::builder()
        .method("POST")
        .uri("/apis/yaml.example.com/v1/namespaces/default/scalars")
        .header("content-type", "application/yaml")
        .body(yaml.into_bytes())
        .unwrap();
    let body: Value = client.request(req).await.expect("created from a YAML body");
    assert_eq!(body["spec"], expected["spec"]);
}

/// kubectl prints the server's 422 for a CRD the validator refuses, every cause with its field.
#[tokio::test]
async fn kubectl_shows_every_cause_of_an_invalid_crd() {
    let Some(bin) = kubectl_or_skip("kubectl_shows_every_cause_of_an_invalid_crd") else {
        return;
    };
    let srv = FakeApiServer::start().await.expect("server starts");
    let k = Kubectl::new(bin, &srv);
    let bad = CRD
        .replace(
            "type: object\n            description: The desired schedule.",
            "description: The desired schedule.",
        )
        .replace(
            "image:\n                type: string",
            "image:\n                description: untyped",
        );
    let out = k.run(&["apply", "-f", "-"], Some(&bad)).await;
    assert!(!out.ok, "{}", out.stdout);
    assert!(
        out.stderr
            .contains("The CustomResourceDefinition \"crontabs.stable.example.com\" is invalid"),
        "{}",
        out.stderr
    );
    for cause in [
        "spec.validation.openAPIV3Schema.properties[spec].properties[image].type: Required value: must not be empty for specified object fields",
        "spec.validation.openAPIV3Schema.properties[spec].type: Required value: must not be empty for specified object fields",
    ] {
        assert!(
            out.stderr.contains(cause),
            "{cause:?} missing: {}",
            out.stderr
        );
    }
}

/// A ConfigMap in `default` owned by CronTab `owner` (uid `uid`), made through kube.
async fn owned_configmap(srv: &FakeApiServer, name: &str, owner: &str, uid: &str, block: bool) {
    let cm: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": name, "ownerReferences": [{
            "apiVersion": "stable.example.com/v1", "kind": "CronTab", "name": owner, "uid": uid,
            "blockOwnerDeletion": block,
        }]},
    }))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::ConfigMap>::default_namespaced(srv.client())
        .create(&Default::default(), &cm)
        .await
        .unwrap_or_else(|e| panic!("configmap {name}: {e}"));
}

/// CronTab `owner` with ConfigMaps `<owner>-block` (blockOwnerDeletion) and `<owner>-free`.
async fn owner_with_dependents(srv: &FakeApiServer, k: &Kubectl, owner: &str) {
    k.create(&crontab(owner, "web")).await;
    let uid = k.jsonpath(&[owner], "{.metadata.uid}").await;
    owned_configmap(srv, &format!("{owner}-block"), owner, &uid, true).await;
    owned_configmap(srv, &format!("{owner}-free"), owner, &uid, false).await;
}

/// `kubectl get cm <names> --ignore-not-found -o name`: the names that exist.
async fn configmaps(k: &Kubectl, names: &[&str]) -> Vec<String> {
    let out = k
        .ok(&[&["get", "cm", "--ignore-not-found", "-o", "name"], names].concat())
        .await;
    out.lines()
        .map(|l| l.trim_start_matches("configmap/").to_string())
        .collect()
}

/// Polls `kubectl get cm` until none of `names` is left.
async fn wait_configmaps_gone(k: &Kubectl, names: &[&str]) {
    let deadline = tokio::time::Instant::now() + LINE_TIMEOUT;
    loop {
        let left = configmaps(k, names).await;
        if left.is_empty() {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "configmaps {left:?} still there after {LINE_TIMEOUT:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// `kubectl delete --cascade=background|foreground|orphan` of an owner: the garbage collector
/// deletes or releases its dependents as a cluster's does.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_delete_cascades() {
    let (srv, k) = crontabs_or_skip!("kubectl_delete_cascades");

    owner_with_dependents(&srv, &k, "bg").await;
    let out = k.ok(&["delete", "ct", "bg", "--cascade=background"]).await;
    assert_has(&out, "crontab.stable.example.com \"bg\" deleted");
    wait_configmaps_gone(&k, &["bg-block", "bg-free"]).await;

    // Foreground: kubectl waits for the owner, which waits for its blocking dependent.
    owner_with_dependents(&srv, &k, "fg").await;
    let out = k.ok(&["delete", "ct", "fg", "--cascade=foreground"]).await;
    assert_has(&out, "crontab.stable.example.com \"fg\" deleted");
    assert_eq!(configmaps(&k, &["fg-block"]).await, Vec::<String>::new());
    wait_configmaps_gone(&k, &["fg-free"]).await;

    owner_with_dependents(&srv, &k, "or").await;
    let out = k.ok(&["delete", "ct", "or", "--cascade=orphan"]).await;
    assert_has(&out, "crontab.stable.example.com \"or\" deleted");
    let gone = k.run(&["get", "ct", "or"], None).await;
    assert!(!gone.ok, "the owner is still there: {}", gone.stdout);
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        configmaps(&k, &["or-block", "or-free"]).await,
        ["or-block", "or-free"]
    );
    let refs = k
        .ok(&[
            "get",
            "cm",
            "or-block",
            "or-free",
            "-o",
            "jsonpath={.items[*].metadata.ownerReferences}",
        ])
        .await;
    assert_eq!(refs.trim(), "", "owner references left on orphans");
    srv.shutdown().await;
}

/// `kubectl delete ns`: the namespace is `Terminating` while content with a finalizer remains,
/// kubectl's creates in it are refused with the real message, and it goes once it is empty.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_delete_namespace() {
    let (srv, k) = crontabs_or_skip!("kubectl_delete_namespace");
    k.ok(&["create", "namespace", "team"]).await;
    k.ok(&["create", "configmap", "plain", "-n", "team"]).await;
    k.ok(&["create", "configmap", "held", "-n", "team"]).await;
    k.ok(&[
        "patch",
        "cm",
        "held",
        "-n",
        "team",
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"finalizers":["example.com/hold"]}}"#,
    ])
    .await;

    let out = k.ok(&["delete", "ns", "team", "--wait=false"]).await;
    assert_has(&out, "namespace \"team\" deleted");
    let phase = k
        .ok(&["get", "ns", "team", "-o", "jsonpath={.status.phase}"])
        .await;
    assert_eq!(phase, "Terminating");
    let refused = k
        .fails(&["create", "configmap", "late", "-n", "team"], None)
        .await;
    assert_has(
        &refused,
        "configmaps \"late\" is forbidden: unable to create new content in namespace team because it is being terminated",
    );

    k.ok(&[
        "patch",
        "cm",
        "held",
        "-n",
        "team",
        "--type",
        "merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ])
    .await;
    // Silent when the namespace is already gone by the time kubectl looks.
    k.ok(&["wait", "--for=delete", "ns/team", "--timeout=20s"])
        .await;
    let gone = k.fails(&["get", "ns", "team"], None).await;
    assert_has(&gone, "namespaces \"team\" not found");
    // The namespaces a cluster starts with, one of which may not be deleted.
    let all = k.ok(&["get", "ns", "-o", "name"]).await;
    for ns in ["default", "kube-node-lease", "kube-public", "kube-system"] {
        assert_has(&all, &format!("namespace/{ns}"));
    }
    let refused = k.fails(&["delete", "ns", "kube-system"], None).await;
    assert_has(&refused, "this namespace may not be deleted");

    // `--cascade=orphan` is about what the namespace owns elsewhere: a ConfigMap in `default`
    // owned by it stays, without the reference; the namespace's contents go regardless.
    k.ok(&["create", "namespace", "parent"]).await;
    k.ok(&["create", "configmap", "inside", "-n", "parent"])
        .await;
    let uid = k
        .ok(&["get", "ns", "parent", "-o", "jsonpath={.metadata.uid}"])
        .await;
    let cm: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": "child", "ownerReferences": [{
            "apiVersion": "v1", "kind": "Namespace", "name": "parent", "uid": uid}]},
    }))
    .unwrap();
    Api::<k8s_openapi::api::core::v1::ConfigMap>::default_namespaced(srv.client())
        .create(&Default::default(), &cm)
        .await
        .unwrap();
    let out = k.ok(&["delete", "ns", "parent", "--cascade=orphan"]).await;
    assert_has(&out, "namespace \"parent\" deleted");
    k.ok(&["wait", "--for=delete", "ns/parent", "--timeout=20s"])
        .await;
    assert_eq!(configmaps(&k, &["child"]).await, ["child"]);
    let refs = k
        .ok(&[
            "get",
            "cm",
            "child",
            "-o",
            "jsonpath={.metadata.ownerReferences}",
        ])
        .await;
    assert_eq!(refs.trim(), "", "owner reference left on the orphan");
    srv.shutdown().await;
}

/// kubectl 1.32 asks `/api` and `/apis` for aggregated discovery first; with it, `api-resources`
/// needs no per-group-version documents.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_api_resources_uses_aggregated_discovery() {
    let (srv, k) = crontabs_or_skip!("kubectl_api_resources_uses_aggregated_discovery");
    // A kubectl with an empty discovery cache.
    let fresh = Kubectl::new(k.bin.clone(), &srv);
    srv.faults().clear_requests();
    let out = fresh.ok(&["api-resources"]).await;
    let line = out
        .lines()
        .find(|l| l.starts_with("crontabs "))
        .unwrap_or_else(|| panic!("no crontabs in:\n{out}"));
    assert_eq!(
        cells(line),
        ["crontabs", "ct", "stable.example.com/v1", "true", "CronTab"]
    );
    assert!(
        out.lines()
            .any(|l| cells(l).first() == Some(&"deployments")),
        "{out}"
    );
    let requests = srv.requests();
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert!(
        paths.contains(&"/api") && paths.contains(&"/apis"),
        "{paths:?}"
    );
    let per_group: Vec<&&str> = paths
        .iter()
        .filter(|p| p.starts_with("/apis/") || p.starts_with("/api/"))
        .collect();
    assert!(
        per_group.is_empty(),
        "kubectl fell back to per-group discovery: {per_group:?}"
    );
    srv.shutdown().await;
}

const GATEWAY_CRD: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gateways.net.example.com
spec:
  group: net.example.com
  scope: Namespaced
  names: {plural: gateways, singular: gateway, kind: Gateway, listKind: GatewayList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              listeners:
                type: array
                x-kubernetes-list-type: map
                x-kubernetes-list-map-keys: [name]
                items:
                  type: object
                  required: [name]
                  properties:
                    name: {type: string}
                    port: {type: integer}
"#;

fn gateway(listeners: &str) -> String {
    format!(
        "apiVersion: net.example.com/v1\nkind: Gateway\nmetadata:\n  name: gw\nspec:\n  listeners:\n{listeners}"
    )
}

/// `kubectl apply --server-side` by two field managers on a list-map field: each keeps its own
/// element, a change to the other's element is refused with the server's conflict text, and
/// `--force-conflicts` takes the field over.
#[tokio::test]
async fn kubectl_server_side_apply_by_two_managers_on_a_list_map() {
    let Some(bin) = kubectl_or_skip("kubectl_server_side_apply_by_two_managers_on_a_list_map")
    else {
        return;
    };
    let srv = FakeApiServer::start().await.expect("server starts");
    let k = Kubectl::new(bin, &srv);
    k.apply(GATEWAY_CRD).await;
    k.ok(&[
        "wait",
        "--for=condition=Established",
        "crd/gateways.net.example.com",
        "--timeout=20s",
    ])
    .await;
    let ssa = |manager: &'static str| {
        vec![
            "apply",
            "--server-side",
            "--field-manager",
            manager,
            "-f",
            "-",
        ]
    };
    let out = k
        .ok_stdin(
            &ssa("team-a"),
            Some(&gateway("  - name: http\n    port: 80\n")),
        )
        .await;
    assert_has(&out, "gateway.net.example.com/gw serverside-applied");
    k.ok_stdin(
        &ssa("team-b"),
        Some(&gateway("  - name: https\n    port: 443\n")),
    )
    .await;
    let get = || {
        k.ok(&[
            "get",
            "gateway",
            "gw",
            "-o",
            "json",
            "--show-managed-fields",
        ])
    };
    let obj: Value = serde_json::from_str(&get().await).unwrap();
    assert_eq!(
        obj["spec"]["listeners"],
        json!([{"name": "http", "port": 80}, {"name": "https", "port": 443}])
    );
    let owned = |obj: &Value, manager: &str| {
        obj["metadata"]["managedFields"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["manager"] == manager)
            .map(|e| e["fieldsV1"].clone())
            .unwrap_or_else(|| panic!("no entry for {manager}"))
    };
    assert_eq!(
        owned(&obj, "team-b"),
        json!({"f:spec": {"f:listeners": {"k:{\"name\":\"https\"}": {".": {}, "f:name": {}, "f:port": {}}}}})
    );

    let change_http = gateway("  - name: http\n    port: 8080\n");
    let err = k.fails(&ssa("team-b"), Some(&change_http)).await;
    assert_has(
        &err,
        "Apply failed with 1 conflict: conflict with \"team-a\": .spec.listeners[name=\"http\"].port",
    );
    let mut forced = ssa("team-b");
    forced.insert(2, "--force-conflicts");
    k.ok_stdin(&forced, Some(&change_http)).await;
    let obj: Value = serde_json::from_str(&get().await).unwrap();
    // team-b's apply no longer holds https, which only it owned: gone; http is now on 8080.
    assert_eq!(
        obj["spec"]["listeners"],
        json!([{"name": "http", "port": 8080}])
    );
    assert_eq!(
        owned(&obj, "team-a"),
        json!({"f:spec": {"f:listeners": {"k:{\"name\":\"http\"}": {".": {}, "f:name": {}}}}})
    );
}

/// An HTTPRoute-shaped CRD (written here, after Gateway API's own rules): a filter's type must
/// match the field it sets, and hostnames get a size rule in `v2` of the schema.
fn route_crd(hostname_rule: bool) -> String {
    let hostnames_rule = if hostname_rule {
        "\n                x-kubernetes-validations:\n                - rule: self.size() <= 2\n                  message: at most two hostnames"
    } else {
        ""
    };
    format!(
        r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: httproutes.net.example.com
spec:
  group: net.example.com
  scope: Namespaced
  names: {{plural: httproutes, singular: httproute, kind: HTTPRoute, listKind: HTTPRouteList}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              hostnames:
                type: array
                items: {{type: string}}{hostnames_rule}
              filters:
                type: array
                items:
                  type: object
                  required: [type]
                  properties:
                    type: {{type: string}}
                    requestHeaderModifier: {{type: object, x-kubernetes-preserve-unknown-fields: true}}
                  x-kubernetes-validations:
                  - message: filter.requestHeaderModifier must be specified for RequestHeaderModifier filter.type
                    rule: '!(!has(self.requestHeaderModifier) && self.type == ''RequestHeaderModifier'')'
"#
    )
}

fn route(hostnames: &str, filter: &str) -> String {
    format!(
        "apiVersion: net.example.com/v1\nkind: HTTPRoute\nmetadata:\n  name: r\nspec:\n  hostnames: [{hostnames}]\n  filters:\n  - {filter}\n"
    )
}

/// kubectl sees a broken CEL rule as on a real cluster (the 422 with the rule's message at the
/// rule's node), and an update keeping a value that breaks a newer rule passes (ratcheting).
#[tokio::test]
async fn kubectl_cel_rules_and_ratcheting() {
    let Some(bin) = kubectl_or_skip("kubectl_cel_rules_and_ratcheting") else {
        return;
    };
    let srv = FakeApiServer::start().await.expect("server starts");
    let k = Kubectl::new(bin, &srv);
    let establish = || {
        k.ok(&[
            "wait",
            "--for=condition=Established",
            "crd/httproutes.net.example.com",
            "--timeout=20s",
        ])
    };
    k.apply(&route_crd(false)).await;
    establish().await;
    let err = k
        .fails(
            &["apply", "-f", "-"],
            Some(&route("a.example.com", "{type: RequestHeaderModifier}")),
        )
        .await;
    assert_has(
        &err,
        "The HTTPRoute \"r\" is invalid: spec.filters[0]: Invalid value: filter.requestHeaderModifier must be specified for RequestHeaderModifier filter.type",
    );
    k.apply(&route(
        "a.example.com, b.example.com, c.example.com",
        "{type: Mirror}",
    ))
    .await;
    // A newer schema limits hostnames; the stored three are kept while they do not change.
    k.apply(&route_crd(true)).await;
    establish().await;
    let out = k
        .apply(&route(
            "a.example.com, b.example.com, c.example.com",
            "{type: RequestHeaderModifier, requestHeaderModifier: {set: []}}",
        ))
        .await;
    assert_has(&out, "httproute.net.example.com/r configured");
    let err = k
        .fails(
            &["apply", "-f", "-"],
            Some(&route(
                "a.example.com, b.example.com, d.example.com",
                "{type: Mirror}",
            )),
        )
        .await;
    assert_has(
        &err,
        "The HTTPRoute \"r\" is invalid: spec.hostnames: Invalid value: at most two hostnames",
    );
}

/// A CRD whose rule is quadratic over an unbounded list is refused as a real server refuses
/// it (its estimated cost), and accepted once the list and its strings are bounded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_cel_cost_budget_at_crd_creation() {
    let Some(bin) = kubectl_or_skip("kubectl_cel_cost_budget_at_crd_creation") else {
        return;
    };
    let srv = FakeApiServer::start().await.expect("server starts");
    let k = Kubectl::new(bin, &srv);
    let crd = |members: &str| {
        format!(
            r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: teams.net.example.com
spec:
  group: net.example.com
  scope: Namespaced
  names: {{plural: teams, singular: team, kind: Team, listKind: TeamList}}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              members: {members}
            x-kubernetes-validations:
            - rule: self.members.all(m, self.members.exists_one(n, n == m))
              message: members are unique
"#
        )
    };
    let err = k
        .fails(
            &["apply", "-f", "-"],
            Some(&crd("{type: array, items: {type: string}}")),
        )
        .await;
    assert_has(
        &err,
        "The CustomResourceDefinition \"teams.net.example.com\" is invalid: \n* spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)",
    );
    assert_has(
        &err,
        "* spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x",
    );
    let out = k
        .apply(&crd(
            "{type: array, maxItems: 50, items: {type: string, maxLength: 64}}",
        ))
        .await;
    assert_has(
        &out,
        "customresourcedefinition.apiextensions.k8s.io/teams.net.example.com created",
    );
}

/// One Event store behind both Event APIs, as kube-apiserver serves it: what an `events.k8s.io/v1`
/// recorder (kube's `Recorder`, under kube-codegen-runtime's `events::Recorder`) writes is what
/// `kubectl get events` (core `v1`) lists, in the core shape and the Event printer's table, and
/// a core Event reads back through `events.k8s.io/v1`; one resourceVersion, one watch history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_get_events_shows_what_the_events_k8s_io_recorder_wrote() {
    use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, ObjectReference};
    use k8s_openapi::api::events::v1::Event;
    use kube::Resource;
    use kube::runtime::events::{Event as Published, EventType, Recorder, Reporter};

    let Some(bin) =
        kubectl_or_skip("kubectl_get_events_shows_what_the_events_k8s_io_recorder_wrote")
    else {
        return;
    };
    let srv = FakeApiServer::start().await.expect("server starts");
    let k = Kubectl::new(bin, &srv);
    let client = srv.client();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some("settings".into());
    let cm = cms
        .create(&Default::default(), &cm)
        .await
        .expect("configmap");
    let reference: ObjectReference = cm.object_ref(&());

    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "sample-controller".into(),
            instance: Some("sample-controller-0".into()),
        },
    );
    let published = Published {
        type_: EventType::Warning,
        reason: "Invalid".into(),
        note: Some("settings has no data".into()),
        action: "Validate".into(),
        secondary: None,
    };
    // Twice: the second is the series patch (a merge patch through events.k8s.io).
    for _ in 0..2 {
        recorder
            .publish(&published, &reference)
            .await
            .expect("the recorder publishes");
    }

    // kubectl's core v1 view: the same object, converted.
    let list: Value = serde_json::from_str(&k.ok(&["get", "events", "-o", "json"]).await).unwrap();
    let items = list["items"].as_array().expect("items");
    assert_eq!(items.len(), 1, "{list:#}");
    let ev = &items[0];
    assert_eq!(ev["apiVersion"], "v1");
    assert_eq!(ev["involvedObject"]["kind"], "ConfigMap");
    assert_eq!(ev["involvedObject"]["name"], "settings");
    assert_eq!(ev["message"], "settings has no data");
    assert_eq!(ev["reason"], "Invalid");
    assert_eq!(ev["type"], "Warning");
    assert_eq!(ev["reportingComponent"], "sample-controller");
    assert_eq!(ev["reportingInstance"], "sample-controller-0");
    assert_eq!(ev["series"]["count"], 2);
    assert_eq!(ev["firstTimestamp"], Value::Null);
    assert!(
        ev.get("regarding").is_none() && ev.get("note").is_none(),
        "{ev:#}"
    );

    // The table kubectl prints: the Event printer's columns.
    let table = k.ok(&["get", "events"]).await;
    let mut lines = table.lines();
    assert_eq!(
        cells(lines.next().expect("header")),
        ["LAST", "SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    );
    let row = lines.next().unwrap_or_else(|| panic!("{table}"));
    assert_has(
        row,
        "Warning   Invalid   configmap/settings   settings has no data",
    );
    let wide = k.ok(&["get", "events", "-o", "wide"]).await;
    assert_has(&wide, "sample-controller, sample-controller-0");

    // The events.k8s.io view of the same object, through kube and through kubectl.
    let name = ev["metadata"]["name"].as_str().unwrap().to_string();
    let new_api: Api<Event> = Api::namespaced(client.clone(), "default");
    let read = new_api.get(&name).await.expect("events.k8s.io get");
    assert_eq!(read.note.as_deref(), Some("settings has no data"));
    assert_eq!(
        read.regarding.as_ref().and_then(|r| r.name.as_deref()),
        Some("settings")
    );
    assert_eq!(
        read.metadata.resource_version.as_deref(),
        ev["metadata"]["resourceVersion"].as_str()
    );
    let out = k
        .ok(&[
            "get",
            "events.v1.events.k8s.io",
            &name,
            "-o",
            "jsonpath={.note}",
        ])
        .await;
    assert_eq!(out, "settings has no data");

    // A core Event (client-go's old recorder, kubelet) reads through events.k8s.io/v1.
    let core_api: Api<CoreEvent> = Api::namespaced(client.clone(), "default");
    let core: CoreEvent = serde_json::from_value(json!({
        "metadata": {"name": "settings.core"},
        "involvedObject": {"kind": "ConfigMap", "name": "settings", "namespace": "default"},
        "reason": "Seen", "message": "seen by an old recorder", "type": "Normal",
        "source": {"component": "old-recorder"},
        "count": 4,
    }))
    .unwrap();
    core_api
        .create(&Default::default(), &core)
        .await
        .expect("core create");
    let read = new_api
        .get("settings.core")
        .await
        .expect("events.k8s.io get");
    assert_eq!(read.note.as_deref(), Some("seen by an old recorder"));
    assert_eq!(read.deprecated_count, Some(4));
    assert_eq!(
        read.deprecated_source.and_then(|s| s.component).as_deref(),
        Some("old-recorder")
    );
    assert_eq!(
        new_api.list(&Default::default()).await.unwrap().items.len(),
        2
    );

    // Deleting through one API deletes it from both.
    new_api
        .delete("settings.core", &Default::default())
        .await
        .expect("delete through events.k8s.io");
    assert!(core_api.get_opt("settings.core").await.unwrap().is_none());
    srv.shutdown().await;
}
