//! [`Converter`]: the registry of [`KindConversion`]s and the `ConversionReview` logic.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::metrics::{ConversionMetrics, NoopConversionMetrics, VersionPair};
use super::{ConversionError, KindConversion};

/// `apiVersion` of the `ConversionReview` kube-apiserver sends since 1.16.
const REVIEW_V1: &str = "apiextensions.k8s.io/v1";
/// `apiVersion` of the `ConversionReview` older servers (and `conversionReviewVersions:
/// ["v1beta1"]`) send; it is answered in the same version.
const REVIEW_V1BETA1: &str = "apiextensions.k8s.io/v1beta1";
const REVIEW_KIND: &str = "ConversionReview";

/// A request body that is not a `ConversionReview` this webhook can answer (served as HTTP 400).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct BadReview(pub String);

/// A registry of [`KindConversion`]s by group and kind that answers `ConversionReview`s (see
/// the [module documentation](super) for what kube-apiserver expects of the answer).
///
/// Cheap to share: wrap it in an `Arc` (the webhook server does) and call it from any thread.
pub struct Converter {
    /// group -> kind -> conversion.
    kinds: HashMap<String, HashMap<String, Arc<dyn KindConversion>>>,
    metrics: Arc<dyn ConversionMetrics>,
}

impl Default for Converter {
    fn default() -> Self {
        Converter::new()
    }
}

impl fmt::Debug for Converter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut kinds: Vec<String> = self
            .kinds
            .iter()
            .flat_map(|(g, ks)| ks.keys().map(move |k| format!("{k}.{g}")))
            .collect();
        kinds.sort();
        f.debug_struct("Converter").field("kinds", &kinds).finish()
    }
}

impl Converter {
    /// An empty registry with no metrics.
    pub fn new() -> Self {
        Converter {
            kinds: HashMap::new(),
            metrics: Arc::new(NoopConversionMetrics),
        }
    }

    /// Registers `conversion` (builder style); see [`Converter::register`].
    pub fn with(mut self, conversion: impl KindConversion) -> Self {
        self.register(Arc::new(conversion));
        self
    }

    /// Registers `conversion` for its group and kind, replacing (and returning) one registered
    /// before for the same group and kind.
    pub fn register(
        &mut self,
        conversion: Arc<dyn KindConversion>,
    ) -> Option<Arc<dyn KindConversion>> {
        self.kinds
            .entry(conversion.group().to_owned())
            .or_default()
            .insert(conversion.kind().to_owned(), conversion)
    }

    /// Records conversions, failures and review latencies in `metrics`.
    pub fn with_metrics(mut self, metrics: Arc<dyn ConversionMetrics>) -> Self {
        self.metrics = metrics;
        self
    }

    /// The conversion registered for `group` and `kind`.
    pub fn get(&self, group: &str, kind: &str) -> Option<&Arc<dyn KindConversion>> {
        self.kinds.get(group)?.get(kind)
    }

