//! kube-codegen: CustomResourceDefinition YAML -> typed Rust modules.
//!
//! # Pipeline
//!
//! `crd` (bytes -> documents -> normalised CRDs, errors with file:line:column or CRD/version/JSON
//! pointer) -> `model` (IR; every naming decision made once) -> `emit` (IR -> `syn` items for
//! nested types, `quote!` tokens for the rest) -> `render` (prettyplease + header,
//! write-if-changed, `--check` diffs).
//!
//! # Type mapping
//!
//! | schema | Rust |
//! |---|---|
//! | object with properties | struct; required -> `T`, optional -> `Option<T>` skipped when `None` |
//! | properties + preserve-unknown-fields / `additionalProperties` | typed fields + `#[serde(flatten)] extra_fields: BTreeMap<String, V>` |
//! | object without properties, `additionalProperties: true`, preserve-unknown | `BTreeMap<String, serde_json::Value>` (never an empty struct) |
//! | `additionalProperties: <schema>` | `BTreeMap<String, T>` |
//! | untyped / preserve-unknown without type | `serde_json::Value` |
//! | array | `Vec<T>` (`Vec<Option<T>>` when items are nullable) |
//! | string enum | enum with unit variants renamed to the wire value + `#[serde(untagged)] Other(String)` |
//! | integer enum | `#[serde(transparent)]` newtype over `i64` with one associated const per value |
//! | integer (int32 / other) | `i32` / `i64` |
//! | number | `serde_json::Number` (see below) |
//! | int-or-string, anyOf/oneOf of integer+string | the tree's own `IntOrString` (`Int(i64)` / `String`, at the tree's root), or `k8s_openapi::...::IntOrString` (`i32`) when `minimum`/`maximum` bound every integer within `i32` (wins over anyOf) |
//! | oneOf/anyOf of distinct JSON types | `#[serde(untagged)]` enum, one variant per type |
//! | oneOf/anyOf of constraint-only branches | ignored for typing, noted in docs |
//! | oneOf/anyOf with repeated or mixed types | `serde_json::Value` |
//! | top-level `metadata` | `k8s_openapi::...::ObjectMeta` |
//! | `x-kubernetes-embedded-resource` | struct with `apiVersion`, `kind`, `metadata` (JSON map) + declared fields (+ flattened rest) |
//! | formats, defaults, validations, list types | listed in rustdoc |
//!
//! Every top-level property of the schema becomes a field of the root type, not only `spec` and
//! `status`.
//!
//! ## Nullable
//!
//! An explicit `null` must survive a round trip. Required+nullable -> `Option<T>` always
//! serialized (`None` <-> `null`). Optional+nullable -> `Option<Option<T>>`: `None` = absent,
//! `Some(None)` = `null`, with a private `nullable` deserializer helper emitted in the kind's module
//! (plain serde code, no runtime crate). Non-nullable fields use `Option<T>`; the API server drops
//! `null` there.
//!
//! ## Numbers
//!
//! `type: number` maps to `serde_json::Number`, not `f64`: a JSON `1` must come back as `1`, and
//! `f64` would re-serialize it as `1.0` (a different `serde_json::Value`). `Number` keeps integer
//! and float apart exactly and converts with `as_f64()`. It has no `Default`, so a struct with a
//! *required* number field does not derive `Default`.
//!
//! ## Enums
//!
//! String enums keep unknown values: `Other(String)` is a variant-level `#[serde(untagged)]` catch-all,
//! so a newer server's value deserializes and re-serializes unchanged. Enums derive `Default` only
//! when the schema gives a default (`#[default]` on that variant). Enums inside arrays and maps are
//! typed too.
//!
//! # Naming policy
//!
//! - Group module: the first DNS label of the group (`samplecontroller.k8s.io` -> `samplecontroller`);
//!   when two different groups in one run share that label, both use the whole group in snake case
//!   (`monitoring_coreos_com`). Version module: the version (`v1alpha1`). Kind module: the kind in
//!   snake case; the root type is the kind in UpperCamelCase, re-exported from the version module.
//! - Nested types: path-derived UpperCamelCase, the parent type's name plus the property
//!   (`Foo` -> `FooSpec` -> `FooSpecTemplate`); array items and map values take the name of the
//!   property holding them; untagged variants append the JSON type (`FooSpecPortString`).
//! - Fields: snake case (heck) of the ASCII part of the wire name; keywords become raw identifiers
//!   (`r#type`, `r#gen` for edition 2024), except `self`/`Self`/`crate`/`super` which get a `_` suffix;
//!   a leading digit gets a `_` prefix. `#[serde(rename)]` is emitted exactly when the Rust name
//!   differs from the wire name. Type names that would shadow prelude types (`Option`, `String`, ...)
//!   get a `Type` suffix.
//! - Enum variants: UpperCamelCase of the value; a value made only of symbols is spelled out
//!   (`=` -> `Eq`, `!=` -> `NotEq`), `""` -> `Empty`, a leading digit gets a `V` prefix.
//!
//! ## Collision rule
//!
//! Within one scope (fields of one struct, types of one kind module, variants of one enum, kinds of
//! one version), the items that want the same name are sorted by (exact match first, then a stable
//! key: wire name for fields, JSON pointer for types, list position for variants, CRD name for
//! kinds). The first keeps the name; the others get the smallest free suffix `2`, `3`, ... (`_2` for
//! snake-case names). The rule depends only on the set of names, never on traversal or input
//! order, and adding an unrelated CRD never renames anything (names are scoped per kind module).
//! The flattened catch-all field is `extra_fields` unless a declared property takes that name.
//!
//! ## Dedupe
//!
//! Structurally identical nested types within one CRD version (same fields, types and variants;
//! descriptions are not compared, so an alias shows its representative's field docs)
//! are emitted once; the others become `pub type Alias = Representative;` where the representative
//! is the one whose name sorts first, so every path-derived name stays usable.
//!
//! # Reading input
//!
//! Reading, normalising and validating CRDs is `kube-codegen-crd`'s job, shared with the
//! in-memory API server and xtask. YAML (multi-document) is read as kubectl reads it before it
//! sends it to a server (YAML 1.1: `0644` is 420, `yes`/`on` are `true`, `.inf` is refused), or
//! JSON (detected by a leading `{`/`[`, concatenated values allowed);
//! `List`/`CustomResourceDefinitionList` wrappers; directories walked recursively for
//! `*.yaml|*.yml|*.json` in sorted order (files read in parallel); `-` for stdin. Documents that
//! are not CRDs (other kinds, scalars, sequences) are skipped with a warning naming file and
//! document index. A mapping key given twice keeps its last value, as kubectl keeps it, with a
//! warning naming `file:line:column`. Of a CRD name seen twice, the last definition is used, as
//! `kubectl apply -f` leaves the last one applied, with a warning naming both places. v1beta1
//! CRDs are normalised to v1 (`spec.version`, `spec.validation`, top-level
//! `subresources`/`additionalPrinterColumns` with `JSONPath`, per-version overrides winning).
//!
//! Every CRD is validated as kube-apiserver 1.35 validates it on create (v1beta1 ones by the
//! rules of the last server that served v1beta1): names, versions, `$ref` and the other
//! forbidden keywords, structural-schema rules, subresource paths, printer columns,
//! `x-kubernetes-validations` rules that must parse. The generator refuses only what matters to
//! the code: a violation in a part the generated code does not reflect (`spec.conversion`, such
//! as a webhook service or CA bundle left to be filled at install time; annotations, such as the
//! `api-approved.kubernetes.io` approval of `*.k8s.io` groups; labels; `status`; selectable
//! fields) is a warning naming the file and the server's message, and the CRD is generated. A
//! CRD with any other violation is an error ([`Error::Invalid`]) listing every violation in the
//! server's words, and nothing is written; [`Options::lenient`] (`--lenient`) is the escape
//! hatch: every violation is a warning, and the CRD is generated, as long as its types can be
//! built (a CRD without a name, group, kind, plural or versions, or with a schema `type` the
//! generator cannot map, is still refused, with every violation); [`Options::strict`] (`--strict`, which conflicts with `--lenient`) refuses every CRD the
//! server would refuse. A CRD that serves no version generates nothing under the default
//! `--versions served`, with a warning.
//!
//! Hostile input errors out: YAML nesting is capped at 256 (the YAML reader's budget, which also
//! stops alias bombs), JSON at serde_json's 128, schema nesting at 100 levels; syntax errors carry
//! `file:line:column`, CRD problems the document index and JSON pointer, schema problems the CRD
//! name, version and JSON pointer inside `openAPIV3Schema`.
//!
//! # build.rs
//!
//! ```no_run
//! // build.rs
//! kube_codegen::Builder::new().input("crds/").generate().unwrap();
//! // src/lib.rs: include!(concat!(env!("OUT_DIR"), "/kube_codegen.rs"));
//! ```
//!
//! Without `out_dir`, [`Builder::generate`] writes the single include file [`INCLUDE_FILE`] into
//! `OUT_DIR` (a clear error when unset), rewrites it only when its bytes change, and prints
//! `cargo:rerun-if-changed` for every input file and directory.
//!
//! # Output
//!
//! Module tree by default (`mod.rs`, `<group>/mod.rs`, `<group>/<version>/mod.rs`,
//! `<group>/<version>/<kind>.rs`); `--single-file NAME.rs` (inline modules, for `include!`);
//! `--crate NAME` (`Cargo.toml` from `templates/crate/Cargo.toml.in`, shipped in this crate + `src/lib.rs`). Every Rust file
//! starts with a `// @generated ... DO NOT EDIT` header and is formatted by prettyplease, so bytes
//! depend only on the input set. Only changed files are written; in the module-tree layout, files
//! carrying the header that are no longer produced are removed (and reported by `--check`).
//! The types depend only on `serde`, `serde_json` and `k8s-openapi`; the other outputs
//! ([`Emit`]: clientset, listers, informers, apply configurations, validation, all by default)
//! add `kube` and `kube-codegen-runtime`. Everything compiles under editions 2021 and 2024 with
//! `#![deny(warnings)]` and clippy.
//!
//! # Generated API
//!
//! Every generated type of a version is re-exported at `group::version::Name`, names decided
//! across the version (the API names below win). Per kind: `FooApply` (+ `FooSpecApply`... for
//! nested structs: all-optional, one builder method per field, only set fields serialised),
//! `FooLister`/`FooNamespaceLister` (reads return `NotSynced` before the first list), `FooInformer`,
//! and `HasStatus`/`HasScale` impls where the CRD version has those subresources (the typed
//! client's status and scale verbs need them, so a missing verb is a compile error). Per version:
//! `<Group><Version>Client` (`foos(ns)`, `foos_all()`, cluster-scoped `widgets()`) and
//! `<Group><Version>Informers`; per group `<Group>Informers`; at the root `Clientset` and the
//! `InformerFactoryExt` trait on the runtime's `SharedInformerFactory`
//! (`factory.samplecontroller().v1alpha1().foos()`). Schemas that are exactly a well-known
//! Kubernetes type (`metav1.Condition`, `LabelSelector`, ...) use `k8s-openapi`'s type unless
//! `--no-known-types`.
//!
//! With validation, each root type also has `validate()` (the API server's create checks:
//! OpenAPI values, list types and `x-kubernetes-validations` CEL rules, with the validator of
//! the in-memory API server), `validate_update(&old)` (plus transition rules and ratcheting) and
//! `apply_defaults()`, over the version's schema embedded as compact JSON (see
//! `kube_codegen_runtime::validation`), and implements that module's `SchemaChecks` with them
//! (what the runtime's admission webhooks run first), with the schema's defaults also written
//! out as code on the typed object (`typed_schema_defaults`), and every generated struct
//! implements `kube_codegen_runtime::typed_patch::TypedDiff` (the JSON patch between two
//! values, field by field: a defaulting webhook's answer).
//!
//! Root types: `apiVersion`/`kind` strings (filled by the hand-written `Default`), `metadata:
//! ObjectMeta`, then every other top-level property; constants for CRD name, plural, singular,
//! short names, categories, list kind, scope, storage/served, status and scale subresources and
//! printer columns; `k8s_openapi::{Resource, ListableResource, Metadata}` impls. A deprecated
//! version's root type is `#[deprecated = "<deprecationWarning>"]`, with `#[allow(deprecated)]` on
//! the generated impls and re-export so a `deny(warnings)` crate still builds.

