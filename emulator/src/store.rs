//! The emulator's state: objects, the global resourceVersion, the bounded
//! event history, and the Rust API that writes to it.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{json, Map, Value};
use tokio::sync::watch;

use crate::kind::Kind;
use crate::rng::SplitMix64;
use crate::{time, Error, Result};

/// The versions of the Kueue Workload API an emulator serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WorkloadVersions {
    /// `v1beta2` only: a Kueue that no longer serves `v1beta1`.
    V1beta2Only,
    /// `v1beta2` (stored, preferred) and the deprecated `v1beta1`, like
    /// Kueue's current CRD.
    #[default]
    Both,
    /// `v1beta1` only: an older Kueue.
    V1beta1Only,
}

impl WorkloadVersions {
    /// The served versions, the preferred one first (what discovery lists).
    pub fn served(self) -> &'static [&'static str] {
        match self {
            WorkloadVersions::V1beta2Only => &["v1beta2"],
            WorkloadVersions::Both => &["v1beta2", "v1beta1"],
            WorkloadVersions::V1beta1Only => &["v1beta1"],
        }
    }
}

/// How an emulator behaves. `Default` gives a Kueue cluster serving
/// Workloads in both versions, with a history of 10 000 events and
/// bookmarks every 10 seconds.
#[derive(Debug, Clone)]
pub struct EmulatorConfig {
    /// Whether the Kueue API (`kueue.x-k8s.io` Workloads) is served.
    /// `false` emulates a plain cluster: the group is absent from discovery
    /// and its paths answer 404, which is how a client tells the modes apart.
    pub kueue: bool,
    /// With `kueue`, the Workload versions served. Objects are stored once
    /// and served at the version of the request's path; a request at the
    /// deprecated `v1beta1` gets a `Warning` header and is counted
    /// ([`Emulator::deprecated_requests`]).
    pub workload_versions: WorkloadVersions,
    /// How many events the emulator remembers. A watch (or a paginated list)
    /// from a resourceVersion older than the oldest remembered event gets
    /// `410 Gone`, as from a compacted etcd.
    pub history: usize,
    /// How often a watch that asked for bookmarks gets a `BOOKMARK` event.
    pub bookmark_interval: Duration,
    /// The namespace the generated kubeconfig's context defaults to.
    pub default_namespace: String,
    /// Seed for generated UIDs, so that runs are reproducible.
    pub seed: u64,
}

impl Default for EmulatorConfig {
    fn default() -> Self {
        EmulatorConfig {
            kueue: true,
            workload_versions: WorkloadVersions::default(),
            history: 10_000,
            bookmark_interval: Duration::from_secs(10),
            default_namespace: "default".to_string(),
            seed: 0x5eed,
        }
    }
}

/// What happened to an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One change, as remembered in the history. `prev` is the object before the
/// change, which lets a list be served as of an older resourceVersion and a
/// selector watch tell "stopped matching" from "changed".
#[derive(Debug)]
pub(crate) struct Event {
    pub rv: u64,
    pub kind: Kind,
    pub ty: EventType,
    pub object: Arc<Value>,
    pub prev: Option<Arc<Value>>,
}

type Key = (String, String);

