//! `sample-controller`: for every Foo, keeps a Deployment of `spec.replicas` nginx pods and
//! reports its available replicas in the Foo's status (kubernetes/sample-controller's
//! `main.go`). See README.md.

use std::process::ExitCode;

use clap::Parser;
use k8s_openapi::api::apps::v1::Deployment;
use kube_codegen_runtime::controller::{self, ApiWrites, Controller, ControllerFlags, Shutdown};
use kube_codegen_runtime::events::{Recorder, Reporter};
use sample_controller::controller::{CONTROLLER_NAME, Controller as FooSync};
use sample_controller::samplecontroller::v1alpha1::Foo;
use sample_controller::{Clientset, InformerFactoryExt};

/// For every Foo (samplecontroller.k8s.io/v1alpha1), keeps a Deployment named by
/// spec.deploymentName with spec.replicas nginx pods, and reports its available replicas in
/// the Foo's status.
#[derive(Debug, Parser)]
#[command(name = "sample-controller", version)]
struct Args {
    #[command(flatten)]
    flags: ControllerFlags,
}

fn main() -> ExitCode {
    let flags = Args::parse().flags; // usage errors exit 2, as clap does
    controller::run_program(CONTROLLER_NAME, |shutdown| run(flags, shutdown))
}

async fn run(
    flags: ControllerFlags,
    shutdown: Shutdown,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let Some(client) = flags.connect::<Foo>(shutdown.clone()).await? else {
        return Ok(()); // a signal during startup
    };
    let identity = controller::unique_identity(CONTROLLER_NAME);
    tracing::info!(identity = %identity, "sample-controller starting");
    let instance = Some(identity.clone());
    let reporter = Reporter {
        controller: CONTROLLER_NAME.to_owned(),
        instance,
    };
    let recorder = Recorder::new(client.clone(), reporter);
    let factory = flags.factory(Clientset::new(client.clone()));
    let foos = factory.samplecontroller().v1alpha1().foos();
    let deployments = factory.informer_for::<Deployment>().lister();
    let writes = ApiWrites::new(client, recorder.clone(), CONTROLLER_NAME);
    let sync = FooSync::new(foos.lister(), deployments, writes);
    let controller = Controller::new(&factory, foos.informer())
        .name(CONTROLLER_NAME)
        .owns::<Deployment>()
        .recorder(recorder);
    let mut controller = flags.configure(controller);
    if let Some(election) = flags.leader_election.election(&identity, CONTROLLER_NAME) {
        // Only the leader runs informers, as upstream: one watch per kind in the deployment.
        controller = controller.leader_election(election.cold_standby());
    }
    // A lost lease ends here with "leader election lost", after the workers stopped: exit 1,
    // as client-go programs do, and let a restart campaign again.
    Ok(controller.run(sync, shutdown).await?)
}
