//! Values printed the way Go's `fmt` and `strconv` print them, so messages (the validator's and
//! the in-memory API server's) read like the real server's.

use serde_json::Value;

/// Go's `strconv.Quote`.
pub fn go_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{7}' => out.push_str("\\a"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{b}' => out.push_str("\\v"),
            c if is_go_printable(c) => out.push(c),
            c if (c as u32) < 0x80 => out.push_str(&format!("\\x{:02x}", c as u32)),
            c if (c as u32) < 0x10000 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push_str(&format!("\\U{:08x}", c as u32)),
        }
    }
    out.push('"');
    out
}

fn is_go_printable(c: char) -> bool {
    if c == ' ' {
        return true;
    }
    if c.is_control() || c.is_whitespace() {
        return false;
    }
    // Format characters Go does not print (a few common ones).
    !matches!(c, '\u{ad}' | '\u{200b}'..='\u{200f}' | '\u{2028}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
}

/// Go's `%v` of a float64 (`strconv.FormatFloat(f, 'g', -1, 64)`).
pub fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // Rust's `{:e}` gives the shortest round-tripping digits, e.g. `1.5e6`.
    let e = format!("{f:e}");
    let (mantissa, exp) = e.split_once('e').unwrap_or((e.as_str(), "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let negative = mantissa.starts_with('-');
    let digits: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let sign = if negative { "-" } else { "" };
    // strconv's shortest 'g': %e when the exponent is < -4 or >= 6.
    let eprec = 6;
    if exp < -4 || exp >= eprec {
        let (first, rest) = digits.split_at(1);
        let m = if rest.is_empty() {
            first.to_string()
        } else {
            format!("{first}.{rest}")
        };
        let es = if exp < 0 { '-' } else { '+' };
        return format!("{sign}{m}e{es}{:02}", exp.abs());
    }
    if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        return format!("{sign}0.{zeros}{digits}");
    }
    let int_len = (exp + 1) as usize;
    if digits.len() <= int_len {
        format!("{sign}{digits}{}", "0".repeat(int_len - digits.len()))
    } else {
        format!("{sign}{}.{}", &digits[..int_len], &digits[int_len..])
    }
}

/// A JSON number the way the apiserver holds it after decoding (int64 when integral, float64
/// otherwise) printed with `%v`.
pub fn go_number(n: &serde_json::Number) -> String {
    if let Some(i) = n.as_i64() {
        i.to_string()
    } else if let Some(u) = n.as_u64() {
        // Beyond int64 the server decodes to float64.
        go_float(u as f64)
    } else {
        go_float(n.as_f64().unwrap_or(0.0))
    }
}

/// A decoded JSON value (`interface{}`) as a field error prints it: strings `%q`, numbers and
/// booleans `%v`, `null` as `"null"`, maps and slices `%#v`.
pub fn go_json(v: &Value) -> String {
    match v {
        Value::Null => go_quote("null"),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => go_quote(s),
        _ => {
            let mut out = String::new();
            go_sharp_v(v, &mut out, 0);
            out
        }
    }
}

/// A bad value as kube-apiserver 1.35's `field.Error` prints it: `null`, numbers and booleans
/// `%v`, strings `%q`, and maps and slices as JSON (keys sorted, as Go's encoder sorts them).
pub fn go_error_value(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => go_quote(s),
        _ => go_json_text(v),
    }
}

/// JSON as Go's `encoding/json` writes it: compact, object keys sorted, `<`, `>` and `&`
/// escaped.
fn go_json_text(v: &Value) -> String {
    let sorted = sort_keys(v, 0);
    serde_json::to_string(&sorted)
        .unwrap_or_default()
        .replace('<', "\\u003c")
        .replace('>', "\\u003e")
        .replace('&', "\\u0026")
}

fn sort_keys(v: &Value, depth: usize) -> Value {
    match v {
        Value::Object(m) if depth < RENDER_DEPTH => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            Value::Object(
                keys.into_iter()
                    .map(|k| (k.clone(), sort_keys(&m[k], depth + 1)))
                    .collect(),
            )
        }
        Value::Array(a) if depth < RENDER_DEPTH => {
            Value::Array(a.iter().map(|x| sort_keys(x, depth + 1)).collect())
        }
        other => other.clone(),
    }
}

/// Values nested deeper than this are elided (`...`) in messages.
const RENDER_DEPTH: usize = 64;

fn go_sharp_v(v: &Value, out: &mut String, depth: usize) {
    match v {
        Value::Null => out.push_str("interface {}(nil)"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&go_number(n)),
        Value::String(s) => out.push_str(&go_quote(s)),
        Value::Array(a) => {
            out.push_str("[]interface {}{");
            if depth >= RENDER_DEPTH {
                out.push_str("...");
            } else {
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    go_sharp_v(x, out, depth + 1);
                }
            }
            out.push('}');
        }
        Value::Object(m) => {
            out.push_str("map[string]interface {}{");
            if depth >= RENDER_DEPTH {
                out.push_str("...");
            } else {
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    out.push_str(&go_quote(k));
                    out.push(':');
                    go_sharp_v(&m[k], out, depth + 1);
                }
            }
            out.push('}');
        }
    }
}

