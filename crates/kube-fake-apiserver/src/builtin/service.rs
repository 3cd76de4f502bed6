//! Services: `SetDefaults_Service`, the REST storage's allocation of cluster IPs, IP families and
//! node ports (`pkg/registry/core/service/storage/{storage,alloc}.go`), and `ValidateService` /
//! `ValidateServiceUpdate`.
use std::collections::HashSet;
use std::net::Ipv4Addr;

use serde_json::{Value, json};

use super::field::{
    Path, duplicate, forbidden, invalid, invalid_str, not_supported, q, required, string_list,
};
use super::json::{default, default_str, has, i, items, items_mut, obj_at, s};
use super::meta;
use super::names::{dns1123_label, dns1123_subdomain, port_name, port_num};
use super::podspec::validate_protocol;
use crate::schema::Cause;
use crate::state::Db;
use crate::util::random_u64;

/// The service CIDR (kube-apiserver's default `--service-cluster-ip-range` in kind/kubeadm).
const SERVICE_CIDR: (Ipv4Addr, u32) = (Ipv4Addr::new(10, 96, 0, 0), 12);
/// `--service-node-port-range`.
const NODE_PORTS: (i64, i64) = (30000, 32767);

/// What other Services hold: cluster IPs and node ports are never handed out twice.
#[derive(Debug, Default)]
pub struct Allocated {
    ips: HashSet<String>,
    ports: HashSet<i64>,
}

impl Allocated {
    /// Addresses and ports held elsewhere (tests without a store).
    #[cfg(test)]
    pub fn holding(ips: &[&str], ports: &[i64]) -> Allocated {
        Allocated {
            ips: ips.iter().map(|s| s.to_string()).collect(),
            ports: ports.iter().copied().collect(),
        }
    }

    /// Everything stored Services hold, but `skip` (the Service being updated).
    pub fn from_db(db: &Db, skip: Option<(&str, &str)>) -> Allocated {
        let mut a = Allocated::default();
        for (k, svc) in db.store.list("", "services", None) {
            if skip == Some((k.namespace.as_str(), k.name.as_str())) {
                continue;
            }
            let spec = svc.get("spec").cloned().unwrap_or_default();
            for ip in items(&spec, "clusterIPs") {
                a.ips.insert(ip.as_str().unwrap_or_default().to_string());
            }
            for p in items(&spec, "ports") {
                if let Some(n) = i(p, "nodePort") {
                    a.ports.insert(n);
                }
            }
            if let Some(n) = i(&spec, "healthCheckNodePort") {
                a.ports.insert(n);
            }
        }
        a
    }
}

fn cidr_bounds() -> (u32, u32) {
    let (base, bits) = SERVICE_CIDR;
    let base = u32::from(base);
    let size = 1u32 << (32 - bits);
    (base, base + size - 1)
}

fn cidr_text() -> String {
    format!("{}/{}", SERVICE_CIDR.0, SERVICE_CIDR.1)
}

pub fn default_service(o: &mut Value) {
    let Some(spec) = obj_at(o, "spec") else {
        return;
    };
    default_str(spec, "sessionAffinity", "None");
    if s(spec, "sessionAffinity") == "None" {
        spec.as_object_mut()
            .map(|m| m.remove("sessionAffinityConfig"));
    }
    if s(spec, "sessionAffinity") == "ClientIP"
        && spec
            .pointer("/sessionAffinityConfig/clientIP/timeoutSeconds")
            .is_none_or(Value::is_null)
    {
        spec["sessionAffinityConfig"] = json!({"clientIP": {"timeoutSeconds": 10800}});
    }
    default_str(spec, "type", "ClusterIP");
    for p in items_mut(spec, "ports") {
        default_str(p, "protocol", "TCP");
        let tp = p.get("targetPort");
        if tp.is_none_or(|t| t.is_null() || t == &json!(0) || t == &json!("")) {
            let port = p.get("port").cloned().unwrap_or(json!(0));
            p["targetPort"] = port;
        }
    }
    let ty = s(spec, "type").to_string();
    let external = ty == "LoadBalancer"
        || ty == "NodePort"
        || (ty == "ClusterIP" && items(spec, "externalIPs").next().is_some());
    if external {
        default_str(spec, "externalTrafficPolicy", "Cluster");
    }
    if matches!(ty.as_str(), "NodePort" | "LoadBalancer" | "ClusterIP") {
        default(spec, "internalTrafficPolicy", json!("Cluster"));
    }
    if ty == "LoadBalancer" {
        default(spec, "allocateLoadBalancerNodePorts", json!(true));
    }
}

