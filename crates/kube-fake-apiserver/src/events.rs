//! Events: one store served through two APIs, as kube-apiserver serves them. Core `v1` Events
//! and `events.k8s.io/v1` Events are the same objects (etcd's `/registry/events`, stored as
//! core `v1`); each API converts to and from its own shape (Kubernetes'
//! `pkg/apis/events/v1/conversion.go`), so what an `events.k8s.io/v1` recorder writes is what
//! `kubectl get events` lists, and the other way round.
//!
//! | core `v1` | `events.k8s.io/v1` |
//! |---|---|
//! | `involvedObject` | `regarding` |
//! | `message` | `note` |
//! | `reportingComponent` | `reportingController` |
//! | `source` | `deprecatedSource` |
//! | `firstTimestamp` / `lastTimestamp` | `deprecatedFirstTimestamp` / `deprecatedLastTimestamp` |
//! | `count` | `deprecatedCount` |
//!
//! The other fields (`eventTime`, `series`, `action`, `reason`, `related`, `type`,
//! `reportingInstance`, metadata) have the same names in both. Objects are served as Go
//! serializes the typed object: fields without `omitempty`, and structs (which `omitempty`
//! never drops), are present even when empty (`"eventTime": null`, `"source": {}`).

use serde_json::{Map, Value, json};

use crate::registry::EVENTS_GROUP;
use crate::registry::Resource;
use crate::util::meta_str;

/// Core name -> `events.k8s.io/v1` name, for the fields the two shapes name differently.
const RENAMED: [(&str, &str); 8] = [
    ("involvedObject", "regarding"),
    ("message", "note"),
    ("reportingComponent", "reportingController"),
    ("source", "deprecatedSource"),
    ("firstTimestamp", "deprecatedFirstTimestamp"),
    ("lastTimestamp", "deprecatedLastTimestamp"),
    ("count", "deprecatedCount"),
    // Same name; listed so both directions keep it in place.
    ("reportingInstance", "reportingInstance"),
];

/// Whether `res` is one of the two Event resources.
pub fn is_event(res: &Resource) -> bool {
    res.plural == "events" && (res.group.is_empty() || res.group == EVENTS_GROUP)
}

/// A stored Event (core shape) as `res` serves it; any other object unchanged. An object
/// already in `res`'s shape (its `apiVersion` says so) is only normalised.
pub fn to_served(res: &Resource, obj: &mut Value) {
    if !is_event(res) {
        return;
    }
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    if res.group == EVENTS_GROUP {
        if m.get("apiVersion").and_then(Value::as_str) == Some("v1") {
            rename(m, |(core, new)| (core, new));
            m.insert("apiVersion".into(), json!("events.k8s.io/v1"));
        }
        present(
            m,
            &[
                ("eventTime", Value::Null),
                ("regarding", json!({})),
                ("deprecatedSource", json!({})),
                ("deprecatedFirstTimestamp", Value::Null),
                ("deprecatedLastTimestamp", Value::Null),
            ],
        );
    } else {
        present(
            m,
            &[
                ("involvedObject", json!({})),
                ("source", json!({})),
                ("firstTimestamp", Value::Null),
                ("lastTimestamp", Value::Null),
                ("eventTime", Value::Null),
                ("reportingComponent", json!("")),
                ("reportingInstance", json!("")),
            ],
        );
    }
}

/// An Event written through `res` in the shape it is stored in (core `v1`, `apiVersion: v1`);
/// any other object unchanged.
pub fn to_storage(res: &Resource, obj: &mut Value) {
    if !is_event(res) || res.group != EVENTS_GROUP {
        return;
    }
    let Some(m) = obj.as_object_mut() else {
        return;
    };
    if m.get("apiVersion").and_then(Value::as_str) != Some("v1") {
        rename(m, |(core, new)| (new, core));
        m.insert("apiVersion".into(), json!("v1"));
    }
}

/// Moves every renamed field from its `from` name to its `to` name (`dir` picks the direction).
fn rename(
    m: &mut Map<String, Value>,
    dir: impl Fn((&'static str, &'static str)) -> (&'static str, &'static str),
) {
    let mut moved = Vec::new();
    for pair in RENAMED {
        let (from, to) = dir(pair);
        if from != to
            && let Some(v) = m.remove(from)
        {
            moved.push((to, v));
        }
    }
    for (to, v) in moved {
        m.insert(to.into(), v);
    }
}

