//! `shardSelector` (KEP-5866): lists, watches and watch-lists filtered by the FNV-1a hash of the
//! uid or namespace, the echo in `metadata.shardInfo`, 400 on a malformed selector, the OpenAPI
//! v3 parameter; and all of it ignored by a server with the option off, as a 1.35 server does.
use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::*;
use kube_codegen_crd::shard::{HashRange, RangeSet, ShardKey, fnv1a64};
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

const CMS: &str = "/api/v1/namespaces/default/configmaps";
const LOWER_HALF: &str =
    "shardRange(object.metadata.uid, '0x0000000000000000', '0x8000000000000000')";

fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

async fn server(shards: bool) -> (FakeApiServer, kube::Client) {
    let s = FakeApiServer::builder()
        .shard_selectors(shards)
        .start()
        .await
        .expect("server starts");
    let c = s.in_process_client();
    (s, c)
}

/// Creates `n` ConfigMaps in `ns`; returns (name, uid) of each.
async fn configmaps(c: &kube::Client, ns: &str, n: usize) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for i in 0..n {
        let r = post(
            c,
            &format!("/api/v1/namespaces/{ns}/configmaps"),
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i}")}}),
        )
        .await;
        assert_eq!(r.code, 201, "{}", r.body);
        out.push((
            format!("cm-{i}"),
            r.body["metadata"]["uid"].as_str().unwrap().to_owned(),
        ));
    }
    out
}

