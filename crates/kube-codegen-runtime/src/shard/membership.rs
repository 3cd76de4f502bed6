//! Ring membership through Leases: every replica holds its own `coordination.k8s.io/v1` Lease
//! labelled [`RING_LABEL`]`=<ring>`, renewed like leader election's (15 s duration, 10 s renew
//! deadline, 2 s retry: [`crate::leaderelection`]'s defaults); the ring is the set of those
//! Leases that are not expired. Who owns which ranges is the ring's [`Table`] (issue 34), kept
//! on one more Lease of the ring (`<ring>.ring`, no holder, annotation [`RING_TABLE_ANNOTATION`])
//! and written by one member, the live member with the lowest identity: when the live members
//! differ from the table's, at once; when the shares drifted past [`table::REBALANCE_BOUND`] of
//! the even share, once every member published its load for the current table and the table is
//! `rebalance_interval` old. Each member publishes the hashes of the keys it caches, weighted by
//! objects, on its own Lease ([`RING_LOAD_ANNOTATION`]; sources added with
//! [`Membership::add_load_source`]). A member that leaves (its Lease expired or deleted) leaves
//! its last load behind: the table that replaces it shares its keys out by that load at once,
//! moving nothing else (without it the leaver's ranges could only be split by their size in
//! the hash space, and a drift rebalance would then move the survivors' keys too). The replica's share of the table is published on a
//! `tokio::sync::watch` channel of [`Assignment`]s. Two members writing the table at once is
//! harmless: the writes are conditional on the Lease's `resourceVersion`, and the handoff is safe
//! whatever tables are published (members act on a table only once they acknowledged it).
//!
//! Expiry is judged as client-go's leader election judges it, by when this replica last saw a
//! Lease change (its own clock), never by comparing another replica's `renewTime` with it: clock
//! skew cannot make a live member look dead. A replica counts itself a member only while its
//! last successful renewal is within the renew deadline, which is shorter than the duration
//! the others wait: one whose Lease lapses gives up its ranges before anyone takes them.
//!
//! For the handoff ([`super::handoff`]), a member [`acknowledge`](Membership::acknowledge)s the
//! ring it has stopped working on the old split for; the next renewal writes it to its Lease
//! ([`RING_ACK_ANNOTATION`]), and every step publishes a [`RingView`] (members, this replica's
//! written acknowledgement, the live peers' acknowledgements read after it) on a second channel.
//! The renew deadline is counted from when the renewal was *sent* (as leader election counts
//! it), so a replica never counts itself a member after the others may count it gone, whatever
//! the request's latency; [`Membership::member_until`] is that deadline, for a gate that must
//! hold even when this task stalls.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::api::coordination::v1::{Lease, LeaseSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams, PostParams};
use parking_lot::Mutex;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::RangeSet;
use super::table::{self, Load, Table};

use super::{Assignment, RingView};
use crate::leaderelection::{DEFAULT_LEASE_DURATION, DEFAULT_RENEW_DEADLINE, DEFAULT_RETRY_PERIOD};

/// The label naming the ring a Lease belongs to.
pub const RING_LABEL: &str = "kube-codegen.io/shard-ring";
/// The annotation holding the last ring (its [`Assignment::ring_id`], hex) the member
/// acknowledged.
pub const RING_ACK_ANNOTATION: &str = "kube-codegen.io/shard-ring-acknowledged";
/// The annotation of the ring's table Lease holding the published [`Table`] (JSON).
pub const RING_TABLE_ANNOTATION: &str = "kube-codegen.io/shard-ring-table";
/// The annotation holding a member's load: the table id (hex) it was observed under, `;`, then
/// [`Load::encode`] of its summary ([`table::SUMMARY_POINTS`] points at most).
pub const RING_LOAD_ANNOTATION: &str = "kube-codegen.io/shard-ring-load";

/// Where a member's load comes from: `(hash, objects)` of the keys it caches.
pub type LoadSource = Box<dyn Fn() -> Vec<(u64, u64)> + Send + Sync>;

