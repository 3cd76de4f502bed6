//! `Table` output (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`) with printer columns,
//! built as apiextensions-apiserver's table convertor builds it for custom resources.
use crate::schema::jsonpath::JsonPath;
use crate::util::meta_str;
use serde_json::{Value, json};

/// One additionalPrinterColumn of a CRD version: the model shared with the generator.
pub use kube_codegen_crd::PrinterColumn;

/// ObjectMeta's `name` documentation, which the server uses for the `Name` column.
pub(crate) const NAME_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some \
resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended \
for creation idempotence and configuration definition. Cannot be updated. More info: \
https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// ObjectMeta's `creationTimestamp` documentation, used for the default `Age` column.
const CREATION_TIMESTAMP_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this \
object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not \
set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. \
More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// Whether `includeObject` has a value the server accepts (anything else is a 400
/// `unrecognized includeObject value: "<v>"`).
pub fn valid_include_object(v: &str) -> bool {
    matches!(v, "" | "None" | "Metadata" | "Object")
}

/// The default columns of a CRD version without `additionalPrinterColumns`: just `Age`.
pub fn default_columns() -> Vec<PrinterColumn> {
    vec![PrinterColumn {
        name: "Age".into(),
        type_: "date".into(),
        format: None,
        description: Some(CREATION_TIMESTAMP_DESCRIPTION.into()),
        priority: 0,
        json_path: ".metadata.creationTimestamp".into(),
    }]
}

/// Builds a `meta.k8s.io/v1` `Table` for `objects`. No columns means the default `Name` + `Age` columns.
/// `include_object` is the `includeObject` query parameter (`None`, `Metadata` (default), `Object`).
/// `list_meta` is copied into the table's `metadata` (resourceVersion, continue).
pub fn to_table(
    columns: &[PrinterColumn],
    objects: &[Value],
    include_object: &str,
    list_meta: Value,
) -> Value {
    to_table_at(
        columns,
        objects,
        include_object,
        list_meta,
        jiff::Timestamp::now(),
    )
}

/// [`to_table`] with an explicit "now" for the `date` cells (ages are computed by the server).
pub fn to_table_at(
    columns: &[PrinterColumn],
    objects: &[Value],
    include_object: &str,
    list_meta: Value,
    now: jiff::Timestamp,
) -> Value {
    let defaults;
    let columns = if columns.is_empty() {
        defaults = default_columns();
        &defaults[..]
    } else {
        columns
    };
    let mut definitions = vec![name_column()];
    let mut paths = Vec::with_capacity(columns.len());
    for c in columns {
        let description = match c.description.as_deref() {
            Some(d) if !d.is_empty() => d.to_string(),
            _ => format!(
                "Custom resource definition column (in JSONPath format): {}",
                c.json_path
            ),
        };
        definitions.push(column(
            &c.name,
            &c.type_,
            c.format.as_deref().unwrap_or_default(),
            &description,
            i32::try_from(c.priority).unwrap_or(i32::MAX),
        ));
        // A column whose path does not parse prints as <none> rather than failing the list.
        paths.push(JsonPath::parse(&c.json_path).ok());
    }
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| {
            let mut cells = vec![json!(meta_str(obj, "name"))];
            for (c, path) in columns.iter().zip(&paths) {
                let first = path.as_ref().and_then(|p| p.find(obj).into_iter().next());
                cells.push(match first {
                    None => Value::Null,
                    Some(v) => cell(&c.type_, v, now),
                });
            }
            row(cells, obj, include_object)
        })
        .collect();
    table(list_meta, definitions, rows)
}

/// The table of kinds served without printer columns by the generic registry (the
/// CustomResourceDefinition resource itself, for one): `Name` and `Created At`, the latter as the
/// raw RFC 3339 timestamp in UTC (`kubectl get crd` prints it as is), not as an age.
pub fn default_table(objects: &[Value], include_object: &str, list_meta: Value) -> Value {
    let definitions = vec![
        name_column(),
        column("Created At", "date", "", CREATION_TIMESTAMP_DESCRIPTION, 0),
    ];
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| {
            let name = meta_str(obj, "name");
            let created = crate::util::meta(obj, "creationTimestamp")
                .and_then(Value::as_str)
                .and_then(|t| t.parse::<jiff::Timestamp>().ok())
                .map(|t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string())
                // Go formats a zero time this way.
                .unwrap_or_else(|| "0001-01-01T00:00:00Z".to_string());
            row(vec![json!(name), json!(created)], obj, include_object)
        })
        .collect();
    table(list_meta, definitions, rows)
}

pub(crate) fn table(list_meta: Value, definitions: Vec<Value>, rows: Vec<Value>) -> Value {
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": list_meta,
        "columnDefinitions": definitions,
        "rows": rows,
    })
}

