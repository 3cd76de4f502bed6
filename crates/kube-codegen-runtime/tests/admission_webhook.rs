//! Admission webhooks (`webhook::admission`): the defaulting and validating handlers answer
//! reviews as controller-runtime's do (patches, 422 field errors, 403 denials, warnings, 400
//! for hostile reviews, DELETE and dryRun), the configurations are kubebuilder's, and the
//! webhooks are served over HTTPS beside the conversion webhook.
#![cfg(feature = "webhook")]

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use bytes::Bytes;
use http::{Request, StatusCode, header};
use http_body_util::{BodyExt, Full};
use hyper_util::rt::TokioIo;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_codegen_runtime::conversion::{Converter, WebhookServer};
use kube_codegen_runtime::typed_patch::{self, Diff, TypedDiff};
use kube_codegen_runtime::validation::{self, LazySchema, ValidationErrors};
use kube_codegen_runtime::webhook::admission::{
    self, AdmissionError, AdmissionRequest, ConfigOptions, FieldErrors, SchemaChecksOnly,
    SchemaDefaultsOnly, Validator, Verdict,
};
use rustls::pki_types::CertificateDer;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use tokio::net::TcpStream;

/// A kind as kube-codegen generates it: optional fields skipped when unset, and the schema's
/// checks behind `SchemaChecks` with the schema itself (the impl kube-codegen emits).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Widget {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    kind: String,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<WidgetSpec>,
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct WidgetSpec {
    #[serde(skip_serializing_if = "Option::is_none")]
    replicas: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mode: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    owner: Option<String>,
}

/// `apps.example.com/v1` `Widget`'s resource traits, for the test types that stand for it.
macro_rules! widget_resource {
    ($t:ty) => {
        impl k8s_openapi::Resource for $t {
            const API_VERSION: &'static str = "apps.example.com/v1";
            const GROUP: &'static str = "apps.example.com";
            const KIND: &'static str = "Widget";
            const VERSION: &'static str = "v1";
            const URL_PATH_SEGMENT: &'static str = "widgets";
            type Scope = k8s_openapi::NamespaceResourceScope;
        }

        impl k8s_openapi::Metadata for $t {
            type Ty = ObjectMeta;
            fn metadata(&self) -> &ObjectMeta {
                &self.metadata
            }
            fn metadata_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }
        }
    };
}

widget_resource!(Widget);

static SCHEMA: LazySchema = LazySchema::new(
    r#"{"type":"object","properties":{"spec":{"type":"object","properties":{
        "replicas":{"type":"integer","default":1,"minimum":0,"maximum":10},
        "mode":{"type":"string"},
        "owner":{"type":"string","x-kubernetes-validations":[{"rule":"self == oldSelf","message":"owner is immutable"}]}}}}}"#,
    "apps.example.com",
    "Widget",
);

impl admission::SchemaChecks for Widget {
    fn openapi_schema() -> Option<&'static LazySchema> {
        Some(&SCHEMA)
    }
    fn schema_defaults(&mut self) {
        validation::apply_defaults(self, &SCHEMA)
    }
    fn schema_validate(&self) -> Result<(), ValidationErrors> {
        validation::validate(self, &SCHEMA)
    }
    fn schema_validate_update(&self, old: &Self) -> Result<(), ValidationErrors> {
        validation::validate_update(self, old, &SCHEMA)
    }
}

const UID: &str = "705ab4f5-6393-11e8-b7cc-42010a800002";

fn widget(name: &str, spec: Value) -> Value {
    json!({
        "apiVersion": "apps.example.com/v1", "kind": "Widget",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec
    })
}

fn review(operation: &str, object: Option<Value>, old: Option<Value>) -> Vec<u8> {
    let mut request = json!({
        "uid": UID,
        "kind": {"group": "apps.example.com", "version": "v1", "kind": "Widget"},
        "resource": {"group": "apps.example.com", "version": "v1", "resource": "widgets"},
        "name": "w", "namespace": "default", "operation": operation,
        "userInfo": {"username": "alice", "groups": ["system:authenticated"]},
        "dryRun": false
    });
    if let Some(o) = object {
        request["object"] = o;
    }
    if let Some(o) = old {
        request["oldObject"] = o;
    }
    serde_json::to_vec(&json!({
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": request
    }))
    .unwrap()
}

fn response(answer: &[u8]) -> Value {
    let v: Value = serde_json::from_slice(answer).unwrap();
    assert_eq!(v["kind"], "AdmissionReview", "{v}");
    v["response"].clone()
}

