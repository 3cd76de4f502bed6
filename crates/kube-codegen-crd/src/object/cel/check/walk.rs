//! The walk: one pass over the syntax tree giving each node a type, a size and a cost.
use kube_cel::cel::common::ast::{EntryExpr, Expr, LiteralValue};
use kube_cel::cel::parser::Expression;

use super::functions;
use super::{Field, Kind, OldSelf, Range, Shapes, TypeError};

/// Bounds the walk like the parser bounds nesting.
const MAX_DEPTH: usize = 2_000;

/// cel-go's base costs of building values.
const CREATE_LIST: u64 = 10;
const CREATE_MAP: u64 = 30;
const CREATE_STRUCT: u64 = 40;

/// Declared fields by name, each with its value.
pub(super) type Fields<H> = std::rc::Rc<Vec<(String, Abs<H>)>>;

/// An abstract value: its kind, its size when known, and where its fields come from.
#[derive(Clone)]
pub(super) struct Abs<H> {
    pub kind: Kind,
    pub size: Option<Range>,
    pub shape: Option<H>,
    /// Items of a list (or values of a map) built by the rule itself.
    pub elem: Option<Box<Abs<H>>>,
    /// The declared fields of a value typed by the caller rather than by a schema (a
    /// policy's `variables`): any other field is undefined.
    pub fields: Option<Fields<H>>,
}

impl<H> Abs<H> {
    pub(super) fn of(kind: Kind) -> Abs<H> {
        Abs {
            kind,
            size: None,
            shape: None,
            elem: None,
            fields: None,
        }
    }

    pub(super) fn sized(kind: Kind, size: Range) -> Abs<H> {
        Abs {
            size: Some(size),
            ..Abs::of(kind)
        }
    }

    /// cel-go's `sizeEstimate`: the known size, else one for scalars, else unbounded.
    pub(super) fn size_estimate(&self) -> Range {
        match self.size {
            Some(s) => s,
            None if self.kind.scalar() => Range::ONE,
            None => Range::UNKNOWN,
        }
    }
}

pub(super) struct Walker<'s, S: Shapes> {
    pub shapes: &'s S,
    source: &'s str,
    strict: bool,
    env: Vec<(String, Abs<S::H>)>,
    errors: Vec<TypeError>,
}

impl<'s, S: Shapes> Walker<'s, S> {
    pub(super) fn new(shapes: &'s S, source: &'s str, strict: bool) -> Self {
        Walker {
            shapes,
            source,
            strict,
            env: Vec::new(),
            errors: Vec::new(),
        }
    }

    pub(super) fn bind_self(&mut self, this: S::H, old: OldSelf) {
        let abs = self.abs_of_shape(this);
        match old {
            OldSelf::Plain => self.env.push(("oldSelf".into(), abs.clone())),
            OldSelf::Optional => {
                let mut o = Abs::of(Kind::Optional);
                o.elem = Some(Box::new(abs.clone()));
                self.env.push(("oldSelf".into(), o));
            }
        }
        self.env.push(("self".into(), abs));
    }

    /// Declares `name` as `abs` (outside any rule's `self`).
    pub(super) fn bind(&mut self, name: &str, abs: Abs<S::H>) {
        self.env.push((name.to_string(), abs));
    }

    pub(super) fn into_errors(self) -> Vec<TypeError> {
        self.errors
    }

    pub(super) fn abs_of_shape(&self, h: S::H) -> Abs<S::H> {
        Abs {
            kind: self.shapes.kind(&h),
            size: self.shapes.size(&h),
            shape: Some(h),
            elem: None,
            fields: None,
        }
    }

    /// The items of a list (or values of a map).
    pub(super) fn elem_of(&self, a: &Abs<S::H>) -> Abs<S::H> {
        if let Some(e) = &a.elem {
            return (**e).clone();
        }
        match a.shape.as_ref().and_then(|h| self.shapes.elem(h)) {
            Some(h) => self.abs_of_shape(h),
            None => Abs::of(Kind::Dyn),
        }
    }

    fn key_of(&self, a: &Abs<S::H>) -> Abs<S::H> {
        match a.shape.as_ref().and_then(|h| self.shapes.key(h)) {
            Some(h) => self.abs_of_shape(h),
            None => Abs::of(Kind::String),
        }
    }

    pub(super) fn error(&mut self, message: String, offset: usize) {
        if self.strict {
            self.errors.push(TypeError { message, offset });
        }
    }

    pub(super) fn strict(&self) -> bool {
        self.strict
    }

