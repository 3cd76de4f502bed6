#![deny(missing_docs)]
//! The informer cache: a thread-safe store of objects with named indices, cache keys and
//! listers (client-go's `tools/cache` `Indexer`, `MetaNamespaceKeyFunc` and listers).
//!
//! A [`SharedIndexInformer`] runs a [`Reflector`] that keeps a [`Store`] in step with the API
//! server (a streaming watch-list, or a list when the server refuses one, then a watch; relist
//! on `410 Gone`) and tells its [`EventHandler`]s what changed; controllers read the store
//! through a [`Lister`] and carry [`key_of`] keys through their workqueue. What the informer
//! does shows in [`InformerMetricsProvider`] metrics and
//! [`last_error`](SharedIndexInformer::last_error).
//!
//! ```
//! use std::sync::Arc;
//! use k8s_openapi::api::core::v1::ConfigMap;
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
//! use kube::core::Selector;
//! use kube_codegen_runtime::cache::{Lister, Store, key_of};
//!
//! let store = Arc::new(Store::<ConfigMap>::with_namespace_index());
//! let cm = ConfigMap {
//!     metadata: ObjectMeta {
//!         namespace: Some("default".into()),
//!         name: Some("settings".into()),
//!         ..Default::default()
//!     },
//!     ..Default::default()
//! };
//! assert_eq!(key_of(&cm)?, "default/settings");
//! store.add(Arc::new(cm))?;
//! // A store filled by hand is complete, so this lister's reads never fail; an informer's
//! // lister returns `Err(NotSynced)` until the informer has listed.
//! let lister = Lister::new(store.clone());
//! assert!(lister.namespace("default").get("settings")?.is_some());
//! assert!(lister.namespace("default").get("missing")?.is_none());
//! assert_eq!(lister.namespace("other").list(&Selector::default())?.len(), 0);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod backoff;
mod error;
mod handler;
mod health;
mod informer;
mod initial_events;
mod keys;
mod lister;
mod metrics;
mod reader;
mod reflector;
mod reflector_options;
mod source;
mod store;

pub use self::error::{CacheError, NotSynced};
pub use self::handler::{Deleted, EventHandler, EventHandlerFns};
pub use self::health::ReflectorError;
pub use self::informer::{
    DEFAULT_MAX_HANDLER_BACKLOG, INLINE_CALL_LIMIT, InformerOptions, MINIMUM_RESYNC_PERIOD,
    Registration, SharedIndexInformer, Transform, strip_managed_fields,
};
pub use self::keys::{key_of, split_key};
pub use self::lister::{Lister, NamespaceLister, list_all, list_all_by_namespace};
#[cfg(feature = "prometheus")]
pub(crate) use self::metrics::InformerFamilies;
pub use self::metrics::InformerMetricsProvider;
pub use self::reader::StoreReader;
pub use self::reflector::{Reflector, ReflectorHealth, ReflectorStore, Synced};
pub use self::reflector_options::{ReflectorOptions, WatchErrorHandler};
pub use self::source::{ListWatch, SHARD_INFO_ANNOTATION, ShardedList, WatchStream};
pub use self::store::{IndexFn, Indexers, NAMESPACE_INDEX, Store, namespace_index};
