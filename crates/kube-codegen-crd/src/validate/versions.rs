//! `spec` as a whole (`validateCustomResourceDefinitionSpec`): scope, versions (names, storage,
//! deprecation warnings, top-level vs per-version fields), the required schemas, conversion, and
//! `status.storedVersions` as the create strategy fills it.

use super::Violation;
use super::columns::{validate_column, validate_selectable_fields};
use super::model::{Conversion, Flavor, Spec, Subresources};
use super::names;
use super::path::Path;
use super::render::{forbidden, go_string_slice, invalid, not_supported, q, required};
use super::schema_keywords::{Opts, validate_custom_resource_validation};
use super::subresources::validate_subresources;

/// `validateEnumStrings`.
fn enum_string(path: &Path, value: &str, accepted: &[&str], out: &mut Vec<Violation>) {
    if value.is_empty() {
        out.push(Violation::new(required(path, "")));
    } else if !accepted.contains(&value) {
        out.push(Violation::new(not_supported(path, &q(value), accepted)));
    }
}

fn has_status(sub: Option<&Subresources>) -> bool {
    sub.is_some_and(|s| s.status)
}

/// The subresources that apply to `version` (`getSubresourcesForVersion`).
fn subresources_for<'a>(spec: &'a Spec, version: &str) -> Option<&'a Subresources> {
    if !spec.versions.iter().any(|v| v.subresources.is_some()) {
        return spec.subresources.as_ref();
    }
    spec.versions
        .iter()
        .find(|v| v.name == version)
        .and_then(|v| v.subresources.as_ref())
}

/// `%#v`-like rendering of `spec.versions` (pointers and nested structs elided).
fn render_versions(spec: &Spec) -> String {
    let items: Vec<String> = spec
        .versions
        .iter()
        .map(|v| {
            format!(
                "apiextensions.CustomResourceDefinitionVersion{{Name:{}, Served:{}, Storage:{}, ...}}",
                q(&v.name),
                v.served,
                v.storage
            )
        })
        .collect();
    if items.is_empty() {
        "[]apiextensions.CustomResourceDefinitionVersion(nil)".into()
    } else {
        format!(
            "[]apiextensions.CustomResourceDefinitionVersion{{{}}}",
            items.join(", ")
        )
    }
}

fn validate_deprecation_warning(deprecated: bool, warning: Option<&str>) -> Vec<String> {
    let Some(w) = warning else {
        return Vec::new();
    };
    if !deprecated {
        return vec!["can only be set for deprecated versions".into()];
    }
    let mut errs = Vec::new();
    if w.len() > 256 {
        errs.push("must be <= 256 characters long".into());
    }
    if w.is_empty() {
        errs.push("must not be an empty string".into());
    }
    for (i, c) in w.char_indices() {
        if c.is_control() {
            errs.push(format!(
                "must only contain printable UTF-8 characters; control character found at index {i}"
            ));
            break;
        }
        if c != ' ' && c.is_whitespace() {
            errs.push(format!(
                "must only contain printable UTF-8 characters; non-printable character found at index {i}"
            ));
            break;
        }
    }
    errs
}

