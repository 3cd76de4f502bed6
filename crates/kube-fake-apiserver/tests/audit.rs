//! The audit log (`ServerBuilder::audit`, kube-apiserver's `--audit-policy-file` and
//! `--audit-log-path`): events as `audit.k8s.io/v1` JSON lines at the policy's levels and
//! stages, with authorization's decision, and the audit annotations and `Audit` action of
//! ValidatingAdmissionPolicies.
use crate::common;

use common::post;
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

const POLICY: &str = r#"
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: None
  nonResourceURLs: ["/healthz*", "/version", "/openapi*"]
- level: None
  resources: [{group: "admissionregistration.k8s.io"}]
- level: RequestResponse
  resources: [{group: "", resources: ["secrets"]}]
  omitManagedFields: true
- level: Request
  verbs: ["delete"]
  omitStages: ["ResponseComplete"]
- level: Metadata
"#;

const TOKENS: &str = "bob-token,bob,1002\n";

async fn server(log: &std::path::Path) -> FakeApiServer {
    FakeApiServer::builder()
        .rbac(true)
        .token_auth_file(TOKENS)
        .audit(POLICY, log)
        .start()
        .await
        .expect("server starts")
}

fn events(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).expect("each line is one JSON event"))
        .collect()
}

/// The one event of the request to `uri` with `verb`.
fn event_of<'a>(events: &'a [Value], verb: &str, uri: &str) -> &'a Value {
    let found: Vec<&Value> = events
        .iter()
        .filter(|e| e["verb"] == verb && e["requestURI"] == uri)
        .collect();
    assert_eq!(found.len(), 1, "{verb} {uri}: {events:#?}");
    found[0]
}

#[tokio::test]
async fn requests_are_logged_at_the_policys_levels_and_stages() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let srv = server(&log).await;
    let c = srv.client();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "1"}});
    assert_eq!(
        post(&c, "/api/v1/namespaces/default/configmaps", cm)
            .await
            .code,
        201
    );
    let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "token"}, "stringData": {"t": "x"}});
    assert_eq!(
        post(&c, "/api/v1/namespaces/default/secrets", secret)
            .await
            .code,
        201
    );
    let patch = json!({"metadata": {"labels": {"rotated": "yes"}}});
    let r = common::merge_patch(&c, "/api/v1/namespaces/default/secrets/token", patch).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(common::get(&c, "/healthz").await.code, 200);
    assert_eq!(
        common::delete(&c, "/api/v1/namespaces/default/configmaps/settings")
            .await
            .code,
        200
    );
    // bob may do nothing: a 403 with authorization's reason.
    let bob = kube::Client::try_from(srv.client_config_with_token("bob-token")).unwrap();
    assert_eq!(
        common::get(&bob, "/api/v1/namespaces/default/pods")
            .await
            .code,
        403
    );

    // A watch the server ends: logged when it starts and when its stream ends.
    let watch = "/api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1";
    let (_, _) = common::watch(&c, watch, 100, std::time::Duration::from_secs(5)).await;
    let watch_stages = |all: &[Value]| -> Vec<Value> {
        all.iter()
            .filter(|e| e["requestURI"] == watch)
            .map(|e| e["stage"].clone())
            .collect()
    };
    let all = common::eventually("the watch's end in the log", || {
        let all = events(&log);
        async move { (watch_stages(&all).len() == 2).then_some(all) }
    })
    .await;
    assert_eq!(
        watch_stages(&all),
        vec![json!("ResponseStarted"), json!("ResponseComplete")]
    );
    // RequestReceived is omitted by the policy; /healthz is level None; the delete's only
    // stage is omitted by its rule.
    assert!(
        all.iter()
            .all(|e| e["stage"] == "ResponseComplete" || e["requestURI"] == watch),
        "{all:#?}"
    );
    assert!(all.iter().all(|e| e["requestURI"] != "/healthz"));
    assert!(all.iter().all(|e| e["verb"] != "delete"), "{all:#?}");

    let create = event_of(&all, "create", "/api/v1/namespaces/default/configmaps");
    assert_eq!(create["kind"], "Event");
    assert_eq!(create["apiVersion"], "audit.k8s.io/v1");
    assert_eq!(create["level"], "Metadata");
    assert_eq!(
        create["objectRef"],
        json!({"resource": "configmaps", "namespace": "default", "name": "settings", "apiVersion": "v1"})
    );
    assert_eq!(
        create["responseStatus"],
        json!({"metadata": {}, "code": 201})
    );
    assert_eq!(create["sourceIPs"], json!(["127.0.0.1"]));
    assert!(
        create.get("requestObject").is_none(),
        "Metadata has no bodies"
    );
    assert!(
        create["user"]["groups"]
            .as_array()
            .is_some_and(|g| g.contains(&json!("system:masters"))),
        "{create}"
    );
    assert_eq!(
        create["annotations"]["authorization.k8s.io/decision"],
        "allow"
    );
    assert_eq!(create["annotations"]["authorization.k8s.io/reason"], "");
    let stamp = create["stageTimestamp"].as_str().unwrap_or_default();
    assert!(
        stamp.len() == "2026-01-01T00:00:00.000000Z".len() && stamp.ends_with('Z'),
        "{stamp}"
    );

    let secret = event_of(&all, "create", "/api/v1/namespaces/default/secrets");
    assert_eq!(secret["level"], "RequestResponse");
    assert_eq!(secret["requestObject"]["stringData"], json!({"t": "x"}));
    assert_eq!(secret["responseObject"]["metadata"]["name"], "token");
    assert!(
        secret["responseObject"]["metadata"]
            .get("managedFields")
            .is_none(),
        "omitManagedFields"
    );

    // A patch is logged as sent.
    let patched = event_of(&all, "patch", "/api/v1/namespaces/default/secrets/token");
    assert_eq!(
        patched["requestObject"],
        json!({"metadata": {"labels": {"rotated": "yes"}}})
    );
    assert_eq!(
        patched["responseObject"]["metadata"]["labels"]["rotated"],
        "yes"
    );

    let denied = event_of(&all, "list", "/api/v1/namespaces/default/pods");
    assert_eq!(denied["user"]["username"], "bob");
    assert_eq!(denied["responseStatus"]["code"], 403);
    assert_eq!(denied["responseStatus"]["reason"], "Forbidden");
    assert_eq!(
        denied["annotations"]["authorization.k8s.io/decision"],
        "forbid"
    );
}

