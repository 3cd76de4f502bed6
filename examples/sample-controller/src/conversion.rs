//! What the generated conversions of `Foo` cannot know: `v1alpha1`'s `spec.deploymentName`
//! is `v1beta1`'s `spec.deployment.name`. Everything else (`replicas`, `status`, metadata)
//! maps by name and is converted by generated code; anything a version cannot hold travels in
//! the `kube-codegen.io/conversion-data` annotation.

use std::sync::Arc;

use kube_codegen_runtime::conversion::{ConversionError, KindConversion};

use crate::samplecontroller::conversion::{FooConversion, FooHooks};
use crate::samplecontroller::v1alpha1;
use crate::samplecontroller::v1beta1::{self, FooSpecDeployment};

/// Maps `spec.deploymentName` (v1alpha1) <-> `spec.deployment.name` (v1beta1, the hub).
#[derive(Clone, Copy, Debug, Default)]
pub struct DeploymentNameHooks;

impl FooHooks for DeploymentNameHooks {
    fn v1alpha1_spec_deployment_name_to_hub(
        &self,
        from: &v1alpha1::Foo,
        to: &mut v1beta1::Foo,
    ) -> Result<(), ConversionError> {
        let name = from.spec.as_ref().and_then(|s| s.deployment_name.clone());
        if let (Some(name), Some(spec)) = (name, to.spec.as_mut()) {
            spec.deployment = Some(FooSpecDeployment { name: Some(name) });
        }
        Ok(())
    }

    fn v1alpha1_spec_deployment_name_from_hub(
        &self,
        from: &v1beta1::Foo,
        to: &mut v1alpha1::Foo,
    ) -> Result<(), ConversionError> {
        if let Some(spec) = to.spec.as_mut() {
            spec.deployment_name = from
                .spec
                .as_ref()
                .and_then(|s| s.deployment.as_ref())
                .and_then(|d| d.name.clone());
        }
        Ok(())
    }
}

/// `Foo`'s conversions with [`DeploymentNameHooks`], ready for the runtime's webhook.
pub fn foo_conversion() -> Arc<dyn KindConversion> {
    Arc::new(FooConversion::with_hooks(DeploymentNameHooks))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deployment_name_maps_both_ways_without_the_annotation() {
        let c = foo_conversion();
        let alpha = json!({
            "apiVersion": "samplecontroller.k8s.io/v1alpha1",
            "kind": "Foo",
            "metadata": {"name": "example-foo", "namespace": "default"},
            "spec": {"deploymentName": "example-foo", "replicas": 1},
            "status": {"availableReplicas": 1}
        });
        let beta = c.convert(alpha.clone(), "v1beta1").unwrap();
        assert_eq!(
            beta,
            json!({
                "apiVersion": "samplecontroller.k8s.io/v1beta1",
                "kind": "Foo",
                "metadata": {"name": "example-foo", "namespace": "default"},
                "spec": {"deployment": {"name": "example-foo"}, "replicas": 1},
                "status": {"availableReplicas": 1}
            })
        );
        assert_eq!(c.convert(beta, "v1alpha1").unwrap(), alpha);
        assert_eq!(c.versions(), ["v1beta1", "v1alpha1"]);
    }
}
