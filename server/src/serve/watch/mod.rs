//! The watch loops: one per kind and scope, each a small state machine that
//! lists, watches from the list's resourceVersion, re-watches when a watch
//! ends, and re-lists after `410 Gone`, turning what it sees into
//! [`WatchEvent`]s for the store. This is kube-runtime's watcher, written
//! out so that the end of every watch stream is visible: section 12 closes a
//! job's Watch when a watch it depends on expires or disconnects.
//!
//! A custom kind is watched at the version discovery chose
//! ([`super::discovery`]); when its list or watch answers `404` (the CRD
//! was removed, or that version no longer served), discovery runs again and
//! the loop continues with what it finds. A kind that is not served holds
//! no objects.
//!
//! Every error path (list errors, `403` on list and on watch, failed watch
//! requests, watch `ERROR` events other than `410`, broken streams) waits a
//! [`Backoff`]: exponential with jitter, capped at 30 s, reset once a watch
//! works. Failures are logged at warn, rate-limited per watch
//! ([`FailureLog`]), with an info when it recovers; each watch's state is
//! kept on the [`HealthBoard`] for `/readyz`.
//!
//! Every kind is read alike, as a `Watched` object at the resource
//! discovery gave: parsed once, straight into what its projection keeps
//! ([`ApiObject`]), and projected from there.
//!
//! Read-only: only `list` and `watch` requests are made (and discovery's
//! `get`s).

use std::fmt::Display;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use std::borrow::Cow;

use futures::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{ApiResource, ListParams, WatchEvent as KubeEvent, WatchParams};
use kube::core::DynamicResourceScope;
use kube::{Api, Client};
use serde::{Deserialize, Deserializer};
use tokio::sync::mpsc;

use super::discovery::{self, Availability};
use super::health::{HealthBoard, WatchState};
use super::projection::{ApiObject, ObjectKind, Projected, StoredObject};
use super::store::{EventBody, WatchEvent};

/// Objects per list page.
const PAGE_SIZE: u32 = 500;
/// How long one watch request lasts before the server ends it.
const WATCH_TIMEOUT_SECS: u32 = 290;
/// The first delay after a failure.
pub const BACKOFF_BASE: Duration = Duration::from_millis(250);
/// The longest delay between attempts.
pub const BACKOFF_CAP: Duration = Duration::from_secs(30);
/// While a watch keeps failing, at most one warning per this long.
pub const WARN_EVERY: Duration = Duration::from_secs(60);

/// Where a watch loop sends its events.
pub type EventSender = mpsc::Sender<WatchEvent>;

/// Delays between failed attempts: exponential with jitter. The n-th delay
/// of a streak is drawn uniformly from `[c/2, c]` where `c = base * 2^(n+1)`
/// capped at `cap` ("equal jitter"). The jitter keeps watches that failed
/// together from retrying in step; the floor that doubles bounds how many
/// attempts a streak makes in any stretch of time, which full or
/// decorrelated jitter (whose draws can fall back to the base) does not.
/// The randomness is a xorshift seeded per watch; nothing here needs to be
/// reproducible.
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    cap: Duration,
    /// Failures since the last reset.
    attempt: u32,
    rng: u64,
}

impl Backoff {
    /// A backoff from `base` to `cap`; `seed` picks the jitter sequence.
    pub fn new(base: Duration, cap: Duration, seed: u64) -> Self {
        Backoff {
            base,
            cap: cap.max(base),
            attempt: 0,
            // xorshift has one fixed point: zero.
            rng: seed | 1,
        }
    }

    /// The next delay, in `[base, cap]`.
    pub fn next_delay(&mut self) -> Duration {
        let ceiling = self
            .base
            .saturating_mul(2u32.saturating_pow(self.attempt.saturating_add(1)))
            .min(self.cap);
        self.attempt = self.attempt.saturating_add(1);
        let floor = (ceiling / 2).max(self.base.min(ceiling));
        let span = u64::try_from((ceiling - floor).as_nanos()).unwrap_or(u64::MAX);
        let offset = match span.checked_add(1) {
            Some(modulus) => self.random() % modulus,
            None => self.random(),
        };
        floor + Duration::from_nanos(offset)
    }

    /// Starts again from the base delay (after a success).
    pub fn reset(&mut self) {
        self.attempt = 0;
    }

    fn random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }
}

