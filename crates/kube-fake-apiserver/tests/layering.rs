//! The crate's modules import one way (issue 28 item 11): each module names only modules of its
//! own layer or of a layer below it, so no import cycle spans layers, and the bottom layers have
//! no cycle at all. The layers are listed once, in [`LAYERS`]; a new module must be put in one.
//!
//! The module graph is read from the sources: every `crate::a::b` path (grouped `use
//! crate::{a, b::{c, d}}` too) and `super::` path outside comments and outside a file's trailing
//! `#[cfg(test)] mod tests { .. }` block is an edge to the longest module prefix it names (a path
//! naming no module is an item of the crate root, `lib.rs`); a module naming its own child
//! (`child::item`, `use child`) is an edge to the child. Run with `--nocapture` to see the graph's
//! size and its strongly connected components (the before/after numbers in ARCHITECTURE.md);
//! `LAYERING_SRC=<dir>` reads another `src` tree instead.
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Bottom first. A module belongs to the layer that lists its first path segment (`""` is the
/// crate root, `lib.rs`).
const LAYERS: &[(&str, &[&str])] = &[
    (
        "base",
        &[
            "util",
            "status",
            "schema",
            "table",
            "openapi",
            "selector",
            "field_labels",
            "proto",
            "feature_gates",
            "kubeconfig",
            "tls",
            "conversion_config",
            "auth_config",
            "audit",
            "builtin_schemas",
            "strategic_merge",
            "printers",
        ],
    ),
    ("state", &["store", "limits", "registry", "faults", "state"]),
    (
        "pipeline",
        &[
            "builtin",
            "events",
            "ssa",
            "crd",
            "namespaces",
            "objects",
            "deletion",
            "conversion",
            "admission",
        ],
    ),
    ("controllers", &["controllers"]),
    (
        "serving",
        &["handlers", "http", "dispatch", "shard_selector", "auth"],
    ),
    ("root", &[""]),
];

/// Layers that must have no cycle even inside themselves.
const ACYCLIC: &[&str] = &["base", "state", "pipeline"];

type Graph = BTreeMap<String, BTreeSet<String>>;

/// Module path (`a::b`, `""` for `lib.rs`) -> source, for every file of the library.
fn modules(src: &Path) -> BTreeMap<String, String> {
    fn walk(dir: &Path, src: &Path, out: &mut BTreeMap<String, String>) {
        let mut entries: Vec<_> = std::fs::read_dir(dir)
            .expect("read src dir")
            .map(|e| e.expect("dir entry").path())
            .collect();
        entries.sort();
        for p in entries {
            if p.is_dir() {
                walk(&p, src, out);
                continue;
            }
            if p.extension().and_then(|e| e.to_str()) != Some("rs") {
                continue;
            }
            let rel = p.strip_prefix(src).expect("under src").with_extension("");
            let mut parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            if parts.last().is_some_and(|l| l == "mod") {
                parts.pop();
            }
            // `main.rs` is the binary, another crate.
            if parts == ["main"] {
                continue;
            }
            if parts == ["lib"] {
                parts.clear();
            }
            let text = std::fs::read_to_string(&p).expect("read source");
            out.insert(parts.join("::"), text);
        }
    }
    let mut out = BTreeMap::new();
    walk(src, src, &mut out);
    out
}

/// The source without comments and without a trailing unit-test module.
fn code_of(text: &str) -> String {
    let end = text
        .find("\n#[cfg(test)]\nmod tests {")
        .unwrap_or(text.len());
    text[..end]
        .lines()
        .map(|l| match l.find("//") {
            Some(i) => &l[..i],
            None => l,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Paths under `crate::` in `code`, with `{..}` groups expanded (`a::b`, `c`, ...).
fn crate_paths(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(i) = code[from..].find("crate::") {
        let at = from + i;
        from = at + "crate::".len();
        if at > 0 && code[..at].ends_with(|c: char| is_ident(c) || c == ':') {
            continue;
        }
        expand("", &code[from..], &mut out);
    }
    out
}

/// Expands the path at the start of `text` (after `prefix`) into `out`.
fn expand(prefix: &str, text: &str, out: &mut Vec<String>) {
    let text = text.trim_start();
    if let Some(group) = text.strip_prefix('{') {
        let mut depth = 1;
        let mut start = 0;
        for (i, c) in group.char_indices() {
            match c {
                '{' => depth += 1,
                '}' | ',' if depth == 1 => {
                    let item = group[start..i].trim();
                    if item == "self" {
                        out.push(prefix.trim_end_matches(':').to_string());
                    } else if !item.is_empty() {
                        expand(prefix, item, out);
                    }
                    if c == '}' {
                        return;
                    }
                    start = i + 1;
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        return;
    }
    let mut end = 0;
    let bytes: Vec<char> = text.chars().collect();
    let mut path = String::new();
    loop {
        let seg: String = bytes[end..].iter().take_while(|c| is_ident(**c)).collect();
        if seg.is_empty() {
            break;
        }
        end += seg.len();
        if !path.is_empty() {
            path.push_str("::");
        }
        path.push_str(&seg);
        if bytes[end..].starts_with(&[':', ':']) {
            end += 2;
            if bytes.get(end) == Some(&'{') {
                let rest: String = bytes[end..].iter().collect();
                expand(&format!("{prefix}{path}::"), &rest, out);
                return;
            }
        } else {
            break;
        }
    }
    if !path.is_empty() {
        out.push(format!("{prefix}{path}"));
    }
}

/// The module a path names: its longest prefix that is a module (`""`: the crate root).
fn resolve(path: &str, mods: &BTreeMap<String, String>) -> String {
    let segs: Vec<&str> = path.split("::").collect();
    (1..=segs.len())
        .rev()
        .map(|n| segs[..n].join("::"))
        .find(|m| mods.contains_key(m))
        .unwrap_or_default()
}

fn parent(m: &str) -> &str {
    m.rsplit_once("::").map(|(p, _)| p).unwrap_or("")
}

fn graph() -> Graph {
    // `LAYERING_SRC` reads another tree (e.g. an older commit's `src`, to measure it).
    let src = std::env::var_os("LAYERING_SRC")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("src"));
    let mods = modules(&src);
    let mut g = Graph::new();
    for (m, text) in &mods {
        let mut code = code_of(text);
        // `super::` names the parent module.
        let sup = parent(m);
        code = code.replace(
            "super::",
            &if sup.is_empty() {
                "crate::".to_string()
            } else {
                format!("crate::{sup}::")
            },
        );
        let mut to = BTreeSet::new();
        for p in crate_paths(&code) {
            let r = resolve(&p, &mods);
            // Within itself, or its own ancestors (reached by `super::` chains) are not edges.
            let ancestor = !r.is_empty() && m.starts_with(&format!("{r}::"));
            if r != *m && !ancestor {
                to.insert(r);
            }
        }
        for child in mods.keys().filter(|c| !c.is_empty() && parent(c) == m) {
            let name = child.rsplit("::").next().unwrap_or(child);
            let named = code
                .match_indices(&format!("{name}::"))
                .any(|(i, _)| !code[..i].ends_with(|c: char| is_ident(c) || c == ':'))
                || code.contains(&format!("use {name};"))
                || code.contains(&format!("use {name} "));
            if named {
                to.insert(child.clone());
            }
        }
        to.remove(m);
        g.insert(m.clone(), to);
    }
    g
}

fn layer_of(m: &str) -> Option<usize> {
    let top = m.split("::").next().unwrap_or("");
    LAYERS.iter().position(|(_, mods)| mods.contains(&top))
}

/// Tarjan's strongly connected components with more than one module.
fn cycles(g: &Graph) -> Vec<Vec<String>> {
    struct T<'a> {
        g: &'a Graph,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    fn visit<'a>(t: &mut T<'a>, v: &'a str) {
        let n = t.index.len();
        t.index.insert(v, n);
        t.low.insert(v, n);
        t.stack.push(v);
        t.on.insert(v);
        for w in t.g.get(v).into_iter().flatten() {
            let w = w.as_str();
            if !t.index.contains_key(w) {
                visit(t, w);
                let lw = t.low[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(lw);
            } else if t.on.contains(w) {
                let iw = t.index[w];
                let lv = t.low.get_mut(v).expect("visited");
                *lv = (*lv).min(iw);
            }
        }
        if t.low[v] == t.index[v] {
            let mut comp = Vec::new();
            while let Some(w) = t.stack.pop() {
                t.on.remove(w);
                comp.push(w.to_string());
                if w == v {
                    break;
                }
            }
            if comp.len() > 1 {
                comp.sort();
                t.out.push(comp);
            }
        }
    }
    let mut t = T {
        g,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on: BTreeSet::new(),
        out: Vec::new(),
    };
    for v in g.keys() {
        if !t.index.contains_key(v.as_str()) {
            visit(&mut t, v);
        }
    }
    t.out
}

fn show(m: &str) -> &str {
    if m.is_empty() { "lib" } else { m }
}

#[test]
fn imports_run_one_way() {
    let g = graph();
    let edges: usize = g.values().map(BTreeSet::len).sum();
    let sccs = cycles(&g);
    println!(
        "{} modules, {edges} imports, {} cycle(s)",
        g.len(),
        sccs.len()
    );
    for c in &sccs {
        println!(
            "  {} modules: {}",
            c.len(),
            c.iter().map(|m| show(m)).collect::<Vec<_>>().join(", ")
        );
    }

    let unplaced: Vec<&str> = g
        .keys()
        .filter(|m| layer_of(m).is_none())
        .map(|m| show(m))
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules in no layer of LAYERS: {unplaced:?}"
    );
    let mut upward = Vec::new();
    for (from, tos) in &g {
        let lf = layer_of(from).unwrap_or(0);
        for to in tos {
            let lt = layer_of(to).unwrap_or(0);
            if lt > lf {
                upward.push(format!(
                    "{} ({}) names {} ({})",
                    show(from),
                    LAYERS[lf].0,
                    show(to),
                    LAYERS[lt].0
                ));
            }
        }
    }
    assert!(
        upward.is_empty(),
        "imports that run up the layers:\n{}",
        upward.join("\n")
    );
    let low: Vec<&Vec<String>> = sccs
        .iter()
        .filter(|c| {
            c.iter()
                .any(|m| layer_of(m).is_some_and(|l| ACYCLIC.contains(&LAYERS[l].0)))
        })
        .collect();
    assert!(low.is_empty(), "import cycles in the lower layers: {low:?}");
}

/// The reader itself: grouped imports, `super::`, comments and unit-test modules.
#[test]
fn paths_are_read_as_rustc_resolves_them() {
    let mut out = Vec::new();
    expand("", "{a, b::{c, self}, d::e::F};", &mut out);
    assert_eq!(out, ["a", "b::c", "b", "d::e::F"]);
    let code = code_of(
        "use crate::x; // crate::y\nfn f() {}\n#[cfg(test)]\nmod tests {\n    use crate::z;\n}\n",
    );
    assert_eq!(crate_paths(&code), ["x"]);
    let mods: BTreeMap<String, String> = ["", "a", "a::b"]
        .iter()
        .map(|m| (m.to_string(), String::new()))
        .collect();
    assert_eq!(resolve("a::b::Item", &mods), "a::b");
    assert_eq!(resolve("a::Item", &mods), "a");
    assert_eq!(resolve("Error", &mods), "");
}
