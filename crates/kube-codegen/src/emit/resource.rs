//! A kind's module: root type, its trait impls and constants, nested types.

use proc_macro2::{Literal, TokenStream};
use quote::quote;
use syn::{Expr, ExprLit, Fields, FieldsNamed, Lit, Meta, MetaNameValue};

use super::ident;
use super::types::{
    attr, derives_with, doc_attr, doc_attr_list, field, flatten, list_attr, named_field, path,
    path_ty, struct_item, typedef, typedef_tokens,
};
use crate::Error;
use crate::model::{Resource, TypeDef};
use crate::options::Emit;
use crate::render::parse_items;

pub fn kind_module(r: &Resource, emit: Emit) -> TokenStream {
    kind_pieces(r, emit)
        .iter()
        .map(|p| piece_tokens(r, p, emit))
        .collect()
}

/// One run of top-level items of a kind module. A kind file is formatted piece by piece (in
/// parallel): prettyplease ends every top-level item with a hard break at indentation 0, so
/// the formatted pieces concatenated are the bytes of the whole file formatted at once.
pub enum Piece<'a> {
    /// The root type, its constants and trait impls.
    Head,
    /// The embedded schema and the root type's `validate`, `validate_update`, `apply_defaults`.
    Validation,
    /// One nested type (struct, enum or alias).
    Type(&'a TypeDef),
    /// The private `nullable` deserializer helper.
    Helper,
    /// The root's apply configuration.
    ApplyRoot,
    /// One nested struct's apply configuration.
    Apply(&'a TypeDef),
    /// Subresource markers, lister, informer.
    Api,
}

/// The pieces of a kind module, in output order: the root type and its validation, the nested
/// types (sorted by name), then the apply configurations (sorted likewise), then the lister and
/// informer.
pub fn kind_pieces(r: &Resource, emit: Emit) -> Vec<Piece<'_>> {
    let mut nested: Vec<&TypeDef> = r.types.iter().collect();
    nested.sort_by(|a, b| a.name.cmp(&b.name));
    let mut pieces = Vec::with_capacity(2 * nested.len() + 4);
    pieces.push(Piece::Head);
    if emit.validation {
        pieces.push(Piece::Validation);
    }
    pieces.extend(nested.iter().map(|t| Piece::Type(t)));
    if r.uses_nullable {
        pieces.push(Piece::Helper);
    }
    if emit.apply {
        pieces.push(Piece::ApplyRoot);
        let mut applies: Vec<&TypeDef> = nested
            .into_iter()
            .filter(|t| t.apply_name.is_some())
            .collect();
        applies.sort_by(|a, b| a.apply_name.cmp(&b.apply_name));
        pieces.extend(applies.into_iter().map(Piece::Apply));
    }
    if emit.client || emit.any_listers() {
        pieces.push(Piece::Api);
    }
    pieces
}

/// A piece formatted. Nested apply configurations are printed as text when they can be (see
/// `apply::text`); everything else goes through prettyplease.
pub fn piece_text(r: &Resource, piece: &Piece<'_>, emit: Emit) -> Result<String, Error> {
    if let Piece::Apply(t) = piece
        && let Some(text) = super::apply::text::nested(t, &r.types)
    {
        return Ok(text);
    }
    piece_items(r, piece, emit).map(crate::render::format_syn_items)
}

/// A piece as `syn` items: nested types are built directly, the rest parsed from tokens.
pub fn piece_items(r: &Resource, piece: &Piece<'_>, emit: Emit) -> Result<Vec<syn::Item>, Error> {
    match piece {
        Piece::Type(t) => typedef(t, &r.types),
        Piece::Head => {
            let mut items = vec![root_struct(r)];
            items.extend(parse_items(head_impls(r))?);
            Ok(items)
        }
        _ => parse_items(piece_tokens(r, piece, emit)),
    }
}

