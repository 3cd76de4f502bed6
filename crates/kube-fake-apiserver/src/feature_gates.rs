//! kube-apiserver's `--feature-gates` value (`Name=true,Other=false`), parsed as component-base's
//! `featuregate.Set` parses it, for the gates this server implements.
use std::str::FromStr;

/// The feature gates the server acts on, with kube-apiserver 1.35's defaults.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FeatureGates {
    /// `ShardedListAndWatch` (KEP-5866, alpha in 1.35, off by default): the `shardSelector`
    /// parameter of list and watch.
    pub sharded_list_and_watch: bool,
}

/// (name, alpha): every gate this server knows. `AllAlpha`/`AllBeta` set the gates of their
/// stage that the same value does not name.
const GATES: &[(&str, bool)] = &[("ShardedListAndWatch", true)];

impl FeatureGates {
    fn set(&mut self, name: &str, on: bool) {
        if name == "ShardedListAndWatch" {
            self.sharded_list_and_watch = on;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_as_kube_apiserver_does() {
        let on = FeatureGates {
            sharded_list_and_watch: true,
        };
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
}
