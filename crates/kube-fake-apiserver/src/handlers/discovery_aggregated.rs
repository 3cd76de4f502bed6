//! Aggregated discovery (`apidiscovery.k8s.io` `APIGroupDiscoveryList`): `/api` and `/apis` as one
//! document each, with every resource of every version, which kubectl 1.30+ and client-go ask
//! for first (`Accept: application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList`).
use std::collections::BTreeMap;
use std::sync::Arc;

use http::{Response, header};
use serde_json::{Value, json};

use crate::http::{Body, json_response};
use crate::registry::{Registry, Resource, Version};
use crate::state::Shared;

/// `v2` or `v2beta1` when the client's `Accept` prefers aggregated discovery (JSON) to the
/// plain documents; `None` for everything else (protobuf ranges are skipped: not served).
pub fn wanted(accept: &str) -> Option<&'static str> {
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or("").to_ascii_lowercase();
        let params: BTreeMap<String, String> = parts
            .filter_map(|p| p.split_once('='))
            .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
            .collect();
        let is_json = matches!(media.as_str(), "application/json" | "*/*" | "application/*");
        if !is_json {
            continue;
        }
        let param = |k: &str| params.get(k).map(String::as_str);
        match (param("g"), param("v"), param("as")) {
            (None, None, None) => return None,
            (Some("apidiscovery.k8s.io"), Some("v2"), Some("APIGroupDiscoveryList")) => {
                return Some("v2");
            }
            (Some("apidiscovery.k8s.io"), Some("v2beta1"), Some("APIGroupDiscoveryList")) => {
                return Some("v2beta1");
            }
            _ => continue,
        }
    }
    None
}

fn gvk(group: &str, version: &str, kind: &str) -> Value {
    json!({"group": group, "version": version, "kind": kind})
}

fn resource(r: &Resource, v: &Version) -> Value {
    let mut out = json!({
        "resource": r.plural,
        "responseKind": gvk(&r.group, &v.name, &r.kind),
        "scope": if r.namespaced { "Namespaced" } else { "Cluster" },
        "singularResource": r.singular,
        "verbs": r.verbs,
    });
    if !r.short_names.is_empty() {
        out["shortNames"] = json!(r.short_names);
    }
    if !r.categories.is_empty() {
        out["categories"] = json!(r.categories);
    }
    let mut subs = Vec::new();
    if v.scale.is_some() {
        subs.push(
            json!({"subresource": "scale", "responseKind": gvk("autoscaling", "v1", "Scale"),
                         "verbs": ["get", "patch", "update"]}),
        );
    }
    if v.status {
        subs.push(
            json!({"subresource": "status", "responseKind": gvk(&r.group, &v.name, &r.kind),
                         "verbs": ["get", "patch", "update"]}),
        );
    }
    if !subs.is_empty() {
        out["subresources"] = Value::Array(subs);
    }
    out
}

/// One `APIGroupDiscovery`: the group's versions in priority order.
fn group(reg: &Registry, name: &str, versions: &[String]) -> Value {
    let versions: Vec<Value> = versions
        .iter()
        .map(|v| {
            let resources: Vec<Value> = reg
                .in_group_version(name, v)
                .into_iter()
                .map(|(r, ver)| resource(r, ver))
                .collect();
            json!({"version": v, "resources": resources, "freshness": "Current"})
        })
        .collect();
    let mut meta = json!({"creationTimestamp": null});
    if !name.is_empty() {
        meta["name"] = json!(name);
    }
    json!({"metadata": meta, "versions": versions})
}

/// The document for `/api` (`core`) or `/apis`, in `version` (`v2` or `v2beta1`).
pub fn document(shared: &Arc<Shared>, core: bool, version: &str) -> Value {
    let db = shared.db.lock();
    let items: Vec<Value> = db
        .registry
        .groups()
        .iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(g, vs)| group(&db.registry, g, vs))
        .collect();
    json!({
        "kind": "APIGroupDiscoveryList",
        "apiVersion": format!("apidiscovery.k8s.io/{version}"),
        "metadata": {},
        "items": items,
    })
}

/// The response, with the Content-Type clients check before decoding it as aggregated.
pub fn respond(shared: &Arc<Shared>, core: bool, version: &str) -> Response<Body> {
    let mut resp = json_response(200, &document(shared, core, version));
    let ct = format!("application/json;g=apidiscovery.k8s.io;v={version};as=APIGroupDiscoveryList");
    if let Ok(v) = ct.parse() {
        resp.headers_mut().insert(header::CONTENT_TYPE, v);
    }
    resp.headers_mut()
        .insert(header::VARY, header::HeaderValue::from_static("Accept"));
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accept_order_decides() {
        let kubectl = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json";
        assert_eq!(wanted(kubectl), Some("v2"));
        assert_eq!(
            wanted("application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"),
            Some("v2beta1")
        );
        assert_eq!(
            wanted(
                "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json"
            ),
            None
        );
        assert_eq!(
            wanted(
                "application/json, application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
            ),
            None
        );
        assert_eq!(wanted(""), None);
    }
}
