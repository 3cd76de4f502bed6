//! The full objects kube-apiserver 1.35 makes of minimal objects of the common kinds, and its
//! refusals of classic invalid objects and updates. Each expected default cites the source it
//! comes from; messages are `field.Error`'s rendering of the source's errors.
use serde_json::{Value, json};

use super::*;
use crate::status::ApiError;

const UID: &str = "0a1b2c3d-0000-4000-8000-000000000001";
const LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1035_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map_or("", |(g, _)| g)
}

fn create_with(mut o: Value, taken: &Allocated) -> Result<Value, ApiError> {
    let group = group_of(o["apiVersion"].as_str().unwrap()).to_string();
    let kind = o["kind"].as_str().unwrap().to_string();
    o["metadata"]["uid"] = json!(UID);
    admit_with(&group, &kind, "v1", &mut o, Write::Create, taken)?;
    Ok(o)
}

/// What a create makes of `o` (the pipeline's server-managed metadata aside: `uid` is set).
fn created(o: Value) -> Value {
    create_with(o, &Allocated::default()).expect("admitted")
}

fn refused(o: Value) -> ApiError {
    create_with(o, &Allocated::default()).expect_err("refused")
}

fn update(old: &Value, new: Value) -> Result<Value, ApiError> {
    let mut n = new;
    let group = group_of(n["apiVersion"].as_str().unwrap()).to_string();
    let kind = n["kind"].as_str().unwrap().to_string();
    n["metadata"]["uid"] = json!(UID);
    admit_with(
        &group,
        &kind,
        "v1",
        &mut n,
        Write::Update(old),
        &Allocated::default(),
    )?;
    Ok(n)
}

/// Code 422, reason `Invalid`, the causes as (reason, field, message), the full message.
fn assert_invalid(e: &ApiError, message: &str, causes: &[(&str, &str, &str)]) {
    assert_eq!(e.code, 422, "{e:?}");
    assert_eq!(e.reason, "Invalid");
    assert_eq!(e.message, message);
    let got: Vec<(String, String, String)> = e.details.as_ref().unwrap()["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["reason"].as_str().unwrap().to_string(),
                c["field"].as_str().unwrap().to_string(),
                c["message"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want: Vec<(String, String, String)> = causes
        .iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect();
    assert_eq!(got, want);
}

fn meta(name: &str) -> Value {
    json!({"name": name, "namespace": "default"})
}

fn with_uid(mut m: Value) -> Value {
    m["uid"] = json!(UID);
    m
}

/// The pod spec a template gets from `SetDefaults_PodSpec` and `SetDefaults_Container`
/// (core/v1/defaults.go) for one container `c` running `image`.
fn defaulted_pod_spec(image: &str, pull: &str, extra: Value) -> Value {
    let mut c = json!({
        "name": "c", "image": image, "imagePullPolicy": pull,
        "terminationMessagePath": "/dev/termination-log",
        "terminationMessagePolicy": "File", "resources": {}
    });
    if let Some(m) = extra.as_object() {
        for (k, v) in m {
            c[k] = v.clone();
        }
    }
    json!({
        "containers": [c], "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
        "dnsPolicy": "ClusterFirst", "securityContext": {}, "schedulerName": "default-scheduler"
    })
}

fn template(labels: Value, container: Value) -> Value {
    json!({"metadata": {"labels": labels}, "spec": {"containers": [container]}})
}

fn deployment(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta(name), "spec": spec})
}

fn web_spec() -> Value {
    json!({
        "selector": {"matchLabels": {"app": "web"}},
        "template": template(json!({"app": "web"}), json!({"name": "c", "image": "nginx:1.27", "ports": [{"containerPort": 80}]}))
    })
}

// ---------------------------------------------------------------- defaults

#[test]
fn deployment_minimal() {
    // apps/v1/defaults.go SetDefaults_Deployment; core/v1 zz_generated.defaults.go: ports get
    // `protocol: TCP`; the strategy's PrepareForCreate resets status (a struct: `{}`).
    let got = created(deployment("web", web_spec()));
    let want = json!({
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": with_uid(meta("web")),
        "spec": {
            "replicas": 1, "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": defaulted_pod_spec("nginx:1.27", "IfNotPresent", json!({"ports": [{"containerPort": 80, "protocol": "TCP"}]}))}
        },
        "status": {}
    });
    assert_eq!(got, want);
}

#[test]
fn deployment_probes_env_volumes_and_lifecycle() {
    // SetDefaults_Probe (1/10/1/3), SetDefaults_HTTPGetAction (path "/", scheme HTTP),
    // SetDefaults_ObjectFieldSelector (apiVersion v1), SetDefaults_Volume (emptyDir when no
    // source), Secret/ConfigMap/DownwardAPI/Projected defaultMode 420, HostPath type "",
    // ServiceAccountTokenProjection expirationSeconds 3600; `:latest` pulls Always.
    let c = json!({
        "name": "c", "image": "example.com/app:latest",
        "livenessProbe": {"httpGet": {"port": 8080}},
        "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 5},
        "lifecycle": {"preStop": {"httpGet": {"port": 8080, "path": "/stop"}}},
        "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]
    });
    let mut spec = web_spec();
    spec["template"] = template(json!({"app": "web"}), c);
    spec["template"]["spec"]["volumes"] = json!([
        {"name": "cache"},
        {"name": "cm", "configMap": {"name": "cfg"}},
        {"name": "sec", "secret": {"secretName": "s"}},
        {"name": "host", "hostPath": {"path": "/var/log"}},
        {"name": "proj", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}, {"downwardAPI": {"items": [{"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}]}}]}}
    ]);
    let got = created(deployment("web", spec));
    let mut ps = defaulted_pod_spec(
        "example.com/app:latest",
        "Always",
        json!({
            "livenessProbe": {"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1, "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3},
            "readinessProbe": {"tcpSocket": {"port": 8080}, "timeoutSeconds": 1, "periodSeconds": 5, "successThreshold": 1, "failureThreshold": 3},
            "lifecycle": {"preStop": {"httpGet": {"port": 8080, "path": "/stop", "scheme": "HTTP"}}},
            "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName", "apiVersion": "v1"}}}],
            "volumeMounts": [{"name": "cache", "mountPath": "/cache"}]
        }),
    );
    ps["volumes"] = json!([
        {"name": "cache", "emptyDir": {}},
        {"name": "cm", "configMap": {"name": "cfg", "defaultMode": 420}},
        {"name": "sec", "secret": {"secretName": "s", "defaultMode": 420}},
        {"name": "host", "hostPath": {"path": "/var/log", "type": ""}},
        {"name": "proj", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"path": "token", "expirationSeconds": 3600}}, {"downwardAPI": {"items": [{"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace", "apiVersion": "v1"}}]}}]}}
    ]);
    assert_eq!(got["spec"]["template"]["spec"], ps);
}

#[test]
fn deployment_recreate_and_images() {
    // SetDefaults_Deployment: no rollingUpdate for Recreate. ParseImageName: no tag means
    // latest (Always); a digest without tag is not latest (IfNotPresent).
    let mut spec = web_spec();
    spec["strategy"] = json!({"type": "Recreate"});
    spec["template"]["spec"]["containers"] = json!([
        {"name": "a", "image": "busybox"},
        {"name": "b", "image": "busybox@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"},
        {"name": "c", "image": "localhost:5000/app"}
    ]);
    let got = created(deployment("web", spec));
    assert_eq!(got["spec"]["strategy"], json!({"type": "Recreate"}));
    let pulls: Vec<&str> = got["spec"]["template"]["spec"]["containers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["imagePullPolicy"].as_str().unwrap())
        .collect();
    assert_eq!(pulls, ["Always", "IfNotPresent", "Always"]);
}

#[test]
fn deployment_keeps_what_is_set() {
    let mut spec = web_spec();
    spec["replicas"] = json!(0);
    spec["revisionHistoryLimit"] = json!(0);
    spec["strategy"] = json!({"rollingUpdate": {"maxSurge": 1}});
    let got = created(deployment("web", spec));
    assert_eq!(got["spec"]["replicas"], 0);
    assert_eq!(got["spec"]["revisionHistoryLimit"], 0);
    assert_eq!(
        got["spec"]["strategy"],
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}})
    );
}

