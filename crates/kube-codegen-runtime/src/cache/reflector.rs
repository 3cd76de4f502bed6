//! [`Reflector`]: keeps a store in step with the API server (client-go's
//! `tools/cache/reflector.go`, 1.35 semantics).
//!
//! One round (`list_and_watch`) gets the full state, replaces the store with it, then follows
//! changes on a watch with bookmarks on and a timeout picked in [5, 10) minutes:
//! - **watch-list** (the default, when the source supports it): a watch with
//!   `sendInitialEvents=true`, `resourceVersionMatch=NotOlderThan`; its initial `ADDED` events
//!   are collected aside and stored as one replace when the bookmark annotated
//!   `k8s.io/initial-events-end: "true"` arrives, and the same stream goes on as the watch. It
//!   asks for resourceVersion `""` the first time (and after a 410), the last one seen after.
//!   A watch-list cut before that bookmark stores nothing and is opened again (after the
//!   backoff delay); a 410 opens it again at `""` (a 410 even there lists instead, where
//!   client-go would loop); one the server refuses (any other error) falls back to a LIST for
//!   this round, as client-go does; the next round tries the watch-list again.
//! - **LIST** otherwise: at `"0"` first (any cached state is fine: the server answers whole
//!   from its watch cache), then at the last resourceVersion seen ("not older than", whole);
//!   after a 410 on a list, at `""` (a consistent read, in pages of 500, a later page whose
//!   continue token expired replaced by one full list).
//!   [`ReflectorOptions::consistent_first_list`] makes the first list a consistent paged read.
//!
//! A watch the server ends normally is reopened at once from the last seen resourceVersion; a
//! `410 Gone` (the history no longer reaches it) ends the round, and the next one relists.
//! Rounds are separated by a jittered exponential backoff (800 ms doubling to 30 s, back to the
//! start two minutes after the last reset, as client-go's `DelayWithReset`), also after a clean
//! end, so a failing server is never hammered.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::future::BoxFuture;
use kube::Resource;
use kube::api::{ListParams, ObjectList, VersionMatch, WatchEvent, WatchParams};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::time::Instant;

use super::backoff::Backoff;
use super::health::{Health, ReflectorError};
use super::initial_events::{InitialEvents, ends_initial_events};
use super::metrics::ReflectorMetrics;
use super::reflector_options::ReflectorOptions;
use super::source::{ListWatch, SHARD_INFO_ANNOTATION, WatchStream};
use super::store::Store;

/// Where a reflector writes what it sees (client-go's `Store` as the reflector uses it).
pub trait ReflectorStore<K>: Send + Sync {
    /// The full content as of `resource_version` (a list or relist).
    fn replace(&self, objects: Vec<K>, resource_version: &str);
    /// An object was created.
    fn add(&self, object: K);
    /// An object changed.
    fn update(&self, object: K);
    /// An object was deleted (its last state).
    fn delete(&self, object: K);
    /// The server reached `resource_version` with nothing to report for this store.
    fn bookmark(&self, resource_version: &str) {
        let _ = resource_version;
    }
    /// Back-pressure: `Some(wait)` when the store wants the reflector to pause before the next
    /// event until `wait` completes (its consumers are too far behind); `None` to go on.
    fn ready(&self) -> Option<futures::future::BoxFuture<'static, ()>> {
        None
    }
    /// The watch has no further event ready (or the round ended): hand on whatever the store
    /// holds back for its consumers. A store may batch what it tells them between two calls,
    /// so a busy watch wakes a consumer once per batch rather than once per event.
    fn flush(&self) {}
}

impl<K: Resource + Send + Sync> ReflectorStore<K> for Store<K> {
    fn replace(&self, objects: Vec<K>, _: &str) {
        if let Err(e) = Store::replace(self, objects.into_iter().map(Arc::new)) {
            tracing::warn!("reflector: relist not stored: {e}");
        }
    }
    fn add(&self, object: K) {
        if let Err(e) = Store::add(self, Arc::new(object)) {
            tracing::warn!("reflector: event not stored: {e}");
        }
    }
    fn update(&self, object: K) {
        ReflectorStore::add(self, object);
    }
    fn delete(&self, object: K) {
        if let Err(e) = Store::delete(self, &object) {
            tracing::warn!("reflector: delete not stored: {e}");
        }
    }
}

