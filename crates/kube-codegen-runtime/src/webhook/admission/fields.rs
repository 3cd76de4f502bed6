//! Field errors as apimachinery's `field.Error` words them, gathered into the 422 `Invalid`
//! answer kube-apiserver gives (`apierrors.NewInvalid`).

use kube_codegen_crd::Cause;
use kube_codegen_crd::gofmt::{go_error_value, go_quote};
use serde::Serialize;
use serde_json::Value;

use crate::validation::ValidationErrors;

/// A list of field errors (Go's `field.ErrorList`), each worded as `field.Error.ErrorBody`:
/// `Invalid value: "Foo_Bar": <detail>`, `Required value`, `Forbidden: <detail>`,
/// `Unsupported value: "x": supported values: "a", "b"`.
///
/// ```
/// # use kube_codegen_runtime::webhook::admission::FieldErrors;
/// let mut errs = FieldErrors::new();
/// errs.invalid("spec.deploymentName", "Foo_Bar", "must be lower case");
/// errs.required("spec.replicas", "");
/// let e = errs.into_result("samplecontroller.k8s.io", "Foo", "example").unwrap_err();
/// assert_eq!(
///     e.status().message,
///     "Foo.samplecontroller.k8s.io \"example\" is invalid: [spec.deploymentName: Invalid value: \
///      \"Foo_Bar\": must be lower case, spec.replicas: Required value]"
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldErrors {
    causes: Vec<Cause>,
}

impl FieldErrors {
    /// No errors.
    pub fn new() -> Self {
        FieldErrors::default()
    }

    /// `field.Invalid(path, value, detail)` (reason `FieldValueInvalid`).
    pub fn invalid(&mut self, field: &str, value: impl Serialize, detail: &str) -> &mut Self {
        let v = serde_json::to_value(value).unwrap_or(Value::Null);
        self.push(
            "FieldValueInvalid",
            field,
            format!("Invalid value: {}", go_error_value(&v)),
            detail,
        )
    }

    /// `field.Required(path, detail)` (reason `FieldValueRequired`).
    pub fn required(&mut self, field: &str, detail: &str) -> &mut Self {
        self.push("FieldValueRequired", field, "Required value".into(), detail)
    }

    /// `field.Forbidden(path, detail)` (reason `FieldValueForbidden`).
    pub fn forbidden(&mut self, field: &str, detail: &str) -> &mut Self {
        self.push("FieldValueForbidden", field, "Forbidden".into(), detail)
    }

    /// `field.NotSupported(path, value, valid)` (reason `FieldValueNotSupported`).
    pub fn not_supported(
        &mut self,
        field: &str,
        value: impl Serialize,
        valid: &[&str],
    ) -> &mut Self {
        let v = serde_json::to_value(value).unwrap_or(Value::Null);
        let detail = if valid.is_empty() {
            String::new()
        } else {
            let quoted: Vec<String> = valid.iter().map(|s| go_quote(s)).collect();
            format!("supported values: {}", quoted.join(", "))
        };
        self.push(
            "FieldValueNotSupported",
            field,
            format!("Unsupported value: {}", go_error_value(&v)),
            &detail,
        )
    }

    /// A cause as it is.
    pub fn push_cause(&mut self, cause: Cause) -> &mut Self {
        self.causes.push(cause);
        self
    }

    fn push(&mut self, reason: &str, field: &str, mut body: String, detail: &str) -> &mut Self {
        if !detail.is_empty() {
            body.push_str(": ");
            body.push_str(detail);
        }
        self.causes.push(Cause::new(reason, field, body));
        self
    }

    /// Whether there is none.
    pub fn is_empty(&self) -> bool {
        self.causes.is_empty()
    }

    /// The causes so far.
    pub fn causes(&self) -> &[Cause] {
        &self.causes
    }

    /// `Ok` when empty, else the 422 about object `name` of `kind` in `group`
    /// ([`ValidationErrors::status`] is the answer's status).
    pub fn into_result(self, group: &str, kind: &str, name: &str) -> Result<(), ValidationErrors> {
        if self.causes.is_empty() {
            Ok(())
        } else {
            Err(ValidationErrors::new(group, kind, name, self.causes))
        }
    }

    /// [`FieldErrors::into_result`] about `obj` (its kind, group and name).
    pub fn into_result_for<K>(self, obj: &K) -> Result<(), ValidationErrors>
    where
        K: k8s_openapi::Resource
            + k8s_openapi::Metadata<Ty = k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta>,
    {
        let name = obj.metadata().name.as_deref().unwrap_or("");
        self.into_result(K::GROUP, K::KIND, name)
    }
}

impl Extend<Cause> for FieldErrors {
    fn extend<T: IntoIterator<Item = Cause>>(&mut self, iter: T) {
        self.causes.extend(iter);
    }
}
