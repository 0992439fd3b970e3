//! What the engine reads, built from the store: the namespace snapshot (the
//! spec's section 2 format) and, for one job, the sub-snapshots the server
//! classifies when something of that job changes.
//!
//! One job is classified from two snapshots. The first holds the job's live
//! objects and what they are read with, as the engine's linker
//! ([`classify_wasm::Linker`]) gives it: the server has no section-4 code
//! of its own. Less the objects the server knows to belong to a TrainJob
//! that is gone. The second holds only
//! those objects, with no TrainJob, so the engine itself reports each as an
//! orphan (section 11's last paragraph: an orphan stays an orphan even when
//! a TrainJob of its name appears again). Only observations of the job are
//! kept from either.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use classify_wasm::{
    Explanation, InputError, Mode, Observation, Options, Piece, SnapshotPieces, SnapshotWriter,
};

use super::projection::{ObjectKind, StoredObject};
use super::store::{own_job, CapturedPod, Linked, Store};

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

/// Writes a snapshot document from projections and captured pods, through
/// the engine's [`SnapshotWriter`].
pub fn write_snapshot<'a>(
    header: SnapshotHeader,
    items: impl IntoIterator<Item = &'a Arc<StoredObject>>,
    captured: impl IntoIterator<Item = &'a Arc<CapturedPod>>,
) -> String {
    let mut writer = SnapshotWriter::new(header.options());
    for item in items {
        writer.item(&item.json);
    }
    for c in captured {
        writer.captured(&c.trainjob_uid, &c.pod.json, c.across_gap);
    }
    writer.finish()
}

/// The snapshot of a whole namespace as one text
/// ([`namespace_snapshot_pieces`] joined).
pub fn namespace_snapshot(store: &Store, header: SnapshotHeader, namespace: &str) -> String {
    Piece::joined(&namespace_snapshot_pieces(store, header, namespace))
}

/// The snapshot of a whole namespace, as the engine would read it now:
/// every stored object of the namespace, every Node, and the captured pods
/// of the namespace's TrainJobs. In pieces that share the store's
/// projection texts ([`classify_wasm::SnapshotPieces`]), for a stream start
/// that many clients are sent.
pub fn namespace_snapshot_pieces(
    store: &Store,
    header: SnapshotHeader,
    namespace: &str,
) -> Vec<Piece<Arc<str>>> {
    let mut pieces = SnapshotPieces::new(header.options());
    for kind in ObjectKind::ALL {
        for item in store.in_namespace(kind, namespace) {
            pieces.item(item.json.clone());
        }
    }
    for c in store.captured_in(namespace) {
        pieces.captured(&c.trainjob_uid, c.pod.json.clone(), c.across_gap);
    }
    pieces.finish()
}

/// The data of the dashboard stream's `rows` event for a namespace
/// snapshot's text: the engine's classification of exactly that text, each
/// observation with its attempts ([`classify_wasm::classified_rows_json`]),
/// which the page draws while its own classification of the snapshot is
/// still to come. `None` when the rows would be longer than the snapshot
/// (or than [`ROWS_FLOOR`], for a small one): a stream's start holds at
/// most twice its snapshot. (And when the text does not classify, which a
/// snapshot the server wrote always does.)
pub fn namespace_rows(snapshot: &str) -> Option<String> {
    let rows = classify_wasm::classified_rows_json(snapshot, Options::default()).ok()?;
    (rows.len() <= snapshot.len().max(ROWS_FLOOR)).then_some(rows)
}

/// Rows up to this long are sent whatever their snapshot's length: an
/// observation's fixed words make the rows of a few small objects longer
/// than the objects. (1,000 TrainJobs with their pods: 0.96 MB of rows for
/// a 5.2 MB snapshot.)
pub const ROWS_FLOOR: usize = 64 << 10;

/// The two snapshots one job is classified from (see the module docs).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSnapshots {
    /// The job's namespace: only its observations are kept.
    pub namespace: String,
    /// The job's live objects and what the engine's linker says they are
    /// read with.
    pub current: String,
    /// Objects of the job that belong to a TrainJob that is gone; `None`
    /// when there are none.
    pub gone: Option<String>,
}

