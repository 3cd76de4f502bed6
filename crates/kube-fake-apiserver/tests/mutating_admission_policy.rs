//! MutatingAdmissionPolicy (admissionregistration.k8s.io/v1beta1) as kube-apiserver 1.35
//! serves and applies it with the `MutatingAdmissionPolicy` gate and the beta API turned on.
use crate::common;

use common::{Resp, get, post, put};
use kube_fake_apiserver::FakeApiServer;
use kube_fake_apiserver::feature_gates::FeatureGates;
use serde_json::{Value, json};

const MAP: &str = "/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicies";
const MAPB: &str = "/apis/admissionregistration.k8s.io/v1beta1/mutatingadmissionpolicybindings";
const CMS: &str = "/api/v1/namespaces/default/configmaps";

async fn server(gate: bool, api: bool) -> (FakeApiServer, kube::Client) {
    let gates = FeatureGates {
        mutating_admission_policy: gate,
        ..FeatureGates::default()
    };
    let versions = if api {
        vec!["admissionregistration.k8s.io/v1beta1".to_string()]
    } else {
        Vec::new()
    };
    let srv = FakeApiServer::builder()
        .feature_gates(gates)
        .runtime_config(versions)
        .start()
        .await
        .expect("server starts");
    let c = srv.client();
    (srv, c)
}

fn configmap_rules() -> Value {
    json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["configmaps"]}]})
}

/// A policy on ConfigMaps with `spec` merged in, bound by `<name>-binding` with `binding`.
async fn policy(c: &kube::Client, name: &str, spec: Value, binding: Value) {
    let mut full = json!({"matchConstraints": configmap_rules(), "reinvocationPolicy": "Never"});
    for (k, v) in spec.as_object().unwrap() {
        full[k] = v.clone();
    }
    let r = post(
        c,
        MAP,
        json!({"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy", "metadata": {"name": name}, "spec": full}),
    )
    .await;
    assert_eq!(r.code, 201, "policy {name}: {}", r.body);
    let mut spec = json!({"policyName": name});
    for (k, v) in binding.as_object().unwrap() {
        spec[k] = v.clone();
    }
    let r = post(
        c,
        MAPB,
        json!({"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": format!("{name}-binding")}, "spec": spec}),
    )
    .await;
    assert_eq!(r.code, 201, "binding {name}: {}", r.body);
}

fn apply_configuration(expression: &str) -> Value {
    json!({"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": expression}})
}

fn json_patch(expression: &str) -> Value {
    json!({"patchType": "JSONPatch", "jsonPatch": {"expression": expression}})
}

fn configmap(name: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"app": "demo"}}, "data": {"a": "1"}})
}

async fn create(c: &kube::Client, obj: Value) -> Resp {
    post(c, CMS, obj).await
}

#[tokio::test]
async fn served_only_with_the_gate_and_the_beta_version() {
    for (gate, api, code) in [
        (false, false, 404),
        (true, false, 404),
        (false, true, 404),
        (true, true, 200),
    ] {
        let (_srv, c) = server(gate, api).await;
        assert_eq!(get(&c, MAP).await.code, code, "gate {gate}, api {api}");
        assert_eq!(get(&c, MAPB).await.code, code, "gate {gate}, api {api}");
    }
}

#[tokio::test]
async fn an_apply_configuration_merges_as_server_side_apply_does() {
    let (_srv, c) = server(true, true).await;
    policy(
        &c,
        "add-team",
        json!({"mutations": [apply_configuration(
            "Object{metadata: Object.metadata{labels: {'team': 'blue'}}, data: {'b': string(size(object.data))}}",
        )]}),
        json!({}),
    )
    .await;
    let r = create(&c, configmap("one")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    // Granular maps merge key by key: the request's label and data stay.
    assert_eq!(
        r.body["metadata"]["labels"],
        json!({"app": "demo", "team": "blue"})
    );
    assert_eq!(r.body["data"], json!({"a": "1", "b": "1"}));
    // An update is mutated too (the object it sees is the new one).
    let mut updated = r.body.clone();
    updated["data"] = json!({"x": "1", "y": "2"});
    let r = put(&c, &format!("{CMS}/one"), updated).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(r.body["data"], json!({"x": "1", "y": "2", "b": "2"}));
}

#[tokio::test]
async fn json_patches_with_params_variables_and_match_conditions() {
    let (_srv, c) = server(true, true).await;
    let r = create(
        &c,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"owner": "web"}}),
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    policy(
        &c,
        "owner",
        json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConditions": [{"name": "not-settings", "expression": "object.metadata.name != 'settings'"}],
            "variables": [{"name": "key", "expression": "'example.com/' + params.data.owner"}],
            "mutations": [json_patch(
                "[JSONPatch{op: 'add', path: '/metadata/annotations', value: {}}, JSONPatch{op: 'add', path: '/metadata/annotations/' + jsonpatch.escapeKey(variables.key), value: 'yes'}]",
            )],
        }),
        json!({"paramRef": {"name": "settings", "parameterNotFoundAction": "Deny"}}),
    )
    .await;
    let r = create(&c, configmap("two")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        r.body["metadata"]["annotations"],
        json!({"example.com/web": "yes"})
    );
    // A JSON Patch whose `test` fails leaves the object as it was, without an error.
    policy(
        &c,
        "tested",
        json!({"mutations": [json_patch(
            "[JSONPatch{op: 'test', path: '/data/a', value: 'other'}, JSONPatch{op: 'replace', path: '/data/a', value: 'changed'}]",
        )]}),
        json!({}),
    )
    .await;
    let r = create(&c, configmap("three")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["data"], json!({"a": "1"}));
}

