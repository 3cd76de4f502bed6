//! The CEL rules against the server's wording, one rule family per test.
use super::*;
use serde_json::json;

fn schema_with(spec_props: Value, spec_rules: Value) -> ObjectSchema {
    ObjectSchema::new(json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": spec_props, "x-kubernetes-validations": spec_rules}
    }}))
}

fn lines(c: &[Cause]) -> Vec<String> {
    c.iter().map(|c| format!("{} {c}", c.reason)).collect()
}

#[test]
fn message_default_message_reason_and_field_path() {
    let s = schema_with(
        json!({"a": {"type": "integer"}, "b": {"type": "string"}}),
        json!([
            {"rule": "self.a > 1"},
            {"rule": "self.a > 2", "message": " a must be above 2 "},
            {"rule": "self.a > 3", "message": "no", "reason": "FieldValueForbidden", "fieldPath": ".a"},
            {"rule": "self.a > 4", "message": "need b", "reason": "FieldValueRequired", "fieldPath": ".b"},
            {"rule": "self.a > 5", "reason": "FieldValueDuplicate"}
        ]),
    );
    assert_eq!(
        lines(&s.validate(&json!({"spec": {"a": 1, "b": "x"}}))),
        [
            "FieldValueInvalid spec: Invalid value: failed rule: self.a > 1",
            "FieldValueInvalid spec: Invalid value: a must be above 2",
            "FieldValueForbidden spec.a: Forbidden: no",
            "FieldValueRequired spec.b: Required value: need b",
            "FieldValueDuplicate spec: Duplicate value",
        ]
    );
    assert!(s.validate(&json!({"spec": {"a": 6}})).is_empty());
}

#[test]
fn scalar_values_are_printed_and_map_keys_use_brackets() {
    let s = ObjectSchema::new(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "ports": {"type": "object", "additionalProperties": {"type": "integer",
                "x-kubernetes-validations": [{"rule": "self >= 1", "message": "port must be between 1-65535"}]}},
            "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self.startsWith('a')"}]}
        }}}}),
    );
    assert_eq!(
        lines(&s.validate(&json!({"spec": {"ports": {"tcp": 0}, "name": "b"}}))),
        [
            "FieldValueInvalid spec.name: Invalid value: \"b\": failed rule: self.startsWith('a')",
            "FieldValueInvalid spec.ports[tcp]: Invalid value: 0: port must be between 1-65535",
        ]
    );
}

#[test]
fn message_expression_and_its_fallbacks() {
    let s = schema_with(
        json!({"a": {"type": "integer"}}),
        json!([
            {"rule": "self.a > 1", "messageExpression": "'a is ' + string(self.a)"},
            {"rule": "self.a > 1", "message": "static", "messageExpression": "''"},
            {"rule": "self.a > 1", "message": "static2", "messageExpression": "self.nope"}
        ]),
    );
    assert_eq!(
        lines(&s.validate(&json!({"spec": {"a": 1}}))),
        [
            "FieldValueInvalid spec: Invalid value: a is 1",
            "FieldValueInvalid spec: Invalid value: static",
            "FieldValueInvalid spec: Invalid value: static2",
        ]
    );
}

#[test]
fn runtime_errors_name_the_type_and_rule() {
    let s = schema_with(
        json!({"a": {"type": "integer"}}),
        json!([{"rule": "self.b == 1"}, {"rule": "self.a / 0 == 1", "message": "m"}]),
    );
    assert_eq!(
        lines(&s.validate(&json!({"spec": {"a": 1}}))),
        [
            "FieldValueInvalid spec: Invalid value: \"object\": no such key: b evaluating rule: self.b == 1",
            "FieldValueInvalid spec: Invalid value: \"object\": division by zero evaluating rule: m",
        ]
    );
}

#[test]
fn a_missing_field_given_to_a_function_is_a_missing_key_as_in_cel_go() {
    let s = schema_with(
        json!({"refs": {"type": "array", "items": {"type": "string"}}, "a": {"type": "integer"}}),
        json!([{"rule": "size(self.refs) > 0", "message": "needs refs"}]),
    );
    assert_eq!(
        lines(&s.validate(&json!({"spec": {"a": 1}}))),
        [
            "FieldValueInvalid spec: Invalid value: \"object\": no such key: refs evaluating rule: needs refs"
        ]
    );
}

