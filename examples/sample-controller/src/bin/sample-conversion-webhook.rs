//! `sample-conversion-webhook --listen ADDR --tls-cert FILE --tls-key FILE`: serves
//! `POST /convert` (ConversionReview, apiextensions.k8s.io/v1) for `Foo` between `v1alpha1` and
//! `v1beta1` over HTTPS, with the runtime's conversion webhook and the generated conversions
//! (plus the renamed field's hooks from `sample_controller::conversion`).

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use kube_codegen_runtime::conversion::{Converter, WebhookServer};

#[derive(Debug, Parser)]
#[command(
    version,
    about = "Conversion webhook for samplecontroller.k8s.io Foo (v1alpha1 <-> v1beta1)"
)]
struct Args {
    /// Address to listen on (`0.0.0.0:8443`).
    #[arg(long, value_name = "ADDR")]
    listen: SocketAddr,
    /// PEM certificate chain the webhook serves (reloaded when the file changes).
    #[arg(long, value_name = "FILE")]
    tls_cert: PathBuf,
    /// PEM private key of the certificate.
    #[arg(long, value_name = "FILE")]
    tls_key: PathBuf,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut converter = Converter::new();
    converter.register(sample_controller::conversion::foo_conversion());
    let server = WebhookServer::builder(converter)
        .listen(args.listen)
        .tls_files(args.tls_cert, args.tls_key)
        .bind()
        .await?;
    tracing::info!(listen = %server.local_addr(), "serving POST /convert");
    server
        .serve(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await;
    Ok(())
}
