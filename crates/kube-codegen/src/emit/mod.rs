//! IR -> `TokenStream`, built with `quote!` only. Pure functions: no I/O, no naming decisions.

mod layout;
mod resource;
mod types;

pub use layout::files;

use proc_macro2::{Ident, Span, TokenStream};
use quote::quote;

/// Identifier from the text the model decided (`r#type` becomes a raw identifier).
pub(crate) fn ident(s: &str) -> Ident {
    match s.strip_prefix("r#") {
        Some(raw) => Ident::new_raw(raw, Span::call_site()),
        None => Ident::new(s, Span::call_site()),
    }
}

/// `#[doc = "..."]` attributes, one per line (prettyplease prints them as `///`).
pub(crate) fn doc_attrs(lines: &[String]) -> TokenStream {
    let lines = lines.iter().map(|l| {
        let l = l.replace('\t', "    ");
        let text = if l.is_empty() {
            String::new()
        } else {
            format!(" {l}")
        };
        quote!(#[doc = #text])
    });
    quote!(#(#lines)*)
}

/// Extra derive paths; validated by [`crate::Options`] parsing.
pub(crate) fn derive_paths(extra: &[String]) -> Vec<syn::Path> {
    extra
        .iter()
        .filter_map(|d| syn::parse_str::<syn::Path>(d).ok())
        .collect()
}
