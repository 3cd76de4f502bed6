//! Types and size bounds from a schema, as kube-apiserver derives its CEL declarations
//! (`SchemaDeclType`): `maxLength`, `maxItems` and `maxProperties` where given, and otherwise
//! the most that fits in one request, given the smallest JSON each item or value can have.
use super::{Field, Kind, MAX_REQUEST_BYTES, Range, Shapes};
use crate::object::cel::{escape, keyword_field};
use crate::object::node::{Additional, Node};

/// What the estimate reads of a schema node; implemented for the JSON schema ([`Node`]) and
/// for the CRD model the CRD validator works on.
pub(crate) trait SchemaView: Copy {
    fn type_name(&self) -> &str;
    fn format(&self) -> &str;
    fn max_length(&self) -> Option<i64>;
    fn max_items(&self) -> Option<i64>;
    fn max_properties(&self) -> Option<i64>;
    fn int_or_string(&self) -> bool;
    fn preserve_unknown(&self) -> bool;
    fn embedded(&self) -> bool;
    /// `allOf`/`anyOf`/`oneOf`: fields this walk does not follow.
    fn combinators(&self) -> bool;
    fn has_properties(&self) -> bool;
    /// The declared property CEL calls `cel_name` (escaped).
    fn property_by_cel_name(&self, cel_name: &str) -> Option<Self>;
    fn items(&self) -> Option<Self>;
    /// `additionalProperties` as a schema.
    fn additional_schema(&self) -> Option<Self>;
    /// `additionalProperties: true`.
    fn additional_any(&self) -> bool;
    /// Required properties without a default: (name length, schema).
    fn required_without_default(&self) -> Vec<(usize, Self)>;
}

/// Where a value's type comes from.
#[derive(Clone, Copy)]
pub(crate) enum SchemaH<S> {
    Node {
        s: S,
        root: bool,
        /// The server's size estimator finds this node: it walks the rule's path by the names
        /// as written, so below a keyword selected directly (`self.namespace`, declared as
        /// `__namespace__`) it finds nothing and cel-go takes non-scalar sizes as unbounded.
        sized: bool,
    },
    /// `metadata` at the root or of an embedded resource: `name` and `generateName`.
    Meta,
    /// `apiVersion`, `kind`, `metadata.name`, `metadata.generateName`: unbounded strings.
    TypeMetaString,
    /// Map keys (the server's plain string declaration, whose size bound is zero; unbounded
    /// where the node is not `sized`).
    Key { sized: bool },
}

fn is_root<S: SchemaView>(s: &S, root: bool) -> bool {
    root || s.embedded()
}

pub(crate) fn kind_of<S: SchemaView>(s: &S, root: bool) -> Kind {
    if s.int_or_string() {
        return Kind::Dyn;
    }
    match s.type_name() {
        "object" => {
            if s.additional_schema().is_some() {
                Kind::Map
            } else if s.has_properties() || is_root(s, root) {
                Kind::Object
            } else {
                Kind::Dyn
            }
        }
        "array" => Kind::List,
        "string" => match s.format() {
            "date-time" => Kind::Timestamp,
            "duration" => Kind::Duration,
            "date" => Kind::Dyn,
            _ => Kind::String,
        },
        "integer" => Kind::Int,
        "number" => Kind::Double,
        "boolean" => Kind::Bool,
        "" if is_root(s, root) => Kind::Object,
        _ => Kind::Dyn,
    }
}

/// `estimateMinSizeJSON`: the fewest bytes a value of `s` takes in JSON.
pub(crate) fn min_size<S: SchemaView>(s: &S, depth: usize) -> u64 {
    if s.int_or_string() {
        return 1;
    }
    match s.type_name() {
        "boolean" => 4,
        "number" | "integer" => 1,
        "string" | "array" => 2,
        "object" => {
            let mut size = 2u64;
            if depth < crate::object::MAX_DEPTH {
                for (name_len, p) in s.required_without_default() {
                    // quotes around the name, the colon and a comma
                    size = size
                        .saturating_add(name_len as u64 + 4)
                        .saturating_add(min_size(&p, depth + 1));
                }
            }
            size
        }
        _ => 1,
    }
}

