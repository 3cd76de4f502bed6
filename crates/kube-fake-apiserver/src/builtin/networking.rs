//! `networking.k8s.io/v1`: NetworkPolicies, Ingresses, IngressClasses. Defaults from
//! `pkg/apis/networking/v1/defaults.go`, validation from `pkg/apis/networking/validation`.
use serde_json::{Value, json};

use super::field::{Path, invalid_str, not_supported, q, required};
use super::json::{default, has, items, items_mut, obj_at, s};
use super::labelselector as sel;
use super::podspec::validate_protocol;
use crate::schema::Cause;

pub fn default_kind(kind: &str, o: &mut Value) {
    match kind {
        "NetworkPolicy" => {
            let Some(spec) = obj_at(o, "spec") else {
                return;
            };
            // `podSelector` is a struct (always encoded).
            default(spec, "podSelector", json!({}));
            for dir in ["ingress", "egress"] {
                for r in items_mut(spec, dir) {
                    for p in items_mut(r, "ports") {
                        default(p, "protocol", json!("TCP"));
                    }
                }
            }
            if items(spec, "policyTypes").next().is_none() {
                let mut types = vec![json!("Ingress")];
                if items(spec, "egress").next().is_some() {
                    types.push(json!("Egress"));
                }
                spec["policyTypes"] = Value::Array(types);
            }
        }
        "IngressClass" => {
            if let Some(p) = o.pointer_mut("/spec/parameters").filter(|p| p.is_object()) {
                default(p, "scope", json!("Cluster"));
            }
        }
        _ => {}
    }
}

/// Ingresses start with an empty load-balancer status.
pub fn prepare_create(kind: &str, o: &mut Value) {
    if kind == "Ingress" {
        o["status"] = json!({"loadBalancer": {}});
    }
}

pub fn validate(kind: &str, o: &Value, out: &mut Vec<Cause>) {
    let spec = o.get("spec").cloned().unwrap_or(json!({}));
    let sp = Path::new("spec");
    match kind {
        "NetworkPolicy" => {
            sel::validate(spec.get("podSelector"), &sp.child("podSelector"), out);
            for dir in ["ingress", "egress"] {
                for (idx, r) in items(&spec, dir).enumerate() {
                    for (pi, p) in items(r, "ports").enumerate() {
                        let pp = sp.child(dir).index(idx).child("ports").index(pi);
                        if has(p, "protocol") {
                            validate_protocol(p, &pp.child("protocol"), out);
                        }
                    }
                }
            }
            for (idx, t) in items(&spec, "policyTypes").enumerate() {
                let t = t.as_str().unwrap_or_default();
                if !matches!(t, "Ingress" | "Egress") {
                    out.push(not_supported(
                        &sp.child("policyTypes").index(idx),
                        &q(t),
                        &["Egress", "Ingress"],
                    ));
                }
            }
        }
        "Ingress" => {
            for (ri, r) in items(&spec, "rules").enumerate() {
                let rp = sp.child("rules").index(ri);
                let Some(http) = r.get("http") else { continue };
                for (pi, p) in items(http, "paths").enumerate() {
                    let pp = rp.child("http").child("paths").index(pi);
                    let pt = s(p, "pathType");
                    match pt {
                        "" => out.push(required(
                            &pp.child("pathType"),
                            "pathType must be specified",
                        )),
                        "Exact" | "Prefix" => {
                            let path = s(p, "path");
                            if !path.starts_with('/') {
                                out.push(invalid_str(
                                    &pp.child("path"),
                                    path,
                                    "must be an absolute path",
                                ));
                            }
                        }
                        "ImplementationSpecific" => {}
                        other => out.push(not_supported(
                            &pp.child("pathType"),
                            &q(other),
                            &["Exact", "ImplementationSpecific", "Prefix"],
                        )),
                    }
                }
            }
        }
        _ => {}
    }
}