#[tokio::test]
async fn failed_mutations_are_refused_with_the_servers_message_unless_ignored() {
    let (_srv, c) = server(true, true).await;
    policy(
        &c,
        "broken",
        json!({"mutations": [json_patch("[JSONPatch{op: 'remove', path: '/data/missing'}]")]}),
        json!({}),
    )
    .await;
    let r = create(&c, configmap("one")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(r.body["reason"], "Invalid");
    let message = r.body["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "policy 'broken' with binding 'broken-binding' denied request: JSONPath: "
        ),
        "{message}"
    );
    assert_eq!(
        r.body["details"],
        json!({"name": "one", "kind": "configmaps", "causes": [{"message": message}]})
    );
    assert_eq!(get(&c, &format!("{CMS}/one")).await.code, 404);

    // Under `failurePolicy: Ignore` the same failure lets the request through unchanged.
    let r = get(&c, &format!("{MAP}/broken")).await;
    let mut p = r.body.clone();
    p["spec"]["failurePolicy"] = json!("Ignore");
    let r = put(&c, &format!("{MAP}/broken"), p).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let r = create(&c, configmap("one")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["data"], json!({"a": "1"}));
}

#[tokio::test]
async fn an_apply_configuration_may_not_touch_atomic_lists() {
    let (_srv, c) = server(true, true).await;
    let rules = json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]});
    policy(
        &c,
        "args",
        json!({
            "matchConstraints": rules,
            "mutations": [apply_configuration(
                "Object{spec: Object.spec{containers: [Object.spec.containers{name: 'app', args: ['--debug']}]}}",
            )],
        }),
        json!({}),
    )
    .await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
    let r = post(&c, "/api/v1/namespaces/default/pods", pod).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "policy 'args' with binding 'args-binding' denied request: error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.containers[0].args"
    );
    assert_eq!(r.body["reason"], "Invalid");
    assert_eq!(r.body["code"], 403);
}

