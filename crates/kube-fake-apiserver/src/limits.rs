//! Size limits a kube-apiserver 1.35 over etcd 3.6 puts on writes, with their answers.
//!
//! - **Request body** (`--max-resource-write-bytes`, `MaxRequestBodyBytes`, 3 MiB): a create,
//!   update, patch or delete whose body is longer is a 413 `RequestEntityTooLarge`, `Request
//!   entity too large: limit is 3145728`, before the body is decoded (`limitedReadBody`).
//! - **Storage** (what etcd takes): the object is written in one etcd transaction. The etcd
//!   client in kube-apiserver keeps gRPC's default send limit of 2 MiB, so a transaction
//!   message over it never leaves: `rpc error: code = ResourceExhausted desc = trying to send
//!   message larger than max (N vs. 2097152)`. etcd itself refuses a request whose raft entry
//!   is over `--max-request-bytes` (1.5 MiB by default): `etcdserver: request is too large`
//!   (and its gRPC server receives at most that plus 512 KiB: `rpc error: code =
//!   ResourceExhausted desc = grpc: received message larger than max (N vs. M)`). kube-apiserver
//!   passes these errors through as a 500 `Status` without a reason
//!   (kubernetes/kubernetes#112152). A dry run never reaches etcd and passes.
//!
//! The sizes are computed, not measured on a wire: the object as kube-apiserver encodes a
//! custom resource for etcd (JSON with a trailing newline, Go's escaping of `<`, `>`, `&`,
//! U+2028 and U+2029; no `resourceVersion`), its etcd key (`/registry/<group>/<resource>/
//! <namespace>/<name>`, no group for built-ins), and the protobuf framing of the transaction
//! kube-apiserver sends (`OptimisticPut`: compare the key's mod revision, put; an update also
//! reads the key back on failure) and of etcd's raft entry around it (a request header and ID).
//! Built-ins are stored as protobuf by a real server, so their real sizes are smaller.
use serde_json::Value;

use crate::status::ApiError;
use crate::store::Key;

/// kube-apiserver's default `MaxRequestBodyBytes` (`--max-resource-write-bytes`).
pub const MAX_REQUEST_BODY_BYTES: usize = 3 * 1024 * 1024;
/// etcd's default `--max-request-bytes`.
pub const ETCD_MAX_REQUEST_BYTES: usize = 1536 * 1024;
/// The etcd client's gRPC send limit (clientv3's default; kube-apiserver does not change it).
pub const GRPC_CLIENT_MAX_SEND: usize = 2 * 1024 * 1024;
/// What etcd's gRPC server accepts beyond `--max-request-bytes` (`grpcOverheadBytes`).
const GRPC_SERVER_OVERHEAD: usize = 512 * 1024;

/// The limits a server was built with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Longest request body of a write (0: no limit).
    pub max_request_body_bytes: usize,
    /// etcd's `--max-request-bytes`.
    pub etcd_max_request_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_request_body_bytes: MAX_REQUEST_BODY_BYTES,
            etcd_max_request_bytes: ETCD_MAX_REQUEST_BYTES,
        }
    }
}

impl Limits {
    /// The 413 for a write whose body is longer than the limit.
    pub fn check_body(&self, len: usize) -> Result<(), ApiError> {
        let limit = self.max_request_body_bytes;
        if limit > 0 && len > limit {
            return Err(ApiError::new(
                413,
                "RequestEntityTooLarge",
                format!("Request entity too large: limit is {limit}"),
            ));
        }
        Ok(())
    }

    /// The 500 etcd's limits make of storing `obj` at `key` (`update`: over an existing object
    /// at revision `revision`). `group_in_key`: the key names the group (custom resources,
    /// CRDs).
    pub fn check_storage(
        &self,
        key: &Key,
        group_in_key: bool,
        obj: &Value,
        update: Option<u64>,
    ) -> Result<(), ApiError> {
        let value = stored_len(obj);
        let key = etcd_key(key, group_in_key).len();
        let txn = txn_len(key, value, update);
        let refuse = |m: String| Err(ApiError::new(500, "", m));
        if txn > GRPC_CLIENT_MAX_SEND {
            return refuse(format!(
                "rpc error: code = ResourceExhausted desc = trying to send message larger than max ({txn} vs. {GRPC_CLIENT_MAX_SEND})"
            ));
        }
        let server_max = self.etcd_max_request_bytes + GRPC_SERVER_OVERHEAD;
        if txn > server_max {
            return refuse(format!(
                "rpc error: code = ResourceExhausted desc = grpc: received message larger than max ({txn} vs. {server_max})"
            ));
        }
        if raft_len(txn) > self.etcd_max_request_bytes {
            return refuse("etcdserver: request is too large".into());
        }
        Ok(())
    }
}

/// The key kube-apiserver stores an object under (`/registry/...`).
fn etcd_key(key: &Key, group_in_key: bool) -> String {
    let mut out = String::from("/registry/");
    if group_in_key && !key.group.is_empty() {
        out.push_str(&key.group);
        out.push('/');
    }
    out.push_str(&key.resource);
    if !key.namespace.is_empty() {
        out.push('/');
        out.push_str(&key.namespace);
    }
    out.push('/');
    out.push_str(&key.name);
    out
}

