//! CRDs whose rules select a field named like a CEL keyword, against what kube-apiserver 1.35
//! did with 42 one-rule CRDs (a boolean property named after each keyword, the rule
//! `!has(self.X) || self.X`, directly and escaped): it created every escaped one and the direct
//! ones but `in`, `true`, `false` and `null`, which cel-go's lexer makes tokens of.

use kube_codegen_crd::validate::validate_crd;
use serde_json::{Value, json};

/// The 21 words of `celReservedSymbols` (k8s.io/apiserver/pkg/cel/escaping.go).
use kube_codegen_crd::cel_words::RESERVED as KEYWORDS;

fn crd(props: Value, rule: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "keywords.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "keywords", "singular": "keyword", "kind": "Keyword"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {
                        "type": "object",
                        "properties": props,
                        "x-kubernetes-validations": [{"rule": rule}]
                    }
                }}}
            }]
        }
    })
}

/// The cause of a rule on `spec` that does not compile.
fn compile_error(rule: &str, errors: &str) -> String {
    format!(
        "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:\"{rule}\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: compilation failed: {errors}"
    )
}

fn causes(doc: &Value) -> Vec<String> {
    validate_crd(doc)
        .violations
        .iter()
        .map(|v| v.cause.to_string())
        .collect()
}

/// The server's compile errors for `!has(self.X) || self.X` with X lexed as a token: ANTLR's
/// errors after recovering, the `has()` left without a selection, sorted by position.
fn token_keyword_errors(kw: &str) -> String {
    let rule = format!("!has(self.{kw}) || self.{kw}");
    let at = |col: usize, msg: &str| {
        format!(
            "ERROR: <input>:1:{col}: {msg}\n | {rule}\n | {}^",
            ".".repeat(col - 1)
        )
    };
    // The second selection's word, 0-based: `!has(self.` + word + `) || self.`.
    let second = 20 + kw.len();
    let mut errors = vec![at(6, "invalid argument to has() macro")];
    if kw == "in" {
        let operand = "{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}";
        errors.push(at(11, "Syntax error: no viable alternative at input '.in'"));
        errors.push(at(
            13,
            &format!("Syntax error: mismatched input ')' expecting {operand}"),
        ));
        errors.push(at(
            second + 1,
            "Syntax error: no viable alternative at input '.in'",
        ));
        errors.push(at(
            rule.len() + 1,
            &format!("Syntax error: mismatched input '<EOF>' expecting {operand}"),
        ));
    } else {
        // cel-go rewords `no viable alternative at input '.true'` (`reservedIdentifier`).
        let msg = format!("Syntax error: mismatched input '{kw}' expecting IDENTIFIER");
        errors.push(at(11, &msg));
        errors.push(at(second + 1, &msg));
    }
    errors.join("\n")
}

#[test]
fn keyword_properties_selected_directly_and_escaped() {
    let mut wrong = Vec::new();
    for &kw in KEYWORDS {
        let props = json!({kw: {"type": "boolean"}});
        let escaped = format!("!has(self.__{kw}__) || self.__{kw}__");
        let direct = format!("!has(self.{kw}) || self.{kw}");
        let expected: Vec<String> = if ["in", "true", "false", "null"].contains(&kw) {
            vec![compile_error(&direct, &token_keyword_errors(kw))]
        } else {
            Vec::new()
        };
        for (rule, expected) in [(escaped, Vec::new()), (direct, expected)] {
            let got = causes(&crd(props.clone(), &rule));
            if got != expected {
                wrong.push(format!(
                    "{rule}\n  got: {got:#?}\n  expected: {expected:#?}"
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

/// cilium/tetragon's TracingPolicy rule is created; the type check still knows what the
/// escaped name does not declare (the root's `metadata` has only `name` and `generateName`).
#[test]
fn tracing_policy_rule_compiles_and_undeclared_keywords_stay_undefined() {
    let kprobes = json!({"kprobes": {"type": "array", "items": {
        "type": "object",
        "properties": {
            "call": {"type": "string"},
            "return": {"type": "boolean"},
            "returnArg": {"type": "object", "properties": {"index": {"type": "integer"}}}
        },
        "x-kubernetes-validations": [{
            "rule": "!has(self.return) || (!self.return || has(self.returnArg))",
            "message": "ReturnArg not specified with Return=true."
        }]
    }}});
    assert_eq!(causes(&crd(kprobes, "true")), Vec::<String>::new());

    let props = json!({"name": {"type": "string"}});
    let rule = "has(self.namespace)";
    let undefined =
        "ERROR: <input>:1:9: undefined field 'namespace'\n | has(self.namespace)\n | ........^";
    assert_eq!(
        causes(&crd(props.clone(), rule)),
        [compile_error(rule, undefined)]
    );
    // A wrong type behind the keyword is still found: the field is typed.
    let rule = "self.return == 1";
    let got = causes(&crd(json!({"return": {"type": "boolean"}}), rule));
    assert_eq!(got.len(), 1, "{got:?}");
    assert!(
        got[0].contains("found no matching overload for '_==_' applied to '(bool, int)'"),
        "{got:?}"
    );
}

/// The server's size estimator walks a rule's path by the names as written and its declarations
/// hold the escaped names, so a keyword selected directly has no size bound: a regex over
/// `self.namespace` is estimated unbounded, over `self.__namespace__` by its `maxLength`.
#[test]
fn keyword_selected_directly_loses_its_size_bound() {
    let props = json!({"namespace": {"type": "string", "maxLength": 10}});
    assert_eq!(
        causes(&crd(
            props.clone(),
            "self.__namespace__.matches('^[a-z]+$')"
        )),
        Vec::<String>::new()
    );
    let rule = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule";
    let hint = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";
    assert_eq!(
        causes(&crd(props.clone(), "self.namespace.matches('^[a-z]+$')")),
        [
            format!(
                "{rule}: Forbidden: estimated rule cost exceeds budget by factor of more than 100x {hint}"
            ),
            format!(
                "{rule}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
            ),
            format!(
                "spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x {hint}"
            ),
        ]
    );
    // Scalars are sized one either way, so the measured boolean rules are within budget.
    let props = json!({"namespace": {"type": "boolean"}});
    assert_eq!(
        causes(&crd(props, "!has(self.namespace) || self.namespace")),
        Vec::<String>::new()
    );
}
