//! CustomResourceDefinitions for the whole workspace: the generator, the in-memory API server and
//! xtask read, normalise and validate CRDs here, once.
//!
//! - [`read`]: files, directories and stdin into documents, YAML read as kubectl reads it
//!   (YAML 1.1 scalars, as sigs.k8s.io/yaml resolves them), every syntax error located.
//! - [`model`]: the CRD normalised to the `apiextensions.k8s.io/v1` shape (v1beta1 converted),
//!   printer columns, scale paths.
//! - [`schema`]: the `JSONSchemaProps` node tree with JSON pointers.
//! - [`validate`]: what kube-apiserver 1.35 checks when a CRD is created, in its words.
//! - [`object`]: what it checks on every write of a custom resource: pruning, defaulting, the
//!   OpenAPI value checks, list types and the `x-kubernetes-validations` CEL rules.

pub mod cases;
mod cause;
pub mod cel_words;
mod error;
pub mod gofmt;
pub mod k8s_validation;
pub mod model;
pub mod object;
pub mod read;
pub mod schema;
pub mod shard;
pub mod validate;

pub use error::Error;
pub use model::{Classified, Crd, CrdVersion, PrinterColumn, Scale, classify};
pub use schema::Schema;

pub use cause::{Cause, invalid_message};

/// The Kubernetes version whose rules this crate applies (`major.minor`): CRDs are validated as
/// kube-apiserver of this version validates them on create, and objects as it validates them on
/// every write.
pub const KUBERNETES_VERSION: &str = "1.35";
