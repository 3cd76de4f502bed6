//! `kube_codegen_runtime::typed_patch::TypedDiff` for a kind's root type and each of its nested
//! structs (with `--emit validation`, beside `SchemaChecks`): the JSON patch between two values
//! of the type, field by field, as a defaulting webhook answers it. A field holding a generated
//! struct (or a map of them) is compared inside; anything else (scalars, lists, JSON, enums,
//! k8s-openapi types) is replaced whole when it changed. The runtime's helpers know the
//! presence rules: `add` where the field was left out, `remove` where it is now.

use proc_macro2::TokenStream;
use quote::quote;

use super::ident;
use crate::model::{Field, Presence, Resource, Ty, TypeBody, TypeDef};

/// The impls for `r`'s root and nested structs (aliases share their target's).
pub fn impls(r: &Resource) -> TokenStream {
    let rt = quote!(::kube_codegen_runtime::typed_patch);
    let root = ident(&r.root);
    // A deprecated version's types are deprecated: their impls are not uses to warn about.
    let allow = super::allow_deprecated(r);
    let root_fields = fields(&r.root_fields, r.root_flatten.as_ref(), &r.types);
    let mut out = quote! {
        #allow
        impl #rt::TypedDiff for #root {
            fn diff(&self, after: &Self, d: &mut #rt::Diff) {
                #rt::non_empty("apiVersion", &self.api_version, &after.api_version, d);
                #rt::non_empty("kind", &self.kind, &after.kind, d);
                #rt::metadata(&self.metadata, &after.metadata, d);
                #root_fields
            }
        }
    };
    for t in &r.types {
        let TypeBody::Struct { fields: f, flatten } = &t.body else {
            continue;
        };
        if t.alias_of.is_some() {
            continue;
        }
        let name = ident(&t.name);
        let body = fields(f, flatten.as_ref(), &r.types);
        let (after, d) = if body.is_empty() {
            (quote!(_after), quote!(_d))
        } else {
            (quote!(after), quote!(d))
        };
        out.extend(quote! {
            #allow
            impl #rt::TypedDiff for #name {
                fn diff(&self, #after: &Self, #d: &mut #rt::Diff) {
                    #body
                }
            }
        });
    }
    out
}

/// Whether values of `ty` are compared inside (a generated struct, or a map of them).
fn deep(ty: &Ty, types: &[TypeDef]) -> bool {
    match ty {
        Ty::Named(i) => matches!(types[*i].body, TypeBody::Struct { .. }),
        Ty::Map(t) => deep(t, types),
        _ => false,
    }
}

fn fields(fields: &[Field], flatten: Option<&(String, Ty)>, types: &[TypeDef]) -> TokenStream {
    let rt = quote!(::kube_codegen_runtime::typed_patch);
    let mut out = TokenStream::new();
    for f in fields {
        let (name, wire) = (ident(&f.ident), &f.wire);
        let optional = matches!(f.presence, Presence::Optional | Presence::OptionalNullable);
        let helper = match (deep(&f.ty, types), optional) {
            (true, false) => quote!(required),
            (true, true) => quote!(optional),
            (false, false) => quote!(required_whole),
            (false, true) => quote!(optional_whole),
        };
        out.extend(quote!(#rt::#helper(#wire, &self.#name, &after.#name, d);));
    }
    if let Some((name, _)) = flatten {
        let name = ident(name);
        out.extend(quote!(#rt::flattened(&self.#name, &after.#name, d);));
    }
    out
}