/// `validateCustomResourceDefinitionSpec` plus `status.storedVersions` and
/// `validatePreserveUnknownFields`.
pub(crate) fn validate_spec(
    spec: &Spec,
    flavor: Flavor,
    out: &mut Vec<Violation>,
    warnings: &mut Vec<String>,
) {
    let path = Path::new("spec");
    names::validate_group(&spec.group, out);
    enum_string(
        &path.child("scope"),
        &spec.scope,
        &["Cluster", "Namespaced"],
        out,
    );

    let puf = spec.preserve_unknown_fields;
    let puf_false = puf == Some(false);
    let mut opts = Opts::new(flavor);
    if puf_false {
        opts.require_structural = true;
    }
    let top_schema = spec
        .validation
        .as_ref()
        .and_then(|v| v.open_api_v3_schema.as_ref());
    let version_schemas = spec.versions.iter().filter_map(|v| {
        v.schema
            .as_ref()
            .and_then(|s| s.open_api_v3_schema.as_deref())
    });
    let all_schemas: Vec<&super::model::Schema> = top_schema
        .map(|b| &**b)
        .into_iter()
        .chain(version_schemas)
        .collect();

    if flavor == Flavor::V1 {
        if top_schema.is_none() {
            for (i, v) in spec.versions.iter().enumerate() {
                if v.schema
                    .as_ref()
                    .and_then(|s| s.open_api_v3_schema.as_ref())
                    .is_none()
                {
                    out.push(Violation::new(required(
                        &path
                            .child("versions")
                            .index(i)
                            .child("schema")
                            .child("openAPIV3Schema"),
                        "schemas are required",
                    )));
                }
            }
        }
    } else if puf_false && top_schema.is_none() {
        for (i, v) in spec.versions.iter().enumerate() {
            if v.served
                && v.schema
                    .as_ref()
                    .and_then(|s| s.open_api_v3_schema.as_ref())
                    .is_none()
            {
                out.push(Violation::new(required(
                    &path
                        .child("versions")
                        .index(i)
                        .child("schema")
                        .child("openAPIV3Schema"),
                    "because otherwise all fields are pruned",
                )));
            }
        }
    }
    let has_defaults = all_schemas.iter().any(|s| s.any(&|n| n.default.is_some()));
    if opts.allow_defaults && has_defaults {
        opts.require_structural = true;
        if puf != Some(false) {
            out.push(Violation::new(invalid(
                &path.child("preserveUnknownFields"),
                "true",
                "must be false in order to use defaults in the schema",
            )));
        }
    }
    let has_extensions = all_schemas.iter().any(|s| {
        s.any(&|n| {
            n.x_embedded_resource
                || n.x_preserve_unknown_fields.is_some()
                || n.x_int_or_string
                || !n.x_list_map_keys.is_empty()
                || n.x_list_type.is_some()
                || !n.x_validations.is_empty()
        })
    });
    if has_extensions {
        opts.require_structural = true;
    }

    let mut storage_count = 0;
    let mut seen = std::collections::HashSet::new();
    let mut unique = true;
    for (i, version) in spec.versions.iter().enumerate() {
        let vp = path.child("versions").index(i);
        if version.storage {
            storage_count += 1;
        }
        if !seen.insert(version.name.as_str()) {
            unique = false;
        }
        let errs = names::dns1035_label(&version.name);
        if !errs.is_empty() {
            out.push(Violation::new(invalid(
                &vp.child("name"),
                &q(&version.name),
                &errs.join(","),
            )));
        }
        let status_enabled = has_status(subresources_for(spec, &version.name));
        for e in
            validate_deprecation_warning(version.deprecated, version.deprecation_warning.as_deref())
        {
            out.push(Violation::new(invalid(
                &vp.child("deprecationWarning"),
                &q(version.deprecation_warning.as_deref().unwrap_or("")),
                &e,
            )));
        }
        validate_custom_resource_validation(
            version.schema.as_ref(),
            status_enabled,
            &opts,
            &vp.child("schema"),
            out,
            warnings,
        );
        if let Some(sub) = &version.subresources {
            validate_subresources(sub, &vp.child("subresources"), out);
        }
        for (j, col) in version.columns.iter().enumerate() {
            validate_column(
                col,
                &vp.child("additionalPrinterColumns").index(j),
                out,
                warnings,
            );
        }
        if !version.selectable_fields.is_empty() {
            match version.schema.as_ref().and_then(|s| s.open_api_v3_schema.as_deref()) {
                None => out.push(Violation::new(invalid(
                    &vp.child("selectableFields"),
                    "\"\"",
                    "selectableFields may only be set when version.schema.openAPIV3Schema is not included",
                ))),
                Some(schema) => {
                    validate_selectable_fields(&version.selectable_fields, schema, &vp.child("selectableFields"), out)
                }
            }
        }
    }

    if spec.validation.is_some() && spec.versions.iter().any(|v| v.schema.is_some()) {
        out.push(Violation::new(forbidden(
            &path.child("validation"),
            "top-level and per-version schemas are mutually exclusive",
        )));
    }
    if spec.subresources.is_some() && spec.versions.iter().any(|v| v.subresources.is_some()) {
        out.push(Violation::new(forbidden(
            &path.child("subresources"),
            "top-level and per-version subresources are mutually exclusive",
        )));
    }
    if !spec.columns.is_empty() && spec.versions.iter().any(|v| !v.columns.is_empty()) {
        out.push(Violation::new(forbidden(
            &path.child("additionalPrinterColumns"),
            "top-level and per-version additionalPrinterColumns are mutually exclusive",
        )));
    }
    if let Some(first) = spec.versions.first() {
        let versions = render_versions(spec);
        if first.schema.is_some()
            && spec
                .versions
                .iter()
                .all(|v| v.schema.is_some() && v.schema == first.schema)
        {
            out.push(Violation::new(invalid(&path.child("versions"), &versions, "per-version schemas may not all be set to identical values (top-level validation should be used instead)")));
        }
        if first.subresources.is_some()
            && spec
                .versions
                .iter()
                .all(|v| v.subresources.is_some() && v.subresources == first.subresources)
        {
            out.push(Violation::new(invalid(&path.child("versions"), &versions, "per-version subresources may not all be set to identical values (top-level subresources should be used instead)")));
        }
        if !first.columns.is_empty()
            && spec
                .versions
                .iter()
                .all(|v| !v.columns.is_empty() && v.columns == first.columns)
        {
            out.push(Violation::new(invalid(&path.child("versions"), &versions, "per-version additionalPrinterColumns may not all be set to identical values (top-level additionalPrinterColumns should be used instead)")));
        }
    }
    if !unique {
        out.push(Violation::new(invalid(
            &path.child("versions"),
            &render_versions(spec),
            "must contain unique version names",
        )));
    }
    if storage_count != 1 {
        out.push(Violation::new(invalid(
            &path.child("versions"),
            &render_versions(spec),
            "must have exactly one version marked as storage version",
        )));
    }
    if !spec.version.is_empty() {
        let errs = names::dns1035_label(&spec.version);
        if !errs.is_empty() {
            out.push(Violation::new(invalid(
                &path.child("version"),
                &q(&spec.version),
                &errs.join(","),
            )));
        }
        if spec
            .versions
            .first()
            .is_some_and(|v| v.name != spec.version)
        {
            out.push(Violation::new(invalid(
                &path.child("version"),
                &q(&spec.version),
                "must match the first version in spec.versions",
            )));
        }
    }

    names::validate_required_names(&spec.names, out);
    names::validate_names(&spec.names, out);
    let any_status = has_status(spec.subresources.as_ref())
        || spec
            .versions
            .iter()
            .any(|v| has_status(v.subresources.as_ref()));
    validate_custom_resource_validation(
        spec.validation.as_ref(),
        any_status,
        &opts,
        &path.child("validation"),
        out,
        warnings,
    );
    if let Some(sub) = &spec.subresources {
        validate_subresources(sub, &path.child("subresources"), out);
    }
    for (i, col) in spec.columns.iter().enumerate() {
        validate_column(
            col,
            &path.child("additionalPrinterColumns").index(i),
            out,
            warnings,
        );
    }
    if !spec.selectable_fields.is_empty() {
        match top_schema {
            None => out.push(Violation::new(invalid(
                &path.child("selectableFields"),
                "\"\"",
                "selectableFields may only be set when validations.schema is included",
            ))),
            Some(schema) => validate_selectable_fields(
                &spec.selectable_fields,
                schema,
                &path.child("selectableFields"),
                out,
            ),
        }
    }

    if let Some(c) = &spec.conversion {
        if c.strategy != "None" && puf != Some(false) {
            out.push(Violation::new(invalid(
                &path.child("conversion").child("strategy"),
                &q(&c.strategy),
                "must be None if spec.preserveUnknownFields is true",
            )));
        }
        validate_conversion(c, &path.child("conversion"), out);
    }

    // status.storedVersions, as PrepareForCreate fills it: the first storage version.
    let stored: Vec<String> = spec
        .versions
        .iter()
        .find(|v| v.storage)
        .map(|v| v.name.clone())
        .into_iter()
        .collect();
    let sv_path = Path::new("status").child("storedVersions");
    if stored.is_empty() {
        out.push(Violation::new(invalid(
            &sv_path,
            &go_string_slice(&stored),
            "must have at least one stored version",
        )));
    } else {
        for v in &spec.versions {
            if v.storage && !stored.contains(&v.name) {
                out.push(Violation::new(invalid(
                    &sv_path,
                    &go_string_slice(&stored),
                    &format!("must have the storage version {}", v.name),
                )));
            }
        }
    }

    if flavor == Flavor::V1 && puf == Some(true) {
        out.push(Violation::new(invalid(
            &path.child("preserveUnknownFields"),
            "true",
            "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead",
        )));
    }
}