#[tokio::test]
async fn policies_audit_annotations_and_audit_actions_reach_the_event() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("audit.log");
    let srv = server(&log).await;
    let c = srv.client();
    let vap = "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies";
    let r = post(&c, vap, json!({
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "owners"},
        "spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]},
            "matchConditions": [{"name": "not-params", "expression": "!object.metadata.name.startsWith('owners-')"}],
            "validations": [
                {"expression": "true"},
                {"expression": "has(object.metadata.labels) && 'owner' in object.metadata.labels", "message": "an owner label is expected"},
            ],
            "auditAnnotations": [
                {"key": "team", "valueExpression": "params.data.team"},
                {"key": "skipped", "valueExpression": "null"},
            ],
        },
    })).await;
    assert_eq!(r.code, 201, "{}", r.body);
    // Two bindings with different params: both values are published, comma-separated.
    for team in ["blue", "green"] {
        let params = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("owners-{team}")}, "data": {"team": team}});
        assert_eq!(
            post(&c, "/api/v1/namespaces/default/configmaps", params)
                .await
                .code,
            201
        );
        let binding = json!({
            "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
            "metadata": {"name": format!("owners-{team}")},
            "spec": {"policyName": "owners", "validationActions": ["Audit"],
                     "paramRef": {"name": format!("owners-{team}"), "namespace": "default", "parameterNotFoundAction": "Deny"}},
        });
        let r = post(
            &c,
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
            binding,
        )
        .await;
        assert_eq!(r.code, 201, "{}", r.body);
    }
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "unowned"}});
    let r = post(
        &c,
        "/api/v1/namespaces/default/configmaps?fieldManager=me",
        cm,
    )
    .await;
    assert_eq!(r.code, 201, "Audit does not deny: {}", r.body);

    let all = events(&log);
    let e = event_of(
        &all,
        "create",
        "/api/v1/namespaces/default/configmaps?fieldManager=me",
    );
    let annotations = &e["annotations"];
    assert_eq!(annotations["owners/team"], "blue, green", "{e:#}");
    assert!(annotations.get("owners/skipped").is_none());
    let failure: Value = serde_json::from_str(
        annotations["validation.policy.admission.k8s.io/validation_failure"]
            .as_str()
            .unwrap_or_default(),
    )
    .expect("the failure is JSON");
    assert_eq!(
        failure,
        json!([{"message": "an owner label is expected", "policy": "owners", "binding": "owners-blue", "expressionIndex": 1, "validationActions": ["Audit"]}])
    );
    // The policy's own writes are level None.
    assert!(
        all.iter()
            .all(|e| e["objectRef"]["apiGroup"] != "admissionregistration.k8s.io")
    );
}

#[tokio::test]
async fn a_policy_kube_apiserver_refuses_is_an_error_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let e = FakeApiServer::builder()
        .audit(
            "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Everything}]\n",
            dir.path().join("a.log"),
        )
        .start()
        .await
        .unwrap_err();
    assert!(
        e.to_string()
            .starts_with("audit setup: failed decoding audit policy"),
        "{e}"
    );
}
