//! Typed schema defaulting: the generated `SchemaChecks::typed_schema_defaults`,
//! kube-apiserver's structural defaulting written out for one kind version's schema, on the
//! typed object instead of its JSON (no `serde_json::Value` on the way).
//!
//! Walked per schema position, not per type: structurally equal types are deduplicated whatever
//! their defaults, so two fields of one type may default differently. Only subtrees holding a
//! `default` are visited. A field that has a default and is missing (`None`), or `null` where not
//! nullable, gets the default (as the server prunes it); then its value is walked (object
//! properties, list items, map values), defaults it just received included.
//!
//! The generated method answers `false` where the typed object cannot tell what the JSON path
//! would do (a required nullable field that is `None`: absent or `null`?), where a default does
//! not decode into its field's type, and, for the whole kind, where defaults sit below a field
//! kept as JSON, a k8s-openapi type, an enum or a flattened map: the caller then applies the
//! defaults to the JSON (`apply_defaults()`).

use proc_macro2::{Ident, Literal, Span, TokenStream};
use quote::quote;
use serde_json::Value;

use super::ident;
use crate::model::{Field, Presence, Resource, Ty, TypeBody, TypeDef};

/// Deeper than any schema in practice; the JSON path stops at the same depth.
const MAX_DEPTH: usize = 128;

/// Defaults below this point that generated code does not apply.
struct Unsupported;

type Gen = Result<Option<TokenStream>, Unsupported>;

/// `typed_schema_defaults(&mut self) -> bool` for the kind `r`.
pub fn typed_defaults_method(r: &Resource) -> TokenStream {
    match root(r) {
        // `if let Some(x) = .. { if x.f.is_none() {..} }` is what edition 2024's clippy wants
        // as a let chain, which edition 2021 (generated code compiles under both) lacks.
        Ok(Some(code)) => quote! {
            #[allow(clippy::collapsible_if)]
            fn typed_schema_defaults(&mut self) -> bool {
                let o0 = self;
                #code
                true
            }
        },
        Ok(None) => quote! {
            fn typed_schema_defaults(&mut self) -> bool {
                true
            }
        },
        Err(Unsupported) => quote! {
            fn typed_schema_defaults(&mut self) -> bool {
                false
            }
        },
    }
}

fn root(r: &Resource) -> Gen {
    let schema = &*r.schema;
    if ["apiVersion", "kind", "metadata"]
        .iter()
        .any(|k| prop(schema, k).is_some_and(has_defaults))
    {
        return Err(Unsupported);
    }
    struct_fields(
        &var(0),
        &r.root_fields,
        r.root_flatten.as_ref(),
        schema,
        &r.types,
        0,
    )
}

fn var(depth: usize) -> Ident {
    Ident::new(&format!("o{depth}"), Span::call_site())
}

fn prop<'a>(node: &'a Value, key: &str) -> Option<&'a Value> {
    node.get("properties")?.get(key)
}

fn items(node: &Value) -> Option<&Value> {
    node.get("items").filter(|v| v.is_object())
}

fn additional(node: &Value) -> Option<&Value> {
    node.get("additionalProperties").filter(|v| v.is_object())
}

fn nullable(node: &Value) -> bool {
    node.get("nullable").and_then(Value::as_bool) == Some(true)
}

fn own_default(node: &Value) -> bool {
    node.get("default").is_some_and(|d| !d.is_null())
}

/// Whether `node` or anything below it has a `default`.
fn has_defaults(node: &Value) -> bool {
    own_default(node) || defaults_below(node, 0)
}

fn defaults_below(node: &Value, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    let below = |n: &Value| own_default(n) || defaults_below(n, depth + 1);
    node.get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| p.values().any(below))
        || items(node).is_some_and(below)
        || additional(node).is_some_and(below)
}

