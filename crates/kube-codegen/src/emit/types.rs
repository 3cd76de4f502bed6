//! Nested type definitions and field declarations, built as `syn` items directly: they are most of
//! the output, and prettyplease prints an item the same whether it was built or parsed, so the
//! module-tree layout skips the tokens -> `syn` parse for them (the single file and the root type
//! embed them as tokens).

use proc_macro2::TokenStream;
use quote::quote;
use syn::punctuated::Punctuated;
use syn::{
    AngleBracketedGenericArguments, AttrStyle, Attribute, Expr, ExprLit, FieldMutability, Fields,
    FieldsNamed, FieldsUnnamed, GenericArgument, Generics, Item, ItemEnum, ItemStruct, ItemType,
    Lit, MacroDelimiter, Meta, MetaList, MetaNameValue, Path, PathArguments, PathSegment, Type,
    TypePath, Variant, Visibility,
};

use super::{derive_paths, doc_literal, doc_text, ident};
use crate::Error;
use crate::model::{Field, Presence, Ty, TypeBody, TypeDef};
use crate::render::parse_items;

pub(super) fn path(leading_colon: bool, segments: &[&str]) -> Path {
    Path {
        leading_colon: leading_colon.then(Default::default),
        segments: segments
            .iter()
            .map(|s| PathSegment::from(ident(s)))
            .collect(),
    }
}

pub(super) fn path_ty(path: Path) -> Type {
    Type::Path(TypePath { qself: None, path })
}

/// `path<args>` (the arguments go on the last segment).
fn generic(mut path: Path, args: impl IntoIterator<Item = Type>) -> Type {
    if let Some(last) = path.segments.last_mut() {
        last.arguments = PathArguments::AngleBracketed(AngleBracketedGenericArguments {
            colon2_token: None,
            lt_token: Default::default(),
            args: args.into_iter().map(GenericArgument::Type).collect(),
            gt_token: Default::default(),
        });
    }
    path_ty(path)
}

pub fn ty(t: &Ty, types: &[TypeDef]) -> Type {
    match t {
        Ty::Bool => path_ty(path(false, &["bool"])),
        Ty::I32 => path_ty(path(false, &["i32"])),
        Ty::I64 => path_ty(path(false, &["i64"])),
        Ty::Number => path_ty(path(true, &["serde_json", "Number"])),
        Ty::String => path_ty(path(false, &["String"])),
        Ty::IntOrString => path_ty(path(
            true,
            &[
                "k8s_openapi",
                "apimachinery",
                "pkg",
                "util",
                "intstr",
                "IntOrString",
            ],
        )),
        Ty::IntOrString64 => path_ty(path(
            false,
            &super::INT_OR_STRING_64.split("::").collect::<Vec<_>>(),
        )),
        Ty::Json => path_ty(path(true, &["serde_json", "Value"])),
        Ty::Vec(inner) => generic(path(false, &["Vec"]), [ty(inner, types)]),
        Ty::Map(inner) => map_of(ty(inner, types)),
        Ty::Option(inner) => option(ty(inner, types)),
        Ty::Named(i) => path_ty(path(false, &[&types[*i].name])),
        Ty::Known(k) => {
            let mut segments = vec!["k8s_openapi"];
            segments.extend_from_slice(k.path());
            path_ty(path(true, &segments))
        }
    }
}

fn option(inner: Type) -> Type {
    generic(path(false, &["Option"]), [inner])
}

fn map_of(value: Type) -> Type {
    generic(
        path(true, &["std", "collections", "BTreeMap"]),
        [path_ty(path(false, &["String"])), value],
    )
}

pub(super) fn attr(meta: Meta) -> Attribute {
    Attribute {
        pound_token: Default::default(),
        style: AttrStyle::Outer,
        bracket_token: Default::default(),
        meta,
    }
}

/// `#[name(tokens)]`.
pub(super) fn list_attr(name: &str, tokens: TokenStream) -> Attribute {
    attr(Meta::List(MetaList {
        path: path(false, &[name]),
        delimiter: MacroDelimiter::Paren(Default::default()),
        tokens,
    }))
}

