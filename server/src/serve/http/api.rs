//! The JSON handlers (namespaces, Find, Inspect, the snapshot), health,
//! readiness and metrics. Each asks the hub, the store's views or the
//! authenticator; none decides a domain rule itself.

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{ConnectInfo, Path, Query, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use classify_wasm::queue::QueueFacts;
use classify_wasm::Observation;
use prometheus_client::registry::Registry;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::session::{client_ip, identify, presented_token, review_failed, Caller};
use super::{AppError, AppState};
use crate::serve::auth::{AuthMode, Spend};
use crate::serve::health::WatchState;
use crate::serve::history::{self, HistoryKey};
use crate::serve::hub::Hub;
use crate::serve::projection::ObjectKind;
use crate::serve::queues;
use crate::serve::scrape;
use crate::serve::view;

pub(super) fn watched(state: &AppState, namespace: &str) -> Result<(), AppError> {
    if state.hub.watches(namespace) {
        Ok(())
    } else {
        Err(AppError::NamespaceNotWatched)
    }
}

/// The `apiVersion` watched per kind, as discovery chose it.
fn api_versions(hub: &Hub) -> Value {
    let versions: serde_json::Map<String, Value> = hub
        .health()
        .api_versions()
        .into_iter()
        .map(|(kind, version)| (kind.name().to_string(), json!(version)))
        .collect();
    Value::Object(versions)
}

pub(super) async fn namespaces(
    State(state): State<AppState>,
    caller: Option<Extension<Caller>>,
) -> Result<Json<Value>, AppError> {
    let header = state.hub.header();
    let mut namespaces = state.hub.namespaces();
    if let Some(Extension(caller)) = caller {
        // Only the namespaces the caller may see (every one outside
        // `kubernetes` mode), as the authenticator decides and caches.
        namespaces = state
            .auth
            .visible_namespaces(caller.token.expose(), &caller.identity, namespaces)
            .await
            .map_err(review_failed)?;
    }
    Ok(Json(json!({
        "namespaces": namespaces,
        "allNamespaces": matches!(state.hub.scope(), crate::serve::hub::Scope::All),
        "mode": header.mode.as_str(),
        "nodesReadable": header.nodes_readable,
        "demo": state.demo,
        "apiVersions": api_versions(&state.hub),
    })))
}

/// `/readyz`: open to every caller (the kubelet's probes carry no identity),
/// so it names a watch's namespace only to a caller who may see it: anyone
/// in `none` mode, an identified caller who may see that namespace
/// otherwise. Everyone else gets the watch without its namespace.
pub(super) async fn readyz(
    State(state): State<AppState>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
) -> Response {
    let ready = state.hub.ready();
    let header = state.hub.header();
    let caller = match state.auth.mode() {
        AuthMode::None => None,
        _ if presented_token(&state, &headers).is_none() => None,
        _ => identify(&state, &headers, client_ip(peer)).await.ok(),
    };
    // Public reasons only: states, times and versions, no error text.
    let mut watches: Vec<Value> = Vec::new();
    for health in state.hub.health().all().iter() {
        if health.state == WatchState::Ok {
            continue;
        }
        let mut entry = health.to_json();
        if let Some(ns) = health.namespace.as_deref() {
            let named = match (state.auth.mode(), &caller) {
                (AuthMode::None, _) => true,
                (_, None) => false,
                (_, Some(c)) => state
                    .auth
                    .may_see_namespace(c.token.expose(), &c.identity, ns, None, Spend::Request)
                    .await
                    .unwrap_or(false),
            };
            if !named {
                if let Some(fields) = entry.as_object_mut() {
                    fields.remove("namespace");
                }
            }
        }
        watches.push(entry);
    }
    let body = Json(json!({
        "ready": ready,
        "mode": header.mode.as_str(),
        "nodesReadable": header.nodes_readable,
        "apiVersions": api_versions(&state.hub),
        "watches": watches,
    }));
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, body).into_response()
}

/// `/metrics`: in `kubernetes` mode only for an identity allowed `get` on
/// the non-resource URL `/metrics` (kube-rbac-proxy's convention).
pub(super) async fn metrics(
    State(state): State<AppState>,
    Extension(registry): Extension<Arc<Registry>>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    if state.auth.mode() == AuthMode::Kubernetes {
        let caller = identify(&state, &headers, client_ip(peer)).await?;
        let allowed = state
            .auth
            .may_read_metrics(caller.token.expose(), &caller.identity)
            .await
            .map_err(review_failed)?;
        if !allowed {
            return Err(AppError::Forbidden);
        }
    }
    let text = scrape::render(&registry).map_err(|_| AppError::Internal)?;
    Ok(([(header::CONTENT_TYPE, scrape::CONTENT_TYPE)], text).into_response())
}

/// An observation as Find gives it: a TrainJob's carries its queue facts
/// in `queue`, when it has any.
#[derive(Debug, Serialize)]
pub(super) struct Found {
    #[serde(flatten)]
    observation: Observation,
    #[serde(skip_serializing_if = "Option::is_none")]
    queue: Option<QueueFacts>,
}