#[test]
fn bad_durations_and_timestamps_are_cel_go_conversion_errors() {
    let s = schema_with(
        json!({"d": {"type": "string"}, "t": {"type": "string"}}),
        json!([{"rule": "duration(self.d) > duration('0s')", "message": "d"},
               {"rule": "timestamp(self.t) > timestamp('2000-01-01T00:00:00Z')", "message": "t"}]),
    );
    assert_eq!(
        lines(&s.validate(&json!({"spec": {"d": "added", "t": "yesterday"}}))),
        [
            "FieldValueInvalid spec: Invalid value: \"object\": type conversion error from 'string' to 'google.protobuf.Duration' evaluating rule: d",
            "FieldValueInvalid spec: Invalid value: \"object\": type conversion error from 'string' to 'google.protobuf.Timestamp' evaluating rule: t",
        ]
    );
}

#[test]
fn openapi_failures_of_blocking_kinds_skip_cel_with_the_nil_cause() {
    let s = schema_with(
        json!({"a": {"type": "integer", "maximum": 5}, "m": {"type": "string", "enum": ["x"]}}),
        json!([{"rule": "self.a > 1"}]),
    );
    // maximum is FieldValueInvalid: not blocking, so the rule runs too.
    let c = s.validate(&json!({"spec": {"a": 9, "m": "x"}}));
    assert_eq!(c.len(), 1, "{c:?}");
    let c = s.validate(&json!({"spec": {"a": 0, "m": "y"}}));
    assert_eq!(
        lines(&c),
        [
            "FieldValueNotSupported spec.m: Unsupported value: \"y\": supported values: \"x\"",
            &format!("FieldValueInvalid <nil>: {RULES_NOT_CHECKED}"),
        ]
    );
    let c = s.validate(&json!({"spec": {"a": 0, "m": "x"}}));
    assert_eq!(
        lines(&c),
        ["FieldValueInvalid spec: Invalid value: failed rule: self.a > 1"]
    );
}

#[test]
fn wrong_type_in_an_enum_field_is_also_not_supported() {
    let s = ObjectSchema::new(json!({"type": "object", "properties": {
        "m": {"type": "string", "enum": ["x", "y"]}}}));
    assert_eq!(
        lines(&s.validate(&json!({"m": 12345}))),
        [
            "FieldValueTypeInvalid m: Invalid value: \"integer\": m in body must be of type string: \"integer\"",
            "FieldValueNotSupported m: Unsupported value: 12345: supported values: \"x\", \"y\"",
        ]
    );
}

#[test]
fn too_long_strings_are_not_matched_against_the_pattern() {
    let s = ObjectSchema::new(json!({"type": "object", "properties": {
        "n": {"type": "string", "maxLength": 2, "pattern": "^[a-z]+$"}}}));
    assert_eq!(
        lines(&s.validate(&json!({"n": "ABC"}))),
        ["FieldValueTooLong n: Too long: may not be more than 2 bytes"]
    );
}

#[test]
fn transition_rules_see_old_self_on_update_only() {
    let s = schema_with(
        json!({"a": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}]}}),
        json!([{"rule": "!has(oldSelf.a) || has(self.a)", "message": "a cannot be removed"},
               {"rule": "oldSelf.hasValue() || self.a != 'z'", "optionalOldSelf": true, "message": "no z on create"}]),
    );
    assert!(s.validate(&json!({"spec": {"a": "x"}})).is_empty());
    assert_eq!(
        lines(&s.validate(&json!({"spec": {"a": "z"}}))),
        ["FieldValueInvalid spec: Invalid value: no z on create"]
    );
    assert_eq!(
        lines(&s.validate_update(&json!({"spec": {"a": "y"}}), &json!({"spec": {"a": "x"}}))),
        ["FieldValueInvalid spec.a: Invalid value: \"y\": immutable"]
    );
    assert_eq!(
        lines(&s.validate_update(&json!({"spec": {}}), &json!({"spec": {"a": "x"}}))),
        ["FieldValueInvalid spec: Invalid value: a cannot be removed"]
    );
}

