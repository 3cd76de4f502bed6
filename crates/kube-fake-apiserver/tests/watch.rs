//! Watch semantics: replay, 410, bookmarks, streaming lists, timeouts, selectors, Table output.
use crate::common;

use std::time::Duration;

use common::*;
use kube_fake_apiserver::FakeApiServer;
use serde_json::json;

const SHORT: Duration = Duration::from_millis(300);

#[tokio::test]
async fn replays_history_from_resource_version() {
    let (_s, c) = with_widgets().await;
    let a = post(&c, WIDGETS, widget("a", 1)).await.body;
    let rv = rv_of(&a);
    post(&c, WIDGETS, widget("b", 1)).await;
    patch_replicas(&c, &format!("{WIDGETS}/a"), 2).await;
    delete(&c, &format!("{WIDGETS}/b")).await;
    let (ev, _) = watch(
        &c,
        &format!("{WIDGETS}?watch=true&resourceVersion={rv}"),
        3,
        SHORT,
    )
    .await;
    assert_eq!(types(&ev), ["ADDED", "MODIFIED", "DELETED"]);
    assert_eq!(names(&ev), ["b", "a", "b"]);
    assert_eq!(ev[1]["object"]["spec"]["replicas"], 2);
    assert_eq!(ev[1]["object"]["apiVersion"], "example.com/v1");
    // Resource versions strictly increase.
    let rvs: Vec<u64> = ev
        .iter()
        .map(|e| rv_of(&e["object"]).parse().unwrap())
        .collect();
    assert!(rvs.windows(2).all(|w| w[0] < w[1]), "{rvs:?}");
}

#[tokio::test]
async fn live_events_reach_open_watch() {
    let (_s, c) = with_widgets().await;
    let rv = rv_of(&get(&c, WIDGETS).await.body);
    let w = watch_in_background(
        &c,
        format!("{WIDGETS}?watch=1&resourceVersion={rv}"),
        2,
        Duration::from_secs(5),
    )
    .await;
    post(&c, WIDGETS, widget("live", 1)).await;
    // Another namespace and another resource must not show up.
    post(
        &c,
        "/apis/example.com/v1/namespaces/other/widgets",
        widget("elsewhere", 1),
    )
    .await;
    post(
        &c,
        "/api/v1/namespaces/default/configmaps",
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm"}}),
    )
    .await;
    delete(&c, &format!("{WIDGETS}/live")).await;
    let (ev, _) = w.await.unwrap();
    assert_eq!(types(&ev), ["ADDED", "DELETED"]);
    assert_eq!(names(&ev), ["live", "live"]);
}

#[tokio::test]
async fn too_old_resource_version_gets_410_error_event() {
    let s = FakeApiServer::builder()
        .history_limit(2)
        .start()
        .await
        .unwrap();
    s.register_crd(widget_crd()).unwrap();
    let c = s.in_process_client();
    let first = rv_of(&post(&c, WIDGETS, widget("a", 1)).await.body);
    for n in ["b", "c", "d"] {
        post(&c, WIDGETS, widget(n, 1)).await;
    }
    let (ev, ended) = watch(
        &c,
        &format!("{WIDGETS}?watch=true&resourceVersion={first}"),
        5,
        SHORT,
    )
    .await;
    assert!(ended, "the stream ends after the ERROR event");
    assert_eq!(types(&ev), ["ERROR"]);
    let st = &ev[0]["object"];
    assert_eq!(st["kind"], "Status");
    assert_eq!(st["code"], 410);
    assert_eq!(st["reason"], "Expired");
    assert!(
        st["message"]
            .as_str()
            .unwrap()
            .starts_with(&format!("too old resource version: {first} (")),
        "{st}"
    );
    // A list at that resourceVersion is gone too.
    let r = get(
        &c,
        &format!("{WIDGETS}?resourceVersion={first}&resourceVersionMatch=Exact"),
    )
    .await;
    assert_eq!(r.code, 410);
}

