//! Which resources the server serves: built-in kinds and those registered by CRDs.
use std::collections::BTreeMap;
use std::sync::Arc;

use crate::openapi::ResourceSchema;
use crate::schema::ObjectSchema;
use crate::table::PrinterColumn;

/// `events.k8s.io`, the group of the newer Events API (its events are stored as core ones).
pub const EVENTS_GROUP: &str = "events.k8s.io";

/// JSON paths of a scale subresource (`.spec.replicas` style, as CRDs spell them).
#[derive(Debug, Clone, PartialEq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

impl ScalePaths {
    /// The paths as the object validator takes them.
    pub fn to_crd(&self) -> kube_codegen_crd::Scale {
        kube_codegen_crd::Scale {
            spec_replicas_path: self.spec_replicas.clone(),
            status_replicas_path: self.status_replicas.clone(),
            label_selector_path: self.label_selector.clone(),
        }
    }
}

/// One version of a resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    pub name: String,
    pub served: bool,
    pub storage: bool,
    /// The structural schema with its CEL rules compiled (once, when the CRD is registered).
    pub schema: Option<Arc<ObjectSchema>>,
    pub columns: Vec<PrinterColumn>,
    pub status: bool,
    pub scale: Option<ScalePaths>,
    /// `deprecationWarning` sent back as a `Warning` header when the version is deprecated.
    pub warning: Option<String>,
    /// Which Table the version serves.
    pub table: TableKind,
}

/// The Table a resource's version serves (`Accept: application/json;as=Table`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableKind {
    /// `Name` and the printer columns (`Age` when there are none), as for custom resources.
    Columns,
    /// The generic registry's `Name` + `Created At` (the CRD resource itself).
    CreatedAt,
    /// The Event printer's columns (both Event APIs).
    Events,
}

/// A served resource, version independent (all versions share one store).
#[derive(Debug, Clone, PartialEq)]
pub struct Resource {
    pub group: String,
    pub plural: String,
    pub singular: String,
    pub kind: String,
    pub list_kind: String,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub namespaced: bool,
    pub versions: Vec<Version>,
    /// Objects carry `metadata.generation` (custom resources, deployments, CRDs).
    pub generation: bool,
    /// DELETE returns the object rather than a success `Status`.
    pub return_deleted: bool,
    /// Defined by a CRD (strategic merge patch is refused).
    pub custom: bool,
    /// The CRD's conversion webhook (`strategy: Webhook`); `None`: only apiVersion changes.
    pub conversion: Option<Arc<crate::conversion_config::Webhook>>,
}

impl Resource {
    /// The `(group, resource)` this resource's objects are stored under: both Event APIs share
    /// core `events` (as kube-apiserver stores them, `/registry/events`); every other resource is
    /// stored under its own.
    pub fn storage(&self) -> (&str, &str) {
        if self.group == EVENTS_GROUP && self.plural == "events" {
            ("", "events")
        } else {
            (&self.group, &self.plural)
        }
    }
    pub fn version(&self, v: &str) -> Option<&Version> {
        self.versions.iter().find(|x| x.name == v && x.served)
    }
    /// The version objects are stored in: the one marked `storage`, served or not (a CRD may
    /// stop serving its storage version while objects are still written in it); the first
    /// served one when none is marked (built-in resources).
    pub fn storage_version(&self) -> &str {
        self.versions
            .iter()
            .find(|v| v.storage)
            .or_else(|| self.versions.iter().find(|v| v.served))
            .map(|v| v.name.as_str())
            .unwrap_or("v1")
    }
    pub fn api_version(&self, v: &str) -> String {
        if self.group.is_empty() {
            v.to_string()
        } else {
            format!("{}/{v}", self.group)
        }
    }
}

/// Kubernetes version ordering: GA before beta before alpha, higher numbers first, others alphabetically last.
pub fn version_priority(v: &str) -> (u8, i64, i64, String) {
    let parse = |s: &str| -> Option<(u8, i64, i64)> {
        let rest = s.strip_prefix('v')?;
        let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
        let major: i64 = digits.parse().ok()?;
        let tail = &rest[digits.len()..];
        if tail.is_empty() {
            return Some((0, -major, 0));
        }
        for (label, rank) in [("beta", 1u8), ("alpha", 2u8)] {
            if let Some(n) = tail.strip_prefix(label) {
                let minor: i64 = n.parse().ok()?;
                return Some((rank, -major, -minor));
            }
        }
        None
    };
    match parse(v) {
        Some((r, a, b)) => (r, a, b, String::new()),
        None => (3, 0, 0, v.to_string()),
    }
}

#[derive(Debug, Default, Clone)]
pub struct Registry {
    resources: BTreeMap<(String, String), Arc<Resource>>,
    /// Bumped by every change, so the garbage collector knows owner kinds may resolve anew.
    generation: u64,
}

