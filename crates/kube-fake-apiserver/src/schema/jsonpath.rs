//! The subset of Kubernetes JSONPath that printer columns use: `.a.b`, `['x.y']`, `[0]`, `[-1]`,
//! `[1:3]`, `[*]`, `.*`, `..name`, `[?(@.type=="Ready")]`, optionally wrapped in `{...}`.
//! Missing keys give no result rather than an error (the server sets `AllowMissingKeys(true)`).
use serde_json::Value;

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    Slice(Option<i64>, Option<i64>, i64),
    Wildcard,
    Recursive(String),
    Filter(Filter),
    /// `['a','b']` / `[0,2]`: each alternative in turn.
    Union(Vec<Step>),
}

#[derive(Debug, Clone, PartialEq)]
enum Operand {
    /// `@.a.b` relative to the element under test.
    Path(Vec<Step>),
    Literal(Value),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    left: Operand,
    /// `None` means "left exists" (`[?(@.x)]`).
    cmp: Option<(String, Operand)>,
}

/// A parsed JSONPath expression.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    steps: Vec<Step>,
}

/// Nesting bound for filters inside filters; printer columns never come close.
const MAX_NESTING: usize = 16;

impl JsonPath {
    /// Parses `.spec.x`, `{.spec.x}` or `$.spec.x`.
    pub fn parse(expr: &str) -> Result<Self, String> {
        let mut e = expr.trim();
        if let Some(inner) = e.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
            e = inner.trim();
        }
        let mut p = Parser {
            s: e.as_bytes(),
            pos: 0,
            text: e,
        };
        let steps = p.steps(0)?;
        if p.pos != p.s.len() {
            return Err(format!(
                "unrecognized character in action: {:?}",
                &e[p.pos..]
            ));
        }
        Ok(Self { steps })
    }

    /// Every value the path selects, in document order.
    pub fn find<'a>(&self, obj: &'a Value) -> Vec<&'a Value> {
        eval(&self.steps, vec![obj])
    }
}

