//! IR -> `syn` items (nested and root types) and `quote!` tokens (impls, module layout). Pure
//! functions: no I/O, no naming decisions.

mod api;
mod apply;
mod conversion;
mod defaults;
mod layout;
mod resource;
mod typed_diff;
mod types;
mod validation;

pub use layout::files;

use proc_macro2::{Ident, Literal, Span};

/// Identifier from the text the model decided (`r#type` becomes a raw identifier).
/// The path from a kind module (`<root>::<group>::<version>::<kind>`) to the tree's own
/// `IntOrString`, emitted at the root by [`int_or_string64_items`].
pub(crate) const INT_OR_STRING_64: &str = "super::super::super::IntOrString";

/// The tree's own `IntOrString`, emitted at its root when a field needs it (see
/// `model::Ty::IntOrString64`): k8s-openapi's holds a 32-bit integer, but a server stores any
/// int64 in an `x-kubernetes-int-or-string` field. Plain serde code, so the types still need only
/// `serde`, `serde_json` and `k8s-openapi`.
pub(crate) fn int_or_string64_items(model: &crate::model::Model) -> proc_macro2::TokenStream {
    if !model.uses_int_or_string64() {
        return proc_macro2::TokenStream::new();
    }
    quote::quote! {
        /// An `x-kubernetes-int-or-string` value: an integer or a string, as the API server stores
        /// it. Like k8s-openapi's `IntOrString`, but the integer is 64 bits wide: a server accepts
        /// any int64 there (`9223372036854775807`), and a 32-bit type would fail to read the
        /// object back. `From` converts k8s-openapi's type into this one, `TryFrom` back.
        #[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum IntOrString {
            /// An integer (`3`).
            Int(i64),
            /// A string (`"25%"`, a port name).
            String(String),
        }
        impl Default for IntOrString {
            /// `Int(0)`, as k8s-openapi's.
            fn default() -> Self {
                IntOrString::Int(0)
            }
        }
        impl ::serde::Serialize for IntOrString {
            fn serialize<S: ::serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                match self {
                    IntOrString::Int(i) => serializer.serialize_i64(*i),
                    IntOrString::String(s) => serializer.serialize_str(s),
                }
            }
        }
        impl<'de> ::serde::Deserialize<'de> for IntOrString {
            fn deserialize<D: ::serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
                struct Visitor;
                impl ::serde::de::Visitor<'_> for Visitor {
                    type Value = IntOrString;
                    fn expecting(&self, f: &mut ::std::fmt::Formatter<'_>) -> ::std::fmt::Result {
                        f.write_str("an integer or a string")
                    }
                    fn visit_i64<E: ::serde::de::Error>(self, v: i64) -> Result<IntOrString, E> {
                        Ok(IntOrString::Int(v))
                    }
                    fn visit_u64<E: ::serde::de::Error>(self, v: u64) -> Result<IntOrString, E> {
                        i64::try_from(v)
                            .map(IntOrString::Int)
                            .map_err(|_| E::invalid_value(::serde::de::Unexpected::Unsigned(v), &self))
                    }
                    /// A whole number within 2^53 written as a float (`3.0`), which the server
                    /// accepts as an integer and stores as one.
                    fn visit_f64<E: ::serde::de::Error>(self, v: f64) -> Result<IntOrString, E> {
                        if v.fract() == 0.0 && v.abs() <= 9_007_199_254_740_992.0 {
                            Ok(IntOrString::Int(v as i64))
                        } else {
                            Err(E::invalid_value(::serde::de::Unexpected::Float(v), &self))
                        }
                    }
                    fn visit_str<E: ::serde::de::Error>(self, v: &str) -> Result<IntOrString, E> {
                        Ok(IntOrString::String(v.to_owned()))
                    }
                    fn visit_string<E: ::serde::de::Error>(self, v: String) -> Result<IntOrString, E> {
                        Ok(IntOrString::String(v))
                    }
                }
                deserializer.deserialize_any(Visitor)
            }
        }
        impl From<i32> for IntOrString {
            fn from(v: i32) -> Self {
                IntOrString::Int(v.into())
            }
        }
        impl From<i64> for IntOrString {
            fn from(v: i64) -> Self {
                IntOrString::Int(v)
            }
        }
        impl From<String> for IntOrString {
            fn from(v: String) -> Self {
                IntOrString::String(v)
            }
        }
        impl From<&str> for IntOrString {
            fn from(v: &str) -> Self {
                IntOrString::String(v.to_owned())
            }
        }
        impl From<::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString> for IntOrString {
            fn from(v: ::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString) -> Self {
                match v {
                    ::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::Int(i) => {
                        IntOrString::Int(i.into())
                    }
                    ::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString::String(s) => {
                        IntOrString::String(s)
                    }
                }
            }
        }
        /// Fails for an integer beyond `i32`.
        impl TryFrom<IntOrString> for ::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString {
            type Error = ::std::num::TryFromIntError;
            fn try_from(v: IntOrString) -> Result<Self, Self::Error> {
                Ok(match v {
                    IntOrString::Int(i) => Self::Int(i32::try_from(i)?),
                    IntOrString::String(s) => Self::String(s),
                })
            }
        }
    }
}