#[test]
fn ratcheting_keeps_unchanged_invalid_values() {
    let s = ObjectSchema::new(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "integer", "maximum": 5},
            "b": {"type": "string", "x-kubernetes-validations": [{"rule": "self.size() < 3"}]},
            "c": {"type": "integer"},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {"type": "integer", "minimum": 1}}}}
        }}}}),
    );
    let old = json!({"spec": {"a": 9, "b": "long", "c": 1, "ports": [{"name": "x", "port": 0}]}});
    // Everything invalid is unchanged, the list reordered around it: accepted.
    let new = json!({"spec": {"a": 9, "b": "long", "c": 2, "ports": [{"name": "y", "port": 2}, {"name": "x", "port": 0}]}});
    assert!(
        s.validate_update(&new, &old).is_empty(),
        "{:?}",
        s.validate_update(&new, &old)
    );
    // A changed value is checked again.
    let new =
        json!({"spec": {"a": 10, "b": "longer", "c": 1, "ports": [{"name": "x", "port": -1}]}});
    assert_eq!(s.validate_update(&new, &old).len(), 3);
}

#[test]
fn list_map_duplicates_are_json_once_per_value_with_bracket_map_keys() {
    let s = ObjectSchema::new(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "specs": {"type": "object", "additionalProperties": {"type": "object", "properties": {
                "containers": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                    "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}}
        }}}}),
    );
    let c = s.validate(&json!({"spec": {
        "specs": {"Worker": {"containers": [{"name": "jax"}, {"name": "jax"}, {"name": "jax"}]}},
        "tags": ["a", "a", "a", "b", "b"]
    }}));
    let mut got = lines(&c);
    got.sort();
    assert_eq!(
        got,
        [
            "FieldValueDuplicate spec.specs[Worker].containers[1]: Duplicate value: {\"name\":\"jax\"}",
            "FieldValueDuplicate spec.tags[1]: Duplicate value: \"a\"",
            "FieldValueDuplicate spec.tags[4]: Duplicate value: \"b\"",
        ]
    );
}

#[test]
fn self_is_typed_from_the_schema() {
    let s = ObjectSchema::new(json!({"type": "object",
    "x-kubernetes-validations": [
        {"rule": "self.metadata.name.startsWith('ok')", "message": "name"},
        {"rule": "!has(self.metadata.labels)", "message": "labels are not visible"}
    ],
    "properties": {"spec": {"type": "object",
    "x-kubernetes-validations": [
        {"rule": "self.ratio > 0.5", "message": "ratio"},
        {"rule": "self.__namespace__ == 'x' && self.foo__dash__bar == 1", "message": "escaped"},
        {"rule": "self.when > timestamp('2020-01-01T00:00:00Z')", "message": "when"},
        {"rule": "self.every >= duration('90s') && self.every < duration('2h')", "message": "every"},
        {"rule": "self.labels['a.b/c'] == 'v'", "message": "map keys are raw"},
        {"rule": "self.ios == 1 || self.ios == 'one'", "message": "int-or-string"},
        {"rule": "quantity(self.mem).isGreaterThan(quantity('1Mi')) && isCIDR(self.net)", "message": "libraries"}
    ],
    "properties": {
        "ratio": {"type": "number"}, "namespace": {"type": "string"}, "foo-bar": {"type": "integer"},
        "when": {"type": "string", "format": "date-time"},
        "every": {"type": "string", "format": "duration"},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "ios": {"x-kubernetes-int-or-string": true},
        "mem": {"type": "string"}, "net": {"type": "string"}
    }}}}));
    let good = json!({"metadata": {"name": "ok-1", "labels": {"a": "b"}}, "spec": {
        "ratio": 1, "namespace": "x", "foo-bar": 1, "when": "2024-05-01T10:00:00Z", "every": "1h1.5m",
        "labels": {"a.b/c": "v"}, "ios": "one", "mem": "1Gi", "net": "10.0.0.0/8"}});
    assert_eq!(lines(&s.validate(&good)), Vec::<String>::new());
    let bad = json!({"metadata": {"name": "no"}, "spec": {
        "ratio": 0.25, "namespace": "y", "foo-bar": 1, "when": "2019-05-01T10:00:00Z", "every": "30s",
        "labels": {"a.b/c": "w"}, "ios": 2, "mem": "1Ki", "net": "nope"}});
    assert_eq!(
        lines(&s.validate(&bad)),
        [
            "FieldValueInvalid <nil>: Invalid value: name",
            "FieldValueInvalid spec: Invalid value: ratio",
            "FieldValueInvalid spec: Invalid value: escaped",
            "FieldValueInvalid spec: Invalid value: when",
            "FieldValueInvalid spec: Invalid value: every",
            "FieldValueInvalid spec: Invalid value: map keys are raw",
            "FieldValueInvalid spec: Invalid value: int-or-string",
            "FieldValueInvalid spec: Invalid value: libraries",
        ]
    );
}

