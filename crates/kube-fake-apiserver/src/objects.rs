//! The write pipeline shared by create, update, patch, apply, status and delete: type checks,
//! server-managed metadata, schema pruning/defaulting/validation, generation, finalizers, CRD hooks.
use std::sync::Arc;

use serde_json::{Value, json};

use crate::crd;
use crate::namespaces;
use crate::registry::{Resource, Version};
use crate::schema::{self, Cause};
use crate::ssa::{self, Operation};
use crate::state::Db;
use crate::status::ApiError;
use crate::store::Key;
use crate::util::{
    finalizers, is_deleting, is_dns_subdomain, meta_mut, meta_str, name_suffix, now, str_of, uid,
};

/// Options common to writes.
#[derive(Debug, Clone, Default)]
pub struct WriteOpts {
    pub dry_run: bool,
    /// `fieldManager`, or the one derived from the User-Agent.
    pub manager: String,
    /// `fieldValidation` (`Strict`, `Warn`, `Ignore`; empty: `Warn`).
    pub field_validation: String,
    /// `CreateOptions`, `UpdateOptions` or `PatchOptions` (named in option errors).
    pub options_kind: &'static str,
    /// `Warning` header texts for the response.
    pub warnings: std::sync::Arc<parking_lot::Mutex<Vec<String>>>,
    /// The stored object already converted to the request's version by the CRD's conversion
    /// webhook (`handlers::converted`): an update compares, merges and validates against it
    /// instead of the stored object.
    pub served_old: Option<Value>,
    /// Where mutating admission stands in this run of the pipeline (`handlers::converted`
    /// runs it in steps when webhooks or policies may apply).
    pub admission: AdmissionStep,
}

/// The object at the point where kube-apiserver runs mutating admission (after decoding, a
/// patch or an update's merge; before the name is generated and the strategy and schema
/// default and validate) and what it replaces.
pub type Captured = Arc<parking_lot::Mutex<Option<(Value, Option<Value>)>>>;

/// What the pipeline does at the mutating-admission point.
#[derive(Debug, Clone, Default)]
pub enum AdmissionStep {
    /// Nothing: no admission applies.
    #[default]
    Pass,
    /// Hand the object (and the old one) out and stop: the caller calls the webhooks, which
    /// must not run under the store lock.
    Capture(Captured),
    /// Go on with the object the mutating webhooks returned.
    Mutated(Value),
}

/// The reason of the error with which a capturing run stops (never answered to a client).
pub const CAPTURED: &str = "AdmissionCaptured";

/// The mutating-admission point: see [`AdmissionStep`]. The object handed out is what
/// kube-apiserver's decoding made of the request before admission: unknown fields dropped
/// (`fieldValidation`'s warnings or refusal come from here then) and the kind's defaults applied
/// (a built-in's `SetDefaults_*`, a CRD schema's `default`s), as mutating webhooks see it there.
fn mutation_point(
    res: &Resource,
    ver: &Version,
    opts: &WriteOpts,
    obj: &mut Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    match &opts.admission {
        AdmissionStep::Pass => Ok(()),
        AdmissionStep::Capture(slot) => {
            decoded_for_admission(res, ver, obj, opts)?;
            *slot.lock() = Some((obj.clone(), old.cloned()));
            Err(ApiError::new(
                500,
                CAPTURED,
                "mutating admission point reached",
            ))
        }
        AdmissionStep::Mutated(m) => {
            *obj = m.clone();
            Ok(())
        }
    }
}

/// The decoding steps of [`admit`] that precede admission on the real server.
fn decoded_for_admission(
    res: &Resource,
    ver: &Version,
    obj: &mut Value,
    opts: &WriteOpts,
) -> Result<(), ApiError> {
    if crate::builtin::handles(&res.group, res.custom) {
        let defs = crate::builtin_schemas::definitions();
        let pruned =
            schema::field_validation(&opts.field_validation, &res.kind, &ver.name, obj, |o| {
                defs.prune_unknown(&res.group, &ver.name, &res.kind, o)
            });
        field_validation_outcome(pruned, opts)?;
        crate::builtin::default(&res.group, &res.kind, obj);
    }
    if let Some(s) = &ver.schema {
        if res.custom {
            schema::normalize_numbers(obj);
        }
        let pruned = schema::prune_with_field_validation(
            s.schema(),
            obj,
            &opts.field_validation,
            &res.kind,
            &ver.name,
        );
        field_validation_outcome(pruned, opts)?;
        s.apply_defaults(obj);
    }
    Ok(())
}

