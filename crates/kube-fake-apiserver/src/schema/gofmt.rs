//! Values printed the way Go's `fmt` prints them, so messages read like the real server's.
use serde_json::Value;

/// A float64 as Go's `%v` prints it (`strconv.FormatFloat(f, 'g', -1, 64)`: shortest digits,
/// exponent form when the decimal exponent is < -4 or >= 6, so 1e6 prints as `1e+06`).
pub(crate) fn go_float(f: f64) -> String {
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
    // Rust's `{:e}` gives the shortest round-trip digits: "d.ddde±x".
    let sci = format!("{f:e}");
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let s = format!("{f}");
    s.strip_suffix(".0").map(str::to_string).unwrap_or(s)
}

/// A JSON number as Go prints the decoded value (`int64` exactly, `float64` with `%v`).
pub(crate) fn go_number(v: &Value) -> String {
    match v {
        Value::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.to_string()
            } else if let Some(u) = n.as_u64() {
                // Beyond int64 the server decodes to float64.
                go_float(u as f64)
            } else {
                go_float(n.as_f64().unwrap_or(0.0))
            }
        }
        other => other.to_string(),
    }
}

/// A bad value as `field.Error.ErrorBody` prints it: strings quoted, numbers and booleans bare,
/// `null` as `"null"`, anything else as JSON.
pub(crate) fn go_bad_value(v: &Value) -> String {
    match v {
        Value::Null => "\"null\"".into(),
        Value::String(s) => go_quote(s),
        Value::Number(_) => go_number(v),
        Value::Bool(b) => b.to_string(),
        other => other.to_string(),
    }
}

/// `strconv.Quote` for the printable cases (JSON escaping agrees with Go's for them).
pub(crate) fn go_quote(s: &str) -> String {
    Value::String(s.to_string()).to_string()
}

/// See [`super::normalize_numbers`].
pub(crate) fn normalize_numbers(v: &mut Value, depth: usize) {
    if depth > super::MAX_DEPTH {
        return;
    }
    match v {
        Value::Number(n) if !n.is_i64() => {
            let Some(f) = n.as_f64() else { return };
            // Go prints integral float64s below 1e21 as plain integers; a JSON reader then sees
            // an integer again (or a float when it overflows 64 bits).
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
        Value::Array(items) => items
            .iter_mut()
            .for_each(|x| normalize_numbers(x, depth + 1)),
        Value::Object(m) => m.values_mut().for_each(|x| normalize_numbers(x, depth + 1)),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn floats_print_like_go() {
        assert_eq!(go_float(10.0), "10");
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(-0.0), "-0");
        assert_eq!(go_float(1e21), "1e+21");
        assert_eq!(go_float(123456.0), "123456");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(123456789.0), "1.23456789e+08");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(18446744073709551615.0), "1.8446744073709552e+19");
    }

    #[test]
    fn numbers_normalize_like_a_go_round_trip() {
        let mut v: Value = serde_json::from_str(
            r#"{"a": 1.0, "b": -0.0, "c": 9007199254740993, "d": 18446744073709551615, "e": 1.5, "f": [1e3, 1e21], "g": -5}"#,
        )
        .unwrap();
        normalize_numbers(&mut v, 0);
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
        assert_eq!(go_bad_value(&json!(11)), "11");
        assert_eq!(go_bad_value(&json!("x")), "\"x\"");
        assert_eq!(go_bad_value(&json!(null)), "\"null\"");
        assert_eq!(go_bad_value(&json!(true)), "true");
        assert_eq!(go_bad_value(&json!(2.5)), "2.5");
    }
}
