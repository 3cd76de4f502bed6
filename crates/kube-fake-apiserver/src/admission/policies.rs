//! ValidatingAdmissionPolicy with its bindings (`admission/plugin/policy/validating`).
use serde_json::Value;

use super::{Attributes, Config};
use crate::state::Db;
use crate::status::ApiError;

/// A policy with one of its bindings.
#[derive(Debug, Clone)]
pub struct Bound {
    pub policy: Value,
    pub binding: Value,
}

/// Pairs every binding with the policy it names.
pub fn bind(policies: &[Value], bindings: &[Value]) -> Vec<Bound> {
    let name = |v: &Value| v.pointer("/metadata/name").cloned();
    bindings
        .iter()
        .filter_map(|b| {
            let want = b.pointer("/spec/policyName").cloned();
            policies.iter().find(|p| name(p) == want).map(|p| Bound {
                policy: p.clone(),
                binding: b.clone(),
            })
        })
        .collect()
}

/// Param objects read with the configuration.
#[derive(Debug, Default)]
pub struct Params;

impl Params {
    pub fn read(_db: &Db, _bound: &[Bound]) -> Params {
        Params
    }
}

pub fn validate(_config: &Config, _attrs: &Attributes) -> Result<(), ApiError> {
    Ok(())
}
