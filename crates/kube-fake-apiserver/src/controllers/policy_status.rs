//! kube-controller-manager's `validatingadmissionpolicy-status-controller`: a
//! ValidatingAdmissionPolicy whose `metadata.generation` is ahead of its
//! `status.observedGeneration` is type-checked ([`crate::admission::typecheck`]) and its status
//! applied (server-side apply, forced, under the controller's name): `observedGeneration` and
//! `typeChecking` (`{}` when no expression has a warning).
use serde_json::{Value, json};

use super::Changed;
use crate::objects::{self, Mode, WriteOpts};
use crate::ssa::Operation;
use crate::state::Db;
use crate::util::meta_str;

const POLICIES: (&str, &str) = (
    "admissionregistration.k8s.io",
    "validatingadmissionpolicies",
);
const MANAGER: &str = "validatingadmissionpolicy-status-controller";

#[derive(Default)]
pub struct PolicyStatus {
    /// Policies looked at, for tests that check a round's cost.
    #[cfg(test)]
    pub visited: usize,
}

fn generation(p: &Value, pointer: &str) -> i64 {
    p.pointer(pointer).and_then(Value::as_i64).unwrap_or(0)
}

fn stale(p: &&Value) -> bool {
    generation(p, "/metadata/generation") > generation(p, "/status/observedGeneration")
}

impl PolicyStatus {
    pub fn reconcile(&mut self, db: &mut Db, changed: &Changed) {
        let Some(res) = db.registry.get(POLICIES.0, POLICIES.1).cloned() else {
            return;
        };
        let stale: Vec<Value> = if changed.full {
            db.store
                .of_resource(POLICIES.0, POLICIES.1)
                .filter(stale)
                .cloned()
                .collect()
        } else {
            changed
                .of(POLICIES.0, POLICIES.1)
                .filter_map(|k| db.store.get(k))
                .filter(stale)
                .cloned()
                .collect()
        };
        #[cfg(test)]
        {
            self.visited += stale.len();
        }
        if stale.is_empty() {
            return;
        }
        let version = res.storage_version().to_string();
        let resources = db.registry.schemas();
        for policy in stale {
            let name = meta_str(&policy, "name").to_string();
            let warnings =
                crate::admission::typecheck::expression_warnings(&db.registry, &resources, &policy);
            let type_checking = if warnings.is_empty() {
                json!({})
            } else {
                json!({"expressionWarnings": warnings})
            };
            let applied = json!({
                "apiVersion": res.api_version(&version),
                "kind": res.kind,
                "metadata": {"name": name},
                "status": {
                    "observedGeneration": generation(&policy, "/metadata/generation"),
                    "typeChecking": type_checking,
                },
            });
            let opts = WriteOpts {
                manager: MANAGER.into(),
                ..Default::default()
            };
            let write = objects::Write {
                res: &res,
                version: &version,
                ns: None,
                opts: &opts,
                operation: Operation::Apply,
            };
            let live = objects::view(&res, &version, &policy);
            // Under the store lock nothing changes the policy meanwhile; a write refused all
            // the same is tried again at the policy's next change (the real controller requeues
            // it with backoff).
            if let Err(e) = write
                .writer(Mode::Status)
                .apply(&live, &applied, true)
                .and_then(|merged| write.update(db, &name, merged, Mode::Status, &applied))
            {
                tracing::warn!(
                    "writing the status of ValidatingAdmissionPolicy {name}: {}",
                    e.message
                );
            }
        }
    }
}
