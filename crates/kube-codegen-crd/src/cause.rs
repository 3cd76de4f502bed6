//! One field error, in the words kube-apiserver uses for a 422 `Invalid` answer.

/// One field error, rendered into a `Status.details.causes` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cause {
    /// `FieldValueInvalid`, `FieldValueRequired`, `FieldValueNotSupported`, `FieldValueForbidden`,
    /// `FieldValueDuplicate`, `FieldValueTypeInvalid`, ...
    pub reason: String,
    /// The error body as the server puts it in a cause, e.g.
    /// `Invalid value: 11: spec.replicas in body should be less than or equal to 10`.
    pub message: String,
    /// Field path as the server prints it, e.g. `spec.replicas`.
    pub field: String,
}

impl Cause {
    /// A cause from its three parts.
    pub fn new(reason: &str, field: impl Into<String>, message: impl Into<String>) -> Cause {
        Cause {
            reason: reason.into(),
            message: message.into(),
            field: field.into(),
        }
    }
}

impl std::fmt::Display for Cause {
    /// `<field>: <message>`, the form the server joins into a 422 `Status.message`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// The `Status.message` of a 422 for `causes`, as the server words it:
/// `CronTab.stable.example.com "my-crontab" is invalid: [spec.a: ..., spec.b: ...]`
/// (no brackets for a single cause). `qualified_kind` is `<Kind>.<group>` (just `<Kind>` for core).
pub fn invalid_message(qualified_kind: &str, name: &str, causes: &[Cause]) -> String {
    let body = match causes {
        [] => String::new(),
        [one] => format!(": {one}"),
        many => {
            let parts: Vec<String> = many.iter().map(ToString::to_string).collect();
            format!(": [{}]", parts.join(", "))
        }
    };
    format!("{qualified_kind} {name:?} is invalid{body}")
}
