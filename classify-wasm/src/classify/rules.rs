//! Section 6's rules as values. Each state rule (1–6) and each cause rule
//! (the Failed-reason rows, a–d, the unknown-condition rule) is declared once
//! here, with its id, its name and the facts its trace shows. The
//! [`Decision`] names the rule value that decided (as ripgrep's
//! `Match<&Glob>` names the glob), and the trace takes its `RuleTrace` id and
//! name from that same value, so the two cannot drift apart.

use super::keys::{counter, ADMISSION_GATED_BY, HOLD_INSTANCE, JOB_UID, OPEN_GATE};
use super::select::Selection;
use super::state::{Decided, Decision};
use crate::model::Conditions;
use crate::observation::{CauseKind, State};
use crate::snapshot::Mode;
use crate::trace::{RuleTrace, Verdict};

/// What a rule's trace shows: the facts the rule read, for this selection
/// and the decision it took part in.
type Facts = fn(&Selection<'_, '_>, &Decision) -> Vec<String>;

/// One of the state rules 1–6, tried in [`STATE_RULES`]' order; the first
/// that matches decides the state.
pub(super) struct Rule {
    pub(super) number: u8,
    pub(super) name: &'static str,
    /// The rule's test: what it decides when it matches.
    pub(super) decides: Decides,
    facts: Facts,
}

/// A state rule's test (in `state.rs`, beside the spec's words for it).
type Decides = fn(&Selection<'_, '_>) -> Option<Decided>;

/// A cause rule: which row of section 6 gave the cause.
pub(super) struct CauseRule {
    /// The spec's id: `1`, `2/pod-evidence`, `6a`, `unknown-condition`...
    pub(super) id: &'static str,
    pub(super) name: &'static str,
    /// Whether the earliest finding is the cause (its trace marks the winner).
    pub(super) finding_wins: bool,
    facts: Facts,
}

pub(super) static COMPLETE: Rule = Rule {
    number: 1,
    name: "Complete",
    decides: |sel| sel.complete(),
    facts: |sel, _| vec![condition_fact("TrainJob", &sel.t.conditions, "Complete")],
};
pub(super) static FAILED: Rule = Rule {
    number: 2,
    name: "Failed",
    decides: |sel| sel.failed(),
    facts: |sel, _| vec![condition_fact("TrainJob", &sel.t.conditions, "Failed")],
};
pub(super) static GATED: Rule = Rule {
    number: 3,
    name: "Gated",
    decides: |sel| sel.gated_rule(),
    facts: |sel, _| {
        vec![
            opt_fact(
                &format!("TrainJob annotation {ADMISSION_GATED_BY}"),
                sel.t.meta.annotation(ADMISSION_GATED_BY),
            ),
            format!(
                "dispatch's gate {OPEN_GATE} among the entries: {}",
                sel.gated()
            ),
        ]
    },
};
pub(super) static HELD: Rule = Rule {
    number: 4,
    name: "Held by dispatch",
    decides: |sel| sel.held_rule(),
    facts: |sel, _| {
        let mut facts = Vec::new();
        match sel.hold_annotation() {
            None => facts.push("held object: the Workload, which does not exist".to_string()),
            Some((kind, value)) => {
                facts.push(format!("held object: the {kind}"));
                facts.push(opt_fact(
                    &format!("{kind} annotation {HOLD_INSTANCE}"),
                    value,
                ));
                if let Some(v) = value {
                    facts.push(match counter(v, 1) {
                        Some(n) => format!("a counter of 1 or more: yes, hold instance {n}"),
                        None => "a counter of 1 or more: no".to_string(),
                    });
                }
            }
        }
        facts
    },
};
pub(super) static SUSPENDED: Rule = Rule {
    number: 5,
    name: "Suspended by someone else",
    decides: |sel| sel.suspended_rule(),
    facts: |sel, _| {
        if sel.mode == Mode::Kueue {
            vec![
                workload_fact(sel),
                opt_fact("Workload spec.active", sel.workload.and_then(|w| w.active)),
            ]
        } else {
            vec![
                opt_fact("TrainJob spec.suspend", sel.t.suspend),
                condition_fact("TrainJob", &sel.t.conditions, "Suspended"),
            ]
        }
    },
};
pub(super) static PENDING_OR_RUNNING: Rule = Rule {
    number: 6,
    name: "Pending or running",
    decides: |sel| Some(sel.pending_or_running()),
    facts: |sel, _| {
        let mut facts = Vec::new();
        if sel.mode == Mode::Kueue {
            facts.push(workload_fact(sel));
            if let Some(w) = sel.workload {
                facts.push(condition_fact("Workload", &w.conditions, "Admitted"));
            }
        } else {
            facts.push("plain mode: always admitted".to_string());
        }
        facts.push(format!("admitted: {}", sel.admitted()));
        facts.push(opt_fact("TrainJob spec.suspend", sel.t.suspend));
        facts.push(format!("not suspended: {}", sel.not_suspended()));
        facts
    },
};

