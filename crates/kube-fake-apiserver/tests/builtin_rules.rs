//! Built-in kinds over HTTP: what kube-apiserver 1.35 returns for minimal objects (defaults,
//! allocated Service fields, a Job's generated selector), and its 422s for classic invalid
//! objects and immutable-field updates; kubectl shows the same causes.
use crate::common;

use std::path::PathBuf;
use std::process::Stdio;

use common::{assert_status, get, post, put};
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

const DEPLOYMENTS: &str = "/apis/apps/v1/namespaces/default/deployments";
const SERVICES: &str = "/api/v1/namespaces/default/services";

/// The object without what differs on every run (uid, times, versions, managed fields).
fn stable(mut o: Value) -> Value {
    if let Some(m) = o["metadata"].as_object_mut() {
        for f in [
            "uid",
            "creationTimestamp",
            "resourceVersion",
            "managedFields",
        ] {
            m.remove(f);
        }
    }
    o
}

fn web() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"}, "spec": {
        "selector": {"matchLabels": {"app": "web"}},
        "template": {"metadata": {"labels": {"app": "web"}},
            "spec": {"containers": [{"name": "web", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}]}}}})
}

#[tokio::test]
async fn a_deployment_comes_back_as_kube_apiserver_returns_it() {
    let s = FakeApiServer::start().await.unwrap();
    let c = s.in_process_client();
    let r = post(&c, DEPLOYMENTS, web()).await;
    assert_eq!(r.code, 201, "{}", r.body);
    // apps/v1 SetDefaults_Deployment, core/v1 SetDefaults_PodSpec/Container and the generated
    // port protocol; the strategy: generation 1, empty status.
    let want = json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "generation": 1},
        "spec": {"replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                "containers": [{"name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}], "resources": {},
                    "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
                "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                "securityContext": {}, "terminationGracePeriodSeconds": 30}}},
        "status": {}});
    assert_eq!(stable(r.body.clone()), want);
    // Read back the same (status aside: the deployment stand-in reports on it).
    let mut back = stable(get(&c, &format!("{DEPLOYMENTS}/web")).await.body);
    back["status"] = json!({});
    assert_eq!(back, want);
}

#[tokio::test]
async fn the_invalid_deployment_of_the_issue_is_refused_with_its_causes() {
    let s = FakeApiServer::start().await.unwrap();
    let c = s.in_process_client();
    let mut d = web();
    d["metadata"]["name"] = json!("x");
    d["spec"]["template"]["metadata"]["labels"] = json!({"app": "y"});
    d["spec"]["template"]["spec"]["containers"][0]["name"] = json!("Bad_Name");
    let r = post(&c, DEPLOYMENTS, d).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(r.body["reason"], "Invalid");
    let labels = "Invalid value: map[string]string{\"app\":\"y\"}: `selector` does not match template `labels`";
    let name = "Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
    assert_eq!(
        r.body["message"],
        format!(
            "Deployment.apps \"x\" is invalid: [spec.template.metadata.labels: {labels}, spec.template.spec.containers[0].name: {name}]"
        )
    );
    assert_eq!(
        r.body["details"],
        json!({"name": "x", "group": "apps", "kind": "Deployment", "causes": [
            {"reason": "FieldValueInvalid", "message": labels, "field": "spec.template.metadata.labels"},
            {"reason": "FieldValueInvalid", "message": name, "field": "spec.template.spec.containers[0].name"}]})
    );
    assert_eq!(get(&c, &format!("{DEPLOYMENTS}/x")).await.code, 404);
}

#[tokio::test]
async fn deployment_selector_cannot_change() {
    let s = FakeApiServer::start().await.unwrap();
    let c = s.in_process_client();
    assert_eq!(post(&c, DEPLOYMENTS, web()).await.code, 201);
    let mut d = web();
    d["spec"]["selector"] = json!({"matchLabels": {"app": "web2"}});
    d["spec"]["template"]["metadata"]["labels"] = json!({"app": "web2"});
    let r = put(&c, &format!("{DEPLOYMENTS}/web"), d).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Deployment.apps \"web\" is invalid: spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web2\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"
    );
}

fn svc(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": spec})
}

