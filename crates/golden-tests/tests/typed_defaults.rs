//! The generated typed defaulting (`SchemaChecks::typed_schema_defaults`) gives the object the
//! JSON path gives, on every sample of every golden with generated validation, and on variants
//! of each sample with its `spec` (or `status`) emptied, removed, or short of one field, so the
//! two cannot drift. Two JSON paths are compared: `apply_defaults()` (typed -> JSON -> typed)
//! and the admission webhook's (the schema's defaults on the JSON as sent, then the decode).
#![allow(deprecated)] // deprecated CRD versions are generated as #[deprecated] types and tested all the same

use kube_codegen_runtime::validation::SchemaChecks;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use xtask::documents;

mod testdata;
use testdata::{sorted, testdata};

/// What one object gave.
#[derive(Debug, Default)]
struct Tally {
    /// Objects that decoded and were defaulted by the typed path.
    typed: usize,
    /// Of which the defaults changed something.
    changed: usize,
    /// Objects the typed path handed back to the JSON path (`false`).
    declined: usize,
    failures: Vec<String>,
}

type DefaultsCheck = fn(&Value, &mut Tally, &str);

include!(concat!(env!("OUT_DIR"), "/defaults_dispatch.rs"));

fn check<T>(sent: &Value, tally: &mut Tally, place: &str)
where
    T: SchemaChecks + Serialize + DeserializeOwned,
{
    let Ok(decoded) = serde_json::from_value::<T>(sent.clone()) else {
        return;
    };
    let before = serde_json::to_value(&decoded).expect("encodes");
    let mut typed: T = serde_json::from_value(sent.clone()).expect("decoded once");
    if !typed.typed_schema_defaults() {
        tally.declined += 1;
        return;
    }
    tally.typed += 1;
    let typed = serde_json::to_value(&typed).expect("encodes");
    if typed != before {
        tally.changed += 1;
    }
    let mut by_method: T = serde_json::from_value(sent.clone()).expect("decoded once");
    by_method.schema_defaults();
    let by_method = serde_json::to_value(&by_method).expect("encodes");
    if typed != by_method {
        tally.failures.push(format!(
            "{place}: typed defaults {typed} != apply_defaults() {by_method}"
        ));
    }
    let schema = T::openapi_schema().expect("generated SchemaChecks has the schema");
    let mut json = sent.clone();
    schema.schema().apply_defaults(&mut json);
    let by_json = serde_json::from_value::<T>(json)
        .map(|t| serde_json::to_value(&t).expect("encodes"))
        .unwrap_or(before);
    if typed != by_json {
        tally.failures.push(format!(
            "{place}: typed defaults {typed} != defaults on the sent JSON {by_json}"
        ));
    }
}

/// The sample and its variants: `spec` and `status` each removed, emptied, and short of each
/// of their fields in turn (defaults mostly fill what is missing).
fn variants(doc: &Value) -> Vec<(String, Value)> {
    let mut out = vec![("as is".to_owned(), doc.clone())];
    for part in ["spec", "status"] {
        let Some(Value::Object(fields)) = doc.get(part) else {
            continue;
        };
        let mut without = doc.clone();
        if let Some(o) = without.as_object_mut() {
            o.remove(part);
        }
        out.push((format!("without {part}"), without));
        let mut empty = doc.clone();
        empty[part] = Value::Object(Default::default());
        out.push((format!("{part}: {{}}"), empty));
        for key in fields.keys() {
            let mut short = doc.clone();
            if let Some(o) = short[part].as_object_mut() {
                o.remove(key);
            }
            out.push((format!("without {part}.{key}"), short));
            let mut null = doc.clone();
            null[part][key] = Value::Null;
            out.push((format!("{part}.{key}: null"), null));
        }
    }
    out
}

#[test]
fn typed_defaults_equal_the_json_path_on_every_sample() {
    let mut tally = Tally::default();
    // (stem, objects typed, objects handed back)
    let mut per_stem: Vec<(String, usize, usize)> = Vec::new();
    for dir in sorted(&testdata().join("samples")) {
        let stem = dir
            .file_name()
            .expect("dir name")
            .to_string_lossy()
            .into_owned();
        let (typed_before, declined_before) = (tally.typed, tally.declined);
        for file in sorted(&dir) {
            let docs = documents::load(&file).expect("sample loads");
            for (i, doc) in docs.iter().enumerate() {
                let Some((api_version, kind)) = documents::api_version_kind(doc) else {
                    continue;
                };
                let Some(&(_, _, _, check)) = DEFAULTED
                    .iter()
                    .find(|r| r.0 == stem && r.1 == api_version && r.2 == kind)
                else {
                    continue;
                };
                for (variant, value) in variants(doc) {
                    let place = format!("{}#{i} ({variant})", file.display());
                    check(&value, &mut tally, &place);
                }
            }
        }
        per_stem.push((
            stem,
            tally.typed - typed_before,
            tally.declined - declined_before,
        ));
    }
    println!("{tally:?}\n{per_stem:?}");
    assert!(
        tally.failures.is_empty(),
        "{} differences:\n{}",
        tally.failures.len(),
        tally.failures.join("\n")
    );
    // Not vacuous: many objects compared, defaults placed in many of them, the `defaults`
    // fixture (every kind of default) compared without a single hand-back. `known-types`
    // hands every object back: its defaults sit below k8s-openapi types, which generated code
    // does not reach into.
    assert!(tally.typed >= 500, "{tally:?}");
    assert!(tally.changed >= 15, "{tally:?}");
    assert!(
        per_stem
            .iter()
            .any(|(s, n, back)| s == "defaults" && *n >= 10 && *back == 0),
        "{per_stem:?}"
    );
}

#[test]
fn every_golden_with_validation_is_in_the_table() {
    assert!(DEFAULTED.len() >= 20, "only {} resources", DEFAULTED.len());
}