    /// Answers a `ConversionReview` body (JSON) with the response review's JSON, in the
    /// request's `apiVersion`. A failed conversion is an `Ok` answer with `status: Failure`;
    /// `Err` means the body is not a `ConversionReview` (no JSON, no `request`, another
    /// `apiVersion` or `kind`).
    pub fn review_json(&self, body: &[u8]) -> Result<Vec<u8>, BadReview> {
        let started = Instant::now();
        let review: ReviewIn<'_> = serde_json::from_slice(body)
            .map_err(|e| BadReview(format!("cannot decode the ConversionReview: {e}")))?;
        let api_version = check_type(review.api_version.as_deref(), review.kind.as_deref())?;
        let request = review
            .request
            .ok_or_else(|| BadReview("the ConversionReview has no request".to_owned()))?;
        let objects = request.objects.unwrap_or_default();
        let mut stats = Stats::default();
        let outcome = self.convert_texts(&request.desired_api_version, &objects, &mut stats);
        let (message, converted) = match &outcome {
            Ok(converted) => (None, Some(converted.as_slice())),
            Err(message) => (Some(message.as_str()), None),
        };
        let answer = ReviewOut {
            api_version,
            kind: REVIEW_KIND,
            response: ResponseOut {
                uid: &request.uid,
                result: StatusOut {
                    status: if outcome.is_ok() {
                        "Success"
                    } else {
                        "Failure"
                    },
                    message,
                },
                converted_objects: converted,
            },
        };
        // The answer is about the size of the request: one allocation instead of a dozen
        // doublings (each a copy, and with glibc a consolidation of freed chunks).
        let mut bytes = Vec::with_capacity(body.len() + body.len() / 8 + 256);
        serde_json::to_writer(&mut bytes, &answer)
            .map_err(|e| BadReview(format!("cannot encode the answer: {e}")))?;
        self.record(&request.desired_api_version, &stats, started);
        Ok(bytes)
    }

    /// Answers a `ConversionReview` decoded as kube's type, in the request's `apiVersion`
    /// (`apiextensions.k8s.io/v1` when it has none). A review with no `request` is a
    /// [`BadReview`]. The same conversion as [`Converter::review_json`]; C1 measured the two
    /// within noise of each other (kube's type buffers the review for its flattened
    /// `TypeMeta`, which costs less than expected), so use whichever your server decodes.
    pub fn review(
        &self,
        review: kube::core::conversion::ConversionReview,
    ) -> Result<kube::core::conversion::ConversionReview, BadReview> {
        use kube::core::Status;
        use kube::core::conversion::{ConversionRequest, ConversionResponse};
        let started = Instant::now();
        let mut types = review.types.clone();
        if types.api_version.is_empty() {
            types.api_version = REVIEW_V1.to_owned();
        }
        if types.kind.is_empty() {
            types.kind = REVIEW_KIND.to_owned();
        }
        check_type(Some(&types.api_version), Some(&types.kind))?;
        let mut request = ConversionRequest::from_review(review)
            .map_err(|_| BadReview("the ConversionReview has no request".to_owned()))?;
        let mut objects = std::mem::take(&mut request.objects);
        let desired = std::mem::take(&mut request.desired_api_version);
        request.types = Some(types);
        let mut stats = Stats::default();
        let outcome = self.convert_objects(&desired, &mut objects, &mut stats);
        let response = ConversionResponse::for_request(request);
        let response = match outcome {
            Ok(()) => response.success(objects),
            Err(message) => response.failure(Status::failure(&message, "")),
        };
        self.record(&desired, &stats, started);
        Ok(response.into_review())
    }

