//! OpenAPI value validation with the messages and reasons of apiextensions-apiserver
//! (kube-openapi validators, converted into `field.Error`s).
use super::correlate;
use super::node::{Additional, Node};
use super::{Cause, MAX_DEPTH, child, go_number};
use crate::gofmt::{go_error_value, go_float, go_quote};
use serde_json::{Map, Value};
use std::collections::HashMap;

const INVALID: &str = "FieldValueInvalid";
const REQUIRED: &str = "FieldValueRequired";
const NOT_SUPPORTED: &str = "FieldValueNotSupported";
const TYPE_INVALID: &str = "FieldValueTypeInvalid";
const TOO_LONG: &str = "FieldValueTooLong";
const TOO_MANY: &str = "FieldValueTooMany";

/// Patterns are compiled once per validation; a pattern the regex engine rejects (or that is too
/// large) is skipped, as the real server would have refused the CRD in the first place.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// The OpenAPI causes for `obj`; with `old` (an update), values equal to their correlated old
/// value are not checked (ratcheting).
pub(super) fn validate(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut v = Validator {
        regexes: HashMap::new(),
    };
    let mut out = Vec::new();
    v.node(Node(schema), obj, old, "", 0, &mut out);
    out
}

struct Validator {
    regexes: HashMap<String, Option<regex::Regex>>,
}

fn cause(reason: &str, field: &str, message: String) -> Cause {
    Cause {
        reason: reason.into(),
        message,
        field: field.into(),
    }
}

/// `field.Invalid(path, value, detail)`.
fn invalid(field: &str, value: &str, detail: String) -> Cause {
    cause(INVALID, field, format!("Invalid value: {value}: {detail}"))
}

