//! Generation options, declared once in [`FLAGS`]: the CLI builds its clap arguments from this
//! table and [`Options::from_args`] parses with it, so the two cannot drift.

use crate::Error;
use crate::model::Derives;

/// Which CRD versions to generate.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum VersionSelection {
    /// Every version with `served: true` (default).
    #[default]
    Served,
    /// Every version, served or not.
    All,
    /// Exactly these version names.
    List(Vec<String>),
}

/// Which outputs to generate besides the resource types (which are always generated: every
/// other output is built on them). Default: everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Emit {
    /// Typed clientset (client-gen): `Clientset`, one client per group-version, status and
    /// scale verbs where the CRD version has those subresources.
    pub client: bool,
    /// Listers (lister-gen): `FooLister`, `FooNamespaceLister`.
    pub listers: bool,
    /// Informers (informer-gen): `FooInformer` and the `InformerFactoryExt` accessors. Implies
    /// listers (an informer hands out its lister).
    pub informers: bool,
    /// Server-side apply configurations (applyconfiguration-gen): `FooApply`, `FooSpecApply`...
    pub apply: bool,
    /// Client-side validation: `Foo::validate`, `Foo::validate_update` and
    /// `Foo::apply_defaults`, over the CRD version's `openAPIV3Schema` embedded in the kind's
    /// module (the `x-kubernetes-validations` CEL rules included), checked by the same
    /// validator as the in-memory API server; and `kube_codegen_runtime::validation::SchemaChecks`
    /// over them, which the runtime's admission webhooks (`defaulting::<Foo>`,
    /// `validating::<Foo>`) run before the user's hooks.
    pub validation: bool,
    /// Conversions between the served versions of every kind that has more than one, through
    /// its storage version (controller-runtime's Hub/Convertible, conversion-gen's automatic
    /// functions): `FooConversion` (a `kube_codegen_runtime::conversion::KindConversion` for the
    /// runtime's conversion webhook), the `FooHooks` trait for fields that do not map, and
    /// `DefaultFooHooks`, in the group's `conversion` module.
    pub conversion: bool,
}

impl Default for Emit {
    fn default() -> Self {
        Emit::ALL
    }
}

impl Emit {
    /// Every output.
    pub const ALL: Emit = Emit {
        client: true,
        listers: true,
        informers: true,
        apply: true,
        validation: true,
        conversion: true,
    };
    /// The resource types only (no dependency beyond serde, serde_json and k8s-openapi).
    pub const TYPES: Emit = Emit {
        client: false,
        listers: false,
        informers: false,
        apply: false,
        validation: false,
        conversion: false,
    };
    /// The output names, in `--emit` order.
    pub const NAMES: [&str; 7] = [
        "types",
        "client",
        "listers",
        "informers",
        "apply",
        "validation",
        "conversion",
    ];

    /// Parses `types,client,...` (`all` for everything).
    pub fn parse(list: &str) -> Result<Emit, String> {
        let mut e = Emit::TYPES;
        let mut any = false;
        for item in list.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            any = true;
            match item {
                "all" => e = Emit::ALL,
                "types" => {}
                "client" => e.client = true,
                "listers" => e.listers = true,
                "informers" => e.informers = true,
                "apply" => e.apply = true,
                "validation" => e.validation = true,
                "conversion" => e.conversion = true,
                other => {
                    return Err(format!(
                        "unknown output {other:?} (expected a comma-separated list of {} or all)",
                        Emit::NAMES.join(", ")
                    ));
                }
            }
        }
        if !any {
            return Err("empty output list".into());
        }
        Ok(e)
    }

    /// The `--emit` value that parses back to `self`.
    pub fn to_list(self) -> String {
        let on = [
            true,
            self.client,
            self.listers,
            self.informers,
            self.apply,
            self.validation,
            self.conversion,
        ];
        Emit::NAMES
            .iter()
            .zip(on)
            .filter(|(_, on)| *on)
            .map(|(n, _)| *n)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Whether listers are generated (asked for, or needed by the informers).
    pub fn any_listers(self) -> bool {
        self.listers || self.informers
    }

    /// Whether any output needs `kube` and `kube-codegen-runtime`.
    pub fn needs_runtime(self) -> bool {
        self != Emit::TYPES
    }
}

