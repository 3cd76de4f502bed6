//! The README's website controller (`examples/website`, compiled in here) run against
//! kube-fake-apiserver with RBAC enforced, as a ServiceAccount holding exactly the permissions
//! its manager derives (`Manager::rbac_manifests`, what `--print-rbac` prints): it does its
//! whole job (ConfigMap, Ready condition, Event, finalizer on delete) without one 403, and with
//! any one derived rule removed it meets kube-apiserver's 403 naming that permission, in its
//! log.

// The program's `main` is not called here: the tests build its `manager`.
#[allow(dead_code)]
#[path = "../examples/website/main.rs"]
mod website;

use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{ConfigMap, ServiceAccount};
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use kube_fake_apiserver::FakeApiServer;
use serde_json::{Value, json};

/// How long any single wait may take (generous: the machine may be busy building).
const DEADLINE: Duration = Duration::from_secs(40);
const NAMESPACE: &str = "web";

/// Everything the program logs, from every test of this binary (each names its own
/// ServiceAccount, so their lines are told apart).
fn log() -> &'static Mutex<String> {
    static LOG: OnceLock<Mutex<String>> = OnceLock::new();
    LOG.get_or_init(|| {
        struct Sink;
        impl std::io::Write for Sink {
            fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
                log()
                    .lock()
                    .unwrap()
                    .push_str(&String::from_utf8_lossy(buf));
                Ok(buf.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(|| Sink)
            .init();
        Mutex::new(String::new())
    })
}

fn logged() -> String {
    log().lock().unwrap().clone()
}

/// Polls `check` every 20 ms until it returns `Some`; panics naming `what`, with the log.
async fn eventually<T, F, Fut>(what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = Instant::now() + DEADLINE;
    loop {
        if let Some(v) = check().await {
            return v;
        }
        assert!(
            Instant::now() < deadline,
            "timed out after {DEADLINE:?} waiting for {what}\nlog:\n{}",
            logged()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn websites_resource() -> ApiResource {
    ApiResource::from_gvk(&GroupVersionKind::gvk("example.com", "v1", "Website"))
}

/// The RBAC objects the program derives for the ServiceAccount `NAMESPACE/sa`, as
/// `--print-rbac` prints them (building the manager sends nothing).
fn derived(sa: &str) -> Vec<Value> {
    let nowhere = kube::Config::new("http://127.0.0.1:1".parse().unwrap());
    let client = kube::Client::try_from(nowhere).unwrap();
    website::manager(client).rbac_manifests("website-controller", NAMESPACE, sa)
}

/// Creates `obj` as the admin (its plural from its kind, as kubectl's mapper guesses).
async fn create(client: &kube::Client, obj: &Value) {
    let (group, version) = match obj["apiVersion"].as_str().unwrap().split_once('/') {
        Some((g, v)) => (g, v),
        None => ("", obj["apiVersion"].as_str().unwrap()),
    };
    let gvk = GroupVersionKind::gvk(group, version, obj["kind"].as_str().unwrap());
    let ar = ApiResource::from_gvk(&gvk);
    let api: Api<DynamicObject> = match obj["metadata"]["namespace"].as_str() {
        Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
        None => Api::all_with(client.clone(), &ar),
    };
    let o: DynamicObject = serde_json::from_value(obj.clone()).unwrap();
    api.create(&PostParams::default(), &o)
        .await
        .unwrap_or_else(|e| panic!("creating {obj}: {e}"));
}

/// A server with RBAC on, the CRD, the namespace, the ServiceAccount `sa` and `rbac`; the
/// program running as `sa` (a TokenRequest token, as the kubelet mounts it), stopped when the
/// returned sender is dropped.
async fn deploy(sa: &str, rbac: &[Value]) -> (FakeApiServer, tokio::sync::oneshot::Sender<()>) {
    let server = FakeApiServer::builder()
        .rbac(true)
        .start()
        .await
        .expect("server starts");
    let crd: Value = serde_saphyr::from_str(include_str!("../examples/website/crd.yaml")).unwrap();
    server.register_crd(crd).expect("CRD registers");
    let admin = server.client();
    let namespace =
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}});
    create(&admin, &namespace).await;
    let account = json!({"apiVersion": "v1", "kind": "ServiceAccount",
                         "metadata": {"name": sa, "namespace": NAMESPACE}});
    create(&admin, &account).await;
    for o in rbac {
        create(&admin, o).await;
    }
    let sas: Api<ServiceAccount> = Api::namespaced(admin, NAMESPACE);
    let request =
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}});
    let answer: Value = sas
        .create_subresource("token", sa, &PostParams::default(), &request)
        .await
        .expect("TokenRequest");
    let token = answer["status"]["token"].as_str().expect("a token");
    let client = kube::Client::try_from(server.client_config_with_token(token)).unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(website::manager(client).run(async move {
        let _ = stopped.await;
    }));
    (server, stop)
}

