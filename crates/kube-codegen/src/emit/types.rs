//! Nested type definitions and field declarations.

use proc_macro2::TokenStream;
use quote::quote;

use super::{derive_paths, doc_attrs, ident};
use crate::model::{Field, Presence, Ty, TypeBody, TypeDef};

pub fn ty(t: &Ty, types: &[TypeDef]) -> TokenStream {
    match t {
        Ty::Bool => quote!(bool),
        Ty::I32 => quote!(i32),
        Ty::I64 => quote!(i64),
        Ty::Number => quote!(::serde_json::Number),
        Ty::String => quote!(String),
        Ty::IntOrString => quote!(::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString),
        Ty::Json => quote!(::serde_json::Value),
        Ty::Vec(inner) => {
            let i = ty(inner, types);
            quote!(Vec<#i>)
        }
        Ty::Map(inner) => {
            let i = ty(inner, types);
            quote!(::std::collections::BTreeMap<String, #i>)
        }
        Ty::Option(inner) => {
            let i = ty(inner, types);
            quote!(Option<#i>)
        }
        Ty::Named(i) => {
            let n = ident(&types[*i].name);
            quote!(#n)
        }
    }
}

fn bare(ident_text: &str) -> &str {
    ident_text.strip_prefix("r#").unwrap_or(ident_text)
}

pub fn field(f: &Field, types: &[TypeDef]) -> TokenStream {
    let docs = doc_attrs(&f.docs);
    let name = ident(&f.ident);
    let inner = ty(&f.ty, types);
    let rename = (bare(&f.ident) != f.wire).then(|| {
        let w = &f.wire;
        quote!(rename = #w,)
    });
    let (attrs, full) = match f.presence {
        Presence::Required => (rename.map(|r| quote!(#[serde(#r)])), inner),
        Presence::Optional => (
            Some(quote!(#[serde(#rename skip_serializing_if = "Option::is_none")])),
            quote!(Option<#inner>),
        ),
        Presence::RequiredNullable => (
            Some(quote!(#[serde(#rename default)])),
            quote!(Option<#inner>),
        ),
        Presence::OptionalNullable => (
            Some(
                quote!(#[serde(#rename default, skip_serializing_if = "Option::is_none", deserialize_with = "nullable")]),
            ),
            quote!(Option<Option<#inner>>),
        ),
    };
    quote! {
        #docs
        #attrs
        pub #name: #full,
    }
}

pub fn flatten(f: &Option<(String, Ty)>, types: &[TypeDef]) -> TokenStream {
    match f {
        None => quote!(),
        Some((name, t)) => {
            let n = ident(name);
            let t = ty(t, types);
            quote! {
                /// Fields not declared by the schema, kept as sent.
                #[serde(flatten)]
                pub #n: ::std::collections::BTreeMap<String, #t>,
            }
        }
    }
}

/// `derive(...)` with the base set, plus extra derives that aren't already there. `manual_default`
/// types have a hand-written `impl Default`, so a requested `Default` derive is dropped too.
pub fn derives(default: bool, extra: &[String]) -> TokenStream {
    derives_with(default, false, extra)
}

pub fn derives_with(default: bool, manual_default: bool, extra: &[String]) -> TokenStream {
    let d = default.then(|| quote!(Default,));
    let base = ["Clone", "Debug", "PartialEq", "Serialize", "Deserialize"];
    let extra: Vec<syn::Path> = derive_paths(extra)
        .into_iter()
        .filter(|p| {
            let last = p
                .segments
                .last()
                .map(|s| s.ident.to_string())
                .unwrap_or_default();
            !base.contains(&last.as_str()) && !(last == "Default" && (default || manual_default))
        })
        .collect();
    quote!(#[derive(Clone, Debug, #d PartialEq, ::serde::Serialize, ::serde::Deserialize #(, #extra)*)])
}

pub fn typedef(t: &TypeDef, types: &[TypeDef]) -> TokenStream {
    let name = ident(&t.name);
    let docs = doc_attrs(&t.docs);
    if let Some(target) = t.alias_of {
        let target = ident(&types[target].name);
        return quote! {
            #docs
            pub type #name = #target;
        };
    }
    match &t.body {
        TypeBody::Struct {
            fields,
            flatten: fl,
        } => {
            let derive = derives(t.default, &t.extra_derives);
            let fields = fields.iter().map(|f| field(f, types));
            let fl = flatten(fl, types);
            quote! {
                #docs
                #derive
                pub struct #name {
                    #(#fields)*
                    #fl
                }
            }
        }
        TypeBody::StringEnum {
            variants,
            other,
            default,
        } => {
            let derive = derives(default.is_some(), &t.extra_derives);
            let vs = variants.iter().enumerate().map(|(i, (v, wire))| {
                let vi = ident(v);
                let d = (*default == Some(i)).then(|| quote!(#[default]));
                let rename = (v != wire).then(|| quote!(#[serde(rename = #wire)]));
                quote!(#d #rename #vi,)
            });
            let other = ident(other);
            quote! {
                #docs
                #derive
                pub enum #name {
                    #(#vs)*
                    /// A value this version of the schema doesn't list, kept as sent.
                    #[serde(untagged)]
                    #other(String),
                }
            }
        }
        TypeBody::IntEnum { consts, default } => {
            let derive = derives_with(false, default.is_some(), &t.extra_derives);
            let cs = consts.iter().map(|(n, v)| {
                let n = ident(n);
                quote!(pub const #n: Self = Self(#v);)
            });
            let def = default.map(|d| {
                quote! {
                    impl Default for #name {
                        fn default() -> Self {
                            Self(#d)
                        }
                    }
                }
            });
            quote! {
                #docs
                #derive
                #[serde(transparent)]
                pub struct #name(pub i64);
                impl #name {
                    #(#cs)*
                }
                #def
            }
        }
        TypeBody::Untagged { variants } => {
            let derive = derives(false, &t.extra_derives);
            let vs = variants.iter().map(|(v, vt)| {
                let vi = ident(v);
                let inner = ty(vt, types);
                // Boxed so one large object variant doesn't bloat every value.
                if matches!(vt, Ty::Named(_)) {
                    quote!(#vi(Box<#inner>),)
                } else {
                    quote!(#vi(#inner),)
                }
            });
            quote! {
                #docs
                #derive
                #[serde(untagged)]
                pub enum #name {
                    #(#vs)*
                }
            }
        }
    }
}
