//! `?watch=true`: newline-delimited WatchEvents streamed with chunked encoding.
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Response, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::{Value, json};
use tokio::sync::{broadcast, mpsc};
use tokio::time::{Instant, sleep_until};

use super::Ctx;
use super::read::{check_rv_options, parse_rv, partial_metadata, selectors};
use crate::field_labels::Selection;
use crate::http::{Body, Output};
use crate::objects::view;
use crate::registry::{Resource, Version};
use crate::selector::LabelSelector;
use crate::state::Shared;
use crate::status::ApiError;
use crate::store::{Event, EventType};
use crate::util::meta_str;

/// Server default when the client sends no `timeoutSeconds` (the real one picks 30–60 minutes).
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(1800);
const BOOKMARK_BEFORE_END: Duration = Duration::from_secs(2);
const BOOKMARK_PERIOD: Duration = Duration::from_secs(60);

/// Everything one watcher needs once the response has started.
struct Watcher {
    shared: Arc<Shared>,
    res: Arc<Resource>,
    ver: Version,
    version: String,
    /// `group/version` of the watch: rendered lines are shared per API version (the two Event
    /// APIs render one stored event in two shapes).
    api_version: String,
    namespace: Option<String>,
    name: Option<String>,
    labels: LabelSelector,
    fields: Selection,
    /// `shardSelector` and its text as sent (echoed on the initial-events-end bookmark).
    shard: Option<(kube_codegen_crd::shard::ShardSelector, String)>,
    out: Output,
    /// Frames of protobuf `WatchEvent`s instead of JSON lines.
    proto: bool,
    include: String,
    tx: mpsc::Sender<Bytes>,
    sent: usize,
    last_rv: u64,
}

enum Flow {
    Continue,
    Stop,
}

impl Watcher {
    fn matches(&self, obj: &Value) -> bool {
        self.labels.matches(obj)
            && self.fields.matches(obj)
            && self
                .shard
                .as_ref()
                .is_none_or(|(s, _)| s.matches_object(obj))
    }

    fn ours(&self, e: &Event) -> bool {
        let (group, resource) = self.res.storage();
        e.key.group == group
            && e.key.resource == resource
            && self
                .namespace
                .as_deref()
                .is_none_or(|ns| e.key.namespace == ns)
            && self.name.as_deref().is_none_or(|n| e.key.name == n)
    }

    /// The event's object as the watch shows it, converted by the CRD's webhook when it has one
    /// (a failed conversion ends the watch with an `ERROR` event carrying the failure).
    async fn render(&self, obj: &Value) -> Result<Value, ApiError> {
        let obj = if crate::conversion::by_webhook(&self.res) {
            crate::conversion::convert_one(&self.shared, &self.res, obj.clone(), &self.version)
                .await?
        } else {
            obj.clone()
        };
        let obj = view(&self.res, &self.version, &obj);
        Ok(match self.out {
            Output::Json => obj,
            Output::PartialMetadata => partial_metadata(&obj),
            Output::Table => {
                let meta = json!({"resourceVersion": meta_str(&obj, "resourceVersion")});
                super::read::table(&self.ver, &[obj], &self.include, meta)
            }
        })
    }

    async fn conversion_failed(&mut self, e: ApiError) -> Flow {
        let _ = self.send_raw("ERROR", e.to_status()).await;
        Flow::Stop
    }

    async fn send_raw(&mut self, ty: &str, object: Value) -> Flow {
        let l = if self.proto {
            // Every object a protobuf watch carries is a built-in (checked before it starts).
            Bytes::from(crate::proto::watch_frame(ty, &object).unwrap_or_default())
        } else {
            line(ty, &object)
        };
        self.send_line(l).await
    }