#[tokio::test]
async fn services_get_their_own_cluster_ips_and_node_ports_and_keep_them() {
    let s = FakeApiServer::start().await.unwrap();
    let c = s.in_process_client();
    let a = post(
        &c,
        SERVICES,
        svc(
            "a",
            json!({"selector": {"app": "a"}, "ports": [{"port": 80}]}),
        ),
    )
    .await;
    assert_eq!(a.code, 201, "{}", a.body);
    let spec = &a.body["spec"];
    let ip = spec["clusterIP"].as_str().unwrap().to_string();
    assert!(ip.starts_with("10."), "{ip}");
    assert_eq!(spec["clusterIPs"], json!([ip]));
    assert_eq!(spec["ipFamilies"], json!(["IPv4"]));
    assert_eq!(spec["ipFamilyPolicy"], "SingleStack");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert_eq!(
        spec["ports"],
        json!([{"port": 80, "protocol": "TCP", "targetPort": 80}])
    );
    assert_eq!(a.body["status"], json!({"loadBalancer": {}}));
    // A second Service asking for the first one's address is refused.
    let r = post(
        &c,
        SERVICES,
        svc("b", json!({"clusterIP": ip, "ports": [{"port": 80}]})),
    )
    .await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        format!(
            "Service \"b\" is invalid: spec.clusterIPs: Invalid value: []string{{\"{ip}\"}}: failed to allocate IP {ip}: provided IP is already allocated"
        )
    );
    let np = post(
        &c,
        SERVICES,
        svc("np", json!({"type": "NodePort", "ports": [{"port": 80}]})),
    )
    .await;
    assert_eq!(np.code, 201, "{}", np.body);
    let port = np.body["spec"]["ports"][0]["nodePort"].as_i64().unwrap();
    assert!((30000..=32767).contains(&port));
    assert_ne!(np.body["spec"]["clusterIP"], json!(ip));
    assert_eq!(np.body["spec"]["externalTrafficPolicy"], "Cluster");
    // A PUT that leaves the allocated fields out (as controllers and client-side apply do)
    // keeps them.
    let r = put(
        &c,
        &format!("{SERVICES}/np"),
        svc("np", json!({"type": "NodePort", "ports": [{"port": 80}]})),
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["ports"][0]["nodePort"], port);
    assert_eq!(r.body["spec"]["clusterIP"], np.body["spec"]["clusterIP"]);
    // Changing the cluster IP is refused.
    let r = put(&c, &format!("{SERVICES}/a"), svc("a", json!({"clusterIP": "10.96.0.99", "clusterIPs": ["10.96.0.99"], "ports": [{"port": 80}]}))).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Service \"a\" is invalid: spec.clusterIPs[0]: Invalid value: []string{\"10.96.0.99\"}: may not change once set"
    );
    // Headless Services keep `None`.
    let h = post(
        &c,
        SERVICES,
        svc(
            "h",
            json!({"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]}),
        ),
    )
    .await;
    assert_eq!(h.body["spec"]["clusterIPs"], json!(["None"]), "{}", h.body);
}

#[tokio::test]
async fn a_job_gets_its_selector_and_labels_from_its_uid() {
    let s = FakeApiServer::start().await.unwrap();
    // Served when the kinds table has Jobs; registered here otherwise.
    let _ = s.register_kind(kube_fake_apiserver::KindSpec::namespaced(
        "batch", "v1", "Job", "jobs",
    ));
    let c = s.in_process_client();
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl:5.34"}]}}}});
    let r = post(&c, "/apis/batch/v1/namespaces/default/jobs", job.clone()).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let uid = r.body["metadata"]["uid"].as_str().unwrap();
    let labels = json!({"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": "pi",
        "controller-uid": uid, "job-name": "pi"});
    assert_eq!(r.body["metadata"]["labels"], labels);
    assert_eq!(
        r.body["spec"]["selector"],
        json!({"matchLabels": {"batch.kubernetes.io/controller-uid": uid}})
    );
    assert_eq!(r.body["spec"]["template"]["metadata"]["labels"], labels);
    assert_eq!(r.body["spec"]["backoffLimit"], 6);
    let mut always = job;
    always["metadata"]["name"] = json!("always");
    always["spec"]["template"]["spec"]["restartPolicy"] = json!("Always");
    let r = post(&c, "/apis/batch/v1/namespaces/default/jobs", always).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Job.batch \"always\" is invalid: spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""
    );
}

