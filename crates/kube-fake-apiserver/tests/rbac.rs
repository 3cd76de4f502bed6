//! Authentication and RBAC (`ServerBuilder::rbac`): kube-apiserver's 401 and 403 answers, token
//! file users, ServiceAccount tokens from the TokenRequest API, impersonation, roles and
//! bindings (resource names, subresources, non-resource URLs, aggregation), the access and
//! rules reviews, and `kubectl auth can-i` against them.
use std::path::PathBuf;
use std::time::{Duration, Instant};

use http_body_util::BodyExt;
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

const TOKENS: &str = "alice-token,alice,1001,\"dev,qa\"\nbob-token,bob,1002\n";

async fn server() -> FakeApiServer {
    FakeApiServer::builder()
        .rbac(true)
        .token_auth_file(TOKENS)
        .start()
        .await
        .expect("server starts")
}

/// One request as `token` (none: anonymous) with extra headers; the status and JSON body.
async fn call(
    srv: &FakeApiServer,
    token: Option<&str>,
    method: &str,
    path: &str,
    body: Option<Value>,
    headers: &[(&str, &str)],
) -> (u16, Value) {
    let mut config = srv.client_config();
    config.auth_info.token = token.map(|t| t.to_string().into());
    let client = kube::Client::try_from(config).unwrap();
    let content_type = if method == "PATCH" {
        "application/merge-patch+json"
    } else {
        "application/json"
    };
    let mut req = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", content_type);
    for (k, v) in headers {
        req = req.header(*k, *v);
    }
    let bytes = body.map(|b| b.to_string().into_bytes()).unwrap_or_default();
    let resp = client
        .send(req.body(kube::client::Body::from(bytes)).unwrap())
        .await
        .expect("request sent");
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await.unwrap().to_bytes();
    (
        status,
        serde_json::from_slice(&body).unwrap_or_else(|_| json!(String::from_utf8_lossy(&body))),
    )
}

async fn admin(srv: &FakeApiServer, method: &str, path: &str, body: Value) -> Value {
    let (code, out) = call(
        srv,
        Some("kube-fake-apiserver"),
        method,
        path,
        Some(body),
        &[],
    )
    .await;
    assert!(code < 300, "{method} {path}: {code} {out}");
    out
}

fn role(ns: &str, name: &str, rules: Value) -> Value {
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
           "metadata": {"name": name, "namespace": ns}, "rules": rules})
}

fn binding(
    kind: &str,
    ns: Option<&str>,
    name: &str,
    role_kind: &str,
    role: &str,
    subjects: Value,
) -> Value {
    let mut m = json!({"name": name});
    if let Some(ns) = ns {
        m["namespace"] = json!(ns);
    }
    json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind, "metadata": m,
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
           "subjects": subjects})
}

const RB: &str = "/apis/rbac.authorization.k8s.io/v1";

