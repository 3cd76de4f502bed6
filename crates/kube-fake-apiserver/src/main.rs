//! `kube-fake-apiserver --port <N> --kubeconfig <PATH> [--tls] [--crd FILE...]`, and a flag for
//! each option of the library's `ServerBuilder`.
use std::path::PathBuf;
use std::time::Duration;

use clap::{ArgAction, Parser};
use std::str::FromStr;

use kube_fake_apiserver::FakeApiServer;
use kube_fake_apiserver::feature_gates::FeatureGates;

/// An in-memory Kubernetes API server for tests. Serves until killed.
#[derive(Debug, Parser)]
#[command(name = "kube-fake-apiserver", version)]
struct Args {
    /// Port on 127.0.0.1 (0 picks a free one).
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Where to write a kubeconfig pointing at the server.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Serve HTTPS with a generated self-signed certificate.
    #[arg(long)]
    tls: bool,
    /// CustomResourceDefinition files (YAML or JSON, `---` separated) to register at start.
    #[arg(long = "crd", num_args = 1..)]
    crds: Vec<PathBuf>,
    /// Allow creating objects in namespaces that do not exist (the real server refuses).
    #[arg(long)]
    any_namespace: bool,
    /// How many watch events to keep for replay.
    #[arg(long, default_value_t = 10_000)]
    history_limit: usize,
    /// Serve the built-in kinds (namespaces, configmaps, deployments, ...) and the initial
    /// namespaces; `--builtins=false` serves CRDs only.
    #[arg(long, default_value_t = true, action = ArgAction::Set)]
    builtins: bool,
    /// Run the garbage collector (as kube-apiserver's flag of the same name; `=false` leaves
    /// dependents of deleted owners alone and adds no deletion finalizers).
    #[arg(long, default_value_t = true, action = ArgAction::Set)]
    enable_garbage_collector: bool,
    /// How long a new CRD stays `Established=False` before it is served, e.g. `300ms`, `2s`.
    #[arg(long, value_parser = parse_duration, default_value = "0s")]
    crd_establish_delay: Duration,
    /// Deployments report all `spec.replicas` available this long after each new generation
    /// (unset: only `status.observedGeneration` is written), e.g. `500ms`.
    #[arg(long, value_parser = parse_duration)]
    deployments_available_after: Option<Duration>,
    /// StatefulSets report all `spec.replicas` ready, current, updated and available (one
    /// revision) this long after each new generation (unset: off), e.g. `500ms`.
    #[arg(long, value_parser = parse_duration)]
    statefulsets_ready_after: Option<Duration>,
    /// DaemonSets report their pod ready and available on the one node this long after each
    /// new generation (unset: off).
    #[arg(long, value_parser = parse_duration)]
    daemonsets_ready_after: Option<Duration>,
    /// ReplicaSets report all `spec.replicas` ready and available this long after each new
    /// generation (unset: off).
    #[arg(long, value_parser = parse_duration)]
    replicasets_ready_after: Option<Duration>,
    /// Jobs start at once and succeed (`Complete`, `completionTime`) this long after they are
    /// created (unset: off).
    #[arg(long, value_parser = parse_duration)]
    jobs_complete_after: Option<Duration>,
    /// kube-apiserver's flag: `Name=true,Other=false` for the gates this server implements
    /// (`ShardedListAndWatch`: the `shardSelector` parameter of list and watch); an unknown
    /// gate is refused.
    /// Repeated, later pairs win, as pflag sets the flag once per occurrence.
    #[arg(long, value_parser = check_feature_gates, action = ArgAction::Append)]
    feature_gates: Vec<String>,
    /// kube-apiserver's flag: `group/version=bool` pairs (`api/beta`, `api/all`) for the beta
    /// versions this server has (`admissionregistration.k8s.io/v1beta1`: MutatingAdmissionPolicy
    /// with its gate); repeated, later pairs win.
    #[arg(long, value_parser = check_runtime_config, action = ArgAction::Append)]
    runtime_config: Vec<String>,
    /// The longest request body of a create, update, patch or delete (kube-apiserver's flag of
    /// the same name; 0: no limit); a longer one is a 413.
    #[arg(long, default_value_t = 3 * 1024 * 1024)]
    max_resource_write_bytes: usize,
    /// etcd's `--max-request-bytes`: a write whose etcd request is larger fails with etcd's
    /// 500 `etcdserver: request is too large` (over 2 MiB, the etcd client's limit answers).
    #[arg(long, default_value_t = 1536 * 1024)]
    etcd_max_request_bytes: usize,
    /// kube-apiserver's flag: `AlwaysAllow` (the default: every request allowed, nobody
    /// authenticated) or `RBAC` (requests authenticated and authorized by the Roles and
    /// bindings in the store, starting from the default cluster roles; the kubeconfig written
    /// stays an admin).
    #[arg(long, default_value = "AlwaysAllow", value_parser = ["AlwaysAllow", "RBAC"])]
    authorization_mode: String,
    /// With RBAC, a request without credentials is `system:anonymous` (`=false`: a 401).
    #[arg(long, default_value_t = true, action = ArgAction::Set)]
    anonymous_auth: bool,
    /// kube-apiserver's static token file: CSV rows `token,user,uid[,"group1,group2"]`.
    #[arg(long)]
    token_auth_file: Option<PathBuf>,
    /// kube-apiserver's audit policy (`audit.k8s.io/v1` `Policy`, YAML or JSON); with
    /// `--audit-log-path`, the requests it selects are logged.
    #[arg(long)]
    audit_policy_file: Option<PathBuf>,
    /// Where audit events go, as JSON lines (`-`: standard output); nothing is logged
    /// without `--audit-policy-file`.
    #[arg(long)]
    audit_log_path: Option<PathBuf>,
}

