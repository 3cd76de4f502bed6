//! The ring's split table (issue 34): which member owns which ranges, cut where the keys are.
//!
//! A share of the hash space is not a share of the work: FNV-1a of names that differ only at
//! their end (`s0` .. `s19`, `team-a`, `tenant-1`) share their top bits, so an even cut of the
//! space gave one replica every namespace. A [`Table`] instead cuts the space at observed key
//! hashes, weighted by the objects each key holds ([`Load`]), and one member (the live member
//! with the lowest identity) publishes it on the ring's table Lease with a generation; members
//! work on a table only once they acknowledged it, as they did on a ring before
//! ([`super::handoff`]), so no two members own a hash at once whatever tables are published.
//!
//! [`rebalance`] moves only what it must: members of the old table keep their keys up to the
//! even share, members over it give keys from their highest hashes, and the keys given up or
//! left by departed members go, in contiguous runs, to the members furthest below it. A key is
//! never split (all of a namespace's objects go together), so shares are even to within one key.
//! Ranges cover the whole space at all times (a key created later lands in some member's range
//! at once): a thin uniform weight over the space ([`UNIFORM_POINTS`]) decides the empty parts,
//! and is the whole layout when no keys are known (an even split of the space). A member's
//! ranges are bounded ([`MAX_RANGES_PER_MEMBER`], so its selector fits one request line): past
//! the bound the table is laid out afresh, one contiguous run per member.

use std::collections::BTreeMap;

use kube_codegen_crd::shard::{HASH_SPACE_END, HashRange, RangeSet, fnv1a64};
use serde::{Deserialize, Serialize};

/// Points of uniform weight spread over the space: they decide where the keyless parts go.
pub const UNIFORM_POINTS: u64 = 1024;
/// A key's weight per object, next to a uniform point's weight of 1 (so the uniform points of
/// the whole space weigh less than 0.1% of one object).
const OBJECT_WEIGHT: u64 = 1 << 20;
/// The most ranges a member owns before the table is laid out afresh: 32 `shardRange` terms
/// (2.7 KB of selector), far below `range::MAX_SELECTOR_TERMS`.
pub const MAX_RANGES_PER_MEMBER: usize = 32;
/// A published table is rebalanced when a member's share (in objects) is off the even share by
/// more than this fraction of it, and a rebalance makes the worst share better.
pub const REBALANCE_BOUND: f64 = 0.05;
/// The most points a member publishes of its keys: exact up to that many distinct keys, else
/// runs of keys of about equal weight, each published at its first key's hash.
pub const SUMMARY_POINTS: usize = 128;

/// Observed keys: `(hash, objects)`, sorted by hash, one entry per hash.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Load(Vec<(u64, u64)>);

impl Load {
    /// The load of `keys` (`(hash, objects)` in any order; equal hashes are summed).
    pub fn new(keys: impl IntoIterator<Item = (u64, u64)>) -> Load {
        let mut v: Vec<(u64, u64)> = keys.into_iter().filter(|(_, w)| *w > 0).collect();
        v.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(v.len());
        for (h, w) in v {
            match out.last_mut() {
                Some((lh, lw)) if *lh == h => *lw += w,
                _ => out.push((h, w)),
            }
        }
        Load(out)
    }

    /// The entries.
    pub fn points(&self) -> &[(u64, u64)] {
        &self.0
    }

    /// All objects.
    pub fn total(&self) -> u64 {
        self.0.iter().map(|(_, w)| w).sum()
    }

