//! Reading input bytes into JSON documents: files, directories, stdin; YAML and JSON, as
//! kubectl reads them before it sends them to a server.

mod value;
mod yaml;

use std::path::{Path, PathBuf};

use crate::Error;
use value::TopValue;
pub use yaml::MAX_DEPTH;

/// One parsed document of an input file.
#[derive(Debug, Clone)]
pub struct Document {
    pub source: PathBuf,
    /// Zero-based index of the document in its file (a `List`'s items share their parent's index).
    pub index: usize,
    pub value: serde_json::Value,
    /// What reading noticed without stopping, each message naming the file and (YAML) the
    /// `line:column` or (JSON) the document index: a mapping key given twice, whose last value
    /// kubectl sends without a word, as `value` holds it. After [`flatten`], a `List`'s warnings
    /// are on its first item.
    pub warnings: Vec<String>,
}

/// The display name of stdin in messages.
pub const STDIN: &str = "-";

/// Expands the inputs into a sorted list of files; directories are walked recursively.
pub fn expand_inputs(inputs: &[PathBuf]) -> Result<Vec<PathBuf>, Error> {
    let mut out = Vec::new();
    for input in inputs {
        if input.as_os_str() == STDIN {
            out.push(input.clone());
            continue;
        }
        let meta = std::fs::metadata(input).map_err(|e| Error::io(input, e))?;
        if meta.is_dir() {
            let mut found = Vec::new();
            walk(input, &mut found)?;
            found.sort();
            out.extend(found);
        } else {
            out.push(input.clone());
        }
    }
    Ok(out)
}

/// Every directory visited while expanding `inputs` (for `cargo:rerun-if-changed`).
pub fn input_dirs(inputs: &[PathBuf]) -> Vec<PathBuf> {
    fn rec(dir: &Path, out: &mut Vec<PathBuf>) {
        out.push(dir.to_path_buf());
        if let Ok(rd) = std::fs::read_dir(dir) {
            let mut subs: Vec<PathBuf> = rd
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.is_dir())
                .collect();
            subs.sort();
            for s in subs {
                rec(&s, out);
            }
        }
    }
    let mut out = Vec::new();
    for i in inputs {
        if i.is_dir() {
            rec(i, &mut out);
        }
    }
    out
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), Error> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))?;
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(dir, e))?;
        let path = entry.path();
        let ft = entry.file_type().map_err(|e| Error::io(&path, e))?;
        if ft.is_dir() {
            walk(&path, out)?;
        } else if matches!(
            path.extension().and_then(|e| e.to_str()),
            Some("yaml" | "yml" | "json")
        ) {
            out.push(path);
        }
    }
    Ok(())
}

/// Reads a file (or stdin for `-`) into text.
pub fn read_source(path: &Path) -> Result<String, Error> {
    if path.as_os_str() == STDIN {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s)
            .map_err(|e| Error::io(path, e))?;
        Ok(s)
    } else {
        std::fs::read_to_string(path).map_err(|e| Error::io(path, e))
    }
}

/// Reads one file (or stdin for `-`) into its documents.
pub fn read_documents(path: &Path) -> Result<Vec<Document>, Error> {
    let text = read_source(path)?;
    parse_documents(path, &text)
}

/// Parses text as JSON (when it starts with `{` or `[`) or as a YAML stream. Empty documents
/// (`---` with nothing after it) are kept as `null` so document indices match the file.
pub fn parse_documents(path: &Path, text: &str) -> Result<Vec<Document>, Error> {
    let trimmed = text.trim_start_matches('\u{feff}').trim_start();
    let values: Vec<TopValue> = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        parse_json(path, text)?
    } else {
        yaml::parse(path, text)?
    };
    Ok(values
        .into_iter()
        .enumerate()
        .map(|(index, top)| Document {
            source: path.to_path_buf(),
            index,
            warnings: top
                .duplicates
                .iter()
                .map(|d| duplicate_warning(path, index, d))
                .collect(),
            value: top.value,
        })
        .collect())
}

fn duplicate_warning(path: &Path, index: usize, d: &value::DuplicateKey) -> String {
    let place = match d.at {
        Some((line, column)) => format!("{}:{line}:{column}", path.display()),
        None => format!("{}: document {index}", path.display()),
    };
    format!(
        "{place}: duplicate mapping key {:?}: the last value is used, as kubectl uses it",
        d.key
    )
}

fn parse_json(path: &Path, text: &str) -> Result<Vec<TopValue>, Error> {
    // A stream of concatenated JSON values is accepted, like `kubectl get -o json` output joined.
    let mut out = Vec::new();
    let text = text.trim_start_matches('\u{feff}');
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<TopValue>();
    loop {
        match stream.next() {
            None => break,
            Some(Ok(v)) => out.push(v),
            Some(Err(e)) => {
                return Err(Error::Syntax {
                    file: path.to_path_buf(),
                    line: e.line(),
                    column: e.column(),
                    message: e.to_string(),
                });
            }
        }
    }
    Ok(out)
}

/// Unwraps `kind: List` (and any `*List` with an `items` array) into its items, recursively; the
/// items keep their parent's document index.
pub fn flatten(docs: Vec<Document>) -> Vec<Document> {
    fn rec(doc: Document, out: &mut Vec<Document>) {
        let is_list = doc.value.as_object().is_some_and(|m| {
            m.get("kind")
                .and_then(serde_json::Value::as_str)
                .is_some_and(|k| k.ends_with("List"))
                && m.get("items").is_some_and(serde_json::Value::is_array)
        });
        if !is_list {
            out.push(doc);
            return;
        }
        let Document {
            source,
            index,
            mut value,
            mut warnings,
        } = doc;
        if let Some(serde_json::Value::Array(items)) =
            value.as_object_mut().and_then(|m| m.remove("items"))
        {
            for value in items {
                rec(
                    Document {
                        source: source.clone(),
                        index,
                        value,
                        warnings: std::mem::take(&mut warnings),
                    },
                    out,
                );
            }
        }
    }
    let mut out = Vec::with_capacity(docs.len());
    for doc in docs {
        rec(doc, &mut out);
    }
    out
}

/// One YAML document (a request body, an apply patch) read by the same YAML 1.1 rules; `what`
/// names it in the error (`request body`).
pub fn yaml_value(what: &str, text: &str) -> Result<serde_json::Value, Error> {
    let mut docs = yaml::parse(Path::new(what), text)?;
    Ok(match docs.len() {
        0 => serde_json::Value::Null,
        _ => docs.swap_remove(0).value,
    })
}