#[cfg(feature = "cluster")]
mod cluster;
mod docs;
mod emit;
mod load;
mod model;
mod options;
mod par;
mod render;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

#[cfg(feature = "cluster")]
pub use cluster::ClusterSource;
pub use options::{Emit, FLAGS, Flag, Options, VersionSelection};

/// The Kubernetes version (`major.minor`) whose rules the generator applies: CRDs are accepted
/// or refused as kube-apiserver of this version does (`kube-codegen --version` prints it).
pub const KUBERNETES_VERSION: &str = kube_codegen_crd::KUBERNETES_VERSION;

/// The generator's version; published crates are released together at this version, and
/// `--crate` output depends on `kube-codegen-runtime` at it.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// `kube-codegen --version`'s text after the program name: the generator's version and the
/// Kubernetes version whose rules it applies, e.g. `0.1.0 (Kubernetes 1.35 rules)`.
pub fn version_text() -> String {
    format!("{VERSION} (Kubernetes {KUBERNETES_VERSION} rules)")
}

/// Everything that went wrong, with a location a user can act on.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Anything else (internal errors).
    #[error("{0}")]
    Other(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Reading the inputs failed: a file, YAML/JSON syntax (with file:line:column), a budget
    /// (alias bomb, nesting), or a CRD without the fields every CRD has.
    #[error(transparent)]
    Input(#[from] kube_codegen_crd::Error),
    /// A schema the generator cannot map.
    #[error("{}: CRD {crd} version {version}: openAPIV3Schema{pointer}: {message}", file.display())]
    Schema {
        file: PathBuf,
        crd: String,
        version: String,
        pointer: String,
        message: String,
    },
    /// Bad options (exit code 2 in the CLI).
    #[error("{0}")]
    Usage(String),
    /// `Builder::generate` without `out_dir` outside a build script.
    #[error("no output directory: OUT_DIR is not set (call Builder::out_dir outside build.rs)")]
    OutDirUnset,
    /// `--check` found differences; the diff is in the message.
    #[error("generated files differ from the files on disk:\n{diff}")]
    Check { diff: String },
    /// No input document was a CRD; `skipped` says what each document was instead.
    #[error("no CustomResourceDefinition found in the inputs{}", skipped.iter().map(|s| format!("\n  {s}")).collect::<String>())]
    NoCrds { skipped: Vec<String> },
    /// CRDs kube-apiserver would refuse to create, each with every violation in the server's words.
    #[error("{}", invalid_list(.0))]
    Invalid(Vec<InvalidCrd>),
    /// Reading CRDs from an API server failed (kubeconfig, connection, a CRD that does not
    /// exist); the message names the server and the CRDs.
    #[error("{0}")]
    Cluster(String),
}

/// A CRD kube-apiserver would refuse, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidCrd {
    pub file: PathBuf,
    pub document: usize,
    pub crd: String,
    /// `field.path: message` in kube-apiserver's words, prefixed with `version <name>: ` when the
    /// path points into one version.
    pub causes: Vec<String>,
}

