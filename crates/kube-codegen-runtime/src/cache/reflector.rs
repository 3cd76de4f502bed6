//! [`Reflector`]: keeps a store in step with the API server by listing, then watching from the
//! list's resourceVersion (client-go's `tools/cache/reflector.go`).
//!
//! One round (`list_and_watch`): list (pages of 500 when reading at `""` or `"0"`), replace the
//! store, then watch from the last resourceVersion with bookmarks on and a timeout picked in
//! [5, 10) minutes. A watch the server ends normally is reopened at once from the last seen
//! resourceVersion; a `410 Gone` (the history no longer reaches it) ends the round, and the next
//! one relists. Rounds are separated by a jittered exponential backoff (800 ms doubling to 30 s,
//! back to the start two minutes after the last reset, as client-go's `DelayWithReset`), also
//! after a clean end, so a failing server is never hammered.
//!
//! resourceVersion of each list, as client-go picks it: `"0"` first (any cached state is fine),
//! then the last one seen ("not older than"); after a 410 on a list, `""` (a consistent read).
//! One difference: kube-client leaves `resourceVersion=0` out of a request that has a limit
//! (a server ignores the limit for it and sends everything), so the first list is a
//! consistent read in pages, as in kube-runtime, where client-go reads the watch cache whole.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use kube::api::{ListParams, VersionMatch, WatchEvent, WatchParams};
use kube::{Resource, ResourceExt};
use serde::de::DeserializeOwned;
use tokio::sync::watch;
use tokio::time::Instant;

use super::backoff::Backoff;
use super::source::ListWatch;
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

/// Called with every error that ends a list-and-watch round (a failed list, a watch that could
/// not start or failed), before the reflector backs off and relists: client-go's
/// `WatchErrorHandler`, for programs that want to see or count what otherwise is a log line.
pub type WatchErrorHandler = Arc<dyn Fn(&kube::Error) + Send + Sync>;

/// How a list-and-watch round ended without an error.
enum Round {
    /// The watch's resourceVersion expired (410): relist.
    Expired,
    /// The watch closed within a second without an event (client-go's `VeryShortWatchError`).
    VeryShort,
}

/// Tuning of a [`Reflector`]; the defaults are client-go's.
#[derive(Clone)]
#[non_exhaustive]
pub struct ReflectorOptions {
    /// First delay between rounds (doubles each round up to `backoff_cap`). Default 800 ms.
    pub backoff_initial: Duration,
    /// Largest delay between rounds before jitter (which adds up to as much again). Default 30 s.
    pub backoff_cap: Duration,
    /// Page size of lists read at `""` or `"0"`. Default 500.
    pub page_size: u32,
    /// Shortest watch timeout asked of the server; each watch picks one in [min, 2 min).
    /// Default 5 min.
    pub min_watch_timeout: Duration,
    /// See [`WatchErrorHandler`]; errors are logged either way.
    pub watch_error_handler: Option<WatchErrorHandler>,
}

impl fmt::Debug for ReflectorOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ReflectorOptions")
            .field("backoff_initial", &self.backoff_initial)
            .field("backoff_cap", &self.backoff_cap)
            .field("page_size", &self.page_size)
            .field("min_watch_timeout", &self.min_watch_timeout)
            .field("watch_error_handler", &self.watch_error_handler.is_some())
            .finish()
    }
}

impl Default for ReflectorOptions {
    fn default() -> Self {
        ReflectorOptions {
            backoff_initial: Duration::from_millis(800),
            backoff_cap: Duration::from_secs(30),
            page_size: 500,
            min_watch_timeout: Duration::from_secs(300),
            watch_error_handler: None,
        }
    }
}

impl ReflectorOptions {
    /// Sets the first and the largest delay between rounds.
    pub fn backoff(mut self, initial: Duration, cap: Duration) -> Self {
        self.backoff_initial = initial;
        self.backoff_cap = cap.max(initial);
        self
    }

    /// Sets the list page size (at least 1).
    pub fn page_size(mut self, n: u32) -> Self {
        self.page_size = n.max(1);
        self
    }

    /// Sets the [`WatchErrorHandler`].
    pub fn watch_error_handler(mut self, f: impl Fn(&kube::Error) + Send + Sync + 'static) -> Self {
        self.watch_error_handler = Some(Arc::new(f));
        self
    }
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
}

