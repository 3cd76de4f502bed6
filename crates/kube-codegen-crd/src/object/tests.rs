//! Behaviour of pruning, defaulting and validation on tricky schemas.
use super::*;
use crate::invalid_message;
use serde_json::json;

fn pruned(schema: &Value, obj: Value) -> Value {
    let mut o = obj;
    prune(schema, &mut o);
    o
}

fn defaulted(schema: &Value, obj: Value) -> Value {
    let mut o = obj;
    prune(schema, &mut o);
    apply_defaults(schema, &mut o);
    o
}

fn crontab_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "required": ["name"],
                "properties": {
                    "name": {"type": "string", "minLength": 2, "maxLength": 5, "pattern": "^[a-z]+$"},
                    "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
                    "ratio": {"type": "number", "exclusiveMinimum": true, "minimum": 0},
                    "mode": {"type": "string", "enum": ["a", "b"]},
                    "count": {"type": "integer"},
                    "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                    "tags": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string"}},
                    "choice": {"type": "string", "nullable": true, "enum": ["x", null]},
                    "labels": {"type": "object", "minProperties": 1, "maxProperties": 2, "additionalProperties": {"type": "string"}}
                }
            }
        }
    })
}

// ---------------------------------------------------------------- pruning

#[test]
fn root_keeps_type_meta_and_metadata_as_is() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}});
    let out = pruned(
        &s,
        json!({
            "apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "n", "whatever": {"kept": true}},
            "spec": {"a": "1", "b": 2}, "extra": 1
        }),
    );
    assert_eq!(
        out,
        json!({"apiVersion": "x.io/v1", "kind": "X", "metadata": {"name": "n", "whatever": {"kept": true}}, "spec": {"a": "1"}})
    );
}

#[test]
fn unknown_field_paths_are_reported() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "items": {"type": "array", "items": {"type": "object", "properties": {"name": {"type": "string"}}}}
    }}}});
    let mut o =
        json!({"kind": "X", "extra": 1, "spec": {"foo": 1, "items": [{"name": "a", "bar": 2}]}});
    let unknown = prune_unknown_fields(&s, &mut o);
    assert_eq!(unknown, vec!["extra", "spec.foo", "spec.items[0].bar"]);
    assert_eq!(o, json!({"kind": "X", "spec": {"items": [{"name": "a"}]}}));
}

#[test]
fn preserve_unknown_keeps_unknown_but_prunes_declared_children() {
    let s = json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "properties": {"known": {"type": "object", "properties": {"a": {"type": "string"}}}}
    }}});
    let out = pruned(
        &s,
        json!({"spec": {"free": {"deep": [1, {"x": null}]}, "known": {"a": "1", "b": 2}}}),
    );
    assert_eq!(
        out,
        json!({"spec": {"free": {"deep": [1, {"x": null}]}, "known": {"a": "1"}}})
    );
}

#[test]
fn preserve_unknown_at_root_keeps_everything_undeclared() {
    let s = json!({"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                   "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}});
    let out = pruned(
        &s,
        json!({"kind": "X", "other": {"z": 1}, "spec": {"a": "1", "b": 2}}),
    );
    assert_eq!(
        out,
        json!({"kind": "X", "other": {"z": 1}, "spec": {"a": "1"}})
    );
}

#[test]
fn preserve_unknown_array_items_recurse_into_declared_fields() {
    let s = json!({"type": "object", "properties": {"list": {
        "type": "array",
        "x-kubernetes-preserve-unknown-fields": true,
        "items": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                  "properties": {"k": {"type": "object", "properties": {"a": {"type": "string"}}}}}
    }}});
    let out = pruned(
        &s,
        json!({"list": [{"free": 1, "k": {"a": "x", "b": "y"}}]}),
    );
    assert_eq!(out, json!({"list": [{"free": 1, "k": {"a": "x"}}]}));
}

