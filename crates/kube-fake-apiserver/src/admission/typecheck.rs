//! The type check kube-controller-manager's ValidatingAdmissionPolicy status controller runs
//! on a policy (`plugin/policy/validating/typechecking.go`): each validation's `expression`
//! and `messageExpression` checked against every kind its `matchConstraints` name exactly
//! (at most ten, wildcards skipped), with `object`/`oldObject` typed by that kind's published
//! schema, `params` by the `paramKind`'s, `request` and `namespaceObject` by the admission
//! plugin's own types, and `variables` by their expressions. The warnings go to
//! `status.typeChecking.expressionWarnings` (the controllers write them).
//!
//! The checker is `kube_codegen_crd::object::type_check`, which reports only what it is sure
//! of; a `paramKind` without a schema leaves `params` dynamic (cel-go leaves it undeclared).
use std::sync::LazyLock;

use kube_codegen_crd::object::{Declared, type_check};
use serde_json::{Value, json};

use crate::openapi::{ResourceSchema, resolved_kind_schema};
use crate::registry::Registry;
use crate::util::{str_list, str_of};

/// `maxTypesToCheck`.
const MAX_TYPES: usize = 10;

/// A group/version/kind, ordered as `sortGVKList` orders them.
type Gvk = (String, String, String);

/// `GroupVersionKind.String()`: `apps/v1, Kind=Deployment`, `/v1, Kind=Pod`.
fn gvk_string((g, v, k): &Gvk) -> String {
    format!("{g}/{v}, Kind={k}")
}

/// The policy's `status.typeChecking.expressionWarnings` (`fieldRef`, `warning`), in
/// validation order. `resources` are the registry's served schemas (`Registry::schemas`, taken
/// once for all the policies checked together).
pub fn expression_warnings(
    registry: &Registry,
    resources: &[ResourceSchema],
    policy: &Value,
) -> Vec<Value> {
    let spec = policy.get("spec").unwrap_or(&Value::Null);
    let kinds: Vec<(Gvk, Value)> = types_to_check(registry, spec)
        .into_iter()
        .filter_map(|gvk| {
            let schema = resolved_kind_schema(resources, &gvk.0, &gvk.1, &gvk.2)?;
            Some((gvk, schema))
        })
        .collect();
    let params = param_schema(resources, spec);
    let variables: Vec<(&str, &str)> = spec
        .get("variables")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| (str_of(v.get("name")), str_of(v.get("expression"))))
        .collect();
    let check = |expression: &str| -> Option<String> {
        let results: Vec<String> = kinds
            .iter()
            .filter_map(|(gvk, schema)| {
                let declared = [
                    ("object", Declared::Schema(schema)),
                    ("oldObject", Declared::Schema(schema)),
                    (
                        "params",
                        params.as_ref().map_or(Declared::Dyn, Declared::Schema),
                    ),
                    ("request", Declared::Schema(&REQUEST)),
                    ("namespaceObject", Declared::Schema(&NAMESPACE)),
                    ("authorizer", Declared::Dyn),
                ];
                let issues = type_check(expression, &declared, &variables)?;
                Some(format!("{}: {issues}\n", gvk_string(gvk)))
            })
            .collect();
        (!results.is_empty()).then(|| results.join("\n"))
    };
    let mut warnings = Vec::new();
    let validations = spec.get("validations").and_then(Value::as_array);
    for (i, v) in validations.into_iter().flatten().enumerate() {
        for field in ["expression", "messageExpression"] {
            let source = str_of(v.get(field));
            if field == "messageExpression" && source.is_empty() {
                continue;
            }
            if let Some(warning) = check(source) {
                warnings.push(json!({
                    "fieldRef": format!("spec.validations[{i}].{field}"),
                    "warning": warning,
                }));
            }
        }
    }
    warnings
}

