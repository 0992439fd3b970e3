//! The server's memory of the cluster: projections of every watched object,
//! the deleted pods' captured evidence, and which TrainJob UID each pod
//! belonged to.
//!
//! Like kube-runtime's reflector, the store is a plain synchronous state
//! machine: the watch loops ([`super::watch`]) turn the API's lists and
//! watch events into [`WatchEvent`]s, and [`Store::apply`] folds each one in
//! and says what changed as [`Delta`]s. Nothing here does IO, so every rule
//! (capture, the caps, re-lists after a gap, orphans across time) is unit
//! tested without a cluster.
//!
//! Every collection that grows with the cluster's history is bounded twice,
//! by count and by bytes ([`StoreLimits`]): a pod's kept annotations and
//! messages can be of any length, so a count alone bounds nothing. The
//! oldest entries go first, and [`CaptureEvictions`] counts them by the
//! bound that made them go.
//!
//! With `--all-namespaces` the Namespace objects are stored too (name and
//! UID only), so the set of namespaces served is the cluster's
//! ([`Store::knows_namespace`]). Until they have been listed, or when
//! listing them is forbidden, it falls back to the namespaces objects are
//! seen in.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::Instant;

use classify_wasm::{Link, Linker};

use super::projection::{ObjectKind, StoredObject};
use super::queues::QueueTable;

mod capture;
mod index;
mod limits;

pub use capture::CapturedPod;
use capture::CapturedQueue;
pub(crate) use index::Index;
use index::{links_of, links_of_captured};
pub use index::{own_job, Linked};
pub use limits::{parse_byte_size, ByteSizeError, CaptureEvictions, StoreLimits};

/// `(namespace, name)` of an object (namespace `""` for a Node).
pub type ObjectKey = (String, String);
/// `(namespace, job)`: one job of CLASSIFICATION.md section 3.1.
pub type JobKey = (String, String);

/// How many captured pods are kept per TrainJob (section 12).
pub const CAPTURED_PER_TRAINJOB: usize = 256;

/// What a watch loop saw, for one kind in one scope.
#[derive(Debug, Clone)]
pub struct WatchEvent {
    /// The kind watched.
    pub kind: ObjectKind,
    /// The namespace watched, or `None` for all namespaces (and for Nodes).
    pub scope: Option<String>,
    /// What happened.
    pub body: EventBody,
    /// When the watch loop received it (for the event-to-send latency).
    pub received: Instant,
}

/// One step of a watch loop.
#[derive(Debug, Clone)]
pub enum EventBody {
    /// A (re-)list begins: the pages that follow replace the scope's objects.
    ListStarted,
    /// One page of the list.
    ListPage(Vec<StoredObject>),
    /// The list is complete: objects of the scope missing from it are gone.
    ListDone,
    /// An object was added or modified.
    Upserted(StoredObject),
    /// An object was deleted; this is its last state.
    Deleted(StoredObject),
    /// The watch stream ended (expired, dropped, or `410 Gone`).
    WatchEnded,
    /// The list was refused with `403 Forbidden`.
    Forbidden,
}

/// What an applied event changed.
#[derive(Debug, Clone, PartialEq)]
pub enum Delta {
    /// An object was added or changed.
    Upsert(Arc<StoredObject>),
    /// An object is gone.
    Delete(Arc<StoredObject>),
    /// A deleted pod was captured.
    Captured(Arc<CapturedPod>),
    /// A captured pod was dropped (a cap, or its TrainJob is gone).
    CapturedDropped {
        /// The TrainJob's namespace.
        namespace: String,
        /// The TrainJob's UID.
        trainjob_uid: String,
        /// The dropped pod's UID.
        pod_uid: String,
    },
    /// A watch of `kind` in `scope` ended; streams that depend on it close.
    WatchInterrupted {
        /// The kind whose watch ended.
        kind: ObjectKind,
        /// Its scope.
        scope: Option<String>,
    },
    /// Whether Nodes can be read changed.
    NodesReadable(bool),
}

/// Whether the Namespace objects are known (`--all-namespaces` only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NamespaceList {
    /// Not listed yet (or not watched at all).
    Pending,
    /// Listed: the stored Namespace objects are the namespaces that exist.
    Listed,
    /// Listing them is forbidden.
    Forbidden,
}

