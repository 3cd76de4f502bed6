//! Object and resource names: `metadata` (`ValidateObjectMeta` with the CRD's name function),
//! `spec.group`, `spec.names` (`ValidateCustomResourceDefinitionNames`) and the API approval
//! annotation of protected groups.

use super::Violation;
use super::model::{Crd, Flavor, Names};
use super::path::Path;
use super::render::{invalid, q, required};
pub(crate) use crate::k8s_validation::{dns1035_label, dns1123_subdomain};
use crate::k8s_validation::{label_value, qualified_name};

/// The annotation protected groups need.
pub(crate) const API_APPROVED_ANNOTATION: &str = "api-approved.kubernetes.io";

/// `metadata`: the name must be a DNS subdomain equal to `<plural>.<group>`; labels and
/// annotation keys must be qualified names.
pub(crate) fn validate_metadata(crd: &Crd, out: &mut Vec<Violation>) {
    let meta = Path::new("metadata");
    let required_name = format!("{}.{}", crd.spec.names.plural, crd.spec.group);
    let name_errors = |name: &str, prefix: bool| -> Vec<String> {
        let masked = if prefix {
            name.strip_suffix('-').unwrap_or(name)
        } else {
            name
        };
        let mut errs = dns1123_subdomain(masked);
        if name != required_name {
            errs.push("must be spec.names.plural+\".\"+spec.group".to_string());
        }
        errs
    };
    if !crd.generate_name.is_empty() {
        for m in name_errors(&crd.generate_name, true) {
            out.push(Violation::new(invalid(
                &meta.child("generateName"),
                &q(&crd.generate_name),
                &m,
            )));
        }
    }
    if crd.name.is_empty() {
        if crd.generate_name.is_empty() {
            out.push(Violation::new(required(
                &meta.child("name"),
                "name or generateName is required",
            )));
        }
    } else {
        for m in name_errors(&crd.name, false) {
            out.push(Violation::new(invalid(
                &meta.child("name"),
                &q(&crd.name),
                &m,
            )));
        }
    }
    let labels = meta.child("labels");
    for (k, v) in &crd.labels {
        for m in qualified_name(k) {
            out.push(Violation::new(invalid(&labels, &q(k), &m)));
        }
        for m in label_value(v) {
            out.push(Violation::new(invalid(&labels, &q(v), &m)));
        }
    }
    let annotations = meta.child("annotations");
    let mut total = 0usize;
    for (k, v) in &crd.annotations {
        for m in qualified_name(&k.to_lowercase()) {
            out.push(Violation::new(invalid(&annotations, &q(k), &m)));
        }
        total += k.len() + v.len();
    }
    if total > 256 * 1024 {
        out.push(Violation::new(crate::Cause::new(
            "FieldValueTooLong",
            annotations.as_str(),
            format!("Too long: must have at most {} bytes", 256 * 1024),
        )));
    }
}

/// `spec.group`.
pub(crate) fn validate_group(group: &str, out: &mut Vec<Violation>) {
    let path = Path::new("spec").child("group");
    if group.is_empty() {
        out.push(Violation::new(required(&path, "")));
        return;
    }
    let errs = dns1123_subdomain(group);
    if !errs.is_empty() {
        out.push(Violation::new(invalid(&path, &q(group), &errs.join(","))));
    } else if !group.contains('.') {
        out.push(Violation::new(invalid(
            &path,
            &q(group),
            "should be a domain with at least one dot",
        )));
    }
}

/// The `spec.names` checks that only apply to the spec (required names).
pub(crate) fn validate_required_names(names: &Names, out: &mut Vec<Violation>) {
    let path = Path::new("spec").child("names");
    for (value, field) in [
        (&names.plural, "plural"),
        (&names.singular, "singular"),
        (&names.kind, "kind"),
        (&names.list_kind, "listKind"),
    ] {
        if value.is_empty() {
            out.push(Violation::new(required(&path.child(field), "")));
        }
    }
}

