//! Safe handoff: the ranges a replica may reconcile *now*, so that no hash is ever worked on by
//! two replicas at once while the ring changes.
//!
//! The ring is a published [`Table`] (issue 34: cut where the keys are, see [`super::table`]);
//! its id is what members acknowledge. Every replica has a *claim*: the table id last
//! acknowledged on its Lease
//! ([`RING_ACK_ANNOTATION`](super::RING_ACK_ANNOTATION)); it works only on ranges it owns in that
//! ring (no acknowledgement yet: on nothing). [`Handoff`] keeps the set it may work on,
//! `allowed`, and moves it as follows, fed a [`RingView`] after every read of the Leases:
//!
//! - The view changed (members joined, left, expired): `allowed` shrinks at once to what the
//!   replica owns in both the old and the new ring; it then finishes or abandons what runs
//!   outside it and acknowledges the new ring ([`Handoff::pending_ack`]).
//! - Its acknowledgement of the view is on its Lease and the Leases were read *after* that write
//!   ([`RingView::acked`]): it takes its whole share of the view except what a live peer may
//!   still claim: a peer whose acknowledged ring is another one, whose share of that ring (when
//!   this replica has seen that ring; all of the space when not) overlaps. A peer with no
//!   acknowledgement works on nothing; a peer whose Lease expired has stopped itself (a replica
//!   counts itself a member only within its renew deadline, shorter than the lease duration).
//! - Not a member (its own Lease not renewed within the renew deadline): nothing.
//!
//! Why two replicas never take the same hash: each writes its acknowledgement before it reads
//! the others' (Dekker's order, over the server's linearizable reads). Of two replicas taking a
//! hash under different rings, the one that reads second sees the other's new acknowledgement
//! and waits; under the same ring only one owns the hash. Ownership is the table's, and its id a
//! hash of its whole content, so every replica derives the same owner from the same id,
//! whoever published the table and however often; a replica that is behind keeps working only
//! on ranges of the table it acknowledged, which nobody takes until it acknowledges the next.

use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

use super::RangeSet;
use super::table::Table;

/// How many rings [`Handoff`] remembers to tell which ranges a peer's older acknowledgement
/// covers (a peer acknowledging a ring not remembered blocks every range being taken).
const REMEMBERED_RINGS: usize = 16;

/// One read of the ring's Leases, as this replica sees it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RingView {
    /// Whether this replica counts itself a member (its Lease renewed within the renew
    /// deadline).
    pub member: bool,
    /// The live members (this one included when a member), sorted.
    pub members: Vec<String>,
    /// The ring's published table, as read after `acked` was written (none yet: nobody owns
    /// anything).
    pub table: Option<Arc<Table>>,
    /// The ring id this replica's Lease acknowledges, written before `peers` were read.
    pub acked: Option<u64>,
    /// Every other live member's acknowledged ring id (`None`: none yet), by identity.
    pub peers: BTreeMap<String, Option<u64>>,
}

/// The ranges that changed in one [`Handoff::observe`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Transition {
    /// No longer allowed: stop taking their keys, finish or abandon the running ones.
    pub revoked: RangeSet,
    /// Newly allowed: queue every object of them.
    pub gained: RangeSet,
}

/// One replica's handoff state machine (see the module docs).
#[derive(Debug, Clone)]
pub struct Handoff {
    me: String,
    /// Rings seen, newest last: `(ring id, every member's ranges)`.
    rings: VecDeque<(u64, BTreeMap<String, RangeSet>)>,
    /// The current view's ring id and this replica's share of it (none: not a member).
    view: Option<(u64, RangeSet)>,
    acked: Option<u64>,
    allowed: RangeSet,
}

impl Handoff {
    /// The state of replica `me` before it has seen any ring: nothing allowed. Every replica
    pub fn new(me: impl Into<String>) -> Self {
        Handoff {
            me: me.into(),
            rings: VecDeque::new(),
            view: None,
            acked: None,
            allowed: RangeSet::empty(),
        }
    }

    /// This replica's identity.
    pub fn identity(&self) -> &str {
        &self.me
    }