    /// Sends `e.object` as a `ty` event, rendering the line once per event for all plain-JSON watchers.
    async fn send_event(&mut self, ty: EventType, e: &Event) -> Flow {
        if self.out != Output::Json || self.proto {
            return self.send(ty, &e.object).await;
        }
        let cached = {
            let lines = e.lines.lock();
            lines
                .iter()
                .find(|(v, t, _)| *v == self.api_version && *t == ty.as_str())
                .map(|(_, _, b)| b.clone())
        };
        let l = match cached {
            Some(b) => b,
            None => {
                let rendered = match self.render(&e.object).await {
                    Ok(r) => r,
                    Err(err) => return self.conversion_failed(err).await,
                };
                let b = line(ty.as_str(), &rendered);
                e.lines
                    .lock()
                    .push((self.api_version.clone(), ty.as_str(), b.clone()));
                b
            }
        };
        self.send_line(l).await
    }

    async fn send_line(&mut self, line: Bytes) -> Flow {
        if self.tx.send(line).await.is_err() {
            return Flow::Stop;
        }
        self.sent += 1;
        let limit = self.shared.faults.end_after();
        if limit > 0 && self.sent >= limit {
            Flow::Stop
        } else {
            Flow::Continue
        }
    }

    async fn send(&mut self, ty: EventType, obj: &Value) -> Flow {
        match self.render(obj).await {
            Ok(o) => self.send_raw(ty.as_str(), o).await,
            Err(err) => self.conversion_failed(err).await,
        }
    }

    async fn bookmark(&mut self, rv: u64, initial_end: bool) -> Flow {
        let mut meta = json!({"resourceVersion": rv.to_string(), "creationTimestamp": null});
        if initial_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
            if let Some((_, raw)) = &self.shard {
                crate::shard_selector::echo(&mut meta, raw);
            }
        }
        let obj = json!({"kind": self.res.kind, "apiVersion": self.res.api_version(&self.version), "metadata": meta});
        self.last_rv = self.last_rv.max(rv);
        self.send_raw("BOOKMARK", obj).await
    }

    /// Sends one store event as this watcher sees it through its selectors.
    async fn event(&mut self, e: &Event) -> Flow {
        if e.kind == EventType::Deleted
            && self.res.custom
            && e.key.group == "apiextensions.k8s.io"
            && e.key.resource == "customresourcedefinitions"
            && e.key.name == format!("{}.{}", self.res.plural, self.res.group)
        {
            // The resource is gone: its watches end, as the real server's do.
            return Flow::Stop;
        }
        if !self.ours(e) || e.rv <= self.last_rv {
            return Flow::Continue;
        }
        self.last_rv = e.rv;
        let now = self.matches(&e.object);
        let before = e.old.as_ref().is_some_and(|o| self.matches(o));
        match e.kind {
            EventType::Added if now => self.send_event(EventType::Added, e).await,
            EventType::Deleted if now => self.send_event(EventType::Deleted, e).await,
            EventType::Modified => match (before, now) {
                (true, true) => self.send_event(EventType::Modified, e).await,
                (false, true) => self.send_event(EventType::Added, e).await,
                (true, false) => {
                    // Stops matching: DELETED with the previous state at this event's resourceVersion.
                    let mut o = e.old.clone().unwrap_or_default();
                    crate::store::set_rv(&mut o, e.rv);
                    self.send(EventType::Deleted, &o).await
                }
                (false, false) => Flow::Continue,
            },
            _ => Flow::Continue,
        }
    }

    /// Delivers everything already queued (all events up to the store's current rv), then a bookmark.
    async fn drain_and_bookmark(&mut self, rx: &mut broadcast::Receiver<Arc<Event>>) -> Flow {
        let rv = self.shared.db.lock().store.rv();
        loop {
            match rx.try_recv() {
                Ok(e) => {
                    if let Flow::Stop = self.event(&e).await {
                        return Flow::Stop;
                    }
                }
                Err(broadcast::error::TryRecvError::Empty) => break,
                Err(_) => return Flow::Stop,
            }
        }
        self.bookmark(rv, false).await
    }
}

