//! Discovery documents: `/version`, `/api`, `/apis`, `/apis/<g>`, `/api/v1`, `/apis/<g>/<v>`.
use std::sync::Arc;

use serde_json::{Value, json};

use crate::registry::Resource;
use crate::state::Shared;
use crate::status::ApiError;

pub fn version() -> Value {
    json!({
        "major": "1",
        "minor": "35",
        "emulationMajor": "1",
        "emulationMinor": "35",
        "gitVersion": "v1.35.0-kube-fake-apiserver",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64"
    })
}

fn address(shared: &Shared) -> Value {
    json!([{"clientCIDR": "0.0.0.0/0", "serverAddress": shared.address.lock().clone()}])
}

pub fn api_versions(shared: &Arc<Shared>) -> Value {
    json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": address(shared)})
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    json!({"name": name, "versions": vs, "preferredVersion": vs.first().cloned().unwrap_or(json!({}))})
}

pub fn group_list(shared: &Arc<Shared>) -> Value {
    let groups = shared.db.lock().registry.groups();
    let list: Vec<Value> = groups
        .iter()
        .filter(|(g, _)| !g.is_empty())
        .map(|(g, vs)| group_json(g, vs))
        .collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": list})
}

pub fn group(shared: &Arc<Shared>, name: &str) -> Result<Value, ApiError> {
    let groups = shared.db.lock().registry.groups();
    let (g, vs) = groups
        .iter()
        .find(|(g, _)| g == name && !g.is_empty())
        .ok_or_else(ApiError::path_not_found)?;
    let mut v = group_json(g, vs);
    v["kind"] = json!("APIGroup");
    v["apiVersion"] = json!("v1");
    Ok(v)
}

/// `discovery.StorageVersionHash`: the first 8 bytes of SHA-256 over `group/version/kind`, in
/// standard base64. Clients (the storage version migrator) compare it to notice a new storage
/// version; only its equality matters, but we give the server's exact value.
pub fn storage_version_hash(group: &str, version: &str, kind: &str) -> String {
    use base64::Engine as _;
    let gvk = format!("{group}/{version}/{kind}");
    let digest = ring::digest::digest(&ring::digest::SHA256, gvk.as_bytes());
    base64::engine::general_purpose::STANDARD.encode(&digest.as_ref()[..8])
}

/// The `storageVersionHash` of a resource's main entry in `/apis/<g>/<v>` (aggregated discovery
/// has no such field). Built-ins hash the kind they are stored as (both Event APIs store core
/// `v1` Events); a CRD hashes its storage version only while that version is served, as the
/// CRD discovery controller looks for it among the served versions (none: no hash).
fn hash_of(r: &Resource) -> Option<String> {
    if r.custom {
        let storage = r.versions.iter().find(|v| v.served && v.storage)?;
        return Some(storage_version_hash(&r.group, &storage.name, &r.kind));
    }
    let (group, _) = r.storage();
    Some(storage_version_hash(group, r.storage_version(), &r.kind))
}

pub fn resource_list(shared: &Arc<Shared>, group: &str, version: &str) -> Result<Value, ApiError> {
    let db = shared.db.lock();
    let found = db.registry.in_group_version(group, version);
    if found.is_empty() {
        return Err(ApiError::path_not_found());
    }
    let mut resources = Vec::new();
    for (r, v) in found {
        let mut main = json!({
            "name": r.plural,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": r.verbs,
        });
        if !r.short_names.is_empty() {
            main["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            main["categories"] = json!(r.categories);
        }
        if let Some(hash) = hash_of(r) {
            main["storageVersionHash"] = json!(hash);
        }
        resources.push(main);
        if v.status {
            resources.push(json!({
                "name": format!("{}/status", r.plural), "singularName": "", "namespaced": r.namespaced,
                "kind": r.kind, "verbs": ["get", "patch", "update"],
            }));
        }
        if v.scale.is_some() {
            resources.push(json!({
                "name": format!("{}/scale", r.plural), "singularName": "", "namespaced": r.namespaced,
                "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"],
            }));
        }
    }
    let gv = if group.is_empty() {
        version.to_string()
    } else {
        format!("{group}/{version}")
    };
    Ok(
        json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_the_servers() {
        // Values a kube-apiserver serves in /api/v1 and /apis/apps/v1.
        assert_eq!(storage_version_hash("", "v1", "Pod"), "xPOwRZ+Yhw8=");
        assert_eq!(storage_version_hash("", "v1", "ConfigMap"), "qFsyl6wFWjQ=");
        assert_eq!(
            storage_version_hash("apps", "v1", "Deployment"),
            "8aSe+NMegvE="
        );
    }
}
