//! CEL for admission (webhook `matchConditions`, policy expressions): the Kubernetes CEL
//! libraries (`kube-cel`, the same the CRD rules use) over untyped JSON variables, as the
//! admission plugins declare `object`, `oldObject`, `request`, `params`, `namespaceObject` and
//! `variables` (dynamic values, not schema-typed).
use std::cell::RefCell;

use kube_cel::KubeCelExt;
use kube_cel::cel::parser::{Expression, Parser};
use kube_cel::cel::{Context, Value as Cel};
use serde_json::Value;

thread_local! {
    /// The libraries, registered once per thread (a `Context` is not `Sync`).
    static BASE: RefCell<Context<'static>> = RefCell::new({
        let mut ctx = Context::default();
        ctx.register_all();
        ctx
    });
}

/// cel-go's parser recursion limit, which kube-apiserver keeps.
const MAX_RECURSION: u16 = 250;

/// The interpreter's parser and evaluator recurse once per syntax-tree level with large frames
/// in an unoptimised build (a tokio worker's 2 MiB stack overflows within a few dozen levels),
/// so both run on a stack segment of this size, committed only as far as it is used (the
/// figure `kube-codegen-crd`'s CEL rules measured and use).
const CEL_STACK: usize = 256 << 20;

/// Left on the stack, below which a new segment is taken: half of one, so the calls made
/// within a segment (a policy's expressions run inside one) take no other.
const RED_ZONE: usize = CEL_STACK / 2;

/// Runs `f` on a [`CEL_STACK`] segment unless this thread has [`RED_ZONE`] left already.
pub fn on_a_deep_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(RED_ZONE, CEL_STACK, f)
}

/// A parsed expression.
pub fn compile(source: &str) -> Result<Expression, String> {
    on_a_deep_stack(|| {
        Parser::new()
            .enable_optional_syntax(true)
            .max_recursion_depth(MAX_RECURSION)
            .parse(source)
    })
    .map_err(|e| format!("compilation failed: {e}"))
}

/// JSON as a CEL value (`null` stays null; numbers that are integers are `int`).
pub fn to_cel(v: &Value) -> Cel {
    kube_cel::cel::to_value(v).unwrap_or(Cel::Null)
}

/// A CEL value back as JSON (what a `messageExpression` or a variable produced).
pub fn to_json(v: &Cel) -> Value {
    match v {
        Cel::Bool(b) => Value::Bool(*b),
        Cel::Int(i) => Value::from(*i),
        Cel::UInt(u) => Value::from(*u),
        Cel::Float(f) => serde_json::Number::from_f64(*f).map_or(Value::Null, Value::Number),
        Cel::String(s) => Value::String(s.to_string()),
        Cel::List(items) => Value::Array(items.iter().map(to_json).collect()),
        Cel::Map(m) => Value::Object(
            m.map
                .iter()
                .map(|(k, v)| (key_text(k), to_json(v)))
                .collect(),
        ),
        _ => Value::Null,
    }
}

fn key_text(k: &kube_cel::cel::objects::Key) -> String {
    use kube_cel::cel::objects::Key;
    match k {
        Key::String(s) => s.to_string(),
        Key::Int(i) => i.to_string(),
        Key::Uint(u) => u.to_string(),
        Key::Bool(b) => b.to_string(),
    }
}

/// Evaluates `expr` with `vars` bound (`variables` entries may be CEL values already).
pub fn eval(expr: &Expression, vars: &[(&str, Cel)]) -> Result<Cel, String> {
    on_a_deep_stack(|| eval_here(expr, vars))
}

fn eval_here(expr: &Expression, vars: &[(&str, Cel)]) -> Result<Cel, String> {
    BASE.with(|base| {
        let base = base.borrow();
        let mut ctx = base.new_inner_scope();
        for (name, value) in vars {
            ctx.add_variable_from_value(*name, value.clone());
        }
        Cel::resolve(expr, &ctx).map_err(|e| e.to_string())
    })
}

/// Evaluates a boolean expression (a match condition, a validation).
pub fn eval_bool(expr: &Expression, vars: &[(&str, Cel)]) -> Result<bool, String> {
    match eval(expr, vars)? {
        Cel::Bool(b) => Ok(b),
        other => Err(format!("expected boolean, got {}", type_name(&other))),
    }
}

/// Go's `utilerrors.NewAggregate(...).Error()`: one error as itself, more as `[a, b]`.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

fn type_name(v: &Cel) -> &'static str {
    match v {
        Cel::Null => "null_type",
        Cel::Bool(_) => "bool",
        Cel::Int(_) => "int",
        Cel::UInt(_) => "uint",
        Cel::Float(_) => "double",
        Cel::String(_) => "string",
        Cel::Bytes(_) => "bytes",
        Cel::List(_) => "list",
        Cel::Map(_) => "map",
        _ => "dyn",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn conditions_see_the_object() {
        let obj = json!({"metadata": {"labels": {"a": "b"}}, "spec": {"replicas": 3}});
        let e = compile("object.spec.replicas > 2 && object.metadata.labels['a'] == 'b'").unwrap();
        assert!(eval_bool(&e, &[("object", to_cel(&obj))]).unwrap());
        let e = compile("has(object.spec.missing)").unwrap();
        assert!(!eval_bool(&e, &[("object", to_cel(&obj))]).unwrap());
        let e = compile("object.spec.replicas").unwrap();
        assert!(eval_bool(&e, &[("object", to_cel(&obj))]).is_err());
        assert!(compile("object.(").is_err());
    }

    #[test]
    fn deep_expressions_neither_overflow_nor_hang() {
        let depth = 200;
        let source = format!("{}true{}", "(".repeat(depth), ")".repeat(depth));
        let e = compile(&source).unwrap();
        assert!(eval_bool(&e, &[]).unwrap());
        let chain = vec!["true"; 300].join(" && ");
        assert!(eval_bool(&compile(&chain).unwrap(), &[]).unwrap());
        let too_deep = format!("{}true{}", "(".repeat(400), ")".repeat(400));
        assert!(compile(&too_deep).is_err());
    }
}
