//! Costs computed by hand with cel-go's model (identifiers and selections one, constants
//! zero, calls one unless priced by size, comprehensions range x (condition + step)).
use serde_json::{Value, json};

use super::actual::ActualShapes;
use super::schema::SchemaShapes;
use super::{Analysis, Kind, MAX_REQUEST_BYTES, OldSelf, Range, analyse};
use crate::object::cel::syntax_tree;
use crate::object::node::Node;

fn on_schema(schema: &Value, rule: &str) -> Analysis {
    let tree = syntax_tree(rule).expect("parses");
    let shapes = SchemaShapes::<Node<'_>>::new();
    analyse(
        &shapes,
        SchemaShapes::this(Node(schema), false),
        OldSelf::Plain,
        &tree,
        rule,
        true,
    )
}

fn on_value(schema: &Value, x: &Value, rule: &str) -> Analysis {
    let tree = syntax_tree(rule).expect("parses");
    let shapes = ActualShapes::new();
    analyse(
        &shapes,
        ActualShapes::this(Some(Node(schema)), x, false),
        OldSelf::Plain,
        &tree,
        rule,
        false,
    )
}

#[test]
fn a_bounded_all_costs_range_times_condition_and_step() {
    let s = json!({"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 5}});
    let a = on_schema(&s, "self.all(x, x.size() < 10)");
    // range 1 + init 0 + result 1 + 10 x (condition 2 + step (accu 1 && size 2 + < 1))
    assert_eq!(a.cost, Range { min: 2, max: 62 });
    assert_eq!(a.kind, Kind::Bool);
    assert!(a.errors.is_empty(), "{:?}", a.errors);
}

#[test]
fn unbounded_sizes_come_from_the_request_limit() {
    let s = json!({"type": "array", "items": {"type": "string"}});
    let a = on_schema(&s, "self.all(x, self.exists(y, x == y))");
    let items = (MAX_REQUEST_BYTES - 2) / 3;
    let eq = (MAX_REQUEST_BYTES - 2).div_ceil(10);
    // inner: 1 + 0 + 1 + n x (3 + (1 + (1 + 1 + eq)))
    let inner = 2 + items * (3 + 3 + eq);
    let outer = 2 + items * (2 + 1 + inner);
    assert_eq!(a.cost.max, outer);
}

#[test]
fn presence_tests_are_free_and_strings_are_priced_by_length() {
    let s = json!({"type": "object", "properties": {
        "a": {"type": "string", "maxLength": 50}, "b": {"type": "string"}}});
    assert_eq!(on_schema(&s, "has(self.a)").cost.max, 1);
    // self.a: 2, equality: min(50, 3) / 10 rounded up
    assert_eq!(on_schema(&s, "self.a == 'abc'").cost.max, 3);
    // contains: 50/10 x 1/10 (both rounded up)
    assert_eq!(on_schema(&s, "self.a.contains('x')").cost.max, 2 + 5);
    // matches: (50 + 1)/10 x 8/4
    assert_eq!(
        on_schema(&s, "self.a.matches('^[a-z]+$')").cost.max,
        2 + 6 * 2
    );
    // string(int) has no size: concatenating it is unbounded
    let m = json!({"type": "object", "properties": {"min": {"type": "integer"}}});
    let unbounded = on_schema(&m, "'min ' + string(self.min)").cost.max;
    assert!(unbounded > super::STATIC_RULE_LIMIT * 100, "{unbounded}");
}

#[test]
fn map_and_filter_results_are_as_long_as_their_range() {
    let s = json!({"type": "array", "maxItems": 4, "items": {"type": "object",
        "properties": {"name": {"type": "string", "maxLength": 8}}}});
    let a = on_schema(&s, "self.map(x, x.name).all(n, n.size() > 0)");
    // map: 1 + 10 (init []) + 1 + 4 x (0 + (accu 1 + [x.name] (10 + 2) + add 1))
    let map = 12 + 4 * 14;
    // all over 4 names: 0 + 1 + 4 x (2 + (1 + 3))
    assert_eq!(a.cost.max, map + 1 + 4 * 6);
}

#[test]
fn type_errors_are_found_where_the_types_are_certain() {
    let s = json!({"type": "object", "properties": {
        "replicas": {"type": "integer"}, "name": {"type": "string"},
        "ratio": {"type": "number"}, "any": {"x-kubernetes-int-or-string": true}}});
    let errs = |r: &str| {
        on_schema(&s, r)
            .errors
            .into_iter()
            .map(|e| (e.message, e.offset))
            .collect::<Vec<_>>()
    };
    assert_eq!(
        errs("self.replicas > 'a'"),
        vec![(
            "found no matching overload for '_>_' applied to '(int, string)'".to_string(),
            14
        )]
    );
    assert_eq!(
        errs("self.ratio * 100 > 1.0"),
        vec![(
            "found no matching overload for '_*_' applied to '(double, int)'".to_string(),
            11
        )]
    );
    assert_eq!(
        errs("self.name.startsWith(1)"),
        Vec::<(String, usize)>::new(),
        "argument types of member functions are not judged"
    );
    assert_eq!(
        errs("self.replicas.startsWith('a')"),
        vec![(
            "found no matching overload for 'startsWith' applied to 'int.(string)'".to_string(),
            24
        )]
    );
    assert_eq!(errs("self.any > 1 && self.any == 'x'"), vec![]);
    assert_eq!(
        errs("has(self.replica)"),
        vec![("undefined field 'replica'".to_string(), 8)]
    );
    assert_eq!(errs("self.replicas > 1.5 && self.replicas == 2"), vec![]);
    assert_eq!(on_schema(&s, "self.replicas + 1").kind, Kind::Int);
    assert_eq!(on_schema(&s, "self.any").kind, Kind::Dyn);
}

#[test]
fn the_runtime_charge_takes_sizes_from_the_object() {
    let s = json!({"type": "array", "items": {"type": "string"}});
    let rule = "self.all(x, self.exists(y, x == y))";
    let x = json!(["a", "bb", "ccc"]);
    let a = on_value(&s, &x, rule);
    // n = 3, longest 3: inner 2 + 3 x (3 + 3 + 1) = 23; outer 2 + 3 x (3 + 23)
    assert_eq!(a.cost.max, 2 + 3 * (3 + 23));
    assert!(on_schema(&s, rule).cost.max > a.cost.max);
}
