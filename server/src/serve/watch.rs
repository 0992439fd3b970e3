//! The watch loops: one per kind and scope, each a small state machine that
//! lists, watches from the list's resourceVersion, re-watches when a watch
//! ends, and re-lists after `410 Gone`, turning what it sees into
//! [`WatchEvent`]s for the store. This is kube-runtime's watcher, written
//! out so that the end of every watch stream is visible: section 12 closes a
//! job's Watch when a watch it depends on expires or disconnects.
//!
//! Read-only: only `list` and `watch` requests are made.

use std::fmt::Debug;
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use kube::api::{
    ApiResource, DynamicObject, GroupVersionKind, ListParams, WatchEvent as KubeEvent, WatchParams,
};
use kube::{Api, Client};
use serde::de::DeserializeOwned;
use serde::Serialize;
use tokio::sync::mpsc;

use super::projection::{project, ObjectKind, StoredObject};
use super::store::{EventBody, WatchEvent};

/// Objects per list page.
const PAGE_SIZE: u32 = 500;
/// How long one watch request lasts before the server ends it.
const WATCH_TIMEOUT_SECS: u32 = 290;
/// How long to wait before listing again after `403 Forbidden`.
const FORBIDDEN_RETRY: Duration = Duration::from_secs(30);

/// Where a watch loop sends its events.
pub type EventSender = mpsc::Sender<WatchEvent>;

/// The ApiResource of a custom kind.
pub fn api_resource(kind: ObjectKind) -> ApiResource {
    let gvk = GroupVersionKind::gvk(kind.group(), kind.version(), kind.name());
    ApiResource::from_gvk_with_plural(&gvk, kind.plural())
}

/// Runs the watch loop of `kind` in `scope` (a namespace, or `None` for all
/// namespaces and for Nodes) until the receiver is gone.
pub async fn run(client: Client, kind: ObjectKind, scope: Option<String>, tx: EventSender) {
    match kind {
        ObjectKind::Pod => {
            let api: Api<Pod> = match &scope {
                Some(ns) => Api::namespaced(client, ns),
                None => Api::all(client),
            };
            watch_loop(api, kind, scope, tx).await
        }
        ObjectKind::Node => watch_loop(Api::<Node>::all(client), kind, None, tx).await,
        ObjectKind::Namespace => watch_loop(Api::<Namespace>::all(client), kind, None, tx).await,
        _ => {
            let resource = api_resource(kind);
            let api: Api<DynamicObject> = match &scope {
                Some(ns) => Api::namespaced_with(client, ns, &resource),
                None => Api::all_with(client, &resource),
            };
            watch_loop(api, kind, scope, tx).await
        }
    }
}

/// Why a watch stopped.
enum Ended {
    /// Re-watch from the last resourceVersion.
    Rewatch,
    /// The resourceVersion is too old (`410 Gone`): list again.
    Relist,
}

/// A doubling delay between failed attempts, 100 ms to 5 s.
struct Backoff(Duration);

impl Backoff {
    fn new() -> Self {
        Backoff(Duration::from_millis(100))
    }
    async fn wait(&mut self) {
        tokio::time::sleep(self.0).await;
        self.0 = (self.0 * 2).min(Duration::from_secs(5));
    }
    fn reset(&mut self) {
        *self = Backoff::new();
    }
}