pub(super) async fn find(
    State(state): State<AppState>,
    Path((ns, job)): Path<(String, String)>,
    caller: Option<Extension<Caller>>,
) -> Result<Json<Vec<Found>>, AppError> {
    watched(&state, &ns)?;
    let observations = state.hub.find(&ns, &job);
    let mut found = Vec::with_capacity(observations.len());
    for observation in observations.iter() {
        let queue = match observation.object.kind.as_str() {
            "TrainJob" => queue_facts(&state, &caller, &ns, &observation.object.name).await?,
            _ => None,
        };
        found.push(Found {
            observation: observation.clone(),
            queue,
        });
    }
    Ok(Json(found))
}

/// The queue facts of the TrainJob `name` as the caller may see them
/// (`serve::queues`); `None` when it has none.
async fn queue_facts(
    state: &AppState,
    caller: &Option<Extension<Caller>>,
    namespace: &str,
    name: &str,
) -> Result<Option<QueueFacts>, AppError> {
    let Some(mut gathered) = state
        .hub
        .with_store(|store| queues::gather(store, namespace, name))
    else {
        return Ok(None);
    };
    state
        .hub
        .remember_preemptors(std::slice::from_mut(&mut gathered));
    let caller = caller
        .as_ref()
        .map(|Extension(c)| (c.token.expose(), &c.identity));
    let Some(facts) = gathered
        .facts_for(&state.auth, caller)
        .await
        .map_err(review_failed)?
    else {
        return Ok(None);
    };
    gathered
        .with_position(facts, &state.positions, &state.auth, caller)
        .await
        .map(Some)
        .map_err(review_failed)
}

/// The Queues page's data: `serve::queues::queues_page` for the caller.
pub(super) async fn queues_page(
    State(state): State<AppState>,
    Path(ns): Path<String>,
    caller: Option<Extension<Caller>>,
) -> Result<Json<classify_wasm::queue::board::QueuesPage>, AppError> {
    watched(&state, &ns)?;
    let held = state
        .hub
        .with_store(|store| queues::hold_queues(store, &ns));
    let caller = caller
        .as_ref()
        .map(|Extension(c)| (c.token.expose(), &c.identity));
    queues::queues_page(held, &state.positions, &state.auth, caller)
        .await
        .map(Json)
        .map_err(review_failed)
}

#[derive(Debug, Deserialize)]
pub(super) struct InspectQuery {
    #[serde(default)]
    explain: bool,
}

pub(super) async fn inspect(
    State(state): State<AppState>,
    Path((ns, kind, name)): Path<(String, String, String)>,
    Query(query): Query<InspectQuery>,
    caller: Option<Extension<Caller>>,
) -> Result<Json<Value>, AppError> {
    watched(&state, &ns)?;
    let kind = ObjectKind::parse(&kind)
        .filter(|k| k.namespaced())
        .ok_or(AppError::NotFound("kind"))?;
    let header = state.hub.header();
    let found = state
        .hub
        .with_store(|store| view::inspect(store, header, kind, &ns, &name, query.explain));
    let view::Inspected {
        object,
        read_for,
        job,
        snapshots,
    } = found.ok_or(AppError::NotFound("object"))?;
    let read_for: Vec<Value> = read_for
        .iter()
        .map(|tj| json!({"kind": "TrainJob", "namespace": tj.namespace, "name": tj.name, "uid": tj.uid}))
        .collect();
    let observation = job.as_ref().and_then(|job| {
        state
            .hub
            .find(&ns, job)
            .iter()
            .find(|o| o.object.kind == kind.name() && o.object.name == name)
            .cloned()
    });
    let history = state.hub.history_of(&HistoryKey {
        kind: kind.name().to_string(),
        namespace: ns.clone(),
        name: name.clone(),
        uid: object.uid.clone(),
    });
    let queue = match kind {
        ObjectKind::TrainJob => queue_facts(&state, &caller, &ns, &name).await?,
        _ => None,
    };
    let mut body = json!({
        "object": object.value(),
        "observation": observation,
        "readFor": read_for,
        "historyText": history::timeline(&history),
        "history": history,
    });
    if let (Some(queue), Some(fields)) = (queue, body.as_object_mut()) {
        let queue = serde_json::to_value(queue).map_err(|_| AppError::Internal)?;
        fields.insert("queue".into(), queue);
    }
    if let Some(snapshots) = &snapshots {
        let explanation = snapshots
            .explanation_of(kind, &name)
            .map_err(|_| AppError::Internal)?;
        let explanation = serde_json::to_value(explanation).map_err(|_| AppError::Internal)?;
        if let Some(fields) = body.as_object_mut() {
            fields.insert("explanation".into(), explanation);
        }
    }
    Ok(Json(body))
}

pub(super) async fn snapshot(
    State(state): State<AppState>,
    Path(ns): Path<String>,
) -> Result<Response, AppError> {
    watched(&state, &ns)?;
    let text = state.hub.snapshot(&ns);
    Ok(([(header::CONTENT_TYPE, "application/json")], text).into_response())
}