    /// Converts every object of a review decoded from bytes: through
    /// [`KindConversion::convert_text`] where the conversion has it, else decoded and
    /// converted as [`Converter::review`] does. On failure, the message naming the first
    /// object that failed.
    fn convert_texts<'b>(
        &self,
        desired: &str,
        objects: &[&'b RawValue],
        stats: &mut Stats,
    ) -> Result<Vec<Converted<'b>>, String> {
        let target = Desired::parse(desired, stats)?;
        let mut last: Option<(&str, &str, &Arc<dyn KindConversion>)> = None;
        let mut out = Vec::with_capacity(objects.len());
        // Once an object went the `Value` way (its conversion has no text path), the rest do
        // too, sparing each a look at its head first: a review holds one kind, as a rule.
        let mut by_value = false;
        for (index, raw) in objects.iter().enumerate() {
            let text = if by_value {
                None
            } else {
                self.convert_text(raw, &target, &mut last, stats)
            };
            by_value |= text.is_none();
            let converted = match text {
                Some(Ok(c)) => Ok(c),
                Some(Err(failure)) => Err(failure),
                None => match serde_json::from_str::<Value>(raw.get()) {
                    Ok(object) => self
                        .convert_one(object, &target, &mut last, stats)
                        .map(Converted::Value),
                    Err(e) => Err(Failure::early(
                        "",
                        None,
                        format!("it does not decode: {e}"),
                        target.version,
                    )),
                },
            };
            match converted {
                Ok(c) => out.push(c),
                Err(failure) => return Err((*failure).report(index, desired, stats)),
            }
        }
        Ok(out)
    }

    /// One object through [`KindConversion::convert_text`], when its head is well formed and
    /// its conversion has that path; `None` sends it the `Value` way (which also words every
    /// error about a malformed object).
    fn convert_text<'a, 'b>(
        &'a self,
        raw: &'b RawValue,
        target: &Desired<'_>,
        last: &mut Option<(&'a str, &'a str, &'a Arc<dyn KindConversion>)>,
        stats: &mut Stats,
    ) -> Option<Result<Converted<'b>, Box<Failure>>> {
        let (desired_group, desired_version) = (target.group, target.version);
        let text = raw.get();
        // Escaped or odd values go the `Value` way, which reads and words them.
        let [api_version, kind] = super::text::leading(text, ["apiVersion", "kind"]);
        let kind: &str = serde_json::from_str(kind?.get()).ok()?;
        let api_version: &str = serde_json::from_str(api_version?.get()).ok()?;
        let (group, version) = split_api_version(api_version)?;
        if kind.is_empty() {
            return None;
        }
        if group != desired_group {
            return None;
        }
        let conversion = self.lookup(group, kind, last)?;
        let versions = conversion.versions();
        let from = versions.iter().position(|v| *v == version)?;
        let to = versions.iter().position(|v| *v == desired_version)?;
        if from == to {
            stats.count(conversion, from, to);
            return Some(Ok(Converted::Same(raw)));
        }
        let result = conversion.convert_text(text, version, desired_version)?;
        Some(match result {
            Ok(converted) => {
                stats.count(conversion, from, to);
                Ok(Converted::Text(converted))
            }
            Err(e) => Err(Box::new(Failure {
                kind: conversion.kind().to_owned(),
                meta: super::text::identity(text),
                pair: FailedPair {
                    group: group.to_owned(),
                    kind: conversion.kind().to_owned(),
                    from: versions[from].to_owned(),
                    to: desired_version.to_owned(),
                },
                cause: e.to_string(),
            })),
        })
    }

    /// The conversion registered for `group` and `kind`, through `last` (a review's objects
    /// are almost always of one kind).
    fn lookup<'a>(
        &'a self,
        group: &str,
        kind: &str,
        last: &mut Option<(&'a str, &'a str, &'a Arc<dyn KindConversion>)>,
    ) -> Option<&'a Arc<dyn KindConversion>> {
        match last {
            Some((g, k, c)) if *g == group && *k == kind => Some(*c),
            _ => {
                let (k, c) = self.kinds.get(group)?.get_key_value(kind)?;
                *last = Some((c.group(), k.as_str(), c));
                Some(c)
            }
        }
    }

    /// Converts every object in place; on failure, the message naming the first object that
    /// failed (and `objects` in an unspecified state).
    fn convert_objects(
        &self,
        desired: &str,
        objects: &mut [Value],
        stats: &mut Stats,
    ) -> Result<(), String> {
        let target = Desired::parse(desired, stats)?;
        let mut last: Option<(&str, &str, &Arc<dyn KindConversion>)> = None;
        for (index, slot) in objects.iter_mut().enumerate() {
            let object = std::mem::take(slot);
            match self.convert_one(object, &target, &mut last, stats) {
                Ok(converted) => *slot = converted,
                Err(failure) => return Err((*failure).report(index, desired, stats)),
            }
        }
        Ok(())
    }

    fn convert_one<'a>(
        &'a self,
        object: Value,
        target: &Desired<'_>,
        last: &mut Option<(&'a str, &'a str, &'a Arc<dyn KindConversion>)>,
        stats: &mut Stats,
    ) -> Result<Value, Box<Failure>> {
        let Desired {
            api_version: desired,
            group: desired_group,
            version: desired_version,
        } = *target;
        let Value::Object(map) = object else {
            return Err(Failure::early(
                "",
                None,
                "it is not a JSON object".to_owned(),
                desired_version,
            ));
        };
        let kind = match map.get("kind") {
            Some(Value::String(k)) if !k.is_empty() => k.as_str(),
            _ => {
                return Err(Failure::early(
                    "",
                    map.get("metadata"),
                    "it has no kind".to_owned(),
                    desired_version,
                ));
            }
        };
        let Some((group, version)) = map
            .get("apiVersion")
            .and_then(Value::as_str)
            .and_then(split_api_version)
        else {
            return Err(Failure::early(
                kind,
                map.get("metadata"),
                "it has no valid apiVersion".to_owned(),
                desired_version,
            ));
        };
        let fail = |cause: String| {
            Box::new(Failure {
                kind: kind.to_owned(),
                meta: identity(map.get("metadata")),
                pair: FailedPair {
                    group: group.to_owned(),
                    kind: kind.to_owned(),
                    from: version.to_owned(),
                    to: desired_version.to_owned(),
                },
                cause,
            })
        };
        if group != desired_group {
            return Err(fail(format!(
                "its group {group:?} is not the group of {desired:?}"
            )));
        }
        let Some(conversion) = self.lookup(group, kind, last) else {
            return Err(fail(format!(
                "no conversion is registered for kind {kind} in group {group:?} \
                 (registered: {})",
                self.registered()
            )));
        };
        let versions = conversion.versions();
        let Some(from) = versions.iter().position(|v| *v == version) else {
            return Err(fail(
                ConversionError::UnknownVersion {
                    kind: kind.to_owned(),
                    api_version: format!("{group}/{version}"),
                }
                .to_string(),
            ));
        };
        let Some(to) = versions.iter().position(|v| *v == desired_version) else {
            return Err(fail(
                ConversionError::UnknownVersion {
                    kind: kind.to_owned(),
                    api_version: desired.to_owned(),
                }
                .to_string(),
            ));
        };
        if from == to {
            // Already in the desired version: kube-apiserver does not send these, other
            // callers may; nothing to convert.
            stats.count(conversion, from, to);
            return Ok(Value::Object(map));
        }
        // `managedFields` (most of the metadata's bytes) is moved aside, not copied: the
        // conversion does not see it, and it is put back as it was.
        let mut map = map;
        let managed_fields = match map.get_mut("metadata") {
            Some(Value::Object(meta)) => meta.remove_entry("managedFields"),
            _ => None,
        };
        // The rest of the input's metadata but labels and annotations, to restore after
        // (unless the conversion keeps it itself: then only the name and namespace, to name the
        // object in a failure).
        let keeps = conversion.keeps_metadata();
        let kept = match map.get("metadata") {
            Some(Value::Object(meta)) if keeps => ["name", "namespace"]
                .into_iter()
                .filter_map(|k| meta.get_key_value(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Map<String, Value>>(),
            Some(Value::Object(meta)) => meta
                .iter()
                .filter(|(k, _)| *k != "labels" && *k != "annotations")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect::<Map<String, Value>>(),
            _ => Map::new(),
        };
        let kind_owned = conversion.kind();
        let failure = |cause: String, meta: &Map<String, Value>| {
            Box::new(Failure {
                kind: kind_owned.to_owned(),
                meta: identity_of(meta),
                pair: FailedPair {
                    group: desired_group.to_owned(),
                    kind: kind_owned.to_owned(),
                    from: versions[from].to_owned(),
                    to: desired_version.to_owned(),
                },
                cause,
            })
        };
        let converted = match conversion.convert(Value::Object(map), desired_version) {
            Ok(c) => c,
            Err(e) => return Err(failure(e.to_string(), &kept)),
        };
        let Value::Object(mut out) = converted else {
            return Err(failure(
                "the conversion returned no JSON object".to_owned(),
                &kept,
            ));
        };
        match out.get("apiVersion") {
            Some(Value::String(v)) if v == desired => {}
            other => {
                let cause = format!(
                    "the conversion returned apiVersion {}, not {desired}",
                    show(other)
                );
                return Err(failure(cause, &kept));
            }
        }
        match out.get("kind") {
            Some(Value::String(k)) if k == kind_owned => {}
            other => {
                let cause = format!(
                    "the conversion returned kind {}, not {kind_owned}",
                    show(other)
                );
                return Err(failure(cause, &kept));
            }
        }
        let (meta_key, mut meta) = match out.remove_entry("metadata") {
            Some((key, Value::Object(mut converted_meta))) if keeps => {
                // The conversion's metadata is the input's, with the converted labels and
                // annotations.
                for field in ["labels", "annotations"] {
                    match converted_meta.get(field) {
                        None => {}
                        Some(Value::Null) => {
                            converted_meta.remove(field);
                        }
                        Some(v) => {
                            if let Err(cause) = string_map(field, v) {
                                return Err(failure(cause, &kept));
                            }
                        }
                    }
                }
                (key, converted_meta)
            }
            Some((key, Value::Object(mut converted_meta))) => {
                let mut meta = kept;
                for field in ["labels", "annotations"] {
                    match converted_meta.remove_entry(field) {
                        None | Some((_, Value::Null)) => {}
                        Some((field_key, v)) => {
                            if let Err(cause) = string_map(field, &v) {
                                return Err(failure(cause, &meta));
                            }
                            meta.insert(field_key, v);
                        }
                    }
                }
                (key, meta)
            }
            None => {
                let cause = "the conversion returned no metadata".to_owned();
                return Err(failure(cause, &kept));
            }
            Some(_) => {
                let cause = "the conversion returned metadata that is not an object".to_owned();
                return Err(failure(cause, &kept));
            }
        };
        if let Some((key, value)) = managed_fields {
            meta.insert(key, value);
        }
        out.insert(meta_key, Value::Object(meta));
        stats.count(conversion, from, to);
        Ok(Value::Object(out))
    }

    fn registered(&self) -> String {
        let mut kinds: Vec<String> = self
            .kinds
            .iter()
            .flat_map(|(g, ks)| ks.keys().map(move |k| format!("{k}.{g}")))
            .collect();
        if kinds.is_empty() {
            return "none".to_owned();
        }
        kinds.sort();
        kinds.join(", ")
    }

    fn record(&self, desired: &str, stats: &Stats, started: Instant) {
        let to = split_api_version(desired).map_or("", |(_, v)| v);
        // Objects converted before a failure are not answered: not counted.
        let converted = if stats.failure.is_none() {
            stats.converted.as_slice()
        } else {
            &[]
        };
        for c in converted {
            let versions = c.conversion.versions();
            self.metrics.converted(
                &VersionPair {
                    group: c.conversion.group(),
                    kind: c.conversion.kind(),
                    from: versions[c.from],
                    to: versions[c.to],
                },
                c.objects,
            );
        }
        let seconds = started.elapsed().as_secs_f64();
        match &stats.failure {
            Some(f) => {
                let pair = VersionPair {
                    group: &f.group,
                    kind: &f.kind,
                    from: &f.from,
                    to: &f.to,
                };
                self.metrics.failed(&pair);
                self.metrics.review(&pair, seconds, false);
            }
            None => {
                let pair = match stats.converted.as_slice() {
                    [] => VersionPair {
                        group: "",
                        kind: "",
                        from: "",
                        to,
                    },
                    [first, rest @ ..] => VersionPair {
                        group: first.conversion.group(),
                        kind: first.conversion.kind(),
                        from: if rest.iter().all(|c| c.from == first.from) {
                            first.conversion.versions()[first.from]
                        } else {
                            "mixed"
                        },
                        to,
                    },
                };
                self.metrics.review(&pair, seconds, true);
            }
        }
    }
}

/// Objects converted in one review, by conversion and version pair (few entries: almost
/// always one).
#[derive(Default)]
struct Stats {
    converted: Vec<Counted>,
    failure: Option<FailedPair>,
}

struct Counted {
    conversion: Arc<dyn KindConversion>,
    from: usize,
    to: usize,
    objects: u64,
}

impl Stats {
    fn count(&mut self, conversion: &Arc<dyn KindConversion>, from: usize, to: usize) {
        if let Some(c) = self
            .converted
            .iter_mut()
            .find(|c| Arc::ptr_eq(&c.conversion, conversion) && c.from == from && c.to == to)
        {
            c.objects += 1;
            return;
        }
        self.converted.push(Counted {
            conversion: conversion.clone(),
            from,
            to,
            objects: 1,
        });
    }
}

#[derive(Default)]
struct FailedPair {
    group: String,
    kind: String,
    from: String,
    to: String,
}

struct Failure {
    kind: String,
    /// The object's namespace and name.
    meta: (String, String),
    pair: FailedPair,
    cause: String,
}

/// A review's `desiredAPIVersion`, split.
#[derive(Clone, Copy)]
struct Desired<'a> {
    api_version: &'a str,
    group: &'a str,
    version: &'a str,
}