/// `typesToCheck`: the kinds the policy's resource rules name without wildcards (a rule with a
/// wildcard group or version is skipped, as are wildcard resources and subresources), in
/// group, version, kind order, at most [`MAX_TYPES`] resolutions.
fn types_to_check(registry: &Registry, spec: &Value) -> Vec<Gvk> {
    let rules = spec
        .pointer("/matchConstraints/resourceRules")
        .and_then(Value::as_array);
    let mut gvks: Vec<Gvk> = Vec::new();
    let mut count = 0;
    for rule in rules.into_iter().flatten() {
        let list = |key: &str| {
            let mut l = str_list(rule.get(key));
            l.sort();
            l
        };
        let (groups, versions) = (list("apiGroups"), list("apiVersions"));
        if groups.iter().chain(&versions).any(|x| x.contains('*')) {
            continue;
        }
        let resources: Vec<String> = list("resources")
            .into_iter()
            .filter(|r| !r.contains('*') && !r.contains('/'))
            .collect();
        for g in &groups {
            for v in &versions {
                for r in &resources {
                    let Some(res) = registry.lookup(g, v, r) else {
                        continue;
                    };
                    let gvk = (g.clone(), v.clone(), res.kind.clone());
                    if !gvks.contains(&gvk) {
                        gvks.push(gvk);
                    }
                    count += 1;
                    if count == MAX_TYPES {
                        gvks.sort();
                        return gvks;
                    }
                }
            }
        }
    }
    gvks.sort();
    gvks
}

/// The `paramKind`'s resolved schema, if it names a served kind.
fn param_schema(resources: &[ResourceSchema], spec: &Value) -> Option<Value> {
    let pk = spec.get("paramKind")?;
    let api_version = str_of(pk.get("apiVersion"));
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    resolved_kind_schema(resources, group, version, str_of(pk.get("kind")))
}

fn string() -> Value {
    json!({"type": "string"})
}

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn object(props: Value) -> Value {
    json!({"type": "object", "properties": props})
}

/// `BuildRequestType`: the `request` variable's type.
static REQUEST: LazyLock<Value> = LazyLock::new(|| {
    let gvk = object(json!({"group": string(), "version": string(), "kind": string()}));
    let gvr = object(json!({"group": string(), "version": string(), "resource": string()}));
    object(json!({
        "kind": gvk,
        "resource": gvr,
        "subResource": string(),
        "requestKind": gvk,
        "requestResource": gvr,
        "requestSubResource": string(),
        "name": string(),
        "namespace": string(),
        "operation": string(),
        "userInfo": object(json!({
            "username": string(),
            "uid": string(),
            "groups": strings(),
            "extra": {"type": "object", "additionalProperties": strings()},
        })),
        "dryRun": {"type": "boolean"},
        "options": {"x-kubernetes-preserve-unknown-fields": true},
    }))
});

/// `BuildNamespaceType`: the `namespaceObject` variable's type (no managed fields or owner
/// references, by design).
static NAMESPACE: LazyLock<Value> = LazyLock::new(|| {
    let time = json!({"type": "string", "format": "date-time"});
    let string_map = json!({"type": "object", "additionalProperties": string()});
    object(json!({
        "metadata": object(json!({
            "name": string(),
            "generateName": string(),
            "namespace": string(),
            "labels": string_map,
            "annotations": string_map,
            "UID": string(),
            "creationTimestamp": time,
            "deletionGracePeriodSeconds": {"type": "integer"},
            "deletionTimestamp": time,
            "generation": {"type": "integer"},
            "resourceVersion": string(),
            "finalizers": strings(),
        })),
        "spec": object(json!({"finalizers": strings()})),
        "status": object(json!({
            "conditions": {"type": "array", "items": object(json!({
                "status": string(),
                "type": string(),
                "lastTransitionTime": time,
                "message": string(),
                "reason": string(),
            }))},
            "phase": string(),
        })),
    }))
});

#[cfg(test)]
mod tests {
    use serde_json::{Value, json};

    use super::expression_warnings;
    use crate::registry::{Registry, builtins};

