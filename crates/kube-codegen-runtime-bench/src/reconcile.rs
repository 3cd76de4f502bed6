//! The reconcile R1 and S1 run (identical work in every runtime and replica) and the tally of
//! what it saw, which tells a process when its first pass and its touch phase are over.

// The kind is called Foo, so `foo` is the natural name, not a placeholder.
#![allow(clippy::disallowed_names)]

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, RwLock};
use std::time::Duration;

use k8s_openapi::api::apps::v1::Deployment;
use kube_codegen_runtime::controller::owners::controller_of;
use kube_codegen_runtime::controller::{Action, Context, Reconciler};
use tokio::sync::Notify;

use crate::samplecontroller::v1alpha1::Foo;

/// A reconcile that finds its child missing or stale tries again after this long.
pub const RETRY: Duration = Duration::from_millis(100);

/// The reconcile's check: the child is controlled by this Foo and runs its replicas.
pub fn up_to_date(foo: &Foo, child: Option<&Deployment>) -> bool {
    let Some(child) = child else { return false };
    let owned = match (controller_of(&child.metadata), &foo.metadata.uid) {
        (Some(r), Some(uid)) => r.uid == *uid,
        _ => false,
    };
    let want = foo.spec.as_ref().and_then(|s| s.replicas);
    owned && child.spec.as_ref().and_then(|s| s.replicas) == want
}

/// The Foo's namespace and its child's name.
pub fn child_of(foo: &Foo) -> (&str, &str) {
    let ns = foo.metadata.namespace.as_deref().unwrap_or_default();
    let name = foo.spec.as_ref().and_then(|s| s.deployment_name.as_deref());
    (ns, name.unwrap_or_default())
}

/// Our runtime's reconcile: looks the child up in the controller's Deployment cache, checks
/// it, records the result and writes nothing.
pub struct CheckChild(pub Arc<Tally>);

impl Reconciler<Foo> for CheckChild {
    type Error = String;

    async fn reconcile(&self, foo: Arc<Foo>, ctx: &Context) -> Result<Action, String> {
        let deployments = ctx
            .lister::<Deployment>()
            .ok_or("the controller does not watch Deployments")?;
        let (ns, name) = child_of(&foo);
        let child = deployments
            .namespace(ns)
            .get(name)
            .map_err(|e| e.to_string())?;
        let ok = up_to_date(&foo, child.as_deref());
        self.0.record(&foo, ok);
        Ok(if ok {
            Action::done()
        } else {
            Action::requeue_after(RETRY)
        })
    }
}

/// What the reconciles (or an event handler) saw of Foos `foo-0..`.
pub struct Tally {
    /// The label the touch phase sets.
    label: &'static str,
    /// Which Foos, by index, this process reconciles (its share).
    mine: Vec<bool>,
    /// How many of them.
    expected: usize,
    pub reconciles: AtomicU64,
    /// Reconciles that found the child missing or stale.
    pub stale: AtomicU64,
    first: Vec<AtomicBool>,
    first_count: AtomicUsize,
    /// Notified once every Foo of the share was reconciled up to date.
    pub first_done: Notify,
    /// The label value of the current touch (a new one per touch batch).
    token: RwLock<Option<String>>,
    touched_expected: AtomicUsize,
    touched: Vec<AtomicBool>,
    touched_count: AtomicUsize,
    /// Notified once the touched Foos of the share were reconciled with the token.
    pub touched_done: Notify,
}

impl Tally {
    /// A tally of the Foos `mine` marks, waiting for touches labelled `label`.
    pub fn new(label: &'static str, mine: Vec<bool>) -> Arc<Tally> {
        let n = mine.len();
        Arc::new(Tally {
            label,
            expected: mine.iter().filter(|m| **m).count(),
            mine,
            reconciles: AtomicU64::new(0),
            stale: AtomicU64::new(0),
            first: (0..n).map(|_| AtomicBool::new(false)).collect(),
            first_count: AtomicUsize::new(0),
            first_done: Notify::new(),
            token: RwLock::new(None),
            // Nothing counts as touched until `expect_touch`.
            touched_expected: AtomicUsize::new(usize::MAX),
            touched: (0..n).map(|_| AtomicBool::new(false)).collect(),
            touched_count: AtomicUsize::new(0),
            touched_done: Notify::new(),
        })
    }

    /// The Foos of this process's share.
    pub fn expected(&self) -> usize {
        self.expected
    }

    /// Whether Foo `i` is of this process's share.
    pub fn is_mine(&self, i: usize) -> bool {
        self.mine[i]
    }

    /// The touch to come: `count` Foos of the share labelled `token`. Called again for a
    /// further batch (after the previous one was done), with a new token.
    pub fn expect_touch(&self, token: String, count: usize) -> Result<(), String> {
        {
            let mut current = self
                .token
                .write()
                .map_err(|_| "the tally's lock is poisoned")?;
            if current.as_deref() == Some(token.as_str()) {
                return Err(format!(
                    "the touch {token} again: every batch needs its own token"
                ));
            }
            for t in &self.touched {
                t.store(false, Ordering::Relaxed);
            }
            self.touched_count.store(0, Ordering::Release);
            *current = Some(token);
        }
        self.touched_expected.store(count, Ordering::Release);
        Ok(())
    }

    /// One reconcile of `foo`, which found its child up to date or not.
    pub fn record(&self, foo: &Foo, up_to_date: bool) {
        self.reconciles.fetch_add(1, Ordering::Relaxed);
        if !up_to_date {
            self.stale.fetch_add(1, Ordering::Relaxed);
            return;
        }
        let index = foo.metadata.name.as_deref().and_then(|n| {
            n.strip_prefix("foo-")?
                .parse::<usize>()
                .ok()
                .filter(|&i| i < self.mine.len())
        });
        let Some(i) = index else { return };
        if self.mine[i]
            && !self.first[i].swap(true, Ordering::Relaxed)
            && self.first_count.fetch_add(1, Ordering::AcqRel) + 1 == self.expected
        {
            self.first_done.notify_one();
        }
        let labelled = foo
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(self.label))
            .is_some_and(|value| {
                let token = self.token.read();
                token.is_ok_and(|t| t.as_deref() == Some(value.as_str()))
            });
        if labelled
            && !self.touched[i].swap(true, Ordering::Relaxed)
            && self.touched_count.fetch_add(1, Ordering::AcqRel) + 1
                == self.touched_expected.load(Ordering::Acquire)
        {
            self.touched_done.notify_one();
        }
    }
}