/// Length of Go's JSON encoding of `obj` as stored (`json.Encoder`: a trailing newline, HTML
/// characters and the two line separators escaped), without `metadata.resourceVersion`.
pub fn stored_len(obj: &Value) -> usize {
    let rv_len = obj
        .pointer("/metadata/resourceVersion")
        .map(|rv| {
            // `"resourceVersion":<value>` and the comma that joins it to a neighbour.
            let others = obj
                .get("metadata")
                .and_then(Value::as_object)
                .map_or(0, |m| m.len() - 1);
            r#""resourceVersion":"#.len() + rv.to_string().len() + usize::from(others > 0)
        })
        .unwrap_or(0);
    let text = serde_json::to_vec(obj).unwrap_or_default();
    let mut extra = 0;
    let mut i = 0;
    while i < text.len() {
        match text[i] {
            // `\u003c`: 6 bytes for 1.
            b'<' | b'>' | b'&' => extra += 5,
            // U+2028 and U+2029 (E2 80 A8/A9): `\u2028`, 6 bytes for 3.
            0xE2 if text.get(i + 1) == Some(&0x80)
                && matches!(text.get(i + 2), Some(0xA8 | 0xA9)) =>
            {
                extra += 3;
                i += 2;
            }
            _ => {}
        }
        i += 1;
    }
    text.len() + extra + 1 - rv_len
}

fn varint_len(n: usize) -> usize {
    let mut n = n as u64;
    let mut len = 1;
    while n >= 0x80 {
        n >>= 7;
        len += 1;
    }
    len
}

/// A length-delimited protobuf field with a one-byte tag.
fn field(len: usize) -> usize {
    1 + varint_len(len) + len
}

/// The `TxnRequest` kube-apiserver sends: `If(mod_revision(key) == rev)`, `Then(Put(key,
/// value))`, and for an update `Else(Get(key))`.
fn txn_len(key: usize, value: usize, update: Option<u64>) -> usize {
    let rev = update.unwrap_or(0) as usize;
    // result EQUAL (0) is left out; target MOD; key; mod_revision (a oneof: sent even if 0).
    let compare = 2 + field(key) + 1 + varint_len(rev);
    let put = field(key) + field(value);
    let mut txn = field(compare) + field(field(put));
    if update.is_some() {
        txn += field(field(field(key)));
    }
    txn
}

/// etcd's raft entry for a transaction (`InternalRaftRequest`): a header (field 100, a two-byte
/// tag) with the request ID, the ID again, and the transaction. IDs use all 64 bits (10-byte
/// varints): the size may be off by a byte or two.
fn raft_len(txn: usize) -> usize {
    let header = 2 + 1 + (1 + 10);
    header + (1 + 10) + field(txn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn key(group: &str, ns: &str) -> Key {
        Key {
            group: group.into(),
            resource: "crontabs".into(),
            namespace: ns.into(),
            name: "big".into(),
        }
    }

    #[test]
    fn keys_are_the_servers() {
        assert_eq!(
            etcd_key(&key("stable.example.com", "default"), true),
            "/registry/stable.example.com/crontabs/default/big"
        );
        assert_eq!(etcd_key(&key("", ""), false), "/registry/crontabs/big");
    }

    #[test]
    fn stored_length_is_gos_encoding() {
        // Go: {"a":"\u003cb\u003e","metadata":{"name":"x"}}\n
        let obj = json!({"a": "<b>", "metadata": {"name": "x", "resourceVersion": "12"}});
        let go = "{\"a\":\"\\u003cb\\u003e\",\"metadata\":{\"name\":\"x\"}}\n";
        assert_eq!(stored_len(&obj), go.len());
        let alone = json!({"metadata": {"resourceVersion": "7"}});
        assert_eq!(stored_len(&alone), "{\"metadata\":{}}\n".len());
    }

    #[test]
    fn transaction_framing() {
        // A 48-byte key and a 2,097,443-byte value make the 2,097,564-byte create transaction
        // of the observed refusal (121 bytes of framing for a value over 2^21).
        assert_eq!(txn_len(48, 2_097_443, None), 2_097_564);
        // An update also compares a revision (300: one more varint byte) and reads the key
        // back (the key in a RangeRequest in a RequestOp in the failure list: 54 bytes).
        assert_eq!(txn_len(48, 100, Some(300)) - txn_len(48, 100, None), 1 + 54);
    }

    #[test]
    fn answers() {
        let l = Limits::default();
        let e = l.check_body(MAX_REQUEST_BODY_BYTES + 1).unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (413, "Request entity too large: limit is 3145728")
        );
        assert!(l.check_body(MAX_REQUEST_BODY_BYTES).is_ok());
        let k = key("stable.example.com", "default");
        let sized = |n: usize| json!({"spec": {"s": "x".repeat(n)}});
        assert!(l.check_storage(&k, true, &sized(1 << 20), None).is_ok());
        let e = l
            .check_storage(&k, true, &sized(1_600_000), None)
            .unwrap_err();
        assert_eq!(
            (e.code, e.message.as_str()),
            (500, "etcdserver: request is too large")
        );
        let e = l
            .check_storage(&k, true, &sized(2 << 20), None)
            .unwrap_err();
        assert!(
            e.message.starts_with(
                "rpc error: code = ResourceExhausted desc = trying to send message larger than max ("
            ) && e.message.ends_with(" vs. 2097152)"),
            "{}",
            e.message
        );
        // A larger etcd limit lets the 1.6 MB object through; the client's 2 MiB stays.
        let big = Limits {
            etcd_max_request_bytes: 8 << 20,
            ..l
        };
        assert!(big.check_storage(&k, true, &sized(1_600_000), None).is_ok());
        assert!(big.check_storage(&k, true, &sized(2 << 20), None).is_err());
    }
}