const ACCEPTED_REVIEW_VERSIONS: &[&str] = &["v1", "v1beta1"];

fn validate_conversion(c: &Conversion, path: &Path, out: &mut Vec<Violation>) {
    enum_string(
        &path.child("strategy"),
        &c.strategy,
        &["None", "Webhook"],
        out,
    );
    if c.strategy == "Webhook" {
        match &c.webhook_client_config {
            None => out.push(Violation::new(required(
                &path.child("webhookClientConfig"),
                "required when strategy is set to Webhook",
            ))),
            Some(cc) => {
                let cp = path.child("webhookClientConfig");
                match (&cc.url, &cc.service) {
                    (Some(_), Some(_)) | (None, None) => out.push(Violation::new(required(
                        &cp,
                        "exactly one of url or service is required",
                    ))),
                    (Some(url), None) => validate_webhook_url(&cp.child("url"), url, out),
                    (None, Some(svc)) => {
                        // ValidateWebhookService(fldPath, namespace, name, ...) is called with
                        // (Name, Namespace): a missing name is reported as the namespace.
                        let sp = cp.child("service");
                        if svc.namespace.is_empty() {
                            out.push(Violation::new(required(&sp.child("name"), "")));
                        }
                        if svc.name.is_empty() {
                            out.push(Violation::new(required(&sp.child("namespace"), "")));
                        }
                        if !(1..=65535).contains(&svc.port) {
                            out.push(Violation::new(invalid(
                                &sp.child("port"),
                                &svc.port.to_string(),
                                "port is not valid: must be between 1 and 65535, inclusive",
                            )));
                        }
                        if let Some(p) = &svc.path {
                            validate_service_path(&sp.child("path"), p, out);
                        }
                    }
                }
            }
        }
        let rp = path.child("conversionReviewVersions");
        if c.conversion_review_versions.is_empty() {
            out.push(Violation::new(required(&rp, "")));
        } else {
            let mut seen = std::collections::HashSet::new();
            let mut accepted = false;
            for (i, v) in c.conversion_review_versions.iter().enumerate() {
                if !seen.insert(v.as_str()) {
                    out.push(Violation::new(invalid(
                        &rp.index(i),
                        &q(v),
                        "duplicate version",
                    )));
                    continue;
                }
                for e in names::dns1035_label(v) {
                    out.push(Violation::new(invalid(&rp.index(i), &q(v), &e)));
                }
                if ACCEPTED_REVIEW_VERSIONS.contains(&v.as_str()) {
                    accepted = true;
                }
            }
            if !accepted {
                out.push(Violation::new(invalid(
                    &rp,
                    &go_string_slice(&c.conversion_review_versions),
                    "must include at least one of v1, v1beta1",
                )));
            }
        }
    } else {
        if c.webhook_client_config.is_some() {
            out.push(Violation::new(forbidden(
                &path.child("webhookClientConfig"),
                "should not be set when strategy is not set to Webhook",
            )));
        }
        if !c.conversion_review_versions.is_empty() {
            out.push(Violation::new(forbidden(
                &path.child("conversionReviewVersions"),
                "should not be set when strategy is not set to Webhook",
            )));
        }
    }
}

