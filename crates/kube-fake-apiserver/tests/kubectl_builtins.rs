//! kubectl against the built-in kinds: an operator-style install manifest (workloads, services,
//! storage claims, policy, RBAC, admission configuration, networking, autoscaling) applied
//! client-side (twice, the second time a three-way strategic merge patch computed from the
//! served OpenAPI v3 schemas) and server-side, read back with `kubectl get`; `kubectl explain` of
//! a built-in. When kubectl is not installed each test prints a `SKIPPED` line and passes, except
//! under `CI=true`.

use crate::common;
use common::kubectl::{Kubectl, kubectl_or_skip};

use kube_fake_apiserver::FakeApiServer;
use serde_json::Value;

/// Every document of [`manifest`]: `kubectl get` resource and name.
const OBJECTS: &[(&str, &str)] = &[
    ("serviceaccounts", "db"),
    ("statefulsets.apps", "db"),
    ("services", "db"),
    ("persistentvolumeclaims", "data"),
    ("jobs.batch", "migrate"),
    ("cronjobs.batch", "backup"),
    ("daemonsets.apps", "agent"),
    ("poddisruptionbudgets.policy", "db"),
    ("roles.rbac.authorization.k8s.io", "db"),
    ("rolebindings.rbac.authorization.k8s.io", "db"),
    ("clusterroles.rbac.authorization.k8s.io", "db-operator"),
    (
        "clusterrolebindings.rbac.authorization.k8s.io",
        "db-operator",
    ),
    (
        "validatingwebhookconfigurations.admissionregistration.k8s.io",
        "db-webhook",
    ),
    (
        "validatingadmissionpolicies.admissionregistration.k8s.io",
        "db-replicas",
    ),
    (
        "validatingadmissionpolicybindings.admissionregistration.k8s.io",
        "db-replicas",
    ),
    ("ingresses.networking.k8s.io", "db"),
    ("networkpolicies.networking.k8s.io", "db"),
    ("horizontalpodautoscalers.autoscaling", "db"),
];

/// An operator's install manifest; `replicas`, `image` and `port` change between applies.
fn manifest(replicas: u32, image: &str, port: u32) -> String {
    format!(
        r#"apiVersion: v1
kind: ServiceAccount
metadata: {{name: db, namespace: default}}
---
apiVersion: apps/v1
kind: StatefulSet
metadata: {{name: db, namespace: default, labels: {{app: db}}}}
spec:
  serviceName: db
  replicas: {replicas}
  selector: {{matchLabels: {{app: db}}}}
  template:
    metadata: {{labels: {{app: db}}}}
    spec:
      serviceAccountName: db
      containers:
      - name: db
        image: {image}
        ports: [{{containerPort: {port}, name: sql}}]
        env: [{{name: MODE, value: primary}}]
        volumeMounts: [{{name: data, mountPath: /var/lib/db}}]
      - name: exporter
        image: exporter:1
  volumeClaimTemplates:
  - metadata: {{name: data}}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {{requests: {{storage: 1Gi}}}}
---
apiVersion: v1
kind: Service
metadata: {{name: db, namespace: default}}
spec:
  selector: {{app: db}}
  ports: [{{name: sql, port: {port}, targetPort: sql}}]
---
apiVersion: v1
kind: PersistentVolumeClaim
metadata: {{name: data, namespace: default}}
spec:
  accessModes: [ReadWriteOnce]
  resources: {{requests: {{storage: 2Gi}}}}
---
apiVersion: batch/v1
kind: Job
metadata: {{name: migrate, namespace: default}}
spec:
  backoffLimit: 2
  # A Job's template is immutable (kube-apiserver refuses a change): the same in every apply.
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: migrate, image: "migrate:1", args: [migrate]}}]
---
apiVersion: batch/v1
kind: CronJob
metadata: {{name: backup, namespace: default}}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{{name: backup, image: {image}}}]
---
apiVersion: apps/v1
kind: DaemonSet
metadata: {{name: agent, namespace: default}}
spec:
  selector: {{matchLabels: {{app: agent}}}}
  template:
    metadata: {{labels: {{app: agent}}}}
    spec:
      containers: [{{name: agent, image: agent:1}}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: db, namespace: default}}
spec:
  maxUnavailable: 1
  selector: {{matchLabels: {{app: db}}}}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {{name: db, namespace: default}}
rules:
- apiGroups: [""]
  resources: [configmaps]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {{name: db, namespace: default}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: db}}
