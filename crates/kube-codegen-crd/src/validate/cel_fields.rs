//! The one part of CEL type checking done here: a field selected from `self` (or `oldSelf`, or a
//! chain from them) that the schema does not declare is `undefined field 'x'`, as cel-go's
//! checker reports it when kube-apiserver compiles the rule. Only declared object types are
//! strict; maps, `x-kubernetes-preserve-unknown-fields`, int-or-string and everything whose
//! type is not known here are taken as dynamic, so a valid rule is never refused.
use kube_cel::cel::common::ast::{EntryExpr, Expr, IdedEntryExpr};
use kube_cel::cel::parser::Expression;

use super::cel_syntax;
use super::model::Schema;
use crate::object::cel::{escape, syntax_tree};

/// What a CEL value is known to be.
#[derive(Clone, Copy)]
enum Ty<'a> {
    /// An object of declared properties (`root`: also apiVersion, kind and a limited metadata).
    Object { s: &'a Schema, root: bool },
    /// `metadata` at the root or of an embedded resource: only `name` and `generateName`.
    Meta,
    /// Anything else: no field is checked.
    Dyn,
}

fn type_of_schema(s: &Schema, root: bool) -> Ty<'_> {
    let embedded = root || s.x_embedded_resource;
    let object = s.type_ == "object" || (s.type_.is_empty() && embedded);
    if s.x_int_or_string
        || s.preserves_unknown()
        || !object
        || s.additional_properties.is_some()
        || !s.all_of.is_empty()
        || !s.any_of.is_empty()
        || !s.one_of.is_empty()
    {
        return Ty::Dyn;
    }
    if s.properties.is_empty() && !embedded {
        return Ty::Dyn;
    }
    Ty::Object { s, root: embedded }
}

/// The type of field `name` (as CEL spells it) of a `ty`; `None`: undefined.
fn field<'a>(ty: Ty<'a>, name: &str) -> Option<Ty<'a>> {
    match ty {
        Ty::Dyn => Some(Ty::Dyn),
        Ty::Meta => ["name", "generateName"].contains(&name).then_some(Ty::Dyn),
        Ty::Object { s, root } => {
            if root && name == "metadata" {
                return Some(Ty::Meta);
            }
            if root && (name == "apiVersion" || name == "kind") {
                return Some(Ty::Dyn);
            }
            s.properties
                .iter()
                .find(|(k, _)| escape(k).as_deref() == Some(name))
                .map(|(_, p)| type_of_schema(p, false))
        }
    }
}

/// `Some(cel-go's error)` when `source` selects a field its schema `s` does not declare.
pub(crate) fn undefined_field(source: &str, s: &Schema, is_root: bool) -> Option<String> {
    let tree = syntax_tree(source)?;
    let this = type_of_schema(s, is_root);
    let mut env: Vec<(String, Ty<'_>)> = vec![("self".into(), this), ("oldSelf".into(), this)];
    let mut undefined = Vec::new();
    walk(&tree, &mut env, &mut undefined, 0);
    let name = undefined.first()?;
    let offset = select_offset(source, name).unwrap_or(0);
    Some(cel_syntax::render_at(
        source,
        offset,
        &format!("undefined field '{name}'"),
    ))
}

/// Bounds the walk like the parser bounds nesting.
const MAX_DEPTH: usize = 2_000;

fn walk<'a>(e: &Expression, env: &mut Vec<(String, Ty<'a>)>, out: &mut Vec<String>, depth: usize) {
    let _ = type_of(e, env, out, depth);
}

fn type_of<'a>(
    e: &Expression,
    env: &mut Vec<(String, Ty<'a>)>,
    out: &mut Vec<String>,
    depth: usize,
) -> Ty<'a> {
    if depth > MAX_DEPTH {
        return Ty::Dyn;
    }
    match &e.expr {
        Expr::Ident(name) => env
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map_or(Ty::Dyn, |(_, t)| *t),
        Expr::Select(sel) => {
            let operand = type_of(&sel.operand, env, out, depth + 1);
            match field(operand, &sel.field) {
                Some(t) => t,
                None => {
                    out.push(sel.field.clone());
                    Ty::Dyn
                }
            }
        }
        Expr::Call(call) => {
            if let Some(t) = &call.target {
                walk(t, env, out, depth + 1);
            }
            for a in &call.args {
                walk(a, env, out, depth + 1);
            }
            Ty::Dyn
        }
        Expr::Comprehension(c) => {
            walk(&c.iter_range, env, out, depth + 1);
            walk(&c.accu_init, env, out, depth + 1);
            // The loop's variables shadow any outer name; their types are not tracked.
            let mark = env.len();
            env.push((c.iter_var.clone(), Ty::Dyn));
            if let Some(v2) = &c.iter_var2 {
                env.push((v2.clone(), Ty::Dyn));
            }
            env.push((c.accu_var.clone(), Ty::Dyn));
            for part in [&c.loop_cond, &c.loop_step, &c.result] {
                walk(part, env, out, depth + 1);
            }
            env.truncate(mark);
            Ty::Dyn
        }
        Expr::List(l) => {
            for x in &l.elements {
                walk(x, env, out, depth + 1);
            }
            Ty::Dyn
        }
        Expr::Map(m) => {
            for entry in &m.entries {
                walk_entry(entry, env, out, depth + 1);
            }
            Ty::Dyn
        }
        _ => Ty::Dyn,
    }
}