/// A seed that differs per watch and per process start.
fn seed_for(kind: ObjectKind, scope: &Option<String>) -> u64 {
    let mut hasher = DefaultHasher::new();
    kind.hash(&mut hasher);
    scope.hash(&mut hasher);
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default()
        .hash(&mut hasher);
    hasher.finish()
}

/// Rate-limits the warnings of one watch: the first failure of a streak is
/// reported, then at most one report per [`WARN_EVERY`] with the number of
/// failures since the last, and the recovery once.
#[derive(Debug, Clone, Default)]
pub struct FailureLog {
    /// Failures since the streak began.
    streak: u64,
    /// Failures since the last report.
    unreported: u64,
    last_report: Option<Instant>,
}

impl FailureLog {
    /// Counts a failure at `now`. `Some(n)`: report it now, with `n`
    /// failures since the last report (this one included).
    pub fn failed(&mut self, now: Instant) -> Option<u64> {
        self.streak += 1;
        self.unreported += 1;
        let due = self
            .last_report
            .is_none_or(|last| now.saturating_duration_since(last) >= WARN_EVERY);
        if !due {
            return None;
        }
        self.last_report = Some(now);
        Some(std::mem::take(&mut self.unreported))
    }

    /// Ends a streak. `Some(n)`: it had `n` failures; say it recovered.
    pub fn recovered(&mut self) -> Option<u64> {
        let streak = std::mem::take(&mut self.streak);
        self.unreported = 0;
        self.last_report = None;
        (streak > 0).then_some(streak)
    }
}

/// One watch loop's fixed settings and its failure bookkeeping.
struct Watcher {
    kind: ObjectKind,
    scope: Option<String>,
    tx: EventSender,
    health: Arc<HealthBoard>,
    backoff: Backoff,
    log: FailureLog,
    /// The `apiVersion` read, written into projections.
    api_version: String,
}

impl Watcher {
    /// Sends an event to the store; `false` when the receiver is gone.
    async fn send(&self, body: EventBody) -> bool {
        let event = WatchEvent {
            kind: self.kind,
            scope: self.scope.clone(),
            body,
            received: Instant::now(),
        };
        self.tx.send(event).await.is_ok()
    }

    /// Records a failure (health, a rate-limited warning) and waits the
    /// backoff's next delay.
    async fn failed(&mut self, state: WatchState, what: &str, error: &(dyn Display + Sync)) {
        self.health.set_state(self.kind, &self.scope, state.clone());
        if let Some(failures) = self.log.failed(Instant::now()) {
            tracing::warn!(
                kind = self.kind.name(),
                namespace = self.scope.as_deref().unwrap_or("*"),
                state = state.as_str(),
                failures,
                error = %error,
                "{what}; retrying with backoff"
            );
        }
        tokio::time::sleep(self.backoff.next_delay()).await;
    }

    /// Records that the watch's data is current.
    fn healthy(&mut self) {
        self.health
            .set_state(self.kind, &self.scope, WatchState::Ok);
        if let Some(failures) = self.log.recovered() {
            tracing::info!(
                kind = self.kind.name(),
                namespace = self.scope.as_deref().unwrap_or("*"),
                failures,
                "watch recovered"
            );
        }
    }

    fn reading(&mut self, api_version: &str) {
        self.api_version = api_version.to_string();
        self.health
            .set_api_version(self.kind, &self.scope, Some(api_version.to_string()));
    }

    fn project(&self, object: Watched) -> Projected {
        object.object.project(self.kind, &self.api_version)
    }
}

/// What the watch loops ask the API for, every kind alike: each object of a
/// list or watch response is parsed straight into an [`ApiObject`] (the
/// fields its projection keeps, nothing else built) and projected from
/// there, with no typed object, `Value` or re-serialization in between.
#[derive(Debug, Clone)]
struct Watched {
    object: ApiObject,
    /// Only `resourceVersion`, which [`kube::Resource::meta`] has to lend.
    meta: ObjectMeta,
}

impl<'de> Deserialize<'de> for Watched {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = ApiObject::deserialize(deserializer)?;
        let meta = ObjectMeta {
            resource_version: object.resource_version().map(str::to_string),
            ..ObjectMeta::default()
        };
        Ok(Watched { object, meta })
    }
}

