//! Label and field selectors, parsed and matched as apimachinery's `labels.Parse` and
//! `fields.ParseSelector` do (same grammar, same error wording).
use serde_json::Value;

/// Error for a selector string that does not parse; the message is what the API server returns in a 400.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SelectorError(pub String);

/// Operator of one label requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LabelOp {
    /// `=` / `==`
    Equals,
    NotEquals,
    In,
    NotIn,
    /// `key`
    Exists,
    /// `!key`
    DoesNotExist,
    /// `key > 5` (the label value must parse as an integer)
    GreaterThan,
    LessThan,
}

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub key: String,
    pub op: LabelOp,
    /// Sorted and deduplicated, as apimachinery keeps them.
    pub values: Vec<String>,
}

impl Requirement {
    fn matches(&self, labels: Option<&serde_json::Map<String, Value>>) -> bool {
        let value = labels
            .and_then(|l| l.get(&self.key))
            .and_then(Value::as_str);
        match self.op {
            LabelOp::Equals | LabelOp::In => {
                value.is_some_and(|v| self.values.iter().any(|x| x == v))
            }
            LabelOp::NotEquals | LabelOp::NotIn => {
                !value.is_some_and(|v| self.values.iter().any(|x| x == v))
            }
            LabelOp::Exists => value.is_some(),
            LabelOp::DoesNotExist => value.is_none(),
            LabelOp::GreaterThan | LabelOp::LessThan => {
                let (Some(v), Some(bound)) = (value, self.values.first()) else {
                    return false;
                };
                let (Ok(v), Ok(bound)) = (v.parse::<i64>(), bound.parse::<i64>()) else {
                    return false;
                };
                if self.op == LabelOp::GreaterThan {
                    v > bound
                } else {
                    v < bound
                }
            }
        }
    }
}

/// A parsed `labelSelector` (`=`, `==`, `!=`, `in`, `notin`, `key`, `!key`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
}

impl LabelSelector {
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let tokens = lex(s);
        let mut p = LabelParser { tokens, pos: 0 };
        let mut requirements = p.parse().map_err(SelectorError)?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self { requirements })
    }
    /// Matches against the object's `metadata.labels`.
    pub fn matches(&self, obj: &Value) -> bool {
        let labels = crate::util::meta(obj, "labels").and_then(Value::as_object);
        self.requirements.iter().all(|r| r.matches(labels))
    }
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
    /// The requirements, sorted by key.
    #[cfg(test)]
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Ident(String),
    /// `in` / `notin`: identifiers in value position, operators after a key.
    Keyword(String),
    Not,
    Eq,
    DoubleEq,
    NotEq,
    Gt,
    Lt,
    Open,
    Close,
    Comma,
    Error(String),
    End,
}

impl Tok {
    /// The literal the error messages quote.
    fn literal(&self) -> String {
        match self {
            Tok::Ident(s) | Tok::Keyword(s) | Tok::Error(s) => s.clone(),
            Tok::Not => "!".into(),
            Tok::Eq => "=".into(),
            Tok::DoubleEq => "==".into(),
            Tok::NotEq => "!=".into(),
            Tok::Gt => ">".into(),
            Tok::Lt => "<".into(),
            Tok::Open => "(".into(),
            Tok::Close => ")".into(),
            Tok::Comma => ",".into(),
            Tok::End => String::new(),
        }
    }

    /// In value context `in`/`notin` are plain identifiers.
    fn as_value(&self) -> Tok {
        match self {
            Tok::Keyword(s) => Tok::Ident(s.clone()),
            other => other.clone(),
        }
    }
}

fn is_special(c: char) -> bool {
    matches!(c, '=' | '!' | '(' | ')' | ',' | '>' | '<')
}

fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\r' | '\n')
}

fn symbol(s: &str) -> Option<Tok> {
    Some(match s {
        "!" => Tok::Not,
        "=" => Tok::Eq,
        "==" => Tok::DoubleEq,
        "!=" => Tok::NotEq,
        ">" => Tok::Gt,
        "<" => Tok::Lt,
        "(" => Tok::Open,
        ")" => Tok::Close,
        "," => Tok::Comma,
        _ => return None,
    })
}