subjects: [{{kind: ServiceAccount, name: db, namespace: default}}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {{name: db-operator}}
rules:
- apiGroups: [apps]
  resources: [statefulsets]
  verbs: [get, list, watch, create, update, patch, delete]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {{name: db-operator}}
roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: db-operator}}
subjects: [{{kind: ServiceAccount, name: db, namespace: default}}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {{name: db-webhook}}
webhooks:
- name: validate.db.example.com
  admissionReviewVersions: [v1]
  sideEffects: None
  # No webhook runs behind this service here: the server calls it (and fails) on every
  # StatefulSet write, so the install would refuse them under the default `Fail`.
  failurePolicy: Ignore
  clientConfig:
    service: {{name: db-webhook, namespace: default, path: /validate, port: 443}}
  rules:
  - apiGroups: [apps]
    apiVersions: [v1]
    operations: [CREATE, UPDATE]
    resources: [statefulsets]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {{name: db-replicas}}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - apiGroups: [apps]
      apiVersions: [v1]
      operations: [CREATE, UPDATE]
      resources: [statefulsets]
  validations:
  - expression: "object.spec.replicas <= 5"
    message: at most 5 replicas
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {{name: db-replicas}}
spec:
  policyName: db-replicas
  validationActions: [Deny]
---
apiVersion: networking.k8s.io/v1
kind: Ingress
metadata: {{name: db, namespace: default}}
spec:
  rules:
  - host: db.example.com
    http:
      paths:
      - path: /
        pathType: Prefix
        backend: {{service: {{name: db, port: {{number: {port}}}}}}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {{name: db, namespace: default}}
spec:
  podSelector: {{matchLabels: {{app: db}}}}
  policyTypes: [Ingress]
  ingress:
  - ports: [{{port: {port}, protocol: TCP}}]
---
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {{name: db, namespace: default}}
spec:
  scaleTargetRef: {{apiVersion: apps/v1, kind: StatefulSet, name: db}}
  minReplicas: 1
  maxReplicas: 5
  metrics:
  - type: Resource
    resource: {{name: cpu, target: {{type: Utilization, averageUtilization: 80}}}}
"#
    )
}

/// `kubectl get <resource> <name> -o json` for every document.
async fn read_back(k: &Kubectl) -> Vec<Value> {
    let mut out = Vec::new();
    for (resource, name) in OBJECTS {
        let text = k
            .clean(
                &[
                    "get",
                    resource,
                    name,
                    "-n",
                    "default",
                    "-o",
                    "json",
                    "--show-managed-fields",
                ],
                None,
            )
            .await;
        let v: Value = serde_json::from_str(&text).expect("kubectl printed JSON");
        assert_eq!(v["metadata"]["name"], *name, "{resource}: {v}");
        out.push(v);
    }
    out
}

