//! Maps a request path to a route.

/// A resource request: `/api/v1/...` or `/apis/<g>/<v>/...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    pub group: String,
    pub version: String,
    pub plural: String,
    pub namespace: Option<String>,
    pub name: Option<String>,
    pub sub: Option<String>,
    /// Deprecated `/watch/` path prefix.
    pub watch_path: bool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Route {
    Version,
    Health,
    ApiVersions,
    GroupList,
    Group(String),
    /// `/api/v1` (group "") or `/apis/<g>/<v>`.
    GroupVersion(String, String),
    OpenApiV2,
    OpenApiV3Index,
    OpenApiV3(String, String),
    Resource(Target),
    NotFound,
}

fn resource(group: &str, version: &str, rest: &[&str]) -> Route {
    let (watch_path, rest) = match rest.first() {
        Some(&"watch") => (true, &rest[1..]),
        _ => (false, rest),
    };
    let mk = |ns: Option<&str>, plural: &str, name: Option<&str>, sub: Option<&str>| {
        Route::Resource(Target {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            namespace: ns.map(String::from),
            name: name.map(String::from),
            sub: sub.map(String::from),
            watch_path,
        })
    };
    match rest {
        [] => Route::GroupVersion(group.into(), version.into()),
        [plural] => mk(None, plural, None, None),
        [plural, name] => mk(None, plural, Some(name), None),
        // `namespaces/<ns>/status` and `/finalize` are subresources of the namespace itself.
        ["namespaces", ns, sub @ ("status" | "finalize")] if group.is_empty() => {
            mk(None, "namespaces", Some(ns), Some(sub))
        }
        ["namespaces", ns, plural] => mk(Some(ns), plural, None, None),
        ["namespaces", ns, plural, name] => mk(Some(ns), plural, Some(name), None),
        ["namespaces", ns, plural, name, sub] => mk(Some(ns), plural, Some(name), Some(sub)),
        [plural, name, sub] => mk(None, plural, Some(name), Some(sub)),
        _ => Route::NotFound,
    }
}

pub fn parse(path: &str) -> Route {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["version"] => Route::Version,
        ["healthz" | "readyz" | "livez", ..] => Route::Health,
        ["api"] => Route::ApiVersions,
        ["api", "v1", rest @ ..] => resource("", "v1", rest),
        ["apis"] => Route::GroupList,
        ["apis", g] => Route::Group(g.to_string()),
        ["apis", g, v, rest @ ..] => resource(g, v, rest),
        ["openapi", "v2"] => Route::OpenApiV2,
        ["openapi", "v3"] => Route::OpenApiV3Index,
        ["openapi", "v3", "api", "v1"] => Route::OpenApiV3(String::new(), "v1".into()),
        ["openapi", "v3", "apis", g, v] => Route::OpenApiV3(g.to_string(), v.to_string()),
        _ => Route::NotFound,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(r: Route) -> Target {
        match r {
            Route::Resource(t) => t,
            other => panic!("not a resource route: {other:?}"),
        }
    }

    #[test]
    fn routes() {
        assert_eq!(
            parse("/api/v1"),
            Route::GroupVersion(String::new(), "v1".into())
        );
        let x = t(parse("/apis/example.com/v1/namespaces/ns/foos/a/status"));
        assert_eq!(
            (
                x.group.as_str(),
                x.namespace.as_deref(),
                x.plural.as_str(),
                x.name.as_deref(),
                x.sub.as_deref()
            ),
            ("example.com", Some("ns"), "foos", Some("a"), Some("status"))
        );
        let ns = t(parse("/api/v1/namespaces/default"));
        assert_eq!(
            (ns.plural.as_str(), ns.name.as_deref(), ns.namespace),
            ("namespaces", Some("default"), None)
        );
        let nss = t(parse("/api/v1/namespaces/default/status"));
        assert_eq!(
            (nss.plural.as_str(), nss.sub.as_deref()),
            ("namespaces", Some("status"))
        );
        let cm = t(parse("/api/v1/namespaces/default/configmaps"));
        assert_eq!(
            (cm.plural.as_str(), cm.namespace.as_deref(), cm.name),
            ("configmaps", Some("default"), None)
        );
        assert!(t(parse("/api/v1/watch/namespaces/d/pods")).watch_path);
        assert_eq!(parse("/apis/g"), Route::Group("g".into()));
        assert_eq!(parse("/nope"), Route::NotFound);
    }
}