impl<'a> Desired<'a> {
    /// Splits `api_version`; a malformed one fails the review (recorded in `stats`).
    fn parse(api_version: &'a str, stats: &mut Stats) -> Result<Self, String> {
        match split_api_version(api_version) {
            Some((group, version)) => Ok(Desired {
                api_version,
                group,
                version,
            }),
            None => {
                stats.failure = Some(FailedPair::default());
                Err(format!("invalid desiredAPIVersion {api_version:?}"))
            }
        }
    }
}

impl Failure {
    /// The review's message for object `index` failing, its version pair recorded in `stats`.
    fn report(self, index: usize, desired: &str, stats: &mut Stats) -> String {
        let who = describe(index, &self.kind, &self.meta);
        stats.failure = Some(self.pair);
        format!("cannot convert {who} to {desired}: {}", self.cause)
    }

    fn early(kind: &str, meta: Option<&Value>, cause: String, to: &str) -> Box<Failure> {
        Box::new(Failure {
            kind: kind.to_owned(),
            meta: identity(meta),
            pair: FailedPair {
                kind: kind.to_owned(),
                to: to.to_owned(),
                ..FailedPair::default()
            },
            cause,
        })
    }
}

/// Checks that the conversion's `metadata.<field>` is a map of strings.
fn string_map(field: &str, value: &Value) -> Result<(), String> {
    match value {
        Value::Object(m) => match m.iter().find(|(_, v)| !v.is_string()) {
            Some((key, _)) => Err(format!(
                "the conversion returned a {field} value for {key:?} that is not a string"
            )),
            None => Ok(()),
        },
        _ => Err(format!(
            "the conversion returned metadata.{field} that is not an object"
        )),
    }
}