    /// Several members' loads together.
    pub fn merge<'a>(loads: impl IntoIterator<Item = &'a Load>) -> Load {
        Load::new(loads.into_iter().flat_map(|l| l.0.iter().copied()))
    }

    /// At most `max` points: exact when there are no more keys, else consecutive keys grouped
    /// in runs of about equal weight, each at its first key's hash (a cut there moves the run
    /// whole).
    pub fn summary(&self, max: usize) -> Load {
        let max = max.max(1);
        if self.0.len() <= max {
            return self.clone();
        }
        let per = self.total().div_ceil(max as u64).max(1);
        let mut out: Vec<(u64, u64)> = Vec::with_capacity(max + 1);
        let mut acc = 0;
        for &(h, w) in &self.0 {
            match out.last_mut() {
                Some((_, lw)) if acc < per => *lw += w,
                _ => {
                    out.push((h, w));
                    acc = 0;
                }
            }
            acc += w;
        }
        Load(out)
    }

    /// `hash:objects,...` in hex and decimal (a Lease annotation).
    pub fn encode(&self) -> String {
        let mut s = String::with_capacity(self.0.len() * 22);
        for (i, (h, w)) in self.0.iter().enumerate() {
            if i > 0 {
                s.push(',');
            }
            s.push_str(&format!("{h:x}:{w}"));
        }
        s
    }

    /// Reads [`encode`](Self::encode)'s text; `None` when malformed.
    pub fn decode(s: &str) -> Option<Load> {
        if s.is_empty() {
            return Some(Load::default());
        }
        let mut v = Vec::new();
        for p in s.split(',') {
            let (h, w) = p.split_once(':')?;
            v.push((u64::from_str_radix(h, 16).ok()?, w.parse().ok()?));
        }
        Some(Load::new(v))
    }
}

/// A split of the whole space among members: each range's start and owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Table {
    /// Bumped by every publication (orders tables; part of the id).
    generation: u64,
    /// The members, sorted.
    members: Vec<String>,
    /// `(start, member index)`, sorted by start, the first at 0, neighbours of different
    /// owners; a range ends where the next begins (the last at 2^64).
    starts: Vec<(u64, usize)>,
}

impl Table {
    /// A table from its parts; `None` unless the starts begin at 0, increase strictly and name
    /// members (what a table read from a Lease must be).
    pub fn new(generation: u64, members: Vec<String>, starts: Vec<(u64, usize)>) -> Option<Table> {
        let ok = starts.first().is_some_and(|s| s.0 == 0)
            && starts.windows(2).all(|w| w[0].0 < w[1].0)
            && starts.iter().all(|s| s.1 < members.len())
            && members.windows(2).all(|w| w[0] < w[1]);
        ok.then_some(Table {
            generation,
            members,
            starts,
        })
        .map(Table::merged)
    }

    /// The even split of the space among `members` (no keys known), generation 0.
    pub fn even<S: AsRef<str>>(members: &[S]) -> Table {
        let members: Vec<String> = members.iter().map(|m| m.as_ref().to_owned()).collect();
        rebalance(None, &members, &Load::default(), 0)
    }

    fn merged(mut self) -> Table {
        self.starts.dedup_by(|b, a| a.1 == b.1);
        self
    }

    /// The generation.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// The members, sorted.
    pub fn members(&self) -> &[String] {
        &self.members
    }

    /// An identifier of the table (what members acknowledge): FNV-1a of its JSON.
    pub fn id(&self) -> u64 {
        fnv1a64(self.encode().as_bytes())
    }