#[test]
fn additional_properties_schema_and_true() {
    let s = json!({"type": "object", "properties": {
        "typed": {"type": "object", "additionalProperties": {"type": "object", "properties": {"a": {"type": "string"}}}},
        "free": {"type": "object", "additionalProperties": true},
        "bare": {"type": "object"}
    }});
    let out = pruned(
        &s,
        json!({
            "typed": {"k1": {"a": "1", "b": 2}},
            "free": {"s": "str", "n": 1, "o": {"x": 1}, "l": [{"y": 1}, 2, null], "z": null},
            "bare": {"anything": 1}
        }),
    );
    assert_eq!(
        out,
        json!({
            "typed": {"k1": {"a": "1"}},
            "free": {"s": "str", "n": 1, "o": {}, "l": [{}, 2, null], "z": null},
            "bare": {}
        })
    );
}

#[test]
fn composition_keywords_do_not_declare_fields() {
    let s = json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"a": {"type": "string"}},
        "anyOf": [{"properties": {"b": {"type": "string"}}}],
        "allOf": [{"properties": {"c": {"type": "string"}}}]
    }}});
    let out = pruned(&s, json!({"spec": {"a": "1", "b": "2", "c": "3"}}));
    assert_eq!(out, json!({"spec": {"a": "1"}}));
}

#[test]
fn embedded_resources_keep_type_meta_and_metadata() {
    let s = json!({"type": "object", "properties": {"template": {
        "type": "object",
        "x-kubernetes-embedded-resource": true,
        "properties": {"spec": {"type": "object", "properties": {"a": {"type": "string"}}}}
    }, "raw": {
        "type": "object",
        "x-kubernetes-embedded-resource": true,
        "x-kubernetes-preserve-unknown-fields": true
    }}});
    let out = pruned(
        &s,
        json!({
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "x": 1, "creationTimestamp": null, "labels": {}, "generation": 0}, "spec": {"a": "1", "b": 2}, "status": {}},
            "raw": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}
        }),
    );
    assert_eq!(
        out,
        json!({
            "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"a": "1"}},
            "raw": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}
        })
    );
}

#[test]
fn int_or_string_values_survive_and_objects_under_it_are_emptied() {
    let s = json!({"type": "object", "properties": {"p": {"x-kubernetes-int-or-string": true}, "q": {"x-kubernetes-int-or-string": true}}});
    assert_eq!(
        pruned(&s, json!({"p": 8080, "q": "http"})),
        json!({"p": 8080, "q": "http"})
    );
    assert_eq!(pruned(&s, json!({"p": {"a": 1}})), json!({"p": {}}));
}

#[test]
fn nulls_in_non_nullable_fields_are_dropped() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "plain": {"type": "string"},
        "nullable": {"type": "string", "nullable": true},
        "withDefault": {"type": "string", "default": "d"},
        "list": {"type": "array", "items": {"type": "string"}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        "typedMap": {"type": "object", "additionalProperties": {"type": "string"}}
    }}}});
    let out = pruned(
        &s,
        json!({"spec": {
            "plain": null, "nullable": null, "withDefault": null, "list": ["a", null],
            "free": {"x": null}, "typedMap": {"k": null, "j": "v"}
        }}),
    );
    assert_eq!(
        out,
        json!({"spec": {
            "nullable": null, "withDefault": null, "list": ["a", null], "free": {"x": null}, "typedMap": {"j": "v"}
        }})
    );
}

#[test]
fn object_type_without_schema_on_array_items_empties_objects() {
    let s = json!({"type": "object", "properties": {"l": {"type": "array", "items": {"type": "object"}}}});
    assert_eq!(
        pruned(&s, json!({"l": [{"a": 1}, {}]})),
        json!({"l": [{}, {}]})
    );
}

// ---------------------------------------------------------------- defaulting

#[test]
fn defaults_fill_missing_fields_only() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "a": {"type": "string", "default": "x"},
        "b": {"type": "integer", "default": 3}
    }}}});
    assert_eq!(
        defaulted(&s, json!({"spec": {"b": 5}})),
        json!({"spec": {"a": "x", "b": 5}})
    );
    assert_eq!(
        defaulted(&s, json!({"kind": "K"})),
        json!({"kind": "K"}),
        "no spec, no spec default"
    );
}

