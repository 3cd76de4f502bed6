//! Client-side validation of the GENERATED `Gizmo` (`crds/gizmo.yaml`, `--emit validation`)
//! against the in-memory API server, which admits writes through the same validator:
//! `validate()` answers exactly the causes of the server's 422 for the same object (compared
//! as the whole `Status`), `validate_update()` runs the transition rule and ratchets an
//! unchanged value that a tightened schema now refuses, as the server does, and
//! `apply_defaults()` fills in what the server stores.

use buildrs_example::example::v1::{
    Gizmo, GizmoSpec, GizmoSpecNetwork, GizmoSpecNetworkExposure, GizmoSpecSchedule,
};
use kube::api::{Api, PostParams};
use kube::core::Status;
use kube_codegen_runtime::validation::{Cause, ValidationErrors};
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

fn crd() -> Value {
    serde_saphyr::from_str(include_str!("../crds/gizmo.yaml")).expect("CRD parses")
}

async fn start(crd: Value) -> (FakeApiServer, Api<Gizmo>) {
    let server = FakeApiServer::start().await.expect("server starts");
    server.register_crd(crd).expect("CRD registers");
    let api = Api::namespaced(server.client(), "default");
    (server, api)
}

fn gizmo(name: &str, spec: GizmoSpec) -> Gizmo {
    let mut g = Gizmo {
        spec: Some(spec),
        ..Gizmo::default()
    };
    g.metadata.name = Some(name.to_owned());
    g.metadata.namespace = Some("default".to_owned());
    g
}

fn spec(name: &str) -> GizmoSpec {
    GizmoSpec {
        name: name.to_owned(),
        ..GizmoSpec::default()
    }
}

/// The `Status` of the server's answer to a write that must fail.
fn refusal<T: std::fmt::Debug>(result: Result<T, kube::Error>) -> Status {
    match result {
        Err(kube::Error::Api(status)) => *status,
        other => panic!("expected the server to refuse the write, got {other:?}"),
    }
}

/// The server's `details.causes` as the validator's `Cause`s.
fn causes_of(status: &Status) -> Vec<Cause> {
    status
        .details
        .as_ref()
        .expect("a 422 has details")
        .causes
        .iter()
        .map(|c| Cause::new(&c.reason, c.field.clone(), c.message.clone()))
        .collect()
}

/// The local answer and the server's agree: same causes, same `Status` body.
fn assert_same(local: &ValidationErrors, server: &Status) {
    assert_eq!(local.causes(), causes_of(server), "{local}");
    assert_eq!(&local.status(), server);
    let converted: kube::Error = local.clone().into();
    assert!(matches!(converted, kube::Error::Api(ref s) if **s == *server));
}

#[tokio::test]
async fn validate_answers_the_causes_of_the_servers_422_on_create() {
    let (server, api) = start(crd()).await;
    let pp = PostParams::default();

    // Three CEL rules broken at once: a message (with minReplicas against maxReplicas's
    // default, which takes part as on the server), a messageExpression, and a reason with a
    // fieldPath.
    let rules = gizmo(
        "rules",
        GizmoSpec {
            min_replicas: Some(20),
            size: Some(3),
            schedule: Some(GizmoSpecSchedule {
                paused: Some(true),
                cron: Some("@daily".to_owned()),
            }),
            ..spec("a")
        },
    );
    let local = rules.validate().expect_err("the rules are broken");
    assert_eq!(
        local.causes(),
        [
            Cause::new(
                "FieldValueInvalid",
                "spec",
                "Invalid value: minReplicas must not exceed maxReplicas"
            ),
            Cause::new(
                "FieldValueForbidden",
                "spec.schedule.cron",
                "Forbidden: a paused schedule has no cron"
            ),
            Cause::new(
                "FieldValueInvalid",
                "spec.size",
                "Invalid value: 3: size must be even, not a positive odd number"
            ),
        ]
    );
    // What `kubectl create -f` prints for this object (kubectl 1.32 against kube-fake-apiserver),
    // without its final newline.
    assert_eq!(
        local.to_string(),
        "The Gizmo \"rules\" is invalid: \n\
         * spec: Invalid value: minReplicas must not exceed maxReplicas\n\
         * spec.schedule.cron: Forbidden: a paused schedule has no cron\n\
         * spec.size: Invalid value: 3: size must be even, not a positive odd number"
    );
    assert_eq!(local.name(), "rules");
    assert_eq!(local.qualified_kind(), "Gizmo.example.com");
    assert_same(&local, &refusal(api.create(&pp, &rules).await));

    // An OpenAPI bound is a blocking cause: the rules are then skipped, with one `<nil>` cause.
    let blocking = gizmo(
        "blocking",
        GizmoSpec {
            tier: Some("platinum-plus".to_owned()),
            size: Some(3),
            ..spec("b")
        },
    );
    let local = blocking.validate().expect_err("tier is too long");
    assert_eq!(local.causes().len(), 2, "{local}");
    assert_eq!(local.causes()[0].reason, "FieldValueTooLong");
    assert_eq!(local.causes()[1].field, "<nil>");
    assert_eq!(
        local.to_string(),
        "The Gizmo \"blocking\" is invalid: \n\
         * spec.tier: Too long: may not be more than 8 bytes\n\
         * <nil>: Invalid value: null: some validation rules were not checked because the object \
         was invalid; correct the existing errors to complete validation"
    );
    assert_same(&local, &refusal(api.create(&pp, &blocking).await));

    // A valid object passes both, and validation left it as it was.
    let fine = gizmo("fine", spec("c"));
    let before = fine.clone();
    assert_eq!(fine.validate(), Ok(()));
    assert_eq!(fine, before);
    api.create(&pp, &fine).await.expect("the server accepts it");
    server.shutdown().await;
}