#[test]
fn optional_syntax_deep_nesting_and_what_cannot_run_here() {
    let deep = format!("{}self.a{} > 1", "(".repeat(200), ")".repeat(200));
    let s = schema_with(
        json!({"a": {"type": "integer"}}),
        json!([
            {"rule": "self.?a.orValue(0) > 1", "message": "optional"},
            {"rule": deep, "message": "deep"},
            {"rule": "cel.bind(x, self.a, x > 1)", "message": "bind"},
            {"rule": "self.a >"},
            {"rule": format!("self.a{} > 1", " + 1".repeat(100_000))},
            // 995 levels deep, just under the token bound: evaluated, even unoptimised.
            {"rule": format!("self.a{} > 995", " + 1".repeat(995)), "message": "long"}
        ]),
    );
    let kinds: Vec<RuleIssueKind> = s.rule_issues().iter().map(|i| i.kind).collect();
    assert_eq!(kinds, [RuleIssueKind::Invalid, RuleIssueKind::Unsupported]);
    assert_eq!(
        s.rule_issues()[0].pointer,
        "/properties/spec/x-kubernetes-validations/3"
    );
    // cel.bind is not in this interpreter: skipped, not failed.
    assert_eq!(
        lines(&s.validate(&json!({"spec": {"a": 0}}))),
        [
            "FieldValueInvalid spec: Invalid value: optional",
            "FieldValueInvalid spec: Invalid value: deep",
            "FieldValueInvalid spec: Invalid value: long",
        ]
    );
    assert!(s.validate(&json!({"spec": {"a": 2}})).is_empty());
}

#[test]
fn what_the_server_never_ratchets() {
    let s = ObjectSchema::new(
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "gen": {"type": "integer", "x-kubernetes-validations": [{"rule": "self > oldSelf", "message": "must grow"}]},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "either": {"type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]},
            "other": {"type": "integer"}
        }}}}),
    );
    let old = json!({"spec": {"gen": 1, "tags": ["x", "x"], "either": "c", "other": 1}});
    let new = json!({"spec": {"gen": 1, "tags": ["x", "x"], "either": "c", "other": 2}});
    let mut got = lines(&s.validate_update(&new, &old));
    got.sort();
    assert_eq!(
        got,
        [
            "FieldValueDuplicate spec.tags[1]: Duplicate value: \"x\"",
            "FieldValueInvalid <nil>: Invalid value: \"\": \"spec.either\" must validate at least one schema (anyOf)",
            "FieldValueInvalid spec.either: Invalid value: \"c\": spec.either in body should match '^a'",
            "FieldValueInvalid spec.gen: Invalid value: 1: must grow",
        ]
    );
}