/// How a replica takes part in a ring.
#[derive(Debug, Clone)]
pub struct MembershipConfig {
    /// The ring's name (the label value); replicas of one controller share it.
    pub ring: String,
    /// This replica's identity (e.g. the pod name), unique in the ring.
    pub identity: String,
    /// Where the Leases live.
    pub namespace: String,
    /// How long another replica waits after seeing a Lease's last change before it counts the
    /// member gone.
    pub lease_duration: Duration,
    /// How long after its last successful renewal a replica still counts itself a member.
    pub renew_deadline: Duration,
    /// How often the Lease is renewed and the ring read.
    pub retry_period: Duration,
    /// The least time between two rebalances for drift (not for membership changes, which
    /// are published at once); the lease duration by default.
    pub rebalance_interval: Duration,
    /// Watch the ring's Leases (default): a join, a leave, a new table or a peer's
    /// acknowledgement is read at once instead of at the next retry period, which stays the
    /// renewal cadence and the resync. `false`: poll only (issue 30's behaviour).
    pub watch: bool,
}

impl MembershipConfig {
    /// Leader election's timing defaults.
    pub fn new(
        ring: impl Into<String>,
        identity: impl Into<String>,
        namespace: impl Into<String>,
    ) -> Self {
        MembershipConfig {
            ring: ring.into(),
            identity: identity.into(),
            namespace: namespace.into(),
            lease_duration: DEFAULT_LEASE_DURATION,
            renew_deadline: DEFAULT_RENEW_DEADLINE,
            retry_period: DEFAULT_RETRY_PERIOD,
            rebalance_interval: DEFAULT_LEASE_DURATION,
            watch: true,
        }
    }

    /// Watch the ring's Leases (`true`, the default) or only poll them every retry period.
    pub fn watch(mut self, on: bool) -> Self {
        self.watch = on;
        self
    }

    /// Other timings (tests): the renew deadline is kept below the duration.
    pub fn timing(mut self, lease: Duration, renew_deadline: Duration, retry: Duration) -> Self {
        self.lease_duration = lease;
        self.renew_deadline = renew_deadline.min(lease);
        self.retry_period = retry;
        self.rebalance_interval = lease;
        self
    }

    /// The name of the ring's table Lease: `<ring>.ring` (a member's Lease name has no dot, so
    /// the two never meet).
    pub fn table_lease_name(&self) -> String {
        format!("{}.ring", object_name(&self.ring, 240))
    }

    /// The Lease's name: `<ring>-<identity>`, made a valid object name (a DNS subdomain, as
    /// kube-apiserver's `ValidateObjectMeta` requires of a Lease): lower case, every character
    /// but `[a-z0-9-]` `-`, and, when that changed the identity or the name is too long, the
    /// identity's hash appended so that two identities never share a Lease. The identity
    /// itself is the Lease's `holderIdentity`, unchanged.
    pub fn lease_name(&self) -> String {
        object_name(&format!("{}-{}", self.ring, self.identity), 253)
    }
}

/// `raw` made a DNS label-like name of at most `max` bytes (see
/// [`MembershipConfig::lease_name`]).
fn object_name(raw: &str, max: usize) -> String {
    {
        let mut name: String = raw
            .chars()
            .map(|c| match c {
                'a'..='z' | '0'..='9' | '-' => c,
                'A'..='Z' => c.to_ascii_lowercase(),
                _ => '-',
            })
            .collect();
        // 253 characters at most; begins and ends alphanumeric.
        if name != raw || name.len() > max || name.ends_with('-') {
            let hash = kube_codegen_crd::shard::fnv1a64(raw.as_bytes());
            name.truncate(max - 17);
            name = format!("{}-{hash:016x}", name.trim_end_matches('-'));
        }
        let trimmed = name.trim_start_matches('-');
        if trimmed.is_empty() {
            return format!(
                "ring-{:016x}",
                kube_codegen_crd::shard::fnv1a64(raw.as_bytes())
            );
        }
        trimmed.to_owned()
    }
}

/// A Lease as last seen: its `renewTime`, holder and acknowledged ring, and when this replica
/// saw that.
struct Seen {
    renew: Option<String>,
    holder: String,
    ack: Option<u64>,
    /// The load it published, and the table id it was observed under.
    load: Option<(u64, Load)>,
    at: Instant,
}