/// As `kube`'s `DynamicObject`: the resource (from discovery) says where it
/// is served.
impl kube::Resource for Watched {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn kind(resource: &ApiResource) -> Cow<'_, str> {
        resource.kind.as_str().into()
    }
    fn group(resource: &ApiResource) -> Cow<'_, str> {
        resource.group.as_str().into()
    }
    fn version(resource: &ApiResource) -> Cow<'_, str> {
        resource.version.as_str().into()
    }
    fn api_version(resource: &ApiResource) -> Cow<'_, str> {
        resource.api_version.as_str().into()
    }
    fn plural(resource: &ApiResource) -> Cow<'_, str> {
        resource.plural.as_str().into()
    }
    fn meta(&self) -> &ObjectMeta {
        &self.meta
    }
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.meta
    }
}

/// Runs the watch loop of `kind` in `scope` (a namespace, or `None` for all
/// namespaces and for Nodes) until the receiver is gone. `availability` is
/// what discovery found at start (`None`: discovery failed; the loop runs
/// it first).
pub async fn run(
    client: Client,
    kind: ObjectKind,
    scope: Option<String>,
    availability: Option<Availability>,
    tx: EventSender,
    health: Arc<HealthBoard>,
) {
    let mut watcher = Watcher {
        backoff: Backoff::new(BACKOFF_BASE, BACKOFF_CAP, seed_for(kind, &scope)),
        kind,
        scope,
        tx,
        health,
        log: FailureLog::default(),
        api_version: kind.api_version().to_string(),
    };
    let mut availability = match availability {
        Some(found) => found,
        None => match rediscover(&client, &mut watcher).await {
            Some(found) => found,
            None => return,
        },
    };
    loop {
        let ended = match &availability {
            Availability::Served(resource) => {
                watcher.reading(&resource.api_version);
                // Nodes and Namespaces are cluster-scoped: never a scope.
                let api: Api<Watched> = match &watcher.scope {
                    Some(ns) if kind.namespaced() => {
                        Api::namespaced_with(client.clone(), ns, resource)
                    }
                    _ => Api::all_with(client.clone(), resource),
                };
                watch_loop(api, &mut watcher).await
            }
            Availability::NotServed | Availability::UnknownVersions(_) => {
                watcher.health.set_api_version(kind, &watcher.scope, None);
                // A kind that is not served has no objects: an empty list
                // replaces whatever was held.
                if !watcher.send(EventBody::ListStarted).await
                    || !watcher.send(EventBody::ListDone).await
                {
                    return;
                }
                let (state, what) = match &availability {
                    Availability::UnknownVersions(versions) => (
                        WatchState::UnknownVersions(versions.clone()),
                        format!(
                            "{} is served only in versions this server does not understand ({}); it understands {}",
                            kind.name(),
                            versions.join(", "),
                            discovery::understood_versions(kind).join(", "),
                        ),
                    ),
                    _ => (
                        WatchState::NotServed,
                        format!("{} ({}) is not served; is its CRD installed?", kind.name(), kind.group()),
                    ),
                };
                watcher
                    .failed(state, &what, &"absent from API discovery")
                    .await;
                LoopEnd::NotFound
            }
        };
        match ended {
            LoopEnd::ReceiverGone => return,
            LoopEnd::NotFound => {}
        }
        availability = match rediscover(&client, &mut watcher).await {
            Some(found) => found,
            None => return,
        };
    }
}

/// Runs discovery for the watcher's kind until it answers; `None` when the
/// receiver is gone.
async fn rediscover(client: &Client, watcher: &mut Watcher) -> Option<Availability> {
    loop {
        if watcher.tx.is_closed() {
            return None;
        }
        match discovery::discover_kind(client, watcher.kind).await {
            Ok(found) => {
                if let Some(api_version) = found.api_version() {
                    tracing::info!(kind = watcher.kind.name(), api_version, "discovered");
                }
                return Some(found);
            }
            Err(e) => {
                watcher
                    .failed(WatchState::Failing, "API discovery failed", &e)
                    .await
            }
        }
    }
}

/// Why a watch loop returned.
enum LoopEnd {
    /// The receiver is gone: the server is stopping.
    ReceiverGone,
    /// The resource answered `404`: discover again.
    NotFound,
}