/// A decoded JSON value (`interface{}`) printed with `%v`: strings bare, `<nil>`, maps as
/// `map[k:v ...]` (keys sorted, as `fmt` sorts them), slices as `[a b]`.
pub fn go_plain_v(v: &Value) -> String {
    fn rec(v: &Value, out: &mut String, depth: usize) {
        match v {
            Value::Null => out.push_str("<nil>"),
            Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Value::Number(n) => out.push_str(&go_number(n)),
            Value::String(s) => out.push_str(s),
            Value::Array(a) => {
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    if depth >= RENDER_DEPTH {
                        out.push_str("...");
                        break;
                    }
                    rec(x, out, depth + 1);
                }
                out.push(']');
            }
            Value::Object(m) => {
                out.push_str("map[");
                let mut keys: Vec<&String> = m.keys().collect();
                keys.sort();
                for (i, k) in keys.into_iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    if depth >= RENDER_DEPTH {
                        out.push_str("...");
                        break;
                    }
                    out.push_str(k);
                    out.push(':');
                    rec(&m[k], out, depth + 1);
                }
                out.push(']');
            }
        }
    }
    let mut out = String::new();
    rec(v, &mut out, 0);
    out
}

/// `%T` of a decoded JSON value: `int64` for integers within int64, `float64` for every other
/// number, `map[string]interface {}`, `[]interface {}`, `<nil>`.
pub fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// `[]string{"a", "b"}` (`%#v` of a string slice; `[]string(nil)` when empty).
pub fn go_string_slice(items: &[String]) -> String {
    if items.is_empty() {
        return "[]string(nil)".into();
    }
    let quoted: Vec<String> = items.iter().map(|s| go_quote(s)).collect();
    format!("[]string{{{}}}", quoted.join(", "))
}

/// Rewrites numbers as a Go round trip leaves them: integral float64s below 1e21 become
/// integers (Go prints them without a fraction, and a JSON reader then sees an integer, or a
/// float when it overflows 64 bits). Stops at `max_depth`.
pub fn normalize_numbers(v: &mut Value, max_depth: usize) {
    fn rec(v: &mut Value, depth: usize, max_depth: usize) {
        if depth > max_depth {
            return;
        }
        match v {
            Value::Number(n) if !n.is_i64() => {
                let Some(f) = n.as_f64() else { return };
                if !f.is_finite() || f.fract() != 0.0 || f.abs() >= 1e21 {
                    *v = serde_json::Number::from_f64(f)
                        .map(Value::Number)
                        .unwrap_or(Value::Null);
                } else if (-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&f) {
                    *v = Value::from(f as i64);
                } else if (0.0..18_446_744_073_709_551_616.0).contains(&f) {
                    *v = Value::from(f as u64);
                } else {
                    *v = serde_json::Number::from_f64(f)
                        .map(Value::Number)
                        .unwrap_or(Value::Null);
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|x| rec(x, depth + 1, max_depth)),
            Value::Object(m) => m.values_mut().for_each(|x| rec(x, depth + 1, max_depth)),
            _ => {}
        }
    }
    rec(v, 0, max_depth);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn floats_like_go() {
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(100000.0), "100000");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(1234567.0), "1.234567e+06");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(-2.25), "-2.25");
    }

    #[test]
    fn quotes_like_go() {
        assert_eq!(go_quote("a\"b\n"), "\"a\\\"b\\n\"");
        assert_eq!(go_quote("\u{1}"), "\"\\x01\"");
        assert_eq!(go_quote("é"), "\"é\"");
    }

    #[test]
    fn json_like_go() {
        let v: Value = serde_json::json!({"b": [1, "x", null], "a": true});
        assert_eq!(
            go_json(&v),
            "map[string]interface {}{\"a\":true, \"b\":[]interface {}{1, \"x\", interface {}(nil)}}"
        );
        assert_eq!(go_json(&serde_json::json!("s")), "\"s\"");
        assert_eq!(
            go_string_slice(&["a".into(), "b".into()]),
            "[]string{\"a\", \"b\"}"
        );
    }
}

#[cfg(test)]
mod server_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn more_floats_print_like_go() {
        assert_eq!(go_float(10.0), "10");
        assert_eq!(go_float(-0.0), "-0");
        assert_eq!(go_float(123456.0), "123456");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(123456789.0), "1.23456789e+08");
        assert_eq!(go_float(18446744073709551615.0), "1.8446744073709552e+19");
    }

    #[test]
    fn numbers_normalize_like_a_go_round_trip() {
        let mut v: Value = serde_json::from_str(
            r#"{"a": 1.0, "b": -0.0, "c": 9007199254740993, "d": 18446744073709551615, "e": 1.5, "f": [1e3, 1e21], "g": -5}"#,
        )
        .unwrap();
        normalize_numbers(&mut v, 128);
        assert_eq!(v["a"], json!(1));
        assert!(v["a"].is_i64());
        assert_eq!(v["b"], json!(0));
        assert_eq!(v["c"], json!(9007199254740993i64));
        assert_eq!(v["d"], json!(18446744073709551615.0f64));
        assert!(v["d"].is_f64());
        assert_eq!(v["e"], json!(1.5));
        assert_eq!(v["f"], json!([1000, 1e21]));
        assert_eq!(v["g"], json!(-5));
    }

    #[test]
    fn bad_values_print_like_field_errors() {
        assert_eq!(go_json(&json!(11)), "11");
        assert_eq!(go_json(&json!("x")), "\"x\"");
        assert_eq!(go_json(&json!(null)), "\"null\"");
        assert_eq!(go_json(&json!(true)), "true");
        assert_eq!(go_json(&json!(2.5)), "2.5");
    }
}
