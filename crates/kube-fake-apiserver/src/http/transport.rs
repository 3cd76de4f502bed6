//! HTTP transport types: the request as handlers see it, response bodies, content
//! negotiation and the JSON/`Status` responses. A leaf: it knows nothing of routes or storage.
use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http::{HeaderMap, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, combinators::UnsyncBoxBody};
use serde_json::Value;

use crate::status::ApiError;
use crate::util::parse_query;

/// Response body type of every handler (watch bodies stream).
pub type Body = UnsyncBoxBody<Bytes, Infallible>;

pub fn full(b: impl Into<Bytes>) -> Body {
    Full::new(b.into()).boxed_unsync()
}

/// A request with its body already read.
pub struct Req {
    pub method: Method,
    pub path: String,
    pub raw_query: String,
    pub query: BTreeMap<String, String>,
    pub headers: HeaderMap,
    pub body: Bytes,
    /// `Warning` header texts handlers add (e.g. unknown fields under `fieldValidation=Warn`).
    pub warnings: Arc<parking_lot::Mutex<Vec<String>>>,
    /// Who the request runs as (after impersonation); `None` when authorization is off.
    pub user: Option<Arc<crate::auth_config::User>>,
    /// What the request's handling learns for its audit event (set by `dispatch` when an audit
    /// log is on).
    pub audit: crate::audit::Context,
}

impl Req {
    pub fn from_parts(req: Request<Bytes>) -> Self {
        let (parts, body) = req.into_parts();
        let raw_query = parts.uri.query().unwrap_or("").to_string();
        Req {
            method: parts.method,
            path: parts.uri.path().to_string(),
            query: parse_query(Some(&raw_query)),
            raw_query,
            headers: parts.headers,
            body,
            warnings: Arc::default(),
            user: None,
            audit: None,
        }
    }
    pub fn q(&self, k: &str) -> Option<&str> {
        self.query.get(k).map(String::as_str)
    }
    pub fn flag(&self, k: &str) -> bool {
        matches!(self.q(k), Some("true" | "1"))
    }
    pub fn header(&self, k: header::HeaderName) -> &str {
        self.headers
            .get(k)
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
    }
    /// Media type of the body without parameters.
    pub fn content_type(&self) -> String {
        self.header(header::CONTENT_TYPE)
            .split(';')
            .next()
            .unwrap_or("")
            .trim()
            .to_ascii_lowercase()
    }
}

/// What representation the client asked for in `Accept`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Output {
    Json,
    Table,
    PartialMetadata,
}

/// Picks the first representation from `Accept` this server can produce; 406 when none.
pub fn negotiate(accept: &str) -> Result<Output, ApiError> {
    if accept.trim().is_empty() {
        return Ok(Output::Json);
    }
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let params: BTreeMap<String, String> = parts
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let proto = media == crate::proto::MEDIA_TYPE;
        if !proto
            && !matches!(
                media.as_str(),
                "application/json" | "*/*" | "application/*" | "application/yaml"
            )
        {
            continue;
        }
        match params.get("as").map(String::as_str) {
            // Tables have no protobuf form.
            Some("Table") if proto => continue,
            None => return Ok(Output::Json),
            Some("Table") => return Ok(Output::Table),
            Some("PartialObjectMetadata" | "PartialObjectMetadataList") => {
                return Ok(Output::PartialMetadata);
            }
            // e.g. APIGroupDiscoveryList: not served, so fall through to the next choice like a server without it.
            Some(_) => continue,
        }
    }
    Err(ApiError::not_acceptable(
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
    ))
}

pub fn json_response(code: u16, v: &Value) -> Response<Body> {
    let mut body = serde_json::to_vec(v).unwrap_or_default();
    body.push(b'\n');
    Response::builder()
        .status(StatusCode::from_u16(code).unwrap_or(StatusCode::OK))
        .header(header::CONTENT_TYPE, "application/json")
        .body(full(body))
        .unwrap_or_else(|_| Response::new(full(Bytes::new())))
}

pub fn error_response(e: &ApiError) -> Response<Body> {
    let mut r = json_response(e.code, &e.to_status());
    if let Some(secs) = e.retry_after
        && let Ok(v) = secs.to_string().parse()
    {
        r.headers_mut().insert(header::RETRY_AFTER, v);
    }
    r
}

/// The answer in protobuf for a client that prefers it: a JSON object or `Status` becomes its
/// envelope; an object without a protobuf form (a custom resource) becomes kube-apiserver's 406
/// (its serializer fails to encode `unstructured.Unstructured`, after any write took effect).
/// Streams (watch) and non-JSON answers pass through.
pub async fn protobuf_response(resp: Response<Body>) -> Response<Body> {
    let ct = resp
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if ct != "application/json" {
        return resp;
    }
    let (mut parts, body) = resp.into_parts();
    let Ok(collected) = body.collect().await;
    let bytes = collected.to_bytes();
    let Ok(v) = serde_json::from_slice::<Value>(&bytes) else {
        return Response::from_parts(parts, full(bytes));
    };
    let (code, out) = match crate::proto::encode(&v) {
        Some(b) => (parts.status, b),
        None => {
            let status = ApiError::not_acceptable(crate::proto::not_marshalable()).to_status();
            match crate::proto::encode(&status) {
                Some(b) => (StatusCode::NOT_ACCEPTABLE, b),
                None => return Response::from_parts(parts, full(bytes)),
            }
        }
    };
    parts.status = code;
    parts.headers.insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static(crate::proto::MEDIA_TYPE),
    );
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, full(out))
}
