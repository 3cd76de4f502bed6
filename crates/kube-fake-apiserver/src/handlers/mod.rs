//! Request handlers, one module per family of verbs, and what they share: the resolved
//! resource of a request ([`Ctx`]), write options and body decoding.
pub mod continuation;
pub mod converted;
pub mod discovery;
pub mod discovery_aggregated;
pub mod patch;
pub mod read;
pub mod watch;
pub mod write;

use std::sync::Arc;

use http::{Method, header};
use serde_json::Value;

use crate::http::Req;
use crate::http::router::Target;
use crate::objects::{self, Write, WriteOpts, key_of};
use crate::registry::{Resource, Version};
use crate::ssa::Operation;
use crate::state::{Db, Shared};
use crate::status::ApiError;

/// The resolved resource a request is about.
pub struct Ctx<'a> {
    pub shared: &'a Arc<Shared>,
    pub req: &'a Req,
    pub res: Arc<Resource>,
    pub ver: Version,
    pub t: Target,
    /// The client's `Accept` prefers protobuf (answers are transcoded in `dispatch`; watch
    /// streams frame protobuf events themselves).
    pub proto: bool,
}

impl Ctx<'_> {
    pub fn ns(&self) -> Option<&str> {
        self.t.namespace.as_deref()
    }
    pub fn name(&self) -> &str {
        self.t.name.as_deref().unwrap_or("")
    }
    pub fn version(&self) -> &str {
        &self.t.version
    }
    /// The stored object the URL names, or the 404 the server answers when there is none.
    pub fn stored(&self, db: &Db) -> Result<Value, ApiError> {
        objects::stored(db, &self.res, &key_of(&self.res, self.ns(), self.name()))
    }
    /// A write in the URL's resource, version and namespace.
    pub fn write<'w>(&'w self, opts: &'w WriteOpts, operation: Operation) -> Write<'w> {
        Write {
            res: &self.res,
            version: self.version(),
            ns: self.ns(),
            opts,
            operation,
        }
    }
}

/// `dryRun` and the field manager of a write.
pub fn write_opts(req: &Req) -> Result<WriteOpts, ApiError> {
    let dry_run = match req.q("dryRun") {
        None | Some("") => false,
        Some("All") => true,
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "dryRun: Unsupported value: \"{other}\": supported values: \"All\""
            )));
        }
    };
    let manager = match req.q("fieldManager") {
        Some(m) if !m.is_empty() => m.to_string(),
        _ => {
            // Like the server: the User-Agent up to the first '/'.
            let ua = req.header(header::USER_AGENT);
            ua.split('/')
                .next()
                .unwrap_or("")
                .chars()
                .take(128)
                .collect()
        }
    };
    let options_kind = match req.method {
        Method::POST => "CreateOptions",
        Method::PATCH => "PatchOptions",
        _ => "UpdateOptions",
    };
    Ok(WriteOpts {
        dry_run,
        manager,
        field_validation: req.q("fieldValidation").unwrap_or("").to_string(),
        options_kind,
        warnings: req.warnings.clone(),
        served_old: None,
        admission: Default::default(),
    })
}

/// Decodes a JSON or YAML request body into an object.
pub fn decode_body(req: &Req) -> Result<Value, ApiError> {
    let ct = req.content_type();
    let v: Value = match ct.as_str() {
        "" | "application/json" | "*/*" => serde_json::from_slice(&req.body).map_err(|e| {
            ApiError::bad_request(format!("the request body is not valid JSON: {e}"))
        })?,
        "application/yaml" => {
            let text = std::str::from_utf8(&req.body).map_err(|e| {
                ApiError::bad_request(format!("the request body is not UTF-8: {e}"))
            })?;
            kube_codegen_crd::read::yaml_value("request body", text).map_err(|e| {
                ApiError::bad_request(format!("the request body is not valid YAML: {e}"))
            })?
        }
        "application/vnd.kubernetes.protobuf" => {
            crate::proto::decode(&req.body).map_err(|e| ApiError::bad_request(e.message()))?
        }
        _ => {
            return Err(ApiError::unsupported_media_type(&[
                "application/json",
                "application/yaml",
                "application/vnd.kubernetes.protobuf",
            ]));
        }
    };
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the request body must be a JSON object",
        ));
    }
    Ok(v)
}
