//! Admission webhooks, as controller-runtime's `webhook/admission` package and its
//! `WebhookManagedBy(mgr).For(&T{}).WithDefaulter(d).WithValidator(v)` build them: per kind, a
//! defaulting (mutating) webhook, [`defaulting`], and a validating one, [`validating`], each a
//! [`ReviewHandler`] served at controller-runtime's path (`/mutate-<group with dots as
//! dashes>-<version>-<lowercase kind>`, `/validate-...`) beside the conversion webhook on the
//! same [`WebhookServer`](super::WebhookServer) ([`WebhookServerBuilder::admission`](super::WebhookServerBuilder::admission)).
//!
//! - The generated checks run first ([`SchemaChecks`], which kube-codegen implements for every
//!   generated kind: `apply_defaults()`, `validate()`, `validate_update()`), unless turned
//!   off, then the user's [`Defaulter`] (mutates the typed object in place) or [`Validator`]
//!   (create, update, delete; warnings and errors). A defaulting webhook applies the schema's
//!   defaults by generated code on the object decoded straight from its text
//!   ([`SchemaChecks::typed_schema_defaults`]); where that cannot, to the JSON as sent before
//!   one typed decode ([`SchemaChecks::openapi_schema`]), rather than decoding, then
//!   `apply_defaults()`'s trip through JSON and back.
//! - A defaulting answer carries the JSON patch (RFC 6902, the `json-patch` crate) from the
//!   object as sent to the mutated object as encoded, less removals the typed decode made by
//!   itself (controller-runtime's `dropSchemeRemovals`). Where the object decoded re-encodes
//!   as the very text sent (checked as it encodes, allocating nothing), the patch is written
//!   by the generated code comparing the typed objects before and after the hooks
//!   ([`SchemaChecks::typed_patch`]); elsewhere it is diffed on the two texts.
//! - Errors are answered as controller-runtime answers them: a [`ValidationErrors`] (or any
//!   `Status`) as it is (`validationResponseFromStatus`: 422 `Invalid` with its causes, the
//!   message `<Kind>.<group> "<name>" is invalid: ...`), a plain message as `Denied` (403
//!   `Forbidden`); a review that does not decode, an object of another kind or version, a
//!   missing object or an unknown operation as `Errored(400)`; a panicking hook as
//!   `Errored(500, "panic: ... [recovered]")`. Always HTTP 200 with an `AdmissionReview` in the
//!   request's version (v1, or v1beta1), with the request's `uid`.
//! - `DELETE` reaches a defaulter never (allowed, as controller-runtime) and a validator with
//!   `oldObject`; `CONNECT` is allowed by validators unchecked.
//! - [`configurations`] writes the `MutatingWebhookConfiguration` and
//!   `ValidatingWebhookConfiguration` for the webhooks served, as controller-gen writes them
//!   from kubebuilder markers.
//!
//! Hooks are synchronous (controller-runtime's take a context and may call the API; read an
//! informer's cache here, which needs no await).

use std::marker::PhantomData;
use std::panic::{AssertUnwindSafe, catch_unwind};

use bytes::Bytes;
use futures::future::BoxFuture;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::core::Status;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use serde_json::value::RawValue;

use super::{BadReview, ReviewHandler};
pub use crate::validation::{SchemaChecks, ValidationErrors};

mod config;
mod fields;
mod patch;
mod review;

pub use config::{ClientConfig, ConfigOptions, configurations};
pub use fields::FieldErrors;
pub use kube_codegen_crd::Cause;
/// apimachinery's name checks with their messages (`dns1123_label`, `dns1123_subdomain`,
/// `qualified_name`, ...), for validators.
pub use kube_codegen_crd::k8s_validation;
pub use review::{AdmissionRequest, GroupVersionKind, GroupVersionResource, Operation};
use review::{Answer, failure};

/// What a kind needs to be admitted: a typed Kubernetes object with [`SchemaChecks`].
pub trait AdmissionKind:
    k8s_openapi::Resource
    + k8s_openapi::Metadata<Ty = ObjectMeta>
    + Serialize
    + DeserializeOwned
    + SchemaChecks
    + Send
    + Sync
    + 'static
{
}

