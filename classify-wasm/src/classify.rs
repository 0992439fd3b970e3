//! Sections 3–11: from a typed snapshot to observations and their traces.
//!
//! Each rule is one function over a [`Selection`] (what section 4 read for one
//! TrainJob). The observation and the trace call the same functions, so the
//! explanation can never disagree with the verdict.

use std::collections::{BTreeMap, BTreeSet};

use crate::model::{with_words, Conditions, KubeNode, Pod, TrainJob, Workload};
use crate::observation::{Cause, CauseKind, Execution, ObjectRef, Observation, Provenance, State};
use crate::snapshot::{Mode, Snapshot};
use crate::time::Time;
use crate::trace::{
    AttemptTrace, ExecutionPod, ExecutionTrace, Explanation, FindingSource, FindingTrace,
    NoteTrace, RuleTrace, Trace, Verdict,
};

pub const JOB_ID: &str = "dispatch.phpboyscout.uk/job-id";
pub const SUBMISSION: &str = "dispatch.phpboyscout.uk/submission";
pub const HOLD_INSTANCE: &str = "dispatch.phpboyscout.uk/hold-instance";
pub const ADMISSION: &str = "dispatch.phpboyscout.uk/admission";
pub const RESTART_ATTEMPT: &str = "jobset.sigs.k8s.io/restart-attempt";
pub const JOBSET_NAME: &str = "jobset.sigs.k8s.io/jobset-name";
pub const JOB_UID: &str = "kueue.x-k8s.io/job-uid";
pub const QUEUE_NAME: &str = "kueue.x-k8s.io/queue-name";
pub const ADMISSION_GATED_BY: &str = "kueue.x-k8s.io/admission-gated-by";
pub const OPEN_GATE: &str = "dispatch.phpboyscout.uk/open";

/// 2^53 − 1: every JSON reader holds a counter up to this exactly.
const COUNTER_MAX: u64 = 9_007_199_254_740_991;

/// "A decimal of N or more, with no sign or leading zero" (section 1).
pub fn counter(text: &str, min: u64) -> Option<u64> {
    let b = text.as_bytes();
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) || (b.len() > 1 && b[0] == b'0') {
        return None;
    }
    if b.len() > 16 {
        return None;
    }
    let n: u64 = text.parse().ok()?;
    (n >= min && n <= COUNTER_MAX).then_some(n)
}

