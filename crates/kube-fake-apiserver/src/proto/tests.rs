use super::*;
use prost::Message;

/// A JSON object of message `msg` with every field set to a non-zero sample (recursion stops at
/// `depth` 4, so recursive messages such as JSONSchemaProps stay finite).
fn sample(msg: u16, depth: usize) -> Map<String, Value> {
    let mut out = Map::new();
    for fd in table::MSGS[msg as usize] {
        if fd.flags & INLINE != 0 {
            if let T::M(sub) = fd.t {
                out.extend(sample(sub, depth + 1));
            }
            continue;
        }
        let Some(v) = sample_value(fd.t, fd.num, depth) else {
            continue;
        };
        let v = if fd.flags & MAP != 0 {
            json!({"k1": v.clone(), "k2": v})
        } else if fd.flags & REP != 0 {
            json!([v.clone(), v])
        } else {
            v
        };
        out.insert(fd.json.to_string(), v);
    }
    out
}

fn sample_value(t: T, num: u32, depth: usize) -> Option<Value> {
    Some(match t {
        T::Str => json!(format!("s{num}")),
        T::Bytes => json!(STANDARD.encode([0u8, 159, 146, 150, num as u8])),
        T::Bool => json!(true),
        T::I32 => json!(-(num as i64) - 1),
        T::I64 => json!(1_i64 << 40 | num as i64),
        T::F64 => json!(1.5),
        T::M(sub) if depth < 4 => Value::Object(sample(sub, depth + 1)),
        T::M(_) => return None,
        T::Time => json!("2024-01-02T03:04:05Z"),
        T::MicroTime => json!("2024-01-02T03:04:05.123456Z"),
        T::Duration => json!("1m30s"),
        T::IntOrString => json!("25%"),
        T::Quantity => json!("100m"),
        T::RawJson => json!({"a": ["b", 1]}),
        T::OrArray(p) | T::OrBool(p) | T::OrStringArray(p) if depth < 4 => {
            Value::Object(sample(p, depth + 1))
        }
        _ => return None,
    })
}

#[test]
fn every_built_in_kind_round_trips_through_protobuf() {
    assert!(table::KINDS.len() > 200, "{} kinds", table::KINDS.len());
    for (api_version, kind, msg) in table::KINDS {
        let mut obj = sample(*msg, 0);
        obj.insert("apiVersion".into(), json!(api_version));
        obj.insert("kind".into(), json!(kind));
        let obj = Value::Object(obj);
        let body = encode(&obj).unwrap_or_else(|| panic!("{api_version} {kind} encodes"));
        let back = decode(&body).unwrap_or_else(|e| panic!("{api_version} {kind}: {e:?}"));
        assert_eq!(back, obj, "{api_version} {kind}");
    }
}

#[test]
fn kinds_are_sorted_for_lookup() {
    assert!(
        table::KINDS
            .windows(2)
            .all(|w| (w[0].0, w[0].1) < (w[1].0, w[1].1))
    );
    for kind in [
        ("apps/v1", "Deployment"),
        ("apps/v1", "StatefulSetList"),
        ("v1", "Status"),
        ("v1", "Secret"),
        ("autoscaling/v1", "Scale"),
        ("coordination.k8s.io/v1", "Lease"),
        ("events.k8s.io/v1", "Event"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
        ),
        ("meta.k8s.io/v1", "PartialObjectMetadataList"),
    ] {
        assert!(knows(kind.0, kind.1), "{kind:?}");
    }
    assert!(!knows("example.com/v1", "Widget"));
}

/// What client-go sends: the k8s\0 envelope around a prost-encoded object.
fn envelope<M: Message>(api_version: &str, kind: &str, m: &M) -> Vec<u8> {
    use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
    let unk = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.into()),
            kind: Some(kind.into()),
        }),
        raw: Some(m.encode_to_vec()),
        content_encoding: Some(String::new()),
        content_type: Some(String::new()),
    };
    [PREFIX.to_vec(), unk.encode_to_vec()].concat()
}

