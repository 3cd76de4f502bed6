//! The `authorizer` variable of admission CEL (Kubernetes' authz library,
//! `apiserver/pkg/cel/library/authz.go`): `authorizer.group(g).resource(r)[.subresource(s)]
//! [.namespace(ns)][.name(n)].check(verb)`, `authorizer.path(p).check(verb)`,
//! `authorizer.serviceAccount(ns, name)` for another user, and `authorizer.requestResource` (the
//! request's own resource); a decision answers `allowed()`, `reason()`, `errored()` and
//! `error()` (functions and messages as `apiserver/pkg/cel/library/authz.go` has them). The
//! checks go to the server's authorizer (RBAC, or everything allowed), handed
//! in by whoever builds the request's [`super::Attributes`].
//!
//! The values are CEL maps tagged with their type under [`TAG`]; the functions are registered
//! with the other libraries and find the request's authorizer in a thread-local set around
//! each evaluation ([`with`]).
use std::cell::RefCell;
use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel::extractors::This;
use kube_cel::cel::objects::{Key, Map};
use kube_cel::cel::{Context, ExecutionError, ResolveResult, Value as Cel};
use kube_codegen_crd::k8s_validation::{dns1123_label, dns1123_subdomain};

/// The key of a value's type name: no CEL field name can spell it.
const TAG: &str = "@authz";

/// What one check asks (`authorizer.AttributesRecord` without the user).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Check {
    /// `serviceAccount(namespace, name)`: the check is for that ServiceAccount, not the
    /// request's user.
    pub service_account: Option<(String, String)>,
    /// `path(p)`: a non-resource check.
    pub path: Option<String>,
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    pub verb: String,
}

/// An authorizer's answer.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Decision {
    pub allowed: bool,
    pub reason: String,
}

/// Decides checks for the request's user.
pub type Authorize = Arc<dyn Fn(&Check) -> Decision + Send + Sync>;

/// The request's authorizer: who decides, and the request's own resource
/// (`authorizer.requestResource`).
#[derive(Clone)]
pub struct Authorizer {
    pub authorize: Authorize,
    pub request: Check,
}

impl std::fmt::Debug for Authorizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authorizer")
            .field("request", &self.request)
            .finish_non_exhaustive()
    }
}