pub(crate) fn ident(s: &str) -> Ident {
    match s.strip_prefix("r#") {
        Some(raw) => Ident::new_raw(raw, Span::call_site()),
        None => Ident::new(s, Span::call_site()),
    }
}

/// The text of one doc line's attribute: a leading space (so it prints as `/// line`), tabs
/// as four spaces.
pub(crate) fn doc_text(line: &str, text: &mut String) {
    text.clear();
    if !line.is_empty() {
        text.push(' ');
        for (i, part) in line.split('\t').enumerate() {
            if i > 0 {
                text.push_str("    ");
            }
            text.push_str(part);
        }
    }
}

/// The doc string as a literal. A raw string when it can be one: syn unescapes a cooked string
/// char by char several times per attribute, a raw one is only sliced, and prettyplease prints a
/// one-line doc from its value (`///` + text), so the output bytes are the same. Text with line
/// breaks keeps the cooked form: prettyplease may print such an attribute as written.
pub(crate) fn doc_literal(text: &str) -> Literal {
    if text.contains(['\n', '\r']) || text.starts_with('/') {
        return Literal::string(text);
    }
    raw_literal(text).unwrap_or_else(|| Literal::string(text))
}

/// `text` as a raw string literal with the fewest `#`s it needs (`r"..."`, `r#"..."#`...), or
/// `None` when it cannot be one (a carriage return, or more than 255 `#`s needed).
pub(crate) fn raw_literal(text: &str) -> Option<Literal> {
    if text.contains('\r') {
        return None;
    }
    // The fewest `#` such that no `"` in the text is followed by that many `#`.
    let mut hashes = 0;
    for (i, _) in text.match_indices('"') {
        let run = text[i + 1..].bytes().take_while(|b| *b == b'#').count();
        hashes = hashes.max(run + 1);
    }
    if hashes > 255 {
        return None;
    }
    let mut repr = String::with_capacity(text.len() + 3 + 2 * hashes);
    repr.push('r');
    repr.extend(std::iter::repeat_n('#', hashes));
    repr.push('"');
    repr.push_str(text);
    repr.push('"');
    repr.extend(std::iter::repeat_n('#', hashes));
    repr.parse().ok()
}

/// `#[allow(deprecated)]` for items that name a deprecated version's root type, so a
/// `deny(warnings)` crate still builds.
pub(crate) fn allow_deprecated(r: &crate::model::Resource) -> Option<proc_macro2::TokenStream> {
    r.deprecated
        .as_ref()
        .map(|_| quote::quote!(#[allow(deprecated)]))
}

/// Extra derive paths; validated by [`crate::Options`] parsing.
pub(crate) fn derive_paths(extra: &[String]) -> Vec<syn::Path> {
    extra
        .iter()
        .filter_map(|d| syn::parse_str::<syn::Path>(d).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Raw doc literals must format exactly like the cooked ones `quote!` makes.
    #[test]
    fn raw_doc_literals_format_like_cooked() {
        let lines: Vec<String> = [
            "plain",
            "",
            "quotes \" and \"# and \"## and a \\ backslash",
            "tab\there, unicode é ✓, braces {} and `code`",
            "/ leading slash",
            "ends with \"",
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        let cooked = lines.iter().map(|l| {
            let l = l.replace('\t', "    ");
            let text = if l.is_empty() {
                String::new()
            } else {
                format!(" {l}")
            };
            quote::quote!(#[doc = #text])
        });
        let cooked = quote::quote!(#(#cooked)* struct S;);
        let ours = types::doc_attr_list(&lines);
        let ours = quote::quote!(#(#ours)* struct S;);
        let a = crate::render::format_items(cooked).unwrap();
        let b = crate::render::format_items(ours).unwrap();
        assert_eq!(a, b);
        assert!(b.contains("/// quotes \" and \"# and \"## and a \\ backslash\n"));
        assert!(doc_literal(" a \"# b").to_string().starts_with("r##\""));
    }
}