/// The server's memory of the cluster. See the module docs.
#[derive(Debug)]
pub struct Store {
    limits: StoreLimits,
    pub(super) objects: HashMap<ObjectKind, BTreeMap<ObjectKey, Arc<StoredObject>>>,
    /// Lists in progress, by kind and scope.
    relists: HashMap<(ObjectKind, Option<String>), Vec<StoredObject>>,
    /// Scopes whose first list has completed.
    synced: HashSet<(ObjectKind, Option<String>)>,
    /// Captured pods by TrainJob UID, oldest first. Ordered, so a
    /// namespace's snapshot lists them in the same order on every run.
    captured: BTreeMap<String, CapturedQueue>,
    /// The TrainJob UID of every captured pod by capture order, for the
    /// global caps.
    capture_order: BTreeMap<u64, String>,
    next_capture: u64,
    /// Bytes of every captured pod.
    captured_bytes: usize,
    capture_evictions: CaptureEvictions,
    namespace_list: NamespaceList,
    /// The TrainJob UID each pod (by UID) belonged to when the server first
    /// saw it read for one. A pod whose TrainJob is gone stays an orphan.
    pod_owner: HashMap<String, String>,
    /// Live TrainJobs by UID.
    pub(super) trainjobs_by_uid: HashMap<String, ObjectKey>,
    pub(super) index: Index,
    /// What is read together: every stored object (not Namespaces) and
    /// every captured pod.
    pub(super) linker: Linker<Linked>,
    nodes_readable: bool,
    watch_restarts: u64,
    /// Jobs whose observations may have changed since the last `take_dirty`.
    dirty: BTreeSet<JobKey>,
    /// Kinds whose objects were restored from the state directory: their
    /// first list is a re-list, so a restored pod missing from it is
    /// captured across the gap, as after a `410 Gone`.
    restored_kinds: HashSet<ObjectKind>,
    /// `(pod UID, TrainJob UID or None when forgotten)` since the last
    /// [`Store::take_owner_changes`]; recorded only when the state
    /// directory mirrors them ([`Store::track_owner_changes`]).
    owner_changes: Option<Vec<(String, Option<String>)>>,
    /// LocalQueues and ClusterQueues, for the queue facts only: linked to
    /// nothing, and in no delta.
    pub(super) queues: QueueTable,
}

impl Store {
    /// An empty store.
    pub fn new(limits: StoreLimits) -> Self {
        Store {
            limits,
            objects: HashMap::new(),
            relists: HashMap::new(),
            synced: HashSet::new(),
            captured: BTreeMap::new(),
            capture_order: BTreeMap::new(),
            next_capture: 0,
            captured_bytes: 0,
            capture_evictions: CaptureEvictions::default(),
            namespace_list: NamespaceList::Pending,
            pod_owner: HashMap::new(),
            trainjobs_by_uid: HashMap::new(),
            index: Index::default(),
            linker: Linker::new(),
            queues: QueueTable::default(),
            nodes_readable: true,
            watch_restarts: 0,
            dirty: BTreeSet::new(),
            restored_kinds: HashSet::new(),
            owner_changes: None,
        }
    }

    /// Records pod ownership changes for [`Store::take_owner_changes`].
    pub fn track_owner_changes(&mut self) {
        self.owner_changes.get_or_insert_with(Vec::new);
    }

    /// The pod ownership changes since the last call, in order (empty
    /// unless tracked).
    pub fn take_owner_changes(&mut self) -> Vec<(String, Option<String>)> {
        self.owner_changes
            .as_mut()
            .map(std::mem::take)
            .unwrap_or_default()
    }