/// `<integer><unit>` with unit `ms`, `s` or `m`.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .ok_or_else(|| format!("{text:?}: a duration needs a unit (ms, s or m)"))?;
    let (number, unit) = text.split_at(split);
    let n: u64 = number
        .parse()
        .map_err(|_| format!("{text:?}: expected a whole number before the unit"))?;
    match unit {
        "ms" => Ok(Duration::from_millis(n)),
        "s" => Ok(Duration::from_secs(n)),
        "m" => Ok(Duration::from_secs(n.saturating_mul(60))),
        other => Err(format!("{text:?}: unknown unit {other:?} (ms, s or m)")),
    }
}

/// One `--feature-gates` value, checked as kube-apiserver checks it.
fn check_feature_gates(text: &str) -> Result<String, String> {
    FeatureGates::from_str(text).map(|_| text.to_string())
}

/// One `--runtime-config` value, checked.
fn check_runtime_config(text: &str) -> Result<String, String> {
    kube_fake_apiserver::feature_gates::parse_runtime_config(text).map(|_| text.to_string())
}

impl Args {
    /// Every `--feature-gates` value in order, one set of gates.
    fn gates(&self) -> FeatureGates {
        // Each value parsed alone; joined they parse too.
        self.feature_gates.join(",").parse().unwrap_or_default()
    }

    /// The beta versions every `--runtime-config` value turns on, later pairs winning.
    fn beta_versions(&self) -> Vec<String> {
        kube_fake_apiserver::feature_gates::parse_runtime_config(&self.runtime_config.join(","))
            .unwrap_or_default()
    }
}