    /// The ranges this replica may reconcile now.
    pub fn allowed(&self) -> &RangeSet {
        &self.allowed
    }

    /// The ranges to cache: this replica's share of the current view (what it owns and what it
    /// is taking), so its cache is warm when a taken range is allowed.
    pub fn cacheable(&self) -> RangeSet {
        self.view
            .as_ref()
            .map(|(_, r)| r.clone())
            .unwrap_or_default()
    }

    /// The current view's ring id (none while not a member).
    pub fn ring_id(&self) -> Option<u64> {
        self.view.as_ref().map(|(id, _)| *id)
    }

    /// The ring id to acknowledge once nothing runs outside [`allowed`](Self::allowed): the
    /// view's, when the Lease does not acknowledge it yet.
    pub fn pending_ack(&self) -> Option<u64> {
        let (id, _) = self.view.as_ref()?;
        (self.acked != Some(*id)).then_some(*id)
    }

    /// Every member's ranges in table `id`, computed once per table.
    fn ring(&mut self, id: u64, table: &Table) -> &BTreeMap<String, RangeSet> {
        if let Some(i) = self.rings.iter().position(|(r, _)| *r == id) {
            // Most recently used last.
            let entry = self.rings.remove(i).expect("index from position");
            self.rings.push_back(entry);
        } else {
            let shares = table.assignments();
            if self.rings.len() == REMEMBERED_RINGS {
                self.rings.pop_front();
            }
            self.rings.push_back((id, shares));
        }
        &self.rings.back().expect("just pushed").1
    }

    /// What `peer` may be working on while its Lease acknowledges `ack`.
    fn claim_of(&self, peer: &str, ack: Option<u64>) -> RangeSet {
        let Some(ack) = ack else {
            return RangeSet::empty();
        };
        match self.rings.iter().find(|(id, _)| *id == ack) {
            Some((_, shares)) => shares.get(peer).cloned().unwrap_or_default(),
            None => RangeSet::full(),
        }
    }

