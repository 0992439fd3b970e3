//! Kueue's LocalQueues and ClusterQueues as the server holds them, and the
//! queue facts of one TrainJob as one caller may see them.
//!
//! The queues are kept apart from the linked objects: no rule reads them
//! (the engine's queue facts are additive to the spec), so they are in no
//! snapshot, no `change` frame and no state directory. What a job waits for
//! is the engine's [`classify_wasm::queue::facts`]; this module only hands
//! it the objects, and says which of them the caller may read.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use classify_wasm::queue::board::{self, LocalQueueEntry, PendingEntry, QueuesPage};
use classify_wasm::queue::line::{self, Unavailable};
use classify_wasm::queue::{self, JobQueueFacts, Lookup, Preemptor, QueueFacts, QueueObjects};
use classify_wasm::wire::QueuesFrame;
use serde_json::Value;

use super::auth::{self, Authenticator, Identity};
use super::positions::{Fetched, Positions};
use super::projection::{ObjectKind, StoredObject};
use super::store::{EventBody, Linked, Store};

/// A queue object by kind, namespace (`""` for a ClusterQueue) and name.
type QueueKey = (ObjectKind, String, String);

/// The LocalQueues and ClusterQueues the watches have listed.
#[derive(Debug, Default)]
pub struct QueueTable {
    objects: BTreeMap<QueueKey, Held>,
    /// Lists in progress, by kind and scope.
    relists: HashMap<(ObjectKind, Option<String>), Vec<StoredObject>>,
    bytes: usize,
}

#[derive(Debug)]
struct Held {
    value: Value,
    /// The projection's length, what the object weighs here.
    bytes: usize,
}

impl QueueTable {
    /// Folds one watch event of a queue kind in; returns whether anything
    /// held changed.
    pub fn apply(&mut self, kind: ObjectKind, scope: &Option<String>, body: EventBody) -> bool {
        let scope_key = (kind, scope.clone());
        match body {
            EventBody::ListStarted => {
                self.relists.insert(scope_key, Vec::new());
                false
            }
            EventBody::ListPage(page) => {
                self.relists.entry(scope_key).or_default().extend(page);
                false
            }
            EventBody::ListDone => {
                let listed = self.relists.remove(&scope_key).unwrap_or_default();
                let mut changed = self.forget_scope(kind, scope);
                for object in listed {
                    changed |= self.upsert(object);
                }
                changed
            }
            EventBody::Upserted(object) => self.upsert(object),
            EventBody::Deleted(object) => self.remove(&(kind, object.namespace, object.name)),
            // Refused: what was read before is stale now.
            EventBody::Forbidden => {
                self.relists.remove(&scope_key);
                self.forget_scope(kind, scope)
            }
            EventBody::WatchEnded => false,
        }
    }

    fn upsert(&mut self, object: StoredObject) -> bool {
        let value: Value = match serde_json::from_str(&object.json) {
            Ok(value) => value,
            // A projection is always JSON the server wrote itself.
            Err(_) => return false,
        };
        let key = (object.kind, object.namespace, object.name);
        let held = Held {
            value,
            bytes: object.json.len() + key.1.len() + key.2.len(),
        };
        if self
            .objects
            .get(&key)
            .is_some_and(|h| h.value == held.value)
        {
            return false;
        }
        self.bytes += held.bytes;
        if let Some(previous) = self.objects.insert(key, held) {
            self.bytes -= previous.bytes;
        }
        true
    }

    fn remove(&mut self, key: &QueueKey) -> bool {
        match self.objects.remove(key) {
            Some(held) => {
                self.bytes -= held.bytes;
                true
            }
            None => false,
        }
    }

    /// Drops every object of `kind` in `scope` (a relist replaces them).
    fn forget_scope(&mut self, kind: ObjectKind, scope: &Option<String>) -> bool {
        let gone: Vec<QueueKey> = self
            .objects
            .keys()
            .filter(|(k, ns, _)| *k == kind && scope.as_ref().is_none_or(|s| s == ns))
            .cloned()
            .collect();
        let mut changed = false;
        for key in gone {
            changed |= self.remove(&key);
        }
        changed
    }

    /// How many queue objects are held.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether none is held: then no job has queue facts, as in the CLI.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Bytes of the projections held.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    fn of_kind<'t>(
        &'t self,
        kind: ObjectKind,
        namespace: &'t str,
    ) -> impl Iterator<Item = (&'t str, &'t Value)> + 't {
        self.objects
            .range((kind, namespace.to_string(), String::new())..)
            .take_while(move |((k, ns, _), _)| *k == kind && ns == namespace)
            .map(|((_, _, name), held)| (name.as_str(), &held.value))
    }
}