    /// The JSON kept on the table Lease.
    pub fn encode(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads [`encode`](Self::encode)'s text, checked as [`new`](Self::new) checks.
    pub fn decode(s: &str) -> Option<Table> {
        let t: Table = serde_json::from_str(s).ok()?;
        Table::new(t.generation, t.members, t.starts)
    }

    fn owner_index(&self, h: u64) -> Option<usize> {
        let i = self.starts.partition_point(|(s, _)| *s <= h);
        i.checked_sub(1).map(|i| self.starts[i].1)
    }

    /// Who owns `h`.
    pub fn owner(&self, h: u64) -> Option<&str> {
        self.owner_index(h).map(|m| self.members[m].as_str())
    }

    /// Every member's ranges (members owning nothing included, with none).
    pub fn assignments(&self) -> BTreeMap<String, RangeSet> {
        let mut by: Vec<Vec<HashRange>> = vec![Vec::new(); self.members.len()];
        for (i, &(start, m)) in self.starts.iter().enumerate() {
            let end = self
                .starts
                .get(i + 1)
                .map_or(HASH_SPACE_END, |n| u128::from(n.0));
            by[m].extend(HashRange::new(start, end));
        }
        self.members
            .iter()
            .cloned()
            .zip(by.into_iter().map(RangeSet::from_ranges))
            .collect()
    }

    /// The ranges of `member` (none when it is no member).
    pub fn ranges_of(&self, member: &str) -> RangeSet {
        self.assignments().remove(member).unwrap_or_default()
    }

    /// Each member's objects under `load`.
    pub fn loads(&self, load: &Load) -> BTreeMap<&str, u64> {
        let mut out: BTreeMap<&str, u64> = self.members.iter().map(|m| (m.as_str(), 0)).collect();
        for &(h, w) in load.points() {
            if let Some(m) = self.owner(h) {
                *out.entry(m).or_default() += w;
            }
        }
        out
    }

    /// How far the worst share is off the even share, as a fraction of it (0 without objects).
    pub fn drift(&self, load: &Load) -> f64 {
        let total = load.total();
        if total == 0 || self.members.is_empty() {
            return 0.0;
        }
        let even = total as f64 / self.members.len() as f64;
        self.loads(load)
            .values()
            .map(|&l| (l as f64 - even).abs() / even)
            .fold(0.0, f64::max)
    }
}

/// The table after `prev` for `members` (sorted, deduplicated) under `load`, as generation
/// `generation` (see the module docs for what moves).
pub fn rebalance(prev: Option<&Table>, members: &[String], load: &Load, generation: u64) -> Table {
    let mut members = members.to_vec();
    members.sort();
    members.dedup();
    if members.is_empty() {
        return Table {
            generation,
            members,
            starts: vec![],
        };
    }
    // The points: keys (weighted per object), the uniform points, the old table's starts (so
    // its cuts stay where nothing moves), and 0.
    let mut pts: BTreeMap<u64, u64> = BTreeMap::new();
    pts.insert(0, 0);
    let step = (HASH_SPACE_END / u128::from(UNIFORM_POINTS)) as u64;
    for i in 0..UNIFORM_POINTS {
        *pts.entry(i * step).or_default() += 1;
    }
    for &(h, w) in load.points() {
        *pts.entry(h).or_default() += w.saturating_mul(OBJECT_WEIGHT);
    }
    if let Some(p) = prev {
        for &(s, _) in &p.starts {
            pts.entry(s).or_default();
        }
    }
    let index: BTreeMap<&str, usize> = members
        .iter()
        .enumerate()
        .map(|(i, m)| (m.as_str(), i))
        .collect();
    let owner_in_prev = |h: u64| -> Option<usize> {
        prev.and_then(|p| p.owner(h))
            .and_then(|m| index.get(m).copied())
    };
    let points: Vec<(u64, u64)> = pts.into_iter().collect();
    let kept: Vec<Option<usize>> = points.iter().map(|&(h, _)| owner_in_prev(h)).collect();
    let table = fill(&members, &points, kept, generation);
    let too_fragmented = table
        .assignments()
        .values()
        .any(|r| r.ranges().len() > MAX_RANGES_PER_MEMBER);
    if too_fragmented {
        return fill(&members, &points, vec![None; points.len()], generation);
    }
    table
}

/// Peels what members own over the even share and gives every unowned point away.
fn fill(
    members: &[String],
    points: &[(u64, u64)],
    mut owner: Vec<Option<usize>>,
    generation: u64,
) -> Table {
    let n = members.len();
    let total: u64 = points.iter().map(|p| p.1).sum();
    let even = total as f64 / n as f64;
    let mut load = vec![0u64; n];
    for (o, p) in owner.iter().zip(points) {
        if let Some(m) = o {
            load[*m] += p.1;
        }
    }
    // Over the even share: the most loaded member gives its highest point away, one at a time,
    // while the points given away (and those already unowned) are short of what the members
    // under the even share need, and giving brings the giver no further from the even share
    // (`w / 2`: the nearer side, as the fill below takes). So a join takes only for the joiner,
    // from whoever holds most.
    let need: f64 = load.iter().map(|&l| (even - l as f64).max(0.0)).sum();
    let mut pool: f64 = owner
        .iter()
        .zip(points)
        .filter(|(o, _)| o.is_none())
        .map(|(_, p)| p.1 as f64)
        .sum();
    let mut owned: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, o) in owner.iter().enumerate() {
        if let Some(m) = o {
            owned[*m].push(i);
        }
    }
    let mut done = vec![false; n];
    let keyed = points.iter().any(|p| p.1 >= OBJECT_WEIGHT);
    loop {
        let giver = (0..n)
            .filter(|&m| !done[m] && load[m] as f64 > even)
            .max_by_key(|&m| (load[m], std::cmp::Reverse(m)));
        let Some(m) = giver else { break };
        // With keys about, the keyless space above a member's highest key goes only with that
        // key (no churn of empty space between balanced members).
        let heavy = |i: usize| !keyed || points[i].1 >= OBJECT_WEIGHT;
        let Some(p) = owned[m].iter().rposition(|&i| heavy(i)) else {
            done[m] = true;
            continue;
        };
        let w = points[owned[m][p]].1 as f64;
        if pool + w / 2.0 <= need && load[m] as f64 - w / 2.0 >= even {
            for i in owned[m].split_off(p) {
                owner[i] = None;
                load[m] -= points[i].1;
                pool += points[i].1 as f64;
            }
        } else {
            done[m] = true;
        }
    }
    // The unowned points in hash order, to the member furthest below the even share, which
    // keeps taking while a point brings it nearer the even share than it was.
    // Ties go to the member taking the run already (one range fewer).
    let neediest = |load: &[u64], current: Option<usize>| {
        (0..n)
            .min_by_key(|&m| (load[m], Some(m) != current))
            .unwrap_or(0)
    };
    let mut current: Option<usize> = None;
    for i in 0..points.len() {
        if owner[i].is_some() {
            current = None;
            continue;
        }
        let w = points[i].1;
        let takes = |m: usize, load: &[u64]| load[m] as f64 + w as f64 / 2.0 <= even;
        let m = match current {
            Some(m) if takes(m, &load) => m,
            _ => neediest(&load, current),
        };
        owner[i] = Some(m);
        load[m] += w;
        current = Some(m);
    }
    let starts = points
        .iter()
        .zip(owner)
        .map(|(p, o)| (p.0, o.unwrap_or(0)))
        .collect();
    Table {
        generation,
        members: members.to_vec(),
        starts,
    }
    .merged()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_codegen_crd::shard::ShardKey;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn ns_load(names: impl IntoIterator<Item = String>, per: u64) -> Load {
        Load::new(
            names
                .into_iter()
                .map(|n| (ShardKey::Namespace.hash("", &n), per)),
        )
    }