/// Why a watch stopped.
#[derive(Debug, PartialEq)]
enum Ended {
    /// Re-watch from the last resourceVersion.
    Rewatch,
    /// The watch ended cleanly but at once, having delivered nothing (a
    /// proxy or server that closes every watch): wait a backoff first, so
    /// the loop does not spin against it.
    RewatchAfterBackoff,
    /// The resourceVersion is too old (`410 Gone`): list again.
    Relist,
    /// The watch failed: wait, then re-watch.
    Failed(WatchState, String),
    /// The resource is gone (`404`): discover again.
    NotFound,
}

fn status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

async fn watch_loop(api: Api<Watched>, w: &mut Watcher) -> LoopEnd {
    'list: loop {
        if !w.send(EventBody::ListStarted).await {
            return LoopEnd::ReceiverGone;
        }
        let mut params = ListParams::default().limit(PAGE_SIZE);
        let resource_version = loop {
            match api.list(&params).await {
                Ok(list) => {
                    let page: Vec<StoredObject> = list
                        .items
                        .into_iter()
                        .filter_map(|o| match w.project(o) {
                            Projected::Stored(stored) => Some(stored),
                            Projected::NotStored(_) => None,
                        })
                        .collect();
                    if !w.send(EventBody::ListPage(page)).await {
                        return LoopEnd::ReceiverGone;
                    }
                    match list.metadata.continue_.filter(|c| !c.is_empty()) {
                        Some(token) => params = params.continue_token(&token),
                        None => break list.metadata.resource_version.unwrap_or_default(),
                    }
                }
                Err(e) if status_code(&e) == Some(403) => {
                    if !w.send(EventBody::Forbidden).await {
                        return LoopEnd::ReceiverGone;
                    }
                    w.failed(WatchState::Forbidden, "list is forbidden", &e)
                        .await;
                    continue 'list;
                }
                Err(e) if status_code(&e) == Some(404) => {
                    w.failed(WatchState::NotServed, "list answered 404 Not Found", &e)
                        .await;
                    return LoopEnd::NotFound;
                }
                Err(e) => {
                    w.failed(WatchState::Failing, "list failed", &e).await;
                    continue 'list;
                }
            }
        };
        if !w.send(EventBody::ListDone).await {
            return LoopEnd::ReceiverGone;
        }
        w.healthy();
        let mut resource_version = resource_version;
        loop {
            let Some(ended) = watch_once(&api, w, &mut resource_version).await else {
                return LoopEnd::ReceiverGone;
            };
            if !w.send(EventBody::WatchEnded).await {
                return LoopEnd::ReceiverGone;
            }
            match ended {
                Ended::Relist => continue 'list,
                Ended::Rewatch => {}
                Ended::RewatchAfterBackoff => {
                    tokio::time::sleep(w.backoff.next_delay()).await;
                }
                Ended::Failed(state, error) => {
                    w.failed(state, "watch failed", &error).await;
                }
                Ended::NotFound => {
                    w.failed(
                        WatchState::NotServed,
                        "watch answered 404 Not Found",
                        &"404 Not Found",
                    )
                    .await;
                    return LoopEnd::NotFound;
                }
            }
        }
    }
}

/// One watch request, from `resource_version` until it ends. `None` when
/// the receiver is gone.
async fn watch_once(
    api: &Api<Watched>,
    w: &mut Watcher,
    resource_version: &mut String,
) -> Option<Ended> {
    let params = WatchParams::default().timeout(WATCH_TIMEOUT_SECS);
    let stream = match api.watch(&params, resource_version).await {
        Ok(stream) => stream,
        Err(e) => {
            return Some(match status_code(&e) {
                Some(410) => Ended::Relist,
                Some(404) => Ended::NotFound,
                Some(403) => Ended::Failed(WatchState::Forbidden, e.to_string()),
                _ => Ended::Failed(WatchState::Failing, e.to_string()),
            })
        }
    };
    let opened = Instant::now();
    let mut stream = std::pin::pin!(stream);
    let mut working = false;
    while let Some(item) = stream.next().await {
        if !working && matches!(item, Ok(ref event) if !matches!(event, KubeEvent::Error(_))) {
            // The watch delivers (an ERROR event is no delivery): the cycle
            // works again.
            working = true;
            w.backoff.reset();
            w.healthy();
        }
        let body = match item {
            Ok(KubeEvent::Added(o)) | Ok(KubeEvent::Modified(o)) => {
                remember_version(&o, resource_version);
                match w.project(o) {
                    Projected::Stored(stored) => EventBody::Upserted(stored),
                    // A pod that lost its job labels is no longer stored.
                    Projected::NotStored(gone) => EventBody::Deleted(gone),
                }
            }
            Ok(KubeEvent::Deleted(o)) => {
                remember_version(&o, resource_version);
                match w.project(o) {
                    Projected::Stored(stored) | Projected::NotStored(stored) => {
                        EventBody::Deleted(stored)
                    }
                }
            }
            Ok(KubeEvent::Bookmark(b)) => {
                *resource_version = b.metadata.resource_version;
                continue;
            }
            Ok(KubeEvent::Error(status)) => {
                return Some(match status.code {
                    410 => Ended::Relist,
                    404 => Ended::NotFound,
                    403 => Ended::Failed(WatchState::Forbidden, status.message),
                    _ => Ended::Failed(WatchState::Failing, status.message),
                })
            }
            Err(e) => return Some(Ended::Failed(WatchState::Failing, e.to_string())),
        };
        if !w.send(body).await {
            return None;
        }
    }
    // A clean end (the timeout, or the server ending watches).
    let ended = after_clean_end(working, opened.elapsed());
    if ended == Ended::Rewatch {
        w.backoff.reset();
    }
    Some(ended)
}