/// Builds the sub-snapshots of the job `job` in `namespace`: for `current`,
/// the view ([`classify_wasm::Linker::view_of`]) of the job's objects that
/// belong to no gone TrainJob, within the namespace (and its Nodes), less
/// the objects that belong to a gone one. Classified, it gives the job's
/// observations the namespace snapshot gives ([`namespace_snapshot`], with
/// those objects classified apart), which the store's property test checks.
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
    let live_keys: Vec<Linked> = live.iter().map(|o| Linked::of(o)).collect();
    let view = store.linker.view_of(&live_keys);

    // In kind order, then namespace and name, as a namespace snapshot lists them.
    let mut items: Vec<Arc<StoredObject>> = Vec::new();
    // Captured pods by TrainJob UID, each TrainJob's oldest first.
    let mut captured_of: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for key in &view {
        match key {
            // The namespace's snapshot is what a job is judged by (a
            // browser classifies it whole): a TrainJob of another
            // namespace owning one of its JobSets is not in it.
            Linked::Object(kind, key) if kind.namespaced() && key.0 != namespace => {}
            Linked::Object(kind, key) => {
                if let Some(object) = store.get(*kind, &key.0, &key.1) {
                    if !store.belongs_to_gone_trainjob(object) {
                        items.push(object.clone());
                    }
                }
            }
            Linked::Captured(key) => {
                let (trainjob_uid, pod_uid) = &**key;
                captured_of.entry(trainjob_uid).or_default().insert(pod_uid);
            }
        }
    }
    let captured: Vec<Arc<CapturedPod>> = captured_of
        .into_iter()
        .flat_map(|(trainjob_uid, pods)| {
            store
                .captured_for(trainjob_uid)
                .filter(move |c| c.namespace == namespace && pods.contains(c.pod.uid.as_str()))
        })
        .cloned()
        .collect();
    let current = write_snapshot(header, &items, &captured);
    let gone = (!gone.is_empty()).then(|| write_snapshot(header, &gone, std::iter::empty()));
    JobSnapshots {
        namespace: namespace.to_string(),
        current,
        gone,
    }
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
    observations.retain(|o| o.job == job && o.object.namespace == snapshots.namespace);
    observations.sort_by(Observation::cmp_order);
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
    explanations.retain(|e| {
        e.observation.job == job && e.observation.object.namespace == snapshots.namespace
    });
    Ok(explanations)
}

/// What Inspect shows of one object of the store.
#[derive(Debug, Clone)]
pub struct Inspected {
    pub object: Arc<StoredObject>,
    /// The TrainJobs that read the object, by the engine's linking.
    pub read_for: Vec<Arc<StoredObject>>,
    /// The job whose observations the object's is among.
    pub job: Option<String>,
    /// That job's sub-snapshots, when an explanation was asked for.
    pub snapshots: Option<JobSnapshots>,
}

/// The object `kind/name` of `namespace` as Inspect shows it; `explain`
/// also builds its job's sub-snapshots (to explain it from once the store
/// is released). `None`: no such object.
pub fn inspect(
    store: &Store,
    header: SnapshotHeader,
    kind: ObjectKind,
    namespace: &str,
    name: &str,
    explain: bool,
) -> Option<Inspected> {
    let object = store.get(kind, namespace, name)?.clone();
    // Which TrainJobs read this object is the engine's linking (section
    // 4), not ours; an object left by a gone TrainJob is an orphan, read
    // for none even when a TrainJob of its name came back.
    let read_for = match kind {
        ObjectKind::Pod | ObjectKind::JobSet | ObjectKind::Workload
            if !store.belongs_to_gone_trainjob(&object) =>
        {
            store.trainjobs_reading(&object)
        }
        _ => Vec::new(),
    };
    // A Workload's observation is its TrainJob's; other kinds have their
    // own job.
    let job = match kind {
        ObjectKind::Workload => read_for
            .first()
            .and_then(|tj| store.get(ObjectKind::TrainJob, namespace, &tj.name))
            .and_then(|tj| own_job(tj)),
        _ => own_job(&object),
    };
    let snapshots = match (&job, explain) {
        (Some(job), true) => Some(job_snapshots(store, header, namespace, job)),
        _ => None,
    };
    Some(Inspected {
        object,
        read_for,
        job,
        snapshots,
    })
}

/// The explanation of the object `kind/name` among its job's (Inspect with
/// `explain`); `None` when the engine observed no such object.
pub fn explain_object(
    snapshots: &JobSnapshots,
    header: SnapshotHeader,
    job: &str,
    kind: ObjectKind,
    name: &str,
) -> Result<Option<Explanation>, InputError> {
    Ok(explain_snapshots(snapshots, header, job)?
        .into_iter()
        .find(|e| e.observation.object.kind == kind.name() && e.observation.object.name == name))
}
