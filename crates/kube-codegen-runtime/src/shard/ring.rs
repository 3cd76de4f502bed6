//! Consistent hashing over the 64-bit shard hash space.
//!
//! Every member places [`DEFAULT_VIRTUAL_POINTS`] points on the ring, each the hash of its
//! identity and the point's number; a point owns the hashes from itself up to the next point
//! (the last one wraps around to the first). Ownership depends on the member set alone, so
//! every replica that sees the same members computes the same split, and a member joining
//! only takes hashes (the arcs its points cut off) while one leaving only gives its own.
//!
//! Balance: a member's share is a sum of about V arc lengths, so it strays from `1/n` by about
//! `1/sqrt(V)` (relative), while it owns roughly V(1 - 1/n) ranges, each a `shardRange` term
//! of the selector its informers send. 1,024 points are the trade-off: every share within 10%
//! of even (over 64 seeded random member sets of 3 to 10 members, the property test
//! `ring_properties`, the worst was 7.9% off; 2,048 points gave 6.8%, 512 points 15%), and a
//! share of a three-member ring (about 680 ranges) fits one request line whole
//! (`range::MAX_SELECTOR_TERMS`, 740). Larger rings own up to ~940 ranges (a 74 KB selector):
//! informers send a coarser superset (`range::coarsen`) and drop the rest themselves.

use std::collections::BTreeMap;

use kube_codegen_crd::shard::{HASH_SPACE_END, HashRange, RangeSet, fnv1a64};

/// The number of points each member places on the ring by default.
pub const DEFAULT_VIRTUAL_POINTS: usize = 1024;

/// The ring of a set of members.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ring {
    /// Sorted, deduplicated identities.
    members: Vec<String>,
    /// `(point, member index)`, sorted; ties (two members hashing a point alike) broken by the
    /// member's order, so every replica agrees.
    points: Vec<(u64, usize)>,
}

/// murmur3's 64-bit finaliser: FNV-1a of short identities that differ in their last bytes
/// lands close together, and the points need to be spread.
fn mix(mut k: u64) -> u64 {
    k ^= k >> 33;
    k = k.wrapping_mul(0xff51_afd7_ed55_8ccd);
    k ^= k >> 33;
    k = k.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    k ^ (k >> 33)
}

/// The `i`th point of `member`.
fn point(member: &str, i: usize) -> u64 {
    let mut key = Vec::with_capacity(member.len() + 9);
    key.extend_from_slice(member.as_bytes());
    key.push(0);
    key.extend_from_slice(&(i as u64).to_le_bytes());
    mix(fnv1a64(&key))
}

impl Ring {
    /// The ring of `members` (duplicates count once) with `virtual_points` points each (at
    /// least one).
    pub fn new<I, S>(members: I, virtual_points: usize) -> Ring
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let mut members: Vec<String> = members.into_iter().map(Into::into).collect();
        members.sort();
        members.dedup();
        let v = virtual_points.max(1);
        let mut points = Vec::with_capacity(members.len() * v);
        for (m, name) in members.iter().enumerate() {
            points.extend((0..v).map(|i| (point(name, i), m)));
        }
        points.sort_unstable();
        Ring { members, points }
    }

    /// The members, sorted.
    pub fn members(&self) -> &[String] {
        &self.members
    }

    /// An identifier of the member set: the same on every replica seeing the same members.
    pub fn id(&self) -> u64 {
        let mut key = Vec::new();
        for m in &self.members {
            key.extend_from_slice(m.as_bytes());
            key.push(0);
        }
        fnv1a64(&key)
    }

    /// Who owns hash `h` (`None` on an empty ring).
    pub fn owner(&self, h: u64) -> Option<&str> {
        // The last point at or before `h`; before the first point, the last one (wrap).
        let i = self.points.partition_point(|(p, _)| *p <= h);
        let (_, m) = if i == 0 {
            self.points.last()?
        } else {
            &self.points[i - 1]
        };
        Some(&self.members[*m])
    }

    /// Every member's ranges.
    pub fn assignments(&self) -> BTreeMap<&str, RangeSet> {
        let mut by_member: Vec<Vec<HashRange>> = vec![Vec::new(); self.members.len()];
        for (i, &(start, m)) in self.points.iter().enumerate() {
            let end = match self.points.get(i + 1) {
                Some(&(next, _)) => u128::from(next),
                None => HASH_SPACE_END,
            };
            by_member[m].extend(HashRange::new(start, end));
        }
        // The hashes before the first point belong to the last point's member.
        if let (Some(&(first, _)), Some(&(_, last))) = (self.points.first(), self.points.last()) {
            by_member[last].extend(HashRange::new(0, u128::from(first)));
        }
        self.members
            .iter()
            .zip(by_member)
            .map(|(name, ranges)| (name.as_str(), RangeSet::from_ranges(ranges)))
            .collect()
    }

    /// The ranges `member` owns (empty when it is no member).
    pub fn ranges_of(&self, member: &str) -> RangeSet {
        self.assignments().remove(member).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each member's ranges hold their first hash and not their end: the hash at a range's end
    /// is the next point's, another member's (touching ranges of one member are merged).
    #[test]
    fn a_range_holds_its_start_and_its_end_belongs_to_the_next_owner() {
        let ring = Ring::new(["a", "b", "c"], 16);
        let mut edges = 0;
        for (member, set) in ring.assignments() {
            for r in set.ranges() {
                assert_eq!(ring.owner(r.start()), Some(member), "{r:?}");
                let last = u64::try_from(r.end() - 1).unwrap();
                assert_eq!(ring.owner(last), Some(member), "{r:?}");
                assert!(set.contains(r.start()) && set.contains(last));
                if let Ok(end) = u64::try_from(r.end()) {
                    assert_ne!(ring.owner(end), Some(member), "{r:?}");
                    assert!(!set.contains(end), "{r:?}");
                    edges += 1;
                }
            }
        }
        assert!(edges >= 20, "{edges} range ends checked");
    }
}
