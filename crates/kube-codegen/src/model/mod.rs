//! The language-level IR: resources, versions, type definitions, fields. Every naming decision is
//! made here, once; `emit` only prints.

pub mod conversion;
mod convert;
mod dedupe;
pub(crate) use dedupe::ty_default;
mod known;
pub mod naming;
pub(crate) mod pruning;
mod version_scope;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use crate::{Error, Options, VersionSelection};
use kube_codegen_crd::{Crd, PrinterColumn, Scale};

/// A type reference inside a field or variant.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Ty {
    Bool,
    I32,
    I64,
    /// `serde_json::Number`: keeps `1` and `1.5` exactly as sent.
    Number,
    String,
    /// k8s-openapi's `IntOrString` (a 32-bit integer or a string): only where the schema bounds
    /// every integer it accepts to `i32` (`minimum` and `maximum`), so every value fits.
    IntOrString,
    /// The generated tree's own `IntOrString` (a 64-bit integer or a string, emitted once at the
    /// tree's root): an unbounded `x-kubernetes-int-or-string`, which a server stores as int64.
    IntOrString64,
    Json,
    Vec(Box<Ty>),
    Map(Box<Ty>),
    Option(Box<Ty>),
    /// Index into [`Resource::types`] while building; resolved to a name before emission.
    Named(usize),
    /// A well-known Kubernetes type from `k8s-openapi` (see `known`).
    Known(KnownType),
}

/// The `k8s-openapi` types a schema node can be recognised as (see `known`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KnownType {
    Condition,
    LabelSelector,
    ObjectReference,
    OwnerReference,
    LocalObjectReference,
    SecretKeySelector,
    ConfigMapKeySelector,
}

impl KnownType {
    /// Path segments of the type inside `k8s_openapi`.
    pub fn path(self) -> &'static [&'static str] {
        match self {
            KnownType::Condition => &["apimachinery", "pkg", "apis", "meta", "v1", "Condition"],
            KnownType::LabelSelector => {
                &["apimachinery", "pkg", "apis", "meta", "v1", "LabelSelector"]
            }
            KnownType::OwnerReference => &[
                "apimachinery",
                "pkg",
                "apis",
                "meta",
                "v1",
                "OwnerReference",
            ],
            KnownType::ObjectReference => &["api", "core", "v1", "ObjectReference"],
            KnownType::LocalObjectReference => &["api", "core", "v1", "LocalObjectReference"],
            KnownType::SecretKeySelector => &["api", "core", "v1", "SecretKeySelector"],
            KnownType::ConfigMapKeySelector => &["api", "core", "v1", "ConfigMapKeySelector"],
        }
    }

    /// Whether the type implements `Default` (`Condition` holds a `Time`, which has none).
    pub fn has_default(self) -> bool {
        self != KnownType::Condition
    }
}

