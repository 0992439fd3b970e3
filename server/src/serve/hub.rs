//! The hub: shared state between the watch loops, the store and the HTTP
//! side. It applies batches of watch events to the store, turns what changed
//! into `change` frames for the namespace streams, re-classifies the jobs
//! that changed, and tells job watchers.
//!
//! Lock order, to stay deadlock-free: `streams`, then `store`, then
//! `observations`, then `history`, then `state` (the database, innermost).
//! No lock is held across an `.await`.
//!
//! With a state directory ([`Hub::with_state_dir`]) each batch's store
//! changes are written in one transaction while `store` is still locked and
//! before the `change` frames go out, so nothing a client saw is missing
//! from the database; the history a batch's re-classification records is
//! written in a second transaction right after it. A failed write stops
//! persisting and ends the ingest loop ([`Hub::state_failure`]), so the
//! server exits rather than run on with a database behind its memory.
//!
//! Observation changes are recorded in the [`History`] with the time the
//! hub's [`Clock`] gives (tests pass a fixed one).
//!
//! Namespaces cost nothing unless they exist: a namespace the server does
//! not know ([`Hub::watches`]) gets no stream, and a namespace's stream
//! (its replay ring and cached snapshot) is freed as soon as it has neither
//! a subscriber nor an object, or its namespace is gone. Each ring is
//! bounded by frames and by bytes. The `snapshot` frame a subscriber starts
//! from is built once per namespace version and shared by every subscriber
//! at that version.

use std::borrow::Cow;
use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, RwLock, RwLockReadGuard, RwLockWriteGuard};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::body::Bytes;
use classify_wasm::wire::{self, ChangeFrame, Deleted, DroppedCapture};
use classify_wasm::{Mode, Observation, Piece};
use tokio::sync::broadcast;

use super::health::{HealthBoard, UNREADY_AFTER};
use super::history::{Change, History, HistoryKey, HistoryLimits};
use super::metrics::{Metrics, RingBound};
use super::notify::Notifier;
use super::persist::{self, Op, StateDir};
use super::projection::{ObjectKind, StoredObject};
use super::queues;
use super::store::{CapturedPod, Delta, JobKey, NamespaceList, Store, StoreLimits, WatchEvent};
use super::view::{self, SnapshotHeader};

mod publish;
mod record;
use publish::new_stream;
use record::{history_ops, store_ops};

/// How many `change` frames each namespace keeps for `Last-Event-ID`
/// resumes (their bytes are bounded by
/// [`StoreLimits::replay_bytes_per_namespace`]).
const RING_FRAMES: usize = 1024;
/// How many frames a slow SSE client may fall behind before it is dropped.
const CLIENT_BACKLOG: usize = 256;

/// One server-sent event, encoded once and shared by every client.
#[derive(Debug, Clone)]
pub struct Frame {
    /// The event id.
    pub id: u64,
    /// The whole event, `id:`, `event:` and `data:` lines included.
    pub bytes: Bytes,
    /// When the oldest watch event in it arrived.
    pub born: Instant,
}

/// Encodes one SSE event whose data is a single line of JSON.
pub fn encode_event(id: Option<u64>, event: &str, data: &str) -> Bytes {
    let mut out = String::with_capacity(data.len() + 48);
    if let Some(id) = id {
        out.push_str("id: ");
        out.push_str(&id.to_string());
        out.push('\n');
    }
    out.push_str("event: ");
    out.push_str(event);
    out.push_str("\ndata: ");
    out.push_str(data);
    out.push_str("\n\n");
    Bytes::from(out)
}

/// What job watchers hear about.
#[derive(Debug, Clone)]
pub enum JobNews {
    /// These jobs' observations were recomputed.
    Changed(Arc<BTreeSet<JobKey>>),
    /// A watch of a kind a job depends on ended in `namespace` (`None`: in
    /// every namespace).
    WatchInterrupted(Option<String>),
}

#[derive(Debug)]
struct NamespaceStream {
    /// Frames with an id above `floor` are all in `ring`.
    floor: u64,
    /// The namespace's version: the id of its last frame (`floor` before
    /// the first). Its state changes only with a frame, so a snapshot built
    /// at a version holds until the next frame of this namespace.
    version: u64,
    ring: VecDeque<Frame>,
    /// Bytes of the frames in `ring`.
    ring_bytes: usize,
    tx: broadcast::Sender<Frame>,
    /// The last start built (a `snapshot` event and its `rows`).
    start: Option<StartFrames>,
}

