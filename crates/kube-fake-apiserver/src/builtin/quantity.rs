//! `resource.Quantity` enough to compare requests with limits and reject what does not parse.
use serde_json::Value;

/// The decoder's error for a quantity that does not parse (a 400, not a 422).
pub const PARSE_ERROR: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";

/// The value of a quantity (a JSON string or number), `None` when it does not parse.
pub fn parse(v: &Value) -> Option<f64> {
    match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => parse_str(s),
        _ => None,
    }
}

fn parse_str(s: &str) -> Option<f64> {
    let s = s.trim();
    let split = s
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(s.len());
    let (num, suffix) = s.split_at(split);
    if num.is_empty() || num.matches('.').count() > 1 || num[1..].contains(['+', '-']) {
        return None;
    }
    let n: f64 = num.parse().ok()?;
    let mult = match suffix {
        "" => 1.0,
        "n" => 1e-9,
        "u" => 1e-6,
        "m" => 1e-3,
        "k" => 1e3,
        "M" => 1e6,
        "G" => 1e9,
        "T" => 1e12,
        "P" => 1e15,
        "E" => 1e18,
        "Ki" => 1024f64,
        "Mi" => 1024f64.powi(2),
        "Gi" => 1024f64.powi(3),
        "Ti" => 1024f64.powi(4),
        "Pi" => 1024f64.powi(5),
        "Ei" => 1024f64.powi(6),
        e if e.starts_with(['e', 'E']) => 10f64.powi(e[1..].parse::<i32>().ok()?),
        _ => return None,
    };
    Some(n * mult)
}

/// The quantity as the server prints it back (`Quantity.String()`); the text as sent here.
pub fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn parses() {
        assert_eq!(parse(&json!("500m")), Some(0.5));
        assert_eq!(parse(&json!("1Gi")), Some(1073741824.0));
        assert_eq!(parse(&json!("1e3")), Some(1000.0));
        assert_eq!(parse(&json!(2)), Some(2.0));
        assert_eq!(parse(&json!("abc")), None);
        assert_eq!(parse(&json!("1Xi")), None);
    }
}

/// How a quantity is written: its suffix family decides how the server prints it back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Format {
    DecimalSI,
    BinarySI,
    DecimalExponent,
}

/// The value in nano-units (rounded up) and the format, `None` when it does not parse.
fn parse_nano(v: &Value) -> Option<(i128, Format)> {
    let text = match v {
        Value::String(s) => s.trim().to_string(),
        Value::Number(n) => n.to_string(),
        _ => return None,
    };
    parse(v)?;
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '+' || c == '-'))
        .unwrap_or(text.len());
    let (num, suffix) = text.split_at(split);
    let (neg, num) = match num.strip_prefix('-') {
        Some(rest) => (true, rest),
        None => (false, num.strip_prefix('+').unwrap_or(num)),
    };
    let (int, frac) = num.split_once('.').unwrap_or((num, ""));
    let int: i128 = if int.is_empty() { 0 } else { int.parse().ok()? };
    let mut frac_nano: i128 = 0;
    let mut round_up = false;
    for (k, c) in frac.chars().enumerate() {
        let d = i128::from(c.to_digit(10)? as u8);
        if k < 9 {
            frac_nano += d * 10i128.pow(8 - k as u32);
        } else if d != 0 {
            round_up = true;
        }
    }
    let mut nano = int * 1_000_000_000 + frac_nano + i128::from(round_up);
    let (format, scale): (Format, Scale) = match suffix {
        "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" => {
            let k = ["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
                .iter()
                .position(|s| *s == suffix)? as u32
                + 1;
            (Format::BinarySI, Scale::Mul(1024i128.pow(k)))
        }
        e if e.starts_with(['e', 'E']) => {
            (Format::DecimalExponent, Scale::Pow10(e[1..].parse().ok()?))
        }
        "n" => (Format::DecimalSI, Scale::Pow10(-9)),
        "u" => (Format::DecimalSI, Scale::Pow10(-6)),
        "m" => (Format::DecimalSI, Scale::Pow10(-3)),
        "" => (Format::DecimalSI, Scale::Pow10(0)),
        "k" => (Format::DecimalSI, Scale::Pow10(3)),
        "M" => (Format::DecimalSI, Scale::Pow10(6)),
        "G" => (Format::DecimalSI, Scale::Pow10(9)),
        "T" => (Format::DecimalSI, Scale::Pow10(12)),
        "P" => (Format::DecimalSI, Scale::Pow10(15)),
        "E" => (Format::DecimalSI, Scale::Pow10(18)),
        _ => return None,
    };
    nano = match scale {
        Scale::Mul(m) => nano.checked_mul(m)?,
        Scale::Pow10(p) if p >= 0 => nano.checked_mul(10i128.checked_pow(p as u32)?)?,
        Scale::Pow10(p) => {
            let d = 10i128.checked_pow((-p) as u32)?;
            (nano + d - 1) / d
        }
    };
    Some((if neg { -nano } else { nano }, format))
}

