//! Client-side validation of custom resources against their CRD version's `openAPIV3Schema`,
//! with the same validator the in-memory API server admits writes through
//! ([`kube_codegen_crd::object`]): OpenAPI value checks, a scale subresource's paths
//! ([`LazySchema::with_scale`]), list types, the
//! `x-kubernetes-validations` CEL rules (transition rules and ratcheting on update) and
//! defaulting. A [`ValidationErrors`] holds the causes a real server would put in its 422
//! `Invalid` answer, in its words, so a controller can refuse a bad object before a round trip.
//!
//! Generated code embeds each kind version's schema in a [`LazySchema`] static and calls
//! [`validate`], [`validate_update`] and [`apply_defaults`] from its `Foo::validate`,
//! `Foo::validate_update` and `Foo::apply_defaults`. The schema is compiled (its CEL rules
//! included) once per type, on first use, by whichever thread gets there first.
//!
//! The object is checked as the server checks a write: serialized to JSON, numbers normalized
//! as the server's JSON round trip does, pruned of fields the schema does not declare and
//! defaulted, all on a copy; the object itself is never changed by validation.
#![deny(missing_docs)]

use std::fmt;
use std::sync::OnceLock;

use kube::core::Status;
use kube::core::response::{StatusCause, StatusDetails, StatusSummary};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

pub use kube_codegen_crd::Cause;
pub use kube_codegen_crd::object::ObjectSchema;

/// The reason of the cause reported when an object cannot be checked at all (it does not
/// serialize to JSON, or the embedded schema is not JSON): Go's `field.ErrorTypeInternal`.
pub const INTERNAL_ERROR: &str = "InternalError";

/// A CRD version's `openAPIV3Schema`, embedded as JSON text and compiled on first use.
///
/// Generated code holds one per kind version in a `static`; compiling (parsing the JSON and
/// every CEL rule) happens once, thread-safely, the first time any object of the kind is
/// validated or defaulted, so a program that never validates pays nothing.
///
/// If the text is not valid JSON (generated code always embeds valid JSON; this is for a
/// hand-written `LazySchema`), the schema compiles as the empty schema `{}`, so
/// [`apply_defaults`] changes nothing, and [`validate`] and [`validate_update`] answer with one
/// [`INTERNAL_ERROR`] cause naming the parse error: a schema that cannot be read must not let
/// every object through unchecked.
pub struct LazySchema {
    json: &'static str,
    group: &'static str,
    kind: &'static str,
    /// The version's scale subresource: spec replicas, status replicas and label selector paths.
    scale: Option<(&'static str, &'static str, Option<&'static str>)>,
    compiled: OnceLock<Compiled>,
}

/// A compiled schema and, when the JSON did not parse, why (the schema is then `{}`).
struct Compiled {
    schema: ObjectSchema,
    error: Option<String>,
}

impl LazySchema {
    /// A schema for objects of `kind` in API group `group` (empty for the core group), from a
    /// CRD version's `openAPIV3Schema` as JSON text. Nothing is parsed until first use.
    pub const fn new(schema_json: &'static str, group: &'static str, kind: &'static str) -> Self {
        LazySchema {
            json: schema_json,
            group,
            kind,
            scale: None,
            compiled: OnceLock::new(),
        }
    }

    /// [`LazySchema::new`] for a version with a scale subresource (`specReplicasPath`,
    /// `statusReplicasPath`, `labelSelectorPath`): validation also checks the values at those
    /// paths, as the API server does on every write (an integer from 0 to 2^31-1; a string).
    pub const fn with_scale(
        schema_json: &'static str,
        group: &'static str,
        kind: &'static str,
        spec_replicas_path: &'static str,
        status_replicas_path: &'static str,
        label_selector_path: Option<&'static str>,
    ) -> Self {
        LazySchema {
            json: schema_json,
            group,
            kind,
            scale: Some((
                spec_replicas_path,
                status_replicas_path,
                label_selector_path,
            )),
            compiled: OnceLock::new(),
        }
    }

