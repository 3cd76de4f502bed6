//! `x-kubernetes-validations` evaluated as kube-apiserver 1.35 evaluates them, on `kube-cel`
//! (the Kubernetes CEL libraries) over the `cel` interpreter. This module is the thin layer
//! around them: which rules run where, `self`/`oldSelf` typed from the schema ([`value`]), and
//! the causes in the server's words ([`messages`]).
//!
//! Rules are compiled once per schema into a tree that mirrors the schema, holding only the
//! branches that lead to a rule, so objects are walked only where rules are.
use std::cell::{Cell, RefCell};
use std::sync::Arc;

use kube_cel::KubeCelExt;
use kube_cel::cel::objects::OptionalValue;
use kube_cel::cel::parser::{Expression, Parser};
use kube_cel::cel::{Context, ExecutionError, Value as Cel};
use serde_json::Value;

use super::node::{Additional, Node};
use super::{Cause, MAX_DEPTH, correlate};
use crate::validate::cel_syntax;

pub(crate) mod check;
mod messages;
pub use messages::cel_go_runtime_error;
mod value;

/// Why a rule is not evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RuleIssueKind {
    /// The server would refuse the CRD: the rule or its `messageExpression` does not parse.
    Invalid,
    /// Valid CEL that this build's interpreter cannot parse (cel-go syntax it lacks, such as
    /// `.?field`, or nesting deeper than its parser's limit); the rule is skipped.
    Unsupported,
}

/// A rule that is not evaluated, and where it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleIssue {
    /// JSON pointer of the rule inside the schema (`/properties/spec/x-kubernetes-validations/0`).
    pub pointer: String,
    /// The rule's source.
    pub rule: String,
    /// Why it is skipped.
    pub kind: RuleIssueKind,
    /// The parser's message.
    pub message: String,
}

struct Rule {
    source: String,
    program: Expression,
    message: String,
    message_expression: Option<Expression>,
    reason: Option<String>,
    field_path: Option<String>,
    optional_old_self: bool,
    transition: bool,
    /// The estimated cost of one evaluation, from the schema's bounds.
    static_cost: u64,
}

#[derive(Default)]
struct RuleNode {
    rules: Vec<Rule>,
    props: Vec<(String, RuleNode)>,
    additional: Option<Box<RuleNode>>,
    items: Option<Box<RuleNode>>,
}

impl RuleNode {
    fn is_empty(&self) -> bool {
        self.rules.is_empty()
            && self.props.is_empty()
            && self.additional.is_none()
            && self.items.is_none()
    }
}

/// The compiled rules of one schema.
pub(super) struct Rules {
    root: Option<RuleNode>,
    count: usize,
    /// The deepest syntax tree of any rule or message expression: what evaluation needs of
    /// the stack.
    deepest: usize,
    issues: Vec<RuleIssue>,
    /// Whether evaluation must charge each rule's cost: the schema's bounds allow a rule over
    /// the per-call limit, or all rules together over the runtime budget. Otherwise no object
    /// that passed the OpenAPI checks can reach either, and counting would only cost time.
    charged: bool,
    /// Σ static cost x cardinality, while compiling.
    static_total: u64,
}

// Compiled programs are shared across threads (one `ObjectSchema` per CRD version).
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Rules>()
};

thread_local! {
    /// The Kubernetes CEL libraries, registered once per thread (a `Context` is not `Sync`).
    static BASE: RefCell<Context<'static>> = RefCell::new({
        let mut ctx = Context::default();
        ctx.register_all();
        ctx
    });
}

impl Rules {
    pub(super) fn compile(schema: &Value) -> Rules {
        let mut rules = Rules {
            root: None,
            count: 0,
            deepest: 0,
            issues: Vec::new(),
            charged: false,
            static_total: 0,
        };
        let root = rules.node(Node(schema), String::new(), 0, Some(1));
        rules.root = (!root.is_empty()).then_some(root);
        rules.charged |= rules.static_total > check::RUNTIME_BUDGET;
        rules
    }

    pub(super) fn count(&self) -> usize {
        self.count
    }

    pub(super) fn charged(&self) -> bool {
        self.charged
    }

    pub(super) fn issues(&self) -> &[RuleIssue] {
        &self.issues
    }

