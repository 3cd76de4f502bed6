//! The generated type used through `kube::Api` against the in-memory API server: proves the
//! generated trait impls make it a `kube::Resource` that works with the real client end to end.

use buildrs_example::example::v1::Widget;
use buildrs_example::example::v1::widget::{WidgetSpec, WidgetSpecColor, WidgetStatus};
use futures::{StreamExt, TryStreamExt};
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube_fake_apiserver::FakeApiServer;

async fn server_with_widget_crd() -> FakeApiServer {
    let server = FakeApiServer::start().await.expect("server starts");
    let crd: serde_json::Value =
        serde_saphyr::from_str(include_str!("../crds/widget.yaml")).expect("CRD parses");
    server.register_crd(crd).expect("CRD registers");
    server
}

fn widget(name: &str, size: i32) -> Widget {
    let mut w = Widget {
        spec: Some(WidgetSpec {
            size,
            color: Some(WidgetSpecColor::Green),
            ..WidgetSpec::default()
        }),
        ..Widget::default()
    };
    w.metadata.name = Some(name.to_owned());
    w
}

#[tokio::test]
async fn create_get_list_patch_status_and_delete_through_kube_api() {
    let server = server_with_widget_crd().await;
    let api: Api<Widget> = Api::namespaced(server.client(), "default");

    let created = api
        .create(&PostParams::default(), &widget("a", 2))
        .await
        .unwrap();
    assert!(created.metadata.uid.is_some(), "server filled the uid");
    assert_eq!(created.metadata.generation, Some(1));
    api.create(&PostParams::default(), &widget("b", 3))
        .await
        .unwrap();

    let got = api.get("a").await.unwrap();
    assert_eq!(got.spec.as_ref().unwrap().size, 2);
    assert_eq!(
        got.spec.as_ref().unwrap().color,
        Some(WidgetSpecColor::Green)
    );

    let names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|w| w.metadata.name)
        .collect();
    assert_eq!(names, ["a", "b"]);

    // Schema validation on the server: size has minimum 1.
    let err = api
        .create(&PostParams::default(), &widget("bad", 0))
        .await
        .unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 422),
        "{err:?}"
    );

    // Status subresource: written through /status, the spec write ignores it.
    let mut with_status = got.clone();
    with_status.status = Some(WidgetStatus {
        ready: Some(true),
        message: Some(None),
    });
    let replaced = api
        .replace_status("a", &PostParams::default(), &with_status)
        .await
        .unwrap();
    assert_eq!(replaced.status.as_ref().unwrap().ready, Some(true));
    assert_eq!(
        replaced.metadata.generation,
        Some(1),
        "status writes don't bump generation"
    );

    let patched = api
        .patch(
            "a",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"spec": {"size": 5}})),
        )
        .await
        .unwrap();
    assert_eq!(patched.spec.as_ref().unwrap().size, 5);
    assert_eq!(patched.metadata.generation, Some(2));
    assert_eq!(patched.status.as_ref().unwrap().ready, Some(true));

    api.delete("a", &Default::default()).await.unwrap();
    let err = api.get("a").await.unwrap_err();
    assert!(
        matches!(err, kube::Error::Api(ref s) if s.code == 404),
        "{err:?}"
    );
    server.shutdown().await;
}

#[tokio::test]
async fn watch_delivers_typed_events() {
    let server = server_with_widget_crd().await;
    let api: Api<Widget> = Api::namespaced(server.client(), "default");
    let list = api.list(&ListParams::default()).await.unwrap();
    let rv = list.metadata.resource_version.unwrap();

    let stream = api
        .watch(&WatchParams::default().timeout(10), &rv)
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &widget("w", 1))
        .await
        .unwrap();
    api.delete("w", &Default::default()).await.unwrap();

    let events: Vec<WatchEvent<Widget>> = stream.take(2).try_collect().await.unwrap();
    match &events[..] {
        [WatchEvent::Added(a), WatchEvent::Deleted(d)] => {
            assert_eq!(a.metadata.name.as_deref(), Some("w"));
            assert_eq!(a.spec.as_ref().unwrap().size, 1);
            assert_eq!(d.metadata.name.as_deref(), Some("w"));
        }
        other => panic!("unexpected events: {other:?}"),
    }
    server.shutdown().await;
}
