//! [`ShardRing`]: one replica's part of a ring at run time: its [`Membership`], the
//! [`Handoff`] fed by it, the gate workers ask before every reconcile, and the ranges its
//! informers cache.
//!
//! The gate answers per hash: reconcile now (with a [`Permit`] that counts the reconcile as
//! running until dropped), later (the hash is being taken: the cache holds it, the handoff
//! does not allow it yet), or not mine. When the ring changes, the allowed ranges shrink at
//! once; running reconciles outside them get the handoff timeout to finish, then their
//! [`Permit::revoked`] fires and the worker drops them; only then is the new ring
//! acknowledged. A replica whose Lease was not renewed within the renew deadline (counted from
//! the renewal's send time, on a timer of its own, whatever the membership task is doing)
//! revokes everything at once, running reconciles included.
//!
//! The informers get the ranges to cache on [`ShardRing::scope`] only after the allowed ranges
//! shrank, so the deletes a relist reports for a range given away find it no longer allowed.

use std::collections::HashMap;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use parking_lot::Mutex;
use tokio::sync::watch;
use tokio::time::Instant;

use super::{
    Assignment, Handoff, Membership, MembershipConfig, RangeSet, RingView, ShardKey, ShardScope,
};

/// Default [`ShardRing::handoff_timeout`]: how long running reconciles of a range given away
/// may take before they are abandoned.
pub const DEFAULT_HANDOFF_TIMEOUT: Duration = Duration::from_secs(10);

/// Called with the ranges a replica starts reconciling.
type GainHandler = Box<dyn Fn(&RangeSet) + Send + Sync>;

/// What the gate says about one hash.
#[derive(Debug)]
pub enum Admission {
    /// Reconcile it; the permit counts it as running until dropped.
    Reconcile(Permit),
    /// Being taken (cached, not allowed yet), or the replica's Lease lapsed: it will be queued
    /// again when allowed.
    Later,
    /// Another replica's.
    NotMine,
}

/// Counters for an operator: see [`ShardRing::stats`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ShardStats {
    /// The live members.
    pub members: usize,
    /// This replica's share of the hash space it may reconcile now (0..1).
    pub allowed_share: f64,
    /// Ring changes this replica acknowledged.
    pub acknowledged: u64,
    /// Reconciles abandoned because their range was given away or the Lease lapsed.
    pub abandoned: u64,
    /// Keys skipped because their range was being taken.
    pub deferred: u64,
}

#[derive(Default)]
struct Gate {
    allowed: RangeSet,
    cacheable: RangeSet,
    in_flight: HashMap<u64, u64>,
    /// Running reconciles of these hashes must stop now.
    abandon: RangeSet,
    /// Given away, not yet acknowledged: the cache still follows them, and a delete seen
    /// there is reconciled here (the new owner may have listed after it and never see it).
    draining: RangeSet,
    stopped: bool,
}

struct Inner {
    membership: Membership,
    key: ShardKey,
    handoff_timeout: Duration,
    gate: Mutex<Gate>,
    next_permit: AtomicU64,
    /// Bumped whenever `gate.abandon` grows or a permit is dropped.
    changed: watch::Sender<u64>,
    cache: watch::Sender<Assignment>,
    gains: Mutex<Vec<GainHandler>>,
    acknowledged: AtomicU64,
    abandoned: AtomicU64,
    deferred: AtomicU64,
    members: AtomicU64,
    /// Kinds hashed by their controller owner ([`ShardRing::follow_owner`]).
    followers: Arc<super::owner::Followers>,
    /// What the sharded informers have listed: a table is acknowledged only once they cached
    /// the ranges being taken.
    caches: Arc<super::caches::CacheSync>,
}

/// One replica's part of a shard ring (see the module docs). Cheap to clone.
#[derive(Clone)]
pub struct ShardRing {
    inner: Arc<Inner>,
}

impl fmt::Debug for ShardRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ShardRing")
            .field("membership", &self.inner.membership)
            .field("key", &self.inner.key)
            .finish_non_exhaustive()
    }
}