/// Fields Go always serializes, with their zero value when the object lacks them.
fn present(m: &mut Map<String, Value>, fields: &[(&str, Value)]) {
    for (k, zero) in fields {
        if !m.contains_key(*k) {
            m.insert((*k).into(), zero.clone());
        }
    }
}

/// The Event printer's columns (kube-apiserver's `eventColumnDefinitions`): no leading name
/// column; `Subobject`, `Source`, `First Seen`, `Count` and `Name` only with `-o wide`.
fn columns() -> Vec<Value> {
    let col = |name: &str, format: &str, priority: i32, description: &str| json!({"name": name, "type": "string", "format": format, "description": description, "priority": priority});
    vec![
        col(
            "Last Seen",
            "",
            0,
            "The time at which the most recent occurrence of this event was recorded.",
        ),
        col(
            "Type",
            "",
            0,
            "Type of this event (Normal, Warning), new types could be added in the future",
        ),
        col(
            "Reason",
            "",
            0,
            "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
        ),
        col("Object", "", 0, "The object that this event is about."),
        col(
            "Subobject",
            "",
            1,
            "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.",
        ),
        col(
            "Source",
            "",
            1,
            "The component reporting this event. Should be a short machine understandable string.",
        ),
        col(
            "Message",
            "",
            0,
            "A human-readable description of the status of this operation.",
        ),
        col(
            "First Seen",
            "",
            1,
            "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        ),
        col(
            "Count",
            "",
            1,
            "The number of times this event has occurred.",
        ),
        col("Name", "name", 1, crate::table::NAME_DESCRIPTION),
    ]
}

/// The Event table both APIs serve (kube-apiserver's `printEvent`, wide cells), for objects in
/// either shape.
pub fn table(objects: &[Value], include_object: &str, list_meta: Value) -> Value {
    table_at(objects, include_object, list_meta, jiff::Timestamp::now())
}

fn table_at(
    objects: &[Value],
    include_object: &str,
    list_meta: Value,
    now: jiff::Timestamp,
) -> Value {
    let rows = objects
        .iter()
        .map(|obj| crate::table::row(cells(obj, now), obj, include_object))
        .collect();
    crate::table::table(list_meta, columns(), rows)
}

/// One row's cells, computed on the core shape as the server's printer does.
fn cells(obj: &Value, now: jiff::Timestamp) -> Vec<Value> {
    let mut core = obj.clone();
    if let Some(m) = core.as_object_mut()
        && m.get("apiVersion").and_then(Value::as_str) != Some("v1")
    {
        rename(m, |(core, new)| (new, core));
    }
    let text = |p: &str| {
        core.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let since = |p: &str| -> Option<String> {
        let t = core
            .pointer(p)
            .and_then(Value::as_str)
            .filter(|t| !t.is_empty())?;
        Some(match t.parse::<jiff::Timestamp>() {
            Ok(t) => crate::table::human_duration(now.as_second() - t.as_second()),
            Err(_) => "<invalid>".into(),
        })
    };
    let unknown = || "<unknown>".to_string();
    let first = since("/firstTimestamp")
        .or_else(|| since("/eventTime"))
        .unwrap_or_else(unknown);
    let mut last = since("/lastTimestamp").unwrap_or_else(|| first.clone());
    let mut count = core.get("count").and_then(Value::as_i64).unwrap_or(0);
    if core.get("series").is_some_and(Value::is_object) {
        last = since("/series/lastObservedTime").unwrap_or_else(unknown);
        count = core
            .pointer("/series/count")
            .and_then(Value::as_i64)
            .unwrap_or(0);
    } else if count == 0 {
        // Singleton events have no count in the newer API.
        count = 1;
    }
    let kind = text("/involvedObject/kind").to_lowercase();
    let name = text("/involvedObject/name");
    let target = if name.is_empty() {
        kind
    } else {
        format!("{kind}/{name}")
    };
    let first_non_empty = |a: String, b: String| if a.is_empty() { b } else { a };
    let component = first_non_empty(text("/source/component"), text("/reportingComponent"));
    let instance = first_non_empty(text("/source/host"), text("/reportingInstance"));
    let source = if instance.is_empty() {
        component
    } else {
        format!("{component}, {instance}")
    };
    vec![
        json!(last),
        json!(text("/type")),
        json!(text("/reason")),
        json!(target),
        json!(text("/involvedObject/fieldPath")),
        json!(source),
        json!(text("/message").trim()),
        json!(first),
        json!(count),
        json!(meta_str(&core, "name")),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::registry::builtins;

    fn resource(group: &str) -> Resource {
        builtins()
            .into_iter()
            .find(|r| r.group == group && r.plural == "events")
            .expect("an events resource")
    }

    fn recorded() -> Value {
        json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "foo.1", "namespace": "default"},
            "eventTime": "2026-01-02T03:04:05.000000Z",
            "reportingController": "sample-controller",
            "reportingInstance": "sample-controller-0",
            "action": "Sync",
            "reason": "Synced",
            "regarding": {"kind": "Foo", "name": "example", "namespace": "default"},
            "note": "Foo synced successfully",
            "type": "Normal",
            "series": {"count": 3, "lastObservedTime": "2026-01-02T03:05:05.000000Z"},
        })
    }

    #[test]
    fn an_events_k8s_io_event_is_stored_and_served_as_core_v1() {
        let (core, new) = (resource(""), resource(EVENTS_GROUP));
        assert_eq!(new.storage(), ("", "events"));
        assert_eq!(core.storage(), ("", "events"));
        let mut stored = recorded();
        to_storage(&new, &mut stored);
        let mut as_core = stored.clone();
        to_served(&core, &mut as_core);
        assert_eq!(
            as_core,
            json!({
                "apiVersion": "v1",
                "kind": "Event",
                "metadata": {"name": "foo.1", "namespace": "default"},
                "eventTime": "2026-01-02T03:04:05.000000Z",
                "reportingComponent": "sample-controller",
                "reportingInstance": "sample-controller-0",
                "action": "Sync",
                "reason": "Synced",
                "involvedObject": {"kind": "Foo", "name": "example", "namespace": "default"},
                "message": "Foo synced successfully",
                "type": "Normal",
                "series": {"count": 3, "lastObservedTime": "2026-01-02T03:05:05.000000Z"},
                "source": {},
                "firstTimestamp": null,
                "lastTimestamp": null,
            })
        );
        // And back: the events.k8s.io view of the stored object is what was written, with the
        // deprecated fields Go always prints.
        let mut back = stored;
        to_served(&new, &mut back);
        let mut expected = recorded();
        expected["deprecatedSource"] = json!({});
        expected["deprecatedFirstTimestamp"] = Value::Null;
        expected["deprecatedLastTimestamp"] = Value::Null;
        assert_eq!(back, expected);
    }

    #[test]
    fn a_core_event_reads_through_events_k8s_io() {
        let new = resource(EVENTS_GROUP);
        let mut obj = json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "pod.1", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "web-0", "fieldPath": "spec.containers{web}"},
            "reason": "Pulled", "message": "Pulled the image", "type": "Normal",
            "source": {"component": "kubelet", "host": "node-1"},
            "firstTimestamp": "2026-01-02T03:04:05Z", "lastTimestamp": "2026-01-02T03:04:06Z",
            "count": 2,
        });
        to_served(&new, &mut obj);
        assert_eq!(obj["regarding"]["name"], "web-0");
        assert_eq!(obj["note"], "Pulled the image");
        assert_eq!(obj["deprecatedSource"]["host"], "node-1");
        assert_eq!(obj["deprecatedCount"], 2);
        assert_eq!(obj["deprecatedLastTimestamp"], "2026-01-02T03:04:06Z");
        assert_eq!(obj["eventTime"], Value::Null);
        assert!(obj.get("involvedObject").is_none() && obj.get("message").is_none());
    }

    #[test]
    fn the_table_is_the_event_printers() {
        let now: jiff::Timestamp = "2026-01-02T03:06:05Z".parse().unwrap();
        let t = table_at(&[recorded()], "None", json!({}), now);
        let names: Vec<&str> = t["columnDefinitions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(
            names,
            [
                "Last Seen",
                "Type",
                "Reason",
                "Object",
                "Subobject",
                "Source",
                "Message",
                "First Seen",
                "Count",
                "Name"
            ]
        );
        assert_eq!(
            t["rows"][0]["cells"],
            json!([
                "60s",
                "Normal",
                "Synced",
                "foo/example",
                "",
                "sample-controller, sample-controller-0",
                "Foo synced successfully",
                "2m",
                3,
                "foo.1"
            ])
        );
    }
}
