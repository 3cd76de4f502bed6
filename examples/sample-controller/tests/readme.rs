//! README.md shows the whole controller: every Rust block in it is quoted verbatim from
//! `src/main.rs` or `src/controller.rs`, so it cannot drift from the code that is tested.

fn read(path: &str) -> String {
    let path = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_readme_quotes_the_controller_verbatim() {
    let readme = read("README.md");
    let sources = [read("src/main.rs"), read("src/controller.rs")];
    let blocks: Vec<&str> = readme
        .split("```rust\n")
        .skip(1)
        .map(|rest| rest.split("```").next().unwrap_or_default())
        .collect();
    assert!(
        blocks.len() >= 3,
        "main, the reconcile and the Reconciler impl are shown"
    );
    // All of main.rs but its unit tests.
    let main = sources[0]
        .split("\n#[cfg(test)]")
        .next()
        .unwrap_or_default();
    assert!(
        blocks.contains(&main),
        "README.md shows all of src/main.rs (but its tests)"
    );
    for block in blocks {
        assert!(
            sources.iter().any(|s| s.contains(block)),
            "README.md quotes code that is not in src/ as it is:\n{block}"
        );
    }
}
