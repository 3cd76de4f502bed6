//! Reading input bytes into JSON documents: files, directories, stdin; YAML and JSON.

use std::path::{Path, PathBuf};

use crate::Error;

/// Nesting limit for YAML input; serde-saphyr's default (64) is too low for deep real-world CRDs
/// (a nested pod template easily goes past it), while 256 still protects the stack.
const MAX_YAML_DEPTH: usize = 256;

/// One parsed document of an input file.
#[derive(Debug, Clone)]
pub struct Document {
    pub source: PathBuf,
    /// Zero-based index of the document in its file (a `List`'s items share their parent's index).
    pub index: usize,
    pub value: serde_json::Value,
}

/// The display name of stdin in messages and [`crate::ResourceInfo::source`].
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

/// Parses text as JSON (when it starts with `{` or `[`) or as a YAML stream.
pub fn parse_documents(path: &Path, text: &str) -> Result<Vec<Document>, Error> {
    let trimmed = text.trim_start();
    let values: Vec<serde_json::Value> = if trimmed.starts_with('{') || trimmed.starts_with('[') {
        parse_json(path, text)?
    } else {
        parse_yaml(path, text)?
    };
    Ok(values
        .into_iter()
        .enumerate()
        .map(|(index, value)| Document {
            source: path.to_path_buf(),
            index,
            value,
        })
        .collect())
}

fn parse_json(path: &Path, text: &str) -> Result<Vec<serde_json::Value>, Error> {
    // A stream of concatenated JSON values is accepted, like `kubectl get -o json` output joined.
    let mut out = Vec::new();
    for v in serde_json::Deserializer::from_str(text).into_iter::<serde_json::Value>() {
        match v {
            Ok(v) => out.push(v),
            Err(e) => {
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

fn parse_yaml(path: &Path, text: &str) -> Result<Vec<serde_json::Value>, Error> {
    // The common block-style CRD text has a fast reader; everything else (and every error) is
    // serde-saphyr's.
    if let Some(docs) = super::fast_yaml::parse(text) {
        return Ok(docs);
    }
    saphyr_yaml(path, text)
}

/// The full YAML reader, with the nesting budget and located errors.
pub(super) fn saphyr_yaml(path: &Path, text: &str) -> Result<Vec<serde_json::Value>, Error> {
    let mut options = serde_saphyr::Options::default();
    let mut budget = serde_saphyr::Budget::default();
    budget.max_depth = MAX_YAML_DEPTH;
    options.budget = Some(budget);
    // Comments are never read; not capturing their text saves work on heavily commented files.
    options.emit_comments = false;
    serde_saphyr::from_multiple_with_options::<serde_json::Value>(text, options).map_err(|e| {
        let (line, column) = e
            .location()
            .map(|l| (l.line() as usize, l.column() as usize))
            .unwrap_or((0, 0));
        // The rendered message repeats a snippet; the first line is the cause.
        let message = e.to_string();
        let message = message.lines().next().unwrap_or("invalid YAML").to_string();
        Error::Syntax {
            file: path.to_path_buf(),
            line,
            column,
            message,
        }
    })
}
