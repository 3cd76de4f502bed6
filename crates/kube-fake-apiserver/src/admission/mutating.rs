//! MutatingAdmissionPolicy (`admissionregistration.k8s.io/v1beta1`) with its bindings, as
//! `admission/plugin/policy/mutating` (`dispatcher.go`, `patch/json_patch.go`, `patch/smd.go`)
//! applies them on a CREATE or UPDATE: the policy's `matchConstraints` and the binding's
//! `matchResources`, params, `matchConditions`, `variables`, then each mutation in order —
//! `ApplyConfiguration` (an `Object{...}` merged as server-side apply merges, no field
//! ownership) or `JSONPatch` (RFC 6902 operations built as `JSONPatch{...}`) — with
//! `reinvocationPolicy`, `failurePolicy` and the real messages.
use serde_json::{Value, json};

use super::policies::{self, Bound};
use super::reinvocation::Reinvocation;
use super::{Attributes, Config, Operation, cel, review};
use crate::state::Shared;
use crate::status::ApiError;
use crate::util::str_of;

/// A configuration or evaluation error of one binding (`generic.PolicyError`).
struct PolicyError {
    policy: String,
    /// None for an error of the policy itself.
    binding: Option<String>,
    message: String,
    /// `Invalid` for what the mutating dispatcher reports, none (the 403's `Forbidden`) for
    /// what the generic dispatcher reports (params).
    reason: Option<&'static str>,
    ignore: bool,
}

/// One pass of the plugin (`reinvoke`: the second). Whether it changed the object (the chain
/// then runs a second pass).
pub async fn mutate(
    shared: &Shared,
    config: &Config,
    attrs: &mut Attributes,
    state: &mut Reinvocation,
    reinvoke: bool,
) -> Result<bool, ApiError> {
    // No request body to mutate on a DELETE: the plugin handles CREATE, UPDATE and CONNECT.
    if attrs.operation == Operation::Delete || config.mutating_policies.is_empty() {
        return Ok(false);
    }
    state.begin(reinvoke, attrs.object.as_ref());
    let mut errors: Vec<PolicyError> = Vec::new();
    let mut changed_any = false;
    for (i, bound) in config.mutating_policies.iter().enumerate() {
        let policy = policies::name_of(&bound.policy).to_string();
        let binding = policies::name_of(&bound.binding).to_string();
        let spec = bound.policy.get("spec").cloned().unwrap_or(json!({}));
        let ignore = str_of(spec.get("failurePolicy")) == "Ignore";
        let error = |message: String, reason: Option<&'static str>| PolicyError {
            policy: policy.clone(),
            binding: Some(binding.clone()),
            message,
            reason,
            ignore,
        };
        let Some(version) = policies::resources_match(
            spec.get("matchConstraints").unwrap_or(&json!({})),
            attrs,
            config.namespace.as_ref(),
        )?
        else {
            continue;
        };
        let params = config
            .mutating_params
            .0
            .get(i)
            .cloned()
            .unwrap_or(Ok(Vec::new()));
        // An error of the policy is reported once for it, before any binding is looked at.
        if let Err(e) = &params
            && e.policy_level
        {
            if !errors
                .iter()
                .any(|x| x.policy == policy && x.binding.is_none())
            {
                errors.push(PolicyError {
                    binding: None,
                    ..error(e.message.clone(), None)
                });
            }
            continue;
        }
        if let Some(m) = bound
            .binding
            .pointer("/spec/matchResources")
            .filter(|m| m.is_object())
            && policies::resources_match(m, attrs, config.namespace.as_ref())?.is_none()
        {
            continue;
        }
        let params = match params {
            Ok(p) => p,
            Err(e) => {
                errors.push(error(e.message, None));
                continue;
            }
        };
        for param in &params {
            let key = invocation_key(bound, param);
            let Some(object) = attrs.object.clone() else {
                continue;
            };
            let mut object = to_version(shared, attrs, object, &version).await?;
            let old = match &attrs.old_object {
                Some(o) => Some(to_version(shared, attrs, o.clone(), &version).await?),
                None => None,
            };
            let base = Base {
                spec: &spec,
                old,
                request: policies::strip_objects(review::request("", attrs, &version, None, None)),
                namespace: policies::namespace_object(config, attrs),
                param: param.clone(),
            };
            match super::authz::with(&attrs.authorizer, || {
                cel::on_a_deep_stack(|| matches(&spec, &base, &object))
            }) {
                Ok(true) => {}
                Ok(false) => continue,
                Err(e) => {
                    errors.push(error(e, Some("Invalid")));
                    continue;
                }
            }
            if !state.runs(reinvoke, &key) {
                continue;
            }
            let before = object.clone();
            for m in spec
                .get("mutations")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                match super::authz::with(&attrs.authorizer, || {
                    cel::on_a_deep_stack(|| apply(attrs, &version, m, &base, &object))
                }) {
                    Ok(Some(mut new)) => {
                        // `dispatchOne` defaults what a mutation returns before the next one.
                        crate::objects::apply_kind_defaults(&attrs.res, &version, &mut new);
                        object = new;
                    }
                    Ok(None) => {}
                    Err(e) => errors.push(error(e, Some("Invalid"))),
                }
            }
            let changed = object != before;
            if changed {
                attrs.object = Some(from_version(shared, attrs, object, &version).await?);
                changed_any = true;
            }
            state.ran(
                &key,
                changed,
                str_of(spec.get("reinvocationPolicy")) == "IfNeeded",
            );
        }
    }
    state.end(attrs.object.as_ref());
    let errors: Vec<PolicyError> = errors.into_iter().filter(|e| !e.ignore).collect();
    let Some(first) = errors.first() else {
        return Ok(changed_any);
    };
    Err(denial(attrs, first, &errors))
}

