//! CRD descriptions -> rustdoc lines that neither warn nor become doctests.
//!
//! Rules: fenced code keeps its text but is re-fenced as ```` ```text ````; indentation is dropped
//! outside fences (an indented block would be a Rust doctest); `[`, `]`, `<`, `>` and `\` are
//! backslash-escaped outside inline code (no broken intra-doc links, no HTML); bare
//! `http(s)://` URLs become `<...>` autolinks; unbalanced backticks are escaped.

use serde_json::Value;

use kube_codegen_crd::Schema;

/// Docs for a type: its description plus schema facts.
pub fn type_docs(s: &Schema) -> Vec<String> {
    let mut out = description(s);
    facts(s, &mut out);
    out
}

/// Docs for a field (same content as the type: the property is where users read it).
pub fn field_docs(s: &Schema) -> Vec<String> {
    type_docs(s)
}

fn description(s: &Schema) -> Vec<String> {
    match &s.description {
        Some(d) if !d.trim().is_empty() => markdown(d),
        _ => Vec::new(),
    }
}

/// Inline code span that survives any content.
pub fn code(v: &str) -> String {
    let v = visible_controls(v).replace('\n', " ");
    let mut longest = 0;
    let mut run = 0;
    for c in v.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let ticks = "`".repeat(longest + 1);
    if longest > 0 || v.starts_with(' ') || v.ends_with(' ') {
        format!("{ticks} {v} {ticks}")
    } else {
        format!("{ticks}{v}{ticks}")
    }
}

fn json(v: &Value) -> String {
    let s = serde_json::to_string(v).unwrap_or_default();
    // Very long defaults or validation lists would bloat docs; they stay in the CRD.
    if s.len() > 200 {
        let cut = s.char_indices().nth(197).map(|(i, _)| i).unwrap_or(s.len());
        format!("{}...", &s[..cut])
    } else {
        s
    }
}

fn facts(s: &Schema, out: &mut Vec<String>) {
    let mut lines: Vec<String> = Vec::new();
    if let Some(f) = &s.format {
        lines.push(format!("- format: {}", code(f)));
    }
    if let Some(d) = &s.default {
        lines.push(format!("- default: {}", code(&json(d))));
    }
    if s.nullable {
        lines.push("- nullable: an explicit `null` is kept".into());
    }
    if !s.enum_values.is_empty() && s.effective_type() != Some("string") {
        lines.push(format!(
            "- enum: {}",
            code(&json(&Value::Array(s.enum_values.to_vec())))
        ));
    }
    for (k, v) in &s.constraints {
        if *k == "x-kubernetes-validations" {
            for rule in v.as_array().into_iter().flatten() {
                if let Some(r) = rule.get("rule").and_then(Value::as_str) {
                    lines.push(format!("- validation rule: {}", code(r)));
                }
            }
        } else {
            let text = match v {
                Value::String(x) => x.clone(),
                other => json(other),
            };
            lines.push(format!("- {k}: {}", code(&text)));
        }
    }
    if s.embedded_resource {
        lines.push("- embedded Kubernetes resource".into());
    }
    if s.preserve_unknown_fields {
        lines.push("- unknown fields are preserved".into());
    }
    let constraint_branches = s
        .any_of
        .iter()
        .chain(&s.one_of)
        .chain(&s.all_of)
        .filter(|b| b.effective_type().is_none() && !b.int_or_string)
        .count();
    if constraint_branches > 0 {
        lines.push("- has oneOf/anyOf/allOf constraints (not expressed in the type)".into());
    }
    if !lines.is_empty() {
        if !out.is_empty() {
            out.push(String::new());
        }
        out.push("Schema:".into());
        out.extend(lines);
    }
}

