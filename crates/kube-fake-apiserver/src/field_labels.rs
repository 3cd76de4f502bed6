//! Which `fieldSelector` labels a resource accepts and what each one reads, as kube-apiserver
//! 1.35 decides: the list/watch/deletecollection handlers pass every label through the kind's
//! field label conversion func (`Scheme.AddFieldLabelConversionFunc` in
//! `pkg/apis/<group>/v1/conversion.go`; without one `runtime.DefaultMetaV1FieldSelectorConversion`;
//! for custom resources the CRD converter with the version's `selectableFields`) and answer 400
//! with its error; the registry's `ToSelectableFields` then gives each label its value.
//!
//! The table below is the data: one row per kind with its own conversion func. Every other
//! built-in kind takes the default (`metadata.name`, `metadata.namespace`).

use serde_json::Value;

use crate::selector::{FieldOp, FieldSelector};

/// Where an accepted label's value comes from in the stored object (core shape for Events).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Read {
    /// A dotted path; absent reads as `""`.
    Path(&'static str),
    /// A boolean printed by `strconv.FormatBool`; absent reads as `false`.
    Bool(&'static str),
    /// An integer printed by `strconv.Itoa`; absent reads as `0`.
    Int(&'static str),
    /// The first of `status.podIPs` (`status.podIP` when the list is absent).
    FirstPodIp,
    /// An Event's `source.component`, else its `reportingComponent`.
    EventSource,
    /// Accepted by the conversion func but not among the selectable fields: always `""`.
    Nothing,
}

use Read::{Bool, EventSource, FirstPodIp, Int, Nothing, Path};

/// How a kind's conversion func words a refused label: `<before><label><after>`, the label
/// quoted (`%q`) or not.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Refusal {
    before: &'static str,
    quoted: bool,
    after: &'static str,
}

/// `fmt.Errorf("field label not supported: %s", label)`, the wording most funcs share.
const NOT_SUPPORTED: Refusal = Refusal {
    before: "field label not supported: ",
    quoted: false,
    after: "",
};

/// A kind with its own conversion func: the labels it accepts and how it refuses the others.
#[derive(Debug, PartialEq, Eq)]
pub struct KindLabels {
    group: &'static str,
    plural: &'static str,
    labels: &'static [(&'static str, Read)],
    refusal: Refusal,
}

const NAME: (&str, Read) = ("metadata.name", Path("metadata.name"));
const NAMESPACE: (&str, Read) = ("metadata.namespace", Path("metadata.namespace"));

/// Kinds with their own conversion func (kube-apiserver 1.35 sources: `pkg/apis/core/v1`,
/// `batch/v1`, `certificates/v1`, `events/v1`, `resource/v1` `conversion.go`, and the values
/// from each registry's `ToSelectableFields`).
#[rustfmt::skip] // one row per kind
static KINDS: &[KindLabels] = &[
    KindLabels { group: "", plural: "pods", refusal: NOT_SUPPORTED, labels: &[
        NAME, NAMESPACE,
        ("spec.nodeName", Path("spec.nodeName")),
        ("spec.restartPolicy", Path("spec.restartPolicy")),
        ("spec.schedulerName", Path("spec.schedulerName")),
        ("spec.serviceAccountName", Path("spec.serviceAccountName")),
        ("spec.hostNetwork", Bool("spec.hostNetwork")),
        ("status.phase", Path("status.phase")),
        ("status.podIP", FirstPodIp),
        // Accepted, but `ToSelectableFields` has no such field (a TODO in the sources).
        ("status.podIPs", Nothing),
        ("status.nominatedNodeName", Path("status.nominatedNodeName")),
        // Old v1 clients' name for spec.nodeName.
        ("spec.host", Path("spec.nodeName")),
    ]},
    KindLabels { group: "", plural: "nodes", refusal: NOT_SUPPORTED, labels: &[
        NAME, ("spec.unschedulable", Bool("spec.unschedulable")),
    ]},
    KindLabels { group: "", plural: "replicationcontrollers", refusal: NOT_SUPPORTED, labels: &[
        NAME, NAMESPACE, ("status.replicas", Int("status.replicas")),
    ]},
    KindLabels { group: "", plural: "events", refusal: NOT_SUPPORTED, labels: &[
        ("involvedObject.kind", Path("involvedObject.kind")),
        ("involvedObject.namespace", Path("involvedObject.namespace")),
        ("involvedObject.name", Path("involvedObject.name")),
        ("involvedObject.uid", Path("involvedObject.uid")),
        ("involvedObject.apiVersion", Path("involvedObject.apiVersion")),
        ("involvedObject.resourceVersion", Path("involvedObject.resourceVersion")),
        ("involvedObject.fieldPath", Path("involvedObject.fieldPath")),
        ("reason", Path("reason")),
        ("reportingComponent", Path("reportingComponent")),
        ("source", EventSource),
        ("type", Path("type")),
        NAMESPACE, NAME,
    ]},
    KindLabels { group: "", plural: "namespaces", refusal: NOT_SUPPORTED, labels: &[
        ("status.phase", Path("status.phase")), NAME,
    ]},
    KindLabels { group: "", plural: "secrets", refusal: NOT_SUPPORTED, labels: &[
        ("type", Path("type")), NAMESPACE, NAME,
    ]},
    KindLabels { group: "", plural: "services", refusal: NOT_SUPPORTED, labels: &[
        NAMESPACE, NAME,
        ("spec.clusterIP", Path("spec.clusterIP")),
        ("spec.type", Path("spec.type")),
    ]},
    // The label says `successful`; the value is `status.succeeded`.
    KindLabels { group: "batch", plural: "jobs", labels: &[
        NAME, NAMESPACE, ("status.successful", Int("status.succeeded")),
    ], refusal: Refusal { before: "field label ", quoted: true, after: " not supported for batchv1.Job" }},
    KindLabels { group: "certificates.k8s.io", plural: "certificatesigningrequests", refusal: NOT_SUPPORTED, labels: &[
        NAME, ("spec.signerName", Path("spec.signerName")),
    ]},
    // events.k8s.io names mapped to the core names the stored (core-shaped) Event carries.
    KindLabels { group: "events.k8s.io", plural: "events", refusal: NOT_SUPPORTED, labels: &[
        ("reason", Path("reason")),
        ("regarding.kind", Path("involvedObject.kind")),
        ("regarding.namespace", Path("involvedObject.namespace")),
        ("regarding.name", Path("involvedObject.name")),
        ("regarding.uid", Path("involvedObject.uid")),
        ("regarding.apiVersion", Path("involvedObject.apiVersion")),
        ("regarding.resourceVersion", Path("involvedObject.resourceVersion")),
        ("regarding.fieldPath", Path("involvedObject.fieldPath")),
        ("reportingController", Path("reportingComponent")),
        ("source", EventSource),
        ("type", Path("type")),
        NAMESPACE, NAME,
    ]},
    KindLabels { group: "resource.k8s.io", plural: "resourceslices", labels: &[
        NAME, ("spec.nodeName", Path("spec.nodeName")), ("spec.driver", Path("spec.driver")),
    ], refusal: Refusal { before: "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: ", quoted: false, after: "" }},
];