/// How a stream starts at one version: the `rows` event, when there is
/// one, then the `snapshot` event. The `rows` frame has no id, so a client
/// that drops before the snapshot resumes from no id, or the one it had,
/// and gets a start again rather than the changes after a snapshot it never
/// received.
///
/// The `snapshot` event is kept in pieces ([`classify_wasm::SnapshotPieces`]):
/// its objects' texts are the store's own, shared, not copied. While a
/// namespace changes, clients that join a moment apart each get a start of
/// their own; sending a whole namespace to each, a copy per start was most
/// of the server's memory at scale (98 MB of 530 MB with 1,000 clients).
#[derive(Debug, Clone)]
struct StartFrames {
    version: u64,
    rows: Option<Bytes>,
    /// The event's first piece (its `id:`, `event:` and the document's
    /// start), then the rest.
    snapshot: Bytes,
    snapshot_rest: Arc<[Bytes]>,
}

/// A projection's text as the bytes of a frame, without a copy.
struct SharedText(Arc<str>);

impl AsRef<[u8]> for SharedText {
    fn as_ref(&self) -> &[u8] {
        self.0.as_bytes()
    }
}

impl StartFrames {
    fn of(version: u64, pieces: Vec<Piece<Arc<str>>>) -> StartFrames {
        // The rows are the engine's classification of the whole text, made
        // here and dropped.
        let text = Piece::joined(&pieces);
        let rows = view::namespace_rows(&text).map(|rows| encode_event(None, "rows", &rows));
        drop(text);
        let mut head = format!("id: {version}\nevent: snapshot\ndata: ");
        let mut pieces = pieces.into_iter().peekable();
        // The document's start (its header) joins the event's first lines.
        if let Some(Piece::Text(start)) = pieces.next_if(|p| matches!(p, Piece::Text(_))) {
            head.push_str(&start);
        }
        let mut chunks: Vec<Bytes> = pieces
            .map(|piece| match piece {
                Piece::Text(text) => Bytes::from(text),
                Piece::Object(object) => Bytes::from_owner(SharedText(object)),
            })
            .collect();
        chunks.push(Bytes::from_static(b"\n\n"));
        StartFrames {
            version,
            rows,
            snapshot: Bytes::from(head),
            snapshot_rest: chunks.into(),
        }
    }

    fn subscription(&self, live: LiveFrames) -> Subscription {
        Subscription {
            rows: self.rows.clone(),
            backlog: vec![Frame {
                id: self.version,
                bytes: self.snapshot.clone(),
                born: Instant::now(),
            }],
            snapshot_rest: self.snapshot_rest.clone(),
            live,
        }
    }
}

#[derive(Debug)]
struct Streams {
    /// The id of the last frame of any namespace. Ids start at the server's
    /// start time in microseconds, so they keep increasing across restarts
    /// and an id from an earlier run never resumes by mistake.
    last_id: u64,
    by_namespace: HashMap<String, NamespaceStream>,
}

/// What a `snapshots` subscriber gets: a start, then live frames.
#[derive(Debug)]
pub struct Subscription {
    /// The `rows` event to send before a `snapshot` backlog (none before a
    /// resume's `change` events): the snapshot's observations, classified
    /// by the engine here, for the page to draw first.
    pub rows: Option<Bytes>,
    /// Frames to send first: a `snapshot` event's first piece, or the
    /// missed `change` events of a resume.
    pub backlog: Vec<Frame>,
    /// The rest of the `snapshot` event `backlog` begins, to send right
    /// after it, in order (empty for a resume): pieces that share the
    /// store's texts.
    pub snapshot_rest: Arc<[Bytes]>,
    /// Live frames.
    pub live: LiveFrames,
}

/// A subscriber's live frames. Dropping it frees the namespace's stream
/// when that was the last subscriber and the namespace holds no object.
#[derive(Debug)]
pub struct LiveFrames {
    receiver: Option<broadcast::Receiver<Frame>>,
    hub: Arc<Hub>,
    namespace: String,
}

impl LiveFrames {
    /// The next live frame (see [`broadcast::Receiver::recv`]).
    pub async fn recv(&mut self) -> Result<Frame, broadcast::error::RecvError> {
        match self.receiver.as_mut() {
            Some(receiver) => receiver.recv().await,
            None => Err(broadcast::error::RecvError::Closed),
        }
    }
}

