//! The HTTP API: JSON routes, the two server-sent event streams, health,
//! readiness and metrics. [`app`] builds the router; [`app_with_assets`]
//! adds a fallback (the web UI) without touching the API routes.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Path, Query, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use classify_wasm::Observation;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::{broadcast, watch};
use tower_http::limit::RequestBodyLimitLayer;

use super::health::WatchState;
use super::hosts::HostPolicy;
use super::hub::{encode_event, Frame, Hub, JobNews, LiveFrames};
use super::listen::ConnectionMetrics;
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
    /// The Host header values served.
    pub hosts: Arc<HostPolicy>,
    /// The open SSE streams, and their caps.
    pub streams: Arc<StreamSlots>,
    /// The time a request (other than an SSE stream's life) may take.
    pub request_timeout: Duration,
    /// The connection layer's counters, rendered in `/metrics`.
    pub connections: Arc<ConnectionMetrics>,
    /// The cluster is the embedded, simulated one.
    pub demo: bool,
    /// Turns `true` on shutdown: SSE streams end so connections can close.
    pub shutdown: watch::Receiver<bool>,
}

/// The caps on open SSE streams: in all, and per client address (so one
/// client cannot take every slot).
#[derive(Debug)]
pub struct StreamSlots {
    max_total: usize,
    max_per_client: usize,
    open: Mutex<OpenStreams>,
}

#[derive(Debug, Default)]
struct OpenStreams {
    total: usize,
    /// Only addresses with an open stream have an entry, so the map holds at
    /// most `max_total` entries.
    by_client: HashMap<IpAddr, usize>,
}

/// Why a stream was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamRefusal {
    /// Every slot is taken.
    Full,
    /// This client address holds its share.
    ClientFull,
}

impl StreamSlots {
    /// Caps of `max_total` streams, `max_per_client` of them per address.
    pub fn new(max_total: usize, max_per_client: usize) -> Self {
        StreamSlots {
            max_total,
            max_per_client,
            open: Mutex::new(OpenStreams::default()),
        }
    }

    fn open(&self) -> std::sync::MutexGuard<'_, OpenStreams> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a slot for `client` (`None`: a caller without an address, such
    /// as an in-process test, which only the total cap applies to).
    pub fn acquire(&self, client: Option<IpAddr>) -> Result<(), StreamRefusal> {
        let mut open = self.open();
        if open.total >= self.max_total {
            return Err(StreamRefusal::Full);
        }
        if let Some(ip) = client {
            let held = open.by_client.entry(ip).or_insert(0);
            if *held >= self.max_per_client {
                if *held == 0 {
                    open.by_client.remove(&ip);
                }
                return Err(StreamRefusal::ClientFull);
            }
            *held += 1;
        }
        open.total += 1;
        Ok(())
    }

    /// Gives back a slot taken with [`StreamSlots::acquire`].
    pub fn release(&self, client: Option<IpAddr>) {
        let mut open = self.open();
        open.total = open.total.saturating_sub(1);
        if let Some(ip) = client {
            if let Some(held) = open.by_client.get_mut(&ip) {
                *held -= 1;
                if *held == 0 {
                    open.by_client.remove(&ip);
                }
            }
        }
    }

    /// Streams open now.
    pub fn total(&self) -> usize {
        self.open().total
    }
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
    /// This client address holds its share of the SSE streams.
    #[error("too many event streams are open from this address; close one first")]
    TooManyStreamsFromClient,
    /// The Host header names a site this server is not (DNS rebinding).
    #[error("misdirected request")]
    MisdirectedHost,
    /// The request took longer than the request time limit.
    #[error("the request took too long; try again later")]
    Timeout,
    /// The engine failed on the server's own projection (a bug).
    #[error("internal error")]
    Internal,
}

impl IntoResponse for AppError {
    fn into_response(self) -> Response {
        let status = match self {
            AppError::NamespaceNotWatched | AppError::NotFound(_) => StatusCode::NOT_FOUND,
            AppError::Unauthorized => StatusCode::UNAUTHORIZED,
            AppError::TooManyStreams | AppError::TooManyStreamsFromClient | AppError::Timeout => {
                StatusCode::SERVICE_UNAVAILABLE
            }
            AppError::MisdirectedHost => StatusCode::MISDIRECTED_REQUEST,
            AppError::Internal => StatusCode::INTERNAL_SERVER_ERROR,
        };
        let mut response = (status, Json(json!({"error": self.to_string()}))).into_response();
        if matches!(self, AppError::Unauthorized) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        if matches!(
            self,
            AppError::TooManyStreams | AppError::TooManyStreamsFromClient | AppError::Timeout
        ) {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from_static("5"));
        }
        response
    }
}

/// The API router alone: paths it does not route answer 404.
pub fn app(state: AppState) -> Router {
    guarded(routes(state.clone()), state)
}

