//! Typed clients: what a generated clientset hands out (client-go's `gentype.Client` family).
//!
//! One generic client serves every kind, so generated code is a few accessor lines per kind
//! instead of a copy of every verb: [`ResourceClient`] for one namespace (or a cluster-scoped
//! kind), [`AllNamespacesClient`] for list and watch across namespaces. Verbs a CRD version
//! does not support do not exist on its client: the status verbs need [`HasStatus`], the scale
//! verbs [`HasScale`], both implemented by generated code only where the CRD version declares
//! the subresource, so calling them on another kind is a compile error, not a runtime 404.
//!
//! Thin over [`kube::Api`]: errors are [`kube::Error`], so the server's `Status` (reason, code,
//! message) reaches the caller intact, and [`ResourceClient::api`] is the way out to anything
//! kube-rs offers that this does not.

use std::fmt::{self, Debug};

use either::Either;
use futures::Stream;
use k8s_openapi::api::autoscaling::v1::Scale;
use kube::api::{
    Api, DeleteParams, ListParams, ObjectList, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::{ClusterResourceScope, NamespaceResourceScope, Resource, Status};
use kube::{Client, Error};
use serde::Serialize;
use serde::de::DeserializeOwned;

/// Implemented by generated root types whose CRD version has the status subresource: unlocks
/// [`ResourceClient::update_status`], [`ResourceClient::patch_status`] and
/// [`ResourceClient::apply_status`].
pub trait HasStatus: Resource {}

/// Implemented by generated root types whose CRD version has the scale subresource: unlocks
/// [`ResourceClient::get_scale`] and [`ResourceClient::update_scale`].
pub trait HasScale: Resource {}

/// A server-side apply configuration (client-go's `*ApplyConfiguration`): an all-optional
/// mirror of a kind that serialises only the fields that were set, so an apply claims only the
/// fields its field manager owns.
pub trait ApplyConfiguration: Serialize {
    /// The kind this configuration applies to.
    type Resource: Resource;
    /// `metadata.name`, which names the object to apply to.
    fn name(&self) -> Option<&str>;
}

/// A patch a custom resource accepts: JSON merge patch (RFC 7386) or JSON patch (RFC 6902).
/// Custom resources have no strategic merge patch, so there is no such variant; server-side
/// apply is [`ResourceClient::apply`].
#[derive(Debug, Clone, PartialEq)]
pub enum Patch<P> {
    /// `application/merge-patch+json`.
    Merge(P),
    /// `application/json-patch+json`.
    Json(json_patch::Patch),
}

impl<P: Serialize> Patch<P> {
    fn to_kube(&self) -> kube::api::Patch<&P> {
        match self {
            Patch::Merge(p) => kube::api::Patch::Merge(p),
            Patch::Json(p) => kube::api::Patch::Json(p.clone()),
        }
    }
}

/// What every typed client's object type is.
pub trait Object:
    Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug
{
}
impl<K> Object for K where
    K: Resource<DynamicType = ()> + Clone + DeserializeOwned + Serialize + Debug
{
}

fn invalid(message: String) -> Error {
    Error::BuildRequest(kube::core::request::Error::Validation(message))
}

/// The name an object is written under; an object without one cannot be updated.
fn name_of<K: Object>(obj: &K) -> Result<&str, Error> {
    obj.meta()
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .ok_or_else(|| invalid(format!("{} without metadata.name", K::kind(&()))))
}

/// The name an apply configuration applies to, and the field manager it must carry.
fn apply_target<'a, A>(config: &'a A, params: &PatchParams) -> Result<&'a str, Error>
where
    A: ApplyConfiguration,
    A::Resource: Object,
{
    if params.field_manager.as_deref().is_none_or(str::is_empty) {
        return Err(invalid(
            "server-side apply needs a field manager (PatchParams::apply(\"my-controller\"))"
                .into(),
        ));
    }
    config.name().filter(|n| !n.is_empty()).ok_or_else(|| {
        invalid(format!(
            "{} apply configuration without metadata.name",
            A::Resource::kind(&())
        ))
    })
}

/// Every verb of one kind in one namespace, or of a cluster-scoped kind.
pub struct ResourceClient<K> {
    api: Api<K>,
}

impl<K: Object> Clone for ResourceClient<K> {
    fn clone(&self) -> Self {
        ResourceClient {
            api: self.api.clone(),
        }
    }
}

impl<K: Object> Debug for ResourceClient<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ResourceClient")
            .field("api", &self.api)
            .finish_non_exhaustive()
    }
}

impl<K> ResourceClient<K>
where
    K: Object + Resource<Scope = NamespaceResourceScope>,
{
    /// The client of a namespaced kind in `namespace`.
    pub fn namespaced(client: Client, namespace: &str) -> Self {
        ResourceClient {
            api: Api::namespaced(client, namespace),
        }
    }
}

impl<K> ResourceClient<K>
where
    K: Object + Resource<Scope = ClusterResourceScope>,
{
    /// The client of a cluster-scoped kind.
    pub fn cluster(client: Client) -> Self {
        ResourceClient {
            api: Api::all(client),
        }
    }
}

impl<K: Object> ResourceClient<K> {
    /// The `kube::Api` underneath, for anything this client does not offer.
    pub fn api(&self) -> &Api<K> {
        &self.api
    }

    /// `GET` one object.
    pub async fn get(&self, name: &str) -> Result<K, Error> {
        self.api.get(name).await
    }