pub(crate) struct State {
    pub rv: u64,
    pub objects: BTreeMap<Kind, BTreeMap<Key, Arc<Value>>>,
    pub history: VecDeque<Arc<Event>>,
    /// Every event with rv > `compacted` is in `history`.
    pub compacted: u64,
    /// `(resource, verb)` pairs answered with 403; verb `*` is every verb.
    pub forbidden: HashSet<(String, String)>,
    pub latency: Duration,
    /// Every watch answers 200 and ends at once, with no event.
    pub watches_end_at_once: bool,
    /// Whether a watch may ask for its initial state as events
    /// (`sendInitialEvents`, the API server's WatchList feature).
    pub watch_list_served: bool,
    /// Requests received, by kind and verb (`get`, `list`, `watch`).
    pub requests: HashMap<(Kind, &'static str), u64>,
    /// Requests received at a deprecated version.
    pub deprecated_requests: u64,
    /// The Workload versions served now (the config's, until changed).
    pub workload_versions: WorkloadVersions,
    /// Whether Kueue's visibility API is served (with Kueue).
    pub visibility_served: bool,
    /// Tokens, grants and review counts of the authentication and
    /// authorization reviews.
    pub access: crate::review::Access,
    rng: SplitMix64,
}

pub(crate) struct Inner {
    pub config: EmulatorConfig,
    state: Mutex<State>,
    /// The current resourceVersion, so watch streams can wait for changes.
    pub rv_tx: watch::Sender<u64>,
    /// Bumped by `expire_all_watches`: streams end cleanly.
    pub expire_tx: watch::Sender<u64>,
    /// Bumped by `drop_connections`: streams end with a transport error.
    pub drop_tx: watch::Sender<u64>,
}

/// An in-process Kubernetes API server.
///
/// A cheap, cloneable handle: every clone shares the same objects. Writes go
/// through the Rust API below (the HTTP side is read-only, like a cluster a
/// dashboard only has `get`/`list`/`watch` on); each write bumps the single
/// global resourceVersion and is seen by every open watch. The reviews
/// `--auth kubernetes` creates are answered (and persist nothing) from a
/// token map and an allow list set through [`Emulator::set_user`] and
/// [`Emulator::grant`]. Serve it over HTTP
/// with [`Emulator::serve`] and point the real `kube` client at it with the
/// kubeconfig from [`Emulator::kubeconfig_yaml`].
#[derive(Clone)]
pub struct Emulator {
    pub(crate) inner: Arc<Inner>,
}

impl std::fmt::Debug for Emulator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Emulator")
            .field("config", &self.inner.config)
            .field("resource_version", &self.resource_version())
            .finish()
    }
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or("")
}

pub(crate) fn object_key(obj: &Value) -> Key {
    (
        meta_str(obj, "namespace").to_string(),
        meta_str(obj, "name").to_string(),
    )
}

/// RFC 7386 JSON merge patch.
fn merge_patch(target: &mut Value, patch: &Value) {
    match patch {
        Value::Object(p) => {
            if !target.is_object() {
                *target = Value::Object(Map::new());
            }
            if let Value::Object(t) = target {
                for (k, v) in p {
                    if v.is_null() {
                        t.remove(k);
                    } else {
                        merge_patch(t.entry(k.clone()).or_insert(Value::Null), v);
                    }
                }
            }
        }
        other => *target = other.clone(),
    }
}

impl Emulator {
    /// An empty cluster (no namespaces, no objects) at resourceVersion 0.
    pub fn new(config: EmulatorConfig) -> Self {
        let rng = SplitMix64::new(config.seed);
        let workload_versions = config.workload_versions;
        Emulator {
            inner: Arc::new(Inner {
                config,
                state: Mutex::new(State {
                    rv: 0,
                    objects: BTreeMap::new(),
                    history: VecDeque::new(),
                    compacted: 0,
                    forbidden: HashSet::new(),
                    latency: Duration::ZERO,
                    watches_end_at_once: false,
                    watch_list_served: true,
                    requests: HashMap::new(),
                    deprecated_requests: 0,
                    workload_versions,
                    visibility_served: true,
                    access: Default::default(),
                    rng,
                }),
                rv_tx: watch::Sender::new(0),
                expire_tx: watch::Sender::new(0),
                drop_tx: watch::Sender::new(0),
            }),
        }
    }

    /// The configuration this emulator was made with.
    pub fn config(&self) -> &EmulatorConfig {
        &self.inner.config
    }

    pub(crate) fn state(&self) -> MutexGuard<'_, State> {
        // A panic while holding the lock cannot leave the maps half-written
        // in a way that matters to an emulator; keep serving.
        self.inner
            .state
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// The current (latest) resourceVersion.
    pub fn resource_version(&self) -> u64 {
        self.state().rv
    }