struct Parser<'s> {
    s: &'s [u8],
    pos: usize,
    text: &'s str,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.pos).copied()
    }

    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t')) {
            self.pos += 1;
        }
    }

    /// Steps until the end or a character that ends a sub-path inside a filter.
    fn steps(&mut self, nesting: usize) -> Result<Vec<Step>, String> {
        if nesting > MAX_NESTING {
            return Err("expression nested too deeply".into());
        }
        let mut steps = Vec::new();
        if self.peek() == Some(b'$') {
            self.pos += 1;
        }
        loop {
            match self.peek() {
                Some(b'.') => {
                    self.pos += 1;
                    if self.peek() == Some(b'.') {
                        self.pos += 1;
                        let name = self.name();
                        if name.is_empty() {
                            return Err("missing field name after '..'".into());
                        }
                        steps.push(Step::Recursive(name));
                    } else if self.peek() == Some(b'*') {
                        self.pos += 1;
                        steps.push(Step::Wildcard);
                    } else {
                        let name = self.name();
                        // A lone "." (e.g. `{.}`) selects the current object.
                        if !name.is_empty() {
                            steps.push(Step::Field(name));
                        }
                    }
                }
                Some(b'[') => {
                    self.pos += 1;
                    steps.push(self.bracket(nesting)?);
                }
                _ => return Ok(steps),
            }
        }
    }

    /// A field name after `.`: up to the next `.`, `[`, or a filter delimiter; `\.` escapes a dot.
    fn name(&mut self) -> String {
        let mut out = String::new();
        while let Some(c) = self.peek() {
            match c {
                b'\\' if self.s.get(self.pos + 1) == Some(&b'.') => {
                    out.push('.');
                    self.pos += 2;
                }
                b'.' | b'[' | b']' | b')' | b' ' | b'\t' | b'=' | b'!' | b'<' | b'>' | b'}' => {
                    break;
                }
                _ => {
                    let ch = self.text[self.pos..].chars().next().unwrap_or('\u{fffd}');
                    out.push(ch);
                    self.pos += ch.len_utf8().max(1);
                }
            }
        }
        out
    }

    fn bracket(&mut self, nesting: usize) -> Result<Step, String> {
        self.skip_ws();
        let step = match self.peek() {
            Some(b'\'' | b'"') => Step::Field(self.quoted()?),
            Some(b'*') => {
                self.pos += 1;
                Step::Wildcard
            }
            Some(b'?') => {
                self.pos += 1;
                self.skip_ws();
                self.expect(b'(')?;
                let filter = self.filter(nesting)?;
                self.skip_ws();
                self.expect(b')')?;
                Step::Filter(filter)
            }
            _ => self.index_or_slice()?,
        };
        self.skip_ws();
        if self.peek() == Some(b',') && matches!(step, Step::Field(_) | Step::Index(_)) {
            let mut alternatives = vec![step];
            while self.peek() == Some(b',') {
                self.pos += 1;
                self.skip_ws();
                let next = match self.peek() {
                    Some(b'\'' | b'"') => Step::Field(self.quoted()?),
                    _ => match self.index_or_slice()? {
                        i @ Step::Index(_) => i,
                        _ => return Err(format!("unsupported union member in {:?}", self.text)),
                    },
                };
                alternatives.push(next);
                self.skip_ws();
            }
            self.expect(b']')?;
            return Ok(Step::Union(alternatives));
        }
        self.expect(b']')?;
        Ok(step)
    }

    fn expect(&mut self, c: u8) -> Result<(), String> {
        if self.peek() == Some(c) {
            self.pos += 1;
            Ok(())
        } else {
            Err(format!(
                "expected {:?} at position {} of {:?}",
                c as char, self.pos, self.text
            ))
        }
    }

    fn quoted(&mut self) -> Result<String, String> {
        let quote = self.peek().ok_or("unexpected end")?;
        self.pos += 1;
        let start = self.pos;
        while let Some(c) = self.peek() {
            if c == quote {
                let s = self.text[start..self.pos].to_string();
                self.pos += 1;
                return Ok(s);
            }
            self.pos += 1;
        }
        Err(format!("unterminated quote in {:?}", self.text))
    }

    fn int(&mut self) -> Result<Option<i64>, String> {
        self.skip_ws();
        let start = self.pos;
        if self.peek() == Some(b'-') {
            self.pos += 1;
        }
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.pos += 1;
        }
        let digits = &self.text[start..self.pos];
        self.skip_ws();
        if digits.is_empty() {
            return Ok(None);
        }
        digits
            .parse()
            .map(Some)
            .map_err(|_| format!("invalid array index {digits:?}"))
    }

    fn index_or_slice(&mut self) -> Result<Step, String> {
        let first = self.int()?;
        if self.peek() != Some(b':') {
            return first
                .map(Step::Index)
                .ok_or_else(|| format!("invalid array index in {:?}", self.text));
        }
        self.pos += 1;
        let end = self.int()?;
        let mut step = 1;
        if self.peek() == Some(b':') {
            self.pos += 1;
            step = self.int()?.unwrap_or(1);
        }
        if step <= 0 {
            return Err("step must be positive".into());
        }
        Ok(Step::Slice(first, end, step))
    }

    fn filter(&mut self, nesting: usize) -> Result<Filter, String> {
        let left = self.operand(nesting)?;
        self.skip_ws();
        let op = ["==", "!=", "<=", ">=", "<", ">", "="]
            .into_iter()
            .find(|op| self.text[self.pos..].starts_with(op));
        let Some(op) = op else {
            return Ok(Filter { left, cmp: None });
        };
        self.pos += op.len();
        let right = self.operand(nesting)?;
        let op = if op == "=" { "==" } else { op };
        Ok(Filter {
            left,
            cmp: Some((op.to_string(), right)),
        })
    }

    fn operand(&mut self, nesting: usize) -> Result<Operand, String> {
        self.skip_ws();
        match self.peek() {
            Some(b'@') => {
                self.pos += 1;
                Ok(Operand::Path(self.steps(nesting + 1)?))
            }
            Some(b'\'' | b'"') => Ok(Operand::Literal(Value::String(self.quoted()?))),
            _ => {
                let start = self.pos;
                while let Some(c) = self.peek() {
                    if matches!(c, b')' | b' ' | b'\t' | b'=' | b'!' | b'<' | b'>') {
                        break;
                    }
                    self.pos += 1;
                }
                let word = &self.text[start..self.pos];
                match word {
                    "true" => Ok(Operand::Literal(Value::Bool(true))),
                    "false" => Ok(Operand::Literal(Value::Bool(false))),
                    "nil" | "null" => Ok(Operand::Literal(Value::Null)),
                    _ => serde_json::from_str::<serde_json::Number>(word)
                        .map(|n| Operand::Literal(Value::Number(n)))
                        .map_err(|_| format!("unrecognized filter operand {word:?}")),
                }
            }
        }
    }
}