#[test]
fn statefulset_minimal_with_claim_templates() {
    // apps/v1 SetDefaults_StatefulSet: OrderedReady, RollingUpdate with partition 0 and (the
    // MaxUnavailableStatefulSet gate is beta in 1.35) maxUnavailable 1, Retain/Retain, 1 replica,
    // 10 revisions. Claim templates: SetDefaults_PersistentVolumeClaim(Spec) (Pending,
    // Filesystem), typed v1 PersistentVolumeClaim by the conversion.
    let o = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta("db"), "spec": {
        "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
        "template": template(json!({"app": "db"}), json!({"name": "c", "image": "postgres:17"})),
        "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
    }});
    let got = created(o);
    let want = json!({
        "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
        "podManagementPolicy": "OrderedReady", "replicas": 1, "revisionHistoryLimit": 10,
        "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"partition": 0, "maxUnavailable": 1}},
        "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Retain", "whenScaled": "Retain"},
        "template": {"metadata": {"labels": {"app": "db"}}, "spec": defaulted_pod_spec("postgres:17", "IfNotPresent", json!({}))},
        "volumeClaimTemplates": [{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"},
            "status": {"phase": "Pending"}}]
    });
    assert_eq!(got["spec"], want);
    // Go encodes the non-omitempty counter at zero.
    assert_eq!(
        got["status"],
        json!({"replicas": 0, "availableReplicas": 0})
    );
}

#[test]
fn statefulset_on_delete_has_no_rolling_update() {
    let o = json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta("db"), "spec": {
        "selector": {"matchLabels": {"app": "db"}}, "updateStrategy": {"type": "OnDelete"},
        "template": template(json!({"app": "db"}), json!({"name": "c", "image": "postgres:17"}))
    }});
    assert_eq!(
        created(o)["spec"]["updateStrategy"],
        json!({"type": "OnDelete"})
    );
}

#[test]
fn daemonset_minimal() {
    // apps/v1 SetDefaults_DaemonSet: RollingUpdate, maxUnavailable 1, maxSurge 0, 10 revisions.
    let o = json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta("agent"), "spec": {
        "selector": {"matchLabels": {"app": "agent"}},
        "template": template(json!({"app": "agent"}), json!({"name": "c", "image": "agent:1"}))
    }});
    let got = created(o);
    assert_eq!(
        got["spec"],
        json!({
            "selector": {"matchLabels": {"app": "agent"}},
            "updateStrategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0}},
            "revisionHistoryLimit": 10,
            "template": {"metadata": {"labels": {"app": "agent"}}, "spec": defaulted_pod_spec("agent:1", "IfNotPresent", json!({}))}
        })
    );
    assert_eq!(
        got["status"],
        json!({"currentNumberScheduled": 0, "numberMisscheduled": 0, "desiredNumberScheduled": 0, "numberReady": 0})
    );
}

#[test]
fn replicaset_minimal() {
    // apps/v1 SetDefaults_ReplicaSet: one replica.
    let o = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta("rs"), "spec": {
        "selector": {"matchLabels": {"app": "rs"}},
        "template": template(json!({"app": "rs"}), json!({"name": "c", "image": "nginx:1.27"}))
    }});
    let got = created(o);
    assert_eq!(got["spec"]["replicas"], 1);
    assert_eq!(
        got["spec"]["template"]["spec"],
        defaulted_pod_spec("nginx:1.27", "IfNotPresent", json!({}))
    );
}

fn job(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta(name), "spec": spec})
}

fn never_template() -> Value {
    json!({"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox:1.36"}]}})
}

#[test]
fn job_minimal_gets_a_generated_selector_and_labels() {
    // batch/v1 SetDefaults_Job: completions = parallelism = 1, backoffLimit 6, NonIndexed, not
    // suspended, TerminatingOrFailed, manualSelector false; job/strategy.go generateSelector:
    // the four template labels and the controller-uid selector; the Job's own labels are the
    // template's (SetDefaults_Job again when the stored object is decoded).
    let got = created(job("pi", json!({"template": never_template()})));
    let labels = json!({
        "batch.kubernetes.io/controller-uid": UID, "batch.kubernetes.io/job-name": "pi",
        "controller-uid": UID, "job-name": "pi"
    });
    let mut ps = defaulted_pod_spec("busybox:1.36", "IfNotPresent", json!({}));
    ps["restartPolicy"] = json!("Never");
    let mut m = with_uid(meta("pi"));
    m["labels"] = labels.clone();
    assert_eq!(
        got,
        json!({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": m,
            "spec": {
                "completions": 1, "parallelism": 1, "backoffLimit": 6, "completionMode": "NonIndexed",
                "suspend": false, "podReplacementPolicy": "TerminatingOrFailed", "manualSelector": false,
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}},
                "template": {"metadata": {"labels": labels}, "spec": ps}
            },
            "status": {}
        })
    );
}

#[test]
fn job_parallelism_alone_leaves_completions_unset() {
    let got = created(job(
        "work",
        json!({"parallelism": 3, "template": never_template()}),
    ));
    assert_eq!(got["spec"]["parallelism"], 3);
    assert!(got["spec"].get("completions").is_none());
}

#[test]
fn job_with_manual_selector_keeps_its_selector() {
    let mut t = never_template();
    t["metadata"] = json!({"labels": {"app": "batch"}});
    let got = created(job(
        "manual",
        json!({"manualSelector": true, "selector": {"matchLabels": {"app": "batch"}}, "template": t}),
    ));
    assert_eq!(
        got["spec"]["selector"],
        json!({"matchLabels": {"app": "batch"}})
    );
    assert_eq!(
        got["spec"]["template"]["metadata"]["labels"],
        json!({"app": "batch"})
    );
    assert_eq!(got["metadata"]["labels"], json!({"app": "batch"}));
}

#[test]
fn job_with_pod_failure_policy() {
    // SetDefaults_Job: onPodConditions' status True; podReplacementPolicy Failed.
    let got = created(job(
        "pfp",
        json!({"template": never_template(), "podFailurePolicy": {"rules": [
            {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]}
        ]}}),
    ));
    assert_eq!(got["spec"]["podReplacementPolicy"], "Failed");
    assert_eq!(
        got["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0],
        json!({"type": "DisruptionTarget", "status": "True"})
    );
}

#[test]
fn cronjob_minimal() {
    // batch/v1 SetDefaults_CronJob: Allow, not suspended, 3 and 1 jobs kept; the job template
    // gets the pod spec's defaults only (it is no Job).
    let o = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta("tick"), "spec": {
        "schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": never_template()}}
    }});
    let got = created(o);
    let mut ps = defaulted_pod_spec("busybox:1.36", "IfNotPresent", json!({}));
    ps["restartPolicy"] = json!("Never");
    assert_eq!(
        got["spec"],
        json!({
            "schedule": "*/5 * * * *", "concurrencyPolicy": "Allow", "suspend": false,
            "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
            "jobTemplate": {"metadata": {}, "spec": {"template": {"metadata": {}, "spec": ps}}}
        })
    );
    assert_eq!(got["status"], json!({}));
}

fn pod(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta(name), "spec": spec})
}

fn admission_tolerations() -> Value {
    // DefaultTolerationSeconds admission: 300s for not-ready and unreachable nodes.
    json!([
        {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300},
        {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
    ])
}

#[test]
fn pod_minimal() {
    // SetDefaults_Pod: enableServiceLinks; SetDefaults_PodSpec; pod/strategy.go
    // PrepareForCreate: Pending with its QoS class; Priority admission: priority 0,
    // PreemptLowerPriority; DefaultTolerationSeconds.
    let got = created(pod(
        "p",
        json!({"containers": [{"name": "c", "image": "nginx:1.27"}]}),
    ));
    let mut spec = defaulted_pod_spec("nginx:1.27", "IfNotPresent", json!({}));
    spec["enableServiceLinks"] = json!(true);
    spec["priority"] = json!(0);
    spec["preemptionPolicy"] = json!("PreemptLowerPriority");
    spec["tolerations"] = admission_tolerations();
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": with_uid(meta("p")), "spec": spec,
            "status": {"phase": "Pending", "qosClass": "BestEffort"}})
    );
}