fn object<'a>(all: &'a [Value], kind: &str) -> &'a Value {
    all.iter()
        .find(|v| v["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_client_side_apply_of_builtins_twice() {
    let Some(bin) = kubectl_or_skip("kubectl_client_side_apply_of_builtins_twice") else {
        return;
    };
    let srv = FakeApiServer::start().await.expect("server starts");
    let k = Kubectl::new(bin, &srv);
    let first = manifest(1, "db:1", 5432);
    let out = k.clean(&["apply", "-f", "-"], Some(&first)).await;
    assert_eq!(out.lines().count(), OBJECTS.len(), "{out}");
    assert!(out.lines().all(|l| l.ends_with(" created")), "{out}");
    // The second apply computes a three-way strategic merge patch from the OpenAPI v3 schemas
    // (a warning on stderr, which `clean` refuses, when they lack the kind or a field).
    srv.faults().clear_requests();
    let second = manifest(3, "db:2", 5433);
    let out = k.clean(&["apply", "-f", "-"], Some(&second)).await;
    assert!(out.contains("statefulset.apps/db configured"), "{out}");
    let patches: Vec<String> = srv
        .requests()
        .iter()
        .filter(|r| r.method == "PATCH")
        .map(|r| r.path.clone())
        .collect();
    assert!(
        patches.iter().any(|p| p.ends_with("/statefulsets/db")),
        "{patches:?}"
    );
    let all = read_back(&k).await;
    let sts = object(&all, "StatefulSet");
    assert_eq!(sts["spec"]["replicas"], 3, "{sts}");
    let containers = sts["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap();
    assert_eq!(containers.len(), 2, "the exporter is kept: {sts}");
    assert_eq!(containers[0]["image"], "db:2", "{sts}");
    assert_eq!(containers[0]["ports"][0]["containerPort"], 5433, "{sts}");
    let svc = object(&all, "Service");
    assert_eq!(svc["spec"]["ports"][0]["port"], 5433, "{svc}");
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_server_side_apply_of_builtins() {
    let Some(bin) = kubectl_or_skip("kubectl_server_side_apply_of_builtins") else {
        return;
    };
    let srv = FakeApiServer::start().await.expect("server starts");
    let k = Kubectl::new(bin, &srv);
    let out = k
        .clean(
            &["apply", "--server-side", "-f", "-"],
            Some(&manifest(1, "db:1", 5432)),
        )
        .await;
    assert_eq!(out.lines().count(), OBJECTS.len(), "{out}");
    assert!(
        out.lines().all(|l| l.ends_with(" serverside-applied")),
        "{out}"
    );
    let out = k
        .clean(
            &["apply", "--server-side", "-f", "-"],
            Some(&manifest(2, "db:2", 5432)),
        )
        .await;
    assert_eq!(out.lines().count(), OBJECTS.len(), "{out}");
    let all = read_back(&k).await;
    let sts = object(&all, "StatefulSet");
    assert_eq!(sts["spec"]["replicas"], 2, "{sts}");
    assert_eq!(
        sts["spec"]["template"]["spec"]["containers"][0]["image"], "db:2",
        "{sts}"
    );
    let managers: Vec<&str> = sts["metadata"]["managedFields"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["manager"].as_str())
        .collect();
    assert_eq!(managers, ["kubectl"], "{sts}");
    srv.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_explain_prints_builtin_field_docs() {
    let Some(bin) = kubectl_or_skip("kubectl_explain_prints_builtin_field_docs") else {
        return;
    };
    let srv = FakeApiServer::start().await.expect("server starts");
    let k = Kubectl::new(bin, &srv);
    let out = k.clean(&["explain", "statefulset.spec"], None).await;
    assert!(out.contains("KIND:       StatefulSet"), "{out}");
    assert!(out.contains("GROUP:      apps"), "{out}");
    assert!(out.contains("serviceName\t<string>"), "{out}");
    assert!(
        out.contains("volumeClaimTemplates\t<[]PersistentVolumeClaim>"),
        "{out}"
    );
    let out = k
        .clean(&["explain", "pods.spec.containers.ports.protocol"], None)
        .await;
    assert!(
        out.contains("Protocol for port. Must be UDP, TCP, or SCTP."),
        "{out}"
    );
    srv.shutdown().await;
}

/// client-go's `OpenAPISchema` asks `/openapi/v2` for protobuf only and gets it, as from
/// kube-openapi's handler; JSON to a JSON request; 406 to a type neither.
#[tokio::test]
async fn openapi_v2_negotiates_its_content_type() {
    let srv = FakeApiServer::start().await.expect("server starts");
    let client = srv.client();
    let req = |accept: &str| {
        http::Request::get("/openapi/v2")
            .header("Accept", accept)
            .body(Vec::new())
            .unwrap()
    };
    let err = client
        .request_text(req("application/yaml"))
        .await
        .expect_err("YAML is not served");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 406),
        "{err:?}"
    );
    let proto = common::get_accept(
        &client,
        "/openapi/v2",
        "application/com.github.proto-openapi.spec.v2@v1.0+protobuf",
    )
    .await;
    assert_eq!(proto.code, 200);
    assert_eq!(
        proto.headers["content-type"],
        "application/com.github.proto-openapi.spec.v2.v1.0+protobuf"
    );
    let text = client
        .request_text(req("application/json"))
        .await
        .expect("JSON is served");
    let doc: Value = serde_json::from_str(&text).unwrap();
    let sts = &doc["definitions"]["io.k8s.api.apps.v1.StatefulSet"];
    assert_eq!(
        sts["x-kubernetes-group-version-kind"][0]["kind"],
        "StatefulSet"
    );
    let containers = &doc["definitions"]["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"];
    assert_eq!(containers["x-kubernetes-patch-strategy"], "merge");
    assert_eq!(containers["x-kubernetes-list-map-keys"][0], "name");
    srv.shutdown().await;
}

/// `kubectl patch` sends a strategic merge patch by default: a container named in the patch is
/// merged into the one of that name, the other container stays; `$patch: delete` removes one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_patch_is_a_strategic_merge_on_builtins() {
    let Some(bin) = kubectl_or_skip("kubectl_patch_is_a_strategic_merge_on_builtins") else {
        return;
    };
    let srv = FakeApiServer::start().await.expect("server starts");
    let k = Kubectl::new(bin, &srv);
    k.clean(&["apply", "-f", "-"], Some(&manifest(1, "db:1", 5432)))
        .await;
    let patch = r#"{"spec":{"template":{"spec":{"containers":[{"name":"db","image":"db:9"}]}}}}"#;
    let out = k
        .clean(
            &["patch", "statefulset", "db", "-n", "default", "-p", patch],
            None,
        )
        .await;
    assert!(out.contains("statefulset.apps/db patched"), "{out}");
    let images = k
        .clean(
            &[
                "get",
                "statefulset",
                "db",
                "-n",
                "default",
                "-o",
                "jsonpath={.spec.template.spec.containers[*].image}",
            ],
            None,
        )
        .await;
    assert_eq!(images, "db:9 exporter:1");
    let patch =
        r#"{"spec":{"template":{"spec":{"containers":[{"name":"exporter","$patch":"delete"}]}}}}"#;
    k.clean(
        &["patch", "statefulset", "db", "-n", "default", "-p", patch],
        None,
    )
    .await;
    let names = k
        .clean(
            &[
                "get",
                "sts",
                "db",
                "-n",
                "default",
                "-o",
                "jsonpath={.spec.template.spec.containers[*].name}",
            ],
            None,
        )
        .await;
    assert_eq!(names, "db");
    // The table kubectl prints for the built-ins of the manifest.
    let table = k
        .clean(&["get", "sts,ds,cj,pdb,hpa", "-n", "default"], None)
        .await;
    // kube-apiserver's printer columns for StatefulSets and DaemonSets.
    let sts = table
        .lines()
        .find(|l| l.starts_with("NAME") && l.contains("READY"))
        .unwrap_or_else(|| panic!("no StatefulSet header in:\n{table}"));
    assert_eq!(
        sts.split_whitespace().collect::<Vec<_>>(),
        ["NAME", "READY", "AGE"]
    );
    assert!(
        table
            .lines()
            .any(|l| l.starts_with("statefulset.apps/db ") && l.contains(" 0/1 ")),
        "{table}"
    );
    assert!(
        table
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == [
                    "NAME",
                    "DESIRED",
                    "CURRENT",
                    "READY",
                    "UP-TO-DATE",
                    "AVAILABLE",
                    "NODE",
                    "SELECTOR",
                    "AGE"
                ]),
        "{table}"
    );
    let wide = k
        .clean(&["get", "deploy,sts", "-n", "default", "-o", "wide"], None)
        .await;
    assert!(wide.contains("CONTAINERS"), "{wide}");
    assert!(wide.contains("db:9"), "{wide}");
    for name in [
        "statefulset.apps/db",
        "daemonset.apps/agent",
        "cronjob.batch/backup",
        "poddisruptionbudget.policy/db",
        "horizontalpodautoscaler.autoscaling/db",
    ] {
        assert!(table.contains(name), "{name} not in:\n{table}");
    }
    srv.shutdown().await;
}