/// Generation options, declared once; the CLI flags and the Builder methods both feed this.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// `--emit <LIST>`: the outputs besides the types (default: all).
    pub emit: Emit,
    /// `--single-file <NAME>.rs`: one file with inline modules, for `include!`.
    pub single_file: Option<String>,
    /// `--crate <NAME>`: a standalone crate (`Cargo.toml` + `src/lib.rs`).
    pub crate_name: Option<String>,
    /// `--versions <served|all|LIST>`.
    pub versions: VersionSelection,
    /// `--derive <DERIVE>` / `--derive <Type>=<DERIVE>`, comma-separated lists allowed.
    pub derives: Vec<String>,
    /// `--no-docs`: no rustdoc from descriptions and schema facts.
    pub no_docs: bool,
    /// `--check`: compare with the files on disk instead of writing; differences are an error.
    pub check: bool,
    /// `--no-known-types`: always generate structs, even where a schema is exactly a well-known
    /// Kubernetes type (`metav1.Condition`, `LabelSelector`, `ObjectReference`, ...).
    pub no_known_types: bool,
    /// `--lenient`: an escape hatch. Every CRD kube-apiserver would refuse is generated anyway,
    /// with a warning per violation (the file, the CRD and the server's message), as long as
    /// its types can be built; a CRD the generator cannot read (no name, group, kind, plural or
    /// versions) or whose schema it cannot map (an unknown `type`, an unreadable schema) is
    /// still refused, with every violation. Conflicts with `strict`.
    pub lenient: bool,
    /// `--strict`: every violation kube-apiserver would report refuses the CRD, also those in
    /// parts the generated code does not reflect (conversion, annotations such as the
    /// `api-approved.kubernetes.io` approval, labels, status, selectable fields), which are
    /// otherwise warnings. Conflicts with `lenient`.
    pub strict: bool,
}

/// One option: its flag, help, and how it reads from / writes to [`Options`].
pub struct Flag {
    pub long: &'static str,
    /// `None` for switches.
    pub value_name: Option<&'static str>,
    pub repeatable: bool,
    pub help: &'static str,
    /// The flags this one cannot be given with (each pair listed on both sides).
    pub conflicts_with: &'static [&'static str],
    set: fn(&mut Options, Option<&str>) -> Result<(), String>,
    get: fn(&Options) -> Vec<Option<String>>,
}

impl Flag {
    /// Applies one occurrence of the flag.
    pub fn apply(&self, options: &mut Options, value: Option<&str>) -> Result<(), Error> {
        (self.set)(options, value).map_err(|m| Error::Usage(format!("--{}: {m}", self.long)))
    }
}

fn need(v: Option<&str>) -> Result<&str, String> {
    v.ok_or_else(|| "a value is required".to_string())
}

fn check_rs_name(v: &str) -> Result<(), String> {
    if v.is_empty() || v.contains(['/', '\\']) || !v.ends_with(".rs") {
        Err(format!("expected a file name ending in .rs, got {v:?}"))
    } else {
        Ok(())
    }
}