fn identity(meta: Option<&Value>) -> (String, String) {
    match meta {
        Some(Value::Object(m)) => identity_of(m),
        _ => Default::default(),
    }
}

fn identity_of(meta: &Map<String, Value>) -> (String, String) {
    let field = |k: &str| meta.get(k).and_then(Value::as_str).unwrap_or("").to_owned();
    (field("namespace"), field("name"))
}

/// `object 3 (Foo default/foo-3)`.
fn describe(index: usize, kind: &str, (namespace, name): &(String, String)) -> String {
    let kind = if kind.is_empty() { "object" } else { kind };
    match (namespace.is_empty(), name.is_empty()) {
        (_, true) => format!("object {index} ({kind} with no name)"),
        (true, false) => format!("object {index} ({kind} {name})"),
        (false, false) => format!("object {index} ({kind} {namespace}/{name})"),
    }
}

fn show(value: Option<&Value>) -> String {
    match value {
        None => "none".to_owned(),
        Some(v) => v.to_string(),
    }
}

/// `group/version` -> (group, version); `v1` -> ("", "v1"). None when empty or malformed.
fn split_api_version(api_version: &str) -> Option<(&str, &str)> {
    let (group, version) = match api_version.split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", api_version),
    };
    (!version.is_empty() && !version.contains('/')).then_some((group, version))
}