/// The patch of an answer, decoded from base64.
fn patch_of(r: &Value) -> Option<json_patch::Patch> {
    use base64::Engine as _;
    let b64 = r["patch"].as_str()?;
    assert_eq!(r["patchType"], "JSONPatch");
    let bytes = base64::engine::general_purpose::STANDARD
        .decode(b64)
        .unwrap();
    Some(serde_json::from_slice(&bytes).unwrap())
}

fn applied(sent: &Value, r: &Value) -> Value {
    let mut doc = sent.clone();
    if let Some(p) = patch_of(r) {
        json_patch::patch(&mut doc, &p).unwrap();
    }
    doc
}

/// The user's defaulter of these tests: `mode: auto` when unset.
fn default_mode(_: &AdmissionRequest, w: &mut Widget) -> Result<(), AdmissionError> {
    let spec = w.spec.get_or_insert_with(Default::default);
    spec.mode.get_or_insert_with(|| "auto".to_owned());
    Ok(())
}

#[test]
fn paths_are_controller_runtimes() {
    assert_eq!(
        admission::defaulting::<Widget>(SchemaDefaultsOnly).path(),
        "/mutate-apps-example-com-v1-widget"
    );
    assert_eq!(
        admission::validating::<Widget>(SchemaChecksOnly).path(),
        "/validate-apps-example-com-v1-widget"
    );
    assert_eq!(admission::mutate_path("", "v1", "Pod"), "/mutate--v1-pod");
}

#[test]
fn defaulting_patches_schema_defaults_then_the_users() {
    let hook = admission::defaulting::<Widget>(default_mode);
    // Unknown fields are kept: the type drops `extra`, and that is no removal of the hook's.
    let sent = widget("w", json!({"extra": true}));
    let r = response(&hook.review_json(&review("CREATE", Some(sent.clone()), None)));
    assert_eq!(r["uid"], UID);
    assert_eq!(r["allowed"], true);
    assert_eq!(r["status"], json!({"metadata": {}, "code": 200}));
    assert_eq!(
        applied(&sent, &r),
        widget("w", json!({"extra": true, "replicas": 1, "mode": "auto"}))
    );
    let ops = serde_json::to_value(patch_of(&r).unwrap()).unwrap();
    assert!(
        ops.as_array()
            .unwrap()
            .iter()
            .all(|op| op["op"] != "remove"),
        "{ops}"
    );

    // Turned off, the schema's default is left to the server.
    let hook = admission::defaulting::<Widget>(default_mode).without_schema_defaults();
    let r = response(&hook.review_json(&review("CREATE", Some(sent.clone()), None)));
    assert_eq!(
        applied(&sent, &r),
        widget("w", json!({"extra": true, "mode": "auto"}))
    );
}

#[test]
fn defaulting_without_change_has_no_patch_and_delete_is_allowed() {
    let hook = admission::defaulting::<Widget>(default_mode);
    let sent = widget("w", json!({"replicas": 3, "mode": "manual"}));
    let r = response(&hook.review_json(&review("UPDATE", Some(sent.clone()), Some(sent.clone()))));
    assert_eq!(r["allowed"], true);
    assert!(
        r.get("patch").is_none() && r.get("patchType").is_none(),
        "{r}"
    );

    // DELETE never reaches a defaulter: allowed with code 200, even with no object.
    let r = response(&hook.review_json(&review("DELETE", None, Some(sent))));
    assert_eq!(r["allowed"], true);
    assert_eq!(r["status"]["code"], 200);
    assert!(r.get("patch").is_none());
}

#[test]
fn a_defaulter_may_remove_fields_and_refuse() {
    let hook = admission::defaulting::<Widget>(|_: &AdmissionRequest, w: &mut Widget| {
        if let Some(spec) = w.spec.as_mut() {
            spec.owner = None;
        }
        Ok(())
    })
    .without_schema_defaults();
    let sent = widget("w", json!({"owner": "bob", "extra": 1}));
    let r = response(&hook.review_json(&review("CREATE", Some(sent.clone()), None)));
    assert_eq!(
        serde_json::to_value(patch_of(&r).unwrap()).unwrap(),
        json!([{"op": "remove", "path": "/spec/owner"}])
    );

    // An error: `Denied` (403) for a message, the status as it is for field errors.
    let hook = admission::defaulting::<Widget>(|_: &AdmissionRequest, _: &mut Widget| {
        Err("no widgets today".into())
    });
    let r = response(&hook.review_json(&review("CREATE", Some(sent.clone()), None)));
    assert_eq!(r["allowed"], false);
    assert_eq!(
        r["status"],
        json!({"metadata": {}, "code": 403, "reason": "Forbidden", "message": "no widgets today"})
    );
    assert!(r.get("patch").is_none());
}