struct State {
    seen: HashMap<String, Seen>,
    /// When the last successful renewal was sent.
    last_renewed: Option<Instant>,
    /// What to write on the next renewal.
    ack: Option<u64>,
    /// What the Lease acknowledges, as of the last successful renewal.
    written_ack: Option<u64>,
    /// The Lease as the last successful renewal wrote it: the next renewal replaces it without
    /// reading first (as leader election renews); `None` after a failed write, so the next one
    /// reads the Lease again.
    written: Option<Lease>,
    /// The table Lease as last read or written, and its table.
    table: Option<(Lease, Option<Arc<Table>>)>,
    /// The current table's id and when this replica first saw it (the rebalance interval).
    table_since: Option<(u64, Instant)>,
    /// Whether this replica, as coordinator, has rebalanced for drift yet: the first time
    /// does not wait out the rebalance interval (a new ring's first table is cut before any
    /// member cached anything, so it splits the space, not the keys).
    drift_rebalanced: bool,
    /// The last load each member published that is no longer live (its Lease expired, or
    /// deleted by a graceful leave), by holder: its keys are still there, and the table that
    /// replaces it gives them to the others at once rather than after a drift rebalance.
    departed: HashMap<String, (u64, Load)>,
}

/// One replica's membership of a ring.
#[derive(Clone)]
pub struct Membership {
    api: Api<Lease>,
    config: Arc<MembershipConfig>,
    tx: Arc<watch::Sender<Assignment>>,
    view: Arc<watch::Sender<RingView>>,
    state: Arc<Mutex<State>>,
    sources: Arc<Mutex<Vec<LoadSource>>>,
    /// A ring Lease changed in a way that matters (membership, table, acknowledgement): read.
    reread: Arc<Notify>,
    /// A new acknowledgement waits: renew now rather than at the next retry period.
    renew_now: Arc<Notify>,
}

impl std::fmt::Debug for Membership {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Membership")
            .field("config", &self.config)
            .field("assignment", &*self.tx.borrow())
            .finish_non_exhaustive()
    }
}

impl Membership {
    /// A member of `config.ring`; nothing happens until [`run`](Self::run).
    pub fn new(client: kube::Client, config: MembershipConfig) -> Self {
        Membership {
            api: Api::namespaced(client, &config.namespace),
            config: Arc::new(config),
            tx: Arc::new(watch::channel(Assignment::default()).0),
            view: Arc::new(watch::channel(RingView::default()).0),
            state: Arc::new(Mutex::new(State {
                seen: HashMap::new(),
                last_renewed: None,
                ack: None,
                written_ack: None,
                written: None,
                table: None,
                table_since: None,
                drift_rebalanced: false,
                departed: HashMap::new(),
            })),
            sources: Arc::default(),
            reread: Arc::default(),
            renew_now: Arc::default(),
        }
    }

    /// Adds where this replica's load comes from (a controller adds its cache: the hash of
    /// each cached object, 1); the sources' keys are summed.
    pub fn add_load_source(&self, f: impl Fn() -> Vec<(u64, u64)> + Send + Sync + 'static) {
        self.sources.lock().push(Box::new(f));
    }

    /// The ring's published table, as last read (none before one is published).
    pub fn table(&self) -> Option<Arc<Table>> {
        self.state
            .lock()
            .table
            .as_ref()
            .and_then(|(_, t)| t.clone())
    }

    /// This replica's assignment, updated whenever the ring or its own membership changes.
    pub fn subscribe(&self) -> watch::Receiver<Assignment> {
        self.tx.subscribe()
    }

    /// The current assignment.
    pub fn assignment(&self) -> Assignment {
        self.tx.borrow().clone()
    }

    /// The ring as of the last step, with the acknowledgements (for [`super::Handoff`]);
    /// published when it changes.
    pub fn view(&self) -> watch::Receiver<RingView> {
        self.view.subscribe()
    }

    /// Until when this replica counts itself a member: its last successful renewal's send time
    /// plus the renew deadline (`None`: not renewed yet, or left).
    pub fn member_until(&self) -> Option<Instant> {
        self.state
            .lock()
            .last_renewed
            .map(|t| t + self.config.renew_deadline)
    }

    /// Counts this replica a member as if it had just renewed (unit tests of the gate).
    #[cfg(test)]
    pub(crate) fn renewed_now(&self) {
        self.state.lock().last_renewed = Some(Instant::now());
    }

    /// The configuration.
    pub fn config(&self) -> &MembershipConfig {
        &self.config
    }