fn unwrap_envelope<M: Message + Default>(body: &[u8]) -> M {
    use k8s_pb::apimachinery::pkg::runtime::Unknown;
    let unk = Unknown::decode(body.strip_prefix(PREFIX).expect("prefix")).expect("Unknown");
    M::decode(unk.raw.unwrap_or_default().as_slice()).expect("message")
}

#[test]
fn a_lease_keeps_micro_time_and_a_secret_its_binary_data() {
    use k8s_pb::api::coordination::v1::{Lease, LeaseSpec};
    use k8s_pb::api::core::v1::Secret;
    use k8s_pb::apimachinery::pkg::apis::meta::v1::{MicroTime, ObjectMeta};
    let lease = Lease {
        metadata: Some(ObjectMeta {
            name: Some("leader".into()),
            namespace: Some("kube-system".into()),
            ..Default::default()
        }),
        spec: Some(LeaseSpec {
            holder_identity: Some("pod-1_abc".into()),
            lease_duration_seconds: Some(15),
            acquire_time: Some(MicroTime {
                seconds: Some(1_700_000_000),
                nanos: Some(123_456_000),
            }),
            renew_time: Some(MicroTime {
                seconds: Some(1_700_000_010),
                nanos: Some(7_000),
            }),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    };
    let v = decode(&envelope("coordination.k8s.io/v1", "Lease", &lease)).unwrap();
    assert_eq!(
        v,
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
               "metadata": {"name": "leader", "namespace": "kube-system"},
               "spec": {"holderIdentity": "pod-1_abc", "leaseDurationSeconds": 15,
                        "acquireTime": "2023-11-14T22:13:20.123456Z",
                        "renewTime": "2023-11-14T22:13:30.000007Z", "leaseTransitions": 0}})
    );
    let back: Lease = unwrap_envelope(&encode(&v).unwrap());
    assert_eq!(back, lease);

    let mut data = std::collections::BTreeMap::new();
    data.insert("key".to_string(), vec![0u8, 255, 1, 2]);
    let secret = Secret {
        metadata: Some(ObjectMeta {
            name: Some("s".into()),
            ..Default::default()
        }),
        data,
        r#type: Some("Opaque".into()),
        ..Default::default()
    };
    let v = decode(&envelope("v1", "Secret", &secret)).unwrap();
    assert_eq!(v["data"], json!({"key": "AP8BAg=="}));
    assert_eq!(unwrap_envelope::<Secret>(&encode(&v).unwrap()), secret);
}

#[test]
fn volumes_and_probes_inline_their_sources_and_handlers() {
    let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c", "image": "i",
                    "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 5},
                    "ports": [{"containerPort": 80, "protocol": "TCP"}]}],
                 "volumes": [{"name": "v", "configMap": {"name": "cm", "defaultMode": 420}}]}});
    let body = encode(&pod).unwrap();
    let typed: k8s_pb::api::core::v1::Pod = unwrap_envelope(&body);
    let spec = typed.spec.as_ref().unwrap();
    let vs = spec.volumes[0].volume_source.as_ref().unwrap();
    assert_eq!(
        vs.config_map.as_ref().unwrap().default_mode,
        Some(420),
        "{vs:?}"
    );
    let probe = spec.containers[0].readiness_probe.as_ref().unwrap();
    let get = probe.handler.as_ref().unwrap().http_get.as_ref().unwrap();
    assert_eq!(get.port.as_ref().unwrap().str_val.as_deref(), Some("http"));
    assert_eq!(decode(&body).unwrap(), pod);
}

