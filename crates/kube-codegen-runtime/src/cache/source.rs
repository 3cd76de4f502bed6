//! [`ListWatch`]: where a reflector lists and watches (client-go's `ListerWatcher`). A
//! [`kube::Api`] is one; tests and benchmarks can plug in an in-process source.

use futures::future::BoxFuture;
use futures::stream::BoxStream;
use futures::{FutureExt, StreamExt};
use kube::api::{Api, ListParams, ObjectList, WatchEvent, WatchParams};
use kube::core::Resource;
use serde::de::DeserializeOwned;
use std::fmt::Debug;

/// The annotation a sharded source puts on a watch-list's initial-events-end bookmark to pass
/// on the server's `metadata.shardInfo.selector` (kube's bookmark type keeps only annotations);
/// runtime-internal, never sent to a server.
pub const SHARD_INFO_ANNOTATION: &str = "kube-codegen.io/shard-info-selector";

/// A list and the `shardSelector` the server echoed in its `metadata.shardInfo.selector`.
pub type ShardedList<K> = (ObjectList<K>, Option<String>);

/// A stream of watch events.
pub type WatchStream<K> = BoxStream<'static, Result<WatchEvent<K>, kube::Error>>;

/// Lists and watches one kind.
pub trait ListWatch<K: Clone>: Send + Sync + 'static {
    /// One list request (one page when `params.limit` is set).
    fn list<'a>(
        &'a self,
        params: &'a ListParams,
    ) -> BoxFuture<'a, Result<ObjectList<K>, kube::Error>>;

    /// Opens a watch from `resource_version`.
    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        resource_version: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<K>, kube::Error>>;

    /// Whether [`watch`](Self::watch) serves a streaming watch-list: with
    /// `params.send_initial_events`, an `ADDED` event for every object, then a bookmark
    /// annotated `k8s.io/initial-events-end: "true"`, then changes. Only then does a reflector
    /// try one (client-go's `IsWatchListSemanticsUnSupported`, the other way round). False by
    /// default, so a source written for LIST then WATCH keeps working; a `kube::Api` says true
    /// (a server that refuses makes the reflector fall back to a LIST).
    fn supports_watch_list(&self) -> bool {
        false
    }

    /// A list restricted to `selector` (a `shardSelector`), and the selector the server echoed
    /// in `metadata.shardInfo.selector` (`None`: it did not apply it, and the caller filters).
    /// By default the selector is not sent and nothing is echoed.
    fn list_sharded<'a>(
        &'a self,
        params: &'a ListParams,
        selector: &'a str,
    ) -> BoxFuture<'a, Result<ShardedList<K>, kube::Error>> {
        let _ = selector;
        async move { Ok((self.list(params).await?, None)) }.boxed()
    }

    /// A watch restricted to `selector`; a watch-list's initial-events-end bookmark carries
    /// the server's echo as the annotation [`SHARD_INFO_ANNOTATION`]. By default
    /// the selector is not sent.
    fn watch_sharded<'a>(
        &'a self,
        params: &'a WatchParams,
        resource_version: &'a str,
        selector: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<K>, kube::Error>> {
        let _ = selector;
        self.watch(params, resource_version)
    }
}

impl<K> ListWatch<K> for Api<K>
where
    K: Resource + Clone + DeserializeOwned + Debug + Send + Sync + 'static,
{
    fn list<'a>(
        &'a self,
        params: &'a ListParams,
    ) -> BoxFuture<'a, Result<ObjectList<K>, kube::Error>> {
        Api::list(self, params).boxed()
    }

    fn watch<'a>(
        &'a self,
        params: &'a WatchParams,
        resource_version: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<K>, kube::Error>> {
        async move {
            let stream = Api::watch(self, params, resource_version).await?;
            Ok(stream.boxed())
        }
        .boxed()
    }

    fn supports_watch_list(&self) -> bool {
        true
    }

    #[cfg(feature = "sharding")]
    fn list_sharded<'a>(
        &'a self,
        params: &'a ListParams,
        selector: &'a str,
    ) -> BoxFuture<'a, Result<ShardedList<K>, kube::Error>> {
        crate::shard::source::list(self, params, selector).boxed()
    }

    #[cfg(feature = "sharding")]
    fn watch_sharded<'a>(
        &'a self,
        params: &'a WatchParams,
        resource_version: &'a str,
        selector: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<K>, kube::Error>> {
        crate::shard::source::watch(self, params, resource_version, selector).boxed()
    }
}
