//! ValidatingAdmissionPolicy with its bindings, as `admission/plugin/policy/validating`
//! (`dispatcher.go`, `validator.go`) enforces them: the policy's `matchConstraints` and the
//! binding's `matchResources` (rules, exclusions, selectors, `matchPolicy`), the policy's
//! `matchConditions`, params (`paramKind` / `paramRef`), `variables`, validations with
//! `message` / `messageExpression` / `reason`, `validationActions` and `failurePolicy`, with
//! the real server's messages and the status code its reason carries.

use kube_cel::cel::Value as Cel;
use serde_json::{Value, json};

use super::matching::{self, Rule};
use super::{Attributes, Config, cel, review};
use crate::state::{Db, Shared};
use crate::status::ApiError;
use crate::util::{str_list, str_of};

/// A policy with one of its bindings (both as stored).
#[derive(Debug, Clone)]
pub struct Bound {
    pub policy: Value,
    pub binding: Value,
}

pub(super) fn name_of(v: &Value) -> &str {
    str_of(v.pointer("/metadata/name"))
}

/// Pairs every binding with the policy it names (bindings in name order, as the stored lists
/// come; a binding naming no policy binds nothing).
pub fn bind(policies: &[Value], bindings: &[Value]) -> Vec<Bound> {
    policies
        .iter()
        .flat_map(|p| {
            bindings
                .iter()
                .filter(|b| str_of(b.pointer("/spec/policyName")) == name_of(p))
                .map(|b| Bound {
                    policy: p.clone(),
                    binding: b.clone(),
                })
        })
        .collect()
}

impl Bound {
    /// Whether a request on `group`'s `plural` (and `sub`) may reach this policy.
    pub fn could_match(&self, group: &str, plural: &str, sub: &str) -> bool {
        self.policy
            .pointer("/spec/matchConstraints/resourceRules")
            .and_then(Value::as_array)
            .is_some_and(|rules| {
                rules
                    .iter()
                    .any(|r| Rule::parse(r).could_match(group, plural, sub))
            })
    }
}

/// The params of each bound policy (in `Config::policies` order), read with the
/// configuration under the store lock: the objects to evaluate with (`[Null]` without
/// `paramKind`), or the configuration error.
#[derive(Debug, Default)]
pub struct Params(pub(super) Vec<Result<Vec<Value>, ParamError>>);

/// Why a binding has no params: the policy's `paramKind` names no served kind (an error of the
/// policy, reported once for it: `failed to configure policy: ...`), or the binding's
/// `paramRef` finds nothing it may use (`failed to configure binding: ...`).
#[derive(Debug, Clone)]
pub struct ParamError {
    pub policy_level: bool,
    /// With its `failed to configure policy|binding: ` prefix.
    pub message: String,
}

impl Params {
    /// `namespace` is the request's (a namespace's own name for a namespace).
    pub fn read(db: &Db, bound: &[Bound], namespace: &str) -> Params {
        Params(bound.iter().map(|b| params_for(db, b, namespace)).collect())
    }
}

/// Whether a `MatchResources` covers the request: the version to see it through (the request's,
/// or an equivalent one), or `None`.
pub(super) fn resources_match(
    m: &Value,
    attrs: &Attributes,
    namespace: Option<&Value>,
) -> Result<Option<String>, ApiError> {
    if !matching::namespace_matches(
        m.get("namespaceSelector").unwrap_or(&json!({})),
        attrs,
        namespace,
    )? || !matching::object_matches(m.get("objectSelector").unwrap_or(&json!({})), attrs)
    {
        return Ok(None);
    }
    let rules = |key: &str| -> Vec<Rule> {
        m.get(key)
            .and_then(Value::as_array)
            .map(|r| r.iter().map(Rule::parse).collect())
            .unwrap_or_default()
    };
    let (include, exclude) = (rules("resourceRules"), rules("excludeResourceRules"));
    if exclude.iter().any(|r| r.matches(attrs, &attrs.version)) {
        return Ok(None);
    }
    // No resource rules (a binding's narrowing by selectors alone): every resource.
    if include.is_empty() || include.iter().any(|r| r.matches(attrs, &attrs.version)) {
        return Ok(Some(attrs.version.clone()));
    }
    if str_of(m.get("matchPolicy")) == "Exact" || attrs.subresource == "scale" {
        return Ok(None);
    }
    Ok(attrs
        .res
        .versions
        .iter()
        .filter(|v| v.served && v.name != attrs.version)
        .find(|v| include.iter().any(|r| r.matches(attrs, &v.name)))
        .map(|v| v.name.clone()))
}