    /// Records that this replica has acted on ring `ring_id` (an [`Assignment::ring_id`]); the
    /// next renewal writes it to the Lease's [`RING_ACK_ANNOTATION`].
    pub fn acknowledge(&self, ring_id: u64) {
        let new = self.state.lock().ack.replace(ring_id) != Some(ring_id);
        if new {
            self.renew_now.notify_one();
        }
    }

    /// Renews the Lease and reads the ring every retry period, until the future is dropped;
    /// between renewals, reads the ring whenever the Lease watch ([`MembershipConfig::watch`])
    /// reports a change that matters, and renews at once when there is a new acknowledgement
    /// to write. Failures (a write refused, the server unreachable) are logged and retried;
    /// while they last past the renew deadline the replica owns nothing.
    pub async fn run(&self) {
        let mut tick = tokio::time::interval(self.config.retry_period);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let watching = async {
            if self.config.watch {
                super::lease_watch::run(&self.api, &self.config, &self.reread).await;
            }
            std::future::pending::<()>().await;
        };
        let steps = async {
            loop {
                let renew = tokio::select! {
                    biased;
                    _ = tick.tick() => true,
                    () = self.renew_now.notified() => true,
                    () = self.reread.notified() => false,
                };
                self.step_with(renew).await;
            }
        };
        tokio::select! {
            () = watching => {},
            () = steps => {},
        }
    }

    /// Gives up the ranges and deletes the Lease, so the others take them over at once.
    pub async fn leave(&self) {
        {
            let mut st = self.state.lock();
            st.last_renewed = None;
            st.written = None;
        }
        self.publish(None, false);
        self.view.send_replace(RingView::default());
        let name = self.config.lease_name();
        if let Err(e) = self.api.delete(&name, &Default::default()).await {
            tracing::warn!(
                "shard ring {}: lease {name} not deleted: {e}",
                self.config.ring
            );
        }
    }

    /// One renewal and one read of the ring (and, on the coordinating member, the table
    /// published when it must be).
    pub async fn step(&self) {
        self.step_with(true).await;
    }