    /// `GET` one object; `None` when the server answers 404.
    pub async fn get_opt(&self, name: &str) -> Result<Option<K>, Error> {
        self.api.get_opt(name).await
    }

    /// `GET` the collection (one page when `params.limit` is set).
    pub async fn list(&self, params: &ListParams) -> Result<ObjectList<K>, Error> {
        self.api.list(params).await
    }

    /// Watches the collection from `resource_version` (`"0"`: from any recent state).
    pub async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<impl Stream<Item = Result<WatchEvent<K>, Error>> + use<K>, Error> {
        self.api.watch(params, resource_version).await
    }

    /// `POST` a new object.
    pub async fn create(&self, params: &PostParams, obj: &K) -> Result<K, Error> {
        self.api.create(params, obj).await
    }

    /// `PUT` the object named by `obj.metadata.name` (an update: set `resourceVersion` for
    /// optimistic concurrency).
    pub async fn update(&self, params: &PostParams, obj: &K) -> Result<K, Error> {
        self.api.replace(name_of(obj)?, params, obj).await
    }

    /// `DELETE` one object. Custom resources answer with the object (`Left`): the deleted one, or
    /// the one still held by finalizers or a foreground deletion (`deletionTimestamp` set);
    /// `Right` carries the `Status` that kinds answering with one send.
    pub async fn delete(
        &self,
        name: &str,
        params: &DeleteParams,
    ) -> Result<Either<K, Status>, Error> {
        self.api.delete(name, params).await
    }

    /// `DELETE` every object `list` selects.
    pub async fn delete_collection(
        &self,
        params: &DeleteParams,
        list: &ListParams,
    ) -> Result<Either<ObjectList<K>, Status>, Error> {
        self.api.delete_collection(params, list).await
    }

    /// `PATCH` with a merge or JSON patch.
    pub async fn patch<P: Serialize + Debug>(
        &self,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K, Error> {
        self.api.patch(name, params, &patch.to_kube()).await
    }

    /// Server-side apply of `config` (`PatchParams::apply("manager")`, `.force()` to take
    /// fields other managers own): the server merges the fields set in `config` and records
    /// them as owned by the field manager.
    pub async fn apply<A>(&self, config: &A, params: &PatchParams) -> Result<K, Error>
    where
        A: ApplyConfiguration<Resource = K> + Debug,
    {
        let name = apply_target(config, params)?;
        self.api
            .patch(name, params, &kube::api::Patch::Apply(config))
            .await
    }
}

impl<K: Object + HasStatus> ResourceClient<K> {
    /// `PUT` the status subresource of the object named by `obj.metadata.name` (the server
    /// ignores everything but `status`).
    pub async fn update_status(&self, params: &PostParams, obj: &K) -> Result<K, Error> {
        self.api.replace_status(name_of(obj)?, params, obj).await
    }

    /// `PATCH` the status subresource.
    pub async fn patch_status<P: Serialize + Debug>(
        &self,
        name: &str,
        params: &PatchParams,
        patch: &Patch<P>,
    ) -> Result<K, Error> {
        self.api.patch_status(name, params, &patch.to_kube()).await
    }

    /// Server-side apply to the status subresource.
    pub async fn apply_status<A>(&self, config: &A, params: &PatchParams) -> Result<K, Error>
    where
        A: ApplyConfiguration<Resource = K> + Debug,
    {
        let name = apply_target(config, params)?;
        self.api
            .patch_status(name, params, &kube::api::Patch::Apply(config))
            .await
    }
}

impl<K: Object + HasScale> ResourceClient<K> {
    /// `GET` the scale subresource (`autoscaling/v1` `Scale`).
    pub async fn get_scale(&self, name: &str) -> Result<Scale, Error> {
        self.api.get_scale(name).await
    }

    /// `PUT` the scale subresource.
    pub async fn update_scale(
        &self,
        name: &str,
        params: &PostParams,
        scale: &Scale,
    ) -> Result<Scale, Error> {
        self.api.replace_scale(name, params, scale).await
    }
}

/// List and watch of a namespaced kind across every namespace (client-go's `Foos("")`; the
/// other verbs need a namespace, so this client has none of them).
pub struct AllNamespacesClient<K> {
    api: Api<K>,
}

impl<K: Object> Clone for AllNamespacesClient<K> {
    fn clone(&self) -> Self {
        AllNamespacesClient {
            api: self.api.clone(),
        }
    }
}

impl<K> Debug for AllNamespacesClient<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AllNamespacesClient")
            .finish_non_exhaustive()
    }
}

impl<K> AllNamespacesClient<K>
where
    K: Object + Resource<Scope = NamespaceResourceScope>,
{
    /// The all-namespaces client of a namespaced kind.
    pub fn new(client: Client) -> Self {
        AllNamespacesClient {
            api: Api::all(client),
        }
    }

    /// The `kube::Api` underneath.
    pub fn api(&self) -> &Api<K> {
        &self.api
    }

    /// `GET` the collection in every namespace.
    pub async fn list(&self, params: &ListParams) -> Result<ObjectList<K>, Error> {
        self.api.list(params).await
    }

    /// Watches the collection in every namespace.
    pub async fn watch(
        &self,
        params: &WatchParams,
        resource_version: &str,
    ) -> Result<impl Stream<Item = Result<WatchEvent<K>, Error>> + use<K>, Error> {
        self.api.watch(params, resource_version).await
    }
}
