//! The name and value checks of apimachinery's `pkg/util/validation` with their exact messages,
//! shared by the CRD validator and the in-memory server (object names, label keys and values).

const DNS1123_LABEL_MSG: &str = "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')";
const DNS1123_SUBDOMAIN_MSG: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
const DNS1035_LABEL_MSG: &str = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')";
const QUALIFIED_NAME_MSG: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
const LABEL_VALUE_MSG: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";

/// `MaxLenError`.
pub fn max_len(n: usize) -> String {
    format!("must be no more than {n} characters")
}

fn dns1123_label_ok(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-')
        && b[0] != b'-'
        && b[b.len() - 1] != b'-'
}

/// `IsDNS1123Label`.
pub fn dns1123_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len(63));
    }
    if !dns1123_label_ok(s) {
        errs.push(DNS1123_LABEL_MSG.into());
    }
    errs
}

/// `IsDNS1123Subdomain`.
pub fn dns1123_subdomain(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len(253));
    }
    if !s.split('.').all(dns1123_label_ok) {
        errs.push(DNS1123_SUBDOMAIN_MSG.into());
    }
    errs
}

/// `IsDNS1035Label`.
pub fn dns1035_label(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len(63));
    }
    if !(dns1123_label_ok(s) && s.as_bytes()[0].is_ascii_lowercase()) {
        errs.push(DNS1035_LABEL_MSG.into());
    }
    errs
}

fn qualified_name_part_ok(s: &str) -> bool {
    let b = s.as_bytes();
    !b.is_empty()
        && b[0].is_ascii_alphanumeric()
        && b[b.len() - 1].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

/// `IsQualifiedName` (label and annotation keys): an empty name part gets both the emptiness
/// and the pattern message, as Go's does.
pub fn qualified_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    let parts: Vec<&str> = s.split('/').collect();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain(prefix)
                        .into_iter()
                        .map(|m| format!("prefix part {m}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a qualified name {QUALIFIED_NAME_MSG} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push(format!("name part {}", max_len(63)));
    }
    if !qualified_name_part_ok(name) {
        errs.push(format!("name part {QUALIFIED_NAME_MSG}"));
    }
    errs
}

/// `IsValidLabelValue`.
pub fn label_value(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 63 {
        errs.push(max_len(63));
    }
    if !s.is_empty() && !qualified_name_part_ok(s) {
        errs.push(LABEL_VALUE_MSG.to_string());
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_as_apimachinery_checks_them() {
        assert!(dns1123_label("my-name").is_empty());
        assert_eq!(dns1123_label("Bad_Name"), [DNS1123_LABEL_MSG]);
        assert!(dns1123_subdomain("a.example.com").is_empty());
        assert_eq!(dns1123_subdomain("a..b"), [DNS1123_SUBDOMAIN_MSG]);
        assert_eq!(dns1035_label("1abc"), [DNS1035_LABEL_MSG]);
        assert_eq!(dns1035_label(&"a".repeat(64)), [max_len(63)]);
        assert!(qualified_name("app.kubernetes.io/name").is_empty());
        assert_eq!(qualified_name("a/b/c").len(), 1);
        assert_eq!(
            qualified_name("example.com/"),
            [
                "name part must be non-empty".to_string(),
                format!("name part {QUALIFIED_NAME_MSG}")
            ]
        );
        assert_eq!(
            qualified_name("Bad_/x"),
            [format!("prefix part {DNS1123_SUBDOMAIN_MSG}")]
        );
        assert!(label_value("").is_empty());
        assert_eq!(label_value("-x"), [LABEL_VALUE_MSG]);
    }
}