/// How a field's presence and `null` map to Rust.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Presence {
    /// Required, not nullable: `T`.
    Required,
    /// Optional: `Option<T>`, absent when `None`.
    Optional,
    /// Required and nullable: `Option<T>`, always serialized (`null` for `None`).
    RequiredNullable,
    /// Optional and nullable: `Option<Option<T>>`; outer `None` = absent, `Some(None)` = `null`.
    OptionalNullable,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Field {
    /// Identifier text as printed (`r#type`, `self_`).
    pub ident: String,
    pub wire: String,
    pub ty: Ty,
    pub presence: Presence,
    pub docs: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TypeBody {
    Struct {
        fields: Vec<Field>,
        /// `#[serde(flatten)]` map of everything not declared: (field ident, map value type).
        flatten: Option<(String, Ty)>,
    },
    /// Unit variants renamed to the wire value, then `#[serde(untagged)] Other(String)`.
    StringEnum {
        /// (variant ident, wire value)
        variants: Vec<(String, String)>,
        other: String,
        default: Option<usize>,
    },
    /// Newtype over `i64` with associated constants, so unknown numbers survive.
    IntEnum {
        consts: Vec<(String, i64)>,
        default: Option<i64>,
    },
    /// `#[serde(untagged)]` enum, one variant per JSON type.
    Untagged { variants: Vec<(String, Ty)> },
}

#[derive(Debug, Clone)]
pub struct TypeDef {
    pub name: String,
    pub pointer: String,
    pub docs: Vec<String>,
    pub body: TypeBody,
    /// Filled by finalisation.
    pub default: bool,
    /// `Some(target)`: emitted as `pub type name = target;` (structural duplicate).
    pub alias_of: Option<usize>,
    pub extra_derives: Vec<String>,
    /// Name of its apply configuration (structs and aliases of structs; decided at version scope).
    pub apply_name: Option<String>,
}

/// One served version of one CRD.
#[derive(Debug, Clone)]
pub struct Resource {
    pub crd_name: String,
    pub source: PathBuf,
    pub group: String,
    pub version: String,
    pub kind: String,
    /// Module holding this kind (`foo` for `Foo`).
    pub module: String,
    /// Root type name (UpperCamelCase of the kind).
    pub root: String,
    pub plural: String,
    pub singular: String,
    pub short_names: Vec<String>,
    pub list_kind: String,
    pub categories: Vec<String>,
    pub namespaced: bool,
    pub storage: bool,
    pub served: bool,
    /// `Some(message)` when the version is deprecated.
    pub deprecated: Option<String>,
    pub status_subresource: bool,
    pub scale: Option<Scale>,
    pub printer_columns: Vec<PrinterColumn>,
    pub root_docs: Vec<String>,
    /// Root fields besides apiVersion/kind/metadata.
    pub root_fields: Vec<Field>,
    pub root_flatten: Option<(String, Ty)>,
    pub root_default: bool,
    pub root_extra_derives: Vec<String>,
    pub types: Vec<TypeDef>,
    pub uses_nullable: bool,
    pub schema: std::sync::Arc<serde_json::Value>,
    /// Names of the generated API of this kind (decided at version scope).
    pub api: KindApi,
}

/// The names of a kind's generated API: types in the version's namespace, accessor methods on
/// the version's client and informers.
#[derive(Debug, Clone, Default)]
pub struct KindApi {
    /// `FooApply`.
    pub apply: String,
    /// `FooLister`.
    pub lister: String,
    /// `FooNamespaceLister` (namespaced kinds).
    pub namespace_lister: String,
    /// `FooInformer`.
    pub informer: String,
    /// `foos`: the typed client, informer and namespace-lister accessor.
    pub accessor: String,
    /// `foos_all`: the all-namespaces client accessor (namespaced kinds).
    pub accessor_all: String,
}

#[derive(Debug, Clone)]
pub struct VersionMod {
    pub module: String,
    pub version: String,
    pub resources: Vec<Resource>,
    /// `SamplecontrollerV1alpha1Client`: the group-version's typed client.
    pub client: String,
    /// `SamplecontrollerV1alpha1Informers`: the group-version's informer accessors.
    pub informers: String,
    /// `samplecontroller_v1alpha1`: the clientset's accessor for this group-version.
    pub clientset_accessor: String,
}

#[derive(Debug, Clone)]
pub struct GroupMod {
    pub module: String,
    pub group: String,
    pub versions: Vec<VersionMod>,
    /// `SamplecontrollerInformers`: the group's informer accessors (one per version).
    pub informers: String,
    /// Conversions between the versions of its kinds (planned whatever `--emit` says, so
    /// turning the output on renames nothing).
    pub conversions: conversion::GroupConversions,
}

#[derive(Debug, Clone, Default)]
pub struct Model {
    pub groups: Vec<GroupMod>,
}

impl Ty {
    /// Whether this type is or holds [`Ty::IntOrString64`].
    fn holds_int_or_string64(&self) -> bool {
        match self {
            Ty::IntOrString64 => true,
            Ty::Vec(t) | Ty::Map(t) | Ty::Option(t) => t.holds_int_or_string64(),
            _ => false,
        }
    }
}

impl Model {
    /// Whether any field, map value or variant is the tree's own `IntOrString`, which is then
    /// emitted at the root.
    pub fn uses_int_or_string64(&self) -> bool {
        let fields = |fields: &[Field], flatten: &Option<(String, Ty)>| {
            fields.iter().any(|f| f.ty.holds_int_or_string64())
                || flatten
                    .as_ref()
                    .is_some_and(|(_, t)| t.holds_int_or_string64())
        };
        self.groups
            .iter()
            .flat_map(|g| &g.versions)
            .flat_map(|v| &v.resources)
            .any(|r| {
                fields(&r.root_fields, &r.root_flatten)
                    || r.types.iter().any(|t| match &t.body {
                        TypeBody::Struct {
                            fields: fs,
                            flatten,
                        } => fields(fs, flatten),
                        TypeBody::Untagged { variants } => {
                            variants.iter().any(|(_, t)| t.holds_int_or_string64())
                        }
                        TypeBody::StringEnum { .. } | TypeBody::IntEnum { .. } => false,
                    })
            })
    }
}

/// Builds the model. Of CRDs with the same `metadata.name`, the last in input order is used, as
/// `kubectl apply -f` (files in order, documents in order) leaves the last one on the server;
/// each earlier one is reported. Under the default `--versions served`, a CRD that serves no
/// version generates nothing, with a warning.
pub fn build(crds: &[Crd], options: &Options, warnings: &mut Vec<String>) -> Result<Model, Error> {
    let derives = options.parsed_derives()?;
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    let mut unique: Vec<&Crd> = Vec::new();
    for crd in crds {
        if let Some(&at) = seen.get(crd.name.as_str()) {
            let earlier = unique[at];
            warnings.push(format!(
                "{}: document {}: CRD {} is defined again in {} (document {}); the later one is used, as `kubectl apply -f` leaves the last one applied",
                earlier.source.display(),
                earlier.doc_index,
                crd.name,
                crd.source.display(),
                crd.doc_index,
            ));
            unique[at] = crd;
            continue;
        }
        seen.insert(&crd.name, unique.len());
        unique.push(crd);
    }
    if options.versions == VersionSelection::Served {
        for crd in &unique {
            if !crd.versions.iter().any(|v| v.served) {
                warnings.push(format!(
                    "{}: document {}: CRD {} serves no version (served: false in every version), so nothing is generated for it (`--versions all` generates its versions anyway)",
                    crd.source.display(),
                    crd.doc_index,
                    crd.name,
                ));
            }
        }
    }

    // Group modules: first DNS label, unless two different groups share it.
    let groups: BTreeSet<&str> = unique.iter().map(|c| c.group.as_str()).collect();
    let mut by_label: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for g in &groups {
        by_label
            .entry(naming::module_ident(g.split('.').next().unwrap_or(g)))
            .or_default()
            .push(g);
    }
    let mut group_module: BTreeMap<&str, String> = BTreeMap::new();
    for (label, gs) in &by_label {
        for g in gs {
            let m = if gs.len() == 1 {
                label.clone()
            } else {
                naming::module_ident(g)
            };
            group_module.insert(g, m);
        }
    }

    // Each selected (CRD, version) converts independently; in parallel, results in input order.
    let mut jobs: Vec<(&Crd, &kube_codegen_crd::CrdVersion)> = Vec::new();
    for crd in &unique {
        let mut names = BTreeSet::new();
        for v in &crd.versions {
            // Only a CRD taken under `--lenient` can repeat a version name (the server refuses
            // it): one apiVersion, one type, the first definition's.
            if !names.insert(v.name.as_str()) {
                warnings.push(format!(
                    "{}: document {}: CRD {} defines version {:?} more than once; only the first is generated",
                    crd.source.display(),
                    crd.doc_index,
                    crd.name,
                    v.name,
                ));
                continue;
            }
            let wanted = match &options.versions {
                VersionSelection::Served => v.served,
                VersionSelection::All => true,
                VersionSelection::List(l) => l.iter().any(|x| x == &v.name),
            };
            if wanted {
                jobs.push((crd, v));
            }
        }
    }
    let converted = crate::par::map(&jobs, |(crd, v)| {
        convert::resource(crd, v, options, &derives)
    });

    let mut tree: BTreeMap<String, GroupMod> = BTreeMap::new();
    for ((crd, v), res) in jobs.iter().zip(converted) {
        let res = res?;
        let gm = group_module[crd.group.as_str()].clone();
        let group = tree.entry(gm.clone()).or_insert_with(|| GroupMod {
            informers: format!("{}Informers", naming::pascal(&gm)),
            module: gm,
            group: crd.group.clone(),
            versions: Vec::new(),
            conversions: Default::default(),
        });
        let vm = naming::module_ident(&v.name);
        match group.versions.iter_mut().find(|x| x.module == vm) {
            Some(x) => x.resources.push(res),
            None => group.versions.push(VersionMod {
                module: vm,
                version: v.name.clone(),
                resources: vec![res],
                client: String::new(),
                informers: String::new(),
                clientset_accessor: String::new(),
            }),
        }
    }
    if let VersionSelection::List(wanted) = &options.versions {
        for w in wanted {
            if !crds.iter().any(|c| c.versions.iter().any(|v| &v.name == w)) {
                warnings.push(format!("--versions: no CRD has a version named {w:?}"));
            }
        }
    }
    let mut groups: Vec<GroupMod> = tree
        .into_values()
        .filter(|g| !g.versions.is_empty())
        .collect();
    for g in &mut groups {
        g.versions.sort_by(|a, b| a.module.cmp(&b.module));
        for v in &mut g.versions {
            v.resources
                .sort_by(|a, b| a.kind.cmp(&b.kind).then(a.crd_name.cmp(&b.crd_name)));
            // Kind modules: snake kind; same-module kinds (rare) get a documented numeric suffix.
            let wanted: Vec<(String, String, bool)> = v
                .resources
                .iter()
                .map(|r| (naming::module_ident(&r.kind), r.crd_name.clone(), false))
                .collect();
            let mut taken = BTreeSet::new();
            let names = naming::assign_unique(&wanted, &mut taken, "_");
            let wanted_roots: Vec<(String, String, bool)> = v
                .resources
                .iter()
                .map(|r| (r.root.clone(), r.crd_name.clone(), false))
                .collect();
            let roots = naming::assign_unique(&wanted_roots, &mut BTreeSet::new(), "");
            for ((r, m), root) in v.resources.iter_mut().zip(names).zip(roots) {
                r.module = m;
                r.root = root;
            }
            version_scope::assign(&g.module, v, &derives);
        }
    }
    for (g, c) in conversion::plan(&groups).into_iter().enumerate() {
        groups[g].conversions = c;
    }
    Ok(Model { groups })
}

/// Per-type extra derives: global ones plus `Type=Derive` entries.
#[derive(Debug, Clone, Default)]
pub struct Derives {
    pub global: Vec<String>,
    pub per_type: BTreeMap<String, Vec<String>>,
}

impl Derives {
    pub fn for_type(&self, name: &str) -> Vec<String> {
        let mut out = self.global.clone();
        if let Some(x) = self.per_type.get(name) {
            for d in x {
                if !out.contains(d) {
                    out.push(d.clone());
                }
            }
        }
        out
    }
}