/// A reconcile the gate let through; dropping it ends it as far as the handoff is concerned.
pub struct Permit {
    inner: Arc<Inner>,
    id: u64,
    hash: u64,
}

impl fmt::Debug for Permit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Permit({:016x})", self.hash)
    }
}

impl Permit {
    /// Resolves when this reconcile must stop: its range was given away and the handoff
    /// timeout passed, or the Lease lapsed. The caller drops the reconcile then.
    pub async fn revoked(&self) {
        let mut rx = self.inner.changed.subscribe();
        loop {
            if self.inner.gate.lock().abandon.contains(self.hash) {
                self.inner.abandoned.fetch_add(1, Ordering::Relaxed);
                return;
            }
            if rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
    }
}

impl Drop for Permit {
    fn drop(&mut self) {
        self.inner.gate.lock().in_flight.remove(&self.id);
        self.inner.changed.send_modify(|n| *n += 1);
    }
}

impl ShardRing {
    /// This replica's part of ring `config.ring`, objects hashed by uid. Nothing runs until
    /// [`run`](Self::run).
    pub fn new(client: kube::Client, config: MembershipConfig) -> Self {
        ShardRing {
            inner: Arc::new(Inner {
                membership: Membership::new(client, config),
                key: ShardKey::Uid,
                handoff_timeout: DEFAULT_HANDOFF_TIMEOUT,
                gate: Mutex::default(),
                next_permit: AtomicU64::new(0),
                changed: watch::channel(0).0,
                cache: watch::channel(Assignment::default()).0,
                gains: Mutex::default(),
                acknowledged: AtomicU64::new(0),
                abandoned: AtomicU64::new(0),
                deferred: AtomicU64::new(0),
                members: AtomicU64::new(0),
                followers: Arc::default(),
                caches: Arc::default(),
            }),
        }
    }

    fn with(self, f: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = Arc::try_unwrap(self.inner)
            .unwrap_or_else(|_| panic!("ShardRing options are set before it is cloned"));
        f(&mut inner);
        ShardRing {
            inner: Arc::new(inner),
        }
    }

    /// Hash objects by `key` (default uid; namespace keeps a namespace's objects together).
    /// Set before the ring is cloned or handed out.
    pub fn key(self, key: ShardKey) -> Self {
        self.with(|i| i.key = key)
    }

    /// Objects of `Child` are sharded by the uid of their controller owner of kind `Owner`
    /// (which is sharded by its own uid): a Foo and the Deployments it controls then land on
    /// the same replica whatever their namespaces. The server cannot select on owner
    /// references, so `Child`'s informer lists and watches all of them and keeps its share
    /// (see [`owner`](super::owner)); a `Child` without such a controller is cached by every
    /// replica. Only for uid rings (by namespace, children share their owner's already). Set
    /// before the ring is cloned or handed out.
    pub fn follow_owner<Child: 'static, Owner: kube::Resource<DynamicType = ()>>(self) -> Self {
        self.with(|i| {
            Arc::make_mut(&mut i.followers).insert(
                std::any::TypeId::of::<Child>(),
                super::OwnerKind::of::<Owner>(),
            );
        })
    }

    /// How long running reconciles of a range given away may take before they are abandoned
    /// (default [`DEFAULT_HANDOFF_TIMEOUT`]). Set before the ring is cloned or handed out.
    pub fn handoff_timeout(self, timeout: Duration) -> Self {
        self.with(|i| i.handoff_timeout = timeout)
    }

    /// The field objects are hashed by.
    pub fn shard_key(&self) -> ShardKey {
        self.inner.key
    }

    /// This replica's membership (its Lease, the ring's assignment).
    pub fn membership(&self) -> &Membership {
        &self.inner.membership
    }

    /// What the factory's informers follow ([`SharedInformerFactoryBuilder::sharded`](
    /// crate::factory::SharedInformerFactoryBuilder::sharded)): this replica's share of the
    /// current ring (what it reconciles and what it is taking).
    pub fn scope(&self) -> ShardScope {
        ShardScope::new(self.inner.key, self.inner.cache.subscribe())
            .with_followers(self.inner.followers.clone(), self.inner.caches.clone())
    }