/// Control characters rustc would refuse in a doc comment (a bare CR) or that would end up
/// invisible: line breaks of any spelling (CR, CRLF, NEL, VT, FF, LS, PS) become `\n`, every other
/// C0/C1 control but tab becomes its visible escape (`\u{1b}`), so the doc says what the CRD said.
fn visible_controls(text: &str) -> std::borrow::Cow<'_, str> {
    let special = |c: char| {
        (c.is_control() && c != '\n' && c != '\t') || matches!(c, '\u{2028}' | '\u{2029}')
    };
    if !text.contains(special) {
        return std::borrow::Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                chars.next_if_eq(&'\n');
                out.push('\n');
            }
            '\u{85}' | '\u{b}' | '\u{c}' | '\u{2028}' | '\u{2029}' => out.push('\n'),
            c if special(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// Converts free text to safe rustdoc lines.
pub fn markdown(text: &str) -> Vec<String> {
    let text = visible_controls(text);
    let mut out = Vec::new();
    let mut in_fence: Option<String> = None;
    let mut list_indent: Option<usize> = None;
    for raw in text.lines() {
        let line = raw.trim_end();
        let trimmed = line.trim_start();
        if let Some(fence) = &in_fence {
            if trimmed.starts_with(fence.as_str()) {
                out.push(fence.clone());
                in_fence = None;
            } else {
                out.push(line.to_string());
            }
            continue;
        }
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            let ch = trimmed.chars().next().unwrap_or('`');
            let n = trimmed.chars().take_while(|c| *c == ch).count();
            let fence: String = std::iter::repeat_n(ch, n).collect();
            out.push(format!("{fence}text"));
            in_fence = Some(fence);
            list_indent = None;
            continue;
        }
        // Continuation lines of a list item are indented to the item's text, so markdown (and
        // clippy's doc_lazy_continuation) sees them as part of the item.
        if trimmed.is_empty() {
            list_indent = None;
            out.push(String::new());
            continue;
        }
        let escaped = escape_line(trimmed);
        if let Some(w) = list_marker(trimmed) {
            list_indent = Some(w);
            out.push(escaped);
        } else if let Some(w) = list_indent {
            out.push(format!("{}{escaped}", " ".repeat(w)));
        } else {
            out.push(escaped);
        }
    }
    if let Some(fence) = in_fence {
        out.push(fence);
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    out
}

/// Width of a list marker (`- `, `* `, `+ `, `1. `, `1) `) plus the spaces after it, i.e. the
/// column where the item's text starts (CommonMark: 1-4 spaces count, 5+ means 1).
fn list_marker(line: &str) -> Option<usize> {
    let marker = if line.starts_with(['-', '*', '+']) {
        1
    } else {
        let digits = line.chars().take_while(char::is_ascii_digit).count();
        if !(1..=9).contains(&digits) || !line[digits..].starts_with(['.', ')']) {
            return None;
        }
        digits + 1
    };
    let spaces = line[marker..].chars().take_while(|c| *c == ' ').count();
    match spaces {
        0 => None,
        1..=4 => Some(marker + spaces),
        _ => Some(marker + 1),
    }
}

fn escape_line(line: &str) -> String {
    let balanced = line.matches('`').count().is_multiple_of(2);
    let mut out = String::with_capacity(line.len() + 8);
    let mut in_code = false;
    let mut rest = line;
    loop {
        // Copy the run that needs no attention in one go; every stop character is ASCII.
        let stop = if in_code {
            rest.bytes().position(|b| b == b'`')
        } else {
            rest.bytes()
                .position(|b| matches!(b, b'`' | b'h' | b'[' | b']' | b'<' | b'>' | b'\\'))
        };
        let Some(i) = stop else {
            out.push_str(rest);
            return out;
        };
        out.push_str(&rest[..i]);
        rest = &rest[i..];
        let c = char::from(rest.as_bytes()[0]);
        if c == '`' {
            if balanced {
                in_code = !in_code;
                out.push('`');
            } else {
                out.push_str("\\`");
            }
            rest = &rest[1..];
            continue;
        }
        if c == 'h' && (rest.starts_with("http://") || rest.starts_with("https://")) {
            let end = rest
                .find(|c: char| c.is_whitespace() || matches!(c, '<' | '>' | '"' | '`' | '|'))
                .unwrap_or(rest.len());
            let mut url = &rest[..end];
            // Trailing punctuation belongs to the sentence, not the URL.
            while let Some(last) = url.chars().last() {
                if matches!(
                    last,
                    '.' | ',' | ';' | ':' | ')' | ']' | '\'' | '!' | '?' | '*' | '_'
                ) {
                    url = &url[..url.len() - last.len_utf8()];
                } else {
                    break;
                }
            }
            if url.len() > "https://".len() && !url.contains(['[', ']', '\\']) {
                out.push('<');
                out.push_str(url);
                out.push('>');
                rest = &rest[url.len()..];
                continue;
            }
        }
        if c != 'h' {
            out.push('\\');
        }
        out.push(c);
        rest = &rest[1..];
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes() {
        assert_eq!(escape_line("see [foo] <bar>"), "see \\[foo\\] \\<bar\\>");
        assert_eq!(escape_line("`[x]` ok"), "`[x]` ok");
        assert_eq!(
            escape_line("at https://example.com/x)."),
            "at <https://example.com/x>)."
        );
        assert_eq!(escape_line("a ` b"), "a \\` b");
        assert_eq!(
            markdown("    indented\n```yaml\nkey: [1]\n```"),
            vec!["indented", "```text", "key: [1]", "```"]
        );
        assert_eq!(
            markdown("* item\ncontinued\n\nnext para\n10. ten\nmore"),
            vec![
                "* item",
                "  continued",
                "",
                "next para",
                "10. ten",
                "    more"
            ]
        );
        assert_eq!(code("a`b"), "`` a`b ``");
    }
}