fn column(name: &str, type_: &str, format: &str, description: &str, priority: i32) -> Value {
    json!({"name": name, "type": type_, "format": format, "description": description, "priority": priority})
}

/// Every table starts with the object's name.
fn name_column() -> Value {
    column("Name", "string", "name", NAME_DESCRIPTION, 0)
}

pub(crate) fn row(cells: Vec<Value>, obj: &Value, include_object: &str) -> Value {
    json!({"cells": cells, "object": row_object(obj, include_object)})
}

/// `includeObject`: `Object` keeps the object, `None` gives `null` (Go's empty RawExtension),
/// anything else (default `Metadata`) a `PartialObjectMetadata`.
fn row_object(obj: &Value, include_object: &str) -> Value {
    match include_object {
        "Object" => obj.clone(),
        "None" => Value::Null,
        _ => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
        }),
    }
}

/// One cell as the server renders it for the column type; unconvertible values are `null`
/// (kubectl prints `<none>`).
fn cell(type_: &str, v: &Value, now: jiff::Timestamp) -> Value {
    match type_ {
        "string" => Value::String(print_text(v)),
        "integer" => match v {
            Value::Number(n) => n
                .as_i64()
                .map(Value::from)
                .or_else(|| n.as_f64().map(|f| Value::from(f as i64)))
                .unwrap_or(Value::Null),
            _ => Value::Null,
        },
        "number" => v.as_f64().map(Value::from).unwrap_or(Value::Null),
        "boolean" => v.as_bool().map(Value::Bool).unwrap_or(Value::Null),
        "date" => match v {
            Value::String(s) => Value::String(age(s, now)),
            _ => Value::Null,
        },
        _ => Value::Null,
    }
}

/// How the JSONPath printer renders a value as text: strings raw, maps and lists as compact JSON,
/// numbers as Go prints them, `null` as `<no value>`.
fn print_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "<no value>".into(),
        Value::Number(_) => crate::schema::go_number(v),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}

/// A timestamp column: the age since `ts` in kubectl's short form (`5s`, `3m2s`, `4h`, `2d3h`).
fn age(ts: &str, now: jiff::Timestamp) -> String {
    if ts.is_empty() || ts == "null" {
        return "<unknown>".into();
    }
    match ts.parse::<jiff::Timestamp>() {
        Ok(t) => human_duration(now.as_second() - t.as_second()),
        Err(_) => "<invalid>".into(),
    }
}