/// The kind's defaults applied to `obj` served as `version` (`SetDefaults_*` of a built-in
/// kind, a structural schema's `default`s), as the object defaulter applies them to what a
/// MutatingAdmissionPolicy's mutation returns.
pub fn apply_kind_defaults(res: &Resource, version: &str, obj: &mut Value) {
    if crate::builtin::handles(&res.group, res.custom) {
        crate::builtin::default(&res.group, &res.kind, obj);
    }
    if let Some(s) = res.version(version).and_then(|v| v.schema.as_ref()) {
        s.apply_defaults(obj);
    }
}

pub use crate::ssa::Mode;

/// One write: the resource and version it goes through, the namespace it is in, and on whose
/// behalf (options and the `managedFields` operation it records).
#[derive(Clone, Copy)]
pub struct Write<'a> {
    pub res: &'a Arc<Resource>,
    /// The version the request used (the object is checked and returned in it).
    pub version: &'a str,
    pub ns: Option<&'a str>,
    pub opts: &'a WriteOpts,
    pub operation: Operation,
}

/// Whether etcd keys of `res` name its group, as for custom resources and CRDs (built-ins are
/// stored under `/registry/<resource>/...`).
pub fn group_in_key(res: &Resource) -> bool {
    res.custom || is_crd(res)
}

/// The etcd revision a stored object was written at (its resourceVersion).
pub fn stored_revision(obj: &Value) -> u64 {
    meta_str(obj, "resourceVersion").parse().unwrap_or(0)
}

pub fn is_crd(res: &Resource) -> bool {
    res.group == "apiextensions.k8s.io" && res.plural == "customresourcedefinitions"
}

/// Where `name` of `res` is stored (both Event APIs store under core `events`).
pub fn key_of(res: &Resource, ns: Option<&str>, name: &str) -> Key {
    let (group, resource) = res.storage();
    Key {
        group: group.to_string(),
        resource: resource.to_string(),
        namespace: if res.namespaced {
            ns.unwrap_or("").to_string()
        } else {
            String::new()
        },
        name: name.to_string(),
    }
}

/// The stored object at `key`, or the 404 the server answers when there is none.
pub fn stored(db: &Db, res: &Resource, key: &Key) -> Result<Value, ApiError> {
    db.store
        .get(key)
        .cloned()
        .ok_or_else(|| ApiError::not_found(&res.group, &res.plural, &key.name))
}

/// The object as served through `version` (conversion `None`: only apiVersion is rewritten).
/// Defaults of the served version's schema are applied on read too, as the server does when it
/// decodes from storage (so objects written before a default existed, or through another version,
/// come back defaulted).
pub fn view(res: &Resource, version: &str, obj: &Value) -> Value {
    let mut o = obj.clone();
    // An Event is stored once, as core v1, and converted for the API that reads it.
    crate::events::to_served(res, &mut o);
    if let Some(m) = o.as_object_mut() {
        m.insert("apiVersion".into(), json!(res.api_version(version)));
        m.insert("kind".into(), json!(res.kind));
    }
    if let Some(schema) = res.version(version).and_then(|v| v.schema.as_ref()) {
        schema.apply_defaults(&mut o);
    }
    o
}

/// Custom resources are stored in the storage version: with `strategy: None` that is only the
/// `apiVersion` (a webhook-converted write has converted the object before it gets here).
pub fn to_storage_version(res: &Resource, obj: &mut Value) {
    if res.custom
        && let Some(m) = obj.as_object_mut()
    {
        m.insert(
            "apiVersion".into(),
            json!(res.api_version(res.storage_version())),
        );
    }
}

/// The served `version` a write goes through, once the body's apiVersion and kind are checked
/// against it (and filled in when missing).
fn typed_for(res: &Resource, version: &str, obj: &mut Value) -> Result<Version, ApiError> {
    let ver = res
        .version(version)
        .ok_or_else(ApiError::path_not_found)?
        .clone();
    check_type_meta(res, version, obj)?;
    Ok(ver)
}

