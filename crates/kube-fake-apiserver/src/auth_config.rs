//! What the builder sets for authentication and authorization (kube-apiserver's
//! `--authorization-mode`, `--anonymous-auth`, `--token-auth-file`), and the user a request is
//! made as. A leaf of the base layer, as [`crate::conversion_config`]: `state` keeps it and the
//! `auth` module above reads it.
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// kube-apiserver's `user.Info`: who a request is made as.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub uid: String,
    pub groups: Vec<String>,
    pub extra: BTreeMap<String, Vec<String>>,
}

/// The group every authenticated user is in, and the one an anonymous request is in.
pub const AUTHENTICATED: &str = "system:authenticated";
pub const UNAUTHENTICATED: &str = "system:unauthenticated";
pub const ANONYMOUS: &str = "system:anonymous";
/// Members pass every authorization check (kube-apiserver's privileged-group authorizer).
pub const MASTERS: &str = "system:masters";

/// The bearer token of the kubeconfig and `client()`: an admin (`system:masters`) as the
/// kubeconfig kubeadm writes is.
pub const ADMIN_TOKEN: &str = "kube-fake-apiserver";
pub const ADMIN_USER: &str = "kubernetes-admin";

/// Authentication and authorization settings; `rbac: false` (the default) lets every request
/// through unauthenticated, as the server always did.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// `--authorization-mode=RBAC` (otherwise `AlwaysAllow`).
    pub rbac: bool,
    /// `--anonymous-auth` (kube-apiserver's default: on): a request without credentials is
    /// `system:anonymous`; off, it is a 401.
    pub anonymous: bool,
    /// Static bearer tokens (`--token-auth-file` rows, and the admin token).
    pub tokens: Arc<HashMap<String, User>>,
    /// The key ServiceAccount tokens are signed with (per server).
    pub signing_key: Arc<[u8; 32]>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        let mut key = [0u8; 32];
        for chunk in key.chunks_mut(8) {
            chunk.copy_from_slice(&crate::util::random_u64().to_le_bytes());
        }
        let mut tokens = HashMap::new();
        tokens.insert(
            ADMIN_TOKEN.to_string(),
            User {
                name: ADMIN_USER.into(),
                groups: vec![MASTERS.into()],
                ..User::default()
            },
        );
        AuthConfig {
            rbac: false,
            anonymous: true,
            tokens: Arc::new(tokens),
            signing_key: Arc::new(key),
        }
    }
}

/// Reads kube-apiserver's `--token-auth-file`: CSV rows `token,user,uid[,"group1,group2"]`.
/// Errors name the line, as kube-apiserver refuses to start on a bad file.
pub fn parse_token_file(text: &str) -> Result<Vec<(String, User)>, String> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let record = csv_record(line).map_err(|e| format!("line {}: {e}", i + 1))?;
        if record.len() < 3 {
            return Err(format!(
                "token file must have at least 3 columns (token, user name, user uid), found {} on line {}",
                record.len(),
                i + 1
            ));
        }
        // kube-apiserver skips (with a warning) a row without a token.
        if record[0].is_empty() {
            continue;
        }
        let groups = match record.get(3) {
            Some(g) if !g.trim().is_empty() => g.split(',').map(|s| s.trim().to_string()).collect(),
            _ => Vec::new(),
        };
        out.push((
            record[0].clone(),
            User {
                name: record[1].clone(),
                uid: record[2].clone(),
                groups,
                extra: BTreeMap::new(),
            },
        ));
    }
    Ok(out)
}

/// One CSV line as Go's `encoding/csv` reads it: fields split by commas, a field in double
/// quotes may hold commas and `""` for a quote.
fn csv_record(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut chars = line.chars().peekable();
    loop {
        let mut field = String::new();
        if chars.peek() == Some(&'"') {
            chars.next();
            loop {
                match chars.next() {
                    Some('"') if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    Some('"') => break,
                    Some(c) => field.push(c),
                    None => return Err("extraneous or missing \" in quoted-field".into()),
                }
            }
            match chars.next() {
                None => {
                    fields.push(field);
                    return Ok(fields);
                }
                Some(',') => fields.push(field),
                Some(_) => return Err("extraneous or missing \" in quoted-field".into()),
            }
        } else {
            loop {
                match chars.next() {
                    None => {
                        fields.push(field);
                        return Ok(fields);
                    }
                    Some(',') => break,
                    Some(c) => field.push(c),
                }
            }
            fields.push(field);
        }
    }
}

/// A `UserInfo` as the review APIs (and admission reviews) carry it.
pub fn user_info(user: Option<&User>) -> Value {
    let Some(u) = user else {
        return json!({});
    };
    let mut info = json!({"username": u.name});
    if !u.uid.is_empty() {
        info["uid"] = json!(u.uid);
    }
    if !u.groups.is_empty() {
        info["groups"] = json!(u.groups);
    }
    if !u.extra.is_empty() {
        info["extra"] = json!(u.extra);
    }
    info
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_file_rows() {
        let rows = parse_token_file(
            "t1,alice,1\n\nt2,bob,2,\"dev,ops\"\n,nobody,3\nt3,\"carol, c\",3,admins\n",
        )
        .unwrap();
        assert_eq!(rows.len(), 3);
        assert_eq!(rows[1].1.groups, ["dev", "ops"]);
        assert_eq!(rows[2].1.name, "carol, c");
        assert_eq!(rows[2].1.groups, ["admins"]);
        let e = parse_token_file("t1,alice\n").unwrap_err();
        assert!(e.contains("at least 3 columns"), "{e}");
        assert!(parse_token_file("t1,\"alice,1\n").is_err());
    }
}
