//! What cel-go's checker and cost estimator tell kube-apiserver about a rule before it runs:
//! the type of each sub-expression, the sizes of strings, lists and maps, and the estimated
//! cost — so CRD creation refuses type errors and over-budget rules with the server's messages,
//! and evaluation can charge the runtime budget.
//!
//! The `cel` interpreter has neither a checker nor a cost model, so this walk over its syntax
//! tree is the layer around it: it never evaluates anything. Types and sizes come from a
//! [`Shapes`] source: the schema ([`schema::SchemaShapes`], for the static estimate) or the
//! object being validated ([`actual::ActualShapes`], for the runtime charge). The cost of each
//! node follows cel-go's `checker/cost.go` and the Kubernetes libraries' estimators (facts,
//! numbers and factors, not their code); differences are listed in ARCHITECTURE.md.
use kube_cel::cel::parser::Expression;

pub(crate) mod actual;
mod functions;
pub(crate) mod schema;
#[cfg(test)]
mod tests;
pub(crate) mod typed;
mod walk;

/// kube-apiserver's limits (`k8s.io/apiserver/pkg/apis/cel/config.go` and
/// apiextensions' validation): the runtime cost one rule may use...
pub(crate) const PER_CALL_LIMIT: u64 = 1_000_000;
/// ...the runtime cost all rules of one object may use together...
pub(crate) const RUNTIME_BUDGET: u64 = 10_000_000;
/// ...the estimated cost one rule may have at CRD creation (times how often it can run)...
pub(crate) const STATIC_RULE_LIMIT: u64 = 10_000_000;
/// ...and the estimated cost of all rules of one CRD schema together.
pub(crate) const STATIC_CRD_LIMIT: u64 = 100_000_000;
/// The largest request the server accepts: the bound on every unbounded size.
pub(crate) const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;

/// A `[min, max]` range of sizes or costs, saturating at `u64::MAX`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) struct Range {
    pub min: u64,
    pub max: u64,
}

impl Range {
    pub(crate) const ZERO: Range = Range { min: 0, max: 0 };
    pub(crate) const ONE: Range = Range { min: 1, max: 1 };
    /// No estimate: anything from nothing to everything.
    pub(crate) const UNKNOWN: Range = Range {
        min: 0,
        max: u64::MAX,
    };

    pub(crate) fn exactly(n: u64) -> Range {
        Range { min: n, max: n }
    }

    pub(crate) fn up_to(n: u64) -> Range {
        Range { min: 0, max: n }
    }

    pub(crate) fn add(self, o: Range) -> Range {
        Range {
            min: self.min.saturating_add(o.min),
            max: self.max.saturating_add(o.max),
        }
    }

    pub(crate) fn mul(self, o: Range) -> Range {
        Range {
            min: self.min.saturating_mul(o.min),
            max: self.max.saturating_mul(o.max),
        }
    }

    /// Each unit costs `f` (rounded up, as cel-go's `MultiplyByCostFactor`).
    pub(crate) fn factor(self, f: f64) -> Range {
        let scale = |x: u64| -> u64 {
            let v = (x as f64 * f).ceil();
            if v >= u64::MAX as f64 {
                u64::MAX
            } else {
                v as u64
            }
        };
        Range {
            min: scale(self.min),
            max: scale(self.max),
        }
    }

    pub(crate) fn union(self, o: Range) -> Range {
        Range {
            min: self.min.min(o.min),
            max: self.max.max(o.max),
        }
    }
}

/// The CEL type of a value, as far as it is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Duration,
    Timestamp,
    List,
    Map,
    /// A schema object with declared properties (a CEL object type).
    Object,
    Optional,
    Type,
    /// A value of the Kubernetes libraries' opaque types (IP, CIDR, URL, quantity, semver).
    Library,
    /// Not known here (int-or-string, preserve-unknown-fields, results this walk does not type).
    Dyn,
}

impl Kind {
    /// cel-go's `isScalar`: values whose size is taken as one.
    fn scalar(self) -> bool {
        matches!(
            self,
            Kind::Bool | Kind::Int | Kind::Uint | Kind::Double | Kind::Duration | Kind::Timestamp
        )
    }

    /// The name cel-go prints in overload errors, for the kinds whose name is certain.
    fn cel_name(self) -> Option<&'static str> {
        Some(match self {
            Kind::Bool => "bool",
            Kind::Int => "int",
            Kind::Uint => "uint",
            Kind::Double => "double",
            Kind::String => "string",
            Kind::Bytes => "bytes",
            Kind::Duration => "google.protobuf.Duration",
            Kind::Timestamp => "google.protobuf.Timestamp",
            _ => return None,
        })
    }

    fn numeric(self) -> bool {
        matches!(self, Kind::Int | Kind::Uint | Kind::Double)
    }
}

/// What a field selection finds.
pub(crate) enum Field<H> {
    Known(H),
    /// Present or not, but its type is not known (maps of unknown values, dynamic objects).
    Dyn,
    /// The type declares no such field: cel-go's `undefined field`.
    Undefined,
}

/// A source of types and sizes for `self`, its fields and its items.
pub(crate) trait Shapes {
    type H: Clone;
    fn kind(&self, h: &Self::H) -> Kind;
    /// The size bound (characters, items, entries; zero for scalars), if there is one.
    fn size(&self, h: &Self::H) -> Option<Range>;
    fn field(&self, h: &Self::H, name: &str) -> Field<Self::H>;
    /// List items or map values.
    fn elem(&self, h: &Self::H) -> Option<Self::H>;
    /// Map keys.
    fn key(&self, h: &Self::H) -> Option<Self::H>;
}

/// A type error cel-go's checker reports, and where in the source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct TypeError {
    pub message: String,
    pub offset: usize,
}

/// What the walk found out about one expression.
#[derive(Debug)]
pub(crate) struct Analysis {
    pub kind: Kind,
    pub cost: Range,
    pub errors: Vec<TypeError>,
}

/// How `oldSelf` is bound in a rule.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum OldSelf {
    Plain,
    Optional,
}

/// Types and costs `expr` (parsed from `source`), with `self` (and `oldSelf`) of shape
/// `this`. `strict` collects type errors; the runtime charge does not need them.
pub(crate) fn analyse<S: Shapes>(
    shapes: &S,
    this: S::H,
    old: OldSelf,
    expr: &Expression,
    source: &str,
    strict: bool,
) -> Analysis {
    let mut w = walk::Walker::new(shapes, source, strict);
    w.bind_self(this, old);
    let (abs, cost) = w.visit(expr, 0);
    Analysis {
        kind: abs.kind,
        cost,
        errors: in_order(w.into_errors()),
    }
}

/// Errors in source order, each once (cel-go's issues are sorted by location).
pub(super) fn in_order(mut errors: Vec<TypeError>) -> Vec<TypeError> {
    errors.sort_by_key(|e| e.offset);
    errors.dedup();
    errors
}

/// Errors as cel-go's `Issues.String()` renders them: each `ERROR: <input>:l:c: msg` with the
/// source line and a caret, joined by line breaks; `None` without errors.
pub(crate) fn render(source: &str, errors: &[TypeError]) -> Option<String> {
    (!errors.is_empty()).then(|| {
        errors
            .iter()
            .map(|e| crate::validate::cel_syntax::render_at(source, e.offset, &e.message))
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// `getCostErrorMessage`: how far over its limit a cost is, in the server's words.
pub(crate) fn over_budget(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit as f64;
    let factor = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!(
        "{what} exceeds budget by factor of {factor} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    )
}
