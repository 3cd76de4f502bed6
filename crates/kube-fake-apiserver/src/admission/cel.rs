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
        // The JSON Patch library of mutating policies (`jsonpatch.escapeKey`, RFC 6901's
        // escaping of a key for a path); `compile_mutation` renames the call to this.
        ctx.add_function(ESCAPE_KEY, |key: std::sync::Arc<String>| {
            key.replace('~', "~0").replace('/', "~1")
        });
        super::authz::register(&mut ctx);
        ctx
    });
}

/// The name `jsonpatch.escapeKey(k)` is evaluated under.
const ESCAPE_KEY: &str = "jsonpatch.escapeKey";

/// The key that carries an object construction's type name (`Object.spec`, `JSONPatch`) in
/// the map it evaluates to: no CEL field name can spell it.
pub const TYPE_KEY: &str = "@type";

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

thread_local! {
    /// Expressions parsed on this thread, by source: policies and match conditions are read
    /// from the store on every write, and parsing dominates their cost (cel-go keeps them
    /// compiled with the configuration). Emptied when full.
    static PARSED: RefCell<std::collections::HashMap<String, Result<Expression, String>>> =
        RefCell::new(std::collections::HashMap::new());
}

/// How many parsed expressions a thread keeps.
const PARSED_MAX: usize = 512;

fn parse(source: &str) -> Result<Expression, String> {
    if let Some(hit) = PARSED.with(|p| p.borrow().get(source).cloned()) {
        return hit;
    }
    let parsed = on_a_deep_stack(|| {
        Parser::new()
            .enable_optional_syntax(true)
            .max_recursion_depth(MAX_RECURSION)
            .parse(source)
    })
    .map_err(|e| format!("compilation failed: {e}"));
    PARSED.with(|p| {
        let mut p = p.borrow_mut();
        if p.len() >= PARSED_MAX {
            p.clear();
        }
        p.insert(source.to_string(), parsed.clone());
    });
    parsed
}

/// A parsed expression. An object construction (`Object{...}`), which only a mutating
/// policy's mutations declare types for, is refused here: the interpreter cannot evaluate one
/// (it would panic), and cel-go's type check refuses the undeclared type name.
pub fn compile(source: &str) -> Result<Expression, String> {
    let e = parse(source)?;
    match on_a_deep_stack(|| first_struct(&e)) {
        Some(name) => Err(format!(
            "compilation failed: undeclared reference to '{name}' (in container '')"
        )),
        None => Ok(e),
    }
}

/// A mutation's expression (`applyConfiguration` or `jsonPatch`): parsed, with every object
/// construction `T{f: v}` rewritten as the map literal `{"@type": "T", "f": v}` (optional
/// fields stay optional), which the interpreter evaluates, and `jsonpatch.escapeKey(k)` as a
/// call of the function registered for it.
pub fn compile_mutation(source: &str) -> Result<Expression, String> {
    let mut e = parse(source)?;
    on_a_deep_stack(|| rewrite(&mut e));
    Ok(e)
}

