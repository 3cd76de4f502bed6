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
    /// The CRD version's `selectableFields` as field selector labels (`spec.color` for
    /// `.spec.color`); empty for built-ins.
    pub selectable: Vec<String>,
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
    /// A built-in kind's printer ([`crate::printers`]).
    Printer(crate::printers::Printer),
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
    /// The verbs discovery lists for the main resource.
    pub verbs: &'static [&'static str],
    /// Which `fieldSelector` labels the resource accepts ([`crate::field_labels`]).
    pub field_labels: crate::field_labels::FieldLabels,
}

/// The verbs of a resource with a store behind it.
pub const VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];

/// [`VERBS`] without `deletecollection` (namespaces).
const VERBS_NO_COLLECTION: &[&str] = &[
    "create", "delete", "get", "list", "patch", "update", "watch",
];

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
                let builtin = (!r.custom && v.schema.is_none())
                    .then(|| {
                        crate::builtin_schemas::definitions().name_of(&r.group, &v.name, &r.kind)
                    })
                    .flatten()
                    .map(str::to_string);
                out.push(ResourceSchema {
                    group: r.group.clone(),
                    version: v.name.clone(),
                    kind: r.kind.clone(),
                    list_kind: r.list_kind.clone(),
                    plural: r.plural.clone(),
                    namespaced: r.namespaced,
                    schema: v.schema.as_ref().map(|s| s.schema().clone()),
                    builtin,
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
            selectable: Vec::new(),
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
            verbs: VERBS,
            field_labels: crate::field_labels::FieldLabels::builtin(group, plural),
        }
    }
}

/// A built-in resource: group, versions (in discovery's priority order; the first is the storage
/// version), plural, kind, short names and [`Traits`].
struct Builtin(
    &'static str,
    &'static [&'static str],
    &'static str,
    &'static str,
    &'static [&'static str],
    Traits,
);

/// What sets the built-in kinds apart from each other (bit set).
type Traits = u16;
const NAMESPACED: Traits = 1;
/// Serves a `/status` subresource.
const STATUS: Traits = 1 << 1;
/// Serves a `/scale` subresource at `.spec.replicas` / `.status.replicas` / `.status.selector`.
const SCALE: Traits = 1 << 2;
/// Objects carry `metadata.generation` (the registry strategy sets it on create and bumps it
/// when the spec changes).
const GENERATION: Traits = 1 << 3;
/// DELETE answers with the object rather than a success `Status` (`ReturnDeletedObject`).
const RETURN_DELETED: Traits = 1 << 4;
/// In the `all` category (`kubectl get all`).
const IN_ALL: Traits = 1 << 5;
/// In the `api-extensions` category (admission configuration, API services).
const API_EXTENSIONS: Traits = 1 << 6;
/// No `deletecollection` verb (namespaces).
const NO_COLLECTION_DELETE: Traits = 1 << 7;

const V1: &[&str] = &["v1"];