/// A schema whose `replicas` default the type cannot hold (a string for an `i32`).
static ODD_SCHEMA: LazySchema = LazySchema::new(
    r#"{"type":"object","properties":{"spec":{"type":"object","properties":{
        "replicas":{"default":"many"},
        "mode":{"type":"string","default":"manual"}}}}}"#,
    "apps.example.com",
    "Widget",
);

/// The Widget, its schema's defaults applied either on the JSON as sent before the decode
/// (`VIA_JSON`: `openapi_schema` given, as generated code gives it) or by `apply_defaults()`
/// on the decoded object; with [`SCHEMA`] or, `ODD`, [`ODD_SCHEMA`].
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
struct Defaulted<const VIA_JSON: bool, const ODD: bool>(Widget);

impl<const VIA_JSON: bool, const ODD: bool> k8s_openapi::Resource for Defaulted<VIA_JSON, ODD> {
    const API_VERSION: &'static str = Widget::API_VERSION;
    const GROUP: &'static str = Widget::GROUP;
    const KIND: &'static str = Widget::KIND;
    const VERSION: &'static str = Widget::VERSION;
    const URL_PATH_SEGMENT: &'static str = Widget::URL_PATH_SEGMENT;
    type Scope = k8s_openapi::NamespaceResourceScope;
}

impl<const VIA_JSON: bool, const ODD: bool> k8s_openapi::Metadata for Defaulted<VIA_JSON, ODD> {
    type Ty = ObjectMeta;
    fn metadata(&self) -> &ObjectMeta {
        &self.0.metadata
    }
    fn metadata_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }
}

impl<const VIA_JSON: bool, const ODD: bool> admission::SchemaChecks for Defaulted<VIA_JSON, ODD> {
    fn openapi_schema() -> Option<&'static LazySchema> {
        VIA_JSON.then(Self::schema)
    }
    fn schema_defaults(&mut self) {
        validation::apply_defaults(self, Self::schema())
    }
}

impl<const VIA_JSON: bool, const ODD: bool> Defaulted<VIA_JSON, ODD> {
    fn schema() -> &'static LazySchema {
        if ODD { &ODD_SCHEMA } else { &SCHEMA }
    }

    fn answer(body: &[u8]) -> Vec<u8> {
        admission::defaulting::<Self>(|r: &AdmissionRequest, w: &mut Self| {
            default_mode(r, &mut w.0)
        })
        .review_json(body)
    }
}

