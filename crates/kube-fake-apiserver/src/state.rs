//! Shared server state: registry + store behind one lock, faults, recorded requests.
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::task::AbortHandle;

use crate::faults::{FaultState, RecordedRequest};
use crate::registry::{self, Registry};
use crate::store::Store;

pub(crate) struct Db {
    pub registry: Registry,
    pub store: Store,
    /// Creating in a namespace that does not exist is a 404, as with the real server.
    pub require_namespaces: bool,
}

pub(crate) struct Shared {
    pub db: Mutex<Db>,
    pub faults: FaultState,
    pub requests: Mutex<Vec<RecordedRequest>>,
    /// Bumped to end every open watch.
    pub watch_epoch: watch::Sender<u64>,
    /// Open connections, aborted on restart/shutdown.
    pub conns: Mutex<Vec<AbortHandle>>,
    /// `host:port` the server listens on (for `/api` serverAddressByClientCIDRs).
    pub address: Mutex<String>,
}

impl Shared {
    pub fn new(history_limit: usize, builtins: bool, require_namespaces: bool) -> Arc<Self> {
        let mut reg = Registry::default();
        reg.insert(registry::crd_resource());
        let mut store = Store::new(history_limit);
        if builtins {
            for r in registry::builtins() {
                reg.insert(r);
            }
            let ns = serde_json::json!({
                "apiVersion": "v1",
                "kind": "Namespace",
                "metadata": {"name": "default", "uid": crate::util::uid(), "creationTimestamp": crate::util::now(),
                             "labels": {"kubernetes.io/metadata.name": "default"}},
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"}
            });
            let key = crate::store::Key {
                group: String::new(),
                resource: "namespaces".into(),
                namespace: String::new(),
                name: "default".into(),
            };
            store.put(key, ns);
        }
        Arc::new(Shared {
            db: Mutex::new(Db {
                registry: reg,
                store,
                require_namespaces,
            }),
            faults: {
                let f = FaultState::default();
                f.recording
                    .store(true, std::sync::atomic::Ordering::Relaxed);
                f
            },
            requests: Mutex::new(Vec::new()),
            watch_epoch: watch::channel(0).0,
            conns: Mutex::new(Vec::new()),
            address: Mutex::new(String::new()),
        })
    }

    pub fn drop_watches(&self) {
        self.watch_epoch.send_modify(|e| *e += 1);
    }

    pub fn drop_connections(&self) {
        for h in self.conns.lock().drain(..) {
            h.abort();
        }
    }
}
