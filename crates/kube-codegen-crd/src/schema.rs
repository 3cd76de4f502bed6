//! The subset of `JSONSchemaProps` the generator reads, parsed from JSON by hand.
//!
//! Why not `openapiv3` or `k8s-openapi`'s `JSONSchemaProps`: parsing by hand lets every problem carry
//! the JSON pointer of the offending node, keeps the Kubernetes extensions as first-class fields,
//! tolerates corpus quirks (enum items of any JSON type, `items` given as a list) instead of rejecting
//! the whole CRD, and bounds recursion depth so hostile input errors out instead of overflowing the stack.

use serde_json::Value;

/// Deepest schema nesting accepted (objects/arrays inside each other).
pub const MAX_SCHEMA_DEPTH: usize = 100;

#[derive(Debug, Clone, Default, PartialEq)]
pub struct Schema<'a> {
    /// JSON pointer of this node inside the version's openAPIV3Schema.
    pub pointer: String,
    pub type_: Option<&'a str>,
    pub format: Option<&'a str>,
    pub description: Option<&'a str>,
    pub nullable: bool,
    /// Declared properties, sorted by name (a Vec: schemas are large, and a map would move them
    /// around on every node split).
    pub properties: Vec<(&'a str, Schema<'a>)>,
    pub required: Vec<&'a str>,
    pub items: Option<Box<Schema<'a>>>,
    pub additional_properties: Option<AdditionalProperties<'a>>,
    pub enum_values: &'a [Value],
    pub default: Option<&'a Value>,
    pub any_of: Vec<Schema<'a>>,
    pub one_of: Vec<Schema<'a>>,
    pub all_of: Vec<Schema<'a>>,
    pub preserve_unknown_fields: bool,
    pub int_or_string: bool,
    pub embedded_resource: bool,
    /// Validation facts for the docs, in a fixed order: (keyword, value).
    pub constraints: Vec<(&'static str, &'a Value)>,
}

#[derive(Debug, Clone, PartialEq)]
pub enum AdditionalProperties<'a> {
    Bool(bool),
    Schema(Box<Schema<'a>>),
}

/// Keywords that only constrain values; they go to rustdoc verbatim.
const CONSTRAINT_KEYS: &[&str] = &[
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "pattern",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "uniqueItems",
    "minProperties",
    "maxProperties",
    "x-kubernetes-list-type",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-map-type",
    "x-kubernetes-validations",
];

/// A schema problem: JSON pointer and message; the caller adds CRD name and version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SchemaError {
    pub pointer: String,
    pub message: String,
}