#[tokio::test]
async fn immutable_config_maps_and_secret_types() {
    let s = FakeApiServer::start().await.unwrap();
    let c = s.in_process_client();
    let cm = |v: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "immutable": true, "data": {"k": v}});
    assert_eq!(
        post(&c, "/api/v1/namespaces/default/configmaps", cm("1"))
            .await
            .code,
        201
    );
    let r = put(&c, "/api/v1/namespaces/default/configmaps/cfg", cm("2")).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "ConfigMap \"cfg\" is invalid: data: Forbidden: field is immutable when `immutable` is set"
    );
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "stringData": {"user": "admin"}});
    let r = post(&c, "/api/v1/namespaces/default/secrets", secret).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["type"], "Opaque");
    assert_eq!(r.body["data"], json!({"user": "YWRtaW4="}));
    let mut tls = r.body.clone();
    tls["type"] = json!("kubernetes.io/tls");
    let r = put(&c, "/api/v1/namespaces/default/secrets/s", tls).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Secret \"s\" is invalid: [type: Invalid value: \"kubernetes.io/tls\": field is immutable, data[tls.key]: Required value, data[tls.crt]: Required value]"
    );
}

#[tokio::test]
async fn a_pod_is_pending_with_admission_defaults() {
    let s = FakeApiServer::start().await.unwrap();
    let c = s.in_process_client();
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
    let r = post(&c, "/api/v1/namespaces/default/pods", pod).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let spec = &r.body["spec"];
    assert_eq!(spec["containers"][0]["imagePullPolicy"], "Always");
    assert_eq!(spec["enableServiceLinks"], true);
    assert_eq!(spec["priority"], 0);
    assert_eq!(spec["tolerations"].as_array().unwrap().len(), 2);
    assert_eq!(
        r.body["status"],
        json!({"phase": "Pending", "qosClass": "BestEffort"})
    );
}

#[tokio::test]
async fn service_and_namespace_names() {
    let s = FakeApiServer::start().await.unwrap();
    let c = s.in_process_client();
    let r = post(&c, SERVICES, svc("Web", json!({"ports": [{"port": 80}]}))).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert!(r.body["message"].as_str().unwrap().starts_with(
        "Service \"Web\" is invalid: metadata.name: Invalid value: \"Web\": a DNS-1035 label must consist of"
    ));
    let r = post(
        &c,
        "/api/v1/namespaces",
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team.a"}}),
    )
    .await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert!(r.body["message"].as_str().unwrap().starts_with(
        "Namespace \"team.a\" is invalid: metadata.name: Invalid value: \"team.a\": a lowercase RFC 1123 label must consist of"
    ));
}

fn kubectl() -> Option<PathBuf> {
    let fixed = PathBuf::from("/usr/bin/kubectl");
    if fixed.is_file() {
        return Some(fixed);
    }
    if std::env::var("CI").is_ok_and(|v| v == "true") {
        panic!("kubectl is not installed; CI=true requires it");
    }
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED kubectl_shows_the_causes_of_an_invalid_deployment: no /usr/bin/kubectl"
    );
    None
}

#[tokio::test]
async fn kubectl_shows_the_causes_of_an_invalid_deployment() {
    let Some(bin) = kubectl() else { return };
    let srv = FakeApiServer::start().await.unwrap();
    let dir = tempfile::tempdir().unwrap();
    srv.write_kubeconfig(&dir.path().join("kubeconfig"))
        .unwrap();
    let manifest = r#"apiVersion: apps/v1
kind: Deployment
metadata:
  name: x
spec:
  selector:
    matchLabels: {app: "x"}
  template:
    metadata:
      labels: {app: "y"}
    spec:
      containers:
      - name: Bad_Name
        image: nginx
"#;
    let mut child = tokio::process::Command::new(bin)
        .arg("--kubeconfig")
        .arg(dir.path().join("kubeconfig"))
        .args([
            "--request-timeout=20s",
            "create",
            "--validate=false",
            "-n",
            "default",
            "-f",
            "-",
        ])
        .env("HOME", dir.path())
        .env_remove("KUBECONFIG")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    {
        use tokio::io::AsyncWriteExt;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(manifest.as_bytes()).await.unwrap();
    }
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), child.wait_with_output())
        .await
        .unwrap()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("The Deployment \"x\" is invalid"), "{err}");
    for cause in [
        "spec.template.metadata.labels: Invalid value: map[string]string{\"app\":\"y\"}: `selector` does not match template `labels`",
        "spec.template.spec.containers[0].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of",
    ] {
        assert!(err.contains(cause), "{cause:?} missing: {err}");
    }
}

