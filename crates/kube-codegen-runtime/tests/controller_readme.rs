//! The repository README's "From `crd.yaml` to a running controller" quotes
//! `examples/website` (compiled with these tests) verbatim, so the code it shows cannot rot.

fn read(path: &str) -> String {
    let path = format!("{}/{path}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

#[test]
fn the_readme_quotes_the_compiled_controller_and_its_crd() {
    let readme = read("../../README.md");
    let section = readme
        .split("## From `crd.yaml` to a running controller\n")
        .nth(1)
        .and_then(|rest| rest.split("\n## ").next())
        .expect("the README has the section");
    for file in ["examples/website/main.rs", "examples/website/crd.yaml"] {
        let text = read(file);
        let fence = if file.ends_with(".rs") {
            "```rust\n"
        } else {
            "```yaml\n"
        };
        assert!(
            section.contains(&format!("{fence}{text}```")),
            "README.md does not quote {file} as it is: copy it into the section again"
        );
    }
}
