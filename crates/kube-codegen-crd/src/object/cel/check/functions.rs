//! Calls: their cost (cel-go's built-in estimates and the Kubernetes libraries'), the type and
//! size of their result, and the overload errors cel-go's checker reports for operand types
//! that have no overload.
use kube_cel::cel::common::ast::{CallExpr, Expr, LiteralValue, operators as op};

use super::walk::{Abs, Walker, join};
use super::{Kind, Range, Shapes};

/// cel-go's cost of visiting one character of a string.
const STRING_TRAVERSAL: f64 = 0.1;
/// cel-go's guess at the cost of one character of a regular expression.
const REGEX_LENGTH: f64 = 0.25;

pub(super) fn call<S: Shapes>(
    w: &mut Walker<'_, S>,
    call: &CallExpr,
    depth: usize,
) -> (Abs<S::H>, Range) {
    let name = call.func_name.as_str();
    // Short-circuiting operators: their cost is their operands', without a call of their own.
    if name == op::LOGICAL_AND || name == op::LOGICAL_OR {
        let (l, lc) = w.visit(&call.args[0], depth + 1);
        let (r, rc) = w.visit(&call.args[1], depth + 1);
        check_bool_operands(w, name, &[&l, &r]);
        let cost = Range {
            min: lc.min,
            max: lc.max.saturating_add(rc.max),
        };
        return (Abs::of(Kind::Bool), cost);
    }
    if name == op::CONDITIONAL && call.args.len() == 3 {
        let (c, cc) = w.visit(&call.args[0], depth + 1);
        let (t, tc) = w.visit(&call.args[1], depth + 1);
        let (f, fc) = w.visit(&call.args[2], depth + 1);
        if known(c.kind) && c.kind != Kind::Bool {
            let at = w.offset_of("?");
            w.error(no_overload(name, None, &[&c, &t, &f]), at);
        }
        let size = t.size_estimate().union(f.size_estimate());
        let mut result = join(t, f);
        result.size = Some(size);
        return (result, cc.add(tc.union(fc)));
    }

    let mut cost = Range::ZERO;
    let target = call.target.as_ref().map(|t| {
        let (a, c) = w.visit(t, depth + 1);
        cost = cost.add(c);
        a
    });
    let mut args = Vec::with_capacity(call.args.len());
    for a in &call.args {
        let (abs, c) = w.visit(a, depth + 1);
        cost = cost.add(c);
        args.push(abs);
    }
    if w.strict() {
        check_overload(w, name, target.as_ref(), &args);
    }
    let (fn_cost, result) = estimate(w, call, name, target.as_ref(), &args);
    (result, cost.add(fn_cost))
}

