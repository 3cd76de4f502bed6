//! Shard selectors of server-side sharded list and watch (Kubernetes 1.36, KEP-5866, feature
//! gate `ShardedListAndWatch`): the `shardSelector` list option, its hash and its ranges.
//!
//! A selector is one or more `shardRange(<path>, '<hexStart>', '<hexEnd>')` terms joined by
//! `||`. An object matches when the 64-bit FNV-1a hash of the UTF-8 bytes of the field at
//! `<path>` (`object.metadata.uid` or `object.metadata.namespace`) lies in `[start, end)` of
//! any term. Bounds are quoted `0x` hex literals; the whole space is
//! `[0x0, 0x10000000000000000)`, the exclusive end 2^64 written with 17 digits. This module is
//! both sides of the wire: the in-memory API server parses and applies selectors with it, the
//! runtime's sharded informers write them and filter by the same hash where a server does not.
//!
//! What the published API reference states is followed exactly (the paths, the hash, the
//! literal shape, half-open ranges, `||`). Where it is silent this parser decides, and says so:
//! blanks around tokens are allowed, hex digits may be upper or lower case, at most 17 digits,
//! `start < end <= 2^64`, and an empty selector selects everything (the option is unset).

use std::fmt;

/// FNV-1a 64-bit offset basis.
const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
/// FNV-1a 64-bit prime.
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

/// The exclusive end of the hash space, 2^64.
pub const HASH_SPACE_END: u128 = 1 << 64;

/// 64-bit FNV-1a of `bytes`: what a selector's range is compared with.
pub fn fnv1a64(bytes: &[u8]) -> u64 {
    let mut h = FNV_OFFSET;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(FNV_PRIME);
    }
    h
}

/// The object field a selector hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ShardKey {
    /// `object.metadata.uid`: spreads every object on its own.
    Uid,
    /// `object.metadata.namespace`: keeps a namespace's objects together (`""` for
    /// cluster-scoped objects).
    Namespace,
}

impl ShardKey {
    /// The selector's spelling of the field.
    pub fn path(self) -> &'static str {
        match self {
            ShardKey::Uid => "object.metadata.uid",
            ShardKey::Namespace => "object.metadata.namespace",
        }
    }

    fn from_path(p: &str) -> Option<Self> {
        match p {
            "object.metadata.uid" => Some(ShardKey::Uid),
            "object.metadata.namespace" => Some(ShardKey::Namespace),
            _ => None,
        }
    }

    /// The hash of an object given its uid and namespace.
    pub fn hash(self, uid: &str, namespace: &str) -> u64 {
        match self {
            ShardKey::Uid => fnv1a64(uid.as_bytes()),
            ShardKey::Namespace => fnv1a64(namespace.as_bytes()),
        }
    }
}

/// A half-open range `[start, end)` of the hash space, never empty.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HashRange {
    start: u64,
    /// Up to 2^64 (the end of the space), hence wider than a hash.
    end: u128,
}

impl HashRange {
    /// The whole space.
    pub const FULL: HashRange = HashRange {
        start: 0,
        end: HASH_SPACE_END,
    };

    /// `[start, end)`; `None` when empty or past 2^64.
    pub fn new(start: u64, end: u128) -> Option<Self> {
        (u128::from(start) < end && end <= HASH_SPACE_END).then_some(HashRange { start, end })
    }

    /// The inclusive start.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// The exclusive end (at most 2^64).
    pub fn end(&self) -> u128 {
        self.end
    }

    /// How many hashes it holds.
    pub fn len(&self) -> u128 {
        self.end - u128::from(self.start)
    }

    /// Never true (an empty range cannot be built); for clippy's `len` convention.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether `h` lies in the range.
    pub fn contains(&self, h: u64) -> bool {
        h >= self.start && u128::from(h) < self.end
    }
}