/// What one TrainJob's queue facts are read from, copied out of the store
/// so that the caller's access can be reviewed after its lock is released.
#[derive(Debug, Clone)]
pub struct Gathered {
    namespace: String,
    /// The TrainJob's name.
    pub name: String,
    trainjob: Value,
    /// Section 4's pick among its Workloads.
    workload: Option<Value>,
    /// Shared by every TrainJob of one [`gather_namespace`].
    local_queues: Arc<BTreeMap<String, Value>>,
    cluster_queues: Arc<BTreeMap<String, Value>>,
    /// The Workload that preempted it, when its conditions name one that is
    /// stored, with its namespace.
    preemptor: Option<(String, String, Value)>,
    /// What the job's history remembers of its last preemptor, for when its
    /// Workload is no longer stored ([`Gathered::remember`]).
    remembered: Option<Preemptor>,
}

/// The objects the queue facts of the TrainJob `name` in `namespace` read;
/// `None` without such a TrainJob, when it names no LocalQueue, or when no
/// queue object is held at all.
pub fn gather(store: &Store, namespace: &str, name: &str) -> Option<Gathered> {
    if store.queues.is_empty() {
        return None;
    }
    let trainjob = store.get(ObjectKind::TrainJob, namespace, name)?;
    let (local_queues, cluster_queues) = queues_seen_from(store, namespace);
    gather_one(store, trainjob, &local_queues, &cluster_queues)
}

/// [`gather`] for the first `max` TrainJobs of `namespace` that name a
/// LocalQueue, in name order, and whether there were more. The queue
/// objects are copied once for all of them.
pub fn gather_namespace(store: &Store, namespace: &str, max: usize) -> (Vec<Gathered>, bool) {
    if store.queues.is_empty() {
        return (Vec::new(), false);
    }
    let (local_queues, cluster_queues) = queues_seen_from(store, namespace);
    let mut queued = store
        .in_namespace(ObjectKind::TrainJob, namespace)
        .filter_map(|trainjob| gather_one(store, trainjob, &local_queues, &cluster_queues));
    let gathered: Vec<Gathered> = queued.by_ref().take(max).collect();
    let cut = queued.next().is_some();
    (gathered, cut)
}

type QueueMaps = (Arc<BTreeMap<String, Value>>, Arc<BTreeMap<String, Value>>);

/// The LocalQueues of `namespace` and every ClusterQueue.
fn queues_seen_from(store: &Store, namespace: &str) -> QueueMaps {
    let local_queues = store
        .queues
        .of_kind(ObjectKind::LocalQueue, namespace)
        .map(|(name, v)| (name.to_string(), v.clone()))
        .collect();
    let cluster_queues = store
        .queues
        .of_kind(ObjectKind::ClusterQueue, "")
        .map(|(name, v)| (name.to_string(), v.clone()))
        .collect();
    (Arc::new(local_queues), Arc::new(cluster_queues))
}

/// The Workloads the linker reads for `trainjob`.
fn workloads_of(store: &Store, trainjob: &StoredObject) -> Vec<Value> {
    store
        .linker
        .read_by(&Linked::of(trainjob))
        .iter()
        .filter(|key| matches!(key, Linked::Object(ObjectKind::Workload, _)))
        .filter_map(|key| store.linked_object(key))
        .map(|w| w.value())
        .collect()
}

/// What [`gather`] copies for `trainjob`; `None` when it names no
/// LocalQueue (so [`queue::facts`] would say nothing).
fn gather_one(
    store: &Store,
    trainjob: &StoredObject,
    local_queues: &Arc<BTreeMap<String, Value>>,
    cluster_queues: &Arc<BTreeMap<String, Value>>,
) -> Option<Gathered> {
    let workloads = workloads_of(store, trainjob);
    let workload = queue::pick_workload(&workloads).cloned();
    let value = trainjob.value();
    queue::queue_name(&value, workload.as_ref())?;
    let preemptor = workload
        .as_ref()
        .and_then(queue::preemptor_uid_of)
        .and_then(|uid| store.workload_by_uid(uid))
        .map(|w| (w.namespace.clone(), w.uid.clone(), w.value()));
    Some(Gathered {
        namespace: trainjob.namespace.clone(),
        name: trainjob.name.clone(),
        trainjob: value,
        workload,
        local_queues: local_queues.clone(),
        cluster_queues: cluster_queues.clone(),
        preemptor,
        remembered: None,
    })
}

/// The record of the Workload that preempted the TrainJob `name` in
/// `namespace`, when the Workload it is linked to names one by UID and that
/// preemptor is stored: what the hub keeps in the job's history.
pub fn stored_preemptor(store: &Store, namespace: &str, name: &str) -> Option<Preemptor> {
    let trainjob = store.get(ObjectKind::TrainJob, namespace, name)?;
    let workloads = workloads_of(store, trainjob);
    let uid = queue::preemptor_uid_of(queue::pick_workload(&workloads)?)?;
    Some(Preemptor::of(&store.workload_by_uid(uid)?.value()))
}

