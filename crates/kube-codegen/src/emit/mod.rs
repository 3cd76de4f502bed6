//! IR -> `syn` items (nested and root types) and `quote!` tokens (impls, module layout). Pure
//! functions: no I/O, no naming decisions.

mod api;
mod apply;
mod layout;
mod resource;
mod types;
mod validation;

pub use layout::files;

use proc_macro2::{Ident, Literal, Span};

/// Identifier from the text the model decided (`r#type` becomes a raw identifier).
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