/// Every resource a kube-apiserver 1.35 serves by default with a store behind it, but the
/// CRD resource ([`crd_resource`]). Left out, as documented in ARCHITECTURE.md: the create-only
/// review kinds (`authentication.k8s.io`, `authorization.k8s.io`), `bindings` and
/// `componentstatuses`, beta and alpha versions (off by default in 1.35; the gated beta kinds are in [`BETA`]).
#[rustfmt::skip] // one row per kind
const BUILTINS: &[Builtin] = &[
    Builtin("",                                V1, "namespaces",             "Namespace",             &["ns"],     STATUS | RETURN_DELETED | NO_COLLECTION_DELETE),
    Builtin("",                                V1, "configmaps",             "ConfigMap",             &["cm"],     NAMESPACED),
    Builtin("",                                V1, "secrets",                "Secret",                &[],         NAMESPACED),
    Builtin("",                                V1, "events",                 "Event",                 &["ev"],     NAMESPACED),
    Builtin("",                                V1, "services",               "Service",               &["svc"],    NAMESPACED | STATUS | RETURN_DELETED | IN_ALL),
    Builtin("",                                V1, "pods",                   "Pod",                   &["po"],     NAMESPACED | STATUS | GENERATION | RETURN_DELETED | IN_ALL),
    Builtin("",                                V1, "serviceaccounts",        "ServiceAccount",        &["sa"],     NAMESPACED | RETURN_DELETED),
    Builtin("",                                V1, "endpoints",              "Endpoints",             &["ep"],     NAMESPACED),
    Builtin("",                                V1, "limitranges",            "LimitRange",            &["limits"], NAMESPACED),
    Builtin("",                                V1, "nodes",                  "Node",                  &["no"],     STATUS),
    Builtin("",                                V1, "persistentvolumeclaims", "PersistentVolumeClaim", &["pvc"],    NAMESPACED | STATUS | RETURN_DELETED),
    Builtin("",                                V1, "persistentvolumes",      "PersistentVolume",      &["pv"],     STATUS | RETURN_DELETED),
    Builtin("",                                V1, "podtemplates",           "PodTemplate",           &[],         NAMESPACED),
    Builtin("",                                V1, "replicationcontrollers", "ReplicationController", &["rc"],     NAMESPACED | STATUS | SCALE | GENERATION | IN_ALL),
    Builtin("",                                V1, "resourcequotas",         "ResourceQuota",         &["quota"],  NAMESPACED | STATUS),
    Builtin("admissionregistration.k8s.io",    V1, "mutatingwebhookconfigurations",     "MutatingWebhookConfiguration",     &[], GENERATION | API_EXTENSIONS),
    Builtin("admissionregistration.k8s.io",    V1, "validatingwebhookconfigurations",   "ValidatingWebhookConfiguration",   &[], GENERATION | API_EXTENSIONS),
    Builtin("admissionregistration.k8s.io",    V1, "validatingadmissionpolicies",       "ValidatingAdmissionPolicy",        &[], STATUS | GENERATION | API_EXTENSIONS),
    Builtin("admissionregistration.k8s.io",    V1, "validatingadmissionpolicybindings", "ValidatingAdmissionPolicyBinding", &[], GENERATION | API_EXTENSIONS),
    Builtin("apiregistration.k8s.io",          V1, "apiservices",            "APIService",            &[],         STATUS | API_EXTENSIONS),
    Builtin("apps",                            V1, "controllerrevisions",    "ControllerRevision",    &[],         NAMESPACED),
    Builtin("apps",                            V1, "daemonsets",             "DaemonSet",             &["ds"],     NAMESPACED | STATUS | GENERATION | IN_ALL),
    Builtin("apps",                            V1, "deployments",            "Deployment",            &["deploy"], NAMESPACED | STATUS | SCALE | GENERATION | RETURN_DELETED | IN_ALL),
    Builtin("apps",                            V1, "replicasets",            "ReplicaSet",            &["rs"],     NAMESPACED | STATUS | SCALE | GENERATION | IN_ALL),
    Builtin("apps",                            V1, "statefulsets",           "StatefulSet",           &["sts"],    NAMESPACED | STATUS | SCALE | GENERATION | IN_ALL),
    Builtin("autoscaling",          &["v2", "v1"], "horizontalpodautoscalers", "HorizontalPodAutoscaler", &["hpa"], NAMESPACED | STATUS | IN_ALL),
    Builtin("batch",                           V1, "cronjobs",               "CronJob",               &["cj"],     NAMESPACED | STATUS | GENERATION | IN_ALL),
    Builtin("batch",                           V1, "jobs",                   "Job",                   &[],         NAMESPACED | STATUS | GENERATION | IN_ALL),
    Builtin("certificates.k8s.io",             V1, "certificatesigningrequests", "CertificateSigningRequest", &["csr"], STATUS),
    Builtin("coordination.k8s.io",             V1, "leases",                 "Lease",                 &[],         NAMESPACED),
    Builtin("discovery.k8s.io",                V1, "endpointslices",         "EndpointSlice",         &[],         NAMESPACED | GENERATION),
    Builtin("events.k8s.io",                   V1, "events",                 "Event",                 &["ev"],     NAMESPACED),
    Builtin("flowcontrol.apiserver.k8s.io",    V1, "flowschemas",            "FlowSchema",            &[],         STATUS | GENERATION),
    Builtin("flowcontrol.apiserver.k8s.io",    V1, "prioritylevelconfigurations", "PriorityLevelConfiguration", &[], STATUS | GENERATION),
    Builtin("networking.k8s.io",               V1, "ingressclasses",         "IngressClass",          &[],         GENERATION),
    Builtin("networking.k8s.io",               V1, "ingresses",              "Ingress",               &["ing"],    NAMESPACED | STATUS | GENERATION),
    Builtin("networking.k8s.io",               V1, "ipaddresses",            "IPAddress",             &["ip"],     0),
    Builtin("networking.k8s.io",               V1, "networkpolicies",        "NetworkPolicy",         &["netpol"], NAMESPACED | GENERATION),
    Builtin("networking.k8s.io",               V1, "servicecidrs",           "ServiceCIDR",           &[],         STATUS),
    Builtin("node.k8s.io",                     V1, "runtimeclasses",         "RuntimeClass",          &[],         0),
    Builtin("policy",                          V1, "poddisruptionbudgets",   "PodDisruptionBudget",   &["pdb"],    NAMESPACED | STATUS | GENERATION),
    Builtin("rbac.authorization.k8s.io",       V1, "clusterrolebindings",    "ClusterRoleBinding",    &[],         0),
    Builtin("rbac.authorization.k8s.io",       V1, "clusterroles",           "ClusterRole",           &[],         0),
    Builtin("rbac.authorization.k8s.io",       V1, "rolebindings",           "RoleBinding",           &[],         NAMESPACED),
    Builtin("rbac.authorization.k8s.io",       V1, "roles",                  "Role",                  &[],         NAMESPACED),
    Builtin("resource.k8s.io",                 V1, "deviceclasses",          "DeviceClass",           &[],         GENERATION),
    Builtin("resource.k8s.io",                 V1, "resourceclaims",         "ResourceClaim",         &[],         NAMESPACED | STATUS),
    Builtin("resource.k8s.io",                 V1, "resourceclaimtemplates", "ResourceClaimTemplate", &[],         NAMESPACED),
    Builtin("resource.k8s.io",                 V1, "resourceslices",         "ResourceSlice",         &[],         GENERATION),
    Builtin("scheduling.k8s.io",               V1, "priorityclasses",        "PriorityClass",         &["pc"],     RETURN_DELETED),
    Builtin("storage.k8s.io",                  V1, "csidrivers",             "CSIDriver",             &[],         0),
    Builtin("storage.k8s.io",                  V1, "csinodes",               "CSINode",               &[],         0),
    Builtin("storage.k8s.io",                  V1, "csistoragecapacities",   "CSIStorageCapacity",    &[],         NAMESPACED),
    Builtin("storage.k8s.io",                  V1, "storageclasses",         "StorageClass",          &["sc"],     RETURN_DELETED),
    Builtin("storage.k8s.io",                  V1, "volumeattachments",      "VolumeAttachment",      &[],         STATUS | RETURN_DELETED),
    Builtin("storage.k8s.io",                  V1, "volumeattributesclasses", "VolumeAttributesClass", &["vac"],   0),
];

