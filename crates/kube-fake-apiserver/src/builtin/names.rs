//! The name checks of `k8s.io/apimachinery/pkg/util/validation` with their messages (label
//! keys and values reuse `selector`'s, which the label-selector parser shares).
pub(crate) use crate::selector::{label_value_errors, qualified_name_errors};

pub use kube_codegen_crd::k8s_validation::{
    dns1035_label, dns1123_label, dns1123_subdomain, max_len,
};

/// `path.IsValidPathSegmentName` (RBAC object names).
pub fn path_segment(s: &str) -> Vec<String> {
    for bad in [".", ".."] {
        if s == bad {
            return vec![format!("may not be '{bad}'")];
        }
    }
    ["/", "%"]
        .iter()
        .filter(|c| s.contains(**c))
        .map(|c| format!("may not contain '{c}'"))
        .collect()
}

/// `IsValidPortName` (container and service port names).
pub fn port_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 15 {
        errs.push(max_len(15));
    }
    let charset = !s.is_empty()
        && s.bytes()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-');
    if !charset {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    } else if !s.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if s.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if s.starts_with('-') || s.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

/// `IsRelaxedEnvVarName` (`RelaxedEnvironmentVariableValidation` is GA in 1.34).
pub fn env_var_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.is_empty() {
        errs.push("environment variable name must be non-empty".into());
    }
    if s.chars()
        .any(|c| (c as u32) > 127 || (c as u32) < 32 || c == '=')
    {
        errs.push("a valid environment variable name must consist only of printable ASCII characters other than '='".into());
    }
    errs
}

/// `IsValidPortNum`.
pub fn port_num(n: i64) -> Vec<String> {
    if (1..=65535).contains(&n) {
        Vec::new()
    } else {
        vec!["must be between 1 and 65535, inclusive".into()]
    }
}

/// How an object's name is checked (`ValidateObjectMeta`'s name function).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    Subdomain,
    Dns1123Label,
    Dns1035Label,
    PathSegment,
}

impl NameRule {
    /// The messages for `name`; `prefix`: a generateName, whose trailing dash is masked.
    pub fn check(self, name: &str, prefix: bool) -> Vec<String> {
        let name = if prefix && self != NameRule::PathSegment {
            mask_trailing_dash(name)
        } else {
            name.to_string()
        };
        match self {
            NameRule::Subdomain => dns1123_subdomain(&name),
            NameRule::Dns1123Label => dns1123_label(&name),
            NameRule::Dns1035Label => dns1035_label(&name),
            NameRule::PathSegment => path_segment(&name),
        }
    }
}

/// `maskTrailingDash`: `abc-` is checked as `abc`, `-` stays.
fn mask_trailing_dash(s: &str) -> String {
    if s.len() > 1 && s.ends_with('-') {
        format!("{}a", &s[..s.len() - 1])
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert!(dns1123_label("abc-1").is_empty());
        assert_eq!(dns1123_label("Bad_Name").len(), 1);
        assert!(dns1035_label("1abc").len() == 1);
        assert!(dns1123_subdomain("a.b-c").is_empty());
        assert_eq!(
            path_segment("a/b%"),
            vec!["may not contain '/'", "may not contain '%'"]
        );
        assert_eq!(
            port_name("123"),
            vec!["must contain at least one letter (a-z)"]
        );
        assert!(port_name("http").is_empty());
        assert!(NameRule::Subdomain.check("abc-", true).is_empty());
    }
}