/// `kubectl api-resources` lists the built-ins with their short names, scope and categories.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_api_resources_lists_every_builtin() {
    let Some(bin) = kubectl_or_skip("kubectl_api_resources_lists_every_builtin") else {
        return;
    };
    let srv = FakeApiServer::start().await.expect("server starts");
    let k = Kubectl::new(bin, &srv);
    let out = k.clean(&["api-resources", "--no-headers"], None).await;
    let rows: Vec<Vec<&str>> = out
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    // One row per resource, in its group's preferred version (HPA as autoscaling/v2).
    assert_eq!(rows.len(), 57, "{out}");
    for want in [
        ["statefulsets", "sts", "apps/v1", "true", "StatefulSet"],
        ["persistentvolumes", "pv", "v1", "false", "PersistentVolume"],
        [
            "networkpolicies",
            "netpol",
            "networking.k8s.io/v1",
            "true",
            "NetworkPolicy",
        ],
        [
            "horizontalpodautoscalers",
            "hpa",
            "autoscaling/v2",
            "true",
            "HorizontalPodAutoscaler",
        ],
    ] {
        assert!(rows.iter().any(|r| *r == want), "{want:?} not in:\n{out}");
    }
    let all = k
        .clean(&["api-resources", "--categories=all", "-o", "name"], None)
        .await;
    let mut all: Vec<&str> = all.lines().collect();
    all.sort();
    assert_eq!(
        all,
        [
            "cronjobs.batch",
            "daemonsets.apps",
            "deployments.apps",
            "horizontalpodautoscalers.autoscaling",
            "jobs.batch",
            "pods",
            "replicasets.apps",
            "replicationcontrollers",
            "services",
            "statefulsets.apps",
        ]
    );
    srv.shutdown().await;
}

/// Namespaces have no `deletecollection`: discovery leaves the verb out and the collection
/// answers DELETE with 405, as kube-apiserver does.
#[tokio::test]
async fn namespaces_refuse_deletecollection() {
    let srv = FakeApiServer::start().await.expect("server starts");
    let client = srv.client();
    let req = http::Request::delete("/api/v1/namespaces")
        .body(Vec::new())
        .unwrap();
    let err = client
        .request_text(req)
        .await
        .expect_err("deletecollection of namespaces is refused");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 405),
        "{err:?}"
    );
    let req = http::Request::get("/api/v1").body(Vec::new()).unwrap();
    let list: Value = serde_json::from_str(&client.request_text(req).await.unwrap()).unwrap();
    let ns = list["resources"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "namespaces")
        .unwrap();
    assert!(
        !ns["verbs"]
            .as_array()
            .unwrap()
            .contains(&"deletecollection".into()),
        "{ns}"
    );
    srv.shutdown().await;
}
