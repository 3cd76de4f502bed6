//! `kube-codegen gen <FILE|DIR|->... [--from-cluster NAME... | --all-crds] -o <DIR>`: the CLI over
//! [`kube_codegen::Builder`].

use std::path::PathBuf;
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::{Arg, ArgAction, ArgGroup, Command};
use kube_codegen::{Builder, ClusterSource, Error, FLAGS, Options};

fn gen_command() -> Command {
    let mut gen_cmd = Command::new("gen")
        .about("Generate Rust types from CustomResourceDefinitions")
        .long_about(
            "Generate Rust types from CustomResourceDefinitions.\n\n\
             Reads YAML or JSON (multi-document streams, List wrappers, apiextensions v1 and v1beta1) \
             from files, directories (recursive, *.yaml|*.yml|*.json, sorted) or stdin (-), and writes \
             a module tree (mod.rs, <group>/mod.rs, <group>/<version>/mod.rs, <group>/<version>/<kind>.rs) \
             into the output directory. Only files whose bytes changed are written.\n\n\
             With --from-cluster NAME... or --all-crds, CRDs are also (or only) read from a live \
             API server through the kubeconfig (--kubeconfig, else $KUBECONFIG, ~/.kube/config or \
             the in-cluster service account; --context picks a context). Each is named \
             cluster:<crd-name> in messages.\n\n\
             Exit codes: 0 success, 1 generation error, --check difference or cluster error \
             (unreachable server, CRD not found), 2 usage error.",
        )
        .arg(
            Arg::new("inputs")
                .value_name("FILE|DIR|-")
                .help("CRD files, directories of CRD files, or - for stdin")
                // Required unless a cluster source is given; checked in `main` for a clearer
                // message than clap's.
                .num_args(1..)
                .value_parser(clap::value_parser!(PathBuf)),
        )
        .arg(
            Arg::new("out")
                .short('o')
                .long("out")
                .value_name("DIR")
                .help("Output directory")
                .required(true)
                .value_parser(clap::value_parser!(PathBuf)),
        )
        .arg(
            Arg::new("quiet")
                .short('q')
                .long("quiet")
                .help("No progress or summary on stderr (warnings are still printed)")
                .action(ArgAction::SetTrue),
        )
        .arg(
            Arg::new("from-cluster")
                .long("from-cluster")
                .value_name("CRD-NAME")
                .help(
                    "Read these CRDs (e.g. foos.example.com) from the API server; \
                     put file inputs before this flag",
                )
                .num_args(1..)
                .action(ArgAction::Append)
                .value_parser(crd_name),
        )
        .arg(
            Arg::new("all-crds")
                .long("all-crds")
                .help("Read every CRD from the API server")
                .action(ArgAction::SetTrue),
        )
        .arg(
            Arg::new("kubeconfig")
                .long("kubeconfig")
                .value_name("PATH")
                .help("Kubeconfig for --from-cluster/--all-crds (default: kube's inference)")
                .requires("cluster")
                .value_parser(clap::value_parser!(PathBuf)),
        )
        .arg(
            Arg::new("context")
                .long("context")
                .value_name("NAME")
                .help("Kubeconfig context for --from-cluster/--all-crds (default: current)")
                .requires("cluster"),
        )
        .group(
            ArgGroup::new("cluster")
                .args(["from-cluster", "all-crds"])
                .multiple(false),
        );
    // Every generation option comes from the one table the library parses too.
    for f in FLAGS {
        let mut a = Arg::new(f.long)
            .long(f.long)
            .help(f.help)
            .conflicts_with_all(f.conflicts_with);
        a = match (f.value_name, f.repeatable) {
            (None, _) => a.action(ArgAction::SetTrue),
            (Some(v), true) => a.value_name(v).action(ArgAction::Append),
            (Some(v), false) => a.value_name(v).action(ArgAction::Set),
        };
        gen_cmd = gen_cmd.arg(a);
    }
    gen_cmd
}