impl<K> AdmissionKind for K where
    K: k8s_openapi::Resource
        + k8s_openapi::Metadata<Ty = ObjectMeta>
        + Serialize
        + DeserializeOwned
        + SchemaChecks
        + Send
        + Sync
        + 'static
{
}

/// Why a hook refuses: answered as controller-runtime answers the hook's error.
#[derive(Debug, Clone, PartialEq)]
pub enum AdmissionError {
    /// A plain message: `Denied(message)`, code 403, reason `Forbidden`.
    Denied(String),
    /// A status answered as it is (Go's `apierrors.APIStatus`): field errors give kube-apiserver's
    /// 422 `Invalid` with its causes.
    Status(Box<Status>),
}

impl From<ValidationErrors> for AdmissionError {
    fn from(e: ValidationErrors) -> Self {
        AdmissionError::Status(Box::new(e.status()))
    }
}

impl From<Status> for AdmissionError {
    fn from(s: Status) -> Self {
        AdmissionError::Status(Box::new(s))
    }
}

impl From<String> for AdmissionError {
    fn from(s: String) -> Self {
        AdmissionError::Denied(s)
    }
}

impl From<&str> for AdmissionError {
    fn from(s: &str) -> Self {
        AdmissionError::Denied(s.to_owned())
    }
}

impl AdmissionError {
    fn answer(self) -> Answer {
        match self {
            AdmissionError::Denied(m) => Answer::denied(&m),
            AdmissionError::Status(s) => Answer::from_status(failure(s)),
        }
    }
}

/// A validator's answer: warnings (returned to the client as `Warning` headers) and, when it
/// refuses, why. Warnings go with a refusal too.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Verdict {
    /// Warnings for the client.
    pub warnings: Vec<String>,
    /// The refusal, if any.
    pub error: Option<AdmissionError>,
}

impl Verdict {
    /// Allowed, no warnings.
    pub fn allow() -> Verdict {
        Verdict::default()
    }

    /// Refused.
    pub fn deny(error: impl Into<AdmissionError>) -> Verdict {
        Verdict {
            warnings: Vec::new(),
            error: Some(error.into()),
        }
    }

    /// Adds a warning.
    pub fn warn(mut self, warning: impl Into<String>) -> Verdict {
        self.warnings.push(warning.into());
        self
    }
}

impl<E: Into<AdmissionError>> From<Result<(), E>> for Verdict {
    fn from(r: Result<(), E>) -> Verdict {
        match r {
            Ok(()) => Verdict::allow(),
            Err(e) => Verdict::deny(e),
        }
    }
}

/// Sets defaults on objects of kind `K` (controller-runtime's `CustomDefaulter`). A closure
/// `Fn(&AdmissionRequest, &mut K) -> Result<(), AdmissionError>` is one.
pub trait Defaulter<K>: Send + Sync + 'static {
    /// Mutates `obj` in place; the answer's patch is computed from the change.
    fn default(&self, request: &AdmissionRequest, obj: &mut K) -> Result<(), AdmissionError>;
}

impl<K, F> Defaulter<K> for F
where
    F: Fn(&AdmissionRequest, &mut K) -> Result<(), AdmissionError> + Send + Sync + 'static,
{
    fn default(&self, request: &AdmissionRequest, obj: &mut K) -> Result<(), AdmissionError> {
        self(request, obj)
    }
}

/// A defaulter that adds nothing to the schema's defaults.
#[derive(Debug, Clone, Copy, Default)]
pub struct SchemaDefaultsOnly;

impl<K> Defaulter<K> for SchemaDefaultsOnly {
    fn default(&self, _: &AdmissionRequest, _: &mut K) -> Result<(), AdmissionError> {
        Ok(())
    }
}

/// Validates objects of kind `K` (controller-runtime's `CustomValidator`). Each method allows by
/// default.
pub trait Validator<K>: Send + Sync + 'static {
    /// A create of `obj`.
    fn validate_create(&self, request: &AdmissionRequest, obj: &K) -> Verdict {
        let _ = (request, obj);
        Verdict::allow()
    }
    /// An update from `old` to `obj`.
    fn validate_update(&self, request: &AdmissionRequest, old: &K, obj: &K) -> Verdict {
        let _ = (request, old, obj);
        Verdict::allow()
    }
    /// A delete of `obj` (the stored object, `oldObject`); called only when the webhook is
    /// registered for `DELETE` ([`Validating::on_delete`]) or the server sends one anyway.
    fn validate_delete(&self, request: &AdmissionRequest, obj: &K) -> Verdict {
        let _ = (request, obj);
        Verdict::allow()
    }
}