/// Beta kinds, served only when their feature gate and their API version are both on
/// (`--feature-gates`, `--runtime-config`), as `pkg/registry/admissionregistration/rest`
/// installs them in 1.35: the gate named first.
#[rustfmt::skip]
const BETA: &[(&str, Builtin)] = &[
    ("MutatingAdmissionPolicy", Builtin("admissionregistration.k8s.io", &["v1beta1"], "mutatingadmissionpolicies",       "MutatingAdmissionPolicy",        &[], GENERATION | API_EXTENSIONS)),
    ("MutatingAdmissionPolicy", Builtin("admissionregistration.k8s.io", &["v1beta1"], "mutatingadmissionpolicybindings", "MutatingAdmissionPolicyBinding", &[], GENERATION | API_EXTENSIONS)),
];

/// `Warning` sent with every request to a deprecated built-in resource, as kube-apiserver does.
fn deprecation(group: &str, plural: &str) -> Option<&'static str> {
    match (group, plural) {
        ("", "endpoints") => {
            Some("v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice")
        }
        _ => None,
    }
}

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

/// Every built-in resource of [`BUILTINS`], stored without a structural schema (their OpenAPI
/// definitions come from [`crate::builtin_schemas`]).
pub fn builtins() -> Vec<Resource> {
    BUILTINS.iter().map(builtin).collect()
}

