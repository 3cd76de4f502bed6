//! What generated conversions (`--emit conversion`) build on: a kind's versions convert through
//! its storage version, the hub, and [`convert`] turns that typed conversion into
//! [`KindConversion::convert`](super::KindConversion::convert) over JSON, losslessly.
//!
//! **Lossless round trips.** Each hop is checked by converting back: after `a -> hub`,
//! [`convert`] converts the hub back to `a` and compares; after `hub -> b`, it converts `b` back to
//! the hub. What did not come back (a field the other version has no place for, a value its type
//! cannot hold) is recorded as JSON Patch operations (RFC 6902 `add`/`remove`) in the annotation
//! [`DATA_ANNOTATION`] of the result, keyed by the version they restore: a spoke's entry is what
//! `hub -> spoke` loses, the hub's entry what the spoke the object is now in lost of the hub.
//! Converting into a version applies its entry and removes it, so `a -> b -> a` (and
//! `a -> b -> c -> a`) gives back the same JSON, and a controller that writes the hub (keeping
//! the annotation, as a read-modify-write does) never erases what a user set through `a`. This is
//! what cluster-api does by hand with its `conversion-data` annotation. The patch restores only
//! paths that did not survive the trip, so changes made in `b` to fields both versions hold
//! win; a list item is restored by index, so a list reordered in between may get an item's
//! lost fields on another item.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
/// The JSON text type of [`convert_text`] (re-exported so generated code names it through
/// this crate).
pub use serde_json::value::RawValue;
use serde_json::{Map, Value};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::ConversionError;

/// The annotation holding what the object's other versions could not hold: a JSON object
/// whose keys are versions (`v1alpha1`) and values JSON Patch operations restoring them.
pub const DATA_ANNOTATION: &str = "kube-codegen.io/conversion-data";

/// A kind whose versions convert through a hub, as generated code describes it (generated
/// `FooConversion` types implement it and forward
/// [`KindConversion::convert`](super::KindConversion::convert) to [`convert`]).
pub trait HubConversion: Send + Sync + 'static {
    /// An object of any of the versions (a generated enum, one variant per version).
    type Object: PartialEq + Serialize;
    /// The API group.
    const GROUP: &'static str;
    /// The kind.
    const KIND: &'static str;
    /// The versions, the hub (storage version) first.
    const VERSIONS: &'static [&'static str];
    /// Decodes `object` as version `VERSIONS[version]`.
    fn decode(&self, version: usize, object: &Value) -> Result<Self::Object, serde_json::Error>;
    /// Encodes `object` (taken: it is no longer needed) over `template`, the object as it came
    /// (its metadata reduced to labels and annotations), whose allocations the result may
    /// reuse. [`convert`] keeps only
    /// `metadata.labels` and `metadata.annotations` of the result (the rest of the metadata
    /// comes back as it was sent), so generated code encodes no other metadata
    /// ([`encode_object`]); this default encodes it all. Either way the result is
    /// `serde_json::to_value`'s.
    fn encode(&self, object: Self::Object, template: Value) -> Result<Value, serde_json::Error> {
        super::reuse::to_value_reusing(&object, template)
    }
    /// Decodes `text` (JSON) as version `VERSIONS[version]`; the default goes through a
    /// `Value`, generated code decodes the type straight from the text.
    fn decode_text(&self, version: usize, text: &str) -> Result<Self::Object, serde_json::Error> {
        let value: Value = serde_json::from_str(text)?;
        self.decode(version, &value)
    }
    /// The object's `apiVersion`, `kind` and metadata, which [`convert_text`] handles itself;
    /// `None` (the default) makes it go through [`convert`].
    fn parts(object: &mut Self::Object) -> Option<Parts<'_>> {
        let _ = object;
        None
    }
    /// Converts `object`, of any version, to the hub (`VERSIONS[0]`), hooks included.
    fn to_hub(&self, object: &Self::Object) -> Result<Self::Object, ConversionError>;
    /// Converts `hub` (converted to the hub first if it is not) to version
    /// `VERSIONS[version]`, hooks included.
    #[allow(clippy::wrong_self_convention)] // `self` holds the hooks; "from the hub" is the point.
    fn from_hub(&self, hub: &Self::Object, version: usize)
    -> Result<Self::Object, ConversionError>;
}

/// One recorded operation (the JSON Patch subset used: `add` sets, creating what is missing
/// on the way; `remove` removes when present).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "lowercase")]
enum Op {
    Add { path: String, value: Value },
    Remove { path: String },
}

