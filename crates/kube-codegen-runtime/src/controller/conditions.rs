//! Status conditions (`[]metav1.Condition`) as apimachinery's `meta.SetStatusCondition`,
//! `FindStatusCondition`, `RemoveStatusCondition` and `IsStatusConditionTrue` handle them.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::Timestamp;

/// Sets `new` in `conditions` (by type), with `lastTransitionTime` now when the condition is
/// added or its status changes; see [`set_condition_at`]. Returns whether anything changed.
pub fn set_condition(conditions: &mut Vec<Condition>, new: Condition) -> bool {
    set_condition_at(conditions, new, Timestamp::now())
}

/// [`set_condition`] with the clock given. A new condition keeps a `lastTransitionTime` the
/// caller set (anything but the Unix epoch, `Time`'s default), else gets `now`. An existing one
/// takes the new status, reason, message and `observedGeneration`; its `lastTransitionTime`
/// changes only with its status (to the caller's time if set, else `now`).
pub fn set_condition_at(
    conditions: &mut Vec<Condition>,
    mut new: Condition,
    now: Timestamp,
) -> bool {
    let unset = |t: &Time| t.0 == Timestamp::UNIX_EPOCH;
    let Some(existing) = conditions.iter_mut().find(|c| c.type_ == new.type_) else {
        if unset(&new.last_transition_time) {
            new.last_transition_time = Time(now);
        }
        conditions.push(new);
        return true;
    };
    let mut changed = false;
    if existing.status != new.status {
        existing.status = new.status;
        existing.last_transition_time = if unset(&new.last_transition_time) {
            Time(now)
        } else {
            new.last_transition_time
        };
        changed = true;
    }
    if existing.reason != new.reason {
        existing.reason = new.reason;
        changed = true;
    }
    if existing.message != new.message {
        existing.message = new.message;
        changed = true;
    }
    if existing.observed_generation != new.observed_generation {
        existing.observed_generation = new.observed_generation;
        changed = true;
    }
    changed
}

/// The condition of type `type_`, if any.
pub fn find_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Removes the condition of type `type_`; returns whether there was one.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

/// Whether the condition of type `type_` is there with status `True`.
pub fn is_condition_true(conditions: &[Condition], type_: &str) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == "True")
}

/// A condition of `type_` with `status` (`"True"`, `"False"` or `"Unknown"`), reason and
/// message, observed at `generation`; its `lastTransitionTime` is left for [`set_condition`].
pub fn condition(
    type_: &str,
    status: &str,
    reason: &str,
    message: impl Into<String>,
    generation: Option<i64>,
) -> Condition {
    Condition {
        type_: type_.to_owned(),
        status: status.to_owned(),
        reason: reason.to_owned(),
        message: message.into(),
        observed_generation: generation,
        last_transition_time: Time(Timestamp::UNIX_EPOCH),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap()
    }

    #[test]
    fn transition_time_changes_only_with_the_status() {
        let mut c = Vec::new();
        assert!(set_condition_at(
            &mut c,
            condition("Ready", "False", "Creating", "", Some(1)),
            at(10)
        ));
        assert_eq!(c[0].last_transition_time, Time(at(10)));
        // Reason, message and generation change; the status does not: the time stays.
        assert!(set_condition_at(
            &mut c,
            condition("Ready", "False", "Waiting", "m", Some(2)),
            at(20)
        ));
        assert_eq!(c[0].last_transition_time, Time(at(10)));
        assert_eq!(
            (c[0].reason.as_str(), c[0].message.as_str()),
            ("Waiting", "m")
        );
        assert_eq!(c[0].observed_generation, Some(2));
        // The same again changes nothing.
        assert!(!set_condition_at(
            &mut c,
            condition("Ready", "False", "Waiting", "m", Some(2)),
            at(30)
        ));
        assert!(set_condition_at(
            &mut c,
            condition("Ready", "True", "Done", "", Some(2)),
            at(40)
        ));
        assert_eq!(c[0].last_transition_time, Time(at(40)));
        assert!(is_condition_true(&c, "Ready"));
        assert_eq!(c.len(), 1);
    }

    #[test]
    fn a_given_transition_time_is_kept() {
        let mut c = Vec::new();
        let mut given = condition("Synced", "True", "Ok", "", None);
        given.last_transition_time = Time(at(5));
        set_condition_at(&mut c, given.clone(), at(50));
        assert_eq!(c[0].last_transition_time, Time(at(5)));
        given.status = "False".into();
        given.last_transition_time = Time(at(7));
        set_condition_at(&mut c, given, at(50));
        assert_eq!(c[0].last_transition_time, Time(at(7)));
    }

    #[test]
    fn find_and_remove_by_type() {
        let mut c = Vec::new();
        set_condition_at(&mut c, condition("A", "True", "R", "", None), at(1));
        set_condition_at(&mut c, condition("B", "Unknown", "R", "", None), at(1));
        assert_eq!(
            find_condition(&c, "B").map(|c| c.status.as_str()),
            Some("Unknown")
        );
        assert!(!is_condition_true(&c, "B"));
        assert!(!is_condition_true(&c, "C"));
        assert!(remove_condition(&mut c, "A"));
        assert!(!remove_condition(&mut c, "A"));
        assert_eq!(c.len(), 1);
        assert!(find_condition(&c, "A").is_none());
    }
}
