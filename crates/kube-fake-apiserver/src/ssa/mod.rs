//! Server-side apply and the `managedFields` bookkeeping of every write: which manager owns which
//! fields, conflicts between appliers, and removal of fields an applier stopped applying.
//! Lists and maps merge as the schema says (`x-kubernetes-list-type`, `x-kubernetes-map-type`;
//! built-in kinds use the list types kube-apiserver declares, see [`shape`]), and ownership is
//! recorded per element (`k:{"name":"a"}`, `v:"x"`) as the real server writes it.
mod fieldpath;
mod shape;
mod walk;

use serde_json::{Value, json};

use crate::registry::Resource;
use crate::status::ApiError;
use crate::util::{meta_mut, now, str_of};
use fieldpath::{FieldSet, display};
use shape::Shape;

/// The operation a `managedFields` entry records.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operation {
    /// Server-side apply: the manager owns exactly what it applied.
    Apply,
    /// Create, update, patch: the manager owns what it set or changed.
    Update,
}

impl Operation {
    fn as_str(self) -> &'static str {
        match self {
            Operation::Apply => "Apply",
            Operation::Update => "Update",
        }
    }

    /// The operation a stored entry names (`None`: not one the server writes).
    fn parse(s: &str) -> Option<Self> {
        match s {
            "Apply" => Some(Operation::Apply),
            "Update" => Some(Operation::Update),
            _ => None,
        }
    }
}

/// Which part of the object a write may change, and through which endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Main,
    Status,
    /// The main resource written through `/scale` (only the replicas change).
    Scale,
}

impl Mode {
    /// The subresource a `managedFields` entry names for writes in this mode.
    pub fn subresource(self) -> Option<&'static str> {
        match self {
            Mode::Main => None,
            Mode::Status => Some("status"),
            Mode::Scale => Some("scale"),
        }
    }
}

/// Whether writing `new` over `old` changes nothing: equal apart from apiVersion and
/// resourceVersion, and `managedFields` equal apart from their times (kube-apiserver's
/// `IgnoreManagedFieldsTimestampsTransformer`: an update that only moves times keeps the old ones,
/// and is then no write).
pub fn same_write(old: &Value, new: &Value) -> bool {
    let strip = |o: &Value| {
        let mut o = o.clone();
        o.as_object_mut().map(|x| x.remove("apiVersion"));
        let m = meta_mut(&mut o);
        m.remove("resourceVersion");
        let entries = m.remove("managedFields");
        let untimed = entries.map(|mut e| {
            for x in e.as_array_mut().into_iter().flatten() {
                x.as_object_mut().map(|x| x.remove("time"));
            }
            e
        });
        (
            o,
            untimed.filter(|e| e.as_array().is_none_or(|a| !a.is_empty())),
        )
    };
    strip(old) == strip(new)
}

/// The manager named when the request names none and sends no User-Agent.
const UNKNOWN_MANAGER: &str = "unknown";

/// At most this many `Update` entries are kept; the oldest are merged per apiVersion into
/// [`OLD_UPDATES_MANAGER`] (apimachinery's `DefaultMaxUpdateManagers`).
const MAX_UPDATE_MANAGERS: usize = 10;
const OLD_UPDATES_MANAGER: &str = "ancient-changes";

/// One `managedFields` entry, decoded.
#[derive(Debug, Clone)]
struct Entry {
    manager: String,
    operation: Operation,
    api_version: String,
    /// As written (`2006-01-02T15:04:05Z`); `None` for an entry that never changed anything.
    time: Option<String>,
    /// `None`: the main resource.
    subresource: Option<String>,
    fields: FieldSet,
}

impl Entry {
    /// Decodes an entry as apimachinery's `DecodeManagedFields` does: `None` when the operation is
    /// neither `Apply` nor `Update`, the apiVersion is empty, `fieldsType` is not `FieldsV1`, or
    /// `fieldsV1` is no field set.
    fn decode(raw: &Value) -> Option<Entry> {
        let text = |k: &str| match raw.get(k) {
            None | Some(Value::Null) => Some(String::new()),
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => None,
        };
        let operation = Operation::parse(&text("operation")?)?;
        let api_version = text("apiVersion")?;
        if api_version.is_empty() || text("fieldsType")? != "FieldsV1" {
            return None;
        }
        let fields = match raw.get("fieldsV1") {
            None | Some(Value::Null) => FieldSet::default(),
            Some(v) => FieldSet::parse_fields_v1(v)?,
        };
        Some(Entry {
            manager: text("manager")?,
            operation,
            api_version,
            time: Some(text("time")?).filter(|t| !t.is_empty()),
            subresource: Some(text("subresource")?).filter(|s| !s.is_empty()),
            fields,
        })
    }