#[derive(Clone, Copy)]
enum Scale {
    Mul(i128),
    Pow10(i32),
}

/// `SetDefaults_ResourceList` (rounded up to milli-units) and `Quantity.String()`'s canonical
/// form: `0.5` is `500m`, `1000` is `1k`, `1024Mi` is `1Gi`, `1536Mi` stays. Values that do not
/// parse are left (the decoder refused them already).
pub fn canonical(v: &Value) -> Option<Value> {
    let (nano, format) = parse_nano(v)?;
    // Round up to milli-units (away from zero, as `RoundUp`).
    let milli = if nano >= 0 {
        (nano + 999_999) / 1_000_000
    } else {
        -((-nano + 999_999) / 1_000_000)
    };
    if milli == 0 {
        return Some(Value::String("0".into()));
    }
    let (neg, abs) = (milli < 0, milli.abs());
    let sign = if neg { "-" } else { "" };
    if format == Format::BinarySI && abs % 1000 == 0 && abs / 1000 >= 1024 {
        let mut n = abs / 1000;
        let mut k = 0;
        while k < 6 && n % 1024 == 0 {
            n /= 1024;
            k += 1;
        }
        let suffix = ["", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"][k];
        return Some(Value::String(format!("{sign}{n}{suffix}")));
    }
    // Decimal: the largest exponent, a multiple of 3, that leaves an integer mantissa.
    let mut mantissa = abs;
    let mut exp: i32 = -3;
    while mantissa % 1000 == 0 && exp < 18 {
        mantissa /= 1000;
        exp += 3;
    }
    let text = match format {
        Format::DecimalExponent if exp != 0 => format!("{sign}{mantissa}e{exp}"),
        Format::DecimalExponent => format!("{sign}{mantissa}"),
        _ => {
            let suffix = match exp {
                -3 => "m",
                0 => "",
                3 => "k",
                6 => "M",
                9 => "G",
                12 => "T",
                15 => "P",
                _ => "E",
            };
            format!("{sign}{mantissa}{suffix}")
        }
    };
    Some(Value::String(text))
}

/// Canonicalizes every quantity of the resource list at `list` (an object).
pub fn canonical_list(list: Option<&mut Value>) {
    if let Some(m) = list.and_then(Value::as_object_mut) {
        for v in m.values_mut() {
            if let Some(c) = canonical(v) {
                *v = c;
            }
        }
    }
}

#[cfg(test)]
mod canonical_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn canonical_forms() {
        let c = |v: Value| canonical(&v).unwrap();
        assert_eq!(c(json!("0.5")), "500m");
        assert_eq!(c(json!(0.5)), "500m");
        assert_eq!(c(json!("1000")), "1k");
        assert_eq!(c(json!("1500")), "1500");
        assert_eq!(c(json!(2)), "2");
        assert_eq!(c(json!("2000m")), "2");
        assert_eq!(c(json!("100m")), "100m");
        assert_eq!(c(json!("0.0001")), "1m");
        assert_eq!(c(json!("1024Mi")), "1Gi");
        assert_eq!(c(json!("1536Mi")), "1536Mi");
        assert_eq!(c(json!("128Mi")), "128Mi");
        assert_eq!(c(json!("0.5Gi")), "512Mi");
        assert_eq!(c(json!("512")), "512");
        assert_eq!(c(json!("1e3")), "1e3");
        assert_eq!(c(json!("1G")), "1G");
        assert_eq!(c(json!("0")), "0");
    }
}
