//! What can go wrong reading CRDs, each with the place it went wrong.

use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// YAML/JSON syntax, a value kubectl could not send (`.inf`), or a budget (alias bomb,
    /// nesting) exceeded.
    #[error("{}:{line}:{column}: {message}", file.display())]
    Syntax {
        file: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// A CRD document without the fields every CRD has, or with one of the wrong type.
    #[error("{}: document {document}: CRD {crd:?} at {pointer}: {message}", file.display())]
    Crd {
        file: PathBuf,
        document: usize,
        crd: String,
        pointer: String,
        message: String,
    },
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}
