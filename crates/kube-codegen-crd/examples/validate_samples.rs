//! Validates every custom resource found under the given paths against the CRDs found there
//! (pruned and defaulted first, as a server stores them), printing each object's causes:
//! `cargo run -p kube-codegen-crd --example validate_samples -- <crd dirs/files> <sample dirs/files>`.
use std::collections::HashMap;
use std::path::PathBuf;

use kube_codegen_crd::object::ObjectSchema;
use kube_codegen_crd::read;
use kube_codegen_crd::{Classified, Crd, classify};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let inputs: Vec<PathBuf> = std::env::args().skip(1).map(PathBuf::from).collect();
    let files = read::expand_inputs(&inputs)?;
    let mut schemas: HashMap<(String, String), ObjectSchema> = HashMap::new();
    let mut objects = Vec::new();
    for f in &files {
        let Ok(docs) = read::read_documents(f) else {
            continue;
        };
        for doc in read::flatten(docs) {
            match classify(&doc.value) {
                Classified::Crd => {
                    let Ok(crd) = Crd::from_value(&doc.source, doc.index, doc.value.clone()) else {
                        continue;
                    };
                    for v in &crd.versions {
                        let api_version = format!("{}/{}", crd.group, v.name);
                        let s = ObjectSchema::new((*v.raw_schema).clone());
                        for issue in s.rule_issues() {
                            println!(
                                "RULE {} {api_version} {} {:?}: {}",
                                crd.kind, issue.pointer, issue.kind, issue.rule
                            );
                        }
                        schemas.insert((api_version, crd.kind.clone()), s);
                    }
                }
                Classified::Other(_) => objects.push(doc),
            }
        }
    }
    let (mut checked, mut rejected) = (0, 0);
    for doc in objects {
        let key = (
            doc.value["apiVersion"].as_str().unwrap_or("").to_string(),
            doc.value["kind"].as_str().unwrap_or("").to_string(),
        );
        let Some(s) = schemas.get(&key) else { continue };
        let mut obj = doc.value.clone();
        s.prune(&mut obj);
        s.apply_defaults(&mut obj);
        checked += 1;
        let causes = s.validate(&obj);
        if !causes.is_empty() {
            rejected += 1;
            println!(
                "{}#{} {} {}:",
                doc.source.display(),
                doc.index,
                key.1,
                key.0
            );
            for c in causes {
                println!("    {} {c}", c.reason);
            }
        }
    }
    println!("{checked} objects checked, {rejected} with causes");
    Ok(())
}
