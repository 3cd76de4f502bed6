//! Admission webhooks, as `admission/plugin/webhook/{generic,mutating,validating}` call them:
//! which webhooks a request reaches (rules, `matchPolicy`, selectors, `matchConditions`), the
//! `sideEffects` check on a dry run, the call within `timeoutSeconds`, the answer's checks,
//! patches, warnings, and `failurePolicy` with the real server's messages.
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};

use super::matching::{self, Rule};
use super::reinvocation::Reinvocation;
use super::{Attributes, Config, cel, review};
use crate::conversion_config::{self, ReviewVersion};
use crate::state::Shared;
use crate::status::ApiError;
use crate::util::{str_list, str_of, uid};

/// One webhook of a configuration, with the defaults the configuration's create applied.
#[derive(Debug, Clone)]
pub struct Hook {
    pub name: String,
    /// The configuration's name.
    configuration: String,
    /// `<configuration>/<index>`: who the webhook is for reinvocation.
    id: String,
    client: Arc<conversion_config::Webhook>,
    review_versions: Vec<String>,
    rules: Vec<Rule>,
    ignore_failures: bool,
    exact: bool,
    namespace_selector: Value,
    object_selector: Value,
    side_effects: String,
    timeout: Duration,
    reinvoke_if_needed: bool,
    match_conditions: Vec<(String, String)>,
}

