//! ServiceAccount tokens: the TokenRequest API's JWTs (`serviceaccounts/<name>/token`) and
//! their authentication. The claims are kube-apiserver's (`iss`, `sub`
//! `system:serviceaccount:<ns>:<name>`, `aud`, `exp`, `iat`, `nbf`, `kubernetes.io`); the
//! signature is an HMAC-SHA256 with a per-server key where kube-apiserver signs RS256 with its
//! service-account key (a test server has no key pair to publish).
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use serde_json::{Value, json};

use crate::auth_config::{AUTHENTICATED, User};
use crate::state::Db;

/// kube-apiserver's default `--service-account-issuer` and `--api-audiences`.
pub const ISSUER: &str = "https://kubernetes.default.svc.cluster.local";

fn key(secret: &[u8; 32]) -> hmac::Key {
    hmac::Key::new(hmac::HMAC_SHA256, secret)
}

/// A signed token for the ServiceAccount `ns/name` (uid `uid`) valid from `now` for `seconds`.
pub fn issue(
    secret: &[u8; 32],
    ns: &str,
    name: &str,
    uid: &str,
    audiences: &[String],
    now: i64,
    seconds: i64,
) -> String {
    let header = json!({"alg": "HS256", "typ": "JWT"});
    let claims = json!({
        "aud": audiences,
        "exp": now + seconds,
        "iat": now,
        "iss": ISSUER,
        "jti": crate::util::uid(),
        "kubernetes.io": {"namespace": ns, "serviceaccount": {"name": name, "uid": uid}},
        "nbf": now,
        "sub": format!("system:serviceaccount:{ns}:{name}"),
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let sig = hmac::sign(&key(secret), signing_input.as_bytes());
    format!("{signing_input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
}

/// The user a ServiceAccount token stands for: `None` when it is not one of this server's
/// tokens, is expired, is for another audience, or its ServiceAccount is gone or was recreated
/// (another uid), as kube-apiserver's validator refuses it.
pub fn authenticate(secret: &[u8; 32], db: &Db, token: &str, now: i64) -> Option<User> {
    let (signing_input, sig) = token.rsplit_once('.')?;
    let sig = URL_SAFE_NO_PAD.decode(sig).ok()?;
    hmac::verify(&key(secret), signing_input.as_bytes(), &sig).ok()?;
    let (_, claims) = signing_input.split_once('.')?;
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).ok()?).ok()?;
    let exp = claims.get("exp").and_then(Value::as_i64)?;
    let nbf = claims.get("nbf").and_then(Value::as_i64).unwrap_or(0);
    if now >= exp || now < nbf {
        return None;
    }
    let audiences = claims.get("aud").and_then(Value::as_array)?;
    if !audiences.iter().any(|a| a.as_str() == Some(ISSUER)) {
        return None;
    }
    let k8s = claims.get("kubernetes.io")?;
    let ns = k8s.get("namespace").and_then(Value::as_str)?;
    let name = k8s["serviceaccount"].get("name").and_then(Value::as_str)?;
    let uid = k8s["serviceaccount"].get("uid").and_then(Value::as_str)?;
    let sa = db.store.get(&crate::store::Key {
        group: String::new(),
        resource: "serviceaccounts".into(),
        namespace: ns.into(),
        name: name.into(),
    })?;
    if crate::util::meta_str(sa, "uid") != uid || crate::util::is_deleting(sa) {
        return None;
    }
    let mut user = service_account_user(ns, name);
    user.uid = uid.to_string();
    user.groups.push(AUTHENTICATED.into());
    user.extra.insert(
        "authentication.kubernetes.io/credential-id".into(),
        vec![format!(
            "JTI={}",
            claims.get("jti").and_then(Value::as_str).unwrap_or("")
        )],
    );
    Some(user)
}

/// `serviceaccount.UserInfo(ns, name, "")`: `system:serviceaccount:<ns>:<name>` in
/// `system:serviceaccounts` and `system:serviceaccounts:<ns>` (authentication adds
/// `system:authenticated`; the CEL authorizer's `serviceAccount()` does not).
pub fn service_account_user(ns: &str, name: &str) -> User {
    User {
        name: format!("system:serviceaccount:{ns}:{name}"),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{ns}"),
        ],
        ..User::default()
    }
}