/// The cost of the call itself (its arguments are counted by the caller) and its result.
fn estimate<S: Shapes>(
    w: &Walker<'_, S>,
    call: &CallExpr,
    name: &str,
    target: Option<&Abs<S::H>>,
    args: &[Abs<S::H>],
) -> (Range, Abs<S::H>) {
    let arg = |i: usize| args.get(i);
    // The string a string function works on: the target, or the first argument.
    let subject = target.or(arg(0));
    let traversal = |a: Option<&Abs<S::H>>| {
        a.map_or(Range::ONE, |a| a.size_estimate().factor(STRING_TRAVERSAL))
    };
    match name {
        op::EQUALS | op::NOT_EQUALS
            if arg(0).is_some_and(|a| a.kind == Kind::Library)
                && arg(1).is_some_and(|a| a.kind == Kind::Library) =>
        {
            // The libraries price comparing their own values at one.
            (Range::ONE, Abs::of(Kind::Bool))
        }
        op::EQUALS | op::NOT_EQUALS => {
            let (l, r) = (arg(0), arg(1));
            let smallest = match (l, r) {
                (Some(l), Some(r)) => l.size_estimate().max.min(r.size_estimate().max),
                _ => 1,
            };
            let cost = Range {
                min: u64::from(smallest > 0),
                max: smallest,
            }
            .factor(STRING_TRAVERSAL);
            (cost, Abs::of(Kind::Bool))
        }
        op::LESS | op::LESS_EQUALS | op::GREATER | op::GREATER_EQUALS => {
            let textual = arg(0).is_some_and(|a| matches!(a.kind, Kind::String | Kind::Bytes));
            let cost = if textual {
                let smallest = arg(0)
                    .zip(arg(1))
                    .map_or(1, |(l, r)| l.size_estimate().max.min(r.size_estimate().max));
                Range {
                    min: u64::from(smallest > 0),
                    max: smallest,
                }
                .factor(STRING_TRAVERSAL)
            } else {
                Range::ONE
            };
            (cost, Abs::of(Kind::Bool))
        }
        op::ADD if args.len() == 2 => {
            let (l, r) = (&args[0], &args[1]);
            match (l.kind, r.kind) {
                (Kind::String, _) | (_, Kind::String) | (Kind::Bytes, _) | (_, Kind::Bytes) => {
                    let size = l.size_estimate().add(r.size_estimate());
                    let kind = if l.kind == Kind::Bytes || r.kind == Kind::Bytes {
                        Kind::Bytes
                    } else {
                        Kind::String
                    };
                    (size.factor(STRING_TRAVERSAL), Abs::sized(kind, size))
                }
                (Kind::List, _) | (_, Kind::List) => {
                    let size = l.size_estimate().add(r.size_estimate());
                    let mut result = Abs::sized(Kind::List, size);
                    let elems: Vec<Abs<S::H>> = [l, r]
                        .into_iter()
                        .filter(|a| a.elem.is_some() || a.shape.is_some())
                        .map(|a| w.elem_of(a))
                        .collect();
                    result.elem = elems.into_iter().reduce(join).map(Box::new);
                    (Range::ONE, result)
                }
                (a, b) => (Range::ONE, Abs::of(arithmetic(a, b))),
            }
        }
        op::SUBSTRACT | op::MULTIPLY | op::DIVIDE | op::MODULO => {
            let kinds = (arg(0).map(|a| a.kind), arg(1).map(|a| a.kind));
            let kind = match kinds {
                (Some(Kind::Timestamp), Some(Kind::Timestamp)) => Kind::Duration,
                (Some(a), Some(b)) => arithmetic(a, b),
                _ => Kind::Dyn,
            };
            (Range::ONE, Abs::of(kind))
        }
        op::NEGATE => (Range::ONE, Abs::of(arg(0).map_or(Kind::Dyn, |a| a.kind))),
        op::LOGICAL_NOT | op::NOT_STRICTLY_FALSE => (Range::ONE, Abs::of(Kind::Bool)),
        op::INDEX | op::OPT_INDEX => {
            let result = match arg(0) {
                Some(c) if matches!(c.kind, Kind::List | Kind::Map) => w.elem_of(c),
                _ => Abs::of(Kind::Dyn),
            };
            let result = if name == op::OPT_INDEX {
                optional(result)
            } else {
                result
            };
            (Range::ONE, result)
        }
        op::OPT_SELECT => {
            let field = match (arg(0), call.args.get(1).map(|e| &e.expr)) {
                (Some(o), Some(Expr::Literal(LiteralValue::String(f)))) => {
                    field_of(w, o, f.inner())
                }
                _ => Abs::of(Kind::Dyn),
            };
            (Range::ONE, optional(field))
        }
        op::IN => {
            let cost = match arg(1) {
                Some(l) if l.kind == Kind::List => l.size_estimate(),
                _ => Range::ONE,
            };
            (cost, Abs::of(Kind::Bool))
        }
        "size" => (Range::ONE, Abs::of(Kind::Int)),
        "matches" | "find" | "findAll" => {
            let regex = if target.is_some() { arg(0) } else { arg(1) };
            let text = subject.map_or(Range::UNKNOWN, Abs::size_estimate);
            let cost = text
                .add(Range::ONE)
                .factor(STRING_TRAVERSAL)
                .mul(regex.map_or(Range::ONE, |r| r.size_estimate().factor(REGEX_LENGTH)));
            let result = match name {
                "matches" => Abs::of(Kind::Bool),
                "find" => Abs::sized(Kind::String, Range::up_to(text.max)),
                _ => list_of(
                    Abs::sized(Kind::String, Range::up_to(text.max)),
                    Range::up_to(text.max),
                ),
            };
            (cost, result)
        }
        "contains" if target.is_some_and(|t| t.kind != Kind::List) => {
            let cost = traversal(target).mul(traversal(arg(0)));
            (cost, Abs::of(Kind::Bool))
        }
        "startsWith" | "endsWith" => (traversal(arg(0)), Abs::of(Kind::Bool)),
        "lowerAscii" | "upperAscii" | "substring" | "trim" | "reverse"
            if target.is_some_and(|t| t.kind != Kind::List) =>
        {
            let size = target.map_or(Range::UNKNOWN, Abs::size_estimate);
            (
                size.factor(STRING_TRAVERSAL),
                Abs::sized(Kind::String, size),
            )
        }
        "replace" => {
            let size = target.map_or(Range::UNKNOWN, Abs::size_estimate);
            let from = arg(0).map_or(Range::UNKNOWN, Abs::size_estimate);
            let to = arg(1).map_or(Range::UNKNOWN, Abs::size_estimate);
            let result = if from.min > 0 && to.max <= from.min {
                size
            } else {
                // Every character replaced by the longest replacement, around the original.
                Range::up_to(
                    size.max
                        .saturating_add(1)
                        .saturating_mul(to.max)
                        .saturating_add(size.max),
                )
            };
            (
                size.factor(2.0 * STRING_TRAVERSAL),
                Abs::sized(Kind::String, result),
            )
        }
        "split" => {
            let size = target.map_or(Range::UNKNOWN, Abs::size_estimate);
            let limit = match call.args.get(1).map(|e| &e.expr) {
                Some(Expr::Literal(LiteralValue::Int(n))) => u64::try_from(**n).unwrap_or(0),
                _ => size.max,
            };
            (
                size.factor(2.0 * STRING_TRAVERSAL),
                list_of(Abs::sized(Kind::String, size), Range::up_to(limit)),
            )
        }
        "join" => {
            let list = target.map_or(Range::UNKNOWN, Abs::size_estimate);
            let each = target.map_or(Range::UNKNOWN, |t| w.elem_of(t).size_estimate());
            let mut size = list.mul(each);
            if let Some(sep) = arg(0) {
                let seps = Range {
                    min: list.min.saturating_sub(1),
                    max: list.max.saturating_sub(1),
                };
                size = size.add(sep.size_estimate().mul(seps));
            }
            (
                size.factor(STRING_TRAVERSAL),
                Abs::sized(Kind::String, size),
            )
        }
        "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" if target.is_some() => {
            let t = target.expect("checked");
            let result_kind = match name {
                "isSorted" => Kind::Bool,
                "indexOf" | "lastIndexOf" => Kind::Int,
                _ => w.elem_of(t).kind,
            };
            let cost = if t.kind == Kind::List {
                let elem = w.elem_of(t);
                let mut each = Range::ONE;
                if matches!(elem.kind, Kind::String | Kind::Bytes) {
                    each = each.add(elem.size_estimate().factor(STRING_TRAVERSAL));
                }
                t.size_estimate().mul(each)
            } else {
                t.size_estimate().factor(STRING_TRAVERSAL)
            };
            (cost, Abs::of(result_kind))
        }
        // Parsing a string into a library value is one traversal (`isURL` is priced at one).
        "url" | "ip" | "isIP" | "cidr" | "isCIDR" | "quantity" | "isQuantity" | "semver"
        | "isSemver"
            if !args.is_empty() =>
        {
            let result = if name.starts_with("is") {
                Kind::Bool
            } else {
                Kind::Library
            };
            (traversal(arg(0)), Abs::of(result))
        }
        "containsIP" | "containsCIDR" if target.is_some() => {
            // Comparing 4- or 16-byte addresses, plus parsing a string argument.
            let bytes = Range { min: 4, max: 16 };
            let mut cost = bytes.add(bytes).factor(STRING_TRAVERSAL);
            if name == "containsCIDR" {
                cost = cost.add(bytes.factor(STRING_TRAVERSAL)).add(Range::ONE);
            }
            if arg(0).is_some_and(|a| a.kind == Kind::String) {
                cost = cost.add(traversal(arg(0)));
            }
            (cost, Abs::of(Kind::Bool))
        }
        // A named format's regular expression is taken as 128 characters long.
        "validate" if target.is_some() => (
            traversal(arg(0)).factor(128.0 * REGEX_LENGTH),
            Abs::of(Kind::Optional),
        ),
        "format" if target.is_some() => (traversal(target), Abs::of(Kind::String)),
        "string" if arg(0).is_some_and(|a| a.kind == Kind::Bytes) => {
            let size = arg(0).map_or(Range::UNKNOWN, Abs::size_estimate);
            (
                size.factor(STRING_TRAVERSAL),
                Abs::sized(Kind::String, Range::up_to(size.max)),
            )
        }
        "bytes" if arg(0).is_some_and(|a| a.kind == Kind::String) => {
            let size = arg(0).map_or(Range::UNKNOWN, Abs::size_estimate);
            (
                size.factor(STRING_TRAVERSAL),
                Abs::sized(
                    Kind::Bytes,
                    Range {
                        min: size.min,
                        max: size.max.saturating_mul(4),
                    },
                ),
            )
        }
        "sets.contains" | "sets.equivalent" | "sets.intersects" => {
            let cost = arg(0).zip(arg(1)).map_or(Range::ONE, |(a, b)| {
                a.size_estimate().mul(b.size_estimate())
            });
            (cost, Abs::of(Kind::Bool))
        }
        _ => (Range::ONE, Abs::of(result_kind(name, target))),
    }
}