    /// Best-effort position of `token` in the source (the parser keeps no positions): its
    /// first occurrence outside string literals.
    pub(super) fn offset_of(&self, token: &str) -> usize {
        find_token(self.source, token).unwrap_or(0)
    }

    pub(super) fn visit(&mut self, e: &Expression, depth: usize) -> (Abs<S::H>, Range) {
        if depth > MAX_DEPTH {
            return (Abs::of(Kind::Dyn), Range::ZERO);
        }
        match &e.expr {
            Expr::Literal(l) => (literal(l), Range::ZERO),
            Expr::Ident(name) => {
                let abs = self
                    .env
                    .iter()
                    .rev()
                    .find(|(n, _)| n == name)
                    .map(|(_, a)| a.clone())
                    .unwrap_or_else(|| Abs::of(Kind::Dyn));
                (abs, Range::ONE)
            }
            Expr::Select(sel) => {
                let (operand, cost) = self.visit(&sel.operand, depth + 1);
                if sel.test {
                    // has(): the field must still exist in the type; Kubernetes keeps presence
                    // tests free (cel-go's PresenceTestHasCost(false)), so only the operand
                    // is charged.
                    self.select(&operand, &sel.field);
                    return (Abs::of(Kind::Bool), cost);
                }
                let cost = match operand.kind {
                    Kind::Map | Kind::Object => cost.add(Range::ONE),
                    _ => cost,
                };
                (self.select(&operand, &sel.field), cost)
            }
            Expr::Call(call) => functions::call(self, call, depth),
            Expr::Comprehension(c) => {
                let (range, mut cost) = self.visit(&c.iter_range, depth + 1);
                let (init, init_cost) = self.visit(&c.accu_init, depth + 1);
                cost = cost.add(init_cost);
                let mark = self.env.len();
                let (first, second) = if range.kind == Kind::Map {
                    (self.key_of(&range), self.elem_of(&range))
                } else if c.iter_var2.is_some() {
                    (Abs::of(Kind::Int), self.elem_of(&range))
                } else {
                    (self.elem_of(&range), Abs::of(Kind::Dyn))
                };
                self.env.push((c.iter_var.clone(), first));
                if let Some(v2) = &c.iter_var2 {
                    self.env.push((v2.clone(), second));
                }
                self.env.push((c.accu_var.clone(), init.clone()));
                let (_, cond) = self.visit(&c.loop_cond, depth + 1);
                let (step, step_cost) = self.visit(&c.loop_step, depth + 1);
                self.env.truncate(mark);
                let count = range.size_estimate();
                // The accumulator after the loop: what the step builds, as many times as the
                // range has items (map() and filter() produce at most that many).
                let mut accu = if init.kind == Kind::List {
                    let mut l = Abs::sized(Kind::List, count);
                    l.elem = step.elem.clone().or(init.elem.clone());
                    l
                } else {
                    init
                };
                if accu.kind == Kind::Dyn {
                    accu.kind = step.kind;
                }
                self.env.push((c.accu_var.clone(), accu));
                let (result, result_cost) = self.visit(&c.result, depth + 1);
                self.env.truncate(mark);
                cost = cost.add(result_cost).add(count.mul(cond.add(step_cost)));
                (result, cost)
            }
            Expr::List(l) => {
                let mut cost = Range::exactly(CREATE_LIST);
                let mut elem: Option<Abs<S::H>> = None;
                for x in &l.elements {
                    let (a, c) = self.visit(x, depth + 1);
                    cost = cost.add(c);
                    elem = Some(match elem {
                        None => a,
                        Some(prev) => join(prev, a),
                    });
                }
                let mut abs = Abs::sized(Kind::List, Range::exactly(l.elements.len() as u64));
                abs.elem = elem.map(Box::new);
                (abs, cost)
            }
            Expr::Map(m) => {
                let mut cost = Range::exactly(CREATE_MAP);
                let mut elem: Option<Abs<S::H>> = None;
                for entry in &m.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(me) => {
                            let (_, kc) = self.visit(&me.key, depth + 1);
                            let (v, vc) = self.visit(&me.value, depth + 1);
                            cost = cost.add(kc).add(vc);
                            elem = Some(match elem {
                                None => v,
                                Some(prev) => join(prev, v),
                            });
                        }
                        EntryExpr::StructField(f) => {
                            let (_, vc) = self.visit(&f.value, depth + 1);
                            cost = cost.add(vc);
                        }
                    }
                }
                let mut abs = Abs::sized(Kind::Map, Range::exactly(m.entries.len() as u64));
                abs.elem = elem.map(Box::new);
                (abs, cost)
            }
            Expr::Struct(s) => {
                let mut cost = Range::exactly(CREATE_STRUCT);
                for entry in &s.entries {
                    if let EntryExpr::StructField(f) = &entry.expr {
                        cost = cost.add(self.visit(&f.value, depth + 1).1);
                    }
                }
                (Abs::of(Kind::Dyn), cost)
            }
            Expr::Unspecified => (Abs::of(Kind::Dyn), Range::ZERO),
        }
    }

    /// `operand.name`.
    fn select(&mut self, operand: &Abs<S::H>, name: &str) -> Abs<S::H> {
        if let Some(fields) = &operand.fields {
            if let Some((_, a)) = fields.iter().find(|(n, _)| n == name) {
                return a.clone();
            }
            let at = select_offset(self.source, name).unwrap_or(0);
            self.error(format!("undefined field '{name}'"), at);
            return Abs::of(Kind::Dyn);
        }
        if let Some(h) = &operand.shape {
            return match self.shapes.field(h, name) {
                Field::Known(h) => self.abs_of_shape(h),
                Field::Dyn => Abs::of(Kind::Dyn),
                Field::Undefined => {
                    let at = select_offset(self.source, name).unwrap_or(0);
                    self.error(format!("undefined field '{name}'"), at);
                    Abs::of(Kind::Dyn)
                }
            };
        }
        match operand.kind {
            Kind::Map => self.elem_of(operand),
            _ => Abs::of(Kind::Dyn),
        }
    }
}

