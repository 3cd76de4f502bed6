use buildrs_example::example::v1::Widget;
use buildrs_example::example::v1::widget::{WidgetSpec, WidgetSpecColor};
// The generated tree's own IntOrString (64-bit integers, as a server stores them).
use buildrs_example::IntOrString;
use serde_json::json;

#[test]
fn generated_type_round_trips() {
    let input = json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {"size": 3, "color": "purple", "port": "http", "labels": {"a": "b"}},
        "status": {"ready": true, "message": null}
    });
    let w: Widget = serde_json::from_value(input.clone()).unwrap();
    let spec = w.spec.as_ref().unwrap();
    assert_eq!(spec.size, 3);
    assert_eq!(spec.color, Some(WidgetSpecColor::Other("purple".into())));
    assert_eq!(spec.port, Some(IntOrString::String("http".into())));
    assert_eq!(w.status.as_ref().unwrap().message, Some(None));
    assert_eq!(serde_json::to_value(&w).unwrap(), input);
}

#[test]
fn generated_type_is_a_k8s_openapi_resource() {
    use k8s_openapi::{ListableResource, Metadata, Resource};
    assert_eq!(<Widget as Resource>::API_VERSION, "example.com/v1");
    assert_eq!(<Widget as Resource>::URL_PATH_SEGMENT, "widgets");
    assert_eq!(<Widget as ListableResource>::LIST_KIND, "WidgetList");
    assert_eq!(Widget::SHORT_NAMES, &["wd"]);
    const { assert!(Widget::STATUS_SUBRESOURCE) };
    let mut w = Widget {
        spec: Some(WidgetSpec {
            size: 1,
            color: Some(WidgetSpecColor::Red),
            ..WidgetSpec::default()
        }),
        ..Widget::default()
    };
    w.metadata_mut().name = Some("x".into());
    assert_eq!(
        serde_json::to_value(&w).unwrap(),
        json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "x"},
               "spec": {"size": 1, "color": "red"}})
    );
}