    /// `cardinality`: how often this node can occur in one object (`None`: unbounded).
    fn node(
        &mut self,
        s: Node<'_>,
        pointer: String,
        depth: usize,
        cardinality: Option<u64>,
    ) -> RuleNode {
        let mut out = RuleNode::default();
        if depth > MAX_DEPTH {
            return out;
        }
        if let Some(Value::Array(list)) = s.raw("x-kubernetes-validations") {
            let times = cardinality
                .unwrap_or_else(|| check::schema::max_cardinality(check::schema::min_size(&s, 0)));
            for (i, raw) in list.iter().enumerate() {
                let at = format!("{pointer}/x-kubernetes-validations/{i}");
                if let Some(rule) = self.rule(raw, at, s, depth == 0) {
                    self.charged |= rule.static_cost > check::PER_CALL_LIMIT;
                    self.static_total = self
                        .static_total
                        .saturating_add(rule.static_cost.saturating_mul(times));
                    out.rules.push(rule);
                }
            }
        }
        let child =
            cardinality.and_then(|c| Some(c.saturating_mul(check::schema::child_multiplier(&s)?)));
        if let Some(props) = s.properties() {
            for (k, p) in props {
                let at = format!("{pointer}/properties/{}", pointer_escape(k));
                let node = self.node(Node(p), at, depth + 1, child);
                if !node.is_empty() {
                    out.props.push((k.clone(), node));
                }
            }
        }
        if let Some(Additional::Schema(a)) = s.additional() {
            let node = self.node(
                a,
                format!("{pointer}/additionalProperties"),
                depth + 1,
                child,
            );
            out.additional = (!node.is_empty()).then(|| Box::new(node));
        }
        if let Some(items) = s.items() {
            let node = self.node(items, format!("{pointer}/items"), depth + 1, child);
            out.items = (!node.is_empty()).then(|| Box::new(node));
        }
        out
    }

    fn rule(&mut self, raw: &Value, pointer: String, s: Node<'_>, root: bool) -> Option<Rule> {
        let text = |k: &str| raw.get(k).and_then(Value::as_str).unwrap_or("");
        let source = text("rule").to_string();
        let issue = |kind, message: String, issues: &mut Vec<RuleIssue>| {
            issues.push(RuleIssue {
                pointer: pointer.clone(),
                rule: source.clone(),
                kind,
                message,
            });
        };
        let program = match compile(&source) {
            Ok(p) => p,
            Err((kind, message)) => {
                issue(kind, message, &mut self.issues);
                return None;
            }
        };
        let message_expression = match text("messageExpression").trim() {
            "" => None,
            expr => match compile(expr) {
                Ok(p) => Some(p),
                Err((kind, message)) => {
                    issue(kind, message, &mut self.issues);
                    // The rule still runs; its failure falls back to the static message.
                    None
                }
            },
        };
        let transition = program.references().has_variable("oldSelf");
        let static_cost = on_a_deep_stack(|| {
            check::analyse(
                &check::schema::SchemaShapes::<Node<'_>>::new(),
                check::schema::SchemaShapes::this(s, root),
                check::OldSelf::Plain,
                &program,
                &source,
                false,
            )
        })
        .cost
        .max;
        self.count += 1;
        let depth = message_expression
            .iter()
            .map(tree_height)
            .max()
            .unwrap_or(0);
        self.deepest = self.deepest.max(tree_height(&program)).max(depth);
        Some(Rule {
            program,
            message: text("message").trim().to_string(),
            message_expression,
            reason: raw
                .get("reason")
                .and_then(Value::as_str)
                .map(str::to_string),
            field_path: raw
                .get("fieldPath")
                .and_then(Value::as_str)
                .filter(|p| !p.trim().is_empty())
                .map(str::to_string),
            optional_old_self: raw.get("optionalOldSelf").and_then(Value::as_bool) == Some(true),
            transition,
            static_cost,
            source,
        })
    }

    /// Runs the rules on `obj` (and `old` on update), adding a cause per failed rule.
    pub(super) fn evaluate(
        &self,
        schema: &Value,
        obj: &Value,
        old: Option<&Value>,
        out: &mut Vec<Cause>,
    ) {
        let Some(root) = &self.root else { return };
        // Only a schema whose rules are deep pays for a stack segment (growing one for every
        // object cost a third of V1's objects per second).
        let needed = EVAL_MARGIN + self.deepest * EVAL_STACK_PER_LEVEL;
        stacker::maybe_grow(needed, CEL_STACK.max(2 * needed), || {
            BASE.with(|base| {
                let base = base.borrow();
                let walk = Walk {
                    base: &base,
                    budget: self.charged.then(|| Cell::new(Some(check::RUNTIME_BUDGET))),
                };
                walk.node(root, Some(Node(schema)), obj, old, None, 0, out);
            })
        });
    }
}