    /// Feeds one read of the Leases; returns what stopped and what started being allowed.
    pub fn observe(&mut self, view: &RingView) -> Transition {
        let before = self.allowed.clone();
        self.acked = view.acked;
        // A live member the table leaves out (it joined since) owns nothing in it, and still
        // acknowledges it, so that an older acknowledgement of its holds nobody back.
        let table = view
            .table
            .as_ref()
            .filter(|_| view.member && view.members.contains(&self.me));
        let Some(table) = table else {
            self.view = None;
            self.allowed = RangeSet::empty();
            return Transition {
                revoked: before,
                gained: RangeSet::empty(),
            };
        };
        let id = table.id();
        let me = self.me.clone();
        let mine = self.ring(id, table).get(&me).cloned().unwrap_or_default();
        // What is kept across the change.
        let mut allowed = before.intersection(&mine);
        if view.acked == Some(id) {
            let blocked = view
                .peers
                .iter()
                .filter(|(p, ack)| **p != self.me && **ack != Some(id))
                .fold(RangeSet::empty(), |b, (p, ack)| {
                    b.union(&self.claim_of(p, *ack))
                });
            allowed = allowed.union(&mine.difference(&blocked));
        }
        self.view = Some((id, mine));
        self.allowed = allowed;
        Transition {
            revoked: before.difference(&self.allowed),
            gained: self.allowed.difference(&before),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::shard::table::{Load, rebalance};

    fn table(members: &[&str]) -> Arc<Table> {
        Arc::new(Table::even(members))
    }

    fn id(members: &[&str]) -> u64 {
        table(members).id()
    }

    fn share(members: &[&str], me: &str) -> RangeSet {
        table(members).ranges_of(me)
    }

    fn view(members: &[&str], acked: Option<u64>, peers: &[(&str, Option<u64>)]) -> RingView {
        RingView {
            member: true,
            members: members.iter().map(|m| m.to_string()).collect(),
            table: Some(table(members)),
            acked,
            peers: peers.iter().map(|(p, a)| (p.to_string(), *a)).collect(),
        }
    }

    #[test]
    fn a_lone_replica_takes_everything_after_its_acknowledgement() {
        let mut h = Handoff::new("a");
        let t = h.observe(&view(&["a"], None, &[]));
        assert_eq!(t, Transition::default());
        assert!(h.allowed().is_empty());
        assert_eq!(h.cacheable(), RangeSet::full());
        assert_eq!(h.pending_ack(), Some(id(&["a"])));
        let t = h.observe(&view(&["a"], Some(id(&["a"])), &[]));
        assert_eq!(t.gained, RangeSet::full());
        assert_eq!(h.allowed(), &RangeSet::full());
        assert_eq!(h.pending_ack(), None);
    }

    #[test]
    fn a_join_gives_up_the_joiners_ranges_at_once_and_takes_nothing_until_acknowledged() {
        let (one, two) = (id(&["a"]), id(&["a", "b"]));
        let mut a = Handoff::new("a");
        a.observe(&view(&["a"], Some(one), &[]));
        // b joined (no acknowledgement yet): a stops b's ranges at once.
        let t = a.observe(&view(&["a", "b"], Some(one), &[("b", None)]));
        assert_eq!(t.revoked, share(&["a", "b"], "b"));
        assert_eq!(a.allowed(), &share(&["a", "b"], "a"));
        assert_eq!(a.pending_ack(), Some(two));
        // b: its share is blocked while a still acknowledges the one-member ring.
        let mut b = Handoff::new("b");
        b.observe(&view(&["a", "b"], None, &[("a", Some(one))]));
        assert!(b.allowed().is_empty());
        assert_eq!(b.cacheable(), share(&["a", "b"], "b"));
        b.observe(&view(&["a", "b"], Some(two), &[("a", Some(one))]));
        assert!(b.allowed().is_empty(), "a may still work on b's share");
        let t = b.observe(&view(&["a", "b"], Some(two), &[("a", Some(two))]));
        assert_eq!(t.gained, share(&["a", "b"], "b"));
    }

    #[test]
    fn a_peer_without_acknowledgement_blocks_nothing() {
        // c joins a ring of a and b that both acknowledged: c's peers a and b acknowledged
        // {a, b}: they may work on their shares of it, which c's share overlaps, so c waits.
        let ab = id(&["a", "b"]);
        let abc = id(&["a", "b", "c"]);
        let mut c = Handoff::new("c");
        // c has seen {a, b}? No: a claim of an unknown ring blocks all.
        c.observe(&view(
            &["a", "b", "c"],
            Some(abc),
            &[("a", Some(ab)), ("b", None)],
        ));
        assert!(c.allowed().is_empty());
        // b has no acknowledgement (a fresh replica) and a acknowledged abc: c takes it all.
        c.observe(&view(
            &["a", "b", "c"],
            Some(abc),
            &[("a", Some(abc)), ("b", None)],
        ));
        assert_eq!(c.allowed(), &share(&["a", "b", "c"], "c"));
    }

    #[test]
    fn an_older_known_ring_blocks_only_that_peers_share_of_it() {
        let (ab, abc) = (id(&["a", "b"]), id(&["a", "b", "c"]));
        let mut a = Handoff::new("a");
        a.observe(&view(&["a", "b"], Some(ab), &[("b", Some(ab))]));
        assert_eq!(a.allowed(), &share(&["a", "b"], "a"));
        // A ring of three: a acknowledged it, b not yet. c acknowledges nothing. a keeps what it
        // keeps and may take nothing b still claims; a join only takes from a, so nothing more.
        a.observe(&view(
            &["a", "b", "c"],
            Some(abc),
            &[("b", Some(ab)), ("c", None)],
        ));
        assert_eq!(a.allowed(), &share(&["a", "b", "c"], "a"));
        // c leaves again before anyone acknowledged: a takes back only what b does not claim.
        let t = a.observe(&view(&["a", "b"], Some(abc), &[("b", Some(ab))]));
        assert!(t.gained.is_empty(), "not acknowledged {{a, b}} again yet");
        let t = a.observe(&view(&["a", "b"], Some(ab), &[("b", Some(ab))]));
        assert_eq!(a.allowed(), &share(&["a", "b"], "a"));
        assert_eq!(
            t.gained,
            share(&["a", "b"], "a").difference(&share(&["a", "b", "c"], "a"))
        );
    }

    #[test]
    fn a_peer_that_never_acknowledges_keeps_its_ranges_until_its_lease_expires() {
        let (abc, ab) = (id(&["a", "b", "c"]), id(&["a", "b"]));
        let mut a = Handoff::new("a");
        a.observe(&view(
            &["a", "b", "c"],
            Some(abc),
            &[("b", Some(abc)), ("c", Some(abc))],
        ));
        let all3 = share(&["a", "b", "c"], "a");
        assert_eq!(a.allowed(), &all3);
        // b's view is {a, b} first (c crashed, b saw it expire first) ... no: c is alive and
        // stuck; b and c keep acknowledging abc. a's view drops c (a saw c's lease expire).
        // Nothing else acknowledged ab: a takes nothing of c's while b claims abc? b's abc share
        // does not overlap c's: a takes c's part of its ab share.
        a.observe(&view(&["a", "b"], Some(ab), &[("b", Some(abc))]));
        let mine = share(&["a", "b"], "a");
        let b_claim = share(&["a", "b", "c"], "b");
        assert_eq!(
            a.allowed(),
            &mine.difference(&b_claim).union(&all3.intersection(&mine))
        );
        // b never acknowledges: a never takes what b claims.
        for _ in 0..3 {
            a.observe(&view(&["a", "b"], Some(ab), &[("b", Some(abc))]));
            assert!(a.allowed().intersection(&b_claim).is_empty());
        }
        // b's lease expires: a owns everything once it acknowledges the ring of one.
        let t = a.observe(&view(&["a"], Some(ab), &[]));
        assert!(t.gained.is_empty());
        a.observe(&view(&["a"], Some(id(&["a"])), &[]));
        assert_eq!(a.allowed(), &RangeSet::full());
    }

    #[test]
    fn losing_membership_revokes_everything() {
        let mut a = Handoff::new("a");
        a.observe(&view(&["a"], Some(id(&["a"])), &[]));
        let t = a.observe(&RingView {
            member: false,
            ..view(&["b"], Some(id(&["a"])), &[])
        });
        assert_eq!(t.revoked, RangeSet::full());
        assert!(a.allowed().is_empty());
        assert!(a.cacheable().is_empty());
        assert_eq!(a.pending_ack(), None);
    }

    // --- The protocol under every kind of interleaving ---------------------------------

    /// A tiny deterministic generator (xorshift64*), so a failure reproduces from its seed.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: usize) -> usize {
            self.0 ^= self.0 >> 12;
            self.0 ^= self.0 << 25;
            self.0 ^= self.0 >> 27;
            (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 33) as usize % n.max(1)
        }
    }

