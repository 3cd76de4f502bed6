//! `--emit conversion`: a group's `conversion` module, printed from `model::conversion`'s plan.
//! Per kind with several versions: the `FooHooks` trait (one method pair per field that does
//! not map, plus one per spoke for the whole object), `DefaultFooHooks`, `AnyFoo`,
//! `FooConversion<H>` (typed conversions, the runtime's `HubConversion` and `KindConversion`),
//! and a private module of automatic functions.

use proc_macro2::TokenStream;
use quote::quote;

use super::ident;
use crate::model::conversion::{
    Conv, FieldHow, FlattenHow, HookWhy, KindConv, PairBody, PairFn, SpokeConv, resolve,
};
use crate::model::{GroupMod, KnownType, Presence, Resource, Ty, TypeBody, ty_default};

const RUNTIME: &str = "::kube_codegen_runtime::conversion";

fn runtime() -> TokenStream {
    RUNTIME.parse().unwrap_or_default()
}

/// The group's `conversion` module declaration and body (empty when no kind converts).
pub fn group_module(g: &GroupMod) -> Option<(TokenStream, TokenStream)> {
    let c = &g.conversions;
    if c.kinds.is_empty() {
        return None;
    }
    let m = ident(&c.module);
    let allow = c
        .kinds
        .iter()
        .any(|k| k.deprecated)
        .then(|| quote!(#[allow(deprecated)]));
    let doc = format!(
        " Conversions between the versions of `{}` kinds, through each kind's storage version (the hub).",
        g.group
    );
    let decl = quote!(#[doc = #doc] #allow pub mod #m);
    let body = c.kinds.iter().map(|k| kind_items(g, k)).collect();
    Some((decl, body))
}

fn res(g: &GroupMod, (vi, ri): (usize, usize)) -> &Resource {
    &g.versions[vi].resources[ri]
}

/// `prefix::version::Name`.
fn type_path(g: &GroupMod, r: (usize, usize), name: &str, prefix: &TokenStream) -> TokenStream {
    let vm = ident(&g.versions[r.0].module);
    let n = ident(name);
    quote!(#prefix::#vm::#n)
}

fn kind_items(g: &GroupMod, k: &KindConv) -> TokenStream {
    let rt = runtime();
    let sup = quote!(super);
    let hub = &k.versions[0];
    let hub_ty = type_path(g, hub.res, &hub.root, &sup);
    let (conversion, hooks, default_hooks, any, module) = (
        ident(&k.conversion),
        ident(&k.hooks),
        ident(&k.default_hooks),
        ident(&k.any),
        ident(&k.module),
    );
    let kind = &k.kind;
    let group = &k.group;
    let versions: Vec<&str> = k.versions.iter().map(|v| v.version.as_str()).collect();
    let err = quote!(#rt::ConversionError);

    // The hooks trait.
    let mut methods = Vec::new();
    for s in &k.spokes {
        let v = &k.versions[s.version];
        let spoke_ty = type_path(g, v.res, &v.root, &sup);
        for h in &s.hooks {
            let what = match h.why {
                HookWhy::SpokeOnly => format!("only `{}` has it", v.version),
                HookWhy::HubOnly => format!("only `{}` has it", hub.version),
                HookWhy::Retyped => "its type differs (the automatic conversion reads the value's JSON as the other type, or leaves the zero value)".to_string(),
            };
            let to_doc = format!(
                " `{}` from `{}` to `{}` (the hub): {what}. Called after the automatic conversion, with the whole objects; the default ([`{}`]) does nothing more, and what `to` cannot hold travels in the `kube-codegen.io/conversion-data` annotation.",
                h.path, v.version, hub.version, k.default_hooks
            );
            let from_doc = format!(
                " `{}` from `{}` (the hub) to `{}`: {what}. Called after the automatic conversion, with the whole objects; the default ([`{}`]) does nothing more.",
                h.path, hub.version, v.version, k.default_hooks
            );
            let (th, fh) = (ident(&h.to_hub), ident(&h.from_hub));
            methods.push(quote! {
                #[doc = #to_doc]
                fn #th(&self, from: &#spoke_ty, to: &mut #hub_ty) -> Result<(), #err> {
                    let _ = (from, to);
                    Ok(())
                }
                #[doc = #from_doc]
                fn #fh(&self, from: &#hub_ty, to: &mut #spoke_ty) -> Result<(), #err> {
                    let _ = (from, to);
                    Ok(())
                }
            });
        }
        let (th, fh) = (ident(&s.object_to_hub), ident(&s.object_from_hub));
        let to_doc = format!(
            " The whole object from `{}` to `{}` (the hub), after the field hooks: for conversions no single field explains, or to refuse an object ([`{}::Refused`]). The default does nothing.",
            v.version,
            hub.version,
            RUNTIME.trim_start_matches("::").to_string() + "::ConversionError"
        );
        let from_doc = format!(
            " The whole object from `{}` (the hub) to `{}`, after the field hooks. The default does nothing.",
            hub.version, v.version
        );
        methods.push(quote! {
            #[doc = #to_doc]
            fn #th(&self, from: &#spoke_ty, to: &mut #hub_ty) -> Result<(), #err> {
                let _ = (from, to);
                Ok(())
            }
            #[doc = #from_doc]
            fn #fh(&self, from: &#hub_ty, to: &mut #spoke_ty) -> Result<(), #err> {
                let _ = (from, to);
                Ok(())
            }
        });
    }
    let hooks_doc = format!(
        " What the automatic conversions of `{kind}` leave to you: one method pair per field that does not map between a version and `{}` (the hub), named after the version and the field's path, and one pair per version for the whole object. Every method has a default that does nothing more than the automatic conversion ([`{}`] uses them all); implement the ones you need on your own type and pass it to [`{}::with_hooks`]. A default can be called from an override as `{}.method(from, to)`.",
        hub.version, k.default_hooks, k.conversion, k.default_hooks
    );
    let default_doc = format!(" [`{}`] with every default.", k.hooks);

    // AnyFoo.
    let variants = k.versions.iter().map(|v| {
        let n = ident(&v.variant);
        let t = type_path(g, v.res, &v.root, &sup);
        let doc = format!(" `{}/{}`.", group, v.version);
        quote!(#[doc = #doc] #n(Box<#t>))
    });
    let any_doc = format!(" A `{kind}` of any version.");

    // Typed conversions per spoke.
    let typed = k
        .spokes
        .iter()
        .map(|s| spoke_methods(g, k, s, &hub_ty, &module));
    let decode_arms = k.versions.iter().enumerate().map(|(i, v)| {
        let n = ident(&v.variant);
        let i = proc_macro2::Literal::usize_unsuffixed(i);
        quote!(#i => #any::#n(Box::new(::serde::Deserialize::deserialize(object)?)),)
    });
    let decode_text_arms = k.versions.iter().enumerate().map(|(i, v)| {
        let n = ident(&v.variant);
        let i = proc_macro2::Literal::usize_unsuffixed(i);
        quote!(#i => #any::#n(Box::new(::serde_json::from_str(text)?)),)
    });
    let parts_arms = k.versions.iter().map(|v| {
        let n = ident(&v.variant);
        quote!(#any::#n(o) => {
            let o = &mut **o;
            #rt::hub::Parts {
                api_version: &o.api_version,
                kind: &o.kind,
                metadata: &mut o.metadata,
            }
        })
    });
    // Only labels and annotations of the encoded metadata are used (see the runtime's
    // `hub::encode_object`).
    let encode_arms = k.versions.iter().map(|v| {
        let n = ident(&v.variant);
        quote!(#any::#n(mut o) => {
            let metadata = ::std::mem::take(&mut o.metadata);
            #rt::hub::encode_object(&*o, metadata, template)
        })
    });
    let to_hub_arms = k.versions.iter().enumerate().map(|(i, v)| {
        let n = ident(&v.variant);
        if i == 0 {
            quote!(#any::#n(o) => (**o).clone(),)
        } else {
            let m = ident(&format!("{}_to_hub", v.prefix));
            quote!(#any::#n(o) => self.#m(o)?,)
        }
    });
    let from_hub_arms = k.versions.iter().enumerate().map(|(i, v)| {
        let n = ident(&v.variant);
        let first = i == 0;
        let i = proc_macro2::Literal::usize_unsuffixed(i);
        if first {
            quote!(#i => #any::#n(Box::new(hub.clone())),)
        } else {
            let m = ident(&format!("{}_from_hub", v.prefix));
            quote!(#i => #any::#n(Box::new(self.#m(hub)?)),)
        }
    });
    let conversion_doc = format!(
        " Converts `{kind}` between {} through `{}`, the storage version (the hub): the automatic conversions, then the hooks `H` ([`{}`] by default). Register it with the runtime's conversion webhook (it is a [`KindConversion`]({RUNTIME}::KindConversion)); round trips through it lose nothing (see [`hub`]({RUNTIME}::hub)).",
        versions
            .iter()
            .map(|v| format!("`{v}`"))
            .collect::<Vec<_>>()
            .join(", "),
        hub.version,
        k.default_hooks
    );
    let fns = k
        .spokes
        .iter()
        .flat_map(|s| s.to_hub.iter().chain(&s.from_hub))
        .map(|f| pair_fn(g, f));
    let module_doc = format!(" The automatic conversions of `{kind}`.");
    let hub_variant = ident(&hub.variant);
    let n_versions = proc_macro2::Literal::usize_unsuffixed(versions.len());

    quote! {
        #[doc = #hooks_doc]
        pub trait #hooks: Send + Sync + 'static {
            #(#methods)*
        }

        #[doc = #default_doc]
        #[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
        pub struct #default_hooks;

        impl #hooks for #default_hooks {}

        #[doc = #any_doc]
        #[derive(Clone, Debug, PartialEq, ::serde::Serialize)]
        #[serde(untagged)]
        pub enum #any {
            #(#variants,)*
        }

        #[doc = #conversion_doc]
        #[derive(Clone, Debug, Default)]
        pub struct #conversion<H = #default_hooks> {
            hooks: H,
        }

        impl #conversion {
            /// With the default hooks.
            pub fn new() -> Self {
                Self { hooks: #default_hooks }
            }
        }

        impl<H: #hooks> #conversion<H> {
            /// With your hooks.
            pub fn with_hooks(hooks: H) -> Self {
                Self { hooks }
            }
            /// The hooks.
            pub fn hooks(&self) -> &H {
                &self.hooks
            }
            #(#typed)*
        }

        impl<H: #hooks> #rt::hub::HubConversion for #conversion<H> {
            type Object = #any;
            const GROUP: &'static str = #group;
            const KIND: &'static str = #kind;
            const VERSIONS: &'static [&'static str] = &[#(#versions),*];
            fn decode(&self, version: usize, object: &::serde_json::Value) -> Result<#any, ::serde_json::Error> {
                Ok(match version {
                    #(#decode_arms)*
                    _ => return Err(<::serde_json::Error as ::serde::de::Error>::custom("no such version")),
                })
            }
            fn decode_text(&self, version: usize, text: &str) -> Result<#any, ::serde_json::Error> {
                Ok(match version {
                    #(#decode_text_arms)*
                    _ => return Err(<::serde_json::Error as ::serde::de::Error>::custom("no such version")),
                })
            }
            fn parts(object: &mut #any) -> Option<#rt::hub::Parts<'_>> {
                Some(match object {
                    #(#parts_arms)*
                })
            }
            fn encode(&self, object: #any, template: ::serde_json::Value) -> Result<::serde_json::Value, ::serde_json::Error> {
                match object {
                    #(#encode_arms)*
                }
            }
            fn to_hub(&self, object: &#any) -> Result<#any, #err> {
                Ok(#any::#hub_variant(Box::new(match object {
                    #(#to_hub_arms)*
                })))
            }
            fn from_hub(&self, hub: &#any, version: usize) -> Result<#any, #err> {
                let converted;
                let hub: &#hub_ty = match hub {
                    #any::#hub_variant(o) => o,
                    other => {
                        converted = match self.to_hub(other)? {
                            #any::#hub_variant(o) => o,
                            _ => return Err(#err::Refused("no hub".to_owned())),
                        };
                        &converted
                    }
                };
                Ok(match version {
                    #(#from_hub_arms)*
                    _ => {
                        return Err(#err::UnknownVersion {
                            kind: #kind.to_owned(),
                            api_version: version.to_string(),
                        });
                    }
                })
            }
        }

        impl<H: #hooks> #rt::KindConversion for #conversion<H> {
            fn group(&self) -> &str {
                #group
            }
            fn kind(&self) -> &str {
                #kind
            }
            fn versions(&self) -> &[&str] {
                const VERSIONS: [&str; #n_versions] = [#(#versions),*];
                &VERSIONS
            }
            fn convert(&self, object: ::serde_json::Value, version: &str) -> Result<::serde_json::Value, #err> {
                #rt::hub::convert(self, object, version)
            }
            fn keeps_metadata(&self) -> bool {
                true
            }
            fn convert_text(
                &self,
                object: &str,
                from: &str,
                to: &str,
            ) -> Option<Result<Box<#rt::hub::RawValue>, #err>> {
                Some(#rt::hub::convert_text(self, object, from, to))
            }
        }

        #[doc = #module_doc]
        mod #module {
            #(#fns)*
        }
    }
}