fn status_code(e: &kube::Error) -> Option<u16> {
    match e {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

fn to_stored<K: Serialize>(kind: ObjectKind, object: &K) -> Option<StoredObject> {
    let value = serde_json::to_value(object).ok()?;
    project(kind, &value)
}

async fn watch_loop<K>(api: Api<K>, kind: ObjectKind, scope: Option<String>, tx: EventSender)
where
    K: kube::Resource + Clone + DeserializeOwned + Serialize + Debug + Send + 'static,
{
    let send = |body: EventBody| {
        let tx = tx.clone();
        let scope = scope.clone();
        async move {
            tx.send(WatchEvent {
                kind,
                scope,
                body,
                received: Instant::now(),
            })
            .await
            .is_ok()
        }
    };
    let mut backoff = Backoff::new();
    let mut forbidden_logged = false;
    'list: loop {
        if !send(EventBody::ListStarted).await {
            return;
        }
        let mut params = ListParams::default().limit(PAGE_SIZE);
        let resource_version = loop {
            match api.list(&params).await {
                Ok(list) => {
                    let page: Vec<StoredObject> = list
                        .items
                        .iter()
                        .filter_map(|o| to_stored(kind, o))
                        .collect();
                    if !send(EventBody::ListPage(page)).await {
                        return;
                    }
                    match list.metadata.continue_.filter(|c| !c.is_empty()) {
                        Some(token) => params = params.continue_token(&token),
                        None => break list.metadata.resource_version.unwrap_or_default(),
                    }
                }
                Err(e) if status_code(&e) == Some(403) => {
                    if !forbidden_logged {
                        tracing::warn!(kind = kind.name(), scope = ?scope, "list is forbidden; running without it");
                        forbidden_logged = true;
                    }
                    if !send(EventBody::Forbidden).await {
                        return;
                    }
                    tokio::time::sleep(FORBIDDEN_RETRY).await;
                    continue 'list;
                }
                Err(e) => {
                    tracing::debug!(kind = kind.name(), error = %e, "list failed; retrying");
                    backoff.wait().await;
                    continue 'list;
                }
            }
        };
        if forbidden_logged {
            tracing::info!(kind = kind.name(), "list is allowed again");
            forbidden_logged = false;
        }
        if !send(EventBody::ListDone).await {
            return;
        }
        backoff.reset();
        let mut resource_version = resource_version;
        loop {
            let ended = watch_once(&api, kind, &mut resource_version, &send).await;
            let Some(ended) = ended else { return };
            if !send(EventBody::WatchEnded).await {
                return;
            }
            match ended {
                Ended::Relist => continue 'list,
                Ended::Rewatch => {}
            }
        }
    }
}

/// One watch request, from `resource_version` until it ends. `None` when
/// the receiver is gone.
async fn watch_once<K, F, Fut>(
    api: &Api<K>,
    kind: ObjectKind,
    resource_version: &mut String,
    send: &F,
) -> Option<Ended>
where
    K: kube::Resource + Clone + DeserializeOwned + Serialize + Debug + Send + 'static,
    F: Fn(EventBody) -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let params = WatchParams::default().timeout(WATCH_TIMEOUT_SECS);
    let stream = match api.watch(&params, resource_version).await {
        Ok(stream) => stream,
        Err(e) if status_code(&e) == Some(410) => return Some(Ended::Relist),
        Err(e) => {
            tracing::debug!(kind = kind.name(), error = %e, "watch failed");
            tokio::time::sleep(Duration::from_millis(200)).await;
            return Some(Ended::Rewatch);
        }
    };
    let mut stream = std::pin::pin!(stream);
    while let Some(item) = stream.next().await {
        let body = match item {
            Ok(KubeEvent::Added(o)) | Ok(KubeEvent::Modified(o)) => {
                remember_version(&o, resource_version);
                match to_stored(kind, &o) {
                    Some(stored) => EventBody::Upserted(stored),
                    // A pod that lost its job labels is no longer stored.
                    None => match to_deleted_pod(kind, &o) {
                        Some(gone) => EventBody::Deleted(gone),
                        None => continue,
                    },
                }
            }
            Ok(KubeEvent::Deleted(o)) => {
                remember_version(&o, resource_version);
                match to_stored(kind, &o).or_else(|| to_deleted_pod(kind, &o)) {
                    Some(stored) => EventBody::Deleted(stored),
                    None => continue,
                }
            }
            Ok(KubeEvent::Bookmark(b)) => {
                *resource_version = b.metadata.resource_version;
                continue;
            }
            Ok(KubeEvent::Error(status)) if status.code == 410 => return Some(Ended::Relist),
            Ok(KubeEvent::Error(status)) => {
                tracing::debug!(kind = kind.name(), error = %status.message, "watch error event");
                return Some(Ended::Rewatch);
            }
            Err(e) => {
                tracing::debug!(kind = kind.name(), error = %e, "watch stream broke");
                return Some(Ended::Rewatch);
            }
        };
        if !send(body).await {
            return None;
        }
    }
    Some(Ended::Rewatch)
}

/// A bare identity for a pod that is no longer stored (the store ignores
/// the removal of an object it does not hold).
fn to_deleted_pod<K: Serialize>(kind: ObjectKind, object: &K) -> Option<StoredObject> {
    if kind != ObjectKind::Pod {
        return None;
    }
    let value = serde_json::to_value(object).ok()?;
    let meta = value.get("metadata")?;
    let text = |k: &str| {
        meta.get(k)
            .and_then(|v| v.as_str())
            .unwrap_or("")
            .to_string()
    };
    Some(StoredObject {
        kind,
        namespace: text("namespace"),
        name: text("name"),
        uid: text("uid"),
        job_id: None,
        submission: None,
        jobset_name: None,
        job_uid: None,
        trainjob_owners: Vec::new(),
        node_name: None,
        json: "{}".into(),
    })
}

fn remember_version<K: kube::Resource>(object: &K, resource_version: &mut String) {
    if let Some(rv) = &object.meta().resource_version {
        *resource_version = rv.clone();
    }
}

/// Whether the cluster serves the Kueue Workload API (`--mode auto`).
pub async fn kueue_served(client: &Client) -> Result<bool, kube::Error> {
    let groups = client.list_api_groups().await?;
    Ok(groups.groups.iter().any(|g| {
        g.name == ObjectKind::Workload.group()
            && g.versions
                .iter()
                .any(|v| v.version == ObjectKind::Workload.version())
    }))
}
