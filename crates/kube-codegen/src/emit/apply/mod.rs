//! Server-side apply configurations (applyconfiguration-gen): for the root type and every nested
//! struct, an all-optional mirror that serialises only what was set, with one builder method
//! per field. Required fields of the type are optional here: an apply claims exactly the fields
//! it sends, so a controller must be able to leave out the ones it does not own.

pub mod text;

use proc_macro2::TokenStream;
use quote::quote;

use super::ident;
use super::types::{doc_attr, ty};
use crate::model::naming::builder_methods;
use crate::model::{Field, Resource, Ty, TypeBody, TypeDef};

/// The type a field has inside an apply configuration: structs become their configurations,
/// everything else (enums, scalars, JSON) stays as it is.
fn apply_ty(t: &Ty, types: &[TypeDef]) -> TokenStream {
    match t {
        Ty::Named(i) => match &types[*i].apply_name {
            Some(name) => {
                let n = ident(name);
                quote!(#n)
            }
            None => {
                let t = ty(t, types);
                quote!(#t)
            }
        },
        Ty::Vec(inner) => {
            let inner = apply_ty(inner, types);
            quote!(Vec<#inner>)
        }
        Ty::Map(inner) => {
            let inner = apply_ty(inner, types);
            quote!(::std::collections::BTreeMap<String, #inner>)
        }
        Ty::Option(inner) => {
            let inner = apply_ty(inner, types);
            quote!(Option<#inner>)
        }
        other => {
            let t = ty(other, types);
            quote!(#t)
        }
    }
}

/// serde's `rename_all = "camelCase"` of a field identifier (its `RenameRule`), so a field whose
/// wire name it already gives needs no `rename` of its own: most of them, in Kubernetes.
fn serde_camel(ident: &str) -> String {
    // PascalCase (capitalise the first character and each after `_`, drop the `_`s), then the
    // first character lowercased: serde's order, which matters for a leading `_`.
    let mut pascal = String::with_capacity(ident.len());
    let mut capitalize = true;
    for ch in ident.trim_start_matches("r#").chars() {
        if ch == '_' {
            capitalize = true;
        } else if capitalize {
            pascal.push(ch.to_ascii_uppercase());
            capitalize = false;
        } else {
            pascal.push(ch);
        }
    }
    let mut chars = pascal.chars();
    match chars.next() {
        Some(first) => first.to_ascii_lowercase().to_string() + chars.as_str(),
        None => pascal,
    }
}

/// Method names clippy's `should_implement_trait` expects to implement a std trait.
const TRAIT_METHOD_NAMES: &[&str] = &[
    "add",
    "as_mut",
    "as_ref",
    "bitand",
    "bitor",
    "bitxor",
    "borrow",
    "borrow_mut",
    "clone",
    "cmp",
    "default",
    "deref",
    "deref_mut",
    "div",
    "drop",
    "eq",
    "from_iter",
    "from_str",
    "hash",
    "index",
    "index_mut",
    "into_iter",
    "mul",
    "neg",
    "next",
    "not",
    "rem",
    "shl",
    "shr",
    "sub",
];

/// Field declarations and builder methods of a configuration. Every field is skipped when unset;
/// the container renames to camelCase, so only fields whose wire name differs carry a `rename`
/// (configurations mirror every struct: their size is most of what `--emit apply` costs).
fn members(
    fields: &[Field],
    flatten: &Option<(String, Ty)>,
    types: &[TypeDef],
    reserved: &[&str],
) -> (Vec<TokenStream>, Vec<TokenStream>) {
    let methods = builder_methods(fields, reserved);
    let mut decls = Vec::with_capacity(fields.len() + 1);
    let mut builders = Vec::with_capacity(fields.len());
    for (f, m) in fields.iter().zip(&methods) {
        let name = ident(&f.ident);
        let method = ident(m);
        let t = apply_ty(&f.ty, types);
        let wire = &f.wire;
        let rename = (serde_camel(&f.ident) != f.wire).then(|| quote!(rename = #wire,));
        decls.push(quote! {
            #[serde(#rename skip_serializing_if = "Option::is_none")]
            pub #name: Option<#t>,
        });
        // A setter named like a std operator method (`add`, `sub`, ...) is what clippy's
        // `should_implement_trait` looks for; the setter must keep the field's name.
        let allow = TRAIT_METHOD_NAMES
            .contains(&m.as_str())
            .then(|| quote!(#[allow(clippy::should_implement_trait)]));
        builders.push(quote! {
            #allow
            pub fn #method(mut self, value: impl Into<#t>) -> Self {
                self.#name = Some(value.into());
                self
            }
        });
    }
    if let Some((n, t)) = flatten {
        let name = ident(n);
        let t = apply_ty(t, types);
        decls.push(quote! {
            /// Fields the schema does not declare.
            #[serde(flatten)]
            pub #name: ::std::collections::BTreeMap<String, #t>,
        });
    }
    (decls, builders)
}

/// The configuration of one nested type (`None` for types without one: enums and the like).
pub fn nested(t: &TypeDef, types: &[TypeDef]) -> Option<TokenStream> {
    let name = ident(t.apply_name.as_ref()?);
    let of = format!(
        " Apply configuration of [`{}`]: only the fields set are sent.",
        t.name
    );
    if let Some(target) = t.alias_of {
        let target = ident(types[target].apply_name.as_ref()?);
        return Some(quote!(#[doc = #of] pub type #name = #target;));
    }
    let TypeBody::Struct { fields, flatten } = &t.body else {
        return None;
    };
    let (decls, builders) = members(fields, flatten, types, &["new"]);
    Some(quote! {
        #[doc = #of]
        #[derive(Clone, Debug, Default, PartialEq, ::serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        pub struct #name {
            #(#decls)*
        }

        /// `new()`, then one setter per field (named after it): a set field is sent.
        impl #name {
            /// An empty configuration: nothing is sent until a field is set.
            pub fn new() -> Self {
                // Qualified: a field named `default` has a builder method of that name.
                <Self as Default>::default()
            }
            #(#builders)*
        }
    })
}

/// The root configuration: apiVersion, kind and metadata (k8s-openapi's `ObjectMeta`, which
/// serialises only what is set), then every other top-level property.
pub fn root(r: &Resource) -> TokenStream {
    let name = ident(&r.api.apply);
    let root = ident(&r.root);
    let allow = super::allow_deprecated(r);
    let (decls, builders) = members(
        &r.root_fields,
        &r.root_flatten,
        &r.types,
        &["new", "api_version", "kind", "metadata"],
    );
    let inits = r.root_fields.iter().map(|f| {
        let n = ident(&f.ident);
        quote!(#n: None,)
    });
    let flatten_init = r.root_flatten.as_ref().map(|(n, _)| {
        let n = ident(n);
        quote!(#n: Default::default(),)
    });
    let (params, meta) = if r.namespaced {
        (
            quote!(name: impl Into<String>, namespace: impl Into<String>),
            quote!(name: Some(name.into()), namespace: Some(namespace.into()),),
        )
    } else {
        (
            quote!(name: impl Into<String>),
            quote!(name: Some(name.into()),),
        )
    };
    let doc = format!(
        " Server-side apply configuration of [`{}`]: every field optional, only the fields set are sent, so an apply claims only what its field manager owns.",
        r.root
    );
    let new_doc = if r.namespaced {
        " A configuration for the object `name` in `namespace`; set the fields to apply."
    } else {
        " A configuration for the object `name`; set the fields to apply."
    };
    let meta_doc = doc_attr(" `metadata`: set only what this field manager owns.");
    quote! {
        #[doc = #doc]
        #[derive(Clone, Debug, PartialEq, ::serde::Serialize)]
        #[serde(rename_all = "camelCase")]
        pub struct #name {
            /// `apiVersion` (filled in by `new`).
            pub api_version: String,
            /// `kind` (filled in by `new`).
            pub kind: String,
            #meta_doc
            pub metadata: ::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
            #(#decls)*
        }

        /// `new(..)`, then one setter per field (named after it): a set field is sent.
        #allow
        impl #name {
            #[doc = #new_doc]
            pub fn new(#params) -> Self {
                Self {
                    api_version: <#root as ::k8s_openapi::Resource>::API_VERSION.to_string(),
                    kind: <#root as ::k8s_openapi::Resource>::KIND.to_string(),
                    metadata: ::k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                        #meta
                        ..Default::default()
                    },
                    #(#inits)*
                    #flatten_init
                }
            }
            #(#builders)*
        }

        #allow
        impl ::kube_codegen_runtime::ApplyConfiguration for #name {
            type Resource = #root;
            fn name(&self) -> Option<&str> {
                self.metadata.name.as_deref()
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::serde_camel;

    /// `serde_camel` must name fields exactly as serde's `rename_all = "camelCase"` does, or an
    /// apply would send a field under the wrong key.
    #[test]
    fn camel_case_matches_serde() {
        #[derive(serde::Serialize, Default)]
        #[serde(rename_all = "camelCase")]
        #[allow(non_snake_case)]
        struct S {
            last_transition_time: u8,
            r#type: u8,
            _underscore: u8,
            self_: u8,
            _1st: u8,
            x_kubernetes_foo: u8,
            url: u8,
            a__b: u8,
            trailing_: u8,
            CamelCase: u8,
            v2beta1_thing: u8,
        }
        let idents = [
            "last_transition_time",
            "r#type",
            "_underscore",
            "self_",
            "_1st",
            "x_kubernetes_foo",
            "url",
            "a__b",
            "trailing_",
            "CamelCase",
            "v2beta1_thing",
        ];
        let json = serde_json::to_value(S::default()).unwrap();
        let mut keys: Vec<&str> = json
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut ours: Vec<String> = idents.iter().map(|i| serde_camel(i)).collect();
        keys.sort();
        ours.sort();
        assert_eq!(keys, ours);
    }
}