    /// The compiled schema (compiled now if this is the first use).
    pub fn schema(&self) -> &ObjectSchema {
        &self.compiled().schema
    }

    /// The embedded JSON text.
    pub fn json(&self) -> &'static str {
        self.json
    }

    /// The API group (empty for the core group).
    pub fn group(&self) -> &'static str {
        self.group
    }

    /// The kind, e.g. `CronTab`.
    pub fn kind(&self) -> &'static str {
        self.kind
    }

    /// Why the embedded JSON did not parse, if it did not (the schema is then `{}`).
    pub fn parse_error(&self) -> Option<&str> {
        self.compiled().error.as_deref()
    }

    fn scale_paths(&self) -> Option<kube_codegen_crd::Scale> {
        self.scale
            .map(|(spec, status, selector)| kube_codegen_crd::Scale {
                spec_replicas_path: spec.to_owned(),
                status_replicas_path: status.to_owned(),
                label_selector_path: selector.map(str::to_owned),
            })
    }

    fn compiled(&self) -> &Compiled {
        self.compiled
            .get_or_init(|| match serde_json::from_str::<Value>(self.json) {
                Ok(schema) => Compiled {
                    schema: ObjectSchema::new(schema).with_scale(self.scale_paths()),
                    error: None,
                },
                Err(e) => Compiled {
                    schema: ObjectSchema::new(Value::Object(Default::default())),
                    error: Some(format!(
                        "the embedded openAPIV3Schema of {} is not valid JSON: {e}",
                        qualified_kind(self.group, self.kind)
                    )),
                },
            })
    }
}

impl fmt::Debug for LazySchema {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LazySchema")
            .field("group", &self.group)
            .field("kind", &self.kind)
            .field("compiled", &self.compiled.get().is_some())
            .finish_non_exhaustive()
    }
}

/// `Kind.group`, or `Kind` for the core group: how the server names a kind in a 422 message.
fn qualified_kind(group: &str, kind: &str) -> String {
    if group.is_empty() {
        kind.to_owned()
    } else {
        format!("{kind}.{group}")
    }
}

/// Why the API server would refuse an object: the causes of its 422 `Invalid` answer, with the
/// kind and name the answer is about.
///
/// `Display` prints what kubectl prints for that answer (`The CronTab "a" is invalid:
/// spec.replicas: Invalid value: ...`; one `* field: message` line per cause when there are
/// several). [`ValidationErrors::status`] is the `Status` the server would answer, and the
/// `From` impl turns it into the `kube::Error::Api` a failed write would have returned, so
/// callers can handle a local refusal and a server's alike.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValidationErrors {
    group: String,
    kind: String,
    name: String,
    causes: Vec<Cause>,
}

impl ValidationErrors {
    /// Errors about the object `name` of `kind` in API group `group` (empty for the core
    /// group).
    pub fn new(group: &str, kind: &str, name: &str, causes: Vec<Cause>) -> Self {
        ValidationErrors {
            group: group.to_owned(),
            kind: kind.to_owned(),
            name: name.to_owned(),
            causes,
        }
    }

    /// The causes, in the server's order and words (`Status.details.causes`).
    pub fn causes(&self) -> &[Cause] {
        &self.causes
    }

    /// The causes, owned.
    pub fn into_causes(self) -> Vec<Cause> {
        self.causes
    }

    /// `metadata.name` of the object (empty when it has none).
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The kind, e.g. `CronTab`.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    /// The API group (empty for the core group).
    pub fn group(&self) -> &str {
        &self.group
    }

    /// `Kind.group` (`Kind` for the core group), as the server's message names the kind.
    pub fn qualified_kind(&self) -> String {
        qualified_kind(&self.group, &self.kind)
    }

