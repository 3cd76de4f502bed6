//! Type checking with declared variables, as kube-controller-manager's ValidatingAdmissionPolicy
//! status controller checks a policy's expressions (`typechecking.go`): each variable typed by
//! a schema (or `dyn`), and the policy's `variables` typed by their own expressions, in order.
//! Only the errors this walk is sure of are reported (fields a typed object does not declare,
//! operators with no overload for known types), so a valid expression is never flagged.
use std::rc::Rc;

use serde_json::Value;

use super::schema::SchemaShapes;
use super::walk::{Abs, Walker};
use super::{Kind, Shapes};
use crate::object::cel::{on_a_deep_stack, syntax_tree};
use crate::object::node::Node;

/// How a variable is declared to the checker.
#[derive(Clone, Copy, Debug)]
pub enum Declared<'a> {
    /// `dyn`: anything goes.
    Dyn,
    /// A value of this JSON schema (OpenAPI v3, every `$ref` already resolved, `int-or-string`
    /// spelled as `x-kubernetes-int-or-string`). Its `apiVersion`, `kind` and `metadata` are
    /// its declared properties: resolve a kind's schema with its full `ObjectMeta`.
    Schema(&'a Value),
}

/// The issues cel-go's checker reports for `source` with `declared` variables and a policy's
/// `variables` (name, expression) — rendered as `Issues.String()` renders them
/// (`ERROR: <input>:1:12: undefined field 'x'` with the source line and a caret), or `None`.
/// An expression the parser refuses gives `None`: syntax is judged when the policy is written.
pub fn type_check(
    source: &str,
    declared: &[(&str, Declared<'_>)],
    variables: &[(&str, &str)],
) -> Option<String> {
    let tree = syntax_tree(source)?;
    let shapes = SchemaShapes::<Node>::new();
    on_a_deep_stack(|| {
        let mut fields: Vec<(String, Abs<_>)> = Vec::new();
        for (name, expression) in variables {
            // A variable that does not compile is declared `dyn` (its own errors are not the
            // expression's).
            let abs = syntax_tree(expression)
                .and_then(|t| {
                    let mut w = walker(&shapes, expression, declared, &fields);
                    let (abs, _) = w.visit(&t, 0);
                    w.into_errors().is_empty().then_some(abs)
                })
                .unwrap_or_else(|| Abs::of(Kind::Dyn));
            fields.push((name.to_string(), abs));
        }
        let mut w = walker(&shapes, source, declared, &fields);
        w.visit(&tree, 0);
        super::render(source, &super::in_order(w.into_errors()))
    })
}

type NodeShapes<'a> = SchemaShapes<Node<'a>>;

/// A walker over `source` with the declarations and the variables typed so far.
fn walker<'s, 'a>(
    shapes: &'s NodeShapes<'a>,
    source: &'s str,
    declared: &[(&str, Declared<'a>)],
    variables: &[(String, Abs<<NodeShapes<'a> as Shapes>::H>)],
) -> Walker<'s, NodeShapes<'a>> {
    let mut w = Walker::new(shapes, source, true);
    for (name, d) in declared {
        let abs = match d {
            Declared::Dyn => Abs::of(Kind::Dyn),
            Declared::Schema(s) => w.abs_of_shape(SchemaShapes::this(Node(s), false)),
        };
        w.bind(name, abs);
    }
    let mut vars = Abs::of(Kind::Object);
    vars.fields = Some(Rc::new(variables.to_vec()));
    w.bind("variables", vars);
    w
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::{Declared, type_check};

    fn deployment() -> serde_json::Value {
        json!({"type": "object", "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object", "properties": {
                "name": {"type": "string"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            }},
            "spec": {"type": "object", "properties": {
                "replicas": {"type": "integer", "format": "int32"},
                "strategy": {"type": "object", "properties": {"maxSurge": {"x-kubernetes-int-or-string": true}}},
                "template": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
            }},
        }})
    }

    fn check(source: &str, variables: &[(&str, &str)]) -> Option<String> {
        let d = deployment();
        type_check(
            source,
            &[
                ("object", Declared::Schema(&d)),
                ("oldObject", Declared::Schema(&d)),
                ("params", Declared::Dyn),
            ],
            variables,
        )
    }

    #[test]
    fn undefined_fields_are_reported_where_cel_go_puts_them() {
        assert_eq!(
            check("object.spec.replica > 1", &[]).as_deref(),
            Some(
                "ERROR: <input>:1:12: undefined field 'replica'\n | object.spec.replica > 1\n | ...........^"
            )
        );
        assert_eq!(
            check("object.spec.replicas > 'a'", &[]).as_deref(),
            Some(
                "ERROR: <input>:1:22: found no matching overload for '_>_' applied to '(int, string)'\n | object.spec.replicas > 'a'\n | .....................^"
            )
        );
    }

    #[test]
    fn declared_and_dynamic_values_pass() {
        for ok in [
            "object.spec.replicas > 1 && oldObject.spec.replicas >= 0",
            "object.metadata.labels['app'] == 'x' && 'app' in object.metadata.labels",
            "has(object.spec.strategy) && object.spec.strategy.maxSurge == 1",
            "object.spec.template.anything.goes",
            "params.whatever > 1 && request.operation == 'CREATE'",
            "object.metadata.labels.all(k, k.startsWith('a'))",
            "variables.count < 3 && variables.spec.replicas > 0",
            // Kubernetes' CEL compares numbers across types.
            "object.spec.replicas > 1.5 && object.spec.replicas < 10u",
            "object.spec.replicas in [1, 2, 3] && string(object.spec.replicas) != ''",
            "object.metadata.name.size() < 64 && object.metadata.name.matches('^[a-z]+$')",
        ] {
            assert_eq!(
                check(
                    ok,
                    &[
                        ("count", "size(object.metadata.labels)"),
                        ("spec", "object.spec")
                    ]
                ),
                None,
                "{ok}"
            );
        }
    }

    #[test]
    fn variables_are_typed_by_their_expressions_in_order() {
        let vars = [("spec", "object.spec"), ("n", "variables.spec.replicas")];
        let m = check(
            "variables.n + 'x' == '' || variables.spec.replica == 1",
            &vars,
        )
        .unwrap();
        assert!(
            m.contains("found no matching overload for '_+_' applied to '(int, string)'"),
            "{m}"
        );
        assert!(m.contains("undefined field 'replica'"), "{m}");
        assert!(
            check("variables.nope", &vars)
                .unwrap()
                .contains("undefined field 'nope'")
        );
        // A variable with a type error of its own is dyn to the expressions that use it.
        assert_eq!(
            check("variables.bad.x == 1", &[("bad", "object.spec.replica")]),
            None
        );
    }
}
