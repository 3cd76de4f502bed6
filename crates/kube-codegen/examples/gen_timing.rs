//! Generates every CRD file under a directory in-process, one file at a time with default
//! options (as `cargo xtask bench gen` does), and prints the time spent rendering, the versions and the output lines.
//!
//! `cargo run --release -p kube-codegen --example gen_timing -- ../shared/corpus/public/crds`

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

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

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "../shared/corpus/public/crds".into());
    let mut list = Vec::new();
    files(Path::new(&dir), &mut list);
    // Extra arguments are generation flags, e.g. `--no-docs`.
    let flags: Vec<String> = std::env::args().skip(2).collect();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let options = kube_codegen::Options::from_args(&flags).expect("flags");
    let (mut versions, mut lines, mut failures) = (0, 0, 0);
    let mut total = Duration::ZERO;
    for f in &list {
        let start = Instant::now();
        let r = kube_codegen::Builder::new()
            .input(f)
            .options(options.clone())
            .render();
        total += start.elapsed();
        match r {
            Ok(g) => {
                versions += g.resources.len();
                lines += g.files.values().map(|t| t.lines().count()).sum::<usize>();
            }
            Err(e) => {
                failures += 1;
                eprintln!("{}: {e}", f.display());
            }
        }
    }
    println!("files {}", list.len());
    println!("versions {versions}");
    println!("failures {failures}");
    println!("output_lines {lines}");
    println!("render_ms {}", total.as_millis());
}