/// The review's `apiVersion` to answer in, after checking its type.
fn check_type<'a>(api_version: Option<&'a str>, kind: Option<&str>) -> Result<&'a str, BadReview> {
    let api_version = match api_version {
        Some(v @ (REVIEW_V1 | REVIEW_V1BETA1)) => v,
        Some(other) => {
            return Err(BadReview(format!(
                "unsupported ConversionReview apiVersion {other:?} (expected {REVIEW_V1} or \
                 {REVIEW_V1BETA1})"
            )));
        }
        None => {
            return Err(BadReview(
                "the ConversionReview has no apiVersion".to_owned(),
            ));
        }
    };
    match kind {
        Some(REVIEW_KIND) => Ok(api_version),
        Some(other) => Err(BadReview(format!(
            "expected kind {REVIEW_KIND}, got {other:?}"
        ))),
        None => Err(BadReview("the ConversionReview has no kind".to_owned())),
    }
}

#[derive(Deserialize)]
struct ReviewIn<'a> {
    #[serde(rename = "apiVersion", borrow, default)]
    api_version: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    request: Option<RequestIn<'a>>,
}

#[derive(Deserialize)]
struct RequestIn<'a> {
    #[serde(borrow)]
    uid: Cow<'a, str>,
    #[serde(rename = "desiredAPIVersion", borrow)]
    desired_api_version: Cow<'a, str>,
    #[serde(borrow, default)]
    objects: Option<Vec<&'a RawValue>>,
}

