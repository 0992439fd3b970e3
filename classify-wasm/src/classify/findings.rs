//! Section 7: pod findings and the winner among them, and the attempts,
//! which apply the same two functions to each execution's pods.

use std::collections::BTreeMap;

use super::select::{ReadPod, Selection};
use crate::model::with_words;
use crate::observation::{Cause, CauseKind, Execution, Provenance};
use crate::time::Time;
use crate::trace::{AttemptTrace, FindingSource, FindingTrace};

pub(super) struct Finding<'s, 'a> {
    pub(super) pod: ReadPod<'s, 'a>,
    pub(super) source: FindingSource,
    pub(super) kind: CauseKind,
    pub(super) date: Option<Time>,
    pub(super) detail: String,
}

/// Section 7's findings of a set of pods, winner first. The verdict passes
/// the current execution's pods; the trace's attempts pass each execution's.
pub(super) fn findings_of<'p, 's: 'p, 'a: 's>(
    pods: impl Iterator<Item = &'p ReadPod<'s, 'a>>,
) -> Vec<Finding<'s, 'a>> {
    let mut out = Vec::new();
    for p in pods {
        if let Some(c) = p
            .pod
            .conditions
            .get("DisruptionTarget")
            .filter(|c| c.is_true())
        {
            let kind = match c.reason {
                Some("PreemptionByScheduler") => CauseKind::Preempted,
                Some("DeletionByTaintManager" | "DeletionByPodGC") => CauseKind::NodeLost,
                Some("EvictionByEvictionAPI" | "TerminationByKubelet") => CauseKind::Evicted,
                _ => CauseKind::Unknown,
            };
            out.push(Finding {
                pod: *p,
                source: FindingSource::DisruptionTarget,
                kind,
                date: c.last_transition.get(),
                detail: with_words("DisruptionTarget", &c.words()),
            });
        }
        if let Some(t) = p
            .pod
            .node_container
            .as_ref()
            .and_then(|c| c.terminated.as_ref())
        {
            let kind = if t.reason == Some("OOMKilled") {
                CauseKind::OutOfMemory
            } else if t.exit_code != 0 {
                CauseKind::NonZeroExit
            } else {
                continue;
            };
            let mut detail = match t.reason {
                Some(r) => format!("node container terminated: {r}, exit code {}", t.exit_code),
                None => format!("node container terminated: exit code {}", t.exit_code),
            };
            if let Some(m) = t.message {
                detail.push_str(": ");
                detail.push_str(m);
            }
            out.push(Finding {
                pod: *p,
                source: FindingSource::NodeContainer,
                kind,
                date: t.finished_at.get(),
                detail,
            });
        }
    }
    // Earliest first (undated last), then rank, pod name, DisruptionTarget
    // before the container, live before captured, pod UID. The sort is stable.
    out.sort_by(|a, b| {
        let date = |f: &Finding| (f.date.is_none(), f.date);
        date(a)
            .cmp(&date(b))
            .then(a.kind.rank().cmp(&b.kind.rank()))
            .then(
                a.pod
                    .pod
                    .meta
                    .name
                    .as_bytes()
                    .cmp(b.pod.pod.meta.name.as_bytes()),
            )
            .then(
                (a.source == FindingSource::NodeContainer)
                    .cmp(&(b.source == FindingSource::NodeContainer)),
            )
            .then(a.pod.captured.cmp(&b.pod.captured))
            .then(
                a.pod
                    .pod
                    .meta
                    .uid
                    .as_bytes()
                    .cmp(b.pod.pod.meta.uid.as_bytes()),
            )
    });
    out
}

/// Section 7: the winner of findings sorted by [`findings_of`], as a cause:
/// `pod <name>: <detail>`, then `; other ranks: ` and the rest.
pub(super) fn winner_cause(findings: &[Finding<'_, '_>]) -> Option<Cause> {
    let (first, rest) = findings.split_first()?;
    let mut detail = format!("pod {}: {}", first.pod.pod.meta.name, first.detail);
    if !rest.is_empty() {
        detail.push_str("; other ranks: ");
        let others: Vec<String> = rest
            .iter()
            .map(|f| format!("{} {} ({})", f.pod.pod.meta.name, f.kind, f.detail))
            .collect();
        detail.push_str(&others.join(", "));
    }
    Some(Cause {
        kind: first.kind,
        provenance: Some(if first.pod.captured {
            Provenance::CapturedPod
        } else {
            Provenance::Pod
        }),
        detail,
    })
}

impl<'s, 'a> Selection<'s, 'a> {
    /// Section 7 over the current execution's pods.
    pub(super) fn compute_findings(&self) -> Vec<Finding<'s, 'a>> {
        findings_of(self.current())
    }

    /// Section 7: the current execution's winning finding as a cause.
    pub(super) fn finding_cause(&self) -> Option<Cause> {
        winner_cause(&self.findings)
    }

    /// Every execution among the counted pods, live and captured, newest
    /// first (higher R, then higher A), each with its own section-7 winner
    /// from its pods alone. Empty when no pod counts (section 5's `null`).
    pub(super) fn attempts(&self) -> Vec<AttemptTrace> {
        // Keyed by (R, A): J = R - A, so the key names the execution, and the
        // map's reverse order is the newest-first order.
        let mut executions: BTreeMap<(u64, u64), Vec<&ReadPod<'s, 'a>>> = BTreeMap::new();
        for p in &self.pods {
            if let Some((a, j)) = p.counters() {
                executions.entry((a + j, a)).or_default().push(p);
            }
        }
        executions
            .into_iter()
            .rev()
            .map(|((r, a), pods)| {
                let execution = Execution {
                    admission: a,
                    restart_attempt: r - a,
                };
                let current = self.execution == Some(execution);
                // The current execution's cause is the very function the
                // verdict uses; the others are the same function on their pods.
                let cause = if current {
                    self.finding_cause()
                } else {
                    winner_cause(&findings_of(pods.iter().copied()))
                };
                let mut names: Vec<String> =
                    pods.iter().map(|p| p.pod.meta.name.to_string()).collect();
                names.sort_by(|x, y| x.as_bytes().cmp(y.as_bytes()));
                AttemptTrace {
                    execution,
                    current,
                    cause,
                    pods: names,
                }
            })
            .collect()
    }

    /// The trace's findings, earliest first; the first is marked the winner
    /// when the cause rule took the cause from it.
    pub(super) fn findings_trace(&self, winner_counts: bool) -> Vec<FindingTrace> {
        self.findings
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
            .collect()
    }
}