#[test]
fn the_runtime_cost_budget_stops_rules_as_the_server_does() {
    // Accepted at CRD creation (1,000 items of 10 characters keep the estimate under the
    // per-rule limit), but a list that long is over the per-call limit at runtime.
    let s = schema_with(
        json!({"names": {"type": "array", "maxItems": 1000,
            "items": {"type": "string", "maxLength": 10}}}),
        json!([
            {"rule": "self.names.all(x, self.names.exists(y, x == y))", "message": "quadratic"},
            {"rule": "size(self.names) < 0", "message": "never checked"}
        ]),
    );
    let names =
        |n: usize| json!({"spec": {"names": (0..n).map(|i| format!("n{i}")).collect::<Vec<_>>()}});
    assert_eq!(
        lines(&s.validate(&names(1000))),
        [
            "FieldValueInvalid spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: quadratic"
        ]
    );
    // A short list costs little: both rules run.
    assert_eq!(
        lines(&s.validate(&names(20))),
        ["FieldValueInvalid spec: Invalid value: never checked"]
    );
}

#[test]
fn the_runtime_budget_is_shared_by_all_rules_of_an_object() {
    // Five rules on each of up to 500 items: each under its own limits, so the CRD is valid,
    // but together over the runtime budget when every list is full.
    let rule = json!({"rule": "self.tags.all(t, self.tags.exists_one(u, t == u))"});
    let spec = json!({"items": {"type": "array", "maxItems": 500, "items": {"type": "object",
        "properties": {"tags": {"type": "array", "maxItems": 30,
            "items": {"type": "string", "maxLength": 60}}},
        "x-kubernetes-validations": [rule, rule, rule, rule, rule]}}});
    let crd = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                "type": "object", "properties": {"spec": {"type": "object", "properties": spec.clone()}}}}}]}
    });
    let refused: Vec<String> = crate::validate::validate_crd(&crd)
        .violations
        .iter()
        .map(|v| v.cause.to_string())
        .collect();
    assert_eq!(refused, Vec::<String>::new());
    let s = schema_with(spec, json!([]));
    let full: Vec<String> = (0..30).map(|i| format!("{i:0>60}")).collect();
    let items = |n: usize, tags: &[String]| json!({"spec": {"items": (0..n).map(|_| json!({"tags": tags})).collect::<Vec<_>>()}});
    let causes = lines(&s.validate(&items(500, &full)));
    assert_eq!(causes.len(), 1, "{causes:?}");
    assert!(
        causes[0].starts_with("FieldValueInvalid spec.items[")
            && causes[0].ends_with("]: Invalid value: \"object\": validation failed due to running out of cost budget, no further validation rules will be run"),
        "{causes:?}"
    );
    // The charge follows the object: as many items with short lists stay within the budget.
    assert!(s.validate(&items(500, &full[..2])).is_empty());
}

#[test]
fn sets_and_map_lists_equal_their_old_value_in_any_order() {
    let s = schema_with(
        json!({
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "tags are immutable"}]},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "required": ["name"], "properties": {
                    "name": {"type": "string"}, "port": {"type": "integer"}}},
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "ports are immutable"}]},
            "order": {"type": "array", "items": {"type": "string"},
                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "order is immutable"}]}
        }),
        json!([]),
    );
    let old = json!({"spec": {"tags": ["a", "b"], "order": ["x", "y"],
        "ports": [{"name": "http", "port": 80}, {"name": "https", "port": 443}]}});
    let permuted = json!({"spec": {"tags": ["b", "a"], "order": ["x", "y"],
        "ports": [{"name": "https", "port": 443}, {"name": "http", "port": 80}]}});
    assert_eq!(
        lines(&s.validate_update(&permuted, &old)),
        Vec::<String>::new()
    );
    // An atomic list keeps its order; changed members are still changes.
    let changed = json!({"spec": {"tags": ["b", "c"], "order": ["y", "x"],
        "ports": [{"name": "https", "port": 8443}, {"name": "http", "port": 80}]}});
    assert_eq!(
        lines(&s.validate_update(&changed, &old)),
        [
            "FieldValueInvalid spec.order: Invalid value: order is immutable",
            "FieldValueInvalid spec.ports: Invalid value: ports are immutable",
            "FieldValueInvalid spec.tags: Invalid value: tags are immutable",
        ]
    );
}