/// Every node of `e`, depth first.
fn for_each_node(e: &Expression, f: &mut dyn FnMut(&Expression)) {
    use kube_cel::cel::common::ast::{EntryExpr, Expr};
    f(e);
    match &e.expr {
        Expr::Call(c) => {
            if let Some(t) = c.target.as_deref() {
                for_each_node(t, f);
            }
            c.args.iter().for_each(|a| for_each_node(a, f));
        }
        Expr::Comprehension(c) => {
            for x in [
                &c.iter_range,
                &c.accu_init,
                &c.loop_cond,
                &c.loop_step,
                &c.result,
            ] {
                for_each_node(x, f);
            }
        }
        Expr::List(l) => l.elements.iter().for_each(|x| for_each_node(x, f)),
        Expr::Map(m) => m.entries.iter().for_each(|en| match &en.expr {
            EntryExpr::StructField(sf) => for_each_node(&sf.value, f),
            EntryExpr::MapEntry(me) => {
                for_each_node(&me.key, f);
                for_each_node(&me.value, f);
            }
        }),
        Expr::Struct(st) => st.entries.iter().for_each(|en| match &en.expr {
            EntryExpr::StructField(sf) => for_each_node(&sf.value, f),
            EntryExpr::MapEntry(me) => {
                for_each_node(&me.key, f);
                for_each_node(&me.value, f);
            }
        }),
        Expr::Select(sel) => for_each_node(&sel.operand, f),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// The names `e` reads as `variables.<name>` or `variables['<name>']` (in first-use order).
pub fn variables_used(e: &Expression) -> Vec<String> {
    use kube_cel::cel::common::ast::{Expr, LiteralValue};
    let is_variables = |x: &Expression| matches!(&x.expr, Expr::Ident(n) if n == "variables");
    let mut out: Vec<String> = Vec::new();
    on_a_deep_stack(|| {
        for_each_node(e, &mut |n| {
            let name = match &n.expr {
                Expr::Select(sel) if is_variables(&sel.operand) => Some(sel.field.clone()),
                Expr::Call(c)
                    if c.func_name == "_[_]" && c.args.len() == 2 && is_variables(&c.args[0]) =>
                {
                    match &c.args[1].expr {
                        Expr::Literal(LiteralValue::String(k)) => Some(k.to_string()),
                        _ => None,
                    }
                }
                _ => None,
            };
            if let Some(name) = name.filter(|x| !out.contains(x)) {
                out.push(name);
            }
        })
    });
    out
}

/// The type name of the first object construction in `e`.
fn first_struct(e: &Expression) -> Option<String> {
    use kube_cel::cel::common::ast::{EntryExpr, Expr};
    let entry_value = |en: &kube_cel::cel::common::ast::IdedEntryExpr| match &en.expr {
        EntryExpr::StructField(f) => first_struct(&f.value),
        EntryExpr::MapEntry(m) => first_struct(&m.key).or_else(|| first_struct(&m.value)),
    };
    match &e.expr {
        Expr::Struct(s) => Some(s.type_name.clone()),
        Expr::Call(c) => c
            .target
            .as_deref()
            .and_then(first_struct)
            .or_else(|| c.args.iter().find_map(first_struct)),
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .find_map(first_struct),
        Expr::List(l) => l.elements.iter().find_map(first_struct),
        Expr::Map(m) => m.entries.iter().find_map(entry_value),
        Expr::Select(s) => first_struct(&s.operand),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => None,
    }
}

fn rewrite(e: &mut Expression) {
    use kube_cel::cel::common::ast::{
        EntryExpr, Expr, IdedEntryExpr, IdedExpr, LiteralValue, MapEntryExpr, MapExpr,
    };
    let string = |id: u64, s: &str| IdedExpr {
        id,
        expr: Expr::Literal(LiteralValue::String(s.into())),
    };
    match &mut e.expr {
        Expr::Struct(st) => {
            let id = e.id;
            let mut entries = vec![IdedEntryExpr {
                id,
                expr: EntryExpr::MapEntry(MapEntryExpr {
                    key: string(id, TYPE_KEY),
                    value: string(id, &st.type_name),
                    optional: false,
                }),
            }];
            for en in std::mem::take(&mut st.entries) {
                let entry = match en.expr {
                    EntryExpr::StructField(mut f) => {
                        rewrite(&mut f.value);
                        MapEntryExpr {
                            key: string(en.id, &f.field),
                            value: f.value,
                            optional: f.optional,
                        }
                    }
                    EntryExpr::MapEntry(mut m) => {
                        rewrite(&mut m.key);
                        rewrite(&mut m.value);
                        m
                    }
                };
                entries.push(IdedEntryExpr {
                    id: en.id,
                    expr: EntryExpr::MapEntry(entry),
                });
            }
            e.expr = Expr::Map(MapExpr { entries });
        }
        Expr::Call(c) => {
            let is_escape = c.func_name == "escapeKey"
                && matches!(c.target.as_deref(), Some(IdedExpr { expr: Expr::Ident(t), .. }) if t == "jsonpatch");
            if is_escape {
                c.func_name = ESCAPE_KEY.to_string();
                c.target = None;
            }
            if let Some(t) = c.target.as_deref_mut() {
                rewrite(t);
            }
            c.args.iter_mut().for_each(rewrite);
        }
        Expr::Comprehension(c) => {
            for x in [
                &mut c.iter_range,
                &mut c.accu_init,
                &mut c.loop_cond,
                &mut c.loop_step,
                &mut c.result,
            ] {
                rewrite(x);
            }
        }
        Expr::List(l) => l.elements.iter_mut().for_each(rewrite),
        Expr::Map(m) => {
            for en in &mut m.entries {
                match &mut en.expr {
                    EntryExpr::StructField(f) => rewrite(&mut f.value),
                    EntryExpr::MapEntry(me) => {
                        rewrite(&mut me.key);
                        rewrite(&mut me.value);
                    }
                }
            }
        }
        Expr::Select(s) => rewrite(&mut s.operand),
        Expr::Ident(_) | Expr::Literal(_) | Expr::Unspecified => {}
    }
}

/// JSON as a CEL value (`null` stays null; numbers that are integers are `int`, as Kubernetes'
/// `int64` fields are: the interpreter's serde conversion would make a positive one `uint`,
/// which `+` with an `int` literal refuses).
pub fn to_cel(v: &Value) -> Cel {
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => Cel::Int(i),
            None => n
                .as_u64()
                .map(Cel::UInt)
                .unwrap_or_else(|| Cel::Float(n.as_f64().unwrap_or(0.0))),
        },
        Value::String(s) => Cel::String(std::sync::Arc::new(s.clone())),
        Value::Array(items) => items.iter().map(to_cel).collect::<Vec<Cel>>().into(),
        Value::Object(m) => m
            .iter()
            .map(|(k, v)| (k.clone(), to_cel(v)))
            .collect::<std::collections::HashMap<String, Cel>>()
            .into(),
    }
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
        if let Some(a) = super::authz::variable() {
            ctx.add_variable_from_value("authorizer", a);
        }
        Cel::resolve(expr, &ctx).map_err(|e| kube_codegen_crd::object::cel_go_runtime_error(&e))
    })
}