    /// The Leases: holder -> acknowledged ring; present while live. Beside them the published
    /// table: republished by whoever steps when it names other members than the live ones, and,
    /// while `shuffle` is set, rebalanced under random loads at random steps (handoff safety
    /// must not depend on which tables are published, nor how often).
    #[derive(Default)]
    struct Leases(
        BTreeMap<String, Option<u64>>,
        Option<Arc<Table>>,
        Option<Rng>,
    );

    impl Leases {
        fn shuffled(seed: u64) -> Self {
            Leases(BTreeMap::new(), None, Some(Rng(seed | 1)))
        }

        fn publish(&mut self) {
            let members: Vec<String> = self.0.keys().cloned().collect();
            let stale = self.1.as_ref().is_none_or(|t| t.members() != members);
            let mut load = if stale { Some(Load::default()) } else { None };
            if let Some(rng) = &mut self.2
                && (stale || rng.below(4) == 0)
            {
                let n = 1 + rng.below(30);
                load = Some(Load::new((0..n).map(|_| {
                    let h = ((rng.below(1 << 20) as u64) << 44) | rng.below(1 << 30) as u64;
                    (h, 1 + rng.below(9) as u64)
                })));
            }
            let Some(load) = load else {
                return;
            };
            let generation = self.1.as_ref().map_or(0, |t| t.generation() + 1);
            self.1 = Some(Arc::new(rebalance(
                self.1.as_deref(),
                &members,
                &load,
                generation,
            )));
        }
    }

