//! What kube-apiserver 1.35 checks when a CustomResourceDefinition is created, in its words.
//!
//! [`validate_crd`] reads one CRD document (a JSON value of the whole object), decodes it the way
//! the server decodes it (wrong JSON types are reported, unknown fields become warnings), defaults
//! and converts it to the internal type (for v1: per-version schema, subresources and printer
//! columns identical in every version are hoisted to the top level, so their paths read
//! `spec.validation.openAPIV3Schema...`, `spec.subresources...`, `spec.additionalPrinterColumns...`),
//! and then runs `ValidateCustomResourceDefinition`: names, versions, conversion, schemas
//! (forbidden keywords, structural schema rules, defaults, list/map types,
//! `x-kubernetes-validations` with a CEL syntax check), subresources and printer columns.
//! `apiextensions.k8s.io/v1beta1` documents are validated as the last server serving it (1.21) did.
//!
//! Every recursion is bounded (`decode::MAX_SCHEMA_DEPTH` schema levels, CEL nesting) and every
//! violation is collected, not only the first.
//!
//! Modules: `path` (field paths), `render` (cause wording and Go value printing), `model`
//! and `decode` (the internal type), `names`, `versions`, `schema_keywords`,
//! `structural`, `defaults`, `go_regex`, `subresources`, `columns`, `schema_path`,
//! `rules` and `cel_syntax`.

use serde_json::Value;

use crate::Cause;

mod cel_check;
pub(crate) mod cel_syntax;
mod columns;
mod decode;
mod defaults;
mod go_regex;
mod model;
mod names;
mod path;
mod render;
mod rules;
mod schema_keywords;
mod schema_path;
mod structural;
mod subresources;
mod versions;

use model::Flavor;
use path::Path;
use render::{not_supported, q, required, type_invalid};

/// One reason the server would refuse the document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    pub cause: Cause,
    /// true only for the structural-schema rules (what kube-apiserver reports as a non-structural
    /// schema), which a `--lenient` caller may downgrade to warnings. `$ref`, unreadable schemas,
    /// names, versions, columns etc. are false.
    pub structural: bool,
}

/// The parts of a CustomResourceDefinition nothing generated from it reads, by field path as the
/// server prints it: conversion (the webhook's `clientConfig`, often filled at install time,
/// `conversionReviewVersions`, the strategy), annotations (among them the
/// `api-approved.kubernetes.io` approval of protected groups) and labels, the CRD's `status`
/// (`storedVersions` follows from the versions' `storage`, whose own violation stays), and
/// selectable fields (server-side field selectors). Everything else is read by the generator or
/// shapes what it reads: names and the CRD name, group, scope, versions (served, storage,
/// deprecation), schemas, `preserveUnknownFields` (how the schema is read), subresources (status
/// and scale verbs) and printer columns (the `PRINTER_COLUMNS` constant).
const OUTSIDE_GENERATED_CODE: &[&str] = &[
    "spec.conversion",
    "metadata.annotations",
    "metadata.labels",
    "status",
    "spec.selectableFields",
];

/// Whether `field` is `prefix` or below it (`prefix.x`, `prefix[k]`).
fn under(field: &str, prefix: &str) -> bool {
    field
        .strip_prefix(prefix)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
}

impl Violation {
    /// Whether the violation is about a part of the CRD that code generated from it reflects.
    /// `false` for conversion, annotations, labels, status and selectable fields (see the list
    /// above): a CRD refused only for those still describes its types, so a generator may warn
    /// and go on. Decided by the cause's field path alone; a violation without a field path (a
    /// document that is not an object) counts as `true`.
    pub fn affects_generated_code(&self) -> bool {
        let field = self.cause.field.as_str();
        let per_version_selectable = field
            .strip_prefix("spec.versions[")
            .and_then(|rest| rest.split_once(']'))
            .is_some_and(|(i, rest)| {
                i.bytes().all(|b| b.is_ascii_digit()) && under(rest, ".selectableFields")
            });
        !(per_version_selectable || OUTSIDE_GENERATED_CODE.iter().any(|p| under(field, p)))
    }

    pub(crate) fn new(cause: Cause) -> Violation {
        Violation {
            cause,
            structural: false,
        }
    }

    pub(crate) fn structural(cause: Cause) -> Violation {
        Violation {
            cause,
            structural: true,
        }
    }
}

/// Everything [`validate_crd`] found.
#[derive(Debug, Default, Clone)]
pub struct Report {
    pub violations: Vec<Violation>,
    /// e.g. that apiextensions.k8s.io/v1beta1 is not served by Kubernetes 1.22+
    pub warnings: Vec<String>,
}

impl Report {
    /// No violations (warnings do not count).
    pub fn is_ok(&self) -> bool {
        self.violations.is_empty()
    }