fn command() -> Command {
    // `kube-codegen 0.1.0 (Kubernetes 1.35 rules)`: built once per run.
    let version: &'static str = Box::leak(kube_codegen::version_text().into_boxed_str());
    Command::new("kube-codegen")
        .version(version)
        .about(
            "Kubernetes CRD YAML -> typed Rust modules (types that work with kube and k8s-openapi)",
        )
        .subcommand_required(true)
        .arg_required_else_help(true)
        .subcommand(gen_command())
}

/// A CRD name is a DNS subdomain `<plural>.<group>`; checking it catches a file path swallowed by
/// `--from-cluster` (it takes several values) before any request is made.
fn crd_name(s: &str) -> Result<String, String> {
    let label_ok = |l: &str| {
        !l.is_empty()
            && l.len() <= 63
            && l.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
            && !l.starts_with('-')
            && !l.ends_with('-')
    };
    if s.len() <= 253 && s.contains('.') && s.split('.').all(label_ok) {
        Ok(s.to_string())
    } else {
        Err(
            "not a CRD name (expected <plural>.<group>, e.g. foos.example.com); \
             put file inputs before --from-cluster"
                .into(),
        )
    }
}

fn options_from(m: &clap::ArgMatches) -> Result<Options, Error> {
    let mut o = Options::default();
    for f in FLAGS {
        if f.value_name.is_none() {
            if m.get_flag(f.long) {
                f.apply(&mut o, None)?;
            }
        } else if let Some(vals) = m.get_many::<String>(f.long) {
            for v in vals {
                f.apply(&mut o, Some(v))?;
            }
        }
    }
    Ok(o)
}

fn main() -> ExitCode {
    let matches = match command().try_get_matches() {
        Ok(m) => m,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { 2 } else { 0 });
        }
    };
    let Some(("gen", m)) = matches.subcommand() else {
        return ExitCode::from(2);
    };
    if !m.contains_id("inputs") && !m.contains_id("cluster") {
        let _ = gen_command()
            .bin_name("kube-codegen gen")
            .error(
                ErrorKind::MissingRequiredArgument,
                "no inputs: give CRD files, directories or - (stdin), \
                 or read CRDs from a cluster with --from-cluster <CRD-NAME>... or --all-crds",
            )
            .print();
        return ExitCode::from(2);
    }
    let options = match options_from(m) {
        Ok(o) => o,
        Err(e) => {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    };
    let quiet = m.get_flag("quiet");
    let out: &PathBuf = m.get_one("out").expect("required by clap");
    let mut b = Builder::new().out_dir(out).options(options.clone());
    for i in m.get_many::<PathBuf>("inputs").into_iter().flatten() {
        b = b.input(i);
    }
    let names: Vec<&String> = m.get_many("from-cluster").into_iter().flatten().collect();
    let source = if m.get_flag("all-crds") {
        Some(ClusterSource::all())
    } else if !names.is_empty() {
        Some(ClusterSource::named(names.into_iter().cloned()))
    } else {
        None
    };
    if let Some(mut source) = source {
        if let Some(path) = m.get_one::<PathBuf>("kubeconfig") {
            source = source.kubeconfig(path);
        }
        if let Some(context) = m.get_one::<String>("context") {
            source = source.context(context);
        }
        b = match b.from_cluster(&source) {
            Ok(b) => b,
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(1);
            }
        };
    }
    let start = std::time::Instant::now();
    match b.generate() {
        Ok(g) => {
            for w in &g.warnings {
                eprintln!("warning: {w}");
            }
            if !quiet {
                let verb = if options.check {
                    "up to date"
                } else {
                    "written"
                };
                eprintln!(
                    "kube-codegen: {} resource version(s), {} file(s), {} {verb}, in {:.2?}",
                    g.resources.len(),
                    g.files.len(),
                    if options.check {
                        g.files.len()
                    } else {
                        g.written.len()
                    },
                    start.elapsed()
                );
            }
            ExitCode::SUCCESS
        }
        Err(Error::Check { diff }) => {
            print!("{diff}");
            eprintln!(
                "error: generated files in {} are out of date",
                out.display()
            );
            ExitCode::from(1)
        }
        Err(e @ Error::Usage(_)) => {
            eprintln!("error: {e}");
            ExitCode::from(2)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(1)
        }
    }
}