/// Reads the value of `T`'s JSON as a `U`: the automatic conversion of a field whose type
/// differs between two versions (`None` when it does not read).
pub fn recode<T: Serialize + ?Sized, U: serde::de::DeserializeOwned>(value: &T) -> Option<U> {
    serde_json::to_value(value)
        .ok()
        .and_then(|v| serde_json::from_value(v).ok())
}

/// Converts `object` to `version` (a version of `C::GROUP`), losslessly: see the module
/// documentation. `metadata` comes back as it was given, except `labels` and `annotations`,
/// which are the converted object's (with [`DATA_ANNOTATION`] set or removed).
pub fn convert<C: HubConversion>(
    conversion: &C,
    mut object: Value,
    version: &str,
) -> Result<Value, ConversionError> {
    let unknown = |api_version: String| ConversionError::UnknownVersion {
        kind: C::KIND.to_owned(),
        api_version,
    };
    let api_version = object
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let from = api_version
        .strip_prefix(C::GROUP)
        .and_then(|v| v.strip_prefix('/'))
        .and_then(|v| C::VERSIONS.iter().position(|x| *x == v))
        .ok_or_else(|| unknown(api_version.to_owned()))?;
    let to = C::VERSIONS
        .iter()
        .position(|x| *x == version)
        .ok_or_else(|| unknown(format!("{}/{version}", C::GROUP)))?;
    if from == to {
        return Ok(object);
    }
    let mut stash = take_stash(&mut object);
    let name = || {
        object
            .get("metadata")
            .and_then(|m| m.get("name"))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned()
    };
    let decode = |version: usize, value: &Value| {
        conversion
            .decode(version, value)
            .map_err(|e| ConversionError::Decode {
                kind: C::KIND.to_owned(),
                name: name(),
                api_version: format!("{}/{}", C::GROUP, C::VERSIONS[version]),
                message: e.to_string(),
            })
    };
    let source = decode(from, &object)?;
    let target = hop(conversion, &source, from, to, &mut stash, &decode)?;
    drop(source);
    // The input is the template of the answer (most of the converted object is the same
    // JSON), its metadata reduced to labels and annotations: the rest waits aside, to be given
    // back as it came.
    let mut sent_meta = None;
    if let Value::Object(o) = &mut object
        && let Some((key, mut meta)) = o.remove_entry("metadata")
    {
        let mut carried = Map::new();
        if let Value::Object(m) = &mut meta {
            for field in ["labels", "annotations"] {
                if let Some((k, v)) = m.remove_entry(field) {
                    carried.insert(k, v);
                }
            }
        }
        o.insert(key, Value::Object(carried));
        sent_meta = Some(meta);
    }
    let encoded = match target {
        Target::Patched(out) => Ok(out),
        Target::Typed(t) => conversion.encode(t, object),
    };
    let mut out = encoded.map_err(|e| ConversionError::Refused(e.to_string()))?;
    // Metadata as it came, with the converted labels and annotations.
    let had_meta = sent_meta.is_some();
    let mut meta = sent_meta.unwrap_or_else(|| Value::Object(Map::new()));
    if let Value::Object(m) = &mut meta {
        let mut converted = match out.get_mut("metadata").map(Value::take) {
            Some(Value::Object(c)) => c,
            _ => Map::new(),
        };
        for field in ["labels", "annotations"] {
            match converted.remove_entry(field) {
                Some((k, v)) if !v.is_null() => {
                    m.insert(k, v);
                }
                _ => {
                    m.remove(field);
                }
            }
        }
    }
    if !stash.is_empty()
        && let Value::Object(m) = &mut meta
    {
        let annotations = m
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(a) = annotations {
            let text = serde_json::to_string(&stash)
                .map_err(|e| ConversionError::Refused(e.to_string()))?;
            a.insert(DATA_ANNOTATION.to_owned(), Value::String(text));
        }
    }
    if let Value::Object(o) = &mut out {
        if had_meta || meta.as_object().is_some_and(|m| !m.is_empty()) {
            match o.get_mut("metadata") {
                Some(slot) => *slot = meta,
                None => {
                    o.insert("metadata".to_owned(), meta);
                }
            }
        } else {
            o.remove("metadata");
        }
    }
    Ok(out)
}

/// What one conversion gives: the typed object, or (when an entry of [`DATA_ANNOTATION`]
/// restored fields) the restored JSON itself, as it was before it was decoded again.
enum Target<O> {
    Typed(O),
    Patched(Value),
}

