//! Errors of the cache.

/// What can go wrong reading or writing the cache.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The object has no `metadata.name`, so it has no key.
    #[error("object has no metadata.name, so it has no cache key")]
    NoName,
    /// A key that is neither `name` nor `namespace/name`.
    #[error("unexpected key format: {0:?}")]
    KeyFormat(String),
    /// A lookup named an index the store does not have.
    #[error("index with name {0} does not exist")]
    UnknownIndex(String),
    /// `add_indexers` named an index the store already has.
    #[error("indexer conflict: an index named {0} already exists")]
    IndexConflict(String),
    /// An event handler was added outside a Tokio runtime, to an informer built outside one.
    #[error("event handlers run on Tokio tasks: add them inside a Tokio runtime")]
    NoRuntime,
}

/// A lister was read before its informer's first list was cached: an empty or missing answer
/// would mean "not loaded yet", not "not there", so the read is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the informer's cache has not synced yet: wait for it (wait_for_cache_sync) before reading"
)]
pub struct NotSynced;
