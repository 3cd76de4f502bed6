//! Printer columns (`ValidateCustomResourceColumnDefinition`) and selectable fields
//! (`ValidateCustomResourceSelectableFields`).

use std::collections::HashSet;

use super::Violation;
use super::model::{Column, Schema, SelectableField};
use super::path::Path;
use super::render::{duplicate, invalid, q, required, too_many};
use super::schema_path::valid_field_path;
use super::subresources::simple_json_path;

const COLUMN_TYPES: &str = "boolean,date,integer,number,string";
const COLUMN_FORMATS: &[&str] = &[
    "byte",
    "date",
    "date-time",
    "double",
    "float",
    "int32",
    "int64",
    "password",
];
const MAX_SELECTABLE_FIELDS: usize = 8;

pub(crate) fn validate_column(
    col: &Column,
    path: &Path,
    out: &mut Vec<Violation>,
    warnings: &mut Vec<String>,
) {
    if col.name.is_empty() {
        out.push(Violation::new(required(&path.child("name"), "")));
    }
    let types_detail = format!("must be one of {COLUMN_TYPES}");
    if col.type_.is_empty() {
        out.push(Violation::new(required(&path.child("type"), &types_detail)));
    } else if !COLUMN_TYPES.split(',').any(|t| t == col.type_) {
        out.push(Violation::new(invalid(
            &path.child("type"),
            &q(&col.type_),
            &types_detail,
        )));
    }
    if !col.format.is_empty() && !COLUMN_FORMATS.contains(&col.format.as_str()) {
        out.push(Violation::new(invalid(
            &path.child("format"),
            &q(&col.format),
            &format!("must be one of {}", COLUMN_FORMATS.join(",")),
        )));
    }
    let jp = path.child("JSONPath");
    if col.json_path.is_empty() {
        out.push(Violation::new(required(&jp, "")));
    } else if let Some(v) = simple_json_path(&col.json_path, &jp) {
        out.push(v);
    } else if let Err(e) = jsonpath_syntax(&col.json_path) {
        // Accepted on create, but the server cannot build the table converter for it.
        warnings.push(format!(
            "{jp}: {}: {e}; the server will not be able to print this column",
            q(&col.json_path)
        ));
    }
}

/// A light syntax check of a kubectl-style JSONPath (balanced brackets, closed quotes).
fn jsonpath_syntax(s: &str) -> Result<(), String> {
    let mut depth: Vec<char> = Vec::new();
    let mut quote: Option<char> = None;
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if let Some(qc) = quote {
            if c == '\\' {
                chars.next();
            } else if c == qc {
                quote = None;
            }
            continue;
        }
        match c {
            '\'' | '"' => quote = Some(c),
            '[' | '(' | '{' => depth.push(c),
            ']' | ')' | '}' => {
                let open = match c {
                    ']' => '[',
                    ')' => '(',
                    _ => '{',
                };
                if depth.pop() != Some(open) {
                    return Err(format!("unexpected {c:?}"));
                }
            }
            _ => {}
        }
    }
    if quote.is_some() {
        return Err("unclosed quote".into());
    }
    if let Some(open) = depth.pop() {
        return Err(format!("unclosed {open:?}"));
    }
    Ok(())
}

/// `ValidateCustomResourceSelectableFields`, against the version's schema.
pub(crate) fn validate_selectable_fields(
    fields: &[SelectableField],
    schema: &Schema,
    path: &Path,
    out: &mut Vec<Violation>,
) {
    let mut unique = HashSet::new();
    for (i, f) in fields.iter().enumerate() {
        let jp = path.index(i).child("jsonPath");
        if f.json_path.is_empty() {
            out.push(Violation::new(required(&jp, "")));
            continue;
        }
        let (root, rendered, found) = match valid_field_path(&f.json_path, schema, false) {
            Ok(x) => x,
            Err(e) => {
                out.push(Violation::new(invalid(
                    &jp,
                    &q(&f.json_path),
                    &format!("is an invalid path: {e}"),
                )));
                continue;
            }
        };
        if root == "metadata" {
            out.push(Violation::new(invalid(
                &jp,
                &q(&f.json_path),
                "must not point to fields in metadata",
            )));
        }
        if !matches!(found.type_.as_str(), "string" | "boolean" | "integer") {
            out.push(Violation::new(invalid(
                &jp,
                &q(&f.json_path),
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            )));
        }
        if !unique.insert(rendered) {
            out.push(Violation::new(duplicate(&jp, &q(&f.json_path))));
        }
    }
    if unique.len() > MAX_SELECTABLE_FIELDS {
        out.push(Violation::new(too_many(
            path,
            unique.len(),
            MAX_SELECTABLE_FIELDS,
        )));
    }
}