impl Registry {
    pub fn insert(&mut self, r: Resource) {
        self.generation += 1;
        self.resources
            .insert((r.group.clone(), r.plural.clone()), Arc::new(r));
    }
    pub fn remove(&mut self, group: &str, plural: &str) -> Option<Arc<Resource>> {
        self.generation += 1;
        self.resources
            .remove(&(group.to_string(), plural.to_string()))
    }
    /// Changes so far (see the field).
    pub fn generation(&self) -> u64 {
        self.generation
    }
    pub fn get(&self, group: &str, plural: &str) -> Option<&Arc<Resource>> {
        self.resources.get(&(group.to_string(), plural.to_string()))
    }
    /// A resource that serves `version`.
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<Arc<Resource>> {
        let r = self.get(group, plural)?;
        r.version(version)?;
        Some(r.clone())
    }
    /// The resource serving `kind` in `group` (what an owner reference names).
    pub fn by_kind(&self, group: &str, kind: &str) -> Option<&Arc<Resource>> {
        self.resources
            .values()
            .find(|r| r.group == group && r.kind == kind)
    }
    /// Groups with their served versions in priority order.
    pub fn groups(&self) -> Vec<(String, Vec<String>)> {
        let mut map: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for r in self.resources.values() {
            let e = map.entry(r.group.clone()).or_default();
            for v in r.versions.iter().filter(|v| v.served) {
                if !e.contains(&v.name) {
                    e.push(v.name.clone());
                }
            }
        }
        let mut out: Vec<(String, Vec<String>)> = map
            .into_iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(g, mut v)| {
                v.sort_by_key(|x| version_priority(x));
                (g, v)
            })
            .collect();
        // Built-in groups first (those without a dot or ending in k8s.io), like the real server.
        out.sort_by_key(|(g, _)| {
            (
                !(g.is_empty() || !g.contains('.') || g.ends_with(".k8s.io")),
                g.clone(),
            )
        });
        out
    }
    /// Resources served in one group/version.
    pub fn in_group_version(&self, group: &str, version: &str) -> Vec<(&Resource, &Version)> {
        self.resources
            .values()
            .filter(|r| r.group == group)
            .filter_map(|r| r.version(version).map(|v| (&**r, v)))
            .collect()
    }
    pub fn schemas(&self) -> Vec<ResourceSchema> {
        let mut out = Vec::new();
        for r in self.resources.values() {
            for v in r.versions.iter().filter(|v| v.served) {
                out.push(ResourceSchema {
                    group: r.group.clone(),
                    version: v.name.clone(),
                    kind: r.kind.clone(),
                    list_kind: r.list_kind.clone(),
                    plural: r.plural.clone(),
                    namespaced: r.namespaced,
                    schema: v.schema.as_ref().map(|s| s.schema().clone()),
                });
            }
        }
        out
    }
}

/// A kind to serve without a CRD, like the built-ins (see `FakeApiServer::register_kind`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct KindSpec {
    /// API group (`""` for the core group).
    pub group: String,
    /// The one version served (`v1`).
    pub version: String,
    /// Kind, e.g. `Job`.
    pub kind: String,
    /// Resource name, e.g. `jobs`.
    pub plural: String,
    /// Objects live in a namespace (otherwise cluster-scoped).
    pub namespaced: bool,
    /// Short names for kubectl (`kubectl get cj`), listed in discovery.
    pub short_names: Vec<String>,
    /// Serve a `/status` subresource (the main resource then ignores `.status`).
    pub status: bool,
    /// Objects carry `metadata.generation`.
    pub generation: bool,
}

impl KindSpec {
    /// A namespaced kind with a status subresource and generations, like most workload kinds.
    pub fn namespaced(group: &str, version: &str, kind: &str, plural: &str) -> Self {
        KindSpec {
            group: group.into(),
            version: version.into(),
            kind: kind.into(),
            plural: plural.into(),
            namespaced: true,
            short_names: Vec::new(),
            status: true,
            generation: true,
        }
    }

    pub(crate) fn into_resource(self) -> Resource {
        Resource {
            short_names: self.short_names,
            generation: self.generation,
            ..Resource::plain(
                &self.group,
                &self.plural,
                &self.kind,
                self.namespaced,
                Version::plain(&self.version, self.status),
            )
        }
    }
}

impl Version {
    /// A served storage version without a schema, printer columns or scale subresource.
    fn plain(name: &str, status: bool) -> Version {
        Version {
            name: name.into(),
            served: true,
            storage: true,
            schema: None,
            columns: Vec::new(),
            status,
            scale: None,
            warning: None,
            table: TableKind::Columns,
        }
    }
}