    /// A read of the ring, after a renewal when `renew` (a read alone still comes after the
    /// last acknowledgement written, which is all the handoff's order asks).
    async fn step_with(&self, renew: bool) {
        // The load is tagged with the table this replica acknowledged, taken before the load is
        // read: it acknowledges a table only once its informers listed that table's share, so
        // a load of the current table is the whole of this member's share of it.
        // Only the keys of this member's share of that table count: ranges it gave away stay
        // cached until the new table is acknowledged, and counting them would count their
        // keys twice (the taker reports them too) and skew the next cut.
        let (load_of, share) = {
            let st = self.state.lock();
            let share = st
                .table
                .as_ref()
                .and_then(|(_, t)| t.as_deref())
                .filter(|t| Some(t.id()) == st.ack)
                .map(|t| t.ranges_of(&self.config.identity));
            (st.ack, share)
        };
        let load = self.own_load(share.as_ref());
        if renew {
            let sent = Instant::now();
            match self.renew(&load, load_of).await {
                Ok(ack) => {
                    let mut st = self.state.lock();
                    st.last_renewed = Some(sent);
                    st.written_ack = ack;
                }
                Err(e) => {
                    tracing::warn!("shard ring {}: lease not renewed: {e}", self.config.ring)
                }
            }
        }
        // The acknowledgement on the Lease before the list below is sent: the peers' read
        // after it (the handoff's order).
        let acked = self.state.lock().written_ack;
        let leases = self
            .api
            .list(&ListParams::default().labels(&format!("{RING_LABEL}={}", self.config.ring)))
            .await;
        let now = Instant::now();
        let table_name = self.config.table_lease_name();
        let me = &self.config.identity;
        let (member, peers, mut loads, all_loaded, departed, table, table_since, table_lease) = {
            let mut st = self.state.lock();
            // Fields borrowed apart (the live Leases while the departed ones are noted).
            let st = &mut *st;
            match leases {
                Ok(list) => {
                    let mut fresh = HashMap::new();
                    let mut table_lease = None;
                    for lease in list.items {
                        let Some(name) = lease.metadata.name.clone() else {
                            continue;
                        };
                        if name == table_name {
                            table_lease = Some(lease);
                            continue;
                        }
                        let annotation = |key: &str| {
                            lease
                                .metadata
                                .annotations
                                .as_ref()
                                .and_then(|a| a.get(key))
                                .cloned()
                        };
                        let ack = annotation(RING_ACK_ANNOTATION)
                            .and_then(|v| u64::from_str_radix(&v, 16).ok());
                        let load = annotation(RING_LOAD_ANNOTATION).and_then(|v| {
                            let (id, load) = v.split_once(';')?;
                            Some((u64::from_str_radix(id, 16).ok()?, Load::decode(load)?))
                        });
                        let spec = lease.spec.unwrap_or_default();
                        let Some(holder) = spec.holder_identity.filter(|h| !h.is_empty()) else {
                            continue;
                        };
                        let renew = spec.renew_time.map(|t| t.0.to_string());
                        let at = match st.seen.remove(&name) {
                            Some(s) if s.renew == renew && s.holder == holder => s.at,
                            _ => now,
                        };
                        fresh.insert(
                            name,
                            Seen {
                                renew,
                                holder,
                                ack,
                                load,
                                at,
                            },
                        );
                    }
                    // A Lease gone since the last read (a graceful leave deletes it): its
                    // holder's last load is kept for the table that replaces it.
                    let gone: Vec<(String, (u64, Load))> = st
                        .seen
                        .drain()
                        .filter_map(|(_, s)| Some((s.holder, s.load?)))
                        .collect();
                    st.departed.extend(gone);
                    st.seen = fresh;
                    st.table = table_lease.map(|l| {
                        let t = l
                            .metadata
                            .annotations
                            .as_ref()
                            .and_then(|a| a.get(RING_TABLE_ANNOTATION))
                            .and_then(|t| Table::decode(t))
                            .map(Arc::new);
                        (l, t)
                    });
                }
                Err(e) => tracing::warn!("shard ring {}: leases not listed: {e}", self.config.ring),
            }
            let member = st
                .last_renewed
                .is_some_and(|t| now.duration_since(t) < self.config.renew_deadline);
            let (live, expired): (Vec<&Seen>, Vec<&Seen>) = st
                .seen
                .values()
                .filter(|s| &s.holder != me)
                .partition(|s| now.duration_since(s.at) < self.config.lease_duration);
            let peers: std::collections::BTreeMap<String, Option<u64>> =
                live.iter().map(|s| (s.holder.clone(), s.ack)).collect();
            let loads: Vec<(u64, Load)> = live.iter().filter_map(|s| s.load.clone()).collect();
            let all_loaded = loads.len() == live.len();
            // Expired Leases' holders have departed too; a holder live again has not.
            st.departed.extend(
                expired
                    .iter()
                    .filter_map(|s| Some((s.holder.clone(), s.load.clone()?))),
            );
            for s in &live {
                st.departed.remove(&s.holder);
            }
            st.departed.remove(me);
            // Only loads of the current table can still be used: tables only move on.
            if let Some(id) = st
                .table
                .as_ref()
                .and_then(|(_, t)| t.as_ref())
                .map(|t| t.id())
            {
                st.departed.retain(|_, (of, _)| *of == id);
            }
            let departed: Vec<(String, (u64, Load))> = st
                .departed
                .iter()
                .map(|(h, l)| (h.clone(), l.clone()))
                .collect();
            let table = st.table.as_ref().and_then(|(_, t)| t.clone());
            if let Some(t) = &table {
                let id = t.id();
                if st.table_since.is_none_or(|(seen, _)| seen != id) {
                    st.table_since = Some((id, now));
                }
            }
            let table_since = st.table_since;
            let table_lease = st.table.as_ref().map(|(l, _)| l.clone());
            (
                member,
                peers,
                loads,
                all_loaded,
                departed,
                table,
                table_since,
                table_lease,
            )
        };
        let mut members: Vec<String> = peers.keys().cloned().collect();
        if member {
            members.push(me.clone());
        }
        members.sort();
        let mut table = table;
        // The coordinator: the lowest live identity, when it counts itself a member.
        if member && members.first() == Some(me) {
            loads.push((load_of.unwrap_or_default(), load));
            let next = self.next_table(
                table.as_deref(),
                &members,
                &loads,
                &departed,
                all_loaded,
                table_since,
            );
            if let Some(next) = next {
                match self.write_table(table_lease, &next).await {
                    Ok(lease) => {
                        let next = Arc::new(next);
                        let mut st = self.state.lock();
                        st.table = Some((lease, Some(next.clone())));
                        st.table_since = Some((next.id(), Instant::now()));
                        table = Some(next);
                    }
                    Err(e) => tracing::debug!(
                        "shard ring {}: table not written (another member's write won?): {e}",
                        self.config.ring
                    ),
                }
            }
        }
        let view = RingView {
            member,
            members: members.clone(),
            table: table.clone(),
            acked,
            peers,
        };
        self.publish(table.as_deref(), member);
        self.view.send_if_modified(|v| {
            let changed = *v != view;
            *v = view;
            changed
        });
    }

