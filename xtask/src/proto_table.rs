//! `cargo xtask proto-table`: writes `crates/kube-fake-apiserver/src/proto/table.rs`, the field
//! table the in-memory server transcodes protobuf ⇄ JSON with.
//!
//! Field numbers, wire types and message references come from k8s-pb's prost-generated sources
//! (k8s.io/api's `generated.proto` of Kubernetes 1.35); JSON names and which fields JSON always
//! writes (k8s-openapi's non-`Option` fields) come from k8s-openapi's `v1_35` sources. Both are read
//! as text from the cargo registry: neither crate is needed at run time.
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::paths::repo_root;

const K8S_PB: &str = "k8s-pb-0.9.0";
const K8S_OPENAPI: &str = "k8s-openapi-0.29.0";

/// One prost field as parsed.
struct PbField {
    name: String,
    tag: u32,
    /// `string`, `int32`, `int64`, `bool`, `bytes`, `double`, `message`, `map`.
    scalar: String,
    repeated: bool,
    /// For `map`: the value's scalar type.
    map_value: String,
    /// Resolved message path (`api/apps/v1::Deployment`) for messages and map-of-message values.
    msg: Option<String>,
}

struct PbMsg {
    fields: Vec<PbField>,
}

/// JSON name and whether JSON always writes it, per normalised name, of one k8s-openapi struct.
type OpenApiFields = HashMap<String, (String, bool)>;

fn registry_dir(name: &str) -> Result<PathBuf> {
    let home = std::env::var("CARGO_HOME")
        .map(PathBuf::from)
        .unwrap_or_else(|_| {
            PathBuf::from(std::env::var("HOME").unwrap_or_default()).join(".cargo")
        });
    for entry in std::fs::read_dir(home.join("registry/src"))? {
        let dir = entry?.path().join(name);
        if dir.is_dir() {
            return Ok(dir);
        }
    }
    bail!(
        "{name} is not in the cargo registry: run `cargo fetch` in the workspace first (kube-fake-apiserver's dev-dependencies pull it)"
    )
}

