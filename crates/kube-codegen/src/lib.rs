//! kube-codegen: CustomResourceDefinition YAML -> typed Rust modules.
//!
//! (CONTRACT STUB: the public API below is fixed; the implementation is being written.)

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Everything that went wrong, with a location a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{0}")]
    Other(String),
}

/// Generation options, declared once; the CLI flags and the Builder methods both feed this.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `--single-file <NAME>.rs`: one file with inline modules, for `include!`.
    pub single_file: Option<String>,
}

/// One generated resource (a served CRD version), so harnesses can find the Rust type for an apiVersion/kind.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceInfo {
    /// `metadata.name` of the CRD, e.g. `foos.samplecontroller.k8s.io`.
    pub crd_name: String,
    /// The input file the CRD came from.
    pub source: PathBuf,
    pub group: String,
    pub version: String,
    pub kind: String,
    pub plural: String,
    pub namespaced: bool,
    /// Path of the root type relative to the generated root module, e.g. `samplecontroller::v1alpha1::Foo`.
    pub rust_path: String,
    /// The version's openAPIV3Schema (v1beta1 CRDs normalised to the v1 place); `Null` when the CRD has none.
    pub schema: serde_json::Value,
}

/// The result of a generation run, in memory.
#[derive(Debug, Clone, Default)]
pub struct Generated {
    /// File path relative to the output directory -> file contents.
    pub files: BTreeMap<PathBuf, String>,
    pub resources: Vec<ResourceInfo>,
    /// Non-fatal problems (skipped documents, ...), each naming file and document index.
    pub warnings: Vec<String>,
}

/// Entry point for `build.rs` and for programs.
#[derive(Debug, Clone, Default)]
pub struct Builder {
    inputs: Vec<PathBuf>,
    out_dir: Option<PathBuf>,
    options: Options,
}

impl Builder {
    pub fn new() -> Self {
        Self::default()
    }
    /// A CRD file or a directory of them (recursive, `*.yaml|*.yml|*.json`).
    pub fn input(mut self, path: impl AsRef<Path>) -> Self {
        self.inputs.push(path.as_ref().to_path_buf());
        self
    }
    pub fn out_dir(mut self, path: impl AsRef<Path>) -> Self {
        self.out_dir = Some(path.as_ref().to_path_buf());
        self
    }
    pub fn options(mut self, options: Options) -> Self {
        self.options = options;
        self
    }
    /// Generates in memory without touching the disk.
    pub fn render(&self) -> Result<Generated, Error> {
        let _ = (&self.inputs, &self.options);
        Err(Error::Other("not yet implemented".into()))
    }
    /// Generates and writes into `out_dir` (default `$OUT_DIR`), only files whose bytes changed.
    pub fn generate(self) -> Result<Generated, Error> {
        let _ = &self.out_dir;
        self.render()
    }
}
