//! Decoding of the Kubernetes protobuf envelope for the few built-in kinds kubectl's imperative
//! `create` commands send as protobuf (namespace, configmap, secret, serviceaccount, deployment,
//! service). Field numbers are those of k8s.io/api's generated.proto; unknown fields are skipped.
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Map, Value, json};

/// How one protobuf field maps to JSON.
#[derive(Clone, Copy)]
enum K {
    Str,
    /// Non-pointer Go fields are always encoded; JSON's omitempty drops their zero values.
    Int,
    Bool,
    /// Pointer fields: present means set, zero included.
    PInt,
    PBool,
    Msg(&'static [F]),
    RepStr,
    RepMsg(&'static [F]),
    MapStr,
    MapBytes,
    Time,
    IntOrString,
    MapQuantity,
}

type F = (u64, &'static str, K);

const OWNER: &[F] = &[
    (5, "apiVersion", K::Str),
    (1, "kind", K::Str),
    (3, "name", K::Str),
    (4, "uid", K::Str),
    (6, "controller", K::PBool),
    (7, "blockOwnerDeletion", K::PBool),
];
const META: &[F] = &[
    (1, "name", K::Str),
    (2, "generateName", K::Str),
    (3, "namespace", K::Str),
    (5, "uid", K::Str),
    (6, "resourceVersion", K::Str),
    (7, "generation", K::Int),
    (8, "creationTimestamp", K::Time),
    (11, "labels", K::MapStr),
    (12, "annotations", K::MapStr),
    (13, "ownerReferences", K::RepMsg(OWNER)),
    (14, "finalizers", K::RepStr),
];
const NS_SPEC: &[F] = &[(1, "finalizers", K::RepStr)];
const NS_STATUS: &[F] = &[(1, "phase", K::Str)];
const NAMESPACE: &[F] = &[
    (1, "metadata", K::Msg(META)),
    (2, "spec", K::Msg(NS_SPEC)),
    (3, "status", K::Msg(NS_STATUS)),
];
const CONFIGMAP: &[F] = &[
    (1, "metadata", K::Msg(META)),
    (2, "data", K::MapStr),
    (3, "binaryData", K::MapBytes),
    (4, "immutable", K::PBool),
];
const SECRET: &[F] = &[
    (1, "metadata", K::Msg(META)),
    (2, "data", K::MapBytes),
    (3, "type", K::Str),
    (4, "stringData", K::MapStr),
    (5, "immutable", K::PBool),
];
const LOCAL_REF: &[F] = &[(1, "name", K::Str)];
const SERVICEACCOUNT: &[F] = &[
    (1, "metadata", K::Msg(META)),
    (4, "imagePullSecrets", K::RepMsg(LOCAL_REF)),
    (3, "automountServiceAccountToken", K::PBool),
];
const REQUIREMENT: &[F] = &[
    (1, "key", K::Str),
    (2, "operator", K::Str),
    (3, "values", K::RepStr),
];
const SELECTOR: &[F] = &[
    (1, "matchLabels", K::MapStr),
    (2, "matchExpressions", K::RepMsg(REQUIREMENT)),
];
const PORT: &[F] = &[
    (1, "name", K::Str),
    (2, "hostPort", K::Int),
    (3, "containerPort", K::Int),
    (4, "protocol", K::Str),
];
const ENV: &[F] = &[(1, "name", K::Str), (2, "value", K::Str)];
const RESOURCES: &[F] = &[
    (1, "limits", K::MapQuantity),
    (2, "requests", K::MapQuantity),
];
const CONTAINER: &[F] = &[
    (1, "name", K::Str),
    (2, "image", K::Str),
    (3, "command", K::RepStr),
    (4, "args", K::RepStr),
    (5, "workingDir", K::Str),
    (6, "ports", K::RepMsg(PORT)),
    (7, "env", K::RepMsg(ENV)),
    (8, "resources", K::Msg(RESOURCES)),
    (14, "imagePullPolicy", K::Str),
];
const POD_SPEC: &[F] = &[
    (2, "containers", K::RepMsg(CONTAINER)),
    (20, "initContainers", K::RepMsg(CONTAINER)),
    (3, "restartPolicy", K::Str),
    (4, "terminationGracePeriodSeconds", K::PInt),
    (6, "dnsPolicy", K::Str),
    (7, "nodeSelector", K::MapStr),
    (8, "serviceAccountName", K::Str),
    (11, "hostNetwork", K::Bool),
    (19, "schedulerName", K::Str),
];
const TEMPLATE: &[F] = &[(1, "metadata", K::Msg(META)), (2, "spec", K::Msg(POD_SPEC))];
const ROLLING: &[F] = &[
    (1, "maxUnavailable", K::IntOrString),
    (2, "maxSurge", K::IntOrString),
];
const STRATEGY: &[F] = &[(1, "type", K::Str), (2, "rollingUpdate", K::Msg(ROLLING))];
const DEPLOY_SPEC: &[F] = &[
    (1, "replicas", K::PInt),
    (2, "selector", K::Msg(SELECTOR)),
    (3, "template", K::Msg(TEMPLATE)),
    (4, "strategy", K::Msg(STRATEGY)),
    (5, "minReadySeconds", K::Int),
    (6, "revisionHistoryLimit", K::PInt),
    (7, "paused", K::Bool),
    (9, "progressDeadlineSeconds", K::PInt),
];
const DEPLOYMENT: &[F] = &[
    (1, "metadata", K::Msg(META)),
    (2, "spec", K::Msg(DEPLOY_SPEC)),
];
const POD: &[F] = &[(1, "metadata", K::Msg(META)), (2, "spec", K::Msg(POD_SPEC))];
const SVC_PORT: &[F] = &[
    (1, "name", K::Str),
    (2, "protocol", K::Str),
    (3, "port", K::Int),
    (4, "targetPort", K::IntOrString),
    (5, "nodePort", K::Int),
];
const SVC_SPEC: &[F] = &[
    (1, "ports", K::RepMsg(SVC_PORT)),
    (2, "selector", K::MapStr),
    (3, "clusterIP", K::Str),
    (4, "type", K::Str),
    (11, "externalName", K::Str),
];
const SERVICE: &[F] = &[(1, "metadata", K::Msg(META)), (2, "spec", K::Msg(SVC_SPEC))];

fn schema_for(api_version: &str, kind: &str) -> Option<&'static [F]> {
    Some(match (api_version, kind) {
        ("v1", "Namespace") => NAMESPACE,
        ("v1", "ConfigMap") => CONFIGMAP,
        ("v1", "Secret") => SECRET,
        ("v1", "ServiceAccount") => SERVICEACCOUNT,
        ("v1", "Service") => SERVICE,
        ("v1", "Pod") => POD,
        ("apps/v1", "Deployment") => DEPLOYMENT,
        _ => return None,
    })
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Reader<'a> {
    fn varint(&mut self) -> Result<u64, String> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let byte = *self.b.get(self.i).ok_or("truncated varint")?;
            self.i += 1;
            v |= u64::from(byte & 0x7f) << shift;
            if byte & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err("varint too long".into())
    }
    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let n = self.varint()? as usize;
        let end = self
            .i
            .checked_add(n)
            .filter(|e| *e <= self.b.len())
            .ok_or("truncated field")?;
        let s = &self.b[self.i..end];
        self.i = end;
        Ok(s)
    }
    /// Next (field, wire type, scalar or bytes); `None` at the end.
    fn next(&mut self) -> Result<Option<(u64, Field<'a>)>, String> {
        if self.i >= self.b.len() {
            return Ok(None);
        }
        let key = self.varint()?;
        let field = match key & 7 {
            0 => Field::Varint(self.varint()?),
            1 => {
                self.i = self
                    .i
                    .checked_add(8)
                    .filter(|e| *e <= self.b.len())
                    .ok_or("truncated fixed64")?;
                Field::Skip
            }
            2 => Field::Bytes(self.bytes()?),
            5 => {
                self.i = self
                    .i
                    .checked_add(4)
                    .filter(|e| *e <= self.b.len())
                    .ok_or("truncated fixed32")?;
                Field::Skip
            }
            w => return Err(format!("unsupported wire type {w}")),
        };
        Ok(Some((key >> 3, field)))
    }
}

