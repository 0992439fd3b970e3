//! The watch loops: one per kind and scope, each a state machine
//! ([`machine`]) that lists (as a watch list where the API server streams
//! lists, else in pages), watches from the list's resourceVersion,
//! re-watches when a watch ends, and re-lists after `410 Gone`, turning what
//! it sees into [`WatchEvent`]s for the store. This is kube-runtime's
//! watcher, written out so that the end of every watch stream is visible:
//! section 12 closes a job's Watch when a watch it depends on expires or
//! disconnects. The machine's step is pure; [`run`] makes the requests it
//! asks for and carries out its effects.
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
//! `get`s). A watch list needs only `watch`; where `watch` is allowed and
//! `list` is not, a kind is still read, and the other way round the list
//! falls back to pages.

pub mod machine;

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
use super::projection::{ApiObject, ObjectKind, Projected};
use super::store::{EventBody, WatchEvent};
pub use machine::Backoff;
use machine::{Effect, InitialList, Input, Machine, Request};

/// Objects per list page.
const PAGE_SIZE: u32 = 500;
/// The annotation of the bookmark that ends a watch list's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";
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

/// One watch loop's effects: where its events go, its health and its
/// rate-limited warnings. The decisions are the [`Machine`]'s.
struct Watcher {
    kind: ObjectKind,
    scope: Option<String>,
    tx: EventSender,
    health: Arc<HealthBoard>,
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