#[test]
fn pod_limits_become_requests_and_guaranteed() {
    // SetDefaults_Pod: requests default to limits; GetPodQOS: Guaranteed.
    let got = created(pod(
        "p",
        json!({"containers": [{"name": "c", "image": "nginx:1.27",
        "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}}}]}),
    ));
    assert_eq!(
        got["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "500m", "memory": "128Mi"}})
    );
    assert_eq!(got["status"]["qosClass"], "Guaranteed");
    let burst = created(pod(
        "q",
        json!({"containers": [{"name": "c", "image": "nginx:1.27",
        "resources": {"requests": {"cpu": "100m"}}}]}),
    ));
    assert_eq!(burst["status"]["qosClass"], "Burstable");
}

#[test]
fn pod_host_network_ports() {
    // SetDefaults_Pod: with host networking a port's hostPort is its containerPort.
    let got = created(pod(
        "p",
        json!({"hostNetwork": true, "containers": [{"name": "c", "image": "nginx:1.27",
        "ports": [{"containerPort": 8080}]}]}),
    ));
    assert_eq!(
        got["spec"]["containers"][0]["ports"],
        json!([{"containerPort": 8080, "hostPort": 8080, "protocol": "TCP"}])
    );
}

fn service(name: &str, spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Service", "metadata": meta(name), "spec": spec})
}

fn in_service_cidr(ip: &str) -> bool {
    let a: std::net::Ipv4Addr = ip.parse().unwrap();
    let n = u32::from(a);
    n > u32::from(std::net::Ipv4Addr::new(10, 96, 0, 0))
        && n < u32::from(std::net::Ipv4Addr::new(10, 111, 255, 255))
}

#[test]
fn service_cluster_ip() {
    // SetDefaults_Service: None affinity, ClusterIP, TCP, targetPort = port, internal traffic
    // Cluster; the allocator: SingleStack, [IPv4], an address of 10.96.0.0/12; the strategy:
    // an empty load-balancer status.
    let mut got = created(service(
        "web",
        json!({"selector": {"app": "web"}, "ports": [{"port": 80}]}),
    ));
    let ip = got["spec"]["clusterIP"].as_str().unwrap().to_string();
    assert!(in_service_cidr(&ip), "{ip}");
    assert_eq!(got["spec"]["clusterIPs"], json!([ip]));
    got["spec"]["clusterIP"] = json!("X");
    got["spec"]["clusterIPs"] = json!(["X"]);
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "Service", "metadata": with_uid(meta("web")),
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
                "type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
                "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"], "clusterIP": "X", "clusterIPs": ["X"]},
            "status": {"loadBalancer": {}}})
    );
}

#[test]
fn service_node_port() {
    // SetDefaults_Service: externally accessible, so externalTrafficPolicy Cluster; a node port
    // of 30000-32767 for each port.
    let got = created(service(
        "np",
        json!({"type": "NodePort", "selector": {"app": "web"},
        "ports": [{"name": "http", "port": 80, "targetPort": "http"}, {"name": "https", "port": 443}]}),
    ));
    let spec = &got["spec"];
    assert_eq!(spec["externalTrafficPolicy"], "Cluster");
    assert_eq!(spec["internalTrafficPolicy"], "Cluster");
    assert_eq!(spec["ports"][0]["targetPort"], "http");
    assert_eq!(spec["ports"][1]["targetPort"], 443);
    let a = spec["ports"][0]["nodePort"].as_i64().unwrap();
    let b = spec["ports"][1]["nodePort"].as_i64().unwrap();
    assert!((30000..=32767).contains(&a) && (30000..=32767).contains(&b) && a != b);
}

#[test]
fn service_load_balancer_local() {
    // SetDefaults_Service: allocateLoadBalancerNodePorts true; Local traffic gets a
    // healthCheckNodePort.
    let got = created(service(
        "lb",
        json!({"type": "LoadBalancer", "externalTrafficPolicy": "Local",
        "selector": {"app": "web"}, "ports": [{"port": 80}]}),
    ));
    let spec = &got["spec"];
    assert_eq!(spec["allocateLoadBalancerNodePorts"], true);
    let hc = spec["healthCheckNodePort"].as_i64().unwrap();
    assert!((30000..=32767).contains(&hc));
    assert_ne!(Some(hc), spec["ports"][0]["nodePort"].as_i64());
}

#[test]
fn headless_services() {
    // alloc.go initIPFamilyFields: headless with a selector is SingleStack, without one
    // RequireDualStack (IPv4 only on a single-stack cluster); `None` is kept.
    let with = created(service(
        "h",
        json!({"clusterIP": "None", "selector": {"app": "db"}, "ports": [{"port": 5432}]}),
    ));
    assert_eq!(with["spec"]["clusterIPs"], json!(["None"]));
    assert_eq!(with["spec"]["ipFamilyPolicy"], "SingleStack");
    assert_eq!(with["spec"]["ipFamilies"], json!(["IPv4"]));
    let without = created(service("h2", json!({"clusterIP": "None"})));
    assert_eq!(without["spec"]["ipFamilyPolicy"], "RequireDualStack");
    assert_eq!(without["spec"]["clusterIP"], "None");
}

#[test]
fn external_name_service() {
    // No IPs, families or internal traffic policy for ExternalName.
    let got = created(service(
        "ext",
        json!({"type": "ExternalName", "externalName": "db.example.com"}),
    ));
    assert_eq!(
        got["spec"],
        json!({"type": "ExternalName", "externalName": "db.example.com", "sessionAffinity": "None"})
    );
}

#[test]
fn client_ip_affinity() {
    // SetDefaults_Service: ClientIP affinity times out after 10800s.
    let got = created(service(
        "s",
        json!({"sessionAffinity": "ClientIP", "selector": {"a": "b"}, "ports": [{"port": 80}]}),
    ));
    assert_eq!(
        got["spec"]["sessionAffinityConfig"],
        json!({"clientIP": {"timeoutSeconds": 10800}})
    );
}

#[test]
fn cluster_ips_are_not_handed_out_twice() {
    let first = created(service(
        "a",
        json!({"clusterIP": "10.96.100.1", "ports": [{"port": 80}]}),
    ));
    assert_eq!(first["spec"]["clusterIPs"], json!(["10.96.100.1"]));
    let taken = Allocated::holding(&["10.96.100.1"], &[30080]);
    let e = create_with(
        service(
            "b",
            json!({"clusterIP": "10.96.100.1", "ports": [{"port": 80}]}),
        ),
        &taken,
    )
    .unwrap_err();
    assert_invalid(
        &e,
        r#"Service "b" is invalid: spec.clusterIPs: Invalid value: []string{"10.96.100.1"}: failed to allocate IP 10.96.100.1: provided IP is already allocated"#,
        &[(
            "FieldValueInvalid",
            "spec.clusterIPs",
            r#"Invalid value: []string{"10.96.100.1"}: failed to allocate IP 10.96.100.1: provided IP is already allocated"#,
        )],
    );
    let e = create_with(
        service(
            "c",
            json!({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}),
        ),
        &taken,
    )
    .unwrap_err();
    assert_invalid(
        &e,
        r#"Service "c" is invalid: spec.ports[0].nodePort: Invalid value: 30080: provided port is already allocated"#,
        &[(
            "FieldValueInvalid",
            "spec.ports[0].nodePort",
            "Invalid value: 30080: provided port is already allocated",
        )],
    );
}

#[test]
fn config_map_service_account_role_are_kept() {
    for o in [
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("cfg"), "data": {"a.yaml": "x: 1"}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta("sa")}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta("r"),
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]}),
    ] {
        let mut want = o.clone();
        want["metadata"]["uid"] = json!(UID);
        assert_eq!(created(o), want);
    }
}

