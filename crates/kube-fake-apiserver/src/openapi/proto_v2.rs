//! The swagger 2.0 document as protobuf: gnostic's `openapi.v2.Document`
//! (`openapiv2/OpenAPIv2.proto`), which kube-apiserver serves on `/openapi/v2` to
//! `Accept: application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and client-go's
//! `OpenAPISchema` asks for. kubectl reads the `definitions` only, so `paths` is sent empty.
//! Vendor extensions, defaults, enums and examples are gnostic `Any`s carrying YAML (JSON text
//! here, which is YAML), as kube-openapi decodes them.
use serde_json::{Map, Value};

/// The `Content-Type` kube-openapi answers with.
pub const CONTENT_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// Encodes a swagger 2.0 JSON document (as [`super::v2`] builds it).
pub fn encode(doc: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    string(&mut out, 1, doc["swagger"].as_str().unwrap_or("2.0"));
    let mut info = Vec::new();
    string(&mut info, 1, doc["info"]["title"].as_str().unwrap_or(""));
    string(&mut info, 2, doc["info"]["version"].as_str().unwrap_or(""));
    message(&mut out, 2, &info);
    message(&mut out, 8, &[]);
    let mut defs = Vec::new();
    if let Some(Value::Object(m)) = doc.get("definitions") {
        for (name, schema) in m {
            message(&mut defs, 1, &named_schema(name, schema));
        }
    }
    message(&mut out, 9, &defs);
    out
}

fn varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire: u8) {
    varint(out, (u64::from(field) << 3) | u64::from(wire));
}

fn bytes(out: &mut Vec<u8>, field: u32, b: &[u8]) {
    key(out, field, 2);
    varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

fn string(out: &mut Vec<u8>, field: u32, s: &str) {
    if !s.is_empty() {
        bytes(out, field, s.as_bytes());
    }
}

/// An embedded message (written even when empty: presence matters for `paths`).
fn message(out: &mut Vec<u8>, field: u32, m: &[u8]) {
    bytes(out, field, m);
}

fn int(out: &mut Vec<u8>, field: u32, v: i64) {
    key(out, field, 0);
    varint(out, v as u64);
}

fn boolean(out: &mut Vec<u8>, field: u32, v: bool) {
    key(out, field, 0);
    varint(out, u64::from(v));
}

fn double(out: &mut Vec<u8>, field: u32, v: f64) {
    key(out, field, 1);
    out.extend_from_slice(&v.to_le_bytes());
}

/// gnostic `Any` with its `yaml` (field 2).
fn any(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    string(&mut out, 2, &v.to_string());
    out
}

fn named_schema(name: &str, schema: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    string(&mut out, 1, name);
    message(&mut out, 2, &schema_message(schema));
    out
}

/// `openapi.v2.Schema`.
fn schema_message(v: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    let Value::Object(m) = v else {
        return out;
    };
    let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("");
    string(&mut out, 1, s("$ref"));
    string(&mut out, 2, s("format"));
    string(&mut out, 3, s("title"));
    string(&mut out, 4, s("description"));
    if let Some(d) = m.get("default") {
        message(&mut out, 5, &any(d));
    }
    for (field, k) in [(6, "multipleOf"), (7, "maximum"), (9, "minimum")] {
        if let Some(n) = m.get(k).and_then(Value::as_f64) {
            double(&mut out, field, n);
        }
    }
    for (field, k) in [
        (8, "exclusiveMaximum"),
        (10, "exclusiveMinimum"),
        (16, "uniqueItems"),
        (27, "readOnly"),
    ] {
        if let Some(b) = m.get(k).and_then(Value::as_bool) {
            boolean(&mut out, field, b);
        }
    }
    for (field, k) in [
        (11, "maxLength"),
        (12, "minLength"),
        (14, "maxItems"),
        (15, "minItems"),
        (17, "maxProperties"),
        (18, "minProperties"),
    ] {
        if let Some(n) = m.get(k).and_then(Value::as_i64) {
            int(&mut out, field, n);
        }
    }
    string(&mut out, 13, s("pattern"));
    for r in m
        .get("required")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        string(&mut out, 19, r.as_str().unwrap_or(""));
    }
    for e in m
        .get("enum")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        message(&mut out, 20, &any(e));
    }
    match m.get("additionalProperties") {
        Some(a @ Value::Object(_)) => {
            let mut item = Vec::new();
            message(&mut item, 1, &schema_message(a));
            message(&mut out, 21, &item);
        }
        Some(Value::Bool(b)) => {
            let mut item = Vec::new();
            boolean(&mut item, 2, *b);
            message(&mut out, 21, &item);
        }
        _ => {}
    }
    if let Some(t) = m.get("type") {
        let mut item = Vec::new();
        match t {
            Value::Array(ts) => ts
                .iter()
                .for_each(|t| string(&mut item, 1, t.as_str().unwrap_or(""))),
            t => string(&mut item, 1, t.as_str().unwrap_or("")),
        }
        message(&mut out, 22, &item);
    }
    match m.get("items") {
        Some(i @ Value::Object(_)) => {
            let mut item = Vec::new();
            message(&mut item, 1, &schema_message(i));
            message(&mut out, 23, &item);
        }
        Some(Value::Array(is)) => {
            let mut item = Vec::new();
            is.iter()
                .for_each(|i| message(&mut item, 1, &schema_message(i)));
            message(&mut out, 23, &item);
        }
        _ => {}
    }
    for a in m
        .get("allOf")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        message(&mut out, 24, &schema_message(a));
    }
    if let Some(Value::Object(props)) = m.get("properties") {
        let mut p = Vec::new();
        for (name, schema) in props {
            message(&mut p, 1, &named_schema(name, schema));
        }
        message(&mut out, 25, &p);
    }
    string(&mut out, 26, s("discriminator"));
    if let Some(e) = m.get("example") {
        message(&mut out, 30, &any(e));
    }
    vendor_extensions(&mut out, 31, m);
    out
}

fn vendor_extensions(out: &mut Vec<u8>, field: u32, m: &Map<String, Value>) {
    for (k, v) in m.iter().filter(|(k, _)| k.starts_with("x-")) {
        let mut named = Vec::new();
        string(&mut named, 1, k);
        message(&mut named, 2, &any(v));
        message(out, field, &named);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn encodes_fields_with_gnostic_numbers() {
        let doc = json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.35.0"},
            "definitions": {"A": {"type": "object", "x-kubernetes-list-type": "map"}}});
        let b = encode(&doc);
        // swagger = 1 ("2.0")
        assert_eq!(&b[..5], &[0x0a, 3, b'2', b'.', b'0']);
        // info = 2 { title = 1, version = 2 }
        assert_eq!(b[5], 0x12);
        // The vendor extension's value is YAML (JSON text) in Any.yaml = 2.
        let text = String::from_utf8_lossy(&b);
        assert!(text.contains("x-kubernetes-list-type"), "{text}");
        assert!(text.contains("\"map\""), "{text}");
        // Multi-byte varints.
        let mut v = Vec::new();
        varint(&mut v, 300);
        assert_eq!(v, [0xac, 0x02]);
    }
}
