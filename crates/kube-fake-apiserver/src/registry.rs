//! Which resources the server serves: built-in kinds and those registered by CRDs.
use std::collections::BTreeMap;
use std::sync::Arc;

use serde_json::Value;

use crate::openapi::ResourceSchema;
use crate::table::PrinterColumn;

/// JSON paths of a scale subresource (`.spec.replicas` style, as CRDs spell them).
#[derive(Debug, Clone, PartialEq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

/// One version of a resource.
#[derive(Debug, Clone, PartialEq)]
pub struct Version {
    pub name: String,
    pub served: bool,
    pub storage: bool,
    pub schema: Option<Value>,
    pub columns: Vec<PrinterColumn>,
    pub status: bool,
    pub scale: Option<ScalePaths>,
    /// `deprecationWarning` sent back as a `Warning` header when the version is deprecated.
    pub warning: Option<String>,
    /// Tables are the generic registry's `Name` + `Created At` (the CRD resource itself).
    pub created_at_table: bool,
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
}

impl Resource {
    pub fn version(&self, v: &str) -> Option<&Version> {
        self.versions.iter().find(|x| x.name == v && x.served)
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
}

impl Registry {
    pub fn insert(&mut self, r: Resource) {
        self.resources
            .insert((r.group.clone(), r.plural.clone()), Arc::new(r));
    }
    pub fn remove(&mut self, group: &str, plural: &str) -> Option<Arc<Resource>> {
        self.resources
            .remove(&(group.to_string(), plural.to_string()))
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
                    schema: v.schema.clone(),
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
    pub version: String,
    pub kind: String,
    /// Resource name, e.g. `jobs`.
    pub plural: String,
    pub namespaced: bool,
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
            singular: self.kind.to_lowercase(),
            list_kind: format!("{}List", self.kind),
            group: self.group,
            plural: self.plural,
            kind: self.kind,
            short_names: self.short_names,
            categories: Vec::new(),
            namespaced: self.namespaced,
            versions: vec![Version {
                name: self.version,
                served: true,
                storage: true,
                schema: None,
                columns: Vec::new(),
                status: self.status,
                scale: None,
                warning: None,
                created_at_table: false,
            }],
            generation: self.generation,
            return_deleted: true,
            custom: false,
        }
    }
}

struct Builtin {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    short: &'static [&'static str],
    namespaced: bool,
    status: bool,
    scale: bool,
    generation: bool,
    return_deleted: bool,
}

const BUILTINS: &[Builtin] = &[
    Builtin {
        group: "",
        version: "v1",
        plural: "namespaces",
        kind: "Namespace",
        short: &["ns"],
        namespaced: false,
        status: true,
        scale: false,
        generation: false,
        return_deleted: true,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "configmaps",
        kind: "ConfigMap",
        short: &["cm"],
        namespaced: true,
        status: false,
        scale: false,
        generation: false,
        return_deleted: false,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "secrets",
        kind: "Secret",
        short: &[],
        namespaced: true,
        status: false,
        scale: false,
        generation: false,
        return_deleted: false,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "events",
        kind: "Event",
        short: &["ev"],
        namespaced: true,
        status: false,
        scale: false,
        generation: false,
        return_deleted: false,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "services",
        kind: "Service",
        short: &["svc"],
        namespaced: true,
        status: true,
        scale: false,
        generation: false,
        return_deleted: true,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "pods",
        kind: "Pod",
        short: &["po"],
        namespaced: true,
        status: true,
        scale: false,
        generation: true,
        return_deleted: true,
    },
    Builtin {
        group: "",
        version: "v1",
        plural: "serviceaccounts",
        kind: "ServiceAccount",
        short: &["sa"],
        namespaced: true,
        status: false,
        scale: false,
        generation: false,
        return_deleted: true,
    },
    Builtin {
        group: "apps",
        version: "v1",
        plural: "deployments",
        kind: "Deployment",
        short: &["deploy"],
        namespaced: true,
        status: true,
        scale: true,
        generation: true,
        return_deleted: true,
    },
    Builtin {
        group: "events.k8s.io",
        version: "v1",
        plural: "events",
        kind: "Event",
        short: &["ev"],
        namespaced: true,
        status: false,
        scale: false,
        generation: false,
        return_deleted: false,
    },
    Builtin {
        group: "coordination.k8s.io",
        version: "v1",
        plural: "leases",
        kind: "Lease",
        short: &[],
        namespaced: true,
        status: false,
        scale: false,
        generation: false,
        return_deleted: false,
    },
];

/// The CRD resource itself; always registered because CRDs are how kinds get added.
pub fn crd_resource() -> Resource {
    Resource {
        group: "apiextensions.k8s.io".into(),
        plural: "customresourcedefinitions".into(),
        singular: "customresourcedefinition".into(),
        kind: "CustomResourceDefinition".into(),
        list_kind: "CustomResourceDefinitionList".into(),
        short_names: vec!["crd".into(), "crds".into()],
        categories: vec!["api-extensions".into()],
        namespaced: false,
        versions: vec![Version {
            name: "v1".into(),
            served: true,
            storage: true,
            schema: None,
            columns: vec![],
            status: true,
            scale: None,
            warning: None,
            created_at_table: true,
        }],
        generation: true,
        return_deleted: true,
        custom: false,
    }
}

/// The built-in kinds a controller usually touches, stored without schemas.
pub fn builtins() -> Vec<Resource> {
    BUILTINS
        .iter()
        .map(|b| Resource {
            group: b.group.into(),
            plural: b.plural.into(),
            singular: b.kind.to_lowercase(),
            kind: b.kind.into(),
            list_kind: format!("{}List", b.kind),
            short_names: b.short.iter().map(|s| s.to_string()).collect(),
            categories: if matches!(b.plural, "pods" | "services" | "deployments") {
                vec!["all".into()]
            } else {
                vec![]
            },
            namespaced: b.namespaced,
            versions: vec![Version {
                name: b.version.into(),
                served: true,
                storage: true,
                schema: None,
                columns: vec![],
                status: b.status,
                scale: b.scale.then(|| ScalePaths {
                    spec_replicas: ".spec.replicas".into(),
                    status_replicas: ".status.replicas".into(),
                    label_selector: Some(".status.selector".into()),
                }),
                warning: None,
                created_at_table: false,
            }],
            generation: b.generation,
            return_deleted: b.return_deleted,
            custom: false,
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