/// cel-go's parser recursion limit, which kube-apiserver keeps.
const MAX_RECURSION: u16 = cel_syntax::MAX_RECURSION_DEPTH as u16;

/// The interpreter's parser and evaluator recurse once per syntax-tree level, with frames of up
/// to ~200 KiB in an unoptimised build (16 nested parentheses overflowed a 2 MiB thread there).
/// So both run on a stack segment of this size, grown on demand: only the pages a rule touches
/// are committed. Measured on a 64 MiB segment: a chain `a.a.a...` or sum `1 + 1 + ...` of
/// 1,000 levels parsed and evaluated unoptimised, 10,000 optimised, 100,000 overflowed.
const CEL_STACK: usize = 256 << 20;

/// Rules longer than this many tokens (so possibly that many levels deep) are not handed to the
/// interpreter: at 4x [`CEL_STACK`]'s measured 1,000 levels, they would risk the stack. The
/// longest rule in the public corpus has 594 tokens.
pub(crate) const MAX_TOKENS: usize = 2_000;

/// Stack one level of a syntax tree takes when evaluated, with a margin: measured, a 64-level
/// sum overflowed a 2 MiB thread unoptimised (~32 KiB a level) and 1,000 levels did not
/// optimised (under 2 KiB a level).
const EVAL_STACK_PER_LEVEL: usize = if cfg!(debug_assertions) {
    64 << 10
} else {
    8 << 10
};

/// Stack kept for the walk around the rules, whatever their depth.
const EVAL_MARGIN: usize = 256 << 10;

/// Runs `f` on a fresh [`CEL_STACK`] segment unless this thread already has that much left
/// (parsing: the parser's frames are large per nesting level, and it runs once per rule).
pub(crate) fn on_a_deep_stack<R>(f: impl FnOnce() -> R) -> R {
    stacker::maybe_grow(CEL_STACK, CEL_STACK, f)
}

/// The height of a syntax tree, walked without recursion (the tree may be deep).
fn tree_height<'a>(e: &'a Expression) -> usize {
    use kube_cel::cel::common::ast::{EntryExpr, Expr};
    let mut deepest = 0;
    let mut todo: Vec<(&'a Expression, usize)> = vec![(e, 1)];
    while let Some((e, h)) = todo.pop() {
        deepest = deepest.max(h);
        let mut push = |c: &'a Expression| todo.push((c, h + 1));
        match &e.expr {
            Expr::Call(c) => {
                if let Some(t) = &c.target {
                    push(t);
                }
                c.args.iter().for_each(&mut push);
            }
            Expr::Comprehension(c) => {
                for part in [
                    &c.iter_range,
                    &c.accu_init,
                    &c.loop_cond,
                    &c.loop_step,
                    &c.result,
                ] {
                    push(part);
                }
            }
            Expr::List(l) => l.elements.iter().for_each(&mut push),
            Expr::Map(m) => {
                for entry in &m.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(m) => {
                            push(&m.key);
                            push(&m.value);
                        }
                        EntryExpr::StructField(f) => push(&f.value),
                    }
                }
            }
            Expr::Select(s) => push(&s.operand),
            Expr::Struct(s) => {
                for f in &s.entries {
                    if let EntryExpr::StructField(f) = &f.expr {
                        push(&f.value);
                    }
                }
            }
            _ => {}
        }
    }
    deepest
}

/// A rule's syntax tree from the interpreter's parser, when it gives one (see [`compile`]).
pub(crate) fn syntax_tree(source: &str) -> Option<Expression> {
    compile(source).ok()
}

pub(crate) use value::{escape, keyword_field};

/// Parses a rule: first our cel-go-grammar checker (the server's verdict and messages), then
/// the interpreter's parser, with cel-go's optional syntax and recursion limit.
fn compile(source: &str) -> Result<Expression, (RuleIssueKind, String)> {
    match cel_syntax::parse(source) {
        Err(e) => return Err((RuleIssueKind::Invalid, e)),
        Ok(p) if p.tokens > MAX_TOKENS => {
            return Err((
                RuleIssueKind::Unsupported,
                format!(
                    "{} tokens: longer than the {MAX_TOKENS} this interpreter evaluates",
                    p.tokens
                ),
            ));
        }
        Ok(_) => {}
    }
    on_a_deep_stack(|| {
        Parser::new()
            .enable_optional_syntax(true)
            .max_recursion_depth(MAX_RECURSION)
            .parse(source)
    })
    .map_err(|e| (RuleIssueKind::Unsupported, e.to_string()))
}

