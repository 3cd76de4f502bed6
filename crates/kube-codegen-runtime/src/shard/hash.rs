//! The hash a shard selector compares: 64-bit FNV-1a of the UTF-8 bytes of the object's
//! `metadata.uid` or `metadata.namespace` (`kube_codegen_crd::shard`, shared with the
//! in-memory API server).

use kube::Resource;

pub use kube_codegen_crd::shard::{ShardKey, fnv1a64};

/// The hash of `obj` under `key` (a missing uid or namespace hashes as `""`).
pub fn object_hash<K: Resource>(obj: &K, key: ShardKey) -> u64 {
    let meta = obj.meta();
    key.hash(
        meta.uid.as_deref().unwrap_or(""),
        meta.namespace.as_deref().unwrap_or(""),
    )
}
