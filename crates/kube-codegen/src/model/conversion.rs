//! Conversions between the versions of one kind, planned once per group (conversion-gen's job):
//! which kinds get them, the names of their public items and hooks, and, per spoke, the
//! automatic functions pairing the spoke's types with the hub's (the storage version) by JSON
//! name and shape. `emit::conversion` only prints the plan.
//!
//! Pairing starts at the two root types and follows fields with the same JSON name: a field
//! whose shapes are compatible (the same scalar, or lists, maps and options of compatible
//! shapes, or two structs, two string enums, two integer enums, two untagged enums with the
//! same variants) is converted by generated code, recursively; every other field (only in one
//! of the two versions, or retyped) is a hook named after its path. A retyped field's automatic
//! conversion still tries the value's JSON as the other type (an `int32` that became `int64`,
//! an enum that became a string); a field only in one version gets the zero value (`None`
//! when optional). What no conversion carries over travels in an annotation (see the runtime's
//! `conversion::hub`), so round trips lose nothing.

use std::collections::{BTreeMap, BTreeSet};

use super::naming::{self, assign_unique};
use super::{Field, GroupMod, Presence, Resource, Ty, TypeBody, TypeDef};

/// The module holding a group's conversions, unless a version module took the name.
const MODULE: &str = "conversion";

/// A group's conversions: one entry per kind that has more than one generated version and
/// whose storage version is among them.
#[derive(Debug, Clone, Default)]
pub struct GroupConversions {
    /// The module name in the group (`conversion`).
    pub module: String,
    pub kinds: Vec<KindConv>,
}

/// Where a resource is in its group: (index in `GroupMod::versions`, index in its resources).
pub type ResRef = (usize, usize);

#[derive(Debug, Clone)]
pub struct KindConv {
    pub kind: String,
    pub group: String,
    /// Every version, the hub (storage) first, then the others by module name.
    pub versions: Vec<VersionRef>,
    /// `FooConversion`.
    pub conversion: String,
    /// `FooHooks`.
    pub hooks: String,
    /// `DefaultFooHooks`.
    pub default_hooks: String,
    /// `AnyFoo`.
    pub any: String,
    /// Private module of the automatic functions (`foo`).
    pub module: String,
    /// One per version after the hub.
    pub spokes: Vec<SpokeConv>,
    /// Whether a version involved is deprecated (items get `#[allow(deprecated)]`).
    pub deprecated: bool,
}

#[derive(Debug, Clone)]
pub struct VersionRef {
    pub res: ResRef,
    /// The version (`v1alpha1`).
    pub version: String,
    /// The root type's name.
    pub root: String,
    /// `AnyFoo`'s variant (`V1alpha1`).
    pub variant: String,
    /// The version in method and function names (`v1alpha1`): snake case, unique in the kind
    /// (`v1-beta1` and `v1beta1` may meet).
    pub prefix: String,
}

#[derive(Debug, Clone)]
pub struct SpokeConv {
    /// Index into `KindConv::versions`.
    pub version: usize,
    /// Automatic functions spoke -> hub; the first converts the root types.
    pub to_hub: Vec<PairFn>,
    /// Automatic functions hub -> spoke; the first converts the root types.
    pub from_hub: Vec<PairFn>,
    /// Fields that do not map, by path (sorted), each with its two hook methods.
    pub hooks: Vec<Hook>,
    /// Whole-object hooks called after the field hooks (`v1alpha1_to_hub`, `v1alpha1_from_hub`).
    pub object_to_hub: String,
    pub object_from_hub: String,
}