/// The refusal: `admission.NewForbidden`'s Status with the first error as its message (and
/// its reason, if it has one) and every error as a cause.
fn denial(attrs: &Attributes, first: &PolicyError, all: &[PolicyError]) -> ApiError {
    let text = |e: &PolicyError| match &e.binding {
        Some(b) => format!(
            "policy '{}' with binding '{b}' denied request: {}",
            e.policy, e.message
        ),
        None => format!("policy {:?} denied request: {}", e.policy, e.message),
    };
    let name = if attrs.name.is_empty() {
        attrs
            .object
            .as_ref()
            .map(|o| policies::name_of(o).to_string())
            .unwrap_or_default()
    } else {
        attrs.name.clone()
    };
    let mut e = ApiError::forbidden(
        &attrs.res.group,
        &attrs.res.plural,
        &name,
        "admission request denied by policy",
    );
    e.message = text(first);
    if let Some(reason) = first.reason {
        e.reason = reason.to_string();
    }
    if let Some(details) = e.details.as_mut() {
        details["causes"] = Value::Array(all.iter().map(|x| json!({"message": text(x)})).collect());
    }
    e
}

/// Policy, binding and param: what identifies one invocation for reinvocation.
fn invocation_key(bound: &Bound, param: &Value) -> String {
    format!(
        "{}\u{0}{}\u{0}{}/{}",
        policies::name_of(&bound.policy),
        policies::name_of(&bound.binding),
        str_of(param.pointer("/metadata/namespace")),
        str_of(param.pointer("/metadata/name")),
    )
}

async fn to_version(
    shared: &Shared,
    attrs: &Attributes,
    obj: Value,
    version: &str,
) -> Result<Value, ApiError> {
    if version == attrs.version {
        return Ok(obj);
    }
    crate::conversion::convert_one(shared, &attrs.res, obj, version).await
}

async fn from_version(
    shared: &Shared,
    attrs: &Attributes,
    obj: Value,
    version: &str,
) -> Result<Value, ApiError> {
    if version == attrs.version {
        return Ok(obj);
    }
    crate::conversion::convert_one(shared, &attrs.res, obj, &attrs.version).await
}

/// The variables an invocation's expressions see, but `object` and `variables` (and the
/// policy's spec, which declares the variables).
struct Base<'a> {
    spec: &'a Value,
    old: Option<Value>,
    request: Value,
    namespace: Value,
    param: Value,
}

impl Base<'_> {
    fn vars(&self, object: &Value) -> Vec<(&'static str, kube_cel::cel::Value)> {
        vec![
            ("object", cel::to_cel(object)),
            (
                "oldObject",
                cel::to_cel(self.old.as_ref().unwrap_or(&Value::Null)),
            ),
            ("request", cel::to_cel(&self.request)),
            ("namespaceObject", cel::to_cel(&self.namespace)),
            ("params", cel::to_cel(&self.param)),
        ]
    }
}

/// The policy's match conditions (`matchconditions.Matcher`): any false skips the invocation;
/// errors (all of them, when none is false) are the invocation's error under `Fail`, a skip
/// under `Ignore`.
fn matches(spec: &Value, base: &Base, object: &Value) -> Result<bool, String> {
    match cel::Composition::of(spec, true).match_conditions(spec, &base.vars(object)) {
        Err(_) if str_of(spec.get("failurePolicy")) == "Ignore" => Ok(false),
        result => result,
    }
}

