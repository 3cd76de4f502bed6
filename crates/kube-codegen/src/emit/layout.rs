//! Output layouts: module tree (default), single file, standalone crate.
//!
//! Module tree: `mod.rs` declares one module per group; `<group>/mod.rs` one per version;
//! `<group>/<version>/mod.rs` one per kind and re-exports each root type; `<group>/<version>/<kind>.rs`
//! holds the kind. Single file: the same tree as inline modules. Crate: `Cargo.toml` (from
//! `crates/kube-codegen/templates/crate/Cargo.toml.in`, shipped inside the crate) and `src/lib.rs` (the single-file content).

use std::collections::BTreeMap;
use std::path::PathBuf;

use proc_macro2::TokenStream;
use quote::quote;

use super::ident;
use super::resource::{Piece, kind_module, kind_pieces, piece_text};
use crate::model::{GroupMod, Model, VersionMod};
use crate::options::Emit;
use crate::render::{HEADER, format_file};
use crate::{Error, Options};

/// What the clients, listers, informers and apply configurations add to a `--crate`'s
/// dependencies (the runtime is versioned in lockstep with the generator).
const RUNTIME_DEPENDENCIES: &str = "kube = { version = \"5\", default-features = false, features = [\"client\"] }\nkube-codegen-runtime = \"{{version}}\"\n";

/// Not named `Cargo.toml`: Cargo would take its folder for a nested package and leave it out of
/// the published `.crate`.
const CARGO_TEMPLATE: &str = include_str!("../../templates/crate/Cargo.toml.in");

/// Every name of every kind module, re-exported at the version (names are unique there: see
/// `model::version_scope`), then the group-version's client and informers.
fn version_tail(g: &GroupMod, v: &VersionMod, emit: Emit) -> TokenStream {
    let items = v.resources.iter().map(|r| {
        let m = ident(&r.module);
        let allow = super::allow_deprecated(r);
        quote!(#allow pub use self::#m::*;)
    });
    let api = super::api::version_items(g, v, emit);
    quote!(#(#items)* #api)
}

/// The whole tree as inline modules.
pub fn single_tokens(model: &Model, emit: Emit) -> TokenStream {
    let groups = model.groups.iter().map(|g| {
        let gm = ident(&g.module);
        let gdoc = format!(" API group `{}`.", g.group);
        let versions = g.versions.iter().map(|v| {
            let vm = ident(&v.module);
            let kinds = v.resources.iter().map(|r| {
                let km = ident(&r.module);
                let body = kind_module(r, emit);
                quote!(pub mod #km { #body })
            });
            let tail = version_tail(g, v, emit);
            let vdoc = format!(" Version `{}` of `{}`.", v.version, g.group);
            quote!(#[doc = #vdoc] pub mod #vm { #(#kinds)* #tail })
        });
        let group_api = super::api::group_items(g, emit);
        let conversion = emit
            .conversion
            .then(|| super::conversion::group_module(g))
            .flatten()
            .map(|(decl, body)| quote!(#decl { #body }));
        quote!(#[doc = #gdoc] pub mod #gm { #(#versions)* #conversion #group_api })
    });
    let root_api = super::api::root_items(model, emit);
    let root_types = super::int_or_string64_items(model);
    quote!(#(#groups)* #root_types #root_api)
}

pub fn files(model: &Model, options: &Options) -> Result<BTreeMap<PathBuf, String>, Error> {
    let emit = options.emit;
    let mut out = BTreeMap::new();
    if let Some(name) = &options.crate_name {
        let lib = format_file(single_tokens(model, emit))?;
        out.insert(PathBuf::from("src/lib.rs"), lib);
        let runtime = if emit.needs_runtime() {
            RUNTIME_DEPENDENCIES.replace("{{version}}", crate::VERSION)
        } else {
            String::new()
        };
        let k8s_feature = format!("v{}", crate::KUBERNETES_VERSION.replace('.', "_"));
        let toml = CARGO_TEMPLATE
            .replace("{{name}}", name)
            .replace("{{k8s_feature}}", &k8s_feature)
            .replace("{{runtime}}", &runtime);
        out.insert(PathBuf::from("Cargo.toml"), toml);
        return Ok(out);
    }
    if let Some(name) = &options.single_file {
        out.insert(
            PathBuf::from(name),
            format_file(single_tokens(model, emit))?,
        );
        return Ok(out);
    }
    let top = model.groups.iter().map(|g| {
        let gm = ident(&g.module);
        let gdoc = format!(" API group `{}`.", g.group);
        quote!(#[doc = #gdoc] pub mod #gm;)
    });
    let root_api = super::api::root_items(model, emit);
    let root_types = super::int_or_string64_items(model);
    out.insert(
        PathBuf::from("mod.rs"),
        format_file(quote!(#(#top)* #root_types #root_api))?,
    );
    let mut kind_files = Vec::new();
    for g in &model.groups {
        let gdir = PathBuf::from(&g.module.trim_start_matches("r#").to_string());
        let vs = g.versions.iter().map(|v| {
            let vm = ident(&v.module);
            let vdoc = format!(" Version `{}` of `{}`.", v.version, g.group);
            quote!(#[doc = #vdoc] pub mod #vm;)
        });
        let group_api = super::api::group_items(g, emit);
        let conversion = emit
            .conversion
            .then(|| super::conversion::group_module(g))
            .flatten();
        let conversion_decl = conversion.as_ref().map(|(decl, _)| quote!(#decl;));
        out.insert(
            gdir.join("mod.rs"),
            format_file(quote!(#(#vs)* #conversion_decl #group_api))?,
        );
        if let Some((_, body)) = conversion {
            let file = format!("{}.rs", g.conversions.module.trim_start_matches("r#"));
            out.insert(gdir.join(file), format_file(body)?);
        }
        for v in &g.versions {
            let vdir = gdir.join(v.module.trim_start_matches("r#"));
            let kinds = v.resources.iter().map(|r| {
                let km = ident(&r.module);
                quote!(pub mod #km;)
            });
            let tail = version_tail(g, v, emit);
            out.insert(vdir.join("mod.rs"), format_file(quote!(#(#kinds)* #tail))?);
            for r in &v.resources {
                let file = format!("{}.rs", r.module.trim_start_matches("r#"));
                kind_files.push((vdir.join(file), r));
            }
        }
    }
    // Every top-level piece of every kind file is parsed and formatted on its own, in parallel
    // (order-preserving), then each file is its pieces concatenated (see `Piece`).
    let pieces: Vec<Vec<Piece<'_>>> = kind_files
        .iter()
        .map(|(_, r)| kind_pieces(r, emit))
        .collect();
    let units: Vec<(usize, &Piece<'_>)> = pieces
        .iter()
        .enumerate()
        .flat_map(|(i, ps)| ps.iter().map(move |p| (i, p)))
        .collect();
    let formatted = crate::par::map(&units, |&(i, p)| piece_text(kind_files[i].1, p, emit));
    let mut texts: Vec<String> = vec![HEADER.to_string(); kind_files.len()];
    for (&(i, _), text) in units.iter().zip(formatted) {
        texts[i].push_str(&text?);
    }
    for ((path, _), text) in kind_files.into_iter().zip(texts) {
        out.insert(path, text);
    }
    Ok(out)
}