/// What the caller may read beyond the TrainJob's own namespace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Allowed {
    /// `list` on LocalQueues in the TrainJob's namespace.
    pub local_queue: bool,
    /// `get` on the ClusterQueue the LocalQueue names.
    pub cluster_queue: bool,
    /// The namespace of the preemptor, when it is another.
    pub preemptor_namespace: bool,
}

impl Allowed {
    /// Everything readable: no caller to ask for (auth off, the CLI).
    pub const ALL: Allowed = Allowed {
        local_queue: true,
        cluster_queue: true,
        preemptor_namespace: true,
    };
}

/// The objects of [`Gathered`] as one caller may read them.
struct AsAllowed<'g> {
    gathered: &'g Gathered,
    allowed: Allowed,
}

impl QueueObjects for AsAllowed<'_> {
    fn local_queue(&self, namespace: &str, name: &str) -> Lookup<'_> {
        // Only the TrainJob's own namespace is gathered; the caller may
        // see its TrainJobs, or it would not be asking, but its LocalQueues
        // are reviewed apart.
        match self.gathered.local_queues.get(name) {
            _ if !self.allowed.local_queue => Lookup::NotReadable,
            Some(v) if namespace == self.gathered.namespace => Lookup::Found(v),
            _ => Lookup::NotFound,
        }
    }

    fn cluster_queue(&self, name: &str) -> Lookup<'_> {
        match self.gathered.cluster_queues.get(name) {
            _ if !self.allowed.cluster_queue => Lookup::NotReadable,
            Some(v) => Lookup::Found(v),
            None => Lookup::NotFound,
        }
    }

    fn workload_by_uid(&self, uid: &str) -> Lookup<'_> {
        match &self.gathered.preemptor {
            Some((namespace, held_uid, v)) if held_uid == uid => {
                if *namespace == self.gathered.namespace || self.allowed.preemptor_namespace {
                    Lookup::Found(v)
                } else {
                    Lookup::NotReadable
                }
            }
            _ => Lookup::NotFound,
        }
    }

    fn remembered_preemptor(&self, uid: &str) -> Lookup<'_, Preemptor> {
        match &self.gathered.remembered {
            Some(p) if p.uid == uid => {
                if p.namespace == self.gathered.namespace || self.allowed.preemptor_namespace {
                    Lookup::Found(p)
                } else {
                    Lookup::NotReadable
                }
            }
            _ => Lookup::NotFound,
        }
    }
}

impl Gathered {
    /// The TrainJob's namespace, name and UID: its history's key.
    pub fn trainjob_key(&self) -> (&str, &str, &str) {
        let uid = self
            .trainjob
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("");
        (&self.namespace, &self.name, uid)
    }

    /// Hands it what the job's history remembers of its last preemptor,
    /// said when that preemptor's Workload is no longer stored.
    pub fn remember(&mut self, preemptor: Option<Preemptor>) {
        self.remembered = preemptor;
    }

    /// The namespace of the preemptor its facts would name, stored or
    /// remembered.
    fn preemptor_namespace(&self) -> Option<&str> {
        match (&self.preemptor, &self.remembered) {
            (Some((namespace, _, _)), _) => Some(namespace),
            (None, Some(p)) => Some(&p.namespace),
            (None, None) => None,
        }
    }

    /// The queue facts as a caller with `allowed` may read them.
    pub fn facts(&self, allowed: Allowed) -> Option<QueueFacts> {
        let objects = AsAllowed {
            gathered: self,
            allowed,
        };
        queue::facts(&self.trainjob, self.workload.as_ref(), &objects)
    }

    /// The facts as the caller may see them: `get` on the ClusterQueue
    /// the LocalQueue names is reviewed, and so is the preemptor's
    /// namespace when it is not the TrainJob's. `caller` is `None` when
    /// nobody is signed in (auth off).
    pub async fn facts_for(
        &self,
        auth: &Authenticator,
        caller: Option<(&str, &Identity)>,
    ) -> Result<Option<QueueFacts>, auth::Error> {
        let Some(everything) = self.facts(Allowed::ALL) else {
            return Ok(None);
        };
        let Some((token, identity)) = caller else {
            return Ok(Some(everything));
        };
        let local_queue = auth
            .may_list_local_queues(token, identity, &self.namespace)
            .await?;
        // Without the LocalQueue the facts stop there: no ClusterQueue is
        // named, so none is reviewed.
        let cluster_queue = match &everything.cluster_queue {
            Some(name) if local_queue => auth.may_get_cluster_queue(token, identity, name).await?,
            _ => false,
        };
        let preemptor_namespace = match self.preemptor_namespace() {
            Some(namespace) if namespace != self.namespace => {
                auth.may_see_namespace(token, identity, namespace, None, auth::Spend::Request)
                    .await?
            }
            _ => true,
        };
        Ok(self.facts(Allowed {
            local_queue,
            cluster_queue,
            preemptor_namespace,
        }))
    }