/// The result kind of the calls whose cost is one.
fn result_kind<H>(name: &str, target: Option<&Abs<H>>) -> Kind {
    match name {
        "int" => Kind::Int,
        "uint" => Kind::Uint,
        "double" => Kind::Double,
        "string" => Kind::String,
        "bool" | "hasValue" | "startsWith" | "endsWith" | "contains" | "exists" | "all"
        | "isInteger" | "isGreaterThan" | "isLessThan" => Kind::Bool,
        "duration" => Kind::Duration,
        "timestamp" => Kind::Timestamp,
        "dyn" => Kind::Dyn,
        "type" => Kind::Type,
        "charAt" | "lowerAscii" | "upperAscii" | "trim" | "getScheme" | "getHost"
        | "getHostname" | "getPort" | "getEscapedPath" => Kind::String,
        "asInteger" | "sign" | "compareTo" | "getHours" | "getMinutes" | "getSeconds"
        | "getMilliseconds" | "getFullYear" | "getMonth" | "getDayOfMonth" | "getDayOfWeek"
        | "getDayOfYear" | "getDate" => Kind::Int,
        "asApproximateFloat" => Kind::Double,
        "masked" | "ip" | "add" | "sub" if target.is_some_and(|t| t.kind == Kind::Library) => {
            Kind::Library
        }
        "orValue" | "value" => target.map_or(Kind::Dyn, |t| match &t.elem {
            Some(e) => e.kind,
            None => Kind::Dyn,
        }),
        _ => Kind::Dyn,
    }
}