/// The JSON type name of a decoded value, as go-openapi names it.
pub(super) fn type_name(x: &Value) -> &'static str {
    match x {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// A float that go-openapi still accepts as an integer (integral and within ±2^53).
pub(super) fn float_is_integer(x: &Value) -> bool {
    const MAX_JSON_INT: f64 = 9_007_199_254_740_992.0;
    match x.as_f64() {
        Some(f) if !x.is_i64() => f.is_finite() && f.fract() == 0.0 && f.abs() <= MAX_JSON_INT,
        _ => false,
    }
}

fn type_matches(expected: &[&str], x: &Value) -> bool {
    let actual = type_name(x);
    expected.contains(&actual)
        || (actual == "integer" && expected.contains(&"number"))
        || (actual == "number" && expected.contains(&"integer") && float_is_integer(x))
}

/// Numbers equal by value (the server converts the value to the enum entry's type first).
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => match (x.as_i64(), y.as_i64()) {
            (Some(i), Some(j)) => i == j,
            _ => x.as_f64() == y.as_f64(),
        },
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| json_equal(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

/// A bound (`maximum: 10`) as Go prints it next to the value: an integer bound stays an
/// integer when the value is one (`MaximumNativeType`), otherwise float `%v`.
fn bound_text(bound: &Value, x: &Value) -> String {
    match bound.as_f64() {
        Some(f) if x.is_i64() && f.fract() == 0.0 && f.abs() < 9.2e18 => (f as i64).to_string(),
        Some(f) => go_float(f),
        None => go_number(bound),
    }
}

fn as_count(v: Option<&Value>) -> Option<u64> {
    let v = v?;
    v.as_u64()
        .or_else(|| v.as_f64().filter(|f| *f >= 0.0).map(|f| f as u64))
}

impl Validator {
    fn node(
        &mut self,
        s: Node<'_>,
        x: &Value,
        old: Option<&Value>,
        path: &str,
        depth: usize,
        out: &mut Vec<Cause>,
    ) {
        if depth > MAX_DEPTH {
            out.push(invalid(path, "\"\"", "nesting is too deep".into()));
            return;
        }
        if old == Some(x) {
            self.unchanged(s, x, path, depth, out);
            return;
        }
        let types: Vec<&str> = if s.int_or_string() {
            vec!["integer", "string"]
        } else {
            s.type_().into_iter().collect()
        };
        if x.is_null() {
            // Only the type and enum checks apply to null.
            if !types.is_empty() && !s.nullable() {
                out.push(type_error(path, &types, x));
            }
            self.check_enum(s, x, path, out);
            return;
        }
        if !types.is_empty() && !type_matches(&types, x) {
            let format = s.raw("format").and_then(Value::as_str).unwrap_or("");
            out.push(
                format_type_error(path, format, x).unwrap_or_else(|| type_error(path, &types, x)),
            );
            // go-openapi's number validator applies to every numeric value, so a number of the
            // wrong type (a fraction, or an integer beyond int64 decoded as float64) still gets
            // its bounds checked.
            if x.is_number() {
                check_number(s, x, path, out);
            }
            // The server still checks the enum of a value of the wrong type.
            self.check_enum(s, x, path, out);
            return;
        }
        self.composition(s, x, path, depth, out);
        if let Value::String(text) = x {
            self.check_string(s, text, path, out);
            check_format(s, text, path, out);
        }
        self.check_enum(s, x, path, out);
        match x {
            Value::Array(items) => self.check_array(s, items, old, path, depth, out),
            Value::Number(_) => check_number(s, x, path, out),
            Value::Object(map) => self.check_object(s, map, old, path, depth, out),
            _ => {}
        }
    }

    /// Ratcheting: an unchanged value is not validated again, except by `allOf`, `anyOf`,
    /// `oneOf` and `not`, which the server never ratchets (here or below).
    fn unchanged(
        &mut self,
        s: Node<'_>,
        x: &Value,
        path: &str,
        depth: usize,
        out: &mut Vec<Cause>,
    ) {
        self.composition(s, x, path, depth, out);
        match x {
            Value::Array(items) => {
                if let Some(item_schema) = s.items() {
                    for (i, v) in items.iter().enumerate() {
                        let p = format!("{path}[{i}]");
                        self.node(item_schema, v, Some(v), &p, depth + 1, out);
                    }
                }
            }
            Value::Object(map) => {
                let root = path.is_empty();
                for (k, v) in map {
                    let sub = match (s.property(k), s.additional()) {
                        (Some(p), _) => p,
                        (None, Some(Additional::Schema(a))) if !(root && k == "metadata") => a,
                        _ => continue,
                    };
                    self.node(sub, v, Some(v), &child(path, k), depth + 1, out);
                }
            }
            _ => {}
        }
    }

    fn check_enum(&self, s: Node<'_>, x: &Value, path: &str, out: &mut Vec<Cause>) {
        let Some(Value::Array(allowed)) = s.raw("enum") else {
            return;
        };
        // An explicit null never satisfies an enum, even one listing null (measured on 1.35).
        if !x.is_null() && allowed.iter().any(|e| json_equal(e, x)) {
            return;
        }
        let quoted: Vec<String> = allowed
            .iter()
            .map(|e| match e {
                Value::String(s) => go_quote(s),
                other => go_quote(&other.to_string()),
            })
            .collect();
        let mut message = format!("Unsupported value: {}", go_error_value(x));
        if !quoted.is_empty() {
            message.push_str(&format!(": supported values: {}", quoted.join(", ")));
        }
        out.push(cause(NOT_SUPPORTED, path, message));
    }

    fn check_string(&mut self, s: Node<'_>, text: &str, path: &str, out: &mut Vec<Cause>) {
        let chars = text.chars().count() as u64;
        if let Some(max) = as_count(s.raw("maxLength"))
            && chars > max
        {
            let unit = if max == 1 { "byte" } else { "bytes" };
            out.push(cause(
                TOO_LONG,
                path,
                format!("Too long: may not be more than {max} {unit}"),
            ));
            // The server does not match a pattern against a string already too long.
            return;
        }
        if let Some(min) = as_count(s.raw("minLength"))
            && chars < min
        {
            out.push(invalid(
                path,
                &go_quote(text),
                format!("{path} in body should be at least {min} chars long"),
            ));
        }
        if let Some(pattern) = s.raw("pattern").and_then(Value::as_str) {
            let re = self.regexes.entry(pattern.to_string()).or_insert_with(|| {
                regex::RegexBuilder::new(pattern)
                    .size_limit(REGEX_SIZE_LIMIT)
                    .build()
                    .ok()
            });
            if let Some(re) = re
                && !re.is_match(text)
            {
                out.push(invalid(
                    path,
                    &go_quote(text),
                    format!("{path} in body should match '{pattern}'"),
                ));
            }
        }
    }

    fn check_array(
        &mut self,
        s: Node<'_>,
        items: &[Value],
        old: Option<&Value>,
        path: &str,
        depth: usize,
        out: &mut Vec<Cause>,
    ) {
        check_count(s, ["minItems", "maxItems", "items"], items.len(), path, out);
        if s.raw("uniqueItems").and_then(Value::as_bool) == Some(true) {
            let dup = items
                .iter()
                .enumerate()
                .any(|(i, a)| items[..i].iter().any(|b| json_equal(a, b)));
            if dup {
                out.push(invalid(
                    path,
                    "\"\"",
                    format!("{path} in body shouldn't contain duplicates"),
                ));
            }
        }
        if let Some(item_schema) = s.items() {
            for (i, v) in items.iter().enumerate() {
                let old_item = correlate::item(s, old, v);
                self.node(
                    item_schema,
                    v,
                    old_item,
                    &format!("{path}[{i}]"),
                    depth + 1,
                    out,
                );
            }
        }
    }

    fn check_object(
        &mut self,
        s: Node<'_>,
        map: &Map<String, Value>,
        old: Option<&Value>,
        path: &str,
        depth: usize,
        out: &mut Vec<Cause>,
    ) {
        let keys = ["minProperties", "maxProperties", "properties"];
        check_count(s, keys, map.len(), path, out);
        let root = path.is_empty();
        if let Some(Additional::Schema(a)) = s.additional() {
            for (k, v) in map {
                if s.property(k).is_none() && !(root && k == "metadata") {
                    let old_v = correlate::field(old, k);
                    self.node(a, v, old_v, &child(path, k), depth + 1, out);
                }
            }
        }
        if let Some(props) = s.properties() {
            for (k, prop) in props {
                if let Some(v) = map.get(k) {
                    let old_v = correlate::field(old, k);
                    self.node(Node(prop), v, old_v, &child(path, k), depth + 1, out);
                }
            }
        }
        if let Some(Value::Array(required)) = s.raw("required") {
            for k in required.iter().filter_map(Value::as_str) {
                if !map.contains_key(k) {
                    out.push(cause(REQUIRED, &child(path, k), "Required value".into()));
                }
            }
        }
        if s.embedded() {
            check_embedded(map, path, out);
        }
    }

    /// `allOf`/`anyOf`/`oneOf`/`not`: value validations only; composite failures are reported
    /// the way the server reports non-field errors (at `<nil>`, value `""`).
    fn composition(
        &mut self,
        s: Node<'_>,
        x: &Value,
        path: &str,
        depth: usize,
        out: &mut Vec<Cause>,
    ) {
        let subs = |key: &str| -> Vec<Node<'_>> {
            match s.raw(key) {
                Some(Value::Array(list)) => {
                    list.iter().filter(|v| v.is_object()).map(Node).collect()
                }
                _ => Vec::new(),
            }
        };
        let any_of = subs("anyOf");
        if !any_of.is_empty() {
            let results: Vec<Vec<Cause>> = any_of
                .iter()
                .map(|sub| self.collect(*sub, x, path, depth))
                .collect();
            if !results.iter().any(Vec::is_empty) {
                out.push(composite(format!(
                    "{} must validate at least one schema (anyOf)",
                    go_quote(path)
                )));
                out.extend(fewest(results));
            }
        }
        let one_of = subs("oneOf");
        if !one_of.is_empty() {
            let results: Vec<Vec<Cause>> = one_of
                .iter()
                .map(|sub| self.collect(*sub, x, path, depth))
                .collect();
            let valid = results.iter().filter(|r| r.is_empty()).count();
            if valid == 0 {
                out.push(composite(format!(
                    "{} must validate one and only one schema (oneOf). Found none valid",
                    go_quote(path)
                )));
                out.extend(fewest(results));
            } else if valid > 1 {
                out.push(composite(format!(
                    "{} must validate one and only one schema (oneOf). Found {valid} valid alternatives",
                    go_quote(path)
                )));
            }
        }
        // go-openapi checks allOf after anyOf and oneOf: every branch's errors, then the
        // composite one when a branch failed.
        let all_of = subs("allOf");
        let mut validated = 0;
        for sub in &all_of {
            let errs = self.collect(*sub, x, path, depth);
            validated += usize::from(errs.is_empty());
            out.extend(errs);
        }
        if validated != all_of.len() {
            let none = if validated == 0 {
                ". None validated"
            } else {
                ""
            };
            out.push(composite(format!(
                "{} must validate all the schemas (allOf){none}",
                go_quote(path)
            )));
        }
        if let Some(not) = s.raw("not").filter(|v| v.is_object())
            && self.collect(Node(not), x, path, depth).is_empty()
        {
            out.push(composite(format!(
                "{} must not validate the schema (not)",
                go_quote(path)
            )));
        }
    }

    fn collect(&mut self, s: Node<'_>, x: &Value, path: &str, depth: usize) -> Vec<Cause> {
        let mut v = Vec::new();
        self.node(s, x, None, path, depth + 1, &mut v);
        v
    }
}

/// The failing alternative closest to matching, whose errors the server adds to the composite one.
fn fewest(results: Vec<Vec<Cause>>) -> Vec<Cause> {
    results.into_iter().min_by_key(Vec::len).unwrap_or_default()
}

fn composite(detail: String) -> Cause {
    invalid("<nil>", "\"\"", detail)
}

/// go-openapi's type validator names the schema's `format` as the expected type when a value
/// other than a string or an array misses the type and its own inferred format (`int64` for an
/// integer, `float64` for another number, none otherwise) is not that format:
/// `Invalid value: "int64": spec.cidr in body must be of type cidr: "int64"`.
fn format_type_error(path: &str, format: &str, x: &Value) -> Option<Cause> {
    if format.is_empty() || x.is_string() || x.is_array() {
        return None;
    }
    let inferred = match x {
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        _ => "",
    };
    (inferred != format).then(|| {
        let q = go_quote(inferred);
        cause(
            TYPE_INVALID,
            path,
            format!("Invalid value: {q}: {path} in body must be of type {format}: {q}"),
        )
    })
}

fn type_error(path: &str, types: &[&str], x: &Value) -> Cause {
    let actual = type_name(x);
    cause(
        TYPE_INVALID,
        path,
        format!(
            "Invalid value: {}: {path} in body must be of type {}: {}",
            go_quote(actual),
            types.join(","),
            go_quote(actual)
        ),
    )
}

/// `minItems`/`maxItems` or `minProperties`/`maxProperties` (`[min key, max key, noun]`) on a
/// collection of `len` elements.
fn check_count(
    s: Node<'_>,
    [min_key, max_key, noun]: [&str; 3],
    len: usize,
    path: &str,
    out: &mut Vec<Cause>,
) {
    let len = len as u64;
    if let Some(min) = as_count(s.raw(min_key))
        && len < min
    {
        out.push(invalid(
            path,
            &len.to_string(),
            format!("{path} in body should have at least {min} {noun}"),
        ));
    }
    if let Some(max) = as_count(s.raw(max_key))
        && len > max
    {
        out.push(too_many(path, len, max));
    }
}

fn too_many(path: &str, actual: u64, max: u64) -> Cause {
    let unit = if max == 1 { "item" } else { "items" };
    cause(
        TOO_MANY,
        path,
        format!("Too many: {actual}: must have at most {max} {unit}"),
    )
}

fn check_number(s: Node<'_>, x: &Value, path: &str, out: &mut Vec<Cause>) {
    let Some(value) = x.as_f64() else { return };
    let shown = go_number(x);
    let exclusive = |key: &str| s.raw(key).and_then(Value::as_bool).unwrap_or(false);
    if let Some(m) = s.raw("multipleOf")
        && let Some(f) = m.as_f64()
        && f > 0.0
    {
        let q = value / f;
        if (q - q.round()).abs() > 1e-9 * q.abs().max(1.0) {
            out.push(invalid(
                path,
                &shown,
                format!(
                    "{path} in body should be a multiple of {}",
                    bound_text(m, x)
                ),
            ));
        }
    }
    if let Some(max) = s.raw("maximum")
        && let Some(f) = max.as_f64()
    {
        let excl = exclusive("exclusiveMaximum");
        if (excl && value >= f) || value > f {
            let rel = if excl {
                "less than"
            } else {
                "less than or equal to"
            };
            out.push(invalid(
                path,
                &shown,
                format!("{path} in body should be {rel} {}", bound_text(max, x)),
            ));
        }
    }
    if let Some(min) = s.raw("minimum")
        && let Some(f) = min.as_f64()
    {
        let excl = exclusive("exclusiveMinimum");
        if (excl && value <= f) || value < f {
            let rel = if excl {
                "greater than"
            } else {
                "greater than or equal to"
            };
            out.push(invalid(
                path,
                &shown,
                format!("{path} in body should be {rel} {}", bound_text(min, x)),
            ));
        }
    }
}

/// An `x-kubernetes-embedded-resource` object needs a `apiVersion` and `kind`.
fn check_embedded(map: &Map<String, Value>, path: &str, out: &mut Vec<Cause>) {
    for key in ["apiVersion", "kind"] {
        let field = child(path, key);
        match map.get(key) {
            None => out.push(cause(
                REQUIRED,
                &field,
                "Required value: must not be empty".into(),
            )),
            Some(Value::String(s)) if s.is_empty() => {
                out.push(invalid(&field, "\"\"", "must not be empty".into()));
            }
            Some(Value::String(_)) => {}
            Some(other) => out.push(invalid(
                &field,
                &go_error_value(other),
                "must be a string".into(),
            )),
        }
    }
}

/// The string formats the server's validator knows and that CRDs commonly use; unknown formats
/// (and `int32`/`int64`-style annotations) are not checked, as on the server.
fn format_ok(format: &str, v: &str) -> Option<bool> {
    Some(match format {
        "date-time" => is_date_time(v),
        "date" => is_date(v),
        "uuid" | "uuid3" | "uuid4" | "uuid5" => is_uuid(v),
        "ipv4" => v.contains('.') && v.parse::<std::net::IpAddr>().is_ok(),
        "ipv6" => v.contains(':') && v.parse::<std::net::IpAddr>().is_ok(),
        "cidr" => is_cidr(v),
        "byte" => is_base64(v),
        _ => return None,
    })
}

fn check_format(s: Node<'_>, v: &str, path: &str, out: &mut Vec<Cause>) {
    let Some(format) = s.raw("format").and_then(Value::as_str) else {
        return;
    };
    if format_ok(format, v) == Some(false) {
        let q = go_quote(v);
        out.push(cause(
            TYPE_INVALID,
            path,
            format!("Invalid value: {q}: {path} in body must be of type {format}: {q}"),
        ));
    }
}

fn digits(s: &str, n: usize) -> Option<u32> {
    (s.len() == n && s.bytes().all(|b| b.is_ascii_digit()))
        .then(|| s.parse().ok())
        .flatten()
}

/// `YYYY-MM-DD` naming a real day.
fn is_date(v: &str) -> bool {
    let mut parts = v.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return false;
    };
    let (Some(y), Some(m), Some(d)) = (digits(y, 4), digits(m, 2), digits(d, 2)) else {
        return false;
    };
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let days = match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&d)
}