    /// `facts` with the Workload's place in line, when it waits in one and
    /// a cluster is there to ask: fetched from Kueue's visibility API
    /// ([`Positions`]) if the caller may `get` `localqueues/pendingworkloads`
    /// there, else said to be withheld.
    pub async fn with_position(
        &self,
        mut facts: QueueFacts,
        positions: &Positions,
        auth: &Authenticator,
        caller: Option<(&str, &Identity)>,
    ) -> Result<QueueFacts, auth::Error> {
        let Some(workload) = self.workload.as_ref().and_then(line::workload_name) else {
            return Ok(facts);
        };
        let Some((namespace, name)) = facts.local_queue.split_once('/') else {
            return Ok(facts);
        };
        if !line::waits_in_line(&facts) || namespace != self.namespace {
            return Ok(facts);
        }
        if let Some((token, identity)) = caller {
            if !auth
                .may_get_pending_workloads(token, identity, namespace, name)
                .await?
            {
                facts.position = Some(line::unavailable(Unavailable::Withheld, &facts));
                return Ok(facts);
            }
        }
        facts.position = match positions.list(namespace, name).await {
            Some(Fetched::Listed(list)) => Some(line::place(&list, &facts, workload)),
            Some(Fetched::Unavailable(why)) => Some(line::unavailable(why, &facts)),
            None => None,
        };
        Ok(facts)
    }
}

/// The most TrainJobs one `queues` frame carries, and its most bytes: a
/// namespace past either gets the first of them, marked `cut`.
pub const FRAME_MAX_JOBS: usize = 1000;
pub const FRAME_MAX_BYTES: usize = 1 << 20;

/// The `queues` frame of what [`gather_namespace`] gave (`gathered`, and
/// whether it was cut) as the caller may see it: each TrainJob's facts with
/// its place in line, within [`FRAME_MAX_BYTES`]. Empty when no queue
/// object is held (no Kueue, or its queue watches not granted).
pub async fn frame_for(
    gathered: (Vec<Gathered>, bool),
    positions: &Positions,
    auth: &Authenticator,
    caller: Option<(&str, &Identity)>,
) -> Result<QueuesFrame, auth::Error> {
    let (gathered, mut cut) = gathered;
    let mut jobs = Vec::with_capacity(gathered.len());
    let mut bytes = 0;
    for g in gathered {
        let Some(facts) = g.facts_for(auth, caller).await? else {
            continue;
        };
        let facts = g.with_position(facts, positions, auth, caller).await?;
        let job = JobQueueFacts {
            namespace: g.namespace.clone(),
            name: g.name.clone(),
            queue: facts,
        };
        bytes += serde_json::to_vec(&job).map_or(0, |b| b.len());
        if bytes > FRAME_MAX_BYTES {
            cut = true;
            break;
        }
        jobs.push(job);
    }
    Ok(QueuesFrame {
        jobs,
        cut,
        ..QueuesFrame::default()
    })
}

/// What a stream's `queues` frames have said so far: the last frame sent,
/// and the boards of its Queues page with how many times they changed. A
/// pure step, so that what is sent when is tested without a stream.
#[derive(Debug, Default)]
pub struct FeedState {
    last_sent: Option<String>,
    boards: QueuesPage,
    boards_changes: u64,
}

impl FeedState {
    /// The text of the frame to send now, given this tick's `frame` and
    /// `boards` ([`boards_for`]); `None` when it would say nothing new. A
    /// namespace without queues sends nothing until it has some.
    pub fn next(&mut self, mut frame: QueuesFrame, boards: QueuesPage) -> Option<String> {
        if boards != self.boards {
            self.boards = boards;
            self.boards_changes += 1;
        }
        frame.boards = self.boards_changes;
        let text = frame.to_json();
        let unchanged = match &self.last_sent {
            Some(sent) => *sent == text,
            None => frame.jobs.is_empty() && !frame.cut && frame.boards == 0,
        };
        if unchanged {
            return None;
        }
        self.last_sent = Some(text.clone());
        Some(text)
    }
}

/// The queue objects of a namespace, copied under the store's lock for
/// [`queues_page`], with each held TrainJob's Workload.
pub struct HeldQueues {
    namespace: String,
    local_queues: Arc<BTreeMap<String, Value>>,
    cluster_queues: Arc<BTreeMap<String, Value>>,
    /// Workload name → TrainJob name.
    trainjobs: BTreeMap<String, String>,
}

/// What [`boards_for`] reads of `namespace`: its LocalQueues and every
/// ClusterQueue, copied once; no TrainJob, as the boards name none.
pub fn hold_boards(store: &Store, namespace: &str) -> HeldQueues {
    let (local_queues, cluster_queues) = queues_seen_from(store, namespace);
    HeldQueues {
        namespace: namespace.to_string(),
        local_queues,
        cluster_queues,
        trainjobs: BTreeMap::new(),
    }
}