    /// This replica's load now (the sources summed, summarised), tagged on the next renewal
    /// with the table it was observed under.
    fn own_load(&self, share: Option<&RangeSet>) -> Load {
        let keys: Vec<(u64, u64)> = self
            .sources
            .lock()
            .iter()
            .flat_map(|f| f())
            .filter(|(h, _)| share.is_none_or(|s| s.contains(*h)))
            .collect();
        Load::new(keys).summary(table::SUMMARY_POINTS)
    }

    /// The table the coordinator publishes now, if any: a new one when the live members are
    /// not the table's; a rebalanced one when the shares drifted past the bound, every member's
    /// load is of the current table, the table is `rebalance_interval` old (not for this
    /// coordinator's first drift rebalance: a new ring's), and the rebalance
    /// makes the worst share better.
    fn next_table(
        &self,
        current: Option<&Table>,
        members: &[String],
        loads: &[(u64, Load)],
        departed: &[(String, (u64, Load))],
        all_loaded: bool,
        since: Option<(u64, Instant)>,
    ) -> Option<Table> {
        let generation = current.map_or(1, |t| t.generation() + 1);
        let merged = Load::merge(loads.iter().map(|(_, l)| l));
        let Some(t) = current.filter(|t| t.members() == members) else {
            // The keys of members of the current table that left, as they last published them
            // under it (their ranges were theirs alone, so nothing is counted twice): the new
            // table shares them out at once, moving only what the leavers held.
            let left = departed.iter().filter(|(holder, (of, _))| {
                current.is_some_and(|t| *of == t.id() && t.members().contains(holder))
                    && !members.contains(holder)
            });
            let with_left = Load::merge(
                loads
                    .iter()
                    .map(|(_, l)| l)
                    .chain(left.map(|(_, (_, l))| l)),
            );
            return Some(table::rebalance(current, members, &with_left, generation));
        };
        let id = t.id();
        let first = !self.state.lock().drift_rebalanced;
        let settled = all_loaded
            && loads.iter().all(|(of, _)| *of == id)
            && since.is_some_and(|(s, at)| {
                s == id && (first || at.elapsed() >= self.config.rebalance_interval)
            });
        let drift = t.drift(&merged);
        if !settled || drift <= table::REBALANCE_BOUND {
            return None;
        }
        let next = table::rebalance(Some(t), members, &merged, generation);
        (next.drift(&merged) < drift && next.assignments() != t.assignments()).then(|| {
            self.state.lock().drift_rebalanced = true;
            tracing::info!(
                "shard ring {}: rebalancing, worst share {:.1}% off even, {:.1}% after",
                self.config.ring,
                drift * 100.0,
                next.drift(&merged) * 100.0
            );
            next
        })
    }

    /// Writes `table` on the ring's table Lease (created when missing), conditional on the
    /// `resourceVersion` it was read at.
    async fn write_table(&self, read: Option<Lease>, table: &Table) -> Result<Lease, kube::Error> {
        let c = &self.config;
        let name = c.table_lease_name();
        let mut lease = read.clone().unwrap_or_else(|| Lease {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(c.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec::default()),
        });
        lease
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(RING_LABEL.into(), c.ring.clone());
        lease
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(RING_TABLE_ANNOTATION.into(), table.encode());
        match read {
            None => self.api.create(&PostParams::default(), &lease).await,
            Some(_) => {
                self.api
                    .replace(&name, &PostParams::default(), &lease)
                    .await
            }
        }
    }