#[tokio::test]
async fn watch_without_resource_version_is_a_streaming_list() {
    let (_s, c) = with_widgets().await;
    post(&c, WIDGETS, widget("a", 1)).await;
    post(&c, WIDGETS, widget("b", 1)).await;
    let (ev, _) = watch(
        &c,
        &format!("{WIDGETS}?watch=true&allowWatchBookmarks=true"),
        3,
        SHORT,
    )
    .await;
    assert_eq!(types(&ev), ["ADDED", "ADDED", "BOOKMARK"]);
    assert_eq!(
        ev[2]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    assert_eq!(ev[2]["object"]["kind"], "Widget");
    let list_rv = get(&c, WIDGETS).await.body["metadata"]["resourceVersion"].clone();
    assert_eq!(ev[2]["object"]["metadata"]["resourceVersion"], list_rv);
    // rv=0 without bookmarks: synthetic ADDED, no bookmark.
    let (ev, _) = watch(
        &c,
        &format!("{WIDGETS}?watch=true&resourceVersion=0"),
        3,
        SHORT,
    )
    .await;
    assert_eq!(types(&ev), ["ADDED", "ADDED"]);
}

#[tokio::test]
async fn send_initial_events_with_not_older_than() {
    let (_s, c) = with_widgets().await;
    let rv = rv_of(&post(&c, WIDGETS, widget("a", 1)).await.body);
    let path = format!(
        "{WIDGETS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&resourceVersion={rv}"
    );
    let (ev, _) = watch(&c, &path, 2, SHORT).await;
    assert_eq!(types(&ev), ["ADDED", "BOOKMARK"]);
    assert_eq!(
        ev[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"],
        "true"
    );
    // client-go's watch-list starts with an empty resourceVersion.
    let (ev, _) = watch(
        &c,
        &format!("{WIDGETS}?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"),
        2,
        SHORT,
    )
    .await;
    assert_eq!(types(&ev), ["ADDED", "BOOKMARK"]);
    let r = get(
        &c,
        &format!("{WIDGETS}?watch=true&sendInitialEvents=true&allowWatchBookmarks=true"),
    )
    .await;
    assert_eq!(r.code, 422, "{}", r.body);
    assert_eq!(r.body["reason"], "Invalid");
}

#[tokio::test(start_paused = true)]
async fn timeout_ends_the_stream_after_a_bookmark() {
    let (_s, c) = with_widgets().await;
    let rv = rv_of(&get(&c, WIDGETS).await.body);
    let start = tokio::time::Instant::now();
    let (ev, ended) = watch(
        &c,
        &format!(
            "{WIDGETS}?watch=true&resourceVersion={rv}&allowWatchBookmarks=true&timeoutSeconds=5"
        ),
        10,
        Duration::from_secs(60),
    )
    .await;
    assert!(ended);
    assert_eq!(types(&ev), ["BOOKMARK"]);
    assert!(ev[0]["object"]["metadata"].get("annotations").is_none());
    // Virtual time: the stream lasted the requested timeout.
    assert!(start.elapsed() >= Duration::from_secs(5));
    let (ev, ended) = watch(
        &c,
        &format!("{WIDGETS}?watch=true&resourceVersion={rv}&timeoutSeconds=1"),
        10,
        Duration::from_secs(60),
    )
    .await;
    assert!(ended && ev.is_empty());
}

#[tokio::test]
async fn selectors_apply_to_watches() {
    let (_s, c) = with_widgets().await;
    let mut w = widget("a", 1);
    w["metadata"]["labels"] = json!({"tier": "gold"});
    let rv = rv_of(&post(&c, WIDGETS, w).await.body);
    let mut other = widget("b", 1);
    other["metadata"]["labels"] = json!({"tier": "bronze"});
    post(&c, WIDGETS, other).await;
    // a stops matching -> DELETED; b starts matching -> ADDED.
    merge_patch(
        &c,
        &format!("{WIDGETS}/a"),
        json!({"metadata": {"labels": {"tier": "silver"}}}),
    )
    .await;
    merge_patch(
        &c,
        &format!("{WIDGETS}/b"),
        json!({"metadata": {"labels": {"tier": "gold"}}}),
    )
    .await;
    patch_replicas(&c, &format!("{WIDGETS}/b"), 3).await;
    let (ev, _) = watch(
        &c,
        &format!("{WIDGETS}?watch=true&labelSelector=tier%3Dgold&resourceVersion={rv}"),
        3,
        SHORT,
    )
    .await;
    assert_eq!(types(&ev), ["DELETED", "ADDED", "MODIFIED"]);
    assert_eq!(names(&ev), ["a", "b", "b"]);
    assert_eq!(
        ev[0]["object"]["metadata"]["labels"]["tier"], "gold",
        "DELETED carries the last matching state"
    );
    let (ev, _) = watch(
        &c,
        &format!("{WIDGETS}?watch=true&fieldSelector=metadata.name%3Db&resourceVersion={rv}"),
        5,
        SHORT,
    )
    .await;
    assert!(names(&ev).iter().all(|n| n == "b"));
    assert_eq!(ev.len(), 3);
}

#[tokio::test]
async fn table_watch_for_kubectl() {
    let (_s, c) = with_widgets().await;
    post(&c, WIDGETS, widget("t", 1)).await;
    let req = http::Request::builder()
        .uri(format!("{WIDGETS}?watch=true&resourceVersion=0"))
        .header("accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
        .body(kube::client::Body::empty())
        .unwrap();
    let resp = c.send(req).await.unwrap();
    use http_body_util::BodyExt;
    let mut body = resp.into_body();
    let frame = tokio::time::timeout(SHORT, body.frame())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let ev: serde_json::Value = serde_json::from_slice(frame.data_ref().unwrap()).unwrap();
    assert_eq!(ev["type"], "ADDED");
    assert_eq!(ev["object"]["kind"], "Table");
}

#[tokio::test]
async fn watch_over_real_http_socket() {
    let s = FakeApiServer::start().await.unwrap();
    s.register_crd(widget_crd()).unwrap();
    let c = s.client();
    post(&c, WIDGETS, widget("a", 1)).await;
    let (ev, _) = watch(
        &c,
        &format!("{WIDGETS}?watch=true&allowWatchBookmarks=true"),
        2,
        Duration::from_secs(2),
    )
    .await;
    assert_eq!(types(&ev), ["ADDED", "BOOKMARK"]);
    s.shutdown().await;
}

#[tokio::test]
async fn deleting_the_crd_deletes_objects_then_ends_watches() {
    let (_s, c) = with_widgets().await;
    let rv = rv_of(&post(&c, WIDGETS, widget("a", 1)).await.body);
    let w = watch_in_background(
        &c,
        format!("{WIDGETS}?watch=true&resourceVersion={rv}"),
        5,
        Duration::from_secs(5),
    )
    .await;
    delete(
        &c,
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com",
    )
    .await;
    let (ev, ended) = w.await.unwrap();
    assert!(ended);
    assert_eq!(types(&ev), ["DELETED"]);
}

#[tokio::test]
async fn watchers_of_different_versions_each_get_their_apiversion() {
    let (_s, c) = with_widgets().await;
    let rv = rv_of(&get(&c, WIDGETS).await.body);
    post(&c, WIDGETS, widget("a", 1)).await;
    for v in ["v1", "v2", "v1"] {
        let path = format!(
            "/apis/example.com/{v}/namespaces/default/widgets?watch=true&resourceVersion={rv}"
        );
        let (ev, _) = watch(&c, &path, 1, SHORT).await;
        assert_eq!(ev[0]["object"]["apiVersion"], format!("example.com/{v}"));
    }
}
