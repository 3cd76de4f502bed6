//! `ValidateCustomResourceDefinitionSubresources`: the scale subresource's JSON paths.

use super::Violation;
use super::model::Subresources;
use super::path::Path;
use super::render::{invalid, q, required};

/// `validateSimpleJSONPath`: non-empty and starting with `.`.
pub(crate) fn simple_json_path(s: &str, path: &Path) -> Option<Violation> {
    if s.is_empty() {
        Some(Violation::new(invalid(path, &q(s), "must not be empty")))
    } else if !s.starts_with('.') {
        Some(Violation::new(invalid(
            path,
            &q(s),
            "must be a simple json path starting with .",
        )))
    } else {
        None
    }
}

pub(crate) fn validate_subresources(sub: &Subresources, path: &Path, out: &mut Vec<Violation>) {
    let Some(scale) = &sub.scale else {
        return;
    };
    let spec_path = path.child("scale.specReplicasPath");
    if scale.spec_replicas_path.is_empty() {
        out.push(Violation::new(required(&spec_path, "")));
    } else if let Some(v) = simple_json_path(&scale.spec_replicas_path, &spec_path) {
        out.push(v);
    } else if !scale.spec_replicas_path.starts_with(".spec.") {
        out.push(Violation::new(invalid(
            &spec_path,
            &q(&scale.spec_replicas_path),
            "should be a json path under .spec",
        )));
    }
    let status_path = path.child("scale.statusReplicasPath");
    if scale.status_replicas_path.is_empty() {
        out.push(Violation::new(required(&status_path, "")));
    } else if let Some(v) = simple_json_path(&scale.status_replicas_path, &status_path) {
        out.push(v);
    } else if !scale.status_replicas_path.starts_with(".status.") {
        out.push(Violation::new(invalid(
            &status_path,
            &q(&scale.status_replicas_path),
            "should be a json path under .status",
        )));
    }
    if let Some(selector) = scale
        .label_selector_path
        .as_deref()
        .filter(|s| !s.is_empty())
    {
        let selector_path = path.child("scale.labelSelectorPath");
        if let Some(v) = simple_json_path(selector, &selector_path) {
            out.push(v);
        } else if !selector.starts_with(".spec.") && !selector.starts_with(".status.") {
            out.push(Violation::new(invalid(
                &selector_path,
                &q(selector),
                "should be a json path under either .spec or .status",
            )));
        }
    }
}