fn is_headless(spec: &Value) -> bool {
    s(spec, "clusterIP") == "None"
}

fn needs_cluster_ip(spec: &Value) -> bool {
    s(spec, "type") != "ExternalName"
}

fn needs_node_ports(spec: &Value) -> bool {
    match s(spec, "type") {
        "NodePort" => true,
        "LoadBalancer" => spec.get("allocateLoadBalancerNodePorts") != Some(&json!(false)),
        _ => false,
    }
}

fn needs_health_check_port(spec: &Value) -> bool {
    s(spec, "type") == "LoadBalancer" && s(spec, "externalTrafficPolicy") == "Local"
}

/// On update: what the client left out of the allocated fields comes from the stored Service
/// (`patchAllocatedValues`), and fields the new type does not use are dropped
/// (`dropTypeDependentFields`) when they are the old allocated values.
pub fn carry_over(new: &mut Value, old: &Value) {
    let Some(old_spec) = old.get("spec") else {
        return;
    };
    let Some(spec) = obj_at(new, "spec") else {
        return;
    };
    if needs_cluster_ip(old_spec) && needs_cluster_ip(spec) {
        if s(spec, "clusterIP").is_empty()
            && let Some(v) = old_spec.get("clusterIP")
        {
            spec["clusterIP"] = v.clone();
        }
        if items(spec, "clusterIPs").next().is_none()
            && let Some(v) = old_spec.get("clusterIPs")
        {
            spec["clusterIPs"] = v.clone();
        }
        for f in ["ipFamilies", "ipFamilyPolicy"] {
            if !has(spec, f)
                && let Some(v) = old_spec.get(f)
            {
                spec[f] = v.clone();
            }
        }
    }
    if needs_cluster_ip(old_spec) && !needs_cluster_ip(spec) {
        // ExternalName: the allocated IPs and families go when the client left them as they were.
        for f in ["clusterIP", "clusterIPs", "ipFamilies", "ipFamilyPolicy"] {
            if spec.get(f) == old_spec.get(f) {
                spec.as_object_mut().map(|m| m.remove(f));
            }
        }
    }
    let old_ports: Vec<(String, i64)> = items(old_spec, "ports")
        .map(|p| (s(p, "name").to_string(), i(p, "nodePort").unwrap_or(0)))
        .collect();
    if needs_node_ports(old_spec) && needs_node_ports(spec) {
        let used: HashSet<i64> = items(spec, "ports")
            .filter_map(|p| i(p, "nodePort"))
            .collect();
        for p in items_mut(spec, "ports") {
            if i(p, "nodePort").unwrap_or(0) == 0
                && let Some((_, np)) = old_ports.iter().find(|(n, _)| n == s(p, "name"))
                && *np != 0
                && !used.contains(np)
            {
                p["nodePort"] = json!(np);
            }
        }
    } else if needs_node_ports(old_spec) && !needs_node_ports(spec) {
        for p in items_mut(spec, "ports") {
            let np = i(p, "nodePort").unwrap_or(0);
            if np != 0 && old_ports.iter().any(|(_, o)| *o == np) {
                p.as_object_mut().map(|m| m.remove("nodePort"));
            }
        }
    }
    let old_hc = i(old_spec, "healthCheckNodePort");
    if needs_health_check_port(old_spec) && needs_health_check_port(spec) {
        if i(spec, "healthCheckNodePort").unwrap_or(0) == 0
            && let Some(v) = old_hc
        {
            spec["healthCheckNodePort"] = json!(v);
        }
    } else if !needs_health_check_port(spec)
        && old_hc.is_some()
        && i(spec, "healthCheckNodePort") == old_hc
    {
        spec.as_object_mut()
            .map(|m| m.remove("healthCheckNodePort"));
    }
}

