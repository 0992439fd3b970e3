//! The health of every watch: per kind and scope, the version watched and
//! whether it works, since when. The watch loops ([`super::watch`]) write
//! it; `/readyz` reads it.
//!
//! Readiness: every watch has listed once (the store knows) and no watch has
//! been unhealthy for longer than `unready_after` (one minute by default).
//! A watch that fails for a moment does not take the server out of a
//! Service; one that keeps failing does, so someone looks. Forbidden Nodes
//! are the exception: they are optional (`nodesReadable: false`), so that
//! state is healthy for them.
//!
//! What is reported is public: a state, a time and versions from discovery,
//! never an error's text.

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};

use super::projection::ObjectKind;

/// How long a watch may be unhealthy before the server is unready, unless
/// configured otherwise.
pub const UNREADY_AFTER: Duration = Duration::from_secs(60);

/// The state of one watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WatchState {
    /// Not listed yet.
    Pending,
    /// Listed, and watching.
    Ok,
    /// Requests fail (the API server is unreachable, errors, streams break).
    Failing,
    /// Requests are refused with `403 Forbidden`.
    Forbidden,
    /// The kind is not served (its CRD is missing).
    NotServed,
    /// The kind is served, but only in these versions, none understood.
    UnknownVersions(Vec<String>),
}

impl WatchState {
    /// The state's name in `/readyz`.
    pub fn as_str(&self) -> &'static str {
        match self {
            WatchState::Pending => "pending",
            WatchState::Ok => "ok",
            WatchState::Failing => "failing",
            WatchState::Forbidden => "forbidden",
            WatchState::NotServed => "notServed",
            WatchState::UnknownVersions(_) => "unknownVersions",
        }
    }

    /// Whether a watch of `kind` in this state is a problem that, lasting,
    /// makes the server unready.
    fn unhealthy_for(&self, kind: ObjectKind) -> bool {
        if kind.is_queue() {
            // The queue facts are additive: a Kueue without LocalQueues'
            // CRD, or a deploy without their RBAC, serves every verdict.
            return false;
        }
        match self {
            WatchState::Pending | WatchState::Ok => false,
            WatchState::Forbidden => kind != ObjectKind::Node,
            WatchState::Failing | WatchState::NotServed | WatchState::UnknownVersions(_) => true,
        }
    }
}

/// How a watch's (re-)list was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ListMethod {
    /// As a watch list: a watch's initial events (`sendInitialEvents`).
    WatchList,
    /// In pages of `limit`, the list verb.
    Pages,
}

impl ListMethod {
    /// The `method` label of `dispatch_dash_watch_lists_total`.
    pub fn as_str(self) -> &'static str {
        match self {
            ListMethod::WatchList => "watchList",
            ListMethod::Pages => "pages",
        }
    }
}

/// The health of one watch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WatchHealth {
    /// The kind watched.
    pub kind: ObjectKind,
    /// The namespace, or `None` for all namespaces (and for Nodes).
    pub namespace: Option<String>,
    /// The `apiVersion` watched (`None` until discovery found one).
    pub api_version: Option<String>,
    /// Its state.
    pub state: WatchState,
    /// When it entered the state.
    pub since: Instant,
    /// The same, as wall-clock time, for people.
    pub since_wall: SystemTime,
}

impl WatchHealth {
    /// The `/readyz` entry.
    pub fn to_json(&self) -> Value {
        let since = k8s_openapi::jiff::Timestamp::try_from(self.since_wall)
            .map(|t| t.to_string())
            .unwrap_or_default();
        let mut entry = json!({
            "kind": self.kind.name(),
            "namespace": self.namespace,
            "apiVersion": self.api_version,
            "state": self.state.as_str(),
            "since": since,
        });
        if let (WatchState::UnknownVersions(versions), Some(fields)) =
            (&self.state, entry.as_object_mut())
        {
            fields.insert("servedVersions".into(), json!(versions));
        }
        entry
    }
}

type ScopeKey = (ObjectKind, Option<String>);

/// Every watch's health. Cheap to update: one short lock, no IO.
#[derive(Debug)]
pub struct HealthBoard {
    entries: Mutex<BTreeMap<ScopeKey, WatchHealth>>,
    /// Kinds discovery found but the server does not watch (`--mode auto`
    /// on a cluster serving Workloads only in unknown versions): reported,
    /// never a reason to be unready, since the mode chosen does not read
    /// them.
    unwatched: Mutex<Vec<WatchHealth>>,
    /// Lists completed, by kind and how they were read.
    lists: Mutex<BTreeMap<(ObjectKind, ListMethod), u64>>,
    unready_after: Duration,
}