/// Every option, in help order.
pub const FLAGS: &[Flag] = &[
    Flag {
        long: "emit",
        value_name: Some("LIST"),
        repeatable: false,
        help: "Outputs to generate, comma-separated: types, client, listers, informers, apply, validation, conversion, or all (default). Types are always generated; informers imply listers; anything beyond types needs the kube and kube-codegen-runtime crates",
        conflicts_with: &[],
        set: |o, v| {
            o.emit = Emit::parse(need(v)?)?;
            Ok(())
        },
        get: |o| {
            if o.emit == Emit::ALL {
                vec![]
            } else {
                vec![Some(o.emit.to_list())]
            }
        },
    },
    Flag {
        long: "check",
        value_name: None,
        repeatable: false,
        help: "Don't write: compare the output directory with what would be generated; print a unified diff and exit 1 when they differ",
        conflicts_with: &[],
        set: |o, _| {
            o.check = true;
            Ok(())
        },
        get: |o| if o.check { vec![None] } else { vec![] },
    },
    Flag {
        long: "single-file",
        value_name: Some("NAME.rs"),
        repeatable: false,
        help: "Write one file with inline modules (for include!) instead of a module tree",
        conflicts_with: &[],
        set: |o, v| {
            let v = need(v)?;
            check_rs_name(v)?;
            o.single_file = Some(v.to_string());
            Ok(())
        },
        get: |o| o.single_file.iter().map(|s| Some(s.clone())).collect(),
    },
    Flag {
        long: "crate",
        value_name: Some("NAME"),
        repeatable: false,
        help: "Write a standalone crate NAME (Cargo.toml + src/lib.rs) into the output directory",
        conflicts_with: &[],
        set: |o, v| {
            let v = need(v)?;
            if v.is_empty()
                || !v
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                || v.starts_with(|c: char| c.is_ascii_digit())
            {
                return Err(format!("{v:?} is not a valid crate name"));
            }
            o.crate_name = Some(v.to_string());
            Ok(())
        },
        get: |o| o.crate_name.iter().map(|s| Some(s.clone())).collect(),
    },
    Flag {
        long: "versions",
        value_name: Some("served|all|LIST"),
        repeatable: false,
        help: "Versions to generate: `served` (default), `all`, or a comma-separated list such as v1,v1beta1",
        conflicts_with: &[],
        set: |o, v| {
            let v = need(v)?;
            o.versions = match v {
                "served" => VersionSelection::Served,
                "all" => VersionSelection::All,
                list => {
                    let items: Vec<String> = list
                        .split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect();
                    if items.is_empty() {
                        return Err("empty version list".into());
                    }
                    VersionSelection::List(items)
                }
            };
            Ok(())
        },
        get: |o| match &o.versions {
            VersionSelection::Served => vec![],
            VersionSelection::All => vec![Some("all".into())],
            VersionSelection::List(l) => vec![Some(l.join(","))],
        },
    },
    Flag {
        long: "derive",
        value_name: Some("[TYPE=]DERIVE"),
        repeatable: true,
        help: "Extra derive for every generated type (e.g. Hash), or for one type with TYPE=DERIVE (e.g. FooSpec=Eq); repeatable, comma-separated lists allowed",
        conflicts_with: &[],
        set: |o, v| {
            for item in need(v)?.split(',').map(str::trim).filter(|s| !s.is_empty()) {
                parse_derive(item)?;
                o.derives.push(item.to_string());
            }
            Ok(())
        },
        get: |o| o.derives.iter().map(|d| Some(d.clone())).collect(),
    },
    Flag {
        long: "no-known-types",
        value_name: None,
        repeatable: false,
        help: "Generate a struct even where a schema is exactly a well-known Kubernetes type (metav1 Condition, LabelSelector, OwnerReference, core/v1 ObjectReference, LocalObjectReference, Secret/ConfigMap key selectors), which otherwise become k8s-openapi's types",
        conflicts_with: &[],
        set: |o, _| {
            o.no_known_types = true;
            Ok(())
        },
        get: |o| if o.no_known_types { vec![None] } else { vec![] },
    },
    Flag {
        long: "lenient",
        value_name: None,
        repeatable: false,
        help: "Generate from every CRD whose types can be built, even one kube-apiserver would refuse (a non-structural schema, list-map keys without defaults, ...), with a warning per violation; a CRD without a name, group, kind, plural or versions, or with a schema that cannot be mapped (an unknown type), is still an error",
        conflicts_with: &["strict"],
        set: |o, _| {
            o.lenient = true;
            Ok(())
        },
        get: |o| if o.lenient { vec![None] } else { vec![] },
    },
    Flag {
        long: "strict",
        value_name: None,
        repeatable: false,
        help: "Refuse every CRD kube-apiserver would refuse, also for parts the generated code does not reflect (spec.conversion, metadata annotations such as api-approved.kubernetes.io, labels, status, selectable fields), which are otherwise warnings",
        conflicts_with: &["lenient"],
        set: |o, _| {
            o.strict = true;
            Ok(())
        },
        get: |o| if o.strict { vec![None] } else { vec![] },
    },
    Flag {
        long: "no-docs",
        value_name: None,
        repeatable: false,
        help: "Leave out rustdoc generated from descriptions and schema facts",
        conflicts_with: &[],
        set: |o, _| {
            o.no_docs = true;
            Ok(())
        },
        get: |o| if o.no_docs { vec![None] } else { vec![] },
    },
];

