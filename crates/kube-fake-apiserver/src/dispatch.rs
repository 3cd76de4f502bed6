//! Request dispatch: one request end to end (recording, injected faults and latency), then the
//! route and verb decide which handler answers.
use std::sync::Arc;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use http::{Method, Request, Response, header};
use http_body_util::BodyExt;

use crate::faults::RecordedRequest;
use crate::handlers::{Ctx, discovery, discovery_aggregated, patch, read, watch, write};
use crate::http::router::{self, Route, Target};
use crate::http::{Body, Output, Req, error_response, full, json_response, negotiate};
use crate::objects::Mode;
use crate::proto::Wanted;
use crate::state::Shared;
use crate::status::ApiError;

fn verb_of(route: &Route, req: &Req) -> String {
    match route {
        Route::Resource(t) => {
            let watch = t.watch_path || req.flag("watch");
            match (&req.method, t.name.is_some()) {
                (&Method::GET, _) if watch => "watch",
                (&Method::GET, true) => "get",
                (&Method::GET, false) => "list",
                (&Method::POST, _) => "create",
                (&Method::PUT, _) => "update",
                (&Method::PATCH, _) => "patch",
                (&Method::DELETE, true) => "delete",
                (&Method::DELETE, false) => "deletecollection",
                _ => "unknown",
            }
            .to_string()
        }
        _ => req.method.as_str().to_ascii_lowercase(),
    }
}

/// Handles one request end to end (recording, injected faults and latency, routing), and
/// audits it when an audit log is on.
pub async fn handle(shared: Arc<Shared>, req: Request<Bytes>) -> Response<Body> {
    let received = jiff::Timestamp::now();
    let peer = req
        .extensions()
        .get::<crate::auth::PeerCertificate>()
        .cloned();
    let mut req = Req::from_parts(req);
    req.audit = crate::audit::context(shared.audit.as_ref());
    let resp = respond(&shared, &mut req, peer).await;
    match &shared.audit {
        Some(auditor) => crate::http::audit::log(auditor, &req, received, resp).await,
        None => resp,
    }
}

async fn respond(
    shared: &Arc<Shared>,
    req: &mut Req,
    peer: Option<crate::auth::PeerCertificate>,
) -> Response<Body> {
    let route = router::parse(&req.path);
    if shared.faults.recording.load(Ordering::Relaxed) {
        shared.requests.lock().push(RecordedRequest {
            verb: verb_of(&route, req),
            method: req.method.to_string(),
            path: req.path.clone(),
            query: req.raw_query.clone(),
            body: String::from_utf8_lossy(&req.body).into_owned(),
        });
    }
    let latency = shared.faults.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if let Some(code) = shared.faults.take_failure(&req.path) {
        return error_response(&ApiError::injected(code));
    }
    // Authentication, impersonation and authorization, before anything is looked up.
    match crate::auth::gate(shared, req, peer.as_ref()) {
        Ok(user) => req.user = user,
        Err(e) => return error_response(&e),
    }
    if let Route::Resource(t) = &route
        && crate::auth::reviews::serves(t)
    {
        return crate::auth::reviews::answer(shared, req, t, req.user.as_deref())
            .unwrap_or_else(|e| error_response(&e));
    }
    let proto = match &route {
        Route::Resource(t) => {
            let res = shared
                .db
                .lock()
                .registry
                .lookup(&t.group, &t.version, &t.plural);
            match res {
                Some(res) => protobuf_answers(&res, &t.version, req),
                // The 404 `Status` of an unknown resource.
                None => crate::proto::wanted(req.header(header::ACCEPT), true) == Wanted::Protobuf,
            }
        }
        _ => false,
    };
    let mut resp = match route_request(shared, route, req).await {
        Ok(r) => r,
        Err(e) => error_response(&e),
    };
    if proto {
        resp = crate::http::protobuf_response(resp).await;
    }
    for w in req.warnings.lock().iter() {
        if let Ok(v) = format!("299 - \"{}\"", w.replace('"', "\\\"")).parse() {
            resp.headers_mut().append(header::WARNING, v);
        }
    }
    resp
}

/// Collects any request body and handles the request (used by both the socket and in-process paths).
pub async fn handle_any<B>(shared: Arc<Shared>, req: Request<B>) -> Response<Body>
where
    B: hyper::body::Body<Data = Bytes>,
    B::Error: std::fmt::Display,
{
    let (parts, body) = req.into_parts();
    match body.collect().await {
        Ok(c) => handle(shared, Request::from_parts(parts, c.to_bytes())).await,
        Err(e) => error_response(&ApiError::bad_request(format!("reading request body: {e}"))),
    }
}