#[test]
fn whole_object_defaults_get_nested_defaults_and_are_pruned() {
    let s = json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "default": {"replicas": 1, "unknown": true},
        "properties": {
            "replicas": {"type": "integer"},
            "policy": {"type": "object", "default": {}, "properties": {"mode": {"type": "string", "default": "Auto"}}}
        }
    }}});
    assert_eq!(
        defaulted(&s, json!({"kind": "K"})),
        json!({"kind": "K", "spec": {"replicas": 1, "policy": {"mode": "Auto"}}})
    );
}

#[test]
fn explicit_null_is_defaulted_only_when_not_nullable() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "nullable": {"type": "string", "nullable": true, "default": "d1"},
        "strict": {"type": "string", "default": "d2"}
    }}}});
    assert_eq!(
        defaulted(&s, json!({"spec": {"nullable": null, "strict": null}})),
        json!({"spec": {"nullable": null, "strict": "d2"}})
    );
}

#[test]
fn defaults_in_list_items_and_map_values() {
    let s = json!({"type": "object", "properties": {
        "ports": {"type": "array", "items": {"type": "object", "properties": {
            "name": {"type": "string"}, "protocol": {"type": "string", "default": "TCP"}
        }}},
        "names": {"type": "array", "items": {"type": "string", "default": "none"}},
        "limits": {"type": "object", "additionalProperties": {"type": "object", "properties": {
            "max": {"type": "integer", "default": 10}
        }}}
    }});
    assert_eq!(
        defaulted(
            &s,
            json!({"ports": [{"name": "a"}, {"name": "b", "protocol": "UDP"}], "names": [null, "x"], "limits": {"cpu": {}}})
        ),
        json!({
            "ports": [{"name": "a", "protocol": "TCP"}, {"name": "b", "protocol": "UDP"}],
            "names": ["none", "x"],
            "limits": {"cpu": {"max": 10}}
        })
    );
}

// ---------------------------------------------------------------- validation

fn causes(obj: Value) -> Vec<Cause> {
    validate(&crontab_schema(), &obj)
}

fn one(obj: Value) -> Cause {
    let c = causes(obj);
    assert_eq!(c.len(), 1, "{c:#?}");
    c.into_iter().next().unwrap_or_else(|| Cause {
        reason: String::new(),
        message: String::new(),
        field: String::new(),
    })
}

#[test]
fn valid_object_has_no_causes() {
    let c = causes(json!({
        "apiVersion": "x/v1", "kind": "CronTab", "metadata": {"name": "n"},
        "spec": {"name": "abc", "replicas": 3, "ratio": 0.5, "mode": "a", "count": 2.0, "port": "http",
                 "tags": ["t"], "choice": "x", "labels": {"a": "b"}}
    }));
    assert!(c.is_empty(), "{c:#?}");
}

#[test]
fn maximum_and_minimum_messages() {
    let c = one(json!({"spec": {"name": "ab", "replicas": 11}}));
    assert_eq!(c.field, "spec.replicas");
    assert_eq!(c.reason, "FieldValueInvalid");
    assert_eq!(
        c.message,
        "Invalid value: 11: spec.replicas in body should be less than or equal to 10"
    );
    assert_eq!(
        c.to_string(),
        "spec.replicas: Invalid value: 11: spec.replicas in body should be less than or equal to 10"
    );
    let c = one(json!({"spec": {"name": "ab", "replicas": 0}}));
    assert_eq!(
        c.message,
        "Invalid value: 0: spec.replicas in body should be greater than or equal to 1"
    );
    let c = one(json!({"spec": {"name": "ab", "ratio": 0}}));
    assert_eq!(
        c.message,
        "Invalid value: 0: spec.ratio in body should be greater than 0"
    );
}

