//! The workload status stand-ins: StatefulSets, DaemonSets and ReplicaSets report ready and Jobs
//! complete a set delay after each new generation, with kube-controller-manager's fields; off by
//! default.
use crate::common;

use std::time::Duration;

use common::*;
use kube_fake_apiserver::{FakeApiServer, KindSpec};
use serde_json::{Value, json};

/// Registers the workload kinds the served table may not have yet on this branch.
fn register(s: &FakeApiServer) {
    for spec in [
        KindSpec::namespaced("apps", "v1", "StatefulSet", "statefulsets"),
        KindSpec::namespaced("apps", "v1", "DaemonSet", "daemonsets"),
        KindSpec::namespaced("apps", "v1", "ReplicaSet", "replicasets"),
        KindSpec::namespaced("batch", "v1", "Job", "jobs"),
    ] {
        let _ = s.register_kind(spec);
    }
}

fn workload(kind: &str, name: &str, replicas: i64) -> Value {
    json!({"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name},
        "spec": {"replicas": replicas, "serviceName": name, "selector": {"matchLabels": {"app": name}},
                 "template": {"metadata": {"labels": {"app": name}},
                              "spec": {"containers": [{"name": "c", "image": "i"}]}}}})
}

const APPS: &str = "/apis/apps/v1/namespaces/default";
const JOBS: &str = "/apis/batch/v1/namespaces/default/jobs";

#[tokio::test]
async fn workloads_report_ready_after_their_delay() {
    let s = FakeApiServer::builder()
        .statefulsets_become_ready(Some(Duration::from_millis(300)))
        .daemonsets_become_ready(Some(Duration::from_millis(300)))
        .replicasets_become_ready(Some(Duration::from_millis(300)))
        .start()
        .await
        .unwrap();
    register(&s);
    let c = s.in_process_client();
    for (kind, plural) in [
        ("StatefulSet", "statefulsets"),
        ("DaemonSet", "daemonsets"),
        ("ReplicaSet", "replicasets"),
    ] {
        let mut w = workload(kind, "w", 3);
        if kind == "DaemonSet" {
            w["spec"].as_object_mut().unwrap().remove("replicas");
        }
        assert_eq!(post(&c, &format!("{APPS}/{plural}"), w).await.code, 201);
    }
    // Not before the delay.
    let sts = get(&c, &format!("{APPS}/statefulsets/w")).await.body;
    assert!(sts["status"].get("readyReplicas").is_none(), "{sts}");

    let sts = eventually("the StatefulSet is ready", || async {
        let v = get(&c, &format!("{APPS}/statefulsets/w")).await.body;
        (v["status"]["readyReplicas"] == 3).then_some(v)
    })
    .await;
    let st = &sts["status"];
    for f in [
        "replicas",
        "currentReplicas",
        "updatedReplicas",
        "availableReplicas",
    ] {
        assert_eq!(st[f], 3, "{f}: {st}");
    }
    assert_eq!(st["observedGeneration"], sts["metadata"]["generation"]);
    assert_eq!(st["currentRevision"], st["updateRevision"]);
    assert!(st["currentRevision"].as_str().unwrap().starts_with("w-"));

    let ds = eventually("the DaemonSet is ready", || async {
        let v = get(&c, &format!("{APPS}/daemonsets/w")).await.body;
        (v["status"]["numberReady"] == 1).then_some(v)
    })
    .await;
    assert_eq!(
        ds["status"],
        json!({"currentNumberScheduled": 1, "numberMisscheduled": 0, "desiredNumberScheduled": 1,
               "numberReady": 1, "observedGeneration": ds["metadata"]["generation"],
               "updatedNumberScheduled": 1, "numberAvailable": 1})
    );
    let rs = eventually("the ReplicaSet is ready", || async {
        let v = get(&c, &format!("{APPS}/replicasets/w")).await.body;
        (v["status"]["availableReplicas"] == 3).then_some(v)
    })
    .await;
    assert_eq!(rs["status"]["fullyLabeledReplicas"], 3);
    assert_eq!(rs["status"]["readyReplicas"], 3);

    // Scaled to zero: a new generation, ready again after the delay with zero counts.
    let r = merge_patch(
        &c,
        &format!("{APPS}/statefulsets/w"),
        json!({"spec": {"replicas": 0}}),
    )
    .await;
    assert_eq!(r.code, 200);
    let sts = eventually("the StatefulSet observes the scale-down", || async {
        let v = get(&c, &format!("{APPS}/statefulsets/w")).await.body;
        (v["status"]["replicas"] == 0).then_some(v)
    })
    .await;
    assert!(sts["status"].get("readyReplicas").is_none(), "{sts}");
    assert_eq!(sts["status"]["availableReplicas"], 0);
}

#[tokio::test]
async fn jobs_start_then_complete_after_their_delay() {
    let s = FakeApiServer::builder()
        .jobs_complete_after(Some(Duration::from_millis(300)))
        .start()
        .await
        .unwrap();
    register(&s);
    let c = s.in_process_client();
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"completions": 2, "parallelism": 2,
                 "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}});
    assert_eq!(post(&c, JOBS, job).await.code, 201);
    let started = eventually("the Job starts", || async {
        let v = get(&c, &format!("{JOBS}/j")).await.body;
        v["status"].get("startTime").is_some().then_some(v)
    })
    .await;
    assert_eq!(started["status"]["active"], 2);
    let done = eventually("the Job completes", || async {
        let v = get(&c, &format!("{JOBS}/j")).await.body;
        v["status"].get("completionTime").is_some().then_some(v)
    })
    .await;
    let st = &done["status"];
    assert_eq!(st["succeeded"], 2);
    assert_eq!(st["ready"], 0);
    assert_eq!(st["terminating"], 0);
    assert_eq!(st["uncountedTerminatedPods"], json!({}));
    assert!(st.get("active").is_none());
    assert_eq!(st["startTime"], started["status"]["startTime"]);
    let conditions: Vec<(&str, &str, &str)> = st["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["type"].as_str().unwrap(),
                c["status"].as_str().unwrap(),
                c["reason"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        conditions,
        [
            ("SuccessCriteriaMet", "True", "CompletionsReached"),
            ("Complete", "True", "CompletionsReached")
        ]
    );

    // A suspended Job is left alone.
    let suspended = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "s"},
        "spec": {"suspend": true, "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}});
    assert_eq!(post(&c, JOBS, suspended).await.code, 201);
    tokio::time::sleep(Duration::from_millis(600)).await;
    let v = get(&c, &format!("{JOBS}/s")).await.body;
    assert!(
        v.get("status").is_none_or(|s| s.get("startTime").is_none()),
        "{v}"
    );
}

#[tokio::test]
async fn the_stand_ins_are_off_by_default() {
    let s = FakeApiServer::start().await.unwrap();
    register(&s);
    let c = s.in_process_client();
    assert_eq!(
        post(
            &c,
            &format!("{APPS}/statefulsets"),
            workload("StatefulSet", "w", 1)
        )
        .await
        .code,
        201
    );
    let job = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "i"}]}}}});
    assert_eq!(post(&c, JOBS, job).await.code, 201);
    tokio::time::sleep(Duration::from_millis(300)).await;
    let sts = get(&c, &format!("{APPS}/statefulsets/w")).await.body;
    assert!(
        sts.get("status")
            .is_none_or(|s| s.get("readyReplicas").is_none()),
        "{sts}"
    );
    let j = get(&c, &format!("{JOBS}/j")).await.body;
    assert!(
        j.get("status").is_none_or(|s| s.get("startTime").is_none()),
        "{j}"
    );
}
