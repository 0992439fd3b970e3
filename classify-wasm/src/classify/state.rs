//! Section 6: the state rules 1–6 and the cause rules they come with.

use super::keys::{counter, gates, ADMISSION_GATED_BY, HOLD_INSTANCE, OPEN_GATE};
use super::rules::{self, CauseRule, Rule};
use super::select::Selection;
use crate::model::{with_words, Conditions};
use crate::observation::{Cause, CauseKind, Provenance, State};
use crate::snapshot::Mode;

impl<'s, 'a> Selection<'s, 'a> {
    pub(super) fn conds(&self) -> &Conditions<'a> {
        &self.t.conditions
    }

    pub(super) fn gated(&self) -> bool {
        gates(self.t.meta.annotation(ADMISSION_GATED_BY)).contains(&OPEN_GATE)
    }

    /// The held object's hold-instance annotation: (kind, raw value).
    pub(super) fn hold_annotation(&self) -> Option<(&'static str, Option<&'a str>)> {
        match self.mode {
            Mode::Kueue => self
                .workload
                .map(|w| ("Workload", w.meta.annotation(HOLD_INSTANCE))),
            Mode::Plain => Some(("TrainJob", self.t.meta.annotation(HOLD_INSTANCE))),
        }
    }

    /// Rule 4's test: the hold instance in force, if any.
    pub(super) fn hold(&self) -> Option<u64> {
        self.hold_annotation()?.1.and_then(|v| counter(v, 1))
    }

    pub(super) fn suspended_by_someone_else(&self) -> bool {
        match self.mode {
            Mode::Plain => self.t.suspend == Some(true) || self.conds().is_true("Suspended"),
            Mode::Kueue => self.workload.is_some_and(|w| w.active == Some(false)),
        }
    }

    pub(super) fn admitted(&self) -> bool {
        match self.mode {
            Mode::Plain => true,
            Mode::Kueue => self
                .workload
                .is_some_and(|w| w.conditions.is_true("Admitted")),
        }
    }

    pub(super) fn not_suspended(&self) -> bool {
        self.t.suspend != Some(true) && !self.conds().is_true("Suspended")
    }

    /// Cause b: a lost node, for a running object.
    pub(super) fn lost_node(&self) -> Option<Cause> {
        if !self.nodes_readable {
            return None;
        }
        for p in self.current().filter(|p| !p.captured) {
            if matches!(p.pod.phase, Some("Succeeded" | "Failed")) {
                continue;
            }
            let Some(node_name) = p.pod.node_name else {
                continue;
            };
            let detail = match self.nodes.get(node_name) {
                None if self.nodes_inferred => continue,
                None => format!("node {node_name} not found"),
                Some(node) => match node.conditions.get("Ready") {
                    None => format!("node {node_name} has no Ready condition"),
                    Some(ready) if ready.is_true() => continue,
                    Some(ready) => with_words(
                        &format!("node {node_name} Ready={}", ready.status.unwrap_or("")),
                        &ready.words(),
                    ),
                },
            };
            return Some(Cause {
                kind: CauseKind::NodeLost,
                provenance: Some(Provenance::Node),
                detail,
            });
        }
        None
    }

    pub(super) fn eviction(&self) -> Option<Cause> {
        if self.mode != Mode::Kueue {
            return None;
        }
        let evicted = self
            .workload?
            .conditions
            .get("Evicted")
            .filter(|c| c.is_true())?;
        let kind = match evicted.reason {
            Some("Preempted") => CauseKind::Preempted,
            Some("NodeFailures") => CauseKind::NodeLost,
            Some("MaximumExecutionTimeExceeded") => CauseKind::DeadlineExceeded,
            _ => CauseKind::Evicted,
        };
        Some(Cause {
            kind,
            provenance: Some(Provenance::Workload),
            detail: with_words("Workload Evicted", &evicted.words()),
        })
    }

    /// The unknown-condition rule's detail: every True type it does not know.
    pub(super) fn unknown_conditions(&self) -> Vec<String> {
        self.conds()
            .firsts()
            .filter(|c| c.is_true())
            .filter(|c| !matches!(c.kind, Some("Suspended" | "Complete" | "Failed")))
            .map(|c| with_words(&format!("TrainJob {}", c.kind.unwrap_or("")), &c.words()))
            .collect()
    }

    /// Section 6: the first of [`rules::STATE_RULES`] whose test matches
    /// decides the state and the cause. The order lives in that one list.
    pub(super) fn decide(&self) -> Decision {
        let (rule, Decided(state, mut cause, cause_rule)) = rules::STATE_RULES
            .iter()
            .find_map(|rule| (rule.decides)(self).map(|decided| (*rule, decided)))
            // Rule 6 always matches; this is its answer, not a second rule.
            .unwrap_or_else(|| (&rules::PENDING_OR_RUNNING, self.pending_or_running()));
        let mut unknown = false;
        if state != State::Held && cause.kind == CauseKind::None {
            let types = self.unknown_conditions();
            if !types.is_empty() {
                cause = Cause {
                    kind: CauseKind::Unknown,
                    provenance: None,
                    detail: types.join("; "),
                };
                unknown = true;
            }
        }
        Decision {
            rule,
            state,
            cause,
            cause_rule,
            unknown_condition: unknown,
        }
    }
}