/// A validator that adds nothing to the schema's checks.
#[derive(Debug, Clone, Copy, Default)]
pub struct SchemaChecksOnly;

impl<K> Validator<K> for SchemaChecksOnly {}

/// controller-runtime's path of a mutating webhook: `/mutate-<group, dots as dashes>-<version>-<kind, lower case>`
/// (`/mutate--v1-pod` for the core group).
pub fn mutate_path(group: &str, version: &str, kind: &str) -> String {
    format!(
        "/mutate-{}-{version}-{}",
        group.replace('.', "-"),
        kind.to_lowercase()
    )
}

/// controller-runtime's path of a validating webhook: `/validate-<group, dots as dashes>-<version>-<kind>`.
pub fn validate_path(group: &str, version: &str, kind: &str) -> String {
    format!(
        "/validate-{}-{version}-{}",
        group.replace('.', "-"),
        kind.to_lowercase()
    )
}

/// What a served admission webhook is, for its configuration.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Registration {
    /// Mutating (defaulting) or validating.
    pub mutating: bool,
    /// The path served.
    pub path: String,
    /// The kind's API group.
    pub group: String,
    /// The version the webhook decodes (the server converts other versions to it:
    /// `matchPolicy: Equivalent`).
    pub version: String,
    /// The kind.
    pub kind: String,
    /// The resource (plural).
    pub plural: String,
    /// The operations it is registered for.
    pub operations: Vec<Operation>,
}

/// An admission webhook: a [`ReviewHandler`] that knows its path and configuration.
pub trait AdmissionWebhook: ReviewHandler {
    /// Its path and rules.
    fn registration(&self) -> Registration;
}

fn registration<K: AdmissionKind>(
    mutating: bool,
    path: &str,
    operations: Vec<Operation>,
) -> Registration {
    Registration {
        mutating,
        path: path.to_owned(),
        group: K::GROUP.to_owned(),
        version: K::VERSION.to_owned(),
        kind: K::KIND.to_owned(),
        plural: K::URL_PATH_SEGMENT.to_owned(),
        operations,
    }
}

/// The defaulting webhook of kind `K`; see [`defaulting`].
pub struct Defaulting<K> {
    defaulter: Box<dyn Defaulter<K>>,
    schema: bool,
    path: String,
    _kind: PhantomData<fn() -> K>,
}

impl<K> std::fmt::Debug for Defaulting<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Defaulting")
            .field("path", &self.path)
            .field("schema", &self.schema)
            .finish_non_exhaustive()
    }
}

/// The defaulting webhook of kind `K`: the schema's defaults, then `defaulter`, at
/// [`mutate_path`] of `K`.
pub fn defaulting<K: AdmissionKind>(defaulter: impl Defaulter<K>) -> Defaulting<K> {
    Defaulting {
        defaulter: Box::new(defaulter),
        schema: true,
        path: mutate_path(K::GROUP, K::VERSION, K::KIND),
        _kind: PhantomData,
    }
}

impl<K: AdmissionKind> Defaulting<K> {
    /// Skips the generated `apply_defaults()` (the API server applies the schema's defaults
    /// after the mutating webhooks anyway).
    pub fn without_schema_defaults(mut self) -> Self {
        self.schema = false;
        self
    }