/// The field labels of one served resource (kept in [`crate::registry::Resource`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FieldLabels {
    /// `DefaultMetaV1FieldSelectorConversion`: `metadata.name` and `metadata.namespace` (even
    /// for a cluster-scoped kind, whose objects then read `""` there).
    #[default]
    Default,
    /// The kind's own conversion func.
    Kind(&'static KindLabels),
    /// The CRD converter: `metadata.name`, `metadata.namespace` when namespaced, and the
    /// served version's `selectableFields` (CustomResourceFieldSelectors, GA in 1.32).
    Custom,
}

impl FieldLabels {
    /// The labels of a built-in kind.
    pub fn builtin(group: &str, plural: &str) -> Self {
        KINDS
            .iter()
            .find(|k| k.group == group && k.plural == plural)
            .map_or(Self::Default, Self::Kind)
    }
}

/// One term of a converted selector: what to read, and the comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reader {
    Path(String),
    Fixed(Read),
}

/// A `fieldSelector` whose labels the resource accepts, ready to match stored objects.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selection {
    terms: Vec<(Reader, FieldOp, String)>,
}

impl Selection {
    /// Converts every label of `sel` in order (the parser sorted them, as Go's does), failing
    /// with the conversion func's message on the first one refused. `namespaced` and
    /// `selectable` (the version's `selectableFields` paths without the leading dot) matter
    /// for custom resources only.
    pub fn convert(
        sel: &FieldSelector,
        labels: FieldLabels,
        namespaced: bool,
        selectable: &[String],
    ) -> Result<Self, String> {
        let mut terms = Vec::new();
        for r in sel.requirements() {
            let label = r.field.as_str();
            let reader = match labels {
                FieldLabels::Default => match label {
                    "metadata.name" | "metadata.namespace" => Reader::Path(label.into()),
                    _ => {
                        return Err(format!(
                            "{label:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
                        ));
                    }
                },
                FieldLabels::Kind(k) => match k.labels.iter().find(|(l, _)| *l == label) {
                    Some((_, read)) => Reader::Fixed(*read),
                    None => {
                        let shown = if k.refusal.quoted {
                            format!("{label:?}")
                        } else {
                            label.to_string()
                        };
                        return Err(format!("{}{shown}{}", k.refusal.before, k.refusal.after));
                    }
                },
                FieldLabels::Custom => {
                    if label == "metadata.name"
                        || (namespaced && label == "metadata.namespace")
                        || selectable.iter().any(|s| s == label)
                    {
                        Reader::Path(label.into())
                    } else {
                        return Err(format!("field label not supported: {label}"));
                    }
                }
            };
            terms.push((reader, r.op, r.value.clone()));
        }
        Ok(Self { terms })
    }

    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// Whether the stored object `obj` satisfies every term.
    pub fn matches(&self, obj: &Value) -> bool {
        self.terms.iter().all(|(reader, op, want)| {
            let got = match reader {
                Reader::Path(p) => crate::selector::field_value(obj, p),
                Reader::Fixed(read) => value(obj, *read),
            };
            (got == *want) == (*op == FieldOp::Equals)
        })
    }
}

