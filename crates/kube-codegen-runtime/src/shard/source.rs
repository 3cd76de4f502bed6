//! The informer side of sharding: `shardSelector` on a `kube::Api`'s list and watch requests
//! (kube's `ListParams` has no such field: the request is formed here and the parameter
//! appended), the server's echo read from the responses, and the store filter used where a
//! server did not apply the selector.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use futures::{AsyncBufReadExt, StreamExt, TryStreamExt};
use kube::api::{Api, ListParams, ObjectList, WatchEvent, WatchParams};
use kube::core::Resource;
use parking_lot::RwLock;
use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::{OwnerKind, RangeSet, SHARD_INFO_ANNOTATION, ShardKey, object_hash};
use crate::cache::{ReflectorStore, WatchStream};

/// `metadata.shardInfo.selector` of a list or bookmark, when present.
#[derive(Deserialize)]
struct Echo {
    #[serde(default)]
    metadata: EchoMeta,
}

#[derive(Deserialize, Default)]
struct EchoMeta {
    #[serde(default, rename = "shardInfo")]
    shard_info: Option<ShardInfo>,
}

#[derive(Deserialize)]
struct ShardInfo {
    #[serde(default)]
    selector: String,
}

/// A list answer read in one pass: kube's `ObjectList` flattens its type fields (serde then
/// buffers the whole body first), and the echo would need a second parse of the text.
#[derive(Deserialize)]
#[serde(bound(deserialize = "K: DeserializeOwned"))]
struct ShardedList<K> {
    #[serde(default, rename = "apiVersion")]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    metadata: ShardedListMeta,
    #[serde(default, deserialize_with = "null_as_empty")]
    items: Vec<K>,
}

#[derive(Deserialize, Default)]
struct ShardedListMeta {
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
    #[serde(default, rename = "continue")]
    continue_: Option<String>,
    #[serde(default, rename = "remainingItemCount")]
    remaining_item_count: Option<i64>,
    #[serde(default, rename = "shardInfo")]
    shard_info: Option<ShardInfo>,
}

fn null_as_empty<'de, D, K>(d: D) -> Result<Vec<K>, D::Error>
where
    D: serde::Deserializer<'de>,
    K: DeserializeOwned,
{
    Ok(Option::<Vec<K>>::deserialize(d)?.unwrap_or_default())
}

/// A watch line's object only, for the echo on a bookmark.
#[derive(Deserialize)]
struct EchoLine {
    object: Echo,
}