/// How a list-and-watch round ended without an error.
enum Round {
    /// The watch's resourceVersion expired (410): relist.
    Expired,
    /// The watch closed within a second without an event (client-go's `VeryShortWatchError`).
    VeryShort,
}

/// Whether a reflector has stored its first full list.
#[derive(Debug, Clone)]
pub struct Synced(watch::Receiver<bool>);

impl Synced {
    /// True once the first list has been stored.
    pub fn has_synced(&self) -> bool {
        *self.0.borrow()
    }

    /// Waits until the first list has been stored. Returns false if the reflector was dropped
    /// before that.
    pub async fn wait(&mut self) -> bool {
        self.0.wait_for(|synced| *synced).await.is_ok()
    }
}

/// Lists and watches one kind through a [`ListWatch`] (a [`kube::Api`], usually) into a
/// [`ReflectorStore`].
pub struct Reflector<K> {
    api: Arc<dyn ListWatch<K>>,
    store: Arc<dyn ReflectorStore<K>>,
    options: ReflectorOptions,
    synced: watch::Sender<bool>,
    health: Health,
    metrics: Option<ReflectorMetrics>,
    /// The replica's ranges and the filter in front of the store (`ReflectorOptions::sharded`).
    #[cfg(feature = "sharding")]
    shard: Option<Sharded>,
}

/// A sharded reflector's scope, the filter in front of its store, and its entry in the ring's
/// record of what the informers have listed.
#[cfg(feature = "sharding")]
struct Sharded {
    scope: crate::shard::ShardScope,
    filter: Arc<crate::shard::source::Filter>,
    listed: crate::shard::caches::CacheSlot,
}

impl<K> fmt::Debug for Reflector<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Reflector")
            .field("options", &self.options)
            .field("synced", &*self.synced.borrow())
            .finish_non_exhaustive()
    }
}

/// Why a watch round ended.
enum WatchEnd {
    /// 410 Gone, or the server's error event: list again.
    Relist,
    /// A request or stream failed: list again after the backoff.
    Failed(kube::Error),
    /// The watch closed within a second without an event (client-go's `VeryShortWatchError`).
    VeryShort,
}

/// The reflector's position.
#[derive(Debug, Default)]
struct Position {
    /// Last resourceVersion seen (list, event or bookmark).
    resource_version: String,
    /// The last list failed with 410: the next one reads at `""` (consistent).
    unavailable: bool,
    /// The `shardSelector` of this round's ranges (sharded reflectors only; none for a kind
    /// filtered by its owner in the client).
    selector: Option<String>,
    /// The assignment generation of this round (sharded reflectors only).
    #[cfg(feature = "sharding")]
    generation: u64,
}

impl Position {
    /// Moves to `rv`; an event without one leaves the position alone (watching from `""` would
    /// replay every object).
    fn advance(&mut self, rv: Option<&str>) {
        if let Some(rv) = rv.filter(|rv| !rv.is_empty()) {
            // Reuses the buffer: this runs for every event.
            rv.clone_into(&mut self.resource_version);
        }
    }
}

/// A watch already open when the watch phase starts: the rest of a watch-list's stream.
struct OpenWatch<K> {
    stream: WatchStream<K>,
    started: Instant,
    events: u64,
}

/// How a watch-list's initial phase ended.
enum Initial {
    /// The end bookmark arrived, at this resourceVersion, with the `shardSelector` the server
    /// echoed on it.
    Done(String, Option<String>),
    /// The stream ended cleanly before the end bookmark.
    Interrupted,
    /// The resourceVersion asked for is too old (410).
    Gone,
    /// An error event or a broken stream.
    Failed(kube::Error),
}