/// Allocates what the Service needs and has not got: IP families and policy, cluster IPs,
/// node ports, the health-check node port. Errors are the allocator's, returned on their own
/// (the real server allocates before it validates).
pub fn allocate(o: &mut Value, taken: &Allocated) -> Vec<Cause> {
    let mut out = Vec::new();
    let Some(spec) = obj_at(o, "spec") else {
        return out;
    };
    let sp = Path::new("spec");
    if needs_cluster_ip(spec) {
        // `clusterIP` and `clusterIPs` agree (the strategy's normalizeClusterIPs).
        let ip = s(spec, "clusterIP").to_string();
        if items(spec, "clusterIPs").next().is_none() && !ip.is_empty() {
            spec["clusterIPs"] = json!([ip]);
        }
        let ip0 = spec
            .get("clusterIPs")
            .and_then(|v| v.get(0))
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if ip.is_empty() && !ip0.is_empty() {
            spec["clusterIP"] = json!(ip0);
        }
        let headless = is_headless(spec);
        if !has(spec, "ipFamilyPolicy") {
            let no_selector = spec
                .get("selector")
                .and_then(Value::as_object)
                .is_none_or(|m| m.is_empty());
            let policy = if headless && no_selector {
                "RequireDualStack"
            } else {
                "SingleStack"
            };
            spec["ipFamilyPolicy"] = json!(policy);
        }
        if !has(spec, "ipFamilies") {
            spec["ipFamilies"] = json!(["IPv4"]);
        }
        if !headless {
            if ip0.is_empty() {
                let (lo, hi) = cidr_bounds();
                // The dynamic band is the upper part of the range (ServiceIPStaticSubrange).
                let static_band = ((hi - lo + 1) / 16).clamp(16, 256);
                let span = u64::from(hi - 1 - (lo + static_band));
                let start = random_u64() % span;
                let found = (0..span).find_map(|k| {
                    let ip = Ipv4Addr::from(lo + static_band + ((start + k) % span) as u32);
                    let text = ip.to_string();
                    (!taken.ips.contains(&text)).then_some(text)
                });
                match found {
                    Some(ip) => {
                        spec["clusterIP"] = json!(ip);
                        spec["clusterIPs"] = json!([ip]);
                    }
                    None => out.push(invalid(
                        &sp.child("clusterIPs"),
                        "[]string(nil)",
                        "failed to allocate IP: range is full",
                    )),
                }
            } else if let Ok(addr) = ip0.parse::<Ipv4Addr>() {
                let (lo, hi) = cidr_bounds();
                let n = u32::from(addr);
                let value = string_list(spec.get("clusterIPs"));
                if n <= lo || n >= hi {
                    out.push(invalid(
                        &sp.child("clusterIPs"),
                        &value,
                        &format!(
                            "failed to allocate IP {ip0}: the provided IP ({ip0}) is not in the valid range. The range of valid IPs is {}",
                            cidr_text()
                        ),
                    ));
                } else if taken.ips.contains(&ip0) {
                    out.push(invalid(
                        &sp.child("clusterIPs"),
                        &value,
                        &format!("failed to allocate IP {ip0}: provided IP is already allocated"),
                    ));
                }
            }
        }
    }
    let mut claimed: HashSet<i64> = HashSet::new();
    if needs_node_ports(spec) {
        let pp = sp.child("ports");
        for (idx, p) in items_mut(spec, "ports").enumerate() {
            let np = i(p, "nodePort").unwrap_or(0);
            if np == 0 {
                match pick_port(taken, &claimed) {
                    Some(n) => {
                        p["nodePort"] = json!(n);
                        claimed.insert(n);
                    }
                    None => out.push(invalid(
                        &pp.index(idx).child("nodePort"),
                        "0",
                        "failed to allocate a nodePort: range is full",
                    )),
                }
            } else {
                node_port_taken(
                    np,
                    taken,
                    &claimed,
                    &pp.index(idx).child("nodePort"),
                    &mut out,
                );
                claimed.insert(np);
            }
        }
    }
    if needs_health_check_port(spec) {
        let hc = i(spec, "healthCheckNodePort").unwrap_or(0);
        if hc == 0 {
            if let Some(n) = pick_port(taken, &claimed) {
                spec["healthCheckNodePort"] = json!(n);
            }
        } else {
            node_port_taken(
                hc,
                taken,
                &claimed,
                &sp.child("healthCheckNodePort"),
                &mut out,
            );
        }
    }
    out
}