#[derive(Debug, Clone)]
pub struct Hook {
    /// JSON path (`spec.deploymentName`, `spec.items[].port`, `spec.labels{}.x`).
    pub path: String,
    pub why: HookWhy,
    pub to_hub: String,
    pub from_hub: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HookWhy {
    /// Only the spoke has the field.
    SpokeOnly,
    /// Only the hub has the field.
    HubOnly,
    /// Both have it, with shapes that do not map.
    Retyped,
}

/// One automatic function: `fn name(from: &From) -> To`.
#[derive(Debug, Clone)]
pub struct PairFn {
    pub name: String,
    pub from: ResRef,
    pub to: ResRef,
    /// Type indices in the two resources (`None`: the root types).
    pub from_ty: Option<usize>,
    pub to_ty: Option<usize>,
    pub body: PairBody,
}

#[derive(Debug, Clone)]
pub enum PairBody {
    Struct {
        fields: Vec<FieldPlan>,
        /// The target's `#[serde(flatten)]` map: (target ident, how).
        flatten: Option<(String, FlattenHow)>,
    },
    /// String enums, by wire value: (from variant, Some(to variant) or None: `Other(wire)`),
    /// the from type's `Other` ident, the to type's `Other` ident, and the to variants whose
    /// wire the from type lacks (matched inside `Other`).
    StringEnum {
        arms: Vec<(String, String, Option<String>)>,
        from_other: String,
        to_other: String,
        extra: Vec<(String, String)>,
    },
    /// Untagged enums with the same variants: (variant, conversion, boxed).
    Untagged { arms: Vec<(String, Conv, bool)> },
}

#[derive(Debug, Clone)]
pub enum FlattenHow {
    Mapped { from_ident: String, conv: Conv },
    Empty,
}

#[derive(Debug, Clone)]
pub struct FieldPlan {
    pub to_ident: String,
    pub how: FieldHow,
}

#[derive(Debug, Clone)]
pub enum FieldHow {
    /// Compatible shapes.
    Mapped {
        from_ident: String,
        conv: Conv,
        from: Presence,
        to: Presence,
        /// The value is `Copy` (`bool`, integers and options of them) and converts as is.
        copy: bool,
        to_ty: Ty,
    },
    /// Retyped: the source's JSON read as the target type, else the zero value.
    Recode {
        from_ident: String,
        to: Presence,
        to_ty: Ty,
    },
    /// Only in the target: the zero value.
    Zero { to: Presence, to_ty: Ty },
}

/// How a value of a compatible shape converts.
#[derive(Debug, Clone)]
pub enum Conv {
    /// Same Rust type: cloned (copied for `Copy` scalars).
    Clone,
    Vec(Box<Conv>),
    Map(Box<Conv>),
    Option(Box<Conv>),
    /// An automatic function (struct, string enum or untagged enum pair).
    Fn(String),
    /// Integer enum newtype: `To(from.0)`; the target type's name.
    IntEnum(String),
}

impl Conv {
    pub fn is_clone(&self) -> bool {
        matches!(self, Conv::Clone)
    }
}

pub fn is_copy(t: &Ty) -> bool {
    match t {
        Ty::Bool | Ty::I32 | Ty::I64 => true,
        Ty::Option(t) => is_copy(t),
        _ => false,
    }
}

/// Follows aliases to the type holding the body.
pub fn resolve(types: &[TypeDef], mut i: usize) -> usize {
    let mut n = 0;
    while let Some(t) = types[i].alias_of {
        i = t;
        n += 1;
        if n > types.len() {
            break;
        }
    }
    i
}

/// Plans the conversions of every group (`groups` as the model built them).
pub fn plan(groups: &[GroupMod]) -> Vec<GroupConversions> {
    groups.iter().map(plan_group).collect()
}

fn plan_group(g: &GroupMod) -> GroupConversions {
    let taken_modules: BTreeSet<&str> = g.versions.iter().map(|v| v.module.as_str()).collect();
    let mut module = MODULE.to_string();
    while taken_modules.contains(module.as_str()) {
        module.push('_');
    }
    // Resources by CRD.
    let mut by_crd: BTreeMap<&str, Vec<ResRef>> = BTreeMap::new();
    for (vi, v) in g.versions.iter().enumerate() {
        for (ri, r) in v.resources.iter().enumerate() {
            by_crd.entry(&r.crd_name).or_default().push((vi, ri));
        }
    }
    let res = |(vi, ri): ResRef| &g.versions[vi].resources[ri];
    let mut kinds = Vec::new();
    let mut wanted: Vec<(String, String, bool)> = Vec::new();
    for (crd, refs) in &by_crd {
        if refs.len() < 2 {
            continue;
        }
        let Some(hub) = refs.iter().copied().find(|&r| res(r).storage) else {
            continue;
        };
        let mut versions = vec![hub];
        versions.extend(refs.iter().copied().filter(|&r| r != hub));
        let hub_res = res(hub);
        let root = &hub_res.root;
        for (i, cand) in [
            format!("{root}Conversion"),
            format!("{root}Hooks"),
            format!("Default{root}Hooks"),
            format!("Any{root}"),
        ]
        .into_iter()
        .enumerate()
        {
            wanted.push((cand, format!("{crd}\0{i}"), true));
        }
        wanted.push((hub_res.module.clone(), format!("{crd}\0m"), true));
        let mut version_refs: Vec<VersionRef> = versions
            .iter()
            .map(|&r| {
                let v = &g.versions[r.0];
                VersionRef {
                    res: r,
                    version: v.version.clone(),
                    root: res(r).root.clone(),
                    variant: naming::pascal(&v.version),
                    prefix: naming::snake(&v.version),
                }
            })
            .collect();
        unique_prefixes(&mut version_refs);
        // One name set for the kind's private module: every spoke's functions, both ways.
        let mut fn_names = BTreeSet::new();
        let mut spokes = (1..versions.len())
            .map(|i| {
                plan_spoke(
                    g,
                    versions[0],
                    versions[i],
                    i,
                    &version_refs[i],
                    &mut fn_names,
                )
            })
            .collect::<Vec<_>>();
        dedupe_hooks(&mut spokes);
        kinds.push(KindConv {
            kind: hub_res.kind.clone(),
            group: g.group.clone(),
            deprecated: versions.iter().any(|&r| res(r).deprecated.is_some()),
            versions: version_refs,
            conversion: String::new(),
            hooks: String::new(),
            default_hooks: String::new(),
            any: String::new(),
            module: String::new(),
            spokes,
        });
    }
    // Types and the private modules share no namespace with each other in practice (Pascal vs
    // snake), but one assignment keeps every name unique whatever the kinds are called.
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let names = assign_unique(&wanted, &mut taken, "");
    let mut names = names.into_iter();
    for k in &mut kinds {
        k.conversion = names.next().unwrap_or_default();
        k.hooks = names.next().unwrap_or_default();
        k.default_hooks = names.next().unwrap_or_default();
        k.any = names.next().unwrap_or_default();
        k.module = names.next().unwrap_or_default();
    }
    // Variants: pascal of distinct versions can still meet (`v1-a`, `v1a`).
    for k in &mut kinds {
        let wanted: Vec<(String, String, bool)> = k
            .versions
            .iter()
            .map(|v| (v.variant.clone(), v.version.clone(), false))
            .collect();
        let names = assign_unique(&wanted, &mut BTreeSet::new(), "");
        for (v, n) in k.versions.iter_mut().zip(names) {
            v.variant = n;
        }
    }
    GroupConversions { module, kinds }
}

/// Version prefixes unique in the kind (they name public methods side by side).
fn unique_prefixes(versions: &mut [VersionRef]) {
    let wanted: Vec<(String, String, bool)> = versions
        .iter()
        .map(|v| (v.prefix.clone(), v.version.clone(), false))
        .collect();
    let names = assign_unique(&wanted, &mut BTreeSet::new(), "_");
    for (v, n) in versions.iter_mut().zip(names) {
        v.prefix = n;
    }
}

/// Hook method names unique across the kind's trait.
fn dedupe_hooks(spokes: &mut [SpokeConv]) {
    let mut wanted = Vec::new();
    for s in spokes.iter() {
        wanted.push((s.object_to_hub.clone(), "0".to_string(), true));
        wanted.push((s.object_from_hub.clone(), "0".to_string(), true));
        for h in &s.hooks {
            wanted.push((h.to_hub.clone(), format!("1\0{}", h.path), false));
            wanted.push((h.from_hub.clone(), format!("1\0{}", h.path), false));
        }
    }
    let names = assign_unique(&wanted, &mut BTreeSet::new(), "_");
    let mut names = names.into_iter();
    for s in spokes.iter_mut() {
        s.object_to_hub = names.next().unwrap_or_default();
        s.object_from_hub = names.next().unwrap_or_default();
        for h in &mut s.hooks {
            h.to_hub = names.next().unwrap_or_default();
            h.from_hub = names.next().unwrap_or_default();
        }
    }
}

fn plan_spoke(
    g: &GroupMod,
    hub: ResRef,
    spoke: ResRef,
    index: usize,
    v: &VersionRef,
    fn_names: &mut BTreeSet<String>,
) -> SpokeConv {
    let vm = v.prefix.as_str();
    let mut hooks = Vec::new();
    let to_hub = Pairer::new(g, spoke, hub, vm, "to_hub", Some(&mut hooks), fn_names).run();
    let from_hub = Pairer::new(g, hub, spoke, vm, "from_hub", None, fn_names).run();
    hooks.sort_by(|a: &Hook, b: &Hook| a.path.cmp(&b.path));
    hooks.dedup_by(|a, b| a.path == b.path);
    for h in &mut hooks {
        let p = path_ident(&h.path);
        h.to_hub = format!("{vm}_{p}_to_hub");
        h.from_hub = format!("{vm}_{p}_from_hub");
    }
    SpokeConv {
        version: index,
        to_hub,
        from_hub,
        hooks,
        object_to_hub: format!("{vm}_to_hub"),
        object_from_hub: format!("{vm}_from_hub"),
    }
}

/// `spec.items[].port` -> `spec_items_port`.
fn path_ident(path: &str) -> String {
    let parts: Vec<String> = path
        .split(['.', '[', ']', '{', '}'])
        .filter(|s| !s.is_empty())
        .map(naming::snake)
        .collect();
    let s = parts.join("_");
    s.trim_start_matches('_').to_string()
}

/// Pairs the types of one direction, from the roots down.
struct Pairer<'a, 'h> {
    g: &'a GroupMod,
    from: ResRef,
    to: ResRef,
    prefix: &'a str,
    suffix: &'a str,
    hooks: Option<&'h mut Vec<Hook>>,
    fns: Vec<PairFn>,
    /// (from type, to type) -> function name.
    seen: BTreeMap<(usize, usize), String>,
    /// (from type, to type) -> the hooks found inside it, by path relative to where it was
    /// first reached: a type reached again at another path has the same fields to hook there.
    inner_hooks: BTreeMap<(usize, usize), Vec<(String, HookWhy)>>,
    /// Function names taken in the kind's private module (all spokes, both ways).
    names: &'h mut BTreeSet<String>,
}

impl<'a, 'h> Pairer<'a, 'h> {
    fn new(
        g: &'a GroupMod,
        from: ResRef,
        to: ResRef,
        prefix: &'a str,
        suffix: &'a str,
        hooks: Option<&'h mut Vec<Hook>>,
        names: &'h mut BTreeSet<String>,
    ) -> Self {
        Pairer {
            g,
            from,
            to,
            prefix,
            suffix,
            hooks,
            fns: Vec::new(),
            seen: BTreeMap::new(),
            inner_hooks: BTreeMap::new(),
            names,
        }
    }

