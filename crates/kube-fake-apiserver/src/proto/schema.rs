//! The shape of the generated field table (`table.rs`): one entry per protobuf field.

/// How a field's value is written on the wire and in JSON.
#[derive(Clone, Copy, Debug)]
pub enum T {
    Str,
    /// `[]byte`: base64 in JSON.
    Bytes,
    Bool,
    I32,
    I64,
    F64,
    /// A message: index into `MSGS`.
    M(u16),
    /// `metav1.Time`: `{seconds, nanos}`, RFC 3339 in seconds in JSON.
    Time,
    /// `metav1.MicroTime`: RFC 3339 with six fractional digits in JSON.
    MicroTime,
    /// `metav1.Duration`: nanoseconds, Go's duration text in JSON (no 1.35 built-in field
    /// reachable from a kind has one; the generator maps it all the same).
    #[allow(dead_code)]
    Duration,
    /// `intstr.IntOrString`: `{type, intVal, strVal}`.
    IntOrString,
    /// `resource.Quantity`: `{string}`.
    Quantity,
    /// `runtime.RawExtension`, `metav1.FieldsV1`, apiextensions' `JSON`: `{raw}` holding JSON text.
    RawJson,
    /// apiextensions' `JSONSchemaPropsOrArray` (`{schema, jSONSchemas}`), index of `JSONSchemaProps`.
    OrArray(u16),
    /// `JSONSchemaPropsOrBool` (`{allows, schema}`).
    OrBool(u16),
    /// `JSONSchemaPropsOrStringArray` (`{schema, property}`).
    OrStringArray(u16),
}

/// `repeated`.
pub const REP: u8 = 1;
/// `map<string, T>`.
pub const MAP: u8 = 2;
/// JSON writes the field even when it holds its zero value (k8s-openapi: not an `Option`).
pub const REQ: u8 = 4;
/// A Go struct embedded with `json:",inline"`: its fields are the parent's in JSON.
pub const INLINE: u8 = 8;

#[derive(Clone, Copy, Debug)]
pub struct F {
    pub num: u32,
    pub json: &'static str,
    pub t: T,
    pub flags: u8,
}

pub const fn f(num: u32, json: &'static str, t: T, flags: u8) -> F {
    F {
        num,
        json,
        t,
        flags,
    }
}