/// `webhook.ValidateWebhookURL(path, url, forceHttps=true)`.
fn validate_webhook_url(path: &Path, url: &str, out: &mut Vec<Violation>) {
    const FORM: &str = "; desired format: https://host[/path]";
    let (scheme, rest) = match url.split_once("://") {
        Some((s, r))
            if !s.is_empty()
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')) =>
        {
            (s.to_ascii_lowercase(), r)
        }
        _ => (String::new(), url),
    };
    if scheme != "https" {
        out.push(Violation::new(invalid(
            path,
            &q(&scheme),
            &format!("'https' is the only allowed URL scheme{FORM}"),
        )));
    }
    let (before_fragment, fragment) = match rest.split_once('#') {
        Some((b, f)) => (b, f),
        None => (rest, ""),
    };
    let (before_query, query) = match before_fragment.split_once('?') {
        Some((b, q)) => (b, q),
        None => (before_fragment, ""),
    };
    let authority = if scheme.is_empty() {
        ""
    } else {
        before_query.split('/').next().unwrap_or("")
    };
    let (user, host) = match authority.rsplit_once('@') {
        Some((u, h)) => (Some(u), h),
        None => (None, authority),
    };
    if host.is_empty() {
        out.push(Violation::new(invalid(
            path,
            &q(host),
            &format!("host must be specified{FORM}"),
        )));
    }
    if let Some(u) = user {
        out.push(Violation::new(invalid(
            path,
            &q(u),
            "user information is not permitted in the URL",
        )));
    }
    if !fragment.is_empty() {
        out.push(Violation::new(invalid(
            path,
            &q(fragment),
            "fragments are not permitted in the URL",
        )));
    }
    if !query.is_empty() {
        out.push(Violation::new(invalid(
            path,
            &q(query),
            "query parameters are not permitted in the URL",
        )));
    }
}

fn validate_service_path(path: &Path, p: &str, out: &mut Vec<Violation>) {
    if p == "/" || p.is_empty() {
        return;
    }
    if p == "//" {
        out.push(Violation::new(invalid(
            path,
            &q(p),
            "segment[0] may not be empty",
        )));
        return;
    }
    if !p.starts_with('/') {
        out.push(Violation::new(invalid(
            path,
            &q(p),
            "must start with a '/'",
        )));
    }
    let to_check = p.get(1..).unwrap_or("");
    let to_check = to_check.strip_suffix('/').unwrap_or(to_check);
    for (i, step) in to_check.split('/').enumerate() {
        if step.is_empty() {
            out.push(Violation::new(invalid(
                path,
                &q(p),
                &format!("segment[{i}] may not be empty"),
            )));
            continue;
        }
        for e in names::dns1123_subdomain(step) {
            out.push(Violation::new(invalid(
                path,
                &q(p),
                &format!("segment[{i}]: {e}"),
            )));
        }
    }
}