    /// The entry as the server writes it.
    fn encode(&self) -> Value {
        let mut e = json!({
            "manager": self.manager,
            "operation": self.operation.as_str(),
            "apiVersion": self.api_version,
        });
        if let Some(t) = &self.time {
            e["time"] = json!(t);
        }
        e["fieldsType"] = json!("FieldsV1");
        e["fieldsV1"] = self.fields.to_fields_v1();
        if let Some(s) = &self.subresource {
            e["subresource"] = json!(s);
        }
        e
    }

    /// Who the entry is, as apimachinery's `BuildManagerIdentifier` keys it: the manager, the
    /// operation, the subresource, and for an update (not an apply) the apiVersion.
    fn identity(&self) -> String {
        let mut id = json!({"manager": self.manager, "operation": self.operation.as_str()});
        if self.operation == Operation::Update {
            id["apiVersion"] = json!(self.api_version);
        }
        if let Some(s) = &self.subresource {
            id["subresource"] = json!(s);
        }
        id.to_string()
    }

    /// As conflict messages name a manager (apimachinery's `printManager`; the time is not part
    /// of a manager's identity, so it is never printed).
    fn printed(&self) -> String {
        let mut out = format!("{:?}", self.manager);
        if let Some(s) = &self.subresource {
            out.push_str(&format!(" with subresource {s:?}"));
        }
        if self.operation == Operation::Update {
            out.push_str(&format!(" using {}", self.api_version));
        }
        out
    }
}

/// The entries of a `managedFields` list; `None` if one does not decode. An identity listed
/// twice keeps the later entry (the server decodes into a map).
fn decode_all(list: Option<&Value>) -> Option<Vec<Entry>> {
    let mut out: Vec<Entry> = Vec::new();
    let Some(list) = list.filter(|v| !v.is_null()) else {
        return Some(out);
    };
    for raw in list.as_array()? {
        let e = Entry::decode(raw)?;
        out.retain(|x| x.identity() != e.identity());
        out.push(e);
    }
    Some(out)
}

/// The stored entries of `obj` (none if they do not decode).
fn entries(obj: &Value) -> Vec<Entry> {
    decode_all(crate::util::meta(obj, "managedFields")).unwrap_or_default()
}

/// A client resetting `managedFields`: an empty list (not a missing one), or one empty entry.
fn is_reset(list: Option<&Value>) -> bool {
    match list.and_then(Value::as_array).map(Vec::as_slice) {
        Some([]) => true,
        Some([Value::Object(m)]) => m
            .values()
            .all(|v| v.is_null() || v.as_str().is_some_and(str::is_empty)),
        _ => false,
    }
}

/// Which top-level fields a write through an endpoint records (its reset fields are no one's).
#[derive(Clone, Copy)]
enum Part {
    Whole,
    /// The main resource of a kind with a status subresource: everything but `status`.
    Main,
    /// The status subresource: only `status` (and metadata, which it does not change).
    Status,
}

/// Who writes, how, and through which endpoint.
pub struct Writer<'a> {
    manager: &'a str,
    pub operation: Operation,
    /// The main resource or `/status`.
    pub mode: Mode,
    /// The apiVersion the request used (recorded in the entry).
    pub api_version: String,
    res: &'a Resource,
    /// The request version's structural schema (its defaults fill the stored object compared).
    defaults: Option<&'a crate::schema::ObjectSchema>,
    /// The resource's apply schema (see [`shape::schema_of`]).
    schema: Option<&'a Value>,
    part: Part,
}

