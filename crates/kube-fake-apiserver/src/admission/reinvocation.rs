//! What one mutating plugin remembers between the chain's first pass and its second
//! (kube-apiserver's `webhookReinvokeContext` and `policyReinvokeContext` hold the same three
//! things): the `reinvocationPolicy: IfNeeded` invocations that ran, those to run again, and
//! the object as the plugin last left it.
use serde_json::Value;

#[derive(Debug, Default)]
pub struct Reinvocation {
    /// The `IfNeeded` invocations (a webhook, or a policy, binding and param) run so far.
    previously: Vec<String>,
    /// Those to run again in the second pass.
    to_reinvoke: Vec<String>,
    /// The object as this plugin last left it.
    last_output: Option<Value>,
}

impl Reinvocation {
    /// At the start of a pass: in the second, a change made after this plugin ran (by a later
    /// plugin) makes every `IfNeeded` invocation that ran eligible again.
    pub fn begin(&mut self, reinvoke: bool, object: Option<&Value>) {
        if reinvoke && self.last_output.as_ref() != object {
            self.require_reinvoking();
        }
    }

    /// Whether the invocation `id` runs in this pass (every one runs in the first).
    pub fn runs(&self, reinvoke: bool, id: &str) -> bool {
        !reinvoke || self.to_reinvoke.iter().any(|k| k == id)
    }

    /// After invocation `id` ran: whether it changed the object, and whether its policy is
    /// `IfNeeded`.
    pub fn ran(&mut self, id: &str, changed: bool, if_needed: bool) {
        if changed {
            self.require_reinvoking();
        }
        if if_needed && !self.previously.iter().any(|k| k == id) {
            self.previously.push(id.to_string());
        }
    }

    /// At the end of a pass.
    pub fn end(&mut self, object: Option<&Value>) {
        self.last_output = object.cloned();
    }

    fn require_reinvoking(&mut self) {
        for k in &self.previously {
            if !self.to_reinvoke.contains(k) {
                self.to_reinvoke.push(k.clone());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_if_needed_invocation_runs_again_only_after_a_later_change() {
        let mut r = Reinvocation::default();
        let first = json!({"a": 1});
        r.begin(false, Some(&first));
        assert!(r.runs(false, "x"));
        r.ran("x", false, true);
        r.ran("y", false, false);
        r.end(Some(&first));
        // Nothing changed the object since: nobody runs again.
        r.begin(true, Some(&first));
        assert!(!r.runs(true, "x"));
        assert!(!r.runs(true, "y"));
        // A later plugin changed it: the IfNeeded one runs again, the Never one does not.
        let changed = json!({"a": 2});
        r.begin(true, Some(&changed));
        assert!(r.runs(true, "x"));
        assert!(!r.runs(true, "y"));
    }

    #[test]
    fn a_change_by_an_invocation_makes_earlier_if_needed_ones_eligible() {
        let mut r = Reinvocation::default();
        r.ran("x", false, true);
        r.ran("y", true, true);
        assert!(r.runs(true, "x"));
        // `y` is recorded after its own change, so that change does not make `y` run again.
        assert!(!r.runs(true, "y"));
    }
}
