//! The HTTP API: JSON routes, the two server-sent event streams, health,
//! readiness and metrics. [`app`] builds the router; [`with_assets`] adds a
//! fallback (the web UI) without touching the API routes.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Json, Router};
use classify_wasm::Observation;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::{broadcast, watch};
use tower_http::limit::RequestBodyLimitLayer;

use super::hub::{encode_event, Frame, Hub, JobNews, LiveFrames};
use super::projection::ObjectKind;
use super::store::own_job;
use super::view;

/// Bytes a request body may have (every route is a GET; this only stops abuse).
pub const BODY_LIMIT: usize = 16 * 1024;
/// How often an idle SSE stream sends a comment, so proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Everything a handler needs.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The shared server state.
    pub hub: Arc<Hub>,
    /// The bearer token every `/api` request must present, when set.
    pub token: Option<Arc<str>>,
    /// The most SSE streams open at once.
    pub max_sse_clients: usize,
    /// Open SSE streams.
    pub sse_clients: Arc<AtomicUsize>,
    /// Turns `true` on shutdown: SSE streams end so connections can close.
    pub shutdown: watch::Receiver<bool>,
}

/// The one error type of the API. Bodies say what is wrong in public terms
/// only: `{"error": "..."}`.
#[derive(Debug, thiserror::Error)]
pub enum AppError {
    /// The namespace is not one the server watches.
    #[error("namespace is not watched")]
    NamespaceNotWatched,
    /// No such object, kind or job.
    #[error("{0} not found")]
    NotFound(&'static str),
    /// A missing or wrong bearer token.
    #[error("unauthorized")]
    Unauthorized,
    /// The SSE client cap is reached.
    #[error("too many event streams are open; try again later")]
    TooManyStreams,
    /// The engine failed on the server's own projection (a bug).
    #[error("internal error")]
    Internal,
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = match self {
            AppError::NamespaceNotWatched | AppError::NotFound(_) => StatusCode::NOT_FOUND,
            AppError::Unauthorized => StatusCode::UNAUTHORIZED,
            AppError::TooManyStreams => StatusCode::SERVICE_UNAVAILABLE,
            AppError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let mut response = (status, Json(json!({"error": self.to_string()}))).into_response();
        if matches!(self, AppError::Unauthorized) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if matches!(self, AppError::TooManyStreams) {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        }
        response
    }
}

/// The API router. It leaves `/` and every path outside `/api`, `/healthz`,
/// `/readyz` and `/metrics` free for [`with_assets`].
pub fn app(state: AppState) -> Router {
    let api = Router::new()
        .route("/api/v1/namespaces", get(namespaces))
        .route("/api/v1/namespaces/{ns}/jobs/{job}", get(find))
        .route("/api/v1/namespaces/{ns}/jobs/{job}/watch", get(watch_job))
        .route(
            "/api/v1/namespaces/{ns}/objects/{kind}/{name}",
            get(inspect),
        )
        .route("/api/v1/namespaces/{ns}/snapshot", get(snapshot))
        .route("/api/v1/namespaces/{ns}/snapshots", get(snapshots))
        .route_layer(middleware::from_fn_with_state(state.clone(), require_token));
    Router::new()
        .merge(api)
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT))
        .with_state(state)
}

/// Serves `assets` (for example the web UI's static files) for every path
/// the API does not route.
pub fn with_assets<S>(router: Router, assets: S) -> Router
where
    S: tower::Service<Request, Error = Infallible> + Clone + Send + Sync + 'static,
    S::Response: IntoResponse,
    S::Future: Send + 'static,
{
    router.fallback_service(assets)
}

/// Compares in time independent of where the inputs differ.
fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

async fn require_token(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, AppError> {
    if let Some(token) = &state.token {
        let presented = request
            .headers()
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .unwrap_or("");
        if !constant_time_eq(presented.as_bytes(), token.as_bytes()) {
            return Err(AppError::Unauthorized);
        }
    }
    Ok(next.run(request).await)
}

fn watched(state: &AppState, namespace: &str) -> Result<(), AppError> {
    if state.hub.watches(namespace) {
        Ok(())
    } else {
        Err(AppError::NamespaceNotWatched)
    }
}

async fn namespaces(State(state): State<AppState>) -> Json<Value> {
    let header = state.hub.header();
    Json(json!({
        "namespaces": state.hub.namespaces(),
        "allNamespaces": matches!(state.hub.scope(), super::hub::Scope::All),
        "mode": header.mode.as_str(),
        "nodesReadable": header.nodes_readable,
    }))
}

async fn readyz(State(state): State<AppState>) -> Response {
    let ready = state.hub.ready();
    let header = state.hub.header();
    let body = Json(json!({
        "ready": ready,
        "mode": header.mode.as_str(),
        "nodesReadable": header.nodes_readable,
    }));
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, body).into_response()
}