fn invalid_list(list: &[InvalidCrd]) -> String {
    let mut out = String::new();
    for (i, c) in list.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!(
            "{}: document {}: The CustomResourceDefinition {:?} is invalid (kube-apiserver would refuse to create it):",
            c.file.display(),
            c.document,
            c.crd
        ));
        for cause in &c.causes {
            out.push_str("\n  * ");
            out.push_str(cause);
        }
    }
    out
}

impl Error {
    pub(crate) fn io(path: &Path, source: std::io::Error) -> Error {
        Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }
}

/// One generated resource (a served CRD version), so harnesses can find the Rust type for an apiVersion/kind.
/// Made only by the generator (`#[non_exhaustive]`: new facts about a resource are not breaking changes).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
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
    /// Path of the kind's generated conversion relative to the generated root module
    /// (`samplecontroller::conversion::FooConversion`), when `--emit conversion` made one (the
    /// kind has several generated versions, its storage version among them).
    pub conversion: Option<String>,
}

/// The result of a generation run, in memory.
#[derive(Debug, Clone, Default)]
pub struct Generated {
    /// File path relative to the output directory -> file contents.
    pub files: BTreeMap<PathBuf, String>,
    pub resources: Vec<ResourceInfo>,
    /// Non-fatal problems (skipped documents, violations that do not reach the code, duplicate
    /// keys, a CRD defined twice or serving no version, ...), each naming the file and the
    /// document index or `line:column`.
    pub warnings: Vec<String>,
    /// Files written by [`Builder::generate`] (those whose bytes changed).
    pub written: Vec<PathBuf>,
    /// Stale files removed by [`Builder::generate`]: they carry the generated header but are no
    /// longer produced (a CRD or version was removed). Other files are never touched.
    pub removed: Vec<PathBuf>,
}