impl<'a> Writer<'a> {
    pub fn new(
        res: &'a Resource,
        version: &str,
        manager: &'a str,
        operation: Operation,
        mode: Mode,
    ) -> Writer<'a> {
        let ver = res.version(version);
        let part = match (ver.is_some_and(|v| v.status), mode) {
            (true, Mode::Status) => Part::Status,
            (true, Mode::Main | Mode::Scale) => Part::Main,
            _ => Part::Whole,
        };
        Writer {
            manager: if manager.is_empty() {
                UNKNOWN_MANAGER
            } else {
                manager
            },
            operation,
            mode,
            api_version: res.api_version(version),
            res,
            defaults: ver.and_then(|v| v.schema.as_deref()),
            schema: shape::schema_of(res, version),
            part,
        }
    }

    fn shape(&self) -> Shape<'a> {
        Shape::root(self.schema)
    }

    fn is_me(&self, e: &Entry) -> bool {
        e.manager == self.manager
            && e.operation == self.operation
            && e.subresource.as_deref() == self.mode.subresource()
            && (self.operation == Operation::Apply || e.api_version == self.api_version)
    }

    fn tracked(&self, obj: &Value) -> Value {
        let part = self.part;
        walk::tracked(obj, &|k| match part {
            Part::Whole => true,
            Part::Main => k != "status",
            Part::Status => k == "status" || k == "metadata",
        })
    }

    /// The fields `obj` sets (structured-merge-diff's `ToFieldSet`), without the stripped ones.
    fn fields_of(&self, obj: &Value) -> FieldSet {
        let mut set = FieldSet::default();
        walk::field_set(&self.tracked(obj), self.shape(), &mut Vec::new(), &mut set);
        set.remove(&vec![fieldpath::Element::field("metadata")]);
        set
    }

    fn diff(&self, old: &Value, new: &Value) -> walk::Diff {
        walk::diff(&self.tracked(old), &self.tracked(new), self.shape())
    }

    /// Refuses a configuration that holds an element of a granular list twice, with the error
    /// kube-apiserver answers (a 500 without reason: the field manager's error is not a
    /// `Status`). `namespace` and `name` are the object's, as the message names it.
    pub fn check_config(
        &self,
        config: &Value,
        namespace: &str,
        name: &str,
    ) -> Result<(), ApiError> {
        let mut errors = Vec::new();
        walk::duplicates(config, self.shape(), &mut Vec::new(), &mut errors);
        if errors.is_empty() {
            return Ok(());
        }
        let (group, version) = match self.api_version.split_once('/') {
            Some((g, v)) => (g, v),
            None => ("", self.api_version.as_str()),
        };
        let kind = str_of(config.get("kind"));
        // One error stands alone; several are listed under `errors:`, indented.
        let listed = if let [one] = errors.as_slice() {
            one.clone()
        } else {
            let lines: Vec<String> = errors.iter().map(|e| format!("  {e}")).collect();
            format!("errors:\n{}", lines.join("\n"))
        };
        Err(ApiError::new(
            500,
            "",
            format!(
                "failed to create typed patch object ({namespace}/{name}; {group}/{version}, Kind={kind}): {listed}"
            ),
        ))
    }

    /// Server-side apply of `config` onto `live` (both in the request's version). Fails with the
    /// server's 409 when another manager owns a field whose value would change, unless `force`.
    /// Fields this manager applied before and applies no longer are removed unless someone
    /// else owns them (or something below them).
    pub fn apply(&self, live: &Value, config: &Value, force: bool) -> Result<Value, ApiError> {
        let mut merged = walk::merge(Some(live), config, self.shape(), 0);
        let changed = self.diff(live, &merged).changed;
        let all = entries(live);
        if !force {
            let conflicts: Vec<(String, fieldpath::Path)> = all
                .iter()
                .filter(|e| !self.is_me(e))
                .flat_map(|e| {
                    let printed = e.printed();
                    e.fields
                        .intersection(&changed)
                        .0
                        .into_iter()
                        .map(move |p| (printed.clone(), p))
                })
                .collect();
            if !conflicts.is_empty() {
                return Err(conflict_error(&conflicts));
            }
        }
        let applied = self.fields_of(config);
        let previous = all
            .iter()
            .find(|e| self.is_me(e))
            .map(|e| e.fields.clone())
            .unwrap_or_default();
        let owners: Vec<&FieldSet> = all
            .iter()
            .filter(|e| !self.is_me(e))
            .map(|e| &e.fields)
            .chain([&applied])
            .collect();
        for p in previous.difference(&applied).iter() {
            if owners.iter().any(|s| s.covers(p)) || is_key_field(p) {
                continue;
            }
            if walk::remove(&mut merged, p, self.shape()) {
                self.drop_emptied_parents(&mut merged, p, &owners);
            }
        }
        Ok(merged)
    }

    /// After removing `p`: its parent maps left empty go too, unless owned (a granular list left
    /// empty stays, as the real server keeps `[]`).
    fn drop_emptied_parents(
        &self,
        obj: &mut Value,
        p: &[fieldpath::Element],
        owners: &[&FieldSet],
    ) {
        let mut parent = &p[..p.len().saturating_sub(1)];
        while !parent.is_empty() {
            let empty = walk::get(obj, parent, self.shape())
                .and_then(Value::as_object)
                .is_some_and(|m| m.is_empty());
            let owned = owners.iter().any(|s| s.contains(&parent.to_vec()));
            if !empty || owned || !walk::remove(obj, parent, self.shape()) {
                return;
            }
            parent = &parent[..parent.len() - 1];
        }
    }

    /// Writes the new `managedFields` into `new`, as kube-apiserver's field manager does.
    ///
    /// `old` is the stored object (`None` on create, which compares with the kind's empty
    /// object, [`shape::zero`]); `new` what is written (after defaulting); `config` the applied
    /// configuration for an apply. The entries start from the stored ones, or on create and on an
    /// update of the main resource from the request's own `managedFields` when they decode and
    /// are not empty (`[]` or `[{}]` resets them). Every entry loses the fields that changed or
    /// went away. An applier then owns exactly what it applied; an updater owns, besides what it
    /// kept, every field it added or changed (defaulted ones too, and a map, list or element it
    /// added as itself: the `.` entries), and its entry's time moves only if it took something.
    pub fn record(&self, old: Option<&Value>, new: &mut Value, config: &Value) {
        if self.mode == Mode::Scale {
            if let Some(old) = old {
                self.record_scale(old, new);
            }
            return;
        }
        let sent = crate::util::meta(new, "managedFields").cloned();
        let mut all = match (self.operation, self.mode) {
            (Operation::Update, Mode::Main) if is_reset(sent.as_ref()) => Vec::new(),
            (Operation::Update, Mode::Main) => decode_all(sent.as_ref())
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| old.map(entries).unwrap_or_default()),
            _ => old.map(entries).unwrap_or_default(),
        };
        let before = match old {
            Some(o) => {
                let mut o = o.clone();
                if let Some(s) = self.defaults {
                    s.apply_defaults(&mut o);
                }
                o
            }
            None => shape::zero(self.res, self.res.custom || self.defaults.is_some()),
        };
        let d = self.diff(&before, new);
        let taken = d.changed.union(&d.removed);
        let mine_before = all
            .iter()
            .position(|e| self.is_me(e))
            .map(|i| all.remove(i));
        for e in &mut all {
            e.fields = e.fields.difference(&taken);
        }
        let mut mine = mine_before.unwrap_or_else(|| Entry {
            manager: self.manager.to_string(),
            operation: self.operation,
            api_version: self.api_version.clone(),
            time: None,
            subresource: self.mode.subresource().map(String::from),
            fields: FieldSet::default(),
        });
        mine.api_version = self.api_version.clone();
        match self.operation {
            Operation::Apply => {
                mine.fields = self.fields_of(config);
                if old.is_none_or(|o| !same_write(o, new)) {
                    mine.time = Some(now());
                }
            }
            Operation::Update => {
                let mut took = d.changed;
                took.remove(&vec![fieldpath::Element::field("metadata")]);
                mine.fields = mine.fields.difference(&taken);
                if !took.is_empty() {
                    mine.fields = mine.fields.union(&took);
                    mine.time = Some(now());
                }
            }
        }
        all.push(mine);
        all.retain(|e| !e.fields.is_empty());
        if self.operation == Operation::Update {
            cap_updaters(&mut all);
        }
        // Apply before Update, then oldest first (to the second), manager, apiVersion, subresource.
        all.sort_by(|p, q| {
            (
                p.operation.as_str(),
                &p.time,
                &p.manager,
                &p.api_version,
                &p.subresource,
            )
                .cmp(&(
                    q.operation.as_str(),
                    &q.time,
                    &q.manager,
                    &q.api_version,
                    &q.subresource,
                ))
        });
        store_entries(new, &all);
    }
}