/// `FooConversion`'s typed methods for one spoke (`v1alpha1_to_hub`, `v1alpha1_from_hub`).
fn spoke_methods(
    g: &GroupMod,
    k: &KindConv,
    s: &SpokeConv,
    hub_ty: &TokenStream,
    module: &proc_macro2::Ident,
) -> TokenStream {
    let rt = runtime();
    let err = quote!(#rt::ConversionError);
    let v = &k.versions[s.version];
    let hub = &k.versions[0];
    let spoke_ty = type_path(g, v.res, &v.root, &quote!(super));
    let p = &v.prefix;
    let (to, from) = (
        ident(&format!("{p}_to_hub")),
        ident(&format!("{p}_from_hub")),
    );
    let (auto_to, auto_from) = (ident(&s.to_hub[0].name), ident(&s.from_hub[0].name));
    let to_hooks = s.hooks.iter().map(|h| {
        let m = ident(&h.to_hub);
        quote!(self.hooks.#m(from, &mut to)?;)
    });
    let from_hooks = s.hooks.iter().map(|h| {
        let m = ident(&h.from_hub);
        quote!(self.hooks.#m(from, &mut to)?;)
    });
    let (oth, ofh) = (ident(&s.object_to_hub), ident(&s.object_from_hub));
    let to_doc = format!(
        " `{}` to `{}` (the hub): the automatic conversion, then the hooks.",
        v.version, hub.version
    );
    let from_doc = format!(
        " `{}` (the hub) to `{}`: the automatic conversion, then the hooks.",
        hub.version, v.version
    );
    quote! {
        #[doc = #to_doc]
        pub fn #to(&self, from: &#spoke_ty) -> Result<#hub_ty, #err> {
            let mut to = #module::#auto_to(from);
            #(#to_hooks)*
            self.hooks.#oth(from, &mut to)?;
            Ok(to)
        }
        #[doc = #from_doc]
        pub fn #from(&self, from: &#hub_ty) -> Result<#spoke_ty, #err> {
            let mut to = #module::#auto_from(from);
            #(#from_hooks)*
            self.hooks.#ofh(from, &mut to)?;
            Ok(to)
        }
    }
}

/// Paths from inside the private module.
fn sup2() -> TokenStream {
    quote!(super::super)
}

fn pair_fn(g: &GroupMod, f: &PairFn) -> TokenStream {
    let (fr, tr) = (res(g, f.from), res(g, f.to));
    let p = sup2();
    let from_ty = match f.from_ty {
        Some(i) => type_path(g, f.from, &fr.types[i].name, &p),
        None => type_path(g, f.from, &fr.root, &p),
    };
    let to_ty = match f.to_ty {
        Some(i) => type_path(g, f.to, &tr.types[i].name, &p),
        None => type_path(g, f.to, &tr.root, &p),
    };
    let name = ident(&f.name);
    let body = match &f.body {
        PairBody::Struct { fields, flatten } => {
            let fields = fields.iter().map(|fp| {
                let t = ident(&fp.to_ident);
                let e = field_expr(g, f, &fp.how);
                quote!(#t: #e,)
            });
            let fl = flatten.as_ref().map(|(ti, how)| {
                let t = ident(ti);
                let e = match how {
                    FlattenHow::Empty => quote!(::std::collections::BTreeMap::new()),
                    FlattenHow::Mapped { from_ident, conv } => {
                        let fi = ident(from_ident);
                        if conv.is_clone() {
                            quote!(from.#fi.clone())
                        } else {
                            let a = apply(g, f.to, conv, quote!(v), false);
                            quote!(from.#fi.iter().map(|(k, v)| (k.clone(), #a)).collect())
                        }
                    }
                };
                quote!(#t: #e,)
            });
            let head = f.from_ty.is_none().then(|| {
                quote! {
                    api_version: <#to_ty as ::k8s_openapi::Resource>::API_VERSION.to_owned(),
                    kind: <#to_ty as ::k8s_openapi::Resource>::KIND.to_owned(),
                    metadata: from.metadata.clone(),
                }
            });
            quote!(#to_ty { #head #(#fields)* #fl })
        }
        PairBody::StringEnum {
            arms,
            from_other,
            to_other,
            extra,
        } => {
            let arms = arms.iter().map(|(fv, wire, tv)| {
                let fv = ident(fv);
                match tv {
                    Some(tv) => {
                        let tv = ident(tv);
                        quote!(#from_ty::#fv => #to_ty::#tv,)
                    }
                    None => {
                        let to = ident(to_other);
                        quote!(#from_ty::#fv => #to_ty::#to(#wire.to_owned()),)
                    }
                }
            });
            let (fo, to) = (ident(from_other), ident(to_other));
            let other = if extra.is_empty() {
                quote!(#from_ty::#fo(s) => #to_ty::#to(s.clone()),)
            } else {
                let ex = extra.iter().map(|(v, w)| {
                    let v = ident(v);
                    quote!(#w => #to_ty::#v,)
                });
                quote!(#from_ty::#fo(s) => match s.as_str() {
                    #(#ex)*
                    _ => #to_ty::#to(s.clone()),
                },)
            };
            quote!(match from { #(#arms)* #other })
        }
        PairBody::Untagged { arms } => {
            let Some(TypeBody::Untagged { variants }) =
                f.from_ty.map(|i| &fr.types[resolve(&fr.types, i)].body)
            else {
                return TokenStream::new();
            };
            let arms = arms
                .iter()
                .zip(variants)
                .map(|((v, conv, boxed), (_, vt))| {
                    let v = ident(v);
                    let mut e = if conv.is_clone() {
                        if is_copy_ty(vt) {
                            quote!(*x)
                        } else if *boxed {
                            quote!((**x).clone())
                        } else {
                            quote!(x.clone())
                        }
                    } else {
                        apply(g, f.to, conv, quote!(x), false)
                    };
                    if *boxed {
                        e = quote!(Box::new(#e));
                    }
                    quote!(#from_ty::#v(x) => #to_ty::#v(#e),)
                });
            quote!(match from { #(#arms)* })
        }
    };
    let reads = match &f.body {
        PairBody::Struct { fields, flatten } => {
            f.from_ty.is_none()
                || fields
                    .iter()
                    .any(|fp| !matches!(fp.how, FieldHow::Zero { .. }))
                || matches!(flatten, Some((_, FlattenHow::Mapped { .. })))
        }
        _ => true,
    };
    let param = if reads { quote!(from) } else { quote!(_from) };
    quote! {
        pub(super) fn #name(#param: &#from_ty) -> #to_ty {
            #body
        }
    }
}

fn is_copy_ty(t: &Ty) -> bool {
    crate::model::conversion::is_copy(t)
}

fn depth(p: Presence) -> u8 {
    match p {
        Presence::Required => 0,
        Presence::Optional | Presence::RequiredNullable => 1,
        Presence::OptionalNullable => 2,
    }
}

/// `conv` as something to pass to `map` (a function name or a closure).
fn mapper(g: &GroupMod, to: (usize, usize), conv: &Conv) -> TokenStream {
    match conv {
        Conv::Fn(name) => {
            let n = ident(name);
            quote!(#n)
        }
        _ => {
            let a = apply(g, to, conv, quote!(x), false);
            quote!(|x| #a)
        }
    }
}

/// `conv` applied to `src`: an expression of type `&A`, or a place of type `A` when `place`
/// (a field: methods borrow it themselves, functions get `&`).
fn apply(
    g: &GroupMod,
    to: (usize, usize),
    conv: &Conv,
    src: TokenStream,
    place: bool,
) -> TokenStream {
    match conv {
        Conv::Clone => quote!(#src.clone()),
        Conv::Vec(c) => {
            let m = mapper(g, to, c);
            quote!(#src.iter().map(#m).collect())
        }
        Conv::Map(c) => {
            let a = apply(g, to, c, quote!(v), false);
            quote!(#src.iter().map(|(k, v)| (k.clone(), #a)).collect())
        }
        Conv::Option(c) => {
            let m = mapper(g, to, c);
            quote!(#src.as_ref().map(#m))
        }
        Conv::Fn(name) => {
            let n = ident(name);
            if place {
                quote!(#n(&#src))
            } else {
                quote!(#n(#src))
            }
        }
        Conv::IntEnum(t) => {
            let t = type_path(g, to, t, &sup2());
            quote!(#t(#src.0))
        }
    }
}

fn field_expr(g: &GroupMod, f: &PairFn, how: &FieldHow) -> TokenStream {
    let tr = res(g, f.to);
    match how {
        FieldHow::Mapped {
            from_ident,
            conv,
            from,
            to,
            copy,
            to_ty,
        } => {
            let fi = ident(from_ident);
            let (df, dt) = (depth(*from), depth(*to));
            if df == dt {
                if conv.is_clone() {
                    return if *copy {
                        quote!(from.#fi)
                    } else {
                        quote!(from.#fi.clone())
                    };
                }
                let m = mapper(g, f.to, conv);
                return match df {
                    0 => apply(g, f.to, conv, quote!(from.#fi), true),
                    1 => quote!(from.#fi.as_ref().map(#m)),
                    _ => quote!(from.#fi.as_ref().map(|x| x.as_ref().map(#m))),
                };
            }
            if df == 0 {
                let v = if conv.is_clone() {
                    if *copy {
                        quote!(from.#fi)
                    } else {
                        quote!(from.#fi.clone())
                    }
                } else {
                    apply(g, f.to, conv, quote!(from.#fi), true)
                };
                return if dt == 1 {
                    quote!(Some(#v))
                } else {
                    quote!(Some(Some(#v)))
                };
            }
            let mapped = match (conv.is_clone(), *copy, df) {
                (true, true, 1) => quote!(from.#fi),
                (true, true, _) => quote!(from.#fi.flatten()),
                (true, false, 1) => quote!(from.#fi.clone()),
                (true, false, _) => quote!(from.#fi.clone().flatten()),
                (false, _, 1) => {
                    let m = mapper(g, f.to, conv);
                    quote!(from.#fi.as_ref().map(#m))
                }
                (false, _, _) => {
                    let m = mapper(g, f.to, conv);
                    quote!(from.#fi.as_ref().and_then(Option::as_ref).map(#m))
                }
            };
            match dt {
                0 => {
                    if ty_default(to_ty, &tr.types) {
                        quote!(#mapped.unwrap_or_default())
                    } else {
                        let z = zero(g, f.to, to_ty);
                        quote!(#mapped.unwrap_or_else(|| #z))
                    }
                }
                1 => mapped,
                _ => quote!(#mapped.map(Some)),
            }
        }
        FieldHow::Recode {
            from_ident,
            to,
            to_ty,
            ..
        } => {
            let fi = ident(from_ident);
            let rt = runtime();
            let r = quote!(#rt::hub::recode(&from.#fi));
            match depth(*to) {
                0 => {
                    if ty_default(to_ty, &tr.types) {
                        quote!(#r.unwrap_or_default())
                    } else {
                        let z = zero(g, f.to, to_ty);
                        quote!(#r.unwrap_or_else(|| #z))
                    }
                }
                1 => r,
                _ => quote!(#r.map(Some)),
            }
        }
        FieldHow::Zero { to, to_ty } => {
            if depth(*to) > 0 {
                quote!(None)
            } else {
                zero(g, f.to, to_ty)
            }
        }
    }
}

/// The zero value of `t` (a type of resource `to`), as an expression.
fn zero(g: &GroupMod, to: (usize, usize), t: &Ty) -> TokenStream {
    let r = res(g, to);
    match t {
        Ty::Bool => quote!(false),
        Ty::I32 | Ty::I64 => quote!(0),
        Ty::Number => quote!(::serde_json::Number::from(0)),
        Ty::String => quote!(String::new()),
        Ty::Vec(_) => quote!(Vec::new()),
        Ty::Map(_) => quote!(::std::collections::BTreeMap::new()),
        Ty::Option(_) => quote!(None),
        Ty::IntOrString | Ty::IntOrString64 | Ty::Json => quote!(Default::default()),
        Ty::Known(KnownType::Condition) => quote! {
            ::k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
                last_transition_time: ::k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(Default::default()),
                message: String::new(),
                observed_generation: None,
                reason: String::new(),
                status: String::new(),
                type_: String::new(),
            }
        },
        Ty::Known(_) => quote!(Default::default()),
        Ty::Named(i) => {
            let i = resolve(&r.types, *i);
            let td = &r.types[i];
            if td.default {
                return quote!(Default::default());
            }
            let path = type_path(g, to, &td.name, &sup2());
            match &td.body {
                TypeBody::Struct { fields, flatten } => {
                    let fs = fields.iter().map(|f| {
                        let n = ident(&f.ident);
                        let e = if f.presence == Presence::Required {
                            zero(g, to, &f.ty)
                        } else {
                            quote!(None)
                        };
                        quote!(#n: #e,)
                    });
                    let fl = flatten.as_ref().map(|(n, _)| {
                        let n = ident(n);
                        quote!(#n: ::std::collections::BTreeMap::new(),)
                    });
                    quote!(#path { #(#fs)* #fl })
                }
                TypeBody::StringEnum { other, .. } => {
                    let o = ident(other);
                    quote!(#path::#o(String::new()))
                }
                TypeBody::IntEnum { .. } => quote!(#path(0)),
                TypeBody::Untagged { variants } => match variants.first() {
                    Some((v, vt)) => {
                        let v = ident(v);
                        let z = zero(g, to, vt);
                        if matches!(vt, Ty::Named(_)) {
                            quote!(#path::#v(Box::new(#z)))
                        } else {
                            quote!(#path::#v(#z))
                        }
                    }
                    None => quote!(Default::default()),
                },
            }
        }
    }
}