fn lex(s: &str) -> Vec<Tok> {
    let chars: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut out = Vec::new();
    loop {
        while i < chars.len() && is_space(chars[i]) {
            i += 1;
        }
        if i >= chars.len() {
            out.push(Tok::End);
            return out;
        }
        if is_special(chars[i]) {
            // Longest run of special characters that still forms a known symbol.
            let mut buf = String::new();
            let mut last: Option<(Tok, usize)> = None;
            let mut j = i;
            while j < chars.len() && is_special(chars[j]) {
                buf.push(chars[j]);
                j += 1;
                match symbol(&buf) {
                    Some(t) => last = Some((t, j)),
                    None if last.is_some() => break,
                    None => {}
                }
            }
            match last {
                Some((t, end)) => {
                    out.push(t);
                    i = end;
                }
                None => {
                    out.push(Tok::Error(format!("error expected: keyword found '{buf}'")));
                    i = j;
                }
            }
        } else {
            let start = i;
            while i < chars.len() && !is_special(chars[i]) && !is_space(chars[i]) {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect();
            if word == "in" || word == "notin" {
                out.push(Tok::Keyword(word));
            } else {
                out.push(Tok::Ident(word));
            }
        }
    }
}

struct LabelParser {
    tokens: Vec<Tok>,
    pos: usize,
}

impl LabelParser {
    fn lookahead(&self) -> Tok {
        self.tokens
            .get(self.pos)
            .cloned()
            .unwrap_or(Tok::End)
            .as_value()
    }

    fn consume_raw(&mut self) -> Tok {
        let t = self.tokens.get(self.pos).cloned().unwrap_or(Tok::End);
        if t != Tok::End {
            self.pos += 1;
        }
        t
    }

    fn consume(&mut self) -> Tok {
        self.consume_raw().as_value()
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut out = Vec::new();
        loop {
            match self.lookahead() {
                Tok::Ident(_) | Tok::Not => {
                    let r = self
                        .requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    out.push(r);
                    match self.consume() {
                        Tok::End => return Ok(out),
                        Tok::Comma => {
                            let next = self.lookahead();
                            if !matches!(next, Tok::Ident(_) | Tok::Not) {
                                return Err(format!(
                                    "found '{}', expected: identifier after ','",
                                    next.literal()
                                ));
                            }
                        }
                        other => {
                            return Err(format!(
                                "found '{}', expected: ',' or 'end of string'",
                                other.literal()
                            ));
                        }
                    }
                }
                Tok::End => return Ok(out),
                other => {
                    return Err(format!(
                        "found '{}', expected: !, identifier, or 'end of string'",
                        other.literal()
                    ));
                }
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, String> {
        let mut tok = self.consume();
        let negated = tok == Tok::Not;
        if negated {
            tok = self.consume();
        }
        let Tok::Ident(key) = tok else {
            return Err(format!("found '{}', expected: identifier", tok.literal()));
        };
        if let Some(e) = validate_key(&key) {
            return Err(e);
        }
        // "!key" ends the requirement whatever follows (the caller then rejects a stray operator).
        if negated {
            return Ok(Requirement {
                key,
                op: LabelOp::DoesNotExist,
                values: Vec::new(),
            });
        }
        if matches!(self.lookahead(), Tok::End | Tok::Comma) {
            return Ok(Requirement {
                key,
                op: LabelOp::Exists,
                values: Vec::new(),
            });
        }
        let op = match self.consume_raw() {
            Tok::Keyword(k) if k == "in" => LabelOp::In,
            Tok::Keyword(_) => LabelOp::NotIn,
            Tok::Eq | Tok::DoubleEq => LabelOp::Equals,
            Tok::NotEq => LabelOp::NotEquals,
            Tok::Gt => LabelOp::GreaterThan,
            Tok::Lt => LabelOp::LessThan,
            other => {
                return Err(format!(
                    "found '{}', expected: '=', '!=', '==', 'in', notin'",
                    other.literal()
                ));
            }
        };
        let mut values = match op {
            LabelOp::In | LabelOp::NotIn => self.set_values()?,
            _ => self.exact_value()?,
        };
        values.sort();
        values.dedup();
        new_requirement(key, op, values)
    }

    fn exact_value(&mut self) -> Result<Vec<String>, String> {
        if matches!(self.lookahead(), Tok::End | Tok::Comma) {
            return Ok(vec![String::new()]);
        }
        match self.consume() {
            Tok::Ident(v) => Ok(vec![v]),
            other => Err(format!("found '{}', expected: identifier", other.literal())),
        }
    }

    fn set_values(&mut self) -> Result<Vec<String>, String> {
        let open = self.consume();
        if open != Tok::Open {
            return Err(format!("found '{}' expected: '('", open.literal()));
        }
        match self.lookahead() {
            Tok::Ident(_) | Tok::Comma => {
                let list = self.identifier_list()?;
                let close = self.consume();
                if close != Tok::Close {
                    return Err(format!("found '{}', expected: ')'", close.literal()));
                }
                Ok(list)
            }
            Tok::Close => {
                self.consume();
                Ok(vec![String::new()])
            }
            other => Err(format!(
                "found '{}', expected: ',', ')' or identifier",
                other.literal()
            )),
        }
    }

    fn identifier_list(&mut self) -> Result<Vec<String>, String> {
        let mut list = Vec::new();
        loop {
            match self.consume() {
                Tok::Ident(v) => {
                    list.push(v);
                    match self.lookahead() {
                        Tok::Comma => continue,
                        Tok::Close => return Ok(list),
                        other => {
                            return Err(format!(
                                "found '{}', expected: ',' or ')'",
                                other.literal()
                            ));
                        }
                    }
                }
                Tok::Comma => {
                    // "(,", ",)" and ",," stand for empty values.
                    if list.is_empty() {
                        list.push(String::new());
                    }
                    match self.lookahead() {
                        Tok::Close => {
                            list.push(String::new());
                            return Ok(list);
                        }
                        Tok::Comma => {
                            self.consume();
                            list.push(String::new());
                        }
                        _ => {}
                    }
                }
                other => {
                    return Err(format!(
                        "found '{}', expected: ',', or identifier",
                        other.literal()
                    ));
                }
            }
        }
    }
}

/// `labels.NewRequirement`: checks the values (the key was checked while parsing).
fn new_requirement(key: String, op: LabelOp, values: Vec<String>) -> Result<Requirement, String> {
    let mut errs = Vec::new();
    match op {
        LabelOp::In | LabelOp::NotIn if values.is_empty() => {
            errs.push("values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty".into());
        }
        LabelOp::GreaterThan | LabelOp::LessThan => {
            for (i, v) in values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errs.push(format!(
                        "values[{i}]: Invalid value: {v:?}: for 'Gt', 'Lt' operators, the value must be an integer"
                    ));
                }
            }
        }
        _ => {}
    }
    for (i, v) in values.iter().enumerate() {
        let problems = label_value_errors(v);
        if !problems.is_empty() {
            errs.push(format!(
                "values[{i}][{key}]: Invalid value: {v:?}: {}",
                problems.join("; ")
            ));
        }
    }
    match errs.len() {
        0 => Ok(Requirement { key, op, values }),
        1 => Err(errs.remove(0)),
        _ => Err(format!("[{}]", errs.join(", "))),
    }
}

/// apimachinery's name checks, shared with the CRD validator.
pub(crate) use kube_codegen_crd::k8s_validation::{
    label_value as label_value_errors, qualified_name as qualified_name_errors,
};

/// The key check as the parser reports it (a field error with a nil path prints as `<nil>`).
fn validate_key(key: &str) -> Option<String> {
    let errs = qualified_name_errors(key);
    (!errs.is_empty()).then(|| format!("<nil>: Invalid value: {key:?}: {}", errs.join("; ")))
}

/// Operator of one field requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FieldOp {
    Equals,
    NotEquals,
}

/// One `field=value` / `field!=value` term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRequirement {
    /// Dotted path into the object, e.g. `metadata.name`.
    pub field: String,
    pub op: FieldOp,
    pub value: String,
}

