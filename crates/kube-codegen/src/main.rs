//! `kube-codegen gen <FILE|DIR|->... -o <DIR>`: the CLI over [`kube_codegen::Builder`].

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Arg, ArgAction, Command};
use kube_codegen::{Builder, Error, FLAGS, Options};

fn command() -> Command {
    let mut gen_cmd = Command::new("gen")
        .about("Generate Rust types from CustomResourceDefinitions")
        .long_about(
            "Generate Rust types from CustomResourceDefinitions.\n\n\
             Reads YAML or JSON (multi-document streams, List wrappers, apiextensions v1 and v1beta1) \
             from files, directories (recursive, *.yaml|*.yml|*.json, sorted) or stdin (-), and writes \
             a module tree (mod.rs, <group>/mod.rs, <group>/<version>/mod.rs, <group>/<version>/<kind>.rs) \
             into the output directory. Only files whose bytes changed are written.\n\n\
             Exit codes: 0 success, 1 generation error or --check difference, 2 usage error.",
        )
        .arg(
            Arg::new("inputs")
                .value_name("FILE|DIR|-")
                .help("CRD files, directories of CRD files, or - for stdin")
                .required(true)
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
        );
    // Every generation option comes from the one table the library parses too.
    for f in FLAGS {
        let mut a = Arg::new(f.long).long(f.long).help(f.help);
        a = match (f.value_name, f.repeatable) {
            (None, _) => a.action(ArgAction::SetTrue),
            (Some(v), true) => a.value_name(v).action(ArgAction::Append),
            (Some(v), false) => a.value_name(v).action(ArgAction::Set),
        };
        gen_cmd = gen_cmd.arg(a);
    }
    Command::new("kube-codegen")
        .version(env!("CARGO_PKG_VERSION"))
        .about(
            "Kubernetes CRD YAML -> typed Rust modules (types that work with kube and k8s-openapi)",
        )
        .subcommand_required(true)
        .arg_required_else_help(true)
        .subcommand(gen_cmd)
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