/// The CRDs of one `--crd` file, read as the generator and kubectl read it; any other document
/// is an error naming the file and document.
fn load_crds(path: &std::path::Path) -> anyhow::Result<Vec<serde_json::Value>> {
    use kube_codegen_crd::{Classified, classify, read};
    let mut out = Vec::new();
    for doc in read::flatten(read::read_documents(path)?) {
        match classify(&doc.value) {
            Classified::Crd => out.push(doc.value),
            // `---` with nothing after it is not worth an error.
            Classified::Other(_) if doc.value.is_null() => {}
            Classified::Other(what) => anyhow::bail!(
                "{}: document {}: {what}; --crd takes CustomResourceDefinitions only",
                path.display(),
                doc.index
            ),
        }
    }
    Ok(out)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let mut builder = FakeApiServer::builder();
    if let Some(path) = &args.token_auth_file {
        let csv = std::fs::read_to_string(path)
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
        builder = builder.token_auth_file(&csv);
    }
    match (&args.audit_policy_file, &args.audit_log_path) {
        (Some(policy), Some(log)) => {
            let text = std::fs::read_to_string(policy)
                .map_err(|e| anyhow::anyhow!("reading {}: {e}", policy.display()))?;
            builder = builder.audit(&text, log);
        }
        // kube-apiserver runs on without auditing too; say so rather than log nothing silently.
        (Some(_), None) => eprintln!("--audit-policy-file without --audit-log-path: no audit log"),
        (None, Some(_)) => {
            eprintln!("--audit-log-path without --audit-policy-file: no events will be recorded")
        }
        (None, None) => {}
    }
    let server = builder
        .port(args.port)
        .tls(args.tls)
        .history_limit(args.history_limit)
        .require_namespaces(!args.any_namespace)
        .builtins(args.builtins)
        .garbage_collector(args.enable_garbage_collector)
        .crd_establish_delay(args.crd_establish_delay)
        .deployments_become_available(args.deployments_available_after)
        .statefulsets_become_ready(args.statefulsets_ready_after)
        .daemonsets_become_ready(args.daemonsets_ready_after)
        .replicasets_become_ready(args.replicasets_ready_after)
        .jobs_complete_after(args.jobs_complete_after)
        .feature_gates(args.gates())
        .runtime_config(args.beta_versions())
        .max_request_body_bytes(args.max_resource_write_bytes)
        .etcd_max_request_bytes(args.etcd_max_request_bytes)
        .rbac(args.authorization_mode == "RBAC")
        .anonymous_auth(args.anonymous_auth)
        .start()
        .await?;
    for path in &args.crds {
        for crd in load_crds(path)? {
            server
                .register_crd(crd)
                .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
        }
    }
    if let Some(path) = &args.kubeconfig {
        server
            .write_kubeconfig(path)
            .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
    }
    println!("{}", server.url());
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    server.shutdown().await;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("300ms"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_duration("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("5").unwrap_err().contains("needs a unit"));
        assert!(parse_duration("5h").unwrap_err().contains("unknown unit"));
        assert!(parse_duration("ms").unwrap_err().contains("whole number"));
        assert!(parse_duration("").is_err());
    }

    #[test]
    fn every_builder_option_has_a_flag() {
        let a = Args::try_parse_from([
            "kube-fake-apiserver",
            "--builtins=false",
            "--enable-garbage-collector=false",
            "--crd-establish-delay",
            "250ms",
            "--deployments-available-after",
            "1s",
            "--max-resource-write-bytes",
            "100",
            "--etcd-max-request-bytes",
            "200",
            "--statefulsets-ready-after",
            "2s",
            "--daemonsets-ready-after",
            "3s",
            "--replicasets-ready-after",
            "4s",
            "--jobs-complete-after",
            "5s",
            "--feature-gates",
            "ShardedListAndWatch=true",
            "--authorization-mode=RBAC",
            "--anonymous-auth=false",
            "--token-auth-file",
            "tokens.csv",
            "--audit-policy-file",
            "policy.yaml",
            "--audit-log-path",
            "-",
        ])
        .unwrap();
        assert_eq!(a.audit_policy_file, Some(PathBuf::from("policy.yaml")));
        assert_eq!(a.audit_log_path, Some(PathBuf::from("-")));
        assert_eq!(a.authorization_mode, "RBAC");
        assert!(!a.anonymous_auth);
        assert_eq!(a.token_auth_file, Some(PathBuf::from("tokens.csv")));
        assert_eq!(
            [
                a.statefulsets_ready_after,
                a.daemonsets_ready_after,
                a.replicasets_ready_after,
                a.jobs_complete_after
            ],
            [2, 3, 4, 5].map(|s| Some(Duration::from_secs(s)))
        );
        assert!(a.gates().sharded_list_and_watch);
        let twice = Args::try_parse_from([
            "kube-fake-apiserver",
            "--feature-gates=ShardedListAndWatch=true",
            "--feature-gates=ShardedListAndWatch=false",
        ])
        .unwrap();
        assert!(
            !twice.gates().sharded_list_and_watch,
            "the later value wins"
        );
        assert!(!a.builtins && !a.enable_garbage_collector);
        assert_eq!(a.crd_establish_delay, Duration::from_millis(250));
        assert_eq!(a.deployments_available_after, Some(Duration::from_secs(1)));
        assert_eq!(
            (a.max_resource_write_bytes, a.etcd_max_request_bytes),
            (100, 200)
        );
        let d = Args::try_parse_from(["kube-fake-apiserver"]).unwrap();
        assert!(d.builtins && d.enable_garbage_collector);
        assert_eq!(d.crd_establish_delay, Duration::ZERO);
        assert_eq!(d.deployments_available_after, None);
        assert_eq!(d.jobs_complete_after, None);
        assert_eq!(d.authorization_mode, "AlwaysAllow");
        assert!(d.anonymous_auth);
        assert!(!d.gates().sharded_list_and_watch);
        let e = Args::try_parse_from(["kube-fake-apiserver", "--feature-gates", "Nope=true"])
            .unwrap_err()
            .to_string();
        assert!(e.contains("unrecognized feature gate: Nope"), "{e}");
        let beta = Args::try_parse_from([
            "kube-fake-apiserver",
            "--feature-gates=MutatingAdmissionPolicy=true",
            "--runtime-config=api/beta=true",
            "--runtime-config",
            "admissionregistration.k8s.io/v1beta1=false,admissionregistration.k8s.io/v1beta1",
        ])
        .unwrap();
        assert!(beta.gates().mutating_admission_policy);
        assert_eq!(
            beta.beta_versions(),
            ["admissionregistration.k8s.io/v1beta1"]
        );
        assert!(d.beta_versions().is_empty());
        let e = Args::try_parse_from([
            "kube-fake-apiserver",
            "--runtime-config",
            "nope.io/v1beta1=true",
        ])
        .unwrap_err()
        .to_string();
        assert!(e.contains("unknown api groups nope.io/v1beta1"), "{e}");
        assert_eq!(
            (d.max_resource_write_bytes, d.etcd_max_request_bytes),
            (3_145_728, 1_572_864)
        );
    }
}
