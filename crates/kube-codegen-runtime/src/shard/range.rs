//! Half-open `[start, end)` ranges of the 64-bit hash space, sets of them, and the
//! `shardSelector` they are written as (`kube_codegen_crd::shard`, shared with the in-memory
//! API server): `shardRange(object.metadata.uid, '0x0000000000000000', '0x5555555555555555')
//! || ...`, 16 lower-case hex digits per bound, the end of the space 2^64 written
//! `'0x10000000000000000'`.

pub use kube_codegen_crd::shard::{
    HASH_SPACE_END, HashRange, RangeSet, ShardSelector, ShardSelectorError,
};