    /// Serves at `path` instead of controller-runtime's.
    pub fn at(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The path served.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Answers a review body (what [`ReviewHandler::review`] does, without the future).
    pub fn review_json(&self, body: &[u8]) -> Vec<u8> {
        answer(body, |request, object, _| self.admit(request, object))
    }

    fn admit(&self, request: &AdmissionRequest, object: Option<&RawValue>) -> Answer {
        if request.operation == Operation::Delete {
            return Answer::allowed();
        }
        // What the patch is computed against: the object's text as sent.
        let sent_text = object.map_or("", RawValue::get);
        let (mut obj, before) = match self.decoded(object) {
            Ok(decoded) => decoded,
            Err(a) => return a,
        };
        match guarded(|| self.defaulter.default(request, &mut obj)) {
            Ok(Ok(())) => {}
            Ok(Err(refused)) => return refused.answer(),
            Err(panicked) => return panicked,
        }
        if let Some(before) = before
            && let Some(ops) = K::typed_patch(&before, &obj)
        {
            return patched(json_patch::Patch(ops));
        }
        let mutated = match serde_json::to_string(&obj) {
            Ok(v) => v,
            Err(e) => return Answer::errored(500, e.to_string()),
        };
        drop(obj);
        let round_trip = || {
            let again: K = serde_json::from_str(sent_text).map_err(|e| e.to_string())?;
            serde_json::to_string(&again).map_err(|e| e.to_string())
        };
        match patch::patch(sent_text, &mutated, round_trip) {
            Ok(ops) => patched(ops),
            Err(e) => Answer::errored(500, e),
        }
    }
}

impl<K: AdmissionKind> Defaulting<K> {
    /// The object sent, decoded, with the schema's defaults when they are on; and, when the
    /// patch can be diffed on the typed objects ([`SchemaChecks::typed_patch`]), the object as
    /// decoded, before any default.
    fn decoded(&self, object: Option<&RawValue>) -> Result<(K, Option<K>), Answer> {
        // Straight from the text, defaulted by the generated code: no JSON tree. Anything
        // that path cannot do (a head or body that does not decode, a default the typed
        // object cannot place) is done again by the JSON path below, which also words the
        // errors.
        if let Some(raw) = object
            && head_is::<K>(raw.get())
            && let Ok(mut obj) = serde_json::from_str::<K>(raw.get())
        {
            // controller-runtime diffs the text sent against the mutated object encoded: the
            // typed diff says the same only when the decode kept the text as it was (no
            // unknown field dropped, no `null` or number rewritten, keys in the type's order).
            let before = if patch::encodes_as(&obj, raw.get()) {
                obj.typed_patch_base()
            } else {
                None
            };
            if !self.schema {
                return Ok((obj, before));
            }
            if guarded(|| obj.typed_schema_defaults())? {
                return Ok((obj, before));
            }
        }
        let mut sent = parse::<K>(object)?;
        let schema = if self.schema {
            K::openapi_schema()
        } else {
            None
        };
        let decoded = match schema {
            // The schema's defaults on the sent JSON, then the one typed decode: the object
            // `apply_defaults()` gives (which goes typed -> JSON -> typed), without its trip.
            Some(schema) => guarded(|| {
                schema.schema().apply_defaults(&mut sent);
                K::deserialize(sent).or_else(|_| {
                    // A default the type cannot hold: no defaults, as `apply_defaults()`.
                    let sent = parse::<K>(object)?;
                    typed::<K>(sent)
                })
            }),
            None => guarded(|| {
                let mut obj = typed::<K>(sent)?;
                if self.schema {
                    obj.schema_defaults();
                }
                Ok(obj)
            }),
        };
        Ok((decoded??, None))
    }
}

/// Allowed, with `ops` as the patch when there are any.
fn patched(ops: json_patch::Patch) -> Answer {
    let mut a = Answer::allowed();
    if !ops.0.is_empty() {
        a.patch = serde_json::to_vec(&ops).ok();
    }
    a
}

impl<K: AdmissionKind> ReviewHandler for Defaulting<K> {
    fn review(&self, body: Bytes) -> BoxFuture<'_, Result<Vec<u8>, BadReview>> {
        Box::pin(std::future::ready(Ok(self.review_json(&body))))
    }
}

impl<K: AdmissionKind> AdmissionWebhook for Defaulting<K> {
    fn registration(&self) -> Registration {
        registration::<K>(true, &self.path, vec![Operation::Create, Operation::Update])
    }
}

/// The validating webhook of kind `K`; see [`validating`].
pub struct Validating<K> {
    validator: Box<dyn Validator<K>>,
    schema: bool,
    delete: bool,
    path: String,
    _kind: PhantomData<fn() -> K>,
}

impl<K> std::fmt::Debug for Validating<K> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Validating")
            .field("path", &self.path)
            .field("schema", &self.schema)
            .field("delete", &self.delete)
            .finish_non_exhaustive()
    }
}