#[test]
fn secret_type_and_string_data() {
    // SetDefaults_Secret: Opaque; the v1 conversion folds stringData into data.
    let got = created(
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta("s"), "stringData": {"password": "hunter2"}}),
    );
    assert_eq!(got["type"], "Opaque");
    assert_eq!(got["data"], json!({"password": "aHVudGVyMg=="}));
    assert!(got.get("stringData").is_none());
}

#[test]
fn pvc_minimal() {
    // SetDefaults_PersistentVolumeClaimSpec: Filesystem; SetDefaults_PersistentVolumeClaim:
    // Pending.
    let got = created(
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta("data"),
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}),
    );
    assert_eq!(
        got,
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": with_uid(meta("data")),
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, "volumeMode": "Filesystem"},
            "status": {"phase": "Pending"}})
    );
}

#[test]
fn pdb_status_counters() {
    // poddisruptionbudget/strategy.go PrepareForCreate resets status; its counters are encoded.
    let got = created(
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta("pdb"),
        "spec": {"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}}}),
    );
    assert_eq!(
        got["status"],
        json!({"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0})
    );
    assert_eq!(
        got["spec"],
        json!({"minAvailable": 1, "selector": {"matchLabels": {"app": "web"}}})
    );
}

#[test]
fn bindings_default_api_groups() {
    // rbac/v1 SetDefaults_RoleBinding / SetDefaults_Subject.
    let got = created(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta("rb"),
        "roleRef": {"kind": "Role", "name": "r"},
        "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "default"}, {"kind": "User", "name": "alice"}]}),
    );
    assert_eq!(
        got["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"})
    );
    assert_eq!(
        got["subjects"],
        json!([{"kind": "ServiceAccount", "name": "sa", "namespace": "default"},
            {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}])
    );
    let crb = created(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "crb"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"kind": "Group", "name": "devs"}]}),
    );
    assert_eq!(crb["subjects"][0]["apiGroup"], "rbac.authorization.k8s.io");
}

fn webhook_config(kind: &str, hook: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": "hooks"}, "webhooks": [hook]})
}

fn good_hook() -> Value {
    json!({"name": "validate.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"name": "hook", "namespace": "system", "path": "/validate"}},
        "rules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"]}]})
}

#[test]
fn validating_webhook_configuration() {
    // admissionregistration/v1 SetDefaults_ValidatingWebhook: Fail, Equivalent, empty
    // selectors, 10s; SetDefaults_Rule: scope "*"; SetDefaults_ServiceReference: port 443.
    let got = created(webhook_config(
        "ValidatingWebhookConfiguration",
        good_hook(),
    ));
    assert_eq!(
        got["webhooks"][0],
        json!({"name": "validate.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
            "clientConfig": {"service": {"name": "hook", "namespace": "system", "path": "/validate", "port": 443}},
            "rules": [{"operations": ["CREATE"], "apiGroups": ["apps"], "apiVersions": ["v1"], "resources": ["deployments"], "scope": "*"}],
            "failurePolicy": "Fail", "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}, "timeoutSeconds": 10})
    );
}

#[test]
fn mutating_webhook_configuration() {
    // SetDefaults_MutatingWebhook: also reinvocationPolicy Never.
    let got = created(webhook_config("MutatingWebhookConfiguration", good_hook()));
    assert_eq!(got["webhooks"][0]["reinvocationPolicy"], "Never");
    assert_eq!(got["webhooks"][0]["timeoutSeconds"], 10);
}

fn vap(spec: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "replicas"}, "spec": spec})
}

#[test]
fn validating_admission_policy_and_binding() {
    // SetDefaults_ValidatingAdmissionPolicySpec: Fail; SetDefaults_MatchResources: Equivalent,
    // empty selectors; rules' scope "*"; the strategy's empty status.
    let got = created(vap(json!({
        "matchConstraints": {"resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"]}]},
        "validations": [{"expression": "object.spec.replicas <= 5"}]
    })));
    assert_eq!(
        got["spec"],
        json!({"failurePolicy": "Fail",
            "matchConstraints": {"matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
                "resourceRules": [{"apiGroups": ["apps"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["deployments"], "scope": "*"}]},
            "validations": [{"expression": "object.spec.replicas <= 5"}]})
    );
    assert_eq!(got["status"], json!({}));
    let b = created(
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "replicas"}, "spec": {"policyName": "replicas", "validationActions": ["Deny"],
        "matchResources": {"namespaceSelector": {"matchLabels": {"env": "test"}}}}}),
    );
    assert_eq!(
        b["spec"]["matchResources"],
        json!({"namespaceSelector": {"matchLabels": {"env": "test"}}, "objectSelector": {}, "matchPolicy": "Equivalent"})
    );
}