/// `<date>T<hh:mm:ss[.frac](Z|±hh:mm)>`, case-insensitive `T`/`Z` (strfmt's `IsDateTime`).
fn is_date_time(v: &str) -> bool {
    let lower = v.to_ascii_lowercase();
    let mut halves = lower.split('t');
    let (Some(date), Some(time)) = (halves.next(), halves.next()) else {
        return false;
    };
    if !is_date(date) || !time.is_ascii() || time.len() < 9 {
        return false;
    }
    let b = time.as_bytes();
    let (Some(h), Some(m), Some(s)) = (
        digits(&time[0..2], 2),
        digits(&time[3..5], 2),
        digits(&time[6..8], 2),
    ) else {
        return false;
    };
    if b[2] != b':' || b[5] != b':' || h > 23 || m > 59 || s > 59 {
        return false;
    }
    let mut rest = &time[8..];
    // The server's pattern is `(.[0-9]+)?`: any one character, then digits.
    if !rest.is_empty() && !rest.starts_with(['z', '+', '-']) {
        let frac = &rest[1..];
        let n = frac.bytes().take_while(u8::is_ascii_digit).count();
        if n == 0 {
            return false;
        }
        rest = &frac[n..];
    }
    if rest == "z" {
        return true;
    }
    let (Some(sign), Some(hh), Some(colon), Some(mm)) = (
        rest.get(0..1),
        rest.get(1..3),
        rest.get(3..4),
        rest.get(4..),
    ) else {
        return false;
    };
    matches!(sign, "+" | "-") && colon == ":" && digits(hh, 2).is_some() && digits(mm, 2).is_some()
}

fn is_uuid(v: &str) -> bool {
    let groups: Vec<&str> = v.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, n)| g.len() == n && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn is_cidr(v: &str) -> bool {
    let Some((ip, bits)) = v.split_once('/') else {
        return false;
    };
    let Ok(ip) = ip.parse::<std::net::IpAddr>() else {
        return false;
    };
    let max = if ip.is_ipv4() { 32 } else { 128 };
    !bits.is_empty()
        && bits.len() <= 3
        && bits.bytes().all(|b| b.is_ascii_digit())
        && bits.parse::<u32>().is_ok_and(|b| b <= max)
}

/// Standard, padded base64.
fn is_base64(v: &str) -> bool {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.decode(v).is_ok()
}