impl HealthBoard {
    /// A board for `scopes`, each pending.
    pub fn new(scopes: &[ScopeKey], unready_after: Duration) -> Self {
        let (now, wall) = (Instant::now(), SystemTime::now());
        let entries = scopes
            .iter()
            .map(|(kind, namespace)| {
                let health = WatchHealth {
                    kind: *kind,
                    namespace: namespace.clone(),
                    api_version: None,
                    state: WatchState::Pending,
                    since: now,
                    since_wall: wall,
                };
                ((*kind, namespace.clone()), health)
            })
            .collect();
        HealthBoard {
            entries: Mutex::new(entries),
            unwatched: Mutex::new(Vec::new()),
            lists: Mutex::new(BTreeMap::new()),
            unready_after,
        }
    }

    /// Reports a kind that is not watched, and why (cluster-wide).
    pub fn note_unwatched(&self, kind: ObjectKind, state: WatchState) {
        let mut unwatched = self.unwatched.lock().unwrap_or_else(|p| p.into_inner());
        unwatched.retain(|h| h.kind != kind);
        unwatched.push(WatchHealth {
            kind,
            namespace: None,
            api_version: None,
            state,
            since: Instant::now(),
            since_wall: SystemTime::now(),
        });
    }

    fn entries(&self) -> MutexGuard<'_, BTreeMap<ScopeKey, WatchHealth>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Records the state of a watch; the time it started is kept while the
    /// state stays the same. Returns the previous state.
    pub fn set_state(
        &self,
        kind: ObjectKind,
        namespace: &Option<String>,
        state: WatchState,
    ) -> Option<WatchState> {
        let mut entries = self.entries();
        let entry = entries.get_mut(&(kind, namespace.clone()))?;
        if entry.state == state {
            return Some(state);
        }
        entry.since = Instant::now();
        entry.since_wall = SystemTime::now();
        Some(std::mem::replace(&mut entry.state, state))
    }

    /// Counts a completed (re-)list of `kind`, read by `method`.
    pub fn count_list(&self, kind: ObjectKind, method: ListMethod) {
        let mut lists = self.lists.lock().unwrap_or_else(|p| p.into_inner());
        *lists.entry((kind, method)).or_default() += 1;
    }