    /// Puts back what the state directory held, before the first list:
    /// the last seen objects (those `in_scope` accepts), the pods' owners
    /// and the captured pods in capture order. Returns the captured pods
    /// the limits in force drop (to drop in the database too). Every job
    /// touched is dirty.
    pub fn restore(
        &mut self,
        objects: Vec<StoredObject>,
        owners: Vec<(String, String)>,
        captured: Vec<CapturedPod>,
        in_scope: impl Fn(&StoredObject) -> bool,
    ) -> Vec<Delta> {
        let mut ignored = Vec::new();
        let (objects, out_of_scope): (Vec<_>, Vec<_>) = objects.into_iter().partition(&in_scope);
        for object in out_of_scope {
            // Not watched any more: no list would ever remove it.
            ignored.push(Delta::Delete(Arc::new(object)));
        }
        let pod_uids: HashSet<String> = objects
            .iter()
            .filter(|o| o.kind == ObjectKind::Pod)
            .map(|o| o.uid.clone())
            .collect();
        for (pod_uid, trainjob_uid) in owners {
            if pod_uids.contains(&pod_uid) {
                self.pod_owner.insert(pod_uid, trainjob_uid);
            }
        }
        // TrainJobs first, so pods find theirs.
        let (trainjobs, others): (Vec<_>, Vec<_>) = objects
            .into_iter()
            .partition(|o| o.kind == ObjectKind::TrainJob);
        let mut upserted = Vec::new();
        for object in trainjobs.into_iter().chain(others) {
            self.restored_kinds.insert(object.kind);
            self.upsert(object, &mut upserted);
        }
        let mut deltas: Vec<Delta> = ignored;
        for entry in captured {
            if !self.trainjobs_by_uid.contains_key(&entry.trainjob_uid) {
                // Its TrainJob is gone: in memory it would have been dropped.
                deltas.push(Delta::CapturedDropped {
                    namespace: entry.namespace.clone(),
                    trainjob_uid: entry.trainjob_uid.clone(),
                    pod_uid: entry.pod.uid.clone(),
                });
                continue;
            }
            let dropped = Delta::CapturedDropped {
                namespace: entry.namespace.clone(),
                trainjob_uid: entry.trainjob_uid.clone(),
                pod_uid: entry.pod.uid.clone(),
            };
            let trainjob_uid = entry.trainjob_uid.clone();
            if !self.keep_captured(Arc::new(entry), false, &mut deltas) {
                deltas.push(dropped);
            }
            self.mark_trainjob(&trainjob_uid);
        }
        self.enforce_total_capture_bounds(&mut deltas);
        // Restoring is no news for the store's own delta consumers, only
        // the drops are: the database must forget those too.
        deltas.retain(|d| matches!(d, Delta::CapturedDropped { .. } | Delta::Delete(_)));
        deltas
    }

    /// Folds one watch event in; returns what changed.
    pub fn apply(&mut self, event: WatchEvent) -> Vec<Delta> {
        if event.kind.is_queue() {
            // No scope of theirs is awaited for readiness, so none is marked.
            self.queues.apply(event.kind, &event.scope, event.body);
            return Vec::new();
        }
        let mut deltas = Vec::new();
        let scope_key = (event.kind, event.scope.clone());
        match event.body {
            EventBody::ListStarted => {
                self.relists.insert(scope_key, Vec::new());
            }
            EventBody::ListPage(page) => self.relists.entry(scope_key).or_default().extend(page),
            EventBody::ListDone => {
                let listed = self.relists.remove(&scope_key).unwrap_or_default();
                let is_relist =
                    self.synced.contains(&scope_key) || self.restored_kinds.contains(&event.kind);
                let listed_keys: HashSet<ObjectKey> = listed
                    .iter()
                    .map(|o| (o.namespace.clone(), o.name.clone()))
                    .collect();
                let vanished: Vec<ObjectKey> = self
                    .objects
                    .get(&event.kind)
                    .into_iter()
                    .flat_map(|m| m.keys())
                    .filter(|(ns, _)| event.scope.as_ref().is_none_or(|s| s == ns))
                    .filter(|key| !listed_keys.contains(*key))
                    .cloned()
                    .collect();
                for key in vanished {
                    // Deleted while the watch was down: the cached state is
                    // the last the server saw.
                    self.remove(event.kind, &key, None, is_relist, &mut deltas);
                }
                for object in listed {
                    self.upsert(object, &mut deltas);
                }
                self.synced.insert(scope_key);
                if event.kind == ObjectKind::Namespace {
                    self.namespace_list = NamespaceList::Listed;
                }
                if event.kind == ObjectKind::Node && !self.nodes_readable {
                    self.nodes_readable = true;
                    deltas.push(Delta::NodesReadable(true));
                }
            }
            EventBody::Upserted(object) => self.upsert(object, &mut deltas),
            EventBody::Deleted(object) => {
                let key = (object.namespace.clone(), object.name.clone());
                self.remove(event.kind, &key, Some(object), false, &mut deltas);
            }
            EventBody::WatchEnded => {
                self.watch_restarts += 1;
                deltas.push(Delta::WatchInterrupted {
                    kind: event.kind,
                    scope: event.scope,
                });
            }
            EventBody::Forbidden => {
                self.relists.remove(&scope_key);
                // A scope that cannot be listed counts as synced: readiness
                // must not wait for a permission that will not come.
                self.synced.insert(scope_key);
                if event.kind == ObjectKind::Namespace {
                    // Fall back to the namespaces objects are seen in; the
                    // Namespaces read before are stale now.
                    self.namespace_list = NamespaceList::Forbidden;
                    let keys: Vec<ObjectKey> = self
                        .objects
                        .get(&ObjectKind::Namespace)
                        .map(|m| m.keys().cloned().collect())
                        .unwrap_or_default();
                    for key in keys {
                        self.remove(ObjectKind::Namespace, &key, None, false, &mut deltas);
                    }
                }
                if event.kind == ObjectKind::Node && self.nodes_readable {
                    self.nodes_readable = false;
                    deltas.push(Delta::NodesReadable(false));
                    // Nodes read before the permission went are stale now.
                    let keys: Vec<ObjectKey> = self
                        .objects
                        .get(&ObjectKind::Node)
                        .map(|m| m.keys().cloned().collect())
                        .unwrap_or_default();
                    for key in keys {
                        self.remove(ObjectKind::Node, &key, None, false, &mut deltas);
                    }
                }
            }
        }
        deltas
    }