fn optional<H>(inner: Abs<H>) -> Abs<H> {
    let mut o = Abs::of(Kind::Optional);
    o.elem = Some(Box::new(inner));
    o
}

fn list_of<H>(elem: Abs<H>, size: Range) -> Abs<H> {
    let mut l = Abs::sized(Kind::List, size);
    l.elem = Some(Box::new(elem));
    l
}

fn field_of<S: Shapes>(w: &Walker<'_, S>, operand: &Abs<S::H>, name: &str) -> Abs<S::H> {
    match &operand.shape {
        Some(h) => match w.shapes.field(h, name) {
            super::Field::Known(h) => w.abs_of_shape(h),
            _ => Abs::of(Kind::Dyn),
        },
        None if operand.kind == Kind::Map => w.elem_of(operand),
        None => Abs::of(Kind::Dyn),
    }
}

/// The kind of `a op b` for the arithmetic operators.
fn arithmetic(a: Kind, b: Kind) -> Kind {
    match (a, b) {
        (Kind::Timestamp, Kind::Duration) | (Kind::Duration, Kind::Timestamp) => Kind::Timestamp,
        (a, b) if a == b => a,
        _ => Kind::Dyn,
    }
}

/// A kind the checker knows exactly (so a missing overload is certain).
fn known(k: Kind) -> bool {
    k.cel_name().is_some()
}

fn check_bool_operands<S: Shapes>(w: &mut Walker<'_, S>, name: &str, operands: &[&Abs<S::H>]) {
    if operands
        .iter()
        .any(|a| known(a.kind) && a.kind != Kind::Bool)
        && operands.iter().all(|a| known(a.kind))
    {
        let token = if name == op::LOGICAL_AND { "&&" } else { "||" };
        let at = w.offset_of(token);
        w.error(no_overload(name, None, operands), at);
    }
}

