//! kube-apiserver's `--feature-gates` value (`Name=true,Other=false`), parsed as component-base's
//! `featuregate.Set` parses it, for the gates this server implements.
use std::str::FromStr;

/// The feature gates the server acts on, with kube-apiserver 1.35's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FeatureGates {
    /// `ShardedListAndWatch` (KEP-5866, alpha in 1.35, off by default): the `shardSelector`
    /// parameter of list and watch.
    pub sharded_list_and_watch: bool,
    /// `MutatingAdmissionPolicy` (beta in 1.35, off by default): the admission plugin, and with
    /// `--runtime-config=admissionregistration.k8s.io/v1beta1=true` its API.
    pub mutating_admission_policy: bool,
}

/// (name, alpha): every gate this server knows. `AllAlpha`/`AllBeta` set the gates of their
/// stage that the same value does not name.
const GATES: &[(&str, bool)] = &[
    ("ShardedListAndWatch", true),
    ("MutatingAdmissionPolicy", false),
];

impl FeatureGates {
    /// Whether the gate `name` is on.
    pub fn is_on(&self, name: &str) -> bool {
        match name {
            "ShardedListAndWatch" => self.sharded_list_and_watch,
            "MutatingAdmissionPolicy" => self.mutating_admission_policy,
            _ => false,
        }
    }

    fn set(&mut self, name: &str, on: bool) {
        match name {
            "ShardedListAndWatch" => self.sharded_list_and_watch = on,
            "MutatingAdmissionPolicy" => self.mutating_admission_policy = on,
            _ => {}
        }
    }
}

/// `strconv.ParseBool`.
fn parse_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

impl FromStr for FeatureGates {
    type Err = String;

    /// `Name=bool` pairs separated by commas; an unknown name, a missing or bad value is
    /// refused with component-base's message.
    fn from_str(value: &str) -> Result<Self, String> {
        let mut set: Vec<(String, bool)> = Vec::new();
        for pair in value.split(',') {
            if pair.is_empty() {
                continue;
            }
            let mut kv = pair.splitn(2, '=');
            let k = kv.next().unwrap_or("").trim();
            let Some(v) = kv.next().map(str::trim) else {
                return Err(format!("missing bool value for {k}"));
            };
            let on = parse_bool(v).ok_or_else(|| {
                format!("invalid value of {k}={v}, err: strconv.ParseBool: parsing {v:?}: invalid syntax")
            })?;
            set.push((k.to_string(), on));
        }
        let mut gates = FeatureGates::default();
        // The `All*` keys first, so a named gate wins over them.
        for (k, on) in &set {
            match k.as_str() {
                "AllAlpha" | "AllBeta" => {
                    let alpha = k == "AllAlpha";
                    for (name, is_alpha) in GATES {
                        if *is_alpha == alpha {
                            gates.set(name, *on);
                        }
                    }
                }
                name if GATES.iter().any(|(g, _)| *g == name) => {}
                other => return Err(format!("unrecognized feature gate: {other}")),
            }
        }
        for (k, on) in &set {
            gates.set(k, *on);
        }
        Ok(gates)
    }
}

/// The beta API versions this server can serve, off by default as in kube-apiserver 1.35.
pub const BETA_VERSIONS: &[&str] = &["admissionregistration.k8s.io/v1beta1"];

/// kube-apiserver's `--runtime-config` (`group/version=bool` pairs, a bare key meaning `true`;
/// `api/beta` and `api/all` name every beta version), for the beta versions this server has:
/// the versions turned on. A group version this server does not serve is refused.
pub fn parse_runtime_config(value: &str) -> Result<Vec<String>, String> {
    let mut on: Vec<String> = Vec::new();
    for pair in value.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (key, v) = pair.split_once('=').unwrap_or((pair, "true"));
        let key = key.trim();
        let enabled = parse_bool(v.trim()).ok_or_else(|| {
            format!(
                "invalid value of {key}: {}, err: strconv.ParseBool: parsing {:?}: invalid syntax",
                v.trim(),
                v.trim()
            )
        })?;
        let keys: Vec<&str> = match key {
            "api/all" | "api/beta" => BETA_VERSIONS.to_vec(),
            k if BETA_VERSIONS.contains(&k) => vec![k],
            // GA versions are on already; nothing else is served here.
            k if k.ends_with("/v1") || k == "v1" || k == "api/v1" || k == "api/ga" => vec![],
            other => return Err(format!("unknown api groups {other}")),
        };
        for k in keys {
            on.retain(|x| x != k);
            if enabled {
                on.push(k.to_string());
            }
        }
    }
    Ok(on)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_kube_apiserver_does() {
        let on = FeatureGates {
            sharded_list_and_watch: true,
            ..FeatureGates::default()
        };
        let map = FeatureGates {
            mutating_admission_policy: true,
            ..FeatureGates::default()
        };
        assert_eq!("AllBeta=true".parse(), Ok(map));
        assert_eq!("MutatingAdmissionPolicy=true".parse(), Ok(map));
        assert_eq!("ShardedListAndWatch=true".parse(), Ok(on));
        assert_eq!(" ShardedListAndWatch = T ,".parse(), Ok(on));
        assert_eq!("".parse(), Ok(FeatureGates::default()));
        assert_eq!("AllAlpha=true".parse(), Ok(on));
        assert_eq!(
            "AllAlpha=true,ShardedListAndWatch=false".parse(),
            Ok(FeatureGates::default())
        );
        assert_eq!(
            "Nope=true".parse::<FeatureGates>(),
            Err("unrecognized feature gate: Nope".into())
        );
        assert_eq!(
            "ShardedListAndWatch".parse::<FeatureGates>(),
            Err("missing bool value for ShardedListAndWatch".into())
        );
        assert_eq!(
            "ShardedListAndWatch=yes".parse::<FeatureGates>(),
            Err("invalid value of ShardedListAndWatch=yes, err: strconv.ParseBool: parsing \"yes\": invalid syntax".into())
        );
    }

    #[test]
    fn runtime_config_turns_beta_versions_on() {
        let gv = "admissionregistration.k8s.io/v1beta1";
        assert_eq!(
            parse_runtime_config(&format!("{gv}=true")),
            Ok(vec![gv.to_string()])
        );
        assert_eq!(parse_runtime_config(gv), Ok(vec![gv.to_string()]));
        assert_eq!(
            parse_runtime_config("api/beta=true"),
            Ok(vec![gv.to_string()])
        );
        assert_eq!(
            parse_runtime_config(&format!("api/all=true,{gv}=false")),
            Ok(vec![])
        );
        assert_eq!(parse_runtime_config("apps/v1=true"), Ok(vec![]));
        assert!(parse_runtime_config("nope.io/v2=true").is_err());
        assert!(parse_runtime_config(&format!("{gv}=yes")).is_err());
    }
}