/// Rules 1–6 in the order they are tried.
pub(super) static STATE_RULES: [&Rule; 6] = [
    &COMPLETE,
    &FAILED,
    &GATED,
    &HELD,
    &SUSPENDED,
    &PENDING_OR_RUNNING,
];

pub(super) static CAUSE_COMPLETED: CauseRule = CauseRule {
    id: "1",
    name: "completed",
    finding_wins: false,
    facts: |sel, _| vec![condition_fact("TrainJob", &sel.t.conditions, "Complete")],
};
pub(super) static FAILED_POD_EVIDENCE: CauseRule = CauseRule {
    id: "2/pod-evidence",
    name: "FailedJobs, ReachedMaxRestarts or FailJobSetFailurePolicyAction: the pod evidence",
    finding_wins: true,
    facts: |sel, _| {
        let mut facts = vec![failed_reason(sel)];
        facts.extend(finding_facts(sel));
        facts
    },
};
pub(super) static FAILED_NO_EVIDENCE: CauseRule = CauseRule {
    id: "2/no-evidence",
    name: "the same reasons, with no finding",
    finding_wins: false,
    facts: |sel, _| {
        let mut facts = vec![failed_reason(sel)];
        facts.extend(finding_facts(sel));
        facts
    },
};
pub(super) static FAILED_DEADLINE: CauseRule = CauseRule {
    id: "2/DeadlineExceeded",
    name: "DeadlineExceeded",
    finding_wins: false,
    facts: |sel, _| vec![failed_reason(sel)],
};
pub(super) static FAILED_RUNTIME: CauseRule = CauseRule {
    id: "2/TrainingRuntimeNotSupported",
    name: "TrainingRuntimeNotSupported",
    finding_wins: false,
    facts: |sel, _| vec![failed_reason(sel)],
};
pub(super) static FAILED_OTHER: CauseRule = CauseRule {
    id: "2/other",
    name: "any other reason",
    finding_wins: false,
    facts: |sel, _| vec![failed_reason(sel)],
};
/// Rules 3–5 come with no cause.
pub(super) static NO_CAUSE: CauseRule = CauseRule {
    id: "none",
    name: "no cause for this state",
    finding_wins: false,
    facts: |_, _| Vec::new(),
};
pub(super) static POD_EVIDENCE: CauseRule = CauseRule {
    id: "6a",
    name: "pod evidence",
    finding_wins: true,
    facts: |sel, _| finding_facts(sel),
};
pub(super) static LOST_NODE: CauseRule = CauseRule {
    id: "6b",
    name: "a lost node",
    finding_wins: false,
    facts: |_, d| vec![d.cause.detail.clone()],
};
pub(super) static EVICTION: CauseRule = CauseRule {
    id: "6c",
    name: "a Kueue eviction",
    finding_wins: false,
    facts: |sel, _| vec![workload_condition_fact(sel, "Evicted")],
};
pub(super) static OTHERWISE: CauseRule = CauseRule {
    id: "6d",
    name: "otherwise none",
    finding_wins: false,
    facts: |sel, d| {
        let mut facts = finding_facts(sel);
        facts.push(if d.state != State::Running {
            "b: not judged, the state is not running".to_string()
        } else if !sel.nodes_readable {
            "b: not judged, Nodes may not be read".to_string()
        } else {
            "b: every Node of a live current pod is Ready (or not in the dump)".to_string()
        });
        if sel.mode == Mode::Kueue {
            facts.push(workload_condition_fact(sel, "Evicted"));
        }
        facts
    },
};
/// Replaces a `none` cause when the TrainJob has a True condition the
/// adapter does not know; its facts name the rule it overrode.
pub(super) static UNKNOWN_CONDITION: CauseRule = CauseRule {
    id: "unknown-condition",
    name: "a condition the adapter does not know",
    finding_wins: false,
    facts: |sel, d| {
        let mut facts = vec![format!("rule {} left the cause at none", d.cause_rule.id)];
        facts.extend(
            sel.unknown_conditions()
                .into_iter()
                .map(|c| format!("True and not known: {c}")),
        );
        facts
    },
};

