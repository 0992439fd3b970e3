//! Section 4: what one classification reads. The [`Index`] is built once
//! per snapshot; a [`Selection`] is what it read for one TrainJob.

use std::collections::{BTreeMap, BTreeSet};

use super::execution::current_execution;
use super::findings::Finding;
use super::keys::{counter, ADMISSION, JOBSET_NAME, JOB_ID, JOB_UID, RESTART_ATTEMPT, SUBMISSION};
use crate::hash::{map, set, Map, Set};
use crate::model::{workload_rank, JobSet, KubeNode, Pod, TrainJob, Workload};
use crate::observation::Execution;
use crate::snapshot::{Mode, Snapshot};

/// A pod read for a TrainJob, live or captured.
#[derive(Clone, Copy)]
pub(super) struct ReadPod<'s, 'a> {
    pub(super) pod: &'s Pod<'a>,
    pub(super) captured: bool,
}

impl ReadPod<'_, '_> {
    /// (A, J) when both are counters.
    pub(super) fn counters(&self) -> Option<(u64, u64)> {
        let a = counter(self.pod.meta.annotation(ADMISSION)?, 0)?;
        let j = counter(self.pod.meta.label(RESTART_ATTEMPT)?, 0)?;
        Some((a, j))
    }
}

/// Indexes built once per snapshot, so each TrainJob's selection is a lookup.
///
/// The maps only answer lookups (nothing iterates them), so they hash: the
/// B-tree's key compares (a namespace, then a 30-byte job id) were most of
/// building the index of a big dump. `nodes` stays ordered: a selection
/// borrows it.
pub(super) struct Index<'s, 'a> {
    pub(super) jobsets: Map<(&'a str, &'a str), usize>,
    pub(super) workloads: Map<(&'a str, &'a str), Vec<usize>>,
    pub(super) pods_by_labels: Map<(&'a str, &'a str, &'a str), Vec<usize>>,
    pub(super) pods_by_jobset: Map<(&'a str, &'a str), Vec<usize>>,
    pub(super) captured: Map<&'a str, Vec<usize>>,
    pub(super) nodes: BTreeMap<&'a str, &'s KubeNode<'a>>,
    pub(super) trainjob_uids: Set<&'a str>,
}

impl<'s, 'a> Index<'s, 'a> {
    pub(super) fn new(snap: &'s Snapshot<'a>) -> Self {
        let mut ix = Index {
            jobsets: map(snap.jobsets.len()),
            workloads: map(snap.workloads.len()),
            pods_by_labels: map(0),
            pods_by_jobset: map(0),
            captured: map(0),
            nodes: BTreeMap::new(),
            trainjob_uids: set(snap.trainjobs.len()),
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
    pub(super) fn live_pods(&self, t: &TrainJob<'a>) -> Vec<usize> {
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

/// What section 4 read for one TrainJob, plus the derived execution and findings.
pub(super) struct Selection<'s, 'a> {
    pub(super) mode: Mode,
    pub(super) nodes_readable: bool,
    pub(super) nodes_inferred: bool,
    pub(super) t: &'s TrainJob<'a>,
    pub(super) jobset: Option<&'s JobSet<'a>>,
    pub(super) workload: Option<&'s Workload<'a>>,
    /// Every pod read, live then captured, each group in name order.
    pub(super) pods: Vec<ReadPod<'s, 'a>>,
    pub(super) execution: Option<Execution>,
    pub(super) nodes: &'s BTreeMap<&'a str, &'s KubeNode<'a>>,
    /// Findings of the current execution, winner first.
    pub(super) findings: Vec<Finding<'s, 'a>>,
}

pub(super) fn by_name<'s, 'a>(pods: &mut [ReadPod<'s, 'a>]) {
    pods.sort_by(|a, b| a.pod.meta.name.as_bytes().cmp(b.pod.meta.name.as_bytes()));
}

impl<'s, 'a> Selection<'s, 'a> {
    pub(super) fn new(
        snap: &'s Snapshot<'a>,
        ix: &'s Index<'s, 'a>,
        t: &'s TrainJob<'a>,
        live: &[usize],
    ) -> Self {
        let ns = t.meta.namespace;
        let jobset = ix
            .jobsets
            .get(&(ns, t.meta.name))
            .and_then(|&i| snap.jobsets.get(i));
        let workload = if snap.mode == Mode::Kueue && !t.meta.uid.is_empty() {
            ix.workloads.get(&(ns, t.meta.uid)).and_then(|v| {
                // Newest creationTimestamp, then the greatest name, then the first.
                let mut best: Option<&Workload<'a>> = None;
                for &i in v {
                    let Some(w) = snap.workloads.get(i) else {
                        continue;
                    };
                    let better = match best {
                        None => true,
                        Some(b) => {
                            workload_rank(w.meta.creation.get(), w.meta.name)
                                > workload_rank(b.meta.creation.get(), b.meta.name)
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
            .filter_map(|&i| snap.pods.get(i))
            .map(|pod| ReadPod {
                pod,
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
                let Some(pod) = snap.captured.get(i).map(|c| &c.pod) else {
                    continue;
                };
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

        let execution = current_execution(&pods);

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

    pub(super) fn live(&self) -> impl Iterator<Item = &ReadPod<'s, 'a>> {
        self.pods.iter().filter(|p| !p.captured)
    }
}