fn check_type_meta(res: &Resource, version: &str, obj: &mut Value) -> Result<(), ApiError> {
    if !obj.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request is not a JSON object",
        ));
    }
    let want = res.api_version(version);
    let api_version = str_of(obj.get("apiVersion")).to_string();
    let kind = str_of(obj.get("kind")).to_string();
    if !api_version.is_empty() && api_version != want {
        return Err(ApiError::bad_request(format!(
            "the API version in the data ({api_version}) does not match the expected API version ({want})"
        )));
    }
    if !kind.is_empty() && kind != res.kind {
        return Err(ApiError::bad_request(format!(
            "{kind} in version \"{version}\" cannot be handled as a {}: the kind in the data does not match",
            res.kind
        )));
    }
    obj["apiVersion"] = json!(want);
    obj["kind"] = json!(res.kind);
    Ok(())
}

fn check_namespace(res: &Resource, ns: Option<&str>, obj: &mut Value) -> Result<(), ApiError> {
    let body_ns = meta_str(obj, "namespace").to_string();
    let m = meta_mut(obj);
    if res.namespaced {
        let ns = ns.unwrap_or("");
        if body_ns.is_empty() {
            m.insert("namespace".into(), json!(ns));
        } else if body_ns != ns {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
    } else {
        m.remove("namespace");
    }
    Ok(())
}

/// A `fieldValidation` outcome: warnings kept for the answer's headers, a refusal as the
/// server answers it.
fn field_validation_outcome(
    outcome: Result<Vec<String>, schema::FieldValidationError>,
    opts: &WriteOpts,
) -> Result<(), ApiError> {
    match outcome {
        Ok(warnings) => {
            opts.warnings.lock().extend(warnings);
            Ok(())
        }
        Err(schema::FieldValidationError::UnknownFields(m)) => Err(ApiError::bad_request(m)),
        Err(schema::FieldValidationError::Unsupported(m)) => Err(ApiError::invalid_options(
            opts.options_kind,
            "fieldValidation",
            "FieldValueNotSupported",
            &m,
        )),
    }
}

/// Prune, default, validate (schema, CEL rules and metadata) as the server does on every write.
/// `old` is the stored object on update; read through the same version (only where a schema
/// needs it), transition rules see it as `oldSelf`, and values it already had are not checked
/// again (ratcheting).
fn admit(
    res: &Resource,
    ver: &Version,
    obj: &mut Value,
    old: Option<&Value>,
    mode: Mode,
    opts: &WriteOpts,
) -> Result<(), ApiError> {
    let mut causes: Vec<Cause> = Vec::new();
    let builtin = crate::builtin::handles(&res.group, res.custom);
    if builtin {
        // Decoding into the Go types drops the fields they do not declare (`fieldValidation`
        // says whether that is silent, a warning or a 400).
        let defs = crate::builtin_schemas::definitions();
        let pruned =
            schema::field_validation(&opts.field_validation, &res.kind, &ver.name, obj, |o| {
                defs.prune_unknown(&res.group, &ver.name, &res.kind, o)
            });
        field_validation_outcome(pruned, opts)?;
        crate::builtin::decode(&res.group, &res.kind, &ver.name, obj)?;
    }
    if res.custom {
        // The server's JSON round trip: int64 stays exact, everything else goes through float64.
        schema::normalize_numbers(obj);
    }
    if let Some(s) = &ver.schema {
        let pruned = schema::prune_with_field_validation(
            s.schema(),
            obj,
            &opts.field_validation,
            &res.kind,
            &ver.name,
        );
        field_validation_outcome(pruned, opts)?;
        s.apply_defaults(obj);
        causes.extend(match old {
            Some(old) if mode == Mode::Status => {
                s.validate_status_update(obj, &view(res, &ver.name, old))
            }
            Some(old) => s.validate_update(obj, &view(res, &ver.name, old)),
            None => s.validate(obj),
        });
    } else if res.custom
        && let Some(paths) = &ver.scale
    {
        // A version without a schema (a v1beta1 CRD's) still has its scale paths checked.
        let scale = paths.to_crd();
        if mode != Mode::Status {
            kube_codegen_crd::object::scale::spec_causes(&scale, obj, &mut causes);
        }
        kube_codegen_crd::object::scale::status_causes(&scale, obj, &mut causes);
    }
    let name = meta_str(obj, "name").to_string();
    // Built-ins had their names checked by their kind's rule.
    if !builtin && !is_dns_subdomain(&name) {
        causes.insert(
            0,
            Cause {
                reason: "FieldValueInvalid".into(),
                field: "metadata.name".into(),
                message: format!(
                    "Invalid value: \"{name}\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
                ),
            },
        );
    }
    if is_crd(res) {
        crd::default_spec(obj);
        causes.extend(crd::validate(obj));
    }
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::invalid(&res.group, &res.kind, &name, &causes))
    }
}