/// How often a watch-list still waiting for its end bookmark is logged (client-go's 10 s).
const BOOKMARK_WAIT_WARNING: Duration = Duration::from_secs(10);

impl<K> Reflector<K>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug + Send + Sync + 'static,
{
    /// A reflector with client-go's defaults, reading from `source` (e.g. a `kube::Api`).
    pub fn new(source: impl ListWatch<K>, store: Arc<dyn ReflectorStore<K>>) -> Self {
        Self::from_shared(Arc::new(source), store)
    }

    /// Like [`new`](Self::new) with a shared source.
    pub fn from_shared(source: Arc<dyn ListWatch<K>>, store: Arc<dyn ReflectorStore<K>>) -> Self {
        Reflector {
            api: source,
            store,
            options: ReflectorOptions::default(),
            synced: watch::channel(false).0,
            health: Health::default(),
            metrics: None,
            #[cfg(feature = "sharding")]
            shard: None,
        }
    }

    /// Replaces the options.
    pub fn with_options(mut self, options: ReflectorOptions) -> Self {
        self.metrics = options.metrics.as_ref().map(ReflectorMetrics::new);
        #[cfg(feature = "sharding")]
        if let Some(scope) = options.shard.as_ref().map(|s| s.for_kind::<K>())
            && self.shard.is_none()
        {
            // Only sharded reflectors pay for the filter: the unsharded path stays as it was.
            let filter = Arc::new(crate::shard::source::Filter::new(
                scope.key,
                scope.owner.clone(),
            ));
            self.store = Arc::new(crate::shard::source::FilteredStore {
                inner: self.store.clone(),
                filter: filter.clone(),
            });
            let listed = scope.caches.register();
            self.shard = Some(Sharded {
                scope,
                filter,
                listed,
            });
        }
        self.options = options;
        self
    }

    /// Reports failures to `health` (an informer's, which outlives its runs).
    pub(crate) fn with_health(mut self, health: Health) -> Self {
        self.health = health;
        self
    }

    /// A handle telling whether the first list has been stored.
    pub fn synced(&self) -> Synced {
        Synced(self.synced.subscribe())
    }

    /// A handle on the reflector's failures, usable while it runs.
    pub fn health(&self) -> ReflectorHealth {
        ReflectorHealth(self.health.clone())
    }

    /// Runs until the future is dropped (there is nothing else to stop it: errors are logged,
    /// passed to the [watch error handler](ReflectorOptions::watch_error_handler), kept for
    /// [`ReflectorHealth::last_error`], and retried after the backoff).
    ///
    /// The backoff grows while the server cannot be reached, and starts again from the initial
    /// delay once a watch held (more than a second or an event) and as soon as the server
    /// answers anything: an expired resourceVersion (410) relists
    /// at once (unless the previous round also ended that way within a second), and an error
    /// status waits only the initial delay, so an informer converges as soon as the server is
    /// back instead of sitting out the delay it grew while the server was down.
    pub async fn run(self) {
        let mut backoff = Backoff::new(self.options.backoff_initial, self.options.backoff_cap);
        let mut pos = Position::default();
        let mut last_quick_relist: Option<Instant> = None;
        loop {
            let Some(round) = self.round(&mut pos, &mut backoff).await else {
                // The replica's ranges changed: list and watch again with the new selector.
                continue;
            };
            let delay = match round {
                Ok(Round::Expired) => {
                    backoff.reset();
                    let again =
                        last_quick_relist.is_some_and(|t| t.elapsed() < Duration::from_secs(1));
                    last_quick_relist = Some(Instant::now());
                    tracing::debug!("reflector: resourceVersion expired; relisting");
                    again.then(|| backoff.next_delay())
                }
                Ok(Round::VeryShort) => {
                    tracing::warn!("reflector: watch closed at once without events");
                    Some(backoff.next_delay())
                }
                Err(e) => {
                    tracing::warn!("reflector: {e}; relisting after backoff");
                    if let Some(handler) = &self.options.watch_error_handler {
                        handler(&e);
                    }
                    if matches!(e, kube::Error::Api(_)) {
                        // The server answered: it is reachable, only this request failed.
                        backoff.reset();
                    }
                    self.health.failed(e);
                    self.shard_failed();
                    Some(backoff.next_delay())
                }
            };
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
        }
    }

