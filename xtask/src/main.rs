//! Project automation: `cargo xtask <command>`.

mod bench;
mod bench_buildrs;
mod bench_validate;
mod bless;
mod builtin_schemas;
mod corpus;
mod faults;
mod first_user;
mod paths;
mod proto_table;
mod scratch;
#[cfg(test)]
mod test_binaries;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

#[derive(Parser)]
#[command(name = "xtask", about = "kube-codegen project automation")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Rewrite testdata/golden/<stem>.rs from every testdata/crds file (and drop goldens whose CRD is gone).
    Bless,
    /// Generate, compile and round-trip a real-world corpus (`crds/<project>/*`, `samples/<project>/*`).
    Corpus(corpus::Args),
    /// Run a benchmark group and print `name value unit` lines.
    Bench {
        #[command(subcommand)]
        group: bench::Group,
    },
    /// Run the informer's randomized fault schedules (1,000 by default) in release; a failing
    /// seed is printed with the command that replays it.
    Faults(faults::Args),
    /// Act as the first user after a release: package the published crates, install
    /// kube-codegen from its package, generate from testdata/crds/subresources.yaml and build and
    /// test a crate on the generated code against the unpacked runtime, outside the repository.
    FirstUser(first_user::Args),
    /// Write kube-fake-apiserver's protobuf field table (src/proto/table.rs) from the k8s-pb and
    /// k8s-openapi sources in the cargo registry.
    ProtoTable,
    /// Turn kubernetes-validate's Kubernetes 1.35 `_definitions.json` into the OpenAPI v2
    /// definitions kube-fake-apiserver serves for its built-in kinds
    /// (`crates/kube-fake-apiserver/data/builtin-definitions.json`).
    BuiltinSchemas(builtin_schemas::Args),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Bless => bless::run(),
        Command::Corpus(args) => corpus::run(&args),
        Command::Bench { group } => bench::run(group),
        Command::Faults(args) => faults::run(&args),
        Command::FirstUser(args) => first_user::run(&args),
        Command::ProtoTable => proto_table::run(),
        Command::BuiltinSchemas(args) => builtin_schemas::run(&args),
    };
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// Default corpus location: `../shared/corpus/public` next to the repository.
fn default_corpus() -> PathBuf {
    paths::repo_root().join("../shared/corpus/public")
}