impl Position {
    /// Moves to `rv`; an event without one leaves the position alone (watching from `""` would
    /// replay every object).
    fn advance(&mut self, rv: Option<String>) {
        if let Some(rv) = rv.filter(|rv| !rv.is_empty()) {
            self.resource_version = rv;
        }
    }
}

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
        }
    }

    /// Replaces the options.
    pub fn with_options(mut self, options: ReflectorOptions) -> Self {
        self.options = options;
        self
    }

    /// A handle telling whether the first list has been stored.
    pub fn synced(&self) -> Synced {
        Synced(self.synced.subscribe())
    }

    /// Runs until the future is dropped (there is nothing else to stop it: errors are logged
    /// and retried after the backoff).
    ///
    /// The backoff grows while the server cannot be reached, and starts again from the initial
    /// delay as soon as the server answers anything: an expired resourceVersion (410) relists
    /// at once (unless the previous round also ended that way within a second), and an error
    /// status waits only the initial delay, so an informer converges as soon as the server is
    /// back instead of sitting out the delay it grew while the server was down.
    pub async fn run(self) {
        let mut backoff = Backoff::new(self.options.backoff_initial, self.options.backoff_cap);
        let mut pos = Position::default();
        let mut last_quick_relist: Option<Instant> = None;
        loop {
            let delay = match self.list_and_watch(&mut pos, &mut backoff).await {
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
                    Some(backoff.next_delay())
                }
            };
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
        }
    }

    async fn list_and_watch(
        &self,
        pos: &mut Position,
        backoff: &mut Backoff,
    ) -> Result<Round, kube::Error> {
        self.list(pos).await?;
        match self.watch(pos, backoff).await {
            WatchEnd::Relist => Ok(Round::Expired),
            WatchEnd::Failed(e) => Err(e),
            WatchEnd::VeryShort => Ok(Round::VeryShort),
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
        let (objects, rv) = match self.list_at(&at).await {
            Err(e) if is_gone(&e) && !at.is_empty() => {
                // The server no longer has that version: read the current state instead.
                pos.unavailable = true;
                self.list_at("").await?
            }
            other => other?,
        };
        pos.unavailable = false;
        self.store.replace(objects, &rv);
        pos.resource_version = rv;
        self.synced.send_replace(true);
        Ok(())
    }

    /// All objects at `rv` and the list's resourceVersion. Reads at `""` or `"0"` come in pages
    /// (a later page whose continue token expired is replaced by one full list); reads at a
    /// given version ask for no limit, so the server can answer from its watch cache.
    async fn list_at(&self, rv: &str) -> Result<(Vec<K>, String), kube::Error> {
        let base = match rv {
            "" => ListParams::default(),
            rv => ListParams::default()
                .at(rv)
                .matching(VersionMatch::NotOlderThan),
        };
        if !(rv.is_empty() || rv == "0") {
            return self.list_whole(&base).await;
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
            match self.api.list(&page).await {
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
                Err(e) if token.is_some() && is_gone(&e) => return self.list_whole(&base).await,
                Err(e) => return Err(e),
            }
        }
    }

    /// One unpaged list: its objects and resourceVersion.
    async fn list_whole(&self, params: &ListParams) -> Result<(Vec<K>, String), kube::Error> {
        let list = self.api.list(params).await?;
        Ok((
            list.items,
            list.metadata.resource_version.unwrap_or_default(),
        ))
    }

    async fn watch(&self, pos: &mut Position, backoff: &mut Backoff) -> WatchEnd {
        loop {
            let timeout = backoff.spread(self.options.min_watch_timeout);
            let params = WatchParams::default().timeout(timeout.as_secs().clamp(1, 3600) as u32);
            let stream = match self.api.watch(&params, &pos.resource_version).await {
                Ok(stream) => stream,
                Err(e) if is_gone(&e) => return WatchEnd::Relist,
                Err(e) if is_retryable_watch_start(&e) => {
                    // Too many requests or no connection: try the watch again, no relist.
                    tokio::time::sleep(backoff.next_delay()).await;
                    continue;
                }
                Err(e) => return WatchEnd::Failed(e),
            };
            let started = Instant::now();
            let mut events = 0u64;
            let mut stream = std::pin::pin!(stream);
            while let Some(event) = stream.next().await {
                events += 1;
                if let Some(wait) = self.store.ready() {
                    wait.await;
                }
                match event {
                    Ok(WatchEvent::Added(obj)) => {
                        pos.advance(obj.resource_version());
                        self.store.add(obj);
                    }
                    Ok(WatchEvent::Modified(obj)) => {
                        pos.advance(obj.resource_version());
                        self.store.update(obj);
                    }
                    Ok(WatchEvent::Deleted(obj)) => {
                        pos.advance(obj.resource_version());
                        self.store.delete(obj);
                    }
                    Ok(WatchEvent::Bookmark(b)) => {
                        self.store.bookmark(&b.metadata.resource_version);
                        pos.advance(Some(b.metadata.resource_version));
                    }
                    Ok(WatchEvent::Error(status)) if status.code == 410 => {
                        return WatchEnd::Relist;
                    }
                    Ok(WatchEvent::Error(status)) => {
                        return WatchEnd::Failed(kube::Error::Api(status));
                    }
                    Err(e) => return WatchEnd::Failed(e),
                }
            }
            if events == 0 && started.elapsed() < Duration::from_secs(1) {
                return WatchEnd::VeryShort;
            }
            // The server ended the watch (its timeout): carry on from where we are.
        }
    }
}

fn is_gone(e: &kube::Error) -> bool {
    matches!(e, kube::Error::Api(s) if s.code == 410)
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