/// cilium/tetragon's TracingPolicy: a kprobe's `return` selected directly, as kube-apiserver
/// 1.35 reads it (`self.return` is the declared `return`; measured: `return: true` without
/// `returnArg` is refused with the rule's message, with it created).
#[test]
fn fields_named_like_keywords_are_selected_directly() {
    let s = ObjectSchema::new(json!({"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"kprobes": {"type": "array", "items": {
            "type": "object",
            "properties": {
                "call": {"type": "string"},
                "return": {"type": "boolean"},
                "returnArg": {"type": "object", "properties": {
                    "index": {"type": "integer"}, "type": {"type": "string"}
                }}
            },
            "x-kubernetes-validations": [{
                "rule": "!has(self.return) || (!self.return || has(self.returnArg))",
                "message": "ReturnArg not specified with Return=true."
            }]
        }}}
    }}}));
    assert!(s.rule_issues().is_empty(), "{:?}", s.rule_issues());
    let kprobes = |k: Value| json!({"spec": {"kprobes": [{"call": "a"}, k]}});
    assert_eq!(
        lines(&s.validate(&kprobes(json!({"call": "b", "return": true})))),
        [
            "FieldValueInvalid spec.kprobes[1]: Invalid value: ReturnArg not specified with Return=true."
        ]
    );
    let with_arg = json!({"call": "b", "return": true, "returnArg": {"index": 0, "type": "int"}});
    for ok in [
        with_arg,
        json!({"call": "b", "return": false}),
        json!({"call": "b"}),
    ] {
        assert!(s.validate(&kprobes(ok.clone())).is_empty(), "{ok}");
    }
}

/// Every keyword that lexes as an identifier (all but `in`, `true`, `false`, `null`) selects its
/// field under both spellings, in `has()` and as a value; a missing one is named as written.
#[test]
fn keyword_fields_by_both_spellings_and_missing_ones_named_as_written() {
    let lexed_as_identifiers = crate::cel_words::RESERVED
        .iter()
        .copied()
        .filter(|kw| !["in", "true", "false", "null"].contains(kw));
    for kw in lexed_as_identifiers {
        for name in [kw.to_string(), format!("__{kw}__")] {
            let s = schema_with(
                json!({kw: {"type": "string"}}),
                json!([
                    {"rule": format!("has(self.{name}) && self.{name} != ''"), "message": "need it"},
                    {"rule": format!("self.{name} == 'x'")}
                ]),
            );
            assert!(s.rule_issues().is_empty(), "{name}: {:?}", s.rule_issues());
            assert!(s.validate(&json!({"spec": {kw: "x"}})).is_empty(), "{name}");
            assert_eq!(
                lines(&s.validate(&json!({"spec": {kw: "y"}}))),
                [format!(
                    "FieldValueInvalid spec: Invalid value: failed rule: self.{name} == 'x'"
                )],
                "{name}"
            );
            assert_eq!(
                lines(&s.validate(&json!({"spec": {}}))),
                [
                    "FieldValueInvalid spec: Invalid value: need it".to_string(),
                    format!(
                        "FieldValueInvalid spec: Invalid value: \"object\": no such key: {name} evaluating rule: self.{name} == 'x'"
                    )
                ],
                "{name}"
            );
        }
    }
    // A map's keys are its own: `self.return` there is the key `return`, never `__return__`.
    let s = schema_with(
        json!({"labels": {"type": "object", "additionalProperties": {"type": "string"}}}),
        json!([{"rule": "self.labels.namespace == 'a'"}]),
    );
    assert!(
        s.validate(&json!({"spec": {"labels": {"namespace": "a"}}}))
            .is_empty()
    );
    assert_eq!(
        lines(&s.validate(&json!({"spec": {"labels": {"__namespace__": "a"}}}))),
        [
            "FieldValueInvalid spec: Invalid value: \"object\": no such key: namespace evaluating rule: self.labels.namespace == 'a'"
        ]
    );
}