fn pointer_escape(k: &str) -> String {
    k.replace('~', "~0").replace('/', "~1")
}

struct Walk<'c> {
    base: &'c Context<'static>,
    /// The runtime budget left (`None` once spent: no further rule runs); absent when the
    /// schema cannot reach it.
    budget: Option<Cell<Option<u64>>>,
}

impl Walk<'_> {
    /// `path` is the `field.Path` of `x` (`None` at the root, which the server prints `<nil>`).
    #[allow(clippy::too_many_arguments)]
    fn node<'a>(
        &self,
        rn: &RuleNode,
        s: Option<Node<'_>>,
        x: &'a Value,
        old: Option<&'a Value>,
        path: Option<&str>,
        depth: usize,
        out: &mut Vec<Cause>,
    ) {
        if depth > MAX_DEPTH || self.spent() {
            return;
        }
        // Ratcheting: under an unchanged value only transition rules run (they never ratchet).
        let unchanged = old == Some(x);
        if !rn.rules.is_empty() {
            self.rules(rn, s, x, old, path, unchanged, out);
        }
        let old_of = |v: &'a Value, correlated: Option<&'a Value>| -> Option<&'a Value> {
            if unchanged { Some(v) } else { correlated }
        };
        let join = |k: &str| match path {
            None => k.to_string(),
            Some(p) => format!("{p}.{k}"),
        };
        match x {
            Value::Object(m) => {
                for (k, child) in &rn.props {
                    if let Some(v) = m.get(k) {
                        let cs = s.and_then(|n| n.property(k));
                        let co = old_of(v, correlate::field(old, k));
                        self.node(child, cs, v, co, Some(&join(k)), depth + 1, out);
                    }
                }
                if let Some(add) = &rn.additional {
                    let add_schema = s.and_then(|n| match n.additional() {
                        Some(Additional::Schema(a)) => Some(a),
                        _ => None,
                    });
                    for (k, v) in m {
                        if s.is_some_and(|n| n.property(k).is_some()) {
                            continue;
                        }
                        let p = format!("{}[{k}]", path.unwrap_or(""));
                        let co = old_of(v, correlate::field(old, k));
                        self.node(add, add_schema, v, co, Some(&p), depth + 1, out);
                    }
                }
            }
            Value::Array(items) => {
                if let (Some(item_rules), Some(list)) = (&rn.items, s) {
                    for (i, v) in items.iter().enumerate() {
                        let p = format!("{}[{i}]", path.unwrap_or(""));
                        let co = old_of(v, correlate::item(list, old, v));
                        self.node(item_rules, list.items(), v, co, Some(&p), depth + 1, out);
                    }
                }
            }
            _ => {}
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn rules(
        &self,
        rn: &RuleNode,
        s: Option<Node<'_>>,
        x: &Value,
        old: Option<&Value>,
        path: Option<&str>,
        unchanged: bool,
        out: &mut Vec<Cause>,
    ) {
        if unchanged && !rn.rules.iter().any(|r| r.transition) {
            return;
        }
        let root = path.is_none();
        let this = value::to_cel(s, x, root);
        // `oldSelf` is built only where a transition rule reads it.
        let old_cel = old
            .filter(|_| rn.rules.iter().any(|r| r.transition))
            .map(|o| {
                if value::same_for_cel(s, x, o) {
                    this.clone()
                } else {
                    value::to_cel(s, o, root)
                }
            });
        let mut ctx = self.base.new_inner_scope();
        ctx.add_variable_from_value("self", this);
        for rule in &rn.rules {
            if unchanged && !rule.transition {
                continue;
            }
            if !self.charge(rule, s, x, path, root, out) {
                return;
            }
            let mut scope = ctx.new_inner_scope();
            if rule.transition {
                let bound = match (&old_cel, rule.optional_old_self) {
                    (Some(o), false) => o.clone(),
                    (o, true) => Cel::Opaque(Arc::new(match o {
                        Some(o) => OptionalValue::of(o.clone()),
                        None => OptionalValue::none(),
                    })),
                    // A transition rule without an old value does not run (create).
                    (None, false) => continue,
                };
                scope.add_variable_from_value("oldSelf", bound);
            }
            match Cel::resolve(&rule.program, &scope) {
                Ok(Cel::Bool(true)) => {}
                Ok(Cel::Bool(false)) => {
                    let detail = message(rule, &scope);
                    out.push(messages::failed(
                        path,
                        rule.field_path.as_deref(),
                        x,
                        &detail,
                        rule.reason.as_deref(),
                    ));
                }
                Ok(_) => out.push(messages::not_bool(path, s, rule)),
                // A function this build lacks: the rule cannot be judged here, so it is skipped.
                Err(ExecutionError::UndeclaredReference(name))
                    if !matches!(name.as_str(), "self" | "oldSelf") => {}
                // cel-rust reports a missing field read as a function's argument as a missing
                // argument; cel-go names the key, so the key is looked up in `self`.
                Err(ExecutionError::MissingArgumentOrTarget)
                    if let Some(key) = missing_self_key(&rule.source, x) =>
                {
                    let e = ExecutionError::NoSuchKey(Arc::new(key));
                    out.push(messages::runtime_error(path, s, rule, &e));
                }
                Err(e) => out.push(messages::runtime_error(path, s, rule, &e)),
            }
        }
    }
}

