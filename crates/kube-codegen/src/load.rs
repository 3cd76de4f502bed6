//! Inputs -> CRDs the generator may use: files are read (in parallel) and documents classified by
//! `kube-codegen-crd`, every CRD is validated as kube-apiserver validates it on create, and every
//! document that is not a CRD is reported with its file and index.
//!
//! What is refused and what is only warned about, per violation the server would report:
//!
//! - a violation in a part of the CRD the generated code does not reflect
//!   ([`Violation::affects_generated_code`] is false: `spec.conversion`, `metadata.annotations`
//!   including the `api-approved.kubernetes.io` approval, `metadata.labels`, `status`, selectable
//!   fields) is a warning, and the CRD is generated;
//! - a non-structural-schema violation is a warning under `--lenient`, else an error;
//! - every other violation is an error ([`Error::Invalid`]), and nothing is written;
//! - under `--strict`, every violation is an error (`--strict` and `--lenient` conflict).
//!
//! The reader's warnings (a mapping key given twice) and the validator's (v1beta1 is deprecated,
//! unknown fields) are warnings under every option.

use std::path::{Path, PathBuf};

use kube_codegen_crd::read::{self, Document};
use kube_codegen_crd::validate::{Violation, validate_crd};
use kube_codegen_crd::{Classified, Crd, classify};

use crate::{Error, InvalidCrd, Options, par};

/// What the inputs hold: CRDs to generate from, and the reasons nothing was taken from the rest.
pub(crate) struct Loaded {
    pub crds: Vec<Crd>,
    /// `file: document N: what it was, skipped` for every document that is not a CRD.
    pub skipped: Vec<String>,
}

pub(crate) fn load(
    inputs: &[PathBuf],
    sources: &[(PathBuf, String)],
    options: &Options,
    warnings: &mut Vec<String>,
) -> Result<Loaded, Error> {
    let files = read::expand_inputs(inputs)?;
    let mut docs: Vec<Document> = Vec::new();
    for file_docs in par::map(&files, |f| read::read_documents(f)) {
        docs.extend(file_docs?);
    }
    for (name, text) in sources {
        docs.extend(read::parse_documents(name, text)?);
    }
    let mut loaded = Loaded {
        crds: Vec::new(),
        skipped: Vec::new(),
    };
    for doc in &docs {
        warnings.extend(doc.warnings.iter().cloned());
    }
    let mut invalid = Vec::new();
    for doc in read::flatten(docs) {
        match classify(&doc.value) {
            Classified::Other(what) => loaded.skipped.push(format!(
                "{}: document {}: {what}, skipped",
                doc.source.display(),
                doc.index
            )),
            Classified::Crd => {
                if let Some(bad) = check(&doc, options, warnings) {
                    invalid.push(bad);
                    continue;
                }
                loaded
                    .crds
                    .push(Crd::from_value(&doc.source, doc.index, doc.value)?);
            }
        }
    }
    if !invalid.is_empty() {
        return Err(Error::Invalid(invalid));
    }
    Ok(loaded)
}

/// Why one violation is only a warning under `options`, or `None` when it refuses the CRD (see
/// the module documentation).
fn warned_why(v: &Violation, options: &Options) -> Option<&'static str> {
    if options.strict {
        None
    } else if !v.affects_generated_code() {
        Some(
            "kube-apiserver refuses this CRD for it, but it does not reach the generated code: generated anyway; --strict refuses it",
        )
    } else if v.structural && options.lenient {
        Some(
            "a non-structural schema: kube-apiserver 1.35 refuses this CRD; generated anyway under --lenient",
        )
    } else {
        None
    }
}

/// Validates one CRD document; `Some` when a violation refuses it (see [`warned_why`]).
fn check(doc: &Document, options: &Options, warnings: &mut Vec<String>) -> Option<InvalidCrd> {
    let report = validate_crd(&doc.value);
    let name = doc
        .value
        .pointer("/metadata/name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
        .to_string();
    let place =
        |source: &Path| format!("{}: document {}: CRD {name:?}", source.display(), doc.index);
    for w in &report.warnings {
        warnings.push(format!("{}: {w}", place(&doc.source)));
    }
    // A refused CRD lists every violation, as the server's answer would; only a CRD that is
    // generated turns its other violations into warnings.
    let mut causes = Vec::new();
    let mut downgraded = Vec::new();
    let mut refused = false;
    for v in report.violations {
        let line = with_version(&doc.value, v.cause.to_string());
        match warned_why(&v, options) {
            Some(why) => downgraded.push(format!("{}: {line} ({why})", place(&doc.source))),
            None => refused = true,
        }
        causes.push(line);
    }
    if !refused {
        warnings.append(&mut downgraded);
        return None;
    }
    Some(InvalidCrd {
        file: doc.source.clone(),
        document: doc.index,
        crd: name,
        causes,
    })
}

/// Names the version a cause is about when its field path points into `spec.versions[i]`.
fn with_version(crd: &serde_json::Value, cause: String) -> String {
    let version = cause
        .strip_prefix("spec.versions[")
        .and_then(|rest| rest.split_once(']'))
        .and_then(|(i, _)| i.parse::<usize>().ok())
        .and_then(|i| crd.pointer(&format!("/spec/versions/{i}/name")))
        .and_then(serde_json::Value::as_str);
    match version {
        Some(v) => format!("version {v}: {cause}"),
        None => cause,
    }
}