/// `#[doc = "..."]` attributes, one per line (see [`super::doc_attrs`]).
pub fn doc_attr_list(lines: &[String]) -> Vec<Attribute> {
    let mut text = String::new();
    lines
        .iter()
        .map(|l| {
            doc_text(l, &mut text);
            doc_attr(&text)
        })
        .collect()
}

pub(super) fn doc_attr(text: &str) -> Attribute {
    attr(Meta::NameValue(MetaNameValue {
        path: path(false, &["doc"]),
        eq_token: Default::default(),
        value: Expr::Lit(ExprLit {
            attrs: Vec::new(),
            lit: Lit::new(doc_literal(text)),
        }),
    }))
}

fn bare(ident_text: &str) -> &str {
    ident_text.strip_prefix("r#").unwrap_or(ident_text)
}

pub(super) fn named_field(attrs: Vec<Attribute>, name: &str, ty: Type) -> syn::Field {
    syn::Field {
        attrs,
        vis: Visibility::Public(Default::default()),
        mutability: FieldMutability::None,
        ident: Some(ident(name)),
        colon_token: Some(Default::default()),
        ty,
    }
}

pub fn field(f: &Field, types: &[TypeDef]) -> syn::Field {
    let mut attrs = doc_attr_list(&f.docs);
    let inner = ty(&f.ty, types);
    let rename = (bare(&f.ident) != f.wire).then(|| {
        let w = &f.wire;
        quote!(rename = #w,)
    });
    let (serde, full) = match f.presence {
        Presence::Required => (rename, inner),
        Presence::Optional => (
            Some(quote!(#rename skip_serializing_if = "Option::is_none")),
            option(inner),
        ),
        Presence::RequiredNullable => (Some(quote!(#rename default)), option(inner)),
        Presence::OptionalNullable => (
            Some(
                quote!(#rename default, skip_serializing_if = "Option::is_none", deserialize_with = "nullable"),
            ),
            option(option(inner)),
        ),
    };
    if let Some(serde) = serde {
        attrs.push(list_attr("serde", serde));
    }
    named_field(attrs, &f.ident, full)
}

pub fn flatten(f: &Option<(String, Ty)>, types: &[TypeDef]) -> Option<syn::Field> {
    let (name, t) = f.as_ref()?;
    let attrs = vec![
        doc_attr(" Fields not declared by the schema, kept as sent."),
        list_attr("serde", quote!(flatten)),
    ];
    Some(named_field(attrs, name, map_of(ty(t, types))))
}

/// `derive(...)` with the base set, plus extra derives that aren't already there.
pub fn derives(default: bool, extra: &[String]) -> Attribute {
    derives_with(default, false, extra)
}

/// As [`derives`]; `manual_default` types have a hand-written `impl Default`, so a requested
/// `Default` derive is dropped too.
pub fn derives_with(default: bool, manual_default: bool, extra: &[String]) -> Attribute {
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
    list_attr(
        "derive",
        quote!(Clone, Debug, #d PartialEq, ::serde::Serialize, ::serde::Deserialize #(, #extra)*),
    )
}

pub(super) fn struct_item(attrs: Vec<Attribute>, name: &str, fields: Fields) -> Item {
    Item::Struct(ItemStruct {
        attrs,
        vis: Visibility::Public(Default::default()),
        struct_token: Default::default(),
        ident: ident(name),
        generics: Generics::default(),
        fields,
        semi_token: None,
    })
}

fn enum_item(attrs: Vec<Attribute>, name: &str, variants: Vec<Variant>) -> Item {
    Item::Enum(ItemEnum {
        attrs,
        vis: Visibility::Public(Default::default()),
        enum_token: Default::default(),
        ident: ident(name),
        generics: Generics::default(),
        brace_token: Default::default(),
        variants: variants.into_iter().collect(),
    })
}

fn variant(attrs: Vec<Attribute>, name: &str, field: Option<Type>) -> Variant {
    Variant {
        attrs,
        ident: ident(name),
        fields: match field {
            None => Fields::Unit,
            Some(ty) => Fields::Unnamed(FieldsUnnamed {
                paren_token: Default::default(),
                unnamed: Punctuated::from_iter([syn::Field {
                    attrs: Vec::new(),
                    vis: Visibility::Inherited,
                    mutability: FieldMutability::None,
                    ident: None,
                    colon_token: None,
                    ty,
                }]),
            }),
        },
        discriminant: None,
    }
}

/// The items of one nested type, in output order.
pub fn typedef(t: &TypeDef, types: &[TypeDef]) -> Result<Vec<Item>, Error> {
    match built(t, types) {
        Some(items) => Ok(items),
        None => parse_items(int_enum_tokens(t)),
    }
}

/// The same items as tokens (for the single-file layout and other token contexts).
pub fn typedef_tokens(t: &TypeDef, types: &[TypeDef]) -> TokenStream {
    match built(t, types) {
        Some(items) => quote!(#(#items)*),
        None => int_enum_tokens(t),
    }
}

/// An integer enum: rare, so built as tokens (and parsed when items are needed).
fn int_enum_tokens(t: &TypeDef) -> TokenStream {
    let TypeBody::IntEnum { consts, default } = &t.body else {
        return TokenStream::new();
    };
    let attrs = doc_attr_list(&t.docs);
    let name = ident(&t.name);
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
        #(#attrs)*
        #derive
        #[serde(transparent)]
        pub struct #name(pub i64);
        impl #name {
            #(#cs)*
        }
        #def
    }
}

/// Every other type, built as items.
fn built(t: &TypeDef, types: &[TypeDef]) -> Option<Vec<Item>> {
    let mut attrs = doc_attr_list(&t.docs);
    if let Some(target) = t.alias_of {
        return Some(vec![Item::Type(ItemType {
            attrs,
            vis: Visibility::Public(Default::default()),
            type_token: Default::default(),
            ident: ident(&t.name),
            generics: Generics::default(),
            eq_token: Default::default(),
            ty: Box::new(path_ty(path(false, &[&types[target].name]))),
            semi_token: Default::default(),
        })]);
    }
    match &t.body {
        TypeBody::Struct {
            fields,
            flatten: fl,
        } => {
            attrs.push(derives(t.default, &t.extra_derives));
            let named = fields
                .iter()
                .map(|f| field(f, types))
                .chain(flatten(fl, types))
                .collect();
            let fields = Fields::Named(FieldsNamed {
                brace_token: Default::default(),
                named,
            });
            Some(vec![struct_item(attrs, &t.name, fields)])
        }
        TypeBody::StringEnum {
            variants,
            other,
            default,
        } => {
            attrs.push(derives(default.is_some(), &t.extra_derives));
            let mut vs: Vec<Variant> = variants
                .iter()
                .enumerate()
                .map(|(i, (v, wire))| {
                    let mut va = Vec::new();
                    if *default == Some(i) {
                        va.push(attr(Meta::Path(path(false, &["default"]))));
                    }
                    if v != wire {
                        va.push(list_attr("serde", quote!(rename = #wire)));
                    }
                    variant(va, v, None)
                })
                .collect();
            let other_attrs = vec![
                doc_attr(" A value this version of the schema doesn't list, kept as sent."),
                list_attr("serde", quote!(untagged)),
            ];
            vs.push(variant(
                other_attrs,
                other,
                Some(path_ty(path(false, &["String"]))),
            ));
            Some(vec![enum_item(attrs, &t.name, vs)])
        }
        TypeBody::IntEnum { .. } => None,
        TypeBody::Untagged { variants } => {
            attrs.push(derives(false, &t.extra_derives));
            attrs.push(list_attr("serde", quote!(untagged)));
            let vs = variants
                .iter()
                .map(|(v, vt)| {
                    let inner = ty(vt, types);
                    // Boxed so one large object variant doesn't bloat every value.
                    let inner = if matches!(vt, Ty::Named(_)) {
                        generic(path(false, &["Box"]), [inner])
                    } else {
                        inner
                    };
                    variant(Vec::new(), v, Some(inner))
                })
                .collect();
            Some(vec![enum_item(attrs, &t.name, vs)])
        }
    }
}