/// Query-string encoding of a parameter value, as short as a request line allows: a selector
/// term is written in 79 bytes (`shardRange(object.metadata.uid,+'0x…',+'0x…')+||+`) where
/// encoding every reserved byte took 107, so more terms fit in `http::Uri`'s 64 KiB. Left as
/// they are: the bytes `http::Uri` accepts in a query except those that mean something there
/// (`&`, `=`, `+`, `#`, `%`, and `;`, which Go's `url.ParseQuery` refuses); a space is `+`
/// (form encoding, as Go's `ParseQuery` and the in-memory server decode it).
pub(crate) fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + s.len() / 8);
    for b in s.bytes() {
        match b {
            b' ' => out.push('+'),
            b'&' | b'=' | b'+' | b'#' | b'%' | b';' => out.push_str(&format!("%{b:02X}")),
            0x21 | 0x24..=0x3A | 0x3F..=0x7E => out.push(b as char),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn with_selector(
    mut req: http::Request<Vec<u8>>,
    selector: &str,
) -> Result<http::Request<Vec<u8>>, kube::Error> {
    let uri = req.uri().to_string();
    let sep = if uri.contains('?') { '&' } else { '?' };
    let uri = format!("{uri}{sep}shardSelector={}", encode(selector));
    *req.uri_mut() = uri.parse().map_err(|e: http::uri::InvalidUri| {
        kube::Error::BuildRequest(kube::core::request::Error::BuildRequest(e.into()))
    })?;
    Ok(req)
}

/// A list with `shardSelector`, and the selector the server echoed.
pub(crate) async fn list<K>(
    api: &Api<K>,
    params: &ListParams,
    selector: &str,
) -> Result<(ObjectList<K>, Option<String>), kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Debug,
{
    let req = kube::core::Request::new(api.resource_url())
        .list(params)
        .map_err(kube::Error::BuildRequest)?;
    let req = with_selector(req, selector)?;
    let text = api.clone().into_client().request_text(req).await?;
    let read: ShardedList<K> = serde_json::from_str(&text).map_err(kube::Error::SerdeError)?;
    let list = ObjectList {
        types: kube::core::TypeMeta {
            api_version: if read.api_version.is_empty() {
                "v1".into()
            } else {
                read.api_version
            },
            kind: if read.kind.is_empty() {
                "List".into()
            } else {
                read.kind
            },
        },
        metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta {
            resource_version: read.metadata.resource_version,
            continue_: read.metadata.continue_,
            remaining_item_count: read.metadata.remaining_item_count,
            ..Default::default()
        },
        items: read.items,
    };
    Ok((list, read.metadata.shard_info.map(|s| s.selector)))
}

/// A watch with `shardSelector`; the echo on a bookmark is passed on as its
/// [`SHARD_INFO_ANNOTATION`] annotation.
pub(crate) async fn watch<K>(
    api: &Api<K>,
    params: &WatchParams,
    resource_version: &str,
    selector: &str,
) -> Result<WatchStream<K>, kube::Error>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + 'static,
{
    let req = kube::core::Request::new(api.resource_url())
        .watch(params, resource_version)
        .map_err(kube::Error::BuildRequest)?;
    let mut req = with_selector(req, selector)?;
    // As kube's own watches: no compressed watch streams (a 1.37 server gzips each event as a
    // gzip member of its own, which the client's decoder does not read past the first).
    req.headers_mut()
        .entry(http::header::ACCEPT_ENCODING)
        .or_insert(http::HeaderValue::from_static("identity"));
    let body = api.clone().into_client().request_stream(req).await?;
    // As kube's `request_events`: a read timeout or an unexpected end of the body ends the
    // stream (the reflector watches again from where it was), other read errors are errors.
    let lines = body
        .lines()
        .take_while(|l| {
            let end = matches!(l, Err(e) if matches!(
                e.kind(),
                std::io::ErrorKind::TimedOut | std::io::ErrorKind::UnexpectedEof
            ));
            if let Err(e) = l
                && end
            {
                tracing::debug!("shard watch ended: {e}");
            }
            futures::future::ready(!end)
        })
        .map_err(kube::Error::ReadEvents);
    let events = lines.try_filter_map(|line| async move { event_of::<K>(&line) });
    Ok(events.boxed())
}

/// One line of a shard watch: an event (a bookmark's echo passed on as its
/// [`SHARD_INFO_ANNOTATION`] annotation), nothing for a blank line, or, for a line that is no
/// event but a `Status`, the server's error as kube reports it (`Error::Api`).
fn event_of<K: DeserializeOwned + Clone>(line: &str) -> Result<Option<WatchEvent<K>>, kube::Error> {
    if line.trim().is_empty() {
        return Ok(None);
    }
    let mut event: WatchEvent<K> = match serde_json::from_str(line) {
        Ok(event) => event,
        Err(e) => {
            return match serde_json::from_str::<kube::core::Status>(line) {
                Ok(status) => Err(kube::Error::Api(status.boxed())),
                Err(_) => Err(kube::Error::SerdeError(e)),
            };
        }
    };
    if let WatchEvent::Bookmark(b) = &mut event
        && let Ok(EchoLine { object }) = serde_json::from_str::<EchoLine>(line)
        && let Some(info) = object.metadata.shard_info
    {
        b.metadata
            .annotations
            .insert(SHARD_INFO_ANNOTATION.into(), info.selector);
    }
    Ok(Some(event))
}

/// Which objects a sharded reflector keeps: the ranges of the current round, and whether the
/// server left the filtering to the client this round.
pub(crate) struct Filter {
    key: ShardKey,
    /// Hash by the controller owner of this kind instead (objects without one are kept).
    owner: Option<OwnerKind>,
    ranges: RwLock<RangeSet>,
    active: AtomicBool,
    /// The selector sent is a superset of the ranges: filter whatever the server does.
    superset: AtomicBool,
}

impl Filter {
    pub(crate) fn new(key: ShardKey, owner: Option<OwnerKind>) -> Self {
        Filter {
            key,
            owner,
            ranges: RwLock::new(RangeSet::empty()),
            active: AtomicBool::new(true),
            superset: AtomicBool::new(false),
        }
    }

    pub(crate) fn set_ranges(&self, ranges: RangeSet, superset: bool) {
        *self.ranges.write() = ranges;
        self.superset.store(superset, Ordering::Relaxed);
        self.active.store(true, Ordering::Relaxed);
    }

    /// Whether the server applied `sent`: it echoed it exactly. Filters on the client when not.
    pub(crate) fn server_applied(&self, sent: &str, echo: Option<&str>) -> bool {
        let applied = echo == Some(sent);
        self.active.store(
            !applied || self.superset.load(Ordering::Relaxed),
            Ordering::Relaxed,
        );
        applied
    }

    fn keeps<K: Resource>(&self, obj: &K) -> bool {
        if !self.active.load(Ordering::Relaxed) {
            return true;
        }
        let hash = match &self.owner {
            // No controller of the kind: no owner's replica to follow, so every replica keeps
            // it (a controller finding a name taken by an object it does not own says so).
            Some(owner) => match owner.owner_hash(obj) {
                Some(h) => h,
                None => return true,
            },
            None => object_hash(obj, self.key),
        };
        self.ranges.read().contains(hash)
    }
}

/// A store that drops what the filter does not keep, in front of the informer's store.
pub(crate) struct FilteredStore<K> {
    pub(crate) inner: Arc<dyn ReflectorStore<K>>,
    pub(crate) filter: Arc<Filter>,
}

impl<K: Resource + Send + Sync> ReflectorStore<K> for FilteredStore<K> {
    fn replace(&self, objects: Vec<K>, resource_version: &str) {
        let kept = objects
            .into_iter()
            .filter(|o| self.filter.keeps(o))
            .collect();
        self.inner.replace(kept, resource_version);
    }
    fn add(&self, object: K) {
        if self.filter.keeps(&object) {
            self.inner.add(object);
        }
    }
    fn update(&self, object: K) {
        if self.filter.keeps(&object) {
            self.inner.update(object);
        }
    }
    fn delete(&self, object: K) {
        if self.filter.keeps(&object) {
            self.inner.delete(object);
        }
    }
    fn bookmark(&self, resource_version: &str) {
        self.inner.bookmark(resource_version);
    }
    fn ready(&self) -> Option<futures::future::BoxFuture<'static, ()>> {
        self.inner.ready()
    }
    fn flush(&self) {
        self.inner.flush();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::shard::{HashRange, range::MAX_SELECTOR_TERMS};

    #[test]
    fn a_status_line_is_the_servers_error_and_a_bookmark_keeps_the_echo() {
        use k8s_openapi::api::core::v1::ConfigMap;
        let line = r#"{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 1 (5)","reason":"Expired","code":410}"#;
        match event_of::<ConfigMap>(line) {
            Err(kube::Error::Api(s)) => {
                assert_eq!(s.code, 410);
                assert_eq!(s.reason, "Expired");
            }
            other => panic!("expected Error::Api, got {other:?}"),
        }
        assert!(matches!(
            event_of::<ConfigMap>("{not json"),
            Err(kube::Error::SerdeError(_))
        ));
        assert!(event_of::<ConfigMap>("  ").unwrap().is_none());
        let bookmark = r#"{"type":"BOOKMARK","object":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"resourceVersion":"7","annotations":{"k8s.io/initial-events-end":"true"},"shardInfo":{"selector":"x"}}}}"#;
        match event_of::<ConfigMap>(bookmark) {
            Ok(Some(WatchEvent::Bookmark(b))) => {
                assert_eq!(b.metadata.annotations[SHARD_INFO_ANNOTATION], "x");
            }
            other => panic!("expected a bookmark, got {other:?}"),
        }
    }

    #[test]
    fn encoding_round_trips_through_a_query_decoder() {
        let text = "shardRange(object.metadata.uid, '0x0', '0x8') || a&b=c+d#e%f;g\u{e9}";
        let encoded = encode(text);
        assert!(!encoded.contains([' ', '&', '=', '#', ';']));
        // form decoding: '+' is a space, %XX a byte
        let bytes = encoded.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < bytes.len() {
            match bytes[i] {
                b'+' => out.push(b' '),
                b'%' => {
                    let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap();
                    out.push(u8::from_str_radix(hex, 16).unwrap());
                    i += 2;
                }
                b => out.push(b),
            }
            i += 1;
        }
        assert_eq!(String::from_utf8(out).unwrap(), text);
    }

    #[test]
    fn the_longest_selector_sent_fits_a_request_line() {
        // MAX_SELECTOR_TERMS of the longer field, on a long path with every watch parameter.
        let step = u64::MAX / (MAX_SELECTOR_TERMS as u64 * 2);
        let set = RangeSet::from_ranges((0..MAX_SELECTOR_TERMS as u64).map(|i| {
            HashRange::new(i * 2 * step, u128::from(i * 2 * step + step)).expect("range")
        }));
        assert_eq!(set.ranges().len(), MAX_SELECTOR_TERMS);
        let selector = set
            .selector(ShardKey::Namespace)
            .expect("selector")
            .to_string();
        let host = "https://kubernetes.default.svc.cluster.local:6443";
        let path = format!(
            "{host}/apis/samplecontroller.k8s.io/v1alpha1/namespaces/{}/foos?allowWatchBookmarks=true\
             &resourceVersion=123456789&resourceVersionMatch=NotOlderThan&sendInitialEvents=true\
             &timeoutSeconds=290&watch=true&labelSelector=app%3Dnginx",
            "n".repeat(63)
        );
        let req = http::Request::get(path).body(Vec::new()).expect("request");
        let req = with_selector(req, &selector).expect("fits in an http::Uri");
        assert!(req.uri().to_string().len() <= 65_534);
    }
}
