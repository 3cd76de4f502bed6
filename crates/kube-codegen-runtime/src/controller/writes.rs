//! [`Writes`]: the seam between a reconciler and the server. A reconciler that reads listers
//! and writes only through a `W: Writes` is unit-tested without a server: fill stores by
//! hand, reconcile, and compare what [`FakeWrites`] recorded (client-go's fake clientset
//! "actions" and fake recorder, controller-runtime's fake client). [`ApiWrites`] is the real
//! one: typed requests with the controller's field manager, events through a [`Recorder`].

use std::collections::VecDeque;
use std::fmt;
use std::future::Future;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use kube::api::{Api, PostParams};
use kube::core::Status;
use parking_lot::Mutex;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use super::builder::Watched;
use crate::events::{Event, EventType, Recorder};
use crate::factory::FactoryScope;

/// What [`Writes`] can write: a kind the factory's informers can hold, that serializes.
pub trait Writable: Watched + Serialize {}
impl<T: Watched + Serialize> Writable for T {}

/// The writes a reconciler makes. Generic over the kind, so one implementation serves every
/// controller; every write is conditional on the object's `resourceVersion` when it has one.
pub trait Writes: Send + Sync + 'static {
    /// Creates `object` (POST); returns it as stored.
    fn create<K: Writable>(
        &self,
        object: &K,
    ) -> impl Future<Output = Result<K, kube::Error>> + Send
    where
        K::Scope: FactoryScope;

    /// Replaces `object` (PUT); returns it as stored.
    fn replace<K: Writable>(
        &self,
        object: &K,
    ) -> impl Future<Output = Result<K, kube::Error>> + Send
    where
        K::Scope: FactoryScope;

    /// Replaces `object`'s status subresource (PUT `/status`); returns it as stored.
    fn replace_status<K: Writable>(
        &self,
        object: &K,
    ) -> impl Future<Output = Result<K, kube::Error>> + Send
    where
        K::Scope: FactoryScope;

    /// Publishes `event` about `regarding`.
    fn publish<K: Resource<DynamicType = ()> + Sync>(
        &self,
        regarding: &K,
        event: Event,
    ) -> impl Future<Output = Result<(), kube::Error>> + Send;
}

/// The real [`Writes`]: requests through a client with a field manager, events through a
/// [`Recorder`].
#[derive(Clone)]
pub struct ApiWrites {
    client: kube::Client,
    recorder: Recorder,
    params: PostParams,
}

impl fmt::Debug for ApiWrites {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ApiWrites")
            .field("field_manager", &self.params.field_manager)
            .finish_non_exhaustive()
    }
}

impl ApiWrites {
    /// Writes through `client` as `field_manager` (usually the controller's name), events
    /// through `recorder`.
    pub fn new(client: kube::Client, recorder: Recorder, field_manager: &str) -> Self {
        let params = PostParams {
            dry_run: false,
            field_manager: Some(field_manager.to_owned()),
        };
        ApiWrites {
            client,
            recorder,
            params,
        }
    }

    fn api<K: Writable>(&self, object: &K) -> Api<K>
    where
        K::Scope: FactoryScope,
    {
        let namespace = object.meta().namespace.as_deref().unwrap_or("default");
        <K::Scope as FactoryScope>::api(self.client.clone(), Some(namespace))
    }
}

fn name_of<K: Resource>(object: &K) -> Result<&str, kube::Error> {
    object.meta().name.as_deref().ok_or_else(|| {
        let status = Status::failure("object without metadata.name", "Invalid").with_code(422);
        kube::Error::Api(status.boxed())
    })
}

impl Writes for ApiWrites {
    async fn create<K: Writable>(&self, object: &K) -> Result<K, kube::Error>
    where
        K::Scope: FactoryScope,
    {
        self.api(object).create(&self.params, object).await
    }

    async fn replace<K: Writable>(&self, object: &K) -> Result<K, kube::Error>
    where
        K::Scope: FactoryScope,
    {
        let name = name_of(object)?;
        self.api(object).replace(name, &self.params, object).await
    }

    async fn replace_status<K: Writable>(&self, object: &K) -> Result<K, kube::Error>
    where
        K::Scope: FactoryScope,
    {
        let name = name_of(object)?;
        self.api(object)
            .replace_status(name, &self.params, object)
            .await
    }

    async fn publish<K: Resource<DynamicType = ()> + Sync>(
        &self,
        regarding: &K,
        event: Event,
    ) -> Result<(), kube::Error> {
        let mut reference = regarding.object_ref(&());
        // Repeats aggregate per object, not per resourceVersion (as client-go's core/v1
        // recorder keys them), so the controller's own status writes start no new series.
        reference.resource_version = None;
        self.recorder.publish(&event, &reference).await
    }
}