/// What [`queues_page`] reads of `namespace`: the queue objects, copied
/// once, and the Workload of each of its first [`FRAME_MAX_JOBS`] TrainJobs
/// that wait in a LocalQueue (section 4's pick, as for the facts).
pub fn hold_queues(store: &Store, namespace: &str) -> HeldQueues {
    let (local_queues, cluster_queues) = queues_seen_from(store, namespace);
    let trainjobs = store
        .in_namespace(ObjectKind::TrainJob, namespace)
        .filter_map(|trainjob| {
            let workloads = workloads_of(store, trainjob);
            let workload = queue::pick_workload(&workloads)?;
            queue::queue_name(&trainjob.value(), Some(workload))?;
            let name = line::workload_name(workload)?;
            Some((name.to_string(), trainjob.name.clone()))
        })
        .take(FRAME_MAX_JOBS)
        .collect();
    HeldQueues {
        namespace: namespace.to_string(),
        local_queues,
        cluster_queues,
        trainjobs,
    }
}

/// The Queues page of what [`hold_queues`] copied, as the caller may see
/// it: `list` on LocalQueues, `get` on each ClusterQueue and on
/// `localqueues/pendingworkloads`, each reviewed (all allowed when nobody
/// is signed in). A ClusterQueue whose quantities cannot be read is said
/// with its located error.
pub async fn queues_page(
    held: HeldQueues,
    positions: &Positions,
    auth: &Authenticator,
    caller: Option<(&str, &Identity)>,
) -> Result<QueuesPage, auth::Error> {
    page_of(held, Some(positions), auth, caller).await
}

/// The Queues page of what [`hold_boards`] copied, as the caller may see
/// it, without the pending lists: what a stream compares from one tick to
/// the next to tell its page that the bars or counts moved.
pub async fn boards_for(
    held: HeldQueues,
    auth: &Authenticator,
    caller: Option<(&str, &Identity)>,
) -> Result<QueuesPage, auth::Error> {
    page_of(held, None, auth, caller).await
}