impl Resource {
    /// A resource defined by the server rather than a CRD, with one version; singular and list
    /// kind follow from the kind as they do for every built-in.
    fn plain(
        group: &str,
        plural: &str,
        kind: &str,
        namespaced: bool,
        version: Version,
    ) -> Resource {
        Resource {
            group: group.into(),
            plural: plural.into(),
            singular: kind.to_lowercase(),
            kind: kind.into(),
            list_kind: format!("{kind}List"),
            short_names: Vec::new(),
            categories: Vec::new(),
            namespaced,
            versions: vec![version],
            generation: false,
            return_deleted: true,
            custom: false,
            conversion: None,
        }
    }
}

/// A built-in kind: group, version, plural, kind, short names and [`Traits`].
struct Builtin(
    &'static str,
    &'static str,
    &'static str,
    &'static str,
    &'static [&'static str],
    Traits,
);

/// What sets the built-in kinds apart from each other (bit set).
type Traits = u8;
const NAMESPACED: Traits = 1;
/// Serves a `/status` subresource.
const STATUS: Traits = 2;
/// Serves a `/scale` subresource at `.spec.replicas` / `.status.replicas` / `.status.selector`.
const SCALE: Traits = 4;
/// Objects carry `metadata.generation`.
const GENERATION: Traits = 8;
/// DELETE answers with the object rather than a success `Status`.
const RETURN_DELETED: Traits = 16;
/// In the `all` category (`kubectl get all`).
const IN_ALL: Traits = 32;

#[rustfmt::skip] // one row per kind
const BUILTINS: &[Builtin] = &[
    Builtin("",                    "v1", "namespaces",      "Namespace",      &["ns"],     STATUS | RETURN_DELETED),
    Builtin("",                    "v1", "configmaps",      "ConfigMap",      &["cm"],     NAMESPACED),
    Builtin("",                    "v1", "secrets",         "Secret",         &[],         NAMESPACED),
    Builtin("",                    "v1", "events",          "Event",          &["ev"],     NAMESPACED),
    Builtin("",                    "v1", "services",        "Service",        &["svc"],    NAMESPACED | STATUS | RETURN_DELETED | IN_ALL),
    Builtin("",                    "v1", "pods",            "Pod",            &["po"],     NAMESPACED | STATUS | GENERATION | RETURN_DELETED | IN_ALL),
    Builtin("",                    "v1", "serviceaccounts", "ServiceAccount", &["sa"],     NAMESPACED | RETURN_DELETED),
    Builtin("apps",                "v1", "deployments",     "Deployment",     &["deploy"], NAMESPACED | STATUS | SCALE | GENERATION | RETURN_DELETED | IN_ALL),
    Builtin("events.k8s.io",       "v1", "events",          "Event",          &["ev"],     NAMESPACED),
    Builtin("coordination.k8s.io", "v1", "leases",          "Lease",          &[],         NAMESPACED),
];

/// The CRD resource itself; always registered because CRDs are how kinds get added.
pub fn crd_resource() -> Resource {
    Resource {
        short_names: vec!["crd".into(), "crds".into()],
        categories: vec!["api-extensions".into()],
        generation: true,
        ..Resource::plain(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            "CustomResourceDefinition",
            false,
            Version {
                table: TableKind::CreatedAt,
                ..Version::plain("v1", true)
            },
        )
    }
}

/// The built-in kinds a controller usually touches, stored without schemas.
pub fn builtins() -> Vec<Resource> {
    BUILTINS
        .iter()
        .map(|&Builtin(group, version, plural, kind, short, traits)| {
            let has = |t: Traits| traits & t != 0;
            let version = Version {
                scale: has(SCALE).then(|| ScalePaths {
                    spec_replicas: ".spec.replicas".into(),
                    status_replicas: ".status.replicas".into(),
                    label_selector: Some(".status.selector".into()),
                }),
                table: if plural == "events" {
                    TableKind::Events
                } else {
                    TableKind::Columns
                },
                ..Version::plain(version, has(STATUS))
            };
            Resource {
                short_names: short.iter().map(|s| s.to_string()).collect(),
                categories: if has(IN_ALL) {
                    vec!["all".into()]
                } else {
                    Vec::new()
                },
                generation: has(GENERATION),
                return_deleted: has(RETURN_DELETED),
                ..Resource::plain(group, plural, kind, has(NAMESPACED), version)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_sort_like_kubernetes() {
        let mut v = vec![
            "v1alpha1", "foo", "v2beta1", "v1", "v1beta2", "v2", "v10beta3",
        ];
        v.sort_by_key(|x| version_priority(x));
        assert_eq!(
            v,
            [
                "v2", "v1", "v10beta3", "v2beta1", "v1beta2", "v1alpha1", "foo"
            ]
        );
    }
}