/// The statements defaulting the fields of the struct behind `obj` (a `&mut` binding).
fn struct_fields(
    obj: &Ident,
    fields: &[Field],
    flatten: Option<&(String, Ty)>,
    node: &Value,
    types: &[TypeDef],
    depth: usize,
) -> Gen {
    if depth > MAX_DEPTH {
        return Err(Unsupported);
    }
    // Undeclared keys are defaulted by `additionalProperties`: not written out (rare).
    if flatten.is_some() && additional(node).is_some_and(has_defaults) {
        return Err(Unsupported);
    }
    let mut out = TokenStream::new();
    for f in fields {
        let Some(p) = prop(node, &f.wire) else {
            continue;
        };
        if !has_defaults(p) {
            continue;
        }
        if let Some(code) = field(obj, f, p, types, depth)? {
            out.extend(code);
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

/// One field: its default when missing, then its value walked.
fn field(obj: &Ident, f: &Field, node: &Value, types: &[TypeDef], depth: usize) -> Gen {
    let name = ident(&f.ident);
    let place = quote!(#obj.#name);
    let v = var(depth + 1);
    let inner = slot(&v, &f.ty, node, types, depth + 1)?;
    let default = kube_codegen_crd::object::default_of(node).map(|d| literal(&f.ty, &d));
    let mut out = TokenStream::new();
    match f.presence {
        // Always present in the typed object (a missing one fails the decode).
        Presence::Required => {
            if let Some(inner) = inner {
                out.extend(quote! { { let #v = &mut #place; #inner } });
            }
        }
        Presence::Optional => {
            if let Some(d) = default {
                out.extend(quote! {
                    if #place.is_none() {
                        #place = ::std::option::Option::Some(#d);
                    }
                });
            }
            if let Some(inner) = inner {
                out.extend(quote! {
                    if let ::std::option::Option::Some(#v) = #place.as_mut() { #inner }
                });
            }
        }
        // `None` is absent (defaulted) or `null` (kept): the type cannot tell.
        Presence::RequiredNullable => {
            if default.is_some() {
                out.extend(quote! {
                    if #place.is_none() {
                        return false;
                    }
                });
            }
            if let Some(inner) = inner {
                out.extend(quote! {
                    if let ::std::option::Option::Some(#v) = #place.as_mut() { #inner }
                });
            }
        }
        // Outer `None` is absent, `Some(None)` a `null` the schema allows.
        Presence::OptionalNullable => {
            if let Some(d) = default {
                out.extend(quote! {
                    if #place.is_none() {
                        #place = ::std::option::Option::Some(::std::option::Option::Some(#d));
                    }
                });
            }
            if let Some(inner) = inner {
                out.extend(quote! {
                    if let ::std::option::Option::Some(::std::option::Option::Some(#v)) = #place.as_mut() { #inner }
                });
            }
        }
    }
    Ok((!out.is_empty()).then_some(out))
}

/// Defaults inside a present value of type `ty` behind `v` (a `&mut` binding), at `node`.
fn slot(v: &Ident, ty: &Ty, node: &Value, types: &[TypeDef], depth: usize) -> Gen {
    if depth > MAX_DEPTH {
        return Err(Unsupported);
    }
    match ty {
        Ty::Named(i) => match &types[*i].body {
            TypeBody::Struct { fields, flatten } => {
                struct_fields(v, fields, flatten.as_ref(), node, types, depth)
            }
            _ if defaults_below(node, 0) => Err(Unsupported),
            _ => Ok(None),
        },
        Ty::Vec(t) => element(
            t,
            items(node),
            types,
            depth,
            |w| quote!(for #w in #v.iter_mut()),
        ),
        Ty::Map(t) => element(
            t,
            additional(node),
            types,
            depth,
            |w| quote!(for #w in #v.values_mut()),
        ),
        Ty::Option(t) => {
            let w = var(depth + 1);
            let inner = slot(&w, t, node, types, depth + 1)?;
            let mut out = TokenStream::new();
            // A `null` where the schema does not allow one gets the default.
            if !nullable(node)
                && let Some(d) = kube_codegen_crd::object::default_of(node)
            {
                let d = literal(t, &d);
                out.extend(quote! {
                    if #v.is_none() {
                        *#v = ::std::option::Option::Some(#d);
                    }
                });
            }
            if let Some(inner) = inner {
                out.extend(quote! {
                    if let ::std::option::Option::Some(#w) = #v.as_mut() { #inner }
                });
            }
            Ok((!out.is_empty()).then_some(out))
        }
        // JSON, k8s-openapi types, scalars: nothing generated below them.
        _ if defaults_below(node, 0) => Err(Unsupported),
        _ => Ok(None),
    }
}

/// A list's items or a map's values, each at `node`.
fn element(
    t: &Ty,
    node: Option<&Value>,
    types: &[TypeDef],
    depth: usize,
    each: impl FnOnce(&Ident) -> TokenStream,
) -> Gen {
    let Some(node) = node.filter(|n| has_defaults(n)) else {
        return Ok(None);
    };
    let w = var(depth + 1);
    // A non-optional element cannot be `null` (the decode refused it): only its inside.
    let inner = slot(&w, t, node, types, depth + 1)?;
    Ok(inner.map(|inner| {
        let head = each(&w);
        quote!(#head { #inner })
    }))
}

/// `n` when it is an integer the type holds, its magnitude included (so `-MIN` is left to the
/// decoding path).
fn integer(ty: &Ty, n: &serde_json::Number) -> Option<i64> {
    let i = n.as_i64()?;
    let max = if matches!(ty, Ty::I32) {
        i64::from(i32::MAX)
    } else {
        i64::MAX
    };
    (i.unsigned_abs() <= max.unsigned_abs()).then_some(i)
}

/// The default `d` as a value of `ty`: a literal for a string, boolean or integer that fits,
/// else decoded from its JSON text when the method runs (a default that does not decode makes
/// the method answer `false`, as `apply_defaults()` then applies no default at all).
fn literal(ty: &Ty, d: &Value) -> TokenStream {
    match (ty, d) {
        (Ty::String, Value::String(s)) => quote!(::std::string::String::from(#s)),
        (Ty::Bool, Value::Bool(b)) => quote!(#b),
        (Ty::I64 | Ty::I32, Value::Number(n)) if integer(ty, n).is_some() => {
            let i = integer(ty, n).unwrap_or_default();
            // A negative literal is a minus and a literal in Rust's grammar.
            let lit = match ty {
                Ty::I32 => Literal::i32_suffixed(i.unsigned_abs() as i32),
                _ => Literal::i64_suffixed(i.unsigned_abs() as i64),
            };
            if i < 0 { quote!(-#lit) } else { quote!(#lit) }
        }
        _ => {
            let text = d.to_string();
            let lit = super::raw_literal(&text).unwrap_or_else(|| Literal::string(&text));
            quote! {
                match ::serde_json::from_str(#lit) {
                    ::std::result::Result::Ok(d) => d,
                    ::std::result::Result::Err(_) => return false,
                }
            }
        }
    }
}