    /// One list-and-watch round; `None` when a sharded reflector's ranges changed during it.
    async fn round(
        &self,
        pos: &mut Position,
        backoff: &mut Backoff,
    ) -> Option<Result<Round, kube::Error>> {
        #[cfg(feature = "sharding")]
        if let Some(Sharded { scope, filter, .. }) = &self.shard {
            let mut assignment = scope.assignment.clone();
            let (ranges, generation) = {
                let a = assignment.borrow_and_update();
                (a.ranges.clone(), a.generation)
            };
            pos.generation = generation;
            // A selector too long for a request line asks for a superset; the filter then
            // drops the rest here whatever the server does. A kind that follows its owner
            // sends none (the server cannot select on owner references) and filters it all.
            let sent =
                crate::shard::range::coarsen(&ranges, crate::shard::range::MAX_SELECTOR_TERMS);
            pos.selector = match scope.owner {
                Some(_) => None,
                None => sent.selector(scope.key).map(|s| s.to_string()),
            };
            filter.set_ranges(ranges.clone(), sent != ranges || scope.owner.is_some());
            let changed = async move {
                if assignment.changed().await.is_err() {
                    // The ranges can no longer change: keep the last ones.
                    std::future::pending::<()>().await;
                }
            };
            if ranges.is_empty() {
                // Owning nothing: an empty cache (what was cached is reported deleted), no
                // request until ranges arrive.
                let rv = pos.resource_version.clone();
                self.stored(pos, Vec::new(), rv);
                changed.await;
                return None;
            }
            return tokio::select! {
                round = self.list_and_watch(pos, backoff) => Some(round),
                () = changed => None,
            };
        }
        Some(self.list_and_watch(pos, backoff).await)
    }

    async fn list_and_watch(
        &self,
        pos: &mut Position,
        backoff: &mut Backoff,
    ) -> Result<Round, kube::Error> {
        let mut open = None;
        if self.options.watch_list && self.api.supports_watch_list() {
            match self.watch_list(pos, backoff).await {
                Ok(watch) => open = Some(watch),
                Err(e) => {
                    tracing::info!("reflector: watch-list failed ({e}); listing instead");
                    if let Some(m) = &self.metrics {
                        m.fallback();
                    }
                }
            }
        }
        if open.is_none() {
            self.list(pos).await?;
        }
        match self.watch(pos, backoff, open).await {
            WatchEnd::Relist => Ok(Round::Expired),
            WatchEnd::Failed(e) => Err(e),
            WatchEnd::VeryShort => Ok(Round::VeryShort),
        }
    }

    /// Stores a full state and marks the reflector synced.
    fn stored(&self, pos: &mut Position, objects: Vec<K>, rv: String) {
        self.store.replace(objects, &rv);
        pos.unavailable = false;
        pos.resource_version = rv;
        self.moved(pos);
        self.health.recovered();
        self.synced.send_replace(true);
        #[cfg(feature = "sharding")]
        if let Some(sharded) = &self.shard {
            sharded.listed.listed(pos.generation);
        }
    }

    /// Reports a new position to the metrics.
    fn moved(&self, pos: &Position) {
        if let Some(m) = &self.metrics {
            m.resource_version(&pos.resource_version);
        }
    }