    /// Publishes the assignment for `table` when it differs from the last one.
    fn publish(&self, table: Option<&Table>, member: bool) {
        let (ring_id, members, ranges) = match table {
            Some(t) if member => (
                t.id(),
                t.members().to_vec(),
                t.ranges_of(&self.config.identity),
            ),
            Some(t) => (t.id(), t.members().to_vec(), Default::default()),
            None => (0, Vec::new(), Default::default()),
        };
        self.tx.send_if_modified(|a| {
            if a.ring_id == ring_id && a.ranges == ranges {
                return false;
            }
            a.generation += 1;
            a.ring_id = ring_id;
            a.members = members;
            a.ranges = ranges;
            tracing::info!(
                "shard ring {}: generation {}, {} members, this replica owns {:.1}% of the space",
                self.config.ring,
                a.generation,
                a.members.len(),
                a.ranges.size() as f64 / super::range::HASH_SPACE_END as f64 * 100.0
            );
            true
        });
    }

    /// Creates or renews this replica's Lease, from the object last written when there is one
    /// (optimistic: a conflict waits for the next tick, which reads the Lease again); returns
    /// the acknowledgement the Lease now carries.
    async fn renew(&self, load: &Load, load_of: Option<u64>) -> Result<Option<u64>, kube::Error> {
        let c = &self.config;
        let name = c.lease_name();
        let now = MicroTime(Timestamp::now());
        let (ack, written, table) = {
            let mut st = self.state.lock();
            (st.ack, st.written.take(), load_of)
        };
        let existing = match written {
            Some(lease) => Some(lease),
            None => self.api.get_opt(&name).await?,
        };
        let mut lease = existing.clone().unwrap_or_else(|| Lease {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(c.namespace.clone()),
                ..ObjectMeta::default()
            },
            spec: Some(LeaseSpec {
                acquire_time: Some(now.clone()),
                ..LeaseSpec::default()
            }),
        });
        lease
            .metadata
            .labels
            .get_or_insert_with(Default::default)
            .insert(RING_LABEL.into(), c.ring.clone());
        lease
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(
                RING_LOAD_ANNOTATION.into(),
                format!("{:016x};{}", table.unwrap_or_default(), load.encode()),
            );
        match ack {
            Some(ack) => {
                lease
                    .metadata
                    .annotations
                    .get_or_insert_with(Default::default)
                    .insert(RING_ACK_ANNOTATION.into(), format!("{ack:016x}"));
            }
            // A new process: what an earlier one acknowledged is not this one's claim (this
            // one works on nothing yet), and a stale claim would only hold the others back.
            None => {
                if let Some(a) = lease.metadata.annotations.as_mut() {
                    a.remove(RING_ACK_ANNOTATION);
                }
            }
        }
        let spec = lease.spec.get_or_insert_with(LeaseSpec::default);
        spec.holder_identity = Some(c.identity.clone());
        spec.lease_duration_seconds =
            Some(c.lease_duration.as_secs().clamp(1, i32::MAX as u64) as i32);
        spec.renew_time = Some(now);
        let written = match existing {
            None => self.api.create(&PostParams::default(), &lease).await?,
            Some(_) => {
                self.api
                    .replace(&name, &PostParams::default(), &lease)
                    .await?
            }
        };
        self.state.lock().written = Some(written);
        Ok(ack)
    }
}

#[cfg(test)]
mod tests {
    use super::MembershipConfig;

    fn valid(name: &str) -> bool {
        // DNS subdomain: RFC 1123 labels of lower-case alphanumerics and '-', joined by '.'.
        name.len() <= 253
            && name.split('.').all(|l| {
                !l.is_empty()
                    && l.bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !l.starts_with('-')
                    && !l.ends_with('-')
            })
    }

    #[test]
    fn lease_names_are_object_names_and_distinct() {
        let name = |ring: &str, id: &str| MembershipConfig::new(ring, id, "default").lease_name();
        assert_eq!(name("foos", "pod-1"), "foos-pod-1");
        // client-go's identity: hostname, '_', a random suffix.
        let a = name("foos", "vm_146ec685bb831c46");
        assert!(valid(&a), "{a}");
        assert!(a.starts_with("foos-vm-146ec685bb831c46-"), "{a}");
        // Identities that differ only where the name cannot: still two Leases.
        assert_ne!(name("foos", "Pod_1"), name("foos", "pod-1"));
        assert_ne!(name("foos", "a_b"), name("foos", "a.b_"));
        for id in [
            "UPPER",
            "x".repeat(300).as_str(),
            "_-_",
            "a..b",
            "é",
            "pod-",
        ] {
            let n = name("foos", id);
            assert!(valid(&n), "{id:?} -> {n:?}");
        }
    }
}