    /// Records a failure: health, and a rate-limited warning.
    fn failed(&mut self, state: WatchState, what: &str, error: &str) {
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

    /// Carries out a plan's effects; `false` when the receiver is gone.
    async fn carry_out(
        &mut self,
        effects: Vec<Effect>,
        api: &mut Option<Api<Watched>>,
        client: &Client,
    ) -> bool {
        for effect in effects {
            match effect {
                Effect::Serve(resource) => {
                    self.reading(&resource.api_version);
                    // Nodes and Namespaces are cluster-scoped: never a scope.
                    *api = Some(match &self.scope {
                        Some(ns) if self.kind.namespaced() => {
                            Api::namespaced_with(client.clone(), ns, &resource)
                        }
                        _ => Api::all_with(client.clone(), &resource),
                    });
                }
                Effect::Unreadable => {
                    *api = None;
                    self.health.set_api_version(self.kind, &self.scope, None);
                }
                Effect::Send(body) => {
                    if !self.send(body).await {
                        return false;
                    }
                }
                Effect::Healthy => self.healthy(),
                Effect::Listed(method) => self.health.count_list(self.kind, method),
                Effect::Failed { state, what, error } => self.failed(state, &what, &error),
                Effect::Wait(delay) => tokio::time::sleep(delay).await,
                Effect::ListsUnstreamed(why) => tracing::info!(
                    kind = self.kind.name(),
                    namespace = self.scope.as_deref().unwrap_or("*"),
                    why = %why,
                    "the API server does not stream lists (sendInitialEvents); listing in pages"
                ),
            }
        }
        true
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
/// it first). The [`Machine`] decides; this makes its requests and carries
/// out its effects.
pub async fn run(
    client: Client,
    kind: ObjectKind,
    scope: Option<String>,
    availability: Option<Availability>,
    tx: EventSender,
    health: Arc<HealthBoard>,
) {
    let backoff = Backoff::new(BACKOFF_BASE, BACKOFF_CAP, seed_for(kind, &scope));
    let mut watcher = Watcher {
        kind,
        scope,
        tx,
        health,
        log: FailureLog::default(),
        api_version: kind.api_version().to_string(),
    };
    let (mut machine, mut plan) =
        Machine::start(kind, backoff, availability, InitialList::Streaming);
    let mut api: Option<Api<Watched>> = None;
    let mut stream: Option<Events> = None;
    loop {
        if !watcher.carry_out(plan.effects, &mut api, &client).await {
            return;
        }
        let input = match plan.request {
            Request::Discover => {
                stream = None;
                if watcher.tx.is_closed() {
                    return;
                }
                discover(&client, kind).await
            }
            Request::List(continue_token) => {
                stream = None;
                match &api {
                    Some(api) => list_page(api, &watcher, continue_token).await,
                    None => Input::DiscoveryFailed("no resource to list".to_string()),
                }
            }
            Request::StreamList => {
                stream = None;
                match &api {
                    Some(api) => match open_watch(api, WatchFrom::InitialEvents).await {
                        Ok(opened) => {
                            stream = Some(opened);
                            Input::WatchOpened
                        }
                        Err(refused) => refused,
                    },
                    None => Input::DiscoveryFailed("no resource to watch".to_string()),
                }
            }
            Request::Watch(resource_version) => {
                stream = None;
                match &api {
                    Some(api) => match open_watch(api, WatchFrom::Version(&resource_version)).await
                    {
                        Ok(opened) => {
                            stream = Some(opened);
                            Input::WatchOpened
                        }
                        Err(refused) => refused,
                    },
                    None => Input::DiscoveryFailed("no resource to watch".to_string()),
                }
            }
            Request::NextEvent => match stream.as_mut() {
                Some(open) => open.next(&watcher).await,
                None => Input::Broken("no open watch".to_string()),
            },
        };
        plan = machine.step(input);
    }
}

async fn discover(client: &Client, kind: ObjectKind) -> Input {
    match discovery::discover_kind(client, kind).await {
        Ok(found) => {
            if let Some(api_version) = found.api_version() {
                tracing::info!(kind = kind.name(), api_version, "discovered");
            }
            Input::Discovered(found)
        }
        Err(e) => Input::DiscoveryFailed(e.to_string()),
    }
}

fn status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

async fn list_page(api: &Api<Watched>, w: &Watcher, continue_token: Option<String>) -> Input {
    let mut params = ListParams::default().limit(PAGE_SIZE);
    if let Some(token) = &continue_token {
        params = params.continue_token(token);
    }
    match api.list(&params).await {
        Ok(list) => Input::ListPage {
            objects: list.items.into_iter().map(|o| w.project(o)).collect(),
            continue_token: list.metadata.continue_,
            resource_version: list.metadata.resource_version,
        },
        Err(e) => Input::ListFailed {
            code: status_code(&e),
            error: e.to_string(),
        },
    }
}

/// An open watch stream and when it opened.
struct Events {
    stream: std::pin::Pin<Box<dyn futures::Stream<Item = kube::Result<KubeEvent<Watched>>> + Send>>,
    opened: Instant,
}

/// Where a watch starts.
enum WatchFrom<'v> {
    /// With the current state as initial events (a watch list), read
    /// consistently: no resourceVersion, `resourceVersionMatch=NotOlderThan`.
    InitialEvents,
    /// After this resourceVersion.
    Version(&'v str),
}

async fn open_watch(api: &Api<Watched>, from: WatchFrom<'_>) -> Result<Events, Input> {
    let (params, resource_version) = match from {
        WatchFrom::InitialEvents => (WatchParams::streaming_lists(), ""),
        WatchFrom::Version(version) => (WatchParams::default(), version),
    };
    let params = params.timeout(WATCH_TIMEOUT_SECS);
    match api.watch(&params, resource_version).await {
        Ok(stream) => Ok(Events {
            stream: stream.boxed(),
            opened: Instant::now(),
        }),
        Err(e) => Err(Input::WatchRefused {
            code: status_code(&e),
            error: e.to_string(),
        }),
    }
}

impl Events {
    async fn next(&mut self, w: &Watcher) -> Input {
        match self.stream.next().await {
            None => Input::Ended {
                lasted: self.opened.elapsed(),
            },
            Some(Err(e)) => Input::Broken(e.to_string()),
            Some(Ok(KubeEvent::Added(o) | KubeEvent::Modified(o))) => Input::Upserted {
                resource_version: resource_version_of(&o),
                object: w.project(o),
            },
            Some(Ok(KubeEvent::Deleted(o))) => Input::Deleted {
                resource_version: resource_version_of(&o),
                object: w.project(o),
            },
            Some(Ok(KubeEvent::Bookmark(b))) => Input::Bookmark {
                initial_events_end: b
                    .metadata
                    .annotations
                    .get(INITIAL_EVENTS_END)
                    .is_some_and(|v| v == "true"),
                resource_version: b.metadata.resource_version,
            },
            Some(Ok(KubeEvent::Error(status))) => Input::ErrorEvent {
                code: status.code,
                message: status.message,
            },
        }
    }
}

fn resource_version_of(object: &Watched) -> Option<String> {
    object.object.resource_version().map(str::to_string)
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
        assert_eq!(resource_version_of(&watched).as_deref(), Some("42"));
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
