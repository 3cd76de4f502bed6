//! Nested apply configurations printed straight to text, byte for byte as prettyplease prints the
//! tokens of [`super::nested`]. They are most of `--emit apply`'s output and all alike, so the
//! module-tree layout skips the tokens -> `syn` -> prettyplease passes for them (about half the
//! time of all outputs went there). Only layouts prettyplease would print on one line per item
//! are written here: a line that would reach its margin sends the piece back the slow way.
//! `tests` compares both ways over every fixture CRD.

use std::fmt::Write;

use proc_macro2::Literal;

use super::{TRAIT_METHOD_NAMES, serde_camel};
use crate::model::naming::builder_methods;
use crate::model::{Ty, TypeBody, TypeDef};

/// prettyplease breaks a line longer than this.
const MARGIN: usize = 89;

/// Appends `text` at `indent` spaces and a newline; `None` when it would not fit.
fn line(out: &mut String, indent: usize, text: &str) -> Option<()> {
    fitted(out, indent, text, text.len())
}

/// [`line`] for a line ending with a list's trailing comma: prettyplease prints that comma
/// only once the list is broken, so it does not count towards the margin.
fn list_line(out: &mut String, indent: usize, text: &str) -> Option<()> {
    let counted = text.strip_suffix(',').unwrap_or(text).len();
    fitted(out, indent, text, counted)
}

fn fitted(out: &mut String, indent: usize, text: &str, counted: usize) -> Option<()> {
    if indent + counted > MARGIN {
        return None;
    }
    out.extend(std::iter::repeat_n(' ', indent));
    out.push_str(text);
    out.push('\n');
    Some(())
}

/// A line prettyplease has no place to break (a doc comment, `pub type A = B;`, an item's
/// header), printed whatever its length.
fn whole(out: &mut String, indent: usize, text: &str) {
    out.extend(std::iter::repeat_n(' ', indent));
    out.push_str(text);
    out.push('\n');
}

fn doc(out: &mut String, indent: usize, text: &str) {
    whole(out, indent, &format!("/// {text}"));
}

/// A type as prettyplease sees it for line breaking: a path, or a path with generic arguments.
#[derive(Clone)]
enum TyText {
    Path(String),
    Generic(&'static str, Vec<TyText>),
}

impl TyText {
    fn flat(&self, out: &mut String) {
        match self {
            TyText::Path(p) => out.push_str(p),
            TyText::Generic(head, args) => {
                out.push_str(head);
                out.push('<');
                for (i, a) in args.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    a.flat(out);
                }
                out.push('>');
            }
        }
    }
}

/// Where a typed line's comma comes from: a struct field's is always printed (and counts
/// towards the margin), a parameter's or generic argument's only once its list is broken.
#[derive(Clone, Copy, PartialEq)]
enum Comma {
    Field,
    List,
}

/// `prefix`, the type, `,`: on one line when it fits, else broken as prettyplease breaks
/// generic arguments (every argument on its own line, a trailing comma each).
fn typed_line(
    out: &mut String,
    indent: usize,
    prefix: &str,
    t: &TyText,
    comma: Comma,
) -> Option<()> {
    let mut flat = String::with_capacity(prefix.len() + 64);
    flat.push_str(prefix);
    t.flat(&mut flat);
    flat.push(',');
    let fits = match comma {
        Comma::Field => line(out, indent, &flat),
        Comma::List => list_line(out, indent, &flat),
    };
    if fits.is_some() {
        return Some(());
    }
    let TyText::Generic(head, args) = t else {
        return None;
    };
    line(out, indent, &format!("{prefix}{head}<"))?;
    for a in args {
        typed_line(out, indent + 4, "", a, Comma::List)?;
    }
    line(out, indent, ">,")
}