/// The beta kinds of [`BETA`] whose gate `gate_on` says is on and whose group version
/// `version_on` says is served.
pub fn beta_builtins(
    gate_on: impl Fn(&str) -> bool,
    version_on: impl Fn(&str) -> bool,
) -> Vec<Resource> {
    BETA.iter()
        .filter(|(gate, b)| {
            gate_on(gate) && b.1.iter().all(|v| version_on(&format!("{}/{v}", b.0)))
        })
        .map(|(_, b)| builtin(b))
        .collect()
}

fn builtin(row: &Builtin) -> Resource {
    {
        let &Builtin(group, versions, plural, kind, short, traits) = row;
        {
            let has = |t: Traits| traits & t != 0;
            let versions = versions
                .iter()
                .enumerate()
                .map(|(i, name)| Version {
                    storage: i == 0,
                    scale: has(SCALE).then(|| ScalePaths {
                        spec_replicas: ".spec.replicas".into(),
                        status_replicas: ".status.replicas".into(),
                        label_selector: Some(".status.selector".into()),
                    }),
                    table: match crate::printers::Printer::of(group, plural) {
                        _ if plural == "events" => TableKind::Events,
                        Some(p) => TableKind::Printer(p),
                        None => TableKind::Columns,
                    },
                    warning: deprecation(group, plural).map(str::to_string),
                    ..Version::plain(name, has(STATUS))
                })
                .collect();
            let mut categories = Vec::new();
            if has(IN_ALL) {
                categories.push("all".to_string());
            }
            if has(API_EXTENSIONS) {
                categories.push("api-extensions".to_string());
            }
            Resource {
                short_names: short.iter().map(|s| s.to_string()).collect(),
                categories,
                generation: has(GENERATION),
                return_deleted: has(RETURN_DELETED),
                verbs: if has(NO_COLLECTION_DELETE) {
                    VERBS_NO_COLLECTION
                } else {
                    VERBS
                },
                versions,
                ..Resource::plain(
                    group,
                    plural,
                    kind,
                    has(NAMESPACED),
                    Version::plain("v1", false),
                )
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::any::TypeId;

    /// Checks the row of `T` (found by group and plural) against k8s-openapi's `Resource` impl;
    /// returns the row's index.
    fn check<T: k8s_openapi::Resource>() -> usize
    where
        T::Scope: 'static,
    {
        let (i, row) = BUILTINS
            .iter()
            .enumerate()
            .find(|(_, b)| b.0 == T::GROUP && b.2 == T::URL_PATH_SEGMENT)
            .unwrap_or_else(|| panic!("no row for {}/{}", T::GROUP, T::URL_PATH_SEGMENT));
        assert_eq!(row.3, T::KIND, "{}", T::URL_PATH_SEGMENT);
        assert!(
            row.1.contains(&T::VERSION),
            "{}: {} not in {:?}",
            T::URL_PATH_SEGMENT,
            T::VERSION,
            row.1
        );
        let namespaced =
            TypeId::of::<T::Scope>() == TypeId::of::<k8s_openapi::NamespaceResourceScope>();
        assert_eq!(
            row.5 & NAMESPACED != 0,
            namespaced,
            "{}",
            T::URL_PATH_SEGMENT
        );
        i
    }

    /// Every row of [`BUILTINS`] agrees with k8s-openapi (v1_35) on plural, kind, group,
    /// version and scope, and every version of every row is checked.
    #[test]
    fn every_builtin_row_matches_k8s_openapi() {
        use k8s_openapi::api::{
            admissionregistration::v1 as admreg, apps::v1 as apps, autoscaling::v1 as as1,
            autoscaling::v2 as as2, batch::v1 as batch, certificates::v1 as certs,
            coordination::v1 as coord, core::v1 as core, discovery::v1 as disc,
            events::v1 as events, flowcontrol::v1 as fc, networking::v1 as net, node::v1 as node,
            policy::v1 as policy, rbac::v1 as rbac, resource::v1 as dra, scheduling::v1 as sched,
            storage::v1 as storage,
        };
        use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apireg;
        let checked = [
            check::<core::Namespace>(),
            check::<core::ConfigMap>(),
            check::<core::Secret>(),
            check::<core::Event>(),
            check::<core::Service>(),
            check::<core::Pod>(),
            check::<core::ServiceAccount>(),
            check::<core::Endpoints>(),
            check::<core::LimitRange>(),
            check::<core::Node>(),
            check::<core::PersistentVolumeClaim>(),
            check::<core::PersistentVolume>(),
            check::<core::PodTemplate>(),
            check::<core::ReplicationController>(),
            check::<core::ResourceQuota>(),
            check::<admreg::MutatingWebhookConfiguration>(),
            check::<admreg::ValidatingWebhookConfiguration>(),
            check::<admreg::ValidatingAdmissionPolicy>(),
            check::<admreg::ValidatingAdmissionPolicyBinding>(),
            check::<apireg::APIService>(),
            check::<apps::ControllerRevision>(),
            check::<apps::DaemonSet>(),
            check::<apps::Deployment>(),
            check::<apps::ReplicaSet>(),
            check::<apps::StatefulSet>(),
            check::<as2::HorizontalPodAutoscaler>(),
            check::<as1::HorizontalPodAutoscaler>(),
            check::<batch::CronJob>(),
            check::<batch::Job>(),
            check::<certs::CertificateSigningRequest>(),
            check::<coord::Lease>(),
            check::<disc::EndpointSlice>(),
            check::<events::Event>(),
            check::<fc::FlowSchema>(),
            check::<fc::PriorityLevelConfiguration>(),
            check::<net::IngressClass>(),
            check::<net::Ingress>(),
            check::<net::IPAddress>(),
            check::<net::NetworkPolicy>(),
            check::<net::ServiceCIDR>(),
            check::<node::RuntimeClass>(),
            check::<policy::PodDisruptionBudget>(),
            check::<rbac::ClusterRoleBinding>(),
            check::<rbac::ClusterRole>(),
            check::<rbac::RoleBinding>(),
            check::<rbac::Role>(),
            check::<dra::DeviceClass>(),
            check::<dra::ResourceClaim>(),
            check::<dra::ResourceClaimTemplate>(),
            check::<dra::ResourceSlice>(),
            check::<sched::PriorityClass>(),
            check::<storage::CSIDriver>(),
            check::<storage::CSINode>(),
            check::<storage::CSIStorageCapacity>(),
            check::<storage::StorageClass>(),
            check::<storage::VolumeAttachment>(),
            check::<storage::VolumeAttributesClass>(),
        ];
        let versions: usize = BUILTINS.iter().map(|b| b.1.len()).sum();
        assert_eq!(
            checked.len(),
            versions,
            "every version of every row is checked"
        );
        for (i, row) in BUILTINS.iter().enumerate() {
            assert!(checked.contains(&i), "row {i} ({}) unchecked", row.2);
        }
    }

    /// Every built-in version has its definition among the served schemas, so the OpenAPI
    /// documents carry it.
    #[test]
    fn every_builtin_has_a_definition() {
        let defs = crate::builtin_schemas::definitions();
        for r in builtins() {
            for v in &r.versions {
                assert!(
                    defs.name_of(&r.group, &v.name, &r.kind).is_some(),
                    "{}/{} {}",
                    r.group,
                    v.name,
                    r.kind
                );
                assert!(
                    defs.name_of(&r.group, &v.name, &r.list_kind).is_some(),
                    "{}/{} {}",
                    r.group,
                    v.name,
                    r.list_kind
                );
            }
        }
    }

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
