//! Identifier rules: every Rust name the generator prints is decided by these functions.

use heck::{ToSnakeCase, ToUpperCamelCase};

/// Strict and reserved keywords of editions 2015-2024 (`gen` is reserved from 2024 on).
const KEYWORDS: &[&str] = &[
    "abstract", "as", "async", "await", "become", "box", "break", "const", "continue", "crate",
    "do", "dyn", "else", "enum", "extern", "false", "final", "fn", "for", "gen", "if", "impl",
    "in", "let", "loop", "macro", "match", "mod", "move", "mut", "override", "priv", "pub", "ref",
    "return", "self", "Self", "static", "struct", "super", "trait", "true", "try", "type",
    "typeof", "unsafe", "unsized", "use", "virtual", "where", "while", "yield",
];

/// Keywords that cannot be raw identifiers; they get a `_` suffix instead.
const NOT_RAW: &[&str] = &["self", "Self", "crate", "super", "_"];

/// Type names that would shadow prelude items the generated code uses unqualified.
const RESERVED_TYPES: &[&str] = &[
    "Option",
    "Some",
    "None",
    "Vec",
    "String",
    "Box",
    "Result",
    "Ok",
    "Err",
    "Default",
    "Clone",
    "Debug",
    "PartialEq",
];

pub fn is_keyword(s: &str) -> bool {
    KEYWORDS.contains(&s)
}

/// Keeps ASCII alphanumerics and `_`, turning every other run into one `_`.
fn ascii_only(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut last_us = false;
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
            last_us = false;
        } else if !last_us {
            out.push('_');
            last_us = true;
        }
    }
    out
}

/// Spells out a name made only of symbols (`=`, `!=`, `-`), so operator enums keep meaning.
fn symbol_name(s: &str) -> String {
    let mut out = String::new();
    for c in s.chars() {
        out.push_str(match c {
            '-' => "Dash",
            '=' => "Eq",
            '+' => "Plus",
            '*' => "Star",
            '.' => "Dot",
            '/' => "Slash",
            '_' => "Underscore",
            ' ' => "Space",
            '<' => "Lt",
            '>' => "Gt",
            '!' => "Not",
            '%' => "Percent",
            '@' => "At",
            '#' => "Hash",
            '~' => "Tilde",
            '&' => "And",
            '|' => "Or",
            ':' => "Colon",
            '?' => "Question",
            _ => "Sym",
        });
    }
    out
}

type Memo = std::cell::RefCell<std::collections::HashMap<String, String>>;

thread_local! {
    static PASCAL: Memo = Memo::default();
    static SNAKE: Memo = Memo::default();
}

/// Entries a thread remembers before starting over (bounds memory in long-lived processes).
const MEMO_CAP: usize = 1 << 16;

/// `pascal` and `snake` run for every property of every schema, mostly on names seen before
/// (`name`, `spec`, ...), and heck's conversions cost thousands of instructions: each thread
/// remembers its results. Pure functions, so the output cannot change.
fn memo(cache: &'static std::thread::LocalKey<Memo>, s: &str, f: fn(&str) -> String) -> String {
    cache.with(|c| {
        if let Some(v) = c.borrow().get(s) {
            return v.clone();
        }
        let v = f(s);
        let mut c = c.borrow_mut();
        if c.len() >= MEMO_CAP {
            c.clear();
        }
        c.insert(s.to_string(), v.clone());
        v
    })
}

/// UpperCamelCase building block for type and variant names (no keyword handling needed:
/// UpperCamelCase words are never keywords except `Self`, which callers reserve).
pub fn pascal(s: &str) -> String {
    memo(&PASCAL, s, pascal_uncached)
}

fn pascal_uncached(s: &str) -> String {
    let cleaned = ascii_only(s);
    let p = cleaned.to_upper_camel_case();
    let p = if p.is_empty() {
        if s.is_empty() {
            "Empty".to_string()
        } else {
            symbol_name(s)
        }
    } else {
        p
    };
    if p.starts_with(|c: char| c.is_ascii_digit()) {
        format!("V{p}")
    } else if p == "Self" {
        // `Self` is the one UpperCamelCase keyword; it can't even be a raw identifier.
        "SelfValue".to_string()
    } else {
        p
    }
}

/// A type name built from parts; avoids prelude names and `Self`.
pub fn type_name(base: &str) -> String {
    if RESERVED_TYPES.contains(&base) || base == "Self" {
        format!("{base}Type")
    } else {
        base.to_string()
    }
}

/// snake_case without keyword handling (see [`field_ident`]).
pub fn snake(s: &str) -> String {
    memo(&SNAKE, s, snake_uncached)
}

fn snake_uncached(s: &str) -> String {
    let cleaned = ascii_only(s);
    let mut out = cleaned.to_snake_case();
    if out.is_empty() {
        out = if s.is_empty() {
            "empty".into()
        } else {
            symbol_name(s).to_snake_case()
        };
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, '_');
    }
    out
}