    /// Calls `f` with every range this replica starts reconciling (to queue its objects).
    pub fn on_gain(&self, f: impl Fn(&RangeSet) + Send + Sync + 'static) {
        self.inner.gains.lock().push(Box::new(f));
    }

    /// The ranges this replica may reconcile now.
    pub fn allowed(&self) -> RangeSet {
        self.inner.gate.lock().allowed.clone()
    }

    /// Counters for metrics and logs.
    pub fn stats(&self) -> ShardStats {
        ShardStats {
            members: self.inner.members.load(Ordering::Relaxed) as usize,
            allowed_share: self.allowed().size() as f64 / super::range::HASH_SPACE_END as f64,
            acknowledged: self.inner.acknowledged.load(Ordering::Relaxed),
            abandoned: self.inner.abandoned.load(Ordering::Relaxed),
            deferred: self.inner.deferred.load(Ordering::Relaxed),
        }
    }

    /// May the object with `hash` be reconciled now?
    pub fn admit(&self, hash: u64) -> Admission {
        self.admit_as(hash, false)
    }

    /// May the deleted object with `hash` (a tombstone) be reconciled now? As [`admit`](
    /// Self::admit), and also while its range is being given away (until the new table is
    /// acknowledged, within the handoff timeout): a delete seen then may have happened before
    /// the new owner listed the range, so it would reach nobody else. The permit counts as a
    /// reconcile outside the allowed ranges, so the acknowledgement waits for it.
    pub fn admit_deleted(&self, hash: u64) -> Admission {
        self.admit_as(hash, true)
    }

    fn admit_as(&self, hash: u64, deleted: bool) -> Admission {
        let lapsed = !self.is_member_now();
        let mut gate = self.inner.gate.lock();
        if gate.stopped {
            return Admission::NotMine;
        }
        let mine = gate.allowed.contains(hash) || (deleted && gate.draining.contains(hash));
        if !lapsed && mine && !gate.abandon.contains(hash) {
            let id = self.inner.next_permit.fetch_add(1, Ordering::Relaxed);
            gate.in_flight.insert(id, hash);
            return Admission::Reconcile(Permit {
                inner: self.inner.clone(),
                id,
                hash,
            });
        }
        if lapsed || gate.cacheable.contains(hash) {
            self.inner.deferred.fetch_add(1, Ordering::Relaxed);
            Admission::Later
        } else {
            Admission::NotMine
        }
    }

    fn is_member_now(&self) -> bool {
        self.inner
            .membership
            .member_until()
            .is_some_and(|u| Instant::now() < u)
    }