async fn metrics(State(state): State<AppState>) -> Response {
    let (bytes, pods) = state.hub.with_store(|s| s.pod_bytes());
    let mut text = state.hub.metrics.render();
    text.push_str("# HELP dispatch_dash_stored_pod_bytes Bytes held by stored pod projections.\n");
    text.push_str("# TYPE dispatch_dash_stored_pod_bytes gauge\n");
    text.push_str(&format!("dispatch_dash_stored_pod_bytes {bytes}\n"));
    text.push_str("# HELP dispatch_dash_stored_pods Stored pod projections.\n");
    text.push_str("# TYPE dispatch_dash_stored_pods gauge\n");
    text.push_str(&format!("dispatch_dash_stored_pods {pods}\n"));
    ([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response()
}

async fn find(
    State(state): State<AppState>,
    Path((ns, job)): Path<(String, String)>,
) -> Result<Json<Vec<Observation>>, AppError> {
    watched(&state, &ns)?;
    Ok(Json(state.hub.find(&ns, &job).as_ref().clone()))
}

#[derive(Debug, Deserialize)]
struct InspectQuery {
    #[serde(default)]
    explain: bool,
}

async fn inspect(
    State(state): State<AppState>,
    Path((ns, kind, name)): Path<(String, String, String)>,
    Query(query): Query<InspectQuery>,
) -> Result<Json<Value>, AppError> {
    watched(&state, &ns)?;
    let kind = ObjectKind::parse(&kind)
        .filter(|k| k.namespaced())
        .ok_or(AppError::NotFound("kind"))?;
    let header = state.hub.header();
    let found = state.hub.with_store(|store| {
        let object = store.get(kind, &ns, &name)?.clone();
        let read_for: Vec<Value> = match kind {
            ObjectKind::Pod if !store.belongs_to_gone_trainjob(&object) => {
                store.trainjobs_selecting(&object)
            }
            ObjectKind::JobSet if !store.belongs_to_gone_trainjob(&object) => store
                .get(ObjectKind::TrainJob, &ns, &name)
                .cloned()
                .into_iter()
                .collect(),
            ObjectKind::Workload => object
                .job_uid
                .as_ref()
                .and_then(|uid| store.trainjobs_by_uid.get(uid))
                .and_then(|(tj_ns, tj_name)| store.get(ObjectKind::TrainJob, tj_ns, tj_name))
                .cloned()
                .into_iter()
                .collect(),
            _ => Vec::new(),
        }
        .iter()
        .map(|tj| json!({"kind": "TrainJob", "namespace": tj.namespace, "name": tj.name, "uid": tj.uid}))
        .collect();
        // A Workload's observation is its TrainJob's; other kinds have their own job.
        let job = match kind {
            ObjectKind::Workload => read_for
                .first()
                .and_then(|tj| tj["name"].as_str())
                .and_then(|n| store.get(ObjectKind::TrainJob, &ns, n))
                .and_then(|tj| own_job(tj)),
            _ => own_job(&object),
        };
        let snapshots = match (&job, query.explain) {
            (Some(job), true) => Some(view::job_snapshots(store, header, &ns, job)),
            _ => None,
        };
        Some((object, read_for, job, snapshots))
    });
    let (object, read_for, job, snapshots) = found.ok_or(AppError::NotFound("object"))?;
    let observation = job.as_ref().and_then(|job| {
        state
            .hub
            .find(&ns, job)
            .iter()
            .find(|o| o.object.kind == kind.name() && o.object.name == name)
            .cloned()
    });
    let mut body = json!({
        "object": object.value(),
        "observation": observation,
        "readFor": read_for,
    });
    if let (Some(job), Some(snapshots)) = (&job, &snapshots) {
        let explanations =
            view::explain_snapshots(snapshots, header, job).map_err(|_| AppError::Internal)?;
        let explanation = explanations.into_iter().find(|e| {
            e.observation.object.kind == kind.name() && e.observation.object.name == name
        });
        body["explanation"] = serde_json::to_value(explanation).map_err(|_| AppError::Internal)?;
    }
    Ok(Json(body))
}

async fn snapshot(
    State(state): State<AppState>,
    Path(ns): Path<String>,
) -> Result<Response, AppError> {
    watched(&state, &ns)?;
    let text = state.hub.snapshot(&ns);
    Ok(([(header::CONTENT_TYPE, "application/json")], text).into_response())
}

/// Counts an open SSE stream for as long as it lives.
struct StreamGuard {
    clients: Arc<AtomicUsize>,
    hub: Arc<Hub>,
}

impl StreamGuard {
    fn acquire(state: &AppState) -> Result<StreamGuard, AppError> {
        let admitted = state
            .sse_clients
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < state.max_sse_clients).then_some(n + 1)
            })
            .is_ok();
        if !admitted {
            state
                .hub
                .metrics
                .sse_rejected
                .fetch_add(1, Ordering::Relaxed);
            return Err(AppError::TooManyStreams);
        }
        state
            .hub
            .metrics
            .sse_clients
            .fetch_add(1, Ordering::Relaxed);
        Ok(StreamGuard {
            clients: state.sse_clients.clone(),
            hub: state.hub.clone(),
        })
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.clients.fetch_sub(1, Ordering::AcqRel);
        self.hub.metrics.sse_clients.fetch_sub(1, Ordering::Relaxed);
    }
}

