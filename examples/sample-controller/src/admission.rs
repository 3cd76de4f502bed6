//! Foo's admission webhooks, served by `sample-conversion-webhook` beside its conversion
//! webhook: defaulting (`spec.replicas` is 1 when absent) and validating (`spec.deploymentName`
//! must name a Deployment: present, and a DNS-1123 label, with apimachinery's message), each
//! after the generated schema checks of `v1alpha1` (replicas 1 to 10).

use kube_codegen_runtime::webhook::admission::{
    self, AdmissionError, AdmissionRequest, Defaulting, FieldErrors, Validating, Validator,
    Verdict, k8s_validation,
};

use crate::samplecontroller::v1alpha1::{Foo, FooSpec};

/// The replicas a Foo gets when it says none (upstream's example Foo asks for 1).
pub const DEFAULT_REPLICAS: i32 = 1;

/// Sets `spec.replicas` to [`DEFAULT_REPLICAS`] when absent.
pub fn default_foo(_: &AdmissionRequest, foo: &mut Foo) -> Result<(), AdmissionError> {
    let spec = foo.spec.get_or_insert_with(FooSpec::default);
    spec.replicas.get_or_insert(DEFAULT_REPLICAS);
    Ok(())
}

/// Refuses a Foo whose `spec.deploymentName` is missing or not a DNS-1123 label (the name a
/// Deployment it owns gets). Updates are checked alike; deletes are not.
#[derive(Debug, Clone, Copy, Default)]
pub struct FooValidator;

impl FooValidator {
    fn check(foo: &Foo) -> Verdict {
        let mut errs = FieldErrors::new();
        match foo.spec.as_ref().and_then(|s| s.deployment_name.as_deref()) {
            None | Some("") => {
                errs.required("spec.deploymentName", "");
            }
            Some(name) => {
                for message in k8s_validation::dns1123_label(name) {
                    errs.invalid("spec.deploymentName", name, &message);
                }
            }
        }
        errs.into_result_for(foo).into()
    }
}

impl Validator<Foo> for FooValidator {
    fn validate_create(&self, _: &AdmissionRequest, foo: &Foo) -> Verdict {
        FooValidator::check(foo)
    }

    fn validate_update(&self, _: &AdmissionRequest, _: &Foo, foo: &Foo) -> Verdict {
        FooValidator::check(foo)
    }
}

/// The defaulting webhook, at `/mutate-samplecontroller-k8s-io-v1alpha1-foo`.
pub fn foo_defaulting() -> Defaulting<Foo> {
    admission::defaulting::<Foo>(default_foo)
}

/// The validating webhook, at `/validate-samplecontroller-k8s-io-v1alpha1-foo`.
pub fn foo_validating() -> Validating<Foo> {
    admission::validating::<Foo>(FooValidator)
}
