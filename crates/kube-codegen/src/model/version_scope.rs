//! Names decided across one version: every generated type of a version is reachable at
//! `group::version::Name` (as a Go user finds every type of a version in one package), so the
//! kinds' nested types, their apply configurations and the generated API types share one
//! namespace, and the collision rule decides it.
//!
//! Order of precedence for a contested name: root types (decided before, by kind), then the
//! generated API names derived from them (`FooApply`, `FooLister`, `FooNamespaceLister`,
//! `FooInformer`, the group-version's client and informers), then nested types (by CRD name and
//! JSON pointer), then nested apply configurations. Every name is reserved whatever `--emit`
//! asks for, so turning an output on or off renames nothing.

use std::collections::BTreeSet;

use super::naming::{self, assign_unique};
use super::{Derives, TypeBody, TypeDef, VersionMod};

/// Accessor names a kind's plural may not take: the methods the generated client, informer and
/// lister types have besides the per-kind accessors.
const RESERVED_METHODS: &[&str] = &[
    "new",
    "client",
    "factory",
    "list",
    "get",
    "has_synced",
    "informer",
    "lister",
];

/// Whether a type gets an apply configuration: structs, and aliases of structs.
fn is_struct(t: &TypeDef, types: &[TypeDef]) -> bool {
    let body = match t.alias_of {
        Some(target) => &types[target].body,
        None => &t.body,
    };
    matches!(body, TypeBody::Struct { .. })
}

pub fn assign(group_module: &str, v: &mut VersionMod, derives: &Derives) {
    let gv = format!(
        "{}{}",
        naming::pascal(group_module.trim_start_matches("r#")),
        naming::pascal(&v.module)
    );
    let mut taken: BTreeSet<String> = v.resources.iter().map(|r| r.root.clone()).collect();

    // Generated API names (exact claims) and nested types (path-derived) in one assignment.
    let mut wanted: Vec<(String, String, bool)> = Vec::new();
    for r in &v.resources {
        for suffix in ["Apply", "Lister", "NamespaceLister", "Informer"] {
            wanted.push((
                format!("{}{suffix}", r.root),
                format!("0\0{}\0{suffix}", r.crd_name),
                true,
            ));
        }
    }
    wanted.push((format!("{gv}Client"), "0\0".into(), true));
    wanted.push((format!("{gv}Informers"), "0\0".into(), true));
    for r in &v.resources {
        for t in &r.types {
            wanted.push((
                t.name.clone(),
                format!("1\0{}\0{}", r.crd_name, t.pointer),
                false,
            ));
        }
    }
    let names = assign_unique(&wanted, &mut taken, "");
    let mut names = names.into_iter();
    for r in &mut v.resources {
        r.api.apply = names.next().unwrap_or_default();
        r.api.lister = names.next().unwrap_or_default();
        r.api.namespace_lister = names.next().unwrap_or_default();
        r.api.informer = names.next().unwrap_or_default();
    }
    v.client = names.next().unwrap_or_default();
    v.informers = names.next().unwrap_or_default();
    for r in &mut v.resources {
        for t in &mut r.types {
            t.name = names.next().unwrap_or_default();
        }
    }

    // Apply configurations of nested structs follow their type's final name.
    let mut wanted = Vec::new();
    for r in &v.resources {
        for t in &r.types {
            if is_struct(t, &r.types) {
                wanted.push((
                    format!("{}Apply", t.name),
                    format!("{}\0{}", r.crd_name, t.pointer),
                    false,
                ));
            }
        }
    }
    let mut names = assign_unique(&wanted, &mut taken, "").into_iter();
    for r in &mut v.resources {
        let flags: Vec<bool> = r.types.iter().map(|t| is_struct(t, &r.types)).collect();
        for (t, has) in r.types.iter_mut().zip(flags) {
            t.apply_name = if has { names.next() } else { None };
        }
    }

    // Per-type derives are asked for by final name.
    for r in &mut v.resources {
        r.root_extra_derives = derives.for_type(&r.root);
        for t in &mut r.types {
            t.extra_derives = derives.for_type(&t.name);
        }
    }

    // Accessors: the plural in snake case, and `<plural>_all` for namespaced kinds.
    let mut wanted = Vec::new();
    for r in &v.resources {
        let plural = naming::snake(&r.plural);
        wanted.push((plural.clone(), format!("{}\0", r.crd_name), true));
        if r.namespaced {
            wanted.push((
                format!("{plural}_all"),
                format!("{}\0all", r.crd_name),
                true,
            ));
        }
    }
    let mut taken: BTreeSet<String> = RESERVED_METHODS.iter().map(|s| s.to_string()).collect();
    let mut names = assign_unique(&wanted, &mut taken, "_").into_iter();
    for r in &mut v.resources {
        r.api.accessor = naming::field_ident(&names.next().unwrap_or_default());
        if r.namespaced {
            r.api.accessor_all = naming::field_ident(&names.next().unwrap_or_default());
        }
    }
    v.clientset_accessor = format!(
        "{}_{}",
        group_module.trim_start_matches("r#"),
        v.module.trim_start_matches("r#")
    );
}