impl<'a> Schema<'a> {
    pub fn parse(v: &'a Value) -> Result<Schema<'a>, SchemaError> {
        parse(v, String::new(), 0)
    }

    pub fn has_property(&self, name: &str) -> bool {
        self.properties.iter().any(|(k, _)| *k == name)
    }

    /// The `type`, or one implied by other keywords when absent.
    pub fn effective_type(&self) -> Option<&str> {
        if let Some(t) = self.type_ {
            return Some(t);
        }
        if !self.properties.is_empty() || self.additional_properties.is_some() {
            return Some("object");
        }
        if self.items.is_some() {
            return Some("array");
        }
        None
    }
}

fn err(pointer: &str, message: impl Into<String>) -> SchemaError {
    SchemaError {
        pointer: if pointer.is_empty() {
            "/".into()
        } else {
            pointer.to_string()
        },
        message: message.into(),
    }
}

/// Escapes a key for use in a JSON pointer (RFC 6901).
pub fn escape_pointer(key: &str) -> String {
    if !key.contains(['~', '/']) {
        return key.to_string();
    }
    key.replace('~', "~0").replace('/', "~1")
}

fn parse(v: &Value, pointer: String, depth: usize) -> Result<Schema<'_>, SchemaError> {
    if depth > MAX_SCHEMA_DEPTH {
        return Err(err(
            &pointer,
            format!("schema nested deeper than {MAX_SCHEMA_DEPTH} levels"),
        ));
    }
    let obj = match v {
        Value::Object(o) => o,
        // `true` is the schema that accepts anything.
        Value::Bool(true) | Value::Null => {
            return Ok(Schema {
                pointer,
                preserve_unknown_fields: true,
                ..Schema::default()
            });
        }
        _ => return Err(err(&pointer, "a schema must be an object")),
    };
    let mut s = Schema {
        pointer: pointer.clone(),
        ..Schema::default()
    };
    let string = |key: &str| -> Result<Option<&str>, SchemaError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(x)) => Ok(Some(x.as_str())),
            Some(_) => Err(err(&format!("{pointer}/{key}"), "expected a string")),
        }
    };
    let flag = |key: &str| -> Result<bool, SchemaError> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(false),
            Some(Value::Bool(b)) => Ok(*b),
            Some(_) => Err(err(&format!("{pointer}/{key}"), "expected a boolean")),
        }
    };
    s.type_ = string("type")?.filter(|t| !t.is_empty());
    if let Some(t) = &s.type_
        && !matches!(
            *t,
            "object" | "array" | "string" | "integer" | "number" | "boolean"
        )
    {
        return Err(err(
            &format!("{pointer}/type"),
            format!("unknown type {t:?}"),
        ));
    }
    s.format = string("format")?.filter(|f| !f.is_empty());
    s.description = string("description")?;
    s.nullable = flag("nullable")?;
    s.preserve_unknown_fields = flag("x-kubernetes-preserve-unknown-fields")?;
    s.int_or_string = flag("x-kubernetes-int-or-string")?;
    s.embedded_resource = flag("x-kubernetes-embedded-resource")?;
    s.default = obj.get("default");
    if let Some(e) = obj.get("enum") {
        match e {
            Value::Array(items) => s.enum_values = items,
            Value::Null => {}
            _ => return Err(err(&format!("{pointer}/enum"), "expected a list")),
        }
    }
    match obj.get("required") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (i, r) in items.iter().enumerate() {
                match r {
                    Value::String(r) => s.required.push(r),
                    _ => return Err(err(&format!("{pointer}/required/{i}"), "expected a string")),
                }
            }
        }
        Some(_) => return Err(err(&format!("{pointer}/required"), "expected a list")),
    }
    match obj.get("properties") {
        None | Some(Value::Null) => {}
        Some(Value::Object(props)) => {
            for (k, pv) in props {
                let mut p = String::with_capacity(pointer.len() + 12 + k.len());
                p.push_str(&pointer);
                p.push_str("/properties/");
                if k.contains(['~', '/']) {
                    p.push_str(&escape_pointer(k));
                } else {
                    p.push_str(k);
                }
                s.properties.push((k, parse(pv, p, depth + 1)?));
            }
            s.properties.sort_by(|a, b| a.0.cmp(b.0));
        }
        Some(_) => return Err(err(&format!("{pointer}/properties"), "expected an object")),
    }
    match obj.get("items") {
        None | Some(Value::Null) => {}
        Some(Value::Array(list)) => {
            // The rarely used tuple form: a single schema is taken as is, anything else is untyped.
            let p = format!("{pointer}/items");
            s.items = Some(Box::new(if list.len() == 1 {
                parse(&list[0], format!("{p}/0"), depth + 1)?
            } else {
                Schema {
                    pointer: p,
                    preserve_unknown_fields: true,
                    ..Schema::default()
                }
            }));
        }
        Some(item) => {
            s.items = Some(Box::new(parse(
                item,
                format!("{pointer}/items"),
                depth + 1,
            )?))
        }
    }
    match obj.get("additionalProperties") {
        None | Some(Value::Null) => {}
        Some(Value::Bool(b)) => s.additional_properties = Some(AdditionalProperties::Bool(*b)),
        Some(ap) => {
            s.additional_properties = Some(AdditionalProperties::Schema(Box::new(parse(
                ap,
                format!("{pointer}/additionalProperties"),
                depth + 1,
            )?)))
        }
    }
    for (key, slot) in [
        ("anyOf", &mut s.any_of),
        ("oneOf", &mut s.one_of),
        ("allOf", &mut s.all_of),
    ] {
        match obj.get(key) {
            None | Some(Value::Null) => {}
            Some(Value::Array(list)) => {
                for (i, b) in list.iter().enumerate() {
                    slot.push(parse(b, format!("{pointer}/{key}/{i}"), depth + 1)?);
                }
            }
            Some(_) => return Err(err(&format!("{pointer}/{key}"), "expected a list")),
        }
    }
    // Most nodes have no constraint at all: one scan of their few keys saves the lookups.
    let constrained = obj.keys().any(|k| CONSTRAINT_KEYS.contains(&k.as_str()));
    for key in CONSTRAINT_KEYS.iter().filter(|_| constrained) {
        if let Some(v) = obj.get(*key)
            && !v.is_null()
        {
            s.constraints.push((key, v));
        }
    }
    Ok(s)
}
