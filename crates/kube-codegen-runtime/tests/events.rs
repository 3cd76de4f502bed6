//! The event recorder against the in-memory API server: repeats aggregate into one
//! `events.k8s.io/v1` Event whose series counts them, types and references are as sent, and a
//! series whose Event was deleted starts a new one.

use k8s_openapi::api::core::v1::{ConfigMap, Namespace, ObjectReference};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::Resource;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube_codegen_runtime::events::{Event, EventType, Recorder, Reporter};
use kube_fake_apiserver::FakeApiServer;

use crate::support;
use support::{client, cm};

const EVENTS_PATH: &str = "/apis/events.k8s.io/v1/namespaces/default/events";

fn reporter() -> Reporter {
    Reporter {
        controller: "sample-controller".into(),
        instance: Some("sample-controller-0".into()),
    }
}

fn warning(note: &str) -> Event {
    Event {
        type_: EventType::Warning,
        reason: "ErrResourceExists".into(),
        note: Some(note.into()),
        action: "Sync".into(),
        secondary: None,
    }
}

async fn events(server: &FakeApiServer, ns: &str) -> Vec<K8sEvent> {
    let api: Api<K8sEvent> = Api::namespaced(client(server), ns);
    api.list(&ListParams::default()).await.unwrap().items
}

/// The object `object_ref` names, as stored (uid and resourceVersion included).
async fn stored_cm(server: &FakeApiServer, name: &str) -> ConfigMap {
    let api: Api<ConfigMap> = Api::namespaced(client(server), "default");
    api.create(&PostParams::default(), &cm(name, "v"))
        .await
        .unwrap()
}

#[tokio::test]
async fn fifty_repeats_make_one_event_with_a_series_of_fifty() {
    let server = FakeApiServer::start().await.unwrap();
    let foo = stored_cm(&server, "foo").await;
    let regarding = foo.object_ref(&());
    let recorder = Recorder::new(client(&server), reporter());
    server.faults().clear_requests();

    for i in 0..50 {
        // The note is not part of the key: a repeat with another message is the same series.
        let note = format!("Resource \"foo\" already exists (attempt {i})");
        recorder.publish(&warning(&note), &regarding).await.unwrap();
    }
    recorder
        .publish_for(
            &Event {
                type_: EventType::Normal,
                reason: "Synced".into(),
                note: Some("Foo synced successfully".into()),
                action: "Sync".into(),
                secondary: None,
            },
            &foo,
        )
        .await
        .unwrap();

    let mut list = events(&server, "default").await;
    list.sort_by_key(|e| e.reason.clone());
    assert_eq!(
        list.len(),
        2,
        "one Event per series, not per publish: {list:#?}"
    );
    let (warn, normal) = (&list[0], &list[1]);

    assert_eq!(warn.type_.as_deref(), Some("Warning"));
    assert_eq!(warn.reason.as_deref(), Some("ErrResourceExists"));
    assert_eq!(warn.action.as_deref(), Some("Sync"));
    assert_eq!(
        warn.note.as_deref(),
        Some("Resource \"foo\" already exists (attempt 0)"),
        "the series keeps its first message, as client-go's does"
    );
    let series = warn.series.as_ref().expect("repeats make a series");
    assert_eq!(series.count, 50);
    assert!(series.last_observed_time >= *warn.event_time.as_ref().unwrap());
    assert_eq!(warn.regarding.as_ref(), Some(&regarding));
    assert!(
        regarding.uid.is_some(),
        "the reference names the exact object"
    );
    assert_eq!(warn.related, None);
    assert_eq!(
        warn.reporting_controller.as_deref(),
        Some("sample-controller")
    );
    assert_eq!(
        warn.reporting_instance.as_deref(),
        Some("sample-controller-0")
    );

    assert_eq!(normal.type_.as_deref(), Some("Normal"));
    assert_eq!(normal.note.as_deref(), Some("Foo synced successfully"));
    assert_eq!(normal.series, None, "a single occurrence has no series");
    assert_eq!(normal.regarding.as_ref(), Some(&regarding));

    // What it cost the server: one create per series, one patch per repeat (kube's recorder
    // writes every repeat; client-go would batch them).
    let requests = server.requests();
    let count = |verb: &str| {
        requests
            .iter()
            .filter(|r| r.verb == verb && r.path.starts_with(EVENTS_PATH))
            .count()
    };
    assert_eq!(count("create"), 2);
    assert_eq!(count("patch"), 49);
}

#[tokio::test]
async fn a_series_whose_event_was_deleted_starts_a_new_event() {
    let server = FakeApiServer::start().await.unwrap();
    let regarding = stored_cm(&server, "foo").await.object_ref(&());
    let recorder = Recorder::new(client(&server), reporter());
    recorder
        .publish(&warning("first"), &regarding)
        .await
        .unwrap();
    recorder
        .publish(&warning("second"), &regarding)
        .await
        .unwrap();
    let [first] = events(&server, "default").await.try_into().unwrap();
    let api: Api<K8sEvent> = Api::namespaced(client(&server), "default");
    api.delete(
        first.metadata.name.as_deref().unwrap(),
        &DeleteParams::default(),
    )
    .await
    .unwrap();

    // kube's recorder alone would keep patching the deleted Event and fail with 404.
    recorder
        .publish(&warning("third"), &regarding)
        .await
        .expect("a new Event instead of a 404");
    recorder
        .publish(&warning("fourth"), &regarding)
        .await
        .unwrap();
    let [again] = events(&server, "default").await.try_into().unwrap();
    assert_ne!(again.metadata.name, first.metadata.name);
    assert_eq!(again.note.as_deref(), Some("third"));
    assert_eq!(again.series.map(|s| s.count), Some(2));
}

#[tokio::test]
async fn events_about_cluster_scoped_objects_go_to_default_and_related_is_kept() {
    let server = FakeApiServer::start().await.unwrap();
    let namespaces: Api<Namespace> = Api::all(client(&server));
    let ns = namespaces.get("default").await.unwrap();
    let related: ObjectReference = stored_cm(&server, "bar").await.object_ref(&());
    let recorder = Recorder::new(client(&server), reporter());
    let event = Event {
        secondary: Some(related.clone()),
        ..warning("namespace is busy")
    };
    recorder.publish_for(&event, &ns).await.unwrap();
    let [ev] = events(&server, "default").await.try_into().unwrap();
    assert_eq!(ev.regarding, Some(ns.object_ref(&())));
    assert_eq!(ev.related, Some(related));
    assert_eq!(ev.metadata.namespace.as_deref(), Some("default"));
}

#[tokio::test]
async fn a_rejected_event_is_an_error_not_a_panic() {
    let server = FakeApiServer::start().await.unwrap();
    let regarding = stored_cm(&server, "foo").await.object_ref(&());
    let recorder = Recorder::new(client(&server), reporter());
    server
        .faults()
        .fail_next_matching(1, 500, "/apis/events.k8s.io/");
    let err = recorder
        .publish(&warning("x"), &regarding)
        .await
        .expect_err("the server refused it");
    assert!(
        matches!(&err, kube::Error::Api(s) if s.code == 500),
        "{err:?}"
    );
    assert!(events(&server, "default").await.is_empty());
}
