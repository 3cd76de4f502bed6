//! Conversions between the served versions of one kind (what controller-runtime calls
//! Hub/Convertible), and the conversion webhook kube-apiserver calls for them.
//!
//! Generated code implements [`KindConversion`] for every kind that serves more than one
//! version: objects travel as JSON, so the webhook needs no type of its own and one webhook
//! serves every kind registered with it.
//!
//! [`Converter`] is that webhook's logic, with no transport: a registry of conversions by group
//! and kind that answers a `ConversionReview` (`apiextensions.k8s.io/v1`, or `v1beta1`, answered
//! in the request's version) as kube-apiserver expects it:
//!
//! - the response has the request's `uid`, and on success `convertedObjects` in the same count
//!   and order as `objects`, each with `apiVersion` equal to `desiredAPIVersion`;
//! - each object's `metadata` is the input's except `labels` and `annotations`, which come
//!   from the conversion: the rest is restored from the input, so a conversion that changes
//!   a name, namespace or uid cannot reach the server (kube-apiserver does the same restore and
//!   refuses a changed name, namespace, uid or kind);
//! - the conversion sees the object whole but for `metadata.managedFields`, which is moved
//!   aside and put back as it was (it is the bulk of most objects' metadata, and the server
//!   tracks it per version itself);
//! - any failure (an object of a kind not registered, a version the kind does not serve, a
//!   refused conversion, a result of another kind or apiVersion) answers
//!   `result: {status: Failure, message}` with no `convertedObjects`; the message names the
//!   object (index, kind, namespace/name) and the cause;
//! - a body that is not a `ConversionReview` is a [`BadReview`] (HTTP 400 when served).
//!
//! [`Converter::review_json`] works on bytes (its own lean serde types, each object kept as
//! its JSON text: a conversion with [`KindConversion::convert_text`], as every generated one
//! has, decodes it straight into its type and encodes the answer straight from the converted
//! one); [`Converter::review`] on `kube::core::conversion::ConversionReview` for code that
//! already decodes kube's types. Metrics per kind and version pair go to a
//! [`ConversionMetrics`] (a Prometheus exporter behind the `prometheus` feature).
//!
//! Serving it (feature `webhook`): [`handle`] answers an `http::Request` in an existing
//! hyper/axum/tower server, [`Router`] is a `tower::Service`, and
//! [`WebhookServer`] is a standalone HTTPS server whose certificate files are reloaded when they
//! change. See [`crate::webhook`] for how admission webhooks fit beside it.
//!
//! ```
//! use kube_codegen_runtime::conversion::{ConversionError, Converter, KindConversion};
//! use serde_json::{Value, json};
//!
//! /// `v1` has `spec.size`, `v2` (the hub) calls it `spec.replicas`.
//! struct Foo;
//! impl KindConversion for Foo {
//!     fn group(&self) -> &str { "example.com" }
//!     fn kind(&self) -> &str { "Foo" }
//!     fn versions(&self) -> &[&str] { &["v2", "v1"] }
//!     fn convert(&self, mut object: Value, version: &str) -> Result<Value, ConversionError> {
//!         let (from, to) = if version == "v2" { ("size", "replicas") } else { ("replicas", "size") };
//!         if let Some(spec) = object.get_mut("spec").and_then(Value::as_object_mut) {
//!             if let Some(v) = spec.remove(from) {
//!                 spec.insert(to.to_owned(), v);
//!             }
//!         }
//!         object["apiVersion"] = Value::String(format!("example.com/{version}"));
//!         Ok(object)
//!     }
//! }
//!
//! let converter = Converter::new().with(Foo);
//! let review = json!({
//!     "apiVersion": "apiextensions.k8s.io/v1",
//!     "kind": "ConversionReview",
//!     "request": {
//!         "uid": "705ab4f5-6393-11e8-b7cc-42010a800002",
//!         "desiredAPIVersion": "example.com/v2",
//!         "objects": [{
//!             "apiVersion": "example.com/v1", "kind": "Foo",
//!             "metadata": {"name": "a", "namespace": "default"},
//!             "spec": {"size": 3}
//!         }]
//!     }
//! });
//! let answer = converter.review_json(&serde_json::to_vec(&review).unwrap()).unwrap();
//! let answer: Value = serde_json::from_slice(&answer).unwrap();
//! assert_eq!(answer["response"]["result"]["status"], "Success");
//! assert_eq!(answer["response"]["convertedObjects"][0]["spec"]["replicas"], 3);
//! ```

mod converter;
pub mod metrics;

#[cfg(feature = "webhook")]
pub use crate::webhook::{Router, WebhookServer, WebhookServerBuilder, handle};
pub use converter::{BadReview, Converter};
#[cfg(feature = "prometheus")]
pub use metrics::PrometheusConversionMetrics;
pub use metrics::{ConversionMetrics, NoopConversionMetrics, VersionPair};

pub mod hub;
mod reuse;
mod splice;
mod text;

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
    /// Whether [`KindConversion::convert`] always gives `metadata` back exactly as it was
    /// given but for `labels` and `annotations`, as [`hub::convert`] (and so every generated
    /// conversion) does. The [`Converter`] otherwise restores the rest of the metadata from a
    /// copy it keeps, so that a conversion cannot change a name, namespace or uid; a conversion
    /// that keeps it spares that copy. `false` unless overridden.
    fn keeps_metadata(&self) -> bool {
        false
    }
    /// [`KindConversion::convert`] from and to JSON text, `object` being of version `from`:
    /// `None` (the default) when the conversion has no such path, and the [`Converter`] then
    /// decodes the object and calls `convert`. Generated conversions answer through
    /// [`hub::convert_text`], which decodes the object straight into its version's type, with
    /// no `serde_json::Value` in between. The result is trusted as `convert`'s is when
    /// [`KindConversion::keeps_metadata`] holds: `apiVersion` `group/to`, the same kind, the
    /// metadata as given but labels and annotations.
    fn convert_text(
        &self,
        object: &str,
        from: &str,
        to: &str,
    ) -> Option<Result<Box<serde_json::value::RawValue>, ConversionError>> {
        let _ = (object, from, to);
        None
    }
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