/// Entry point for `build.rs` and for programs.
#[derive(Debug, Clone, Default)]
pub struct Builder {
    inputs: Vec<PathBuf>,
    out_dir: Option<PathBuf>,
    options: Options,
    sources: Vec<(PathBuf, String)>,
}

/// Name of the include file [`Builder::generate`] writes into `OUT_DIR` by default.
pub const INCLUDE_FILE: &str = "kube_codegen.rs";

impl Builder {
    pub fn new() -> Self {
        Self::default()
    }
    /// A CRD file or a directory of them (recursive, `*.yaml|*.yml|*.json`); `-` reads stdin.
    pub fn input(mut self, path: impl AsRef<Path>) -> Self {
        self.inputs.push(path.as_ref().to_path_buf());
        self
    }
    /// CRD text given directly; `name` is used in messages and [`ResourceInfo::source`].
    pub fn input_text(mut self, name: impl AsRef<Path>, text: impl Into<String>) -> Self {
        self.sources
            .push((name.as_ref().to_path_buf(), text.into()));
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
        self.options.check_conflicts()?;
        let _rendering = par::Rendering::start();
        let mut warnings = Vec::new();
        let loaded = load::load(&self.inputs, &self.sources, &self.options, &mut warnings)?;
        if loaded.crds.is_empty() {
            return Err(Error::NoCrds {
                skipped: loaded.skipped,
            });
        }
        warnings.extend(loaded.skipped);
        let crds = loaded.crds;
        let lenient = loaded.lenient;
        let model = model::build(&crds, &self.options, &mut warnings)
            .map_err(|e| load::refusal(&lenient, e))?;
        // Last reference besides the model's: the schemas below move out instead of copying.
        drop(crds);
        let files = emit::files(&model, &self.options)?;
        let mut resources = Vec::new();
        for g in model.groups {
            // CRD name -> the path of its kind's conversion.
            let mut conversions = BTreeMap::new();
            if self.options.emit.conversion {
                for k in &g.conversions.kinds {
                    let (vi, ri) = k.versions[0].res;
                    conversions.insert(
                        g.versions[vi].resources[ri].crd_name.clone(),
                        format!("{}::{}::{}", g.module, g.conversions.module, k.conversion),
                    );
                }
            }
            for v in g.versions {
                for r in v.resources {
                    resources.push(ResourceInfo {
                        conversion: conversions.get(&r.crd_name).cloned(),
                        rust_path: format!("{}::{}::{}", g.module, v.module, r.root),
                        crd_name: r.crd_name,
                        source: r.source,
                        group: r.group,
                        version: r.version,
                        kind: r.kind,
                        plural: r.plural,
                        namespaced: r.namespaced,
                        schema: std::sync::Arc::try_unwrap(r.schema)
                            .unwrap_or_else(|shared| (*shared).clone()),
                    });
                }
            }
        }
        Ok(Generated {
            files,
            resources,
            warnings,
            written: Vec::new(),
            removed: Vec::new(),
        })
    }
    /// Generates and writes into `out_dir` (default `$OUT_DIR`, where the default layout is the
    /// single include file [`INCLUDE_FILE`]), only files whose bytes changed. Inside a build
    /// script it prints `cargo:rerun-if-changed` for every input file and directory. In the
    /// module-tree layout, generated files (recognised by their header) that are no longer
    /// produced are removed. With `check`
    /// set, writes nothing and returns [`Error::Check`] with a diff when files differ or are stale.
    pub fn generate(mut self) -> Result<Generated, Error> {
        let in_build_script = std::env::var_os("OUT_DIR").is_some();
        let dir = match &self.out_dir {
            Some(d) => d.clone(),
            None => {
                let d = std::env::var_os("OUT_DIR").ok_or(Error::OutDirUnset)?;
                if self.options.single_file.is_none() && self.options.crate_name.is_none() {
                    self.options.single_file = Some(INCLUDE_FILE.to_string());
                }
                PathBuf::from(d)
            }
        };
        if in_build_script {
            let files = kube_codegen_crd::read::expand_inputs(&self.inputs)?;
            for f in files
                .iter()
                .chain(&kube_codegen_crd::read::input_dirs(&self.inputs))
            {
                if f.as_os_str() != kube_codegen_crd::read::STDIN {
                    println!("cargo:rerun-if-changed={}", f.display());
                }
            }
        }
        let mut generated = self.render()?;
        // Only the module tree owns its directory; a single file or crate may share it.
        let owns_dir = self.options.single_file.is_none() && self.options.crate_name.is_none();
        if self.options.check {
            if let Some(diff) = render::check(&dir, &generated.files, owns_dir) {
                return Err(Error::Check { diff });
            }
            return Ok(generated);
        }
        generated.written = render::write_changed(&dir, &generated.files)?;
        if owns_dir {
            generated.removed = render::remove_stale(&dir, &generated.files)?;
        }
        Ok(generated)
    }
}

/// The one definition of a golden: the single-file output for one CRD file, with the options of
/// its `# kube-codegen-flags: ...` header line (if any).
pub fn render_golden(path: &Path) -> Result<String, Error> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let mut options = Options::default();
    for line in text.lines() {
        if let Some(flags) = line.trim().strip_prefix("# kube-codegen-flags:") {
            let args: Vec<&str> = flags.split_whitespace().collect();
            options = Options::from_args(&args)?;
            break;
        }
    }
    options.crate_name = None;
    options.check = false;
    let name = "golden.rs".to_string();
    options.single_file = Some(name.clone());
    let g = Builder::new()
        .input_text(path, text)
        .options(options)
        .render()?;
    g.files
        .get(Path::new(&name))
        .cloned()
        .ok_or_else(|| Error::Other("single-file output missing".into()))
}