    /// Lists completed so far, by kind and method.
    pub fn lists(&self) -> BTreeMap<(ObjectKind, ListMethod), u64> {
        self.lists.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Records the `apiVersion` a watch reads.
    pub fn set_api_version(
        &self,
        kind: ObjectKind,
        namespace: &Option<String>,
        api_version: Option<String>,
    ) {
        if let Some(entry) = self.entries().get_mut(&(kind, namespace.clone())) {
            entry.api_version = api_version;
        }
    }

    /// Every watch's health, by kind then namespace, then the kinds noted
    /// as not watched.
    pub fn all(&self) -> Vec<WatchHealth> {
        let mut all: Vec<WatchHealth> = self.entries().values().cloned().collect();
        all.extend(
            self.unwatched
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .iter()
                .cloned(),
        );
        all
    }

    /// Per watched kind, whether all its watches are up: listed and
    /// watching. A forbidden Node watch counts as up, since the server
    /// classifies without Nodes by design (`nodesReadable: false`).
    pub fn up_by_kind(&self) -> BTreeMap<ObjectKind, bool> {
        let mut up = BTreeMap::new();
        for health in self.entries().values() {
            // A forbidden Node watch, and queues not served or not
            // granted, leave nothing stale: the server was told it may
            // not, or cannot, read them, and says so on /readyz.
            let optional_missing = matches!(
                health.state,
                WatchState::Forbidden | WatchState::NotServed | WatchState::UnknownVersions(_)
            ) && health.kind.is_queue();
            let this = health.state == WatchState::Ok
                || (health.state == WatchState::Forbidden && health.kind == ObjectKind::Node)
                || optional_missing;
            *up.entry(health.kind).or_insert(true) &= this;
        }
        up
    }

    /// The `apiVersion` watched per kind (a kind watched in several
    /// namespaces reports the first namespace's).
    pub fn api_versions(&self) -> BTreeMap<ObjectKind, Option<String>> {
        let mut out = BTreeMap::new();
        for health in self.entries().values() {
            out.entry(health.kind)
                .or_insert_with(|| health.api_version.clone());
        }
        out
    }

    /// Whether some watch has been unhealthy for longer than allowed at
    /// `now`.
    pub fn unhealthy_too_long(&self, now: Instant) -> bool {
        self.entries().values().any(|h| {
            h.state.unhealthy_for(h.kind)
                && now.saturating_duration_since(h.since) > self.unready_after
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn board(after: Duration) -> HealthBoard {
        HealthBoard::new(
            &[
                (ObjectKind::TrainJob, Some("a".into())),
                (ObjectKind::Node, None),
            ],
            after,
        )
    }

    #[test]
    fn a_lasting_failure_makes_unready_and_a_brief_one_does_not() {
        let board = board(Duration::from_secs(60));
        let scope = Some("a".to_string());
        let start = Instant::now();
        assert!(
            !board.unhealthy_too_long(start + Duration::from_secs(3600)),
            "pending is the store's business"
        );
        board.set_state(ObjectKind::TrainJob, &scope, WatchState::Failing);
        assert!(!board.unhealthy_too_long(Instant::now() + Duration::from_secs(59)));
        assert!(board.unhealthy_too_long(Instant::now() + Duration::from_secs(61)));
        // A different failure is a new state; the same one keeps its start.
        let since = board.all()[0].since;
        board.set_state(ObjectKind::TrainJob, &scope, WatchState::Failing);
        assert_eq!(board.all()[0].since, since);
        board.set_state(ObjectKind::TrainJob, &scope, WatchState::Forbidden);
        assert!(board.all()[0].since >= since);
        board.set_state(ObjectKind::TrainJob, &scope, WatchState::Ok);
        assert!(!board.unhealthy_too_long(Instant::now() + Duration::from_secs(3600)));
    }

    #[test]
    fn forbidden_nodes_stay_healthy_but_failing_nodes_do_not() {
        let board = board(Duration::ZERO);
        board.set_state(ObjectKind::Node, &None, WatchState::Forbidden);
        assert!(!board.unhealthy_too_long(Instant::now() + Duration::from_secs(3600)));
        board.set_state(ObjectKind::Node, &None, WatchState::Failing);
        assert!(board.unhealthy_too_long(Instant::now() + Duration::from_millis(1)));
    }

    #[test]
    fn queues_never_make_unready_and_are_down_only_when_failing() {
        let scope = Some("a".to_string());
        let board = HealthBoard::new(
            &[
                (ObjectKind::LocalQueue, scope.clone()),
                (ObjectKind::ClusterQueue, None),
            ],
            Duration::ZERO,
        );
        let later = || Instant::now() + Duration::from_secs(3600);
        board.set_state(ObjectKind::LocalQueue, &scope, WatchState::NotServed);
        board.set_state(ObjectKind::ClusterQueue, &None, WatchState::Forbidden);
        assert!(!board.unhealthy_too_long(later()));
        let up = board.up_by_kind();
        assert_eq!(
            up.get(&ObjectKind::LocalQueue),
            Some(&true),
            "not served: nothing stale"
        );
        assert_eq!(
            up.get(&ObjectKind::ClusterQueue),
            Some(&true),
            "not granted"
        );
        board.set_state(ObjectKind::ClusterQueue, &None, WatchState::Failing);
        assert!(!board.unhealthy_too_long(later()), "still ready");
        assert_eq!(
            board.up_by_kind().get(&ObjectKind::ClusterQueue),
            Some(&false),
            "but down, so DispatchDashWatchDown tells of facts going stale"
        );
    }

    #[test]
    fn entries_say_state_version_and_unknown_versions() {
        let board = board(UNREADY_AFTER);
        let scope = Some("a".to_string());
        board.set_api_version(ObjectKind::TrainJob, &scope, None);
        board.set_state(
            ObjectKind::TrainJob,
            &scope,
            WatchState::UnknownVersions(vec!["v2".into()]),
        );
        let entry = board.all()[0].to_json();
        assert_eq!(entry["kind"], "TrainJob");
        assert_eq!(entry["namespace"], "a");
        assert_eq!(entry["state"], "unknownVersions");
        assert_eq!(entry["servedVersions"], json!(["v2"]));
        assert!(
            entry["since"].as_str().is_some_and(|s| s.ends_with('Z')),
            "{entry}"
        );
        board.set_api_version(ObjectKind::Node, &None, Some("v1".into()));
        let versions = board.api_versions();
        assert_eq!(versions[&ObjectKind::Node].as_deref(), Some("v1"));
        assert_eq!(versions[&ObjectKind::TrainJob], None);
        // An unknown scope is ignored.
        assert_eq!(
            board.set_state(ObjectKind::Pod, &None, WatchState::Ok),
            None
        );
    }

    #[test]
    fn an_unwatched_kind_is_reported_but_keeps_the_server_ready() {
        let board = board(Duration::ZERO);
        board.note_unwatched(
            ObjectKind::Workload,
            WatchState::UnknownVersions(vec!["v1".into()]),
        );
        let all = board.all();
        assert_eq!(all.len(), 3);
        assert_eq!(all[2].to_json()["kind"], "Workload");
        assert_eq!(all[2].to_json()["servedVersions"], json!(["v1"]));
        assert!(!board.unhealthy_too_long(Instant::now() + Duration::from_secs(3600)));
        assert!(!board.api_versions().contains_key(&ObjectKind::Workload));
    }
}