/// How many items of `items` fit in one request.
fn max_items_from_min_size(min: u64) -> u64 {
    (MAX_REQUEST_BYTES - 2) / (min + 1)
}

/// How many map entries with values of `min` bytes fit in one request.
fn max_properties_from_min_size(min: u64) -> u64 {
    (MAX_REQUEST_BYTES - 2) / (min + 6)
}

/// `maxCardinality`: how often a value of `min` bytes can repeat in one request (the factor of
/// a rule under lists or maps without bounds).
pub(crate) fn max_cardinality(min: u64) -> u64 {
    MAX_REQUEST_BYTES / (min + 1)
}

fn bound(v: Option<i64>) -> Option<u64> {
    v.map(|n| n.max(0) as u64)
}

/// `MaxElements` of a node's declaration: the bound its size estimate uses.
pub(crate) fn max_elements<S: SchemaView>(s: &S, root: bool) -> Option<u64> {
    if s.int_or_string() {
        return Some(MAX_REQUEST_BYTES - 2);
    }
    Some(match kind_of(s, root) {
        Kind::String => bound(s.max_length()).unwrap_or(MAX_REQUEST_BYTES - 2),
        Kind::List => match bound(s.max_items()) {
            Some(n) => n,
            None => max_items_from_min_size(s.items().map_or(1, |i| min_size(&i, 0))),
        },
        Kind::Map => match bound(s.max_properties()) {
            Some(n) => n,
            None => {
                max_properties_from_min_size(s.additional_schema().map_or(1, |v| min_size(&v, 0)))
            }
        },
        Kind::Dyn => return None,
        _ => 0,
    })
}

/// How many times the items (or values) of `s` can occur for each occurrence of `s`
/// (`extractMaxElements`): `None` when the schema gives no bound.
pub(crate) fn child_multiplier<S: SchemaView>(s: &S) -> Option<u64> {
    match s.type_name() {
        "object" if s.additional_schema().is_some() || s.additional_any() => {
            bound(s.max_properties())
        }
        "array" => bound(s.max_items()),
        _ => Some(1),
    }
}

impl<S: SchemaView> Shapes for SchemaShapes<S> {
    type H = SchemaH<S>;

    fn kind(&self, h: &Self::H) -> Kind {
        match h {
            SchemaH::Node { s, root, .. } => kind_of(s, *root),
            SchemaH::Meta => Kind::Object,
            SchemaH::TypeMetaString | SchemaH::Key { .. } => Kind::String,
        }
    }

    fn size(&self, h: &Self::H) -> Option<Range> {
        match h {
            SchemaH::Node { sized: false, .. } | SchemaH::Key { sized: false } => None,
            SchemaH::Node { s, root, .. } => max_elements(s, *root).map(Range::up_to),
            SchemaH::Meta | SchemaH::Key { .. } => Some(Range::ZERO),
            SchemaH::TypeMetaString => Some(Range::up_to(MAX_REQUEST_BYTES - 2)),
        }
    }

    fn field(&self, h: &Self::H, name: &str) -> Field<Self::H> {
        match h {
            SchemaH::Node { s, root, sized } => {
                if is_root(s, *root) {
                    match name {
                        "metadata" => return Field::Known(SchemaH::Meta),
                        "apiVersion" | "kind" => return Field::Known(SchemaH::TypeMetaString),
                        _ => {}
                    }
                }
                if let Some(p) = s.property_by_cel_name(name) {
                    return Field::Known(SchemaH::Node {
                        s: p,
                        root: false,
                        sized: *sized,
                    });
                }
                if let Some(p) =
                    keyword_field(name).and_then(|escaped| s.property_by_cel_name(&escaped))
                {
                    return Field::Known(SchemaH::Node {
                        s: p,
                        root: false,
                        sized: false,
                    });
                }
                if let Some(v) = s.additional_schema() {
                    return Field::Known(SchemaH::Node {
                        s: v,
                        root: false,
                        sized: *sized,
                    });
                }
                if kind_of(s, *root) == Kind::Object
                    && !s.preserve_unknown()
                    && !s.combinators()
                    && !s.additional_any()
                {
                    Field::Undefined
                } else {
                    Field::Dyn
                }
            }
            SchemaH::Meta => match name {
                "name" | "generateName" => Field::Known(SchemaH::TypeMetaString),
                _ => Field::Undefined,
            },
            SchemaH::TypeMetaString | SchemaH::Key { .. } => Field::Dyn,
        }
    }