/// What a state rule decides when it matches: the state, the cause, and the
/// row of the rule that gave the cause.
pub(super) struct Decided(
    pub(super) State,
    pub(super) Cause,
    pub(super) &'static CauseRule,
);

fn no_cause() -> Cause {
    Cause {
        kind: CauseKind::None,
        provenance: None,
        detail: String::new(),
    }
}

/// The state rules' tests, in the spec's words; [`rules::STATE_RULES`]
/// says in which order they are tried.
impl Selection<'_, '_> {
    /// Rule 1: the TrainJob is Complete.
    pub(super) fn complete(&self) -> Option<Decided> {
        let c = self.conds().get("Complete").filter(|c| c.is_true())?;
        let cause = Cause {
            kind: CauseKind::Completed,
            provenance: Some(Provenance::Trainjob),
            detail: with_words("TrainJob Complete", &c.words()),
        };
        Some(Decided(State::Ended, cause, &rules::CAUSE_COMPLETED))
    }

    /// Rule 2: the TrainJob Failed; its reason picks the cause's row.
    pub(super) fn failed(&self) -> Option<Decided> {
        let c = self.conds().get("Failed").filter(|c| c.is_true())?;
        let trainjob = |kind| Cause {
            kind,
            provenance: Some(Provenance::Trainjob),
            detail: with_words("TrainJob Failed", &c.words()),
        };
        let (cause, row) = match c.reason {
            Some("FailedJobs" | "ReachedMaxRestarts" | "FailJobSetFailurePolicyAction") => {
                match self.finding_cause() {
                    Some(cause) => (cause, &rules::FAILED_POD_EVIDENCE),
                    None => (
                        Cause {
                            kind: CauseKind::Unknown,
                            provenance: None,
                            detail: "no pod evidence was captured".to_string(),
                        },
                        &rules::FAILED_NO_EVIDENCE,
                    ),
                }
            }
            Some("DeadlineExceeded") => (
                trainjob(CauseKind::DeadlineExceeded),
                &rules::FAILED_DEADLINE,
            ),
            Some("TrainingRuntimeNotSupported") => {
                (trainjob(CauseKind::Invalid), &rules::FAILED_RUNTIME)
            }
            _ => (trainjob(CauseKind::Unknown), &rules::FAILED_OTHER),
        };
        Some(Decided(State::Ended, cause, row))
    }

    /// Rule 3: dispatch's gate is among the admission gates.
    pub(super) fn gated_rule(&self) -> Option<Decided> {
        self.gated()
            .then(|| Decided(State::Gated, no_cause(), &rules::NO_CAUSE))
    }

    /// Rule 4: a hold instance is in force.
    pub(super) fn held_rule(&self) -> Option<Decided> {
        self.hold()
            .map(|_| Decided(State::Held, no_cause(), &rules::NO_CAUSE))
    }

    /// Rule 5: suspended, by someone other than Kueue or dispatch.
    pub(super) fn suspended_rule(&self) -> Option<Decided> {
        self.suspended_by_someone_else()
            .then(|| Decided(State::Suspended, no_cause(), &rules::NO_CAUSE))
    }

    /// Rule 6: pending or running, whichever admission and suspension say,
    /// with the first cause row that has one. It always matches.
    pub(super) fn pending_or_running(&self) -> Decided {
        let state = if self.admitted() && self.not_suspended() {
            State::Running
        } else {
            State::Pending
        };
        let (cause, cause_rule) = if let Some(c) = self.finding_cause() {
            (c, &rules::POD_EVIDENCE)
        } else if let Some(c) = self.lost_node().filter(|_| state == State::Running) {
            (c, &rules::LOST_NODE)
        } else if let Some(c) = self.eviction() {
            (c, &rules::EVICTION)
        } else {
            (no_cause(), &rules::OTHERWISE)
        };
        Decided(state, cause, cause_rule)
    }
}

/// What section 6 decided for one TrainJob, naming the rules that did.
pub(super) struct Decision {
    /// The state rule that matched.
    pub(super) rule: &'static Rule,
    pub(super) state: State,
    pub(super) cause: Cause,
    /// The row of the matched rule that gave the cause.
    pub(super) cause_rule: &'static CauseRule,
    /// The unknown-condition rule replaced the row's `none` cause.
    pub(super) unknown_condition: bool,
}