fn eval<'a>(steps: &[Step], mut current: Vec<&'a Value>) -> Vec<&'a Value> {
    for step in steps {
        let mut next = Vec::new();
        for v in current {
            apply(step, v, &mut next);
        }
        current = next;
    }
    current
}

fn apply<'a>(step: &Step, v: &'a Value, out: &mut Vec<&'a Value>) {
    match step {
        Step::Field(name) => {
            if let Some(x) = v.as_object().and_then(|m| m.get(name)) {
                out.push(x);
            }
        }
        Step::Index(i) => {
            if let Some(items) = v.as_array() {
                let len = items.len() as i64;
                let idx = if *i < 0 { len + i } else { *i };
                if (0..len).contains(&idx) {
                    out.push(&items[idx as usize]);
                }
            }
        }
        Step::Slice(start, end, step) => {
            if let Some(items) = v.as_array() {
                let len = items.len() as i64;
                let clamp = |x: i64| if x < 0 { (len + x).max(0) } else { x.min(len) };
                let (s, e) = (clamp(start.unwrap_or(0)), clamp(end.unwrap_or(len)));
                let mut i = s;
                while i < e {
                    out.push(&items[i as usize]);
                    i += step;
                }
            }
        }
        Step::Wildcard => match v {
            Value::Object(m) => out.extend(m.values()),
            Value::Array(a) => out.extend(a.iter()),
            _ => {}
        },
        Step::Recursive(name) => recursive(name, v, out, 0),
        Step::Union(alternatives) => {
            for alt in alternatives {
                apply(alt, v, out);
            }
        }
        Step::Filter(f) => {
            if let Some(items) = v.as_array() {
                out.extend(items.iter().filter(|item| f.matches(item)));
            }
        }
    }
}

fn recursive<'a>(name: &str, v: &'a Value, out: &mut Vec<&'a Value>, depth: usize) {
    if depth > crate::schema::MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(m) => {
            if let Some(x) = m.get(name) {
                out.push(x);
            }
            for x in m.values() {
                recursive(name, x, out, depth + 1);
            }
        }
        Value::Array(a) => {
            for x in a {
                recursive(name, x, out, depth + 1);
            }
        }
        _ => {}
    }
}

impl Operand {
    fn resolve<'a>(&'a self, item: &'a Value) -> Option<&'a Value> {
        match self {
            Operand::Path(steps) => eval(steps, vec![item]).into_iter().next(),
            Operand::Literal(v) => Some(v),
        }
    }
}

