//! The `# kube-codegen-flags: ...` header of a testdata CRD (shared by the build script and the tests).

/// The flags of the first `# kube-codegen-flags:` line, split on whitespace (none without such a line).
pub fn flags(crd_text: &str) -> Vec<&str> {
    crd_text
        .lines()
        .find_map(|l| l.trim().strip_prefix("# kube-codegen-flags:"))
        .map(|f| f.split_whitespace().collect())
        .unwrap_or_default()
}

/// Module name for a golden: the CRD file stem in snake case, `r#`-free (`basic-v1` -> `basic_v1`).
pub fn module_name(stem: &str) -> String {
    let mut name: String = stem
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .collect();
    if name.starts_with(|c: char| c.is_ascii_digit()) {
        name.insert(0, '_');
    }
    name
}
