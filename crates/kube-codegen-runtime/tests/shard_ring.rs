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

/// Issue 34's goal sizes through the coordinator's path: a ring that starts from the even split
/// of the space, each member summarising the keys it caches (what it publishes on its Lease),
/// the coordinator rebalancing from the summaries; then 3 -> 4 -> 2. The worst share is
/// measured in objects, exactly, and only what must move moves.
#[test]
fn namespace_names_as_clusters_name_them_are_shared_by_objects() {
    use kube_codegen_runtime::shard::table::{SUMMARY_POINTS, rebalance};
    use kube_codegen_runtime::shard::{Load, Table};
    let names = |v: &[&str]| v.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    // Members report what they cache under `t`: their keys, summarised.
    let reported = |t: &Table, load: &Load| {
        let per: Vec<Load> = t
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
        Load::merge(&per)
    };
    let moved = |a: &Table, b: &Table, load: &Load| -> f64 {
        let w: u64 = load
            .points()
            .iter()
            .filter(|(h, _)| a.owner(*h) != b.owner(*h))
            .map(|p| p.1)
            .sum();
        w as f64 / load.total() as f64
    };
    for (n, per_ns) in [(30usize, 10u64), (3000, 10), (20, 10)] {
        let load =
            Load::new((1..=n).map(|i| (ShardKey::Namespace.hash("", &format!("ns-{i}")), per_ns)));
        let three = names(&["replica-0", "replica-1", "replica-2"]);
        let even = Table::even(&three);
        let t3 = rebalance(Some(&even), &three, &reported(&even, &load), 2);
        let four = names(&["replica-0", "replica-1", "replica-2", "replica-3"]);
        let t4 = rebalance(Some(&t3), &four, &reported(&t3, &load), 3);
        let two = names(&["replica-0", "replica-3"]);
        let t2 = rebalance(Some(&t4), &two, &reported(&t4, &load), 4);
        println!(
            "{n} namespaces ns-1..: even split of the space {:.1}% off a third; by objects \
             3 members {:.1}%, 4 members {:.1}% ({:.1}% of the objects moved), 2 members {:.1}% \
             ({:.1}% moved); ranges per member at most {}",
            even.drift(&load) * 100.0,
            t3.drift(&load) * 100.0,
            t4.drift(&load) * 100.0,
            moved(&t3, &t4, &load) * 100.0,
            t2.drift(&load) * 100.0,
            moved(&t4, &t2, &load) * 100.0,
            [&t3, &t4, &t2]
                .iter()
                .flat_map(|t| t.assignments().into_values())
                .map(|r| r.ranges().len())
                .max()
                .unwrap_or(0)
        );
        // Within 10% of even where a namespace is under 10% of a share.
        for (t, m) in [(&t3, 3u64), (&t4, 4), (&t2, 2)] {
            let even_share = load.total() as f64 / m as f64;
            // Exact loads (up to 128 keys a member): within one namespace of even.
            for (who, l) in t.loads(&load).into_iter().filter(|_| n <= 128) {
                let off = (l as f64 - even_share).abs();
                assert!(
                    off <= per_ns as f64,
                    "{n}: {who} holds {l}, even is {even_share:.0}"
                );
            }
            if n >= 30 {
                assert!(t.drift(&load) <= 0.10, "{n}: {}", t.drift(&load));
            }
        }
    }
}
