//! CEL's reserved words and identifiers, as Kubernetes' CEL libraries define them: one list for
//! the property-name escaping (`celReservedSymbols` in k8s.io/apiserver/pkg/cel/escaping.go),
//! cel-go's parser (`reservedIds`) and the admission policies' variable names
//! (`isCELIdentifier`), which all name the same words.

/// The reserved words.
pub const RESERVED: &[&str] = &[
    "true",
    "false",
    "null",
    "in",
    "as",
    "break",
    "const",
    "continue",
    "else",
    "for",
    "function",
    "if",
    "import",
    "let",
    "loop",
    "package",
    "namespace",
    "return",
    "var",
    "void",
    "while",
];

/// CEL's `IDENT` less the reserved words (`isCELIdentifier` in the admissionregistration
/// validation).
pub fn is_identifier(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|c| c == '_' || c.is_ascii_alphabetic())
        && chars.all(|c| c == '_' || c.is_ascii_alphanumeric())
        && !RESERVED.contains(&name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers() {
        for ok in ["a", "_x", "replicas2", "__in__"] {
            assert!(is_identifier(ok), "{ok}");
        }
        for bad in ["", "2x", "a-b", "a.b", "in", "return", "é"] {
            assert!(!is_identifier(bad), "{bad}");
        }
    }
}