#[test]
fn required_enum_and_type_messages() {
    let c = one(json!({"spec": {}}));
    assert_eq!(
        (c.field.as_str(), c.reason.as_str(), c.message.as_str()),
        ("spec.name", "FieldValueRequired", "Required value")
    );

    let c = one(json!({"spec": {"name": "ab", "mode": "x"}}));
    assert_eq!(c.reason, "FieldValueNotSupported");
    assert_eq!(
        c.to_string(),
        r#"spec.mode: Unsupported value: "x": supported values: "a", "b""#
    );

    let c = one(json!({"spec": {"name": "ab", "count": "many"}}));
    assert_eq!(c.reason, "FieldValueTypeInvalid");
    assert_eq!(
        c.to_string(),
        r#"spec.count: Invalid value: "string": spec.count in body must be of type integer: "string""#
    );

    let c = one(json!({"spec": {"name": "ab", "count": 1.5}}));
    assert_eq!(
        c.message,
        r#"Invalid value: "number": spec.count in body must be of type integer: "number""#
    );

    let c = one(json!({"spec": {"name": "ab", "port": true}}));
    assert_eq!(
        c.message,
        r#"Invalid value: "boolean": spec.port in body must be of type integer,string: "boolean""#
    );
}

#[test]
fn nullable_enum_rejects_explicit_null() {
    let c = one(json!({"spec": {"name": "ab", "choice": null}}));
    assert_eq!(c.reason, "FieldValueNotSupported");
    assert_eq!(
        c.message,
        r#"Unsupported value: null: supported values: "x", "null""#
    );
}

#[test]
fn string_constraints() {
    let c = one(json!({"spec": {"name": "a"}}));
    assert_eq!(
        c.message,
        r#"Invalid value: "a": spec.name in body should be at least 2 chars long"#
    );
    let c = one(json!({"spec": {"name": "abcdef"}}));
    assert_eq!(
        (c.reason.as_str(), c.message.as_str()),
        (
            "FieldValueTooLong",
            "Too long: may not be more than 5 bytes"
        )
    );
    let c = one(json!({"spec": {"name": "AB"}}));
    assert_eq!(
        c.message,
        r#"Invalid value: "AB": spec.name in body should match '^[a-z]+$'"#
    );
}

#[test]
fn array_and_map_constraints() {
    let c = one(json!({"spec": {"name": "ab", "tags": []}}));
    assert_eq!(
        c.message,
        "Invalid value: 0: spec.tags in body should have at least 1 items"
    );
    let c = one(json!({"spec": {"name": "ab", "tags": ["a", "b", "c"]}}));
    assert_eq!(
        (c.reason.as_str(), c.message.as_str()),
        (
            "FieldValueTooMany",
            "Too many: 3: must have at most 2 items"
        )
    );
    let c = one(json!({"spec": {"name": "ab", "tags": ["a", 1]}}));
    assert_eq!(c.field, "spec.tags[1]");
    let c = one(json!({"spec": {"name": "ab", "labels": {"a": "1", "b": "2", "c": "3"}}}));
    assert_eq!(c.message, "Too many: 3: must have at most 2 items");
    let c = one(json!({"spec": {"name": "ab", "labels": {"a": 1}}}));
    assert_eq!(c.field, "spec.labels.a");
    let c = one(json!({"spec": {"name": "ab", "labels": {}}}));
    assert_eq!(
        c.message,
        "Invalid value: 0: spec.labels in body should have at least 1 properties"
    );
}

#[test]
fn several_causes_and_the_status_message() {
    let c = causes(json!({"spec": {"replicas": 11}}));
    assert_eq!(c.len(), 2);
    let msg = invalid_message("CronTab.stable.example.com", "my-crontab", &c);
    assert!(
        msg.starts_with("CronTab.stable.example.com \"my-crontab\" is invalid: ["),
        "{msg}"
    );
    assert!(msg.contains("spec.name: Required value"));
    assert!(msg.contains("spec.replicas: Invalid value: 11"));
    let single = invalid_message("CronTab.stable.example.com", "x", &c[..1]);
    assert!(!single.contains('['));
}