/// A constant; its size is computed as cel-go's `ComputedSize` does (one for scalars and null).
fn literal<H>(l: &LiteralValue) -> Abs<H> {
    match l {
        LiteralValue::Boolean(_) => Abs::sized(Kind::Bool, Range::ONE),
        LiteralValue::Int(_) => Abs::sized(Kind::Int, Range::ONE),
        LiteralValue::UInt(_) => Abs::sized(Kind::Uint, Range::ONE),
        LiteralValue::Double(_) => Abs::sized(Kind::Double, Range::ONE),
        LiteralValue::Null => Abs::sized(Kind::Null, Range::ONE),
        LiteralValue::String(s) => {
            let s: &str = s.inner();
            Abs::sized(Kind::String, Range::exactly(s.chars().count() as u64))
        }
        LiteralValue::Bytes(b) => {
            let b: &[u8] = b.inner();
            Abs::sized(Kind::Bytes, Range::exactly(b.len() as u64))
        }
    }
}

/// Two values one expression may give: the common kind and the union of sizes.
pub(super) fn join<H: Clone>(a: Abs<H>, b: Abs<H>) -> Abs<H> {
    if a.kind != b.kind {
        // null mixes with anything in CEL's aggregate literals only as dyn.
        return Abs::of(Kind::Dyn);
    }
    let size = match (a.size, b.size) {
        (Some(x), Some(y)) => Some(x.union(y)),
        _ => None,
    };
    Abs {
        kind: a.kind,
        size,
        shape: a.shape.or(b.shape),
        elem: a.elem.or(b.elem),
        fields: a.fields.or(b.fields),
    }
}

/// The byte offsets of `source` outside string literals (where tokens can start).
fn outside_literals(source: &str) -> impl Iterator<Item = usize> + '_ {
    let b = source.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    std::iter::from_fn(move || {
        while i < b.len() {
            let (at, c) = (i, b[i]);
            i += 1;
            match quote {
                Some(_) if c == b'\\' => i += 1,
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if c == b'\'' || c == b'"' => quote = Some(c),
                None => return Some(at),
            }
        }
        None
    })
}

/// Byte offset of the first `token` outside string literals.
pub(super) fn find_token(source: &str, token: &str) -> Option<usize> {
    outside_literals(source).find(|&i| source[i..].starts_with(token))
}

/// Byte offset of the `.` before the first selection of `name` (where cel-go puts the error).
fn select_offset(source: &str, name: &str) -> Option<usize> {
    let b = source.as_bytes();
    outside_literals(source).find(|&i| {
        if b[i] != b'.' {
            return false;
        }
        let mut j = i + 1;
        while j < b.len() && (b[j] == b' ' || b[j] == b'?') {
            j += 1;
        }
        let end = j + name.len();
        source.get(j..end) == Some(name)
            && !b
                .get(end)
                .is_some_and(|x| x.is_ascii_alphanumeric() || *x == b'_')
    })
}