    /// Takes part in the ring until the future is dropped or [`leave`](Self::leave) is called:
    /// renews the Lease, follows the ring, moves the allowed ranges and acknowledges.
    pub async fn run(&self) {
        let membership = self.inner.membership.clone();
        let mut renewing = std::pin::pin!(async move { membership.run().await });
        let mut views = self.inner.membership.view();
        let mut drained = self.inner.changed.subscribe();
        let mut listed = self.inner.caches.subscribe();
        let mut handoff = Handoff::new(self.inner.membership.config().identity.clone());
        let retry = self.inner.membership.config().retry_period;
        let mut applied: Option<RingView> = None;
        // Since when a ring waits for running reconciles outside the allowed ranges.
        let mut draining_since: Option<Instant> = None;
        let mut last_ack = None;
        // Since when an acknowledgement waits for the informers to list (see below).
        let mut caching_since: Option<(Instant, bool)> = None;
        loop {
            if self.inner.gate.lock().stopped {
                return;
            }
            let mut view = views.borrow_and_update().clone();
            let until = self.inner.membership.member_until();
            let member_now = until.is_some_and(|u| Instant::now() < u);
            // The membership task may be stuck in a request: the deadline holds regardless.
            view.member &= member_now;
            if applied.as_ref() != Some(&view) {
                self.apply(&mut handoff, &view);
                applied = Some(view);
            }
            drained.borrow_and_update();
            listed.borrow_and_update();
            let mut wait_drain = None;
            // Acknowledged (and so taken) only once the informers cached what is being taken;
            // an informer that cannot list (a kind not served, no permission) must not hold
            // the whole ring's handoffs, so when only failing informers are behind, after the
            // handoff timeout the table is acknowledged anyway, with a warning. A slow but
            // working informer is waited for.
            let generation = self.inner.cache.borrow().generation;
            let mut cached = self.inner.caches.listed(generation);
            if cached
                || handoff.pending_ack().is_none()
                || !self.inner.caches.only_failing_behind(generation)
            {
                caching_since = None;
            } else {
                let (since, warned) = caching_since.get_or_insert_with(|| (Instant::now(), false));
                let deadline = *since + self.inner.handoff_timeout;
                if Instant::now() >= deadline {
                    if !*warned {
                        *warned = true;
                        tracing::warn!(
                            ring = %self.inner.membership.config().ring,
                            "informers have not listed the ranges being taken after {:?}; \
                             acknowledging the table anyway",
                            self.inner.handoff_timeout
                        );
                    }
                    cached = true;
                } else {
                    wait_drain = Some(deadline);
                }
            }
            if let Some(id) = handoff.pending_ack().filter(|_| cached) {
                let outside = {
                    let gate = self.inner.gate.lock();
                    gate.in_flight
                        .values()
                        .filter(|h| !gate.allowed.contains(**h))
                        .count()
                };
                if outside == 0 {
                    draining_since = None;
                    if last_ack != Some(id) {
                        last_ack = Some(id);
                        self.inner.acknowledged.fetch_add(1, Ordering::Relaxed);
                        self.inner.membership.acknowledge(id);
                    }
                } else {
                    let since = *draining_since.get_or_insert_with(Instant::now);
                    let deadline = since + self.inner.handoff_timeout;
                    if Instant::now() >= deadline {
                        self.abandon_outside();
                    }
                    wait_drain = Some(deadline);
                }
            } else {
                draining_since = None;
            }
            let wake = if member_now {
                until.unwrap_or_else(|| Instant::now() + retry)
            } else {
                Instant::now() + retry
            };
            tokio::select! {
                () = &mut renewing => return,
                r = views.changed() => if r.is_err() { return },
                _ = drained.changed() => {},
                _ = listed.changed() => {},
                () = tokio::time::sleep_until(wait_drain.map_or(wake, |d| d.min(wake))) => {},
            }
        }
    }

    /// Running reconciles outside the allowed ranges stop now.
    fn abandon_outside(&self) {
        let mut gate = self.inner.gate.lock();
        let outside = RangeSet::full().difference(&gate.allowed);
        if gate.abandon != outside {
            tracing::warn!(
                ring = %self.inner.membership.config().ring,
                "reconciles of ranges given away still running after {:?}; abandoning them",
                self.inner.handoff_timeout
            );
            gate.abandon = outside;
            drop(gate);
            self.inner.changed.send_modify(|n| *n += 1);
        }
    }