/// The validating webhook of kind `K`: the schema's checks, then `validator`, at
/// [`validate_path`] of `K`.
pub fn validating<K: AdmissionKind>(validator: impl Validator<K>) -> Validating<K> {
    Validating {
        validator: Box::new(validator),
        schema: true,
        delete: false,
        path: validate_path(K::GROUP, K::VERSION, K::KIND),
        _kind: PhantomData,
    }
}

impl<K: AdmissionKind> Validating<K> {
    /// Skips the generated `validate()` / `validate_update()`.
    pub fn without_schema_checks(mut self) -> Self {
        self.schema = false;
        self
    }

    /// Registers the webhook for `DELETE` too (its configuration's operations).
    pub fn on_delete(mut self) -> Self {
        self.delete = true;
        self
    }

    /// Serves at `path` instead of controller-runtime's.
    pub fn at(mut self, path: impl Into<String>) -> Self {
        self.path = path.into();
        self
    }

    /// The path served.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Answers a review body (what [`ReviewHandler::review`] does, without the future).
    pub fn review_json(&self, body: &[u8]) -> Vec<u8> {
        answer(body, |request, object, old| {
            self.admit(request, object, old)
        })
    }

    fn admit(
        &self,
        request: &AdmissionRequest,
        object: Option<&RawValue>,
        old_object: Option<&RawValue>,
    ) -> Answer {
        let v = &*self.validator;
        let verdict = match request.operation {
            Operation::Connect => return Answer::allowed(),
            Operation::Create => {
                let obj = match decode::<K>(object) {
                    Ok(o) => o,
                    Err(a) => return a,
                };
                guarded(|| {
                    if self.schema
                        && let Err(e) = obj.schema_validate()
                    {
                        return Verdict::deny(e);
                    }
                    v.validate_create(request, &obj)
                })
            }
            Operation::Update => {
                let obj = match decode::<K>(object) {
                    Ok(o) => o,
                    Err(a) => return a,
                };
                let old = match decode::<K>(old_object) {
                    Ok(o) => o,
                    Err(a) => return a,
                };
                guarded(|| {
                    if self.schema
                        && let Err(e) = obj.schema_validate_update(&old)
                    {
                        return Verdict::deny(e);
                    }
                    v.validate_update(request, &old, &obj)
                })
            }
            Operation::Delete => {
                let old = match decode::<K>(old_object) {
                    Ok(o) => o,
                    Err(a) => return a,
                };
                guarded(|| v.validate_delete(request, &old))
            }
        };
        match verdict {
            Err(panic) => panic,
            Ok(Verdict {
                warnings,
                error: None,
            }) => Answer::allowed().with_warnings(warnings),
            Ok(Verdict {
                warnings,
                error: Some(e),
            }) => e.answer().with_warnings(warnings),
        }
    }
}

impl<K: AdmissionKind> ReviewHandler for Validating<K> {
    fn review(&self, body: Bytes) -> BoxFuture<'_, Result<Vec<u8>, BadReview>> {
        Box::pin(std::future::ready(Ok(self.review_json(&body))))
    }
}

impl<K: AdmissionKind> AdmissionWebhook for Validating<K> {
    fn registration(&self) -> Registration {
        let mut ops = vec![Operation::Create, Operation::Update];
        if self.delete {
            ops.push(Operation::Delete);
        }
        registration::<K>(false, &self.path, ops)
    }
}

/// Decodes the review, runs `admit` on its request and writes the answer.
fn answer(
    body: &[u8],
    admit: impl FnOnce(&AdmissionRequest, Option<&RawValue>, Option<&RawValue>) -> Answer,
) -> Vec<u8> {
    let (review, api_version) = match review::decode(body) {
        Ok(r) => r,
        Err(e) => return Answer::errored(400, e).encode("admission.k8s.io/v1", ""),
    };
    let Some(request) = review.request else {
        return Answer::errored(400, "the AdmissionReview has no request").encode(api_version, "");
    };
    let uid = request.uid().to_owned();
    let (object, old_object) = (request.object, request.old_object);
    let answer = match request.split() {
        Ok(request) => admit(&request, object, old_object),
        Err(e) => Answer::errored(400, e),
    };
    answer.encode(api_version, &uid)
}