#[test]
fn network_policy_storage_class_priority_class_hpa() {
    // networking/v1 SetDefaults_NetworkPolicy(Port); storage/v1 SetDefaults_StorageClass;
    // scheduling/v1 SetDefaults_PriorityClass; autoscaling/v2 SetDefaults_HorizontalPodAutoscaler.
    let np = created(
        json!({"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": meta("np"),
        "spec": {"egress": [{"ports": [{"port": 53}]}]}}),
    );
    assert_eq!(
        np["spec"],
        json!({"podSelector": {}, "egress": [{"ports": [{"port": 53, "protocol": "TCP"}]}], "policyTypes": ["Ingress", "Egress"]})
    );
    let sc = created(
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "fast"}, "provisioner": "csi.example.com"}),
    );
    assert_eq!(sc["reclaimPolicy"], "Delete");
    assert_eq!(sc["volumeBindingMode"], "Immediate");
    let pc = created(
        json!({"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"}, "value": 1000}),
    );
    assert_eq!(pc["preemptionPolicy"], "PreemptLowerPriority");
    let hpa = created(
        json!({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": meta("hpa"),
        "spec": {"maxReplicas": 5, "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}}),
    );
    assert_eq!(hpa["spec"]["minReplicas"], 1);
    assert_eq!(
        hpa["spec"]["metrics"],
        json!([{"type": "Resource", "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}])
    );
}

#[test]
fn csi_driver() {
    // storage/v1 SetDefaults_CSIDriver (SELinuxMountReadWriteOncePod on by default).
    let got = created(
        json!({"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "csi.example.com"}, "spec": {}}),
    );
    assert_eq!(
        got["spec"],
        json!({"attachRequired": true, "podInfoOnMount": false, "storageCapacity": false, "fsGroupPolicy": "ReadWriteOnceWithFSType",
            "volumeLifecycleModes": ["Persistent"], "requiresRepublish": false, "seLinuxMount": false})
    );
}

// ---------------------------------------------------------------- refusals

#[test]
fn deployment_selector_mismatch_and_bad_container_name() {
    let mut spec = web_spec();
    spec["template"] = template(
        json!({"app": "y"}),
        json!({"name": "Bad_Name", "image": "nginx"}),
    );
    let e = refused(deployment("x", spec));
    let labels = "Invalid value: map[string]string{\"app\":\"y\"}: `selector` does not match template `labels`";
    let name = format!("Invalid value: \"Bad_Name\": {LABEL_MSG}");
    assert_invalid(
        &e,
        &format!(
            "Deployment.apps \"x\" is invalid: [spec.template.metadata.labels: {labels}, spec.template.spec.containers[0].name: {name}]"
        ),
        &[
            ("FieldValueInvalid", "spec.template.metadata.labels", labels),
            (
                "FieldValueInvalid",
                "spec.template.spec.containers[0].name",
                &name,
            ),
        ],
    );
}

#[test]
fn deployment_without_selector() {
    let mut spec = web_spec();
    spec.as_object_mut().unwrap().remove("selector");
    let e = refused(deployment("x", spec));
    let labels = "Invalid value: map[string]string{\"app\":\"web\"}: `selector` does not match template `labels`";
    assert_invalid(
        &e,
        &format!(
            "Deployment.apps \"x\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: {labels}]"
        ),
        &[
            ("FieldValueRequired", "spec.selector", "Required value"),
            ("FieldValueInvalid", "spec.template.metadata.labels", labels),
        ],
    );
}

#[test]
fn deployment_without_containers_or_image() {
    let mut spec = web_spec();
    spec["template"]["spec"]["containers"] = json!([]);
    let e = refused(deployment("x", spec));
    assert_invalid(
        &e,
        "Deployment.apps \"x\" is invalid: spec.template.spec.containers: Required value",
        &[(
            "FieldValueRequired",
            "spec.template.spec.containers",
            "Required value",
        )],
    );
    let mut spec = web_spec();
    spec["template"]["spec"]["containers"] = json!([{"name": "c"}]);
    let e = refused(deployment("x", spec));
    assert_invalid(
        &e,
        "Deployment.apps \"x\" is invalid: spec.template.spec.containers[0].image: Required value",
        &[(
            "FieldValueRequired",
            "spec.template.spec.containers[0].image",
            "Required value",
        )],
    );
}

#[test]
fn duplicate_container_names_and_bad_ports() {
    let mut spec = web_spec();
    spec["template"]["spec"]["containers"] = json!([
        {"name": "c", "image": "a", "ports": [{"containerPort": 70000, "protocol": "HTTP"}]},
        {"name": "c", "image": "b"}
    ]);
    let e = refused(deployment("x", spec));
    let p = "spec.template.spec.containers";
    assert_invalid(
        &e,
        &format!(
            "Deployment.apps \"x\" is invalid: [{p}[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive, {p}[0].ports[0].protocol: Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\", {p}[1].name: Duplicate value: \"c\"]"
        ),
        &[
            (
                "FieldValueInvalid",
                &format!("{p}[0].ports[0].containerPort"),
                "Invalid value: 70000: must be between 1 and 65535, inclusive",
            ),
            (
                "FieldValueNotSupported",
                &format!("{p}[0].ports[0].protocol"),
                "Unsupported value: \"HTTP\": supported values: \"SCTP\", \"TCP\", \"UDP\"",
            ),
            (
                "FieldValueDuplicate",
                &format!("{p}[1].name"),
                "Duplicate value: \"c\"",
            ),
        ],
    );
}

#[test]
fn env_names_and_unknown_volume_mounts() {
    let mut spec = web_spec();
    spec["template"]["spec"]["containers"] = json!([{"name": "c", "image": "a",
        "env": [{"name": "A=B", "value": "x"}], "volumeMounts": [{"name": "data", "mountPath": "/data"}]}]);
    let e = refused(deployment("x", spec));
    let p = "spec.template.spec.containers[0]";
    let env = "Invalid value: \"A=B\": a valid environment variable name must consist only of printable ASCII characters other than '='";
    assert_invalid(
        &e,
        &format!(
            "Deployment.apps \"x\" is invalid: [{p}.env[0].name: {env}, {p}.volumeMounts[0].name: Not found: \"data\"]"
        ),
        &[
            ("FieldValueInvalid", &format!("{p}.env[0].name"), env),
            (
                "FieldValueNotFound",
                &format!("{p}.volumeMounts[0].name"),
                "Not found: \"data\"",
            ),
        ],
    );
}

#[test]
fn requests_above_limits() {
    let mut spec = web_spec();
    spec["template"]["spec"]["containers"] = json!([{"name": "c", "image": "a",
        "resources": {"limits": {"cpu": "1"}, "requests": {"cpu": "2"}}}]);
    let e = refused(deployment("x", spec));
    let f = "spec.template.spec.containers[0].resources.requests";
    assert_invalid(
        &e,
        &format!(
            "Deployment.apps \"x\" is invalid: {f}: Invalid value: \"2\": must be less than or equal to cpu limit of 1"
        ),
        &[(
            "FieldValueInvalid",
            f,
            "Invalid value: \"2\": must be less than or equal to cpu limit of 1",
        )],
    );
}

#[test]
fn bad_quantity_is_a_decode_error() {
    let mut spec = web_spec();
    spec["template"]["spec"]["containers"][0]["resources"] = json!({"limits": {"cpu": "one"}});
    let e = refused(deployment("x", spec));
    assert_eq!(e.code, 400);
    assert_eq!(
        e.message,
        "Deployment in version \"v1\" cannot be handled as a Deployment: quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    );
}

#[test]
fn deployment_restart_policy_and_strategy() {
    let mut spec = web_spec();
    spec["template"]["spec"]["restartPolicy"] = json!("Never");
    spec["strategy"] = json!({"type": "Recreate", "rollingUpdate": {"maxSurge": 1}});
    let e = refused(deployment("x", spec));
    assert_invalid(
        &e,
        "Deployment.apps \"x\" is invalid: [spec.template.spec.restartPolicy: Unsupported value: \"Never\": supported values: \"Always\", spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate']",
        &[
            (
                "FieldValueNotSupported",
                "spec.template.spec.restartPolicy",
                "Unsupported value: \"Never\": supported values: \"Always\"",
            ),
            (
                "FieldValueForbidden",
                "spec.strategy.rollingUpdate",
                "Forbidden: may not be specified when strategy `type` is 'Recreate'",
            ),
        ],
    );
}

#[test]
fn deployment_zero_surge_and_unavailable() {
    let mut spec = web_spec();
    spec["strategy"] = json!({"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}});
    let e = refused(deployment("x", spec));
    let m = "Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:\"\"}: may not be 0 when `maxSurge` is 0";
    assert_invalid(
        &e,
        &format!(
            "Deployment.apps \"x\" is invalid: spec.strategy.rollingUpdate.maxUnavailable: {m}"
        ),
        &[(
            "FieldValueInvalid",
            "spec.strategy.rollingUpdate.maxUnavailable",
            m,
        )],
    );
}

#[test]
fn deployment_selector_is_immutable() {
    let old = created(deployment("web", web_spec()));
    let mut spec = web_spec();
    spec["selector"] = json!({"matchLabels": {"app": "web", "tier": "front"}});
    spec["template"]["metadata"]["labels"] = json!({"app": "web", "tier": "front"});
    let e = update(&old, deployment("web", spec)).unwrap_err();
    let m = "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"web\", \"tier\":\"front\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable";
    assert_invalid(
        &e,
        &format!("Deployment.apps \"web\" is invalid: spec.selector: {m}"),
        &[("FieldValueInvalid", "spec.selector", m)],
    );
    // The template may change.
    let mut spec = web_spec();
    spec["template"]["spec"]["containers"][0]["image"] = json!("nginx:1.28");
    assert!(update(&old, deployment("web", spec)).is_ok());
}

#[test]
fn replicaset_empty_selector() {
    let o = json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": meta("rs"), "spec": {
        "selector": {}, "template": template(json!({"app": "rs"}), json!({"name": "c", "image": "nginx"}))}});
    let e = refused(o);
    let m = "Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment";
    assert_invalid(
        &e,
        &format!("ReplicaSet.apps \"rs\" is invalid: spec.selector: {m}"),
        &[("FieldValueInvalid", "spec.selector", m)],
    );
}

#[test]
fn statefulset_spec_updates_are_forbidden() {
    let sts = |service: &str| {
        json!({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": meta("db"), "spec": {
            "serviceName": service, "selector": {"matchLabels": {"app": "db"}},
            "template": template(json!({"app": "db"}), json!({"name": "c", "image": "postgres:17"}))}})
    };
    let old = created(sts("db"));
    let e = update(&old, sts("other")).unwrap_err();
    let m = "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden";
    assert_invalid(
        &e,
        &format!("StatefulSet.apps \"db\" is invalid: spec: {m}"),
        &[("FieldValueForbidden", "spec", m)],
    );
    let mut scaled = sts("db");
    scaled["spec"]["replicas"] = json!(3);
    assert!(update(&old, scaled).is_ok());
}

#[test]
fn daemonset_selector_is_immutable() {
    let ds = |app: &str| {
        json!({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": meta("agent"), "spec": {
            "selector": {"matchLabels": {"app": app}},
            "template": template(json!({"app": app}), json!({"name": "c", "image": "agent:1"}))}})
    };
    let old = created(ds("agent"));
    let e = update(&old, ds("agent2")).unwrap_err();
    let m = "Invalid value: v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"agent2\"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable";
    assert_invalid(
        &e,
        &format!("DaemonSet.apps \"agent\" is invalid: spec.selector: {m}"),
        &[("FieldValueInvalid", "spec.selector", m)],
    );
}

#[test]
fn job_restart_policy_always() {
    let e = refused(job(
        "pi",
        json!({"template": {"spec": {"containers": [{"name": "c", "image": "perl"}]}}}),
    ));
    let m = "Required value: valid values: \"OnFailure\", \"Never\"";
    assert_invalid(
        &e,
        &format!("Job.batch \"pi\" is invalid: spec.template.spec.restartPolicy: {m}"),
        &[("FieldValueRequired", "spec.template.spec.restartPolicy", m)],
    );
}

#[test]
fn job_template_is_immutable() {
    let old = created(job("pi", json!({"template": never_template()})));
    let mut new = old.clone();
    new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("busybox:1.37");
    let e = update(&old, new).unwrap_err();
    assert_invalid(
        &e,
        "Job.batch \"pi\" is invalid: spec.template: Invalid value: core.PodTemplateSpec{...}: field is immutable",
        &[(
            "FieldValueInvalid",
            "spec.template",
            "Invalid value: core.PodTemplateSpec{...}: field is immutable",
        )],
    );
    let mut suspended = old.clone();
    suspended["spec"]["suspend"] = json!(true);
    assert!(update(&old, suspended).is_ok());
}

#[test]
fn job_manual_selector_without_selector() {
    let mut t = never_template();
    t["metadata"] = json!({"labels": {"app": "b"}});
    let e = refused(job("m", json!({"manualSelector": true, "template": t})));
    let labels = "Invalid value: map[string]string{\"app\":\"b\"}: `selector` does not match template `labels`";
    assert_invalid(
        &e,
        &format!(
            "Job.batch \"m\" is invalid: [spec.selector: Required value, spec.template.metadata.labels: {labels}]"
        ),
        &[
            ("FieldValueRequired", "spec.selector", "Required value"),
            ("FieldValueInvalid", "spec.template.metadata.labels", labels),
        ],
    );
}

#[test]
fn cronjob_schedule_and_name() {
    let name = "a".repeat(53);
    let o = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta(&name), "spec": {
        "schedule": "every minute", "jobTemplate": {"spec": {"template": never_template()}}}});
    let e = refused(o);
    let s = "Invalid value: \"every minute\": expected exactly 5 fields, found 2: [every minute]";
    let n = format!("Invalid value: \"{name}\": must be no more than 52 characters");
    assert_invalid(
        &e,
        &format!("CronJob.batch \"{name}\" is invalid: [spec.schedule: {s}, metadata.name: {n}]"),
        &[
            ("FieldValueInvalid", "spec.schedule", s),
            ("FieldValueInvalid", "metadata.name", &n),
        ],
    );
}

#[test]
fn cronjob_job_template_restart_policy() {
    let o = json!({"apiVersion": "batch/v1", "kind": "CronJob", "metadata": meta("tick"), "spec": {
        "schedule": "@hourly", "jobTemplate": {"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}}}});
    let e = refused(o);
    let m = "Required value: valid values: \"OnFailure\", \"Never\"";
    assert_invalid(
        &e,
        &format!(
            "CronJob.batch \"tick\" is invalid: spec.jobTemplate.spec.template.spec.restartPolicy: {m}"
        ),
        &[(
            "FieldValueRequired",
            "spec.jobTemplate.spec.template.spec.restartPolicy",
            m,
        )],
    );
}

#[test]
fn pod_bad_container_name() {
    let e = refused(pod(
        "p",
        json!({"containers": [{"name": "Web", "image": "nginx"}]}),
    ));
    let m = format!("Invalid value: \"Web\": {LABEL_MSG}");
    assert_invalid(
        &e,
        &format!("Pod \"p\" is invalid: spec.containers[0].name: {m}"),
        &[("FieldValueInvalid", "spec.containers[0].name", &m)],
    );
}

#[test]
fn service_names_are_dns1035_labels() {
    let e = refused(service("1web", json!({"ports": [{"port": 80}]})));
    let m = format!("Invalid value: \"1web\": {DNS1035_MSG}");
    assert_invalid(
        &e,
        &format!("Service \"1web\" is invalid: metadata.name: {m}"),
        &[("FieldValueInvalid", "metadata.name", &m)],
    );
}

#[test]
fn service_without_ports_and_with_unnamed_ports() {
    let e = refused(service("s", json!({"selector": {"a": "b"}})));
    assert_invalid(
        &e,
        "Service \"s\" is invalid: spec.ports: Required value",
        &[("FieldValueRequired", "spec.ports", "Required value")],
    );
    let e = refused(service(
        "s",
        json!({"ports": [{"port": 80}, {"port": 443}]}),
    ));
    assert_invalid(
        &e,
        "Service \"s\" is invalid: [spec.ports[0].name: Required value, spec.ports[1].name: Required value]",
        &[
            ("FieldValueRequired", "spec.ports[0].name", "Required value"),
            ("FieldValueRequired", "spec.ports[1].name", "Required value"),
        ],
    );
}

#[test]
fn service_node_port_on_cluster_ip_and_out_of_range() {
    let e = refused(service(
        "s",
        json!({"ports": [{"port": 80, "nodePort": 30001}]}),
    ));
    assert_invalid(
        &e,
        "Service \"s\" is invalid: spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'",
        &[(
            "FieldValueForbidden",
            "spec.ports[0].nodePort",
            "Forbidden: may not be used when `type` is 'ClusterIP'",
        )],
    );
    let e = refused(service(
        "s",
        json!({"clusterIP": "192.168.0.1", "ports": [{"port": 80}]}),
    ));
    let m = "Invalid value: []string{\"192.168.0.1\"}: failed to allocate IP 192.168.0.1: the provided IP (192.168.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12";
    assert_invalid(
        &e,
        &format!("Service \"s\" is invalid: spec.clusterIPs: {m}"),
        &[("FieldValueInvalid", "spec.clusterIPs", m)],
    );
}

#[test]
fn service_cluster_ip_is_immutable_and_carried_over() {
    let old = created(service(
        "web",
        json!({"clusterIP": "10.96.200.2", "type": "NodePort", "ports": [{"port": 80}]}),
    ));
    // An update that leaves out the allocated fields keeps them.
    let kept = update(
        &old,
        service("web", json!({"type": "NodePort", "ports": [{"port": 80}]})),
    )
    .unwrap();
    assert_eq!(kept["spec"]["clusterIPs"], json!(["10.96.200.2"]));
    assert_eq!(
        kept["spec"]["ports"][0]["nodePort"],
        old["spec"]["ports"][0]["nodePort"]
    );
    let e = update(&old, service("web", json!({"type": "NodePort", "clusterIP": "10.96.200.3", "clusterIPs": ["10.96.200.3"], "ports": [{"port": 80}]})))
        .unwrap_err();
    let m = "Invalid value: []string{\"10.96.200.3\"}: may not change once set";
    assert_invalid(
        &e,
        &format!("Service \"web\" is invalid: spec.clusterIPs[0]: {m}"),
        &[("FieldValueInvalid", "spec.clusterIPs[0]", m)],
    );
    // Back to ClusterIP: the node ports go.
    let back = update(
        &kept,
        service(
            "web",
            json!({"type": "ClusterIP", "ports": kept["spec"]["ports"].clone()}),
        ),
    )
    .unwrap();
    assert!(back["spec"]["ports"][0].get("nodePort").is_none());
}

fn config_map(name: &str, extra: Value) -> Value {
    let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta(name)});
    for (k, v) in extra.as_object().unwrap() {
        o[k] = v.clone();
    }
    o
}

#[test]
fn config_map_keys_labels_and_annotations() {
    let mut o = config_map("cfg", json!({"data": {"bad key": "x"}}));
    o["metadata"]["labels"] = json!({"app": "-x"});
    o["metadata"]["annotations"] = json!({"big": "x".repeat(256 * 1024)});
    let e = refused(o);
    let key = "Invalid value: \"bad key\": a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or 'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')";
    let label = "Invalid value: \"-x\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    let big = "Too long: may not be more than 262144 bytes";
    assert_invalid(
        &e,
        &format!(
            "ConfigMap \"cfg\" is invalid: [metadata.labels: {label}, metadata.annotations: {big}, data[bad key]: {key}]"
        ),
        &[
            ("FieldValueInvalid", "metadata.labels", label),
            ("FieldValueTooLong", "metadata.annotations", big),
            ("FieldValueInvalid", "data[bad key]", key),
        ],
    );
}

#[test]
fn immutable_config_map() {
    let old = created(config_map(
        "cfg",
        json!({"immutable": true, "data": {"a": "1"}}),
    ));
    let e = update(
        &old,
        config_map("cfg", json!({"immutable": true, "data": {"a": "2"}})),
    )
    .unwrap_err();
    assert_invalid(
        &e,
        "ConfigMap \"cfg\" is invalid: data: Forbidden: field is immutable when `immutable` is set",
        &[(
            "FieldValueForbidden",
            "data",
            "Forbidden: field is immutable when `immutable` is set",
        )],
    );
}

#[test]
fn secret_type_is_immutable_and_tls_needs_keys() {
    let old = created(
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta("s"), "data": {"a": "eA=="}}),
    );
    let e = update(&old, json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta("s"), "type": "kubernetes.io/tls",
        "data": {"tls.crt": "eA==", "tls.key": "eA=="}})).unwrap_err();
    let m = "Invalid value: \"kubernetes.io/tls\": field is immutable";
    assert_invalid(
        &e,
        &format!("Secret \"s\" is invalid: type: {m}"),
        &[("FieldValueInvalid", "type", m)],
    );
    let e = refused(
        json!({"apiVersion": "v1", "kind": "Secret", "metadata": meta("t"), "type": "kubernetes.io/tls", "data": {}}),
    );
    assert_invalid(
        &e,
        "Secret \"t\" is invalid: [data[tls.key]: Required value, data[tls.crt]: Required value]",
        &[
            ("FieldValueRequired", "data[tls.key]", "Required value"),
            ("FieldValueRequired", "data[tls.crt]", "Required value"),
        ],
    );
}

#[test]
fn pvc_requires_access_modes_and_storage() {
    let e = refused(
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta("c"), "spec": {}}),
    );
    assert_invalid(
        &e,
        "PersistentVolumeClaim \"c\" is invalid: [spec.accessModes: Required value: at least 1 access mode is required, spec.resources[storage]: Required value]",
        &[
            (
                "FieldValueRequired",
                "spec.accessModes",
                "Required value: at least 1 access mode is required",
            ),
            (
                "FieldValueRequired",
                "spec.resources[storage]",
                "Required value",
            ),
        ],
    );
}

