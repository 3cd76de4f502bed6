//! `sample-conversion-webhook --listen ADDR --tls-cert FILE --tls-key FILE`: serves, over
//! HTTPS, `POST /convert` (ConversionReview, apiextensions.k8s.io/v1) for `Foo` between
//! `v1alpha1` and `v1beta1`, with the runtime's conversion webhook and the generated
//! conversions (plus the renamed field's hooks from `sample_controller::conversion`), and
//! Foo's admission webhooks (`sample_controller::admission`): defaulting at
//! `/mutate-samplecontroller-k8s-io-v1alpha1-foo`, validating at
//! `/validate-samplecontroller-k8s-io-v1alpha1-foo`.
//!
//! `--print-webhook-configurations` prints their Mutating- and ValidatingWebhookConfiguration
//! (for `--webhook-url` or `--webhook-service`, with `--ca-bundle`) and exits.

use std::io::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use kube_codegen_runtime::conversion::{Converter, WebhookServer};
use kube_codegen_runtime::webhook::admission::{self, ConfigOptions};
use sample_controller::admission::{foo_defaulting, foo_validating};

#[derive(Debug, Parser)]
#[command(
    version,
    about = "Conversion (v1alpha1 <-> v1beta1) and admission webhooks for samplecontroller.k8s.io Foo"
)]
struct Args {
    /// Address to listen on (`0.0.0.0:8443`).
    #[arg(
        long,
        value_name = "ADDR",
        required_unless_present = "print_webhook_configurations"
    )]
    listen: Option<SocketAddr>,
    /// PEM certificate chain the webhook serves (reloaded when the file changes).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "print_webhook_configurations"
    )]
    tls_cert: Option<PathBuf>,
    /// PEM private key of the certificate.
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "print_webhook_configurations"
    )]
    tls_key: Option<PathBuf>,
    /// Serve only the conversion webhook.
    #[arg(long)]
    no_admission: bool,
    /// Print the MutatingWebhookConfiguration and ValidatingWebhookConfiguration of the
    /// admission webhooks (a JSON List for kubectl apply -f) and exit.
    #[arg(long)]
    print_webhook_configurations: bool,
    /// The base URL the API server calls the webhooks at (`https://127.0.0.1:8443`).
    #[arg(long, value_name = "URL", conflicts_with = "webhook_service")]
    webhook_url: Option<String>,
    /// The Service the API server calls the webhooks through, NAMESPACE/NAME (default
    /// `system/webhook-service`, kubebuilder's).
    #[arg(long, value_name = "NAMESPACE/NAME")]
    webhook_service: Option<String>,
    /// PEM file of the CA that signed the serving certificate, written as the caBundle.
    #[arg(long, value_name = "FILE")]
    ca_bundle: Option<PathBuf>,
}

fn configurations(args: &Args) -> anyhow::Result<serde_json::Value> {
    let mut options = match (&args.webhook_url, &args.webhook_service) {
        (Some(url), _) => ConfigOptions::url(url),
        (None, Some(svc)) => {
            let (ns, name) = svc
                .split_once('/')
                .ok_or_else(|| anyhow::anyhow!("--webhook-service takes NAMESPACE/NAME"))?;
            ConfigOptions::service(ns, name)
        }
        (None, None) => ConfigOptions::service("system", "webhook-service"),
    };
    if let Some(file) = &args.ca_bundle {
        options = options.ca_bundle(std::fs::read(file)?);
    }
    let registrations = [
        admission::AdmissionWebhook::registration(&foo_defaulting()),
        admission::AdmissionWebhook::registration(&foo_validating()),
    ];
    let (mutating, validating) = admission::configurations(&registrations, &options);
    Ok(serde_json::json!({
        "apiVersion": "v1",
        "kind": "List",
        "items": [mutating, validating],
    }))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    if args.print_webhook_configurations {
        // An error, not a panic, when stdout is closed early (`| head`).
        let text = serde_json::to_string_pretty(&configurations(&args)?)?;
        writeln!(std::io::stdout().lock(), "{text}")?;
        return Ok(());
    }
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .with_writer(std::io::stderr)
        .init();
    let mut converter = Converter::new();
    converter.register(sample_controller::conversion::foo_conversion());
    let (Some(listen), Some(cert), Some(key)) = (args.listen, args.tls_cert, args.tls_key) else {
        anyhow::bail!("--listen, --tls-cert and --tls-key are required");
    };
    let mut builder = WebhookServer::builder(converter)
        .listen(listen)
        .tls_files(cert, key);
    if !args.no_admission {
        builder = builder
            .admission(foo_defaulting())
            .admission(foo_validating());
    }
    let server = builder.bind().await?;
    let paths: Vec<&str> = server.router().paths().collect();
    tracing::info!(listen = %server.local_addr(), paths = ?paths, "serving");
    server
        .serve(async {
            let _ = tokio::signal::ctrl_c().await;
        })
        .await;
    Ok(())
}
