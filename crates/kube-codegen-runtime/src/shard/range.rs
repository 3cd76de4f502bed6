//! Half-open `[start, end)` ranges of the 64-bit hash space, sets of them, and the
//! `shardSelector` they are written as (`kube_codegen_crd::shard`, shared with the in-memory
//! API server): `shardRange(object.metadata.uid, '0x0000000000000000', '0x5555555555555555')
//! || ...`, 16 lower-case hex digits per bound, the end of the space 2^64 written
//! `'0x10000000000000000'`.

pub use kube_codegen_crd::shard::{
    HASH_SPACE_END, HashRange, RangeSet, ShardSelector, ShardSelectorError,
};

/// The most `shardRange` terms a sharded informer sends. The request line carries the
/// selector, and an `http::Uri` holds at most 65,534 bytes (kube-apiserver's own limit, Go's
/// `MaxHeaderBytes`, is 1 MiB): a term takes 79 bytes as written on the wire by `uid`, 85 by
/// `namespace` (the short query encoding of `source.rs`), so 740 terms are at most 62,900
/// bytes, which leaves 2.6 KB for the scheme, host, path and other parameters (a test builds
/// the longest request). A ring of three members with 1,024 points owns about 680 ranges per
/// member: sent exactly.
pub const MAX_SELECTOR_TERMS: usize = 740;

/// `set` with at most `max_terms` ranges: the smallest gaps between its ranges are filled in
/// (a superset, so a server filtering by it sends every object of `set` and some more, which
/// the client then drops). `set` itself when it has no more ranges than that.
pub fn coarsen(set: &RangeSet, max_terms: usize) -> RangeSet {
    let ranges = set.ranges();
    let max_terms = max_terms.max(1);
    if ranges.len() <= max_terms {
        return set.clone();
    }
    // Gaps between neighbours, smallest first; fill all but the largest `max_terms - 1`.
    let mut gaps: Vec<(u128, usize)> = ranges
        .windows(2)
        .enumerate()
        .map(|(i, w)| (u128::from(w[1].start()) - w[0].end(), i))
        .collect();
    gaps.sort_unstable();
    let fill = ranges.len() - max_terms;
    let extra = gaps[..fill].iter().filter_map(|&(_, i)| {
        let start = u64::try_from(ranges[i].end()).ok()?;
        HashRange::new(start, u128::from(ranges[i + 1].start()))
    });
    set.union(&RangeSet::from_ranges(extra))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coarsen_fills_the_smallest_gaps() {
        let r = |a: u64, b: u128| HashRange::new(a, b).unwrap();
        let set = RangeSet::from_ranges([r(0, 10), r(12, 20), r(40, 50), r(51, 60)]);
        assert_eq!(coarsen(&set, 4), set);
        let two = coarsen(&set, 2);
        assert_eq!(two.ranges(), &[r(0, 20), r(40, 60)]);
        assert_eq!(coarsen(&set, 1).ranges(), &[r(0, 60)]);
        assert_eq!(set.difference(&two), RangeSet::empty());
    }
}