impl Writer<'_> {
    /// The replicas field of `api_version`'s scale subresource as a field path (`None`: that
    /// version has no scale subresource).
    fn replicas_path(&self, api_version: &str) -> Option<fieldpath::Path> {
        let ver = self
            .res
            .versions
            .iter()
            .find(|v| self.res.api_version(&v.name) == api_version)?;
        let path = &ver.scale.as_ref()?.spec_replicas;
        Some(
            path.trim_start_matches('.')
                .split('.')
                .map(fieldpath::Element::field)
                .collect(),
        )
    }

    /// An update through `/scale`, as kube-apiserver records it: the write's field manager runs
    /// on the `autoscaling/v1 Scale` and apimachinery's `ScaleHandler.ToParent` carries the
    /// result back. Entries of an apiVersion the resource does not have are dropped. For a
    /// built-in kind, a manager that changes the replicas owns exactly the kind's replicas field
    /// in an entry with `subresource: scale` and the request's apiVersion, and no time (`ToParent`
    /// looks the time up among the parent's entries under the Scale manager's identity, which
    /// names `autoscaling/v1`, so it finds none); every other entry loses the field. Replicas
    /// unchanged: nothing changes. For a custom resource the Scale's field manager has no type
    /// for `autoscaling/v1 Scale` (the CRD's type converter knows only the CRD's kinds:
    /// kubernetes#116311, #131892), so its update fails, `UpdateNoErrors` clears the Scale's
    /// entries, and `ToParent` then takes the replicas field from every entry and adds none.
    fn record_scale(&self, old: &Value, new: &mut Value) {
        let mut all: Vec<Entry> = entries(old)
            .into_iter()
            .filter(|e| {
                self.res
                    .versions
                    .iter()
                    .any(|v| self.res.api_version(&v.name) == e.api_version)
            })
            .collect();
        let Some(mine) = self.replicas_path(&self.api_version) else {
            return;
        };
        let value = |o: &Value| walk::get(o, &mine, self.shape()).cloned();
        let changed = value(old) != value(new);
        if self.res.custom || changed {
            for e in &mut all {
                if let Some(p) = self.replicas_path(&e.api_version) {
                    e.fields.remove(&p);
                }
            }
        }
        if !self.res.custom && changed {
            all.retain(|e| !self.is_me(e));
            let mut fields = FieldSet::default();
            fields.insert(mine);
            all.push(Entry {
                manager: self.manager.to_string(),
                operation: Operation::Update,
                api_version: self.api_version.clone(),
                time: None,
                subresource: Some("scale".into()),
                fields,
            });
        }
        all.retain(|e| !e.fields.is_empty());
        store_entries(new, &all);
    }
}