/// Fields a built-in type does not declare are dropped as decoding into the Go types drops
/// them: with `fieldValidation=Strict` (kubectl's default) the body is refused with the
/// decoder's message, with `Warn` (the default) each is a `Warning` header and gone.
#[tokio::test]
async fn unknown_fields_of_builtins_follow_field_validation() {
    let srv = kube_fake_apiserver::FakeApiServer::start().await.unwrap();
    let c = srv.client();
    let deployment = |name: &str| {
        serde_json::json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labelz": {"a": "b"}},
            "spec": {
                "selector": {"matchLabels": {"app": "a"}},
                "template": {
                    "metadata": {"labels": {"app": "a"}},
                    "spec": {"containers": [{"name": "c", "image": "nginx", "imagePullPolicyy": "Always"}]}
                },
                "replicaz": 3
            }
        })
    };
    let path = "/apis/apps/v1/namespaces/default/deployments";
    let r = post(
        &c,
        &format!("{path}?fieldValidation=Strict"),
        deployment("strict"),
    )
    .await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "Deployment in version \"v1\" cannot be handled as a Deployment: strict decoding error: \
         unknown field \"metadata.labelz\", unknown field \"spec.replicaz\", unknown field \
         \"spec.template.spec.containers[0].imagePullPolicyy\""
    );
    let r = post(&c, path, deployment("warned")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    let warnings: Vec<&str> = r
        .headers
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap())
        .collect();
    assert_eq!(warnings.len(), 3, "{warnings:?}");
    assert!(
        warnings[2]
            .contains("unknown field \\\"spec.template.spec.containers[0].imagePullPolicyy\\\""),
        "{warnings:?}"
    );
    let stored = get(&c, &format!("{path}/warned")).await.body;
    assert!(stored["metadata"].get("labelz").is_none(), "{stored}");
    assert!(stored["spec"].get("replicaz").is_none(), "{stored}");
    assert_eq!(
        stored["spec"]["replicas"], 1,
        "defaulted, not taken from the typo"
    );
    let container = &stored["spec"]["template"]["spec"]["containers"][0];
    assert!(container.get("imagePullPolicyy").is_none(), "{stored}");
    // Raw JSON fields and kept unknown fields are not pruned: a ConfigMap's data is a map.
    let r = post(
        &c,
        "/api/v1/namespaces/default/configmaps?fieldValidation=Strict",
        serde_json::json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"},
            "data": {"any-key": "v"}}),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
}

