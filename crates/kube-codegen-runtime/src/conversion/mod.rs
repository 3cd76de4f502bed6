//! Conversions between the served versions of one kind (what controller-runtime calls
//! Hub/Convertible), and the conversion webhook kube-apiserver calls for them.
//!
//! Generated code implements [`KindConversion`] for every kind that serves more than one
//! version: objects travel as JSON, so the webhook needs no type of its own and one webhook
//! serves every kind registered with it.

pub mod hub;

/// One kind's conversions between its served versions.
pub trait KindConversion: Send + Sync + 'static {
    /// The kind's API group (`samplecontroller.k8s.io`).
    fn group(&self) -> &str;
    /// The kind (`Foo`).
    fn kind(&self) -> &str;
    /// The versions this converts between, the storage version (the hub) first.
    fn versions(&self) -> &[&str];
    /// Converts `object`, of any of [`KindConversion::versions`], to `version` (a version of
    /// this kind's group, `v1beta1`). `apiVersion` of the result is `group/version`; `metadata`
    /// is kept as it is, except labels and annotations (where fields a version cannot hold may
    /// travel, so round trips lose nothing).
    fn convert(
        &self,
        object: serde_json::Value,
        version: &str,
    ) -> Result<serde_json::Value, ConversionError>;
}

/// Why an object could not be converted.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ConversionError {
    /// The object's `apiVersion`, or the version asked for, is not one this kind serves.
    #[error("{kind} has no version {api_version}")]
    UnknownVersion {
        /// The kind.
        kind: String,
        /// The version or apiVersion asked for.
        api_version: String,
    },
    /// The object does not decode as its version's type.
    #[error("cannot decode {kind} {name} as {api_version}: {message}")]
    Decode {
        /// The kind.
        kind: String,
        /// The object's name (empty when it has none).
        name: String,
        /// The apiVersion it claimed.
        api_version: String,
        /// The decoder's message.
        message: String,
    },
    /// A user-written conversion refused the object.
    #[error("{0}")]
    Refused(String),
}