#[test]
fn free_form_and_embedded_resources() {
    let s = json!({"type": "object", "properties": {
        "free": {"x-kubernetes-preserve-unknown-fields": true},
        "tmpl": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}
    }});
    assert!(validate(&s, &json!({"free": [1, "a", {"b": null}]})).is_empty());
    let c = validate(&s, &json!({"tmpl": {"apiVersion": "v1"}}));
    assert_eq!(c.len(), 1);
    assert_eq!(
        c[0].to_string(),
        "tmpl.kind: Required value: must not be empty"
    );
}

#[test]
fn all_of_adds_its_composite_cause_after_the_branches() {
    let s = json!({"type": "object", "properties": {"v": {
        "type": "string",
        "allOf": [{"enum": ["a", "b"]}, {"maxLength": 1}]
    }}});
    assert!(validate(&s, &json!({"v": "a"})).is_empty());
    let msgs = |v: &str| {
        validate(&s, &json!({"v": v}))
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        msgs("c"),
        [
            r#"v: Unsupported value: "c": supported values: "a", "b""#,
            r#"<nil>: Invalid value: "": "v" must validate all the schemas (allOf)"#,
        ]
    );
    assert_eq!(
        msgs("cc"),
        [
            r#"v: Unsupported value: "cc": supported values: "a", "b""#,
            "v: Too long: may not be more than 1 byte",
            r#"<nil>: Invalid value: "": "v" must validate all the schemas (allOf). None validated"#,
        ]
    );
}

#[test]
fn a_number_of_the_wrong_type_still_has_its_bounds_checked() {
    let s =
        json!({"type": "object", "properties": {"ms": {"type": "integer", "maximum": 2000000}}});
    let got: Vec<String> = validate(&s, &json!({"ms": 18446744073709551603_u64}))
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        got,
        [
            r#"ms: Invalid value: "number": ms in body must be of type integer: "number""#,
            "ms: Invalid value: 1.8446744073709552e+19: ms in body should be less than or equal to 2e+06",
        ]
    );
}

#[test]
fn composition_failures() {
    let s = json!({"type": "object", "properties": {"v": {
        "type": "object",
        "oneOf": [{"required": ["a"]}, {"required": ["b"]}],
        "not": {"required": ["c"]}
    }}});
    assert!(validate(&s, &json!({"v": {"a": 1}})).is_empty());
    let both = validate(&s, &json!({"v": {"a": 1, "b": 2}}));
    assert_eq!(both.len(), 1);
    assert!(both[0].message.contains(
        "\"v\" must validate one and only one schema (oneOf). Found 2 valid alternatives"
    ));
    let none = validate(&s, &json!({"v": {"c": 1}}));
    assert!(
        none.iter().any(|c| c.message.contains("Found none valid")),
        "{none:#?}"
    );
    assert!(
        none.iter()
            .any(|c| c.message.contains("must not validate the schema (not)")),
        "{none:#?}"
    );
}

#[test]
fn hostile_depth_terminates() {
    let mut schema = json!({"type": "string"});
    for _ in 0..300 {
        schema = json!({"type": "object", "properties": {"a": schema}, "default": {}});
    }
    let mut obj = json!("leaf");
    for _ in 0..300 {
        obj = json!({"a": obj});
    }
    let c = validate(&schema, &obj);
    assert!(c.iter().any(|c| c.message.contains("nesting is too deep")));
    let mut o = obj.clone();
    prune(&schema, &mut o);
    apply_defaults(&schema, &mut o);
    let free = json!({"type": "object", "additionalProperties": true});
    let mut nested = json!(1);
    for _ in 0..300 {
        nested = json!([nested]);
    }
    let mut o = json!({"k": nested});
    prune(&free, &mut o);
}