/// The object sent, as `K`; an `Errored(400)` answer when it is missing, of another
/// kind or version, or does not decode as `K` (what controller-runtime's decoder refuses).
fn decode<K: AdmissionKind>(raw: Option<&RawValue>) -> Result<K, Answer> {
    // Straight from the text when it is plainly a `K`; the JSON path words any refusal.
    if let Some(raw) = raw
        && head_is::<K>(raw.get())
        && let Ok(obj) = serde_json::from_str::<K>(raw.get())
    {
        return Ok(obj);
    }
    typed::<K>(parse::<K>(raw)?)
}

/// The object sent, as JSON, checked to be a `K` by its `apiVersion` and `kind`.
fn parse<K: AdmissionKind>(raw: Option<&RawValue>) -> Result<Value, Answer> {
    let raw = match raw {
        Some(r) if r.get() != "null" => r,
        _ => return Err(Answer::errored(400, "there is no content to decode")),
    };
    let sent: Value = serde_json::from_str(raw.get()).map_err(|e| {
        Answer::errored(
            400,
            format!("couldn't get version/kind; json parse error: {e}"),
        )
    })?;
    let Some(map) = sent.as_object() else {
        return Err(Answer::errored(
            400,
            "couldn't get version/kind; json parse error: the object is not a JSON object",
        ));
    };
    let text = |k: &str| map.get(k).and_then(Value::as_str).unwrap_or("");
    let (api_version, kind) = (text("apiVersion"), text("kind"));
    if kind.is_empty() {
        return Err(Answer::errored(
            400,
            format!("Object 'Kind' is missing in '{}'", raw.get()),
        ));
    }
    if api_version.is_empty() {
        return Err(Answer::errored(
            400,
            format!("Object 'apiVersion' is missing in '{}'", raw.get()),
        ));
    }
    if api_version != K::API_VERSION || kind != K::KIND {
        return Err(Answer::errored(
            400,
            format!(
                "unable to decode {}, Kind={kind} into {}, Kind={}",
                api_version,
                K::API_VERSION,
                K::KIND
            ),
        ));
    }
    Ok(sent)
}

/// Whether the object's text says it is a `K` (`apiVersion` and `kind` strings that are
/// `K`'s), read without building the object; `false` also when the text does not say so
/// plainly (other types), left to [`parse`] to word. Members are read until both are seen (an
/// API server writes them first), the rest left unread: the typed decode that follows reads it
/// all, and refuses a repeated `apiVersion` or `kind`.
fn head_is<K: AdmissionKind>(text: &str) -> bool {
    use serde::de::{Deserializer as _, IgnoredAny, MapAccess, Visitor};
    use std::borrow::Cow;

    /// What was seen: (`apiVersion` is `K`'s, `kind` is `K`'s), each `None` until read.
    struct Head<'s, K>(&'s mut (Option<bool>, Option<bool>), PhantomData<K>);

    impl<'de, K: AdmissionKind> Visitor<'de> for Head<'_, K> {
        type Value = ();

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object")
        }

        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
            while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                match &*key {
                    "apiVersion" => {
                        self.0.0 = Some(map.next_value::<Cow<'de, str>>()? == K::API_VERSION);
                    }
                    "kind" => self.0.1 = Some(map.next_value::<Cow<'de, str>>()? == K::KIND),
                    _ => {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                if self.0.0.is_some() && self.0.1.is_some() {
                    // Stopping here makes the deserializer report the unread rest as an
                    // error, which is not one: what was seen is the answer.
                    return Ok(());
                }
            }
            Ok(())
        }
    }

    let mut seen = (None, None);
    let mut de = serde_json::Deserializer::from_str(text);
    let _ = de.deserialize_map(Head::<K>(&mut seen, PhantomData));
    seen == (Some(true), Some(true))
}

/// `sent` decoded as `K` (by value: its strings are moved, not copied).
fn typed<K: AdmissionKind>(sent: Value) -> Result<K, Answer> {
    K::deserialize(sent)
        .map_err(|e| Answer::errored(400, format!("unable to decode the {} object: {e}", K::KIND)))
}

/// Runs a hook, turning a panic into controller-runtime's recovered answer (500).
fn guarded<T>(hook: impl FnOnce() -> T) -> Result<T, Answer> {
    catch_unwind(AssertUnwindSafe(hook)).map_err(|panic| {
        let message = panic
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-string panic payload".to_owned());
        Answer::errored(500, format!("panic: {message} [recovered]"))
    })
}
