//! Packages that build their integration tests as one binary (`autotests = false` and a
//! `[[test]]` named `all`) compile only the files `tests/all.rs` declares: a test file left out
//! would never run, and nothing else would say so.

use std::path::Path;

use crate::paths;

/// The files of `tests/` (top level) that `tests/all.rs` does not declare as modules.
fn undeclared(package: &Path) -> Vec<String> {
    let tests = package.join("tests");
    let all = std::fs::read_to_string(tests.join("all.rs")).unwrap_or_default();
    let declared: Vec<&str> = all
        .lines()
        .filter_map(|l| l.trim().strip_prefix("mod "))
        .map(|m| m.trim_end_matches(';'))
        .collect();
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(&tests).into_iter().flatten().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if let Some(module) = name.strip_suffix(".rs")
            && module != "all"
            && !declared.contains(&module)
        {
            missing.push(name);
        }
    }
    missing.sort();
    missing
}

#[test]
fn every_test_file_of_a_one_binary_package_is_in_its_all_rs() {
    let root = paths::repo_root();
    let mut checked = 0;
    let mut missing = Vec::new();
    for dir in ["crates", "examples"] {
        for package in paths::subdirs(&root.join(dir)).unwrap() {
            let manifest = std::fs::read_to_string(package.join("Cargo.toml")).unwrap_or_default();
            if !manifest.contains("autotests = false") {
                continue;
            }
            checked += 1;
            assert!(
                package.join("tests/all.rs").is_file(),
                "{} sets autotests = false without tests/all.rs",
                package.display()
            );
            for file in undeclared(&package) {
                missing.push(format!("{}/tests/{file}", package.display()));
            }
        }
    }
    assert!(checked >= 6, "only {checked} one-binary packages found");
    assert!(
        missing.is_empty(),
        "not declared in their package's tests/all.rs (they would never run): {missing:?}"
    );
}
