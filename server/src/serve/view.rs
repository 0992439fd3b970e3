//! What the engine reads, built from the store: the namespace snapshot (the
//! spec's section 2 format) and, for one job, the sub-snapshots the server
//! classifies when something of that job changes.
//!
//! A job's sub-snapshots are the engine's
//! ([`classify_wasm::live::ViewSnapshots`]): the store only says where
//! each member's text is and which belong to a TrainJob that is gone. The
//! server has no section-4 code, and no loop of views, of its own.

use std::sync::Arc;

use classify_wasm::live::{Entry, EntryText, ViewSnapshots, ViewSource};
use classify_wasm::{Explanation, InputError, Mode, Observation, Options, Piece, SnapshotPieces};

use super::projection::{ObjectKind, StoredObject};
use super::store::{own_job, Linked, Store};

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

/// How the store's members are ordered in a snapshot: objects by kind,
/// then namespace and name, as a namespace snapshot lists them; captured
/// pods by TrainJob UID, each TrainJob's oldest first.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    Object(Linked),
    Captured(String, u64),
}

/// The store as the engine's views read it, with the options a header
/// gives.
struct StoreView<'a> {
    store: &'a Store,
    header: SnapshotHeader,
}

impl ViewSource for StoreView<'_> {
    type Key = Linked;
    type Place = Place;

    fn linker(&self) -> &classify_wasm::Linker<Linked> {
        &self.store.linker
    }

    fn options(&self) -> Options {
        self.header.options()
    }

    fn entry(&self, key: &Linked) -> Option<Entry<'_, Place>> {
        match key {
            Linked::Object(kind, object_key) => {
                let object = self.store.get(*kind, &object_key.0, &object_key.1)?;
                Some(Entry {
                    text: EntryText::Item(&object.json),
                    place: Place::Object(key.clone()),
                    namespace: kind.namespaced().then_some(object.namespace.as_str()),
                    apart: self.store.belongs_to_gone_trainjob(object),
                })
            }
            Linked::Captured(uids) => {
                let (seq, captured) = self.store.captured_entry(&uids.0, &uids.1)?;
                Some(Entry {
                    text: EntryText::CapturedPod {
                        trainjob_uid: &captured.trainjob_uid,
                        pod: &captured.pod.json,
                        across_gap: captured.across_gap,
                    },
                    place: Place::Captured(captured.trainjob_uid.clone(), seq),
                    namespace: Some(captured.namespace.as_str()),
                    apart: false,
                })
            }
        }
    }
}

/// The sub-snapshots one job is classified from: the engine's
/// [`ViewSnapshots`] of the job's members (section 3.1), within its
/// namespace, with the objects the store knows to belong to a gone
/// TrainJob classified apart. Only observations of the job are kept.
/// Classified, they give the job's observations the namespace snapshot
/// gives ([`namespace_snapshot`], with those objects classified apart),
/// which the store's property test checks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobSnapshots {
    pub namespace: String,
    pub job: String,
    pub views: ViewSnapshots,
}

impl JobSnapshots {
    /// The sub-snapshots of the job `job` in `namespace`.
    pub fn of(store: &Store, header: SnapshotHeader, namespace: &str, job: &str) -> JobSnapshots {
        let members = store
            .index
            .members
            .get(&(namespace.to_string(), job.to_string()));
        let targets: Vec<Linked> = members
            .into_iter()
            .flatten()
            .map(|(kind, name)| {
                Linked::Object(*kind, Arc::new((namespace.to_string(), name.clone())))
            })
            .collect();
        JobSnapshots {
            namespace: namespace.to_string(),
            job: job.to_string(),
            views: ViewSnapshots::of(&StoreView { store, header }, &targets, Some(namespace)),
        }
    }

    fn owns(&self, o: &Observation) -> bool {
        o.job == self.job && o.object.namespace == self.namespace
    }

    /// The job's observations, in the engine's order.
    pub fn observations(&self) -> Result<Vec<Observation>, InputError> {
        self.views.observations(|o| self.owns(o))
    }

    /// The explanation of the job's object `kind/name` (Inspect with
    /// `explain`); `None` when the engine observed no such object.
    pub fn explanation_of(
        &self,
        kind: ObjectKind,
        name: &str,
    ) -> Result<Option<Explanation>, InputError> {
        let of_object =
            |o: &Observation| self.owns(o) && o.object.kind == kind.name() && o.object.name == name;
        Ok(self.views.explanations(of_object)?.into_iter().next())
    }
}

/// Every observation of the job `job` in `namespace` (Find).
pub fn classify_job(
    store: &Store,
    header: SnapshotHeader,
    namespace: &str,
    job: &str,
) -> Result<Vec<Observation>, InputError> {
    JobSnapshots::of(store, header, namespace, job).observations()
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
        (Some(job), true) => Some(JobSnapshots::of(store, header, namespace, job)),
        _ => None,
    };
    Some(Inspected {
        object,
        read_for,
        job,
        snapshots,
    })
}