/// The API router with `assets` (for example the web UI's static files)
/// answering every path the API does not route. The Host check, the time
/// limit and the body limit guard both.
pub fn app_with_assets<S>(state: AppState, assets: S) -> Router
where
    S: tower::Service<Request, Error = Infallible> + Clone + Send + Sync + 'static,
    S::Response: IntoResponse,
    S::Future: Send + 'static,
{
    guarded(routes(state.clone()).fallback_service(assets), state)
}

/// `/api`, `/healthz`, `/readyz` and `/metrics`.
fn routes(state: AppState) -> Router {
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
        .with_state(state)
}

/// Layers every request passes, whatever answers it. Layers apply only to
/// what a router holds when they are added, so this comes last.
fn guarded(router: Router, state: AppState) -> Router {
    router
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT))
        .layer(middleware::from_fn_with_state(state.clone(), time_limit))
        .layer(middleware::from_fn_with_state(state, check_host))
}

/// Refuses a request whose Host header names another site: a page on an
/// attacker's domain that DNS-rebinds to this address must not read the
/// API, which runs with the operator's cluster credentials.
async fn check_host(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, AppError> {
    let host = request
        .headers()
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .or_else(|| request.uri().authority().map(|a| a.as_str()));
    match host {
        Some(host) if state.hosts.allows(host) => Ok(next.run(request).await),
        _ => {
            state
                .connections
                .misdirected
                .fetch_add(1, Ordering::Relaxed);
            Err(AppError::MisdirectedHost)
        }
    }
}

/// Bounds the time to produce a response. An SSE handler returns its
/// response at once and streams afterwards, so only its start is bounded.
async fn time_limit(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, AppError> {
    tokio::time::timeout(state.request_timeout, next.run(request))
        .await
        .map_err(|_| AppError::Timeout)
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

async fn namespaces(State(state): State<AppState>) -> Json<Value> {
    let header = state.hub.header();
    Json(json!({
        "namespaces": state.hub.namespaces(),
        "allNamespaces": matches!(state.hub.scope(), super::hub::Scope::All),
        "mode": header.mode.as_str(),
        "nodesReadable": header.nodes_readable,
        "demo": state.demo,
        "apiVersions": api_versions(&state.hub),
    }))
}

async fn readyz(State(state): State<AppState>) -> Response {
    let ready = state.hub.ready();
    let header = state.hub.header();
    // Public reasons only: states, times and versions, no error text.
    let watches: Vec<Value> = state
        .hub
        .health()
        .all()
        .iter()
        .filter(|h| h.state != WatchState::Ok)
        .map(|h| h.to_json())
        .collect();
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

async fn metrics(State(state): State<AppState>) -> Response {
    let (bytes, pods) = state.hub.with_store(|s| s.pod_bytes());
    let mut text = state.hub.metrics.render();
    text.push_str("# HELP dispatch_dash_stored_pod_bytes Bytes held by stored pod projections.\n");
    text.push_str("# TYPE dispatch_dash_stored_pod_bytes gauge\n");
    text.push_str(&format!("dispatch_dash_stored_pod_bytes {bytes}\n"));
    text.push_str("# HELP dispatch_dash_stored_pods Stored pod projections.\n");
    text.push_str("# TYPE dispatch_dash_stored_pods gauge\n");
    text.push_str(&format!("dispatch_dash_stored_pods {pods}\n"));
    state.connections.render(&mut text);
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

/// Holds an SSE slot for as long as the stream lives.
struct StreamGuard {
    state: AppState,
    client: Option<IpAddr>,
}

impl StreamGuard {
    fn acquire(state: &AppState, client: Option<IpAddr>) -> Result<StreamGuard, AppError> {
        if let Err(refusal) = state.streams.acquire(client) {
            state
                .hub
                .metrics
                .sse_rejected
                .fetch_add(1, Ordering::Relaxed);
            return Err(match refusal {
                StreamRefusal::Full => AppError::TooManyStreams,
                StreamRefusal::ClientFull => AppError::TooManyStreamsFromClient,
            });
        }
        state
            .hub
            .metrics
            .sse_clients
            .fetch_add(1, Ordering::Relaxed);
        Ok(StreamGuard {
            state: state.clone(),
            client,
        })
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.state.streams.release(self.client);
        self.state
            .hub
            .metrics
            .sse_clients
            .fetch_sub(1, Ordering::Relaxed);
    }
}

/// The client's address, when the request came over a connection (the
/// accept loop records it).
fn client_ip(peer: Option<Extension<ConnectInfo<SocketAddr>>>) -> Option<IpAddr> {
    peer.map(|Extension(ConnectInfo(addr))| addr.ip())
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
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    watched(&state, &ns)?;
    let guard = StreamGuard::acquire(&state, client_ip(peer))?;
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
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
) -> Result<Response, AppError> {
    watched(&state, &ns)?;
    let guard = StreamGuard::acquire(&state, client_ip(peer))?;
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
            hosts: Arc::new(HostPolicy::new(
                "127.0.0.1:8080".parse().expect("addr"),
                &["dispatch.example.com".to_string()],
            )),
            streams: Arc::new(StreamSlots::new(4, 2)),
            request_timeout: Duration::from_secs(30),
            connections: Arc::new(ConnectionMetrics::default()),
            demo: false,
            shutdown: rx,
        };
        (state, tx)
    }

    async fn call(router: Router, uri: &str, auth: Option<&str>) -> (StatusCode, String) {
        call_host(router, uri, auth, "127.0.0.1:8080").await
    }

    async fn call_host(
        router: Router,
        uri: &str,
        auth: Option<&str>,
        host: &str,
    ) -> (StatusCode, String) {
        let mut request = HttpRequest::get(uri).header(header::HOST, host);
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
        let router = app_with_assets(state, assets);
        let (status, _) = call(router.clone(), "/api/v1/namespaces", None).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        let (status, _) = call(router.clone(), "/api/v1/namespaces", Some("Bearer t0ken")).await;
        assert_eq!(status, StatusCode::OK);
        let (status, body) = call(router.clone(), "/", None).await;
        assert_eq!((status, body.as_str()), (StatusCode::OK, "the web UI"));
        let (status, _) = call(router, "/metrics", None).await;
        assert_eq!(status, StatusCode::OK);
    }

    #[tokio::test]
    async fn a_foreign_host_is_refused_everywhere_and_loopback_names_are_served() {
        let (state, _tx) = state(None);
        let connections = state.connections.clone();
        let assets = tower::service_fn(|_request: Request| async {
            Ok::<_, Infallible>("the web UI".into_response())
        });
        let router = app_with_assets(state, assets);
        for uri in ["/", "/healthz", "/metrics", "/api/v1/namespaces"] {
            let (status, body) =
                call_host(router.clone(), uri, None, "evil.example.com:8080").await;
            assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{uri}");
            assert_eq!(body, r#"{"error":"misdirected request"}"#, "{uri}");
        }
        assert_eq!(connections.misdirected.load(Ordering::Relaxed), 4);
        for host in [
            "localhost:8080",
            "127.0.0.1",
            "[::1]:9000",
            "dispatch.example.com",
        ] {
            let (status, _) = call_host(router.clone(), "/api/v1/namespaces", None, host).await;
            assert_eq!(status, StatusCode::OK, "{host}");
        }
        // No Host header at all is refused too.
        let response = router
            .oneshot(
                HttpRequest::get("/healthz")
                    .body(Body::empty())
                    .expect("request"),
            )
            .await
            .expect("infallible");
        assert_eq!(response.status(), StatusCode::MISDIRECTED_REQUEST);
    }

    #[tokio::test]
    async fn a_request_past_the_time_limit_gets_503() {
        let (mut state, _tx) = state(None);
        state.request_timeout = Duration::from_millis(50);
        let slow = tower::service_fn(|_request: Request| async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok::<_, Infallible>("too late".into_response())
        });
        let router = app_with_assets(state, slow);
        let answered = tokio::time::timeout(
            Duration::from_secs(20),
            call(router.clone(), "/slow-asset", None),
        )
        .await
        .expect("the time limit answers, not the test's timeout");
        assert_eq!(answered.0, StatusCode::SERVICE_UNAVAILABLE);
        assert!(answered.1.contains("took too long"), "{}", answered.1);
        // Fast routes are untouched.
        assert_eq!(call(router, "/healthz", None).await.0, StatusCode::OK);
    }

    #[test]
    fn stream_slots_cap_the_total_and_each_client() {
        let slots = StreamSlots::new(3, 2);
        let a: IpAddr = "10.0.0.1".parse().expect("ip");
        let b: IpAddr = "10.0.0.2".parse().expect("ip");
        assert_eq!(slots.acquire(Some(a)), Ok(()));
        assert_eq!(slots.acquire(Some(a)), Ok(()));
        assert_eq!(slots.acquire(Some(a)), Err(StreamRefusal::ClientFull));
        assert_eq!(slots.acquire(Some(b)), Ok(()));
        assert_eq!(slots.acquire(Some(b)), Err(StreamRefusal::Full));
        assert_eq!(slots.acquire(None), Err(StreamRefusal::Full));
        slots.release(Some(a));
        assert_eq!(slots.total(), 2);
        assert_eq!(slots.acquire(Some(b)), Ok(()));
        slots.release(Some(a));
        slots.release(Some(b));
        slots.release(Some(b));
        assert_eq!(slots.total(), 0);
        assert!(
            slots.open().by_client.is_empty(),
            "no entry outlives its streams"
        );
    }

    #[test]
    fn token_comparison_is_exact() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