#[test]
fn pvc_spec_is_immutable() {
    let pvc = |sc: &str| {
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta("c"),
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": sc, "resources": {"requests": {"storage": "1Gi"}}}})
    };
    let old = created(pvc("fast"));
    let e = update(&old, pvc("slow")).unwrap_err();
    let m = "Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims";
    assert_invalid(
        &e,
        &format!("PersistentVolumeClaim \"c\" is invalid: spec: {m}"),
        &[("FieldValueForbidden", "spec", m)],
    );
}

#[test]
fn role_rules_need_verbs_and_resources() {
    let e = refused(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": meta("r"),
        "rules": [{"apiGroups": [""]}]}),
    );
    assert_invalid(
        &e,
        "Role.rbac.authorization.k8s.io \"r\" is invalid: [rules[0].verbs: Required value: verbs must contain at least one value, rules[0].resources: Required value: resource rules must supply at least one resource]",
        &[
            (
                "FieldValueRequired",
                "rules[0].verbs",
                "Required value: verbs must contain at least one value",
            ),
            (
                "FieldValueRequired",
                "rules[0].resources",
                "Required value: resource rules must supply at least one resource",
            ),
        ],
    );
}

#[test]
fn role_binding_role_ref_and_subjects() {
    let rb = |role: &str, subjects: Value| {
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": meta("rb"),
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": role}, "subjects": subjects})
    };
    let old = created(rb("a", json!([])));
    let e = update(&old, rb("b", json!([]))).unwrap_err();
    let m = "Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", Name:\"b\"}: cannot change roleRef";
    assert_invalid(
        &e,
        &format!("RoleBinding.rbac.authorization.k8s.io \"rb\" is invalid: roleRef: {m}"),
        &[("FieldValueInvalid", "roleRef", m)],
    );
    let e = refused(rb("a", json!([{"kind": "Robot", "name": "r2"}])));
    let m =
        "Unsupported value: \"Robot\": supported values: \"ServiceAccount\", \"User\", \"Group\"";
    assert_invalid(
        &e,
        &format!("RoleBinding.rbac.authorization.k8s.io \"rb\" is invalid: subjects[0].kind: {m}"),
        &[("FieldValueNotSupported", "subjects[0].kind", m)],
    );
}

