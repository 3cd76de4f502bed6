//! What a request asks to do, as kube-apiserver's `RequestInfoFactory` reads it from the
//! method, path and query (`apiserver/pkg/endpoints/request/requestinfo.go`): the verb
//! (`get`/`list`/`watch`/`create`/...), API group and version, namespace, resource,
//! subresource and name, or, for any other path, a non-resource URL with the method as verb.
use std::collections::BTreeMap;

use http::Method;

/// `authorizer.Attributes` without the user.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Attributes {
    pub resource_request: bool,
    pub verb: String,
    pub path: String,
    pub api_group: String,
    pub api_version: String,
    pub namespace: String,
    pub resource: String,
    pub subresource: String,
    pub name: String,
}

/// A watch or list parameter as the query codec reads a bool: anything but `false`/`0`/empty.
fn query_bool(v: Option<&String>) -> bool {
    v.is_some_and(|v| !matches!(v.to_ascii_lowercase().as_str(), "" | "0" | "false"))
}

/// The name a list or watch names with `fieldSelector=metadata.name=<name>`.
fn name_from_field_selector(query: &BTreeMap<String, String>) -> Option<String> {
    let sel = query.get("fieldSelector")?;
    sel.split(',').find_map(|term| {
        let term = term.trim();
        let rest = term.strip_prefix("metadata.name")?;
        if rest.starts_with("!=") {
            return None;
        }
        let v = rest.strip_prefix("==").or_else(|| rest.strip_prefix('='))?;
        // `IsValidPathSegmentName`: no `/`, `%`, and not `.` or `..`.
        (!v.is_empty() && !v.contains(['/', '%']) && v != "." && v != "..").then(|| v.to_string())
    })
}

/// Reads a request as kube-apiserver does (`/api` and `/apis` are the API prefixes).
pub fn read(method: &Method, path: &str, query: &BTreeMap<String, String>) -> Attributes {
    let mut info = Attributes {
        path: path.to_string(),
        verb: method.as_str().to_ascii_lowercase(),
        ..Default::default()
    };
    let parts: Vec<&str> = path.trim_matches('/').split('/').collect();
    if parts.len() < 3 || !matches!(parts[0], "api" | "apis") {
        return info;
    }
    let mut rest = &parts[1..];
    if parts[0] == "apis" {
        if rest.len() < 3 {
            return info;
        }
        info.api_group = rest[0].to_string();
        rest = &rest[1..];
    }
    info.resource_request = true;
    info.api_version = rest[0].to_string();
    rest = &rest[1..];
    info.verb = match *method {
        Method::POST => "create",
        Method::GET | Method::HEAD => "get",
        Method::PUT => "update",
        Method::PATCH => "patch",
        Method::DELETE => "delete",
        _ => "",
    }
    .to_string();
    if matches!(rest.first(), Some(&("watch" | "proxy"))) {
        if rest.len() < 2 {
            // kube-apiserver refuses to read it; nothing is served there either.
            info.resource_request = false;
            return info;
        }
        info.verb = rest[0].to_string();
        rest = &rest[1..];
    }
    if rest.first() == Some(&"namespaces") && rest.len() > 1 {
        info.namespace = rest[1].to_string();
        // `namespaces/<ns>/status` and `/finalize` are the namespace's own subresources.
        if rest.len() > 2 && !matches!(rest[2], "status" | "finalize") {
            rest = &rest[2..];
        }
    }
    if rest.len() >= 3 && info.verb != "proxy" {
        info.subresource = rest[2].to_string();
    }
    if rest.len() >= 2 {
        info.name = rest[1].to_string();
    }
    if let Some(r) = rest.first() {
        info.resource = r.to_string();
    }
    if info.name.is_empty() && info.verb == "get" {
        info.verb = if query_bool(query.get("watch")) {
            "watch"
        } else {
            "list"
        }
        .to_string();
        if let Some(name) = name_from_field_selector(query) {
            info.name = name;
        }
    }
    if info.name.is_empty() && info.verb == "delete" {
        info.verb = "deletecollection".into();
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(method: Method, path: &str, q: &[(&str, &str)]) -> Attributes {
        let q = q
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        read(&method, path, &q)
    }

    #[test]
    fn verbs_and_parts() {
        let a = r(Method::GET, "/apis/apps/v1/namespaces/ns/deployments", &[]);
        assert_eq!(
            (
                a.verb.as_str(),
                a.api_group.as_str(),
                a.namespace.as_str(),
                a.resource.as_str()
            ),
            ("list", "apps", "ns", "deployments")
        );
        let a = r(Method::GET, "/api/v1/pods", &[("watch", "true")]);
        assert_eq!((a.verb.as_str(), a.namespace.as_str()), ("watch", ""));
        let a = r(Method::GET, "/api/v1/watch/namespaces/ns/pods/p", &[]);
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("watch", "p"));
        let a = r(Method::PUT, "/apis/g/v1/namespaces/ns/foos/a/status", &[]);
        assert_eq!(
            (
                a.verb.as_str(),
                a.resource.as_str(),
                a.name.as_str(),
                a.subresource.as_str()
            ),
            ("update", "foos", "a", "status")
        );
        let a = r(Method::GET, "/api/v1/namespaces/ns", &[]);
        assert_eq!(
            (
                a.verb.as_str(),
                a.resource.as_str(),
                a.name.as_str(),
                a.namespace.as_str()
            ),
            ("get", "namespaces", "ns", "ns")
        );
        let a = r(Method::PUT, "/api/v1/namespaces/ns/finalize", &[]);
        assert_eq!(
            (a.resource.as_str(), a.subresource.as_str()),
            ("namespaces", "finalize")
        );
        let a = r(Method::DELETE, "/api/v1/namespaces/ns/pods", &[]);
        assert_eq!(a.verb, "deletecollection");
        let a = r(
            Method::GET,
            "/api/v1/namespaces/ns/configmaps",
            &[("fieldSelector", "metadata.name=cm1")],
        );
        assert_eq!((a.verb.as_str(), a.name.as_str()), ("list", "cm1"));
        for p in ["/api/v1", "/apis/apps/v1", "/healthz", "/version", "/apis"] {
            let a = r(Method::GET, p, &[]);
            assert!(!a.resource_request, "{p}");
            assert_eq!(a.verb, "get");
        }
    }
}