fn walk_entry<'a>(
    entry: &IdedEntryExpr,
    env: &mut Vec<(String, Ty<'a>)>,
    out: &mut Vec<String>,
    depth: usize,
) {
    match &entry.expr {
        EntryExpr::MapEntry(m) => {
            walk(&m.key, env, out, depth);
            walk(&m.value, env, out, depth);
        }
        EntryExpr::StructField(f) => walk(&f.value, env, out, depth),
    }
}

/// Byte offset of the `.` before the first selection of `name` in `source` (where cel-go puts
/// the error), skipping string literals.
fn select_offset(source: &str, name: &str) -> Option<usize> {
    let b = source.as_bytes();
    let mut i = 0;
    let mut quote: Option<u8> = None;
    while i < b.len() {
        let c = b[i];
        match quote {
            Some(q) => {
                if c == b'\\' {
                    i += 1;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == b'\'' || c == b'"' => quote = Some(c),
            None if c == b'.' => {
                let mut j = i + 1;
                while j < b.len() && (b[j] == b' ' || b[j] == b'?') {
                    j += 1;
                }
                let end = j + name.len();
                if source.get(j..end) == Some(name)
                    && !b
                        .get(end)
                        .is_some_and(|x| x.is_ascii_alphanumeric() || *x == b'_')
                {
                    return Some(i);
                }
            }
            None => {}
        }
        i += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use crate::validate::validate_crd;
    use serde_json::{Value, json};

    fn crd(spec_schema: Value, root_rules: Value) -> Value {
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema": {
                    "type": "object", "x-kubernetes-validations": root_rules,
                    "properties": {"spec": spec_schema}}}}]}
        })
    }

    fn messages(c: &Value) -> Vec<String> {
        validate_crd(c)
            .violations
            .into_iter()
            .map(|v| v.cause.to_string())
            .collect()
    }

    #[test]
    fn an_undeclared_field_is_the_servers_compile_error() {
        let c = crd(
            json!({"type": "object", "properties": {"replicas": {"type": "integer"}},
                "x-kubernetes-validations": [{"rule": "self.replicas > 0 && self.replica < 9"}]}),
            json!([]),
        );
        let m = messages(&c);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(
            m[0].starts_with("spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule: Invalid value: apiextensions.ValidationRule{Rule:\"self.replicas > 0 && self.replica < 9\""),
            "{}",
            m[0]
        );
        assert!(
            m[0].ends_with(": compilation failed: ERROR: <input>:1:26: undefined field 'replica'\n | self.replicas > 0 && self.replica < 9\n | .........................^"),
            "{}",
            m[0]
        );
    }

    #[test]
    fn root_metadata_has_only_name_and_generate_name() {
        let ok = crd(
            json!({"type": "object"}),
            json!([{"rule": "self.metadata.name.size() < 20 && has(self.metadata.generateName)"}]),
        );
        assert_eq!(messages(&ok), Vec::<String>::new());
        let bad = crd(
            json!({"type": "object"}),
            json!([{"rule": "true", "messageExpression": "'x' + self.metadata.namespace"}]),
        );
        let m = messages(&bad);
        assert_eq!(m.len(), 1, "{m:?}");
        assert!(m[0].contains("messageExpression compilation failed: ERROR: <input>:1:20: undefined field 'namespace'"), "{}", m[0]);
    }

    #[test]
    fn maps_unknown_fields_escapes_and_loop_variables_are_not_refused() {
        let c = crd(
            json!({"type": "object",
            "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
                "ios": {"x-kubernetes-int-or-string": true},
                "foo-bar": {"type": "string"},
                "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}}
            },
            "x-kubernetes-validations": [
                {"rule": "self.labels.anything == 'x' || self.free.whatever.deeper == 1 || self.foo__dash__bar == ''"},
                {"rule": "self.items.all(self, self.zzz == 1)"},
                {"rule": "'self.nope' != '' && self.?foo__dash__bar.orValue('') == ''"}
            ]}),
            json!([]),
        );
        assert_eq!(messages(&c), Vec::<String>::new());
    }
}