    fn apply(&self, handoff: &mut Handoff, view: &RingView) {
        let t = handoff.observe(view);
        self.inner
            .members
            .store(view.members.len() as u64, Ordering::Relaxed);
        let cacheable = handoff.cacheable();
        {
            let mut gate = self.inner.gate.lock();
            let given = gate.allowed.union(&gate.draining);
            gate.allowed = handoff.allowed().clone();
            gate.cacheable = cacheable.clone();
            gate.draining = if view.member && handoff.pending_ack().is_some() {
                given.difference(&gate.allowed)
            } else {
                RangeSet::empty()
            };
            // Not a member: another replica may take everything after the lease duration,
            // so nothing keeps running. Otherwise what was given away gets the handoff timeout.
            gate.abandon = if view.member {
                gate.abandon.difference(&gate.allowed)
            } else {
                RangeSet::full()
            };
        }
        self.inner.changed.send_modify(|n| *n += 1);
        if !t.revoked.is_empty() || !t.gained.is_empty() {
            tracing::info!(
                ring = %self.inner.membership.config().ring,
                members = view.members.len(),
                member = view.member,
                "shard handoff: reconciling {:.1}% of the space ({:.1}% given up, {:.1}% taken)",
                share(handoff.allowed()),
                share(&t.revoked),
                share(&t.gained),
            );
        }
        // The informers follow only now: a range given away is no longer allowed when its
        // objects leave the cache. Until the new table is acknowledged (its reconciles drained)
        // the ranges given away stay cached too: a reconcile still running there reads the
        // cache (its Deployment must not vanish under it). A replica that is no member keeps
        // nothing: everything it ran was revoked at once.
        let cacheable = if view.member && handoff.pending_ack().is_some() {
            cacheable.union(&self.inner.cache.borrow().ranges)
        } else {
            cacheable
        };
        self.inner.cache.send_if_modified(|a| {
            if a.ranges == cacheable && a.members == view.members {
                return false;
            }
            a.generation += 1;
            a.ring_id = handoff.ring_id().unwrap_or_default();
            a.members = view.members.clone();
            a.ranges = cacheable;
            true
        });
        if !t.gained.is_empty() {
            for f in self.inner.gains.lock().iter() {
                f(&t.gained);
            }
        }
    }

    /// Stops reconciling (new keys are refused; callers stop their workers first), and
    /// deletes the Lease so the others take over at once.
    pub async fn leave(&self) {
        {
            let mut gate = self.inner.gate.lock();
            gate.stopped = true;
            gate.allowed = RangeSet::empty();
            gate.draining = RangeSet::empty();
            gate.abandon = RangeSet::full();
        }
        self.inner.changed.send_modify(|n| *n += 1);
        self.inner.membership.leave().await;
    }
}

fn share(r: &RangeSet) -> f64 {
    r.size() as f64 / super::range::HASH_SPACE_END as f64 * 100.0
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::shard::Table;

    fn view(members: &[&str], table: &Table, acked: &Table) -> RingView {
        RingView {
            member: true,
            members: members.iter().map(|m| m.to_string()).collect(),
            table: Some(Arc::new(table.clone())),
            acked: Some(acked.id()),
            peers: members
                .iter()
                .filter(|m| **m != "a")
                .map(|m| (m.to_string(), Some(acked.id())))
                .collect::<BTreeMap<_, _>>(),
        }
    }

    /// A delete seen in a range being given away is reconciled by the old owner until the new
    /// table is acknowledged (the new owner may have listed the range after it); a live object
    /// there is not, and after the acknowledgement neither is.
    #[tokio::test]
    async fn a_tombstone_of_a_range_being_given_away_is_still_reconciled_here() {
        let config = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
        let client = kube::Client::try_from(config).unwrap();
        let ring = ShardRing::new(client, MembershipConfig::new("r", "a", "default"));
        ring.membership().renewed_now();
        let mut handoff = Handoff::new("a");
        let alone = Table::new(1, vec!["a".into()], vec![(0, 0)]).unwrap();
        let half = 1u64 << 63;
        let two = Table::new(2, vec!["a".into(), "b".into()], vec![(0, 0), (half, 1)]).unwrap();
        ring.apply(&mut handoff, &view(&["a"], &alone, &alone));
        assert_eq!(ring.allowed(), RangeSet::full());
        // `b` joins: the upper half is given away, not yet acknowledged.
        ring.apply(&mut handoff, &view(&["a", "b"], &two, &alone));
        let upper = half + 5;
        assert!(matches!(ring.admit(upper), Admission::NotMine));
        let permit = match ring.admit_deleted(upper) {
            Admission::Reconcile(p) => p,
            other => panic!("a tombstone while draining: {other:?}"),
        };
        assert!(matches!(ring.admit_deleted(5), Admission::Reconcile(_)));
        drop(permit);
        // Acknowledged: the upper half is b's alone.
        ring.apply(&mut handoff, &view(&["a", "b"], &two, &two));
        assert!(matches!(ring.admit_deleted(upper), Admission::NotMine));
        assert!(matches!(ring.admit_deleted(5), Admission::Reconcile(_)));
    }
}