#[test]
fn webhook_without_side_effects_or_review_versions() {
    let mut hook = good_hook();
    hook.as_object_mut().unwrap().remove("sideEffects");
    hook.as_object_mut()
        .unwrap()
        .remove("admissionReviewVersions");
    let e = refused(webhook_config("ValidatingWebhookConfiguration", hook));
    assert_invalid(
        &e,
        "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"hooks\" is invalid: [webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun, webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1]",
        &[
            (
                "FieldValueRequired",
                "webhooks[0].sideEffects",
                "Required value: must specify one of None, NoneOnDryRun",
            ),
            (
                "FieldValueRequired",
                "webhooks[0].admissionReviewVersions",
                "Required value: must specify one of v1, v1beta1",
            ),
        ],
    );
}

#[test]
fn webhook_name_and_client_config() {
    let mut hook = good_hook();
    hook["name"] = json!("validate");
    hook["clientConfig"] = json!({});
    hook["timeoutSeconds"] = json!(60);
    let e = refused(webhook_config("MutatingWebhookConfiguration", hook));
    assert_invalid(
        &e,
        "MutatingWebhookConfiguration.admissionregistration.k8s.io \"hooks\" is invalid: [webhooks[0].name: Invalid value: \"validate\": should be a domain with at least three segments separated by dots, webhooks[0].timeoutSeconds: Invalid value: 60: the timeout value must be between 1 and 30 seconds, webhooks[0].clientConfig: Required value: exactly one of url or service is required]",
        &[
            (
                "FieldValueInvalid",
                "webhooks[0].name",
                "Invalid value: \"validate\": should be a domain with at least three segments separated by dots",
            ),
            (
                "FieldValueInvalid",
                "webhooks[0].timeoutSeconds",
                "Invalid value: 60: the timeout value must be between 1 and 30 seconds",
            ),
            (
                "FieldValueRequired",
                "webhooks[0].clientConfig",
                "Required value: exactly one of url or service is required",
            ),
        ],
    );
}

#[test]
fn webhook_url_must_be_https() {
    let mut hook = good_hook();
    hook["clientConfig"] = json!({"url": "http://hooks.example.com/validate"});
    let e = refused(webhook_config("ValidatingWebhookConfiguration", hook));
    let m = "Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: https://host[/path]";
    assert_invalid(
        &e,
        &format!(
            "ValidatingWebhookConfiguration.admissionregistration.k8s.io \"hooks\" is invalid: webhooks[0].clientConfig.url: {m}"
        ),
        &[("FieldValueInvalid", "webhooks[0].clientConfig.url", m)],
    );
}

#[test]
fn policy_without_validations_or_match_constraints() {
    let e = refused(vap(json!({})));
    let m = "Required value: validations or auditAnnotations must contain at least one item";
    assert_invalid(
        &e,
        &format!(
            "ValidatingAdmissionPolicy.admissionregistration.k8s.io \"replicas\" is invalid: [spec.matchConstraints: Required value, spec.validations: {m}, spec.auditAnnotations: {m}]"
        ),
        &[
            (
                "FieldValueRequired",
                "spec.matchConstraints",
                "Required value",
            ),
            ("FieldValueRequired", "spec.validations", m),
            ("FieldValueRequired", "spec.auditAnnotations", m),
        ],
    );
}