    /// The `Status` of the server's 422 answer for these causes: `Failure`, reason `Invalid`,
    /// the server's message ([`kube_codegen_crd::invalid_message`]) and details naming the
    /// object with every cause.
    pub fn status(&self) -> Status {
        Status {
            status: Some(StatusSummary::Failure),
            code: 422,
            message: kube_codegen_crd::invalid_message(
                &self.qualified_kind(),
                &self.name,
                &self.causes,
            ),
            // The server always sends `"metadata": {}`.
            metadata: Some(Default::default()),
            reason: "Invalid".to_owned(),
            details: Some(StatusDetails {
                name: self.name.clone(),
                group: self.group.clone(),
                kind: self.kind.clone(),
                uid: String::new(),
                causes: self
                    .causes
                    .iter()
                    .map(|c| StatusCause {
                        reason: c.reason.clone(),
                        message: c.message.clone(),
                        field: c.field.clone(),
                    })
                    .collect(),
                retry_after_seconds: 0,
            }),
        }
    }
}

impl fmt::Display for ValidationErrors {
    /// kubectl's rendering of a 422 (`cmdutil.CheckErr`): `The <Kind> "<name>" is invalid`,
    /// then `: <field>: <message>` for one cause, or `: ` and one `\n* <field>: <message>` line
    /// per cause for several; a repeated `<field>: <message>` is printed once, as kubectl does.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "The {} {} is invalid",
            self.kind,
            kube_codegen_crd::gofmt::go_quote(&self.name)
        )?;
        let mut lines: Vec<String> = Vec::with_capacity(self.causes.len());
        for c in &self.causes {
            let line = format!("{}: {}", c.field, c.message);
            if !lines.contains(&line) {
                lines.push(line);
            }
        }
        match lines.as_slice() {
            [] => Ok(()),
            [one] => write!(f, ": {one}"),
            many => {
                f.write_str(": ")?;
                for line in many {
                    write!(f, "\n* {line}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for ValidationErrors {}

impl From<ValidationErrors> for kube::Error {
    /// `kube::Error::Api` with [`ValidationErrors::status`], what the failed write would have
    /// returned.
    fn from(e: ValidationErrors) -> kube::Error {
        kube::Error::Api(Box::new(e.status()))
    }
}

/// The generated checks of a kind: what the runtime's admission webhooks
/// (`webhook::admission::defaulting` / `validating`) run before the user's hooks.
///
/// kube-codegen implements it (`--emit validation`) for every generated root type over its
/// `apply_defaults()`, `validate()` and `validate_update()` and its embedded schema. A
/// hand-written type implements it by hand, or with an empty `impl SchemaChecks for T {}`
/// (no defaults, every check passes).
pub trait SchemaChecks {
    /// The kind version's schema, when the type has one: a defaulting webhook then applies its
    /// defaults to the object's JSON as sent, before the one typed decode, instead of calling
    /// [`SchemaChecks::schema_defaults`] on the decoded object (which goes through JSON and
    /// back). Both give the same object; `None` (the default) means the method is used.
    fn openapi_schema() -> Option<&'static LazySchema>
    where
        Self: Sized,
    {
        None
    }
    /// The schema's defaults (generated `apply_defaults()`).
    fn schema_defaults(&mut self) {}
    /// The schema's defaults applied to the typed object by generated code, with no JSON on
    /// the way: the object [`SchemaChecks::schema_defaults`] gives, when `true`. `false` (the
    /// default) when the typed object cannot say what the JSON path would do (a required
    /// nullable field that is `None`: absent or `null`?; a default that does not decode;
    /// defaults below a field kept as JSON): the object may then be partly defaulted, and the
    /// caller starts again from the JSON path.
    fn typed_schema_defaults(&mut self) -> bool {
        false
    }
    /// A copy of the object to compute [`SchemaChecks::typed_patch`] from later, when the type
    /// has a generated one (kube-codegen's types: `Some(self.clone())`); `None` otherwise.
    fn typed_patch_base(&self) -> Option<Self>
    where
        Self: Sized,
    {
        None
    }
    /// The JSON patch from `before` to `after`, written field by field by generated code
    /// ([`crate::typed_patch`]); `None` when the type has none, or a value did not encode.
    fn typed_patch(before: &Self, after: &Self) -> Option<Vec<crate::typed_patch::PatchOperation>>
    where
        Self: Sized,
    {
        let _ = (before, after);
        None
    }
    /// The schema's checks on create (generated `validate()`).
    fn schema_validate(&self) -> Result<(), ValidationErrors> {
        Ok(())
    }
    /// The schema's checks on update, with transition rules and ratcheting (generated
    /// `validate_update()`).
    fn schema_validate_update(&self, old: &Self) -> Result<(), ValidationErrors> {
        let _ = old;
        Ok(())
    }
}

/// An object as the server validates it: JSON, numbers through the server's round trip,
/// pruned and defaulted. `Err` with the cause when it does not serialize.
fn prepared<T: Serialize>(obj: &T, schema: &ObjectSchema) -> Result<Value, Cause> {
    let mut v = serde_json::to_value(obj).map_err(|e| {
        Cause::new(
            INTERNAL_ERROR,
            "<nil>",
            format!("Internal error: the object does not serialize to JSON: {e}"),
        )
    })?;
    schema.as_stored(&mut v);
    Ok(v)
}

fn name_of(v: &Value) -> &str {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
}

fn errors(schema: &LazySchema, name: &str, causes: Vec<Cause>) -> ValidationErrors {
    ValidationErrors::new(schema.group, schema.kind, name, causes)
}

/// What validating against a schema that did not parse answers (see [`LazySchema`]).
fn unreadable(schema: &LazySchema) -> Option<Vec<Cause>> {
    schema.parse_error().map(|e| {
        vec![Cause::new(
            INTERNAL_ERROR,
            "<nil>",
            format!("Internal error: {e}"),
        )]
    })
}

/// Checks `obj` as the API server checks it on create: the schema's value checks, list types
/// and `x-kubernetes-validations` rules (transition rules, which need the old object, are not
/// run). The object is checked pruned and defaulted, as the server sees it, on a copy.
pub fn validate<T: Serialize>(obj: &T, schema: &LazySchema) -> Result<(), ValidationErrors> {
    let compiled = schema.schema();
    let v = prepared(obj, compiled).map_err(|c| errors(schema, "", vec![c]))?;
    let causes = unreadable(schema).unwrap_or_else(|| compiled.validate(&v));
    if causes.is_empty() {
        Ok(())
    } else {
        Err(errors(schema, name_of(&v), causes))
    }
}

/// Checks an update of `old` to `obj` as the API server does: transition rules (`oldSelf`)
/// run, and a value equal to its old counterpart is not checked again (validation ratcheting),
/// so an object that was stored before a rule tightened can still be updated elsewhere.
pub fn validate_update<T: Serialize>(
    obj: &T,
    old: &T,
    schema: &LazySchema,
) -> Result<(), ValidationErrors> {
    let compiled = schema.schema();
    let v = prepared(obj, compiled).map_err(|c| errors(schema, "", vec![c]))?;
    let old = prepared(old, compiled).map_err(|c| errors(schema, name_of(&v), vec![c]))?;
    let causes = unreadable(schema).unwrap_or_else(|| compiled.validate_update(&v, &old));
    if causes.is_empty() {
        Ok(())
    } else {
        Err(errors(schema, name_of(&v), causes))
    }
}

/// Fills the schema's `default`s into `obj` where the server would (a missing field, or an
/// explicit `null` of a field that is not nullable), through its JSON form.
///
/// If the defaulted JSON does not deserialize back into `T` (a default the generated type
/// cannot hold), or `obj` does not serialize, `obj` is left unchanged: a half-defaulted object
/// would be neither what the caller built nor what the server stores, and the server applies
/// the defaults anyway when the object is written.
pub fn apply_defaults<T: Serialize + DeserializeOwned>(obj: &mut T, schema: &LazySchema) {
    let Ok(mut v) = serde_json::to_value(&*obj) else {
        return;
    };
    schema.schema().apply_defaults(&mut v);
    if let Ok(defaulted) = serde_json::from_value(v) {
        *obj = defaulted;
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};

    use super::*;

    /// A cut-down generated type: optional fields skipped when `None`.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Job {
        #[serde(default, skip_serializing_if = "String::is_empty")]
        api_version: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        kind: String,
        #[serde(default)]
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        #[serde(skip_serializing_if = "Option::is_none")]
        spec: Option<JobSpec>,
    }

    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct JobSpec {
        #[serde(skip_serializing_if = "Option::is_none")]
        image: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        min: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        max: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        tag: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        id: Option<String>,
        #[serde(skip_serializing_if = "Option::is_none")]
        retry: Option<Retry>,
    }

    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Retry {
        #[serde(skip_serializing_if = "Option::is_none")]
        limit: Option<i64>,
        #[serde(skip_serializing_if = "Option::is_none")]
        backoff: Option<String>,
    }

    static SCHEMA: LazySchema = LazySchema::new(
        r#"{"type":"object","properties":{"spec":{"type":"object","required":["image"],
            "x-kubernetes-validations":[{"rule":"self.min <= self.max","message":"min must not exceed max"}],
            "properties":{
              "image":{"type":"string"},
              "min":{"type":"integer","default":0},
              "max":{"type":"integer","default":10},
              "tag":{"type":"string","maxLength":3},
              "id":{"type":"string","x-kubernetes-validations":[{"rule":"self == oldSelf","message":"id is immutable"}]},
              "retry":{"type":"object","default":{},"properties":{
                "limit":{"type":"integer","default":3},
                "backoff":{"type":"string","default":"1s"}}}}}}}"#,
        "batch.example.com",
        "Job",
    );

    fn job(spec: JobSpec) -> Job {
        let mut j = Job {
            api_version: "batch.example.com/v1".into(),
            kind: "Job".into(),
            spec: Some(spec),
            ..Job::default()
        };
        j.metadata.name = Some("nightly".into());
        j
    }

    fn spec() -> JobSpec {
        JobSpec {
            image: Some("busybox".into()),
            ..JobSpec::default()
        }
    }

    /// A scale subresource's paths are checked beside the schema, in the server's words.
    #[test]
    fn scale_paths_are_checked() {
        use serde_json::json;
        static SCALED: LazySchema = LazySchema::with_scale(
            r#"{"type":"object","properties":{"spec":{"type":"object",
                "x-kubernetes-preserve-unknown-fields":true}}}"#,
            "batch.example.com",
            "Job",
            ".spec.replicas",
            ".status.replicas",
            None,
        );
        let obj = |replicas: Value| {
            json!({"apiVersion": "batch.example.com/v1", "kind": "Job",
                   "metadata": {"name": "nightly"}, "spec": {"replicas": replicas}})
        };
        assert!(validate(&obj(json!(3)), &SCALED).is_ok());
        let err = validate(&obj(json!("3")), &SCALED).unwrap_err();
        let causes: Vec<String> = err.causes().iter().map(ToString::to_string).collect();
        assert_eq!(
            causes,
            [
                ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: 3 is of the type string, expected int64"
            ]
        );
        let err = validate_update(&obj(json!(-1)), &obj(json!(1)), &SCALED).unwrap_err();
        assert_eq!(
            err.causes()[0].message,
            "Invalid value: -1: should be a non-negative integer"
        );
        // Without the paths nothing is checked there.
        static PLAIN: LazySchema =
            LazySchema::new(r#"{"type":"object"}"#, "batch.example.com", "Job");
        assert!(validate(&obj(json!("3")), &PLAIN).is_ok());
    }

    /// The LazySchema in a static needs Sync, and handing errors between tasks needs Send.
    #[test]
    fn types_are_send_and_sync() {
        fn both<T: Send + Sync>() {}
        both::<LazySchema>();
        both::<ValidationErrors>();
    }

    #[test]
    fn a_valid_object_passes_and_the_schema_compiles_once() {
        assert_eq!(validate(&job(spec()), &SCHEMA), Ok(()));
        let first: *const ObjectSchema = SCHEMA.schema();
        assert!(std::ptr::eq(first, SCHEMA.schema()));
        assert!(SCHEMA.schema().has_rules());
        assert_eq!(SCHEMA.parse_error(), None);
    }

    #[test]
    fn required_field_and_cel_rule() {
        let err = validate(&job(JobSpec::default()), &SCHEMA).unwrap_err();
        // A missing required field blocks the CEL rules, as on the server.
        assert_eq!(
            err.causes(),
            [
                Cause::new("FieldValueRequired", "spec.image", "Required value"),
                Cause::new(
                    "FieldValueInvalid",
                    "<nil>",
                    kube_codegen_crd::object::RULES_NOT_CHECKED
                ),
            ]
        );
        let err = validate(
            &job(JobSpec {
                min: Some(5),
                max: Some(2),
                ..spec()
            }),
            &SCHEMA,
        )
        .unwrap_err();
        assert_eq!(
            err.causes(),
            [Cause::new(
                "FieldValueInvalid",
                "spec",
                "Invalid value: min must not exceed max"
            )]
        );
        assert_eq!(err.name(), "nightly");
        assert_eq!(err.qualified_kind(), "Job.batch.example.com");
        // Defaults take part, as on the server: min 20 against the default max 10.
        let err = validate(
            &job(JobSpec {
                min: Some(20),
                ..spec()
            }),
            &SCHEMA,
        )
        .unwrap_err();
        assert_eq!(err.causes().len(), 1, "{err}");
    }

    #[test]
    fn transition_rules_and_ratcheting_on_update() {
        let old = job(JobSpec {
            id: Some("a".into()),
            tag: Some("too-long".into()),
            ..spec()
        });
        // Invalid on create (tag too long), but unchanged on update: ratcheted.
        assert!(validate(&old, &SCHEMA).is_err());
        let mut new = old.clone();
        new.spec.as_mut().unwrap().image = Some("alpine".into());
        assert_eq!(validate_update(&new, &old, &SCHEMA), Ok(()));
        // The transition rule sees oldSelf.
        new.spec.as_mut().unwrap().id = Some("b".into());
        let err = validate_update(&new, &old, &SCHEMA).unwrap_err();
        assert_eq!(
            err.causes(),
            [Cause::new(
                "FieldValueInvalid",
                "spec.id",
                "Invalid value: \"b\": id is immutable"
            )]
        );
        // A changed invalid value is checked again.
        let mut new = old.clone();
        new.spec.as_mut().unwrap().tag = Some("longer".into());
        let err = validate_update(&new, &old, &SCHEMA).unwrap_err();
        assert_eq!(err.causes()[0].field, "spec.tag");
    }

    #[test]
    fn defaults_fill_nested_fields_and_validation_does_not_change_the_object() {
        let mut j = job(spec());
        let before = j.clone();
        validate(&j, &SCHEMA).unwrap();
        assert_eq!(j, before);
        apply_defaults(&mut j, &SCHEMA);
        let s = j.spec.as_ref().unwrap();
        assert_eq!((s.min, s.max), (Some(0), Some(10)));
        assert_eq!(
            s.retry,
            Some(Retry {
                limit: Some(3),
                backoff: Some("1s".into())
            })
        );
        // Set values stay.
        let mut j = job(JobSpec {
            max: Some(4),
            retry: Some(Retry {
                limit: Some(9),
                backoff: None,
            }),
            ..spec()
        });
        apply_defaults(&mut j, &SCHEMA);
        let s = j.spec.as_ref().unwrap();
        assert_eq!(s.max, Some(4));
        assert_eq!(s.retry.as_ref().unwrap().limit, Some(9));
        assert_eq!(s.retry.as_ref().unwrap().backoff.as_deref(), Some("1s"));
    }

    #[test]
    fn defaults_that_do_not_fit_the_type_leave_it_unchanged() {
        static BAD: LazySchema = LazySchema::new(
            r#"{"type":"object","properties":{"spec":{"type":"object","properties":{"min":{"type":"integer","default":"zero"}}}}}"#,
            "batch.example.com",
            "Job",
        );
        let mut j = job(spec());
        let before = j.clone();
        apply_defaults(&mut j, &BAD);
        assert_eq!(j, before);
    }

    /// The wording checked against kubectl 1.32 creating invalid objects on kube-fake-apiserver
    /// (`crates/buildrs-example/tests/validation.rs` pins two such outputs).
    #[test]
    fn display_is_kubectls() {
        let one = ValidationErrors::new(
            "batch.example.com",
            "Job",
            "nightly",
            vec![Cause::new(
                "FieldValueRequired",
                "spec.image",
                "Required value",
            )],
        );
        assert_eq!(
            one.to_string(),
            "The Job \"nightly\" is invalid: spec.image: Required value"
        );
        let many = ValidationErrors::new(
            "batch.example.com",
            "Job",
            "nightly",
            vec![
                Cause::new("FieldValueRequired", "spec.image", "Required value"),
                Cause::new("FieldValueInvalid", "spec", "Invalid value: \"object\": x"),
                Cause::new("FieldValueRequired", "spec.image", "Required value"),
            ],
        );
        assert_eq!(
            many.to_string(),
            "The Job \"nightly\" is invalid: \n* spec.image: Required value\n* spec: Invalid value: \"object\": x"
        );
        let none = ValidationErrors::new("", "Pod", "p", vec![]);
        assert_eq!(none.to_string(), "The Pod \"p\" is invalid");
        let err: &dyn std::error::Error = &one;
        assert!(err.source().is_none());
    }

    #[test]
    fn status_is_the_servers_422() {
        let err = validate(
            &job(JobSpec {
                min: Some(5),
                max: Some(2),
                tag: Some("long".into()),
                ..spec()
            }),
            &SCHEMA,
        )
        .unwrap_err();
        let status = err.status();
        assert_eq!(status.code, 422);
        assert_eq!(status.reason, "Invalid");
        assert!(status.is_failure() && status.is_invalid());
        assert_eq!(
            status.message,
            kube_codegen_crd::invalid_message("Job.batch.example.com", "nightly", err.causes())
        );
        assert!(
            status
                .message
                .starts_with("Job.batch.example.com \"nightly\" is invalid: [spec.tag: "),
            "{}",
            status.message
        );
        let details = status.details.as_ref().unwrap();
        assert_eq!(
            (&*details.name, &*details.group, &*details.kind),
            ("nightly", "batch.example.com", "Job")
        );
        let causes: Vec<(&str, &str, &str)> = details
            .causes
            .iter()
            .map(|c| (&*c.reason, &*c.field, &*c.message))
            .collect();
        let want: Vec<(&str, &str, &str)> = err
            .causes()
            .iter()
            .map(|c| (&*c.reason, &*c.field, &*c.message))
            .collect();
        assert_eq!(causes, want);
        // The JSON a server sends for it.
        let json = serde_json::to_value(&status).unwrap();
        assert_eq!(json["status"], "Failure");
        assert_eq!(json["details"]["causes"][0]["field"], "spec.tag");

        let kube_err: kube::Error = err.clone().into();
        match kube_err {
            kube::Error::Api(s) => assert_eq!(*s, status),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn unserializable_objects_and_unreadable_schemas_are_causes_not_panics() {
        // A map with non-string keys does not serialize to JSON.
        let mut bad = BTreeMap::new();
        bad.insert((1, 2), "x".to_owned());
        let err = validate(&bad, &SCHEMA).unwrap_err();
        assert_eq!(err.causes()[0].reason, INTERNAL_ERROR);
        let mut copy = bad.clone();
        apply_defaults(&mut copy, &SCHEMA);
        assert_eq!(copy, bad);

        static BROKEN: LazySchema = LazySchema::new("{not json", "batch.example.com", "Job");
        let err = validate(&job(spec()), &BROKEN).unwrap_err();
        assert_eq!(err.causes().len(), 1);
        assert_eq!(err.causes()[0].reason, INTERNAL_ERROR);
        assert!(
            err.causes()[0]
                .message
                .contains("openAPIV3Schema of Job.batch.example.com is not valid JSON"),
            "{err}"
        );
        assert!(validate_update(&job(spec()), &job(spec()), &BROKEN).is_err());
        let mut j = job(spec());
        apply_defaults(&mut j, &BROKEN);
        assert_eq!(j, job(spec()));
        assert!(format!("{BROKEN:?}").contains("compiled: true"));
    }
}