fn norm(s: &str) -> String {
    s.trim_start_matches("r#")
        .chars()
        .filter(|c| c.is_ascii_alphanumeric())
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

fn rs_files(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir)? {
        let p = e?.path();
        if p.is_dir() {
            rs_files(&p, out)?;
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
    Ok(())
}

/// `api/apps/v1` for `<root>/api/apps/v1/mod.rs` or `<root>/api/apps/v1/deployment.rs`.
fn module_of(root: &Path, file: &Path) -> String {
    let rel = file.parent().unwrap().strip_prefix(root).unwrap();
    rel.to_string_lossy().replace('\\', "/")
}

fn resolve(module: &str, ty: &str) -> String {
    let mut segs: Vec<&str> = module.split('/').filter(|s| !s.is_empty()).collect();
    let mut rest = ty;
    while let Some(r) = rest.strip_prefix("super::") {
        segs.pop();
        rest = r;
    }
    let mut parts: Vec<&str> = rest.split("::").collect();
    let name = parts.pop().unwrap();
    segs.extend(parts);
    format!("{}::{name}", segs.join("/"))
}

/// The innermost type path of a field type (`Option<Vec<super::X>>` → `super::X`).
fn inner_type(ty: &str) -> String {
    let mut t = ty.replace(' ', "").trim_end_matches(',').replace(",>", ">");
    for wrapper in [
        "::core::option::Option<",
        "::prost::alloc::vec::Vec<",
        "::prost::alloc::boxed::Box<",
        "::prost::alloc::collections::BTreeMap<::prost::alloc::string::String,",
    ] {
        if let Some(r) = t.strip_prefix(wrapper) {
            t = r.strip_suffix('>').unwrap_or(r).to_string();
        }
    }
    t
}

/// (apiVersion, kind, message path) of a k8s-pb `Resource`.
type ResourceRow = (String, String, String);

fn parse_pb(root: &Path) -> Result<(BTreeMap<String, PbMsg>, Vec<ResourceRow>)> {
    let mut files = Vec::new();
    rs_files(root, &mut files)?;
    let mut msgs = BTreeMap::new();
    // (apiVersion, kind, message path) of every k8s-pb `Resource`.
    let mut resources = Vec::new();
    for file in files {
        let module = module_of(root, &file);
        let text = std::fs::read_to_string(&file)?;
        let mut lines = text.lines().peekable();
        let mut current: Option<(String, PbMsg)> = None;
        let mut attr: Option<String> = None;
        let mut resource: Option<(String, Option<String>)> = None;
        while let Some(line) = lines.next() {
            let l = line.trim();
            if let Some(name) = l.strip_prefix("pub struct ") {
                let name = name
                    .trim_end_matches(" {")
                    .trim_end_matches(" {}")
                    .to_string();
                let msg = PbMsg { fields: Vec::new() };
                if l.ends_with("{}") {
                    msgs.insert(format!("{module}::{name}"), msg);
                } else {
                    current = Some((name, msg));
                }
                continue;
            }
            if let Some(r) = l.strip_prefix("impl crate::Resource for ") {
                resource = Some((r.trim_end_matches(" {").to_string(), None));
                continue;
            }
            if let Some((kind, av)) = &mut resource {
                if let Some(v) = l.strip_prefix("const API_VERSION: &'static str = \"") {
                    *av = Some(v.trim_end_matches("\";").to_string());
                }
                if l.starts_with("const KIND") {
                    let k = l.split('"').nth(1).unwrap_or("").to_string();
                    resources.push((
                        av.clone().unwrap_or_default(),
                        k,
                        format!("{module}::{kind}"),
                    ));
                    resource = None;
                }
                continue;
            }
            let Some((_, msg)) = &mut current else {
                continue;
            };
            if l == "}" {
                let (name, msg) = current.take().unwrap();
                msgs.insert(format!("{module}::{name}"), msg);
                continue;
            }
            if l.starts_with("#[prost(") {
                let mut a = l.to_string();
                while !a.ends_with(")]") {
                    a.push_str(lines.next().unwrap_or("").trim());
                }
                attr = Some(a);
                continue;
            }
            if let (Some(a), Some(decl)) = (attr.as_ref(), l.strip_prefix("pub ")) {
                let mut decl = decl.to_string();
                while !(decl.ends_with(',')
                    && decl.matches('<').count() == decl.matches('>').count())
                {
                    decl.push_str(lines.next().unwrap_or(",").trim());
                }
                let (name, ty) = decl.split_once(':').context("field without a type")?;
                let ty = ty.trim().trim_end_matches(',');
                let inner = a.trim_start_matches("#[prost(").trim_end_matches(")]");
                let tag: u32 = inner
                    .split("tag = \"")
                    .nth(1)
                    .and_then(|t| t.split('"').next())
                    .context("prost field without a tag")?
                    .parse()?;
                let mut f = PbField {
                    name: name.trim().to_string(),
                    tag,
                    scalar: String::new(),
                    repeated: inner.contains("repeated"),
                    map_value: String::new(),
                    msg: None,
                };
                if let Some(m) = inner.strip_prefix("btree_map = \"") {
                    f.scalar = "map".into();
                    f.map_value = m
                        .split('"')
                        .next()
                        .unwrap_or("")
                        .split(", ")
                        .nth(1)
                        .unwrap_or("")
                        .to_string();
                    if f.map_value == "message" {
                        f.msg = Some(resolve(&module, &inner_type(ty)));
                    }
                } else {
                    f.scalar = inner.split([',', ' ']).next().unwrap_or("").to_string();
                    if f.scalar == "message" {
                        f.msg = Some(resolve(&module, &inner_type(ty)));
                    }
                }
                msg.fields.push(f);
                attr = None;
            }
        }
    }
    Ok((msgs, resources))
}

fn parse_openapi(root: &Path) -> Result<HashMap<String, OpenApiFields>> {
    let mut files = Vec::new();
    rs_files(root, &mut files)?;
    let mut out = HashMap::new();
    for file in files {
        let text = std::fs::read_to_string(&file)?;
        let module = module_of(root, &file);
        let Some(start) = text.find("\npub struct ") else {
            continue;
        };
        let name = text[start + 12..]
            .split([' ', '(', '<'])
            .next()
            .unwrap_or("")
            .to_string();
        // Rust field → required.
        let mut required = HashMap::new();
        if let Some(body) = text[start..].split("\n}\n").next() {
            for l in body.lines() {
                if let Some(decl) = l.trim().strip_prefix("pub ")
                    && let Some((f, ty)) = decl.split_once(':')
                {
                    required.insert(f.trim().to_string(), !ty.trim().starts_with("Option<"));
                }
            }
        }
        let mut fields = OpenApiFields::new();
        for l in text.lines() {
            let l = l.trim();
            if let Some((json, rest)) = l
                .strip_prefix('"')
                .and_then(|r| r.split_once("\" => Field::Key_"))
            {
                let rust = rest.trim_end_matches(',');
                let req = required.get(rust).copied().unwrap_or(false);
                fields.insert(norm(json), (json.to_string(), req));
            }
        }
        out.insert(format!("{module}::{}", norm(&name)), fields);
    }
    Ok(out)
}

/// Messages whose JSON form is not their protobuf fields'.
fn special(path: &str) -> Option<&'static str> {
    let (module, name) = path.rsplit_once("::")?;
    Some(match (module, name) {
        ("apimachinery/pkg/apis/meta/v1", "Time") => "Time",
        ("apimachinery/pkg/apis/meta/v1", "MicroTime") => "MicroTime",
        ("apimachinery/pkg/apis/meta/v1", "Duration") => "Duration",
        ("apimachinery/pkg/apis/meta/v1", "FieldsV1") => "RawJson",
        ("apimachinery/pkg/util/intstr", "IntOrString") => "IntOrString",
        ("apimachinery/pkg/api/resource", "Quantity") => "Quantity",
        ("apimachinery/pkg/runtime", "RawExtension") => "RawJson",
        (m, "Json") if m.starts_with("apiextensions_apiserver/") => "RawJson",
        (m, "JsonSchemaPropsOrArray") if m.starts_with("apiextensions_apiserver/") => "OrArray",
        (m, "JsonSchemaPropsOrBool") if m.starts_with("apiextensions_apiserver/") => "OrBool",
        (m, "JsonSchemaPropsOrStringArray") if m.starts_with("apiextensions_apiserver/") => {
            "OrStringArray"
        }
        _ => return None,
    })
}

/// The API group of a k8s-pb module without a `Resource` in it.
fn fixed_group_version(module: &str) -> Option<&'static str> {
    Some(match module {
        "apimachinery/pkg/apis/meta/v1" => "meta.k8s.io/v1",
        _ => return None,
    })
}