impl Filter {
    fn matches(&self, item: &Value) -> bool {
        let Some(left) = self.left.resolve(item) else {
            return false;
        };
        let Some((op, right)) = &self.cmp else {
            return true;
        };
        let Some(right) = right.resolve(item) else {
            return false;
        };
        let ord = match (left, right) {
            (Value::Number(a), Value::Number(b)) => a
                .as_f64()
                .zip(b.as_f64())
                .and_then(|(a, b)| a.partial_cmp(&b)),
            (Value::String(a), Value::String(b)) => Some(a.cmp(b)),
            (a, b) if a == b => Some(std::cmp::Ordering::Equal),
            _ => None,
        };
        use std::cmp::Ordering::*;
        match (op.as_str(), ord) {
            ("==", Some(Equal)) => true,
            ("!=", o) => o != Some(Equal),
            ("<", Some(Less)) | (">", Some(Greater)) => true,
            ("<=", Some(Less | Equal)) | (">=", Some(Greater | Equal)) => true,
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn find(expr: &str, obj: &Value) -> Vec<Value> {
        JsonPath::parse(expr)
            .unwrap()
            .find(obj)
            .into_iter()
            .cloned()
            .collect()
    }

    fn sample() -> Value {
        json!({
            "metadata": {"name": "x", "labels": {"app.kubernetes.io/name": "web"}},
            "spec": {"replicas": 3, "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]},
            "status": {"conditions": [
                {"type": "Ready", "status": "True"},
                {"type": "Synced", "status": "False"}
            ]}
        })
    }

    #[test]
    fn fields_indexes_and_wildcards() {
        let o = sample();
        assert_eq!(find(".spec.replicas", &o), vec![json!(3)]);
        assert_eq!(find("{.spec.replicas}", &o), vec![json!(3)]);
        assert_eq!(find("$.spec.replicas", &o), vec![json!(3)]);
        assert_eq!(find(".spec.ports[0].port", &o), vec![json!(80)]);
        assert_eq!(find(".spec.ports[-1].name", &o), vec![json!("https")]);
        assert_eq!(find(".spec.ports[*].port", &o), vec![json!(80), json!(443)]);
        assert_eq!(find(".spec.ports[0:1].name", &o), vec![json!("http")]);
        assert_eq!(
            find(".metadata.labels['app.kubernetes.io/name']", &o),
            vec![json!("web")]
        );
        assert_eq!(
            find(".metadata.labels.app\\.kubernetes\\.io/name", &o),
            vec![json!("web")]
        );
        assert_eq!(find("..port", &o), vec![json!(80), json!(443)]);
        assert_eq!(
            find(".spec.ports[1,0].port", &o),
            vec![json!(443), json!(80)]
        );
        assert_eq!(find(".spec['replicas', 'nothing']", &o), vec![json!(3)]);
    }

    #[test]
    fn missing_keys_and_out_of_range_give_nothing() {
        let o = sample();
        assert!(find(".spec.nothing.deeper", &o).is_empty());
        assert!(find(".spec.ports[5].port", &o).is_empty());
        assert!(find(".spec.replicas[0]", &o).is_empty());
    }

    #[test]
    fn filters() {
        let o = sample();
        assert_eq!(
            find(r#".status.conditions[?(@.type=="Ready")].status"#, &o),
            vec![json!("True")]
        );
        assert_eq!(
            find(".status.conditions[?(@.type=='Synced')].status", &o),
            vec![json!("False")]
        );
        assert_eq!(
            find(".status.conditions[?(@.type!='Ready')].type", &o),
            vec![json!("Synced")]
        );
        assert_eq!(
            find(".spec.ports[?(@.port > 100)].name", &o),
            vec![json!("https")]
        );
        assert_eq!(find(".spec.ports[?(@.name)].port", &o).len(), 2);
    }

    #[test]
    fn bad_expressions_are_errors_not_panics() {
        for bad in [
            ".a[",
            ".a['x",
            ".a[?(@.x==)]",
            ".a[x]",
            ".a[0:1:0]",
            "..",
            "{.a}}",
        ] {
            assert!(JsonPath::parse(bad).is_err(), "{bad} should not parse");
        }
    }
}

#[cfg(test)]
mod robustness {
    /// Arbitrary input never panics the parsers (a tiny deterministic generator, no extra deps).
    #[test]
    fn random_expressions_and_selectors_do_not_panic() {
        const ALPHABET: &[&str] = &[
            ".", "..", "[", "]", "(", ")", "?", "@", "'", "\"", "*", ":", "-", "1", "0", "a", "b",
            "=", "==", "!", "!=", "<", ">", ",", " ", "{", "}", "$", "\\", "ü", "in", "notin", "/",
            "é.x",
        ];
        let obj = serde_json::json!({"a": [{"b": 1}, {"b": "x"}], "b": {"a": [1, 2]}});
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..4000 {
            let mut s = String::new();
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let len = (seed % 12) as usize;
            for i in 0..len {
                let r = seed.rotate_left(i as u32 * 5);
                s.push_str(ALPHABET[(r % ALPHABET.len() as u64) as usize]);
            }
            if let Ok(p) = super::JsonPath::parse(&s) {
                let _ = p.find(&obj);
            }
            let _ = crate::selector::LabelSelector::parse(&s).map(|l| l.matches(&obj));
            let _ = crate::selector::FieldSelector::parse(&s).map(|f| f.matches(&obj));
        }
    }
}