#[tokio::test]
async fn a_wrong_construction_type_or_a_cel_error_is_the_policys_error() {
    let (_srv, c) = server(true, true).await;
    policy(
        &c,
        "typo",
        json!({"mutations": [apply_configuration(
            "Object{metadata: Object.meta{labels: {'a': 'b'}}}",
        )]}),
        json!({}),
    )
    .await;
    let r = create(&c, configmap("one")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "policy 'typo' with binding 'typo-binding' denied request: type mismatch: unexpected type name \"Object.meta\", expected \"Object.metadata\", which matches field name path from root Object type"
    );
    // Outside a mutation an object construction is a compile error, not a crash.
    policy(
        &c,
        "typo2",
        json!({
            "failurePolicy": "Fail",
            "matchConditions": [{"name": "c", "expression": "Object{} == Object{}"}],
            "mutations": [json_patch("[]")],
        }),
        json!({}),
    )
    .await;
    let r = create(&c, configmap("two")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    let causes: Vec<String> = r.body["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["message"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(
        causes[1],
        "policy 'typo2' with binding 'typo2-binding' denied request: expression 'Object{} == Object{}' resulted in error: compilation failed: undeclared reference to 'Object' (in container '')"
    );
}

#[tokio::test]
async fn if_needed_policies_are_reinvoked_after_a_later_change() {
    for (policy_of_a, expected) in [("IfNeeded", "late"), ("Never", "none")] {
        let (_srv, c) = server(true, true).await;
        // `a` runs first (policies in name order) and copies a label `b` adds after it.
        policy(
            &c,
            "a",
            json!({
                "reinvocationPolicy": policy_of_a,
                "mutations": [apply_configuration(
                    "Object{metadata: Object.metadata{labels: {'copy': 'source' in object.metadata.labels ? object.metadata.labels['source'] : 'none'}}}",
                )],
            }),
            json!({}),
        )
        .await;
        policy(
            &c,
            "b",
            json!({"mutations": [apply_configuration(
                "Object{metadata: Object.metadata{labels: {'source': 'late'}}}",
            )]}),
            json!({}),
        )
        .await;
        let r = create(&c, configmap("one")).await;
        assert_eq!(r.code, 201, "{}", r.body);
        assert_eq!(r.body["metadata"]["labels"]["source"], "late");
        assert_eq!(
            r.body["metadata"]["labels"]["copy"], expected,
            "{policy_of_a}"
        );
    }
}

#[tokio::test]
async fn policies_and_bindings_are_validated_with_the_servers_messages() {
    let (_srv, c) = server(true, true).await;
    let post_policy = |name: &str, spec: Value| {
        let body = json!({"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicy", "metadata": {"name": name}, "spec": spec});
        let c = c.clone();
        async move { post(&c, MAP, body).await }
    };
    let r = post_policy("empty", json!({"matchConstraints": configmap_rules()})).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "MutatingAdmissionPolicy.admissionregistration.k8s.io \"empty\" is invalid: [spec.mutations: Required value: mutations must contain at least one item, spec.reinvocationPolicy: Required value]"
    );
    let rules = json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "DELETE"], "resources": ["configmaps"]}]});
    let r = post_policy(
        "bad",
        json!({
            "matchConstraints": rules,
            "reinvocationPolicy": "Always",
            "variables": [{"name": "not-an-ident", "expression": "1"}, {"name": "ok", "expression": " "}],
            "mutations": [
                {"patchType": "JSONPatch"},
                {"patchType": "ApplyConfiguration", "applyConfiguration": {"expression": "Object{}"}, "jsonPatch": {"expression": "[]"}},
                {"patchType": "Merge"},
                {},
            ],
        }),
    )
    .await;
    assert_eq!(r.code, 422, "{}", r.body);
    let causes: Vec<String> = r.body["details"]["causes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            format!(
                "{}: {}",
                c["field"].as_str().unwrap(),
                c["message"].as_str().unwrap()
            )
        })
        .collect();
    assert_eq!(
        causes,
        [
            "spec.matchConstraints.resourceRules.operations: Unsupported value: \"DELETE\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\"",
            "spec.variables[0].name: Invalid value: \"not-an-ident\": name is not a valid CEL identifier",
            "spec.variables[1].expression: Required value: expression is not specified",
            "spec.mutations[0].jsonPatch: Required value: must be specified when patchType is JSONPatch",
            "spec.mutations[1].jsonPatch: Invalid value: admissionregistration.JSONPatch{Expression:\"[]\"}: must not be specified when patchType is ApplyConfiguration",
            "spec.mutations[2].patchType: Unsupported value: \"Merge\": supported values: \"ApplyConfiguration\", \"JSONPatch\"",
            "spec.mutations[3].patchType: Required value",
            "spec.reinvocationPolicy: Unsupported value: \"Always\": supported values: \"Never\", \"IfNeeded\"",
        ]
    );
    let r = post(
        &c,
        MAPB,
        json!({"apiVersion": "admissionregistration.k8s.io/v1beta1", "kind": "MutatingAdmissionPolicyBinding", "metadata": {"name": "b"},
            "spec": {"policyName": "p", "matchResources": {"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["configmaps"]}]}}}),
    )
    .await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "MutatingAdmissionPolicyBinding.admissionregistration.k8s.io \"b\" is invalid: spec.matchResources.resourceRules.operations: Unsupported value: \"DELETE\": supported values: \"*\", \"CONNECT\", \"CREATE\", \"UPDATE\""
    );
}

/// Variables are computed for each expression with the object it sees (a composition
/// context's lazy map per evaluation), and one that fails only fails the expressions using it.
#[tokio::test]
async fn variables_follow_the_object_and_fail_only_where_used() {
    let (_srv, c) = server(true, true).await;
    policy(
        &c,
        "vars",
        json!({
            "variables": [
                {"name": "a", "expression": "object.data.a"},
                {"name": "twice", "expression": "variables.a + variables.a"},
                {"name": "bad", "expression": "object.data.missing"},
            ],
            "mutations": [
                json_patch("[JSONPatch{op: 'replace', path: '/data/a', value: '2'}]"),
                apply_configuration("Object{data: {'seen': variables.twice}}"),
            ],
        }),
        json!({}),
    )
    .await;
    let r = create(&c, configmap("one")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["data"], json!({"a": "2", "seen": "22"}));

    let expression = "Object{data: {'x': variables.bad}}";
    let r = get(&c, &format!("{MAP}/vars")).await;
    let mut p = r.body.clone();
    p["spec"]["mutations"] = json!([apply_configuration(expression)]);
    let r = put(&c, &format!("{MAP}/vars"), p).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let r = create(&c, configmap("two")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    let message = r.body["message"].as_str().unwrap();
    let expected = format!(
        "policy 'vars' with binding 'vars-binding' denied request: expression '{expression}' resulted in error: composited variable \"bad\" fails to evaluate: "
    );
    assert!(message.starts_with(&expected), "{message}");
}

/// A binding whose `paramRef` selects several params invokes the policy once per param; with
/// none found and `parameterNotFoundAction: Allow` it does nothing.
#[tokio::test]
async fn each_selected_param_is_one_invocation() {
    let (_srv, c) = server(true, true).await;
    policy(
        &c,
        "per-param",
        json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConditions": [{"name": "not-a-param", "expression": "!has(object.metadata.labels) || !('role' in object.metadata.labels)"}],
            "mutations": [apply_configuration(
                "Object{metadata: Object.metadata{labels: {params.data.key: params.data.value}}}",
            )],
        }),
        json!({"paramRef": {"selector": {"matchLabels": {"role": "param"}}, "parameterNotFoundAction": "Allow"}}),
    )
    .await;
    let r = create(&c, configmap("none-yet")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"], json!({"app": "demo"}));
    for (name, key, value) in [("p1", "tier", "web"), ("p2", "zone", "a")] {
        let r = create(
            &c,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "labels": {"role": "param"}}, "data": {"key": key, "value": value}}),
        )
        .await;
        assert_eq!(r.code, 201, "{}", r.body);
    }
    let r = create(&c, configmap("two-params")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(
        r.body["metadata"]["labels"],
        json!({"app": "demo", "tier": "web", "zone": "a"})
    );
}