/// [`queues_page`], with each LocalQueue's line when `lines` is given.
async fn page_of(
    held: HeldQueues,
    lines: Option<&Positions>,
    auth: &Authenticator,
    caller: Option<(&str, &Identity)>,
) -> Result<QueuesPage, auth::Error> {
    let namespace = held.namespace.as_str();
    let mut page = QueuesPage::default();
    if let Some((token, identity)) = caller {
        if !auth
            .may_list_local_queues(token, identity, namespace)
            .await?
        {
            page.withheld.push(format!(
                "LocalQueues withheld: you may not list localqueues in {namespace}"
            ));
            return Ok(page);
        }
    }
    let mut named = std::collections::BTreeSet::new();
    for (name, v) in held.local_queues.iter() {
        let board = board::local_queue_board(namespace, name, v);
        if let Some(cq) = &board.cluster_queue {
            named.insert(cq.clone());
        }
        let mut entry = LocalQueueEntry {
            board,
            pending: Vec::new(),
            pending_cut: false,
            pending_unavailable: None,
        };
        let Some(positions) = lines else {
            page.local_queues.push(entry);
            continue;
        };
        let allowed = match caller {
            Some((token, identity)) => {
                auth.may_get_pending_workloads(token, identity, namespace, name)
                    .await?
            }
            None => true,
        };
        // A caller who may not see the line costs no request for it.
        let listed = if allowed {
            positions.list(namespace, name).await
        } else {
            Some(Fetched::Unavailable(Unavailable::Withheld))
        };
        match listed {
            Some(Fetched::Listed(list)) => {
                entry.pending_cut = list.cut;
                entry.pending = list
                    .items
                    .iter()
                    .map(|item| PendingEntry {
                        workload: item.name.clone(),
                        train_job: held.trainjobs.get(&item.name).cloned(),
                        in_local_queue: item.position_in_local_queue.saturating_add(1),
                        in_cluster_queue: item.position_in_cluster_queue.saturating_add(1),
                        priority: item.priority,
                    })
                    .collect();
            }
            Some(Fetched::Unavailable(why)) => {
                entry.pending_unavailable = Some(line::unavailable_sentence(why, namespace));
            }
            // No cluster to ask (the positions have no client).
            None => {}
        }
        page.local_queues.push(entry);
    }
    for name in named {
        let allowed = match caller {
            Some((token, identity)) => auth.may_get_cluster_queue(token, identity, &name).await?,
            None => true,
        };
        match held.cluster_queues.get(&name) {
            _ if !allowed => page.withheld.push(format!(
                "ClusterQueue {name} withheld: you may not get clusterqueues/{name}"
            )),
            Some(v) => match board::cluster_queue_board(&name, v) {
                Ok(board) => page.cluster_queues.push(board),
                Err(e) => page.withheld.push(e.to_string()),
            },
            None => page.withheld.push(format!("ClusterQueue {name} not found")),
        }
    }
    Ok(page)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::serve::projection::project;
    use crate::serve::store::{StoreLimits, WatchEvent};
    use classify_wasm::queue::Wait;
    use serde_json::json;
    use std::time::Instant;

    fn stored(kind: ObjectKind, v: Value) -> StoredObject {
        project(kind, &v).expect("stored")
    }

    fn event(kind: ObjectKind, scope: Option<&str>, body: EventBody) -> WatchEvent {
        WatchEvent {
            kind,
            scope: scope.map(str::to_string),
            body,
            received: Instant::now(),
        }
    }

    fn local_queue(namespace: &str, name: &str) -> StoredObject {
        stored(
            ObjectKind::LocalQueue,
            json!({"metadata": {"name": name, "namespace": namespace},
                "spec": {"clusterQueue": "gpu-cq"},
                "status": {"pendingWorkloads": 3, "admittedWorkloads": 7}}),
        )
    }

    /// ClusterQueue `gpu-cq`: 64 GPUs of flavor a100, `reserved` of them
    /// reserved. Shared with the HTTP tests.
    pub(crate) fn cluster_queue_value(reserved: &str) -> Value {
        json!({"metadata": {"name": "gpu-cq"},
            "spec": {"resourceGroups": [{"coveredResources": ["nvidia.com/gpu"],
                "flavors": [{"name": "a100", "resources": [
                    {"name": "nvidia.com/gpu", "nominalQuota": "64"}]}]}]},
            "status": {"flavorsReservation": [{"name": "a100", "resources": [
                {"name": "nvidia.com/gpu", "total": reserved}]}]}})
    }

    fn cluster_queue(reserved: &str) -> StoredObject {
        stored(ObjectKind::ClusterQueue, cluster_queue_value(reserved))
    }

    fn trainjob(namespace: &str, name: &str, uid: &str) -> StoredObject {
        stored(
            ObjectKind::TrainJob,
            json!({"metadata": {"name": name, "namespace": namespace, "uid": uid,
                "labels": {"kueue.x-k8s.io/queue-name": "main"}},
                "spec": {"suspend": true}}),
        )
    }

    fn workload(namespace: &str, uid: &str, trainjob: (&str, &str), extra: Value) -> StoredObject {
        let mut w = json!({"metadata": {"name": format!("w-{uid}"), "namespace": namespace,
                "uid": uid, "labels": {"kueue.x-k8s.io/job-uid": trainjob.1},
                "ownerReferences": [{"kind": "TrainJob", "name": trainjob.0, "uid": trainjob.1}]},
            "spec": {"queueName": "main", "podSets": [{"name": "node", "count": 4,
                "template": {"spec": {"containers": [{"name": "node",
                    "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}}}]},
            "status": {"conditions": [{"type": "QuotaReserved", "status": "False",
                "reason": "Pending", "message": "couldn't assign flavors"}]}});
        if let (Some(w), Some(extra)) = (w.as_object_mut(), extra.as_object()) {
            for (k, v) in extra {
                w.insert(k.clone(), v.clone());
            }
        }
        stored(ObjectKind::Workload, w)
    }

    /// A store with team-a's TrainJob `llm` waiting for 32 GPUs, its
    /// LocalQueue, and the ClusterQueue with `reserved` GPUs reserved.
    fn store_with(reserved: &str, workload_extra: Value) -> Store {
        let mut store = Store::new(StoreLimits::default());
        let upsert = |kind, scope, object| event(kind, scope, EventBody::Upserted(object));
        for e in [
            upsert(
                ObjectKind::TrainJob,
                Some("team-a"),
                trainjob("team-a", "llm", "tj1"),
            ),
            upsert(
                ObjectKind::Workload,
                Some("team-a"),
                workload("team-a", "w1", ("llm", "tj1"), workload_extra),
            ),
            upsert(
                ObjectKind::LocalQueue,
                Some("team-a"),
                local_queue("team-a", "main"),
            ),
            upsert(ObjectKind::ClusterQueue, None, cluster_queue(reserved)),
        ] {
            let queue = e.kind.is_queue();
            let deltas = store.apply(e);
            assert_eq!(deltas.is_empty(), queue, "only queues make no deltas");
        }
        store
    }

    #[test]
    fn a_waiting_job_is_told_what_must_be_released() {
        let store = store_with("56", json!({}));
        let gathered = gather(&store, "team-a", "llm").expect("queues are held");
        let facts = gathered.facts(Allowed::ALL).expect("it names a LocalQueue");
        assert_eq!(facts.wait, Wait::Quota, "{facts:?}");
        assert_eq!(facts.local_queue, "team-a/main");
        assert!(
            facts.sentence.starts_with(
                "needs 32 nvidia.com/gpu; ClusterQueue gpu-cq has 8 of 64 free in flavor a100 (56 reserved); 24 more must be released"
            ),
            "{}",
            facts.sentence
        );
        // Released: it fits.
        let store = store_with("32", json!({}));
        let facts = gather(&store, "team-a", "llm")
            .and_then(|g| g.facts(Allowed::ALL))
            .expect("facts");
        assert_eq!(facts.wait, Wait::Fits, "{facts:?}");
    }

    #[test]
    fn a_cluster_queue_the_caller_may_not_get_is_withheld() {
        let store = store_with("56", json!({}));
        let gathered = gather(&store, "team-a", "llm").expect("gathered");
        let facts = gathered
            .facts(Allowed {
                cluster_queue: false,
                ..Allowed::ALL
            })
            .expect("facts");
        assert_eq!(facts.wait, Wait::ClusterQueueNotReadable);
        assert!(facts.room.is_empty(), "no quota shown: {facts:?}");
        assert!(!facts.sentence.contains("64"), "{}", facts.sentence);
        assert!(facts.sentence.contains("3 pending"), "{}", facts.sentence);
    }

    #[test]
    fn local_queues_the_caller_may_not_list_are_withheld_with_their_cluster_queue() {
        let store = store_with("56", json!({}));
        let gathered = gather(&store, "team-a", "llm").expect("gathered");
        let facts = gathered
            .facts(Allowed {
                local_queue: false,
                ..Allowed::ALL
            })
            .expect("facts");
        assert_eq!(facts.wait, Wait::LocalQueueNotReadable, "{facts:?}");
        assert_eq!(facts.cluster_queue, None, "{facts:?}");
        assert!(facts.room.is_empty(), "no quota shown: {facts:?}");
        assert!(!facts.sentence.contains("pending"), "{}", facts.sentence);
        assert!(facts.sentence.contains("team-a/main"), "{}", facts.sentence);
    }

    #[test]
    fn a_preemptor_is_named_only_where_the_caller_may_look() {
        let preempted = json!({"status": {"conditions": [
            {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "x"},
            {"type": "Preempted", "status": "True", "reason": "InClusterQueue",
             "message": "Preempted to accommodate a workload (UID: wb, JobUID: tjb) due to prioritization in the ClusterQueue"}]}});
        let mut store = store_with("56", preempted);
        let mut preemptor = workload("team-b", "wb", ("llm-70b", "tjb"), json!({}));
        let mut value = preemptor.value();
        value["spec"]["priority"] = json!(1000);
        value["status"] = json!({"admission": {"clusterQueue": "gpu-cq"}});
        preemptor = stored(ObjectKind::Workload, value);
        store.apply(event(
            ObjectKind::Workload,
            Some("team-b"),
            EventBody::Upserted(preemptor),
        ));
        let gathered = gather(&store, "team-a", "llm").expect("gathered");
        let seen = gathered.facts(Allowed::ALL).expect("facts");
        assert_eq!(
            seen.preempted_by.as_deref(),
            Some("preempted by team-b/llm-70b (priority 1000) in ClusterQueue gpu-cq")
        );
        let hidden = gathered
            .facts(Allowed {
                preemptor_namespace: false,
                ..Allowed::ALL
            })
            .expect("facts");
        assert_eq!(
            hidden.preempted_by.as_deref(),
            Some("preempted by a workload in another namespace")
        );
    }

    #[test]
    fn a_remembered_preemptor_is_named_only_where_the_caller_may_look() {
        let preempted = json!({"status": {"conditions": [
            {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "x"},
            {"type": "Preempted", "status": "True", "reason": "InClusterQueue",
             "message": "Preempted to accommodate a workload (UID: wb, JobUID: tjb) due to prioritization in the ClusterQueue"}]}});
        let store = store_with("56", preempted);
        let mut gathered = gather(&store, "team-a", "llm").expect("gathered");
        assert_eq!(gathered.trainjob_key(), ("team-a", "llm", "tj1"));
        let said = |g: &Gathered, allowed| g.facts(allowed).expect("facts").preempted_by;
        assert_eq!(
            said(&gathered, Allowed::ALL).as_deref(),
            Some("preempted by a workload that is gone (UID wb)"),
            "nothing stored and nothing remembered"
        );
        let remembered = Preemptor {
            uid: "wb".into(),
            namespace: "team-b".into(),
            workload: "w-wb".into(),
            train_job: Some("llm-70b".into()),
            priority: Some(1000),
            cluster_queue: Some("gpu-cq".into()),
        };
        gathered.remember(Some(Preemptor {
            uid: "another".into(),
            ..remembered.clone()
        }));
        assert_eq!(
            said(&gathered, Allowed::ALL).as_deref(),
            Some("preempted by a workload that is gone (UID wb)"),
            "a remembered preemptor of another UID is not this one"
        );
        gathered.remember(Some(remembered));
        assert_eq!(
            said(&gathered, Allowed::ALL).as_deref(),
            Some("preempted by team-b/llm-70b (priority 1000) in ClusterQueue gpu-cq; its Workload has since gone")
        );
        assert_eq!(gathered.preemptor_namespace(), Some("team-b"));
        let hidden = Allowed {
            preemptor_namespace: false,
            ..Allowed::ALL
        };
        assert_eq!(
            said(&gathered, hidden).as_deref(),
            Some("preempted by a workload in another namespace")
        );
    }

    #[test]
    fn without_queues_no_job_has_facts() {
        let mut store = Store::new(StoreLimits::default());
        store.apply(event(
            ObjectKind::TrainJob,
            Some("team-a"),
            EventBody::Upserted(trainjob("team-a", "llm", "tj1")),
        ));
        assert!(gather(&store, "team-a", "llm").is_none());
        let store = store_with("0", json!({}));
        assert!(
            gather(&store, "team-a", "nope").is_none(),
            "no such TrainJob"
        );
    }

    #[test]
    fn a_relist_replaces_the_scope_and_a_refusal_forgets_it() {
        let mut table = QueueTable::default();
        let scope = Some("team-a".to_string());
        let kind = ObjectKind::LocalQueue;
        assert!(!table.apply(kind, &scope, EventBody::ListStarted));
        let page = vec![
            local_queue("team-a", "main"),
            local_queue("team-a", "batch"),
        ];
        assert!(!table.apply(kind, &scope, EventBody::ListPage(page)));
        assert!(table.apply(kind, &scope, EventBody::ListDone));
        assert_eq!(table.len(), 2);
        let bytes = table.bytes();
        assert!(bytes > 0);
        // The same object again changes nothing.
        assert!(!table.apply(
            kind,
            &scope,
            EventBody::Upserted(local_queue("team-a", "main"))
        ));
        // Another namespace's scope is untouched by team-a's relist.
        let other = Some("team-b".to_string());
        table.apply(
            kind,
            &other,
            EventBody::Upserted(local_queue("team-b", "main")),
        );
        table.apply(kind, &scope, EventBody::ListStarted);
        table.apply(
            kind,
            &scope,
            EventBody::ListPage(vec![local_queue("team-a", "main")]),
        );
        assert!(
            table.apply(kind, &scope, EventBody::ListDone),
            "batch is gone"
        );
        assert_eq!(table.len(), 2);
        assert_eq!(table.of_kind(kind, "team-a").count(), 1);
        assert!(table.apply(
            kind,
            &other,
            EventBody::Deleted(local_queue("team-b", "main"))
        ));
        assert!(table.apply(kind, &scope, EventBody::Forbidden));
        assert!(table.is_empty());
        assert_eq!(table.bytes(), 0, "every byte is given back");
    }

    /// The Queues page of a namespace with no pending job still moves live:
    /// a stream's feed says its boards changed when only a ClusterQueue's
    /// reservation did, and says nothing while nothing changes.
    #[tokio::test]
    async fn the_feed_says_the_boards_moved_when_only_a_cluster_queue_changed() {
        let auth = Authenticator::new(auth::AuthConfig::default(), None);
        let boards = |store: &Store| boards_for(hold_boards(store, "team-a"), &auth, None);
        let mut said = FeedState::default();
        let mut store = Store::new(StoreLimits::default());
        // Without queues there is nothing to say.
        let nothing = boards(&store).await.expect("boards");
        assert_eq!(said.next(QueuesFrame::default(), nothing), None);
        let upsert = |kind, scope, object| event(kind, scope, EventBody::Upserted(object));
        store.apply(upsert(
            ObjectKind::LocalQueue,
            Some("team-a"),
            local_queue("team-a", "main"),
        ));
        store.apply(upsert(ObjectKind::ClusterQueue, None, cluster_queue("8")));
        let first = boards(&store).await.expect("boards");
        assert_eq!(first.cluster_queues.len(), 1, "{first:?}");
        let text = said
            .next(QueuesFrame::default(), first.clone())
            .expect("the queues appeared");
        let frame = QueuesFrame::parse(&text).expect("a frame");
        assert_eq!((frame.jobs.len(), frame.boards), (0, 1));
        assert_eq!(said.next(QueuesFrame::default(), first.clone()), None);
        // Quota is reserved by a job of another namespace: only the bars move.
        store.apply(upsert(ObjectKind::ClusterQueue, None, cluster_queue("40")));
        let moved = boards(&store).await.expect("boards");
        assert_ne!(moved, first);
        let text = said
            .next(QueuesFrame::default(), moved.clone())
            .expect("the bars moved");
        assert_eq!(QueuesFrame::parse(&text).expect("a frame").boards, 2);
        assert_eq!(said.next(QueuesFrame::default(), moved.clone()), None);
        // The boards never carry a line: that is asked for with the page.
        assert!(moved
            .local_queues
            .iter()
            .all(|lq| lq.pending.is_empty() && lq.pending_unavailable.is_none()));
    }
}
