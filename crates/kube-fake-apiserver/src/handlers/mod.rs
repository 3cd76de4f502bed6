//! Request handlers, one module per family of verbs.
pub mod continuation;
pub mod discovery;
pub mod discovery_aggregated;
pub mod patch;
pub mod read;
pub mod watch;
pub mod write;

use std::sync::Arc;

use http::{Method, Response, header};
use serde_json::Value;

use crate::http::router::{Route, Target};
use crate::http::{Body, Req, full, json_response, negotiate};
use crate::objects::{self, Mode, WriteOpts, key_of};
use crate::registry::{Resource, Version};
use crate::ssa::Operation;
use crate::state::{Db, Shared};
use crate::status::ApiError;

pub async fn dispatch(
    shared: &Arc<Shared>,
    route: Route,
    req: &Req,
) -> Result<Response<Body>, ApiError> {
    match route {
        Route::Version => Ok(json_response(200, &discovery::version())),
        Route::Health => Ok(Response::builder()
            .header(header::CONTENT_TYPE, "text/plain; charset=utf-8")
            .body(full("ok"))
            .unwrap_or_else(|_| Response::new(full("ok")))),
        Route::ApiVersions | Route::GroupList => {
            let core = route == Route::ApiVersions;
            Ok(
                match discovery_aggregated::wanted(req.header(header::ACCEPT)) {
                    Some(v) => discovery_aggregated::respond(shared, core, v),
                    None if core => json_response(200, &discovery::api_versions(shared)),
                    None => json_response(200, &discovery::group_list(shared)),
                },
            )
        }
        Route::Group(g) => discovery::group(shared, &g).map(|v| json_response(200, &v)),
        Route::GroupVersion(g, v) => {
            discovery::resource_list(shared, &g, &v).map(|v| json_response(200, &v))
        }
        Route::OpenApiV2 => Ok(json_response(
            200,
            &crate::openapi::v2(&shared.db.lock().registry.schemas()),
        )),
        Route::OpenApiV3Index => Ok(json_response(
            200,
            &crate::openapi::v3_index(&shared.db.lock().registry.schemas()),
        )),
        Route::OpenApiV3(g, v) => {
            crate::openapi::v3_group_version(&g, &v, &shared.db.lock().registry.schemas())
                .map(|d| json_response(200, &d))
                .ok_or_else(ApiError::path_not_found)
        }
        Route::Resource(t) => resource(shared, t, req).await,
        Route::NotFound => Err(ApiError::path_not_found()),
    }
}

/// The resolved resource a request is about.
pub struct Ctx<'a> {
    pub shared: &'a Arc<Shared>,
    pub req: &'a Req,
    pub res: Arc<Resource>,
    pub ver: Version,
    pub t: Target,
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
    /// [`objects::create`] in the URL's resource, version and namespace.
    pub fn create(
        &self,
        db: &mut Db,
        obj: Value,
        opts: &WriteOpts,
        operation: Operation,
    ) -> Result<Value, ApiError> {
        objects::create(
            db,
            &self.res,
            self.version(),
            self.ns(),
            obj,
            opts,
            operation,
        )
    }
    /// [`objects::update`] of the object the URL names; `source` is what the client sent.
    pub fn update(
        &self,
        db: &mut Db,
        obj: Value,
        opts: &WriteOpts,
        mode: Mode,
        operation: Operation,
        source: &Value,
    ) -> Result<Value, ApiError> {
        objects::update(
            db,
            &self.res,
            self.version(),
            self.ns(),
            self.name(),
            obj,
            opts,
            mode,
            operation,
            source,
        )
    }
}

async fn resource(shared: &Arc<Shared>, t: Target, req: &Req) -> Result<Response<Body>, ApiError> {
    let res = shared
        .db
        .lock()
        .registry
        .lookup(&t.group, &t.version, &t.plural)
        .ok_or_else(ApiError::path_not_found)?;
    if !res.namespaced && t.namespace.is_some() {
        return Err(ApiError::path_not_found());
    }
    let ver = res
        .version(&t.version)
        .cloned()
        .ok_or_else(ApiError::path_not_found)?;
    match t.sub.as_deref() {
        None => {}
        Some("status") if ver.status => {}
        Some("scale") if ver.scale.is_some() => {}
        Some("finalize") if res.plural == "namespaces" => {}
        Some(_) => return Err(ApiError::path_not_found()),
    }
    let out = negotiate(req.header(header::ACCEPT))?;
    if out == crate::http::Output::Table
        && let Some(v) = req.q("includeObject")
        && !crate::table::valid_include_object(v)
    {
        return Err(ApiError::bad_request(format!(
            "unrecognized includeObject value: {v:?}"
        )));
    }
    let warning = ver.warning.clone();
    let ctx = Ctx {
        shared,
        req,
        res,
        ver,
        t,
    };
    let watch = ctx.t.watch_path || req.flag("watch");
    let sub = ctx.t.sub.clone();
    let mut resp = match (&req.method, ctx.t.name.is_some(), sub.as_deref()) {
        (&Method::GET, _, None) if watch => watch::serve(&ctx, out).await?,
        (&Method::GET, false, None) => read::list(&ctx, out)?,
        (&Method::GET, true, Some("scale")) => write::get_scale(&ctx)?,
        (&Method::GET, true, _) => read::get(&ctx, out)?,
        (&Method::POST, false, None) if !ctx.res.namespaced || ctx.t.namespace.is_some() => {
            write::create(&ctx)?
        }
        (&Method::PUT, true, Some("scale")) => write::put_scale(&ctx)?,
        (&Method::PUT, true, Some("status")) => write::update(&ctx, Mode::Status)?,
        (&Method::PUT, true, _) => write::update(&ctx, Mode::Main)?,
        (&Method::PATCH, true, _) => patch::patch(&ctx)?,
        (&Method::DELETE, true, None) => write::delete(&ctx)?,
        (&Method::DELETE, false, None) => write::delete_collection(&ctx)?,
        _ => return Err(ApiError::method_not_allowed()),
    };
    if let Some(w) = warning
        && let Ok(v) = format!("299 - \"{}\"", w.replace('"', "\\\"")).parse()
    {
        resp.headers_mut().insert(header::WARNING, v);
    }
    Ok(resp)
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
            crate::proto::decode(&req.body).map_err(ApiError::bad_request)?
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