/// The names of a list's items.
fn item_names(list: &Value) -> Vec<&str> {
    list["items"]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|o| o["metadata"]["name"].as_str())
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn field_selectors_take_each_kinds_labels_and_refuse_the_others() {
    let s = FakeApiServer::start().await.unwrap();
    let c = s.in_process_client();
    const PODS: &str = "/api/v1/namespaces/default/pods";
    let pod = |name: &str, node: Option<&str>| {
        let mut p = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox"}]}});
        if let Some(n) = node {
            p["spec"]["nodeName"] = json!(n);
        }
        p
    };
    assert_eq!(post(&c, PODS, pod("a", Some("n1"))).await.code, 201);
    assert_eq!(post(&c, PODS, pod("b", None)).await.code, 201);
    // Pods' own labels, with the values ToSelectableFields prints (hostNetwork absent: false).
    let r = get(&c, &format!("{PODS}?fieldSelector=spec.nodeName%3Dn1")).await;
    assert_eq!(item_names(&r.body), ["a"], "{}", r.body);
    let r = get(&c, &format!("{PODS}?fieldSelector=spec.nodeName%3D")).await;
    assert_eq!(item_names(&r.body), ["b"], "{}", r.body);
    let r = get(
        &c,
        &format!("{PODS}?fieldSelector=spec.hostNetwork%3Dfalse,status.phase%3DPending"),
    )
    .await;
    assert_eq!(item_names(&r.body), ["a", "b"], "{}", r.body);
    // A label the kind's conversion func does not know: its own wording, for lists, watches
    // and deletecollection alike.
    for path in [
        format!("{PODS}?fieldSelector=spec.nope%3D1"),
        format!("{PODS}?watch=true&fieldSelector=spec.nope%3D1"),
    ] {
        let r = get(&c, &path).await;
        assert_status(&r, 400, "BadRequest");
        assert_eq!(r.body["message"], "field label not supported: spec.nope");
    }
    let r = common::delete(&c, &format!("{PODS}?fieldSelector=spec.nope%3D1")).await;
    assert_status(&r, 400, "BadRequest");
    // A kind without a conversion func of its own: DefaultMetaV1FieldSelectorConversion.
    let r = get(
        &c,
        "/api/v1/namespaces/default/configmaps?fieldSelector=spec.nope%3D1",
    )
    .await;
    assert_status(&r, 400, "BadRequest");
    assert_eq!(
        r.body["message"],
        "\"spec.nope\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
    );
    // Jobs word it their way; `status.successful` reads `status.succeeded` (0 when absent).
    const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "pi"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "pi", "image": "perl:5.34"}]}}}});
    assert_eq!(post(&c, JOBS, job).await.code, 201);
    let r = get(&c, &format!("{JOBS}?fieldSelector=status.successful%3D0")).await;
    assert_eq!(item_names(&r.body), ["pi"], "{}", r.body);
    let r = get(&c, &format!("{JOBS}?fieldSelector=spec.completions%3D1")).await;
    assert_status(&r, 400, "BadRequest");
    assert_eq!(
        r.body["message"],
        "field label \"spec.completions\" not supported for batchv1.Job"
    );
    // One stored Event, selected by each API's own names.
    let ev = json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e1"},
        "involvedObject": {"kind": "Pod", "name": "a", "namespace": "default"},
        "reason": "Started", "type": "Normal", "source": {"component": "kubelet"}});
    assert_eq!(
        post(&c, "/api/v1/namespaces/default/events", ev).await.code,
        201
    );
    let r = get(&c, "/api/v1/namespaces/default/events?fieldSelector=involvedObject.kind%3DPod,source%3Dkubelet").await;
    assert_eq!(item_names(&r.body), ["e1"], "{}", r.body);
    let r = get(&c, "/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector=regarding.kind%3DPod,regarding.name%3Da").await;
    assert_eq!(item_names(&r.body), ["e1"], "{}", r.body);
    let r = get(
        &c,
        "/api/v1/namespaces/default/events?fieldSelector=regarding.kind%3DPod",
    )
    .await;
    assert_status(&r, 400, "BadRequest");
    assert_eq!(
        r.body["message"],
        "field label not supported: regarding.kind"
    );
    // Namespaces have no metadata.namespace label.
    let r = get(
        &c,
        "/api/v1/namespaces?fieldSelector=metadata.namespace%3Dx",
    )
    .await;
    assert_eq!(
        r.body["message"],
        "field label not supported: metadata.namespace"
    );
}

#[tokio::test]
async fn pod_updates_change_only_what_validate_pod_update_allows() {
    let s = FakeApiServer::start().await.unwrap();
    let c = s.in_process_client();
    const POD: &str = "/api/v1/namespaces/default/pods/p";
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}});
    let r = post(&c, "/api/v1/namespaces/default/pods", pod.clone()).await;
    assert_eq!(r.code, 201, "{}", r.body);
    // A new image and a lowered deadline, replaced by a client that never sent the priority
    // the Priority plugin set (kept, as the plugin keeps it on update).
    let mut new = r.body.clone();
    new["spec"]["containers"][0]["image"] = json!("busybox:2");
    new["spec"]["activeDeadlineSeconds"] = json!(600);
    new["spec"].as_object_mut().unwrap().remove("priority");
    let r = put(&c, POD, new).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["spec"]["containers"][0]["image"], "busybox:2");
    assert_eq!(r.body["spec"]["priority"], 0);
    // Anything else: one Forbidden cause on `spec`, the fixed part of the message exact.
    let mut moved = r.body.clone();
    moved["spec"]["nodeName"] = json!("n1");
    let r = put(&c, POD, moved).await;
    assert_status(&r, 422, "Invalid");
    let prefix = "Pod \"p\" is invalid: spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n  core.PodSpec{";
    let message = r.body["message"].as_str().unwrap();
    assert!(message.starts_with(prefix), "{message}");
    assert!(message.contains("+ \tNodeName: \"n1\","), "{message}");
    let causes = &r.body["details"]["causes"];
    assert_eq!(causes.as_array().map(Vec::len), Some(1), "{causes}");
    assert_eq!(causes[0]["field"], "spec");
    assert_eq!(causes[0]["reason"], "FieldValueForbidden");
    // A raised deadline has its own cause.
    let r = common::merge_patch(&c, POD, json!({"spec": {"activeDeadlineSeconds": 900}})).await;
    assert_status(&r, 422, "Invalid");
    assert_eq!(
        r.body["message"],
        "Pod \"p\" is invalid: spec.activeDeadlineSeconds: Invalid value: 900: must be less than or equal to previous value"
    );
}
