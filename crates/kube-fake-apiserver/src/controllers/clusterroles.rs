//! kube-controller-manager's ClusterRole aggregation controller
//! (`pkg/controller/clusterroleaggregation`): a ClusterRole with an `aggregationRule` gets the
//! rules of every other ClusterRole its selectors match (in name order, each rule once), written
//! back whenever they differ. Looks only when a ClusterRole changed.
use std::sync::Arc;

use serde_json::{Value, json};

use super::{Changed, write_back};
use crate::builtin::labelselector;
use crate::objects::Mode;
use crate::state::Db;
use crate::util::meta_str;

const GROUP: &str = "rbac.authorization.k8s.io";

#[derive(Default)]
pub struct Aggregation {
    #[cfg(test)]
    pub visited: usize,
}

impl Aggregation {
    pub fn reconcile(&mut self, db: &mut Db, changed: &Changed) {
        if !changed.full && changed.of(GROUP, "clusterroles").next().is_none() {
            return;
        }
        let Some(res) = db.registry.get(GROUP, "clusterroles").cloned() else {
            return;
        };
        let roles: Vec<Value> = db
            .store
            .of_resource(GROUP, "clusterroles")
            .cloned()
            .collect();
        #[cfg(test)]
        {
            self.visited += roles.len();
        }
        for role in roles.iter().filter(|r| r.get("aggregationRule").is_some()) {
            let name = meta_str(role, "name");
            let selectors: Vec<&Value> = role["aggregationRule"]["clusterRoleSelectors"]
                .as_array()
                .map(|a| a.iter().collect())
                .unwrap_or_default();
            let mut rules: Vec<Value> = Vec::new();
            for other in roles.iter().filter(|o| meta_str(o, "name") != name) {
                let labels = other.get("metadata").and_then(|m| m.get("labels"));
                if !selectors
                    .iter()
                    .any(|s| labelselector::matches(Some(s), labels))
                {
                    continue;
                }
                for r in other["rules"].as_array().into_iter().flatten() {
                    if !rules.contains(r) {
                        rules.push(r.clone());
                    }
                }
            }
            let current = role.get("rules").cloned().unwrap_or(json!([]));
            if current == json!(rules) || (current.is_null() && rules.is_empty()) {
                continue;
            }
            let mut new = role.clone();
            new["rules"] = json!(rules);
            write_back(db, &Arc::clone(&res), None, name, new, Mode::Main);
        }
    }
}
