//! What kube-apiserver's CEL compiler refuses in a CRD beyond syntax: fields the schema does
//! not declare (`undefined field 'x'`), operands with no overload, a rule that is not a bool
//! or a `messageExpression` that is not a string, and rules whose estimated cost is over the
//! server's budget, alone or all together. The analysis itself is the object validator's
//! ([`crate::object::cel::check`]); this module reads the CRD model for it and words the
//! results as the server does.
//!
//! Only certain type errors are refused: maps, `x-kubernetes-preserve-unknown-fields`,
//! int-or-string and everything whose type is not known here are taken as dynamic, so a valid
//! rule is never refused.
use super::model::{Items, Schema};
use super::path::Path;
use crate::object::cel::check::schema::{
    SchemaShapes, SchemaView, child_multiplier, max_cardinality, min_size,
};
use crate::object::cel::check::{self, Analysis, OldSelf};
use crate::object::cel::{escape, on_a_deep_stack, syntax_tree};

/// A rule or messageExpression as the server's compiler sees it.
pub(crate) struct Compiled {
    /// The compile errors, rendered as cel-go renders its issues.
    pub errors: Option<String>,
    /// The result is of a known kind other than the one required.
    pub wrong_result: bool,
    /// The estimated cost of one evaluation (`MaxCost`).
    pub cost: u64,
}

/// Checks `source` on node `s`; `None` when the interpreter's parser cannot read it (the
/// syntax checker has already judged it).
pub(crate) fn compile(
    source: &str,
    s: &Schema,
    is_root: bool,
    old: OldSelf,
    message_expression: bool,
) -> Option<Compiled> {
    let tree = syntax_tree(source)?;
    let shapes = SchemaShapes::<&Schema>::new();
    // The walk recurses once per syntax-tree level, like the parser.
    let Analysis { kind, cost, errors } = on_a_deep_stack(|| {
        check::analyse(
            &shapes,
            SchemaShapes::this(s, is_root),
            old,
            &tree,
            source,
            true,
        )
    });
    let errors = check::render(source, &errors);
    let wanted = if message_expression {
        check::Kind::String
    } else {
        check::Kind::Bool
    };
    let wrong_result = !matches!(kind, check::Kind::Dyn) && kind != wanted;
    Some(Compiled {
        errors,
        wrong_result,
        cost: cost.max,
    })
}

/// `getExpressionCost`: a rule's cost times how often it can run in one object — the bound
/// its ancestors' `maxItems`/`maxProperties` give, else as often as its smallest JSON fits in
/// a request.
pub(crate) fn expression_cost(cost: u64, s: &Schema, cardinality: Option<u64>) -> u64 {
    if cost == 0 {
        return 0;
    }
    let times = cardinality.unwrap_or_else(|| max_cardinality(min_size(&s, 0)));
    cost.saturating_mul(times)
}

/// The cardinality of the children of `s` (`childContext`): `None` once unbounded.
pub(crate) fn child_cardinality(parent: Option<u64>, s: &Schema) -> Option<u64> {
    Some(parent?.saturating_mul(child_multiplier(&s)?))
}

/// The checks' costs of one schema, with where each was observed (`TotalCost`).
#[derive(Default)]
pub(crate) struct TotalCost {
    pub total: u64,
    most_expensive: Vec<(Path, u64)>,
}

impl TotalCost {
    pub(crate) fn observe(&mut self, path: Path, cost: u64) {
        self.total = self.total.saturating_add(cost);
        // Rules under 1% of the limit are not named.
        if cost < check::STATIC_CRD_LIMIT / 100 {
            return;
        }
        self.most_expensive.push((path, cost));
        self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
        self.most_expensive.truncate(4);
    }

    pub(crate) fn append(&mut self, other: TotalCost) {
        for (p, c) in other.most_expensive {
            self.most_expensive.push((p, c));
        }
        self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.1));
        self.most_expensive.truncate(4);
        self.total = self.total.saturating_add(other.total);
    }

    /// The server's errors when the total is over the limit.
    pub(crate) fn violations(&self, schema_path: &Path) -> Vec<super::Violation> {
        use super::render::forbidden;
        if self.total <= check::STATIC_CRD_LIMIT {
            return Vec::new();
        }
        let mut out: Vec<super::Violation> = self
            .most_expensive
            .iter()
            .map(|(p, _)| {
                super::Violation::new(forbidden(
                    p,
                    "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
                ))
            })
            .collect();
        out.push(super::Violation::new(forbidden(
            schema_path,
            &check::over_budget(
                "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                self.total,
                check::STATIC_CRD_LIMIT,
            ),
        )));
        out
    }
}