/// `matchPolicy: Equivalent`: a policy naming only `v2` of a two-version CRD mutates a `v1`
/// request, seeing (and mutating) the object converted to `v2`; `Exact` leaves it alone.
#[tokio::test]
async fn equivalent_versions_are_mutated_through_conversion() {
    let (srv, c) = server(true, true).await;
    srv.register_crd(common::widget_crd())
        .expect("CRD registers");
    for (name, match_policy) in [("exact", "Exact"), ("equivalent", "Equivalent")] {
        policy(
            &c,
            name,
            json!({
                "matchConstraints": {"matchPolicy": match_policy, "resourceRules": [{"apiGroups": ["example.com"], "apiVersions": ["v2"], "operations": ["CREATE"], "resources": ["widgets"]}]},
                "matchConditions": [{"name": "v2", "expression": "object.apiVersion == 'example.com/v2' && request.kind.version == 'v2'"}],
                "mutations": [apply_configuration(&format!("Object{{spec: Object.spec{{color: '{name}'}}}}"))],
            }),
            json!({}),
        )
        .await;
    }
    let r = post(&c, common::WIDGETS, common::widget("w1", 1)).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["apiVersion"], "example.com/v1");
    assert_eq!(
        r.body["spec"],
        json!({"replicas": 1, "color": "equivalent"})
    );
}