/// Decodes JSON restored by an annotation entry as a version (by index), naming the object
/// in its error.
type Decode<'a, O> = dyn Fn(usize, &Value) -> Result<O, ConversionError> + 'a;

/// The conversion of `source` (version `from`) to `to` through the hub, with the lossless
/// bookkeeping of the module documentation: entries of `stash` restoring the versions passed
/// are applied and removed, and what a hop loses is recorded in it. `from != to`.
fn hop<C: HubConversion>(
    conversion: &C,
    source: &C::Object,
    from: usize,
    to: usize,
    stash: &mut BTreeMap<String, Vec<Op>>,
    decode: &Decode<'_, C::Object>,
) -> Result<Target<C::Object>, ConversionError> {
    let hub_version = C::VERSIONS[0];
    // Every entry is relative to the hub: a spoke's entry restores what the hub -> spoke
    // conversion loses, the hub's entry what the spoke the object is in lost of the hub.
    stash.remove(C::VERSIONS[from]);
    let mut converted_hub = None;
    if from == 0 {
        stash.remove(hub_version);
    } else {
        let mut hub = conversion.to_hub(source)?;
        if let Some(ops) = stash.remove(hub_version) {
            let mut json = encode(&hub)?;
            for op in &ops {
                apply(&mut json, op);
            }
            hub = decode(0, &json)?;
        }
        let back = conversion.from_hub(&hub, from)?;
        if back != *source {
            record(stash, C::VERSIONS[from], source, &back)?;
        }
        if to == 0 {
            return Ok(Target::Typed(hub));
        }
        converted_hub = Some(hub);
    }
    let hub = converted_hub.as_ref().unwrap_or(source);
    let mut t = conversion.from_hub(hub, to)?;
    let mut patched = None;
    if let Some(ops) = stash.remove(C::VERSIONS[to]) {
        let mut out = encode(&t)?;
        for op in &ops {
            apply(&mut out, op);
        }
        t = decode(to, &out)?;
        patched = Some(out);
    }
    let back = conversion.to_hub(&t)?;
    if back != *hub {
        record(stash, hub_version, hub, &back)?;
    }
    Ok(match patched {
        Some(out) => Target::Patched(out),
        None => Target::Typed(t),
    })
}

/// The parts of a typed object the runtime handles itself (see [`HubConversion::parts`]).
pub struct Parts<'a> {
    /// `apiVersion`.
    pub api_version: &'a str,
    /// `kind`.
    pub kind: &'a str,
    /// `metadata`.
    pub metadata: &'a mut ObjectMeta,
}