/// Splits `Type=Derive` / `Derive` and checks both parts are Rust paths.
fn parse_derive(item: &str) -> Result<(Option<String>, String), String> {
    let (ty, d) = match item.split_once('=') {
        Some((t, d)) => (Some(t.trim().to_string()), d.trim().to_string()),
        None => (None, item.to_string()),
    };
    if syn::parse_str::<syn::Path>(&d).is_err() {
        return Err(format!("{d:?} is not a derive path"));
    }
    if let Some(t) = &ty
        && syn::parse_str::<syn::Ident>(t).is_err()
    {
        return Err(format!("{t:?} is not a type name"));
    }
    Ok((ty, d))
}

impl Options {
    /// Parses the same flags as `kube-codegen gen` (without inputs and `-o`), e.g. from a
    /// `# kube-codegen-flags:` header. Accepts `--flag value` and `--flag=value`.
    pub fn from_args(args: &[&str]) -> Result<Options, Error> {
        let mut o = Options::default();
        let mut i = 0;
        while i < args.len() {
            let arg = args[i];
            let Some(name) = arg.strip_prefix("--") else {
                return Err(Error::Usage(format!("unexpected argument {arg:?}")));
            };
            let (name, inline) = match name.split_once('=') {
                Some((n, v)) => (n, Some(v)),
                None => (name, None),
            };
            let flag = FLAGS
                .iter()
                .find(|f| f.long == name)
                .ok_or_else(|| Error::Usage(format!("unknown flag --{name}")))?;
            let value = if flag.value_name.is_some() {
                match inline {
                    Some(v) => Some(v),
                    None => {
                        i += 1;
                        Some(*args.get(i).ok_or_else(|| {
                            Error::Usage(format!("--{name}: a value is required"))
                        })?)
                    }
                }
            } else {
                if inline.is_some() {
                    return Err(Error::Usage(format!("--{name} takes no value")));
                }
                None
            };
            flag.apply(&mut o, value)?;
            i += 1;
        }
        o.check_conflicts()?;
        Ok(o)
    }

    /// A usage error when two conflicting options are both set (`--strict` with `--lenient`);
    /// [`Options::from_args`] and every generation run check it.
    pub fn check_conflicts(&self) -> Result<(), Error> {
        for f in FLAGS {
            if (f.get)(self).is_empty() {
                continue;
            }
            for other in f.conflicts_with {
                let set = FLAGS
                    .iter()
                    .find(|g| g.long == *other)
                    .is_some_and(|g| !(g.get)(self).is_empty());
                if set {
                    return Err(Error::Usage(format!(
                        "--{} and --{other} cannot be used together; give one of them",
                        f.long
                    )));
                }
            }
        }
        Ok(())
    }

    /// The flags that reproduce these options (inverse of [`Options::from_args`]).
    pub fn to_args(&self) -> Vec<String> {
        let mut out = Vec::new();
        for f in FLAGS {
            for v in (f.get)(self) {
                out.push(format!("--{}", f.long));
                if let Some(v) = v {
                    out.push(v);
                }
            }
        }
        out
    }