/// The state rules' lines of the trace, in the order they are tried:
/// not matched before the rule that decided, matched, then not reached.
/// The order is [`STATE_RULES`]'s, the same list `decide` walks.
pub(super) fn state_trace(sel: &Selection<'_, '_>, d: &Decision) -> Vec<RuleTrace> {
    let mut reached = true;
    STATE_RULES
        .iter()
        .map(|rule| {
            let verdict = if std::ptr::eq(*rule, d.rule) {
                reached = false;
                Verdict::Matched
            } else if reached {
                Verdict::NotMatched
            } else {
                Verdict::NotReached
            };
            RuleTrace {
                id: rule.number.to_string(),
                name: rule.name.to_string(),
                verdict,
                facts: (rule.facts)(sel, d),
            }
        })
        .collect()
}

impl CauseRule {
    /// The cause rule's trace: it always matched (it is the one that gave
    /// the cause).
    pub(super) fn trace(&self, sel: &Selection<'_, '_>, d: &Decision) -> RuleTrace {
        RuleTrace {
            id: self.id.to_string(),
            name: self.name.to_string(),
            verdict: Verdict::Matched,
            facts: (self.facts)(sel, d),
        }
    }
}

impl Decision {
    /// The trace's one sentence: the deciding rule, the state, and the cause
    /// rule when there is a cause.
    pub(super) fn sentence(&self) -> String {
        let mut s = format!(
            "Rule {}, {}: state {}",
            self.rule.number, self.rule.name, self.state
        );
        if self.cause.kind != CauseKind::None {
            s.push_str(&format!(
                ", cause {} by rule {}",
                self.cause.kind,
                self.deciding_cause_rule().id
            ));
        }
        s.push('.');
        s
    }

    /// The cause rule the trace shows: the unknown-condition rule when it
    /// replaced the row's `none`.
    pub(super) fn deciding_cause_rule(&self) -> &'static CauseRule {
        if self.unknown_condition {
            &UNKNOWN_CONDITION
        } else {
            self.cause_rule
        }
    }
}

fn condition_fact(owner: &str, conds: &Conditions<'_>, kind: &str) -> String {
    match conds.get(kind) {
        None => format!("{owner} condition {kind}: absent"),
        Some(c) => {
            let mut s = format!(
                "{owner} condition {kind}: status={}",
                c.status.unwrap_or("")
            );
            if let Some(r) = c.reason {
                s.push_str(&format!(", reason={r}"));
            }
            if let Some(m) = c.message {
                s.push_str(&format!(", message={m:?}"));
            }
            s
        }
    }
}

fn workload_condition_fact(sel: &Selection<'_, '_>, kind: &str) -> String {
    match sel.workload {
        Some(w) => condition_fact("Workload", &w.conditions, kind),
        None => format!("Workload condition {kind}: no Workload"),
    }
}

fn opt_fact(what: &str, v: Option<impl std::fmt::Display>) -> String {
    match v {
        Some(v) => format!("{what}: {v}"),
        None => format!("{what}: absent"),
    }
}

fn workload_fact(sel: &Selection<'_, '_>) -> String {
    match sel.workload {
        Some(w) => format!(
            "Workload: {} (labelled {JOB_UID}={})",
            w.meta.name, sel.t.meta.uid
        ),
        None => format!("Workload: none labelled {JOB_UID}={}", sel.t.meta.uid),
    }
}

fn finding_facts(sel: &Selection<'_, '_>) -> Vec<String> {
    match sel.findings.first() {
        Some(f) => vec![format!(
            "earliest finding: pod {} {} ({})",
            f.pod.pod.meta.name, f.kind, f.detail
        )],
        None => vec!["no finding in the current execution".to_string()],
    }
}

fn failed_reason(sel: &Selection<'_, '_>) -> String {
    format!(
        "Failed reason: {}",
        sel.t
            .conditions
            .get("Failed")
            .and_then(|c| c.reason)
            .unwrap_or("(absent)")
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn state_rules_are_numbered_in_the_order_they_are_tried() {
        let numbers: Vec<u8> = STATE_RULES.iter().map(|r| r.number).collect();
        assert_eq!(numbers, [1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn cause_rule_ids_are_distinct() {
        let all = [
            &CAUSE_COMPLETED,
            &FAILED_POD_EVIDENCE,
            &FAILED_NO_EVIDENCE,
            &FAILED_DEADLINE,
            &FAILED_RUNTIME,
            &FAILED_OTHER,
            &NO_CAUSE,
            &POD_EVIDENCE,
            &LOST_NODE,
            &EVICTION,
            &OTHERWISE,
            &UNKNOWN_CONDITION,
        ];
        let ids: std::collections::BTreeSet<&str> = all.iter().map(|r| r.id).collect();
        assert_eq!(ids.len(), all.len(), "{ids:?}");
        // Only the two rows that take the cause from a finding mark a winner.
        let winners: Vec<&str> = all
            .iter()
            .filter(|r| r.finding_wins)
            .map(|r| r.id)
            .collect();
        assert_eq!(winners, ["2/pod-evidence", "6a"]);
    }
}