    /// `base`, or `base_2`, `base_3`... if the kind's module has it already.
    fn claim(&mut self, base: String) -> String {
        let mut name = base.clone();
        let mut n = 2;
        while !self.names.insert(name.clone()) {
            name = format!("{base}_{n}");
            n += 1;
        }
        name
    }

    fn source(&self) -> &'a Resource {
        &self.g.versions[self.from.0].resources[self.from.1]
    }
    fn target(&self) -> &'a Resource {
        &self.g.versions[self.to.0].resources[self.to.1]
    }

    fn run(mut self) -> Vec<PairFn> {
        let name = self.claim(format!("{}_{}", self.prefix, self.suffix));
        self.fns.push(PairFn {
            name,
            from: self.from,
            to: self.to,
            from_ty: None,
            to_ty: None,
            body: PairBody::Struct {
                fields: Vec::new(),
                flatten: None,
            },
        });
        let (fr, tr) = (self.source(), self.target());
        let body = self.struct_body(
            &fr.root_fields,
            &fr.root_flatten,
            &tr.root_fields,
            &tr.root_flatten,
            "",
        );
        self.fns[0].body = body;
        self.fns
    }

    fn hook(&mut self, path: String, why: HookWhy) {
        if let Some(h) = self.hooks.as_deref_mut() {
            h.push(Hook {
                path,
                why,
                to_hub: String::new(),
                from_hub: String::new(),
            });
        }
    }

    fn struct_body(
        &mut self,
        from_fields: &[Field],
        from_flatten: &Option<(String, Ty)>,
        to_fields: &[Field],
        to_flatten: &Option<(String, Ty)>,
        path: &str,
    ) -> PairBody {
        let join = |w: &str| {
            if path.is_empty() {
                w.to_string()
            } else {
                format!("{path}.{w}")
            }
        };
        let mut fields = Vec::new();
        for t in to_fields {
            let how = match from_fields.iter().find(|f| f.wire == t.wire) {
                None => {
                    // Hub-only when converting to the hub; the spoke-only ones are found below.
                    self.hook(join(&t.wire), HookWhy::HubOnly);
                    FieldHow::Zero {
                        to: t.presence,
                        to_ty: t.ty.clone(),
                    }
                }
                Some(f) => match self.conv(&f.ty, &t.ty, &join(&t.wire)) {
                    Some(conv) => FieldHow::Mapped {
                        from_ident: f.ident.clone(),
                        copy: conv.is_clone() && is_copy(&f.ty),
                        conv,
                        from: f.presence,
                        to: t.presence,
                        to_ty: t.ty.clone(),
                    },
                    None => {
                        self.hook(join(&t.wire), HookWhy::Retyped);
                        FieldHow::Recode {
                            from_ident: f.ident.clone(),
                            to: t.presence,
                            to_ty: t.ty.clone(),
                        }
                    }
                },
            };
            fields.push(FieldPlan {
                to_ident: t.ident.clone(),
                how,
            });
        }
        for f in from_fields {
            if !to_fields.iter().any(|t| t.wire == f.wire) {
                self.hook(join(&f.wire), HookWhy::SpokeOnly);
            }
        }
        let flatten = to_flatten.as_ref().map(|(ti, tt)| {
            let how = match from_flatten {
                Some((fi, ft)) => match self.conv(ft, tt, &join("*")) {
                    Some(conv) => FlattenHow::Mapped {
                        from_ident: fi.clone(),
                        conv,
                    },
                    None => FlattenHow::Empty,
                },
                None => FlattenHow::Empty,
            };
            (ti.clone(), how)
        });
        PairBody::Struct { fields, flatten }
    }

    /// How a value of `a` (from) converts to `b` (to), if the shapes are compatible.
    fn conv(&mut self, a: &Ty, b: &Ty, path: &str) -> Option<Conv> {
        let wrap = |c: Conv, f: fn(Box<Conv>) -> Conv| {
            if c.is_clone() {
                Conv::Clone
            } else {
                f(Box::new(c))
            }
        };
        match (a, b) {
            (Ty::Bool, Ty::Bool)
            | (Ty::I32, Ty::I32)
            | (Ty::I64, Ty::I64)
            | (Ty::Number, Ty::Number)
            | (Ty::String, Ty::String)
            | (Ty::IntOrString, Ty::IntOrString)
            | (Ty::IntOrString64, Ty::IntOrString64)
            | (Ty::Json, Ty::Json) => Some(Conv::Clone),
            (Ty::Known(x), Ty::Known(y)) if x == y => Some(Conv::Clone),
            (Ty::Vec(a), Ty::Vec(b)) => {
                Some(wrap(self.conv(a, b, &format!("{path}[]"))?, Conv::Vec))
            }
            (Ty::Map(a), Ty::Map(b)) => {
                Some(wrap(self.conv(a, b, &format!("{path}{{}}"))?, Conv::Map))
            }
            (Ty::Option(a), Ty::Option(b)) => Some(wrap(self.conv(a, b, path)?, Conv::Option)),
            (Ty::Named(i), Ty::Named(j)) => self.named(*i, *j, path),
            _ => None,
        }
    }

    fn named(&mut self, i: usize, j: usize, path: &str) -> Option<Conv> {
        let (fr, tr) = (self.source(), self.target());
        let (i, j) = (resolve(&fr.types, i), resolve(&tr.types, j));
        let (ft, tt) = (&fr.types[i], &tr.types[j]);
        if let Some(name) = self.seen.get(&(i, j)).cloned() {
            let inner = self.inner_hooks.get(&(i, j)).cloned().unwrap_or_default();
            for (rel, why) in inner {
                self.hook(format!("{path}{rel}"), why);
            }
            return Some(Conv::Fn(name));
        }
        let compatible = match (&ft.body, &tt.body) {
            (TypeBody::Struct { .. }, TypeBody::Struct { .. })
            | (TypeBody::StringEnum { .. }, TypeBody::StringEnum { .. }) => true,
            (TypeBody::IntEnum { .. }, TypeBody::IntEnum { .. }) => {
                return Some(Conv::IntEnum(tt.name.clone()));
            }
            (TypeBody::Untagged { variants: va }, TypeBody::Untagged { variants: vb }) => {
                va.len() == vb.len() && va.iter().zip(vb).all(|(x, y)| x.0 == y.0)
            }
            _ => false,
        };
        if !compatible {
            return None;
        }
        // Reserve the name before recursing (types are trees, but aliases share them).
        let base = format!(
            "{}_{}_{}",
            self.prefix,
            naming::snake(&ft.name),
            self.suffix
        );
        let name = self.claim(base);
        self.seen.insert((i, j), name.clone());
        let hooks_before = self.hooks.as_deref().map_or(0, Vec::len);
        let at = self.fns.len();
        self.fns.push(PairFn {
            name: name.clone(),
            from: self.from,
            to: self.to,
            from_ty: Some(i),
            to_ty: Some(j),
            body: PairBody::Untagged { arms: Vec::new() },
        });
        let body = match (&ft.body, &tt.body) {
            (
                TypeBody::Struct {
                    fields: ff,
                    flatten: ffl,
                },
                TypeBody::Struct {
                    fields: tf,
                    flatten: tfl,
                },
            ) => self.struct_body(ff, ffl, tf, tfl, path),
            (
                TypeBody::StringEnum {
                    variants: fv,
                    other: fo,
                    ..
                },
                TypeBody::StringEnum {
                    variants: tv,
                    other: to,
                    ..
                },
            ) => {
                let arms = fv
                    .iter()
                    .map(|(fi, w)| {
                        let t = tv.iter().find(|(_, tw)| tw == w).map(|(ti, _)| ti.clone());
                        (fi.clone(), w.clone(), t)
                    })
                    .collect();
                let extra = tv
                    .iter()
                    .filter(|(_, tw)| !fv.iter().any(|(_, fw)| fw == tw))
                    .cloned()
                    .collect();
                PairBody::StringEnum {
                    arms,
                    from_other: fo.clone(),
                    to_other: to.clone(),
                    extra,
                }
            }
            (TypeBody::Untagged { variants: va }, TypeBody::Untagged { variants: vb }) => {
                let mut arms = Vec::new();
                for ((vn, x), (_, y)) in va.iter().zip(vb) {
                    match self.conv(x, y, path) {
                        Some(c) => arms.push((vn.clone(), c, matches!(y, Ty::Named(_)))),
                        None => {
                            // Not compatible after all: forget the function and everything
                            // planned inside it (the field becomes one hook where it is).
                            for f in self.fns.drain(at..) {
                                self.names.remove(&f.name);
                                if let (Some(a), Some(b)) = (f.from_ty, f.to_ty) {
                                    self.seen.remove(&(a, b));
                                    self.inner_hooks.remove(&(a, b));
                                }
                            }
                            if let Some(h) = self.hooks.as_deref_mut() {
                                h.truncate(hooks_before);
                            }
                            return None;
                        }
                    }
                }
                PairBody::Untagged { arms }
            }
            _ => return None,
        };
        self.fns[at].body = body;
        if let Some(h) = self.hooks.as_deref() {
            let inner = h[hooks_before..]
                .iter()
                .filter_map(|h| Some((h.path.strip_prefix(path)?.to_string(), h.why)))
                .collect();
            self.inner_hooks.insert((i, j), inner);
        }
        Some(Conv::Fn(name))
    }
}
