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
//! - under `--lenient`, every violation is a warning (naming the file, the CRD and the server's
//!   message) as long as the generator can build the CRD's types: a CRD it cannot read (no
//!   `metadata.name`, `spec.group`, kind or plural, no versions, a field of the wrong JSON type)
//!   is refused here, and one whose schema it cannot map (a `type` outside the server's list, an
//!   unreadable schema) is refused by `model::build`, each with every violation the server
//!   would report (see [`Loaded::lenient`]);
//! - otherwise every other violation is an error ([`Error::Invalid`]), and nothing is written;
//! - under `--strict`, every violation is an error (`--strict` and `--lenient` conflict).
//!
//! The reader's warnings (a mapping key given twice) and the validator's (v1beta1 is deprecated,
//! unknown fields) are warnings under every option, as is the data-loss lint of
//! `model::pruning` (versions whose schemas differ under `spec.conversion.strategy: None`).

use std::path::PathBuf;

use kube_codegen_crd::read::{self, Document};
use kube_codegen_crd::validate::{Violation, validate_crd};
use kube_codegen_crd::{Classified, Crd, classify};

use crate::{Error, InvalidCrd, Options, par};

/// What the inputs hold: CRDs to generate from, and the reasons nothing was taken from the rest.
pub(crate) struct Loaded {
    pub crds: Vec<Crd>,
    /// `file: document N: what it was, skipped` for every document that is not a CRD.
    pub skipped: Vec<String>,
    /// The refusal each CRD taken only because of `--lenient` would have had: when the model
    /// cannot build its types after all, the run refuses it with these causes (see
    /// [`refusal`]).
    pub lenient: Vec<InvalidCrd>,
}

/// `error` as the refusal of a CRD taken only under `--lenient` (`lenient`, from [`Loaded`]),
/// when it is a schema the model cannot map in such a CRD: the server's causes, then why no
/// types can be built.
pub(crate) fn refusal(lenient: &[InvalidCrd], error: Error) -> Error {
    let Error::Schema {
        file,
        crd,
        version,
        pointer,
        message,
    } = &error
    else {
        return error;
    };
    match lenient.iter().find(|c| &c.file == file && &c.crd == crd) {
        Some(c) => {
            let mut c = c.clone();
            c.causes.push(format!(
                "version {version}: openAPIV3Schema{pointer}: {message} (so no types can be built from it, even under --lenient)"
            ));
            Error::Invalid(vec![c])
        }
        None => error,
    }
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
        lenient: Vec::new(),
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
                let checked = check(&doc, options);
                warnings.extend(checked.warnings);
                if checked.refused {
                    invalid.push(checked.crd);
                    continue;
                }
                let lint = crate::model::pruning::converts_by_apiversion_and_prunes(&doc.value);
                match Crd::from_value(&doc.source, doc.index, doc.value) {
                    Ok(crd) => {
                        warnings.extend(checked.downgraded);
                        if lint {
                            warnings.extend(crate::model::pruning::lint(&crd));
                        }
                        loaded.crds.push(crd);
                        if checked.lenient {
                            loaded.lenient.push(checked.crd);
                        }
                    }
                    // Only a CRD the server refuses can lack what every CRD has; under
                    // `--lenient` it is refused with the server's causes and the reader's.
                    Err(e) if !checked.crd.causes.is_empty() => {
                        let mut bad = checked.crd;
                        bad.causes.push(format!(
                            "{e} (so no types can be built from it, even under --lenient)"
                        ));
                        invalid.push(bad);
                    }
                    Err(e) => return Err(e.into()),
                }
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
    } else if options.lenient {
        Some("kube-apiserver 1.35 refuses this CRD for it; generated anyway under --lenient")
    } else {
        None
    }
}

/// What validating one CRD document decided.
struct Checked {
    /// Every violation in the server's words (empty for a valid CRD): the refusal when
    /// `refused`, or when the generator cannot build its types after all.
    crd: InvalidCrd,
    refused: bool,
    /// Taken only because of `--lenient` (a violation that reaches the generated code).
    lenient: bool,
    /// The validator's own warnings (v1beta1 deprecated, unknown fields), under every option.
    warnings: Vec<String>,
    /// The violations turned into warnings, for a CRD that is generated.
    downgraded: Vec<String>,
}

/// Validates one CRD document (see [`warned_why`]).
fn check(doc: &Document, options: &Options) -> Checked {
    let report = validate_crd(&doc.value);
    let name = doc
        .value
        .pointer("/metadata/name")
        .and_then(serde_json::Value::as_str)
        .unwrap_or("")
        .to_string();
    let place = format!(
        "{}: document {}: CRD {name:?}",
        doc.source.display(),
        doc.index
    );
    let warnings = report
        .warnings
        .iter()
        .map(|w| format!("{place}: {w}"))
        .collect();
    // A refused CRD lists every violation, as the server's answer would; only a CRD that is
    // generated turns its other violations into warnings.
    let mut causes = Vec::new();
    let mut downgraded = Vec::new();
    let mut refused = false;
    let mut lenient = false;
    for v in report.violations {
        let line = with_version(&doc.value, v.cause.to_string());
        match warned_why(&v, options) {
            Some(why) => {
                downgraded.push(format!("{place}: {line} ({why})"));
                lenient |= v.affects_generated_code();
            }
            None => refused = true,
        }
        causes.push(line);
    }
    Checked {
        crd: InvalidCrd {
            file: doc.source.clone(),
            document: doc.index,
            crd: name,
            causes,
        },
        refused,
        lenient,
        warnings,
        downgraded,
    }
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