    /// Whether every scope in `expected` has completed its first list.
    pub fn synced(&self, expected: &[(ObjectKind, Option<String>)]) -> bool {
        expected.iter().all(|s| self.synced.contains(s))
    }

    /// Whether Nodes can be read (no `403` on their last list).
    pub fn nodes_readable(&self) -> bool {
        self.nodes_readable
    }

    /// How many watch streams have ended since the start.
    pub fn watch_restarts(&self) -> u64 {
        self.watch_restarts
    }

    /// How many captured pods are held.
    pub fn captured_count(&self) -> usize {
        self.capture_order.len()
    }

    /// Bytes of the captured pods held (see [`CapturedPod::heap_bytes`]).
    pub fn captured_bytes(&self) -> usize {
        self.captured_bytes
    }

    /// Captured pods evicted since the start, by bound.
    pub fn capture_evictions(&self) -> CaptureEvictions {
        self.capture_evictions
    }

    /// The limits in force.
    pub fn limits(&self) -> StoreLimits {
        self.limits
    }

    /// Whether the Namespace objects have been listed, or are forbidden.
    pub fn namespace_list(&self) -> NamespaceList {
        self.namespace_list
    }

    /// Whether `namespace` exists as far as the server knows: a listed
    /// Namespace object, or (before they are listed, or when listing them
    /// is forbidden) an object stored in it. Costs a few map lookups and
    /// allocates nothing.
    pub fn knows_namespace(&self, namespace: &str) -> bool {
        match self.namespace_list {
            NamespaceList::Listed => self
                .objects
                .get(&ObjectKind::Namespace)
                .is_some_and(|m| m.contains_key(&(String::new(), namespace.to_string()))),
            NamespaceList::Pending | NamespaceList::Forbidden => self.holds_objects_in(namespace),
        }
    }

    /// The namespaces that exist as far as the server knows (see
    /// [`Store::knows_namespace`]).
    pub fn known_namespaces(&self) -> BTreeSet<String> {
        match self.namespace_list {
            NamespaceList::Listed => self
                .objects
                .get(&ObjectKind::Namespace)
                .into_iter()
                .flat_map(|m| m.values().map(|o| o.name.clone()))
                .collect(),
            NamespaceList::Pending | NamespaceList::Forbidden => self.namespaces(),
        }
    }