    /// A streaming watch-list (client-go's `watchList()`): the initial events are collected
    /// until the end bookmark, stored as one replace, and the stream is handed on as the
    /// round's watch. Errors that ask for a retry (429, no connection, 410, a stream cut
    /// before the bookmark) open a new one; any other is returned, and the round lists instead.
    async fn watch_list(
        &self,
        pos: &mut Position,
        backoff: &mut Backoff,
    ) -> Result<OpenWatch<K>, kube::Error> {
        loop {
            let at = if pos.unavailable {
                String::new()
            } else {
                pos.resource_version.clone()
            };
            let timeout = backoff.spread(self.options.min_watch_timeout);
            let params =
                WatchParams::streaming_lists().timeout(timeout.as_secs().clamp(1, 3600) as u32);
            if let Some(m) = &self.metrics {
                m.list_started();
                m.watch_started();
            }
            let started = Instant::now();
            let stream = match self
                .watch_request(&params, &at, pos.selector.as_deref())
                .await
            {
                Ok(stream) => Some(stream),
                // A consistent read cannot be too old: a 410 for it would loop.
                Err(e) if is_unavailable_version(&e) && !at.is_empty() => None,
                Err(e) if is_retryable_watch_start(&e) => {
                    self.list_failed(started);
                    self.retrying(e);
                    tokio::time::sleep(backoff.next_delay()).await;
                    continue;
                }
                Err(e) => {
                    self.list_failed(started);
                    return Err(e);
                }
            };
            let Some(mut stream) = stream else {
                self.list_failed(started);
                pos.unavailable = true;
                continue;
            };
            let mut initial = InitialEvents::new();
            let mut events = 0u64;
            let ended = self
                .initial_events(&mut stream, &mut initial, &mut events)
                .await;
            match ended {
                Initial::Done(rv, echo) => {
                    if let Some(sent) = &pos.selector {
                        self.shard_echo(sent, echo.as_deref());
                    }
                    let n = initial.len();
                    self.stored(pos, initial.into_objects(), rv);
                    if let Some(m) = &self.metrics {
                        m.list_ended(started.elapsed(), Some(n));
                    }
                    return Ok(OpenWatch {
                        stream,
                        started,
                        events,
                    });
                }
                other => {
                    self.list_failed(started);
                    if let Some(m) = &self.metrics {
                        m.watch_ended(started.elapsed(), events);
                    }
                    match other {
                        Initial::Gone if !at.is_empty() => pos.unavailable = true,
                        Initial::Gone => return Err(gone_for_consistent_read()),
                        Initial::Failed(e) => return Err(e),
                        _ => {
                            tracing::debug!(
                                "reflector: watch-list ended before its initial events did \
                                 ({} objects dropped); opening it again",
                                initial.len()
                            );
                            tokio::time::sleep(backoff.next_delay()).await;
                        }
                    }
                }
            }
        }
    }

    /// Reads a watch-list's stream up to the end bookmark.
    async fn initial_events(
        &self,
        stream: &mut WatchStream<K>,
        initial: &mut InitialEvents<K>,
        events: &mut u64,
    ) -> Initial {
        let mut warn = tokio::time::interval_at(
            Instant::now() + BOOKMARK_WAIT_WARNING,
            BOOKMARK_WAIT_WARNING,
        );
        loop {
            let event = tokio::select! {
                event = stream.next() => event,
                _ = warn.tick() => {
                    tracing::warn!(
                        "reflector: awaiting the bookmark that ends the watch-list's initial \
                         events ({} objects so far)",
                        initial.len()
                    );
                    continue;
                }
            };
            let Some(event) = event else {
                return Initial::Interrupted;
            };
            *events += 1;
            match event {
                Ok(WatchEvent::Added(obj) | WatchEvent::Modified(obj)) => initial.put(obj),
                Ok(WatchEvent::Deleted(obj)) => initial.remove(&obj),
                Ok(WatchEvent::Bookmark(mut b)) if ends_initial_events(&b) => {
                    let echo = b.metadata.annotations.remove(SHARD_INFO_ANNOTATION);
                    return Initial::Done(b.metadata.resource_version, echo);
                }
                Ok(WatchEvent::Bookmark(_)) => {}
                Ok(WatchEvent::Error(status)) if status.code == 410 || is_too_large(&status) => {
                    return Initial::Gone;
                }
                Ok(WatchEvent::Error(status)) => return Initial::Failed(kube::Error::Api(status)),
                Err(e) => return Initial::Failed(e),
            }
        }
    }