    /// The causes of all violations, in order.
    pub fn causes(&self) -> impl Iterator<Item = &Cause> {
        self.violations.iter().map(|v| &v.cause)
    }
}

const V1: &str = "apiextensions.k8s.io/v1";
const V1BETA1: &str = "apiextensions.k8s.io/v1beta1";

/// The server's deprecation warning for v1beta1 CRDs.
pub const V1BETA1_DEPRECATION_WARNING: &str = "apiextensions.k8s.io/v1beta1 CustomResourceDefinition is deprecated in v1.16+, unavailable in v1.22+; use apiextensions.k8s.io/v1 CustomResourceDefinition";

/// Validates one CustomResourceDefinition document exactly as read from a file (JSON value of the
/// whole object: apiVersion apiextensions.k8s.io/v1 or v1beta1, metadata, spec), as
/// kube-apiserver 1.35 does on create (for v1beta1: as the last server that served v1beta1, 1.21,
/// did, so non-structural schemas are allowed there when spec.preserveUnknownFields is
/// unset/true). Never panics, never recurses without a depth bound, collects every violation.
pub fn validate_crd(crd: &Value) -> Report {
    let mut report = Report::default();
    let Some(doc) = crd.as_object() else {
        report.violations.push(Violation::new(type_invalid(
            &Path::new(""),
            &render::go_json(crd),
            "json: cannot unmarshal into Go value of type v1.CustomResourceDefinition: expected an object",
        )));
        return report;
    };
    let flavor = match doc.get("apiVersion") {
        Some(Value::String(v)) if v == V1 => Flavor::V1,
        Some(Value::String(v)) if v == V1BETA1 => {
            report
                .warnings
                .push(V1BETA1_DEPRECATION_WARNING.to_string());
            Flavor::V1beta1
        }
        None | Some(Value::Null) => {
            report
                .violations
                .push(Violation::new(required(&Path::new("apiVersion"), "")));
            return report;
        }
        Some(Value::String(other)) => {
            report.violations.push(Violation::new(not_supported(
                &Path::new("apiVersion"),
                &q(other),
                &[V1, V1BETA1],
            )));
            return report;
        }
        Some(other) => {
            report.violations.push(Violation::new(type_invalid(
                &Path::new("apiVersion"),
                &render::go_json(other),
                "json: cannot unmarshal into Go value of type string",
            )));
            return report;
        }
    };
    match doc.get("kind") {
        None | Some(Value::Null) => {}
        Some(Value::String(k)) if k == "CustomResourceDefinition" => {}
        Some(other) => {
            let shown = match other {
                Value::String(s) => q(s),
                v => render::go_json(v),
            };
            report.violations.push(Violation::new(not_supported(
                &Path::new("kind"),
                &shown,
                &["CustomResourceDefinition"],
            )));
        }
    }

    let mut decoder = decode::Decoder::new(flavor);
    let crd = decoder.crd(doc);
    report.violations.append(&mut decoder.violations);
    report.warnings.append(&mut decoder.warnings);

    let out = &mut report.violations;
    names::validate_metadata(&crd, out);
    versions::validate_spec(&crd.spec, flavor, out, &mut report.warnings);
    names::validate_api_approval(&crd, flavor, out);
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(field: &str) -> bool {
        Violation::new(Cause::new("FieldValueInvalid", field, "x")).affects_generated_code()
    }

    #[test]
    fn generated_code_is_decided_by_the_field_path() {
        for outside in [
            "spec.conversion",
            "spec.conversion.strategy",
            "spec.conversion.webhookClientConfig.service.name",
            "spec.conversion.webhook.clientConfig.caBundle",
            "metadata.annotations",
            "metadata.annotations[api-approved.kubernetes.io]",
            "metadata.labels",
            "status.storedVersions",
            "spec.selectableFields[0].jsonPath",
            "spec.versions[3].selectableFields",
            "spec.versions[0].selectableFields[1].jsonPath",
        ] {
            assert!(!at(outside), "{outside}");
        }
        for inside in [
            "",
            "apiVersion",
            "metadata",
            "metadata.name",
            "metadata.annotationsX",
            "spec.conversionX",
            "statusX",
            "spec.scope",
            "spec.names.kind",
            "spec.versions",
            "spec.versions[0].schema.openAPIV3Schema.properties[status].type",
            "spec.versions[0].additionalPrinterColumns[0].type",
            "spec.versions[0].subresources.scale.specReplicasPath",
            "spec.versions[x].selectableFields",
            "spec.validation.openAPIV3Schema.properties[conversion].type",
            "spec.preserveUnknownFields",
        ] {
            assert!(at(inside), "{inside}");
        }
    }
}