#[test]
fn string_formats() {
    let s = json!({"type": "object", "properties": {
        "t": {"type": "string", "format": "date-time"},
        "d": {"type": "string", "format": "date"},
        "u": {"type": "string", "format": "uuid"},
        "ip": {"type": "string", "format": "ipv4"},
        "net": {"type": "string", "format": "cidr"},
        "b": {"type": "string", "format": "byte"},
        "other": {"type": "string", "format": "int-or-whatever"}
    }});
    let good = json!({
        "t": "2026-01-01T00:10:00Z", "d": "2024-02-29", "u": "123e4567-e89b-12d3-a456-426614174000",
        "ip": "10.0.0.1", "net": "10.0.0.0/8", "b": "aGVsbG8=", "other": "anything"
    });
    assert!(validate(&s, &good).is_empty(), "{:#?}", validate(&s, &good));
    for t in ["2026-01-01T00:10:00.123+02:00", "2026-01-01t00:10:00z"] {
        assert!(validate(&s, &json!({"t": t})).is_empty(), "{t}");
    }
    let c = validate(&s, &json!({"t": "yesterday"}));
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].reason, "FieldValueTypeInvalid");
    assert_eq!(
        c[0].to_string(),
        r#"t: Invalid value: "yesterday": t in body must be of type date-time: "yesterday""#
    );
    for (k, bad) in [
        ("t", "2026-01-01T25:00:00Z"),
        ("t", "2026-01-01T10:00:00"),
        ("d", "2023-02-29"),
        ("u", "nope"),
        ("ip", "10.0.0"),
        ("net", "10.0.0.0/33"),
        ("b", "not base64!"),
        ("t", "2026-01-01Tü0:00:00Z"),
    ] {
        assert_eq!(validate(&s, &json!({k: bad})).len(), 1, "{k}={bad}");
    }
    // A value of another type: go-openapi names the format as the type it wanted, and the
    // value's own format (`int64`, `float64`, none for the rest) as what it found.
    let wrong = |v: Value| {
        validate(&s, &json!({"net": v}))
            .iter()
            .map(|c| format!("{c} ({})", c.reason))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        wrong(json!(7)),
        [
            r#"net: Invalid value: "int64": net in body must be of type cidr: "int64" (FieldValueTypeInvalid)"#
        ]
    );
    assert_eq!(
        wrong(json!(1.5)),
        [
            r#"net: Invalid value: "float64": net in body must be of type cidr: "float64" (FieldValueTypeInvalid)"#
        ]
    );
    assert_eq!(
        wrong(json!(true)),
        [r#"net: Invalid value: "": net in body must be of type cidr: "" (FieldValueTypeInvalid)"#]
    );
}

#[test]
fn normalize_numbers_is_public() {
    let mut v = json!({"a": 2.0});
    normalize_numbers(&mut v);
    assert_eq!(v, json!({"a": 2}));
}

#[test]
fn list_type_set_and_map_duplicates() {
    let s = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer"}}}},
        "atomic": {"type": "array", "x-kubernetes-list-type": "atomic", "items": {"type": "string"}}
    }}}});
    let ok = json!({"spec": {"tags": ["a", "b"], "ports": [{"name": "a", "port": 1}, {"name": "a", "port": 2}], "atomic": ["x", "x"]}});
    assert!(validate(&s, &ok).is_empty());
    let c = validate(&s, &json!({"spec": {"tags": ["a", "b", "a"]}}));
    assert_eq!(c.len(), 1);
    assert_eq!(c[0].reason, "FieldValueDuplicate");
    assert_eq!(c[0].to_string(), r#"spec.tags[2]: Duplicate value: "a""#);
    let c = validate(
        &s,
        &json!({"spec": {"ports": [{"name": "a", "port": 1}, {"name": "a", "port": 1}]}}),
    );
    assert_eq!(c.len(), 1);
    assert_eq!(
        c[0].to_string(),
        r#"spec.ports[1]: Duplicate value: {"name":"a","port":1}"#
    );
}