/// A set of hash ranges, kept sorted, disjoint and merged (touching ranges are one), so two
/// sets holding the same hashes are equal and write the same selector.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RangeSet {
    ranges: Vec<HashRange>,
}

impl RangeSet {
    /// No hashes.
    pub fn empty() -> Self {
        RangeSet::default()
    }

    /// Every hash.
    pub fn full() -> Self {
        RangeSet {
            ranges: vec![HashRange::FULL],
        }
    }

    /// The union of `ranges`, in any order, overlapping or not.
    pub fn from_ranges(ranges: impl IntoIterator<Item = HashRange>) -> Self {
        let mut v: Vec<HashRange> = ranges.into_iter().collect();
        v.sort_unstable();
        let mut out: Vec<HashRange> = Vec::with_capacity(v.len());
        for r in v {
            match out.last_mut() {
                Some(last) if u128::from(r.start) <= last.end => last.end = last.end.max(r.end),
                _ => out.push(r),
            }
        }
        RangeSet { ranges: out }
    }

    /// The ranges, sorted and disjoint.
    pub fn ranges(&self) -> &[HashRange] {
        &self.ranges
    }

    /// True when the set holds no hash.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// How many hashes the set holds (2^64 for the full space).
    pub fn size(&self) -> u128 {
        self.ranges.iter().map(HashRange::len).sum()
    }

    /// Whether `h` is in the set (a binary search over the ranges).
    pub fn contains(&self, h: u64) -> bool {
        let i = self.ranges.partition_point(|r| r.end <= u128::from(h));
        self.ranges.get(i).is_some_and(|r| r.contains(h))
    }

    /// The hashes of `self` that are also in `other`.
    pub fn intersection(&self, other: &RangeSet) -> RangeSet {
        let mut out = Vec::new();
        let (mut i, mut j) = (0, 0);
        while i < self.ranges.len() && j < other.ranges.len() {
            let (a, b) = (self.ranges[i], other.ranges[j]);
            let start = a.start.max(b.start);
            let end = a.end.min(b.end);
            if let Some(r) = HashRange::new(start, end) {
                out.push(r);
            }
            if a.end < b.end {
                i += 1;
            } else {
                j += 1;
            }
        }
        RangeSet::from_ranges(out)
    }

    /// The hashes of `self` not in `other`.
    pub fn difference(&self, other: &RangeSet) -> RangeSet {
        let mut out = Vec::new();
        for r in &self.ranges {
            let mut start = u128::from(r.start);
            for o in &other.ranges {
                if o.end <= start || u128::from(o.start) >= r.end {
                    continue;
                }
                if u128::from(o.start) > start {
                    out.extend(range_u128(start, u128::from(o.start)));
                }
                start = start.max(o.end);
            }
            out.extend(range_u128(start, r.end));
        }
        RangeSet::from_ranges(out)
    }

    /// The union of both sets.
    pub fn union(&self, other: &RangeSet) -> RangeSet {
        RangeSet::from_ranges(self.ranges.iter().chain(&other.ranges).copied())
    }

    /// The selector of this set over `key`: `None` for an empty set, which no selector can
    /// express (a replica owning nothing should not list at all).
    pub fn selector(&self, key: ShardKey) -> Option<ShardSelector> {
        (!self.is_empty()).then(|| ShardSelector {
            terms: self.ranges.iter().map(|r| (key, *r)).collect(),
        })
    }
}

/// `[start, end)` from u128 bounds, when not empty (start is then below 2^64).
fn range_u128(start: u128, end: u128) -> Option<HashRange> {
    let start = u64::try_from(start).ok()?;
    HashRange::new(start, end)
}

/// A parsed `shardSelector`: terms joined by `||`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ShardSelector {
    terms: Vec<(ShardKey, HashRange)>,
}

/// Why a `shardSelector` does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid shardSelector {selector:?}: {reason}")]
pub struct ShardSelectorError {
    /// The selector as given.
    pub selector: String,
    /// What is wrong, at which byte.
    pub reason: String,
}