#[test]
fn policy_binding_without_actions() {
    let e = refused(
        json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
        "metadata": {"name": "b"}, "spec": {"policyName": "replicas"}}),
    );
    let m = "Required value: at least one validation action is required";
    assert_invalid(
        &e,
        &format!(
            "ValidatingAdmissionPolicyBinding.admissionregistration.k8s.io \"b\" is invalid: spec.validationActions: {m}"
        ),
        &[("FieldValueRequired", "spec.validationActions", m)],
    );
}

#[test]
fn pdb_with_both_bounds() {
    let e = refused(
        json!({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": meta("pdb"),
        "spec": {"minAvailable": 1, "maxUnavailable": "150%"}}),
    );
    let both = "Invalid value: policy.PodDisruptionBudgetSpec{...}: minAvailable and maxUnavailable cannot be both set";
    let pct = "Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:\"150%\"}: must not be greater than 100%";
    assert_invalid(
        &e,
        &format!(
            "PodDisruptionBudget.policy \"pdb\" is invalid: [spec: {both}, spec.maxUnavailable: {pct}]"
        ),
        &[
            ("FieldValueInvalid", "spec", both),
            ("FieldValueInvalid", "spec.maxUnavailable", pct),
        ],
    );
}

#[test]
fn namespace_names_are_dns1123_labels() {
    let e =
        refused(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team.a"}}));
    let m = format!("Invalid value: \"team.a\": {LABEL_MSG}");
    assert_invalid(
        &e,
        &format!("Namespace \"team.a\" is invalid: metadata.name: {m}"),
        &[("FieldValueInvalid", "metadata.name", &m)],
    );
}

#[test]
fn rbac_names_are_path_segments() {
    // `system:controller:foo` is a valid RBAC name; `a/b` is not.
    assert!(create_with(json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "system:controller:foo"}}), &Allocated::default()).is_ok());
    let e = refused(
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "a/b"}}),
    );
    assert_invalid(
        &e,
        "ClusterRole.rbac.authorization.k8s.io \"a/b\" is invalid: metadata.name: Invalid value: \"a/b\": may not contain '/'",
        &[(
            "FieldValueInvalid",
            "metadata.name",
            "Invalid value: \"a/b\": may not contain '/'",
        )],
    );
}

#[test]
fn workload_status_counters_are_non_negative() {
    let old = created(deployment("web", web_spec()));
    let mut new = old.clone();
    new["status"] = json!({"replicas": -1});
    let mut n = new.clone();
    let e = admit_with(
        "apps",
        "Deployment",
        "v1",
        &mut n,
        Write::Status,
        &Allocated::default(),
    )
    .unwrap_err();
    // The other counts (0) are then greater than status.replicas too, as in the source.
    let more = "Invalid value: 0: cannot be greater than status.replicas";
    assert_invalid(
        &e,
        &format!(
            "Deployment.apps \"web\" is invalid: [status.replicas: Invalid value: -1: must be greater than or equal to 0, status.updatedReplicas: {more}, status.readyReplicas: {more}, status.availableReplicas: {more}]"
        ),
        &[
            (
                "FieldValueInvalid",
                "status.replicas",
                "Invalid value: -1: must be greater than or equal to 0",
            ),
            ("FieldValueInvalid", "status.updatedReplicas", more),
            ("FieldValueInvalid", "status.readyReplicas", more),
            ("FieldValueInvalid", "status.availableReplicas", more),
        ],
    );
}

#[test]
fn deployment_status_counts_fit_inside_one_another() {
    let mut d = created(deployment("web", web_spec()));
    d["status"] = json!({"replicas": 1, "readyReplicas": 1, "availableReplicas": 2});
    let e = admit_with(
        "apps",
        "Deployment",
        "v1",
        &mut d,
        Write::Status,
        &Allocated::default(),
    )
    .unwrap_err();
    assert_invalid(
        &e,
        "Deployment.apps \"web\" is invalid: [status.availableReplicas: Invalid value: 2: cannot be greater than status.replicas, status.availableReplicas: Invalid value: 2: cannot be greater than readyReplicas]",
        &[
            (
                "FieldValueInvalid",
                "status.availableReplicas",
                "Invalid value: 2: cannot be greater than status.replicas",
            ),
            (
                "FieldValueInvalid",
                "status.availableReplicas",
                "Invalid value: 2: cannot be greater than readyReplicas",
            ),
        ],
    );
}

#[test]
fn quantities_come_back_canonical() {
    // SetDefaults_ResourceList rounds up to milli-units; Quantity.String() prints the canonical
    // form (a controller comparing "0.5" with the stored "500m" would update forever).
    let mut spec = web_spec();
    spec["template"]["spec"]["containers"][0]["resources"] = json!({"limits": {"cpu": "0.5", "memory": "1024Mi"}, "requests": {"cpu": 0.25, "memory": "1000"}});
    let got = created(deployment("web", spec));
    assert_eq!(
        got["spec"]["template"]["spec"]["containers"][0]["resources"],
        json!({"limits": {"cpu": "500m", "memory": "1Gi"}, "requests": {"cpu": "250m", "memory": "1k"}})
    );
    let claim = created(
        json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta("data"),
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "2048Mi"}}}}),
    );
    assert_eq!(claim["spec"]["resources"]["requests"]["storage"], "2Gi");
}

#[test]
fn init_containers_are_sidecars_only_with_restart_policy_always() {
    // validateInitContainers: `Always` is the one restart policy, and only sidecars may carry
    // lifecycle hooks and probes.
    let pod = |init: Value| {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": meta("p"), "spec": {
            "initContainers": [init], "containers": [{"name": "c", "image": "busybox"}]}})
    };
    let probe = json!({"exec": {"command": ["true"]}});
    let sidecar =
        json!({"name": "s", "image": "envoy", "restartPolicy": "Always", "readinessProbe": probe});
    created(pod(sidecar.clone()));
    // A sidecar written among the regular containers (a common slip).
    let mut misplaced = pod(json!({"name": "i", "image": "busybox"}));
    misplaced["spec"]["containers"][0]["restartPolicy"] = json!("Always");
    assert_invalid(
        &refused(misplaced),
        "Pod \"p\" is invalid: spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers",
        &[(
            "FieldValueForbidden",
            "spec.containers[0].restartPolicy",
            "Forbidden: may not be set for non-init containers",
        )],
    );
    let e = refused(pod(
        json!({"name": "i", "image": "busybox", "restartPolicy": "OnFailure", "livenessProbe": probe}),
    ));
    assert_invalid(
        &e,
        "Pod \"p\" is invalid: [spec.initContainers[0].restartPolicy: Unsupported value: \"OnFailure\": supported values: \"Always\", spec.initContainers[0].livenessProbe: Forbidden: may not be set for init containers without restartPolicy=Always]",
        &[
            (
                "FieldValueNotSupported",
                "spec.initContainers[0].restartPolicy",
                "Unsupported value: \"OnFailure\": supported values: \"Always\"",
            ),
            (
                "FieldValueForbidden",
                "spec.initContainers[0].livenessProbe",
                "Forbidden: may not be set for init containers without restartPolicy=Always",
            ),
        ],
    );
}

#[test]
fn a_pod_failure_policy_needs_restart_policy_never() {
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": meta("j"), "spec": {
        "podFailurePolicy": {"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]},
        "template": {"spec": {"restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}});
    let e = refused(job);
    assert_invalid(
        &e,
        "Job.batch \"j\" is invalid: spec.template.spec.restartPolicy: Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified",
        &[(
            "FieldValueInvalid",
            "spec.template.spec.restartPolicy",
            "Invalid value: \"OnFailure\": only \"Never\" is supported when podFailurePolicy is specified",
        )],
    );
}