/// The type of a field inside a configuration (same shape as [`super::apply_ty`]).
fn apply_ty(t: &Ty, types: &[TypeDef]) -> TyText {
    let path = |s: &str| TyText::Path(s.to_string());
    match t {
        Ty::Bool => path("bool"),
        Ty::I32 => path("i32"),
        Ty::I64 => path("i64"),
        Ty::Number => path("::serde_json::Number"),
        Ty::String => path("String"),
        Ty::IntOrString => path("::k8s_openapi::apimachinery::pkg::util::intstr::IntOrString"),
        Ty::IntOrString64 => path(super::super::INT_OR_STRING_64),
        Ty::Json => path("::serde_json::Value"),
        Ty::Vec(inner) => TyText::Generic("Vec", vec![apply_ty(inner, types)]),
        Ty::Map(inner) => map(apply_ty(inner, types)),
        Ty::Option(inner) => TyText::Generic("Option", vec![apply_ty(inner, types)]),
        Ty::Named(i) => {
            let t = &types[*i];
            path(t.apply_name.as_deref().unwrap_or(&t.name))
        }
        Ty::Known(k) => {
            let mut p = String::from("::k8s_openapi");
            for s in k.path() {
                p.push_str("::");
                p.push_str(s);
            }
            TyText::Path(p)
        }
    }
}

fn map(value: TyText) -> TyText {
    TyText::Generic(
        "::std::collections::BTreeMap",
        vec![TyText::Path("String".into()), value],
    )
}

