//! Events about objects (what `kubectl describe` lists under an object), with repeats
//! aggregated so a hot loop does not create an Event object per occurrence.
//!
//! This is kube's own `kube::runtime::events::Recorder`: it writes `events.k8s.io/v1` Events
//! and keeps client-go's isomorphic-event cache (key: type, reason, action, reporting
//! controller and instance, regarding and related object; six minutes), so a repeat patches
//! the first Event's `series` (`count`, `lastObservedTime`) instead of creating another.
//! The one thing added here is client-go's recovery when the series' Event is gone (events
//! expire on the server, or were deleted): kube's recorder would keep patching it and fail
//! until its cache entry aged out; this one starts over with a new Event.
//!
//! Unlike client-go, which counts repeats in memory and writes the series at most every few
//! minutes, kube's recorder sends one PATCH per repeat, so the server's count is always
//! current but each repeat is a request.

use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use parking_lot::Mutex;

pub use kube::runtime::events::{Event, EventType, Reporter};

/// Publishes [`Event`]s through one reporter, aggregating repeats. Cheap to clone; clones
/// share the aggregation cache.
#[derive(Clone)]
pub struct Recorder {
    client: kube::Client,
    reporter: Reporter,
    inner: Arc<Mutex<kube::runtime::events::Recorder>>,
}

impl std::fmt::Debug for Recorder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Recorder")
            .field("reporter", &self.reporter)
            .finish_non_exhaustive()
    }
}

impl Recorder {
    /// A recorder reporting as `reporter` (a `&str` controller name takes the hostname as
    /// its instance, as kube does).
    pub fn new(client: kube::Client, reporter: impl Into<Reporter>) -> Self {
        let reporter = reporter.into();
        let inner = kube::runtime::events::Recorder::new(client.clone(), reporter.clone());
        Recorder {
            client,
            reporter,
            inner: Arc::new(Mutex::new(inner)),
        }
    }

    /// The reporter events are published as.
    pub fn reporter(&self) -> &Reporter {
        &self.reporter
    }

    /// Publishes `event` about the object `regarding` refers to, in that object's namespace
    /// (`default` for cluster-scoped objects). A repeat of an event published in the last six
    /// minutes updates the first one's series instead of creating another Event.
    pub async fn publish(
        &self,
        event: &Event,
        regarding: &ObjectReference,
    ) -> Result<(), kube::Error> {
        let inner = self.inner.lock().clone();
        match inner.publish(event, regarding).await {
            Err(kube::Error::Api(status)) if status.is_not_found() => {
                // The patched Event is gone (or the namespace is): drop the stale series and
                // create anew, as client-go does; a second 404 is returned.
                let fresh = kube::runtime::events::Recorder::new(
                    self.client.clone(),
                    self.reporter.clone(),
                );
                *self.inner.lock() = fresh.clone();
                fresh.publish(event, regarding).await
            }
            other => other,
        }
    }

    /// [`publish`](Self::publish) about `object` (its `object_ref`).
    pub async fn publish_for<K>(&self, event: &Event, object: &K) -> Result<(), kube::Error>
    where
        K: Resource<DynamicType = ()>,
    {
        self.publish(event, &object.object_ref(&())).await
    }
}