fn lower_camel(snake: &str) -> String {
    let mut out = String::new();
    let mut up = false;
    for c in snake.trim_start_matches("r#").chars() {
        if c == '_' {
            up = true;
        } else if up {
            out.push(c.to_ascii_uppercase());
            up = false;
        } else {
            out.push(c);
        }
    }
    out
}

pub fn run() -> Result<std::process::ExitCode> {
    let pb_root = registry_dir(K8S_PB)?.join("src");
    let oa_root = registry_dir(K8S_OPENAPI)?.join("src/v1_35");
    let (msgs, resources) = parse_pb(&pb_root)?;
    let openapi = parse_openapi(&oa_root)?;

    // apiVersion of each module, from its resources.
    let mut module_gv: BTreeMap<String, String> = BTreeMap::new();
    for (av, _, path) in &resources {
        let module = path.rsplit_once("::").unwrap().0.to_string();
        module_gv.insert(module, av.clone());
    }
    // Roots: every struct with ObjectMeta/ListMeta metadata in a module with a known apiVersion,
    // and the meta types a server sends or receives.
    let mut kinds: BTreeMap<(String, String), String> = BTreeMap::new();
    for (path, msg) in &msgs {
        let (module, name) = path.rsplit_once("::").unwrap();
        let Some(gv) = module_gv
            .get(module)
            .cloned()
            .or_else(|| fixed_group_version(module).map(str::to_string))
        else {
            continue;
        };
        let has_meta = msg.fields.iter().any(|f| {
            f.name == "metadata"
                && f.msg
                    .as_deref()
                    .is_some_and(|m| m.ends_with("::ObjectMeta") || m.ends_with("::ListMeta"))
        });
        let meta_type = module == "apimachinery/pkg/apis/meta/v1"
            && matches!(name, "Status" | "DeleteOptions" | "WatchEvent");
        if has_meta || meta_type {
            kinds.insert((gv.clone(), name.to_string()), path.clone());
        }
        // Status and DeleteOptions travel as apiVersion v1 too (the legacy group's copy).
        if meta_type {
            kinds.insert(("v1".into(), name.to_string()), path.clone());
        }
    }

    // Messages reachable from the roots, numbered in order of discovery.
    let mut index: BTreeMap<String, usize> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut stack: Vec<String> = kinds
        .values()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    while let Some(p) = stack.pop() {
        if index.contains_key(&p) {
            continue;
        }
        index.insert(p.clone(), order.len());
        order.push(p.clone());
        if let Some(m) = msgs.get(&p) {
            for f in &m.fields {
                if let Some(t) = &f.msg
                    && special(t).is_none()
                {
                    stack.push(t.clone());
                }
            }
        }
        if let Some(kind) = special(&p)
            && kind.starts_with("Or")
        {
            let module = p.rsplit_once("::").unwrap().0;
            stack.push(format!("{module}::JsonSchemaProps"));
        }
    }

    let mut warnings = Vec::new();
    let mut out = String::new();
    out.push_str(
        "// @generated by `cargo xtask proto-table` from k8s-pb 0.9.0 (field numbers, generated from\n\
         // Kubernetes 1.35's generated.proto) and k8s-openapi 0.29's v1_35 (JSON names, required\n\
         // fields). Do not edit: regenerate.\n\
         use super::schema::{F, INLINE, MAP, REP, REQ, T::*, f};\n\n\
         /// Every message's fields, by message index.\n\
         #[rustfmt::skip]\n\
         pub static MSGS: &[&[F]] = &[\n",
    );
    for (i, path) in order.iter().enumerate() {
        let _ = write!(out, "/*{i} {path}*/ &[");
        if special(path).is_some() {
            out.push_str("],\n");
            continue;
        }
        let Some(msg) = msgs.get(path) else {
            bail!("message {path} is referenced but not defined");
        };
        let (module, name) = path.rsplit_once("::").unwrap();
        let oa = openapi.get(&format!("{module}::{}", norm(name)));
        let mut first = true;
        for fld in &msg.fields {
            let n = norm(&fld.name);
            let (json, required, inline) = match oa {
                Some(oa) => match oa.get(&n) {
                    Some((j, r)) => (j.clone(), *r, false),
                    None if fld.msg.is_some() => {
                        // An embedded struct JSON inlines (`VolumeSource` in `Volume`): its
                        // fields are the parent's JSON fields.
                        let sub = fld.msg.as_ref().unwrap();
                        let inline_ok = inlines(sub, oa, &msgs, 0);
                        if !inline_ok {
                            warnings.push(format!("{path}.{}: no JSON field", fld.name));
                            continue;
                        }
                        (lower_camel(&fld.name), false, true)
                    }
                    None => {
                        warnings.push(format!("{path}.{}: no JSON field", fld.name));
                        continue;
                    }
                },
                None => (lower_camel(&fld.name), false, false),
            };
            let scalar = if fld.scalar == "map" {
                &fld.map_value
            } else {
                &fld.scalar
            };
            let t = ty_of(scalar, fld.msg.as_deref(), &index);
            let mut flags = Vec::new();
            if fld.repeated {
                flags.push("REP");
            }
            if fld.scalar == "map" {
                flags.push("MAP");
            }
            if required {
                flags.push("REQ");
            }
            if inline {
                flags.push("INLINE");
            }
            let flags = if flags.is_empty() {
                "0".to_string()
            } else {
                flags.join("|")
            };
            if !first {
                out.push(',');
            }
            first = false;
            let _ = write!(out, "f({},{json:?},{t},{flags})", fld.tag);
        }
        out.push_str("],\n");
    }
    out.push_str("];\n\n/// (apiVersion, kind) → message index, sorted.\n#[rustfmt::skip]\npub static KINDS: &[(&str, &str, u16)] = &[\n");
    for ((gv, kind), path) in &kinds {
        let _ = writeln!(out, "({gv:?},{kind:?},{}),", index[path]);
    }
    out.push_str("];\n");
    let dest = repo_root().join("crates/kube-fake-apiserver/src/proto/table.rs");
    std::fs::write(&dest, out)?;
    for w in &warnings {
        eprintln!("warning: {w}");
    }
    println!(
        "wrote {} ({} messages, {} kinds, {} fields skipped)",
        dest.display(),
        order.len(),
        kinds.len(),
        warnings.len()
    );
    Ok(std::process::ExitCode::SUCCESS)
}