#[tokio::test]
async fn anonymous_and_unknown_tokens() {
    let srv = server().await;
    let (code, s) = call(
        &srv,
        None,
        "GET",
        "/api/v1/namespaces/default/pods",
        None,
        &[],
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        s["message"],
        "pods is forbidden: User \"system:anonymous\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(s["reason"], "Forbidden");
    assert_eq!(s["details"], json!({"kind": "pods"}));
    // system:public-info-viewer: anonymous may read /version and /healthz, not discovery.
    assert_eq!(call(&srv, None, "GET", "/version", None, &[]).await.0, 200);
    assert_eq!(call(&srv, None, "GET", "/healthz", None, &[]).await.0, 200);
    let (code, s) = call(&srv, None, "GET", "/apis", None, &[]).await;
    assert_eq!(code, 403);
    assert_eq!(
        s["message"],
        "forbidden: User \"system:anonymous\" cannot get path \"/apis\""
    );
    // An authenticated user reads discovery (system:discovery).
    assert_eq!(
        call(&srv, Some("bob-token"), "GET", "/apis", None, &[])
            .await
            .0,
        200
    );
    let (code, s) = call(&srv, Some("nope"), "GET", "/version", None, &[]).await;
    assert_eq!((code, s["message"].as_str()), (401, Some("Unauthorized")));
    assert_eq!(s["reason"], "Unauthorized");

    let closed = FakeApiServer::builder()
        .rbac(true)
        .anonymous_auth(false)
        .start()
        .await
        .unwrap();
    assert_eq!(
        call(&closed, None, "GET", "/version", None, &[]).await.0,
        401
    );
    // The kubeconfig's user and `client()` are admins.
    let pods: kube::Api<k8s_openapi::api::core::v1::Pod> =
        kube::Api::namespaced(closed.client(), "default");
    pods.list(&Default::default())
        .await
        .expect("admin lists pods");
}

#[tokio::test]
async fn off_by_default() {
    let srv = FakeApiServer::start().await.unwrap();
    assert_eq!(
        call(
            &srv,
            None,
            "GET",
            "/api/v1/namespaces/default/pods",
            None,
            &[]
        )
        .await
        .0,
        200
    );
    assert_eq!(
        call(&srv, Some("nope"), "GET", "/api/v1/secrets", None, &[])
            .await
            .0,
        200
    );
    // No default roles are created without RBAC.
    let (_, list) = call(&srv, None, "GET", &format!("{RB}/clusterroles"), None, &[]).await;
    assert_eq!(list["items"], json!([]));
}

#[tokio::test]
async fn roles_bindings_names_and_subresources() {
    let srv = server().await;
    admin(&srv, "POST", &format!("{RB}/namespaces/default/roles"), role("default", "cm-reader",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
               {"apiGroups": ["apps"], "resources": ["deployments/scale"], "verbs": ["update"]},
               {"apiGroups": [""], "resources": ["secrets"], "resourceNames": ["one"], "verbs": ["get"]}]))).await;
    admin(
        &srv,
        "POST",
        &format!("{RB}/namespaces/default/rolebindings"),
        binding(
            "RoleBinding",
            Some("default"),
            "alice-cm",
            "Role",
            "cm-reader",
            json!([{"kind": "Group", "name": "dev", "apiGroup": "rbac.authorization.k8s.io"}]),
        ),
    )
    .await;
    admin(
        &srv,
        "POST",
        "/api/v1/namespaces/default/secrets",
        json!({"metadata": {"name": "one"}}),
    )
    .await;
    admin(
        &srv,
        "POST",
        "/api/v1/namespaces/default/secrets",
        json!({"metadata": {"name": "two"}}),
    )
    .await;
    let alice = Some("alice-token");
    assert_eq!(
        call(
            &srv,
            alice,
            "GET",
            "/api/v1/namespaces/default/configmaps",
            None,
            &[]
        )
        .await
        .0,
        200
    );
    let (code, s) = call(
        &srv,
        alice,
        "GET",
        "/api/v1/namespaces/kube-system/configmaps",
        None,
        &[],
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        s["message"],
        "configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"kube-system\""
    );
    assert_eq!(
        call(
            &srv,
            alice,
            "GET",
            "/api/v1/namespaces/default/secrets/one",
            None,
            &[]
        )
        .await
        .0,
        200
    );
    let (code, s) = call(
        &srv,
        alice,
        "GET",
        "/api/v1/namespaces/default/secrets/two",
        None,
        &[],
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        s["message"],
        "secrets \"two\" is forbidden: User \"alice\" cannot get resource \"secrets\" in API group \"\" in the namespace \"default\""
    );
    assert_eq!(s["details"], json!({"name": "two", "kind": "secrets"}));
    // A list is not a get of each name.
    assert_eq!(
        call(
            &srv,
            alice,
            "GET",
            "/api/v1/namespaces/default/secrets",
            None,
            &[]
        )
        .await
        .0,
        403
    );
    // The subresource needs its own rule; the main resource is not implied.
    let (code, s) = call(
        &srv,
        alice,
        "PUT",
        "/apis/apps/v1/namespaces/default/deployments/d/status",
        Some(json!({})),
        &[],
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        s["message"],
        "deployments.apps \"d\" is forbidden: User \"alice\" cannot update resource \"deployments/status\" in API group \"apps\" in the namespace \"default\""
    );
    assert_eq!(
        s["details"],
        json!({"name": "d", "group": "apps", "kind": "deployments"})
    );
    // Allowed through (404: there is no such Deployment).
    assert_eq!(call(&srv, alice, "PUT", "/apis/apps/v1/namespaces/default/deployments/d/scale",
        Some(json!({"apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "d", "namespace": "default"}, "spec": {"replicas": 1}})), &[]).await.0, 404);
    // Cluster scope, and a binding whose role is missing names it in the reason.
    let (code, s) = call(&srv, alice, "GET", "/api/v1/nodes", None, &[]).await;
    assert_eq!(code, 403);
    assert_eq!(
        s["message"],
        "nodes is forbidden: User \"alice\" cannot list resource \"nodes\" in API group \"\" at the cluster scope"
    );
    admin(
        &srv,
        "POST",
        &format!("{RB}/clusterrolebindings"),
        binding(
            "ClusterRoleBinding",
            None,
            "dangling",
            "ClusterRole",
            "gone",
            json!([{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]),
        ),
    )
    .await;
    let (_, s) = call(&srv, alice, "GET", "/api/v1/nodes", None, &[]).await;
    assert_eq!(
        s["message"],
        "nodes is forbidden: User \"alice\" cannot list resource \"nodes\" in API group \"\" at the cluster scope: RBAC: clusterrole.rbac.authorization.k8s.io \"gone\" not found"
    );
    // A non-resource URL rule.
    admin(&srv, "POST", &format!("{RB}/clusterroles"), json!({"metadata": {"name": "gone"},
        "rules": [{"nonResourceURLs": ["/metrics", "/logs/*"], "verbs": ["get"]}, {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]}]})).await;
    assert_eq!(
        call(&srv, alice, "GET", "/api/v1/nodes", None, &[]).await.0,
        200
    );
    // 404: allowed, and not served.
    assert_eq!(
        call(&srv, alice, "GET", "/logs/kube.log", None, &[])
            .await
            .0,
        404
    );
    let (code, s) = call(&srv, alice, "GET", "/livez/ping", None, &[]).await;
    assert_eq!(
        (code, s["message"].as_str()),
        (
            403,
            Some("forbidden: User \"alice\" cannot get path \"/livez/ping\"")
        )
    );
}

/// Waits for `check` on `view`'s rules, which the aggregation controller fills.
async fn view_rules_until(srv: &FakeApiServer, check: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (_, view) = call(
            srv,
            Some("kube-fake-apiserver"),
            "GET",
            &format!("{RB}/clusterroles/view"),
            None,
            &[],
        )
        .await;
        if check(&view["rules"]) {
            return view["rules"].clone();
        }
        assert!(
            Instant::now() < deadline,
            "view's rules never matched: {}",
            view["rules"]
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn default_roles_aggregate_and_bind() {
    let srv = server().await;
    let has = |rules: &Value, resource: &str| {
        rules.as_array().is_some_and(|a| {
            a.iter().any(|r| {
                r["resources"]
                    .as_array()
                    .is_some_and(|rs| rs.iter().any(|x| x == resource))
            })
        })
    };
    view_rules_until(&srv, |r| has(r, "pods") && has(r, "deployments")).await;
    // A role labelled to aggregate to view shows up in view, edit and admin.
    admin(&srv, "POST", &format!("{RB}/clusterroles"), json!({"metadata": {"name": "foo-viewer",
        "labels": {"rbac.authorization.k8s.io/aggregate-to-view": "true"}},
        "rules": [{"apiGroups": ["example.com"], "resources": ["foos"], "verbs": ["get", "list", "watch"]}]})).await;
    view_rules_until(&srv, |r| has(r, "foos")).await;
    // `edit` bound in a namespace: bob writes Deployments there and reads Foos, not secrets'
    // neighbours such as roles (admin's).
    admin(
        &srv,
        "POST",
        &format!("{RB}/namespaces/default/rolebindings"),
        binding(
            "RoleBinding",
            Some("default"),
            "bob-edit",
            "ClusterRole",
            "edit",
            json!([{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}]),
        ),
    )
    .await;
    let bob = Some("bob-token");
    let deadline = Instant::now() + Duration::from_secs(20);
    while call(
        &srv,
        bob,
        "GET",
        "/apis/example.com/v1/namespaces/default/foos",
        None,
        &[],
    )
    .await
    .0 == 403
    {
        assert!(Instant::now() < deadline, "edit never aggregated foos");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(
        call(
            &srv,
            bob,
            "POST",
            "/api/v1/namespaces/default/configmaps",
            Some(json!({"metadata": {"name": "c"}})),
            &[]
        )
        .await
        .0,
        201
    );
    assert_eq!(
        call(
            &srv,
            bob,
            "GET",
            &format!("{RB}/namespaces/default/roles"),
            None,
            &[]
        )
        .await
        .0,
        403
    );
    assert_eq!(
        call(
            &srv,
            bob,
            "GET",
            "/api/v1/namespaces/other/configmaps",
            None,
            &[]
        )
        .await
        .0,
        403
    );
    // Removing the label takes the rule away again.
    admin(
        &srv,
        "PATCH",
        &format!("{RB}/clusterroles/foo-viewer"),
        json!({"metadata": {"labels": null}}),
    )
    .await;
    view_rules_until(&srv, |r| !has(r, "foos")).await;
}

#[tokio::test]
async fn service_account_tokens() {
    let srv = server().await;
    admin(
        &srv,
        "POST",
        "/api/v1/namespaces/ops/serviceaccounts",
        json!({"metadata": {"name": "ctl"}}),
    )
    .await;
    let (code, s) = call(
        &srv,
        Some("kube-fake-apiserver"),
        "POST",
        "/api/v1/namespaces/ops/serviceaccounts/nobody/token",
        Some(json!({"spec": {}})),
        &[],
    )
    .await;
    assert_eq!(
        (code, s["message"].as_str()),
        (404, Some("serviceaccounts \"nobody\" not found"))
    );
    let (code, s) = call(
        &srv,
        Some("kube-fake-apiserver"),
        "POST",
        "/api/v1/namespaces/ops/serviceaccounts/ctl/token",
        Some(json!({"spec": {"expirationSeconds": 60}})),
        &[],
    )
    .await;
    assert_eq!(code, 422, "{s}");
    let tr = admin(
        &srv,
        "POST",
        "/api/v1/namespaces/ops/serviceaccounts/ctl/token",
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}),
    )
    .await;
    assert_eq!(tr["kind"], "TokenRequest");
    assert_eq!(tr["spec"]["expirationSeconds"], 3600);
    let token = tr["status"]["token"].as_str().unwrap().to_string();
    let t = Some(token.as_str());
    let (code, s) = call(
        &srv,
        t,
        "GET",
        "/api/v1/namespaces/ops/configmaps",
        None,
        &[],
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        s["message"],
        "configmaps is forbidden: User \"system:serviceaccount:ops:ctl\" cannot list resource \"configmaps\" in API group \"\" in the namespace \"ops\""
    );
    // A ServiceAccount subject without a namespace is the binding's namespace's.
    admin(
        &srv,
        "POST",
        &format!("{RB}/namespaces/ops/rolebindings"),
        binding(
            "RoleBinding",
            Some("ops"),
            "ctl-view",
            "ClusterRole",
            "view",
            json!([{"kind": "ServiceAccount", "name": "ctl"}]),
        ),
    )
    .await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while call(
        &srv,
        t,
        "GET",
        "/api/v1/namespaces/ops/configmaps",
        None,
        &[],
    )
    .await
    .0 != 200
    {
        assert!(Instant::now() < deadline, "view never allowed configmaps");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // Whoami.
    let (code, me) = call(
        &srv,
        t,
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
        &[],
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(
        me["status"]["userInfo"]["username"],
        "system:serviceaccount:ops:ctl"
    );
    assert_eq!(
        me["status"]["userInfo"]["groups"],
        json!([
            "system:serviceaccounts",
            "system:serviceaccounts:ops",
            "system:authenticated"
        ])
    );
    // The ServiceAccount gone, its token is refused.
    admin(
        &srv,
        "DELETE",
        "/api/v1/namespaces/ops/serviceaccounts/ctl",
        json!({}),
    )
    .await;
    assert_eq!(
        call(
            &srv,
            t,
            "GET",
            "/api/v1/namespaces/ops/configmaps",
            None,
            &[]
        )
        .await
        .0,
        401
    );
    // A token signed by another server is unknown here.
    let other = server().await;
    admin(
        &other,
        "POST",
        "/api/v1/namespaces/ops/serviceaccounts",
        json!({"metadata": {"name": "ctl"}}),
    )
    .await;
    let foreign = admin(
        &other,
        "POST",
        "/api/v1/namespaces/ops/serviceaccounts/ctl/token",
        json!({"spec": {}}),
    )
    .await;
    assert_eq!(
        call(
            &srv,
            foreign["status"]["token"].as_str(),
            "GET",
            "/version",
            None,
            &[]
        )
        .await
        .0,
        401
    );
}

#[tokio::test]
async fn impersonation_is_checked_with_the_impersonate_verb() {
    let srv = server().await;
    let as_bob = [("Impersonate-User", "bob")];
    // The admin acts as bob, who may not list pods.
    let (code, s) = call(
        &srv,
        Some("kube-fake-apiserver"),
        "GET",
        "/api/v1/namespaces/default/pods",
        None,
        &as_bob,
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        s["message"],
        "pods is forbidden: User \"bob\" cannot list resource \"pods\" in API group \"\" in the namespace \"default\""
    );
    // alice may not impersonate.
    let (code, s) = call(&srv, Some("alice-token"), "GET", "/version", None, &as_bob).await;
    assert_eq!(code, 403);
    assert_eq!(
        s["message"],
        "users \"bob\" is forbidden: User \"alice\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );
    admin(&srv, "POST", &format!("{RB}/clusterroles"), json!({"metadata": {"name": "impersonator"},
        "rules": [{"apiGroups": [""], "resources": ["users"], "resourceNames": ["bob"], "verbs": ["impersonate"]}]})).await;
    admin(
        &srv,
        "POST",
        &format!("{RB}/clusterrolebindings"),
        binding(
            "ClusterRoleBinding",
            None,
            "alice-impersonates",
            "ClusterRole",
            "impersonator",
            json!([{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]),
        ),
    )
    .await;
    let (code, me) = call(
        &srv,
        Some("alice-token"),
        "POST",
        "/apis/authentication.k8s.io/v1/selfsubjectreviews",
        Some(json!({})),
        &as_bob,
    )
    .await;
    assert_eq!(code, 201);
    assert_eq!(
        me["status"]["userInfo"],
        json!({"username": "bob", "groups": ["system:authenticated"]})
    );
    // Groups need their own permission.
    let (code, s) = call(
        &srv,
        Some("alice-token"),
        "GET",
        "/version",
        None,
        &[
            ("Impersonate-User", "bob"),
            ("Impersonate-Group", "system:masters"),
        ],
    )
    .await;
    assert_eq!(code, 403);
    assert_eq!(
        s["message"],
        "groups \"system:masters\" is forbidden: User \"alice\" cannot impersonate resource \"groups\" in API group \"\" at the cluster scope"
    );
    let (code, _) = call(
        &srv,
        Some("kube-fake-apiserver"),
        "GET",
        "/version",
        None,
        &[("Impersonate-Group", "dev")],
    )
    .await;
    assert_eq!(code, 400);
}

#[tokio::test]
async fn access_and_rules_reviews() {
    let srv = server().await;
    admin(
        &srv,
        "POST",
        &format!("{RB}/namespaces/default/roles"),
        role(
            "default",
            "cm",
            json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]),
        ),
    )
    .await;
    admin(
        &srv,
        "POST",
        &format!("{RB}/namespaces/default/rolebindings"),
        binding(
            "RoleBinding",
            Some("default"),
            "cm-alice",
            "Role",
            "cm",
            json!([{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]),
        ),
    )
    .await;
    let sar = |user: &str, verb: &str, ns: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
        "spec": {"user": user, "resourceAttributes": {"namespace": ns, "verb": verb, "resource": "configmaps"}}})
    };
    let out = admin(
        &srv,
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        sar("alice", "list", "default"),
    )
    .await;
    assert_eq!(
        out["status"],
        json!({"allowed": true, "reason": "RBAC: allowed by RoleBinding \"cm-alice/default\" of Role \"cm\" to User \"alice\""})
    );
    let out = admin(
        &srv,
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        sar("alice", "delete", "default"),
    )
    .await;
    assert_eq!(out["status"], json!({"allowed": false}));
    let (code, s) = call(
        &srv,
        Some("kube-fake-apiserver"),
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        Some(json!({"spec": {"resourceAttributes": {"verb": "get"}}})),
        &[],
    )
    .await;
    assert_eq!(code, 422);
    assert_eq!(
        s["message"],
        "SubjectAccessReview.authorization.k8s.io \"\" is invalid: spec.user: Invalid value: \"\": at least one of user or group must be specified"
    );
    // alice may not ask about others, only about herself.
    let (code, _) = call(
        &srv,
        Some("alice-token"),
        "POST",
        "/apis/authorization.k8s.io/v1/subjectaccessreviews",
        Some(sar("bob", "get", "default")),
        &[],
    )
    .await;
    assert_eq!(code, 403);
    let (code, out) = call(&srv, Some("alice-token"), "POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        Some(json!({"spec": {"resourceAttributes": {"namespace": "default", "verb": "get", "resource": "configmaps"}}})), &[]).await;
    assert_eq!(
        (code, out["status"]["allowed"].as_bool()),
        (201, Some(true))
    );
    let (_, out) = call(
        &srv,
        Some("alice-token"),
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
        Some(json!({"spec": {"nonResourceAttributes": {"path": "/apis", "verb": "get"}}})),
        &[],
    )
    .await;
    assert_eq!(out["status"]["allowed"], true);
    let (code, out) = call(
        &srv,
        Some("alice-token"),
        "POST",
        "/apis/authorization.k8s.io/v1/selfsubjectrulesreviews",
        Some(json!({"spec": {"namespace": "default"}})),
        &[],
    )
    .await;
    assert_eq!(code, 201);
    let rules = out["status"]["resourceRules"].as_array().unwrap();
    assert!(
        rules.contains(
            &json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]})
        ),
        "{rules:?}"
    );
    assert!(rules.contains(&json!({"verbs": ["create"], "apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]})), "{rules:?}");
    assert_eq!(out["status"]["incomplete"], false);
    assert!(
        out["status"]["nonResourceRules"]
            .as_array()
            .unwrap()
            .iter()
            .any(|r| r["nonResourceURLs"]
                .as_array()
                .unwrap()
                .iter()
                .any(|u| u == "/apis/*"))
    );
}

fn kubectl() -> Option<PathBuf> {
    let bin = PathBuf::from("/usr/bin/kubectl");
    if bin.is_file() {
        return Some(bin);
    }
    assert_ne!(
        std::env::var("CI").as_deref(),
        Ok("true"),
        "CI=true requires kubectl"
    );
    use std::io::Write;
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED kubectl_auth_can_i: /usr/bin/kubectl is not installed"
    );
    None
}

// kubectl is run blocking: the server needs a worker of its own meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kubectl_auth_can_i() {
    let Some(bin) = kubectl() else { return };
    // client-go sends bearer tokens over TLS only.
    let srv = FakeApiServer::builder()
        .rbac(true)
        .tls(true)
        .token_auth_file(TOKENS)
        .start()
        .await
        .unwrap();
    admin(&srv, "POST", &format!("{RB}/namespaces/default/roles"), role("default", "cm",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]},
               {"apiGroups": ["apps"], "resources": ["deployments"], "resourceNames": ["web"], "verbs": ["patch"]}]))).await;
    admin(
        &srv,
        "POST",
        &format!("{RB}/namespaces/default/rolebindings"),
        binding(
            "RoleBinding",
            Some("default"),
            "cm-alice",
            "Role",
            "cm",
            json!([{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]),
        ),
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let kubeconfig = dir.path().join("kubeconfig");
    srv.write_kubeconfig(&kubeconfig).unwrap();
    let run = |args: &[&str]| {
        let out = std::process::Command::new(&bin)
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .arg("--cache-dir")
            .arg(dir.path().join("cache"))
            .args(["--request-timeout=20s"])
            .args(args)
            .env("HOME", dir.path())
            .env_remove("KUBECONFIG")
            .output()
            .expect("kubectl runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).trim().to_string(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let run = |args: Vec<&str>| tokio::task::block_in_place(|| run(&args));
    let (_, out, err) = run(vec![
        "--token=alice-token",
        "auth",
        "can-i",
        "list",
        "configmaps",
    ]);
    assert_eq!(out, "yes", "{err}");
    let (code, out, _) = run(vec![
        "--token=alice-token",
        "auth",
        "can-i",
        "delete",
        "configmaps",
    ]);
    assert_eq!((code, out.as_str()), (Some(1), "no"));
    assert_eq!(
        run(vec![
            "--token=alice-token",
            "auth",
            "can-i",
            "list",
            "configmaps",
            "-n",
            "kube-system"
        ])
        .1,
        "no"
    );
    assert_eq!(
        run(vec![
            "--token=alice-token",
            "auth",
            "can-i",
            "patch",
            "deployments.apps/web"
        ])
        .1,
        "yes"
    );
    assert_eq!(
        run(vec![
            "--token=alice-token",
            "auth",
            "can-i",
            "patch",
            "deployments.apps/db"
        ])
        .1,
        "no"
    );
    assert_eq!(
        run(vec![
            "--token=alice-token",
            "auth",
            "can-i",
            "get",
            "/version"
        ])
        .1,
        "yes"
    );
    assert_eq!(run(vec!["auth", "can-i", "*", "*"]).1, "yes");
    assert_eq!(
        run(vec!["auth", "can-i", "list", "configmaps", "--as=alice"]).1,
        "yes"
    );
    assert_eq!(
        run(vec!["auth", "can-i", "list", "secrets", "--as=alice"]).1,
        "no"
    );
    let (code, list, err) = run(vec!["--token=alice-token", "auth", "can-i", "--list"]);
    assert_eq!(code, Some(0), "{err}");
    let rows: Vec<Vec<&str>> = list
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(
        rows[0],
        [
            "Resources",
            "Non-Resource",
            "URLs",
            "Resource",
            "Names",
            "Verbs"
        ]
    );
    assert!(
        rows.contains(&vec!["configmaps", "[]", "[]", "[get", "list]"]),
        "{list}"
    );
    assert!(
        rows.contains(&vec!["deployments.apps", "[]", "[web]", "[patch]"]),
        "{list}"
    );
    assert!(
        rows.contains(&vec!["[/version]", "[get]"]) || list.contains("/version"),
        "{list}"
    );
    let (_, whoami, err) = run(vec!["--token=alice-token", "auth", "whoami", "-o", "json"]);
    let me: Value = serde_json::from_str(&whoami).unwrap_or_else(|e| panic!("{e}: {whoami} {err}"));
    assert_eq!(me["status"]["userInfo"]["username"], "alice");
}

#[tokio::test]
async fn client_certificates_signed_by_the_servers_ca() {
    let srv = FakeApiServer::builder()
        .rbac(true)
        .tls(true)
        .start()
        .await
        .unwrap();
    let (cert, key) = srv.client_certificate("carol", Some("dev")).unwrap();
    let whoami = |config: kube::Config| async move {
        let client = kube::Client::try_from(config).unwrap();
        let req = http::Request::post("/apis/authentication.k8s.io/v1/selfsubjectreviews")
            .header("content-type", "application/json")
            .body(
                br#"{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}"#.to_vec(),
            )
            .unwrap();
        client.request::<Value>(req).await
    };
    let mut config = srv.client_config();
    config.auth_info.token = None;
    config.auth_info.client_certificate_data = Some(base64_encode(&cert));
    config.auth_info.client_key_data = Some(base64_encode(&key).into());
    let me = whoami(config).await.expect("carol's review");
    assert_eq!(
        me["status"]["userInfo"],
        json!({"username": "carol", "groups": ["dev", "system:authenticated"]})
    );
    // Without a certificate nor a token: anonymous, who may not ask.
    let mut anonymous = srv.client_config();
    anonymous.auth_info.token = None;
    let e = whoami(anonymous).await.unwrap_err().to_string();
    assert!(
        e.contains("User \"system:anonymous\" cannot create resource \"selfsubjectreviews\""),
        "{e}"
    );
    // A certificate from another server's CA is refused by the TLS handshake.
    let other = FakeApiServer::builder().tls(true).start().await.unwrap();
    let (cert, key) = other
        .client_certificate("mallory", Some("system:masters"))
        .unwrap();
    let mut config = srv.client_config();
    config.auth_info.token = None;
    config.auth_info.client_certificate_data = Some(base64_encode(&cert));
    config.auth_info.client_key_data = Some(base64_encode(&key).into());
    assert!(whoami(config).await.is_err());
    // Without TLS there is no CA to sign with.
    let plain = FakeApiServer::start().await.unwrap();
    assert!(plain.client_certificate("x", None).is_err());
}

fn base64_encode(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

#[tokio::test]
async fn no_escalation_through_roles_and_bindings() {
    let srv = server().await;
    admin(
        &srv,
        "POST",
        &format!("{RB}/namespaces/default/rolebindings"),
        binding(
            "RoleBinding",
            Some("default"),
            "bob-admin",
            "ClusterRole",
            "admin",
            json!([{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}]),
        ),
    )
    .await;
    let bob = Some("bob-token");
    let roles = format!("{RB}/namespaces/default/roles");
    let cm_role = role(
        "default",
        "cm",
        json!([{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]}]),
    );
    // admin's rules come from aggregation: wait until bob holds them.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let (code, s) = call(&srv, bob, "POST", &roles, Some(cm_role.clone()), &[]).await;
        if code == 201 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "bob never could create a Role: {s}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let nodes = role(
        "default",
        "nodes",
        json!([{"apiGroups": [""], "resources": ["nodes", "configmaps"], "verbs": ["get", "list"]}]),
    );
    let (code, s) = call(&srv, bob, "POST", &roles, Some(nodes.clone()), &[]).await;
    assert_eq!(code, 403);
    assert_eq!(
        s["message"],
        "roles.rbac.authorization.k8s.io \"nodes\" is forbidden: user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n{APIGroups:[\"\"], Resources:[\"nodes\"], Verbs:[\"get\" \"list\"]}"
    );
    // Binding what you hold is fine; binding more is not, unless allowed to `bind` it.
    let rbs = format!("{RB}/namespaces/default/rolebindings");
    let subj = json!([{"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]);
    assert_eq!(
        call(
            &srv,
            bob,
            "POST",
            &rbs,
            Some(binding(
                "RoleBinding",
                Some("default"),
                "a-view",
                "ClusterRole",
                "view",
                subj.clone()
            )),
            &[]
        )
        .await
        .0,
        201
    );
    let (code, s) = call(
        &srv,
        bob,
        "POST",
        &rbs,
        Some(binding(
            "RoleBinding",
            Some("default"),
            "a-root",
            "ClusterRole",
            "cluster-admin",
            subj.clone(),
        )),
        &[],
    )
    .await;
    assert_eq!(code, 403);
    let m = s["message"].as_str().unwrap();
    assert!(m.starts_with("rolebindings.rbac.authorization.k8s.io \"a-root\" is forbidden: user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n"), "{m}");
    assert!(
        m.contains("{APIGroups:[\"*\"], Resources:[\"*\"], Verbs:[\"*\"]}")
            && m.contains("{NonResourceURLs:[\"*\"], Verbs:[\"*\"]}"),
        "{m}"
    );
    let (code, s) = call(
        &srv,
        bob,
        "POST",
        &rbs,
        Some(binding(
            "RoleBinding",
            Some("default"),
            "a-gone",
            "Role",
            "gone",
            subj.clone(),
        )),
        &[],
    )
    .await;
    assert_eq!(
        (code, s["message"].as_str()),
        (
            403,
            Some(
                "rolebindings.rbac.authorization.k8s.io \"a-gone\" is forbidden: role.rbac.authorization.k8s.io \"gone\" not found"
            )
        )
    );
    admin(&srv, "POST", &format!("{RB}/clusterroles"), json!({"metadata": {"name": "escalator"},
        "rules": [{"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"], "verbs": ["escalate"]},
                  {"apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["cluster-admin"], "verbs": ["bind"]}]})).await;
    admin(
        &srv,
        "POST",
        &rbs,
        binding(
            "RoleBinding",
            Some("default"),
            "bob-escalates",
            "ClusterRole",
            "escalator",
            json!([{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}]),
        ),
    )
    .await;
    assert_eq!(
        call(&srv, bob, "POST", &roles, Some(nodes), &[]).await.0,
        201
    );
    assert_eq!(
        call(
            &srv,
            bob,
            "POST",
            &rbs,
            Some(binding(
                "RoleBinding",
                Some("default"),
                "a-root",
                "ClusterRole",
                "cluster-admin",
                subj
            )),
            &[]
        )
        .await
        .0,
        201
    );
}
