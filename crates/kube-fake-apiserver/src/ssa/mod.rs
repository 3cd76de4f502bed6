//! Server-side apply and the `managedFields` bookkeeping of every write: which manager owns which
//! fields, conflicts between appliers, and removal of fields an applier stopped applying.
//! Lists and maps merge as the schema says (`x-kubernetes-list-type`, `x-kubernetes-map-type`;
//! built-in kinds use the list types kube-apiserver declares, see [`shape`]), and ownership is
//! recorded per element (`k:{"name":"a"}`, `v:"x"`) as the real server writes it.
mod fieldpath;
mod shape;
mod walk;

use serde_json::{Value, json};

use crate::objects::Mode;
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

/// Takes `metadata.managedFields` off `obj`: what a client sends there on create is not kept, and
/// a write that would change only them is no write.
pub fn drop_managed_fields(obj: &mut Value) {
    meta_mut(obj).remove("managedFields");
}

/// One `managedFields` entry, read.
struct Entry {
    raw: Value,
    manager: String,
    operation: Option<Operation>,
    /// Empty or missing: the main resource.
    subresource: Option<String>,
    fields: FieldSet,
}

impl Entry {
    fn read(raw: &Value) -> Entry {
        Entry {
            manager: str_of(raw.get("manager")).to_string(),
            operation: Operation::parse(str_of(raw.get("operation"))),
            subresource: Some(str_of(raw.get("subresource")))
                .filter(|s| !s.is_empty())
                .map(String::from),
            fields: FieldSet::from_fields_v1(raw.get("fieldsV1").unwrap_or(&Value::Null)),
            raw: raw.clone(),
        }
    }

    /// As conflict messages name a manager (apimachinery's `printManager`; the time is not part
    /// of a manager's identity, so it is never printed).
    fn printed(&self) -> String {
        let mut out = format!("{:?}", self.manager);
        if let Some(s) = &self.subresource {
            out.push_str(&format!(" with subresource {s:?}"));
        }
        if self.operation == Some(Operation::Update) {
            out.push_str(&format!(" using {}", str_of(self.raw.get("apiVersion"))));
        }
        out
    }
}

fn entries(obj: &Value) -> Vec<Entry> {
    crate::util::meta(obj, "managedFields")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(Entry::read).collect())
        .unwrap_or_default()
}

/// Who writes, how, and through which endpoint.
pub struct Writer<'a> {
    pub manager: &'a str,
    pub operation: Operation,
    /// The main resource or `/status`.
    pub mode: Mode,
    /// The apiVersion the request used (recorded in the entry).
    pub api_version: String,
    /// The resource's apply schema (see [`shape::schema_of`]).
    schema: Option<&'a Value>,
    /// Top-level fields this endpoint does not write, so nobody owns them through it.
    ignored: &'static [&'static str],
}

impl<'a> Writer<'a> {
    /// The writer for `w`'s manager and operation, through `mode`'s endpoint.
    pub fn of(w: &crate::objects::Write<'a>, mode: Mode) -> Writer<'a> {
        Writer::new(w.res, w.version, &w.opts.manager, w.operation, mode)
    }

    pub fn new(
        res: &'a Resource,
        version: &str,
        manager: &'a str,
        operation: Operation,
        mode: Mode,
    ) -> Writer<'a> {
        let has_status = res.version(version).is_some_and(|v| v.status);
        let ignored: &'static [&'static str] = match (has_status, mode) {
            (true, Mode::Status) => &["spec"],
            (true, Mode::Main) => &["status"],
            _ => &[],
        };
        Writer {
            manager,
            operation,
            mode,
            api_version: res.api_version(version),
            schema: shape::schema_of(res, version),
            ignored,
        }
    }

    fn shape(&self) -> Shape<'a> {
        Shape::root(self.schema)
    }

    fn is_me(&self, e: &Entry) -> bool {
        e.manager == self.manager
            && e.operation == Some(self.operation)
            && e.subresource.as_deref() == self.mode.subresource()
    }

    fn fields_of(&self, obj: &Value) -> FieldSet {
        let mut set = FieldSet::default();
        walk::field_set(
            &walk::tracked(obj, self.ignored),
            self.shape(),
            &mut Vec::new(),
            &mut set,
        );
        set
    }

    fn diff(&self, old: &Value, new: &Value) -> walk::Diff {
        walk::diff(
            &walk::tracked(old, self.ignored),
            &walk::tracked(new, self.ignored),
            self.shape(),
        )
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

    /// Writes the new `managedFields` into `new`: this manager's entry owns what it applied
    /// (`source`, for Apply and for a create) or what it owned before plus what it changed
    /// (Update); fields that changed or went away are taken from every other manager, and
    /// managers left with nothing are dropped.
    pub fn record(&self, old: Option<&Value>, new: &mut Value, source: &Value) {
        if self.manager.is_empty() {
            return;
        }
        let before = old.map(entries).unwrap_or_default();
        let d = match old {
            Some(o) => self.diff(o, new),
            None => walk::Diff {
                changed: self.fields_of(source),
                removed: FieldSet::default(),
            },
        };
        let taken = d.changed.union(&d.removed);
        let mine = match (self.operation, old) {
            (Operation::Apply, _) | (Operation::Update, None) => self.fields_of(source),
            (Operation::Update, Some(_)) => {
                let previous = before
                    .iter()
                    .find(|e| self.is_me(e))
                    .map(|e| e.fields.clone())
                    .unwrap_or_default();
                previous.union(&d.changed).difference(&d.removed)
            }
        };
        let mut out: Vec<Value> = Vec::new();
        for e in before.iter().filter(|e| !self.is_me(e)) {
            let kept = e.fields.difference(&taken);
            if kept.is_empty() {
                continue;
            }
            let mut raw = e.raw.clone();
            raw["fieldsV1"] = kept.to_fields_v1();
            out.push(raw);
        }
        if self.operation == Operation::Apply || !mine.is_empty() {
            let mut entry = json!({
                "manager": self.manager,
                "operation": self.operation.as_str(),
                "apiVersion": self.api_version,
                "time": now(),
                "fieldsType": "FieldsV1",
                "fieldsV1": mine.to_fields_v1(),
            });
            if let Some(s) = self.mode.subresource() {
                entry["subresource"] = json!(s);
            }
            out.push(entry);
        }
        meta_mut(new).insert("managedFields".into(), Value::Array(out));
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

#[cfg(test)]
mod tests;
