//! The watch on a ring's Leases (issue 34): it only says *when* to read the ring. The read
//! itself stays a list (a consistent read), since the handoff's order needs the peers' state
//! as of after this replica's acknowledgement was written, and a watch may lag behind that.
//!
//! Renewals change a Lease every retry period; waking on those would turn every renewal into
//! one list per member, so only what moves the ring wakes: a Lease added or deleted, a new
//! holder, a new acknowledgement, a new table. A crash changes nothing and is still found by
//! expiry, on the retry period's reads.

use std::collections::HashMap;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::{Api, WatchEvent, WatchParams};
use tokio::sync::Notify;

use super::membership::{MembershipConfig, RING_ACK_ANNOTATION, RING_LABEL, RING_TABLE_ANNOTATION};

/// What of a Lease matters to the ring: holder, acknowledgement, table.
type Signature = (Option<String>, Option<String>, Option<String>);

fn signature(lease: &Lease) -> Signature {
    let annotation = |k: &str| {
        lease
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(k))
            .cloned()
    };
    (
        lease.spec.as_ref().and_then(|s| s.holder_identity.clone()),
        annotation(RING_ACK_ANNOTATION),
        annotation(RING_TABLE_ANNOTATION),
    )
}

/// Watches the ring's Leases until dropped, notifying `wake` on every change that matters.
/// Errors are logged and the watch opened again after a retry period (from the start when the
/// position expired); it never ends.
pub(crate) async fn run(api: &Api<Lease>, config: &MembershipConfig, wake: &Notify) {
    let labels = format!("{RING_LABEL}={}", config.ring);
    let mut seen: HashMap<String, Signature> = HashMap::new();
    let mut rv = String::from("0");
    loop {
        let params = WatchParams::default()
            .labels(&labels)
            .timeout(290)
            .disable_bookmarks();
        let stream = match api.watch(&params, &rv).await {
            Ok(stream) => stream,
            Err(e) => {
                tracing::debug!("shard ring {}: lease watch failed: {e}", config.ring);
                rv = "0".into();
                tokio::time::sleep(config.retry_period).await;
                continue;
            }
        };
        let mut stream = std::pin::pin!(stream.into_stream());
        while let Some(event) = stream.next().await {
            let changed = match event {
                Ok(WatchEvent::Added(l) | WatchEvent::Modified(l)) => {
                    if let Some(v) = &l.metadata.resource_version {
                        rv.clone_from(v);
                    }
                    let name = l.metadata.name.clone().unwrap_or_default();
                    let sig = signature(&l);
                    seen.insert(name, sig.clone()) != Some(sig)
                }
                Ok(WatchEvent::Deleted(l)) => {
                    if let Some(v) = &l.metadata.resource_version {
                        rv.clone_from(v);
                    }
                    seen.remove(l.metadata.name.as_deref().unwrap_or_default());
                    true
                }
                Ok(WatchEvent::Bookmark(b)) => {
                    rv = b.metadata.resource_version;
                    false
                }
                Ok(WatchEvent::Error(e)) => {
                    // 410 and the like: start over (the synthetic adds repeat what is known
                    // and wake nothing).
                    tracing::debug!("shard ring {}: lease watch: {}", config.ring, e.message);
                    rv = "0".into();
                    break;
                }
                Err(e) => {
                    tracing::debug!("shard ring {}: lease watch ended: {e}", config.ring);
                    break;
                }
            };
            if changed {
                wake.notify_one();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::coordination::v1::LeaseSpec;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::MicroTime;

    #[test]
    fn a_renewal_alone_is_no_change() {
        let mut lease = Lease {
            spec: Some(LeaseSpec {
                holder_identity: Some("a".into()),
                ..LeaseSpec::default()
            }),
            ..Lease::default()
        };
        let before = signature(&lease);
        lease.spec.as_mut().unwrap().renew_time =
            Some(MicroTime(k8s_openapi::jiff::Timestamp::now()));
        assert_eq!(signature(&lease), before);
        lease
            .metadata
            .annotations
            .get_or_insert_with(Default::default)
            .insert(RING_ACK_ANNOTATION.into(), "00000000000000ff".into());
        assert_ne!(signature(&lease), before);
    }
}