impl Authorizer {
    /// Everything allowed (`AlwaysAllow`), for requests nobody authorizes.
    pub fn always_allow(request: Check) -> Authorizer {
        Authorizer {
            authorize: Arc::new(|_| Decision {
                allowed: true,
                reason: String::new(),
            }),
            request,
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Authorizer>> = const { RefCell::new(None) };
}

/// Runs `f` with `a` as the authorizer its expressions see.
pub fn with<R>(a: &Authorizer, f: impl FnOnce() -> R) -> R {
    struct Restore(Option<Authorizer>);
    impl Drop for Restore {
        fn drop(&mut self) {
            CURRENT.with(|c| *c.borrow_mut() = self.0.take());
        }
    }
    let _restore = Restore(CURRENT.with(|c| c.replace(Some(a.clone()))));
    f()
}

/// The `authorizer` variable when an authorizer is set.
pub fn variable() -> Option<Cel> {
    CURRENT.with(|c| {
        c.borrow().as_ref().map(|a| {
            let mut m = tagged(AUTHORIZER);
            m.insert(
                key("requestResource"),
                check_value(RESOURCE_CHECK, &a.request),
            );
            Cel::Map(Map { map: Arc::new(m) })
        })
    })
}

const AUTHORIZER: &str = "kubernetes.authorization.Authorizer";
const GROUP_CHECK: &str = "kubernetes.authorization.GroupCheck";
const RESOURCE_CHECK: &str = "kubernetes.authorization.ResourceCheck";
const PATH_CHECK: &str = "kubernetes.authorization.PathCheck";
const DECISION: &str = "kubernetes.authorization.Decision";

fn key(k: &str) -> Key {
    Key::String(Arc::new(k.to_string()))
}

fn text(s: &str) -> Cel {
    Cel::String(Arc::new(s.to_string()))
}

fn tagged(ty: &str) -> HashMap<Key, Cel> {
    HashMap::from([(key(TAG), text(ty))])
}

const FIELDS: [&str; 7] = [
    "group",
    "resource",
    "subresource",
    "namespace",
    "name",
    "saNamespace",
    "saName",
];

fn check_value(ty: &str, c: &Check) -> Cel {
    let mut m = tagged(ty);
    let (sa_ns, sa_name) = c.service_account.clone().unwrap_or_default();
    for (k, v) in FIELDS.iter().zip([
        &c.group,
        &c.resource,
        &c.subresource,
        &c.namespace,
        &c.name,
        &sa_ns,
        &sa_name,
    ]) {
        m.insert(key(k), text(v));
    }
    if let Some(p) = &c.path {
        m.insert(key("path"), text(p));
    }
    Cel::Map(Map { map: Arc::new(m) })
}

/// The check a value stands for, if it is of one of `types`.
fn check_of(v: &Cel, types: &[&str]) -> Result<Check, ExecutionError> {
    let Cel::Map(m) = v else {
        return Err(ExecutionError::NoSuchOverload);
    };
    let get = |k: &str| match m.map.get(&key(k)) {
        Some(Cel::String(s)) => s.to_string(),
        _ => String::new(),
    };
    if !types.contains(&get(TAG).as_str()) {
        return Err(ExecutionError::NoSuchOverload);
    }
    let (sa_ns, sa_name) = (get("saNamespace"), get("saName"));
    Ok(Check {
        service_account: (!sa_name.is_empty()).then_some((sa_ns, sa_name)),
        path: m.map.contains_key(&key("path")).then(|| get("path")),
        group: get("group"),
        resource: get("resource"),
        subresource: get("subresource"),
        namespace: get("namespace"),
        name: get("name"),
        verb: String::new(),
    })
}

/// A builder step: `this` (of one of `from`) with `field` set, as a `to`.
fn step(this: &Cel, from: &[&str], to: &str, set: impl FnOnce(&mut Check)) -> ResolveResult {
    let mut c = check_of(this, from)?;
    set(&mut c);
    Ok(check_value(to, &c))
}

fn decision_field(this: &Cel, field: &str) -> ResolveResult {
    let Cel::Map(m) = this else {
        return Err(ExecutionError::NoSuchOverload);
    };
    if m.map.get(&key(TAG)) != Some(&text(DECISION)) {
        return Err(ExecutionError::NoSuchOverload);
    }
    Ok(m.map.get(&key(field)).cloned().unwrap_or(Cel::Null))
}

/// Registers the library's functions.
pub fn register(ctx: &mut Context<'static>) {
    ctx.add_function(
        "serviceAccount",
        |This(this): This<Cel>, ns: Arc<String>, name: Arc<String>| {
            // `authorizerServiceAccount`: the name a DNS subdomain, the namespace a label.
            if !dns1123_subdomain(&name).is_empty() {
                return Err(ExecutionError::function_error(
                    "serviceAccount",
                    "Invalid service account name",
                ));
            }
            if !dns1123_label(&ns).is_empty() {
                return Err(ExecutionError::function_error(
                    "serviceAccount",
                    "Invalid service account namespace",
                ));
            }
            step(&this, &[AUTHORIZER], AUTHORIZER, |c| {
                c.service_account = Some((ns.to_string(), name.to_string()));
            })
        },
    );
    ctx.add_function("group", |This(this): This<Cel>, g: Arc<String>| {
        step(&this, &[AUTHORIZER], GROUP_CHECK, |c| {
            c.group = g.to_string()
        })
    });
    ctx.add_function("resource", |This(this): This<Cel>, r: Arc<String>| {
        if r.trim().is_empty() {
            return Err(ExecutionError::function_error(
                "resource",
                "resource must not be empty",
            ));
        }
        step(&this, &[GROUP_CHECK], RESOURCE_CHECK, |c| {
            c.resource = r.to_string()
        })
    });
    ctx.add_function("subresource", |This(this): This<Cel>, s: Arc<String>| {
        step(&this, &[RESOURCE_CHECK], RESOURCE_CHECK, |c| {
            c.subresource = s.to_string()
        })
    });
    ctx.add_function("namespace", |This(this): This<Cel>, n: Arc<String>| {
        step(&this, &[RESOURCE_CHECK], RESOURCE_CHECK, |c| {
            c.namespace = n.to_string()
        })
    });
    ctx.add_function("name", |This(this): This<Cel>, n: Arc<String>| {
        step(&this, &[RESOURCE_CHECK], RESOURCE_CHECK, |c| {
            c.name = n.to_string()
        })
    });
    // Selectors narrow a check for authorizers that read them; RBAC does not.
    for f in ["fieldSelector", "labelSelector"] {
        ctx.add_function(f, |This(this): This<Cel>, _s: Arc<String>| {
            step(&this, &[RESOURCE_CHECK], RESOURCE_CHECK, |_| {})
        });
    }
    ctx.add_function("path", |This(this): This<Cel>, p: Arc<String>| {
        step(&this, &[AUTHORIZER], PATH_CHECK, |c| {
            c.path = Some(p.to_string())
        })
    });
    ctx.add_function("check", |This(this): This<Cel>, verb: Arc<String>| {
        let mut c = check_of(&this, &[RESOURCE_CHECK, PATH_CHECK])?;
        c.verb = verb.to_string();
        let d = CURRENT
            .with(|a| a.borrow().as_ref().map(|a| (a.authorize)(&c)))
            .ok_or_else(|| ExecutionError::function_error("check", "no authorizer"))?;
        let mut m = tagged(DECISION);
        m.insert(key("allowed"), Cel::Bool(d.allowed));
        m.insert(key("reason"), text(&d.reason));
        Ok(Cel::Map(Map { map: Arc::new(m) }))
    });
    ctx.add_function("allowed", |This(this): This<Cel>| {
        decision_field(&this, "allowed")
    });
    ctx.add_function("reason", |This(this): This<Cel>| {
        decision_field(&this, "reason")
    });
    // The RBAC authorizer never errs here.
    ctx.add_function("errored", |This(this): This<Cel>| {
        decision_field(&this, "allowed").map(|_| Cel::Bool(false))
    });
    ctx.add_function("error", |This(this): This<Cel>| {
        decision_field(&this, "allowed").map(|_| text(""))
    });
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::{Authorizer, Check, Decision, with};
    use crate::admission::cel::{compile, eval};
    use kube_cel::cel::Value as Cel;

    #[test]
    fn checks_reach_the_authorizer_as_built() {
        let seen: Arc<Mutex<Vec<Check>>> = Arc::default();
        let record = seen.clone();
        let a = Authorizer {
            authorize: Arc::new(move |c: &Check| {
                record.lock().unwrap().push(c.clone());
                Decision {
                    allowed: c.verb == "get",
                    reason: format!("verb {}", c.verb),
                }
            }),
            request: Check {
                group: "apps".into(),
                resource: "deployments".into(),
                namespace: "ns".into(),
                name: "d".into(),
                ..Check::default()
            },
        };
        let run = |src: &str| with(&a, || eval(&compile(src).unwrap(), &[]));
        assert_eq!(
            run("authorizer.path('/healthz').check('get').allowed()"),
            Ok(Cel::Bool(true))
        );
        assert_eq!(
            run("authorizer.requestResource.subresource('scale').check('update').reason()"),
            Ok(Cel::String(Arc::new("verb update".into())))
        );
        assert_eq!(
            run(
                "authorizer.serviceAccount('ns', 'sa').group('').resource('pods').name('p').check('get').errored()"
            ),
            Ok(Cel::Bool(false))
        );
        // The library's own argument checks.
        assert_eq!(
            run("authorizer.serviceAccount('ns', 'Not_A_Name').path('/').check('get').allowed()"),
            Err("Invalid service account name".to_string())
        );
        assert_eq!(
            run("authorizer.group('').resource(' ').check('get').allowed()"),
            Err("resource must not be empty".to_string())
        );
        // A step out of order is cel-go's no such overload.
        assert_eq!(
            run("authorizer.resource('pods').check('get').allowed()"),
            Err("no such overload".to_string())
        );
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0].path.as_deref(), Some("/healthz"));
        assert_eq!(
            (
                seen[1].group.as_str(),
                seen[1].resource.as_str(),
                seen[1].subresource.as_str(),
                seen[1].name.as_str()
            ),
            ("apps", "deployments", "scale", "d")
        );
        assert_eq!(
            seen[2].service_account,
            Some(("ns".to_string(), "sa".to_string()))
        );
        assert_eq!(seen.len(), 3);
    }
}
