//! Writes every output of every CRD file under a directory, for several option sets, into
//! `<OUT>/<set>/<file index>/...` (errors into `error.txt`), so two builds of the generator can be
//! compared byte for byte with `sha256sum`: the check behind "optimisations never change output".
//!
//! `cargo run --release -p kube-codegen --example gen_dump -- ../shared/corpus/public/crds /tmp/out`

use std::path::{Path, PathBuf};

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|rd| rd.filter_map(|e| e.ok().map(|e| e.path())).collect())
        .unwrap_or_default();
    entries.sort();
    for p in entries {
        if p.is_dir() {
            files(&p, out);
        } else if matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            out.push(p);
        }
    }
}

const SETS: &[(&str, &[&str])] = &[
    ("default", &[]),
    ("all", &["--versions", "all"]),
    ("single", &["--single-file", "out.rs"]),
    (
        "all-single",
        &["--versions", "all", "--single-file", "out.rs"],
    ),
    ("nodocs-single", &["--no-docs", "--single-file", "out.rs"]),
];

fn main() {
    let mut args = std::env::args().skip(1);
    let (Some(dir), Some(out)) = (args.next(), args.next()) else {
        eprintln!("usage: gen_dump <CRD DIR> <OUT DIR>");
        std::process::exit(2);
    };
    let mut list = Vec::new();
    files(Path::new(&dir), &mut list);
    let out = PathBuf::from(out);
    for (set, flags) in SETS {
        let options = kube_codegen::Options::from_args(flags).expect("flags");
        for (i, f) in list.iter().enumerate() {
            let target = out.join(set).join(format!("{i:04}"));
            std::fs::create_dir_all(&target).expect("mkdir");
            let r = kube_codegen::Builder::new()
                .input(f)
                .options(options.clone())
                .render();
            match r {
                Ok(g) => {
                    for (rel, text) in &g.files {
                        let p = target.join(rel);
                        if let Some(parent) = p.parent() {
                            std::fs::create_dir_all(parent).expect("mkdir");
                        }
                        std::fs::write(&p, text).expect("write");
                    }
                    let mut meta = String::new();
                    for r in &g.resources {
                        meta.push_str(&format!(
                            "{} {} {} {} {} {} {} {}\n",
                            r.crd_name,
                            r.group,
                            r.version,
                            r.kind,
                            r.plural,
                            r.namespaced,
                            r.rust_path,
                            r.schema
                        ));
                    }
                    for w in &g.warnings {
                        meta.push_str(w);
                        meta.push('\n');
                    }
                    std::fs::write(target.join("meta.txt"), meta).expect("write");
                }
                Err(e) => std::fs::write(target.join("error.txt"), e.to_string()).expect("write"),
            }
        }
    }
}