impl Drop for LiveFrames {
    fn drop(&mut self) {
        // Unsubscribe first, so the count the release sees excludes us.
        drop(self.receiver.take());
        self.hub.release_idle_stream(&self.namespace);
    }
}

/// Where the hub reads the time of an observation change from.
#[derive(Clone)]
pub struct Clock(Arc<dyn Fn() -> SystemTime + Send + Sync>);

impl Clock {
    /// The system clock.
    pub fn system() -> Clock {
        Clock(Arc::new(SystemTime::now))
    }

    /// A clock that reads `f`.
    pub fn from_fn(f: impl Fn() -> SystemTime + Send + Sync + 'static) -> Clock {
        Clock(Arc::new(f))
    }

    /// The time now.
    pub fn now(&self) -> SystemTime {
        (self.0)()
    }
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Clock")
    }
}

/// Which namespaces the server watches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Scope {
    /// These namespaces.
    Namespaces(Vec<String>),
    /// Every namespace.
    All,
}

/// The shared state of a running server.
#[derive(Debug)]
pub struct Hub {
    mode: Mode,
    scope: Scope,
    streams: Mutex<Streams>,
    store: RwLock<Store>,
    observations: RwLock<HashMap<JobKey, Arc<Vec<Observation>>>>,
    news: broadcast::Sender<JobNews>,
    /// The scopes that must have listed before the server is ready.
    expected: Vec<(ObjectKind, Option<String>)>,
    /// Every scope watched: those expected, and in Kueue mode the queues,
    /// which are additive and never hold readiness up.
    watched: Vec<(ObjectKind, Option<String>)>,
    /// Each watch's state and version, written by the watch loops.
    health: Arc<HealthBoard>,
    /// Bytes of frames each namespace's replay ring keeps.
    replay_bytes: usize,
    /// Bytes of frames every namespace's ring keeps together.
    replay_bytes_total: usize,
    /// Metrics.
    pub metrics: Metrics,
    /// Each object's observation changes.
    history: Mutex<History>,
    /// Where the time of a change is read.
    clock: Clock,
    /// The state directory's database, when there is one.
    state: Option<Mutex<StateDir>>,
    /// The first failed write to it; no write is tried after one.
    state_failure: Mutex<Option<persist::Error>>,
    /// Where transitions worth telling go (`--notify-url-file`).
    notifier: Option<Arc<Notifier>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
fn read<T>(m: &RwLock<T>) -> RwLockReadGuard<'_, T> {
    m.read().unwrap_or_else(|p| p.into_inner())
}
fn write<T>(m: &RwLock<T>) -> RwLockWriteGuard<'_, T> {
    m.write().unwrap_or_else(|p| p.into_inner())
}

/// The kinds watched in each namespace scope.
pub fn namespaced_kinds(mode: Mode) -> Vec<ObjectKind> {
    let mut kinds = vec![
        ObjectKind::TrainJob,
        ObjectKind::JobSet,
        ObjectKind::TrainingRuntime,
        ObjectKind::Pod,
    ];
    if mode == Mode::Kueue {
        kinds.push(ObjectKind::Workload);
    }
    kinds
}

