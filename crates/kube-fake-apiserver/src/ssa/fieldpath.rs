//! Field paths and sets as `managedFields` records them: `f:name` for a field, `k:{"name":"a"}`
//! for an element of a list keyed by its map keys, `v:"x"` for an element of a set, `i:3` for an
//! index, and `.` for a node that is owned itself as well as through its children.
use std::collections::BTreeSet;

use serde_json::{Map, Value, json};

/// One step of a path. Values inside keys are kept as their JSON text, which is both how
/// `fieldsV1` spells them and a total order.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Element {
    Field(String),
    /// The key fields of a list-map element, sorted by name: `(name, JSON text of the value)`.
    Key(Vec<(String, String)>),
    /// A set element, as JSON text.
    Value(String),
    Index(usize),
}

impl Element {
    pub fn field(name: &str) -> Element {
        Element::Field(name.to_string())
    }

    /// The `fieldsV1` key of this element.
    fn serialize(&self) -> String {
        match self {
            Element::Field(f) => format!("f:{f}"),
            Element::Key(fields) => {
                let parts: Vec<String> = fields
                    .iter()
                    .map(|(k, v)| format!("{}:{v}", Value::String(k.clone())))
                    .collect();
                format!("k:{{{}}}", parts.join(","))
            }
            Element::Value(v) => format!("v:{v}"),
            Element::Index(i) => format!("i:{i}"),
        }
    }

    /// Reads a `fieldsV1` key; `None` for `.` and for keys that are none of the four forms.
    fn parse(key: &str) -> Option<Element> {
        let (kind, rest) = key.split_once(':')?;
        match kind {
            "f" => Some(Element::Field(rest.to_string())),
            "k" => match serde_json::from_str::<Value>(rest).ok()? {
                Value::Object(m) => {
                    let mut fields: Vec<(String, String)> =
                        m.iter().map(|(k, v)| (k.clone(), v.to_string())).collect();
                    fields.sort();
                    Some(Element::Key(fields))
                }
                _ => None,
            },
            "v" => serde_json::from_str::<Value>(rest)
                .ok()
                .map(|v| Element::Value(v.to_string())),
            "i" => rest.parse().ok().map(Element::Index),
            _ => None,
        }
    }
}

impl std::fmt::Display for Element {
    /// As the server prints paths in conflict messages: `.name`, `[k1=v1,k2="s"]`, `[="x"]`, `[3]`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Element::Field(name) => write!(f, ".{name}"),
            Element::Key(fields) => {
                let parts: Vec<String> = fields.iter().map(|(k, v)| format!("{k}={v}")).collect();
                write!(f, "[{}]", parts.join(","))
            }
            Element::Value(v) => write!(f, "[={v}]"),
            Element::Index(i) => write!(f, "[{i}]"),
        }
    }
}

pub type Path = Vec<Element>;

/// `.spec.containers[name="a"].image`.
pub fn display(path: &[Element]) -> String {
    path.iter().map(ToString::to_string).collect()
}

/// A set of owned paths. A path is owned itself; its prefixes are owned only if they are members too.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSet(pub BTreeSet<Path>);

impl FieldSet {
    pub fn insert(&mut self, p: Path) {
        self.0.insert(p);
    }

    pub fn contains(&self, p: &Path) -> bool {
        self.0.contains(p)
    }

    pub fn remove(&mut self, p: &Path) {
        self.0.remove(p);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Path> {
        self.0.iter()
    }

    /// Whether `p` or anything below it is a member.
    pub fn covers(&self, p: &Path) -> bool {
        self.0
            .range(p.clone()..)
            .next()
            .is_some_and(|q| q.starts_with(p))
    }

    pub fn union(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.union(&other.0).cloned().collect())
    }

    pub fn difference(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.difference(&other.0).cloned().collect())
    }

    pub fn intersection(&self, other: &FieldSet) -> FieldSet {
        FieldSet(self.0.intersection(&other.0).cloned().collect())
    }

    /// Reads a `fieldsV1` tree as the server decodes a client's `managedFields`: `None` if any key
    /// is not a path element or any node is not an object.
    pub fn parse_fields_v1(v: &Value) -> Option<FieldSet> {
        let mut set = FieldSet::default();
        parse_node(v, &mut Vec::new(), &mut set, 0)?;
        Some(set)
    }

    /// The `fieldsV1` tree: children by key; `.` marks a member that also has members below.
    pub fn to_fields_v1(&self) -> Value {
        let mut root = Map::new();
        for p in &self.0 {
            let mut node = &mut root;
            for e in p {
                let child = node.entry(e.serialize()).or_insert_with(|| json!({}));
                node = child.as_object_mut().expect("tree nodes are objects");
            }
        }
        for p in &self.0 {
            let mut node = &mut root;
            for e in p {
                node = node
                    .get_mut(&e.serialize())
                    .and_then(Value::as_object_mut)
                    .expect("inserted above");
            }
            if !node.is_empty() && !node.contains_key(".") {
                node.insert(".".into(), json!({}));
            }
        }
        Value::Object(root)
    }
}

fn parse_node(v: &Value, at: &mut Path, out: &mut FieldSet, depth: usize) -> Option<()> {
    if depth > crate::schema::MAX_DEPTH {
        return None;
    }
    let m = v.as_object()?;
    if m.is_empty() && !at.is_empty() {
        out.insert(at.clone());
    }
    for (k, child) in m {
        if k == "." {
            child.as_object()?;
            if !at.is_empty() {
                out.insert(at.clone());
            }
            continue;
        }
        at.push(Element::parse(k)?);
        parse_node(child, at, out, depth + 1)?;
        at.pop();
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_v1_round_trips_with_keys_values_and_dots() {
        let v = json!({
            "f:metadata": {"f:finalizers": {"v:\"a/b\"": {}}},
            "f:spec": {"f:containers": {"k:{\"name\":\"web\"}": {".": {}, "f:image": {}, "f:name": {}}}},
        });
        let set = FieldSet::parse_fields_v1(&v).unwrap();
        assert_eq!(set.0.len(), 4);
        assert_eq!(set.to_fields_v1(), v);
        let shown: Vec<String> = set.iter().map(|p| display(p)).collect();
        assert!(shown.contains(&".spec.containers[name=\"web\"].image".to_string()));
        assert!(shown.contains(&".metadata.finalizers[=\"a/b\"]".to_string()));
    }

    #[test]
    fn multi_field_keys_are_sorted_and_printed_like_the_server() {
        let e = Element::parse("k:{\"protocol\":\"TCP\",\"containerPort\":80}").unwrap();
        assert_eq!(
            e.serialize(),
            "k:{\"containerPort\":80,\"protocol\":\"TCP\"}"
        );
        assert_eq!(e.to_string(), "[containerPort=80,protocol=\"TCP\"]");
        assert_eq!(Element::parse("x:1"), None);
        // A client's set with a key that is no path element does not decode.
        assert!(FieldSet::parse_fields_v1(&json!({"f:a": {"x:1": {}}})).is_none());
        assert!(FieldSet::parse_fields_v1(&json!({"f:a": 1})).is_none());
    }
}