enum Field<'a> {
    Varint(u64),
    Bytes(&'a [u8]),
    Skip,
}

fn text(b: &[u8]) -> Value {
    Value::String(String::from_utf8_lossy(b).into_owned())
}

fn map_entry(b: &[u8]) -> Result<(String, &[u8]), String> {
    let mut r = Reader { b, i: 0 };
    let (mut k, mut v) = (String::new(), &[][..]);
    while let Some((n, f)) = r.next()? {
        match (n, f) {
            (1, Field::Bytes(x)) => k = String::from_utf8_lossy(x).into_owned(),
            (2, Field::Bytes(x)) => v = x,
            _ => {}
        }
    }
    Ok((k, v))
}

fn time(b: &[u8]) -> Result<Value, String> {
    let mut r = Reader { b, i: 0 };
    let mut secs = 0i64;
    while let Some((n, f)) = r.next()? {
        if let (1, Field::Varint(v)) = (n, f) {
            secs = v as i64;
        }
    }
    if secs == 0 {
        return Ok(Value::Null);
    }
    Ok(jiff::Timestamp::from_second(secs)
        .map(|t| Value::String(t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()))
        .unwrap_or(Value::Null))
}

fn message(b: &[u8], fields: &[F], depth: usize) -> Result<Value, String> {
    if depth > 32 {
        return Err("message nested too deeply".into());
    }
    let mut out = Map::new();
    let mut r = Reader { b, i: 0 };
    while let Some((n, f)) = r.next()? {
        let Some((_, name, kind)) = fields.iter().find(|(num, _, _)| *num == n) else {
            continue;
        };
        let name = name.to_string();
        match (*kind, f) {
            (K::Str, Field::Bytes(x)) if !x.is_empty() => {
                out.insert(name, text(x));
            }
            (K::Int, Field::Varint(v)) if v != 0 => {
                out.insert(name, json!(v as i64));
            }
            (K::PInt, Field::Varint(v)) => {
                out.insert(name, json!(v as i64));
            }
            (K::Bool, Field::Varint(v)) if v != 0 => {
                out.insert(name, json!(true));
            }
            (K::PBool, Field::Varint(v)) => {
                out.insert(name, json!(v != 0));
            }
            (K::Msg(sub), Field::Bytes(x)) => {
                out.insert(name, message(x, sub, depth + 1)?);
            }
            (K::Time, Field::Bytes(x)) => {
                // The zero time is `null` in JSON, i.e. absent.
                let t = time(x)?;
                if !t.is_null() {
                    out.insert(name, t);
                }
            }
            (K::RepStr, Field::Bytes(x)) => {
                push(&mut out, name, text(x));
            }
            (K::RepMsg(sub), Field::Bytes(x)) => {
                let v = message(x, sub, depth + 1)?;
                push(&mut out, name, v);
            }
            (K::MapStr | K::MapBytes | K::MapQuantity, Field::Bytes(x)) => {
                let (k, v) = map_entry(x)?;
                let v = match kind {
                    K::MapStr => text(v),
                    K::MapBytes => json!(STANDARD.encode(v)),
                    _ => quantity(v)?,
                };
                let e = out.entry(name).or_insert_with(|| json!({}));
                if let Some(m) = e.as_object_mut() {
                    m.insert(k, v);
                }
            }
            (K::IntOrString, Field::Bytes(x)) => {
                let mut r = Reader { b: x, i: 0 };
                let (mut ty, mut iv, mut sv) = (0u64, 0i64, String::new());
                while let Some((n, f)) = r.next()? {
                    match (n, f) {
                        (1, Field::Varint(v)) => ty = v,
                        (2, Field::Varint(v)) => iv = v as i32 as i64,
                        (3, Field::Bytes(s)) => sv = String::from_utf8_lossy(s).into_owned(),
                        _ => {}
                    }
                }
                out.insert(name, if ty == 1 { json!(sv) } else { json!(iv) });
            }
            _ => {}
        }
    }
    Ok(Value::Object(out))
}