    /// Whether `kind` is served (Kueue's kinds only with Kueue).
    pub fn serves(&self, kind: Kind) -> bool {
        !kind.is_kueue() || self.inner.config.kueue
    }

    /// The versions `kind` is served at, the preferred one first; empty
    /// when it is not served.
    pub fn served_versions(&self, kind: Kind) -> &'static [&'static str] {
        match kind {
            _ if !self.serves(kind) => &[],
            _ if kind.is_kueue() => self.state().workload_versions.served(),
            _ => kind.versions(),
        }
    }

    /// Whether `kind` is served at `version`.
    pub fn serves_version(&self, kind: Kind, version: &str) -> bool {
        self.served_versions(kind).contains(&version)
    }

    /// The warning a request for `kind` at `version` gets: Kueue's kinds
    /// at `v1beta1` while `v1beta2` is served too (Kueue's CRDs mark it
    /// `deprecated: true` then; an older Kueue serving only `v1beta1` does
    /// not).
    pub fn deprecation(&self, kind: Kind, version: &str) -> Option<String> {
        if kind.is_kueue() && self.state().workload_versions != WorkloadVersions::Both {
            return None;
        }
        kind.deprecation(version)
    }

    /// Serves Kueue's visibility API (`visibility.kueue.x-k8s.io`), or
    /// stops, as a Kueue without its visibility server: its paths answer
    /// 404 and discovery leaves the group out. Served by default, with
    /// Kueue.
    pub fn set_visibility_served(&self, served: bool) {
        self.state().visibility_served = served;
    }

    pub(crate) fn visibility_served(&self) -> bool {
        self.inner.config.kueue && self.state().visibility_served
    }

    /// Changes the Workload versions served, as a Kueue upgrade or
    /// downgrade does: requests at a version no longer served answer 404
    /// (open watches go on until they end). Objects are kept.
    pub fn set_workload_versions(&self, versions: WorkloadVersions) {
        self.state().workload_versions = versions;
    }

    fn kind_of(&self, obj: &mut Value) -> Result<Kind> {
        let api_version = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
        let kind_name = obj.get("kind").and_then(Value::as_str).unwrap_or("");
        let kind =
            Kind::from_type(api_version, kind_name).ok_or_else(|| Error::UnsupportedKind {
                api_version: api_version.to_string(),
                kind: kind_name.to_string(),
            })?;
        if !self.serves(kind) {
            return Err(Error::KueueDisabled);
        }
        // Stored once, at the storage version; served at whichever version
        // a request asks for.
        kind.convert_in_place(obj, kind.version());
        Ok(kind)
    }

    /// Checks the object's shape and returns its kind and key.
    fn prepare(&self, obj: &mut Value) -> Result<(Kind, Key)> {
        if !obj.is_object() {
            return Err(Error::Invalid("an object must be a JSON object".into()));
        }
        let kind = self.kind_of(obj)?;
        let meta = obj
            .as_object_mut()
            .and_then(|o| {
                o.entry("metadata")
                    .or_insert_with(|| Value::Object(Map::new()))
                    .as_object_mut()
            })
            .ok_or_else(|| Error::Invalid("metadata must be an object".into()))?;
        let name = meta.get("name").and_then(Value::as_str).unwrap_or("");
        if name.is_empty() {
            return Err(Error::Invalid(format!("{kind} without metadata.name")));
        }
        if kind.namespaced() {
            let ns = meta.get("namespace").and_then(Value::as_str).unwrap_or("");
            if ns.is_empty() {
                return Err(Error::Invalid(format!(
                    "{kind} {name} without metadata.namespace"
                )));
            }
        } else {
            meta.remove("namespace");
        }
        Ok((kind, object_key(obj)))
    }

    /// Records a change under the lock: bumps the resourceVersion, stamps it
    /// on the object, stores it and appends the event to the history.
    fn commit(
        &self,
        st: &mut State,
        kind: Kind,
        ty: EventType,
        mut obj: Value,
        prev: Option<Arc<Value>>,
    ) -> Arc<Value> {
        st.rv += 1;
        let rv = st.rv;
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
        }
        let key = object_key(&obj);
        let obj = Arc::new(obj);
        let map = st.objects.entry(kind).or_default();
        if ty == EventType::Deleted {
            map.remove(&key);
        } else {
            map.insert(key, obj.clone());
        }
        st.history.push_back(Arc::new(Event {
            rv,
            kind,
            ty,
            object: obj.clone(),
            prev,
        }));
        let cap = self.inner.config.history.max(1);
        while st.history.len() > cap {
            if let Some(old) = st.history.pop_front() {
                st.compacted = old.rv;
            }
        }
        obj
    }

    fn publish(&self, rv: u64) {
        self.inner.rv_tx.send_replace(rv);
    }

    /// Creates the Namespace `ns` if it does not exist (under the lock).
    fn ensure_namespace(&self, st: &mut State, ns: &str) {
        if ns.is_empty()
            || st
                .objects
                .get(&Kind::Namespace)
                .is_some_and(|m| m.contains_key(&(String::new(), ns.to_string())))
        {
            return;
        }
        let uid = st.rng.uuid();
        let obj = json!({
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {
                "name": ns,
                "uid": uid,
                "creationTimestamp": time::now_rfc3339(),
                "labels": {"kubernetes.io/metadata.name": ns},
            },
            "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"},
        });
        self.commit(st, Kind::Namespace, EventType::Added, obj, None);
    }

    fn insert_new(&self, st: &mut State, kind: Kind, mut obj: Value) -> Arc<Value> {
        let uid = st.rng.uuid();
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            if meta
                .get("uid")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                meta.insert("uid".into(), Value::String(uid));
            }
            if meta
                .get("creationTimestamp")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                meta.insert(
                    "creationTimestamp".into(),
                    Value::String(time::now_rfc3339()),
                );
            }
        }
        let ns = meta_str(&obj, "namespace").to_string();
        if kind.namespaced() {
            self.ensure_namespace(st, &ns);
        }
        self.commit(st, kind, EventType::Added, obj, None)
    }

    fn replace(&self, st: &mut State, kind: Kind, mut obj: Value, prev: Arc<Value>) -> Arc<Value> {
        // UID and creation time are immutable: keep the stored ones.
        if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            for field in ["uid", "creationTimestamp"] {
                if let Some(v) = prev.get("metadata").and_then(|m| m.get(field)) {
                    meta.insert(field.into(), v.clone());
                }
            }
        }
        self.commit(st, kind, EventType::Modified, obj, Some(prev))
    }

    fn lookup(st: &State, kind: Kind, key: &Key) -> Option<Arc<Value>> {
        st.objects.get(&kind).and_then(|m| m.get(key)).cloned()
    }

    /// Creates an object, filling in `metadata.uid` and `creationTimestamp`
    /// when missing (and the Namespace it lives in, when that does not exist
    /// yet). Emits `ADDED`; returns the stored object.
    pub fn create(&self, mut obj: Value) -> Result<Value> {
        let (kind, key) = self.prepare(&mut obj)?;
        let mut st = self.state();
        if Self::lookup(&st, kind, &key).is_some() {
            return Err(Error::AlreadyExists {
                kind,
                namespace: key.0,
                name: key.1,
            });
        }
        let stored = self.insert_new(&mut st, kind, obj);
        let rv = st.rv;
        drop(st);
        self.publish(rv);
        Ok((*stored).clone())
    }

    /// Replaces an existing object (keeping its UID and creation time).
    /// Emits `MODIFIED`; returns the stored object.
    pub fn update(&self, mut obj: Value) -> Result<Value> {
        let (kind, key) = self.prepare(&mut obj)?;
        let mut st = self.state();
        let prev = Self::existing(&st, kind, &key)?;
        let stored = self.replace(&mut st, kind, obj, prev);
        let rv = st.rv;
        drop(st);
        self.publish(rv);
        Ok((*stored).clone())
    }

    /// Creates the object, or replaces it when it exists: what a controller's
    /// server-side apply amounts to for a reader.
    pub fn apply(&self, mut obj: Value) -> Result<Value> {
        let (kind, key) = self.prepare(&mut obj)?;
        let mut st = self.state();
        let stored = match Self::lookup(&st, kind, &key) {
            Some(prev) => self.replace(&mut st, kind, obj, prev),
            None => self.insert_new(&mut st, kind, obj),
        };
        let rv = st.rv;
        drop(st);
        self.publish(rv);
        Ok((*stored).clone())
    }

    /// Applies an RFC 7386 JSON merge patch to an existing object (`null`
    /// removes a field; arrays are replaced whole). Emits `MODIFIED`.
    pub fn merge_patch(
        &self,
        kind: Kind,
        namespace: &str,
        name: &str,
        patch: Value,
    ) -> Result<Value> {
        self.modify(kind, namespace, name, |obj, prev, key| {
            merge_patch(obj, &patch);
            // The identity of an object cannot be patched away.
            for (field, value) in [("name", &key.1), ("namespace", &key.0)] {
                if let Some(meta) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                    if !(field == "namespace" && value.is_empty()) {
                        meta.insert(field.into(), Value::String(value.clone()));
                    }
                }
            }
            for field in ["apiVersion", "kind"] {
                if let (Some(o), Some(v)) = (obj.as_object_mut(), prev.get(field)) {
                    o.insert(field.into(), v.clone());
                }
            }
        })
    }

    /// Replaces the `status` of an existing object, as a controller writing
    /// the status subresource does. Emits `MODIFIED`.
    pub fn patch_status(
        &self,
        kind: Kind,
        namespace: &str,
        name: &str,
        status: Value,
    ) -> Result<Value> {
        self.modify(kind, namespace, name, |obj, _, _| {
            if let Some(o) = obj.as_object_mut() {
                o.insert("status".into(), status);
            }
        })
    }

    /// Deletes an object at once. Emits `DELETED` carrying its last state (at
    /// the deletion's resourceVersion) and returns that state. To emulate a
    /// graceful deletion, first `update` the object with a
    /// `metadata.deletionTimestamp` and its final status, then delete it.
    pub fn delete(&self, kind: Kind, namespace: &str, name: &str) -> Result<Value> {
        let key = self.key_for(kind, namespace, name)?;
        let mut st = self.state();
        let prev = Self::existing(&st, kind, &key)?;
        let last = (*prev).clone();
        let stored = self.commit(&mut st, kind, EventType::Deleted, last, Some(prev));
        let rv = st.rv;
        drop(st);
        self.publish(rv);
        Ok((*stored).clone())
    }

    /// Rewrites an existing object: `edit` changes a copy (it also sees the
    /// stored original and the object's key), the copy replaces the object,
    /// and `MODIFIED` is published.
    fn modify(
        &self,
        kind: Kind,
        namespace: &str,
        name: &str,
        edit: impl FnOnce(&mut Value, &Value, &Key),
    ) -> Result<Value> {
        let key = self.key_for(kind, namespace, name)?;
        let mut st = self.state();
        let prev = Self::existing(&st, kind, &key)?;
        let mut obj = (*prev).clone();
        edit(&mut obj, &prev, &key);
        let stored = self.replace(&mut st, kind, obj, prev);
        let rv = st.rv;
        drop(st);
        self.publish(rv);
        Ok((*stored).clone())
    }

    /// The stored object, or `NotFound`.
    fn existing(st: &State, kind: Kind, key: &Key) -> Result<Arc<Value>> {
        Self::lookup(st, kind, key).ok_or_else(|| Error::NotFound {
            kind,
            namespace: key.0.clone(),
            name: key.1.clone(),
        })
    }

    fn key_for(&self, kind: Kind, namespace: &str, name: &str) -> Result<Key> {
        if !self.serves(kind) {
            return Err(Error::KueueDisabled);
        }
        let ns = if kind.namespaced() { namespace } else { "" };
        Ok((ns.to_string(), name.to_string()))
    }

    /// One object, if it exists (`namespace` is ignored for cluster-scoped
    /// kinds).
    pub fn get(&self, kind: Kind, namespace: &str, name: &str) -> Option<Value> {
        let key = self.key_for(kind, namespace, name).ok()?;
        Self::lookup(&self.state(), kind, &key).map(|v| (*v).clone())
    }

    /// [`Emulator::list`] without copying the objects: the demo's queue
    /// controller reads every Workload at every step, and copying each was
    /// most of a 3,000-job demo's start.
    pub fn list_shared(&self, kind: Kind, namespace: Option<&str>) -> Vec<Arc<Value>> {
        let st = self.state();
        st.objects
            .get(&kind)
            .map(|m| {
                m.iter()
                    .filter(|((ns, _), _)| namespace.is_none_or(|want| ns == want))
                    .map(|(_, v)| v.clone())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every object of a kind, in one namespace or (with `None`) in all, in
    /// namespace-then-name order.
    pub fn list(&self, kind: Kind, namespace: Option<&str>) -> Vec<Value> {
        self.list_shared(kind, namespace)
            .into_iter()
            .map(|v| Value::clone(&v))
            .collect()
    }

    // ----- fault injection -----

    /// Ends every open watch stream cleanly, as an API server does when a
    /// watch times out or the server sheds load. Clients re-watch from the
    /// last resourceVersion they saw.
    pub fn expire_all_watches(&self) {
        self.inner.expire_tx.send_modify(|g| *g += 1);
    }

    /// Aborts every open watch stream mid-body, so the client sees a broken
    /// connection rather than a clean end of stream.
    pub fn drop_connections(&self) {
        self.inner.drop_tx.send_modify(|g| *g += 1);
    }

    /// Forgets the whole event history, as an etcd compaction does: the next
    /// watch (or paginated list) from any resourceVersion older than the
    /// current one gets `410 Gone`, and open watches that fall behind too.
    pub fn compact(&self) {
        let mut st = self.state();
        st.history.clear();
        st.compacted = st.rv;
    }

    /// Delays every HTTP response by `latency`, to emulate a slow API server.
    pub fn set_latency(&self, latency: Duration) {
        self.state().latency = latency;
    }

    /// While set, every watch answers 200 and ends cleanly at once, before
    /// any event: a client must back off rather than reopen it in a loop.
    pub fn set_watches_end_at_once(&self, at_once: bool) {
        self.state().watches_end_at_once = at_once;
    }

    pub(crate) fn watches_end_at_once(&self) -> bool {
        self.state().watches_end_at_once
    }

    /// Whether watches may stream their initial state (`sendInitialEvents`
    /// with `resourceVersionMatch=NotOlderThan`), as Kubernetes 1.27 and
    /// later can; served by default. Unset, such a watch is refused with
    /// `422 Invalid`, as Kubernetes 1.19 to 1.26 refuse it, so a client
    /// must list instead.
    pub fn set_watch_list_served(&self, served: bool) {
        self.state().watch_list_served = served;
    }

    pub(crate) fn watch_list_served(&self) -> bool {
        self.state().watch_list_served
    }

    pub(crate) fn latency(&self) -> Duration {
        self.state().latency
    }

    /// Answers `403 Forbidden` to every request for `resource` (a plural such
    /// as `nodes`), as for a service account without that permission.
    pub fn forbid(&self, resource: &str) {
        self.forbid_verb(resource, "*");
    }

    /// Answers `403 Forbidden` to `verb` requests (`get`, `list` or
    /// `watch`) for `resource` only, as for a role missing that one verb.
    pub fn forbid_verb(&self, resource: &str, verb: &str) {
        self.state()
            .forbidden
            .insert((resource.to_string(), verb.to_string()));
    }

    /// Undoes [`Emulator::forbid`] and [`Emulator::forbid_verb`] for
    /// `resource`.
    pub fn allow(&self, resource: &str) {
        self.state().forbidden.retain(|(r, _)| r != resource);
    }

    pub(crate) fn is_forbidden(&self, resource: &str, verb: &str) -> bool {
        let st = self.state();
        ["*", verb].iter().any(|v| {
            st.forbidden
                .contains(&(resource.to_string(), v.to_string()))
        })
    }

    /// Counts a request for `kind` (and whether it was at a deprecated
    /// version), before it is answered.
    pub(crate) fn count_request(&self, kind: Kind, verb: &'static str, deprecated: bool) {
        let mut st = self.state();
        *st.requests.entry((kind, verb)).or_default() += 1;
        if deprecated {
            st.deprecated_requests += 1;
        }
    }

    /// How many `verb` requests (`get`, `list`, `watch`) for `kind` were
    /// received over HTTP, answered or refused.
    pub fn requests(&self, kind: Kind, verb: &str) -> u64 {
        self.state()
            .requests
            .iter()
            .filter(|((k, v), _)| *k == kind && *v == verb)
            .map(|(_, n)| n)
            .sum()
    }

    /// How many requests were made at a deprecated version (Workloads at
    /// `v1beta1`).
    pub fn deprecated_requests(&self) -> u64 {
        self.state().deprecated_requests
    }

    /// Forgets every object and the history, as a cluster rebuilt from
    /// scratch. The resourceVersion keeps increasing (so a client's old
    /// resourceVersion reads as too old, `410`, and it re-lists) and open
    /// watches are ended.
    pub fn wipe(&self) {
        let mut st = self.state();
        st.objects.clear();
        st.history.clear();
        st.rv += 1;
        st.compacted = st.rv;
        let rv = st.rv;
        drop(st);
        self.publish(rv);
        self.expire_all_watches();
    }

    /// A kubeconfig (YAML) for a server at `addr`: an `http://` cluster, no
    /// credentials, and a context defaulting to the configured namespace.
    /// `kube::Config::from_custom_kubeconfig` accepts it.
    pub fn kubeconfig_yaml(&self, addr: SocketAddr) -> String {
        kubeconfig_yaml(addr, &self.inner.config.default_namespace)
    }
}

/// A kubeconfig (YAML) for an emulator at `addr` whose context defaults to
/// `namespace`.
pub fn kubeconfig_yaml(addr: SocketAddr, namespace: &str) -> String {
    format!(
        "apiVersion: v1
kind: Config
clusters:
- name: emulator
  cluster:
    server: http://{addr}
contexts:
- name: emulator
  context:
    cluster: emulator
    user: emulator
    namespace: {namespace}
current-context: emulator
users:
- name: emulator
  user: {{}}
preferences: {{}}
"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "a"}})
    }

    #[test]
    fn writes_bump_rv_and_keep_identity() {
        let e = Emulator::new(EmulatorConfig::default());
        let p = e.create(pod("p")).unwrap();
        // namespace (rv 1) then pod (rv 2)
        assert_eq!(p["metadata"]["resourceVersion"], "2");
        assert!(e.get(Kind::Namespace, "", "a").is_some());
        let uid = p["metadata"]["uid"].clone();
        let u = e.apply(pod("p")).unwrap();
        assert_eq!(u["metadata"]["uid"], uid);
        assert_eq!(u["metadata"]["resourceVersion"], "3");
        assert!(matches!(
            e.create(pod("p")),
            Err(Error::AlreadyExists { .. })
        ));
        let s = e
            .patch_status(Kind::Pod, "a", "p", json!({"phase": "Running"}))
            .unwrap();
        assert_eq!(s["status"]["phase"], "Running");
        let m = e
            .merge_patch(
                Kind::Pod,
                "a",
                "p",
                json!({"metadata": {"labels": {"x": "1"}}}),
            )
            .unwrap();
        assert_eq!(m["metadata"]["labels"]["x"], "1");
        assert_eq!(m["status"]["phase"], "Running");
        let d = e.delete(Kind::Pod, "a", "p").unwrap();
        assert_eq!(d["metadata"]["resourceVersion"], "6");
        assert!(e.get(Kind::Pod, "a", "p").is_none());
        assert!(matches!(
            e.delete(Kind::Pod, "a", "p"),
            Err(Error::NotFound { .. })
        ));
    }

    #[test]
    fn rejects_bad_objects() {
        let e = Emulator::new(EmulatorConfig {
            kueue: false,
            ..Default::default()
        });
        assert!(e.create(json!([1])).is_err());
        assert!(e
            .create(json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"}}))
            .is_err());
        assert!(e
            .create(json!({"apiVersion": "v9", "kind": "Pod", "metadata": {"name": "x"}}))
            .is_err());
        let w = json!({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "Workload",
                       "metadata": {"name": "w", "namespace": "a"}});
        assert!(matches!(e.create(w), Err(Error::KueueDisabled)));
    }

    #[test]
    fn history_is_bounded() {
        let e = Emulator::new(EmulatorConfig {
            history: 3,
            ..Default::default()
        });
        for i in 0..5 {
            e.create(pod(&format!("p{i}"))).unwrap();
        }
        let st = e.state();
        assert_eq!(st.history.len(), 3);
        assert_eq!(st.compacted, 3);
        assert_eq!(st.rv, 6);
    }
}

/// A list could not be served at the requested resourceVersion because the
/// history no longer reaches back that far.
#[derive(Debug)]
pub(crate) struct Expired {
    pub requested: u64,
    pub oldest: u64,
}

impl Emulator {
    /// The objects of `kind` (in `namespace`, or all) as they were at
    /// resourceVersion `at` (`None`: now), in namespace-then-name order,
    /// with the resourceVersion the list is consistent at.
    pub(crate) fn snapshot(
        &self,
        kind: Kind,
        namespace: Option<&str>,
        at: Option<u64>,
    ) -> std::result::Result<(u64, Vec<Arc<Value>>), Expired> {
        let st = self.state();
        let in_ns = |key: &Key| namespace.is_none_or(|ns| key.0 == ns);
        let mut map: BTreeMap<Key, Arc<Value>> = st
            .objects
            .get(&kind)
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| in_ns(k))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let at = match at {
            Some(at) if at < st.rv => at,
            _ => return Ok((st.rv, map.into_values().collect())),
        };
        if at < st.compacted {
            return Err(Expired {
                requested: at,
                oldest: st.compacted,
            });
        }
        for ev in st.history.iter().rev().take_while(|e| e.rv > at) {
            if ev.kind != kind {
                continue;
            }
            let key = object_key(&ev.object);
            if !in_ns(&key) {
                continue;
            }
            match &ev.prev {
                Some(prev) => map.insert(key, prev.clone()),
                None => map.remove(&key),
            };
        }
        Ok((at, map.into_values().collect()))
    }

    /// Events after `after` (exclusive), with the resourceVersion they bring
    /// the caller to, or `Expired` when the history no longer reaches back.
    pub(crate) fn events_since(
        &self,
        after: u64,
    ) -> std::result::Result<(u64, Vec<Arc<Event>>), Expired> {
        let st = self.state();
        if after < st.compacted {
            return Err(Expired {
                requested: after,
                oldest: st.compacted,
            });
        }
        let start = st.history.partition_point(|e| e.rv <= after);
        Ok((st.rv, st.history.range(start..).cloned().collect()))
    }
}