    pub(crate) fn parsed_derives(&self) -> Result<Derives, Error> {
        let mut d = Derives::default();
        for item in &self.derives {
            let (ty, derive) =
                parse_derive(item).map_err(|m| Error::Usage(format!("--derive: {m}")))?;
            let list = match ty {
                Some(t) => d.per_type.entry(t).or_default(),
                None => &mut d.global,
            };
            if !list.contains(&derive) {
                list.push(derive);
            }
        }
        Ok(d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_round_trip() {
        let o = Options {
            emit: Emit {
                listers: false,
                apply: false,
                validation: false,
                ..Emit::ALL
            },
            single_file: Some("x.rs".into()),
            crate_name: Some("my-crds".into()),
            versions: VersionSelection::List(vec!["v1".into(), "v2".into()]),
            derives: vec!["Hash".into(), "FooSpec=Eq".into()],
            no_docs: true,
            check: true,
            no_known_types: true,
            lenient: true,
            strict: false,
        };
        let args = o.to_args();
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(Options::from_args(&refs).unwrap(), o);
        // `--strict` conflicts with `--lenient`, so it round-trips on its own.
        let strict = Options {
            lenient: false,
            strict: true,
            ..o.clone()
        };
        let args = strict.to_args();
        assert!(args.iter().any(|a| a == "--strict"), "{args:?}");
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        assert_eq!(Options::from_args(&refs).unwrap(), strict);
        assert_eq!(Options::from_args(&[]).unwrap(), Options::default());
        assert_eq!(
            Options::from_args(&["--versions=all", "--derive", "Hash,Eq"]).unwrap(),
            Options {
                versions: VersionSelection::All,
                derives: vec!["Hash".into(), "Eq".into()],
                ..Options::default()
            }
        );
        assert_eq!(
            Options::from_args(&["--emit", "types"]).unwrap().emit,
            Emit::TYPES
        );
        assert_eq!(
            Options::from_args(&["--emit=types,apply"]).unwrap().emit,
            Emit {
                apply: true,
                ..Emit::TYPES
            }
        );
        assert_eq!(
            Options::from_args(&["--emit", "types,validation"])
                .unwrap()
                .emit,
            Emit {
                validation: true,
                ..Emit::TYPES
            }
        );
        // Every output on its own round-trips through its `--emit` list.
        let alone = [
            Emit {
                client: true,
                ..Emit::TYPES
            },
            Emit {
                listers: true,
                ..Emit::TYPES
            },
            Emit {
                informers: true,
                ..Emit::TYPES
            },
            Emit {
                apply: true,
                ..Emit::TYPES
            },
            Emit {
                validation: true,
                ..Emit::TYPES
            },
        ];
        for (e, name) in alone.into_iter().zip(&Emit::NAMES[1..]) {
            assert_eq!(e.to_list(), format!("types,{name}"));
            assert_eq!(Emit::parse(&e.to_list()), Ok(e));
        }
        assert_eq!(Emit::parse(&Emit::ALL.to_list()), Ok(Emit::ALL));
        assert!(Options::from_args(&["--emit", "types,clients"]).is_err());
        assert!(Options::from_args(&["--emit", ","]).is_err());
        assert!(Options::from_args(&["--nope"]).is_err());
        assert!(Options::from_args(&["--derive"]).is_err());
        assert!(Options::from_args(&["--derive", "1x"]).is_err());
        assert!(Options::from_args(&["--single-file", "a/b.rs"]).is_err());
    }

    #[test]
    fn strict_and_lenient_conflict() {
        for args in [["--strict", "--lenient"], ["--lenient", "--strict"]] {
            let err = Options::from_args(&args).unwrap_err().to_string();
            assert!(
                matches!(Options::from_args(&args), Err(Error::Usage(_))),
                "{args:?}"
            );
            assert!(
                err.contains("--strict") && err.contains("--lenient") && err.contains("together"),
                "{err}"
            );
        }
        let both = Options {
            strict: true,
            lenient: true,
            ..Options::default()
        };
        assert!(matches!(both.check_conflicts(), Err(Error::Usage(_))));
        // Every conflict is declared on both sides, and names a flag that exists.
        for f in FLAGS {
            for other in f.conflicts_with {
                let g = FLAGS.iter().find(|g| g.long == *other).unwrap();
                assert!(g.conflicts_with.contains(&f.long), "{} / {other}", f.long);
            }
        }
    }
}