/// Everything whose change bumps `metadata.generation`.
fn spec_part(ver: &Version, obj: &Value) -> Value {
    let mut o = obj.clone();
    if let Some(m) = o.as_object_mut() {
        m.remove("metadata");
        m.remove("apiVersion");
        m.remove("kind");
        if ver.status {
            m.remove("status");
        }
    }
    o
}

impl<'a> Write<'a> {
    /// The `managedFields` writer for this write's manager and operation, through `mode`'s
    /// endpoint.
    pub fn writer(&self, mode: Mode) -> ssa::Writer<'a> {
        ssa::Writer::new(
            self.res,
            self.version,
            &self.opts.manager,
            self.operation,
            mode,
        )
    }

    /// `POST` (and apply of a missing object).
    pub fn create(&self, db: &mut Db, obj: Value) -> Result<Value, ApiError> {
        create(db, self, obj)
    }

    /// `PUT` of the main resource or `/status` of `name`; also the tail of patch and apply.
    /// `source` is what the client sent (what the manager set, for `managedFields`).
    pub fn update(
        &self,
        db: &mut Db,
        name: &str,
        obj: Value,
        mode: Mode,
        source: &Value,
    ) -> Result<Value, ApiError> {
        update(db, self, name, obj, mode, source)
    }
}

fn create(db: &mut Db, w: &Write, mut obj: Value) -> Result<Value, ApiError> {
    let Write {
        res,
        version,
        ns,
        opts,
        operation: _,
    } = *w;
    let ver = typed_for(res, version, &mut obj)?;
    check_namespace(res, ns, &mut obj)?;
    let source = obj.clone();
    if namespaces::is_namespaces(res) {
        namespaces::default_name_label(&mut obj);
    }
    // The NamespaceLifecycle plugin runs before the webhooks, which run before the strategy.
    namespaces::admit_create(db, res, ns, meta_str(&obj, "name"))?;
    mutation_point(res, &ver, opts, &mut obj, None)?;
    check_type_meta(res, version, &mut obj)?;
    check_namespace(res, ns, &mut obj)?;
    let m = meta_mut(&mut obj);
    let name = str_of(m.get("name")).to_string();
    let generate = str_of(m.get("generateName")).to_string();
    if name.is_empty() && generate.is_empty() {
        let cause = Cause {
            reason: "FieldValueRequired".into(),
            message: "Required value: name or generateName is required".into(),
            field: "metadata.name".into(),
        };
        return Err(ApiError::invalid(&res.group, &res.kind, "", &[cause]));
    }
    if m.get("resourceVersion")
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty())
    {
        return Err(ApiError::bad_request(
            "resourceVersion should not be set on objects to be created",
        ));
    }
    let name = if name.is_empty() {
        format!("{generate}{}", name_suffix())
    } else {
        name
    };
    m.insert("name".into(), json!(name));
    for f in [
        "uid",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
    ] {
        m.remove(f);
    }
    m.insert("uid".into(), json!(uid()));
    m.insert("creationTimestamp".into(), json!(now()));
    if res.generation {
        m.insert("generation".into(), json!(1));
    } else {
        m.remove("generation");
    }
    // `managedFields` sent on create stay for `record`, which keeps them when they decode.
    if ver.status && !(res.group.is_empty() && res.plural == "namespaces") {
        // Status is dropped on create when the status subresource is enabled (built-in strategies
        // reset it too; a namespace starts `Active`).
        if let Some(o) = obj.as_object_mut() {
            o.remove("status");
        }
    }
    admit(res, &ver, &mut obj, None, Mode::Main, opts)?;
    w.writer(Mode::Main).record(None, &mut obj, &source);
    if crate::builtin::handles(&res.group, res.custom) {
        crate::builtin::admit(
            db,
            &res.group,
            &res.kind,
            &mut obj,
            crate::builtin::Write::Create,
        )?;
    }
    if namespaces::is_namespaces(res) {
        namespaces::prepare_for_create(&mut obj);
    }
    if is_crd(res) {
        crd::set_status(db, &mut obj);
    }
    crate::events::to_storage(res, &mut obj);
    let key = key_of(res, ns, &name);
    if db.store.get(&key).is_some() {
        return Err(ApiError::already_exists(&res.group, &res.plural, &name));
    }
    if db.require_namespaces && res.namespaced {
        let ns = ns.unwrap_or("");
        let ns_key = Key {
            group: String::new(),
            resource: "namespaces".into(),
            namespace: String::new(),
            name: ns.into(),
        };
        if db.store.get(&ns_key).is_none() {
            return Err(ApiError::not_found("", "namespaces", ns));
        }
    }
    if opts.dry_run {
        return Ok(view(res, version, &obj));
    }
    to_storage_version(res, &mut obj);
    db.limits
        .check_storage(&key, group_in_key(res), &obj, None)?;
    if is_crd(res) {
        register_crd(db, &obj)?;
    }
    let stored = db.store.put(key, obj);
    Ok(view(res, version, &stored))
}

