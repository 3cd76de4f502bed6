//! Small helpers over `serde_json::Value` for the defaulting and validation code.
use serde_json::{Map, Value};

/// Sets `key` when it is missing or null (`if obj.X == nil { obj.X = v }`).
pub fn default(obj: &mut Value, key: &str, value: Value) {
    if let Some(o) = obj.as_object_mut()
        && o.get(key).is_none_or(Value::is_null)
    {
        o.insert(key.into(), value);
    }
}

/// Sets `key` when it is missing, null or `""` (`if obj.X == "" { obj.X = v }`).
pub fn default_str(obj: &mut Value, key: &str, value: &str) {
    if let Some(o) = obj.as_object_mut()
        && o.get(key)
            .is_none_or(|v| v.is_null() || v.as_str() == Some(""))
    {
        o.insert(key.into(), Value::String(value.into()));
    }
}

/// Sets a number `key` when it is missing, null or 0 (`if obj.X == 0 { obj.X = v }`).
pub fn default_nonzero(obj: &mut Value, key: &str, value: i64) {
    if let Some(o) = obj.as_object_mut()
        && o.get(key)
            .is_none_or(|v| v.is_null() || v.as_i64() == Some(0))
    {
        o.insert(key.into(), Value::from(value));
    }
}

/// The object at `key`, created (`{}`) when missing or not an object.
pub fn obj_at<'a>(obj: &'a mut Value, key: &str) -> Option<&'a mut Value> {
    let o = obj.as_object_mut()?;
    let e = o
        .entry(key.to_string())
        .or_insert_with(|| Value::Object(Map::new()));
    if !e.is_object() {
        *e = Value::Object(Map::new());
    }
    Some(e)
}

/// The elements of the array at `key` (none when missing).
pub fn items_mut<'a>(obj: &'a mut Value, key: &str) -> impl Iterator<Item = &'a mut Value> {
    obj.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flat_map(|a| a.iter_mut())
}

pub fn items<'a>(obj: &'a Value, key: &str) -> impl Iterator<Item = &'a Value> {
    obj.get(key)
        .and_then(Value::as_array)
        .into_iter()
        .flat_map(|a| a.iter())
}

pub fn s<'a>(obj: &'a Value, key: &str) -> &'a str {
    obj.get(key).and_then(Value::as_str).unwrap_or_default()
}

pub fn i(obj: &Value, key: &str) -> Option<i64> {
    obj.get(key).and_then(Value::as_i64)
}

/// Whether `key` holds something other than null.
pub fn has(obj: &Value, key: &str) -> bool {
    obj.get(key).is_some_and(|v| !v.is_null())
}
