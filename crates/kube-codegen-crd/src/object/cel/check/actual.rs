//! Types and sizes from the object being validated: the runtime charge of a rule is its cost
//! with every size taken from the values actually present (the longest string, the longest
//! list at each path), instead of the schema's bounds.
use std::rc::Rc;

use serde_json::Value;

use super::schema::{SchemaView, kind_of};
use super::{Field, Kind, Range, Shapes};
use crate::object::cel::{escape, keyword_field};
use crate::object::node::Node;

/// All values found at one path of the object (every item of a list, every value of a map).
#[derive(Clone)]
pub(crate) struct ActualH<'a> {
    schema: Option<Node<'a>>,
    root: bool,
    values: Rc<Vec<&'a Value>>,
    part: Part,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Part {
    Values,
    /// The keys of the maps in `values`.
    Keys,
}

/// [`Shapes`] of actual values.
pub(crate) struct ActualShapes<'a>(std::marker::PhantomData<&'a Value>);

impl<'a> ActualShapes<'a> {
    pub(crate) fn new() -> Self {
        ActualShapes(std::marker::PhantomData)
    }

    /// `self`: `x`, whose schema is `s`.
    pub(crate) fn this(s: Option<Node<'a>>, x: &'a Value, root: bool) -> ActualH<'a> {
        ActualH {
            schema: s,
            root,
            values: Rc::new(vec![x]),
            part: Part::Values,
        }
    }
}

fn len(v: &Value) -> u64 {
    match v {
        Value::String(s) => s.chars().count() as u64,
        Value::Array(a) => a.len() as u64,
        Value::Object(m) => m.len() as u64,
        _ => 0,
    }
}

impl<'a> Shapes for ActualShapes<'a> {
    type H = ActualH<'a>;

    fn kind(&self, h: &Self::H) -> Kind {
        if h.part == Part::Keys {
            return Kind::String;
        }
        if let Some(s) = &h.schema {
            return kind_of(s, h.root);
        }
        match h.values.iter().find(|v| !v.is_null()) {
            Some(Value::String(_)) => Kind::String,
            Some(Value::Bool(_)) => Kind::Bool,
            Some(Value::Number(n)) if n.is_f64() => Kind::Double,
            Some(Value::Number(_)) => Kind::Int,
            Some(Value::Array(_)) => Kind::List,
            Some(Value::Object(_)) => Kind::Map,
            _ => Kind::Dyn,
        }
    }

    fn size(&self, h: &Self::H) -> Option<Range> {
        let max = match h.part {
            Part::Values => h.values.iter().map(|v| len(v)).max(),
            Part::Keys => h
                .values
                .iter()
                .filter_map(|v| v.as_object())
                .flat_map(|m| m.keys().map(|k| k.chars().count() as u64))
                .max(),
        };
        Some(Range::up_to(max.unwrap_or(0)))
    }

    fn field(&self, h: &Self::H, name: &str) -> Field<Self::H> {
        if h.part == Part::Keys {
            return Field::Dyn;
        }
        // The JSON key behind a CEL name: the declared property's, else the name itself.
        // A keyword is also found by its escaped name (`self.return` is `self.__return__`).
        let escaped = keyword_field(name);
        let declared = h.schema.and_then(|s| {
            let props = s.properties()?;
            let by_name = |cel_name: &str| {
                props
                    .iter()
                    .find(|(k, _)| escape(k).as_deref() == Some(cel_name))
                    .map(|(k, p)| (k.as_str(), Node(p)))
            };
            by_name(name).or_else(|| by_name(escaped.as_deref()?))
        });
        let key = declared.map_or(name, |(k, _)| k).to_string();
        let child_schema = declared
            .map(|(_, p)| p)
            .or_else(|| h.schema.and_then(|s| s.additional_schema()));
        let values: Vec<&'a Value> = h
            .values
            .iter()
            .filter_map(|v| v.as_object()?.get(&key))
            .collect();
        Field::Known(ActualH {
            schema: child_schema,
            root: false,
            values: Rc::new(values),
            part: Part::Values,
        })
    }

    fn elem(&self, h: &Self::H) -> Option<Self::H> {
        if h.part == Part::Keys {
            return None;
        }
        let schema = h
            .schema
            .and_then(|s| s.items().or_else(|| s.additional_schema()));
        let values: Vec<&'a Value> = h
            .values
            .iter()
            .flat_map(|v| -> Box<dyn Iterator<Item = &'a Value> + 'a> {
                match v {
                    Value::Array(a) => Box::new(a.iter()),
                    Value::Object(m) => Box::new(m.values()),
                    _ => Box::new(std::iter::empty()),
                }
            })
            .collect();
        Some(ActualH {
            schema,
            root: false,
            values: Rc::new(values),
            part: Part::Values,
        })
    }

    fn key(&self, h: &Self::H) -> Option<Self::H> {
        Some(ActualH {
            part: Part::Keys,
            ..h.clone()
        })
    }
}