fn register_crd(db: &mut Db, crd_obj: &Value) -> Result<(), ApiError> {
    let r = crd::to_resource(crd_obj).map_err(ApiError::bad_request)?;
    if let Some(existing) = db.registry.get(&r.group, &r.plural)
        && !existing.custom
    {
        return Err(ApiError::conflict(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            meta_str(crd_obj, "name"),
            "the resource is built in",
        ));
    }
    // Served once established (names accepted, and after `crd_establish_delay`).
    if crd::is_established(crd_obj) {
        db.registry.insert(r);
    }
    Ok(())
}

fn update(
    db: &mut Db,
    w: &Write,
    name: &str,
    mut obj: Value,
    mode: Mode,
    source: &Value,
) -> Result<Value, ApiError> {
    let Write {
        res,
        version,
        ns,
        opts,
        operation: _,
    } = *w;
    let ver = typed_for(res, version, &mut obj)?;
    let body_name = meta_str(&obj, "name").to_string();
    if body_name.is_empty() {
        meta_mut(&mut obj).insert("name".into(), json!(name));
    } else if body_name != name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({body_name}) does not match the name on the URL ({name})"
        )));
    }
    check_namespace(res, ns, &mut obj)?;
    let key = key_of(res, ns, name);
    let mut old = stored(db, res, &key)?;
    if let Some(converted) = &opts.served_old {
        old = converted.clone();
    }
    // Compared and merged in the shape the request's API serves (an Event is stored as core v1).
    crate::events::to_served(res, &mut old);
    let body_rv = meta_str(&obj, "resourceVersion").to_string();
    if !body_rv.is_empty() && body_rv != meta_str(&old, "resourceVersion") {
        return Err(ApiError::stale(&res.group, &res.plural, name));
    }
    let mut new = match mode {
        Mode::Main | Mode::Scale => {
            let mut n = obj;
            if ver.status {
                match old.get("status") {
                    Some(s) => n["status"] = s.clone(),
                    None => {
                        n.as_object_mut().map(|o| o.remove("status"));
                    }
                }
            }
            n
        }
        Mode::Status => {
            let mut n = old.clone();
            match obj.get("status") {
                Some(s) => n["status"] = s.clone(),
                None => {
                    n.as_object_mut().map(|o| o.remove("status"));
                }
            }
            n["apiVersion"] = obj["apiVersion"].clone();
            n
        }
    };
    mutation_point(res, &ver, opts, &mut new, Some(&old))?;
    check_type_meta(res, version, &mut new)?;
    // Server-managed metadata always comes from the stored object.
    let old_meta = old
        .get("metadata")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let m = meta_mut(&mut new);
    for f in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
        "namespace",
        "name",
    ] {
        match old_meta.get(f) {
            Some(v) => m.insert(f.into(), v.clone()),
            None => m.remove(f),
        };
    }
    m.insert(
        "resourceVersion".into(),
        old_meta
            .get("resourceVersion")
            .cloned()
            .unwrap_or(json!("")),
    );
    m.remove("selfLink");
    let deleting = is_deleting(&old);
    if deleting {
        let before = finalizers(&old);
        let added: Vec<String> = finalizers(&new)
            .into_iter()
            .filter(|f| !before.contains(f))
            .collect();
        if !added.is_empty() {
            let cause = Cause {
                reason: "FieldValueForbidden".into(),
                field: "metadata.finalizers".into(),
                message: format!(
                    "Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{{}}}",
                    added
                        .iter()
                        .map(|f| format!("\"{f}\""))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            return Err(ApiError::invalid(&res.group, &res.kind, name, &[cause]));
        }
    }
    if namespaces::is_namespaces(res) && mode == Mode::Main {
        namespaces::default_name_label(&mut new);
        namespaces::default_finalizers_on_update(&mut new);
    }
    admit(res, &ver, &mut new, Some(&old), mode, opts)?;
    if is_crd(res) && mode == Mode::Main {
        crd::set_status(db, &mut new);
    }
    w.writer(mode).record(Some(&old), &mut new, source);
    if crate::builtin::handles(&res.group, res.custom) {
        let write = crate::builtin::write_of(mode, Some(&old));
        crate::builtin::admit(db, &res.group, &res.kind, &mut new, write)?;
    }
    if res.generation && spec_part(&ver, &new) != spec_part(&ver, &old) {
        let g = old_meta
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        meta_mut(&mut new).insert("generation".into(), json!(g + 1));
    }
    // A write that changes nothing (its managedFields' times aside) is not a write: no new
    // resourceVersion, no event.
    if ssa::same_write(&old, &new) {
        return Ok(view(res, version, &old));
    }
    if opts.dry_run {
        return Ok(view(res, version, &new));
    }
    crate::events::to_storage(res, &mut new);
    to_storage_version(res, &mut new);
    if deleting && finalizers(&new).is_empty() && !namespaces::awaits_finalize(res, &new) {
        // The last finalizer is gone: the object is deleted now.
        let last = remove(db, res, &key, Some(new));
        return Ok(view(res, version, &last.unwrap_or_default()));
    }
    db.limits
        .check_storage(&key, group_in_key(res), &new, Some(stored_revision(&old)))?;
    if is_crd(res) {
        register_crd(db, &new)?;
    }
    let stored = db.store.put(key, new);
    Ok(view(res, version, &stored))
}

/// Stores what a dry run of the pipeline produced (`new`, as the request's version shows it),
/// as the pipeline itself would have stored it: `old` is the stored object it was computed
/// against (`None`: a create). A write that changes nothing is not one; the last finalizer gone
/// deletes the object; etcd's size limits apply. Returns what is stored (or was, for a deletion).
pub fn commit(
    db: &mut Db,
    res: &Resource,
    key: &Key,
    mut new: Value,
    old: Option<&Value>,
) -> Result<Value, ApiError> {
    crate::events::to_storage(res, &mut new);
    to_storage_version(res, &mut new);
    let in_key = group_in_key(res);
    let Some(old) = old else {
        db.limits.check_storage(key, in_key, &new, None)?;
        if is_crd(res) {
            register_crd(db, &new)?;
        }
        return Ok(db.store.put(key.clone(), new));
    };
    // As the pipeline decides it: a change to `managedFields` alone is a write, their times
    // alone are not.
    if ssa::same_write(old, &new) {
        return Ok(old.clone());
    }
    if is_deleting(old) && finalizers(&new).is_empty() && !namespaces::awaits_finalize(res, &new) {
        return Ok(remove(db, res, key, Some(new)).unwrap_or_default());
    }
    db.limits
        .check_storage(key, in_key, &new, Some(stored_revision(old)))?;
    if is_crd(res) {
        register_crd(db, &new)?;
    }
    Ok(db.store.put(key.clone(), new))
}

/// Removes an object for good (a CRD takes its resources and their objects with it).
pub fn remove(db: &mut Db, res: &Resource, key: &Key, last: Option<Value>) -> Option<Value> {
    let current = db.store.get(key)?.clone();
    if is_crd(res) {
        // Objects go first, so their watchers see them deleted before the watch ends with the CRD.
        let group = str_of(current.pointer("/spec/group")).to_string();
        let plural = str_of(current.pointer("/spec/names/plural")).to_string();
        for (k, _) in db.store.list(&group, &plural, None) {
            db.store.delete(&k);
        }
        db.registry.remove(&group, &plural);
    }
    if res.group.is_empty() && res.plural == "namespaces" {
        // What the namespace controller does, at once: everything in the namespace goes.
        for k in db.store.keys_in_namespace(&key.name) {
            db.store.delete(&k);
        }
    }
    db.store.delete_as(key, last)
}
