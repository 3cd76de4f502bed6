//! The format of `testdata/invalid-crds/`, the table of CRDs kube-apiserver refuses, shared by
//! the validator's, the generator's and the in-memory API server's tests: comment lines
//! `# expect: <field>: <message>` (one per cause that must appear, in `Cause` display form),
//! optionally `# structural: true` (only non-structural-schema violations, which `--lenient`
//! downgrades) and `# generated: true` (only violations in parts of the CRD the generated code
//! does not reflect, see `Violation::affects_generated_code`: the generator warns and generates
//! unless `--strict`), then one CRD document.

/// The case files of `dir` (`*.yaml`), sorted.
pub fn case_files(dir: &std::path::Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        if path.extension().is_some_and(|e| e == "yaml") {
            files.push(path);
        }
    }
    files.sort();
    Ok(files)
}

/// What a case file says must happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidCase {
    pub expect: Vec<String>,
    pub structural: bool,
    /// `# generated: true`: no violation touches the generated code.
    pub generated: bool,
}

/// Reads the header comments of a case file.
pub fn parse_invalid_case(text: &str) -> InvalidCase {
    let mut case = InvalidCase {
        expect: Vec::new(),
        structural: false,
        generated: false,
    };
    for line in text.lines().take_while(|l| l.starts_with('#')) {
        if let Some(e) = line.strip_prefix("# expect:") {
            case.expect.push(unescape(e.trim()));
        } else if line.trim() == "# structural: true" {
            case.structural = true;
        } else if line.trim() == "# generated: true" {
            case.generated = true;
        }
    }
    case
}

/// An expectation is one line: a backslash followed by `n` stands for a line break (CEL
/// compile errors span lines, as the server prints them), two backslashes followed by `n` for
/// a literal backslash and `n`; every other character is itself.
pub fn unescape(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut rest = line;
    while let Some(i) = rest.find('\\') {
        out.push_str(&rest[..i]);
        let after = &rest[i..];
        if let Some(r) = after.strip_prefix("\\\\n") {
            out.push_str("\\n");
            rest = r;
        } else if let Some(r) = after.strip_prefix("\\n") {
            out.push('\n');
            rest = r;
        } else {
            out.push('\\');
            rest = &after[1..];
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escapes_and_header() {
        assert_eq!(unescape("a\\nb"), "a\nb");
        assert_eq!(unescape("a\\\\nb"), "a\\nb");
        assert_eq!(unescape("a\\b"), "a\\b");
        let case = parse_invalid_case(
            "# expect: spec.x: Required value\n# structural: true\n# expect: a\\nb\napiVersion: v1\n# expect: not a header\n",
        );
        assert_eq!(case.expect, ["spec.x: Required value", "a\nb"]);
        assert!(case.structural);
        assert!(!case.generated);
        assert!(parse_invalid_case("# expect: a: b\n# generated: true\nkind: x\n").generated);
    }
}