/// cel-go's `found no matching overload for 'f' applied to '(a, b)'` (member: `'t.(a)'`).
fn no_overload<H>(name: &str, target: Option<&Abs<H>>, args: &[&Abs<H>]) -> String {
    let list = args
        .iter()
        .map(|a| a.kind.cel_name().unwrap_or("dyn"))
        .collect::<Vec<_>>()
        .join(", ");
    let applied = match target {
        Some(t) => format!("{}.({list})", t.kind.cel_name().unwrap_or("dyn")),
        None => format!("({list})"),
    };
    format!("found no matching overload for '{name}' applied to '{applied}'")
}

/// Reports calls whose operand kinds are all known and have no overload. Only certain cases
/// are reported: anything dynamic, or a function not listed here, passes.
fn check_overload<S: Shapes>(
    w: &mut Walker<'_, S>,
    name: &str,
    target: Option<&Abs<S::H>>,
    args: &[Abs<S::H>],
) {
    let refs: Vec<&Abs<S::H>> = args.iter().collect();
    let all_known = refs.iter().all(|a| known(a.kind)) && target.is_none_or(|t| known(t.kind));
    if !all_known {
        return;
    }
    let kinds: Vec<Kind> = args.iter().map(|a| a.kind).collect();
    let ok = match (name, kinds.as_slice()) {
        (op::ADD, [a, b]) => {
            a == b && !matches!(a, Kind::Bool | Kind::Timestamp)
                || matches!(
                    (a, b),
                    (Kind::Timestamp, Kind::Duration) | (Kind::Duration, Kind::Timestamp)
                )
        }
        (op::SUBSTRACT, [a, b]) => {
            a == b && (a.numeric() || matches!(a, Kind::Duration | Kind::Timestamp))
                || (*a, *b) == (Kind::Timestamp, Kind::Duration)
        }
        (op::MULTIPLY | op::DIVIDE, [a, b]) => a == b && a.numeric(),
        (op::MODULO, [a, b]) => a == b && matches!(a, Kind::Int | Kind::Uint),
        (op::LESS | op::LESS_EQUALS | op::GREATER | op::GREATER_EQUALS, [a, b]) => {
            a == b || (a.numeric() && b.numeric())
        }
        // Equality of different numeric kinds is left alone (heterogeneous at runtime).
        (op::EQUALS | op::NOT_EQUALS, [a, b]) => a == b || (a.numeric() && b.numeric()),
        (op::NEGATE, [a]) => matches!(a, Kind::Int | Kind::Double | Kind::Duration),
        (op::LOGICAL_NOT, [a]) => *a == Kind::Bool,
        ("size", [a]) if target.is_none() => matches!(a, Kind::String | Kind::Bytes),
        ("size", []) => target.is_some_and(|t| matches!(t.kind, Kind::String | Kind::Bytes)),
        (
            "startsWith" | "endsWith" | "matches" | "lowerAscii" | "upperAscii" | "trim" | "split"
            | "replace" | "find" | "findAll" | "charAt" | "substring" | "contains",
            _,
        ) if target.is_some() => target.is_some_and(|t| t.kind == Kind::String),
        _ => true,
    };
    if ok {
        return;
    }
    let token = match name {
        op::ADD => "+",
        op::SUBSTRACT => "-",
        op::MULTIPLY => "*",
        op::DIVIDE => "/",
        op::MODULO => "%",
        op::LESS => "<",
        op::LESS_EQUALS => "<=",
        op::GREATER => ">",
        op::GREATER_EQUALS => ">=",
        op::EQUALS => "==",
        op::NOT_EQUALS => "!=",
        op::NEGATE => "-",
        op::LOGICAL_NOT => "!",
        other => other,
    };
    // cel-go places a call at its opening parenthesis, an operator at its token.
    let at = if target.is_some() {
        w.offset_of(&format!(".{token}(")) + token.len() + 1
    } else if name == "size" {
        w.offset_of("size(") + token.len()
    } else {
        w.offset_of(token)
    };
    w.error(no_overload(name, target, &refs), at);
}
