//! What the engine reads, built from the store: the namespace snapshot (the
//! spec's section 2 format) and, for one job, the sub-snapshots the server
//! classifies when something of that job changes.
//!
//! One job is classified from two snapshots. The first holds the job's live
//! TrainJobs and everything section 4 reads for them, less the objects the
//! server knows to belong to a TrainJob that is gone. The second holds only
//! those objects, with no TrainJob, so the engine itself reports each as an
//! orphan (section 11's last paragraph: an orphan stays an orphan even when
//! a TrainJob of its name appears again). Only observations of the job are
//! kept from either.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::sync::Arc;

use classify_wasm::{Explanation, InputError, Mode, Observation, Options};

use super::projection::{ObjectKind, StoredObject};
use super::store::{CapturedPod, Store};

/// How snapshots are labelled: the mode and whether Nodes can be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SnapshotHeader {
    /// Plain or Kueue mode.
    pub mode: Mode,
    /// Whether the server may read Nodes.
    pub nodes_readable: bool,
}

impl SnapshotHeader {
    fn options(self) -> Options {
        Options {
            mode: Some(self.mode),
            nodes_readable: Some(self.nodes_readable),
        }
    }
}

/// Writes a snapshot document from projections and captured pods.
pub fn write_snapshot<'a>(
    header: SnapshotHeader,
    items: impl IntoIterator<Item = &'a Arc<StoredObject>>,
    captured: impl IntoIterator<Item = &'a Arc<CapturedPod>>,
) -> String {
    let mut out = String::with_capacity(4096);
    let _ = write!(
        out,
        "{{\"kind\":\"Snapshot\",\"mode\":\"{}\",\"nodesReadable\":{},\"items\":[",
        header.mode.as_str(),
        header.nodes_readable
    );
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&item.json);
    }
    out.push_str("],\"captured\":[");
    for (i, captured) in captured.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        write_captured(&mut out, captured);
    }
    out.push_str("]}");
    out
}

/// One `captured` entry: `{"trainJobUID":..,"pod":{..}}`, with
/// `"acrossGap":true` when the pod vanished while the watch was down.
pub fn write_captured(out: &mut String, captured: &CapturedPod) {
    let uid = serde_json::Value::from(captured.trainjob_uid.as_str());
    let _ = write!(out, "{{\"trainJobUID\":{uid},\"pod\":{}", captured.pod.json);
    if captured.across_gap {
        out.push_str(",\"acrossGap\":true");
    }
    out.push('}');
}

/// The snapshot of a whole namespace, as the engine would read it now:
/// every stored object of the namespace, every Node, and the captured pods
/// of the namespace's TrainJobs.
pub fn namespace_snapshot(store: &Store, header: SnapshotHeader, namespace: &str) -> String {
    let items = ObjectKind::ALL
        .into_iter()
        .flat_map(|kind| store.in_namespace(kind, namespace));
    write_snapshot(header, items, store.captured_in(namespace))
}

/// The two snapshots one job is classified from (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSnapshots {
    /// The job's live TrainJobs and what section 4 reads for them.
    pub current: String,
    /// Objects of the job that belong to a TrainJob that is gone; `None`
    /// when there are none.
    pub gone: Option<String>,
}