impl ShardSelector {
    /// Parses a selector; `Ok(None)` for an empty one (no selection).
    pub fn parse(s: &str) -> Result<Option<ShardSelector>, ShardSelectorError> {
        if s.trim().is_empty() {
            return Ok(None);
        }
        let err = |at: usize, what: String| ShardSelectorError {
            selector: s.to_owned(),
            reason: format!("{what} at byte {at}"),
        };
        let mut p = Parser { s, at: 0 };
        let mut terms = Vec::new();
        loop {
            p.blank();
            p.expect("shardRange").map_err(|at| {
                err(
                    at,
                    "expected shardRange(<path>, '<hexStart>', '<hexEnd>')".into(),
                )
            })?;
            p.blank();
            p.expect("(")
                .map_err(|at| err(at, "expected \"(\"".into()))?;
            p.blank();
            let path_at = p.at;
            let path = p.path();
            let key = ShardKey::from_path(path).ok_or_else(|| {
                err(
                    path_at,
                    format!(
                        "unsupported field path {path:?} (supported: \"object.metadata.uid\", \
                         \"object.metadata.namespace\")"
                    ),
                )
            })?;
            p.blank();
            p.expect(",")
                .map_err(|at| err(at, "expected \",\"".into()))?;
            let start_at = p.at;
            let start = p.hex().map_err(|(at, why)| err(at, why))?;
            p.blank();
            p.expect(",")
                .map_err(|at| err(at, "expected \",\"".into()))?;
            let end = p.hex().map_err(|(at, why)| err(at, why))?;
            p.blank();
            p.expect(")")
                .map_err(|at| err(at, "expected \")\"".into()))?;
            let start = u64::try_from(start).map_err(|_| {
                err(
                    start_at,
                    "hexStart must be below 0x10000000000000000".into(),
                )
            })?;
            let range = HashRange::new(start, end).ok_or_else(|| {
                err(
                    start_at,
                    format!("hexStart 0x{start:x} must be below hexEnd 0x{end:x}"),
                )
            })?;
            terms.push((key, range));
            p.blank();
            if p.at == s.len() {
                break;
            }
            p.expect("||")
                .map_err(|at| err(at, "expected \"||\" or the end".into()))?;
        }
        Ok(Some(ShardSelector { terms }))
    }

    /// The terms, in the selector's order.
    pub fn terms(&self) -> &[(ShardKey, HashRange)] {
        &self.terms
    }

    /// Whether an object with this uid and namespace is selected.
    pub fn matches(&self, uid: &str, namespace: &str) -> bool {
        // Hash each key once even when several terms use it.
        let (mut by_uid, mut by_ns) = (None, None);
        self.terms.iter().any(|(key, range)| {
            let h = match key {
                ShardKey::Uid => *by_uid.get_or_insert_with(|| key.hash(uid, namespace)),
                ShardKey::Namespace => *by_ns.get_or_insert_with(|| key.hash(uid, namespace)),
            };
            range.contains(h)
        })
    }

    /// Whether an object (JSON) is selected, by its `metadata.uid` and `metadata.namespace`
    /// (absent fields hash as `""`).
    pub fn matches_object(&self, obj: &serde_json::Value) -> bool {
        let meta = |f: &str| {
            obj.get("metadata")
                .and_then(|m| m.get(f))
                .and_then(serde_json::Value::as_str)
                .unwrap_or("")
        };
        self.matches(meta("uid"), meta("namespace"))
    }
}

/// The canonical spelling: 16 lower-case hex digits per bound (17 for 2^64), `", "` between
/// arguments and `" || "` between terms, as the API reference's examples write them.
impl fmt::Display for ShardSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (key, r)) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(" || ")?;
            }
            write!(
                f,
                "shardRange({}, '0x{:016x}', '0x{:016x}')",
                key.path(),
                r.start,
                r.end
            )?;
        }
        Ok(())
    }
}