pub fn piece_tokens(r: &Resource, piece: &Piece<'_>, emit: Emit) -> TokenStream {
    match piece {
        Piece::ApplyRoot => super::apply::root(r),
        Piece::Apply(t) => super::apply::nested(t, &r.types).unwrap_or_default(),
        Piece::Api => super::api::kind_items(r, emit),
        Piece::Validation => super::validation::kind_items(r),
        Piece::Head => {
            let root = root_struct(r);
            let impls = head_impls(r);
            quote!(#root #impls)
        }
        Piece::Type(t) => typedef_tokens(t, &r.types),
        Piece::Helper => quote! {
            /// Reads a present field, `null` included, as `Some`: absent stays `None` (serde's default).
            fn nullable<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
            where
                D: ::serde::Deserializer<'de>,
                T: ::serde::Deserialize<'de>,
            {
                <Option<T> as ::serde::Deserialize>::deserialize(d).map(Some)
            }
        },
    }
}

/// The root type: fixed `apiVersion`/`kind`/`metadata` fields, then every other top-level
/// property (built as an item, like the nested types).
fn root_struct(r: &Resource) -> syn::Item {
    let mut docs = r.root_docs.clone();
    if !docs.is_empty() {
        docs.push(String::new());
    }
    docs.push(format!(
        "`{}/{}` `{}` ({}).",
        r.group,
        r.version,
        r.kind,
        if r.namespaced {
            "namespaced"
        } else {
            "cluster-scoped"
        }
    ));
    if r.storage {
        docs.push(String::new());
        docs.push("This is the storage version.".into());
    }
    if !r.served {
        docs.push(String::new());
        docs.push("This version is not served.".into());
    }
    let mut attrs = doc_attr_list(&docs);
    if let Some(m) = &r.deprecated {
        attrs.push(attr(Meta::NameValue(MetaNameValue {
            path: path(false, &["deprecated"]),
            eq_token: Default::default(),
            value: Expr::Lit(ExprLit {
                attrs: Vec::new(),
                lit: Lit::new(Literal::string(m)),
            }),
        })));
    }
    attrs.push(derives_with(false, true, &r.root_extra_derives));
    let string = || path_ty(path(false, &["String"]));
    let mut fields = vec![
        named_field(
            vec![
                doc_attr(" `apiVersion`; [`Default`] fills in this version's value."),
                list_attr(
                    "serde",
                    quote!(
                        rename = "apiVersion",
                        default,
                        skip_serializing_if = "String::is_empty"
                    ),
                ),
            ],
            "api_version",
            string(),
        ),
        named_field(
            vec![
                doc_attr(" `kind`; [`Default`] fills in this kind."),
                list_attr(
                    "serde",
                    quote!(default, skip_serializing_if = "String::is_empty"),
                ),
            ],
            "kind",
            string(),
        ),
        named_field(
            vec![list_attr("serde", quote!(default))],
            "metadata",
            path_ty(path(
                true,
                &[
                    "k8s_openapi",
                    "apimachinery",
                    "pkg",
                    "apis",
                    "meta",
                    "v1",
                    "ObjectMeta",
                ],
            )),
        ),
    ];
    fields.extend(r.root_fields.iter().map(|f| field(f, &r.types)));
    fields.extend(flatten(&r.root_flatten, &r.types));
    struct_item(
        attrs,
        &r.root,
        Fields::Named(FieldsNamed {
            brace_token: Default::default(),
            named: fields.into_iter().collect(),
        }),
    )
}

/// The root type's constants and trait impls.
fn head_impls(r: &Resource) -> TokenStream {
    let root = ident(&r.root);
    let allow = super::allow_deprecated(r);
    let api_version = format!("{}/{}", r.group, r.version);
    let (group, version, kind, plural) = (&r.group, &r.version, &r.kind, &r.plural);
    let singular = &r.singular;
    let list_kind = &r.list_kind;
    let short = &r.short_names;
    let cats = &r.categories;
    let namespaced = r.namespaced;
    let storage = r.storage;
    let served = r.served;
    let status = r.status_subresource;
    let crd_name = &r.crd_name;
    let opt = |v: Option<&String>| match v {
        Some(s) => quote!(Some(#s)),
        None => quote!(None),
    };
    let scale_spec = opt(r.scale.as_ref().map(|s| &s.spec_replicas_path));
    let scale_status = opt(r.scale.as_ref().map(|s| &s.status_replicas_path));
    let scale_selector = opt(r
        .scale
        .as_ref()
        .and_then(|s| s.label_selector_path.as_ref()));
    let cols = r.printer_columns.iter().map(|c| {
        let (n, t, p) = (&c.name, &c.type_, &c.json_path);
        quote!((#n, #t, #p))
    });
    let scope = if r.namespaced {
        quote!(::k8s_openapi::NamespaceResourceScope)
    } else {
        quote!(::k8s_openapi::ClusterResourceScope)
    };
    let meta = quote!(::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta);

    let default_impl = r.root_default.then(|| {
        let inits = r.root_fields.iter().map(|f| {
            let n = ident(&f.ident);
            quote!(#n: Default::default(),)
        });
        let fl_init = r.root_flatten.as_ref().map(|(n, _)| {
            let n = ident(n);
            quote!(#n: Default::default(),)
        });
        quote! {
            #allow
            impl Default for #root {
                fn default() -> Self {
                    Self {
                        api_version: <Self as ::k8s_openapi::Resource>::API_VERSION.to_string(),
                        kind: <Self as ::k8s_openapi::Resource>::KIND.to_string(),
                        metadata: Default::default(),
                        #(#inits)*
                        #fl_init
                    }
                }
            }
        }
    });

    quote! {
        #allow
        impl #root {
            /// `metadata.name` of the CustomResourceDefinition.
            pub const CRD_NAME: &str = #crd_name;
            pub const PLURAL: &str = #plural;
            pub const SINGULAR: &str = #singular;
            pub const SHORT_NAMES: &[&str] = &[#(#short),*];
            pub const CATEGORIES: &[&str] = &[#(#cats),*];
            pub const LIST_KIND: &str = #list_kind;
            pub const NAMESPACED: bool = #namespaced;
            /// Whether this is the version the API server stores.
            pub const STORAGE_VERSION: bool = #storage;
            pub const SERVED: bool = #served;
            pub const STATUS_SUBRESOURCE: bool = #status;
            /// Scale subresource paths, when it is enabled.
            pub const SCALE_SPEC_REPLICAS_PATH: Option<&str> = #scale_spec;
            pub const SCALE_STATUS_REPLICAS_PATH: Option<&str> = #scale_status;
            pub const SCALE_LABEL_SELECTOR_PATH: Option<&str> = #scale_selector;
            /// Printer columns: (name, type, JSONPath).
            pub const PRINTER_COLUMNS: &[(&str, &str, &str)] = &[#(#cols),*];
        }

        #allow
        impl ::k8s_openapi::Resource for #root {
            const API_VERSION: &'static str = #api_version;
            const GROUP: &'static str = #group;
            const KIND: &'static str = #kind;
            const VERSION: &'static str = #version;
            const URL_PATH_SEGMENT: &'static str = #plural;
            type Scope = #scope;
        }

        #allow
        impl ::k8s_openapi::ListableResource for #root {
            const LIST_KIND: &'static str = #list_kind;
        }

        #allow
        impl ::k8s_openapi::Metadata for #root {
            type Ty = #meta;
            fn metadata(&self) -> &Self::Ty {
                &self.metadata
            }
            fn metadata_mut(&mut self) -> &mut Self::Ty {
                &mut self.metadata
            }
        }

        #default_impl
    }
}