/// One mutation applied to `object` (in the matched `version`): the new object, `None` when
/// it leaves the object as it was (a failed JSON Patch `test`), or the error.
fn apply(
    attrs: &Attributes,
    version: &str,
    mutation: &Value,
    base: &Base,
    object: &Value,
) -> Result<Option<Value>, String> {
    let vars = base.vars(object);
    match str_of(mutation.get("patchType")) {
        "JSONPatch" => {
            let expr = str_of(mutation.pointer("/jsonPatch/expression"));
            let result = evaluate(base.spec, expr, &vars)?;
            json_patch(object, &result)
        }
        "ApplyConfiguration" => {
            let expr = str_of(mutation.pointer("/applyConfiguration/expression"));
            let result = evaluate(base.spec, expr, &vars)?;
            apply_configuration(attrs, version, object, &result).map(Some)
        }
        // Validation refuses any other type; nothing to do for one stored before.
        _ => Ok(None),
    }
}

/// A mutation's expression evaluated, as JSON with the construction type tags in place.
fn evaluate(
    spec: &Value,
    expr: &str,
    vars: &[(&'static str, kube_cel::cel::Value)],
) -> Result<Value, String> {
    let e = cel::compile_mutation(expr).map_err(|e| format!("compilation error: {e}"))?;
    cel::Composition::of(spec, true)
        .eval(&e, vars)
        .map(|v| cel::to_json(&v))
        .map_err(|e| format!("expression '{expr}' resulted in error: {e}"))
}

/// The type name an evaluated construction carries.
fn type_of(v: &Value) -> Option<&str> {
    v.get(cel::TYPE_KEY).and_then(Value::as_str)
}

/// `v` without its construction type tags (what a constructed object marshals to).
fn untagged(v: &Value) -> Value {
    match v {
        Value::Object(m) => Value::Object(
            m.iter()
                .filter(|(k, _)| k.as_str() != cel::TYPE_KEY)
                .map(|(k, x)| (k.clone(), untagged(x)))
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(untagged).collect()),
        other => other.clone(),
    }
}

/// `CheckTypeNamesMatchFieldPathNames`: a construction under field `f` of a `T` must be a
/// `T.f` (maps and lists in between are unnamed).
fn check_type_names(v: &Value, path: &mut Vec<String>, errors: &mut Vec<String>) {
    match v {
        Value::Object(m) => {
            let named = type_of(v).is_some();
            if let Some(name) = type_of(v) {
                let expected = path.join(".");
                if name != expected {
                    errors.push(format!(
                        "unexpected type name {name:?}, expected {expected:?}, which matches field name path from root Object type"
                    ));
                }
            }
            for (k, x) in m.iter().filter(|(k, _)| k.as_str() != cel::TYPE_KEY) {
                if named {
                    path.push(k.clone());
                }
                check_type_names(x, path, errors);
                if named {
                    path.pop();
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|x| check_type_names(x, path, errors)),
        _ => {}
    }
}

/// `patch/smd.go`: the `Object{...}` merged onto the object.
fn apply_configuration(
    attrs: &Attributes,
    version: &str,
    object: &Value,
    result: &Value,
) -> Result<Value, String> {
    if type_of(result) != Some("Object") {
        return Err(format!(
            "unsupported return type from ApplyConfiguration expression: {}",
            type_name(result)
        ));
    }
    let mut errors = Vec::new();
    check_type_names(result, &mut vec!["Object".to_string()], &mut errors);
    if !errors.is_empty() {
        return Err(format!("type mismatch: {}", errors.join("\n")));
    }
    let config = untagged(result);
    crate::ssa::merge_apply_configuration(&attrs.res, version, object, &config).map_err(|paths| {
        format!(
            "error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: {}",
            paths.join(", ")
        )
    })
}

/// `patch/json_patch.go`: the list of `JSONPatch{...}` applied to the object.
fn json_patch(object: &Value, result: &Value) -> Result<Option<Value>, String> {
    let Some(items) = result.as_array() else {
        return Err("type mismatch: JSONPatchType.expression should evaluate to array".to_string());
    };
    let mut ops = Vec::with_capacity(items.len());
    for item in items {
        if type_of(item) != Some("JSONPatch") {
            return Err(format!(
                "type mismatch: JSONPatchType.expression should evaluate to array of JSONPatch: cannot convert to native type: {}",
                type_name(item)
            ));
        }
        let mut op = serde_json::Map::new();
        for field in ["op", "path", "from", "value"] {
            let Some(v) = item.get(field) else { continue };
            if field != "value" && !v.is_string() {
                return Err(format!(
                    "unexpected type {} for JSONPatchType '{field}' field",
                    type_name(v)
                ));
            }
            if field == "from" && v.as_str() == Some("") {
                continue;
            }
            // An `Object.x{...}` value is checked as an apply configuration's is, from its own
            // type name.
            if let Some(name) = type_of(v).filter(|_| field == "value") {
                let mut errors = Vec::new();
                check_type_names(v, &mut vec![name.to_string()], &mut errors);
                if !errors.is_empty() {
                    return Err(format!("type mismatch: {}", errors.join("\n")));
                }
            }
            op.insert(field.to_string(), untagged(v));
        }
        // `path` is always sent, empty if unset, as the Go struct marshals it.
        op.entry("path").or_insert_with(|| json!(""));
        op.entry("op").or_insert_with(|| json!(""));
        ops.push(Value::Object(op));
    }
    let patch: json_patch::Patch =
        serde_json::from_value(Value::Array(ops)).map_err(|e| format!("JSONPath: {e}"))?;
    let mut out = object.clone();
    match json_patch::patch(&mut out, &patch) {
        Ok(()) => Ok(Some(out)),
        // A failed `test` leaves the object as it was, without an error.
        Err(e) if matches!(e.kind, json_patch::PatchErrorKind::TestFailed) => Ok(None),
        Err(e) => Err(format!("JSONPath: {e}")),
    }
}

/// A value's CEL type name, for messages.
fn type_name(v: &Value) -> String {
    match v {
        Value::Null => "null_type".into(),
        Value::Bool(_) => "bool".into(),
        Value::Number(n) if n.is_f64() => "double".into(),
        Value::Number(_) => "int".into(),
        Value::String(_) => "string".into(),
        Value::Array(_) => "list".into(),
        Value::Object(_) => type_of(v).unwrap_or("map").to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_patches_apply_and_a_failed_test_leaves_the_object() {
        let obj = json!({"metadata": {"name": "a"}, "spec": {"replicas": 1}});
        let ops = json!([
            {"@type": "JSONPatch", "op": "replace", "path": "/spec/replicas", "value": 3},
            {"@type": "JSONPatch", "op": "add", "path": "/metadata/labels", "value": {"a": "b"}},
        ]);
        assert_eq!(
            json_patch(&obj, &ops).unwrap(),
            Some(json!({"metadata": {"name": "a", "labels": {"a": "b"}}, "spec": {"replicas": 3}}))
        );
        let failing = json!([
            {"@type": "JSONPatch", "op": "test", "path": "/spec/replicas", "value": 2},
            {"@type": "JSONPatch", "op": "replace", "path": "/spec/replicas", "value": 5},
        ]);
        assert_eq!(json_patch(&obj, &failing).unwrap(), None);
        assert_eq!(
            json_patch(&obj, &json!({"@type": "JSONPatch"})).unwrap_err(),
            "type mismatch: JSONPatchType.expression should evaluate to array"
        );
        assert_eq!(
            json_patch(
                &obj,
                &json!([{"@type": "JSONPatch", "op": 1, "path": "/a"}])
            )
            .unwrap_err(),
            "unexpected type int for JSONPatchType 'op' field"
        );
        let typed = json!([{"@type": "JSONPatch", "op": "add", "path": "/spec/template",
            "value": {"@type": "Object.spec.template", "spec": {"@type": "Object.spec.template.spec", "a": 1}}}]);
        assert_eq!(
            json_patch(&obj, &typed).unwrap(),
            Some(
                json!({"metadata": {"name": "a"}, "spec": {"replicas": 1, "template": {"spec": {"a": 1}}}})
            )
        );
        let mistyped = json!([{"@type": "JSONPatch", "op": "add", "path": "/spec/template",
            "value": {"@type": "Object.spec.template", "spec": {"@type": "Object.spec.tmpl.spec"}}}]);
        assert_eq!(
            json_patch(&obj, &mistyped).unwrap_err(),
            "type mismatch: unexpected type name \"Object.spec.tmpl.spec\", expected \"Object.spec.template.spec\", which matches field name path from root Object type"
        );
        let bad = json!([{"@type": "JSONPatch", "op": "remove", "path": "/spec/missing"}]);
        assert!(
            json_patch(&obj, &bad)
                .unwrap_err()
                .starts_with("JSONPath: ")
        );
    }

    #[test]
    fn construction_type_names_must_follow_field_names() {
        let mut errors = Vec::new();
        let ok = json!({"@type": "Object", "spec": {"@type": "Object.spec", "template": {"@type": "Object.spec.template"}}});
        check_type_names(&ok, &mut vec!["Object".into()], &mut errors);
        assert!(errors.is_empty());
        let wrong = json!({"@type": "Object", "spec": {"@type": "Object.spec", "selector": {"@type": "Object.spec.wrong"}}});
        check_type_names(&wrong, &mut vec!["Object".into()], &mut errors);
        assert_eq!(
            errors,
            [
                "unexpected type name \"Object.spec.wrong\", expected \"Object.spec.selector\", which matches field name path from root Object type"
            ]
        );
    }
}