/// A condition's result: a `bool`, else the error.
pub fn bool_of(v: Cel) -> Result<bool, String> {
    match v {
        Cel::Bool(b) => Ok(b),
        other => Err(format!("expected boolean, got {}", type_name(&other))),
    }
}

/// A policy's `variables` as cel-go's composition gives them to an expression: a lazy map
/// per evaluated expression, so each variable the expression names (and each one those name)
/// is computed with that expression's activation, once for it; one that fails to compile or
/// evaluate fails the expression with its own error (`composited variable "<n>" fails to
/// evaluate: <err>`) if the expression then fails. Computed before the expression rather
/// than on first access.
pub struct Composition<'a> {
    defs: Vec<(&'a str, &'a str)>,
    /// Mutating policies' expressions may construct objects.
    mutation: bool,
}

type Done = Vec<(String, Result<Value, String>)>;

impl<'a> Composition<'a> {
    /// The `variables` of a policy `spec`.
    pub fn of(spec: &'a Value, mutation: bool) -> Composition<'a> {
        let defs = spec
            .get("variables")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|v| {
                let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("");
                (s("name"), s("expression"))
            })
            .collect();
        Composition { defs, mutation }
    }

    /// Evaluates `expr` with `vars` and `variables`.
    pub fn eval(&self, expr: &Expression, vars: &[(&'static str, Cel)]) -> Result<Cel, String> {
        let mut done: Done = Vec::new();
        let used = variables_used(expr);
        for name in &used {
            self.resolve(name, vars, &mut done, 0);
        }
        eval(expr, &with_variables(vars, &done)).map_err(|e| {
            used.iter()
                .find_map(|n| {
                    done.iter()
                        .find(|(d, _)| d == n)
                        .and_then(|(_, r)| r.clone().err())
                })
                .unwrap_or(e)
        })
    }

    /// A policy's `matchConditions`, with its variables: see [`match_conditions`].
    pub fn match_conditions(
        &self,
        spec: &Value,
        vars: &[(&'static str, Cel)],
    ) -> Result<bool, String> {
        let exprs = spec
            .get("matchConditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| c.get("expression").and_then(Value::as_str).unwrap_or(""));
        match_conditions(exprs, |e| self.eval(e, vars))
    }

    /// Computes the variable `name` (and first those its expression uses) into `done`.
    fn resolve(&self, name: &str, vars: &[(&'static str, Cel)], done: &mut Done, depth: usize) {
        // A variable can only use those declared before it, so a chain is at most as long as
        // the list; anything longer is a cycle through undeclared names.
        if done.iter().any(|(d, _)| d == name) || depth > self.defs.len() {
            return;
        }
        let Some(&(_, source)) = self.defs.iter().find(|(n, _)| *n == name) else {
            return;
        };
        let compiled = if self.mutation {
            compile_mutation(source)
        } else {
            compile(source)
        };
        let result = match compiled {
            Err(e) => Err(format!(
                "composited variable {name:?} fails to compile: {e}"
            )),
            Ok(e) => {
                for inner in variables_used(&e) {
                    self.resolve(&inner, vars, done, depth + 1);
                }
                eval(&e, &with_variables(vars, done))
                    .map(|v| to_json(&v))
                    .map_err(|err| format!("composited variable {name:?} fails to evaluate: {err}"))
            }
        };
        done.push((name.to_string(), result));
    }
}

/// `vars` and `variables`: the computed variables that did not fail.
fn with_variables(vars: &[(&'static str, Cel)], done: &Done) -> Vec<(&'static str, Cel)> {
    let ok: serde_json::Map<String, Value> = done
        .iter()
        .filter_map(|(n, r)| r.as_ref().ok().map(|v| (n.clone(), v.clone())))
        .collect();
    let mut all = vars.to_vec();
    all.push(("variables", to_cel(&Value::Object(ok))));
    all
}

/// Match conditions (`matchconditions.Matcher`, for webhooks and policies alike): `Ok(false)`
/// as soon as one is false; otherwise the errors of those that failed, aggregated, if any (the
/// caller applies its failure policy).
pub fn match_conditions<'e>(
    exprs: impl IntoIterator<Item = &'e str>,
    eval: impl Fn(&Expression) -> Result<Cel, String>,
) -> Result<bool, String> {
    let mut errors = Vec::new();
    for expr in exprs {
        match compile(expr).and_then(|e| eval(&e)).and_then(bool_of) {
            Ok(true) => {}
            Ok(false) => return Ok(false),
            Err(e) => errors.push(format!("expression '{expr}' resulted in error: {e}")),
        }
    }
    if errors.is_empty() {
        Ok(true)
    } else {
        Err(aggregate(&errors))
    }
}

/// Go's `utilerrors.NewAggregate(...).Error()`: one error as itself, more as `[a, b]`.
pub fn aggregate(errors: &[String]) -> String {
    match errors {
        [one] => one.clone(),
        many => format!("[{}]", many.join(", ")),
    }
}

/// The name cel-go gives a value's type.
pub fn type_name(v: &Cel) -> &'static str {
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
        Cel::Duration(_) => "google.protobuf.Duration",
        Cel::Timestamp(_) => "google.protobuf.Timestamp",
        _ => "dyn",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn eval_bool(expr: &Expression, vars: &[(&str, Cel)]) -> Result<bool, String> {
        bool_of(eval(expr, vars)?)
    }

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
    fn object_constructions_evaluate_only_in_mutations() {
        let obj = json!({"spec": {"replicas": 1}});
        let source = "Object{spec: Object.spec{replicas: object.spec.replicas + 2, ?paused: optional.none()}}";
        // Outside a mutation: a clear error, not the interpreter's panic.
        assert_eq!(
            compile(source).unwrap_err(),
            "compilation failed: undeclared reference to 'Object' (in container '')"
        );
        assert!(compile("[1].map(x, JSONPatch{op: 'add'})").is_err());
        let e = compile_mutation(source).unwrap();
        let v = to_json(&eval(&e, &[("object", to_cel(&obj))]).unwrap());
        assert_eq!(
            v,
            json!({"@type": "Object", "spec": {"@type": "Object.spec", "replicas": 3}})
        );
        let e = compile_mutation(
            "[JSONPatch{op: 'add', path: '/metadata/labels/' + jsonpatch.escapeKey('a.io/b~c'), value: 'x'}]",
        )
        .unwrap();
        assert_eq!(
            to_json(&eval(&e, &[]).unwrap()),
            json!([{"@type": "JSONPatch", "op": "add", "path": "/metadata/labels/a.io~1b~0c", "value": "x"}])
        );
    }

    #[test]
    fn variables_used_are_found_in_selects_and_indexes() {
        let e = compile_mutation(
            "variables.a + [1].map(x, variables['b']).size() + object.variables.c + variables.a",
        )
        .unwrap();
        assert_eq!(variables_used(&e), ["a", "b"]);
    }

    #[test]
    fn composed_variables_are_computed_for_the_expression_using_them() {
        let spec = json!({"variables": [
            {"name": "a", "expression": "object.n"},
            {"name": "b", "expression": "variables.a * 10"},
            {"name": "bad", "expression": "object.missing"},
            {"name": "broken", "expression": "object.("},
        ]});
        let c = Composition::of(&spec, false);
        let vars = |n: i64| vec![("object", to_cel(&json!({"n": n})))];
        let e = compile("variables.b + 1").unwrap();
        assert_eq!(to_json(&c.eval(&e, &vars(2)).unwrap()), json!(21));
        assert_eq!(to_json(&c.eval(&e, &vars(3)).unwrap()), json!(31));
        // A failing variable fails only what uses it, with its own error.
        assert_eq!(
            to_json(&c.eval(&compile("variables.a").unwrap(), &vars(1)).unwrap()),
            json!(1)
        );
        let err = c
            .eval(&compile("variables.bad == 1").unwrap(), &vars(1))
            .unwrap_err();
        assert!(
            err.starts_with("composited variable \"bad\" fails to evaluate: "),
            "{err}"
        );
        let err = c
            .eval(&compile("variables.broken").unwrap(), &vars(1))
            .unwrap_err();
        assert!(
            err.starts_with("composited variable \"broken\" fails to compile: "),
            "{err}"
        );
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