/// apimachinery's `duration.HumanDuration` on whole seconds.
pub fn human_duration(seconds: i64) -> String {
    // Two units at most, the smaller one left out when zero ("3m", not "3m0s").
    let units = |big: i64, big_unit: char, small: i64, small_unit: char| {
        if small == 0 {
            format!("{big}{big_unit}")
        } else {
            format!("{big}{big_unit}{small}{small_unit}")
        }
    };
    let (minutes, hours) = (seconds / 60, seconds / 3600);
    let (days, years) = (hours / 24, hours / 24 / 365);
    if seconds < -1 {
        "<invalid>".into()
    } else if seconds < 0 {
        "0s".into()
    } else if seconds < 120 {
        format!("{seconds}s")
    } else if minutes < 10 {
        units(minutes, 'm', seconds % 60, 's')
    } else if minutes < 180 {
        format!("{minutes}m")
    } else if hours < 8 {
        units(hours, 'h', minutes % 60, 'm')
    } else if hours < 48 {
        format!("{hours}h")
    } else if hours < 24 * 8 {
        units(days, 'd', hours % 24, 'h')
    } else if hours < 24 * 365 * 2 {
        format!("{days}d")
    } else if hours < 24 * 365 * 8 {
        units(years, 'y', days % 365, 'd')
    } else {
        format!("{years}y")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> jiff::Timestamp {
        "2026-01-01T00:10:00Z".parse().unwrap()
    }

    fn crontab(name: &str) -> Value {
        json!({
            "apiVersion": "stable.example.com/v1", "kind": "CronTab",
            "metadata": {"name": name, "namespace": "default", "creationTimestamp": "2026-01-01T00:00:00Z",
                         "resourceVersion": "7"},
            "spec": {"cronSpec": "* * * * */5", "image": "my-image", "replicas": 2},
            "status": {"conditions": [{"type": "Ready", "status": "True"}]}
        })
    }

    fn col(name: &str, type_: &str, path: &str) -> PrinterColumn {
        PrinterColumn {
            name: name.into(),
            type_: type_.into(),
            json_path: path.into(),
            ..Default::default()
        }
    }

    #[test]
    fn default_columns_are_name_and_age() {
        let t = to_table_at(
            &[],
            &[crontab("a")],
            "",
            json!({"resourceVersion": "9"}),
            now(),
        );
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(t["metadata"], json!({"resourceVersion": "9"}));
        let defs = t["columnDefinitions"].as_array().unwrap();
        assert_eq!(defs.len(), 2);
        assert_eq!(defs[0]["name"], "Name");
        assert_eq!(defs[0]["format"], "name");
        assert_eq!(defs[0]["type"], "string");
        assert!(
            defs[0]["description"]
                .as_str()
                .unwrap()
                .starts_with("Name must be unique")
        );
        assert_eq!(defs[1]["name"], "Age");
        assert_eq!(defs[1]["type"], "date");
        assert_eq!(t["rows"][0]["cells"], json!(["a", "10m"]));
    }

    #[test]
    fn printer_columns_render_by_type() {
        let cols = vec![
            col("Spec", "string", ".spec.cronSpec"),
            col("Replicas", "integer", ".spec.replicas"),
            col(
                "Ready",
                "string",
                r#".status.conditions[?(@.type=="Ready")].status"#,
            ),
            col("Missing", "string", ".spec.nothing"),
            col("Wrong", "integer", ".spec.image"),
            col("Age", "date", ".metadata.creationTimestamp"),
            col("Spec JSON", "string", ".spec"),
        ];
        let t = to_table_at(&cols, &[crontab("a")], "Metadata", json!({}), now());
        let defs = t["columnDefinitions"].as_array().unwrap();
        assert_eq!(
            defs.len(),
            8,
            "Name is prepended, no Age is appended when columns are declared"
        );
        assert_eq!(
            defs[1]["description"],
            "Custom resource definition column (in JSONPath format): .spec.cronSpec"
        );
        assert_eq!(defs[1]["priority"], 0);
        let cells = &t["rows"][0]["cells"];
        assert_eq!(cells[0], "a");
        assert_eq!(cells[1], "* * * * */5");
        assert_eq!(cells[2], 2);
        assert_eq!(cells[3], "True");
        assert_eq!(cells[4], Value::Null);
        assert_eq!(cells[5], Value::Null);
        assert_eq!(cells[6], "10m");
        assert_eq!(
            cells[7],
            r#"{"cronSpec":"* * * * */5","image":"my-image","replicas":2}"#
        );
    }

    #[test]
    fn include_object_variants() {
        let objs = [crontab("a")];
        let meta = to_table_at(&[], &objs, "", json!({}), now());
        assert_eq!(meta["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(meta["rows"][0]["object"]["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(
            meta["rows"][0]["object"]["metadata"]["resourceVersion"],
            "7"
        );
        assert!(meta["rows"][0]["object"].get("spec").is_none());
        let full = to_table_at(&[], &objs, "Object", json!({}), now());
        assert_eq!(full["rows"][0]["object"], objs[0]);
        let none = to_table_at(&[], &objs, "None", json!({}), now());
        assert_eq!(none["rows"][0]["object"], Value::Null);
        assert!(valid_include_object("Object") && !valid_include_object("Everything"));
    }

    #[test]
    fn default_table_prints_raw_creation_timestamps() {
        let mut crd = crontab("crontabs.stable.example.com");
        crd["metadata"]["creationTimestamp"] = json!("2026-01-01T01:00:00.5+01:00");
        let mut fresh = crontab("fresh");
        fresh["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("creationTimestamp");
        let t = default_table(&[crd, fresh], "None", json!({"resourceVersion": "3"}));
        let defs = t["columnDefinitions"].as_array().unwrap();
        assert_eq!(defs[1]["name"], "Created At");
        assert_eq!(defs[1]["type"], "date");
        assert_eq!(
            t["rows"][0]["cells"],
            json!(["crontabs.stable.example.com", "2026-01-01T00:00:00Z"])
        );
        assert_eq!(t["rows"][1]["cells"][1], "0001-01-01T00:00:00Z");
        assert_eq!(t["rows"][0]["object"], Value::Null);
        assert_eq!(t["metadata"]["resourceVersion"], "3");
    }

    #[test]
    fn dates_and_durations() {
        assert_eq!(human_duration(5), "5s");
        assert_eq!(human_duration(119), "119s");
        assert_eq!(human_duration(150), "2m30s");
        assert_eq!(human_duration(600), "10m");
        assert_eq!(human_duration(3 * 3600 + 60), "3h1m");
        assert_eq!(human_duration(20 * 3600), "20h");
        assert_eq!(human_duration(3 * 86400 + 3600), "3d1h");
        assert_eq!(human_duration(100 * 86400), "100d");
        assert_eq!(human_duration(3 * 365 * 86400 + 86400), "3y1d");
        assert_eq!(human_duration(-5), "<invalid>");
        assert_eq!(age("not a date", now()), "<invalid>");
        assert_eq!(age("", now()), "<unknown>");
    }
}
