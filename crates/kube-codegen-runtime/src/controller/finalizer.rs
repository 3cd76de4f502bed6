//! The finalizer helper (kube-runtime's `finalizer`, controller-runtime's
//! `controllerutil.AddFinalizer`/`RemoveFinalizer` around a reconcile).

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use kube::Resource;
use kube::api::{Api, Patch, PatchParams};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::json;

use super::Action;

/// How many times a finalizer write is tried on conflicts (client-go's `retry.DefaultRetry`).
const CONFLICT_ATTEMPTS: usize = 5;

/// What [`finalizer`] asks of the reconcile.
#[derive(Debug)]
pub enum FinalizerEvent<K> {
    /// The object lives (and carries the finalizer): bring the world to its spec.
    Apply(Arc<K>),
    /// The object is being deleted: release what it holds. The finalizer is removed, and the
    /// server deletes the object, only once this returns `Ok`.
    Cleanup(Arc<K>),
}

/// Why [`finalizer`] failed. An `Err` from the reconcile keeps the object (and the finalizer),
/// so the controller's error backoff retries it.
#[derive(Debug, thiserror::Error)]
pub enum FinalizerError<E: fmt::Display + fmt::Debug> {
    /// The apply step failed.
    #[error("apply failed: {0}")]
    Apply(#[source] E),
    /// The cleanup failed: the finalizer stays.
    #[error("cleanup failed: {0}")]
    Cleanup(#[source] E),
    /// Adding or removing the finalizer failed (after retrying conflicts).
    #[error("writing finalizer {finalizer:?}: {source}")]
    Write {
        /// The finalizer.
        finalizer: String,
        /// The server's answer.
        #[source]
        source: kube::Error,
    },
    /// The object has no name.
    #[error("object without metadata.name")]
    NoName,
}

/// Runs `reconcile` under the finalizer `name` (a qualified name, `example.com/cleanup`):
/// - a live object without it gets it first (a merge patch conditional on its resourceVersion,
///   retried on conflicts with the object read again), then `Apply` with the patched object;
/// - a live object with it: `Apply`;
/// - an object being deleted (`deletionTimestamp` set) with it: `Cleanup`, then the finalizer
///   is removed the same way; without it (or already gone from the server): nothing to do.
///
/// `api` must reach the object (`Api::namespaced` in its namespace, or `Api::all` for a
/// cluster-scoped kind).
pub async fn finalizer<K, E, F, Fut>(
    api: &Api<K>,
    name: &str,
    object: Arc<K>,
    reconcile: F,
) -> Result<Action, FinalizerError<E>>
where
    K: Resource + Clone + Serialize + DeserializeOwned + fmt::Debug,
    E: fmt::Display + fmt::Debug,
    F: FnOnce(FinalizerEvent<K>) -> Fut,
    Fut: Future<Output = Result<Action, E>>,
{
    let has = |o: &K| {
        o.meta()
            .finalizers
            .as_ref()
            .is_some_and(|f| f.iter().any(|x| x == name))
    };
    if object.meta().deletion_timestamp.is_some() {
        if !has(&object) {
            return Ok(Action::done());
        }
        let action = reconcile(FinalizerEvent::Cleanup(object.clone()))
            .await
            .map_err(FinalizerError::Cleanup)?;
        edit(api, name, &object, false).await?;
        return Ok(action);
    }
    let object = if has(&object) {
        object
    } else {
        match edit(api, name, &object, true).await? {
            Some(patched) => Arc::new(patched),
            None => return Ok(Action::done()), // deleted meanwhile
        }
    };
    reconcile(FinalizerEvent::Apply(object))
        .await
        .map_err(FinalizerError::Apply)
}

/// Adds (`add`) or removes `name` in the object's finalizers; `None` when the object is gone.
async fn edit<K, E>(
    api: &Api<K>,
    name: &str,
    object: &K,
    add: bool,
) -> Result<Option<K>, FinalizerError<E>>
where
    K: Resource + Clone + DeserializeOwned + fmt::Debug,
    E: fmt::Display + fmt::Debug,
{
    let object_name = object.meta().name.clone().ok_or(FinalizerError::NoName)?;
    let write_error = |source| FinalizerError::Write {
        finalizer: name.to_owned(),
        source,
    };
    let mut current = object.clone();
    let mut attempt = 0;
    loop {
        attempt += 1;
        let meta = current.meta();
        let mut finalizers = meta.finalizers.clone().unwrap_or_default();
        finalizers.retain(|f| f != name);
        if add {
            finalizers.push(name.to_owned());
        }
        // A merge patch replaces the list whole; the resourceVersion makes it conditional, so
        // a concurrent change to the list is a 409, never lost.
        let patch = json!({"metadata": {
            "resourceVersion": meta.resource_version,
            "finalizers": finalizers,
        }});
        match api
            .patch(&object_name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(patched) => return Ok(Some(patched)),
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok(None),
            Err(kube::Error::Api(s)) if s.code == 409 && attempt < CONFLICT_ATTEMPTS => {
                match api.get_opt(&object_name).await.map_err(write_error)? {
                    Some(fresh) => current = fresh,
                    None => return Ok(None),
                }
            }
            Err(e) => return Err(write_error(e)),
        }
    }
}