    /// A watch could not start and is tried again within the round (429, no connection):
    /// client-go only logs these, but a program asking about the reflector's health should see
    /// that it cannot reach the server.
    fn retrying(&self, e: kube::Error) {
        tracing::debug!("reflector: watch not started ({e}); trying again after backoff");
        self.health.failed(e);
        self.shard_failed();
    }

    /// A sharded reflector tells its ring it is failing (so the ring does not wait on it for
    /// ever before acknowledging a table).
    fn shard_failed(&self) {
        #[cfg(feature = "sharding")]
        if let Some(sharded) = &self.shard {
            sharded.listed.failed();
        }
    }

    fn list_failed(&self, started: Instant) {
        if let Some(m) = &self.metrics {
            m.list_ended(started.elapsed(), None);
        }
    }

    async fn list(&self, pos: &mut Position) -> Result<(), kube::Error> {
        let at = if pos.unavailable {
            String::new()
        } else if pos.resource_version.is_empty() {
            "0".to_owned()
        } else {
            pos.resource_version.clone()
        };
        if let Some(m) = &self.metrics {
            m.list_started();
        }
        let started = Instant::now();
        let sel = pos.selector.as_deref();
        let listed = match self.list_at(&at, sel).await {
            Err(e) if is_unavailable_version(&e) && !at.is_empty() => {
                // The server cannot serve that version (compacted, or ahead of its watch
                // cache): read the current state instead.
                pos.unavailable = true;
                self.list_at("", sel).await
            }
            other => other,
        };
        let (objects, rv) = listed.inspect_err(|_| self.list_failed(started))?;
        let n = objects.len();
        self.stored(pos, objects, rv);
        if let Some(m) = &self.metrics {
            m.list_ended(started.elapsed(), Some(n));
        }
        Ok(())
    }