/// A watch shorter than this that delivered nothing ended "at once".
const SHORTEST_CLEAN_WATCH: Duration = Duration::from_secs(1);

/// What follows a watch that ended cleanly: a re-watch, at once unless it
/// delivered nothing and lasted under [`SHORTEST_CLEAN_WATCH`].
fn after_clean_end(delivered: bool, lasted: Duration) -> Ended {
    if delivered || lasted >= SHORTEST_CLEAN_WATCH {
        Ended::Rewatch
    } else {
        Ended::RewatchAfterBackoff
    }
}

fn remember_version(object: &Watched, resource_version: &mut String) {
    if let Some(rv) = object.object.resource_version() {
        *resource_version = rv.to_string();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `kube` parses a watch event (tag first, then the object) and a list
    /// (buffered whole, for its flattened type fields) through other serde
    /// paths than a plain object: both still give the projection of the
    /// object's `Value`, and the resourceVersion a watch resumes from.
    #[test]
    fn watch_events_and_lists_project_as_the_object_value_does() {
        use super::super::projection::project_at;
        use kube::core::ObjectList;
        let pod = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "j-s1-node-0-0-a", "namespace": "ns", "uid": "u1",
                "resourceVersion": "42", "labels": {"dispatch.phpboyscout.uk/job-id": "j"},
                "managedFields": [{"manager": "kubelet", "fieldsV1": {"f:status": {}}}]},
            "spec": {"nodeName": "n1", "containers": [{"name": "node",
                "env": [{"name": "TOKEN", "value": "hunter2"}]}]},
            "status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "node", "state": {"running": {}}}]}});
        let want = project_at(ObjectKind::Pod, "v1", &pod).expect("a job pod");
        let stored = |object: Watched| match object.object.project(ObjectKind::Pod, "v1") {
            Projected::Stored(stored) => stored,
            Projected::NotStored(_) => panic!("a job pod is stored"),
        };
        let event = format!("{{\"type\":\"MODIFIED\",\"object\":{pod}}}");
        let Ok(KubeEvent::Modified(watched)) = serde_json::from_str::<KubeEvent<Watched>>(&event)
        else {
            panic!("a MODIFIED event");
        };
        assert_eq!(
            kube::Resource::meta(&watched).resource_version.as_deref(),
            Some("42")
        );
        let mut resumed = String::new();
        remember_version(&watched, &mut resumed);
        assert_eq!(resumed, "42");
        assert_eq!(stored(watched), want);
        let list = format!(
            "{{\"kind\":\"PodList\",\"apiVersion\":\"v1\",\"metadata\":{{\"resourceVersion\":\"43\"}},\"items\":[{pod},{pod}]}}"
        );
        let list: ObjectList<Watched> = serde_json::from_str(&list).expect("a list");
        assert_eq!(list.metadata.resource_version.as_deref(), Some("43"));
        assert_eq!(list.items.len(), 2);
        for item in list.items {
            assert_eq!(stored(item), want);
        }
        assert!(!want.json.contains("hunter2") && !want.json.contains("managedFields"));
    }

    #[test]
    fn a_watch_that_ends_cleanly_at_once_is_reopened_after_a_backoff() {
        assert_eq!(
            after_clean_end(false, Duration::from_millis(3)),
            Ended::RewatchAfterBackoff
        );
        assert_eq!(
            after_clean_end(true, Duration::from_millis(3)),
            Ended::Rewatch,
            "it delivered: a working watch"
        );
        assert_eq!(
            after_clean_end(false, Duration::from_secs(290)),
            Ended::Rewatch,
            "a quiet watch that ran to its timeout"
        );
    }

    #[test]
    fn backoff_delays_stay_within_base_and_cap() {
        for seed in 0..50 {
            let mut b = Backoff::new(BACKOFF_BASE, BACKOFF_CAP, seed);
            for _ in 0..200 {
                let d = b.next_delay();
                assert!(d >= BACKOFF_BASE && d <= BACKOFF_CAP, "{d:?}");
            }
        }
    }

    #[test]
    fn backoff_doubles_its_range_up_to_the_cap() {
        for seed in 0..20 {
            let mut b = Backoff::new(BACKOFF_BASE, BACKOFF_CAP, seed);
            for n in 0..20u32 {
                let ceiling = (BACKOFF_BASE * 2u32.pow(n + 1)).min(BACKOFF_CAP);
                let d = b.next_delay();
                assert!(d >= ceiling / 2 && d <= ceiling, "attempt {n}: {d:?}");
            }
        }
        // So a streak makes few attempts: in the first 10 s, at most 5.
        let mut b = Backoff::new(BACKOFF_BASE, BACKOFF_CAP, 9);
        let mut elapsed = Duration::ZERO;
        let mut attempts = 0;
        while elapsed < Duration::from_secs(10) {
            elapsed += b.next_delay();
            attempts += 1;
        }
        assert!(attempts <= 6, "{attempts}");
    }

    #[test]
    fn backoff_resets_to_the_base_range() {
        let mut b = Backoff::new(BACKOFF_BASE, BACKOFF_CAP, 3);
        for _ in 0..30 {
            b.next_delay();
        }
        assert!(b.next_delay() >= BACKOFF_CAP / 2);
        b.reset();
        let d = b.next_delay();
        assert!(d >= BACKOFF_BASE && d <= BACKOFF_BASE * 2, "{d:?}");
    }

    #[test]
    fn backoff_jitter_spreads_over_the_range() {
        let mut b = Backoff::new(Duration::from_millis(100), BACKOFF_CAP, 42);
        let first: Vec<Duration> = (0..400)
            .map(|_| {
                b.reset();
                b.next_delay()
            })
            .collect();
        let low = first
            .iter()
            .filter(|d| **d < Duration::from_millis(150))
            .count();
        let high = first
            .iter()
            .filter(|d| **d > Duration::from_millis(150))
            .count();
        assert!(low > 100 && high > 100, "{low} low, {high} high");
        // Two watches with different seeds do not retry in step.
        let mut a = Backoff::new(BACKOFF_BASE, BACKOFF_CAP, 1);
        let mut c = Backoff::new(BACKOFF_BASE, BACKOFF_CAP, 2);
        let same = (0..10).filter(|_| a.next_delay() == c.next_delay()).count();
        assert!(same < 10);
        // A degenerate range is the base.
        let mut flat = Backoff::new(BACKOFF_BASE, BACKOFF_BASE, 5);
        assert_eq!(flat.next_delay(), BACKOFF_BASE);
    }

    #[test]
    fn failures_are_reported_first_then_once_a_minute_with_a_count() {
        let mut log = FailureLog::default();
        let t0 = Instant::now();
        assert_eq!(log.failed(t0), Some(1), "the first failure is reported");
        for i in 1..10 {
            assert_eq!(log.failed(t0 + Duration::from_secs(i)), None);
        }
        assert_eq!(
            log.failed(t0 + WARN_EVERY),
            Some(10),
            "nine quiet plus this one"
        );
        assert_eq!(log.failed(t0 + WARN_EVERY + Duration::from_secs(1)), None);
        assert_eq!(log.recovered(), Some(12));
        assert_eq!(log.recovered(), None, "recovery is said once");
        // A new streak is reported at once.
        assert_eq!(
            log.failed(t0 + WARN_EVERY + Duration::from_secs(2)),
            Some(1)
        );
    }
}