/// One converted object of a review decoded from bytes.
#[derive(Serialize)]
#[serde(untagged)]
enum Converted<'b> {
    /// Already in the desired version: the input as it came.
    Same(&'b RawValue),
    /// From [`KindConversion::convert_text`].
    Text(Box<RawValue>),
    /// From [`KindConversion::convert`].
    Value(Value),
}

#[derive(Serialize)]
struct ReviewOut<'a> {
    #[serde(rename = "apiVersion")]
    api_version: &'a str,
    kind: &'a str,
    response: ResponseOut<'a>,
}

#[derive(Serialize)]
struct ResponseOut<'a> {
    uid: &'a str,
    result: StatusOut<'a>,
    #[serde(rename = "convertedObjects", skip_serializing_if = "Option::is_none")]
    converted_objects: Option<&'a [Converted<'a>]>,
}

#[derive(Serialize)]
struct StatusOut<'a> {
    status: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    message: Option<&'a str>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_api_versions() {
        assert_eq!(split_api_version("a.b/v1"), Some(("a.b", "v1")));
        assert_eq!(split_api_version("v1"), Some(("", "v1")));
        assert_eq!(split_api_version("a/"), None);
        assert_eq!(split_api_version(""), None);
        assert_eq!(split_api_version("a/b/c"), None);
    }

    #[test]
    fn describes_objects() {
        let id = |ns: &str, n: &str| (ns.to_owned(), n.to_owned());
        assert_eq!(describe(3, "Foo", &id("ns", "a")), "object 3 (Foo ns/a)");
        assert_eq!(describe(0, "Foo", &id("", "a")), "object 0 (Foo a)");
        assert_eq!(
            describe(1, "", &id("", "")),
            "object 1 (object with no name)"
        );
    }
}
