//! Structural dedupe of nested types within one CRD version, and `Default` derivability.

use std::collections::HashMap;

use super::{Field, Presence, Ty, TypeBody, TypeDef};

fn canon(ty: &Ty, class: &[usize]) -> Ty {
    match ty {
        Ty::Named(i) => Ty::Named(class[*i]),
        Ty::Vec(t) => Ty::Vec(Box::new(canon(t, class))),
        Ty::Map(t) => Ty::Map(Box::new(canon(t, class))),
        Ty::Option(t) => Ty::Option(Box::new(canon(t, class))),
        other => other.clone(),
    }
}

fn canon_body(body: &TypeBody, class: &[usize]) -> TypeBody {
    match body {
        TypeBody::Struct { fields, flatten } => TypeBody::Struct {
            fields: fields
                .iter()
                .map(|f| Field {
                    ty: canon(&f.ty, class),
                    // Field docs don't split types: the same shape described in two places with
                    // slightly different words is still one type (halves compile time on big CRDs).
                    docs: Vec::new(),
                    ..f.clone()
                })
                .collect(),
            flatten: flatten.as_ref().map(|(n, t)| (n.clone(), canon(t, class))),
        },
        TypeBody::Untagged { variants } => TypeBody::Untagged {
            variants: variants
                .iter()
                .map(|(n, t)| (n.clone(), canon(t, class)))
                .collect(),
        },
        other => other.clone(),
    }
}

/// Marks structurally identical types (same field names, wire names, types, presence, variants;
/// descriptions aside) as aliases of one representative: the one whose name sorts first. Children always
/// precede parents in `types` (post-order), which makes one forward pass enough.
pub fn dedupe(types: &mut [TypeDef]) {
    let mut class = Vec::with_capacity(types.len());
    let mut by_body: HashMap<TypeBody, usize> = HashMap::new();
    let mut rep: Vec<usize> = Vec::new();
    for (i, t) in types.iter().enumerate() {
        let key = canon_body(&t.body, &class);
        let next = by_body.len();
        let c = *by_body.entry(key).or_insert(next);
        if c == rep.len() {
            rep.push(i);
        } else if t.name < types[rep[c]].name {
            rep[c] = i;
        }
        class.push(c);
    }
    for i in 0..types.len() {
        let r = rep[class[i]];
        if r != i {
            types[i].alias_of = Some(r);
        }
    }
}

/// Whether `ty`'s `Default` value is what an absent field means (numbers have no agreed zero).
pub(crate) fn ty_default(ty: &Ty, types: &[TypeDef]) -> bool {
    match ty {
        Ty::Number => false,
        Ty::Known(k) => k.has_default(),
        // Children precede parents, and an alias has its representative's body: its own flag is
        // already final.
        Ty::Named(i) => types[*i].default,
        Ty::Vec(_) | Ty::Map(_) | Ty::Option(_) => true,
        _ => true,
    }
}

fn fields_default(fields: &[Field], types: &[TypeDef]) -> bool {
    fields
        .iter()
        .all(|f| f.presence != Presence::Required || ty_default(&f.ty, types))
}

/// Decides `Default` for every type (children first) and returns it for the root.
pub fn compute_defaults(
    types: &mut [TypeDef],
    root_fields: &[Field],
    _root_flatten: &Option<(String, Ty)>,
) -> bool {
    for i in 0..types.len() {
        let d = match &types[i].body {
            TypeBody::Struct { fields, .. } => fields_default(fields, types),
            TypeBody::StringEnum { default, .. } => default.is_some(),
            TypeBody::IntEnum { default, .. } => default.is_some(),
            TypeBody::Untagged { .. } => false,
        };
        types[i].default = d;
    }
    fields_default(root_fields, types)
}