/// One failed validation (or a configuration error under `failurePolicy: Fail`).
struct Decision {
    message: String,
    reason: String,
    /// The validation's index (`expressionIndex` of an `Audit` action's annotation).
    index: usize,
}

/// The params a binding evaluates with (`[Null]`: the policy has no `paramKind`), or the
/// configuration error (`generic.CollectParams`).
fn params_for(db: &Db, bound: &Bound, request_ns: &str) -> Result<Vec<Value>, ParamError> {
    let binding_error = |e: String| ParamError {
        policy_level: false,
        message: format!("failed to configure binding: {e}"),
    };
    let Some(pk) = bound
        .policy
        .pointer("/spec/paramKind")
        .filter(|v| v.is_object())
    else {
        return Ok(vec![Value::Null]);
    };
    let api_version = str_of(pk.get("apiVersion"));
    let kind = str_of(pk.get("kind"));
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    let Some(res) = db
        .registry
        .by_kind(group, kind)
        .filter(|r| r.version(version).is_some())
        .cloned()
    else {
        // `schema.GroupVersionKind`'s `String()`: `/v1, Kind=X` for the core group.
        return Err(ParamError {
            policy_level: true,
            message: format!(
                "failed to configure policy: failed to find resource referenced by paramKind: '{group}/{version}, Kind={kind}'"
            ),
        });
    };
    // A binding without `paramRef` evaluates the policy with null params (`CollectParams`).
    let Some(pref) = bound
        .binding
        .pointer("/spec/paramRef")
        .filter(|v| v.is_object())
    else {
        return Ok(vec![Value::Null]);
    };
    let namespace = if res.namespaced {
        let ns = str_of(pref.get("namespace"));
        let ns = if ns.is_empty() { request_ns } else { ns };
        if ns.is_empty() {
            return Err(binding_error(
                "cannot use namespaced paramRef in policy binding that matches cluster-scoped resources"
                    .into(),
            ));
        }
        Some(ns)
    } else {
        None
    };
    let name = str_of(pref.get("name"));
    let found: Vec<Value> = if !name.is_empty() {
        let key = crate::objects::key_of(&res, namespace, name);
        db.store
            .get(&key)
            .map(|o| crate::objects::view(&res, version, o))
            .into_iter()
            .collect()
    } else {
        let selector = pref.get("selector").cloned().unwrap_or(json!({}));
        let (g, r) = res.storage();
        db.store
            .list(g, r, namespace)
            .into_iter()
            .filter(|(_, o)| {
                let labels = o
                    .pointer("/metadata/labels")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default();
                matching::selector_matches(&selector, &labels)
            })
            .map(|(_, o)| crate::objects::view(&res, version, &o))
            .collect()
    };
    if found.is_empty() && str_of(pref.get("parameterNotFoundAction")) == "Deny" {
        return Err(binding_error(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        ));
    }
    Ok(found)
}

/// `namespaceObject`: the request's namespace as policies see it (no managed fields).
pub(super) fn namespace_object(config: &Config, attrs: &Attributes) -> Value {
    if attrs.is_namespace() {
        return Value::Null;
    }
    let mut ns = config.namespace.clone().unwrap_or(Value::Null);
    if let Some(m) = ns.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    ns
}