/// The entries of an admission-gated-by annotation, trimmed, empty ones dropped.
fn gates(annotation: Option<&str>) -> Vec<&str> {
    annotation
        .map(|a| {
            a.split(',')
                .map(|g| g.trim_matches(|c: char| c.is_ascii_whitespace()))
                .filter(|g| !g.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// Section 3.1: the job and submission of a name and its labels.
pub fn job_and_submission(
    name: &str,
    job_label: Option<&str>,
    sub_label: Option<&str>,
) -> (String, String) {
    let job = match job_label {
        Some(j) => j.to_string(),
        None => match name.rfind('-') {
            Some(i) => name[..i].to_string(),
            None => name.to_string(),
        },
    };
    let submission = match sub_label {
        Some(s) => s.to_string(),
        None => {
            let prefix = format!("{job}-");
            if let Some(rest) = name.strip_prefix(prefix.as_str()) {
                rest.to_string()
            } else if let Some(i) = name.rfind('-') {
                name[i + 1..].to_string()
            } else {
                String::new()
            }
        }
    };
    (job, submission)
}

/// A pod read for a TrainJob, live or captured.
#[derive(Clone, Copy)]
struct ReadPod<'s, 'a> {
    pod: &'s Pod<'a>,
    captured: bool,
}

impl ReadPod<'_, '_> {
    /// (A, J) when both are counters.
    fn counters(&self) -> Option<(u64, u64)> {
        let a = counter(self.pod.meta.annotation(ADMISSION)?, 0)?;
        let j = counter(self.pod.meta.label(RESTART_ATTEMPT)?, 0)?;
        Some((a, j))
    }
}

struct Finding<'s, 'a> {
    pod: ReadPod<'s, 'a>,
    source: FindingSource,
    kind: CauseKind,
    date: Option<Time>,
    detail: String,
}

/// Indexes built once per snapshot, so each TrainJob's selection is a lookup.
struct Index<'s, 'a> {
    jobsets: BTreeMap<(&'a str, &'a str), usize>,
    workloads: BTreeMap<(&'a str, &'a str), Vec<usize>>,
    pods_by_labels: BTreeMap<(&'a str, &'a str, &'a str), Vec<usize>>,
    pods_by_jobset: BTreeMap<(&'a str, &'a str), Vec<usize>>,
    captured: BTreeMap<&'a str, Vec<usize>>,
    nodes: BTreeMap<&'a str, &'s KubeNode<'a>>,
    trainjob_uids: BTreeSet<&'a str>,
}

impl<'s, 'a> Index<'s, 'a> {
    fn new(snap: &'s Snapshot<'a>) -> Self {
        let mut ix = Index {
            jobsets: BTreeMap::new(),
            workloads: BTreeMap::new(),
            pods_by_labels: BTreeMap::new(),
            pods_by_jobset: BTreeMap::new(),
            captured: BTreeMap::new(),
            nodes: BTreeMap::new(),
            trainjob_uids: BTreeSet::new(),
        };
        for (i, js) in snap.jobsets.iter().enumerate() {
            ix.jobsets
                .entry((js.meta.namespace, js.meta.name))
                .or_insert(i);
        }
        for (i, w) in snap.workloads.iter().enumerate() {
            if let Some(uid) = w.meta.label(JOB_UID) {
                ix.workloads
                    .entry((w.meta.namespace, uid))
                    .or_default()
                    .push(i);
            }
        }
        for (i, p) in snap.pods.iter().enumerate() {
            let m = &p.meta;
            if let (Some(j), Some(s)) = (m.label(JOB_ID), m.label(SUBMISSION)) {
                ix.pods_by_labels
                    .entry((m.namespace, j, s))
                    .or_default()
                    .push(i);
            }
            if let Some(js) = m.label(JOBSET_NAME) {
                ix.pods_by_jobset
                    .entry((m.namespace, js))
                    .or_default()
                    .push(i);
            }
        }
        for (i, c) in snap.captured.iter().enumerate() {
            if !c.trainjob_uid.is_empty() {
                ix.captured.entry(c.trainjob_uid).or_default().push(i);
            }
        }
        for n in &snap.nodes {
            ix.nodes.entry(n.meta.name).or_insert(n);
        }
        for t in &snap.trainjobs {
            if !t.meta.uid.is_empty() {
                ix.trainjob_uids.insert(t.meta.uid);
            }
        }
        ix
    }

    /// Section 4's live pods for T, as indexes into `snap.pods`, in input order.
    fn live_pods(&self, t: &TrainJob<'a>) -> Vec<usize> {
        let m = &t.meta;
        let mut out: Vec<usize> = Vec::new();
        if let (Some(j), Some(s)) = (m.label(JOB_ID), m.label(SUBMISSION)) {
            if let Some(v) = self.pods_by_labels.get(&(m.namespace, j, s)) {
                out.extend(v);
            }
        }
        if let Some(v) = self.pods_by_jobset.get(&(m.namespace, m.name)) {
            out.extend(v);
        }
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// Section 7's findings of a set of pods, winner first. The verdict passes
/// the current execution's pods; the trace's attempts pass each execution's.
fn findings_of<'p, 's: 'p, 'a: 's>(
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
                date: c.last_transition,
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
                date: t.finished_at,
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
fn winner_cause(findings: &[Finding<'_, '_>]) -> Option<Cause> {
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

/// What section 4 read for one TrainJob, plus the derived execution and findings.
struct Selection<'s, 'a> {
    mode: Mode,
    nodes_readable: bool,
    nodes_inferred: bool,
    t: &'s TrainJob<'a>,
    jobset: Option<&'s crate::model::JobSet<'a>>,
    workload: Option<&'s Workload<'a>>,
    /// Every pod read, live then captured, each group in name order.
    pods: Vec<ReadPod<'s, 'a>>,
    execution: Option<Execution>,
    nodes: &'s BTreeMap<&'a str, &'s KubeNode<'a>>,
    /// Findings of the current execution, winner first.
    findings: Vec<Finding<'s, 'a>>,
}

fn by_name<'s, 'a>(pods: &mut [ReadPod<'s, 'a>]) {
    pods.sort_by(|a, b| a.pod.meta.name.as_bytes().cmp(b.pod.meta.name.as_bytes()));
}

impl<'s, 'a> Selection<'s, 'a> {
    fn new(
        snap: &'s Snapshot<'a>,
        ix: &'s Index<'s, 'a>,
        t: &'s TrainJob<'a>,
        live: &[usize],
    ) -> Self {
        let ns = t.meta.namespace;
        let jobset = ix
            .jobsets
            .get(&(ns, t.meta.name))
            .map(|&i| &snap.jobsets[i]);
        let workload = if snap.mode == Mode::Kueue && !t.meta.uid.is_empty() {
            ix.workloads.get(&(ns, t.meta.uid)).and_then(|v| {
                // Newest creationTimestamp, then the greatest name, then the first.
                let mut best: Option<&Workload<'a>> = None;
                for &i in v {
                    let w = &snap.workloads[i];
                    let better = match best {
                        None => true,
                        Some(b) => {
                            (w.meta.creation, w.meta.name.as_bytes())
                                > (b.meta.creation, b.meta.name.as_bytes())
                        }
                    };
                    if better {
                        best = Some(w);
                    }
                }
                best
            })
        } else {
            None
        };
        let mut live_pods: Vec<ReadPod> = live
            .iter()
            .map(|&i| ReadPod {
                pod: &snap.pods[i],
                captured: false,
            })
            .collect();
        by_name(&mut live_pods);
        let mut captured_pods: Vec<ReadPod> = Vec::new();
        if let Some(v) = ix.captured.get(t.meta.uid) {
            let mut seen: BTreeSet<&str> = live_pods
                .iter()
                .map(|p| p.pod.meta.uid)
                .filter(|u| !u.is_empty())
                .collect();
            for &i in v {
                let pod = &snap.captured[i].pod;
                if !pod.meta.uid.is_empty() && !seen.insert(pod.meta.uid) {
                    continue;
                }
                captured_pods.push(ReadPod {
                    pod,
                    captured: true,
                });
            }
        }
        by_name(&mut captured_pods);
        let mut pods = live_pods;
        pods.extend(captured_pods);

        // Section 5: the highest R, preferring the higher A on a tie.
        let execution = pods
            .iter()
            .filter_map(ReadPod::counters)
            .max_by_key(|&(a, j)| (a + j, a))
            .map(|(a, j)| Execution {
                admission: a,
                restart_attempt: j,
            });

        let mut sel = Selection {
            mode: snap.mode,
            nodes_readable: snap.nodes_readable,
            nodes_inferred: snap.nodes_inferred,
            t,
            jobset,
            workload,
            pods,
            execution,
            nodes: &ix.nodes,
            findings: Vec::new(),
        };
        sel.findings = sel.compute_findings();
        sel
    }

    fn in_current(&self, p: &ReadPod<'_, '_>) -> bool {
        match self.execution {
            None => true,
            Some(e) => p.counters() == Some((e.admission, e.restart_attempt)),
        }
    }

    fn current(&self) -> impl Iterator<Item = &ReadPod<'s, 'a>> {
        self.pods.iter().filter(|p| self.in_current(p))
    }

    fn live(&self) -> impl Iterator<Item = &ReadPod<'s, 'a>> {
        self.pods.iter().filter(|p| !p.captured)
    }

    /// Section 7 over the current execution's pods.
    fn compute_findings(&self) -> Vec<Finding<'s, 'a>> {
        findings_of(self.current())
    }

    /// Section 7: the current execution's winning finding as a cause.
    fn finding_cause(&self) -> Option<Cause> {
        winner_cause(&self.findings)
    }

    /// Every execution among the counted pods, live and captured, newest
    /// first (higher R, then higher A), each with its own section-7 winner
    /// from its pods alone. Empty when no pod counts (section 5's `null`).
    fn attempts(&self) -> Vec<AttemptTrace> {
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

    fn conds(&self) -> &Conditions<'a> {
        &self.t.conditions
    }

    fn gated(&self) -> bool {
        gates(self.t.meta.annotation(ADMISSION_GATED_BY)).contains(&OPEN_GATE)
    }

    /// The held object's hold-instance annotation: (kind, raw value).
    fn hold_annotation(&self) -> Option<(&'static str, Option<&'a str>)> {
        match self.mode {
            Mode::Kueue => self
                .workload
                .map(|w| ("Workload", w.meta.annotation(HOLD_INSTANCE))),
            Mode::Plain => Some(("TrainJob", self.t.meta.annotation(HOLD_INSTANCE))),
        }
    }

    /// Rule 4's test: the hold instance in force, if any.
    fn hold(&self) -> Option<u64> {
        self.hold_annotation()?.1.and_then(|v| counter(v, 1))
    }

    fn suspended_by_someone_else(&self) -> bool {
        match self.mode {
            Mode::Plain => self.t.suspend == Some(true) || self.conds().is_true("Suspended"),
            Mode::Kueue => self.workload.is_some_and(|w| w.active == Some(false)),
        }
    }

    fn admitted(&self) -> bool {
        match self.mode {
            Mode::Plain => true,
            Mode::Kueue => self
                .workload
                .is_some_and(|w| w.conditions.is_true("Admitted")),
        }
    }

    fn not_suspended(&self) -> bool {
        self.t.suspend != Some(true) && !self.conds().is_true("Suspended")
    }

    /// Cause b: a lost node, for a running object.
    fn lost_node(&self) -> Option<Cause> {
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

    fn eviction(&self) -> Option<Cause> {
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
    fn unknown_conditions(&self) -> Vec<String> {
        self.conds()
            .firsts()
            .filter(|c| c.is_true())
            .filter(|c| !matches!(c.kind, Some("Suspended" | "Complete" | "Failed")))
            .map(|c| with_words(&format!("TrainJob {}", c.kind.unwrap_or("")), &c.words()))
            .collect()
    }

    fn decide(&self) -> Decision {
        let none = || Cause {
            kind: CauseKind::None,
            provenance: None,
            detail: String::new(),
        };
        let (rule, state, mut cause, cause_rule) =
            if let Some(c) = self.conds().get("Complete").filter(|c| c.is_true()) {
                let cause = Cause {
                    kind: CauseKind::Completed,
                    provenance: Some(Provenance::Trainjob),
                    detail: with_words("TrainJob Complete", &c.words()),
                };
                (1, State::Ended, cause, CauseRule::Complete)
            } else if let Some(c) = self.conds().get("Failed").filter(|c| c.is_true()) {
                let trainjob = |kind| Cause {
                    kind,
                    provenance: Some(Provenance::Trainjob),
                    detail: with_words("TrainJob Failed", &c.words()),
                };
                let (cause, row) = match c.reason {
                    Some("FailedJobs" | "ReachedMaxRestarts" | "FailJobSetFailurePolicyAction") => {
                        match self.finding_cause() {
                            Some(cause) => (cause, CauseRule::FailedEvidence),
                            None => (
                                Cause {
                                    kind: CauseKind::Unknown,
                                    provenance: None,
                                    detail: "no pod evidence was captured".to_string(),
                                },
                                CauseRule::FailedNoEvidence,
                            ),
                        }
                    }
                    Some("DeadlineExceeded") => (
                        trainjob(CauseKind::DeadlineExceeded),
                        CauseRule::FailedDeadline,
                    ),
                    Some("TrainingRuntimeNotSupported") => {
                        (trainjob(CauseKind::Invalid), CauseRule::FailedRuntime)
                    }
                    _ => (trainjob(CauseKind::Unknown), CauseRule::FailedOther),
                };
                (2, State::Ended, cause, row)
            } else if self.gated() {
                (3, State::Gated, none(), CauseRule::None)
            } else if self.hold().is_some() {
                (4, State::Held, none(), CauseRule::None)
            } else if self.suspended_by_someone_else() {
                (5, State::Suspended, none(), CauseRule::None)
            } else {
                let state = if self.admitted() && self.not_suspended() {
                    State::Running
                } else {
                    State::Pending
                };
                let (cause, cause_rule) = if let Some(c) = self.finding_cause() {
                    (c, CauseRule::PodEvidence)
                } else if let Some(c) = self.lost_node().filter(|_| state == State::Running) {
                    (c, CauseRule::LostNode)
                } else if let Some(c) = self.eviction() {
                    (c, CauseRule::Eviction)
                } else {
                    (none(), CauseRule::Otherwise)
                };
                (6, state, cause, cause_rule)
            };
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

    /// Section 8, F1–F5.
    fn foreign_notes(&self) -> Vec<NoteTrace> {
        let mut notes = Vec::new();
        let t = &self.t.meta;
        let mut note = |rule: &str, text: String| {
            notes.push(NoteTrace {
                rule: rule.to_string(),
                text,
            })
        };
        if let Some(l) = t.label(JOB_ID) {
            if !t.name.starts_with(&format!("{l}-")) {
                note(
                    "F1",
                    format!("TrainJob name does not start with job-id {l}"),
                );
            }
        }
        if let Some(s) = t.label(SUBMISSION) {
            if !t.name.ends_with(&format!("-{s}")) {
                note(
                    "F2",
                    format!("TrainJob name does not end with submission {s}"),
                );
            }
        }
        let controlled_elsewhere = |meta: &crate::model::Meta<'a>| {
            meta.controller()
                .filter(|o| o.uid.is_some_and(|u| t.uid.is_empty() || u != t.uid))
                .map(|o| (o.kind.unwrap_or(""), o.name.unwrap_or("")))
        };
        if let Some(js) = self.jobset {
            if let Some((kind, owner)) = controlled_elsewhere(&js.meta) {
                note(
                    "F3",
                    format!("JobSet {} is controlled by {kind} {owner}", js.meta.name),
                );
            }
        }
        if self.mode == Mode::Kueue {
            if let Some(w) = self.workload {
                if let Some((kind, owner)) = controlled_elsewhere(&w.meta) {
                    note(
                        "F4",
                        format!("Workload {} is controlled by {kind} {owner}", w.meta.name),
                    );
                }
            }
        }
        let mut contradictions = self.live().filter_map(|p| {
            let m = &p.pod.meta;
            let differs = |key: &'static str, theirs: Option<&str>| {
                let mine = m.label(key)?;
                (theirs.is_some_and(|v| v != mine))
                    .then(|| format!("pod {} has {key}={mine}", m.name))
            };
            differs(JOB_ID, t.label(JOB_ID))
                .or_else(|| differs(SUBMISSION, t.label(SUBMISSION)))
                .or_else(|| differs(JOBSET_NAME, Some(t.name)))
        });
        let mut shown = 0;
        for text in contradictions.by_ref().take(3) {
            note("F5", text);
            shown += 1;
        }
        let more = contradictions.count();
        if shown == 3 && more > 0 {
            note("F5", format!("and {more} more"));
        }
        notes
    }

    /// Section 9, S1–S11 (none for an ended object).
    fn situation_notes(&self, state: State) -> Vec<NoteTrace> {
        let mut notes = Vec::new();
        if state == State::Ended {
            return notes;
        }
        let mut note = |rule: &str, text: String| {
            notes.push(NoteTrace {
                rule: rule.to_string(),
                text,
            })
        };
        let kueue = self.mode == Mode::Kueue;
        if kueue && self.workload.is_none() {
            note("S1", "no Workload".to_string());
        }
        if let Some((kind, Some(value))) = self.hold_annotation() {
            if counter(value, 1).is_none() {
                note(
                    "S2",
                    format!("{kind} hold-instance \"{value}\" is not a hold instance"),
                );
            }
        }
        if kueue && !self.gated() {
            if let Some(w) = self.workload {
                if gates(w.meta.annotation(ADMISSION_GATED_BY)).contains(&OPEN_GATE) {
                    note("S3", "Workload still carries dispatch's gate".to_string());
                }
            }
        }
        let others: Vec<&str> = gates(self.t.meta.annotation(ADMISSION_GATED_BY))
            .into_iter()
            .filter(|g| *g != OPEN_GATE)
            .collect();
        if !others.is_empty() {
            note("S4", format!("admission gated by {}", others.join(", ")));
        }
        if state == State::Suspended {
            let text = match self.mode {
                Mode::Plain if self.t.suspend == Some(true) => {
                    "TrainJob spec.suspend is true".to_string()
                }
                Mode::Plain => with_words(
                    "TrainJob Suspended",
                    &self
                        .conds()
                        .get("Suspended")
                        .map(|c| c.words())
                        .unwrap_or_default(),
                ),
                Mode::Kueue => "Workload spec.active is false".to_string(),
            };
            note("S5", text);
        }
        if let Some(w) = self.workload.filter(|_| kueue) {
            if !w.conditions.is_true("Admitted") {
                match w.conditions.get("QuotaReserved") {
                    Some(q) if !q.is_true() => note(
                        "S6",
                        with_words(
                            &format!("Workload QuotaReserved={}", q.status.unwrap_or("")),
                            &q.words(),
                        ),
                    ),
                    Some(_) => {
                        for check in w
                            .admission_checks
                            .iter()
                            .filter(|c| c.state != Some("Ready"))
                        {
                            let mut text = format!("admission check {}", check.name.unwrap_or(""));
                            if let Some(s) = check.state {
                                text.push(' ');
                                text.push_str(s);
                            }
                            if let Some(m) = check.message {
                                text.push_str(": ");
                                text.push_str(m);
                            }
                            note("S6", text);
                        }
                    }
                    None => {}
                }
            }
            if let Some(r) = w
                .conditions
                .get("Requeued")
                .filter(|c| c.status == Some("False"))
            {
                note("S7", with_words("Workload Requeued=False", &r.words()));
            }
        }
        let active = matches!(state, State::Pending | State::Running);
        if active && self.admitted() {
            if self.jobset.is_none() {
                note("S8", "no JobSet".to_string());
            } else if self.live().next().is_none() {
                note("S8", "no pods".to_string());
            }
        }
        if let Some(n) = self.jobset.and_then(|js| js.restarts).filter(|n| *n > 0) {
            note("S9", format!("JobSet restarts: {n}"));
        }
        if active {
            let mut stalls = self
                .current()
                .filter(|p| !p.captured)
                .filter_map(|p| pod_stall(p.pod));
            let mut shown = 0;
            for text in stalls.by_ref().take(3) {
                note("S10", text);
                shown += 1;
            }
            let more = stalls.count();
            if shown == 3 && more > 0 {
                note("S10", format!("and {more} more"));
            }
        }
        if self.execution.is_some() {
            let outside = self.live().filter(|p| !self.in_current(p)).count();
            if outside > 0 {
                note(
                    "S11",
                    format!("live pods outside the current execution: {outside}"),
                );
            }
        }
        notes
    }
}

/// S10 for one pod: the first reason it is stalled, if any.
fn pod_stall(pod: &Pod<'_>) -> Option<String> {
    let name = pod.meta.name;
    if let Some(c) = pod
        .conditions
        .get("PodScheduled")
        .filter(|c| c.status == Some("False"))
    {
        return Some(with_words(
            &format!("pod {name} PodScheduled=False"),
            &c.words(),
        ));
    }
    if !pod.scheduling_gates.is_empty() {
        return Some(format!(
            "pod {name} scheduling gated by {}",
            pod.scheduling_gates.join(", ")
        ));
    }
    if let Some(w) = pod.node_container.as_ref().and_then(|c| c.waiting.as_ref()) {
        if w.reason
            .is_some_and(|r| r != "ContainerCreating" && r != "PodInitializing")
        {
            return Some(with_words(
                &format!("pod {name} node container waiting"),
                &crate::model::words(w.reason, w.message),
            ));
        }
    }
    if pod.meta.deletion_timestamp.is_some() {
        return Some(format!("pod {name} terminating"));
    }
    None
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CauseRule {
    Complete,
    FailedEvidence,
    FailedNoEvidence,
    FailedDeadline,
    FailedRuntime,
    FailedOther,
    None,
    PodEvidence,
    LostNode,
    Eviction,
    Otherwise,
}

struct Decision {
    rule: u8,
    state: State,
    cause: Cause,
    cause_rule: CauseRule,
    unknown_condition: bool,
}

fn join_detail(parts: impl IntoIterator<Item = String>) -> String {
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

fn observe(
    sel: &Selection<'_, '_>,
    d: &Decision,
    foreign: &[NoteTrace],
    situation: &[NoteTrace],
) -> Observation {
    let t = &sel.t.meta;
    let (job, submission) = job_and_submission(t.name, t.label(JOB_ID), t.label(SUBMISSION));
    let hold = sel.hold();
    let mut parts = vec![d.cause.detail.clone()];
    if d.state != State::Held {
        parts.extend(foreign.iter().map(|n| n.text.clone()));
    }
    parts.extend(situation.iter().map(|n| n.text.clone()));
    Observation {
        object: ObjectRef {
            kind: "TrainJob".to_string(),
            namespace: t.namespace.to_string(),
            name: t.name.to_string(),
            uid: t.uid.to_string(),
        },
        job,
        submission,
        state: d.state,
        held: hold.is_some(),
        hold_instance: hold,
        foreign: !foreign.is_empty(),
        cause: Cause {
            detail: join_detail(parts),
            ..d.cause.clone()
        },
        execution: sel.execution,
    }
}

/// An orphan (section 11): what is left of a TrainJob that is gone.
struct Orphan<'s, 'a> {
    kind: &'static str,
    meta: &'s crate::model::Meta<'a>,
    /// The name job and submission come from.
    name: &'a str,
    why: String,
}

fn orphan_observation(o: &Orphan<'_, '_>) -> Observation {
    let (job, submission) =
        job_and_submission(o.name, o.meta.label(JOB_ID), o.meta.label(SUBMISSION));
    let mut detail = format!("{} {} has no live TrainJob", o.kind, o.meta.name);
    if let Some(uid) = o.meta.trainjob_owners().next().and_then(|r| r.uid) {
        detail.push_str(&format!(" of UID {uid}"));
    }
    Observation {
        object: ObjectRef {
            kind: o.kind.to_string(),
            namespace: o.meta.namespace.to_string(),
            name: o.meta.name.to_string(),
            uid: o.meta.uid.to_string(),
        },
        job,
        submission,
        state: State::Ended,
        held: false,
        hold_instance: None,
        foreign: true,
        cause: Cause {
            kind: CauseKind::Unknown,
            provenance: None,
            detail,
        },
        execution: None,
    }
}

fn orphan_trace(o: &Orphan<'_, '_>) -> Trace {
    Trace {
        decided_by: format!("Section 11, orphan {}: {}", o.kind, o.why),
        rules: vec![RuleTrace {
            id: format!("orphan/{}", o.kind),
            name: format!("{} with no live TrainJob", o.kind),
            verdict: Verdict::Matched,
            facts: vec![o.why.clone()],
        }],
        cause: None,
        execution: ExecutionTrace {
            current: None,
            pods: Vec::new(),
        },
        attempts: Vec::new(),
        findings: Vec::new(),
        foreign: Vec::new(),
        situation: Vec::new(),
    }
}

/// Sort key: namespace, job, TrainJobs before orphans, kind, name. `str`
/// compares by UTF-8 bytes, and the caller's sort is stable.
fn order(a: &Observation, b: &Observation) -> std::cmp::Ordering {
    fn key(o: &Observation) -> (&str, &str, bool, &str, &str) {
        (
            o.object.namespace.as_str(),
            o.job.as_str(),
            o.object.kind != "TrainJob",
            o.object.kind.as_str(),
            o.object.name.as_str(),
        )
    }
    key(a).cmp(&key(b))
}

fn orphans<'s, 'a>(
    snap: &'s Snapshot<'a>,
    ix: &Index<'s, 'a>,
    read_pods: &[bool],
) -> Vec<Orphan<'s, 'a>> {
    let mut out = Vec::new();
    let gone = |meta: &crate::model::Meta<'a>| {
        let mut owners = meta.trainjob_owners().peekable();
        owners.peek().is_some()
            && owners.all(|o| o.uid.is_none_or(|u| !ix.trainjob_uids.contains(u)))
    };
    let uids = |meta: &crate::model::Meta<'a>| {
        meta.trainjob_owners()
            .map(|o| o.uid.unwrap_or("\"\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for js in &snap.jobsets {
        if gone(&js.meta) {
            out.push(Orphan {
                kind: "JobSet",
                meta: &js.meta,
                name: js.meta.name,
                why: format!(
                    "owned by TrainJob UID {}, none of which is in the snapshot",
                    uids(&js.meta)
                ),
            });
        }
    }
    for rt in &snap.runtimes {
        if rt.meta.label(JOB_ID).is_some() && gone(&rt.meta) {
            out.push(Orphan {
                kind: "TrainingRuntime",
                meta: &rt.meta,
                name: rt.meta.name,
                why: format!(
                    "a runtime copy owned by TrainJob UID {}, none of which is in the snapshot",
                    uids(&rt.meta)
                ),
            });
        }
    }
    for (p, read) in snap.pods.iter().zip(read_pods) {
        if !read && p.meta.label(JOB_ID).is_some() {
            out.push(Orphan {
                kind: "Pod",
                meta: &p.meta,
                name: p.meta.label(JOBSET_NAME).unwrap_or(p.meta.name),
                why: format!(
                    "carries job-id {} but no TrainJob in the snapshot reads it (section 4)",
                    p.meta.label(JOB_ID).unwrap_or("")
                ),
            });
        }
    }
    out
}

/// Classifies a snapshot: one observation per TrainJob and per orphan, sorted.
pub fn classify(snap: &Snapshot<'_>) -> Vec<Observation> {
    run::<Bare>(snap).into_iter().map(|(o, ())| o).collect()
}

/// Classifies a snapshot and explains every observation.
pub fn explain(snap: &Snapshot<'_>) -> Vec<Explanation> {
    run::<Traced>(snap)
        .into_iter()
        .map(|(observation, trace)| Explanation { observation, trace })
        .collect()
}

/// Classifies a snapshot and lists each observation's attempts (the trace's
/// `attempts` alone), for a table that shows them without building traces.
pub fn classify_with_attempts(snap: &Snapshot<'_>) -> Vec<(Observation, Vec<AttemptTrace>)> {
    run::<Attempts>(snap)
}

/// What [`run`] adds to each observation, from the same selection and
/// decision the observation came from.
trait Detail {
    type Out;
    fn trainjob(
        sel: &Selection<'_, '_>,
        decision: &Decision,
        foreign: Vec<NoteTrace>,
        situation: Vec<NoteTrace>,
    ) -> Self::Out;
    fn orphan(o: &Orphan<'_, '_>) -> Self::Out;
}

/// The observation alone.
struct Bare;
impl Detail for Bare {
    type Out = ();
    fn trainjob(_: &Selection<'_, '_>, _: &Decision, _: Vec<NoteTrace>, _: Vec<NoteTrace>) {}
    fn orphan(_: &Orphan<'_, '_>) {}
}

/// The whole trace.
struct Traced;
impl Detail for Traced {
    type Out = Trace;
    fn trainjob(
        sel: &Selection<'_, '_>,
        decision: &Decision,
        foreign: Vec<NoteTrace>,
        situation: Vec<NoteTrace>,
    ) -> Trace {
        trace(sel, decision, foreign, situation)
    }
    fn orphan(o: &Orphan<'_, '_>) -> Trace {
        orphan_trace(o)
    }
}

/// The trace's attempts alone (an orphan has none).
struct Attempts;
impl Detail for Attempts {
    type Out = Vec<AttemptTrace>;
    fn trainjob(
        sel: &Selection<'_, '_>,
        _: &Decision,
        _: Vec<NoteTrace>,
        _: Vec<NoteTrace>,
    ) -> Vec<AttemptTrace> {
        sel.attempts()
    }
    fn orphan(_: &Orphan<'_, '_>) -> Vec<AttemptTrace> {
        Vec::new()
    }
}

fn run<D: Detail>(snap: &Snapshot<'_>) -> Vec<(Observation, D::Out)> {
    let ix = Index::new(snap);
    let mut read_pods = vec![false; snap.pods.len()];
    let mut out = Vec::with_capacity(snap.trainjobs.len());
    for t in &snap.trainjobs {
        let live = ix.live_pods(t);
        for &i in &live {
            if let Some(read) = read_pods.get_mut(i) {
                *read = true;
            }
        }
        let sel = Selection::new(snap, &ix, t, &live);
        let decision = sel.decide();
        let foreign = sel.foreign_notes();
        let situation = sel.situation_notes(decision.state);
        let obs = observe(&sel, &decision, &foreign, &situation);
        out.push((obs, D::trainjob(&sel, &decision, foreign, situation)));
    }
    for o in orphans(snap, &ix, &read_pods) {
        out.push((orphan_observation(&o), D::orphan(&o)));
    }
    out.sort_by(|a, b| order(&a.0, &b.0));
    out
}

// ---------------------------------------------------------------------------
// The trace: the same predicates as `decide`, with the facts they read.

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

fn trace(
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
