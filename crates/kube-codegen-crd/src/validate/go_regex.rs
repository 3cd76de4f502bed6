//! Whether a `pattern` compiles as Go's `regexp` (RE2 syntax) compiles it, with Go's error text
//! (`error parsing regexp: missing closing ): `(a``). Checked with `regex-syntax`, after making
//! the few constructs Go reads differently (a `{` that starts no repetition is a literal, `\Q..\E`
//! quotes) read the same way.

use regex_syntax::ast::ErrorKind;

/// Go's maximum repeat count.
const MAX_REPEAT: u32 = 1000;

fn is_repeat_spec(rest: &str) -> Option<(u32, Option<u32>, usize)> {
    // rest starts just after '{'
    let end = rest.find('}')?;
    let body = &rest[..end];
    let (min, max) = match body.split_once(',') {
        Some((a, b)) => (a, Some(b)),
        None => (body, None),
    };
    if min.is_empty() || !min.bytes().all(|c| c.is_ascii_digit()) {
        return None;
    }
    let min_n: u32 = min.parse().unwrap_or(u32::MAX);
    let max_n = match max {
        None => Some(min_n),
        Some("") => None,
        Some(b) if b.bytes().all(|c| c.is_ascii_digit()) => Some(b.parse().unwrap_or(u32::MAX)),
        Some(_) => return None,
    };
    Some((min_n, max_n, end + 1))
}

/// Rewrites Go-only literal readings into a form `regex-syntax` reads alike; `Err` is a Go error.
fn normalize(p: &str) -> Result<String, String> {
    let mut out = String::with_capacity(p.len() + 8);
    let mut in_class = false;
    let mut i = 0;
    let b = p.as_bytes();
    while i < p.len() {
        let c = p[i..].chars().next().unwrap_or('\0');
        let w = c.len_utf8();
        match c {
            '\\' => {
                if p[i + 1..].starts_with('Q') {
                    let rest = &p[i + 2..];
                    let (lit, consumed) = match rest.find("\\E") {
                        Some(e) => (&rest[..e], e + 2),
                        None => (rest, rest.len()),
                    };
                    out.push_str(&regex_syntax::escape(lit));
                    i += 2 + consumed;
                    continue;
                }
                out.push('\\');
                i += 1;
                if let Some(n) = p[i..].chars().next() {
                    out.push(n);
                    i += n.len_utf8();
                    // `\p{Greek}`, `\x{10FFFF}`: the braces belong to the escape
                    if matches!(n, 'p' | 'P' | 'x') && b.get(i) == Some(&b'{') {
                        let end = p[i..].find('}').map_or(p.len(), |e| i + e + 1);
                        out.push_str(&p[i..end]);
                        i = end;
                    }
                }
                continue;
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                i += 1;
                // a leading '^' and ']' are part of the class
                if b.get(i) == Some(&b'^') {
                    out.push('^');
                    i += 1;
                }
                if b.get(i) == Some(&b']') {
                    out.push_str("\\]");
                    i += 1;
                }
                continue;
            }
            ']' if in_class => in_class = false,
            '{' if !in_class => match is_repeat_spec(&p[i + 1..]) {
                Some((min, max, len)) => {
                    if min > MAX_REPEAT || max.is_some_and(|m| m > MAX_REPEAT || m < min) {
                        return Err(format!("invalid repeat count: `{}`", &p[i..i + 1 + len]));
                    }
                    out.push_str(&p[i..i + 1 + len]);
                    i += 1 + len;
                    continue;
                }
                None => {
                    out.push_str("\\{");
                    i += 1;
                    continue;
                }
            },
            '}' if !in_class => {
                out.push_str("\\}");
                i += 1;
                continue;
            }
            _ => {}
        }
        out.push(c);
        i += w;
    }
    Ok(out)
}

/// Go's error for `pattern`, or `None` when Go compiles it.
pub(crate) fn go_regexp_error(pattern: &str) -> Option<String> {
    let normalized = match normalize(pattern) {
        Ok(n) => n,
        Err(e) => return Some(format!("error parsing regexp: {e}")),
    };
    let mut parser = regex_syntax::ParserBuilder::new()
        .octal(true)
        .nest_limit(250)
        .build();
    let err = parser.parse(&normalized).err()?;
    let span_text = |start: usize, end: usize| -> String {
        normalized
            .get(start..end.max(start))
            .unwrap_or("")
            .to_string()
    };
    let (code, expr) = match &err {
        regex_syntax::Error::Parse(e) => {
            let span = e.span();
            let (s, t) = (span.start.offset, span.end.offset);
            match e.kind() {
                ErrorKind::GroupUnclosed => ("missing closing )", pattern.to_string()),
                ErrorKind::GroupUnopened => ("unexpected )", pattern.to_string()),
                ErrorKind::ClassUnclosed => (
                    "missing closing ]",
                    normalized.get(s..).unwrap_or("").to_string(),
                ),
                ErrorKind::RepetitionMissing => (
                    "missing argument to repetition operator",
                    span_text(s, t.max(s + 1)),
                ),
                ErrorKind::RepetitionCountInvalid => ("invalid repeat count", span_text(s, t)),
                ErrorKind::EscapeUnexpectedEof => {
                    ("trailing backslash at end of expression", String::new())
                }
                ErrorKind::EscapeUnrecognized
                | ErrorKind::UnsupportedBackreference
                | ErrorKind::EscapeHexInvalid
                | ErrorKind::EscapeHexInvalidDigit
                | ErrorKind::EscapeHexEmpty => ("invalid escape sequence", span_text(s, t)),
                ErrorKind::ClassRangeInvalid
                | ErrorKind::ClassRangeLiteral
                | ErrorKind::ClassEscapeInvalid => {
                    ("invalid character class range", span_text(s, t))
                }
                ErrorKind::UnsupportedLookAround => (
                    "invalid or unsupported Perl syntax",
                    span_text(s, (s + 3).min(normalized.len())),
                ),
                ErrorKind::GroupNameInvalid
                | ErrorKind::GroupNameEmpty
                | ErrorKind::GroupNameDuplicate { .. }
                | ErrorKind::GroupNameUnexpectedEof => ("invalid named capture", span_text(s, t)),
                ErrorKind::NestLimitExceeded(_) => ("expression nests too deeply", String::new()),
                _ => ("invalid or unsupported Perl syntax", span_text(s, t)),
            }
        }
        regex_syntax::Error::Translate(e) => {
            let span = e.span();
            (
                "invalid character class range",
                span_text(span.start.offset, span.end.offset),
            )
        }
        _ => ("invalid regexp", pattern.to_string()),
    };
    Some(format!("error parsing regexp: {code}: `{expr}`"))
}

#[cfg(test)]
mod tests {
    use super::go_regexp_error;

    #[test]
    fn go_regexps() {
        assert_eq!(go_regexp_error("^[a-z]+$"), None);
        assert_eq!(go_regexp_error("^\\${.*}$"), None);
        assert_eq!(go_regexp_error("a{2,3}"), None);
        assert_eq!(go_regexp_error("\\Q.*\\E"), None);
        assert_eq!(go_regexp_error("[\\/\\-_]"), None);
        assert_eq!(go_regexp_error("\\p{Greek}+"), None);
        assert_eq!(
            go_regexp_error("(abc"),
            Some("error parsing regexp: missing closing ): `(abc`".into())
        );
        assert_eq!(
            go_regexp_error("a{1001}"),
            Some("error parsing regexp: invalid repeat count: `{1001}`".into())
        );
        assert!(go_regexp_error("(?=x)").is_some());
        assert!(go_regexp_error("[a").is_some());
    }
}
