//! What decides whether a webhook or a policy applies to a request: rules (operations, groups,
//! versions, resources with subresources, scope), `namespaceSelector` and `objectSelector`, as
//! `admission/plugin/webhook/predicates` and `plugin/policy/matching` decide it.
use serde_json::{Map, Value};

use super::{Attributes, Operation};
use crate::status::ApiError;
use crate::util::str_list;

/// One `RuleWithOperations` (or a policy's `NamedRuleWithOperations`, whose `resourceNames`
/// narrow it to objects of those names).
#[derive(Debug, Clone, Default)]
pub struct Rule {
    operations: Vec<String>,
    groups: Vec<String>,
    versions: Vec<String>,
    resources: Vec<String>,
    scope: String,
    names: Vec<String>,
}

fn has(list: &[String], x: &str) -> bool {
    list.iter().any(|v| v == "*" || v == x)
}

impl Rule {
    pub fn parse(v: &Value) -> Rule {
        Rule {
            operations: str_list(v.get("operations")),
            groups: str_list(v.get("apiGroups")),
            versions: str_list(v.get("apiVersions")),
            resources: str_list(v.get("resources")),
            scope: v
                .get("scope")
                .and_then(Value::as_str)
                .unwrap_or("*")
                .to_string(),
            names: str_list(v.get("resourceNames")),
        }
    }

    /// Whether the rule can cover a request on `group`'s `plural` (and `sub`) at all, whatever its
    /// operation, version and scope: what decides that a write needs admission.
    pub fn could_match(&self, group: &str, plural: &str, sub: &str) -> bool {
        has(&self.groups, group)
            && self.resources.iter().any(|r| {
                let (r_res, r_sub) = r.split_once('/').unwrap_or((r, ""));
                (r_res == "*" || r_res == plural) && (r_sub == "*" || r_sub == sub)
            })
    }

    /// Whether the rule covers `attrs` seen through `version` (the request's, or an
    /// equivalent one under `matchPolicy: Equivalent`).
    pub fn matches(&self, attrs: &Attributes, version: &str) -> bool {
        let op = attrs.operation.as_str();
        let (res, sub) = (attrs.res.plural.as_str(), attrs.subresource.as_str());
        has(&self.operations, op)
            && has(&self.groups, &attrs.res.group)
            && has(&self.versions, version)
            && self.resources.iter().any(|r| {
                let (r_res, r_sub) = r.split_once('/').unwrap_or((r, ""));
                (r_res == "*" || r_res == res) && (r_sub == "*" || r_sub == sub)
            })
            && self.scope_matches(attrs)
            && (self.names.is_empty() || self.names.contains(&attrs.name))
    }

    fn scope_matches(&self, attrs: &Attributes) -> bool {
        // A namespace itself is cluster-scoped, though its requests carry its name as their
        // namespace.
        let cluster = attrs.is_namespace() || attrs.namespace.is_empty();
        match self.scope.as_str() {
            "Namespaced" => !cluster,
            "Cluster" => cluster,
            _ => true,
        }
    }
}

/// Whether labels satisfy a `metav1.LabelSelector` (`matchLabels` and `matchExpressions`
/// with `In`, `NotIn`, `Exists`, `DoesNotExist`); an empty selector matches everything.
pub fn selector_matches(selector: &Value, labels: &Map<String, Value>) -> bool {
    let label = |k: &str| labels.get(k).and_then(Value::as_str);
    if let Some(ml) = selector.get("matchLabels").and_then(Value::as_object)
        && ml.iter().any(|(k, v)| label(k) != v.as_str())
    {
        return false;
    }
    let exprs = selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    exprs.iter().all(|e| {
        let key = e.get("key").and_then(Value::as_str).unwrap_or("");
        let values = str_list(e.get("values"));
        match e.get("operator").and_then(Value::as_str).unwrap_or("") {
            "In" => label(key).is_some_and(|l| values.iter().any(|v| v == l)),
            "NotIn" => label(key).is_none_or(|l| !values.iter().any(|v| v == l)),
            "Exists" => label(key).is_some(),
            "DoesNotExist" => label(key).is_none(),
            _ => false,
        }
    })
}

fn is_empty_selector(selector: &Value) -> bool {
    let empty = |k: &str| {
        selector.get(k).is_none_or(|v| {
            v.is_null()
                || v.as_object().is_some_and(Map::is_empty)
                || v.as_array().is_some_and(Vec::is_empty)
        })
    };
    empty("matchLabels") && empty("matchExpressions")
}

fn labels_of(obj: Option<&Value>) -> Map<String, Value> {
    obj.and_then(|o| o.pointer("/metadata/labels"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}

/// `namespaceSelector`: requests for cluster-scoped objects (but namespaces) always match; a
/// namespace's own create or update is judged by its new labels, everything else by the
/// stored namespace's (a missing namespace is its 404).
pub fn namespace_matches(
    selector: &Value,
    attrs: &Attributes,
    namespace: Option<&Value>,
) -> Result<bool, ApiError> {
    if attrs.namespace.is_empty() && !attrs.is_namespace() {
        return Ok(true);
    }
    if is_empty_selector(selector) {
        return Ok(true);
    }
    if attrs.is_namespace()
        && attrs.subresource.is_empty()
        && matches!(attrs.operation, Operation::Create | Operation::Update)
    {
        return Ok(selector_matches(
            selector,
            &labels_of(attrs.object.as_ref()),
        ));
    }
    match namespace {
        Some(ns) => Ok(selector_matches(selector, &labels_of(Some(ns)))),
        None => Err(ApiError::not_found("", "namespaces", &attrs.namespace)),
    }
}

/// `objectSelector`: the new object's labels or the old one's.
pub fn object_matches(selector: &Value, attrs: &Attributes) -> bool {
    if is_empty_selector(selector) {
        return true;
    }
    [attrs.object.as_ref(), attrs.old_object.as_ref()]
        .into_iter()
        .flatten()
        .any(|o| selector_matches(selector, &labels_of(Some(o))))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn label_selectors() {
        let labels = json!({"a": "1", "b": "2"});
        let l = labels.as_object().unwrap();
        assert!(selector_matches(&json!({}), l));
        assert!(selector_matches(&json!({"matchLabels": {"a": "1"}}), l));
        assert!(!selector_matches(&json!({"matchLabels": {"a": "2"}}), l));
        let e = |op: &str, vals: Value| json!({"matchExpressions": [{"key": "b", "operator": op, "values": vals}]});
        assert!(selector_matches(&e("In", json!(["2", "3"])), l));
        assert!(!selector_matches(&e("NotIn", json!(["2"])), l));
        assert!(selector_matches(&e("Exists", json!([])), l));
        assert!(!selector_matches(&e("DoesNotExist", json!([])), l));
    }
}
