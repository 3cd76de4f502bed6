//! `cel.ValidFieldPath`: a JSON path of field (`.a`, `['a.b']`) and, optionally, index (`[0]`)
//! accessors that must name fields the structural schema defines.

use super::model::Schema;

enum Token<'a> {
    Dot,
    Open,
    Close,
    Text(&'a str),
}

fn tokens(s: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'.' => {
                out.push(Token::Dot);
                i += 1;
            }
            b'[' => {
                out.push(Token::Open);
                i += 1;
            }
            b']' => {
                out.push(Token::Close);
                i += 1;
            }
            b'\'' => {
                // a single-quoted string, delimiters inside ignored
                let start = i;
                let mut j = i + 1;
                while j < b.len() && !(b[j] == b'\'' && b[j - 1] != b'\\') {
                    j += 1;
                }
                let end = (j + 1).min(b.len());
                out.push(Token::Text(&s[start..end]));
                i = end;
            }
            _ => {
                let start = i;
                while i < b.len() && !matches!(b[i], b'.' | b'[' | b']') {
                    i += 1;
                }
                out.push(Token::Text(&s[start..i]));
            }
        }
    }
    out
}

fn token_text<'a>(t: &Token<'a>) -> &'a str {
    match t {
        Token::Dot => ".",
        Token::Open => "[",
        Token::Close => "]",
        Token::Text(s) => s,
    }
}

fn unescape_single_quote(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some(c @ ('\\' | '\'')) => out.push(c),
                Some(other) => return Err(format!("invalid escape sequence '\\{other}'")),
                None => return Err("unterminated escape sequence".into()),
            }
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

/// Validates `json_path` against `schema`; returns the root field name, the normalized path and
/// the schema it names.
pub(crate) fn valid_field_path<'s>(
    json_path: &str,
    schema: &'s Schema,
    allow_array_notation: bool,
) -> Result<(String, String, &'s Schema), String> {
    let toks = tokens(json_path);
    let mut schema = schema;
    let mut root = String::new();
    let mut rendered = String::new();
    let mut i = 0;
    let step = |schema: &'s Schema, name: &str| -> Result<&'s Schema, String> {
        if !schema.properties.is_empty() {
            schema
                .properties
                .get(name)
                .ok_or_else(|| "does not refer to a valid field".to_string())
        } else if let Some(ap) = &schema.additional_properties {
            ap.schema
                .as_deref()
                .ok_or_else(|| "does not refer to a valid field".to_string())
        } else {
            Err("does not refer to a valid field".into())
        }
    };
    while i < toks.len() {
        match &toks[i] {
            Token::Open => {
                let tok = toks.get(i + 1).ok_or("unexpected end of JSON path")?;
                let text = token_text(tok);
                if text.len() >= 2 && text.starts_with('\'') && text.ends_with('\'') {
                    let name = unescape_single_quote(&text[1..text.len() - 1])
                        .map_err(|e| format!("invalid string literal: {e}"))?;
                    schema = step(schema, &name)?;
                    if root.is_empty() {
                        root = name.clone();
                    }
                    rendered.push_str(&format!("[{name}]"));
                } else if allow_array_notation
                    && !text.is_empty()
                    && text.bytes().all(|c| c.is_ascii_digit())
                {
                    if schema.type_ != "array" {
                        return Err("does not refer to a valid field".into());
                    }
                    schema = schema
                        .items_schema()
                        .ok_or("does not refer to a valid field")?;
                    rendered.push_str(&format!("[{text}]"));
                } else {
                    return Err(format!("expected single quoted string but got {text}"));
                }
                match toks.get(i + 2) {
                    None => return Err("unexpected end of JSON path".into()),
                    Some(Token::Close) => {}
                    Some(t) => return Err(format!("expected ] but got {}", token_text(t))),
                }
                i += 3;
            }
            Token::Dot => {
                let tok = toks.get(i + 1).ok_or("unexpected end of JSON path")?;
                let name = token_text(tok);
                schema = step(schema, name)?;
                if root.is_empty() {
                    root = name.to_string();
                }
                rendered.push('.');
                rendered.push_str(name);
                i += 2;
            }
            other => return Err(format!("expected [ or . but got: {}", token_text(other))),
        }
    }
    Ok((root, rendered, schema))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn obj(props: Vec<(&str, Schema)>) -> Schema {
        Schema {
            type_: "object".into(),
            properties: props
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect::<BTreeMap<_, _>>(),
            ..Schema::default()
        }
    }

    #[test]
    fn paths() {
        let s = obj(vec![(
            "spec",
            obj(vec![(
                "a.b",
                Schema {
                    type_: "string".into(),
                    ..Schema::default()
                },
            )]),
        )]);
        assert!(valid_field_path(".spec['a.b']", &s, true).is_ok());
        assert_eq!(
            valid_field_path(".spec.c", &s, true).unwrap_err(),
            "does not refer to a valid field"
        );
        assert!(valid_field_path("spec", &s, true).is_err());
        assert!(valid_field_path(".spec[", &s, true).is_err());
    }
}