fn ty_of(scalar: &str, msg: Option<&str>, index: &BTreeMap<String, usize>) -> String {
    match scalar {
        "string" => "Str".into(),
        "bytes" => "Bytes".into(),
        "bool" => "Bool".into(),
        "int32" => "I32".into(),
        "int64" => "I64".into(),
        "double" => "F64".into(),
        "message" => {
            let m = msg.unwrap_or("");
            match special(m) {
                Some(s) if s.starts_with("Or") => {
                    let module = m.rsplit_once("::").unwrap().0;
                    format!("{s}({})", index[&format!("{module}::JsonSchemaProps")])
                }
                Some(s) => s.to_string(),
                None => format!("M({})", index[m]),
            }
        }
        other => format!("Unknown/*{other}*/"),
    }
}

/// Whether every field of message `sub` is a JSON field of `oa`, directly or through a further
/// inlined struct (`NamedRuleWithOperations` inlines `RuleWithOperations`, which inlines `Rule`).
fn inlines(sub: &str, oa: &OpenApiFields, msgs: &BTreeMap<String, PbMsg>, depth: usize) -> bool {
    depth < 4
        && msgs.get(sub).is_some_and(|s| {
            s.fields.iter().all(|sf| {
                oa.contains_key(&norm(&sf.name))
                    || sf
                        .msg
                        .as_deref()
                        .is_some_and(|m| inlines(m, oa, msgs, depth + 1))
            })
        })
}