/// Evaluates one binding with one param (`validator.Validate`): the failed validations, with
/// their actions applied by the caller, then the errors of the audit annotations, which deny
/// whatever the actions.
fn evaluate(spec: &Value, ignore: bool, base: &[(&'static str, Cel)]) -> Evaluation {
    let on_error = |message: String| -> Vec<Decision> {
        if ignore {
            Vec::new()
        } else {
            vec![Decision {
                message,
                reason: "Invalid".into(),
                index: 0,
            }]
        }
    };
    // Variables as cel-go's composition gives them: computed per expression, with it.
    let composition = cel::Composition::of(spec, false);
    let vars: Vec<(&'static str, Cel)> = base.to_vec();
    // Match conditions: any false skips the binding; errors go by the failure policy.
    match composition.match_conditions(spec, &vars) {
        Ok(true) => {}
        Ok(false) => return Evaluation::default(),
        Err(e) => {
            return Evaluation {
                decisions: on_error(e),
                ..Evaluation::default()
            };
        }
    }
    let mut out = Vec::new();
    for (index, v) in spec
        .get("validations")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .enumerate()
    {
        let expr = str_of(v.get("expression"));
        match cel::compile(expr)
            .and_then(|e| composition.eval(&e, &vars))
            .and_then(cel::bool_of)
        {
            Ok(true) => {}
            Ok(false) => {
                let from_expression = v
                    .get("messageExpression")
                    .and_then(Value::as_str)
                    .and_then(|m| {
                        cel::compile(m)
                            .and_then(|e| composition.eval(&e, &vars))
                            .ok()
                    })
                    .and_then(|m| match m {
                        Cel::String(s) => Some(s.trim().to_string()),
                        _ => None,
                    })
                    .filter(|m| !m.is_empty() && !m.contains('\n') && m.len() <= 5120);
                let message = from_expression
                    .or_else(|| {
                        Some(str_of(v.get("message")).trim().to_string()).filter(|m| !m.is_empty())
                    })
                    .unwrap_or_else(|| format!("failed expression: {}", expr.trim()));
                let reason = str_of(v.get("reason"));
                out.push(Decision {
                    message,
                    reason: if reason.is_empty() { "Invalid" } else { reason }.to_string(),
                    index,
                });
            }
            Err(e) => out.extend(
                on_error(format!("expression '{expr}' resulted in error: {e}"))
                    .into_iter()
                    .map(|d| Decision { index, ..d }),
            ),
        }
    }
    let (annotations, annotation_errors) = audit_annotations(spec, ignore, &composition, &vars);
    Evaluation {
        decisions: out,
        annotations,
        annotation_errors,
    }
}

/// What one binding's evaluation with one param decided.
#[derive(Default)]
struct Evaluation {
    decisions: Vec<Decision>,
    /// Audit annotations to publish (key, value).
    annotations: Vec<(String, String)>,
    /// Audit annotations that failed (`AuditAnnotationActionError`).
    annotation_errors: Vec<Decision>,
}

/// `maxAuditAnnotationValueLength`: longer values are cut.
const MAX_ANNOTATION_VALUE: usize = 10 * 1024;

/// The policy's `auditAnnotations`, evaluated (`validator.Validate`): a string value is
/// published (trimmed, cut at 10 KiB; empty excluded), `null` excluded; an evaluation error is
/// excluded under `failurePolicy: Ignore` and an error otherwise; a value of another type is
/// always an error. Returns the values to publish and the errors.
fn audit_annotations(
    spec: &Value,
    ignore: bool,
    composition: &cel::Composition,
    vars: &[(&'static str, Cel)],
) -> (Vec<(String, String)>, Vec<Decision>) {
    let error = |message: String| Decision {
        message,
        reason: "Invalid".into(),
        index: 0,
    };
    let (mut published, mut errors) = (Vec::new(), Vec::new());
    let annotations = spec.get("auditAnnotations").and_then(Value::as_array);
    for a in annotations.into_iter().flatten() {
        let expr = str_of(a.get("valueExpression"));
        match cel::compile(expr).and_then(|e| composition.eval(&e, vars)) {
            Ok(Cel::String(s)) => {
                let mut value = s.trim().to_string();
                if value.is_empty() {
                    continue;
                }
                if value.len() > MAX_ANNOTATION_VALUE {
                    let mut end = MAX_ANNOTATION_VALUE;
                    while !value.is_char_boundary(end) {
                        end -= 1;
                    }
                    value.truncate(end);
                }
                published.push((str_of(a.get("key")).to_string(), value));
            }
            Ok(Cel::Null) => {}
            Ok(other) => errors.push(error(format!(
                "valueExpression '{expr}' resulted in unsupported return type: {}. Return type must be either string or null.",
                cel::type_name(&other)
            ))),
            Err(_) if ignore => {}
            Err(e) => errors.push(error(format!("expression '{expr}' resulted in error: {e}"))),
        }
    }
    (published, errors)
}

/// `publishValidationFailureAnnotation`: an `Audit` action's record of a failed validation.
fn validation_failure(policy: &str, binding: &str, actions: &[String], d: &Decision) -> String {
    json!([{
        "message": d.message,
        "policy": policy,
        "binding": binding,
        "expressionIndex": d.index,
        "validationActions": actions,
    }])
    .to_string()
}

/// The status code a denial's reason carries (`reasonToCode`).
fn code_of(reason: &str) -> u16 {
    match reason {
        "Forbidden" => 403,
        "Unauthorized" => 401,
        "RequestEntityTooLarge" => 413,
        _ => 422,
    }
}

/// Every bound policy that matches judges the request; warnings for `Warn`, the first denial
/// for `Deny`, a `validation_failure` audit annotation for `Audit`; the policies' audit
/// annotations are published as `<policy>/<key>`.
pub async fn validate(
    shared: &Shared,
    config: &Config,
    attrs: &Attributes,
) -> Result<(), ApiError> {
    // (policy, binding — none for an error of the policy —, decision)
    let mut denied: Option<(String, Option<String>, Decision)> = None;
    let mut policy_errors: Vec<String> = Vec::new();
    // `<policy>/<key>` -> the distinct values its bindings and params gave.
    let mut published: std::collections::BTreeMap<String, Vec<String>> = Default::default();
    for (i, bound) in config.policies.iter().enumerate() {
        let policy_name = name_of(&bound.policy).to_string();
        let binding_name = name_of(&bound.binding).to_string();
        let spec = bound.policy.get("spec").cloned().unwrap_or(json!({}));
        let ignore = str_of(spec.get("failurePolicy")) == "Ignore";
        let Some(version) = resources_match(
            spec.get("matchConstraints").unwrap_or(&json!({})),
            attrs,
            config.namespace.as_ref(),
        )?
        else {
            continue;
        };
        let params = config.params.0.get(i).cloned().unwrap_or(Ok(Vec::new()));
        // An error of the policy is reported once for it, before any binding is looked at.
        if let Err(e) = &params
            && e.policy_level
        {
            if !ignore && !policy_errors.contains(&policy_name) {
                policy_errors.push(policy_name.clone());
                let d = Decision {
                    message: e.message.clone(),
                    reason: "Invalid".into(),
                    index: 0,
                };
                denied.get_or_insert((policy_name, None, d));
            }
            continue;
        }
        if let Some(m) = bound
            .binding
            .pointer("/spec/matchResources")
            .filter(|m| m.is_object())
            && resources_match(m, attrs, config.namespace.as_ref())?.is_none()
        {
            continue;
        }
        let actions = str_list(bound.binding.pointer("/spec/validationActions"));
        let params = match params {
            Ok(p) => p,
            Err(_) if ignore => continue,
            Err(e) => {
                let d = Decision {
                    message: e.message,
                    reason: "Invalid".into(),
                    index: 0,
                };
                denied.get_or_insert((policy_name, Some(binding_name), d));
                continue;
            }
        };
        let (object, old) = if version == attrs.version {
            (attrs.object.clone(), attrs.old_object.clone())
        } else {
            let mut out = Vec::new();
            for o in [&attrs.object, &attrs.old_object] {
                out.push(match o {
                    Some(o) => Some(
                        crate::conversion::convert_one(shared, &attrs.res, o.clone(), &version)
                            .await?,
                    ),
                    None => None,
                });
            }
            let old = out.pop().flatten();
            (out.pop().flatten(), old)
        };
        let request = review::request("", attrs, &version, None, None);
        let request = strip_objects(request);
        let base = [
            (
                "object",
                cel::to_cel(object.as_ref().unwrap_or(&Value::Null)),
            ),
            (
                "oldObject",
                cel::to_cel(old.as_ref().unwrap_or(&Value::Null)),
            ),
            ("request", cel::to_cel(&request)),
            (
                "namespaceObject",
                cel::to_cel(&namespace_object(config, attrs)),
            ),
        ];
        for param in &params {
            let mut vars = base.to_vec();
            vars.push(("params", cel::to_cel(param)));
            let evaluation = super::authz::with(&attrs.authorizer, || {
                cel::on_a_deep_stack(|| evaluate(&spec, ignore, &vars))
            });
            for d in evaluation.decisions {
                if actions.iter().any(|a| a == "Audit") {
                    crate::audit::annotate_with(
                        &attrs.audit,
                        "validation.policy.admission.k8s.io/validation_failure",
                        crate::audit::policy::Level::Metadata,
                        || validation_failure(&policy_name, &binding_name, &actions, &d),
                    );
                }
                if actions.iter().any(|a| a == "Warn") {
                    attrs.warnings.lock().push(format!(
                        "Validation failed for ValidatingAdmissionPolicy '{policy_name}' with binding '{binding_name}': {}",
                        d.message
                    ));
                }
                if actions.iter().any(|a| a == "Deny") && denied.is_none() {
                    denied = Some((policy_name.clone(), Some(binding_name.clone()), d));
                }
            }
            // Published only to an audit log.
            if attrs.audit.is_some() {
                for (key, value) in evaluation.annotations {
                    let values = published.entry(format!("{policy_name}/{key}")).or_default();
                    if !values.contains(&value) {
                        values.push(value);
                    }
                }
            }
            // An audit annotation's error denies whatever the binding's actions.
            for d in evaluation.annotation_errors {
                denied.get_or_insert((policy_name.clone(), Some(binding_name.clone()), d));
            }
        }
    }
    // Published whether or not the request is denied (several values: comma-separated).
    for (key, values) in published {
        crate::audit::annotate(&attrs.audit, &key, &values.join(", "));
    }
    let Some((policy, binding, d)) = denied else {
        return Ok(());
    };
    let message = match binding {
        Some(binding) => format!(
            "ValidatingAdmissionPolicy '{policy}' with binding '{binding}' denied request: {}",
            d.message
        ),
        None => format!(
            "ValidatingAdmissionPolicy '{policy}' denied request: {}",
            d.message
        ),
    };
    let name = if attrs.name.is_empty() {
        attrs
            .object
            .as_ref()
            .map(|o| name_of(o).to_string())
            .unwrap_or_default()
    } else {
        attrs.name.clone()
    };
    let mut e = ApiError::forbidden(&attrs.res.group, &attrs.res.plural, &name, &message);
    e.code = code_of(&d.reason);
    e.reason = d.reason;
    if let Some(details) = e.details.as_mut() {
        details["causes"] = json!([{"message": message}]);
    }
    Err(e)
}

/// The `request` variable: the admission request without its objects (they are variables of
/// their own).
pub(super) fn strip_objects(mut request: Value) -> Value {
    if let Some(m) = request.as_object_mut() {
        m.remove("object");
        m.remove("oldObject");
        m.remove("uid");
    }
    request
}
