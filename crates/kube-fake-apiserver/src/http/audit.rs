//! One request's audit events (see [`crate::audit`]): built from the request, what its
//! handling recorded and its response, at the level and stages the policy gives.
use std::sync::Arc;

use http::{Response, header};
use http_body_util::BodyExt;
use serde_json::{Map, Value, json};

use super::{Body, Req, full};
use crate::audit::Auditor;
use crate::audit::policy::{self, Level, Stage};
use crate::auth::request_info::Attributes;
use crate::auth_config::User;

/// A timestamp as `metav1.MicroTime` writes it.
fn micro_time(t: jiff::Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%S.%6fZ").to_string()
}

fn user_json(u: &User) -> Value {
    let mut m = Map::new();
    m.insert("username".into(), json!(u.name));
    if !u.uid.is_empty() {
        m.insert("uid".into(), json!(u.uid));
    }
    if !u.groups.is_empty() {
        m.insert("groups".into(), json!(u.groups));
    }
    if !u.extra.is_empty() {
        m.insert("extra".into(), json!(u.extra));
    }
    Value::Object(m)
}

fn without_managed_fields(v: &mut Value) {
    if let Some(m) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        m.remove("managedFields");
    }
    if let Some(items) = v.get_mut("items").and_then(Value::as_array_mut) {
        items.iter_mut().for_each(without_managed_fields);
    }
}

fn request_of(a: &Attributes) -> policy::Request<'_> {
    policy::Request {
        resource_request: a.resource_request,
        verb: &a.verb,
        path: &a.path,
        api_group: &a.api_group,
        namespace: &a.namespace,
        resource: &a.resource,
        subresource: &a.subresource,
        name: &a.name,
    }
}

