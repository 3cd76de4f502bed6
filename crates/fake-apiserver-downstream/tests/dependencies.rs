//! The library works with default features off, and then pulls in none of the binary's
//! dependencies (`cargo tree` of this crate's normal dependencies).
use std::process::Command;

#[tokio::test]
async fn one_request_with_default_features_off() {
    let name = fake_apiserver_downstream::create_one_config_map()
        .await
        .expect("the server answers a create");
    assert_eq!(name, "hello");
}

#[test]
fn the_binary_dependencies_are_not_in_the_tree() {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "tree",
            "--offline",
            "-p",
            env!("CARGO_PKG_NAME"),
            "-e",
            "normal",
            "--prefix",
            "none",
            "--format",
            "{p}",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "cargo tree failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let crates: Vec<&str> = text
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .collect();
    assert!(
        crates.contains(&"kube-fake-apiserver"),
        "the tree does not list the library itself:\n{text}"
    );
    for unwanted in ["clap", "clap_builder", "clap_derive", "anyhow"] {
        assert!(
            !crates.contains(&unwanted),
            "{unwanted} is in the dependency tree of a default-features = false user:\n{text}"
        );
    }
}