fn sse_response(body: Body) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

const KEEP_ALIVE_COMMENT: &[u8] = b": keep-alive\n\n";

struct SnapshotStream {
    backlog: VecDeque<Frame>,
    live: LiveFrames,
    shutdown: watch::Receiver<bool>,
    keep_alive: tokio::time::Interval,
    _guard: StreamGuard,
}

async fn snapshots(
    State(state): State<AppState>,
    Path(ns): Path<String>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    watched(&state, &ns)?;
    let guard = StreamGuard::acquire(&state)?;
    let last_event_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let subscription = state
        .hub
        .subscribe_snapshots(&ns, last_event_id)
        .ok_or(AppError::NamespaceNotWatched)?;
    let hub = state.hub.clone();
    let stream = SnapshotStream {
        backlog: subscription.backlog.into(),
        live: subscription.live,
        shutdown: state.shutdown.clone(),
        keep_alive: keep_alive_timer(),
        _guard: guard,
    };
    let body = futures::stream::unfold(stream, move |mut s| {
        let hub = hub.clone();
        async move {
            if let Some(frame) = s.backlog.pop_front() {
                return Some((Ok::<Bytes, Infallible>(frame.bytes), s));
            }
            tokio::select! {
                received = s.live.recv() => match received {
                    Ok(frame) => {
                        hub.metrics.observe_latency(frame.born.elapsed());
                        Some((Ok(frame.bytes), s))
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        // Too slow: drop it; it resumes with Last-Event-ID.
                        hub.metrics.sse_lagged.fetch_add(1, Ordering::Relaxed);
                        None
                    }
                    Err(broadcast::error::RecvError::Closed) => None,
                },
                _ = s.keep_alive.tick() => Some((Ok(Bytes::from_static(KEEP_ALIVE_COMMENT)), s)),
                _ = shutting_down(&mut s.shutdown) => None,
            }
        }
    });
    Ok(sse_response(Body::from_stream(body)))
}

/// Completes when the server shuts down (never, if it has no shutdown
/// signal any more).
async fn shutting_down(shutdown: &mut watch::Receiver<bool>) {
    if shutdown.wait_for(|down| *down).await.is_err() {
        std::future::pending::<()>().await;
    }
}

fn keep_alive_timer() -> tokio::time::Interval {
    let mut timer = tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    timer
}

/// An observation's identity, for "differs from the last one sent".
fn object_key(o: &Observation) -> (String, String, String) {
    (
        o.object.kind.clone(),
        o.object.name.clone(),
        o.object.uid.clone(),
    )
}

struct JobStream {
    hub: Arc<Hub>,
    namespace: String,
    job: String,
    sent: HashMap<(String, String, String), Observation>,
    pending: VecDeque<Bytes>,
    next_id: u64,
    news: broadcast::Receiver<JobNews>,
    shutdown: watch::Receiver<bool>,
    keep_alive: tokio::time::Interval,
    _guard: StreamGuard,
}

impl JobStream {
    /// Queues every observation that differs from the last one sent.
    fn refresh(&mut self) {
        let observations = self.hub.find(&self.namespace, &self.job);
        for o in observations.iter() {
            let key = object_key(o);
            if self.sent.get(&key) == Some(o) {
                continue;
            }
            let data = serde_json::to_string(o).unwrap_or_default();
            self.pending
                .push_back(encode_event(Some(self.next_id), "observation", &data));
            self.next_id += 1;
            self.sent.insert(key, o.clone());
        }
    }
}