/// Random schemas and values (a small deterministic generator) never panic any of the walks.
#[test]
fn random_schemas_and_values_do_not_panic() {
    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }
    fn value(r: &mut Rng, depth: u32) -> Value {
        match r.next(if depth > 3 { 6 } else { 8 }) {
            0 => Value::Null,
            1 => json!(r.next(2) == 0),
            2 => json!(r.next(100) as i64 - 50),
            3 => json!(r.next(1000) as f64 / 7.0),
            4 => json!(["a", "ab", "2026-01-01T00:00:00Z", "10.0.0.0/8", ""][r.next(5) as usize]),
            5 => json!(u64::MAX),
            6 => Value::Array((0..r.next(4)).map(|_| value(r, depth + 1)).collect()),
            _ => {
                let mut m = serde_json::Map::new();
                for _ in 0..r.next(4) {
                    m.insert(
                        ["a", "b", "spec", "metadata", "kind"][r.next(5) as usize].into(),
                        value(r, depth + 1),
                    );
                }
                Value::Object(m)
            }
        }
    }
    fn schema(r: &mut Rng, depth: u32) -> Value {
        let mut m = serde_json::Map::new();
        let types = [
            "object", "array", "string", "integer", "number", "boolean", "",
        ];
        let t = types[r.next(types.len() as u64) as usize];
        if !t.is_empty() {
            m.insert("type".into(), json!(t));
        }
        let keys = [
            "nullable",
            "x-kubernetes-preserve-unknown-fields",
            "x-kubernetes-embedded-resource",
            "x-kubernetes-int-or-string",
            "minimum",
            "maximum",
            "exclusiveMaximum",
            "multipleOf",
            "maxLength",
            "minLength",
            "pattern",
            "enum",
            "minItems",
            "maxItems",
            "uniqueItems",
            "maxProperties",
            "required",
            "default",
            "format",
            "x-kubernetes-list-type",
            "x-kubernetes-list-map-keys",
            "x-kubernetes-validations",
        ];
        for _ in 0..r.next(4) {
            let k = keys[r.next(keys.len() as u64) as usize];
            let v = match k {
                "pattern" => json!(["^[a-z]+$", "(", "a{1000000}"][r.next(3) as usize]),
                "enum" | "required" | "x-kubernetes-list-map-keys" => json!(["a", 1, null]),
                "format" => json!(["date-time", "cidr", "byte", "uuid"][r.next(4) as usize]),
                "x-kubernetes-list-type" => json!(["set", "map", "atomic"][r.next(3) as usize]),
                "multipleOf" => json!([0.0, 0.5, 3.0][r.next(3) as usize]),
                "default" => value(r, 2),
                "x-kubernetes-validations" => {
                    let rules = [
                        "self.a > 1",
                        "size(self) < 3",
                        "self == oldSelf",
                        "self.all(x, x != 'a')",
                        "has(self.spec) && self.spec.b",
                        "1 / 0 == 1",
                        "self.?a.hasValue()",
                    ];
                    let rule = rules[r.next(rules.len() as u64) as usize];
                    json!([{"rule": rule, "messageExpression": "'bad: ' + string(self)"}])
                }
                _ => json!(r.next(3) as i64 - 1),
            };
            m.insert(k.into(), v);
        }
        if depth < 4 {
            if r.next(2) == 0 {
                let mut props = serde_json::Map::new();
                for k in ["a", "b", "spec"] {
                    if r.next(2) == 0 {
                        props.insert(k.into(), schema(r, depth + 1));
                    }
                }
                m.insert("properties".into(), Value::Object(props));
            }
            match r.next(4) {
                0 => drop(m.insert("items".into(), schema(r, depth + 1))),
                1 => drop(m.insert("additionalProperties".into(), schema(r, depth + 1))),
                2 => drop(m.insert("additionalProperties".into(), json!(true))),
                _ => drop(m.insert(
                    "anyOf".into(),
                    json!([schema(r, depth + 1), schema(r, depth + 1)]),
                )),
            }
        }
        Value::Object(m)
    }
    let mut r = Rng(0x2545_f491_4f6c_dd1d);
    for _ in 0..1500 {
        let s = schema(&mut r, 0);
        let mut v = value(&mut r, 0);
        let _ = validate(&s, &v);
        prune(&s, &mut v);
        apply_defaults(&s, &mut v);
        let _ = validate(&s, &v);
        normalize_numbers(&mut v);
        let mut w = v.clone();
        let _ = prune_unknown_fields(&s, &mut w);
        let _ = ObjectSchema::new(s).validate_update(&w, &v);
    }
}
