//! `kube-fake-apiserver --port <N> --kubeconfig <PATH> [--tls] [--crd FILE...]`
use std::path::PathBuf;

use clap::Parser;
use kube_fake_apiserver::FakeApiServer;

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
}

fn load_crds(path: &PathBuf) -> anyhow::Result<Vec<serde_json::Value>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| anyhow::anyhow!("reading {}: {e}", path.display()))?;
    let mut out = Vec::new();
    for (i, doc) in text.split("\n---").enumerate() {
        if doc.trim().trim_start_matches("---").trim().is_empty() {
            continue;
        }
        let v: serde_json::Value = serde_saphyr::from_str(doc)
            .map_err(|e| anyhow::anyhow!("{}: document {}: {e}", path.display(), i + 1))?;
        if !v.is_null() {
            out.push(v);
        }
    }
    Ok(out)
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let server = FakeApiServer::builder()
        .port(args.port)
        .tls(args.tls)
        .history_limit(args.history_limit)
        .require_namespaces(!args.any_namespace)
        .start()
        .await?;
    for path in &args.crds {
        for crd in load_crds(path)? {
            server
                .register_crd(crd)
                .await
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