fn names_of(items: &[Value]) -> BTreeSet<String> {
    items
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn lower_half(uid: &str) -> bool {
    fnv1a64(uid.as_bytes()) < 1 << 63
}

#[tokio::test]
async fn list_keeps_the_selected_hashes_and_echoes_the_selector() {
    let (_s, c) = server(true).await;
    let all = configmaps(&c, "default", 40).await;
    let want: BTreeSet<String> = all
        .iter()
        .filter(|(_, uid)| lower_half(uid))
        .map(|(n, _)| n.clone())
        .collect();
    assert!(
        !want.is_empty() && want.len() < all.len(),
        "both halves hold objects"
    );
    let r = get(&c, &format!("{CMS}?shardSelector={}", enc(LOWER_HALF))).await;
    assert_eq!(r.code, 200, "{}", r.body);
    assert_eq!(
        names_of(r.body["items"].as_array().unwrap()),
        want,
        "exactly the lower half"
    );
    assert_eq!(
        r.body["metadata"]["shardInfo"],
        json!({"selector": LOWER_HALF})
    );
    // Paged: every page filtered and echoed, no remainingItemCount (it would count unselected).
    let mut seen = BTreeSet::new();
    let mut cont = String::new();
    loop {
        let r = get(
            &c,
            &format!(
                "{CMS}?limit=5&continue={cont}&shardSelector={}",
                enc(LOWER_HALF)
            ),
        )
        .await;
        assert_eq!(r.code, 200, "{}", r.body);
        assert_eq!(r.body["metadata"]["shardInfo"]["selector"], LOWER_HALF);
        assert!(r.body["metadata"].get("remainingItemCount").is_none());
        seen.extend(names_of(r.body["items"].as_array().unwrap()));
        match r.body["metadata"]["continue"].as_str() {
            Some(t) if !t.is_empty() => cont = enc(t),
            _ => break,
        }
    }
    assert_eq!(seen, want);
    // Both halves together are everything; without the option nothing is echoed.
    let both = RangeSet::full()
        .selector(ShardKey::Uid)
        .unwrap()
        .to_string();
    let r = get(&c, &format!("{CMS}?shardSelector={}", enc(&both))).await;
    assert_eq!(r.body["items"].as_array().unwrap().len(), all.len());
    let r = get(&c, CMS).await;
    assert!(r.body["metadata"].get("shardInfo").is_none());
}

#[tokio::test]
async fn namespace_path_keeps_whole_namespaces() {
    let (_s, c) = server(true).await;
    let namespaces = ["a", "b", "c", "d", "e", "f"];
    for ns in namespaces {
        configmaps(&c, ns, 2).await;
    }
    let h = fnv1a64(b"c");
    let sel = RangeSet::from_ranges(HashRange::new(h, u128::from(h) + 1))
        .selector(ShardKey::Namespace)
        .unwrap()
        .to_string();
    let r = get(
        &c,
        &format!("/api/v1/configmaps?shardSelector={}", enc(&sel)),
    )
    .await;
    assert_eq!(r.code, 200, "{}", r.body);
    let items = r.body["items"].as_array().unwrap();
    assert_eq!(items.len(), 2, "{items:?}");
    assert!(items.iter().all(|o| o["metadata"]["namespace"] == "c"));
}

#[tokio::test]
async fn malformed_selector_is_a_400_and_ignored_when_off() {
    for bad in [
        "shardRange(object.metadata.name, '0x0', '0x1')",
        "shardRange(object.metadata.uid, '0x5', '0x1')",
        "shardRange(object.metadata.uid, '0x0', '0x10000000000000001')",
        "uid=1",
    ] {
        let (_s, c) = server(true).await;
        let r = get(&c, &format!("{CMS}?shardSelector={}", enc(bad))).await;
        assert_status(&r, 400, "BadRequest");
        let msg = r.body["message"].as_str().unwrap();
        assert!(msg.starts_with("invalid shardSelector"), "{msg}");
        let r = get(&c, &format!("{CMS}?watch=true&shardSelector={}", enc(bad))).await;
        assert_status(&r, 400, "BadRequest");
        // A server without the feature ignores even a malformed one.
        let (_s, c) = server(false).await;
        let r = get(&c, &format!("{CMS}?shardSelector={}", enc(bad))).await;
        assert_eq!(r.code, 200, "{}", r.body);
    }
}

#[tokio::test]
async fn server_without_the_feature_ignores_the_parameter() {
    let (_s, c) = server(false).await;
    let all = configmaps(&c, "default", 10).await;
    let r = get(&c, &format!("{CMS}?shardSelector={}", enc(LOWER_HALF))).await;
    assert_eq!(r.code, 200);
    assert_eq!(r.body["items"].as_array().unwrap().len(), all.len());
    assert!(r.body["metadata"].get("shardInfo").is_none());
    let (ev, _) = watch(
        &c,
        &format!(
            "{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&shardSelector={}",
            enc(LOWER_HALF)
        ),
        all.len() + 1,
        Duration::from_secs(2),
    )
    .await;
    assert_eq!(ev.len(), all.len() + 1);
    let bookmark = &ev[all.len()];
    assert_eq!(bookmark["type"], "BOOKMARK");
    assert!(bookmark["object"]["metadata"].get("shardInfo").is_none());
    let doc = get(&c, "/openapi/v3/api/v1").await.body;
    assert!(!doc.to_string().contains("shardSelector"));
}

#[tokio::test]
async fn watch_list_and_watch_are_filtered_and_the_end_bookmark_echoes() {
    let (_s, c) = server(true).await;
    let all = configmaps(&c, "default", 30).await;
    let want: BTreeSet<String> = all
        .iter()
        .filter(|(_, uid)| lower_half(uid))
        .map(|(n, _)| n.clone())
        .collect();
    let (ev, _) = watch(
        &c,
        &format!(
            "{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&shardSelector={}",
            enc(LOWER_HALF)
        ),
        want.len() + 1,
        Duration::from_secs(2),
    )
    .await;
    assert_eq!(ev.len(), want.len() + 1, "{ev:?}");
    let objects: Vec<Value> = ev[..want.len()]
        .iter()
        .map(|e| e["object"].clone())
        .collect();
    assert_eq!(names_of(&objects), want);
    let end = &ev[want.len()];
    assert_eq!(end["type"], "BOOKMARK");
    assert_eq!(
        end["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(
        end["object"]["metadata"]["shardInfo"]["selector"],
        LOWER_HALF
    );

    // A plain watch: only changes of selected objects arrive.
    let rv = get(&c, CMS).await.body["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_owned();
    for (name, _) in &all {
        merge_patch(&c, &format!("{CMS}/{name}"), json!({"data": {"k": "v"}})).await;
    }
    let (ev, _) = watch(
        &c,
        &format!(
            "{CMS}?watch=true&resourceVersion={rv}&shardSelector={}",
            enc(LOWER_HALF)
        ),
        all.len(),
        Duration::from_millis(500),
    )
    .await;
    let objects: Vec<Value> = ev.iter().map(|e| e["object"].clone()).collect();
    assert!(ev.iter().all(|e| e["type"] == "MODIFIED"));
    assert_eq!(names_of(&objects), want);
    assert_eq!(objects.len(), want.len());
}

#[tokio::test]
async fn openapi_v3_lists_the_parameter_when_on() {
    let (_s, c) = server(true).await;
    let doc = get(&c, "/openapi/v3/api/v1").await.body;
    let list = &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps"]["get"]["parameters"];
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap())
        .collect();
    assert!(names.contains(&"shardSelector"), "{names:?}");
    let item =
        &doc["paths"]["/api/v1/namespaces/{namespace}/configmaps/{name}"]["get"]["parameters"];
    assert!(!item.to_string().contains("shardSelector"));
}

/// A range holds its start and not its end: an object whose uid hashes exactly to a range's
/// start is listed, one exactly at its end is not (in a list and in a watch).
#[tokio::test]
async fn a_hash_at_a_range_start_is_selected_and_at_its_end_not() {
    let (_s, c) = server(true).await;
    let all = configmaps(&c, "default", 1).await;
    let h = fnv1a64(all[0].1.as_bytes());
    let selector = |start: u64, end: u128| {
        RangeSet::from_ranges(HashRange::new(start, end))
            .selector(ShardKey::Uid)
            .unwrap()
            .to_string()
    };
    let starting_at = selector(h, u128::from(h) + 1);
    let ending_at = selector(h.saturating_sub(1000), u128::from(h));
    for (sel, want) in [(&starting_at, 1), (&ending_at, 0)] {
        let r = get(&c, &format!("{CMS}?shardSelector={}", enc(sel))).await;
        assert_eq!(r.code, 200, "{}", r.body);
        assert_eq!(r.body["items"].as_array().unwrap().len(), want, "{sel}");
        let (ev, _) = watch(
            &c,
            &format!(
                "{CMS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&shardSelector={}",
                enc(sel)
            ),
            want + 1,
            Duration::from_secs(2),
        )
        .await;
        let types: Vec<&Value> = ev.iter().map(|e| &e["type"]).collect();
        let mut expected = vec!["ADDED"; want];
        expected.push("BOOKMARK");
        assert_eq!(types, expected, "watch with {sel}");
    }
}

#[tokio::test]
async fn deletecollection_deletes_only_the_selected_hashes() {
    let (_s, c) = server(true).await;
    let all = configmaps(&c, "default", 30).await;
    let (lower, upper): (Vec<_>, Vec<_>) = all.iter().partition(|(_, uid)| lower_half(uid));
    assert!(
        !lower.is_empty() && !upper.is_empty(),
        "both halves hold objects"
    );
    let r = delete(&c, &format!("{CMS}?shardSelector={}", enc(LOWER_HALF))).await;
    assert_eq!(r.code, 200, "{}", r.body);
    let names = |v: &[&(String, String)]| v.iter().map(|(n, _)| n.clone()).collect::<BTreeSet<_>>();
    assert_eq!(r.body["metadata"]["shardInfo"]["selector"], LOWER_HALF);
    let left = get(&c, CMS).await;
    assert_eq!(
        names_of(left.body["items"].as_array().unwrap()),
        names(&upper)
    );
    // A malformed selector deletes nothing.
    let r = delete(&c, &format!("{CMS}?shardSelector={}", enc("shardRange(x"))).await;
    assert_eq!(r.code, 400, "{}", r.body);
    assert_eq!(
        get(&c, CMS).await.body["items"].as_array().unwrap().len(),
        upper.len()
    );
}
