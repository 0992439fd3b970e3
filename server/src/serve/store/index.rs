//! How the store indexes what it holds: each object under the job its own
//! name and labels give (section 3.1), and every object and captured pod in
//! the engine's [`classify_wasm::Linker`] by its [`Linked`] key. Indexing is where a
//! change is marked: the jobs of what [`classify_wasm::Linker::replace`] says it can alter
//! are dirty until the hub takes them.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use classify_wasm::Links;

use super::{CapturedPod, JobKey, ObjectKey, ObjectKind, Store, StoredObject};

/// The objects of each job, so one job's objects are found without a scan.
#[derive(Debug, Default)]
pub(crate) struct Index {
    /// Objects (not Workloads or Nodes) by the job their own name and labels
    /// give (section 3.1).
    pub members: HashMap<JobKey, BTreeSet<(ObjectKind, String)>>,
}

/// How the store names objects and captured pods to the engine's
/// [`classify_wasm::Linker`], which knows what is read together (sections 4 and 11).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Linked {
    /// A stored object.
    Object(ObjectKind, Arc<ObjectKey>),
    /// A captured pod: `(TrainJob UID, pod UID)`.
    Captured(Arc<(String, String)>),
}

// The linker keeps an object's key once per link it offers or seeks, and
// a pod seeks three: shared, the key's strings are held once, not four
// times (tens of megabytes at 100,000 pods).
impl Linked {
    /// The key of a stored object.
    pub fn of(object: &StoredObject) -> Linked {
        Linked::Object(
            object.kind,
            Arc::new((object.namespace.clone(), object.name.clone())),
        )
    }

    /// The key of a captured pod.
    pub fn captured(trainjob_uid: &str, pod_uid: &str) -> Linked {
        Linked::Captured(Arc::new((trainjob_uid.to_string(), pod_uid.to_string())))
    }
}

/// The engine's links of a stored object, from the fields its projection
/// kept for them.
pub(super) fn links_of(object: &StoredObject) -> Links {
    Links::of(
        object.kind.name(),
        &object.namespace,
        &object.name,
        &object.uid,
        &object.linking,
    )
}

/// The engine's links of a captured pod.
pub(super) fn links_of_captured(captured: &CapturedPod) -> Links {
    Links::of_captured_pod(&captured.trainjob_uid, &captured.pod.linking)
}

fn add<K: std::hash::Hash + Eq, V: Ord>(map: &mut HashMap<K, BTreeSet<V>>, key: K, value: V) {
    map.entry(key).or_default().insert(value);
}

fn remove<K: std::hash::Hash + Eq, V: Ord>(map: &mut HashMap<K, BTreeSet<V>>, key: K, value: &V) {
    if let Some(set) = map.get_mut(&key) {
        set.remove(value);
        if set.is_empty() {
            map.remove(&key);
        }
    }
}

/// The job an object belongs to by its own name and labels (section 3.1);
/// `None` for Workloads and Nodes, which belong to jobs through others.
pub fn own_job(object: &StoredObject) -> Option<String> {
    let name = match object.kind {
        ObjectKind::TrainJob | ObjectKind::JobSet | ObjectKind::TrainingRuntime => &object.name,
        ObjectKind::Pod => object.linking.jobset_name.as_ref().unwrap_or(&object.name),
        ObjectKind::Workload
        | ObjectKind::Node
        | ObjectKind::Namespace
        | ObjectKind::LocalQueue
        | ObjectKind::ClusterQueue => return None,
    };
    let submission = match object.kind {
        ObjectKind::TrainJob | ObjectKind::Pod => object.linking.submission.as_deref(),
        _ => None,
    };
    Some(classify_wasm::job_and_submission(name, object.linking.job_id.as_deref(), submission).0)
}

impl Store {
    pub(super) fn mark_trainjob(&mut self, trainjob_uid: &str) {
        if let Some((ns, name)) = self.trainjobs_by_uid.get(trainjob_uid).cloned() {
            if let Some(tj) = self.get(ObjectKind::TrainJob, &ns, &name).cloned() {
                self.mark_jobs_of(&tj);
            }
        }
    }

    /// Marks dirty every job whose observations `object` (as indexed now)
    /// can change.
    fn mark_jobs_of(&mut self, object: &StoredObject) {
        let affected = self.linker.affected_by(&Linked::of(object));
        self.mark_jobs(object, affected);
    }

    /// Marks dirty `object`'s own job and the jobs of the observed objects
    /// `affected` names (the engine's [`classify_wasm::Linker`] says which a change can
    /// alter).
    fn mark_jobs(&mut self, object: &StoredObject, affected: BTreeSet<Linked>) {
        if let Some(job) = own_job(object) {
            self.dirty.insert((object.namespace.clone(), job));
        }
        for key in affected {
            if let Some(affected) = self.linked(&key) {
                if let Some(job) = own_job(affected) {
                    self.dirty.insert((affected.namespace.clone(), job));
                }
            }
        }
    }

    /// Indexes an object, marking the jobs its coming can change.
    pub(super) fn index(&mut self, o: &StoredObject) {
        if let Some(job) = own_job(o) {
            add(
                &mut self.index.members,
                (o.namespace.clone(), job),
                (o.kind, o.name.clone()),
            );
        }
        if o.kind != ObjectKind::Namespace {
            let affected = self.linker.replace(Linked::of(o), Some(links_of(o)));
            self.mark_jobs(o, affected);
        }
    }

    /// Forgets an object's index, marking the jobs its going can change.
    pub(super) fn unindex(&mut self, o: &StoredObject) {
        if let Some(job) = own_job(o) {
            remove(
                &mut self.index.members,
                (o.namespace.clone(), job),
                &(o.kind, o.name.clone()),
            );
        }
        let affected = self.linker.replace(Linked::of(o), None);
        self.mark_jobs(o, affected);
    }
}
