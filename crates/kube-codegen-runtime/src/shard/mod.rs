//! Sharding one controller's work across replicas (issue 30): the hash space of
//! server-side sharded list and watch (Kubernetes 1.36, KEP-5866), a consistent-hashing ring
//! that splits it among replicas, ring membership through Leases, and the informer side
//! ([`ReflectorOptions::sharded`](crate::cache::ReflectorOptions::sharded)).
//!
//! - [`hash`]: the 64-bit FNV-1a hash of an object's uid or namespace, as the API server
//!   computes it for `shardSelector`.
//! - [`range`]: half-open hash ranges, sets of them, and the `shardSelector` text.
//! - [`table`]: which replica owns which ranges: cuts at observed key hashes, weighted by
//!   objects, published by one member and acknowledged by all (issue 34).
//! - [`ring`]: consistent hashing derived from the member set alone (issue 30's split of the
//!   space, no longer what members use: kept for comparison in tests and benches).
//! - [`membership`]: each replica's Lease, the live set of them, and the replica's
//!   [`Assignment`] published on a `tokio::sync::watch` channel.
//! - [`runner`]: [`ShardRing`], a replica's membership, handoff and reconcile gate at run time
//!   (what `Controller::shard_ring` uses).
//! - [`owner`]: owned kinds hashed by their controller owner's uid (children follow their
//!   owner; filtered in the client).
//! - [`handoff`]: the state machine that says which ranges a replica may reconcile now, so
//!   that a range changing hands is never worked on by two replicas at once.
//!
//! Parsing, formatting and hashing live in `kube_codegen_crd::shard`, which the in-memory API
//! server applies selectors with: one definition for both sides of the wire.

pub(crate) mod caches;
pub mod handoff;
pub mod hash;
mod lease_watch;
pub mod membership;
pub mod owner;
pub mod range;
pub mod ring;
pub mod runner;
pub(crate) mod source;
pub mod table;

pub use handoff::{Handoff, RingView, Transition};
pub use hash::{ShardKey, object_hash};
pub use membership::{
    LoadSource, Membership, MembershipConfig, RING_ACK_ANNOTATION, RING_LABEL,
    RING_LOAD_ANNOTATION, RING_TABLE_ANNOTATION,
};
pub use owner::OwnerKind;
pub use range::{HashRange, RangeSet, ShardSelector, ShardSelectorError};
pub use ring::{DEFAULT_VIRTUAL_POINTS, Ring};
pub use runner::{Admission, DEFAULT_HANDOFF_TIMEOUT, Permit, ShardRing, ShardStats};
pub use table::{Load, Table};

use tokio::sync::watch;

pub use crate::cache::SHARD_INFO_ANNOTATION;

/// What one replica owns at one moment.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Assignment {
    /// Bumped every time this replica's view of the ring changes (local to the replica).
    pub generation: u64,
    /// The table this view is of ([`Table::id`], the same on every replica that reads the same
    /// table: what a member acknowledges on its Lease); 0 before a table is published.
    pub ring_id: u64,
    /// The live members, sorted.
    pub members: Vec<String>,
    /// The hashes this replica owns (empty while it is no member, e.g. its Lease lapsed).
    pub ranges: RangeSet,
}

impl Assignment {
    /// A fixed assignment (tests, static sharding): generation 1, no members.
    pub fn fixed(ranges: RangeSet) -> Self {
        Assignment {
            generation: 1,
            ranges,
            ..Assignment::default()
        }
    }
}

/// What a sharded informer follows: the hashed field and the replica's changing ranges.
#[derive(Debug, Clone)]
pub struct ShardScope {
    /// The field whose hash decides ownership.
    pub key: ShardKey,
    /// The replica's assignment; a change restarts the informer's list and watch with the
    /// new selector, and the relist reports what left (deletes) and what arrived (adds).
    pub assignment: watch::Receiver<Assignment>,
    /// Objects are hashed by their controller owner of this kind instead (filtered in the
    /// client: no selector is sent); set per kind by [`ShardScope::for_kind`].
    pub owner: Option<OwnerKind>,
    followers: std::sync::Arc<owner::Followers>,
    pub(crate) caches: std::sync::Arc<caches::CacheSync>,
}

impl ShardScope {
    /// Objects hashed by `key`, following `assignment` (tests, static sharding).
    pub fn new(key: ShardKey, assignment: watch::Receiver<Assignment>) -> Self {
        ShardScope {
            key,
            assignment,
            owner: None,
            followers: Default::default(),
            caches: Default::default(),
        }
    }

    pub(crate) fn with_followers(
        mut self,
        followers: std::sync::Arc<owner::Followers>,
        caches: std::sync::Arc<caches::CacheSync>,
    ) -> Self {
        self.followers = followers;
        self.caches = caches;
        self
    }

    /// The scope of `K`'s informer: hashed by its controller owner when the ring says `K`
    /// follows one ([`ShardRing::follow_owner`]; uid rings only, since a child shares its
    /// owner's namespace anyway).
    pub fn for_kind<K: 'static>(&self) -> ShardScope {
        let mut scope = self.clone();
        if scope.key == ShardKey::Uid {
            scope.owner = self.followers.get(&std::any::TypeId::of::<K>()).cloned();
        }
        scope
    }
}