impl SchemaView for &Schema {
    fn type_name(&self) -> &str {
        &self.type_
    }

    fn format(&self) -> &str {
        &self.format
    }

    fn max_length(&self) -> Option<i64> {
        self.max_length
    }

    fn max_items(&self) -> Option<i64> {
        self.max_items
    }

    fn max_properties(&self) -> Option<i64> {
        self.max_properties
    }

    fn int_or_string(&self) -> bool {
        self.x_int_or_string
    }

    fn preserve_unknown(&self) -> bool {
        self.preserves_unknown()
    }

    fn embedded(&self) -> bool {
        self.x_embedded_resource
    }

    fn combinators(&self) -> bool {
        !self.all_of.is_empty() || !self.any_of.is_empty() || !self.one_of.is_empty()
    }

    fn has_properties(&self) -> bool {
        !self.properties.is_empty()
    }

    fn property_by_cel_name(&self, cel_name: &str) -> Option<Self> {
        self.properties
            .iter()
            .find(|(k, _)| escape(k).as_deref() == Some(cel_name))
            .map(|(_, p)| p)
    }

    fn items(&self) -> Option<Self> {
        match &self.items {
            Some(Items::Schema(s)) => Some(s),
            _ => None,
        }
    }

    fn additional_schema(&self) -> Option<Self> {
        self.additional_properties_schema()
    }

    fn additional_any(&self) -> bool {
        self.additional_properties
            .as_ref()
            .is_some_and(|a| a.allows && a.schema.is_none())
    }