impl Walk<'_> {
    fn spent(&self) -> bool {
        self.budget.as_ref().is_some_and(|b| b.get().is_none())
    }

    /// Charges `rule`'s cost on `x` to the budget, as the server does after each evaluation.
    /// The cost is cel-go's estimate with the sizes of the values present, a bound on what
    /// the evaluation can use. `false`: the rule must not run, and no rule after it.
    fn charge(
        &self,
        rule: &Rule,
        s: Option<Node<'_>>,
        x: &Value,
        path: Option<&str>,
        root: bool,
        out: &mut Vec<Cause>,
    ) -> bool {
        let Some(budget) = &self.budget else {
            return true;
        };
        let Some(left) = budget.get() else {
            return false;
        };
        let cost = check::analyse(
            &check::actual::ActualShapes::new(),
            check::actual::ActualShapes::this(s, x, root),
            check::OldSelf::Plain,
            &rule.program,
            &rule.source,
            false,
        )
        .cost
        .max;
        if cost > left {
            out.push(messages::budget_exhausted(path, s));
            budget.set(None);
            return false;
        }
        if cost > check::PER_CALL_LIMIT {
            out.push(messages::call_cost_exceeded(path, s, rule));
            budget.set(None);
            return false;
        }
        budget.set(Some(left - cost));
        true
    }
}

/// The failure message: `messageExpression` when it gives a usable string, else `message`,
/// else `failed rule: <rule>`.
fn message(rule: &Rule, scope: &Context<'_>) -> String {
    if let Some(expr) = &rule.message_expression
        && let Ok(Cel::String(s)) = Cel::resolve(expr, scope)
    {
        let s = s.trim();
        if !s.is_empty() && !s.contains(['\n', '\r']) {
            return s.to_string();
        }
    }
    rule_message_or_default(rule)
}

fn rule_message_or_default(rule: &Rule) -> String {
    if rule.message.is_empty() {
        format!("failed rule: {}", rule.source.trim())
    } else {
        rule.message.clone()
    }
}

/// `ruleErrorString`: the message when there is one, else the rule.
fn rule_error_string(rule: &Rule) -> &str {
    if rule.message.is_empty() {
        rule.source.trim()
    } else {
        &rule.message
    }
}

/// The first key a `self.a.b` chain of the rule's source reads that `x` lacks (its parent
/// present), as cel-go's `no such key: <key>` names it.
fn missing_self_key(source: &str, x: &Value) -> Option<String> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let mut rest = source;
    while let Some(at) = rest.find("self.") {
        let before = rest[..at].chars().next_back();
        rest = &rest[at + 5..];
        if before.is_some_and(|c| ident(c) || c == '.') {
            continue;
        }
        let mut v = x;
        for key in rest.split('.') {
            let key: String = key.chars().take_while(|c| ident(*c)).collect();
            if key.is_empty() {
                break;
            }
            match v.as_object() {
                Some(m) => match m.get(&key) {
                    Some(next) => v = next,
                    None => return Some(key),
                },
                None => break,
            }
            if !rest[key.len()..].starts_with('.') {
                break;
            }
            rest = &rest[key.len() + 1..];
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tree_height_counts_levels_not_tokens() {
        let h = |src: &str| tree_height(&syntax_tree(src).expect("parses"));
        assert_eq!(h("1"), 1);
        assert_eq!(h("((((1))))"), 1, "parentheses make no level");
        assert_eq!(h("self.a.b"), 3);
        assert_eq!(h(&format!("1{}", " + 1".repeat(50))), 51);
        assert!(h("self.all(x, x.a > 1)") >= 4);
    }
}