async fn create_site(server: &FakeApiServer) {
    let site = json!({"apiVersion": "example.com/v1", "kind": "Website",
                      "metadata": {"name": "home", "namespace": NAMESPACE},
                      "spec": {"content": "<h1>hello</h1>"}});
    create(&server.client(), &site).await;
}

fn user(sa: &str) -> String {
    format!("User \"system:serviceaccount:{NAMESPACE}:{sa}\"")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn runs_its_whole_job_with_exactly_the_derived_permissions() {
    log();
    let sa = "website";
    let (server, stop) = deploy(sa, &derived(sa)).await;
    create_site(&server).await;
    let admin = server.client();
    let configmaps: Api<ConfigMap> = Api::namespaced(admin.clone(), NAMESPACE);
    eventually("the Website's ConfigMap", || async {
        let cm = configmaps.get_opt("home").await.ok()??;
        (cm.data?.get("index.html")? == "<h1>hello</h1>").then_some(())
    })
    .await;
    let sites: Api<DynamicObject> =
        Api::namespaced_with(admin.clone(), NAMESPACE, &websites_resource());
    eventually("the Ready condition and the finalizer", || async {
        let site = sites.get("home").await.ok()?;
        let ready = site.data["status"]["conditions"]
            .as_array()?
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "True");
        let finalized = site.metadata.finalizers.as_ref()?.len() == 1;
        (ready && finalized).then_some(())
    })
    .await;
    let events: Api<DynamicObject> = Api::namespaced_with(
        admin.clone(),
        NAMESPACE,
        &ApiResource::from_gvk(&GroupVersionKind::gvk("events.k8s.io", "v1", "Event")),
    );
    eventually("the Created event", || async {
        let list = events.list(&ListParams::default()).await.ok()?;
        list.items
            .iter()
            .any(|e| e.data["reason"] == "Created" && e.data["regarding"]["name"] == "home")
            .then_some(())
    })
    .await;
    // Deleting runs the cleanup and removes the finalizer: the Website goes.
    sites
        .delete("home", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the Website gone (finalizer removed)", || async {
        sites.get_opt("home").await.ok()?.is_none().then_some(())
    })
    .await;
    let log = logged();
    assert!(
        !log.lines().any(|l| l.contains(&user(sa))),
        "a 403 with the derived permissions:\n{log}"
    );
    drop(stop);
    server.shutdown().await;
}

/// What the program does first with each derived rule's resource, and where: the request
/// that meets the 403 when that rule is gone.
fn first_use(resource: &str) -> (&'static str, String) {
    let ns = |n: &str| format!("in the namespace \"{n}\"");
    match resource {
        "websites" | "configmaps" => ("list", "at the cluster scope".to_owned()),
        "websites/status" => ("patch", ns(NAMESPACE)),
        "events" => ("create", ns(NAMESPACE)),
        "leases" => ("get", ns("default")),
        other => panic!("a derived rule no scenario covers: {other} (add it to first_use)"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn any_derived_rule_removed_fails_with_the_403_naming_it() {
    log();
    // Every rule of every Role / ClusterRole: (object index, rule index).
    let template = derived("template");
    let places: Vec<(usize, usize)> = template
        .iter()
        .enumerate()
        .filter(|(_, o)| o.get("rules").is_some())
        .flat_map(|(i, o)| (0..o["rules"].as_array().unwrap().len()).map(move |r| (i, r)))
        .collect();
    assert!(places.len() >= 5, "{template:#?}");
    for (n, (object, rule)) in places.into_iter().enumerate() {
        let sa = format!("website-{n}");
        let mut rbac = derived_for(&template, &sa);
        let removed = rbac[object]["rules"].as_array_mut().unwrap().remove(rule);
        let group = removed["apiGroups"][0].as_str().unwrap().to_owned();
        let (server, stop) = deploy(&sa, &rbac).await;
        create_site(&server).await;
        for resource in removed["resources"].as_array().unwrap() {
            let resource = resource.as_str().unwrap();
            let (verb, scope) = first_use(resource);
            let expected = format!(
                "{} cannot {verb} resource \"{resource}\" in API group \"{group}\" {scope}",
                user(&sa)
            );
            eventually(&format!("the log to show the 403: {expected}"), || async {
                logged().contains(&expected).then_some(())
            })
            .await;
        }
        drop(stop);
        server.shutdown().await;
    }
}

/// `template`'s objects for the ServiceAccount `sa` instead of `template`.
fn derived_for(template: &[Value], sa: &str) -> Vec<Value> {
    template
        .iter()
        .cloned()
        .map(|mut o| {
            if let Some(subjects) = o.get_mut("subjects") {
                subjects[0]["name"] = json!(sa);
            }
            o
        })
        .collect()
}