fn pick_port(taken: &Allocated, claimed: &HashSet<i64>) -> Option<i64> {
    let (lo, hi) = NODE_PORTS;
    let span = (hi - lo + 1) as u64;
    let start = random_u64() % span;
    (0..span)
        .map(|k| lo + ((start + k) % span) as i64)
        .find(|n| !taken.ports.contains(n) && !claimed.contains(n))
}

fn node_port_taken(
    n: i64,
    taken: &Allocated,
    claimed: &HashSet<i64>,
    path: &Path,
    out: &mut Vec<Cause>,
) {
    let (lo, hi) = NODE_PORTS;
    if !(lo..=hi).contains(&n) {
        out.push(invalid(
            path,
            &n.to_string(),
            &format!(
                "provided port is not in the valid range. The range of valid ports is {lo}-{hi}"
            ),
        ));
    } else if taken.ports.contains(&n) || claimed.contains(&n) {
        out.push(invalid(
            path,
            &n.to_string(),
            "provided port is already allocated",
        ));
    }
}

/// `serviceStrategy.PrepareForCreate`: status is reset (a `loadBalancer` struct, always encoded).
pub fn prepare_create(o: &mut Value) {
    o["status"] = json!({"loadBalancer": {}});
}

pub fn validate(o: &Value, out: &mut Vec<Cause>) {
    let spec = o.get("spec").cloned().unwrap_or(json!({}));
    let sp = Path::new("spec");
    let ty = s(&spec, "type");
    let headless = is_headless(&spec);
    let ports: Vec<&Value> = items(&spec, "ports").collect();
    if ports.is_empty() && !headless && ty != "ExternalName" {
        out.push(required(&sp.child("ports"), ""));
    }
    match ty {
        "LoadBalancer" | "NodePort" if headless => {
            out.push(invalid_str(
                &sp.child("clusterIPs").index(0),
                "None",
                &format!("may not be set to 'None' for {ty} services"),
            ));
        }
        "ExternalName" => {
            if items(&spec, "clusterIPs").next().is_some() {
                out.push(forbidden(
                    &sp.child("clusterIPs"),
                    "may not be set for ExternalName services",
                ));
            }
            let cname = s(&spec, "externalName");
            let cname = cname.strip_suffix('.').unwrap_or(cname);
            if cname.is_empty() {
                out.push(required(&sp.child("externalName"), ""));
            } else {
                for m in dns1123_subdomain(cname) {
                    out.push(invalid_str(&sp.child("externalName"), cname, &m));
                }
            }
        }
        _ => {}
    }
    if ty == "LoadBalancer" {
        for (idx, p) in ports.iter().enumerate() {
            if i(p, "port") == Some(10250) {
                out.push(invalid(
                    &sp.child("ports").index(idx),
                    "10250",
                    "may not expose port 10250 externally since it is used by kubelet",
                ));
            }
        }
    }
    let mut names = HashSet::new();
    for (idx, p) in ports.iter().enumerate() {
        let pp = sp.child("ports").index(idx);
        let name = s(p, "name");
        if ports.len() > 1 && name.is_empty() {
            out.push(required(&pp.child("name"), ""));
        } else if !name.is_empty() {
            for m in dns1123_label(name) {
                out.push(invalid_str(&pp.child("name"), name, &m));
            }
            if !names.insert(name.to_string()) {
                out.push(duplicate(&pp.child("name"), &q(name)));
            }
        }
        let port = i(p, "port").unwrap_or(0);
        for m in port_num(port) {
            out.push(invalid(&pp.child("port"), &port.to_string(), &m));
        }
        validate_protocol(p, &pp.child("protocol"), out);
        match p.get("targetPort") {
            Some(Value::Number(n)) => {
                let n = n.as_i64().unwrap_or(0);
                for m in port_num(n) {
                    out.push(invalid(&pp.child("targetPort"), &n.to_string(), &m));
                }
            }
            Some(Value::String(t)) => {
                for m in port_name(t) {
                    out.push(invalid_str(&pp.child("targetPort"), t, &m));
                }
            }
            _ => {}
        }
    }
    if spec.get("selector").is_some() {
        meta::labels(spec.get("selector"), &sp.child("selector"), out);
    }
    let sa = s(&spec, "sessionAffinity");
    if sa.is_empty() {
        out.push(required(&sp.child("sessionAffinity"), ""));
    } else if !matches!(sa, "ClientIP" | "None") {
        out.push(not_supported(
            &sp.child("sessionAffinity"),
            &q(sa),
            &["ClientIP", "None"],
        ));
    }
    if ty.is_empty() {
        out.push(required(&sp.child("type"), ""));
    } else if !matches!(
        ty,
        "ClusterIP" | "ExternalName" | "LoadBalancer" | "NodePort"
    ) {
        out.push(not_supported(
            &sp.child("type"),
            &q(ty),
            &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"],
        ));
    }
    if ty == "ClusterIP" {
        for (idx, p) in ports.iter().enumerate() {
            if i(p, "nodePort").unwrap_or(0) != 0 {
                out.push(forbidden(
                    &sp.child("ports").index(idx).child("nodePort"),
                    "may not be used when `type` is 'ClusterIP'",
                ));
            }
        }
    }
    let mut node_ports = HashSet::new();
    for (idx, p) in ports.iter().enumerate() {
        let np = i(p, "nodePort").unwrap_or(0);
        if np != 0 && !node_ports.insert((s(p, "protocol").to_string(), np)) {
            out.push(duplicate(
                &sp.child("ports").index(idx).child("nodePort"),
                &np.to_string(),
            ));
        }
    }
    let mut seen = HashSet::new();
    for (idx, p) in ports.iter().enumerate() {
        let key = (s(p, "protocol").to_string(), i(p, "port").unwrap_or(0));
        if !seen.insert(key.clone()) {
            out.push(duplicate(
                &sp.child("ports").index(idx),
                &format!(
                    "core.ServicePort{{Name:\"\", Protocol:{}, AppProtocol:(*string)(nil), Port:{}, TargetPort:intstr.IntOrString{{Type:0, IntVal:0, StrVal:\"\"}}, NodePort:0}}",
                    q(&key.0),
                    key.1
                ),
            ));
        }
    }
    for (idx, ip) in items(&spec, "clusterIPs").enumerate() {
        let ip = ip.as_str().unwrap_or_default();
        if ip != "None" && ip.parse::<std::net::IpAddr>().is_err() {
            out.push(invalid_str(
                &sp.child("clusterIPs").index(idx),
                ip,
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            ));
        }
    }
}

/// `ValidateServiceUpdate`: the cluster IPs may not change (`validateUpgradeDowngradeClusterIPs`).
pub fn validate_update(new: &Value, old: &Value, out: &mut Vec<Cause>) {
    let (Some(ns), Some(os)) = (new.get("spec"), old.get("spec")) else {
        return;
    };
    if s(ns, "type") == "ExternalName" || s(os, "type") == "ExternalName" {
        return;
    }
    if is_headless(ns) && is_headless(os) {
        return;
    }
    let new_ips: Vec<&str> = items(ns, "clusterIPs").filter_map(Value::as_str).collect();
    let old_ips: Vec<&str> = items(os, "clusterIPs").filter_map(Value::as_str).collect();
    let path = Path::new("spec.clusterIPs");
    let value = string_list(ns.get("clusterIPs"));
    if new_ips.len() == old_ips.len() {
        for (idx, ip) in old_ips.iter().enumerate() {
            if new_ips[idx] != *ip {
                out.push(invalid(&path.index(idx), &value, "may not change once set"));
            }
        }
    } else if new_ips.is_empty() {
        out.push(invalid(
            &path.index(0),
            &value,
            "primary clusterIP can not be unset",
        ));
    }
}