    fn shares(t: &Table, load: &Load) -> Vec<u64> {
        t.loads(load).values().copied().collect()
    }

    fn covers(t: &Table) {
        let a = t.assignments();
        let total: u128 = a.values().map(RangeSet::size).sum();
        assert_eq!(total, HASH_SPACE_END);
        assert_eq!(
            a.values().fold(RangeSet::empty(), |u, r| u.union(r)),
            RangeSet::full()
        );
    }

    #[test]
    fn no_keys_split_the_space_evenly() {
        let t = Table::even(&["a", "b", "c"]);
        covers(&t);
        for r in t.assignments().values() {
            let share = r.size() as f64 / HASH_SPACE_END as f64;
            assert!((share - 1.0 / 3.0).abs() < 0.01, "{share}");
            assert_eq!(r.ranges().len(), 1);
        }
    }

    #[test]
    fn sequential_namespaces_split_six_or_seven() {
        let load = ns_load((0..20).map(|i| format!("s{i}")), 10);
        let m = names(&["a", "b", "c"]);
        // From scratch, and from the even split of the space (where one member held all).
        let before = Table::even(&m);
        assert!(
            shares(&before, &load).contains(&200)
                || shares(&before, &load).iter().any(|&s| s >= 100)
        );
        for prev in [None, Some(&before)] {
            let t = rebalance(prev, &m, &load, 1);
            covers(&t);
            let mut s = shares(&t, &load);
            s.sort();
            assert_eq!(s, [60, 70, 70], "{t:?}");
            // Within one key of even: 60 is 10% under 66.7.
            assert!(t.drift(&load) < 0.11);
        }
    }

    #[test]
    fn prefixed_names_at_scale_are_within_a_few_percent() {
        let load = ns_load((1..=3000).map(|i| format!("ns-{i}")), 10);
        let m = names(&["replica-0", "replica-1", "replica-2"]);
        let t = rebalance(None, &m, &load.summary(SUMMARY_POINTS * 3), 1);
        assert!(t.drift(&load) < 0.02, "{}", t.drift(&load));
        // From per-member summaries of a table that was even over the space.
        let even = Table::even(&m);
        let per: Vec<Load> = even
            .assignments()
            .values()
            .map(|r| {
                Load::new(
                    load.points()
                        .iter()
                        .copied()
                        .filter(|(h, _)| r.contains(*h)),
                )
                .summary(SUMMARY_POINTS)
            })
            .collect();
        let t = rebalance(Some(&even), &m, &Load::merge(&per), 1);
        assert!(t.drift(&load) < 0.05, "{}", t.drift(&load));
    }