    /// Whether any namespaced object is stored in `namespace`.
    pub fn holds_objects_in(&self, namespace: &str) -> bool {
        let start = (namespace.to_string(), String::new());
        self.objects
            .iter()
            .filter(|(kind, _)| kind.namespaced())
            .any(|(_, m)| {
                m.range(start.clone()..)
                    .next()
                    .is_some_and(|((ns, _), _)| ns == namespace)
            })
    }

    /// The jobs whose observations may have changed since the last call.
    pub fn take_dirty(&mut self) -> BTreeSet<JobKey> {
        std::mem::take(&mut self.dirty)
    }

    /// One stored object.
    pub fn get(&self, kind: ObjectKind, namespace: &str, name: &str) -> Option<&Arc<StoredObject>> {
        let namespace = if kind.namespaced() { namespace } else { "" };
        self.objects
            .get(&kind)?
            .get(&(namespace.to_string(), name.to_string()))
    }

    /// Every stored object of `kind` in `namespace` (all Nodes for Nodes).
    pub fn in_namespace<'s>(
        &'s self,
        kind: ObjectKind,
        namespace: &'s str,
    ) -> impl Iterator<Item = &'s Arc<StoredObject>> + 's {
        let namespace = if kind.namespaced() { namespace } else { "" };
        self.objects.get(&kind).into_iter().flat_map(move |m| {
            m.range((namespace.to_string(), String::new())..)
                .take_while(move |((ns, _), _)| ns == namespace)
                .map(|(_, o)| o)
        })
    }

    /// The namespaces any stored object lives in.
    pub fn namespaces(&self) -> BTreeSet<String> {
        self.objects
            .iter()
            .filter(|(k, _)| k.namespaced())
            .flat_map(|(_, m)| m.keys().map(|(ns, _)| ns.clone()))
            .collect()
    }

    /// The captured pods of one TrainJob, oldest first.
    pub fn captured_for(&self, trainjob_uid: &str) -> impl Iterator<Item = &Arc<CapturedPod>> {
        self.captured
            .get(trainjob_uid)
            .into_iter()
            .flat_map(|q| q.entries.iter().map(|(_, c, _)| c))
    }

    /// Every captured pod whose TrainJob is in `namespace`.
    pub fn captured_in<'s>(
        &'s self,
        namespace: &'s str,
    ) -> impl Iterator<Item = &'s Arc<CapturedPod>> + 's {
        self.captured
            .values()
            .flat_map(|q| q.entries.iter().map(|(_, c, _)| c))
            .filter(move |c| c.namespace == namespace)
    }

    /// Whether the server knows `object` to belong to a TrainJob that is
    /// gone, whatever TrainJob of the same name exists now (section 11's
    /// last paragraph): a pod by the UID it was first read for, a JobSet or
    /// runtime copy by its TrainJob owner references.
    pub fn belongs_to_gone_trainjob(&self, object: &StoredObject) -> bool {
        match object.kind {
            ObjectKind::Pod => self
                .pod_owner
                .get(&object.uid)
                .is_some_and(|owner| !self.trainjobs_by_uid.contains_key(owner)),
            ObjectKind::JobSet | ObjectKind::TrainingRuntime => {
                !object.linking.trainjob_owners.is_empty()
                    && !object
                        .linking
                        .trainjob_owners
                        .iter()
                        .any(|uid| self.trainjobs_by_uid.contains_key(uid))
            }
            _ => false,
        }
    }

    /// The TrainJob UID a pod is remembered to belong to.
    pub fn pod_owner(&self, pod_uid: &str) -> Option<&str> {
        self.pod_owner.get(pod_uid).map(String::as_str)
    }

    /// The stored object a link key names (`None` for a captured pod).
    /// The stored object a link key names.
    pub fn linked_object(&self, key: &Linked) -> Option<&Arc<StoredObject>> {
        self.linked(key)
    }

    /// The stored Workload of UID `uid`, in any namespace (a preemptor a
    /// condition names). Scans the Workloads: asked only for a job whose
    /// Workload says it was preempted.
    pub fn workload_by_uid(&self, uid: &str) -> Option<&Arc<StoredObject>> {
        self.objects
            .get(&ObjectKind::Workload)?
            .values()
            .find(|w| w.uid == uid)
    }

    fn linked(&self, key: &Linked) -> Option<&Arc<StoredObject>> {
        match key {
            Linked::Object(kind, key) => self.get(*kind, &key.0, &key.1),
            Linked::Captured(..) => None,
        }
    }

    /// The captured pod `pod_uid` kept for the TrainJob `trainjob_uid`,
    /// with its capture sequence number.
    pub fn captured_entry(
        &self,
        trainjob_uid: &str,
        pod_uid: &str,
    ) -> Option<(u64, &Arc<CapturedPod>)> {
        self.captured
            .get(trainjob_uid)?
            .entries
            .iter()
            .find(|(_, c, _)| c.pod.uid == pod_uid)
            .map(|(seq, c, _)| (*seq, c))
    }

    /// The captured pod a link key names.
    pub fn linked_captured(&self, key: &Linked) -> Option<&Arc<CapturedPod>> {
        match key {
            Linked::Captured(key) => self.captured_for(&key.0).find(|c| c.pod.uid == key.1),
            Linked::Object(..) => None,
        }
    }

    /// The live TrainJobs section 4 reads `pod` for (the engine's
    /// [`Linker`]), the one its JobSet is named after first, then by name.
    /// The pod need not be stored any more.
    pub fn trainjobs_selecting(&self, pod: &StoredObject) -> Vec<Arc<StoredObject>> {
        // The indexed links when the pod is stored as it is; else read
        // its own (a deleted pod's last state, say).
        let stored = self
            .get(pod.kind, &pod.namespace, &pod.name)
            .filter(|stored| ***stored == *pod);
        let parsed;
        let links = match stored.and_then(|_| self.linker.links(&Linked::of(pod))) {
            Some(links) => links,
            None => {
                parsed = links_of(pod);
                &parsed
            }
        };
        let mut found: Vec<Arc<StoredObject>> = self
            .linker
            .trainjobs_seeked_by(links)
            .iter()
            .filter_map(|key| self.linked(key).cloned())
            .collect();
        // A stable sort: the JobSet's own TrainJob owns the pod first.
        found.sort_by_key(|tj| pod.linking.jobset_name.as_deref() != Some(tj.name.as_str()));
        found
    }

    /// The live TrainJobs of `object`'s namespace that read it (section 4,
    /// the engine's [`Linker`]): for a pod [`Store::trainjobs_selecting`],
    /// for a JobSet the TrainJob of its name, for a Workload the TrainJob
    /// of its job-uid. For the Inspect route.
    pub fn trainjobs_reading(&self, object: &StoredObject) -> Vec<Arc<StoredObject>> {
        if object.kind == ObjectKind::Pod {
            return self.trainjobs_selecting(object);
        }
        self.linker
            .trainjobs_reading(&Linked::of(object))
            .iter()
            .filter_map(|key| self.linked(key))
            .filter(|tj| tj.namespace == object.namespace)
            .cloned()
            .collect()
    }

    /// The live pods section 4 reads for `trainjob` (the engine's [`Linker`]).
    pub fn pods_selected_by(&self, trainjob: &StoredObject) -> Vec<Arc<StoredObject>> {
        self.linker
            .read_by(&Linked::of(trainjob))
            .iter()
            .filter(|key| matches!(key, Linked::Object(ObjectKind::Pod, _)))
            .filter_map(|key| self.linked(key).cloned())
            .collect()
    }

    fn upsert(&mut self, object: StoredObject, deltas: &mut Vec<Delta>) {
        let kind = object.kind;
        let key = (object.namespace.clone(), object.name.clone());
        let object = Arc::new(object);
        let previous = self
            .objects
            .entry(kind)
            .or_default()
            .insert(key.clone(), object.clone());
        if let Some(previous) = &previous {
            if **previous == *object {
                return;
            }
            self.unindex(previous);
            if kind == ObjectKind::TrainJob && previous.uid != object.uid {
                // Re-created under the same name while the watch missed the
                // deletion: the old TrainJob is gone.
                self.trainjob_gone(previous, deltas);
            }
        }
        self.index(&object);
        match kind {
            ObjectKind::TrainJob => {
                if !object.uid.is_empty() {
                    self.trainjobs_by_uid.insert(object.uid.clone(), key);
                }
                for pod in self.pods_selected_by(&object) {
                    self.remember_pod_owner(&pod);
                }
            }
            ObjectKind::JobSet => {
                // The pods named after the JobSet (section 4's jobset-name).
                let named = Link::Name {
                    namespace: object.namespace.as_str().into(),
                    name: object.name.as_str().into(),
                };
                let pods: Vec<Arc<StoredObject>> = self
                    .linker
                    .seeking(&named)
                    .filter(|key| matches!(key, Linked::Object(ObjectKind::Pod, _)))
                    .filter_map(|key| self.linked(key).cloned())
                    .collect();
                for pod in pods {
                    self.remember_pod_owner(&pod);
                }
            }
            ObjectKind::Pod => self.remember_pod_owner(&object),
            _ => {}
        }
        deltas.push(Delta::Upsert(object));
    }

    /// Records the TrainJob a pod belongs to, once: its JobSet's TrainJob
    /// owner when the JobSet is known, else the live TrainJob that reads it.
    fn remember_pod_owner(&mut self, pod: &StoredObject) {
        if pod.uid.is_empty() || self.pod_owner.contains_key(&pod.uid) {
            return;
        }
        let from_jobset = pod
            .linking
            .jobset_name
            .as_ref()
            .and_then(|name| self.get(ObjectKind::JobSet, &pod.namespace, name))
            .and_then(|jobset| jobset.linking.trainjob_owners.first().cloned());
        let owner = from_jobset.or_else(|| {
            self.trainjobs_selecting(pod)
                .into_iter()
                .map(|tj| tj.uid.clone())
                .find(|uid| !uid.is_empty())
        });
        if let Some(owner) = owner {
            if let Some(changes) = &mut self.owner_changes {
                changes.push((pod.uid.clone(), Some(owner.clone())));
            }
            self.pod_owner.insert(pod.uid.clone(), owner);
        }
    }

    fn remove(
        &mut self,
        kind: ObjectKind,
        key: &ObjectKey,
        last_state: Option<StoredObject>,
        across_gap: bool,
        deltas: &mut Vec<Delta>,
    ) {
        let Some(stored) = self.objects.get_mut(&kind).and_then(|m| m.remove(key)) else {
            return;
        };
        self.unindex(&stored);
        match kind {
            ObjectKind::Pod => {
                let last = match last_state {
                    Some(last) if last.uid == stored.uid => Arc::new(last),
                    _ => stored.clone(),
                };
                self.capture(last, across_gap, deltas);
                if self.pod_owner.remove(&stored.uid).is_some() {
                    if let Some(changes) = &mut self.owner_changes {
                        changes.push((stored.uid.clone(), None));
                    }
                }
            }
            ObjectKind::TrainJob => {
                if self.trainjobs_by_uid.get(&stored.uid) == Some(key) {
                    self.trainjobs_by_uid.remove(&stored.uid);
                }
                self.trainjob_gone(&stored, deltas);
            }
            _ => {}
        }
        deltas.push(Delta::Delete(stored));
    }

    /// Drops the evidence of a TrainJob that is gone.
    fn trainjob_gone(&mut self, trainjob: &StoredObject, deltas: &mut Vec<Delta>) {
        if let Some(queue) = self.captured.remove(&trainjob.uid) {
            self.captured_bytes -= queue.bytes;
            for (seq, captured, _) in queue.entries {
                self.capture_order.remove(&seq);
                self.linker
                    .remove(&Linked::captured(&captured.trainjob_uid, &captured.pod.uid));
                deltas.push(Delta::CapturedDropped {
                    namespace: captured.namespace.clone(),
                    trainjob_uid: captured.trainjob_uid.clone(),
                    pod_uid: captured.pod.uid.clone(),
                });
            }
        }
    }

    /// Bytes held by stored pods, and how many there are.
    pub fn pod_bytes(&self) -> (usize, usize) {
        let pods = self.objects.get(&ObjectKind::Pod);
        let count = pods.map_or(0, BTreeMap::len);
        let bytes = pods
            .into_iter()
            .flat_map(|m| m.iter())
            .map(|((ns, name), o)| o.heap_bytes() + ns.capacity() + name.capacity() + 64)
            .sum();
        (bytes, count)
    }
}

#[cfg(test)]
#[path = "store_tests.rs"]
mod tests;