#[test]
fn a_crd_schema_keeps_its_nesting_and_json_values() {
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "foos.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "foos", "singular": "foo", "kind": "Foo", "listKind": "FooList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "required": ["size"],
                        "x-kubernetes-validations": [{"rule": "self.size > 0"}],
                        "properties": {
                            "size": {"type": "integer", "default": 3, "minimum": 1, "maximum": 10.5},
                            "mode": {"type": "string", "enum": ["a", "b"]},
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                            "open": {"type": "object", "additionalProperties": true},
                            "any": {"x-kubernetes-preserve-unknown-fields": true},
                            "list": {"type": "array", "items": {"type": "string"},
                                     "x-kubernetes-list-type": "set"}}}}}},
                "subresources": {"status": {}}}]}});
    let body = encode(&crd).unwrap();
    let typed: k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition =
        unwrap_envelope(&body);
    let props = &typed.spec.as_ref().unwrap().versions[0]
        .schema
        .as_ref()
        .unwrap()
        .open_apiv3_schema
        .as_ref()
        .unwrap()
        .properties["spec"];
    assert_eq!(props.required, vec!["size".to_string()]);
    assert_eq!(
        props.properties["size"]
            .default
            .as_ref()
            .unwrap()
            .raw
            .as_deref(),
        Some(&b"3"[..])
    );
    assert_eq!(props.properties["size"].maximum, Some(10.5));
    assert_eq!(
        props.properties["open"]
            .additional_properties
            .as_ref()
            .unwrap()
            .allows,
        Some(true)
    );
    assert_eq!(decode(&body).unwrap(), crd);
}

#[test]
fn zero_values_follow_go_json() {
    use k8s_pb::api::apps::v1::{Deployment, DeploymentSpec};
    // What Go writes for a Deployment scaled to zero: every non-pointer field, zero or not.
    let d = Deployment {
        metadata: Some(Default::default()),
        spec: Some(DeploymentSpec {
            replicas: Some(0),
            min_ready_seconds: Some(0),
            paused: Some(false),
            ..Default::default()
        }),
        status: Some(Default::default()),
    };
    let v = decode(&envelope("apps/v1", "Deployment", &d)).unwrap();
    assert_eq!(
        v,
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {},
               "spec": {"replicas": 0}, "status": {}})
    );
    // An Ingress backend's port by name: Go also writes `number: 0`, which JSON omits (keeping it
    // would read as both a name and a number).
    use k8s_pb::api::networking::v1::{IngressBackend, IngressServiceBackend, ServiceBackendPort};
    let backend = IngressBackend {
        service: Some(IngressServiceBackend {
            name: Some("web".into()),
            port: Some(ServiceBackendPort {
                name: Some("http".into()),
                number: Some(0),
            }),
        }),
        resource: None,
    };
    let mut m = Map::new();
    message(&backend.encode_to_vec(), backend_index(), &mut m, 0).unwrap();
    assert_eq!(
        Value::Object(m),
        json!({"service": {"name": "web", "port": {"name": "http"}}})
    );
}

/// The table index of networking/v1 `IngressBackend`, through `Ingress.spec.defaultBackend`.
fn backend_index() -> u16 {
    let ingress = message_of("networking.k8s.io/v1", "Ingress").unwrap();
    let field = |msg: u16, name: &str| match table::MSGS[msg as usize]
        .iter()
        .find(|f| f.json == name)
        .unwrap()
        .t
    {
        T::M(i) => i,
        other => panic!("{other:?}"),
    };
    field(field(ingress, "spec"), "defaultBackend")
}

#[test]
fn a_watch_frame_is_length_prefixed_and_wraps_the_envelope() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"a": "b"}});
    let frame = watch_frame("ADDED", &cm).unwrap();
    let len = u32::from_be_bytes(frame[..4].try_into().unwrap()) as usize;
    assert_eq!(len, frame.len() - 4);
    let ev = k8s_pb::apimachinery::pkg::apis::meta::v1::WatchEvent::decode(&frame[4..]).unwrap();
    assert_eq!(ev.r#type.as_deref(), Some("ADDED"));
    let raw = ev.object.unwrap().raw.unwrap();
    assert_eq!(decode(&raw).unwrap(), cm);
    assert!(
        watch_frame(
            "ADDED",
            &json!({"apiVersion": "example.com/v1", "kind": "Widget"})
        )
        .is_none()
    );
}

