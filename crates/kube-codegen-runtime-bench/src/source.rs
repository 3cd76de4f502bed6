//! The in-process `ListWatch` W3 and W4 feed informers from: one list, then one watch.

use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ListMeta;
use kube::api::{ListParams, ObjectList, TypeMeta, WatchParams};
use kube_codegen_runtime::cache::{ListWatch, WatchStream};
use parking_lot::Mutex;

use crate::bench::v1::Widget;

/// Makes the list's items when the informer lists (inside the clock, e.g. decoding JSON).
pub type MakeItems = Box<dyn FnOnce() -> Result<Vec<Widget>, kube::Error> + Send>;

/// Serves one list (at resourceVersion `list_rv`) and one watch stream; a second list fails
/// (the reflector gave up on the watch: the run is wrong), later watches stay open and silent.
pub struct OneShot {
    list: Mutex<Option<MakeItems>>,
    list_rv: String,
    events: Mutex<Option<WatchStream<Widget>>>,
}

impl OneShot {
    pub fn new(list_rv: u64, items: MakeItems, events: WatchStream<Widget>) -> Self {
        OneShot {
            list: Mutex::new(Some(items)),
            list_rv: list_rv.to_string(),
            events: Mutex::new(Some(events)),
        }
    }
}

impl ListWatch<Widget> for OneShot {
    fn list<'a>(
        &'a self,
        _: &'a ListParams,
    ) -> BoxFuture<'a, Result<ObjectList<Widget>, kube::Error>> {
        let make = self.list.lock().take();
        async move {
            let make = make.ok_or_else(|| {
                kube::Error::Service(
                    "the bench source serves one list; the informer listed again".into(),
                )
            })?;
            Ok(ObjectList {
                types: TypeMeta {
                    api_version: "bench.example.com/v1".into(),
                    kind: "WidgetList".into(),
                },
                metadata: ListMeta {
                    resource_version: Some(self.list_rv.clone()),
                    ..ListMeta::default()
                },
                items: make()?,
            })
        }
        .boxed()
    }

    fn watch<'a>(
        &'a self,
        _: &'a WatchParams,
        _: &'a str,
    ) -> BoxFuture<'a, Result<WatchStream<Widget>, kube::Error>> {
        // A second watch comes only after a run (its feeder aborted, its stream ended).
        let stream = self
            .events
            .lock()
            .take()
            .unwrap_or_else(|| futures::stream::pending().boxed());
        async move { Ok(stream) }.boxed()
    }
}
