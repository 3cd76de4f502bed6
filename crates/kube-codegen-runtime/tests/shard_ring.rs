//! The consistent-hashing ring and the shard selector text: shares near even, joins and leaves
//! moving only the ranges they take or give, and selectors that parse back to their ranges.
#![cfg(feature = "sharding")]

use kube_codegen_runtime::shard::{
    DEFAULT_VIRTUAL_POINTS, HashRange, RangeSet, Ring, ShardKey, ShardSelector,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};

const SPACE: f64 = 18446744073709551616.0; // 2^64

fn members() -> impl Strategy<Value = Vec<String>> {
    // Pod-like identities: a common prefix and a random suffix, 3 to 10 distinct ones.
    proptest::collection::btree_set("sample-controller-[a-z0-9]{5}", 3..=10)
        .prop_map(|s| s.into_iter().collect())
}

/// A runner with a fixed seed: the share bound is a tail bound, and a failure must reproduce.
fn runner(cases: u32) -> TestRunner {
    TestRunner::new_with_rng(
        Config {
            cases,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]),
    )
}

#[test]
fn ring_properties() {
    // (worst share off even, most ranges, longest selector) over all cases.
    let stats = std::cell::Cell::new((0f64, 0usize, 0usize));
    runner(64)
        .run(&members(), |members| {
            let ring = Ring::new(members.clone(), DEFAULT_VIRTUAL_POINTS);
            let a = ring.assignments();
            prop_assert_eq!(a.len(), members.len());
            // A partition of the whole space.
            let total: u128 = a.values().map(RangeSet::size).sum();
            prop_assert_eq!(total, 1u128 << 64);
            let union = a.values().fold(RangeSet::empty(), |u, r| u.union(r));
            prop_assert_eq!(union, RangeSet::full());
            let even = 1.0 / members.len() as f64;
            for (m, r) in &a {
                let off = (r.size() as f64 / SPACE - even).abs() / even;
                let (w, n, l) = stats.get();
                let len = r.selector(ShardKey::Uid).unwrap().to_string().len();
                stats.set((w.max(off), n.max(r.ranges().len()), l.max(len)));
                prop_assert!(
                    off <= 0.10,
                    "{m} owns {:.4} of the space, even is {even:.4}",
                    r.size() as f64 / SPACE
                );
                // The owner look-up agrees with the ranges.
                for range in r.ranges().iter().take(8) {
                    prop_assert_eq!(ring.owner(range.start()), Some(*m));
                }
            }
            // A member joining takes only from the others, and only for itself.
            let joiner = "sample-controller-joiner".to_owned();
            let mut more = members.clone();
            more.push(joiner.clone());
            let joined = Ring::new(more, DEFAULT_VIRTUAL_POINTS);
            let after = joined.assignments();
            let mut taken = RangeSet::empty();
            for (m, before) in &a {
                let now = &after[*m];
                prop_assert_eq!(
                    now.difference(before),
                    RangeSet::empty(),
                    "{} gained on a join",
                    m
                );
                taken = taken.union(&before.difference(now));
            }
            prop_assert_eq!(&taken, &after[joiner.as_str()]);
            // A member leaving gives only its own ranges.
            let leaver = &members[0];
            let left = Ring::new(members[1..].to_vec(), DEFAULT_VIRTUAL_POINTS);
            let after = left.assignments();
            let mut given = RangeSet::empty();
            for (m, before) in a.iter().filter(|(m, _)| *m != leaver) {
                let now = &after[m];
                prop_assert_eq!(
                    before.difference(now),
                    RangeSet::empty(),
                    "{} lost on a leave",
                    m
                );
                given = given.union(&now.difference(before));
            }
            prop_assert_eq!(&given, &a[leaver.as_str()]);
            Ok(())
        })
        .unwrap();
    let (worst, max_ranges, max_selector) = stats.get();
    println!(
        "ring: V={DEFAULT_VIRTUAL_POINTS}, worst share {:.2}% off even, at most {max_ranges} ranges \
         and a {max_selector}-byte selector per member",
        worst * 100.0
    );
}

#[test]
fn ring_is_deterministic_and_order_free() {
    let a = Ring::new(["b", "a", "c", "a"], 64);
    let b = Ring::new(["c", "b", "a"], 64);
    assert_eq!(a, b);
    assert_eq!(a.members(), ["a", "b", "c"]);
    assert_eq!(a.id(), b.id());
    assert_ne!(a.id(), Ring::new(["a", "b"], 64).id());
    assert_eq!(Ring::new(["only"], 8).ranges_of("only"), RangeSet::full());
    assert!(Ring::new(Vec::<String>::new(), 8).owner(5).is_none());
    assert_eq!(a.ranges_of("nobody"), RangeSet::empty());
}

fn range_sets() -> impl Strategy<Value = RangeSet> {
    proptest::collection::vec((any::<u64>(), 1u64..=u64::MAX, any::<bool>()), 1..20).prop_map(|v| {
        RangeSet::from_ranges(v.into_iter().filter_map(|(start, len, to_end)| {
            let end = if to_end {
                1u128 << 64
            } else {
                u128::from(start) + u128::from(len)
            };
            HashRange::new(start, end.min(1u128 << 64))
        }))
    })
}

proptest! {
    #[test]
    fn selector_round_trips(set in range_sets(), by_ns in any::<bool>()) {
        let key = if by_ns { ShardKey::Namespace } else { ShardKey::Uid };
        let Some(sel) = set.selector(key) else {
            prop_assert!(set.is_empty());
            return Ok(());
        };
        let text = sel.to_string();
        let parsed = ShardSelector::parse(&text).unwrap().unwrap();
        prop_assert_eq!(&parsed, &sel);
        prop_assert_eq!(parsed.to_string(), text.clone());
        let back = RangeSet::from_ranges(parsed.terms().iter().map(|(k, r)| {
            assert_eq!(*k, key);
            *r
        }));
        prop_assert_eq!(back, set);
        // The KEP's spelling: 16 hex digits, the end of the space with 17.
        let prefix = format!("shardRange({}, '0x", key.path());
        for term in text.split(" || ") {
            prop_assert!(term.starts_with(&prefix), "{}", term);
        }
    }

    #[test]
    fn set_membership_matches_ranges(set in range_sets(), h in any::<u64>()) {
        let direct = set.ranges().iter().any(|r| r.contains(h));
        prop_assert_eq!(set.contains(h), direct);
        prop_assert_eq!(RangeSet::full().difference(&set).contains(h), !direct);
    }
}
