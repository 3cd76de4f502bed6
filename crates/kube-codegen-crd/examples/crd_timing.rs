//! Times the two halves of reading a CRD corpus: YAML into documents, and validating each CRD.
//!
//! `cargo run --release -p kube-codegen-crd --example crd_timing -- ../shared/corpus/public/crds`

use std::path::PathBuf;
use std::time::{Duration, Instant};

use kube_codegen_crd::{Classified, classify, read};

fn main() {
    let dir = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "../shared/corpus/public/crds".into());
    let files = read::expand_inputs(&[PathBuf::from(dir)]).expect("inputs");
    let (mut read_time, mut validate_time) = (Duration::ZERO, Duration::ZERO);
    let (mut crds, mut bytes) = (0, 0);
    for f in &files {
        bytes += std::fs::metadata(f).map(|m| m.len()).unwrap_or(0);
        let t = Instant::now();
        let docs = read::read_documents(f).expect("readable");
        read_time += t.elapsed();
        for d in read::flatten(docs) {
            if classify(&d.value) == Classified::Crd {
                crds += 1;
                let t = Instant::now();
                let report = kube_codegen_crd::validate::validate_crd(&d.value);
                validate_time += t.elapsed();
                std::hint::black_box(report);
            }
        }
    }
    println!("files {} bytes {bytes} crds {crds}", files.len());
    println!("read_ms {}", read_time.as_millis());
    println!("validate_ms {}", validate_time.as_millis());
}