/// The value `read` gives for `obj`, as `ToSelectableFields` prints it.
fn value(obj: &Value, read: Read) -> String {
    let at = |p: &str| crate::selector::field_value(obj, p);
    let present = |p: &str| {
        p.split('.')
            .try_fold(obj, |v, k| v.get(k))
            .is_some_and(|v| !v.is_null())
    };
    match read {
        Path(p) => at(p),
        Bool(p) if present(p) => at(p),
        Bool(_) => "false".into(),
        Int(p) if present(p) => at(p),
        Int(_) => "0".into(),
        FirstPodIp => match obj.pointer("/status/podIPs/0/ip").and_then(Value::as_str) {
            Some(ip) => ip.into(),
            None => at("status.podIP"),
        },
        EventSource => match at("source.component") {
            s if s.is_empty() => at("reportingComponent"),
            s => s,
        },
        Nothing => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn convert(sel: &str, labels: FieldLabels) -> Result<Selection, String> {
        Selection::convert(&FieldSelector::parse(sel).unwrap(), labels, true, &[])
    }

    #[test]
    fn default_kinds_accept_name_and_namespace_only() {
        let cm = FieldLabels::builtin("", "configmaps");
        assert_eq!(cm, FieldLabels::Default);
        assert!(convert("metadata.name=a,metadata.namespace=b", cm).is_ok());
        assert_eq!(
            convert("spec.nope=1", cm).unwrap_err(),
            r#""spec.nope" is not a known field selector: only "metadata.name", "metadata.namespace""#
        );
    }

    #[test]
    fn kinds_with_their_own_func_word_it_their_way() {
        let pods = FieldLabels::builtin("", "pods");
        assert_eq!(
            convert("spec.nope=1", pods).unwrap_err(),
            "field label not supported: spec.nope"
        );
        let jobs = FieldLabels::builtin("batch", "jobs");
        assert_eq!(
            convert("spec.nope=1", jobs).unwrap_err(),
            r#"field label "spec.nope" not supported for batchv1.Job"#
        );
        let slices = FieldLabels::builtin("resource.k8s.io", "resourceslices");
        assert_eq!(
            convert("metadata.namespace=x", slices).unwrap_err(),
            "field label not supported for resource.k8s.io/v1, Kind=ResourceSlice: metadata.namespace"
        );
        // Namespaces and nodes have no namespace label of their own.
        let ns = FieldLabels::builtin("", "namespaces");
        assert_eq!(
            convert("metadata.namespace=x", ns).unwrap_err(),
            "field label not supported: metadata.namespace"
        );
        // The first refused label in sorted order is the one named.
        assert_eq!(
            convert("zzz=1,aaa=2", pods).unwrap_err(),
            "field label not supported: aaa"
        );
    }

    #[test]
    fn values_are_printed_as_to_selectable_fields_does() {
        let pod = json!({"metadata": {"name": "p"}, "spec": {"nodeName": "n1"},
                         "status": {"podIPs": [{"ip": "10.0.0.7"}]}});
        let pods = FieldLabels::builtin("", "pods");
        assert!(
            convert("spec.hostNetwork=false", pods)
                .unwrap()
                .matches(&pod)
        );
        assert!(
            convert("status.podIP=10.0.0.7", pods)
                .unwrap()
                .matches(&pod)
        );
        assert!(convert("spec.host=n1", pods).unwrap().matches(&pod));
        assert!(convert("status.podIPs=", pods).unwrap().matches(&pod));
        let job = json!({"metadata": {"name": "j"}, "status": {}});
        let jobs = FieldLabels::builtin("batch", "jobs");
        assert!(convert("status.successful=0", jobs).unwrap().matches(&job));
        let done = json!({"status": {"succeeded": 2}});
        assert!(convert("status.successful=2", jobs).unwrap().matches(&done));
        let ev = json!({"involvedObject": {"kind": "Pod"}, "reportingComponent": "kubelet"});
        let new = FieldLabels::builtin("events.k8s.io", "events");
        assert!(
            convert(
                "regarding.kind=Pod,reportingController=kubelet,source=kubelet",
                new
            )
            .unwrap()
            .matches(&ev)
        );
        assert!(!convert("regarding.kind!=Pod", new).unwrap().matches(&ev));
    }

    #[test]
    fn custom_resources_take_their_selectable_fields() {
        let sel = FieldSelector::parse("spec.color=red").unwrap();
        let obj = json!({"spec": {"color": "red"}});
        let s = Selection::convert(&sel, FieldLabels::Custom, true, &["spec.color".into()]);
        assert!(s.unwrap().matches(&obj));
        assert_eq!(
            Selection::convert(&sel, FieldLabels::Custom, true, &[]).unwrap_err(),
            "field label not supported: spec.color"
        );
        let ns = FieldSelector::parse("metadata.namespace=a").unwrap();
        assert_eq!(
            Selection::convert(&ns, FieldLabels::Custom, false, &[]).unwrap_err(),
            "field label not supported: metadata.namespace"
        );
    }
}