impl Hub {
    /// A hub with an empty store.
    pub fn new(mode: Mode, scope: Scope, limits: StoreLimits) -> Self {
        let scopes: Vec<Option<String>> = match &scope {
            Scope::Namespaces(list) => list.iter().cloned().map(Some).collect(),
            Scope::All => vec![None],
        };
        let mut expected: Vec<(ObjectKind, Option<String>)> = scopes
            .iter()
            .flat_map(|s| {
                namespaced_kinds(mode)
                    .into_iter()
                    .map(move |k| (k, s.clone()))
            })
            .collect();
        expected.push((ObjectKind::Node, None));
        if scope == Scope::All {
            // Which namespaces exist. A 403 on it counts as listed (see
            // `Store::apply`), so readiness never waits for a permission
            // that will not come; the server then serves the namespaces
            // objects are seen in.
            expected.push((ObjectKind::Namespace, None));
        }
        let mut watched = expected.clone();
        if mode == Mode::Kueue {
            watched.extend(scopes.iter().map(|s| (ObjectKind::LocalQueue, s.clone())));
            watched.push((ObjectKind::ClusterQueue, None));
        }
        let start = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_micros() as u64)
            .unwrap_or(0);
        Hub {
            mode,
            scope,
            streams: Mutex::new(Streams {
                last_id: start,
                by_namespace: HashMap::new(),
            }),
            store: RwLock::new(Store::new(limits)),
            observations: RwLock::new(HashMap::new()),
            news: broadcast::channel(1024).0,
            health: Arc::new(HealthBoard::new(&watched, UNREADY_AFTER)),
            expected,
            watched,
            replay_bytes: limits.replay_bytes_per_namespace,
            replay_bytes_total: limits.replay_bytes_total,
            metrics: Metrics::default(),
            history: Mutex::new(History::new(HistoryLimits {
                retention: limits.history_retention,
                bytes: limits.history_bytes,
                ..HistoryLimits::default()
            })),
            clock: Clock::system(),
            state: None,
            state_failure: Mutex::new(None),
            notifier: None,
        }
    }

    /// The same hub, reading the time of observation changes from `clock`.
    pub fn with_clock(mut self, clock: Clock) -> Self {
        self.clock = clock;
        self
    }

    /// The same hub, restored from and mirrored to a state directory: what
    /// it held is put back before any list (objects of namespaces not
    /// watched are dropped from it), whatever the limits in force evict is
    /// evicted in the database too, and the restored jobs are classified.
    pub fn with_state_dir(mut self, mut state: StateDir) -> Result<Self, persist::Error> {
        let restored = state.load()?;
        if restored.unreadable > 0 {
            tracing::warn!(
                file = %state.path().display(),
                rows = restored.unreadable,
                "rows of the state database could not be read back; they are left as they are"
            );
        }
        let scope = self.scope.clone();
        let in_scope = move |o: &StoredObject| match &scope {
            Scope::All => true,
            Scope::Namespaces(list) => list.contains(&o.namespace),
        };
        let store = self.store.get_mut().unwrap_or_else(|p| p.into_inner());
        store.track_owner_changes();
        let deltas = store.restore(
            restored.objects,
            restored.owners,
            restored.captured,
            in_scope,
        );
        let mut ops = store_ops(&deltas, store.take_owner_changes());
        let history = self.history.get_mut().unwrap_or_else(|p| p.into_inner());
        for (key, kept) in restored.history {
            history.restore(key, kept);
        }
        history_ops(history.enforce(self.clock.now()), &mut ops);
        state.write(&ops)?;
        tracing::info!(
            file = %state.path().display(),
            pods = store.pod_bytes().1,
            captured = store.captured_count(),
            histories = history.len(),
            "restored the state directory"
        );
        self.state = Some(Mutex::new(state));
        let dirty = write(&self.store).take_dirty();
        self.reclassify(&dirty, true);
        let failure = lock(&self.state_failure).take();
        match failure {
            Some(failure) => Err(failure),
            None => Ok(self),
        }
    }

    /// The failed database write that stopped persisting, if any (the
    /// ingest loop then ends, and the server with it).
    pub fn state_failure(&self) -> Option<String> {
        lock(&self.state_failure).as_ref().map(|e| e.to_string())
    }

    /// Writes `ops` to the state directory, if there is one and no write
    /// has failed before.
    fn write_state(&self, ops: &[Op]) {
        let Some(state) = &self.state else {
            return;
        };
        let mut failure = lock(&self.state_failure);
        if failure.is_some() || ops.is_empty() {
            return;
        }
        if let Err(e) = lock(state).write(ops) {
            tracing::error!(error = %e, "writing the state directory failed");
            *failure = Some(e);
        }
    }

    /// Hands each of `gathered` what its TrainJob's history remembers of
    /// the last Workload that preempted it.
    pub fn remember_preemptors(&self, gathered: &mut [queues::Gathered]) {
        let history = lock(&self.history);
        for g in gathered {
            let (namespace, name, uid) = g.trainjob_key();
            let key = HistoryKey {
                kind: "TrainJob".to_string(),
                namespace: namespace.to_string(),
                name: name.to_string(),
                uid: uid.to_string(),
            };
            g.remember(history.preemptor_of(&key).cloned());
        }
    }

    /// An object's observation changes, oldest first.
    pub fn history_of(&self, key: &HistoryKey) -> Vec<Change> {
        lock(&self.history)
            .of(key)
            .map(|h| h.changes.iter().copied().collect())
            .unwrap_or_default()
    }

    /// The same hub, unready once a watch has been unhealthy for longer than
    /// `after` (default [`UNREADY_AFTER`]).
    pub fn with_unready_after(mut self, after: Duration) -> Self {
        self.health = Arc::new(HealthBoard::new(&self.watched, after));
        self
    }

    /// Each watch's health and the version it reads.
    pub fn health(&self) -> &Arc<HealthBoard> {
        &self.health
    }

    /// The mode classifications run in.
    pub fn mode(&self) -> Mode {
        self.mode
    }

    /// The watched scope.
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The scopes each watch loop covers, as `(kind, namespace)`.
    pub fn watched_scopes(&self) -> &[(ObjectKind, Option<String>)] {
        &self.watched
    }

    /// Whether `namespace` is watched and exists: one of those given, or
    /// with [`Scope::All`] one the store knows ([`Store::knows_namespace`]).
    /// Allocates nothing, so an unknown namespace costs nothing.
    pub fn watches(&self, namespace: &str) -> bool {
        self.watches_in(&read(&self.store), namespace)
    }

    fn watches_in(&self, store: &Store, namespace: &str) -> bool {
        match &self.scope {
            Scope::Namespaces(list) => list.iter().any(|n| n == namespace),
            Scope::All => store.knows_namespace(namespace),
        }
    }

    /// How many namespace streams are held (each a replay ring and a cached
    /// snapshot).
    pub fn stream_count(&self) -> usize {
        lock(&self.streams).by_namespace.len()
    }

    /// The snapshot header in force now.
    pub fn header(&self) -> SnapshotHeader {
        SnapshotHeader {
            mode: self.mode,
            nodes_readable: read(&self.store).nodes_readable(),
        }
    }

    /// Whether every watch has listed once and none has been unhealthy for
    /// too long (see [`super::health`]).
    pub fn ready(&self) -> bool {
        read(&self.store).synced(&self.expected) && !self.health.unhealthy_too_long(Instant::now())
    }

    /// Runs `f` with the store read-locked.
    pub fn with_store<R>(&self, f: impl FnOnce(&Store) -> R) -> R {
        f(&read(&self.store))
    }

    /// Offers the transitions worth telling to `notifier`.
    pub fn with_notifier(mut self, notifier: Arc<Notifier>) -> Self {
        self.notifier = Some(notifier);
        self
    }

    /// The notifier, if notifications are on.
    pub fn notifier(&self) -> Option<&Arc<Notifier>> {
        self.notifier.as_ref()
    }

    /// The time now, as the hub's clock reads it.
    pub fn now(&self) -> SystemTime {
        self.clock.now()
    }

    /// The namespaces to list: the watched ones, or those known to exist.
    pub fn namespaces(&self) -> Vec<String> {
        match &self.scope {
            Scope::Namespaces(list) => list.clone(),
            Scope::All => read(&self.store).known_namespaces().into_iter().collect(),
        }
    }

    /// The latest observations of a job (Find).
    pub fn find(&self, namespace: &str, job: &str) -> Arc<Vec<Observation>> {
        read(&self.observations)
            .get(&(namespace.to_string(), job.to_string()))
            .cloned()
            .unwrap_or_default()
    }

    /// Listens for job news.
    pub fn subscribe_news(&self) -> broadcast::Receiver<JobNews> {
        self.news.subscribe()
    }

    /// Applies a batch of watch events, publishes the changes and
    /// re-classifies the jobs they touch.
    pub fn ingest(&self, batch: Vec<WatchEvent>) {
        let Some(born) = batch.iter().map(|e| e.received).min() else {
            return;
        };
        let (interrupted, dirty, counting) = {
            let mut streams = lock(&self.streams);
            let mut store = write(&self.store);
            let mut deltas = Vec::new();
            // Without a state directory a restart sees every job anew: what
            // the first lists find is where things stand, not news (a
            // counter that re-counted every failure at each start would
            // fire the alerts again). With one, the restored history tells
            // what changed while the server was down.
            let counting = self.state.is_some() || store.synced(&self.expected);
            let namespace_list = store.namespace_list();
            for event in batch {
                deltas.extend(store.apply(event));
            }
            if namespace_list != NamespaceList::Forbidden
                && store.namespace_list() == NamespaceList::Forbidden
            {
                tracing::warn!(
                    "listing Namespaces is forbidden: serving the namespaces objects are seen in"
                );
            }
            self.metrics.record_store(&store);
            if self.state.is_some() {
                // The same step as the store's change, before it is published.
                let ops = store_ops(&deltas, store.take_owner_changes());
                self.write_state(&ops);
            }
            let dirty = store.take_dirty();
            let interrupted: Vec<Option<String>> = deltas
                .iter()
                .filter_map(|d| match d {
                    Delta::WatchInterrupted { kind, scope }
                        if !matches!(kind, ObjectKind::Node | ObjectKind::Namespace) =>
                    {
                        Some(scope.clone())
                    }
                    _ => None,
                })
                .collect();
            // Streams of namespaces gone, or idle and empty, go first, so
            // no frame is built for them.
            streams.by_namespace.retain(|namespace, stream| {
                self.watches_in(&store, namespace)
                    && (stream.tx.receiver_count() > 0 || store.holds_objects_in(namespace))
            });
            drop(store);
            self.publish_changes(&mut streams, &deltas, born);
            (interrupted, dirty, counting)
        };
        self.reclassify(&dirty, counting);
        if !dirty.is_empty() {
            let _ = self.news.send(JobNews::Changed(Arc::new(dirty)));
        }
        for scope in interrupted {
            let _ = self.news.send(JobNews::WatchInterrupted(scope));
        }
    }

    /// Subscribes to a namespace's dashboard stream. With `last_event_id`
    /// inside the ring, the backlog is the missed `change` frames; otherwise
    /// it is one `snapshot` frame, with its `rows` before it, both shared
    /// with every subscriber at the same namespace version. `None`, with
    /// nothing allocated, when the namespace is not watched
    /// ([`Hub::watches`]).
    pub fn subscribe_snapshots(
        self: &Arc<Self>,
        namespace: &str,
        last_event_id: Option<u64>,
    ) -> Option<Subscription> {
        let mut guard = lock(&self.streams);
        let store = read(&self.store);
        if !self.watches_in(&store, namespace) {
            return None;
        }
        let streams = &mut *guard;
        let stream = match streams.by_namespace.entry(namespace.to_string()) {
            Entry::Occupied(entry) => entry.into_mut(),
            Entry::Vacant(entry) => {
                // A new id, so that no id handed out before (by a freed
                // stream of the same namespace) resumes into this one.
                streams.last_id += 1;
                entry.insert(new_stream(streams.last_id))
            }
        };
        let live = LiveFrames {
            receiver: Some(stream.tx.subscribe()),
            hub: self.clone(),
            namespace: namespace.to_string(),
        };
        if let Some(resume_from) = last_event_id {
            if resume_from >= stream.floor && resume_from <= stream.version {
                let backlog = stream
                    .ring
                    .iter()
                    .filter(|f| f.id > resume_from)
                    .cloned()
                    .collect();
                return Some(Subscription {
                    rows: None,
                    backlog,
                    snapshot_rest: Arc::new([]),
                    live,
                });
            }
        }
        let version = stream.version;
        if let Some(start) = stream.start.as_ref().filter(|s| s.version == version) {
            return Some(start.subscription(live));
        }
        let header = SnapshotHeader {
            mode: self.mode,
            nodes_readable: store.nodes_readable(),
        };
        let pieces = view::namespace_snapshot_pieces(&store, header, namespace);
        drop(store);
        drop(guard);
        // Classified with no lock held: for a big namespace it takes tens of
        // milliseconds, which neither the watches nor the other streams
        // wait for. The text is the namespace at `version`, and `live`
        // gets every frame after it.
        let start = StartFrames::of(version, pieces);
        if let Some(stream) = lock(&self.streams).by_namespace.get_mut(namespace) {
            if stream.version == version {
                stream.start = Some(start.clone());
            }
        }
        Some(start.subscription(live))
    }

    /// Frees the namespace's stream when it has no subscriber and the
    /// namespace holds no object (or is not watched any more).
    fn release_idle_stream(&self, namespace: &str) {
        let mut streams = lock(&self.streams);
        let Some(stream) = streams.by_namespace.get(namespace) else {
            return;
        };
        if stream.tx.receiver_count() > 0 {
            return;
        }
        let store = read(&self.store);
        if !self.watches_in(&store, namespace) || !store.holds_objects_in(namespace) {
            streams.by_namespace.remove(namespace);
        }
    }

    /// The namespace snapshot now (`GET .../snapshot`).
    pub fn snapshot(&self, namespace: &str) -> String {
        let store = read(&self.store);
        let header = SnapshotHeader {
            mode: self.mode,
            nodes_readable: store.nodes_readable(),
        };
        view::namespace_snapshot(&store, header, namespace)
    }
}

#[cfg(test)]
#[path = "hub_tests.rs"]
mod tests;