struct Parser<'a> {
    s: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn rest(&self) -> &str {
        &self.s[self.at..]
    }

    fn blank(&mut self) {
        let r = self.rest();
        self.at += r.len() - r.trim_start().len();
    }

    fn expect(&mut self, tok: &str) -> Result<(), usize> {
        if self.rest().starts_with(tok) {
            self.at += tok.len();
            Ok(())
        } else {
            Err(self.at)
        }
    }

    /// A dotted identifier path.
    fn path(&mut self) -> &str {
        let r = self.rest();
        let n = r
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '.' || c == '_'))
            .unwrap_or(r.len());
        let at = self.at;
        self.at += n;
        &self.s[at..at + n]
    }

    /// A quoted `0x` hex literal (CEL string, either quote), as a number up to 2^64.
    fn hex(&mut self) -> Result<u128, (usize, String)> {
        self.blank();
        let at = self.at;
        let s = self.s;
        let r = &s[at..];
        let quote = match r.chars().next() {
            Some(q @ ('\'' | '"')) => q,
            _ => return Err((at, "expected a quoted hex literal such as '0x0'".into())),
        };
        let Some(close) = r[1..].find(quote) else {
            return Err((at, "unterminated string literal".into()));
        };
        let lit = &r[1..1 + close];
        self.at += close + 2;
        let Some(digits) = lit.strip_prefix("0x") else {
            return Err((at, format!("hex literal {lit:?} must start with \"0x\"")));
        };
        if digits.is_empty() || digits.len() > 17 || !digits.chars().all(|c| c.is_ascii_hexdigit())
        {
            return Err((at, format!("{lit:?} is not a hex value of 1 to 17 digits")));
        }
        let v = u128::from_str_radix(digits, 16).map_err(|e| (at, e.to_string()))?;
        if v > HASH_SPACE_END {
            return Err((at, format!("{lit:?} is above 0x10000000000000000")));
        }
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fnv1a64_known_values() {
        // The published FNV-1a 64 test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf29ce484222325);
        assert_eq!(fnv1a64(b"a"), 0xaf63dc4c8601ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x85944171f73967e8);
    }

    #[test]
    fn parses_the_reference_examples() {
        let two = "shardRange(object.metadata.uid, '0x8000000000000000', '0x10000000000000000')";
        let s = ShardSelector::parse(two).unwrap().unwrap();
        assert_eq!(s.to_string(), two);
        assert_eq!(
            s.terms(),
            &[(
                ShardKey::Uid,
                HashRange::new(1 << 63, HASH_SPACE_END).unwrap()
            )]
        );
        let short = "shardRange(object.metadata.uid, '0x0', '0x8000000000000000') || \
                     shardRange(object.metadata.namespace,'0xC000000000000000','0x10000000000000000')";
        let s = ShardSelector::parse(short).unwrap().unwrap();
        assert_eq!(
            s.to_string(),
            "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000') || \
             shardRange(object.metadata.namespace, '0xc000000000000000', '0x10000000000000000')"
        );
        assert_eq!(ShardSelector::parse("  ").unwrap(), None);
    }

    #[test]
    fn refuses_malformed_selectors() {
        for bad in [
            "shardRange(metadata.uid, '0x0', '0x1')",
            "shardRange(object.metadata.name, '0x0', '0x1')",
            "shardRange(object.metadata.uid, '0x1', '0x1')",
            "shardRange(object.metadata.uid, '0x2', '0x1')",
            "shardRange(object.metadata.uid, '0x0', '0x10000000000000001')",
            "shardRange(object.metadata.uid, '0x0', '0x100000000000000000')",
            "shardRange(object.metadata.uid, '0', '0x1')",
            "shardRange(object.metadata.uid, 0x0, '0x1')",
            "shardRange(object.metadata.uid, '0x0', '0xg')",
            "shardRange(object.metadata.uid, '0x0', '0x1'",
            "shardRange(object.metadata.uid, '0x0', '0x1') ||",
            "shardRange(object.metadata.uid, '0x0', '0x1') && shardRange(object.metadata.uid, '0x1', '0x2')",
            "shardRange(object.metadata.uid, '0x0)",
            "uid in (a)",
        ] {
            let e = ShardSelector::parse(bad).expect_err(bad);
            assert!(e.to_string().contains("at byte"), "{e}");
        }
    }

    #[test]
    fn ranges_hold_their_start_and_not_their_end() {
        let r = HashRange::new(100, 200).unwrap();
        assert!(r.contains(100) && r.contains(199));
        assert!(!r.contains(99) && !r.contains(200));
        // The last range of the space ends at 2^64 and holds u64::MAX.
        let last = HashRange::new(u64::MAX - 1, HASH_SPACE_END).unwrap();
        assert!(last.contains(u64::MAX) && !last.contains(u64::MAX - 2));
        // Two touching ranges kept apart by a gap: the gap's edges belong to neither.
        let set = RangeSet::from_ranges([r, HashRange::new(201, 300).unwrap()]);
        assert!(set.contains(100) && set.contains(199) && set.contains(201));
        assert!(!set.contains(200) && !set.contains(300) && !set.contains(99));
        // A selector's range: a hash exactly at its start is selected, exactly at its end not.
        let h = fnv1a64(b"edge-uid");
        let at_start = RangeSet::from_ranges(HashRange::new(h, u128::from(h) + 5));
        let ending_at = RangeSet::from_ranges(HashRange::new(h - 5, u128::from(h)));
        let sel = |set: &RangeSet| set.selector(ShardKey::Uid).unwrap();
        assert!(sel(&at_start).matches("edge-uid", "ns"));
        assert!(!sel(&ending_at).matches("edge-uid", "ns"));
        let parsed = |set: &RangeSet| {
            ShardSelector::parse(&sel(set).to_string())
                .unwrap()
                .unwrap()
        };
        assert!(parsed(&at_start).matches("edge-uid", "ns"));
        assert!(!parsed(&ending_at).matches("edge-uid", "ns"));
    }

    #[test]
    fn matches_by_hash() {
        let h = fnv1a64(b"some-uid");
        let only = RangeSet::from_ranges(HashRange::new(h, u128::from(h) + 1));
        let s = only.selector(ShardKey::Uid).unwrap();
        assert!(s.matches("some-uid", "ns"));
        assert!(!s.matches("other-uid", "ns"));
        let obj = serde_json::json!({"metadata": {"uid": "some-uid", "namespace": "x"}});
        assert!(s.matches_object(&obj));
        let by_ns = only.selector(ShardKey::Namespace).unwrap();
        assert!(!by_ns.matches_object(&obj));
    }

    #[test]
    fn set_operations() {
        let r = |a: u64, b: u128| HashRange::new(a, b).unwrap();
        let a = RangeSet::from_ranges([r(0, 10), r(5, 20), r(30, 40)]);
        assert_eq!(a.ranges(), &[r(0, 20), r(30, 40)]);
        assert_eq!(a.size(), 30);
        let b = RangeSet::from_ranges([r(10, 35)]);
        assert_eq!(a.intersection(&b).ranges(), &[r(10, 20), r(30, 35)]);
        assert_eq!(a.difference(&b).ranges(), &[r(0, 10), r(35, 40)]);
        assert_eq!(a.union(&b).ranges(), &[r(0, 40)]);
        assert!(a.contains(0) && a.contains(19) && !a.contains(20) && a.contains(39));
        assert!(!a.contains(40) && !RangeSet::empty().contains(0));
        assert!(RangeSet::full().contains(u64::MAX));
        assert_eq!(
            RangeSet::full().difference(&RangeSet::full()),
            RangeSet::empty()
        );
        assert_eq!(RangeSet::empty().selector(ShardKey::Uid), None);
    }
}