#[test]
fn bad_bodies_are_errors_and_custom_resources_get_the_servers_message() {
    assert!(matches!(decode(b"{}"), Err(DecodeError::Malformed(_))));
    assert!(matches!(
        decode(b"k8s\x00\x0a\xff"),
        Err(DecodeError::Malformed(_))
    ));
    let widget = envelope(
        "example.com/v1",
        "Widget",
        &k8s_pb::apimachinery::pkg::apis::meta::v1::Status::default(),
    );
    let e = decode(&widget).unwrap_err();
    assert_eq!(
        e.message(),
        "Widget in version \"v1\" cannot be handled as a Widget: object *unstructured.Unstructured does not implement the protobuf marshalling interface and cannot be encoded to a protobuf message"
    );
}

#[test]
fn go_durations_print_and_parse() {
    for (n, s) in [
        (0, "0s"),
        (1_500_000_000, "1.5s"),
        (90_000_000_000, "1m30s"),
        (3_600_000_000_000, "1h0m0s"),
        (100_000_000, "100ms"),
    ] {
        assert_eq!(go_duration(n), s);
        assert_eq!(parse_go_duration(s), Some(n));
    }
}

#[test]
fn accept_headers_pick_protobuf_as_client_go_sends_them() {
    let go = "application/vnd.kubernetes.protobuf, application/json";
    assert_eq!(wanted(go, true), Wanted::Protobuf);
    assert_eq!(wanted("application/json", true), Wanted::Json);
    assert_eq!(wanted("", true), Wanted::Json);
    let meta = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json";
    assert_eq!(wanted(meta, true), Wanted::Protobuf);
    assert_eq!(wanted(meta, false), Wanted::Json);
    assert_eq!(
        wanted("application/json;as=Table;v=v1;g=meta.k8s.io", true),
        Wanted::Json
    );
}

#[test]
fn k8s_openapis_resource_kinds_all_have_a_protobuf_form() {
    use k8s_openapi::Resource;
    fn kind<R: Resource>() -> (&'static str, &'static str) {
        (R::API_VERSION, R::KIND)
    }
    use k8s_openapi::api::{
        admissionregistration::v1 as adm, apps::v1 as apps, autoscaling::v2 as hpa,
        batch::v1 as batch, certificates::v1 as cert, coordination::v1 as coord, core::v1 as core,
        discovery::v1 as disc, events::v1 as events, flowcontrol::v1 as flow,
        networking::v1 as net, node::v1 as node, policy::v1 as policy, rbac::v1 as rbac,
        resource::v1 as dra, scheduling::v1 as sched, storage::v1 as storage,
    };
    use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
    use k8s_openapi::kube_aggregator::pkg::apis::apiregistration::v1 as apireg;
    for (api_version, k) in [
        kind::<adm::MutatingWebhookConfiguration>(),
        kind::<adm::ValidatingAdmissionPolicyBinding>(),
        kind::<apps::ControllerRevision>(),
        kind::<apps::DaemonSet>(),
        kind::<apps::ReplicaSet>(),
        kind::<hpa::HorizontalPodAutoscaler>(),
        kind::<batch::CronJob>(),
        kind::<cert::CertificateSigningRequest>(),
        kind::<coord::Lease>(),
        kind::<core::PersistentVolumeClaim>(),
        kind::<core::ServiceAccount>(),
        kind::<core::Endpoints>(),
        kind::<core::LimitRange>(),
        kind::<core::ResourceQuota>(),
        kind::<core::Node>(),
        kind::<disc::EndpointSlice>(),
        kind::<events::Event>(),
        kind::<flow::FlowSchema>(),
        kind::<net::Ingress>(),
        kind::<net::NetworkPolicy>(),
        kind::<node::RuntimeClass>(),
        kind::<policy::PodDisruptionBudget>(),
        kind::<rbac::ClusterRoleBinding>(),
        kind::<dra::ResourceClaim>(),
        kind::<sched::PriorityClass>(),
        kind::<storage::StorageClass>(),
        kind::<storage::CSIDriver>(),
        kind::<apiext::CustomResourceDefinition>(),
        kind::<apireg::APIService>(),
    ] {
        assert!(knows(api_version, k), "{api_version} {k}");
        assert!(
            knows(api_version, &format!("{k}List")),
            "{api_version} {k}List"
        );
    }
}