    /// All objects at `rv` and the list's resourceVersion. Consistent reads (`""`) come in
    /// pages (a later page whose continue token expired is replaced by one full list); reads
    /// at `"0"` or a given version ask for no limit, so the server answers from its watch cache
    /// (kube-client would drop `resourceVersion=0` from a request with a limit).
    async fn list_at(&self, rv: &str, sel: Option<&str>) -> Result<(Vec<K>, String), kube::Error> {
        let base = match rv {
            "" => ListParams::default(),
            "0" if self.options.consistent_first_list => ListParams::default(),
            "0" => ListParams::default().at("0"),
            rv => ListParams::default()
                .at(rv)
                .matching(VersionMatch::NotOlderThan),
        };
        if base.resource_version.is_some() {
            return self.list_whole(&base, sel).await;
        }
        let mut objects = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let page = match &token {
                None => base.clone().limit(self.options.page_size),
                // A continued list may not name a resourceVersion: the token carries it.
                Some(t) => ListParams::default()
                    .limit(self.options.page_size)
                    .continue_token(t),
            };
            match self.list_request(&page, sel).await {
                Ok(list) => {
                    objects.extend(list.items);
                    match list.metadata.continue_.filter(|c| !c.is_empty()) {
                        Some(next) => token = Some(next),
                        None => {
                            let rv = list.metadata.resource_version.unwrap_or_default();
                            return Ok((objects, rv));
                        }
                    }
                }
                Err(e) if token.is_some() && is_gone(&e) => {
                    return self.list_whole(&base, sel).await;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// One unpaged list: its objects and resourceVersion.
    async fn list_whole(
        &self,
        params: &ListParams,
        sel: Option<&str>,
    ) -> Result<(Vec<K>, String), kube::Error> {
        let list = self.list_request(params, sel).await?;
        Ok((
            list.items,
            list.metadata.resource_version.unwrap_or_default(),
        ))
    }

    /// A list, with the round's `shardSelector` when sharded.
    async fn list_request(
        &self,
        params: &ListParams,
        sel: Option<&str>,
    ) -> Result<ObjectList<K>, kube::Error> {
        match sel {
            None => self.api.list(params).await,
            Some(sent) => {
                let (list, echo) = self.api.list_sharded(params, sent).await?;
                self.shard_echo(sent, echo.as_deref());
                Ok(list)
            }
        }
    }

    /// A watch, with the round's `shardSelector` when sharded.
    fn watch_request<'a>(
        &'a self,
        params: &'a WatchParams,
        resource_version: &'a str,
        sel: Option<&'a str>,
    ) -> BoxFuture<'a, Result<WatchStream<K>, kube::Error>> {
        match sel {
            None => self.api.watch(params, resource_version),
            Some(sent) => self.api.watch_sharded(params, resource_version, sent),
        }
    }

    /// Whether the server applied the selector decides whether the client filters (the
    /// server's answer, never a guess: an echo of exactly what was sent).
    fn shard_echo(&self, sent: &str, echo: Option<&str>) {
        #[cfg(feature = "sharding")]
        if let Some(Sharded { filter, .. }) = &self.shard
            && !filter.server_applied(sent, echo)
        {
            tracing::debug!("reflector: shardSelector not applied by the server; filtering here");
        }
        #[cfg(not(feature = "sharding"))]
        let _ = (sent, echo);
    }

    /// Follows changes from the position, on `open` first if given (a watch-list's stream),
    /// then on new watches, until the round must end.
    async fn watch(
        &self,
        pos: &mut Position,
        backoff: &mut Backoff,
        mut open: Option<OpenWatch<K>>,
    ) -> WatchEnd {
        loop {
            let (mut stream, started, mut events, fresh) = match open.take() {
                Some(o) => (o.stream, o.started, o.events, false),
                None => {
                    let timeout = backoff.spread(self.options.min_watch_timeout);
                    let params =
                        WatchParams::default().timeout(timeout.as_secs().clamp(1, 3600) as u32);
                    if let Some(m) = &self.metrics {
                        m.watch_started();
                    }
                    let watched = self
                        .watch_request(&params, &pos.resource_version, pos.selector.as_deref())
                        .await;
                    match watched {
                        Ok(stream) => {
                            self.health.recovered();
                            (stream, Instant::now(), 0, true)
                        }
                        Err(e) if is_gone(&e) => return WatchEnd::Relist,
                        Err(e) if is_retryable_watch_start(&e) => {
                            // Too many requests or no connection: try the watch again, no relist.
                            self.retrying(e);
                            tokio::time::sleep(backoff.next_delay()).await;
                            continue;
                        }
                        Err(e) => return WatchEnd::Failed(e),
                    }
                }
            };
            let before = events;
            let end = self.follow(&mut stream, pos, &mut events).await;
            if let Some(m) = &self.metrics {
                m.watch_ended(started.elapsed(), events);
            }
            let very_short =
                fresh && events == before && started.elapsed() < Duration::from_secs(1);
            if !very_short {
                // A list and a watch that held: the server is healthy, so whatever ends this
                // watch starts from the initial delay (as kube-runtime's watcher resets its
                // backoff), not from the one an earlier outage grew (client-go keeps that for
                // two minutes, which slows the return after a second outage a minute later).
                backoff.reset();
            }
            if let Some(end) = end {
                return end;
            }
            if very_short {
                if let Some(m) = &self.metrics {
                    m.short_watch();
                }
                return WatchEnd::VeryShort;
            }
            // The server ended the watch (its timeout): carry on from where we are.
        }
    }

    /// Applies a watch's events until it closes (`None`) or the round must end. Whatever the
    /// store held back for its consumers is flushed whenever the stream has nothing ready, and
    /// when the watch ends.
    async fn follow(
        &self,
        stream: &mut WatchStream<K>,
        pos: &mut Position,
        events: &mut u64,
    ) -> Option<WatchEnd> {
        let end = self.apply_events(stream, pos, events).await;
        self.store.flush();
        end
    }

    async fn apply_events(
        &self,
        stream: &mut WatchStream<K>,
        pos: &mut Position,
        events: &mut u64,
    ) -> Option<WatchEnd> {
        loop {
            let next = std::future::poll_fn(|cx| {
                let polled = stream.poll_next_unpin(cx);
                if polled.is_pending() {
                    self.store.flush();
                }
                polled
            });
            // The stream's end ends the watch (`None`).
            let event = next.await?;
            *events += 1;
            if let Some(wait) = self.store.ready() {
                wait.await;
            }
            match event {
                Ok(WatchEvent::Added(obj)) => {
                    pos.advance(obj.meta().resource_version.as_deref());
                    self.store.add(obj);
                }
                Ok(WatchEvent::Modified(obj)) => {
                    pos.advance(obj.meta().resource_version.as_deref());
                    self.store.update(obj);
                }
                Ok(WatchEvent::Deleted(obj)) => {
                    pos.advance(obj.meta().resource_version.as_deref());
                    self.store.delete(obj);
                }
                Ok(WatchEvent::Bookmark(b)) => {
                    self.store.bookmark(&b.metadata.resource_version);
                    pos.advance(Some(&b.metadata.resource_version));
                }
                Ok(WatchEvent::Error(status)) if status.code == 410 => {
                    return Some(WatchEnd::Relist);
                }
                Ok(WatchEvent::Error(status)) => {
                    return Some(WatchEnd::Failed(kube::Error::Api(status)));
                }
                Err(e) => return Some(WatchEnd::Failed(e)),
            }
            self.moved(pos);
        }
    }
}

/// What a program can ask about a running [`Reflector`]'s failures (a cheap handle).
#[derive(Debug, Clone)]
pub struct ReflectorHealth(Health);

impl ReflectorHealth {
    /// The last failure, while nothing has worked since; `None` while the reflector is healthy.
    /// A failure is an error that ended a round (those the
    /// [watch error handler](ReflectorOptions::watch_error_handler) sees) or a watch that could
    /// not start and is being retried (429, no connection). Storing a full list or opening a
    /// watch clears it. A watch-list the server refuses is no failure: the round lists instead.
    pub fn last_error(&self) -> Option<ReflectorError> {
        self.0.last_error()
    }
}

/// The error a watch-list at `""` ends with when the server still answers 410.
fn gone_for_consistent_read() -> kube::Error {
    kube::Error::Api(Box::new(
        kube::core::Status::failure(
            "watch-list at resourceVersion \"\" answered 410 Gone",
            "Expired",
        )
        .with_code(410),
    ))
}

fn is_gone(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 410)
}