/// Builds the sub-snapshots of the job `job` in `namespace`.
pub fn job_snapshots(
    store: &Store,
    header: SnapshotHeader,
    namespace: &str,
    job: &str,
) -> JobSnapshots {
    let members = store
        .index
        .members
        .get(&(namespace.to_string(), job.to_string()));
    let member_objects: Vec<Arc<StoredObject>> = members
        .into_iter()
        .flatten()
        .filter_map(|(kind, name)| store.get(*kind, namespace, name).cloned())
        .collect();
    let (gone, live): (Vec<_>, Vec<_>) = member_objects
        .into_iter()
        .partition(|o| store.belongs_to_gone_trainjob(o));

    // The TrainJobs of the job, and those of other jobs reading its pods.
    let mut trainjobs: Vec<Arc<StoredObject>> = live
        .iter()
        .filter(|o| o.kind == ObjectKind::TrainJob)
        .cloned()
        .collect();
    for pod in live.iter().filter(|o| o.kind == ObjectKind::Pod) {
        for tj in store.trainjobs_selecting(pod) {
            if !trainjobs.iter().any(|t| t.name == tj.name) {
                trainjobs.push(tj);
            }
        }
    }

    let mut seen: BTreeSet<(ObjectKind, String)> = BTreeSet::new();
    let mut items: Vec<Arc<StoredObject>> = Vec::new();
    let mut push = |o: &Arc<StoredObject>, items: &mut Vec<Arc<StoredObject>>| {
        if seen.insert((o.kind, o.name.clone())) {
            items.push(o.clone());
        }
    };
    for tj in &trainjobs {
        push(tj, &mut items);
    }
    for o in &live {
        push(o, &mut items);
    }
    let mut captured: Vec<Arc<CapturedPod>> = Vec::new();
    for tj in &trainjobs {
        if let Some(jobset) = store.get(ObjectKind::JobSet, namespace, &tj.name) {
            if !store.belongs_to_gone_trainjob(jobset) {
                push(jobset, &mut items);
            }
        }
        for pod in store.pods_selected_by(tj) {
            if !store.belongs_to_gone_trainjob(&pod) {
                push(&pod, &mut items);
            }
        }
        if header.mode == Mode::Kueue && !tj.uid.is_empty() {
            for (ns, name) in store
                .index
                .workloads_by_job_uid
                .get(&tj.uid)
                .into_iter()
                .flatten()
            {
                if let Some(workload) = store.get(ObjectKind::Workload, ns, name) {
                    push(workload, &mut items);
                }
            }
        }
        captured.extend(store.captured_for(&tj.uid).cloned());
    }
    if header.nodes_readable {
        let node_names: BTreeSet<String> =
            items.iter().filter_map(|o| o.node_name.clone()).collect();
        for node in node_names {
            if let Some(node) = store.get(ObjectKind::Node, "", &node) {
                push(node, &mut items);
            }
        }
    }
    let current = write_snapshot(header, &items, &captured);
    let gone = (!gone.is_empty()).then(|| write_snapshot(header, &gone, std::iter::empty()));
    JobSnapshots { current, gone }
}

/// The order of section 3: namespace, job, TrainJobs before orphans, kind, name.
fn order_key(o: &Observation) -> (&str, &str, bool, &str, &str) {
    (
        &o.object.namespace,
        &o.job,
        o.object.kind != "TrainJob",
        &o.object.kind,
        &o.object.name,
    )
}

/// Every observation of the job `job` in `namespace` (Find).
pub fn classify_job(
    store: &Store,
    header: SnapshotHeader,
    namespace: &str,
    job: &str,
) -> Result<Vec<Observation>, InputError> {
    classify_snapshots(&job_snapshots(store, header, namespace, job), header, job)
}

/// Classifies built sub-snapshots (without the store, so the caller may
/// release its lock first).
pub fn classify_snapshots(
    snapshots: &JobSnapshots,
    header: SnapshotHeader,
    job: &str,
) -> Result<Vec<Observation>, InputError> {
    let mut observations = classify_wasm::classify(&snapshots.current, header.options())?;
    if let Some(gone) = &snapshots.gone {
        observations.extend(classify_wasm::classify(gone, header.options())?);
    }
    observations.retain(|o| o.job == job);
    observations.sort_by(|a, b| order_key(a).cmp(&order_key(b)));
    Ok(observations)
}

/// The explanations of the job's observations (Inspect with `explain`).
pub fn explain_snapshots(
    snapshots: &JobSnapshots,
    header: SnapshotHeader,
    job: &str,
) -> Result<Vec<Explanation>, InputError> {
    let mut explanations = classify_wasm::explain(&snapshots.current, header.options())?;
    if let Some(gone) = &snapshots.gone {
        explanations.extend(classify_wasm::explain(gone, header.options())?);
    }
    explanations.retain(|e| e.observation.job == job);
    Ok(explanations)
}