/// [`convert`] from JSON text (an object of version `from`) to JSON text, with no
/// `serde_json::Value` in between when the conversion gives its objects' [`Parts`]: the
/// object is decoded straight into its version's type and the result encoded straight from
/// the converted type (what generated `KindConversion::convert_text`s call; the
/// [`Converter`](super::Converter) uses it for every review it decodes from bytes). The
/// result is the same object as [`convert`]'s: the metadata is the input's text, field by
/// field, but labels and annotations.
pub fn convert_text<C: HubConversion>(
    conversion: &C,
    text: &str,
    from: &str,
    to: &str,
) -> Result<Box<RawValue>, ConversionError> {
    let unknown = |version: &str| ConversionError::UnknownVersion {
        kind: C::KIND.to_owned(),
        api_version: format!("{}/{version}", C::GROUP),
    };
    let index = |version: &str| C::VERSIONS.iter().position(|x| *x == version);
    let from_index = index(from).ok_or_else(|| unknown(from))?;
    let to_index = index(to).ok_or_else(|| unknown(to))?;
    let refused = |e: serde_json::Error| ConversionError::Refused(e.to_string());
    let decode_error = |version: usize, e: serde_json::Error| ConversionError::Decode {
        kind: C::KIND.to_owned(),
        name: super::text::identity(text).1,
        api_version: format!("{}/{}", C::GROUP, C::VERSIONS[version]),
        message: e.to_string(),
    };
    if from_index == to_index {
        return serde_json::from_str(text).map_err(refused);
    }
    let mut source = conversion
        .decode_text(from_index, text)
        .map_err(|e| decode_error(from_index, e))?;
    let Some(parts) = C::parts(&mut source) else {
        // No typed access to the metadata: through `Value`.
        let object: Value = serde_json::from_str(text).map_err(refused)?;
        let out = convert(conversion, object, to)?;
        return serde_json::value::to_raw_value(&out).map_err(refused);
    };
    // Out of the conversion's sight, as the `Converter` keeps it from `convert`.
    let managed_fields = parts.metadata.managed_fields.take();
    let mut stash = take_stash_of(parts.metadata);
    let decode = |version: usize, value: &Value| {
        conversion
            .decode(version, value)
            .map_err(|e| decode_error(version, e))
    };
    let target = hop(
        conversion, &source, from_index, to_index, &mut stash, &decode,
    )?;
    // The answer's metadata is the input's, with the converted labels and annotations: its
    // own text, field by field (else, where it does not read so, as `ObjectMeta` encodes it).
    let sent = sent_metadata(text);
    let Some(parts) = C::parts(&mut source) else {
        return Err(ConversionError::Refused(
            "the object lost its metadata".to_owned(),
        ));
    };
    let mut meta = std::mem::take(parts.metadata);
    meta.managed_fields = managed_fields;
    let desired = format!("{}/{to}", C::GROUP);
    let finish = |meta: &mut ObjectMeta, labels, annotations| -> Result<(), ConversionError> {
        meta.labels = labels;
        meta.annotations = annotations;
        if !stash.is_empty() {
            let text = serde_json::to_string(&stash).map_err(refused)?;
            meta.annotations
                .get_or_insert_with(BTreeMap::new)
                .insert(DATA_ANNOTATION.to_owned(), text);
        }
        Ok(())
    };
    match target {
        Target::Typed(mut t) => {
            let Some(parts) = C::parts(&mut t) else {
                return Err(ConversionError::Refused(
                    "the converted object has no metadata".to_owned(),
                ));
            };
            if parts.api_version != desired || parts.kind != C::KIND {
                return Err(ConversionError::Refused(format!(
                    "the conversion returned {} {}, not {desired} {}",
                    parts.api_version,
                    parts.kind,
                    C::KIND
                )));
            }
            let labels = parts.metadata.labels.take();
            let annotations = parts.metadata.annotations.take();
            finish(&mut meta, labels, annotations)?;
            if let Some(sent) = &sent {
                let answer = AnswerMetadata {
                    sent,
                    labels: &meta.labels,
                    annotations: &meta.annotations,
                };
                if let Some(encoded) = super::splice::with_metadata(&t, &answer) {
                    return encoded.map_err(refused);
                }
            }
            if let Some(parts) = C::parts(&mut t) {
                *parts.metadata = meta;
            }
            serde_json::value::to_raw_value(&t).map_err(refused)
        }
        Target::Patched(mut out) => {
            let field = |out: &mut Value, name: &str| -> Result<_, ConversionError> {
                match out
                    .get_mut("metadata")
                    .and_then(|m| m.get_mut(name))
                    .map(Value::take)
                {
                    None | Some(Value::Null) => Ok(None),
                    Some(v) => serde_json::from_value::<BTreeMap<String, String>>(v)
                        .map(Some)
                        .map_err(|e| ConversionError::Refused(format!("metadata.{name}: {e}"))),
                }
            };
            let labels = field(&mut out, "labels")?;
            let annotations = field(&mut out, "annotations")?;
            finish(&mut meta, labels, annotations)?;
            let metadata = match &sent {
                Some(sent) => encode(&AnswerMetadata {
                    sent,
                    labels: &meta.labels,
                    annotations: &meta.annotations,
                })?,
                None => encode(&meta)?,
            };
            if let Value::Object(o) = &mut out {
                o.insert("metadata".to_owned(), metadata);
            }
            serde_json::value::to_raw_value(&out).map_err(refused)
        }
    }
}

/// The fields of an object's `metadata`, each as its JSON text (`None` when there is none, or
/// a key is escaped).
fn sent_metadata(text: &str) -> Option<BTreeMap<&str, &RawValue>> {
    let [metadata] = super::text::leading(text, ["metadata"]);
    serde_json::from_str(metadata?.get()).ok()
}

/// The answer's metadata: the sent fields but labels and annotations, which are the
/// conversion's.
struct AnswerMetadata<'a> {
    sent: &'a BTreeMap<&'a str, &'a RawValue>,
    labels: &'a Option<BTreeMap<String, String>>,
    annotations: &'a Option<BTreeMap<String, String>>,
}

impl Serialize for AnswerMetadata<'_> {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut map = serializer.serialize_map(None)?;
        for (key, value) in self.sent {
            if !matches!(*key, "labels" | "annotations") {
                map.serialize_entry(key, value)?;
            }
        }
        if let Some(labels) = self.labels {
            map.serialize_entry("labels", labels)?;
        }
        if let Some(annotations) = self.annotations {
            map.serialize_entry("annotations", annotations)?;
        }
        map.end()
    }
}