/// A parsed `fieldSelector` (`label=value`, `==`, `!=` terms). Which labels a resource accepts
/// and what they read is [`crate::field_labels`]' business.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector {
    requirements: Vec<FieldRequirement>,
}

impl FieldSelector {
    pub fn parse(s: &str) -> Result<Self, SelectorError> {
        let mut terms = split_unescaped(s, ',');
        terms.sort();
        let mut requirements = Vec::new();
        for term in terms {
            if term.is_empty() {
                continue;
            }
            let Some((lhs, op, rhs)) = split_term(&term) else {
                return Err(SelectorError(format!(
                    "invalid selector: '{s}'; can't understand '{term}'"
                )));
            };
            let value = unescape(rhs).map_err(SelectorError)?;
            requirements.push(FieldRequirement {
                field: lhs.trim().to_string(),
                op,
                value,
            });
        }
        Ok(Self { requirements })
    }
    /// Each label read as a dotted path (what a custom resource's labels do).
    #[cfg(test)]
    pub fn matches(&self, obj: &Value) -> bool {
        self.requirements.iter().all(|r| {
            let actual = field_value(obj, &r.field);
            (actual == r.value) == (r.op == FieldOp::Equals)
        })
    }
    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.requirements.is_empty()
    }
    /// The terms, sorted as Go's parser sorts them.
    pub fn requirements(&self) -> &[FieldRequirement] {
        &self.requirements
    }
}