    fn elem(&self, h: &Self::H) -> Option<Self::H> {
        match h {
            SchemaH::Node { s, sized, .. } => {
                s.items()
                    .or_else(|| s.additional_schema())
                    .map(|s| SchemaH::Node {
                        s,
                        root: false,
                        sized: *sized,
                    })
            }
            _ => None,
        }
    }

    fn key(&self, h: &Self::H) -> Option<Self::H> {
        match h {
            SchemaH::Node { s, sized, .. } if s.additional_schema().is_some() => {
                Some(SchemaH::Key { sized: *sized })
            }
            _ => None,
        }
    }
}

/// [`Shapes`] of a schema (nodes of type `S`): the static estimate.
pub(crate) struct SchemaShapes<S>(std::marker::PhantomData<S>);

impl<S: SchemaView> SchemaShapes<S> {
    pub(crate) fn new() -> Self {
        SchemaShapes(std::marker::PhantomData)
    }

    /// `self` of a rule on node `s` (`root`: the resource root).
    pub(crate) fn this(s: S, root: bool) -> SchemaH<S> {
        SchemaH::Node {
            s,
            root,
            sized: true,
        }
    }
}

impl<'a> SchemaView for Node<'a> {
    fn type_name(&self) -> &str {
        Node::type_(*self).unwrap_or("")
    }

    fn format(&self) -> &str {
        self.raw("format")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("")
    }

    fn max_length(&self) -> Option<i64> {
        self.raw("maxLength").and_then(serde_json::Value::as_i64)
    }

    fn max_items(&self) -> Option<i64> {
        self.raw("maxItems").and_then(serde_json::Value::as_i64)
    }

    fn max_properties(&self) -> Option<i64> {
        self.raw("maxProperties")
            .and_then(serde_json::Value::as_i64)
    }

    fn int_or_string(&self) -> bool {
        Node::int_or_string(*self)
    }

    fn preserve_unknown(&self) -> bool {
        Node::preserve_unknown(*self)
    }

    fn embedded(&self) -> bool {
        Node::embedded(*self)
    }

    fn combinators(&self) -> bool {
        ["allOf", "anyOf", "oneOf"].iter().any(|k| {
            self.raw(k)
                .is_some_and(|v| v.as_array().is_some_and(|a| !a.is_empty()))
        })
    }

    fn has_properties(&self) -> bool {
        self.properties().is_some_and(|p| !p.is_empty())
    }

    fn property_by_cel_name(&self, cel_name: &str) -> Option<Self> {
        let props = self.properties()?;
        if let Some(p) = props.get(cel_name)
            && escape(cel_name).as_deref() == Some(cel_name)
        {
            return Some(Node(p));
        }
        props
            .iter()
            .find(|(k, _)| escape(k).as_deref() == Some(cel_name))
            .map(|(_, p)| Node(p))
    }

    fn items(&self) -> Option<Self> {
        Node::items(*self)
    }

    fn additional_schema(&self) -> Option<Self> {
        match self.additional() {
            Some(Additional::Schema(s)) => Some(s),
            _ => None,
        }
    }

    fn additional_any(&self) -> bool {
        matches!(self.additional(), Some(Additional::Bool))
            && self.raw("additionalProperties") == Some(&serde_json::Value::Bool(true))
    }

    fn required_without_default(&self) -> Vec<(usize, Self)> {
        let Some(required) = self.raw("required").and_then(serde_json::Value::as_array) else {
            return Vec::new();
        };
        required
            .iter()
            .filter_map(serde_json::Value::as_str)
            .filter_map(|name| {
                let p = self.property(name)?;
                p.default().is_none().then_some((name.len(), p))
            })
            .collect()
    }
}