fn quantity(b: &[u8]) -> Result<Value, String> {
    let mut r = Reader { b, i: 0 };
    let mut s = String::new();
    while let Some((n, f)) = r.next()? {
        if let (1, Field::Bytes(x)) = (n, f) {
            s = String::from_utf8_lossy(x).into_owned();
        }
    }
    Ok(json!(s))
}

fn push(out: &mut Map<String, Value>, name: String, v: Value) {
    let e = out.entry(name).or_insert_with(|| json!([]));
    if let Some(a) = e.as_array_mut() {
        a.push(v);
    }
}

/// Decodes a `k8s\0`-prefixed protobuf body into the JSON object it encodes.
pub fn decode(body: &[u8]) -> Result<Value, String> {
    let rest = body
        .strip_prefix(b"k8s\x00")
        .ok_or("missing the k8s protobuf envelope prefix")?;
    let mut r = Reader { b: rest, i: 0 };
    let (mut api_version, mut kind, mut raw) = (String::new(), String::new(), &[][..]);
    while let Some((n, f)) = r.next()? {
        match (n, f) {
            (1, Field::Bytes(tm)) => {
                let mut t = Reader { b: tm, i: 0 };
                while let Some((n, f)) = t.next()? {
                    match (n, f) {
                        (1, Field::Bytes(x)) => {
                            api_version = String::from_utf8_lossy(x).into_owned()
                        }
                        (2, Field::Bytes(x)) => kind = String::from_utf8_lossy(x).into_owned(),
                        _ => {}
                    }
                }
            }
            (2, Field::Bytes(x)) => raw = x,
            _ => {}
        }
    }
    let fields = schema_for(&api_version, &kind).ok_or_else(|| {
        format!("protobuf bodies are not supported for {api_version} {kind}; send JSON")
    })?;
    let mut obj = message(raw, fields, 0)?;
    obj["apiVersion"] = json!(api_version);
    obj["kind"] = json!(kind);
    Ok(obj)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn field(n: u64, payload: &[u8]) -> Vec<u8> {
        let mut v = vec![((n << 3) | 2) as u8, payload.len() as u8];
        v.extend_from_slice(payload);
        v
    }

    #[test]
    fn decodes_a_configmap() {
        let entry = [field(1, b"a"), field(2, b"b")].concat();
        let meta = [
            field(1, b"cm1"),
            field(11, &[field(1, b"app"), field(2, b"x")].concat()),
        ]
        .concat();
        let raw = [field(1, &meta), field(2, &entry)].concat();
        let type_meta = [field(1, b"v1"), field(2, b"ConfigMap")].concat();
        let body = [b"k8s\x00".to_vec(), field(1, &type_meta), field(2, &raw)].concat();
        let v = decode(&body).unwrap();
        assert_eq!(
            v,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm1", "labels": {"app": "x"}}, "data": {"a": "b"}})
        );
        assert!(decode(b"k8s\x00\x0a\xff").is_err());
        assert!(decode(b"{}").is_err());
    }
}