/// The object's value at a dotted path, rendered as a field label value.
pub(crate) fn field_value(obj: &Value, path: &str) -> String {
    let mut cur = obj;
    for part in path.split('.') {
        match cur.get(part) {
            Some(v) => cur = v,
            None => return String::new(),
        }
    }
    match cur {
        Value::String(s) => s.clone(),
        Value::Null => String::new(),
        Value::Number(_) => crate::schema::go_number(cur),
        other => other.to_string(),
    }
}

/// Splits on `sep` not preceded by a backslash escape (escapes are kept for `unescape`).
fn split_unescaped(s: &str, sep: char) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut escaped = false;
    for c in s.chars() {
        if escaped {
            cur.push(c);
            escaped = false;
        } else if c == '\\' {
            cur.push(c);
            escaped = true;
        } else if c == sep {
            out.push(std::mem::take(&mut cur));
        } else {
            cur.push(c);
        }
    }
    out.push(cur);
    out
}

/// First operator in the term, trying `!=`, `==`, `=` at each position.
fn split_term(term: &str) -> Option<(&str, FieldOp, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for (op, kind) in [
            ("!=", FieldOp::NotEquals),
            ("==", FieldOp::Equals),
            ("=", FieldOp::Equals),
        ] {
            if rest.starts_with(op) {
                return Some((&term[..i], kind, &term[i + op.len()..]));
            }
        }
    }
    None
}