/// The formatted text of one nested configuration, or `None` to print it the slow way.
pub fn nested(t: &TypeDef, types: &[TypeDef]) -> Option<String> {
    let name = t.apply_name.as_deref()?;
    let mut out = String::with_capacity(1024);
    doc(
        &mut out,
        0,
        &format!(
            "Apply configuration of [`{}`]: only the fields set are sent.",
            t.name
        ),
    );
    if let Some(target) = t.alias_of {
        let target = types[target].apply_name.as_deref()?;
        whole(&mut out, 0, &format!("pub type {name} = {target};"));
        return Some(out);
    }
    let TypeBody::Struct { fields, flatten } = &t.body else {
        return None;
    };
    if fields.is_empty() && flatten.is_none() {
        // prettyplease prints an empty struct and impl on one line each: rare, left to it.
        return None;
    }
    line(
        &mut out,
        0,
        "#[derive(Clone, Debug, Default, PartialEq, ::serde::Serialize)]",
    )?;
    line(&mut out, 0, "#[serde(rename_all = \"camelCase\")]")?;
    whole(&mut out, 0, &format!("pub struct {name} {{"));
    let methods = builder_methods(fields, &["new"]);
    let mut tys = Vec::with_capacity(fields.len());
    let mut text = String::new();
    for f in fields {
        let ty = apply_ty(&f.ty, types);
        text.clear();
        text.push_str("#[serde(");
        if serde_camel(&f.ident) != f.wire {
            let _ = write!(text, "rename = {}, ", Literal::string(&f.wire));
        }
        text.push_str("skip_serializing_if = \"Option::is_none\")]");
        line(&mut out, 4, &text)?;
        let option = TyText::Generic("Option", vec![ty.clone()]);
        typed_line(
            &mut out,
            4,
            &format!("pub {}: ", f.ident),
            &option,
            Comma::Field,
        )?;
        tys.push(ty);
    }
    if let Some((n, t)) = flatten {
        doc(&mut out, 4, "Fields the schema does not declare.");
        line(&mut out, 4, "#[serde(flatten)]")?;
        typed_line(
            &mut out,
            4,
            &format!("pub {n}: "),
            &map(apply_ty(t, types)),
            Comma::Field,
        )?;
    }
    line(&mut out, 0, "}")?;
    doc(
        &mut out,
        0,
        "`new()`, then one setter per field (named after it): a set field is sent.",
    );
    whole(&mut out, 0, &format!("impl {name} {{"));
    doc(
        &mut out,
        4,
        "An empty configuration: nothing is sent until a field is set.",
    );
    line(&mut out, 4, "pub fn new() -> Self {")?;
    line(&mut out, 8, "<Self as Default>::default()")?;
    line(&mut out, 4, "}")?;
    for ((f, m), ty) in fields.iter().zip(&methods).zip(tys) {
        let into = TyText::Generic("impl Into", vec![ty]);
        if TRAIT_METHOD_NAMES.contains(&m.as_str()) {
            line(&mut out, 4, "#[allow(clippy::should_implement_trait)]")?;
        }
        text.clear();
        let _ = write!(text, "pub fn {m}(mut self, value: ");
        into.flat(&mut text);
        text.push_str(") -> Self {");
        if line(&mut out, 4, &text).is_none() {
            // Too long for one line: prettyplease puts each parameter on its own.
            line(&mut out, 4, &format!("pub fn {m}("))?;
            line(&mut out, 8, "mut self,")?;
            typed_line(&mut out, 8, "value: ", &into, Comma::List)?;
            line(&mut out, 4, ") -> Self {")?;
        }
        line(
            &mut out,
            8,
            &format!("self.{} = Some(value.into());", f.ident),
        )?;
        line(&mut out, 8, "self")?;
        line(&mut out, 4, "}")?;
    }
    line(&mut out, 0, "}")?;
    Some(out)
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use crate::Options;
    use crate::model::{Model, build};

    fn walk(dir: &std::path::Path, out: &mut Vec<PathBuf>) {
        for e in std::fs::read_dir(dir).expect("fixture directory") {
            let p = e.expect("entry").path();
            if p.is_dir() {
                walk(&p, out);
            } else if p.extension().is_some_and(|x| x == "yaml" || x == "json") {
                out.push(p);
            }
        }
    }

    /// Every CRD file under `testdata/crds`, or under `$APPLY_TEXT_FIXTURES` when set (the
    /// public corpus: `APPLY_TEXT_FIXTURES=$PWD/../shared/corpus/public cargo test --release
    /// -p kube-codegen --lib text_matches`).
    fn fixtures(options: &Options) -> Vec<(PathBuf, Model)> {
        let dir = std::env::var_os("APPLY_TEXT_FIXTURES")
            .map(PathBuf::from)
            .unwrap_or_else(|| {
                PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../testdata/crds")
            });
        let mut files = Vec::new();
        walk(&dir, &mut files);
        files.sort();
        let mut out = Vec::new();
        for f in files {
            let mut warnings = Vec::new();
            let mut options = options.clone();
            options.lenient = true;
            let Ok(loaded) =
                crate::load::load(std::slice::from_ref(&f), &[], &options, &mut warnings)
            else {
                continue;
            };
            if let Ok(model) = build(&loaded.crds, &options, &mut warnings) {
                out.push((f, model));
            }
        }
        assert!(out.len() > 20, "too few fixtures read: {}", out.len());
        out
    }

    /// The text printer must give prettyplease's bytes for every configuration it prints, and
    /// print most of them (or it is not the fast path).
    #[test]
    fn text_matches_prettyplease() {
        let (mut printed, mut slow) = (0, 0);
        for flags in [&[][..], &["--no-known-types"][..]] {
            let options = Options::from_args(flags).expect("flags");
            for (file, model) in fixtures(&options) {
                for r in model
                    .groups
                    .iter()
                    .flat_map(|g| &g.versions)
                    .flat_map(|v| &v.resources)
                {
                    for t in &r.types {
                        let Some(tokens) = super::super::nested(t, &r.types) else {
                            assert!(super::nested(t, &r.types).is_none());
                            continue;
                        };
                        let expected = crate::render::format_items(tokens).expect("parses");
                        match super::nested(t, &r.types) {
                            Some(text) => {
                                printed += 1;
                                assert_eq!(
                                    text,
                                    expected,
                                    "{}: {} printed differently",
                                    file.display(),
                                    t.name
                                );
                            }
                            None => slow += 1,
                        }
                    }
                }
            }
        }
        eprintln!("printed as text: {printed}, left to prettyplease: {slow}");
        assert!(printed > 10 * slow.max(1), "printed {printed}, slow {slow}");
    }
}
