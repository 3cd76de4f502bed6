//! The in-memory server's side of R1 and S1: sample-controller's Foo CRD, the Foos and the
//! Deployments they own (as sample-controller makes them), seeded and touched through the API.

// The kind is called Foo, so `foo` is the natural name, not a placeholder.
#![allow(clippy::disallowed_names)]

use std::collections::BTreeMap;
use std::io::Write;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{Container, Namespace, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::Api;
use kube::api::{Patch, PatchParams, PostParams};
use kube_codegen_runtime::controller::owners::controller_ref;
use kube_fake_apiserver::{FakeApiServer, ServerBuilder};

use crate::samplecontroller::v1alpha1::{Foo, FooSpec};

const CRD: &str = include_str!("../crds/r1-foo.yaml");

/// Requests in flight at once, seeding and touching.
const IN_FLIGHT: usize = 64;

/// Starts the server `builder` configures, with sample-controller's Foo (`crds/r1-foo.yaml`)
/// registered.
pub async fn start_with_foo_crd(builder: ServerBuilder) -> Result<FakeApiServer, String> {
    let server = builder
        .start()
        .await
        .map_err(|e| format!("starting: {e}"))?;
    let docs = kube_codegen_crd::read::parse_documents("crds/r1-foo.yaml".as_ref(), CRD)
        .map_err(|e| format!("reading the CRD: {e}"))?;
    for doc in docs {
        server
            .register_crd(doc.value)
            .map_err(|e| format!("registering the CRD: {e}"))?;
    }
    Ok(server)
}

/// Prints the server's url (the driver reads up to it, so it comes once seeding is over),
/// then runs the driver's commands, one a line on stdin, answering each with `done`; shuts
/// the server down once stdin ends (the driver closes it when done).
pub async fn answer_driver(
    server: FakeApiServer,
    mut command: impl AsyncFnMut(&FakeApiServer, &str) -> Result<(), String>,
) -> Result<(), String> {
    use tokio::io::AsyncBufReadExt;
    println!("url {}", server.url());
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    let mut stdout = std::io::stdout();
    while let Some(line) = lines.next_line().await.map_err(|e| e.to_string())? {
        command(&server, &line).await?;
        println!("done");
        stdout.flush().map_err(|e| e.to_string())?;
    }
    server.shutdown().await;
    Ok(())
}

/// Foo `i` (`foo-i` in `namespace`, child `dep-i`, 1 to 5 replicas).
pub fn foo_object(i: usize, namespace: String) -> Foo {
    let mut foo = Foo {
        spec: Some(FooSpec {
            deployment_name: Some(format!("dep-{i}")),
            replicas: Some((i % 5 + 1) as i32),
        }),
        ..Foo::default()
    };
    foo.metadata.name = Some(format!("foo-{i}"));
    foo.metadata.namespace = Some(namespace);
    foo
}

/// The Deployment sample-controller makes for `foo` (its `newDeployment`).
pub fn deployment_for(foo: &Foo) -> Deployment {
    let foo_name = foo.metadata.name.clone().unwrap_or_default();
    let labels: BTreeMap<String, String> = [
        ("app".into(), "nginx".into()),
        ("controller".into(), foo_name),
    ]
    .into();
    let spec = foo.spec.as_ref();
    Deployment {
        metadata: ObjectMeta {
            name: spec.and_then(|s| s.deployment_name.clone()),
            namespace: foo.metadata.namespace.clone(),
            owner_references: Some(vec![controller_ref(foo)]),
            ..ObjectMeta::default()
        },
        spec: Some(DeploymentSpec {
            replicas: spec.and_then(|s| s.replicas),
            selector: LabelSelector {
                match_labels: Some(labels.clone()),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(labels),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    containers: vec![Container {
                        name: "nginx".into(),
                        image: Some("nginx:latest".into()),
                        ..Container::default()
                    }],
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    }
}

/// Creates Foos `0..foos`, each in `namespace_of(i)`, and after each its Deployment (the
/// Creates the namespaces `0..n`, named by `name`, 64 requests at a time.
pub async fn create_namespaces(
    client: &kube::Client,
    n: usize,
    name: impl Fn(usize) -> String,
) -> Result<(), String> {
    let api: Api<Namespace> = Api::all(client.clone());
    futures::stream::iter(0..n)
        .map(|i| {
            let api = api.clone();
            let mut ns = Namespace::default();
            ns.metadata.name = Some(name(i));
            async move { api.create(&PostParams::default(), &ns).await.map(drop) }
        })
        .buffer_unordered(64)
        .try_collect::<Vec<()>>()
        .await
        .map(drop)
        .map_err(|e| format!("creating namespaces: {e}"))
}

/// child needs the Foo's uid for its owner reference).
pub async fn seed(
    client: &kube::Client,
    foos: usize,
    namespace_of: impl Fn(usize) -> String,
) -> Result<(), String> {
    futures::stream::iter(0..foos)
        .map(|i| {
            let client = client.clone();
            let ns = namespace_of(i);
            async move {
                let pp = PostParams::default();
                let foo_api: Api<Foo> = Api::namespaced(client.clone(), &ns);
                let dep_api: Api<Deployment> = Api::namespaced(client, &ns);
                let foo = foo_api.create(&pp, &foo_object(i, ns)).await?;
                dep_api.create(&pp, &deployment_for(&foo)).await.map(drop)
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await
        .map_err(|e| format!("seeding: {e}"))?;
    Ok(())
}

/// The Foos a touch labels: `n` spread evenly over `0..foos`.
pub fn touched(foos: usize, n: usize) -> impl Iterator<Item = usize> {
    (0..n).map(move |k| k * foos / n)
}

/// Sets `label` to `value` on Foos `indices`, each in `namespace_of(i)`.
pub async fn touch(
    client: &kube::Client,
    indices: impl Iterator<Item = usize>,
    namespace_of: impl Fn(usize) -> String,
    label: &str,
    value: &str,
) -> Result<(), String> {
    let patch = Patch::Merge(serde_json::json!({"metadata": {"labels": {label: value}}}));
    futures::stream::iter(indices)
        .map(|i| {
            let (client, patch) = (client.clone(), &patch);
            let ns = namespace_of(i);
            async move {
                let api: Api<Foo> = Api::namespaced(client, &ns);
                api.patch(&format!("foo-{i}"), &PatchParams::default(), patch)
                    .await
                    .map(drop)
            }
        })
        .buffer_unordered(IN_FLIGHT)
        .try_collect::<Vec<()>>()
        .await
        .map_err(|e| format!("touching: {e}"))?;
    Ok(())
}