/// Writes `all` as `new`'s `managedFields` (none left: the field goes).
fn store_entries(new: &mut Value, all: &[Entry]) {
    let m = meta_mut(new);
    if all.is_empty() {
        m.remove("managedFields");
    } else {
        m.insert(
            "managedFields".into(),
            Value::Array(all.iter().map(Entry::encode).collect()),
        );
    }
}

/// Keeps at most [`MAX_UPDATE_MANAGERS`] `Update` entries, as apimachinery's `capManagersManager`:
/// from the oldest on, each entry whose apiVersion an older entry has is merged with it into the
/// `ancient-changes` entry of that apiVersion (taking the newer time), until few enough remain.
fn cap_updaters(all: &mut Vec<Entry>) {
    let mut updaters: Vec<(Option<String>, String)> = all
        .iter()
        .filter(|e| e.operation == Operation::Update)
        .map(|e| (e.time.clone(), e.identity()))
        .collect();
    let mut length = updaters.len();
    if length <= MAX_UPDATE_MANAGERS {
        return;
    }
    updaters.sort();
    let mut first_of_version: Vec<(String, String)> = Vec::new();
    for (_, id) in updaters {
        if length <= MAX_UPDATE_MANAGERS {
            break;
        }
        let Some(i) = all.iter().position(|e| e.identity() == id) else {
            continue;
        };
        let version = all[i].api_version.clone();
        let Some((_, first)) = first_of_version.iter().find(|(v, _)| *v == version) else {
            first_of_version.push((version, id));
            continue;
        };
        let bucket = Entry {
            manager: OLD_UPDATES_MANAGER.into(),
            operation: Operation::Update,
            api_version: version.clone(),
            time: None,
            subresource: None,
            fields: FieldSet::default(),
        }
        .identity();
        if !all.iter().any(|e| e.identity() == bucket)
            && let Some(f) = all.iter_mut().find(|e| e.identity() == *first)
        {
            f.manager = OLD_UPDATES_MANAGER.into();
            f.subresource = None;
        }
        let merged = all.remove(i);
        if let Some(b) = all.iter_mut().find(|e| e.identity() == bucket) {
            b.fields = b.fields.union(&merged.fields);
            b.time = merged.time;
        }
        length -= 1;
    }
}