/// The server cannot serve the resourceVersion asked for: 410 (compacted), or 504 "Too large
/// resource version" (its watch cache is behind the version, e.g. after the client talked to
/// another apiserver). client-go's `isExpiredError || isTooLargeResourceVersionError`: the
/// next read goes to `""`, or it would ask for the same version forever.
fn is_unavailable_version(e: &kube::Error) -> bool {
    is_gone(e) || matches!(e, kube::Error::Api(s) if is_too_large(s))
}

/// apimachinery's `IsTooLargeResourceVersion`: a Timeout whose causes include
/// `ResourceVersionTooLarge` (older servers say so only in the message).
fn is_too_large(s: &kube::core::Status) -> bool {
    s.code == 504
        && (s.details.as_ref().is_some_and(|d| {
            d.causes
                .iter()
                .any(|c| c.reason == "ResourceVersionTooLarge")
        }) || s.message.contains("Too large resource version"))
}

/// A watch that could not start for a reason worth retrying as is: 429, or a transport error
/// (connection refused while the server restarts).
fn is_retryable_watch_start(e: &kube::Error) -> bool {
    match e {
        kube::Error::Api(s) => s.code == 429,
        kube::Error::HyperError(_) | kube::Error::Service(_) => true,
        _ => false,
    }
}