/// One watch event line, `type` before `object` as kube-apiserver writes `metav1.WatchEvent`
/// (a `json!` map would sort `object` first, which makes clients buffer the whole object
/// before they know what it is; it also copied the object).
fn line(ty: &str, object: &Value) -> Bytes {
    let mut line = Vec::with_capacity(1024);
    line.extend_from_slice(b"{\"type\":");
    // Writing JSON into a Vec fails only on a non-string map key, which a Value cannot hold.
    let _ = serde_json::to_writer(&mut line, ty);
    line.extend_from_slice(b",\"object\":");
    let _ = serde_json::to_writer(&mut line, object);
    line.extend_from_slice(b"}\n");
    Bytes::from(line)
}

pub async fn serve(ctx: &Ctx<'_>, out: Output) -> Result<Response<Body>, ApiError> {
    let (labels, fields) = selectors(ctx)?;
    let shard = crate::shard_selector::from_request(ctx)?;
    check_rv_options(ctx)?;
    let fields = super::read::field_selection(ctx, &fields)?;
    if ctx.proto && ctx.res.custom {
        // kube-apiserver fails to encode the first event; refused up front here.
        return Err(ApiError::not_acceptable(crate::proto::not_marshalable()));
    }
    let q = |k: &str| ctx.req.q(k).unwrap_or("");
    let bookmarks = ctx.req.flag("allowWatchBookmarks");
    let send_initial = match q("sendInitialEvents") {
        "true" | "1" => Some(true),
        "false" | "0" => Some(false),
        _ => None,
    };
    let rv_param = q("resourceVersion").to_string();
    if send_initial == Some(true) {
        if q("resourceVersionMatch") != "NotOlderThan" {
            return Err(ApiError::invalid_options(
                "ListOptions",
                "sendInitialEvents",
                "FieldValueForbidden",
                "Forbidden: sendInitialEvents is forbidden for watch unless resourceVersionMatch is set to NotOlderThan",
            ));
        }
        if !bookmarks {
            return Err(ApiError::invalid_options(
                "ListOptions",
                "allowWatchBookmarks",
                "FieldValueForbidden",
                "Forbidden: allowWatchBookmarks must be set to true when sendInitialEvents is specified",
            ));
        }
    }
    let timeout = match q("timeoutSeconds") {
        "" | "0" => DEFAULT_TIMEOUT,
        t => Duration::from_secs(
            t.parse::<u64>()
                .map_err(|_| ApiError::bad_request("invalid timeoutSeconds"))?,
        ),
    };
    let from = if rv_param.is_empty() || rv_param == "0" {
        None
    } else {
        Some(parse_rv(&rv_param)?)
    };
    let initial_mode = send_initial.unwrap_or(from.is_none());
    // A watch without resourceVersion and with bookmarks is a streaming list in 1.35.
    let end_bookmark = bookmarks
        && (send_initial == Some(true) || (send_initial.is_none() && rv_param.is_empty()));

    let res = ctx.res.clone();
    let name = ctx.t.name.clone();
    // Snapshot + history + subscription under one lock so no event falls in between.
    let (initial, replay, start_rv, rx, epoch) = {
        let db = ctx.shared.db.lock();
        let current = db.store.rv();
        let initial: Vec<Value> = if initial_mode {
            db.store
                .list(res.storage().0, res.storage().1, ctx.ns())
                .into_iter()
                .filter(|(k, o)| {
                    name.as_deref().is_none_or(|n| k.name == n)
                        && labels.matches(o)
                        && fields.matches(o)
                        && shard.as_ref().is_none_or(|(s, _)| s.matches_object(o))
                })
                .map(|(_, o)| o)
                .collect()
        } else {
            Vec::new()
        };
        let replay = match (initial_mode, from) {
            (false, Some(n)) => db.store.since(n).map_err(|floor| (n, floor)),
            _ => Ok(Vec::new()),
        };
        let start_rv = if initial_mode {
            current
        } else {
            from.unwrap_or(current)
        };
        (
            initial,
            replay,
            start_rv,
            db.store.subscribe(),
            ctx.shared.watch_epoch.subscribe(),
        )
    };

    let (tx, body_rx) = mpsc::channel::<Bytes>(256);
    let mut w = Watcher {
        shared: ctx.shared.clone(),
        res,
        ver: ctx.ver.clone(),
        version: ctx.version().to_string(),
        api_version: ctx.res.api_version(ctx.version()),
        namespace: ctx.t.namespace.clone(),
        name,
        labels,
        fields,
        shard,
        out,
        proto: ctx.proto,
        include: ctx
            .req
            .q("includeObject")
            .filter(|s| !s.is_empty())
            .unwrap_or("Metadata")
            .to_string(),
        tx,
        sent: 0,
        last_rv: 0,
    };
    tokio::spawn(async move {
        let mut rx = rx;
        let mut epoch = epoch;
        let deadline = Instant::now() + timeout;
        let mut final_bookmark =
            (bookmarks && timeout > BOOKMARK_BEFORE_END).then(|| deadline - BOOKMARK_BEFORE_END);
        for obj in &initial {
            if let Flow::Stop = w.send(EventType::Added, obj).await {
                return;
            }
        }
        w.last_rv = start_rv;
        if end_bookmark && let Flow::Stop = w.bookmark(start_rv, true).await {
            return;
        }
        match replay {
            Err((n, floor)) => {
                let _ = w
                    .send_raw("ERROR", ApiError::too_old(n, floor).to_status())
                    .await;
                return;
            }
            Ok(events) => {
                for e in events {
                    if let Flow::Stop = w.event(&e).await {
                        return;
                    }
                }
            }
        }
        let mut periodic =
            tokio::time::interval_at(Instant::now() + BOOKMARK_PERIOD, BOOKMARK_PERIOD);
        let mut last_bookmark_rv = start_rv;
        loop {
            let flow = tokio::select! {
                _ = epoch.changed() => Flow::Stop,
                _ = sleep_until(deadline) => Flow::Stop,
                _ = w.tx.closed() => Flow::Stop,
                _ = sleep_until(final_bookmark.unwrap_or(deadline)), if final_bookmark.is_some() => {
                    final_bookmark = None;
                    w.drain_and_bookmark(&mut rx).await
                }
                _ = periodic.tick(), if bookmarks => {
                    // Periodic bookmarks only once the storage revision moved past what the watcher saw.
                    let moved = w.shared.db.lock().store.rv() > last_bookmark_rv;
                    if moved {
                        w.drain_and_bookmark(&mut rx).await
                    } else {
                        Flow::Continue
                    }
                }
                r = rx.recv() => match r {
                    Ok(e) => w.event(&e).await,
                    // A watcher that fell behind is closed, as the real server does.
                    Err(_) => Flow::Stop,
                },
            };
            last_bookmark_rv = last_bookmark_rv.max(w.last_rv);
            if let Flow::Stop = flow {
                return;
            }
        }
    });
    let stream = futures::stream::unfold(body_rx, |mut rx| async move {
        rx.recv()
            .await
            .map(|b| (Ok::<_, std::convert::Infallible>(Frame::data(b)), rx))
    });
    let body: Body = StreamBody::new(stream).boxed_unsync();
    Response::builder()
        .status(200)
        .header(
            header::CONTENT_TYPE,
            if ctx.proto {
                "application/vnd.kubernetes.protobuf;stream=watch"
            } else {
                "application/json"
            },
        )
        .header(header::CACHE_CONTROL, "no-cache, private")
        .body(body)
        .map_err(|e| ApiError::internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_line_names_its_type_before_its_object() {
        let object = json!({"kind": "Foo", "apiVersion": "v1", "metadata": {"name": "a\"b"}});
        let l = line("MODIFIED", &object);
        let text = std::str::from_utf8(&l).unwrap();
        assert!(
            text.starts_with(r#"{"type":"MODIFIED","object":{"#),
            "{text}"
        );
        assert!(text.ends_with("}\n"), "{text}");
        let back: Value = serde_json::from_str(text.trim_end()).unwrap();
        assert_eq!(back, json!({"type": "MODIFIED", "object": object}));
    }
}
