//! A kind's module: root type, its trait impls and constants, nested types.

use proc_macro2::TokenStream;
use quote::quote;

use super::types::{derives_with, field, flatten, typedef, typedef_tokens};
use super::{doc_attrs, ident};
use crate::Error;
use crate::model::{Resource, TypeDef};
use crate::render::parse_items;

pub fn kind_module(r: &Resource) -> TokenStream {
    kind_pieces(r).iter().map(|p| piece_tokens(r, p)).collect()
}

/// One run of top-level items of a kind module. A kind file is formatted piece by piece (in
/// parallel): prettyplease ends every top-level item with a hard break at indentation 0, so
/// the formatted pieces concatenated are the bytes of the whole file formatted at once.
pub enum Piece<'a> {
    /// The root type, its constants and trait impls.
    Head,
    /// One nested type (struct, enum or alias).
    Type(&'a TypeDef),
    /// The private `nullable` deserializer helper.
    Helper,
}

/// The pieces of a kind module, in output order (nested types sorted by name).
pub fn kind_pieces(r: &Resource) -> Vec<Piece<'_>> {
    let mut nested: Vec<&TypeDef> = r.types.iter().collect();
    nested.sort_by(|a, b| a.name.cmp(&b.name));
    let mut pieces = Vec::with_capacity(nested.len() + 2);
    pieces.push(Piece::Head);
    pieces.extend(nested.into_iter().map(Piece::Type));
    if r.uses_nullable {
        pieces.push(Piece::Helper);
    }
    pieces
}

/// A piece as `syn` items: nested types are built directly, the rest parsed from tokens.
pub fn piece_items(r: &Resource, piece: &Piece<'_>) -> Result<Vec<syn::Item>, Error> {
    match piece {
        Piece::Type(t) => typedef(t, &r.types),
        _ => parse_items(piece_tokens(r, piece)),
    }
}

pub fn piece_tokens(r: &Resource, piece: &Piece<'_>) -> TokenStream {
    match piece {
        Piece::Head => head(r),
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

fn head(r: &Resource) -> TokenStream {
    let root = ident(&r.root);
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
    let docs = doc_attrs(&docs);
    let deprecated = r.deprecated.as_ref().map(|m| quote!(#[deprecated = #m]));
    let allow = r.deprecated.as_ref().map(|_| quote!(#[allow(deprecated)]));
    let derive = derives_with(false, true, &r.root_extra_derives);
    let fields = r.root_fields.iter().map(|f| field(f, &r.types));
    let fl = flatten(&r.root_flatten, &r.types).map(|f| quote!(#f,));

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
        #docs
        #deprecated
        #derive
        pub struct #root {
            /// `apiVersion`; [`Default`] fills in this version's value.
            #[serde(rename = "apiVersion", default, skip_serializing_if = "String::is_empty")]
            pub api_version: String,
            /// `kind`; [`Default`] fills in this kind.
            #[serde(default, skip_serializing_if = "String::is_empty")]
            pub kind: String,
            #[serde(default)]
            pub metadata: #meta,
            #(#fields,)*
            #fl
        }

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