/// `fields.UnescapeValue`: `\\`, `\,`, `\=` are the only escapes; bare `,`/`=` are invalid.
fn unescape(s: &str) -> Result<String, String> {
    let mut out = String::new();
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e @ ('\\' | ',' | '=')) => out.push(e),
                Some(e) => {
                    return Err(format!(
                        "invalid field selector: invalid escape sequence: \\{e}"
                    ));
                }
                None => return Err("invalid field selector: invalid escape sequence: \\".into()),
            },
            ',' | '=' => {
                return Err(format!(
                    "invalid field selector: unescaped character in value: {c}"
                ));
            }
            c => out.push(c),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn obj(labels: Value) -> Value {
        json!({"metadata": {"name": "a", "namespace": "ns1", "labels": labels}, "spec": {"n": 3}})
    }

    fn sel(s: &str) -> LabelSelector {
        LabelSelector::parse(s).unwrap_or_else(|e| panic!("{s}: {e}"))
    }

    #[test]
    fn equality_operators() {
        let o = obj(json!({"app": "web", "tier": "front"}));
        assert!(sel("app=web").matches(&o));
        assert!(sel("app==web").matches(&o));
        assert!(!sel("app!=web").matches(&o));
        assert!(sel("app!=db").matches(&o));
        assert!(
            sel("missing!=x").matches(&o),
            "!= matches when the label is absent"
        );
        assert!(sel(" app = web , tier == front ").matches(&o));
        assert!(!sel("app=web,tier=back").matches(&o));
    }

    #[test]
    fn set_and_existence_operators() {
        let o = obj(json!({"app": "web", "in": "notin"}));
        assert!(sel("app in (web, db)").matches(&o));
        assert!(!sel("app in (db)").matches(&o));
        assert!(sel("app notin (db)").matches(&o));
        assert!(!sel("app notin (web)").matches(&o));
        assert!(sel("other notin (x)").matches(&o));
        assert!(sel("app").matches(&o));
        assert!(!sel("!app").matches(&o));
        assert!(sel("!other").matches(&o));
        assert!(
            sel("in in (notin)").matches(&o),
            "keywords are values in value position"
        );
        assert!(sel("x in (,a)").requirements()[0].values == vec!["".to_string(), "a".to_string()]);
    }

    #[test]
    fn numeric_comparisons() {
        let o = obj(json!({"n": "5"}));
        assert!(sel("n>3").matches(&o));
        assert!(!sel("n<3").matches(&o));
        assert!(!sel("missing>3").matches(&o));
    }

    #[test]
    fn empty_selector_matches_everything() {
        let s = sel("");
        assert!(s.is_empty());
        assert!(s.matches(&json!({"metadata": {}})));
        assert!(!sel("a").is_empty());
    }

    #[test]
    fn errors_are_worded_like_the_server() {
        let err = |s: &str| LabelSelector::parse(s).unwrap_err().0;
        assert_eq!(
            err("a$b=c"),
            "unable to parse requirement: <nil>: Invalid value: \"a$b\": name part must consist of alphanumeric \
             characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or \
             'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
        );
        assert_eq!(
            err("a in b"),
            "unable to parse requirement: found 'b' expected: '('"
        );
        assert_eq!(err("a=b,"), "found '', expected: identifier after ','");
        assert_eq!(err("a=b c"), "found 'c', expected: ',' or 'end of string'");
        assert_eq!(
            err("=a"),
            "found '=', expected: !, identifier, or 'end of string'"
        );
        assert_eq!(err("!a=b"), "found '=', expected: ',' or 'end of string'");
        assert_eq!(
            err("a (x)"),
            "unable to parse requirement: found '(', expected: '=', '!=', '==', 'in', notin'"
        );
        assert!(err("a=b$").starts_with(
            "unable to parse requirement: values[0][a]: Invalid value: \"b$\": a valid label"
        ));
        assert!(err("n>x").contains("for 'Gt', 'Lt' operators, the value must be an integer"));
        assert!(err("example.com/a/b").contains("a qualified name must consist"));
        assert!(err("Bad_Prefix/a").contains("prefix part a lowercase RFC 1123 subdomain"));
    }

    #[test]
    fn field_selectors() {
        let o = obj(json!({}));
        let f = |s: &str| FieldSelector::parse(s).unwrap();
        assert!(f("metadata.name=a").matches(&o));
        assert!(f("metadata.name==a,metadata.namespace=ns1").matches(&o));
        assert!(!f("metadata.name!=a").matches(&o));
        assert!(f("metadata.namespace!=other").matches(&o));
        assert!(f("spec.n=3").matches(&o));
        assert!(f("spec.missing=").matches(&o));
        assert!(f("").is_empty());
        assert!(f("metadata.name=a\\,b").requirements()[0].value == "a,b");
        assert_eq!(
            FieldSelector::parse("metadata.name").unwrap_err().0,
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'"
        );
        assert!(FieldSelector::parse("a=b=c").is_err());
    }
}