async fn watch_job(
    State(state): State<AppState>,
    Path((ns, job)): Path<(String, String)>,
) -> Result<Response, AppError> {
    watched(&state, &ns)?;
    let guard = StreamGuard::acquire(&state)?;
    // Subscribe before the first Find so no change falls in between.
    let news = state.hub.subscribe_news();
    let mut stream = JobStream {
        hub: state.hub.clone(),
        namespace: ns,
        job,
        sent: HashMap::new(),
        pending: VecDeque::new(),
        next_id: 1,
        news,
        shutdown: state.shutdown.clone(),
        keep_alive: keep_alive_timer(),
        _guard: guard,
    };
    stream.refresh();
    let body = futures::stream::unfold(stream, |mut s| async move {
        loop {
            if let Some(bytes) = s.pending.pop_front() {
                return Some((Ok::<Bytes, Infallible>(bytes), s));
            }
            tokio::select! {
                news = s.news.recv() => match news {
                    Ok(JobNews::Changed(jobs)) => {
                        if jobs.contains(&(s.namespace.clone(), s.job.clone())) {
                            s.refresh();
                        }
                    }
                    // Missed news: compare against a fresh Find.
                    Err(broadcast::error::RecvError::Lagged(_)) => s.refresh(),
                    Ok(JobNews::WatchInterrupted(scope)) => {
                        if scope.as_ref().is_none_or(|ns| *ns == s.namespace) {
                            // Section 12: the stream closes; the caller
                            // subscribes again.
                            return None;
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                _ = s.keep_alive.tick() => {
                    return Some((Ok(Bytes::from_static(KEEP_ALIVE_COMMENT)), s));
                }
                _ = shutting_down(&mut s.shutdown) => return None,
            }
        }
    });
    Ok(sse_response(Body::from_stream(body)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::serve::hub::Scope;
    use crate::serve::store::StoreLimits;
    use axum::http::Request as HttpRequest;
    use classify_wasm::Mode;
    use tower::ServiceExt;

    fn state(token: Option<&str>) -> (AppState, watch::Sender<bool>) {
        let (tx, rx) = watch::channel(false);
        let hub = Hub::new(
            Mode::Plain,
            Scope::Namespaces(vec!["team-a".into()]),
            StoreLimits::default(),
        );
        let state = AppState {
            hub: Arc::new(hub),
            token: token.map(Arc::from),
            max_sse_clients: 4,
            sse_clients: Arc::new(AtomicUsize::new(0)),
            shutdown: rx,
        };
        (state, tx)
    }

    async fn call(router: Router, uri: &str, auth: Option<&str>) -> (StatusCode, String) {
        let mut request = HttpRequest::get(uri);
        if let Some(auth) = auth {
            request = request.header(header::AUTHORIZATION, auth);
        }
        let response = router
            .oneshot(request.body(Body::empty()).expect("request"))
            .await
            .expect("infallible");
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .expect("body");
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    #[tokio::test]
    async fn health_readiness_and_errors_without_a_cluster() {
        let (state, _tx) = state(None);
        let router = app(state);
        assert_eq!(
            call(router.clone(), "/healthz", None).await,
            (StatusCode::OK, "ok".into())
        );
        let (status, body) = call(router.clone(), "/readyz", None).await;
        assert_eq!(
            status,
            StatusCode::SERVICE_UNAVAILABLE,
            "no watch has listed yet"
        );
        assert!(body.contains("\"ready\":false"));
        let (status, body) = call(router.clone(), "/api/v1/namespaces/other/snapshot", None).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
        assert_eq!(body, r#"{"error":"namespace is not watched"}"#);
        let (status, body) =
            call(router.clone(), "/api/v1/namespaces/team-a/jobs/llm-1", None).await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "[]"));
        let (status, body) = call(router, "/api/v1/namespaces/team-a/snapshot", None).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            body,
            r#"{"kind":"Snapshot","mode":"plain","nodesReadable":true,"items":[],"captured":[]}"#
        );
    }

    #[tokio::test]
    async fn the_token_guards_the_api_only_and_assets_take_the_rest() {
        let (state, _tx) = state(Some("t0ken"));
        let assets = tower::service_fn(|_request: Request| async {
            Ok::<_, Infallible>("the web UI".into_response())
        });
        let router = with_assets(app(state), assets);
        let (status, _) = call(router.clone(), "/api/v1/namespaces", None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (status, _) = call(router.clone(), "/api/v1/namespaces", Some("Bearer t0ken")).await;
        assert_eq!(status, StatusCode::OK);
        let (status, body) = call(router.clone(), "/", None).await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "the web UI"));
        let (status, _) = call(router, "/metrics", None).await;
        assert_eq!(status, StatusCode::OK);
    }

    #[test]
    fn token_comparison_is_exact() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
