//! The repository's `testdata/`, listed in a stable order (the round-trip and typed-defaults
//! tests walk the same samples).

use std::path::{Path, PathBuf};

pub fn testdata() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata")
}

/// The entries of `dir`, sorted.
pub fn sorted(dir: &Path) -> Vec<PathBuf> {
    let mut paths: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    paths.sort();
    paths
}