    fn registry() -> Registry {
        let mut r = Registry::default();
        for b in builtins() {
            r.insert(b);
        }
        r
    }

    fn policy(resources: Value, validations: Value) -> Value {
        json!({"metadata": {"name": "p", "generation": 1}, "spec": {
            "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
            "matchConstraints": {"resourceRules": [
                {"apiGroups": ["", "apps", "batch"], "apiVersions": ["v1"], "operations": ["CREATE"], "resources": resources},
            ]},
            "variables": [
                {"name": "containers", "expression": "object.spec.template.spec.containers"},
                {"name": "env", "expression": "object.metadata.?labels.?environment.orValue('dev')"},
            ],
            "validations": validations,
        }})
    }

    /// Expressions of published policies (the Kubernetes documentation's examples and common
    /// project policies) type-check clean against the kinds they are written for.
    #[test]
    fn published_expressions_raise_no_warning() {
        let r = registry();
        let exprs = [
            "object.spec.replicas <= 5",
            "object.spec.replicas <= int(params.data.maxReplicas)",
            "variables.containers.all(c, c.image.startsWith('registry.example.com/'))",
            "variables.env == 'prod' ? object.spec.replicas >= 3 : true",
            "object.spec.template.spec.containers.all(c, !has(c.securityContext) || !has(c.securityContext.privileged) || c.securityContext.privileged == false)",
            "object.spec.template.spec.containers.all(c, has(c.resources.limits) && 'memory' in c.resources.limits)",
            "object.spec.template.spec.?hostNetwork.orValue(false) == false",
            "object.spec.template.spec.containers.exists_one(c, c.name == 'main') || size(object.spec.template.spec.containers) == 1",
            "!has(object.spec.template.spec.volumes) || object.spec.template.spec.volumes.all(v, !has(v.hostPath))",
            "object.metadata.name.matches('^[a-z0-9-]+$') && object.metadata.namespace != 'kube-system'",
            "object.spec.minReadySeconds >= 0 && object.spec.revisionHistoryLimit <= 10",
            "object.spec.template.spec.containers.map(c, c.name).size() == variables.containers.size()",
            "request.userInfo.username != 'system:anonymous' && 'system:masters' in request.userInfo.groups == false",
            "namespaceObject.metadata.labels['team'] == object.metadata.labels['team']",
            "authorizer.group('apps').resource('deployments').namespace(object.metadata.namespace).check('delete').allowed()",
            "quantity(object.spec.template.spec.containers[0].resources.limits['cpu']).isLessThan(quantity('2'))",
            "oldObject == null || object.spec.selector == oldObject.spec.selector",
            "object.spec.template.metadata.annotations.all(k, k.startsWith('example.com/'))",
            "type(object.spec.replicas) == int",
        ];
        let validations: Vec<Value> = exprs
            .iter()
            .map(|e| json!({"expression": e, "messageExpression": "'replicas: ' + string(object.spec.replicas)"}))
            .collect();
        let p = policy(json!(["deployments", "statefulsets"]), json!(validations));
        assert_eq!(
            expression_warnings(&r, &r.schemas(), &p),
            Vec::<Value>::new()
        );
    }

    #[test]
    fn errors_are_reported_per_kind_in_group_version_kind_order() {
        let r = registry();
        let p = policy(
            json!([
                "statefulsets",
                "deployments",
                "configmaps",
                "pods/status",
                "*"
            ]),
            json!([{"expression": "object.spec.replicas > 1"}]),
        );
        // ConfigMaps have no spec; the subresource and the wildcard are skipped.
        assert_eq!(
            expression_warnings(&r, &r.schemas(), &p),
            vec![json!({
                "fieldRef": "spec.validations[0].expression",
                "warning": "/v1, Kind=ConfigMap: ERROR: <input>:1:7: undefined field 'spec'\n | object.spec.replicas > 1\n | ......^\n",
            })]
        );
    }
}