    struct Replica {
        handoff: Handoff,
        /// Alive and renewing.
        up: bool,
        /// The acknowledgement to write on the next step (what the runtime hands
        /// `Membership::acknowledge` once nothing runs outside the allowed ranges).
        to_ack: Option<u64>,
    }

    impl Replica {
        fn new(name: &str) -> Self {
            Replica {
                handoff: Handoff::new(name),
                up: true,
                to_ack: None,
            }
        }
    }

    /// One membership step: renew the Lease with the pending acknowledgement, then list the
    /// Leases (after the write, as `Membership::step` does), then drain (at once here) and
    /// decide the next acknowledgement. A replica that is behind is one not stepped for a
    /// while.
    fn step(leases: &mut Leases, r: &mut Replica) {
        if !r.up {
            return;
        }
        let me = r.handoff.identity().to_owned();
        // A Lease left by an earlier process keeps its acknowledgement (renewals edit it).
        let entry = leases.0.entry(me.clone()).or_insert(None);
        if let Some(a) = r.to_ack.take() {
            *entry = Some(a);
        }
        let acked = *entry;
        leases.publish();
        let peers = leases
            .0
            .iter()
            .filter(|(p, _)| **p != me)
            .map(|(p, a)| (p.clone(), *a))
            .collect();
        r.handoff.observe(&RingView {
            member: true,
            members: leases.0.keys().cloned().collect(),
            table: leases.1.clone(),
            acked,
            peers,
        });
        r.to_ack = r.handoff.pending_ack();
    }

    /// A replica whose renewals fail: past its renew deadline it drops everything (its own
    /// clock), and only then, at the lease duration, do the others see its Lease expire.
    fn partition(leases: &mut Leases, r: &mut Replica) {
        let me = r.handoff.identity().to_owned();
        r.handoff.observe(&RingView {
            member: false,
            ..RingView::default()
        });
        r.to_ack = None;
        leases.0.remove(&me);
    }

    fn assert_disjoint(rs: &BTreeMap<String, Replica>, when: &str) {
        let live: Vec<(&String, &Replica)> = rs.iter().filter(|(_, r)| r.up).collect();
        for (i, (a, ra)) in live.iter().enumerate() {
            for (b, rb) in &live[i + 1..] {
                let both = ra.handoff.allowed().intersection(rb.handoff.allowed());
                assert!(both.is_empty(), "{a} and {b} both allowed {both:?} {when}");
            }
        }
    }

    /// Steps everyone without new rebalances until they converge; returns the table.
    fn settle(leases: &mut Leases, rs: &mut BTreeMap<String, Replica>) -> Arc<Table> {
        let shuffle = leases.2.take();
        for _ in 0..4 {
            for r in rs.values_mut() {
                step(leases, r);
            }
            assert_disjoint(rs, "while settling");
        }
        let up: Vec<&Replica> = rs.values().filter(|r| r.up).collect();
        let total = up
            .iter()
            .fold(RangeSet::empty(), |u, r| u.union(r.handoff.allowed()));
        assert_eq!(total, RangeSet::full(), "the live replicas cover the space");
        leases.2 = shuffle;
        leases.1.clone().expect("a table")
    }