/// Writes the request's events (its level permitting) and hands the response back (read
/// whole for `responseObject` at `RequestResponse`).
pub async fn log(
    auditor: &Arc<Auditor>,
    req: &Req,
    received: jiff::Timestamp,
    resp: Response<Body>,
) -> Response<Body> {
    let attrs = crate::auth::request_info::read(&req.method, &req.path, &req.query);
    let mut record = crate::audit::Record::default();
    crate::audit::record(&req.audit, |r| record = std::mem::take(r));
    // Nobody authenticated (a 401): not logged.
    let Some(user) = record.user.take() else {
        return resp;
    };
    let decision = auditor.decide(&user, &request_of(&attrs));
    if decision.level == Level::None {
        return resp;
    }
    let id = crate::util::uid();
    let mut base = Map::new();
    base.insert("kind".into(), json!("Event"));
    base.insert("apiVersion".into(), json!("audit.k8s.io/v1"));
    base.insert("level".into(), json!(decision.level.as_str()));
    base.insert("auditID".into(), json!(id));
    let uri = if req.raw_query.is_empty() {
        req.path.clone()
    } else {
        format!("{}?{}", req.path, req.raw_query)
    };
    base.insert("requestURI".into(), json!(uri));
    base.insert("verb".into(), json!(attrs.verb));
    base.insert("user".into(), user_json(&user));
    if let Some(i) = &record.impersonated {
        base.insert("impersonatedUser".into(), user_json(i));
    }
    base.insert("sourceIPs".into(), json!(["127.0.0.1"]));
    let agent = req.header(header::USER_AGENT);
    if !agent.is_empty() {
        base.insert("userAgent".into(), json!(agent));
    }
    let request_object = match attrs.verb.as_str() {
        "create" | "update" => crate::handlers::decode_body(req).ok(),
        // `LogRequestPatch`: the patch as sent (JSON, or an apply's YAML).
        "patch" => serde_json::from_slice(&req.body).ok().or_else(|| {
            let text = std::str::from_utf8(&req.body).ok()?;
            kube_codegen_crd::read::yaml_value("patch", text).ok()
        }),
        _ => None,
    };
    if attrs.resource_request {
        base.insert("objectRef".into(), object_ref(&attrs, None));
    }
    let stamp = move |ev: &mut Map<String, Value>, stage: Stage, at: jiff::Timestamp| {
        ev.insert("stage".into(), json!(stage.as_str()));
        ev.insert(
            "requestReceivedTimestamp".into(),
            json!(micro_time(received)),
        );
        ev.insert("stageTimestamp".into(), json!(micro_time(at)));
    };
    let omitted = |s: Stage| decision.omit_stages.contains(&s);
    if !omitted(Stage::RequestReceived) {
        let mut ev = base.clone();
        stamp(&mut ev, Stage::RequestReceived, received);
        auditor.write(&Value::Object(ev));
    }
    let watch = attrs.verb == "watch";
    // A watch is also logged when its response starts; its stream ends later.
    let stages: Vec<Stage> = [Stage::ResponseStarted, Stage::ResponseComplete]
        .into_iter()
        .filter(|s| (watch || *s == Stage::ResponseComplete) && !omitted(*s))
        .collect();
    if stages.is_empty() {
        return resp;
    }
    let mut ev = base;
    if attrs.resource_request {
        ev.insert(
            "objectRef".into(),
            object_ref(&attrs, request_object.as_ref()),
        );
    }
    let (parts, body) = resp.into_parts();
    let json_body = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|ct| ct.starts_with("application/json"));
    // A failure's `Status` is the response status; a body is only read when it is needed.
    let wants_body = !watch
        && json_body
        && (decision.level >= Level::RequestResponse || !parts.status.is_success());
    let (body, response) = if wants_body {
        let bytes = body
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        let value = serde_json::from_slice::<Value>(&bytes).ok();
        (full(bytes), value)
    } else {
        (body, None)
    };
    let code = parts.status.as_u16();
    let status = match &response {
        Some(Value::Object(s)) if s.get("kind") == Some(&json!("Status")) => {
            let mut s = s.clone();
            s.remove("kind");
            s.remove("apiVersion");
            s.insert("code".into(), json!(code));
            Value::Object(s)
        }
        _ => json!({"metadata": {}, "code": code}),
    };
    ev.insert("responseStatus".into(), status);
    if decision.level >= Level::Request
        && let Some(mut o) = request_object
    {
        if decision.omit_managed_fields {
            without_managed_fields(&mut o);
        }
        ev.insert("requestObject".into(), o);
    }
    if decision.level >= Level::RequestResponse
        && let Some(mut o) = response
    {
        if decision.omit_managed_fields {
            without_managed_fields(&mut o);
        }
        ev.insert("responseObject".into(), o);
    }
    let annotations: Map<String, Value> = record
        .annotations
        .iter()
        .filter(|(_, (_, level))| decision.level >= *level)
        .map(|(k, (v, _))| (k.clone(), json!(v)))
        .collect();
    if !annotations.is_empty() {
        ev.insert("annotations".into(), Value::Object(annotations));
    }
    let mut body = body;
    for stage in stages {
        let mut ev = ev.clone();
        if watch && stage == Stage::ResponseComplete {
            // Written when the stream ends (the client left or the server closed it).
            let auditor = auditor.clone();
            body = Completing {
                inner: body,
                on_end: Some(Box::new(move || {
                    stamp(&mut ev, stage, jiff::Timestamp::now());
                    auditor.write(&Value::Object(ev));
                })),
            }
            .boxed_unsync();
        } else {
            stamp(&mut ev, stage, jiff::Timestamp::now());
            auditor.write(&Value::Object(ev));
        }
    }
    Response::from_parts(parts, body)
}

/// A response body that runs `on_end` once it is dropped: at the end of a watch's stream.
struct Completing {
    inner: Body,
    on_end: Option<Box<dyn FnOnce() + Send>>,
}

impl hyper::body::Body for Completing {
    type Data = bytes::Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        std::pin::Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Completing {
    fn drop(&mut self) {
        if let Some(f) = self.on_end.take() {
            f();
        }
    }
}

/// `objectRef`: what the request names, completed from the request's object (a create's name
/// and namespace) as `LogRequestObject` does.
fn object_ref(a: &Attributes, object: Option<&Value>) -> Value {
    let meta = |k: &str| {
        object
            .and_then(|o| o.pointer(&format!("/metadata/{k}")))
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let or_meta = |v: &str, k: &str| {
        if v.is_empty() { meta(k) } else { v.to_string() }
    };
    let mut m = Map::new();
    let mut put = |k: &str, v: String| {
        if !v.is_empty() {
            m.insert(k.into(), json!(v));
        }
    };
    put("resource", a.resource.clone());
    put("namespace", or_meta(&a.namespace, "namespace"));
    put("name", or_meta(&a.name, "name"));
    put("uid", meta("uid"));
    put("apiGroup", a.api_group.clone());
    put("apiVersion", a.api_version.clone());
    put("resourceVersion", meta("resourceVersion"));
    put("subresource", a.subresource.clone());
    Value::Object(m)
}