/// A key field of a list-map element (`...[name="a"].name`): it stays while the element does.
fn is_key_field(p: &[fieldpath::Element]) -> bool {
    use fieldpath::Element;
    match p {
        [.., Element::Key(keys), Element::Field(f)] => keys.iter().any(|(k, _)| k == f),
        _ => false,
    }
}

/// The 409 of a refused apply, worded as kube-apiserver words it: one conflict inline, several
/// grouped by manager (managers sorted), one `- path` line each; a `FieldManagerConflict` cause per field.
fn conflict_error(conflicts: &[(String, fieldpath::Path)]) -> ApiError {
    let message = if let [(m, p)] = conflicts {
        format!(
            "Apply failed with 1 conflict: conflict with {m}: {}",
            display(p)
        )
    } else {
        let mut by_manager: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
        for (m, p) in conflicts {
            by_manager
                .entry(m)
                .or_default()
                .push(format!("- {}", display(p)));
        }
        let mut lines = Vec::new();
        for (m, paths) in by_manager {
            lines.push(format!("conflicts with {m}:"));
            lines.extend(paths);
        }
        format!(
            "Apply failed with {} conflicts: {}",
            conflicts.len(),
            lines.join("\n")
        )
    };
    let causes: Vec<Value> = conflicts
        .iter()
        .map(|(m, p)| {
            json!({"reason": "FieldManagerConflict", "message": format!("conflict with {m}"), "field": display(p)})
        })
        .collect();
    ApiError::new(409, "Conflict", message).with_details(json!({"causes": causes}))
}

/// A MutatingAdmissionPolicy's apply configuration merged onto `live` (`res` served as
/// `version`) as structured-merge-diff's `Merge` does, with no field ownership recorded
/// (`patch/smd.go`); or, refused first as there, the paths of the atomic lists, maps and
/// structs the configuration holds (`.spec.containers[0].args`).
pub fn merge_apply_configuration(
    res: &Resource,
    version: &str,
    live: &Value,
    config: &Value,
) -> Result<Value, Vec<String>> {
    let shape = Shape::root(shape::schema_of(res, version));
    let mut atomics = Vec::new();
    find_atomics(config, shape, &mut String::new(), &mut atomics, 0);
    if !atomics.is_empty() {
        return Err(atomics);
    }
    Ok(walk::merge(Some(live), config, shape, 0))
}

/// `findAtomics`: every atomic list, map or struct in `v` (none where the schema is silent).
fn find_atomics(v: &Value, shape: Shape<'_>, at: &mut String, out: &mut Vec<String>, depth: usize) {
    if depth > 1000 {
        return;
    }
    let len = at.len();
    match v {
        Value::Object(m) => {
            if shape.is_known() && shape.atomic_map() {
                out.push(at.clone());
            }
            for (k, x) in m {
                at.push('.');
                at.push_str(k);
                find_atomics(x, shape.child(k).0, at, out, depth + 1);
                at.truncate(len);
            }
        }
        Value::Array(items) => {
            if shape.is_known() && shape.list_type() == shape::ListType::Atomic {
                out.push(at.clone());
            }
            for (i, x) in items.iter().enumerate() {
                at.push_str(&format!("[{i}]"));
                find_atomics(x, shape.items(), at, out, depth + 1);
                at.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests;