#[tokio::test]
async fn validate_update_runs_the_transition_rule_and_ratchets_like_the_server() {
    // The object is stored under a looser schema: no maxLength on tier, no rule on size.
    let mut loose = crd();
    let props = loose
        .pointer_mut("/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties")
        .expect("spec properties");
    props["tier"]
        .as_object_mut()
        .expect("tier")
        .remove("maxLength");
    props["size"]
        .as_object_mut()
        .expect("size")
        .remove("x-kubernetes-validations");
    let (server, api) = start(loose).await;
    let pp = PostParams::default();
    let legacy = GizmoSpec {
        tier: Some("platinum-plus".to_owned()),
        size: Some(3),
        ..spec("first")
    };
    api.create(&pp, &gizmo("old", legacy))
        .await
        .expect("the loose schema admits it");

    // The schema tightens; the stored object no longer passes on create...
    server.register_crd(crd()).expect("CRD updates");
    let old = api.get("old").await.expect("stored");
    let on_create = old.validate().expect_err("tier and size are invalid now");
    assert_eq!(
        on_create
            .causes()
            .iter()
            .map(|c| c.field.as_str())
            .collect::<Vec<_>>(),
        ["spec.tier", "<nil>"]
    );

    // ...but an update that leaves tier and size alone is admitted (ratcheting), here and there.
    let mut scaled = old.clone();
    scaled.spec.as_mut().expect("spec").max_replicas = Some(5);
    assert_eq!(scaled.validate_update(&old), Ok(()));
    let stored = api
        .replace("old", &pp, &scaled)
        .await
        .expect("the server ratchets too");

    // The transition rule: the name is immutable.
    let mut renamed = stored.clone();
    renamed.spec.as_mut().expect("spec").name = "second".to_owned();
    let local = renamed
        .validate_update(&stored)
        .expect_err("the name changed");
    assert_eq!(
        local.causes(),
        [Cause::new(
            "FieldValueInvalid",
            "spec.name",
            "Invalid value: \"second\": immutable"
        )]
    );
    assert_same(&local, &refusal(api.replace("old", &pp, &renamed).await));

    // A ratcheted value that changes is checked again.
    let mut longer = stored.clone();
    longer.spec.as_mut().expect("spec").tier = Some("platinum-plus-plus".to_owned());
    let local = longer
        .validate_update(&stored)
        .expect_err("tier changed and is too long");
    assert_eq!(local.causes()[0].field, "spec.tier");
    assert_same(&local, &refusal(api.replace("old", &pp, &longer).await));
    server.shutdown().await;
}

#[tokio::test]
async fn apply_defaults_fills_nested_defaults_as_the_server_stores_them() {
    let (server, api) = start(crd()).await;

    // Deserializing never applies defaults: a value read from JSON is what was sent.
    let parsed: Gizmo = serde_json::from_value(json!({
        "apiVersion": "example.com/v1",
        "kind": "Gizmo",
        "metadata": {"name": "parsed"},
        "spec": {"name": "p"},
    }))
    .expect("parses");
    let parsed_spec = parsed.spec.as_ref().expect("spec");
    assert_eq!(parsed_spec.network, None);
    assert_eq!(parsed_spec.min_replicas, None);

    let mut g = gizmo(
        "defaults",
        GizmoSpec {
            schedule: Some(GizmoSpecSchedule {
                cron: Some("@daily".to_owned()),
                ..GizmoSpecSchedule::default()
            }),
            ..spec("d")
        },
    );
    let created = api
        .create(&PostParams::default(), &g)
        .await
        .expect("created");
    g.apply_defaults();
    let s = g.spec.as_ref().expect("spec");
    assert_eq!(
        s.network,
        Some(GizmoSpecNetwork {
            protocol: Some("TCP".to_owned()),
            port: Some(8080),
            exposure: Some(GizmoSpecNetworkExposure {
                public: Some(false)
            }),
        })
    );
    assert_eq!((s.min_replicas, s.max_replicas), (Some(1), Some(10)));
    assert_eq!(s.schedule.as_ref().expect("schedule").paused, Some(false));
    assert_eq!(g.spec, created.spec, "what the server stored");

    // Set values stay; defaulting twice changes nothing more.
    let mut custom = gizmo(
        "custom",
        GizmoSpec {
            network: Some(GizmoSpecNetwork {
                port: Some(9090),
                ..GizmoSpecNetwork::default()
            }),
            ..spec("e")
        },
    );
    custom.apply_defaults();
    let once = custom.clone();
    custom.apply_defaults();
    assert_eq!(custom, once);
    let network = once.spec.expect("spec").network.expect("network");
    assert_eq!(network.port, Some(9090));
    assert_eq!(network.protocol.as_deref(), Some("TCP"));
    server.shutdown().await;
}
