//! Where things live in the repository.

use std::path::{Path, PathBuf};

pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("xtask lives in the repository root")
        .to_path_buf()
}

pub fn testdata() -> PathBuf {
    repo_root().join("testdata")
}

/// Files with one of the CRD extensions, sorted, directly inside `dir`.
pub fn crd_files(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let ext = path.extension().and_then(|e| e.to_str()).unwrap_or("");
        if path.is_file() && matches!(ext, "yaml" | "yml" | "json") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// Subdirectories of `dir`, sorted by name.
pub fn subdirs(dir: &Path) -> std::io::Result<Vec<PathBuf>> {
    let mut dirs = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.is_dir() {
            dirs.push(path);
        }
    }
    dirs.sort();
    Ok(dirs)
}

pub fn stem(path: &Path) -> String {
    path.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// Writes `contents` unless the file already holds exactly those bytes (keeps cargo's fingerprints valid).
/// Returns whether it wrote.
pub fn write_if_changed(path: &Path, contents: &str) -> std::io::Result<bool> {
    if std::fs::read(path).is_ok_and(|old| old == contents.as_bytes()) {
        return Ok(false);
    }
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    std::fs::write(path, contents)?;
    Ok(true)
}

/// The cargo that runs xtask (`CARGO`), else `cargo` on the PATH.
pub fn cargo() -> String {
    std::env::var("CARGO").unwrap_or_else(|_| "cargo".into())
}