/// `object` encoded over `template` (see [`HubConversion::encode`]) with `metadata` (taken out
/// of it) reduced to its labels and annotations, the only metadata [`convert`] takes from a
/// conversion's result: what generated [`HubConversion::encode`]s call, sparing the encoding of
/// the rest of the metadata. The template's `metadata.labels` and `metadata.annotations` are
/// reused when they are equal.
pub fn encode_object<T: Serialize + ?Sized>(
    object: &T,
    metadata: ObjectMeta,
    mut template: Value,
) -> Result<Value, serde_json::Error> {
    let mut carried = match template.get_mut("metadata").map(Value::take) {
        Some(Value::Object(m)) => m,
        _ => Map::new(),
    };
    let mut value = super::reuse::to_value_reusing(object, template)?;
    if let Value::Object(o) = &mut value {
        let mut meta = Map::new();
        for (field, typed) in [
            ("labels", metadata.labels),
            ("annotations", metadata.annotations),
        ] {
            if let Some(typed) = typed {
                let (key, was) = carried
                    .remove_entry(field)
                    .unwrap_or_else(|| (field.to_owned(), Value::Null));
                meta.insert(key, string_map(typed, was));
            }
        }
        match o.get_mut("metadata") {
            Some(slot) => *slot = Value::Object(meta),
            None => {
                o.insert("metadata".to_owned(), Value::Object(meta));
            }
        }
    }
    Ok(value)
}

/// `typed` as JSON: `was` itself when it holds the same strings (in the same order).
fn string_map(typed: BTreeMap<String, String>, was: Value) -> Value {
    if let Value::Object(w) = &was
        && w.len() == typed.len()
        && w.iter()
            .zip(&typed)
            .all(|((wk, wv), (k, v))| wk == k && wv.as_str() == Some(v.as_str()))
    {
        return was;
    }
    Value::Object(
        typed
            .into_iter()
            .map(|(k, v)| (k, Value::String(v)))
            .collect(),
    )
}

/// Records under `version` the operations turning `got` into `want` (top-level `apiVersion`,
/// `kind` and `metadata` aside).
fn record<T: Serialize>(
    stash: &mut BTreeMap<String, Vec<Op>>,
    version: &str,
    want: &T,
    got: &T,
) -> Result<(), ConversionError> {
    let (want, got) = (encode(want)?, encode(got)?);
    let mut ops = Vec::new();
    if let (Value::Object(w), Value::Object(g)) = (&want, &got) {
        let skip = |k: &str| matches!(k, "metadata" | "apiVersion" | "kind");
        for (k, wv) in w.iter().filter(|(k, _)| !skip(k)) {
            let path = format!("/{}", escape(k));
            match g.get(k) {
                Some(gv) => diff(wv, gv, &path, &mut ops),
                None => ops.push(Op::Add {
                    path,
                    value: wv.clone(),
                }),
            }
        }
        for k in g.keys().filter(|k| !skip(k) && !w.contains_key(*k)) {
            ops.push(Op::Remove {
                path: format!("/{}", escape(k)),
            });
        }
    }
    if !ops.is_empty() {
        stash.insert(version.to_owned(), ops);
    }
    Ok(())
}

fn encode<T: Serialize>(value: &T) -> Result<Value, ConversionError> {
    serde_json::to_value(value).map_err(|e| ConversionError::Refused(e.to_string()))
}

/// Removes [`DATA_ANNOTATION`] from `object` (and `annotations` when it is left empty, as
/// the API server never stores an empty map) and reads it; one that does not read is dropped.
fn take_stash(object: &mut Value) -> BTreeMap<String, Vec<Op>> {
    // Not `pointer_mut`: it allocates each token, on every object.
    let Some(Value::Object(annotations)) = object
        .get_mut("metadata")
        .and_then(|m| m.get_mut("annotations"))
    else {
        return BTreeMap::new();
    };
    let Some(text) = annotations.remove(DATA_ANNOTATION) else {
        return BTreeMap::new();
    };
    if annotations.is_empty()
        && let Some(Value::Object(meta)) = object.get_mut("metadata")
    {
        meta.remove("annotations");
    }
    text.as_str()
        .and_then(|t| serde_json::from_str(t).ok())
        .unwrap_or_default()
}