/// Whether the answer about `res` is protobuf: the client prefers it, and the kind has a
/// protobuf form or is a custom resource (whose protobuf answer is kube-apiserver's 406). A
/// built-in kind the generated table lacks answers JSON.
fn protobuf_answers(res: &crate::registry::Resource, version: &str, req: &Req) -> bool {
    let builtin = !res.custom;
    if builtin && !crate::proto::knows(&res.api_version(version), &res.kind) {
        return false;
    }
    crate::proto::wanted(req.header(header::ACCEPT), builtin) == Wanted::Protobuf
}

async fn route_request(
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
        Route::OpenApiV2 => {
            use crate::openapi::V2Format;
            let format =
                crate::openapi::v2_format(req.header(header::ACCEPT)).ok_or_else(|| {
                    ApiError::not_acceptable("only application/json and protobuf are served")
                })?;
            let schemas = shared.db.lock().registry.schemas();
            let doc = crate::openapi::v2(&schemas);
            Ok(match format {
                V2Format::Json => json_response(200, &doc),
                V2Format::Protobuf => {
                    let mut resp = Response::new(full(crate::openapi::v2_protobuf(&doc)));
                    resp.headers_mut().insert(
                        header::CONTENT_TYPE,
                        header::HeaderValue::from_static(crate::openapi::V2_PROTOBUF),
                    );
                    resp
                }
            })
        }
        Route::OpenApiV3Index => {
            let schemas = shared.db.lock().registry.schemas();
            Ok(json_response(200, &crate::openapi::v3_index(&schemas)))
        }
        Route::OpenApiV3(g, v) => {
            let schemas = shared.db.lock().registry.schemas();
            crate::openapi::v3_group_version(&g, &v, &schemas)
                .map(|mut d| {
                    if shared.shard_selectors {
                        crate::shard_selector::document_parameter(&mut d);
                    }
                    json_response(200, &d)
                })
                .ok_or_else(ApiError::path_not_found)
        }
        Route::Resource(t) => resource(shared, t, req).await,
        Route::NotFound => Err(ApiError::path_not_found()),
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
    // The write handlers read the body through `limitedReadBody` after negotiating the output.
    if matches!(
        req.method,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        shared.db.lock().limits.check_body(req.body.len())?;
    }
    if out == Output::Table
        && let Some(v) = req.q("includeObject")
        && !crate::table::valid_include_object(v)
    {
        return Err(ApiError::bad_request(format!(
            "unrecognized includeObject value: {v:?}"
        )));
    }
    let warning = ver.warning.clone();
    let proto = protobuf_answers(&res, &t.version, req);
    let ctx = Ctx {
        shared,
        req,
        res,
        ver,
        t,
        proto,
    };
    let watch = ctx.t.watch_path || req.flag("watch");
    let sub = ctx.t.sub.clone();
    let mut resp = match (&req.method, ctx.t.name.is_some(), sub.as_deref()) {
        (&Method::GET, _, None) if watch => watch::serve(&ctx, out).await?,
        (&Method::GET, false, None) => read::list(&ctx, out).await?,
        (&Method::GET, true, Some("scale")) => write::get_scale(&ctx).await?,
        (&Method::GET, true, _) => read::get(&ctx, out).await?,
        (&Method::POST, false, None) if !ctx.res.namespaced || ctx.t.namespace.is_some() => {
            write::create(&ctx).await?
        }
        (&Method::PUT, true, Some("scale")) => write::put_scale(&ctx).await?,
        (&Method::PUT, true, Some("status")) => write::update(&ctx, Mode::Status).await?,
        (&Method::PUT, true, _) => write::update(&ctx, Mode::Main).await?,
        (&Method::PATCH, true, _) => patch::patch(&ctx).await?,
        (&Method::DELETE, true, None) => write::delete(&ctx).await?,
        // Namespaces have no `deletecollection` (kube-apiserver answers 405).
        (&Method::DELETE, false, None) if ctx.res.verbs.contains(&"deletecollection") => {
            write::delete_collection(&ctx).await?
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    if let Some(w) = warning
        && let Ok(v) = format!("299 - \"{}\"", w.replace('"', "\\\"")).parse()
    {
        resp.headers_mut().insert(header::WARNING, v);
    }
    Ok(resp)
}