    #[test]
    fn a_join_and_a_leave_move_only_what_they_must() {
        let load = ns_load((0..300).map(|i| format!("tenant-{i}")), 3);
        let three = rebalance(None, &names(&["a", "b", "c"]), &load, 1);
        let four = rebalance(Some(&three), &names(&["a", "b", "c", "d"]), &load, 2);
        assert!(four.drift(&load) <= 0.05, "{}", four.drift(&load));
        // Only d gains keys (keyless space may go anywhere: no object moves with it).
        let keys = load.points();
        let changed = |a: &Table, b: &Table| -> Vec<(Option<String>, Option<String>, u64)> {
            keys.iter()
                .filter(|(h, _)| a.owner(*h) != b.owner(*h))
                .map(|(h, w)| {
                    (
                        a.owner(*h).map(str::to_owned),
                        b.owner(*h).map(str::to_owned),
                        *w,
                    )
                })
                .collect()
        };
        let joined = changed(&three, &four);
        assert!(
            joined.iter().all(|(_, to, _)| to.as_deref() == Some("d")),
            "{joined:?}"
        );
        let moved: u64 = joined.iter().map(|c| c.2).sum();
        assert_eq!(moved, four.loads(&load)["d"]);
        // d leaves: only its keys move, to the others.
        let back = rebalance(Some(&four), &names(&["a", "b", "c"]), &load, 3);
        let left = changed(&four, &back);
        assert!(
            left.iter().all(|(from, _, _)| from.as_deref() == Some("d")),
            "{left:?}"
        );
        assert_eq!(
            left.iter().map(|c| c.2).sum::<u64>(),
            four.loads(&load)["d"]
        );
        assert!(back.drift(&load) <= 0.05);
        // Unchanged members and keys: the same ranges.
        let again = rebalance(Some(&back), &names(&["a", "b", "c"]), &load, 4);
        assert_eq!(again.assignments(), back.assignments());
    }

    #[test]
    fn ranges_stay_bounded_over_many_rebalances() {
        let mut t = Table::even(&names(&["a", "b", "c"]));
        for round in 0..40u64 {
            let load = ns_load(
                (0..50).map(|i| format!("ns-{}", i * 7 + round * 13)),
                1 + round % 5,
            );
            let members: Vec<String> = (0..(3 + round % 4)).map(|i| format!("m{i}")).collect();
            t = rebalance(Some(&t), &members, &load, round);
            covers(&t);
            for r in t.assignments().values() {
                assert!(r.ranges().len() <= MAX_RANGES_PER_MEMBER);
            }
        }
    }

    #[test]
    fn encodings_round_trip() {
        let load = ns_load((0..20).map(|i| format!("s{i}")), 10);
        assert_eq!(Load::decode(&load.encode()), Some(load.clone()));
        assert_eq!(Load::decode("zz:1"), None);
        let t = rebalance(None, &names(&["a", "b"]), &load, 7);
        let back = Table::decode(&t.encode()).unwrap();
        assert_eq!(back, t);
        assert_eq!(back.id(), t.id());
        assert_ne!(rebalance(None, &names(&["a", "b"]), &load, 8).id(), t.id());
        assert_eq!(
            Table::decode(r#"{"generation":1,"members":["a"],"starts":[[5,0]]}"#),
            None
        );
        assert_eq!(
            Table::decode(r#"{"generation":1,"members":["a"],"starts":[[0,1]]}"#),
            None
        );
    }

    #[test]
    fn summaries_bound_their_points_and_keep_the_weight() {
        let load = ns_load((0..1000).map(|i| format!("ns-{i}")), 10);
        let s = load.summary(SUMMARY_POINTS);
        assert!(s.points().len() <= SUMMARY_POINTS + 1);
        assert_eq!(s.total(), load.total());
        assert_eq!(load.summary(2000), load);
    }
}