/// [`take_stash`] on typed metadata.
fn take_stash_of(meta: &mut ObjectMeta) -> BTreeMap<String, Vec<Op>> {
    let Some(annotations) = meta.annotations.as_mut() else {
        return BTreeMap::new();
    };
    let Some(text) = annotations.remove(DATA_ANNOTATION) else {
        return BTreeMap::new();
    };
    if annotations.is_empty() {
        meta.annotations = None;
    }
    serde_json::from_str(&text).unwrap_or_default()
}

/// JSON Pointer escaping of one reference token.
fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

/// The operations turning `got` into `want` at `path`.
fn diff(want: &Value, got: &Value, path: &str, ops: &mut Vec<Op>) {
    if want == got {
        return;
    }
    match (want, got) {
        (Value::Object(w), Value::Object(g)) => {
            for (k, wv) in w {
                let p = format!("{path}/{}", escape(k));
                match g.get(k) {
                    Some(gv) => diff(wv, gv, &p, ops),
                    None => ops.push(Op::Add {
                        path: p,
                        value: wv.clone(),
                    }),
                }
            }
            for k in g.keys() {
                if !w.contains_key(k) {
                    ops.push(Op::Remove {
                        path: format!("{path}/{}", escape(k)),
                    });
                }
            }
        }
        (Value::Array(w), Value::Array(g)) if w.len() == g.len() => {
            for (i, (wv, gv)) in w.iter().zip(g).enumerate() {
                diff(wv, gv, &format!("{path}/{i}"), ops);
            }
        }
        _ => ops.push(Op::Add {
            path: path.to_owned(),
            value: want.clone(),
        }),
    }
}

/// Applies one operation leniently: `add` creates missing objects on its way and skips a
/// path through a list item or a scalar that is no longer there; `remove` of an absent
/// path does nothing. (Not the `json-patch` crate: RFC 6902 fails a whole patch on a
/// missing parent, and a recorded entry must survive the object changing in between.)
fn apply(root: &mut Value, op: &Op) {
    let (path, value) = match op {
        Op::Add { path, value } => (path, Some(value)),
        Op::Remove { path } => (path, None),
    };
    let tokens: Vec<String> = path.split('/').skip(1).map(unescape).collect();
    let Some((last, parents)) = tokens.split_last() else {
        return;
    };
    let mut at = root;
    for t in parents {
        let next = match at {
            Value::Object(m) => {
                if value.is_none() && !m.contains_key(t) {
                    return;
                }
                m.entry(t.clone())
                    .or_insert_with(|| Value::Object(Map::new()))
            }
            Value::Array(a) => match t.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                Some(v) => v,
                None => return,
            },
            _ => return,
        };
        if next.is_null() && value.is_some() {
            *next = Value::Object(Map::new());
        }
        at = next;
    }
    match (at, value) {
        (Value::Object(m), Some(v)) => {
            m.insert(last.clone(), v.clone());
        }
        (Value::Object(m), None) => {
            m.remove(last);
        }
        (Value::Array(a), Some(v)) => {
            if let Some(slot) = last.parse::<usize>().ok().and_then(|i| a.get_mut(i)) {
                *slot = v.clone();
            }
        }
        (Value::Array(a), None) => {
            if let Some(i) = last.parse::<usize>().ok().filter(|i| *i < a.len()) {
                a.remove(i);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn roundtrip(want: Value, got: Value) {
        let mut ops = Vec::new();
        diff(&want, &got, "", &mut ops);
        let mut v = got;
        for op in &ops {
            apply(&mut v, op);
        }
        assert_eq!(v, want);
    }

    #[test]
    fn diff_then_apply_restores() {
        roundtrip(
            json!({"a": 1, "b": {"c": [1, {"d": 2, "e/~": 3}], "x": null}}),
            json!({"a": 2, "b": {"c": [1, {"d": 5}], "y": true}}),
        );
        roundtrip(json!({"l": [1, 2, 3]}), json!({"l": [1]}));
        roundtrip(json!({"o": {"p": 1}}), json!({"o": null}));
    }

    #[test]
    fn stash_is_taken_and_empty_annotations_removed() {
        let mut o = json!({"metadata": {"annotations": {DATA_ANNOTATION: "{\"v1\":[{\"op\":\"remove\",\"path\":\"/x\"}]}"}}});
        let s = take_stash(&mut o);
        assert_eq!(o, json!({"metadata": {}}));
        assert_eq!(s["v1"], vec![Op::Remove { path: "/x".into() }]);
    }
}