/// Turns a snake name into something `quote` can print: raw for keywords, `_` suffix where raw is
/// impossible. The returned string is the identifier text (`r#type`, `self_`).
pub fn field_ident(snake: &str) -> String {
    if NOT_RAW.contains(&snake) {
        format!("{snake}_")
    } else if is_keyword(snake) {
        format!("r#{snake}")
    } else {
        snake.to_string()
    }
}

/// Module name for a DNS-ish string (group label, version, kind).
pub fn module_ident(s: &str) -> String {
    field_ident(&snake(s))
}

/// Picks unique names: `wanted` is (candidate, tiebreak key) per item, in any order. Items that
/// want the same candidate are ordered by `(not exact, tiebreak)`; the first keeps the candidate,
/// the rest get `{candidate}{sep}2`, `{candidate}{sep}3`, ... skipping names already taken.
/// The result depends only on the set of inputs, never on their order.
pub fn assign_unique(
    wanted: &[(String, String, bool)],
    taken: &mut std::collections::BTreeSet<String>,
    sep: &str,
) -> Vec<String> {
    let mut order: Vec<usize> = (0..wanted.len()).collect();
    order.sort_by(|&a, &b| {
        let (ca, ka, ea) = &wanted[a];
        let (cb, kb, eb) = &wanted[b];
        ca.cmp(cb).then(eb.cmp(ea)).then(ka.cmp(kb))
    });
    let mut out = vec![String::new(); wanted.len()];
    // First pass: every first claimant of a free candidate keeps it, so a suffixed name can never
    // steal another item's plain candidate.
    let mut first = vec![false; wanted.len()];
    let mut prev: Option<&str> = None;
    for &i in &order {
        let c = wanted[i].0.as_str();
        if prev != Some(c) && !taken.contains(c) {
            first[i] = true;
        }
        prev = Some(c);
    }
    for &i in &order {
        if first[i] {
            taken.insert(wanted[i].0.clone());
            out[i] = wanted[i].0.clone();
        }
    }
    for &i in &order {
        if first[i] {
            continue;
        }
        let c = &wanted[i].0;
        let mut n = 2;
        loop {
            let cand = format!("{c}{sep}{n}");
            if !taken.contains(&cand) && !wanted.iter().any(|w| w.0 == cand) {
                taken.insert(cand.clone());
                out[i] = cand;
                break;
            }
            n += 1;
        }
    }
    out
}

/// Builder method names of an apply configuration: each field's identifier, except where it
/// would take a name the type already uses (`reserved`: its constructor, its fixed fields); those
/// get the collision rule's `_2` suffix.
pub fn builder_methods(fields: &[super::Field], reserved: &[&str]) -> Vec<String> {
    let wanted: Vec<(String, String, bool)> = fields
        .iter()
        .map(|f| (f.ident.clone(), f.wire.clone(), false))
        .collect();
    let mut taken: std::collections::BTreeSet<String> =
        reserved.iter().map(|s| s.to_string()).collect();
    assign_unique(&wanted, &mut taken, "_")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idents() {
        assert_eq!(field_ident(&snake("type")), "r#type");
        assert_eq!(field_ident(&snake("gen")), "r#gen");
        assert_eq!(field_ident(&snake("self")), "self_");
        assert_eq!(field_ident(&snake("$ref")), "r#ref");
        assert_eq!(snake("x-kubernetes-foo"), "x_kubernetes_foo");
        assert_eq!(snake("9lives"), "_9lives");
        assert_eq!(pascal("="), "Eq");
        assert_eq!(pascal("!="), "NotEq");
        assert_eq!(pascal(""), "Empty");
        assert_eq!(pascal("13"), "V13");
        assert_eq!(pascal("héllo wörld"), "HLloWRld");
        assert_eq!(type_name("Option"), "OptionType");
    }

    #[test]
    fn unique_is_order_independent() {
        let a = vec![
            ("foo".to_string(), "b".to_string(), false),
            ("foo".to_string(), "a".to_string(), false),
            ("foo".to_string(), "foo".to_string(), true),
            ("foo_2".to_string(), "z".to_string(), true),
        ];
        let mut b = a.clone();
        b.reverse();
        let ra = assign_unique(&a, &mut Default::default(), "_");
        let rb = assign_unique(&b, &mut Default::default(), "_");
        let mut ra_pairs: Vec<_> = a.iter().map(|x| x.1.clone()).zip(ra).collect();
        let mut rb_pairs: Vec<_> = b.iter().map(|x| x.1.clone()).zip(rb).collect();
        ra_pairs.sort();
        rb_pairs.sort();
        assert_eq!(ra_pairs, rb_pairs);
        assert!(ra_pairs.contains(&("foo".into(), "foo".into())));
        assert!(ra_pairs.contains(&("z".into(), "foo_2".into())));
        assert!(ra_pairs.contains(&("a".into(), "foo_3".into())));
        assert!(ra_pairs.contains(&("b".into(), "foo_4".into())));
    }
}