/// The webhooks of one stored configuration.
pub fn parse(config: &Value, mutating: bool) -> Vec<Hook> {
    let config_name = str_of(config.pointer("/metadata/name"));
    let hooks = config
        .get("webhooks")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    hooks
        .iter()
        .enumerate()
        .map(|(i, w)| {
            let (target, ca_bundle) = conversion_config::client_config(w.get("clientConfig"));
            Hook {
                name: str_of(w.get("name")).to_string(),
                configuration: config_name.to_string(),
                id: format!("{config_name}/{i}"),
                client: Arc::new(conversion_config::Webhook {
                    target,
                    ca_bundle,
                    review: ReviewVersion::V1,
                }),
                review_versions: str_list(w.get("admissionReviewVersions")),
                rules: w
                    .get("rules")
                    .and_then(Value::as_array)
                    .map(|r| r.iter().map(Rule::parse).collect())
                    .unwrap_or_default(),
                ignore_failures: str_of(w.get("failurePolicy")) == "Ignore",
                exact: str_of(w.get("matchPolicy")) == "Exact",
                namespace_selector: w.get("namespaceSelector").cloned().unwrap_or(json!({})),
                object_selector: w.get("objectSelector").cloned().unwrap_or(json!({})),
                side_effects: str_of(w.get("sideEffects")).to_string(),
                timeout: Duration::from_secs(
                    w.get("timeoutSeconds")
                        .and_then(Value::as_u64)
                        .unwrap_or(10)
                        .clamp(1, 30),
                ),
                reinvoke_if_needed: mutating && str_of(w.get("reinvocationPolicy")) == "IfNeeded",
                match_conditions: w
                    .get("matchConditions")
                    .and_then(Value::as_array)
                    .map(|m| {
                        m.iter()
                            .map(|c| {
                                (
                                    str_of(c.get("name")).to_string(),
                                    str_of(c.get("expression")).to_string(),
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        })
        .collect()
}

impl Hook {
    /// Whether a request on `group`'s `plural` (and `sub`) may reach this webhook.
    pub fn could_match(&self, group: &str, plural: &str, sub: &str) -> bool {
        self.rules.iter().any(|r| r.could_match(group, plural, sub))
    }
}

/// `failed calling webhook "<name>": <cause>` (`webhookutil.ErrCallingWebhook`), and whether
/// `failurePolicy: Ignore` may pass over it.
struct CallError(String);

fn failed_calling(name: &str, cause: impl std::fmt::Display) -> CallError {
    CallError(format!("failed calling webhook {name:?}: {cause}"))
}

/// A call failure under `failurePolicy: Fail`: `apierrors.NewInternalError`.
fn fail_closed(e: CallError) -> ApiError {
    ApiError::new(
        500,
        "InternalError",
        format!("Internal error occurred: {}", e.0),
    )
    .with_details(json!({"causes": [{"message": e.0}]}))
}

/// A webhook's denial (`webhookerrors.ToStatusErr`): its status with the message prefixed,
/// never a code under 400.
fn denial(name: &str, status: Option<&Value>) -> ApiError {
    let status = status.cloned().unwrap_or(json!({}));
    let denied = format!("admission webhook {name:?} denied the request");
    let message = str_of(status.get("message"));
    let reason = str_of(status.get("reason"));
    let message = if !message.is_empty() {
        format!("{denied}: {message}")
    } else if !reason.is_empty() {
        format!("{denied}: {reason}")
    } else {
        format!("{denied} without explanation")
    };
    let code = status
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let mut e = ApiError::new(code, reason, message);
    e.details = status.get("details").filter(|d| d.is_object()).cloned();
    e
}

/// The version a webhook is called with: the request's when a rule names it, else under
/// `matchPolicy: Equivalent` the first other served version of the resource a rule names.
fn version_for(hook: &Hook, attrs: &Attributes) -> Option<String> {
    if hook.rules.iter().any(|r| r.matches(attrs, &attrs.version)) {
        return Some(attrs.version.clone());
    }
    if hook.exact || attrs.subresource == "scale" {
        return None;
    }
    attrs
        .res
        .versions
        .iter()
        .filter(|v| v.served && v.name != attrs.version)
        .find(|v| hook.rules.iter().any(|r| r.matches(attrs, &v.name)))
        .map(|v| v.name.clone())
}

/// `object` and `oldObject` seen through `version`.
async fn objects_in(
    shared: &Shared,
    attrs: &Attributes,
    version: &str,
) -> Result<(Option<Value>, Option<Value>), ApiError> {
    if version == attrs.version {
        return Ok((attrs.object.clone(), attrs.old_object.clone()));
    }
    let mut out = Vec::new();
    for o in [&attrs.object, &attrs.old_object] {
        out.push(match o {
            Some(o) => {
                Some(crate::conversion::convert_one(shared, &attrs.res, o.clone(), version).await?)
            }
            None => None,
        });
    }
    let old = out.pop().flatten();
    Ok((out.pop().flatten(), old))
}

/// A webhook's `matchConditions`: any false skips it; an error fails the request under
/// `failurePolicy: Fail` and skips the webhook under `Ignore`.
fn conditions_match(
    hook: &Hook,
    attrs: &Attributes,
    request: &Value,
    object: Option<&Value>,
    old: Option<&Value>,
) -> Result<bool, ApiError> {
    if hook.match_conditions.is_empty() {
        return Ok(true);
    }
    let vars = [
        ("object", cel::to_cel(object.unwrap_or(&Value::Null))),
        ("oldObject", cel::to_cel(old.unwrap_or(&Value::Null))),
        ("request", cel::to_cel(request)),
    ];
    let exprs = hook.match_conditions.iter().map(|(_, e)| e.as_str());
    match cel::match_conditions(exprs, |e| cel::eval(e, &vars)) {
        Ok(matched) => Ok(matched),
        Err(_) if hook.ignore_failures => Ok(false),
        // `apierrors.NewForbidden` around the conditions' aggregated errors.
        Err(e) => Err(ApiError::forbidden(
            &attrs.res.group,
            &attrs.res.plural,
            &attrs.name,
            &e,
        )),
    }
}

/// One call: what the webhook answered, or why the call failed (`Err(Ok(_))`: a refusal that
/// `failurePolicy` does not soften, such as a dry run a webhook with side effects cannot take).
async fn call(
    shared: &Shared,
    hook: &Hook,
    attrs: &Attributes,
    request: Value,
    mutating: bool,
) -> Result<review::Verdict, Result<ApiError, CallError>> {
    if attrs.dry_run && !matches!(hook.side_effects.as_str(), "None" | "NoneOnDryRun") {
        return Err(Ok(ApiError::bad_request(format!(
            "admission webhook {:?} does not support dry run",
            hook.name
        ))));
    }
    let uid = str_of(request.get("uid")).to_string();
    let api_version = review::review_version(&hook.review_versions);
    let body = review::review(api_version, request)
        .to_string()
        .into_bytes();
    let answer = crate::conversion::client::post_within(shared, &hook.client, body, hook.timeout)
        .await
        .map_err(|e| {
            Err(failed_calling(
                &hook.name,
                format!("failed to call webhook: {e}"),
            ))
        })?;
    let verdict = review::verify(&uid, api_version, mutating, &answer).map_err(|e| {
        Err(failed_calling(
            &hook.name,
            format!("received invalid webhook response: {e}"),
        ))
    })?;
    // Audit annotations go on the event under the webhook's name, allowed or not.
    for (k, v) in &verdict.audit_annotations {
        crate::audit::annotate(&attrs.audit, &format!("{}/{k}", hook.name), v);
    }
    attrs
        .warnings
        .lock()
        .extend(verdict.warnings.iter().cloned());
    if !verdict.allowed {
        return Err(Ok(denial(&hook.name, verdict.status.as_ref())));
    }
    Ok(verdict)
}

/// Whether `hook` is called for `attrs`: the version it is called with, the objects in it and
/// the review's request (`None`: not called).
async fn invocation(
    shared: &Shared,
    config: &Config,
    hook: &Hook,
    attrs: &Attributes,
) -> Result<Option<(String, Value)>, ApiError> {
    let Some(version) = version_for(hook, attrs) else {
        return Ok(None);
    };
    if !matching::namespace_matches(&hook.namespace_selector, attrs, config.namespace.as_ref())?
        || !matching::object_matches(&hook.object_selector, attrs)
    {
        return Ok(None);
    }
    let (object, old) = objects_in(shared, attrs, &version).await?;
    let request = review::request(&uid(), attrs, &version, object.as_ref(), old.as_ref());
    if !super::authz::with(&attrs.authorizer, || {
        cel::on_a_deep_stack(|| {
            conditions_match(hook, attrs, &request, object.as_ref(), old.as_ref())
        })
    })? {
        return Ok(None);
    }
    Ok(Some((version, request)))
}

/// The mutating webhooks in order, then once more those with `reinvocationPolicy: IfNeeded`
/// that ran before a later webhook changed the object.
pub async fn mutate(
    shared: &Shared,
    config: &Config,
    attrs: &mut Attributes,
    state: &mut Reinvocation,
    reinvoke: bool,
) -> Result<bool, ApiError> {
    state.begin(reinvoke, attrs.object.as_ref());
    let mut changed_any = false;
    for (index, hook) in config.mutating.iter().enumerate() {
        if !state.runs(reinvoke, &hook.id) {
            continue;
        }
        let Some((version, request)) = invocation(shared, config, hook, attrs).await? else {
            continue;
        };
        let annotator = Annotator {
            hook,
            round: u8::from(reinvoke),
            index,
            audit: attrs.audit.clone(),
        };
        let changed = match call(shared, hook, attrs, request.clone(), true).await {
            Ok(verdict) => {
                let applied = apply_patch(shared, hook, attrs, &version, &request, verdict).await;
                annotator.mutation(applied.as_ref().is_ok_and(|(changed, _)| *changed));
                let (changed, patch) = applied?;
                if let Some(patch) = patch {
                    annotator.patch(&patch);
                }
                changed
            }
            Err(Ok(refusal)) => {
                annotator.mutation(false);
                return Err(refusal);
            }
            Err(Err(e)) if hook.ignore_failures => {
                annotator.mutation(false);
                failed_open(&attrs.audit, "mutation", annotator.round, index, hook);
                tracing::warn!(
                    "failed calling webhook, failing open {}: {}",
                    hook.name,
                    e.0
                );
                false
            }
            Err(Err(e)) => {
                annotator.mutation(false);
                return Err(fail_closed(e));
            }
        };
        changed_any |= changed;
        state.ran(&hook.id, changed, hook.reinvoke_if_needed);
    }
    state.end(attrs.object.as_ref());
    Ok(changed_any)
}

/// `failed-open.<mutation|validating>.webhook.admission.k8s.io/round_<r>_index_<i>`: the
/// webhook's name, when its call failed and `failurePolicy: Ignore` let the request through.
fn failed_open(audit: &crate::audit::Context, kind: &str, round: u8, index: usize, hook: &Hook) {
    if audit.is_some() {
        crate::audit::annotate(
            audit,
            &format!("failed-open.{kind}.webhook.admission.k8s.io/round_{round}_index_{index}"),
            &hook.name,
        );
    }
}

/// The audit annotations of one mutating webhook's call (`webhookAnnotator`):
/// `mutation.webhook.admission.k8s.io/round_<r>_index_<i>` whenever it was called, and
/// `patch.webhook.admission.k8s.io/...` (at level `Request`) when its patch was applied.
struct Annotator<'a> {
    hook: &'a Hook,
    round: u8,
    index: usize,
    audit: crate::audit::Context,
}

impl Annotator<'_> {
    fn mutation(&self, mutated: bool) {
        if self.audit.is_none() {
            return;
        }
        crate::audit::annotate_with(
            &self.audit,
            &format!(
                "mutation.webhook.admission.k8s.io/round_{}_index_{}",
                self.round, self.index
            ),
            crate::audit::policy::Level::Metadata,
            || {
                json!({
                    "configuration": self.hook.configuration,
                    "webhook": self.hook.name,
                    "mutated": mutated,
                })
                .to_string()
            },
        );
    }

    /// `patch`: the JSON patch as the webhook sent it.
    fn patch(&self, patch: &[u8]) {
        if self.audit.is_none() {
            return;
        }
        crate::audit::annotate_with(
            &self.audit,
            &format!(
                "patch.webhook.admission.k8s.io/round_{}_index_{}",
                self.round, self.index
            ),
            crate::audit::policy::Level::Request,
            || {
                json!({
                    "configuration": self.hook.configuration,
                    "webhook": self.hook.name,
                    "patch": serde_json::from_slice::<Value>(patch).unwrap_or(Value::Null),
                    "patchType": "JSONPatch",
                })
                .to_string()
            },
        );
    }
}

/// Applies a webhook's JSON patch to the object it was sent: whether the object changed, and
/// the patch (as sent) when one was applied.
async fn apply_patch(
    shared: &Shared,
    hook: &Hook,
    attrs: &mut Attributes,
    version: &str,
    request: &Value,
    verdict: review::Verdict,
) -> Result<(bool, Option<Vec<u8>>), ApiError> {
    let Some(patch) = verdict.patch else {
        return Ok((false, None));
    };
    let ops: json_patch::Patch = serde_json::from_slice(&patch).map_err(|e| {
        fail_closed(failed_calling(
            &hook.name,
            format!("received undecodable patch in webhook response: {e}"),
        ))
    })?;
    if ops.0.is_empty() {
        return Ok((false, None));
    }
    let Some(mut obj) = request.get("object").filter(|o| !o.is_null()).cloned() else {
        return Err(ApiError::new(
            500,
            "InternalError",
            format!(
                "Internal error occurred: admission webhook {:?} attempted to modify the object, which is not supported for this operation",
                hook.name
            ),
        ));
    };
    json_patch::patch(&mut obj, &ops).map_err(|e| {
        let m = e.to_string();
        ApiError::new(
            500,
            "InternalError",
            format!("Internal error occurred: {m}"),
        )
        .with_details(json!({"causes": [{"message": m}]}))
    })?;
    if version != attrs.version {
        obj = crate::conversion::convert_one(shared, &attrs.res, obj, &attrs.version).await?;
    }
    let changed = attrs.object.as_ref() != Some(&obj);
    attrs.object = Some(obj);
    Ok((changed, Some(patch)))
}

/// The validating webhooks, called at once; the first refusal in configuration order wins.
pub async fn validate(
    shared: &Shared,
    config: &Config,
    attrs: &Attributes,
) -> Result<(), ApiError> {
    let mut calls = Vec::new();
    for (index, hook) in config.validating.iter().enumerate() {
        if let Some((_, request)) = invocation(shared, config, hook, attrs).await? {
            calls.push(async move {
                match call(shared, hook, attrs, request, false).await {
                    Ok(_) => Ok(()),
                    Err(Ok(refusal)) => Err(refusal),
                    Err(Err(e)) if hook.ignore_failures => {
                        failed_open(&attrs.audit, "validating", 0, index, hook);
                        tracing::warn!(
                            "failed calling webhook, failing open {}: {}",
                            hook.name,
                            e.0
                        );
                        Ok(())
                    }
                    Err(Err(e)) => Err(fail_closed(e)),
                }
            });
        }
    }
    for outcome in futures::future::join_all(calls).await {
        outcome?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_read_as_the_server_words_them() {
        let e = denial(
            "v.example.com",
            Some(&json!({"code": 403, "reason": "Forbidden", "message": "no"})),
        );
        assert_eq!(e.code, 403);
        assert_eq!(
            e.message,
            "admission webhook \"v.example.com\" denied the request: no"
        );
        let e = denial("v.example.com", None);
        assert_eq!(e.code, 400);
        assert_eq!(
            e.message,
            "admission webhook \"v.example.com\" denied the request without explanation"
        );
        let e = denial("v", Some(&json!({"code": 200, "reason": "Bad"})));
        assert_eq!(
            (e.code, e.message.as_str()),
            (400, "admission webhook \"v\" denied the request: Bad")
        );
    }
}
