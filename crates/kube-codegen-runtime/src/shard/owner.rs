//! Children that follow their owner (issue 34): objects of an owned kind hashed by the uid of
//! their controller owner, so a Foo and the Deployment it controls land on one replica
//! whatever their uids and namespaces.
//!
//! The server selects on the object's own uid or namespace only (KEP-5866 has no path into
//! `ownerReferences`), so such an informer lists and watches every object of its kind and the
//! replica keeps only those whose owner's uid hashes into its ranges: each replica reads all of
//! the children (bytes and decoding), and caches and reconciles a share of them.

use std::any::TypeId;
use std::collections::BTreeMap;

use kube::Resource;

use super::ShardKey;

/// The kind a child's controller owner reference must name (group and kind, any version).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OwnerKind {
    group: String,
    kind: String,
}

impl OwnerKind {
    /// Owners of kind `O`.
    pub fn of<O: Resource<DynamicType = ()>>() -> Self {
        OwnerKind {
            group: O::group(&()).into_owned(),
            kind: O::kind(&()).into_owned(),
        }
    }

    /// Owners of `group` (empty for the core group) and `kind`.
    pub fn new(group: impl Into<String>, kind: impl Into<String>) -> Self {
        OwnerKind {
            group: group.into(),
            kind: kind.into(),
        }
    }

    /// The shard hash of `obj`'s controller owner of this kind (FNV-1a of the owner's uid, what
    /// the owner itself is hashed by under [`ShardKey::Uid`]); `None` when it has no such
    /// controller.
    pub fn owner_hash<K: Resource>(&self, obj: &K) -> Option<u64> {
        let refs = obj.meta().owner_references.as_deref()?;
        let owner = refs.iter().find(|r| {
            r.controller == Some(true)
                && r.kind == self.kind
                && r.api_version.rsplit_once('/').map_or("", |(g, _)| g) == self.group
        })?;
        Some(ShardKey::Uid.hash(&owner.uid, ""))
    }
}

/// Which kinds follow which owner: set on the ring, read by each sharded reflector for its
/// own kind.
pub(crate) type Followers = BTreeMap<TypeId, OwnerKind>;

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::ConfigMap;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;

    fn owned_by(refs: Vec<OwnerReference>) -> ConfigMap {
        let mut c = ConfigMap::default();
        c.metadata.owner_references = Some(refs);
        c
    }

    fn reference(api_version: &str, kind: &str, uid: &str, controller: bool) -> OwnerReference {
        OwnerReference {
            api_version: api_version.into(),
            kind: kind.into(),
            name: "x".into(),
            uid: uid.into(),
            controller: Some(controller),
            block_owner_deletion: None,
        }
    }

    #[test]
    fn the_controller_of_the_kind_decides() {
        let deployments = OwnerKind::of::<Deployment>();
        assert_eq!(deployments, OwnerKind::new("apps", "Deployment"));
        let child = owned_by(vec![
            reference("apps/v1", "Deployment", "not-controller", false),
            reference("apps/v1", "Deployment", "u-1", true),
        ]);
        assert_eq!(
            deployments.owner_hash(&child),
            Some(ShardKey::Uid.hash("u-1", ""))
        );
        // Another group's kind of that name, or no controller: no owner.
        let other = owned_by(vec![reference("example.com/v1", "Deployment", "u", true)]);
        assert_eq!(deployments.owner_hash(&other), None);
        assert_eq!(deployments.owner_hash(&ConfigMap::default()), None);
        // The core group is written without a group.
        let core = owned_by(vec![reference("v1", "ConfigMap", "u-2", true)]);
        assert_eq!(
            OwnerKind::of::<ConfigMap>().owner_hash(&core),
            Some(ShardKey::Uid.hash("u-2", ""))
        );
    }
}