/// `ValidateCustomResourceDefinitionNames`.
pub(crate) fn validate_names(names: &Names, out: &mut Vec<Violation>) {
    let path = Path::new("spec").child("names");
    let label = |value: &str, field: &str, out: &mut Vec<Violation>| {
        let errs = dns1035_label(value);
        if !value.is_empty() && !errs.is_empty() {
            out.push(Violation::new(invalid(
                &path.child(field),
                &q(value),
                &errs.join(","),
            )));
        }
    };
    label(&names.plural, "plural", out);
    label(&names.singular, "singular", out);
    for (value, field) in [(&names.kind, "kind"), (&names.list_kind, "listKind")] {
        let errs = dns1035_label(&value.to_lowercase());
        if !value.is_empty() && !errs.is_empty() {
            out.push(Violation::new(invalid(
                &path.child(field),
                &q(value),
                &format!(
                    "may have mixed case, but should otherwise match: {}",
                    errs.join(",")
                ),
            )));
        }
    }
    for (i, short) in names.short_names.iter().enumerate() {
        let errs = dns1035_label(short);
        if !errs.is_empty() {
            out.push(Violation::new(invalid(
                &path.child("shortNames").index(i),
                &q(short),
                &errs.join(","),
            )));
        }
    }
    if !names.kind.is_empty() && names.kind == names.list_kind {
        out.push(Violation::new(invalid(
            &path.child("listKind"),
            &q(&names.list_kind),
            "kind and listKind may not be the same",
        )));
    }
    for (i, category) in names.categories.iter().enumerate() {
        let errs = dns1035_label(category);
        if !errs.is_empty() {
            out.push(Violation::new(invalid(
                &path.child("categories").index(i),
                &q(category),
                &errs.join(","),
            )));
        }
    }
}

fn is_protected_group(group: &str) -> bool {
    group == "k8s.io"
        || group.ends_with(".k8s.io")
        || group == "kubernetes.io"
        || group.ends_with(".kubernetes.io")
}

/// Go's `url.ParseRequestURI` accepting the value with a scheme and a host.
fn is_absolute_url_with_host(s: &str) -> bool {
    let Some((scheme, rest)) = s.split_once("://") else {
        return false;
    };
    let scheme_ok = scheme
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    scheme_ok && !host.is_empty() && !s.contains(' ')
}

/// `validateAPIApproval` (v1 only; v1beta1 skipped it).
pub(crate) fn validate_api_approval(crd: &Crd, flavor: Flavor, out: &mut Vec<Violation>) {
    if flavor == Flavor::V1beta1 || !is_protected_group(&crd.spec.group) {
        return;
    }
    let value = crd
        .annotations
        .iter()
        .find(|(k, _)| k == API_APPROVED_ANNOTATION)
        .map(|(_, v)| v.as_str())
        .unwrap_or("");
    let path = Path::new("metadata")
        .child("annotations")
        .key(API_APPROVED_ANNOTATION);
    if value.is_empty() {
        out.push(Violation::new(required(
            &path,
            &format!(
                "protected groups must have approval annotation {}, see https://github.com/kubernetes/enhancements/pull/1111",
                q(API_APPROVED_ANNOTATION)
            ),
        )));
    } else if value.starts_with("unapproved") || is_absolute_url_with_host(value) {
        // bypassed or approved
    } else {
        out.push(Violation::new(invalid(
            &path,
            &q(value),
            &format!(
                "protected groups must have approval annotation {} with either a URL or a reason starting with \"unapproved\", see https://github.com/kubernetes/enhancements/pull/1111",
                q(API_APPROVED_ANNOTATION)
            ),
        )));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_subdomains() {
        assert!(dns1035_label("crontabs").is_empty());
        assert!(!dns1035_label("1abc").is_empty());
        assert!(!dns1035_label("a_b").is_empty());
        assert!(dns1123_subdomain("stable.example.com").is_empty());
        assert!(!dns1123_subdomain("Example.com").is_empty());
        assert!(!dns1123_subdomain("a..b").is_empty());
        assert!(qualified_name("app.kubernetes.io/name").is_empty());
        assert!(!qualified_name("a/b/c").is_empty());
        assert!(is_absolute_url_with_host(
            "https://github.com/kubernetes/kubernetes/pull/1"
        ));
        assert!(!is_absolute_url_with_host("approved"));
    }
}