/// What a mutation returns is defaulted before the next mutation sees it.
#[tokio::test]
async fn each_mutation_sees_the_previous_one_defaulted() {
    let (_srv, c) = server(true, true).await;
    let rules = json!({"resourceRules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["pods"]}]});
    policy(
        &c,
        "sidecar",
        json!({
            "matchConstraints": rules,
            "mutations": [
                apply_configuration(
                    "Object{spec: Object.spec{initContainers: [Object.spec.initContainers{name: 'proxy', image: 'proxy:1', restartPolicy: 'Always'}]}}",
                ),
                apply_configuration(
                    "Object{metadata: Object.metadata{labels: {'proxy-termination': object.spec.initContainers[0].terminationMessagePolicy}}}",
                ),
            ],
        }),
        json!({}),
    )
    .await;
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": [{"name": "app", "image": "nginx"}]}});
    let r = post(&c, "/api/v1/namespaces/default/pods", pod).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"]["proxy-termination"], "File");
    assert_eq!(r.body["spec"]["initContainers"][0]["name"], "proxy");
    assert_eq!(r.body["spec"]["containers"][0]["name"], "app");
}

/// A `paramKind` naming no served kind is an error of the policy (reported once, without a
/// binding); a binding without `paramRef` runs the policy with null params.
#[tokio::test]
async fn param_kind_errors_belong_to_the_policy_and_a_missing_param_ref_means_null_params() {
    let (_srv, c) = server(true, true).await;
    policy(
        &c,
        "no-ref",
        json!({
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "mutations": [apply_configuration("Object{metadata: Object.metadata{labels: {'params': params == null ? 'null' : 'set'}}}")],
        }),
        json!({}),
    )
    .await;
    let r = create(&c, configmap("one")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"]["params"], "null");

    policy(
        &c,
        "unknown",
        json!({
            "paramKind": {"apiVersion": "example.com/v1", "kind": "Nope"},
            "mutations": [json_patch("[]")],
        }),
        json!({"paramRef": {"name": "x", "parameterNotFoundAction": "Deny"}}),
    )
    .await;
    let r = create(&c, configmap("two")).await;
    assert_eq!(r.code, 403, "{}", r.body);
    assert_eq!(r.body["reason"], "Forbidden");
    assert_eq!(
        r.body["message"],
        "policy \"unknown\" denied request: failed to configure policy: failed to find resource referenced by paramKind: 'example.com/v1, Kind=Nope'"
    );
}

#[tokio::test]
async fn validating_policies_judge_the_mutated_object() {
    let (_srv, c) = server(true, true).await;
    let vap = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "needs-team"},
        "spec": {"matchConstraints": configmap_rules(), "validations": [{"expression": "has(object.metadata.labels) && 'team' in object.metadata.labels", "message": "no team"}]}});
    let r = post(
        &c,
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
        vap,
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let b = json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "needs-team"},
        "spec": {"policyName": "needs-team", "validationActions": ["Deny"]}});
    let r = post(
        &c,
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
        b,
    )
    .await;
    assert_eq!(r.code, 201, "{}", r.body);
    let r = create(&c, configmap("before")).await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(
        r.body["message"],
        "configmaps \"before\" is forbidden: ValidatingAdmissionPolicy 'needs-team' with binding 'needs-team' denied request: no team"
    );
    policy(
        &c,
        "add-team",
        json!({"mutations": [apply_configuration("Object{metadata: Object.metadata{labels: {'team': 'blue'}}}")]}),
        json!({}),
    )
    .await;
    let r = create(&c, configmap("after")).await;
    assert_eq!(r.code, 201, "{}", r.body);
    assert_eq!(r.body["metadata"]["labels"]["team"], "blue");
}

/// What a MutatingAdmissionPolicy costs a create (debug build; run with `--ignored
/// --nocapture`): the median of 100 ConfigMap creates per run, min/median/max over 5 runs.
#[tokio::test]
#[ignore]
async fn measure_mutating_policy_cost() {
    const RUNS: usize = 5;
    const CREATES: usize = 100;
    let setups = [
        ("none", None),
        (
            "apply configuration",
            Some(apply_configuration(
                "Object{metadata: Object.metadata{labels: {'team': 'blue'}}}",
            )),
        ),
        (
            "JSON patch",
            Some(json_patch(
                "[JSONPatch{op: 'add', path: '/metadata/labels/team', value: 'blue'}]",
            )),
        ),
    ];
    for (setup, mutation) in setups {
        let (_srv, c) = server(true, true).await;
        if let Some(m) = mutation {
            policy(&c, "p", json!({"mutations": [m]}), json!({})).await;
        }
        let mut medians = Vec::new();
        for run in 0..RUNS {
            let mut times = Vec::with_capacity(CREATES);
            for n in 0..CREATES {
                let t = std::time::Instant::now();
                let r = create(&c, configmap(&format!("cm-{run}-{n}"))).await;
                times.push(t.elapsed());
                assert_eq!(r.code, 201);
            }
            times.sort();
            medians.push(times[CREATES / 2]);
        }
        medians.sort();
        println!(
            "{setup:<20} create median per run: min {:?} median {:?} max {:?}",
            medians[0],
            medians[RUNS / 2],
            medians[RUNS - 1]
        );
    }
}