    #[test]
    fn scale_3_to_4_to_2_in_every_order() {
        for seed in 1..=200u64 {
            let mut rng = Rng(seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1);
            let mut leases = Leases::shuffled(seed);
            let mut rs: BTreeMap<String, Replica> = ["a", "b", "c"]
                .iter()
                .map(|n| (n.to_string(), Replica::new(n)))
                .collect();
            settle(&mut leases, &mut rs);
            // 3 -> 4: d joins; a random interleaving of steps (replicas lag behind each other).
            rs.insert("d".into(), Replica::new("d"));
            let names: Vec<String> = rs.keys().cloned().collect();
            for _ in 0..rng.below(12) {
                let n = &names[rng.below(names.len())];
                step(&mut leases, rs.get_mut(n).unwrap());
                assert_disjoint(&rs, &format!("seed {seed} joining"));
            }
            // 4 -> 2 before 4 settled: c leaves (Lease deleted after its work stopped), b
            // crashes (its Lease expires; a crashed replica works on nothing).
            let c = rs.get_mut("c").unwrap();
            c.up = false;
            leases.0.remove("c");
            let b = rs.get_mut("b").unwrap();
            b.up = false;
            let expire_after = rng.below(10);
            for i in 0..20 {
                if i == expire_after {
                    leases.0.remove("b");
                }
                let n = &names[rng.below(names.len())];
                step(&mut leases, rs.get_mut(n).unwrap());
                assert_disjoint(&rs, &format!("seed {seed} shrinking"));
            }
            leases.0.remove("b");
            let table = settle(&mut leases, &mut rs);
            assert_eq!(table.members(), ["a", "d"]);
            for n in ["a", "d"] {
                assert_eq!(
                    rs[n].handoff.allowed(),
                    &table.ranges_of(n),
                    "seed {seed}: {n} owns its share of the ring of two"
                );
            }
        }
    }

    #[test]
    fn random_churn_never_overlaps_and_always_converges() {
        let pool = ["a", "b", "c", "d", "e"];
        for seed in 1..=300u64 {
            let mut rng = Rng(seed.wrapping_mul(0xbf58_476d_1ce4_e5b9) | 1);
            let mut leases = Leases::shuffled(seed);
            let mut rs: BTreeMap<String, Replica> = BTreeMap::new();
            for _ in 0..60 {
                match rng.below(10) {
                    // Join (again, as a fresh process).
                    0 | 1 => {
                        let n = pool[rng.below(pool.len())];
                        if rs.get(n).is_none_or(|r| !r.up) && !leases.0.contains_key(n) {
                            rs.insert(n.to_owned(), Replica::new(n));
                        }
                    }
                    // Leave cleanly or crash; a crashed one's Lease expires later.
                    2 => {
                        if let Some(n) = pool.get(rng.below(pool.len()))
                            && let Some(r) = rs.get_mut(*n)
                        {
                            r.up = false;
                            if rng.below(2) == 0 {
                                leases.0.remove(*n);
                            }
                        }
                    }
                    3 => {
                        // Expire the Lease of a replica that is down.
                        let down: Vec<String> = rs
                            .iter()
                            .filter(|(n, r)| !r.up && leases.0.contains_key(*n))
                            .map(|(n, _)| n.clone())
                            .collect();
                        if !down.is_empty() {
                            leases.0.remove(&down[rng.below(down.len())]);
                        }
                    }
                    _ => {
                        let up: Vec<String> = rs
                            .iter()
                            .filter(|(_, r)| r.up)
                            .map(|(n, _)| n.clone())
                            .collect();
                        if !up.is_empty() {
                            let n = &up[rng.below(up.len())];
                            if rng.below(12) == 0 {
                                partition(&mut leases, rs.get_mut(n).unwrap());
                            } else {
                                step(&mut leases, rs.get_mut(n).unwrap());
                            }
                        }
                    }
                }
                assert_disjoint(&rs, &format!("seed {seed}"));
            }
            // Every dead replica's Lease expires; the rest converge to the ring of the living.
            let dead: Vec<String> = rs
                .iter()
                .filter(|(_, r)| !r.up)
                .map(|(n, _)| n.clone())
                .collect();
            for n in dead {
                leases.0.remove(&n);
                rs.remove(&n);
            }
            if rs.is_empty() {
                continue;
            }
            let table = settle(&mut leases, &mut rs);
            let members: Vec<&str> = rs.keys().map(String::as_str).collect();
            assert_eq!(table.members(), members);
            for n in &members {
                assert_eq!(rs[*n].handoff.allowed(), &table.ranges_of(n), "seed {seed}");
            }
        }
    }
}
