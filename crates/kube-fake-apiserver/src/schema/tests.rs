//! The field-validation directives of a write (`Ignore`, `Warn`, `Strict`).
use super::*;
use serde_json::json;

#[test]
fn strict_field_validation_messages() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}});
    let mut o = json!({"spec": {"a": "x", "foo": 1, "bar": 2}});
    let unknown = prune_unknown_fields(&s, &mut o);
    assert_eq!(
        strict_decoding_error("CronTab", "v1", &unknown),
        r#"CronTab in version "v1" cannot be handled as a CronTab: strict decoding error: unknown field "spec.bar", unknown field "spec.foo""#
    );
    assert_eq!(
        unknown_field_warning("spec.foo"),
        r#"unknown field "spec.foo""#
    );
}

#[test]
fn field_validation_directives() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}});
    let body = json!({"spec": {"a": "x", "foo": 1}});
    let mut o = body.clone();
    assert_eq!(
        prune_with_field_validation(&s, &mut o, "Ignore", "K", "v1"),
        Ok(vec![])
    );
    assert_eq!(o, json!({"spec": {"a": "x"}}));
    let mut o = body.clone();
    assert_eq!(
        prune_with_field_validation(&s, &mut o, "", "K", "v1"),
        Ok(vec![r#"unknown field "spec.foo""#.to_string()])
    );
    assert_eq!(o, json!({"spec": {"a": "x"}}));
    let mut o = body.clone();
    assert_eq!(
        prune_with_field_validation(&s, &mut o, "Strict", "K", "v1"),
        Err(FieldValidationError::UnknownFields(
            r#"K in version "v1" cannot be handled as a K: strict decoding error: unknown field "spec.foo""#.into()
        ))
    );
    assert_eq!(o, body, "a rejected body is left alone");
    let mut o = json!({"spec": {"a": "x"}});
    assert_eq!(
        prune_with_field_validation(&s, &mut o, "Strict", "K", "v1"),
        Ok(vec![])
    );
    assert_eq!(
        prune_with_field_validation(&s, &mut o, "Loose", "K", "v1"),
        Err(FieldValidationError::Unsupported(
            r#"Unsupported value: "Loose": supported values: "", "Ignore", "Strict", "Warn""#
                .into()
        ))
    );
}
