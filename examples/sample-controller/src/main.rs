//! `sample-controller`: for every Foo, keeps a Deployment of `spec.replicas` nginx pods and
//! reports its available replicas in the Foo's status (kubernetes/sample-controller's
//! `main.go`). See README.md.

use std::process::ExitCode;

use clap::Parser;
use k8s_openapi::api::apps::v1::Deployment;
use kube_codegen_runtime::controller::{self, ApiWrites, Controller, ControllerFlags, Shutdown};
use kube_codegen_runtime::events::{Recorder, Reporter};
use kube_codegen_runtime::shard::{MembershipConfig, ShardKey, ShardRing};
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
    /// Share the Foos with the other replicas running with the same ring NAME instead of
    /// electing a leader: each replica holds a Lease labelled with the ring (in
    /// --leader-elect-lease-namespace, with the --leader-elect-* timings) and caches and
    /// reconciles only its share of the Foos (see --shard-by).
    #[arg(long, value_name = "NAME", conflicts_with = "leader_elect")]
    shard_ring: Option<String>,
    /// What a Foo is hashed by in ring mode: its namespace (a namespace's Foos and Deployments
    /// on one replica; wants more namespaces than replicas) or its uid (the Foos shared one by
    /// one, each Deployment cached by its Foo's replica, every replica reading all Deployments).
    #[arg(long, value_enum, default_value = "namespace", requires = "shard_ring")]
    shard_by: ShardBy,
    /// Print the RBAC objects this controller needs, as run with these flags, for the
    /// ServiceAccount NAMESPACE/NAME (a JSON List for kubectl apply -f), and exit.
    #[arg(long, value_name = "NAMESPACE/NAME")]
    print_rbac: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ShardBy {
    Namespace,
    Uid,
}

fn main() -> ExitCode {
    let args = Args::parse(); // usage errors exit 2, as clap does
    controller::run_program(CONTROLLER_NAME, |shutdown| run(args, shutdown))
}

async fn run(
    args: Args,
    shutdown: Shutdown,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let Args {
        flags,
        shard_ring,
        shard_by,
        print_rbac,
    } = args;
    let client = match &print_rbac {
        // Nothing is sent: the controller is only built, to read what it needs.
        Some(_) => kube::Client::try_from(kube::Config::new("http://127.0.0.1:1".parse()?))?,
        None => match flags.connect::<Foo>(shutdown.clone()).await? {
            Some(client) => client,
            None => return Ok(()), // a signal during startup
        },
    };
    let identity = controller::unique_identity(CONTROLLER_NAME);
    tracing::info!(identity = %identity, "sample-controller starting");
    let instance = Some(identity.clone());
    let reporter = Reporter {
        controller: CONTROLLER_NAME.to_owned(),
        instance,
    };
    let recorder = Recorder::new(client.clone(), reporter);
    // Ring mode: a Foo and the Deployment it owns on one replica, by their shared namespace or
    // by the Foo's uid (the Deployment hashed by its controller's, filtered in the client).
    let ring = shard_ring.map(|name| {
        let le = &flags.leader_election;
        let ns = &le.leader_elect_lease_namespace;
        let config = MembershipConfig::new(name, identity.clone(), ns).timing(
            le.leader_elect_lease_duration,
            le.leader_elect_renew_deadline,
            le.leader_elect_retry_period,
        );
        let ring = ShardRing::new(client.clone(), config);
        match shard_by {
            ShardBy::Namespace => ring.key(ShardKey::Namespace),
            ShardBy::Uid => ring.key(ShardKey::Uid).follow_owner::<Deployment, Foo>(),
        }
    });
    let mut factory = flags.factory_builder(Clientset::new(client.clone()));
    if let Some(ring) = &ring {
        factory = factory.sharded(ring.scope());
    }
    let factory = factory.build();
    let foos = factory.samplecontroller().v1alpha1().foos();
    let deployments = factory.informer_for::<Deployment>().lister();
    let writes = ApiWrites::new(client, recorder.clone(), CONTROLLER_NAME);
    let sync = FooSync::new(foos.lister(), deployments, writes);
    let controller = Controller::new(&factory, foos.informer())
        .name(CONTROLLER_NAME)
        .owns::<Deployment>()
        .writes_subresource::<Foo>("status", &["update"])
        .recorder(recorder);
    let mut controller = flags.configure(controller);
    if let Some(ring) = ring {
        controller = controller.shard_ring(ring);
    } else if let Some(election) = flags.leader_election.election(&identity, CONTROLLER_NAME) {
        // Only the leader runs informers, as upstream: one watch per kind in the deployment.
        controller = controller.leader_election(election.cold_standby());
    }
    if let Some(sa) = print_rbac {
        let (ns, name) = sa
            .split_once('/')
            .ok_or("--print-rbac takes NAMESPACE/NAME")?;
        let items = controller.permissions().manifests(
            CONTROLLER_NAME,
            ns,
            name,
            flags.namespace.as_deref(),
        );
        let list = serde_json::json!({"apiVersion": "v1", "kind": "List", "items": items});
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    // A lost lease ends here with "leader election lost", after the workers stopped: exit 1,
    // as client-go programs do, and let a restart campaign again.
    Ok(controller.run(sync, shutdown).await?)
}

#[cfg(test)]
mod tests {
    use clap::{CommandFactory, Parser};

    use super::{Args, ShardBy};

    #[test]
    fn shard_ring_flag() {
        Args::command().debug_assert();
        let args = Args::try_parse_from(["sample-controller", "--shard-ring", "foos"]).unwrap();
        assert_eq!(args.shard_ring.as_deref(), Some("foos"));
        assert!(!args.flags.leader_election.leader_elect);
        // Ring mode instead of leader election, never both.
        let both = [
            "sample-controller",
            "--shard-ring",
            "foos",
            "--leader-elect",
        ];
        assert!(Args::try_parse_from(both).is_err());
        assert!(
            Args::try_parse_from(["sample-controller"])
                .unwrap()
                .shard_ring
                .is_none()
        );
        let uid = [
            "sample-controller",
            "--shard-ring",
            "foos",
            "--shard-by",
            "uid",
        ];
        assert_eq!(Args::try_parse_from(uid).unwrap().shard_by, ShardBy::Uid);
        assert_eq!(args.shard_by, ShardBy::Namespace);
        // Only with a ring; only the two keys.
        assert!(Args::try_parse_from(["sample-controller", "--shard-by", "uid"]).is_err());
        let other = [
            "sample-controller",
            "--shard-ring",
            "f",
            "--shard-by",
            "name",
        ];
        assert!(Args::try_parse_from(other).is_err());
    }
}