#[test]
fn schema_defaults_on_the_sent_json_answer_as_apply_defaults() {
    let objects = [
        widget("w", json!({})),
        widget("w", json!({"extra": true})),
        widget("w", json!({"replicas": null, "mode": null})),
        widget("w", json!({"replicas": 4})),
        widget(
            "w",
            json!({"replicas": 4, "mode": "manual", "owner": "bob"}),
        ),
        widget("w", Value::Null),
        json!({"apiVersion": "apps.example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}),
        // Does not decode: the same 400 either way.
        widget("w", json!({"replicas": "three"})),
    ];
    for sent in objects {
        for op in ["CREATE", "UPDATE"] {
            let body = review(op, Some(sent.clone()), Some(sent.clone()));
            let (via_json, via_method) = (
                Defaulted::<true, false>::answer(&body),
                Defaulted::<false, false>::answer(&body),
            );
            assert_eq!(
                String::from_utf8_lossy(&via_json),
                String::from_utf8_lossy(&via_method),
                "{sent}"
            );
            let (via_json, via_method) = (
                Defaulted::<true, true>::answer(&body),
                Defaulted::<false, true>::answer(&body),
            );
            assert_eq!(
                String::from_utf8_lossy(&via_json),
                String::from_utf8_lossy(&via_method),
                "{sent}"
            );
        }
    }

    // What they answer: the schema's default and the user's.
    let sent = widget("w", json!({"extra": true}));
    let r = response(&Defaulted::<true, false>::answer(&review(
        "CREATE",
        Some(sent.clone()),
        None,
    )));
    assert_eq!(
        applied(&sent, &r),
        widget("w", json!({"extra": true, "replicas": 1, "mode": "auto"}))
    );
    // A default the type cannot hold: none of the schema's defaults (`mode: manual` neither),
    // only the user's.
    let r = response(&Defaulted::<true, true>::answer(&review(
        "CREATE",
        Some(sent.clone()),
        None,
    )));
    assert_eq!(
        applied(&sent, &r),
        widget("w", json!({"extra": true, "mode": "auto"}))
    );
}

struct Rules {
    deleted: AtomicBool,
}

impl Validator<Widget> for Rules {
    fn validate_create(&self, req: &AdmissionRequest, w: &Widget) -> Verdict {
        let mode = w.spec.as_ref().and_then(|s| s.mode.as_deref());
        let mut errs = FieldErrors::new();
        match mode {
            Some("auto" | "manual") => {}
            Some(other) => {
                errs.not_supported("spec.mode", other, &["auto", "manual"]);
            }
            None => {
                errs.required("spec.mode", "");
            }
        }
        if req.dry_run {
            return Verdict::allow().warn("dry run: nothing checked");
        }
        Verdict::from(errs.into_result_for(w)).warn("widgets are deprecated")
    }

    fn validate_update(&self, req: &AdmissionRequest, old: &Widget, w: &Widget) -> Verdict {
        if old.spec.as_ref().and_then(|s| s.mode.as_ref())
            != w.spec.as_ref().and_then(|s| s.mode.as_ref())
        {
            return Verdict::deny(format!(
                "{} may not change the mode",
                req.user_info.username.as_deref().unwrap_or("")
            ));
        }
        Verdict::allow()
    }

    fn validate_delete(&self, _: &AdmissionRequest, old: &Widget) -> Verdict {
        self.deleted.store(true, Ordering::SeqCst);
        if old.metadata.name.as_deref() == Some("keep") {
            return Verdict::deny("this widget is kept");
        }
        Verdict::allow()
    }
}

fn rules() -> admission::Validating<Widget> {
    admission::validating::<Widget>(Rules {
        deleted: AtomicBool::new(false),
    })
    .on_delete()
}

#[test]
fn validating_create_answers_field_errors_as_kube_apiserver_with_warnings() {
    let hook = rules();
    let r = response(&hook.review_json(&review(
        "CREATE",
        Some(widget("w", json!({"mode": "auto"}))),
        None,
    )));
    assert_eq!(r["allowed"], true, "{r}");
    assert_eq!(r["warnings"], json!(["widgets are deprecated"]));

    let r = response(&hook.review_json(&review(
        "CREATE",
        Some(widget("w", json!({"mode": "turbo"}))),
        None,
    )));
    assert_eq!(r["allowed"], false);
    assert_eq!(
        r["status"],
        json!({
            "metadata": {},
            "status": "Failure",
            "message": "Widget.apps.example.com \"w\" is invalid: spec.mode: Unsupported value: \"turbo\": supported values: \"auto\", \"manual\"",
            "reason": "Invalid",
            "details": {
                "name": "w", "group": "apps.example.com", "kind": "Widget",
                "causes": [{
                    "reason": "FieldValueNotSupported",
                    "message": "Unsupported value: \"turbo\": supported values: \"auto\", \"manual\"",
                    "field": "spec.mode"
                }]
            },
            "code": 422
        })
    );
    // Warnings travel with a refusal.
    assert_eq!(r["warnings"], json!(["widgets are deprecated"]));

    // The schema's checks run first, in the server's words.
    let r = response(&hook.review_json(&review(
        "CREATE",
        Some(widget("w", json!({"replicas": 11}))),
        None,
    )));
    assert_eq!(r["status"]["code"], 422);
    assert_eq!(
        r["status"]["details"]["causes"][0]["field"],
        "spec.replicas"
    );
    assert!(
        r["status"]["message"].as_str().unwrap().starts_with(
            "Widget.apps.example.com \"w\" is invalid: spec.replicas: Invalid value: 11: "
        ),
        "{r}"
    );
    assert!(
        r.get("warnings").is_none(),
        "the user's validator is not called: {r}"
    );

    // Without them the user's validator sees the object as it is.
    let hook = rules().without_schema_checks();
    let r = response(&hook.review_json(&review(
        "CREATE",
        Some(widget("w", json!({"replicas": 11, "mode": "auto"}))),
        None,
    )));
    assert_eq!(r["allowed"], true);
}

#[test]
fn validating_update_sees_the_old_object_and_transition_rules() {
    let hook = rules();
    let old = widget("w", json!({"mode": "auto", "owner": "bob"}));
    let r = response(&hook.review_json(&review(
        "UPDATE",
        Some(widget("w", json!({"mode": "manual", "owner": "bob"}))),
        Some(old.clone()),
    )));
    assert_eq!(
        r["status"],
        json!({"metadata": {}, "code": 403, "reason": "Forbidden", "message": "alice may not change the mode"})
    );
    // The generated validate_update: the CEL transition rule.
    let r = response(&hook.review_json(&review(
        "UPDATE",
        Some(widget("w", json!({"mode": "auto", "owner": "eve"}))),
        Some(old.clone()),
    )));
    assert_eq!(r["status"]["code"], 422, "{r}");
    let cause = r["status"]["details"]["causes"][0].clone();
    assert_eq!(cause["field"], "spec.owner");
    assert!(
        cause["message"]
            .as_str()
            .unwrap()
            .ends_with(": owner is immutable"),
        "{cause}"
    );
    // An update without its oldObject cannot be checked.
    let r = response(&hook.review_json(&review("UPDATE", Some(old), None)));
    assert_eq!(
        r["status"],
        json!({"metadata": {}, "code": 400, "message": "there is no content to decode"})
    );
}

#[test]
fn validating_delete_gets_the_old_object_and_connect_is_allowed() {
    let rules = Arc::new(Rules {
        deleted: AtomicBool::new(false),
    });
    struct Shared(Arc<Rules>);
    impl Validator<Widget> for Shared {
        fn validate_delete(&self, req: &AdmissionRequest, old: &Widget) -> Verdict {
            self.0.validate_delete(req, old)
        }
    }
    let hook = admission::validating::<Widget>(Shared(rules.clone()));
    let r = response(&hook.review_json(&review("DELETE", None, Some(widget("keep", json!({}))))));
    assert!(rules.deleted.load(Ordering::SeqCst));
    assert_eq!(r["status"]["message"], "this widget is kept");
    assert_eq!(r["status"]["code"], 403);
    let r = response(&hook.review_json(&review("DELETE", None, Some(widget("w", json!({}))))));
    assert_eq!(r["allowed"], true);
    let r = response(&hook.review_json(&review("DELETE", None, None)));
    assert_eq!(r["status"]["code"], 400);
    let r = response(&hook.review_json(&review("CONNECT", None, None)));
    assert_eq!(r["allowed"], true);
}

#[test]
fn dry_run_reaches_the_hooks() {
    let hook = rules();
    let mut body: Value = serde_json::from_slice(&review(
        "CREATE",
        Some(widget("w", json!({"mode": "turbo"}))),
        None,
    ))
    .unwrap();
    body["request"]["dryRun"] = json!(true);
    let r = response(&hook.review_json(&serde_json::to_vec(&body).unwrap()));
    assert_eq!(r["allowed"], true);
    assert_eq!(r["warnings"], json!(["dry run: nothing checked"]));
}

/// Hostile and mistaken reviews: each an `Errored(400)` answer (HTTP 200), never a panic.
#[test]
fn hostile_reviews_get_clear_errors() {
    let d = admission::defaulting::<Widget>(default_mode);
    let v = rules();
    let errored = |answer: Vec<u8>| -> (String, String) {
        let r = response(&answer);
        assert_eq!(r["allowed"], false, "{r}");
        assert_eq!(r["status"]["code"], 400, "{r}");
        (
            r["uid"].as_str().unwrap().to_owned(),
            r["status"]["message"].as_str().unwrap().to_owned(),
        )
    };
    for body in [
        &b"not json"[..],
        b"[]",
        b"{\"request\": 5}",
        b"{\"request\":{\"uid\":7}}",
    ] {
        let (uid, m) = errored(d.review_json(body));
        assert_eq!(uid, "");
        assert!(m.starts_with("couldn't decode the request body"), "{m}");
    }
    let (_, m) = errored(v.review_json(
        br#"{"apiVersion":"apiextensions.k8s.io/v1","kind":"ConversionReview","request":{}}"#,
    ));
    assert!(
        m.starts_with(
            "no kind \"ConversionReview\" is registered for version \"apiextensions.k8s.io/v1\""
        ),
        "{m}"
    );
    let (_, m) =
        errored(v.review_json(br#"{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}"#));
    assert_eq!(m, "the AdmissionReview has no request");

    let cases: Vec<(Value, &str)> = vec![
        (
            json!({"apiVersion": "apps.example.com/v2", "kind": "Widget", "metadata": {"name": "w"}}),
            "unable to decode apps.example.com/v2, Kind=Widget into apps.example.com/v1, Kind=Widget",
        ),
        (
            json!({"apiVersion": "apps.example.com/v1", "kind": "Gadget"}),
            "unable to decode apps.example.com/v1, Kind=Gadget into apps.example.com/v1, Kind=Widget",
        ),
        (
            json!({"apiVersion": "apps.example.com/v1"}),
            "Object 'Kind' is missing in '{\"apiVersion\":\"apps.example.com/v1\"}'",
        ),
        (
            json!({"kind": "Widget"}),
            "Object 'apiVersion' is missing in '{\"kind\":\"Widget\"}'",
        ),
        (
            json!(5),
            "couldn't get version/kind; json parse error: the object is not a JSON object",
        ),
    ];
    for (object, want) in cases {
        let (uid, m) = errored(d.review_json(&review("CREATE", Some(object.clone()), None)));
        assert_eq!(uid, UID);
        assert_eq!(m, want);
        let (_, m) = errored(v.review_json(&review("CREATE", Some(object), None)));
        assert_eq!(m, want);
    }
    let (_, m) = errored(d.review_json(&review(
        "CREATE",
        Some(widget("w", json!({"replicas": "three"}))),
        None,
    )));
    assert!(
        m.starts_with("unable to decode the Widget object: invalid type: string \"three\""),
        "{m}"
    );
    let (_, m) = errored(v.review_json(&review("PATCH", Some(widget("w", json!({}))), None)));
    assert_eq!(m, "unknown operation \"PATCH\"");
    let (_, m) = errored(d.review_json(&review("CREATE", None, None)));
    assert_eq!(m, "there is no content to decode");
}

#[test]
fn v1beta1_reviews_are_answered_in_v1beta1_and_panics_recovered() {
    let hook = admission::defaulting::<Widget>(default_mode);
    let mut body: Value =
        serde_json::from_slice(&review("CREATE", Some(widget("w", json!({}))), None)).unwrap();
    body["apiVersion"] = json!("admission.k8s.io/v1beta1");
    let answer: Value =
        serde_json::from_slice(&hook.review_json(&serde_json::to_vec(&body).unwrap())).unwrap();
    assert_eq!(answer["apiVersion"], "admission.k8s.io/v1beta1");
    assert_eq!(answer["response"]["allowed"], true);

    let hook = admission::defaulting::<Widget>(
        |_: &AdmissionRequest, _: &mut Widget| -> Result<(), AdmissionError> {
            panic!("the defaulter broke")
        },
    );
    let r = response(&hook.review_json(&review("CREATE", Some(widget("w", json!({}))), None)));
    assert_eq!(
        r["status"],
        json!({"metadata": {}, "code": 500, "message": "panic: the defaulter broke [recovered]"})
    );
}

#[test]
fn configurations_are_kubebuilders() {
    let regs = [
        admission::AdmissionWebhook::registration(&rules()),
        admission::AdmissionWebhook::registration(&admission::defaulting::<Widget>(default_mode)),
    ];
    let (m, v) = admission::configurations(
        &regs,
        &ConfigOptions::service("system", "webhook-service").ca_bundle(b"PEM".to_vec()),
    );
    let m = serde_json::to_value(m.unwrap()).unwrap();
    assert_eq!(
        m,
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "MutatingWebhookConfiguration",
            "metadata": {"name": "mutating-webhook-configuration"},
            "webhooks": [{
                "admissionReviewVersions": ["v1"],
                "clientConfig": {
                    "caBundle": "UEVN",
                    "service": {"name": "webhook-service", "namespace": "system", "path": "/mutate-apps-example-com-v1-widget"}
                },
                "failurePolicy": "Fail",
                "name": "mwidget-v1.kb.io",
                "rules": [{"apiGroups": ["apps.example.com"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"], "resources": ["widgets"]}],
                "sideEffects": "None"
            }]
        })
    );
    let v = serde_json::to_value(v.unwrap()).unwrap();
    assert_eq!(v["metadata"]["name"], "validating-webhook-configuration");
    assert_eq!(v["webhooks"][0]["name"], "vwidget-v1.kb.io");
    assert_eq!(
        v["webhooks"][0]["rules"][0]["operations"],
        json!(["CREATE", "UPDATE", "DELETE"])
    );

    let (m, v) =
        admission::configurations(&regs[1..], &ConfigOptions::url("https://127.0.0.1:9443/"));
    assert!(v.is_none());
    assert_eq!(
        m.unwrap().webhooks.unwrap()[0].client_config.url.as_deref(),
        Some("https://127.0.0.1:9443/mutate-apps-example-com-v1-widget")
    );
}

/// A test CA and a serving certificate for 127.0.0.1: (CA DER, cert PEM, key PEM).
fn certificates() -> (CertificateDer<'static>, String, String) {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let ca = params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::new(params, ca_key);
    let leaf_params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    let key = rcgen::KeyPair::generate().unwrap();
    let leaf = leaf_params.signed_by(&key, &issuer).unwrap();
    (ca.der().clone(), leaf.pem(), key.serialize_pem())
}

/// Both admission webhooks and the conversion webhook on one HTTPS server.
#[tokio::test]
async fn served_over_https_beside_the_conversion_webhook() {
    let dir = tempfile::tempdir().unwrap();
    let (ca, cert, key) = certificates();
    std::fs::write(dir.path().join("tls.crt"), cert).unwrap();
    std::fs::write(dir.path().join("tls.key"), key).unwrap();
    let builder = WebhookServer::builder(Converter::new())
        .listen("127.0.0.1:0".parse().unwrap())
        .tls_files(dir.path().join("tls.crt"), dir.path().join("tls.key"))
        .admission(admission::defaulting::<Widget>(default_mode))
        .admission(rules());
    assert_eq!(builder.registrations().len(), 2);
    let server = builder.bind().await.unwrap();
    assert_eq!(
        server.router().paths().collect::<Vec<_>>(),
        [
            "/convert",
            "/mutate-apps-example-com-v1-widget",
            "/validate-apps-example-com-v1-widget"
        ]
    );
    assert_eq!(server.registrations().len(), 2);
    let addr = server.local_addr();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let serving = tokio::spawn(server.serve(async {
        let _ = stopped.await;
    }));

    let mut roots = rustls::RootCertStore::empty();
    roots.add(ca).unwrap();
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let tcp = TcpStream::connect(addr).await.unwrap();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let tls = tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(name, tcp)
        .await
        .unwrap();
    let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
        .await
        .unwrap();
    tokio::spawn(conn);

    let sent = widget("w", json!({}));
    for (path, body) in [
        (
            "/mutate-apps-example-com-v1-widget",
            review("CREATE", Some(sent.clone()), None),
        ),
        (
            "/validate-apps-example-com-v1-widget",
            review("CREATE", Some(widget("w", json!({"mode": "auto"}))), None),
        ),
    ] {
        let request = Request::post(path)
            .header(header::HOST, "127.0.0.1")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        send.ready().await.unwrap();
        let answer = send.send_request(request).await.unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        let body = answer.into_body().collect().await.unwrap().to_bytes();
        let r = response(&body);
        assert_eq!(r["allowed"], true, "{r}");
        if path.starts_with("/mutate") {
            assert_eq!(
                applied(&sent, &r),
                widget("w", json!({"replicas": 1, "mode": "auto"}))
            );
        }
    }
    stop.send(()).unwrap();
    serving.await.unwrap();
}

/// `Widget` as kube-codegen now generates it: typed schema defaults and a typed patch (the
/// impls written out as the generator writes them), counting the typed patches it makes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct TypedWidget {
    #[serde(default, skip_serializing_if = "String::is_empty")]
    api_version: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    kind: String,
    #[serde(default)]
    metadata: ObjectMeta,
    #[serde(skip_serializing_if = "Option::is_none")]
    spec: Option<WidgetSpec>,
}

static TYPED_PATCHES: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

widget_resource!(TypedWidget);

impl admission::SchemaChecks for TypedWidget {
    fn openapi_schema() -> Option<&'static LazySchema> {
        Some(&SCHEMA)
    }
    fn schema_defaults(&mut self) {
        validation::apply_defaults(self, &SCHEMA)
    }
    fn typed_schema_defaults(&mut self) -> bool {
        if let Some(spec) = self.spec.as_mut()
            && spec.replicas.is_none()
        {
            spec.replicas = Some(1);
        }
        true
    }
    fn typed_patch_base(&self) -> Option<Self> {
        Some(self.clone())
    }
    fn typed_patch(before: &Self, after: &Self) -> Option<Vec<json_patch::PatchOperation>> {
        TYPED_PATCHES.fetch_add(1, Ordering::SeqCst);
        typed_patch::typed_patch(before, after)
    }
}

impl TypedDiff for TypedWidget {
    fn diff(&self, after: &Self, d: &mut Diff) {
        typed_patch::non_empty("apiVersion", &self.api_version, &after.api_version, d);
        typed_patch::non_empty("kind", &self.kind, &after.kind, d);
        typed_patch::metadata(&self.metadata, &after.metadata, d);
        typed_patch::optional("spec", &self.spec, &after.spec, d);
    }
}

impl TypedDiff for WidgetSpec {
    fn diff(&self, after: &Self, d: &mut Diff) {
        typed_patch::optional_whole("replicas", &self.replicas, &after.replicas, d);
        typed_patch::optional_whole("mode", &self.mode, &after.mode, d);
        typed_patch::optional_whole("owner", &self.owner, &after.owner, d);
    }
}

/// A CREATE review of the object text `object`, as written (key order and spacing kept).
fn review_of_text(object: &str) -> Vec<u8> {
    let body = String::from_utf8(review("CREATE", Some(json!("@OBJECT@")), None)).unwrap();
    body.replace("\"@OBJECT@\"", object).into_bytes()
}

#[test]
fn typed_patch_where_the_text_reencodes_and_the_text_diff_elsewhere() {
    let typed =
        admission::defaulting::<TypedWidget>(|_: &AdmissionRequest, w: &mut TypedWidget| {
            let spec = w.spec.get_or_insert_with(Default::default);
            spec.mode.get_or_insert_with(|| "auto".to_owned());
            Ok(())
        });
    let by_text = admission::defaulting::<Widget>(default_mode);
    let head = r#""apiVersion":"apps.example.com/v1","kind":"Widget","metadata":{"name":"w","namespace":"default"}"#;
    // (object text, whether it re-encodes as sent: the typed patch is made)
    let cases = [
        (format!("{{{head},\"spec\":{{\"replicas\":3}}}}"), true),
        (format!("{{{head}}}"), true),
        (format!("{{{head},\"spec\":{{\"owner\":\"a/b~c\"}}}}"), true),
        // An unknown field: the typed object drops it; not the hook's removal.
        (format!("{{{head},\"spec\":{{\"extra\":true}}}}"), false),
        // Keys in another order than the type's.
        (format!("{{\"spec\":{{\"replicas\":3}},{head}}}"), false),
        (
            format!("{{{head},\"spec\":{{\"mode\":\"m\",\"replicas\":3}}}}"),
            false,
        ),
        // A `null` the type reads as absent (and the schema defaults).
        (format!("{{{head},\"spec\":{{\"replicas\":null}}}}"), false),
        // Spacing.
        (format!("{{ {head},\"spec\":{{\"replicas\":3}}}}"), false),
    ];
    for (text, reencodes) in cases {
        let sent: Value = serde_json::from_str(&text).unwrap();
        let made = TYPED_PATCHES.load(Ordering::SeqCst);
        let r = response(&typed.review_json(&review_of_text(&text)));
        let expected = response(&by_text.review_json(&review_of_text(&text)));
        assert_eq!(r["allowed"], true, "{text}: {r}");
        assert_eq!(
            TYPED_PATCHES.load(Ordering::SeqCst) - made,
            usize::from(reencodes),
            "{text}"
        );
        assert_eq!(applied(&sent, &r), applied(&sent, &expected), "{text}");
        let ops = serde_json::to_value(patch_of(&r)).unwrap();
        assert!(
            ops.as_array()
                .is_none_or(|ops| ops.iter().all(|op| op["op"] != "remove")),
            "{text}: {ops}"
        );
    }
    // The typed patch as controller-runtime writes it for a missing spec: one `add`.
    let text = format!("{{{head}}}");
    let r = response(&typed.review_json(&review_of_text(&text)));
    assert_eq!(
        serde_json::to_value(patch_of(&r).unwrap()).unwrap(),
        json!([{"op": "add", "path": "/spec", "value": {"mode": "auto"}}])
    );
    // Nothing changed: no patch.
    let text = format!("{{{head},\"spec\":{{\"replicas\":3,\"mode\":\"m\"}}}}");
    let r = response(&typed.review_json(&review_of_text(&text)));
    assert!(r.get("patch").is_none(), "{r}");
}
