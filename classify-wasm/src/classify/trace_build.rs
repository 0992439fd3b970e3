//! The trace: the same predicates as the verdict, with the facts they read.

use super::keys::{
    counter, ADMISSION, ADMISSION_GATED_BY, HOLD_INSTANCE, JOB_UID, OPEN_GATE, RESTART_ATTEMPT,
};
use super::select::Selection;
use super::state::{CauseRule, Decision};
use crate::model::Conditions;
use crate::observation::{CauseKind, State};
use crate::snapshot::Mode;
use crate::trace::{
    ExecutionPod, ExecutionTrace, FindingTrace, NoteTrace, RuleTrace, Trace, Verdict,
};

pub(super) fn condition_fact(owner: &str, conds: &Conditions<'_>, kind: &str) -> String {
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

pub(super) fn workload_condition_fact(sel: &Selection<'_, '_>, kind: &str) -> String {
    match sel.workload {
        Some(w) => condition_fact("Workload", &w.conditions, kind),
        None => format!("Workload condition {kind}: no Workload"),
    }
}

pub(super) fn opt_fact(what: &str, v: Option<impl std::fmt::Display>) -> String {
    match v {
        Some(v) => format!("{what}: {v}"),
        None => format!("{what}: absent"),
    }
}

pub(super) fn trace(
    sel: &Selection<'_, '_>,
    d: &Decision,
    foreign: Vec<NoteTrace>,
    situation: Vec<NoteTrace>,
) -> Trace {
    let t = sel.t;
    let kueue = sel.mode == Mode::Kueue;
    let verdict = |n: u8| match n.cmp(&d.rule) {
        std::cmp::Ordering::Less => Verdict::NotMatched,
        std::cmp::Ordering::Equal => Verdict::Matched,
        std::cmp::Ordering::Greater => Verdict::NotReached,
    };
    let workload_fact = || match sel.workload {
        Some(w) => format!(
            "Workload: {} (labelled {JOB_UID}={})",
            w.meta.name, t.meta.uid
        ),
        None => format!("Workload: none labelled {JOB_UID}={}", t.meta.uid),
    };
    let mut rules = Vec::new();
    rules.push(RuleTrace {
        id: "1".into(),
        name: "Complete".into(),
        verdict: verdict(1),
        facts: vec![condition_fact("TrainJob", &t.conditions, "Complete")],
    });
    rules.push(RuleTrace {
        id: "2".into(),
        name: "Failed".into(),
        verdict: verdict(2),
        facts: vec![condition_fact("TrainJob", &t.conditions, "Failed")],
    });
    rules.push(RuleTrace {
        id: "3".into(),
        name: "Gated".into(),
        verdict: verdict(3),
        facts: vec![
            opt_fact(
                &format!("TrainJob annotation {ADMISSION_GATED_BY}"),
                t.meta.annotation(ADMISSION_GATED_BY),
            ),
            format!(
                "dispatch's gate {OPEN_GATE} among the entries: {}",
                sel.gated()
            ),
        ],
    });
    let mut hold_facts = Vec::new();
    match sel.hold_annotation() {
        None => hold_facts.push("held object: the Workload, which does not exist".to_string()),
        Some((kind, value)) => {
            hold_facts.push(format!("held object: the {kind}"));
            hold_facts.push(opt_fact(
                &format!("{kind} annotation {HOLD_INSTANCE}"),
                value,
            ));
            if let Some(v) = value {
                hold_facts.push(match counter(v, 1) {
                    Some(n) => format!("a counter of 1 or more: yes, hold instance {n}"),
                    None => "a counter of 1 or more: no".to_string(),
                });
            }
        }
    }
    rules.push(RuleTrace {
        id: "4".into(),
        name: "Held by dispatch".into(),
        verdict: verdict(4),
        facts: hold_facts,
    });
    let suspend_facts = if kueue {
        vec![
            workload_fact(),
            opt_fact("Workload spec.active", sel.workload.and_then(|w| w.active)),
        ]
    } else {
        vec![
            opt_fact("TrainJob spec.suspend", t.suspend),
            condition_fact("TrainJob", &t.conditions, "Suspended"),
        ]
    };
    rules.push(RuleTrace {
        id: "5".into(),
        name: "Suspended by someone else".into(),
        verdict: verdict(5),
        facts: suspend_facts,
    });
    let mut r6 = Vec::new();
    if kueue {
        r6.push(workload_fact());
        if let Some(w) = sel.workload {
            r6.push(condition_fact("Workload", &w.conditions, "Admitted"));
        }
    } else {
        r6.push("plain mode: always admitted".to_string());
    }
    r6.push(format!("admitted: {}", sel.admitted()));
    r6.push(opt_fact("TrainJob spec.suspend", t.suspend));
    r6.push(format!("not suspended: {}", sel.not_suspended()));
    rules.push(RuleTrace {
        id: "6".into(),
        name: "Pending or running".into(),
        verdict: verdict(6),
        facts: r6,
    });

    let finding_facts = || -> Vec<String> {
        match sel.findings.first() {
            Some(f) => vec![format!(
                "earliest finding: pod {} {} ({})",
                f.pod.pod.meta.name, f.kind, f.detail
            )],
            None => vec!["no finding in the current execution".to_string()],
        }
    };
    let failed_reason = || {
        format!(
            "Failed reason: {}",
            t.conditions
                .get("Failed")
                .and_then(|c| c.reason)
                .unwrap_or("(absent)")
        )
    };
    let (id, name, facts) = match d.cause_rule {
        CauseRule::Complete => (
            "1",
            "completed",
            vec![condition_fact("TrainJob", &t.conditions, "Complete")],
        ),
        CauseRule::FailedEvidence => (
            "2/pod-evidence",
            "FailedJobs, ReachedMaxRestarts or FailJobSetFailurePolicyAction: the pod evidence",
            {
                let mut f = vec![failed_reason()];
                f.extend(finding_facts());
                f
            },
        ),
        CauseRule::FailedNoEvidence => ("2/no-evidence", "the same reasons, with no finding", {
            let mut f = vec![failed_reason()];
            f.extend(finding_facts());
            f
        }),
        CauseRule::FailedDeadline => (
            "2/DeadlineExceeded",
            "DeadlineExceeded",
            vec![failed_reason()],
        ),
        CauseRule::FailedRuntime => (
            "2/TrainingRuntimeNotSupported",
            "TrainingRuntimeNotSupported",
            vec![failed_reason()],
        ),
        CauseRule::FailedOther => ("2/other", "any other reason", vec![failed_reason()]),
        CauseRule::None => ("none", "no cause for this state", Vec::new()),
        CauseRule::PodEvidence => ("6a", "pod evidence", finding_facts()),
        CauseRule::LostNode => ("6b", "a lost node", vec![d.cause.detail.clone()]),
        CauseRule::Eviction => (
            "6c",
            "a Kueue eviction",
            vec![workload_condition_fact(sel, "Evicted")],
        ),
        CauseRule::Otherwise => ("6d", "otherwise none", {
            let mut f = finding_facts();
            f.push(if d.state != State::Running {
                "b: not judged, the state is not running".to_string()
            } else if !sel.nodes_readable {
                "b: not judged, Nodes may not be read".to_string()
            } else {
                "b: every Node of a live current pod is Ready (or not in the dump)".to_string()
            });
            if kueue {
                f.push(workload_condition_fact(sel, "Evicted"));
            }
            f
        }),
    };
    let mut cause = RuleTrace {
        id: id.into(),
        name: name.into(),
        verdict: Verdict::Matched,
        facts,
    };
    if d.unknown_condition {
        cause = RuleTrace {
            id: "unknown-condition".into(),
            name: "a condition the adapter does not know".into(),
            verdict: Verdict::Matched,
            facts: {
                let mut f = vec![format!("rule {} left the cause at none", cause.id)];
                f.extend(
                    sel.unknown_conditions()
                        .into_iter()
                        .map(|c| format!("True and not known: {c}")),
                );
                f
            },
        };
    }

    let decided_by = {
        let rule_name = &rules[usize::from(d.rule) - 1].name;
        let mut s = format!("Rule {}, {rule_name}: state {}", d.rule, d.state);
        if d.cause.kind != CauseKind::None {
            s.push_str(&format!(", cause {} by rule {}", d.cause.kind, cause.id));
        }
        s.push('.');
        s
    };

    let execution = ExecutionTrace {
        current: sel.execution,
        pods: sel
            .pods
            .iter()
            .map(|p| {
                let a = p.pod.meta.annotation(ADMISSION);
                let j = p.pod.meta.label(RESTART_ATTEMPT);
                let counters = p.counters();
                let in_current = sel.in_current(p);
                let why = match (counters, sel.execution) {
                    (Some((a, j)), _) if in_current => {
                        format!("counted: A={a} J={j} R={}, the current execution", a + j)
                    }
                    (Some((a, j)), _) => {
                        format!("counted: A={a} J={j} R={}, an older execution", a + j)
                    }
                    (None, None) => {
                        "not counted (no pod counts, so every pod is read as current)".to_string()
                    }
                    (None, Some(_)) => {
                        match (a.and_then(|v| counter(v, 0)), j.and_then(|v| counter(v, 0))) {
                            (None, _) => format!(
                                "not counted: admission annotation {} is not a counter",
                                a.map_or("absent".to_string(), |v| format!("{v:?}"))
                            ),
                            _ => format!(
                                "not counted: restart-attempt label {} is not a counter",
                                j.map_or("absent".to_string(), |v| format!("{v:?}"))
                            ),
                        }
                    }
                };
                ExecutionPod {
                    pod: p.pod.meta.name.to_string(),
                    captured: p.captured,
                    admission: a.map(str::to_string),
                    restart_attempt: j.map(str::to_string),
                    r: counters.map(|(a, j)| a + j),
                    counted: counters.is_some(),
                    in_current,
                    why,
                }
            })
            .collect(),
    };
    let winner_counts = matches!(
        d.cause_rule,
        CauseRule::FailedEvidence | CauseRule::PodEvidence
    );
    let findings = sel
        .findings
        .iter()
        .enumerate()
        .map(|(i, f)| FindingTrace {
            pod: f.pod.pod.meta.name.to_string(),
            pod_uid: f.pod.pod.meta.uid.to_string(),
            captured: f.pod.captured,
            source: f.source,
            kind: f.kind,
            rank: f.kind.rank(),
            date: f.date.map(|d| d.to_string()),
            detail: f.detail.clone(),
            winner: i == 0 && winner_counts,
        })
        .collect();
    Trace {
        decided_by,
        rules,
        cause: Some(cause),
        execution,
        attempts: sel.attempts(),
        findings,
        foreign,
        situation,
    }
}
