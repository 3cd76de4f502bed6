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
