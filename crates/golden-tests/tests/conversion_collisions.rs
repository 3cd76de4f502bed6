//! The generated conversions of `testdata/crds/conversion-collisions.yaml`: names that could meet
//! across versions are told apart, and a struct reached at two paths has a hook pair per path.

use golden_tests::conversion_collisions::collide::conversion::{WidgetConversion, WidgetHooks};
use golden_tests::conversion_collisions::collide::{v1, v2};
use kube_codegen_runtime::conversion::{ConversionError, KindConversion};
use serde_json::{Value, json};

fn v1_widget() -> Value {
    json!({
        "apiVersion": "collide.example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "default"},
        "spec": {
            "size": "3",
            "items": [{"name": "a", "port": "80"}, {"name": "b", "port": "81"}],
            "other": {"name": "c", "port": "82"}
        }
    })
}

/// Parses the ports of both paths (`items[].port` and `other.port`, one struct type in v1).
struct Ports;

fn parse(port: &Option<String>) -> Result<Option<i64>, ConversionError> {
    port.as_deref()
        .map(|p| {
            p.parse()
                .map_err(|_| ConversionError::Refused(format!("port {p:?} is no number")))
        })
        .transpose()
}

impl WidgetHooks for Ports {
    fn v1_spec_items_port_to_hub(
        &self,
        from: &v1::Widget,
        to: &mut v2::Widget,
    ) -> Result<(), ConversionError> {
        let (Some(f), Some(t)) = (&from.spec, &mut to.spec) else {
            return Ok(());
        };
        for (fi, ti) in f.items.iter().flatten().zip(t.items.iter_mut().flatten()) {
            ti.port = parse(&fi.port)?;
        }
        Ok(())
    }
    fn v1_spec_items_port_from_hub(
        &self,
        from: &v2::Widget,
        to: &mut v1::Widget,
    ) -> Result<(), ConversionError> {
        let (Some(f), Some(t)) = (&from.spec, &mut to.spec) else {
            return Ok(());
        };
        for (fi, ti) in f.items.iter().flatten().zip(t.items.iter_mut().flatten()) {
            ti.port = fi.port.map(|p| p.to_string());
        }
        Ok(())
    }
    fn v1_spec_other_port_to_hub(
        &self,
        from: &v1::Widget,
        to: &mut v2::Widget,
    ) -> Result<(), ConversionError> {
        let port = from.spec.as_ref().and_then(|s| s.other.as_ref());
        if let (Some(p), Some(o)) = (port, to.spec.as_mut().and_then(|s| s.other.as_mut())) {
            o.port = parse(&p.port)?;
        }
        Ok(())
    }
    fn v1_spec_other_port_from_hub(
        &self,
        from: &v2::Widget,
        to: &mut v1::Widget,
    ) -> Result<(), ConversionError> {
        let port = from.spec.as_ref().and_then(|s| s.other.as_ref());
        if let (Some(p), Some(o)) = (port, to.spec.as_mut().and_then(|s| s.other.as_mut())) {
            o.port = p.port.map(|p| p.to_string());
        }
        Ok(())
    }
}

#[test]
fn each_path_of_a_shared_struct_has_its_hook() {
    let c = WidgetConversion::with_hooks(Ports);
    let hub = c.convert(v1_widget(), "v2").unwrap();
    assert_eq!(hub["spec"]["items"][0]["port"], 80, "{hub:#}");
    assert_eq!(hub["spec"]["items"][1]["port"], 81, "{hub:#}");
    assert_eq!(hub["spec"]["other"]["port"], 82, "{hub:#}");
    // `size` has no hook here: "3" is no integer, so it travels in the annotation.
    assert!(hub["spec"].get("size").is_none(), "{hub:#}");
    let back = c.convert(hub, "v1").unwrap();
    assert_eq!(back, v1_widget());
}

/// `v1-widget-spec` converts through its own functions, not v1's `WidgetSpec` ones.
#[test]
fn versions_whose_names_meet_convert_apart() {
    let c = WidgetConversion::with_hooks(Ports);
    assert_eq!(c.versions(), ["v2", "v1", "v1-widget-spec"]);
    let hub = c.convert(v1_widget(), "v2").unwrap();
    let other = c.convert(hub.clone(), "v1-widget-spec").unwrap();
    assert_eq!(other["apiVersion"], "collide.example.com/v1-widget-spec");
    assert_eq!(other["spec"].get("items"), None, "{other:#}");
    let again = c.convert(other, "v2").unwrap();
    assert_eq!(again["spec"]["items"], hub["spec"]["items"], "{again:#}");
    assert_eq!(c.convert(again, "v1").unwrap(), v1_widget());
    // The typed methods per version exist side by side.
    let typed: v1::Widget = serde_json::from_value(v1_widget()).unwrap();
    let h = c.v1_to_hub(&typed).unwrap();
    let w = c.v1_widget_spec_from_hub(&h).unwrap();
    assert_eq!(
        c.v1_widget_spec_to_hub(&w).unwrap().spec.unwrap().size,
        None
    );
}