    fn required_without_default(&self) -> Vec<(usize, Self)> {
        self.required
            .iter()
            .filter_map(|name| {
                let p = self.properties.get(name)?;
                p.default.is_none().then_some((name.len(), p))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use crate::validate::validate_crd;
    use serde_json::{Value, json};

    fn crd(spec_schema: Value, root_rules: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-validations": root_rules,
                    "properties": {"spec": spec_schema}}}}]}
        })
    }

    /// The one message of `m`, checked to start with `prefix` and end with `suffix`.
    fn only_message(m: &[String], prefix: &str, suffix: &str) {
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].starts_with(prefix), "{}", m[0]);
        assert!(m[0].ends_with(suffix), "{}", m[0]);
    }

    fn messages(c: &Value) -> Vec<String> {
        validate_crd(c)
            .violations
            .into_iter()
            .map(|v| v.cause.to_string())
            .collect()
    }

    #[test]
    fn an_undeclared_field_is_the_servers_compile_error() {
        let c = crd(
            json!({"type": "object", "properties": {"replicas": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.replicas > 0 && self.replica < 9"}]}),
            json!([]),
        );
        let m = messages(&c);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(
            m[0].starts_with("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.replicas > 0 && self.replica < 9\""),
            "{}",
            m[0]
        );
        assert!(
            m[0].ends_with(": compilation failed: ERROR: <input>:1:26: undefined field 'replica'\n | self.replicas > 0 && self.replica < 9\n | .........................^"),
            "{}",
            m[0]
        );
    }

    #[test]
    fn root_metadata_has_only_name_and_generate_name() {
        let ok = crd(
            json!({"type": "object"}),
            json!([{"rule": "self.metadata.name.size() < 20 && has(self.metadata.generateName)"}]),
        );
        assert_eq!(messages(&ok), Vec::<String>::new());
        let bad = crd(
            json!({"type": "object"}),
            json!([{"rule": "true", "messageExpression": "'x' + self.metadata.namespace"}]),
        );
        let m = messages(&bad);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].contains("messageExpression compilation failed: ERROR: <input>:1:20: undefined field 'namespace'"), "{}", m[0]);
    }

    #[test]
    fn maps_unknown_fields_escapes_and_loop_variables_are_not_refused() {
        let c = crd(
            json!({"type": "object",
            "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "ios": {"x-kubernetes-int-or-string": true},
                "foo-bar": {"type": "string"},
                "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}
            },
            "x-kubernetes-validations": [
                {"rule": "self.labels.anything == 'x' || self.free.whatever.deeper == 1 || self.foo__dash__bar == ''"},
                {"rule": "self.items.all(self, self.a == 'x')"},
                {"rule": "'self.nope' != '' && self.?foo__dash__bar.orValue('') == ''"}
            ]}),
            json!([]),
        );
        assert_eq!(messages(&c), Vec::<String>::new());
    }

    const RULE0: &str =
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0]";
    const HINT: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

    #[test]
    fn a_quadratic_rule_on_an_unbounded_list_is_over_every_budget() {
        let list = |bounds: Value| {
            let mut l = json!({"type": "array", "items": {"type": "string"}});
            for (k, v) in bounds.as_object().expect("object") {
                l[k] = v.clone();
            }
            json!({"type": "object", "properties": {"names": l},
                "x-kubernetes-validations": [{"rule": "self.names.all(x, self.names.exists_one(y, x == y))"}]})
        };
        let m = messages(&crd(list(json!({})), json!([])));
        assert_eq!(
            m,
            vec![
                format!(
                    "{RULE0}.rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {HINT}"
                ),
                format!(
                    "{RULE0}.rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
                ),
                format!(
                    "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {HINT}"
                ),
            ]
        );
        // Bounding the list and its strings brings it under the limit, as the hint says.
        let bounded = list(json!({"maxItems": 100, "items": {"type": "string", "maxLength": 64}}));
        assert_eq!(messages(&crd(bounded, json!([]))), Vec::<String>::new());
    }

    #[test]
    fn a_rule_under_an_unbounded_list_counts_once_per_possible_item() {
        let items = |max_items: Option<u64>| {
            let mut l = json!({"type": "array", "items": {"type": "object",
                "properties": {"a": {"type": "string", "maxLength": 5}, "b": {"type": "string", "maxLength": 5}},
                "x-kubernetes-validations": [{"rule": "self.a == 'xyz' && self.b == 'xyz' && self.a != self.b"}]}});
            if let Some(n) = max_items {
                l["maxItems"] = json!(n);
            }
            json!({"type": "object", "properties": {"items": l}})
        };
        // 11 per item, and 3 MiB / 3 bytes ("{}" and a comma) = 1,048,576 possible items.
        let m = messages(&crd(items(None), json!([])));
        assert_eq!(
            m,
            vec![format!(
                "spec.validation.openAPIV3Schema.properties[spec].properties[items].items.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 1.153434x {HINT}"
            )]
        );
        assert_eq!(
            messages(&crd(items(Some(100)), json!([]))),
            Vec::<String>::new()
        );
    }

    #[test]
    fn an_unsized_message_expression_is_over_its_budget() {
        let c = crd(
            json!({"type": "object", "properties": {"min": {"type": "integer"}, "max": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.min <= self.max",
                    "messageExpression": "'min (' + string(self.min) + ') is above max'"}]}),
            json!([]),
        );
        let m = messages(&c);
        assert_eq!(m.len(), 3, "{m:?}");
        assert_eq!(
            m[0],
            format!(
                "{RULE0}.messageExpression: Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x {HINT}"
            )
        );
        assert_eq!(
            m[1],
            format!(
                "{RULE0}.messageExpression: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
            )
        );
    }

    #[test]
    fn type_errors_and_result_types_are_the_servers_compile_errors() {
        let rule = |r: Value| {
            crd(
                json!({"type": "object", "properties": {"replicas": {"type": "integer"}},
                    "x-kubernetes-validations": [r]}),
                json!([]),
            )
        };
        let invalid = format!("{RULE0}.rule: Invalid value: apiextensions.ValidationRule{{");
        only_message(
            &messages(&rule(json!({"rule": "self.replicas > 'a'"}))),
            &invalid,
            ": compilation failed: ERROR: <input>:1:15: found no matching overload for '_>_' applied to '(int, string)'\n | self.replicas > 'a'\n | ..............^",
        );
        only_message(
            &messages(&rule(json!({"rule": "self.replicas + 1"}))),
            &invalid,
            "}: cel expression must evaluate to a bool",
        );
        only_message(
            &messages(&rule(
                json!({"rule": "self.replicas > 0", "messageExpression": "self.replicas"}),
            )),
            &format!("{RULE0}.messageExpression: Invalid value: "),
            "}: messageExpression must evaluate to a string",
        );
    }
}