/// The verb of a recorded [`Write`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verb {
    /// [`Writes::create`].
    Create,
    /// [`Writes::replace`].
    Replace,
    /// [`Writes::replace_status`].
    ReplaceStatus,
}

/// One write [`FakeWrites`] recorded: the verb and the object as sent (as JSON, so writes of
/// every kind sit in one ordered list).
#[derive(Debug, Clone, PartialEq)]
pub struct Write {
    /// What was asked.
    pub verb: Verb,
    /// The object sent.
    pub object: Value,
}

impl Write {
    /// The record of `verb` with `object`, to compare with what was recorded.
    pub fn new<K: Serialize>(verb: Verb, object: &K) -> Self {
        let object = serde_json::to_value(object)
            .unwrap_or_else(|e| Value::String(format!("unserializable: {e}")));
        Write { verb, object }
    }

    /// The object sent, when it is a `K` (its `kind` is `K`'s).
    pub fn object<K: Resource<DynamicType = ()> + DeserializeOwned>(&self) -> Option<K> {
        if self.object.get("kind").and_then(Value::as_str) != Some(&*K::kind(&())) {
            return None;
        }
        serde_json::from_value(self.object.clone()).ok()
    }
}

/// One event [`FakeWrites`] recorded.
#[derive(Debug, Clone, PartialEq)]
pub struct Published {
    /// The object it is about.
    pub regarding: ObjectReference,
    /// Normal or Warning.
    pub type_: EventType,
    /// The reason.
    pub reason: String,
    /// The note.
    pub note: Option<String>,
    /// The action.
    pub action: String,
}

/// A [`Writes`] that records every write and event (failed or not) and answers writes with
/// the object as sent; the next write or event can be made to fail with an HTTP code.
#[derive(Default)]
pub struct FakeWrites {
    writes: Mutex<Vec<Write>>,
    events: Mutex<Vec<Published>>,
    write_failures: Mutex<VecDeque<u16>>,
    event_failures: Mutex<VecDeque<u16>>,
}

impl fmt::Debug for FakeWrites {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FakeWrites")
            .field("writes", &self.writes.lock().len())
            .field("events", &self.events.lock().len())
            .finish_non_exhaustive()
    }
}

fn injected(code: u16) -> kube::Error {
    let status = Status::failure("injected by FakeWrites", "InternalError").with_code(code);
    kube::Error::Api(status.boxed())
}

impl FakeWrites {
    /// The writes so far, in order.
    pub fn writes(&self) -> Vec<Write> {
        self.writes.lock().clone()
    }

    /// The events so far, in order.
    pub fn events(&self) -> Vec<Published> {
        self.events.lock().clone()
    }

    /// The next write not yet failed fails with `code` (after it is recorded).
    pub fn fail_next_write(&self, code: u16) {
        self.write_failures.lock().push_back(code);
    }

    /// The next event not yet failed fails with `code` (after it is recorded).
    pub fn fail_next_event(&self, code: u16) {
        self.event_failures.lock().push_back(code);
    }

    fn record<K: Serialize + Clone>(&self, verb: Verb, object: &K) -> Result<K, kube::Error> {
        self.writes.lock().push(Write::new(verb, object));
        match self.write_failures.lock().pop_front() {
            Some(code) => Err(injected(code)),
            None => Ok(object.clone()),
        }
    }
}

impl Writes for FakeWrites {
    async fn create<K: Writable>(&self, object: &K) -> Result<K, kube::Error>
    where
        K::Scope: FactoryScope,
    {
        self.record(Verb::Create, object)
    }

    async fn replace<K: Writable>(&self, object: &K) -> Result<K, kube::Error>
    where
        K::Scope: FactoryScope,
    {
        self.record(Verb::Replace, object)
    }

    async fn replace_status<K: Writable>(&self, object: &K) -> Result<K, kube::Error>
    where
        K::Scope: FactoryScope,
    {
        self.record(Verb::ReplaceStatus, object)
    }

    async fn publish<K: Resource<DynamicType = ()> + Sync>(
        &self,
        regarding: &K,
        event: Event,
    ) -> Result<(), kube::Error> {
        let mut reference = regarding.object_ref(&());
        reference.resource_version = None; // as ApiWrites sends it
        self.events.lock().push(Published {
            regarding: reference,
            type_: event.type_,
            reason: event.reason,
            note: event.note,
            action: event.action,
        });
        match self.event_failures.lock().pop_front() {
            Some(code) => Err(injected(code)),
            None => Ok(()),
        }
    }
}
