//! The HTTP API: JSON routes, the two server-sent event streams, health,
//! readiness and metrics, and the session routes. [`app`] builds the
//! router; [`app_with_assets`] adds a fallback (the web UI) without touching
//! the API routes. Who may ask what is decided in [`super::auth`]; the
//! handlers here only ask it: one layer identifies the caller of every
//! `/api` route and answers 403 for a namespace they may not see, before
//! the route learns whether it exists.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Path, Query, RawPathParams, Request, State};
use axum::http::Method;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use classify_wasm::Observation;
use prometheus_client::registry::Registry;
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::sync::{broadcast, watch};
use tower_http::limit::RequestBodyLimitLayer;

use super::auth::{self, AuthMode, Authenticator, Identity, Secret, Spend};
use super::health::WatchState;
use super::history::{self, HistoryKey};
use super::hosts::HostPolicy;
use super::hub::{encode_event, Hub, JobNews, LiveFrames};
use super::listen::ConnectionMetrics;
use super::projection::ObjectKind;
use super::scrape::{self, Scrape};
use super::session::{self, SessionStore};
use super::store::own_job;
use super::view;

/// Bytes a request body may have (only sign-in has a body; this stops abuse).
pub const BODY_LIMIT: usize = 16 * 1024;
/// How often an idle SSE stream sends a comment, so proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// Everything a handler needs.
#[derive(Debug, Clone)]
pub struct AppState {
    /// The shared server state.
    pub hub: Arc<Hub>,
    /// Who is asking and what they may see.
    pub auth: Arc<Authenticator>,
    /// The signed-in browsers.
    pub sessions: Arc<SessionStore>,
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
    /// Where users reach the dashboard (`--public-url`), `""` if unknown.
    pub public_url: String,
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
    /// No identity, or one that was rejected.
    #[error("unauthorized")]
    Unauthorized,
    /// The caller may not see this (a namespace, `/metrics`), or a POST or
    /// DELETE came from another site.
    #[error("forbidden")]
    Forbidden,
    /// The request could not be read (a sign-in body that is not
    /// `{"token": "..."}`).
    #[error("bad request")]
    BadRequest,
    /// A TokenReview or SubjectAccessReview could not be made.
    #[error("authentication is unavailable; try again later")]
    AuthUnavailable,
    /// The caller asked for reviews faster than its rate.
    #[error("too many requests; slow down")]
    TooManyRequests,
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
            AppError::Forbidden => StatusCode::FORBIDDEN,
            AppError::BadRequest => StatusCode::BAD_REQUEST,
            AppError::TooManyStreams
            | AppError::TooManyStreamsFromClient
            | AppError::Timeout
            | AppError::AuthUnavailable => StatusCode::SERVICE_UNAVAILABLE,
            AppError::MisdirectedHost => StatusCode::MISDIRECTED_REQUEST,
            AppError::TooManyRequests => StatusCode::TOO_MANY_REQUESTS,
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
            AppError::TooManyStreams
                | AppError::TooManyStreamsFromClient
                | AppError::Timeout
                | AppError::AuthUnavailable
                | AppError::TooManyRequests
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

/// The probe listener's router: `/healthz` and `/readyz` (which, outside
/// `--auth none`, names no namespace: a probe has no identity), nothing
/// else, with the time
/// limit. No Host check: the kubelet dials the pod's IP, and nothing here
/// reads the cluster's objects.
pub fn probe_app(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .layer(middleware::map_response(api_headers))
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT))
        .layer(middleware::from_fn_with_state(state.clone(), time_limit))
        .with_state(state)
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
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            require_identity,
        ));
    Router::new()
        .merge(api)
        .route(
            "/api/v1/session",
            get(session_info).post(sign_in).delete(sign_out),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(readyz))
        .route(
            "/metrics",
            get(metrics).layer(Extension(Arc::new(
                Scrape {
                    hub: state.hub.clone(),
                    connections: state.connections.clone(),
                    auth: state.auth.clone(),
                    public_url: state.public_url.clone(),
                }
                .into_registry(),
            ))),
        )
        .layer(middleware::map_response(api_headers))
        .with_state(state)
}

/// Every API answer: never sniffed as another type (a JSON body holding
/// cluster text must not be run as HTML), and never stored by a cache, since
/// what a caller may see is decided per caller. An answer that says how to
/// cache itself (an event stream's `no-cache`) keeps its own word.
async fn api_headers(mut response: Response) -> Response {
    let headers = response.headers_mut();
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    if !headers.contains_key(header::CACHE_CONTROL) {
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    }
    response
}

/// Layers every request passes, whatever answers it. Layers apply only to
/// what a router holds when they are added, so this comes last.
fn guarded(router: Router, state: AppState) -> Router {
    router
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT))
        .layer(middleware::from_fn_with_state(state.clone(), time_limit))
        .layer(middleware::from_fn_with_state(state.clone(), check_origin))
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

/// Refuses a POST or DELETE (any method that changes state) whose `Origin`
/// is not this server's own `scheme://Host`, or that has none (browsers
/// always send it on these methods): another site must not sign a browser
/// in or out.
async fn check_origin(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Result<Response, AppError> {
    let method = request.method();
    if method == Method::GET || method == Method::HEAD || method == Method::OPTIONS {
        return Ok(next.run(request).await);
    }
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|v| v.to_str().ok());
    let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
    let scheme = if over_https(&state, &request) {
        "https"
    } else {
        "http"
    };
    match (host, origin) {
        (Some(host), Some(origin)) if same_origin(origin, scheme, host) => {
            Ok(next.run(request).await)
        }
        _ => Err(AppError::Forbidden),
    }
}

/// Whether `origin` is `scheme://host` (ASCII case aside).
fn same_origin(origin: &str, scheme: &str, host: &str) -> bool {
    origin
        .strip_prefix(scheme)
        .and_then(|rest| rest.strip_prefix("://"))
        .is_some_and(|rest| rest.eq_ignore_ascii_case(host))
}

/// Whether the request came over HTTPS: the server's own TLS, or a trusted
/// proxy's word.
fn over_https(state: &AppState, request: &Request) -> bool {
    if request
        .extensions()
        .get::<super::listen::OverTls>()
        .is_some()
    {
        return true;
    }
    let peer = request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| *addr);
    let proto = request
        .headers()
        .get("x-forwarded-proto")
        .and_then(|v| v.to_str().ok());
    auth::came_over_https(peer, proto, &state.auth.config().trusted_proxies)
}

/// An identified caller: the token presented (to review again) and who the
/// cluster (or the shared token) says it is.
#[derive(Debug, Clone)]
pub struct Caller {
    token: Secret,
    /// The session the token came from, when it came from the cookie (an
    /// id is as good as a token, so it is a [`Secret`] too).
    session: Option<Secret>,
    identity: Identity,
}

/// The token a request presents, and the session it came from (if from the
/// cookie): `Authorization: Bearer` first, then the session cookie.
fn presented_token(state: &AppState, headers: &HeaderMap) -> Option<(Secret, Option<Secret>)> {
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| Secret::from(token.trim()));
    if let Some(token) = bearer {
        return Some((token, None));
    }
    let cookies = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok());
    let id = session::session_id(cookies)?;
    let token = state.sessions.token(id, std::time::Instant::now())?;
    Some((token, Some(Secret::from(id))))
}

/// Who is asking: 401 without a valid identity. `origin` is the client
/// address, whose failed attempts are rate-limited.
async fn identify(
    state: &AppState,
    headers: &HeaderMap,
    origin: Option<IpAddr>,
) -> Result<Caller, AppError> {
    let (token, session) = presented_token(state, headers).ok_or(AppError::Unauthorized)?;
    let origin = limited_origin(state, origin);
    match state.auth.authenticate(token.expose(), None, origin).await {
        Ok(identity) => Ok(Caller {
            token,
            session,
            identity,
        }),
        Err(auth::Error::Unauthenticated) => {
            // A session whose token stopped working is over.
            if let Some(id) = session {
                state.sessions.remove(id.expose());
            }
            Err(AppError::Unauthorized)
        }
        Err(e) => Err(review_failed(e)),
    }
}

/// The client address a request came from, when the listener knows it.
fn origin_of(request: &Request) -> Option<IpAddr> {
    request
        .extensions()
        .get::<ConnectInfo<SocketAddr>>()
        .map(|ConnectInfo(addr)| addr.ip())
}

/// The address failed sign-ins are counted against: the client's, unless
/// it is a `--trusted-proxy`, which speaks for many users at once (one
/// guesser behind it must not lock every user out) and limits its own.
fn limited_origin(state: &AppState, origin: Option<IpAddr>) -> Option<IpAddr> {
    let trusted = &state.auth.config().trusted_proxies;
    origin.filter(|ip| !trusted.iter().any(|net| net.contains(*ip)))
}

fn review_failed(e: auth::Error) -> AppError {
    match e {
        auth::Error::Unauthenticated => AppError::Unauthorized,
        auth::Error::RateLimited => AppError::TooManyRequests,
        e => {
            tracing::warn!(error = %e, "an access review failed");
            AppError::AuthUnavailable
        }
    }
}

/// Every `/api` route but the session's: identifies the caller (unless the
/// mode is `none`) and, for a `{ns}` route, answers 403 when they may not
/// see the namespace, whether or not it exists. A `{ns}` that cannot name a
/// namespace (not a DNS-1123 label) is 403 before anything else, so it
/// costs the cluster no review and the caches no entry.
async fn require_identity(
    State(state): State<AppState>,
    params: RawPathParams,
    mut request: Request,
    next: Next,
) -> Result<Response, AppError> {
    if state.auth.mode() == AuthMode::None {
        return Ok(next.run(request).await);
    }
    let namespace = params
        .iter()
        .find(|(name, _)| *name == "ns")
        .map(|(_, ns)| ns);
    if namespace.is_some_and(|ns| !auth::is_namespace_name(ns)) {
        return Err(AppError::Forbidden);
    }
    let caller = identify(&state, request.headers(), origin_of(&request)).await?;
    if let Some(namespace) = namespace {
        let allowed = state
            .auth
            .may_see_namespace(
                caller.token.expose(),
                &caller.identity,
                namespace,
                None,
                Spend::Request,
            )
            .await
            .map_err(review_failed)?;
        if !allowed {
            return Err(AppError::Forbidden);
        }
    }
    request.extensions_mut().insert(caller);
    Ok(next.run(request).await)
}

/// The session document: who the caller is, and the mode.
fn session_document(mode: AuthMode, identity: Option<&Identity>) -> Value {
    match identity {
        Some(identity) => json!({
            "user": identity.user,
            "groups": identity.groups,
            "auth": mode.as_str(),
        }),
        None => json!({"user": null, "auth": mode.as_str()}),
    }
}

#[derive(Debug, Deserialize)]
struct SignIn {
    token: Secret,
}

/// `POST /api/v1/session`: trades a valid token for a session cookie.
async fn sign_in(State(state): State<AppState>, request: Request) -> Result<Response, AppError> {
    let mode = state.auth.mode();
    let secure = over_https(&state, &request);
    let origin = origin_of(&request);
    let body = axum::body::to_bytes(request.into_body(), BODY_LIMIT)
        .await
        .map_err(|_| AppError::BadRequest)?;
    let SignIn { token } = serde_json::from_slice(&body).map_err(|_| AppError::BadRequest)?;
    if mode == AuthMode::None {
        return Ok(Json(session_document(mode, None)).into_response());
    }
    let identity = state
        .auth
        .authenticate(token.expose(), None, limited_origin(&state, origin))
        .await
        .map_err(review_failed)?;
    let id = state
        .sessions
        .create(token.expose(), std::time::Instant::now())
        .map_err(|e| {
            tracing::error!(error = %e, "no session id");
            AppError::Internal
        })?;
    let cookie =
        HeaderValue::from_str(&session::set_cookie(&id, secure)).map_err(|_| AppError::Internal)?;
    let mut response = Json(session_document(mode, Some(&identity))).into_response();
    response.headers_mut().insert(header::SET_COOKIE, cookie);
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

/// `GET /api/v1/session`: who the presented identity is.
///
/// Its 401 also says how to get a token the server takes: the mode and, in
/// `kubernetes` mode, the `--token-audience` (null when none), for the
/// sign-in form's hint. Neither is a secret.
async fn session_info(
    State(state): State<AppState>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    let mode = state.auth.mode();
    if mode == AuthMode::None {
        return Ok(Json(session_document(mode, None)).into_response());
    }
    match identify(&state, &headers, client_ip(peer)).await {
        Ok(caller) => Ok(Json(session_document(mode, Some(&caller.identity))).into_response()),
        Err(AppError::Unauthorized) => {
            let mut response = AppError::Unauthorized.into_response();
            *response.body_mut() = Body::from(
                json!({
                    "error": AppError::Unauthorized.to_string(),
                    "auth": mode.as_str(),
                    "tokenAudience": state.auth.config().token_audience,
                })
                .to_string(),
            );
            Ok(response)
        }
        Err(e) => Err(e),
    }
}

/// `DELETE /api/v1/session`: ends the cookie's session and clears the
/// cookie.
async fn sign_out(State(state): State<AppState>, request: Request) -> Response {
    let cookies = request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok());
    if let Some(id) = session::session_id(cookies) {
        state.sessions.remove(id);
    }
    let secure = over_https(&state, &request);
    let mut response = StatusCode::NO_CONTENT.into_response();
    if let Ok(cookie) = HeaderValue::from_str(&session::clear_cookie(secure)) {
        response.headers_mut().insert(header::SET_COOKIE, cookie);
    }
    response
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

async fn namespaces(
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
        "allNamespaces": matches!(state.hub.scope(), super::hub::Scope::All),
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
async fn readyz(
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
async fn metrics(
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
        // Which TrainJobs read this object is the engine's linking (section
        // 4), not ours; an object left by a gone TrainJob is an orphan, read
        // for none even when a TrainJob of its name came back.
        let read_for: Vec<Value> = match kind {
            ObjectKind::Pod | ObjectKind::JobSet | ObjectKind::Workload
                if !store.belongs_to_gone_trainjob(&object) =>
            {
                store.trainjobs_reading(&object)
            }
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
    let history = state.hub.history_of(&HistoryKey {
        kind: kind.name().to_string(),
        namespace: ns.clone(),
        name: name.clone(),
        uid: object.uid.clone(),
    });
    let mut body = json!({
        "object": object.value(),
        "observation": observation,
        "readFor": read_for,
        "historyText": history::timeline(&history),
        "history": history,
    });
    if let (Some(job), Some(snapshots)) = (&job, &snapshots) {
        let explanations =
            view::explain_snapshots(snapshots, header, job).map_err(|_| AppError::Internal)?;
        let explanation = explanations.into_iter().find(|e| {
            e.observation.object.kind == kind.name() && e.observation.object.name == name
        });
        let explanation = serde_json::to_value(explanation).map_err(|_| AppError::Internal)?;
        if let Some(fields) = body.as_object_mut() {
            fields.insert("explanation".into(), explanation);
        }
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

/// Re-checks, every [`auth::AuthConfig::recheck_interval`], that a stream's
/// caller may still see its namespace, on a task of its own (so a busy
/// stream cannot starve it); [`revoked`] completes when they may not (or
/// the check cannot be made: it fails closed). Aborted with the stream.
///
/// In every mode with an identity: a stream opened with a session cookie
/// ends once that session does (signed out, or expired), within one
/// interval, and each re-check counts as the session's use, so a dashboard
/// left open is not signed out for idling.
struct AccessWatch {
    revoked: tokio::sync::oneshot::Receiver<()>,
    task: tokio::task::JoinHandle<()>,
}

impl AccessWatch {
    fn start(state: &AppState, caller: Option<Caller>, namespace: &str) -> Option<AccessWatch> {
        let caller = caller?;
        if state.auth.mode() == AuthMode::None {
            return None;
        }
        let auth = state.auth.clone();
        let sessions = state.sessions.clone();
        let namespace = namespace.to_string();
        let (tx, revoked) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let interval = auth.config().recheck_interval;
            let mut timer =
                tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                timer.tick().await;
                // Answers older than one interval are asked again, so a
                // revocation ends the stream within two intervals.
                let max_age = Some(interval);
                let session_lives = caller.session.as_ref().is_none_or(|id| {
                    sessions
                        .token(id.expose(), std::time::Instant::now())
                        .is_some_and(|token| token == caller.token)
                });
                let token = caller.token.expose();
                let allowed = session_lives
                    && match auth.authenticate(token, max_age, None).await {
                        Ok(identity) => auth
                            .may_see_namespace(
                                token,
                                &identity,
                                &namespace,
                                max_age,
                                Spend::Recheck,
                            )
                            .await
                            .unwrap_or(false),
                        Err(_) => false,
                    };
                if !allowed {
                    let _ = tx.send(());
                    return;
                }
            }
        });
        Some(AccessWatch { revoked, task })
    }
}

impl Drop for AccessWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Completes when the stream's caller lost access (never without a watch).
async fn revoked(access: &mut Option<AccessWatch>) {
    match access {
        // A dropped sender (the task ended) counts as revoked: fail closed.
        Some(watch) => {
            let _ = (&mut watch.revoked).await;
        }
        None => std::future::pending::<()>().await,
    }
}

struct SnapshotStream {
    /// The start: a `rows` and a `snapshot` event, or a resume's changes.
    backlog: VecDeque<Bytes>,
    live: LiveFrames,
    shutdown: watch::Receiver<bool>,
    keep_alive: tokio::time::Interval,
    access: Option<AccessWatch>,
    _guard: StreamGuard,
}

async fn snapshots(
    State(state): State<AppState>,
    Path(ns): Path<String>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    caller: Option<Extension<Caller>>,
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
        backlog: (subscription.rows.into_iter())
            .chain(subscription.backlog.into_iter().map(|frame| frame.bytes))
            .collect(),
        live: subscription.live,
        shutdown: state.shutdown.clone(),
        keep_alive: keep_alive_timer(),
        access: AccessWatch::start(&state, caller.map(|Extension(c)| c), &ns),
        _guard: guard,
    };
    let body = futures::stream::unfold(stream, move |mut s| {
        let hub = hub.clone();
        async move {
            if let Some(bytes) = s.backlog.pop_front() {
                return Some((Ok::<Bytes, Infallible>(bytes), s));
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
                _ = revoked(&mut s.access) => None,
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
    access: Option<AccessWatch>,
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
    caller: Option<Extension<Caller>>,
) -> Result<Response, AppError> {
    watched(&state, &ns)?;
    let guard = StreamGuard::acquire(&state, client_ip(peer))?;
    let access = AccessWatch::start(&state, caller.map(|Extension(c)| c), &ns);
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
        access,
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
                _ = revoked(&mut s.access) => return None,
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
        let hub = Hub::new(
            Mode::Plain,
            Scope::Namespaces(vec!["team-a".into()]),
            StoreLimits::default(),
        );
        state_of(hub, token)
    }

    fn state_of(hub: Hub, token: Option<&str>) -> (AppState, watch::Sender<bool>) {
        let (tx, rx) = watch::channel(false);
        let state = AppState {
            hub: Arc::new(hub),
            auth: Arc::new(Authenticator::new(
                auth::AuthConfig {
                    mode: if token.is_some() {
                        AuthMode::Token
                    } else {
                        AuthMode::None
                    },
                    token: token.map(Secret::from),
                    trusted_proxies: vec!["10.0.0.0/8".parse().expect("cidr")],
                    ..auth::AuthConfig::default()
                },
                None,
            )),
            sessions: Arc::new(SessionStore::new(Duration::from_secs(3600), 100, 1 << 20)),
            hosts: Arc::new(HostPolicy::new(
                "127.0.0.1:8080".parse().expect("addr"),
                &["dispatch.example.com".to_string()],
            )),
            streams: Arc::new(StreamSlots::new(4, 2)),
            request_timeout: Duration::from_secs(30),
            connections: Arc::new(ConnectionMetrics::default()),
            demo: false,
            public_url: String::new(),
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
    async fn inspect_shows_the_history_oldest_first_at_the_servers_times() {
        use crate::serve::hub::Clock;
        use crate::serve::projection::project;
        use crate::serve::store::{EventBody, WatchEvent};
        use std::sync::atomic::AtomicU64;
        use std::time::{Instant, UNIX_EPOCH};

        // 2026-12-01T09:00:00Z, moved by the test alone.
        let seconds = Arc::new(AtomicU64::new(1_796_115_600));
        let clock = {
            let seconds = seconds.clone();
            Clock::from_fn(move || UNIX_EPOCH + Duration::from_secs(seconds.load(Ordering::SeqCst)))
        };
        let hub = Hub::new(
            Mode::Plain,
            Scope::Namespaces(vec!["team-a".into()]),
            StoreLimits::default(),
        )
        .with_clock(clock);
        let trainjob = |conditions: Value| {
            let object = project(
                ObjectKind::TrainJob,
                &json!({"metadata": {"name": "llm-1", "namespace": "team-a", "uid": "tj-1"},
                    "status": {"conditions": conditions}}),
            )
            .expect("stored");
            WatchEvent {
                kind: ObjectKind::TrainJob,
                scope: Some("team-a".into()),
                body: EventBody::Upserted(object),
                received: Instant::now(),
            }
        };
        hub.ingest(vec![trainjob(json!([]))]);
        seconds.fetch_add(12 * 60, Ordering::SeqCst);
        hub.ingest(vec![trainjob(
            json!([{"type": "Complete", "status": "True", "reason": "JobsCompleted", "message": "done"}]),
        )]);
        let (state, _tx) = state_of(hub, None);
        let (status, body) = call(
            app(state),
            "/api/v1/namespaces/team-a/objects/trainjobs/llm-1",
            None,
        )
        .await;
        assert_eq!(status, StatusCode::OK, "{body}");
        let body: Value = serde_json::from_str(&body).expect("json");
        assert_eq!(
            body["history"],
            json!([
                {"at": "2026-12-01T09:00:00Z", "state": "running", "cause": "none", "held": false},
                {"at": "2026-12-01T09:12:00Z", "state": "ended", "cause": "completed", "held": false},
            ]),
            "{body}"
        );
        assert_eq!(
            body["historyText"], "running 09:00 → ended, completed 09:12",
            "the text form the page shows as it comes"
        );
    }

    #[tokio::test]
    async fn inspect_names_the_trainjob_an_object_is_read_for_from_the_engines_linking() {
        use crate::serve::projection::project;
        use crate::serve::store::{EventBody, WatchEvent};
        use std::time::Instant;

        let hub = Hub::new(
            Mode::Kueue,
            Scope::Namespaces(vec!["team-a".into()]),
            StoreLimits::default(),
        );
        let event = |kind: ObjectKind, value: Value| WatchEvent {
            kind,
            scope: Some("team-a".into()),
            body: EventBody::Upserted(project(kind, &value).expect("stored")),
            received: Instant::now(),
        };
        let labels = json!({"dispatch.phpboyscout.uk/job-id": "llm", "dispatch.phpboyscout.uk/submission": "1"});
        hub.ingest(vec![
            event(
                ObjectKind::TrainJob,
                json!({"metadata": {"name": "llm-1", "namespace": "team-a", "uid": "tj-1", "labels": labels}}),
            ),
            event(
                ObjectKind::JobSet,
                json!({"metadata": {"name": "llm-1", "namespace": "team-a", "uid": "js-1",
                    "ownerReferences": [{"kind": "TrainJob", "name": "llm-1", "uid": "tj-1"}]}}),
            ),
            event(
                ObjectKind::Workload,
                json!({"metadata": {"name": "wl-1", "namespace": "team-a", "uid": "wl-1",
                    "labels": {"kueue.x-k8s.io/job-uid": "tj-1"}}}),
            ),
            event(
                ObjectKind::Pod,
                json!({"metadata": {"name": "llm-1-node-0", "namespace": "team-a", "uid": "p-1", "labels": labels}}),
            ),
        ]);
        let (state, _tx) = state_of(hub, None);
        let router = app(state);
        let want =
            json!([{"kind": "TrainJob", "namespace": "team-a", "name": "llm-1", "uid": "tj-1"}]);
        for (kind, name) in [
            ("pods", "llm-1-node-0"),
            ("jobsets", "llm-1"),
            ("workloads", "wl-1"),
        ] {
            let (status, body) = call(
                router.clone(),
                &format!("/api/v1/namespaces/team-a/objects/{kind}/{name}"),
                None,
            )
            .await;
            assert_eq!(status, StatusCode::OK, "{kind}: {body}");
            let body: Value = serde_json::from_str(&body).expect("json");
            assert_eq!(body["readFor"], want, "{kind}");
        }
        let (_, body) = call(
            router,
            "/api/v1/namespaces/team-a/objects/trainjobs/llm-1",
            None,
        )
        .await;
        let body: Value = serde_json::from_str(&body).expect("json");
        assert_eq!(
            body["readFor"],
            json!([]),
            "a TrainJob is read for itself, not for another"
        );
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

    async fn send(
        router: Router,
        method: Method,
        uri: &str,
        headers: &[(&str, &str)],
        body: &str,
    ) -> Response {
        let mut request = HttpRequest::builder()
            .method(method)
            .uri(uri)
            .header(header::HOST, "127.0.0.1:8080");
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        router
            .oneshot(request.body(Body::from(body.to_string())).expect("request"))
            .await
            .expect("infallible")
    }

    async fn body_text(response: Response) -> String {
        let body = axum::body::to_bytes(response.into_body(), 1 << 20)
            .await
            .expect("body");
        String::from_utf8_lossy(&body).into_owned()
    }

    const OWN_ORIGIN: (&str, &str) = ("origin", "http://127.0.0.1:8080");

    #[tokio::test]
    async fn a_post_or_delete_from_another_origin_or_none_is_refused() {
        let (state, _tx) = state(Some("t0ken"));
        let router = app(state.clone());
        let sign_in = r#"{"token":"t0ken"}"#;
        for headers in [
            vec![],
            vec![("origin", "http://evil.example.com")],
            vec![("origin", "https://127.0.0.1:8080")],
            vec![("origin", "http://127.0.0.1:8080.evil.example.com")],
            vec![("origin", "null")],
        ] {
            for method in [Method::POST, Method::DELETE] {
                let response = send(
                    router.clone(),
                    method.clone(),
                    "/api/v1/session",
                    &headers,
                    sign_in,
                )
                .await;
                assert_eq!(
                    response.status(),
                    StatusCode::FORBIDDEN,
                    "{method} {headers:?}"
                );
                assert!(response.headers().get(header::SET_COOKIE).is_none());
                assert_eq!(body_text(response).await, r#"{"error":"forbidden"}"#);
            }
        }
        assert!(state.sessions.is_empty(), "no session was opened");
        assert!(same_origin(
            "http://LocalHost:8080",
            "http",
            "localhost:8080"
        ));
        assert!(!same_origin(
            "http://localhost:8080",
            "https",
            "localhost:8080"
        ));
    }

    #[tokio::test]
    async fn sign_in_opens_a_session_the_cookie_then_carries_and_sign_out_ends_it() {
        let (state, _tx) = state(Some("t0ken"));
        let router = app(state.clone());
        let json_type = ("content-type", "application/json");
        let refused = send(
            router.clone(),
            Method::POST,
            "/api/v1/session",
            &[OWN_ORIGIN, json_type],
            r#"{"token":"wrong"}"#,
        )
        .await;
        assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
        assert!(refused.headers().get(header::SET_COOKIE).is_none());
        assert_eq!(
            refused
                .headers()
                .get(header::WWW_AUTHENTICATE)
                .map(|v| v.as_bytes()),
            Some(&b"Bearer"[..])
        );
        assert_eq!(body_text(refused).await, r#"{"error":"unauthorized"}"#);
        let bad = send(
            router.clone(),
            Method::POST,
            "/api/v1/session",
            &[OWN_ORIGIN],
            "not json",
        )
        .await;
        assert_eq!(bad.status(), StatusCode::BAD_REQUEST);

        let signed_in = send(
            router.clone(),
            Method::POST,
            "/api/v1/session",
            &[OWN_ORIGIN, json_type],
            r#"{"token":"t0ken"}"#,
        )
        .await;
        assert_eq!(signed_in.status(), StatusCode::OK);
        let set_cookie = signed_in
            .headers()
            .get(header::SET_COOKIE)
            .and_then(|v| v.to_str().ok())
            .expect("a cookie")
            .to_string();
        assert!(
            set_cookie.ends_with("; HttpOnly; SameSite=Strict; Path=/"),
            "{set_cookie}"
        );
        assert!(!set_cookie.contains("t0ken"), "no token in the cookie");
        assert_eq!(
            body_text(signed_in).await,
            r#"{"auth":"token","groups":[],"user":"token"}"#
        );
        let cookie = set_cookie
            .split(';')
            .next()
            .expect("name=value")
            .to_string();
        let with_cookie = [("cookie", cookie.as_str())];
        let info = send(
            router.clone(),
            Method::GET,
            "/api/v1/session",
            &with_cookie,
            "",
        )
        .await;
        assert_eq!(info.status(), StatusCode::OK);
        let listed = send(
            router.clone(),
            Method::GET,
            "/api/v1/namespaces",
            &with_cookie,
            "",
        )
        .await;
        assert_eq!(listed.status(), StatusCode::OK);

        let out = send(
            router.clone(),
            Method::DELETE,
            "/api/v1/session",
            &[OWN_ORIGIN, ("cookie", cookie.as_str())],
            "",
        )
        .await;
        assert_eq!(out.status(), StatusCode::NO_CONTENT);
        let cleared = out
            .headers()
            .get(header::SET_COOKIE)
            .and_then(|v| v.to_str().ok())
            .expect("a clearing cookie");
        assert!(cleared.contains("Max-Age=0"), "{cleared}");
        assert!(state.sessions.is_empty());
        for uri in ["/api/v1/session", "/api/v1/namespaces"] {
            let after = send(router.clone(), Method::GET, uri, &with_cookie, "").await;
            assert_eq!(after.status(), StatusCode::UNAUTHORIZED, "{uri}");
            assert!(after.headers().get(header::WWW_AUTHENTICATE).is_some());
        }
    }

    #[tokio::test]
    async fn the_cookie_is_secure_only_behind_a_trusted_proxy_saying_https() {
        let (state, _tx) = state(Some("t0ken"));
        let router = app(state);
        let sign_in = |peer: &'static str, proto: Option<&'static str>| {
            let router = router.clone();
            async move {
                let mut request = HttpRequest::post("/api/v1/session")
                    .header(header::HOST, "dispatch.example.com");
                let origin = match proto {
                    Some(p) => format!("{p}://dispatch.example.com"),
                    None => "http://dispatch.example.com".into(),
                };
                request = request.header(header::ORIGIN, origin);
                if let Some(p) = proto {
                    request = request.header("x-forwarded-proto", p);
                }
                let mut request = request
                    .body(Body::from(r#"{"token":"t0ken"}"#))
                    .expect("request");
                request
                    .extensions_mut()
                    .insert(ConnectInfo(peer.parse::<SocketAddr>().expect("peer")));
                let response = router.oneshot(request).await.expect("infallible");
                (
                    response.status(),
                    response
                        .headers()
                        .get(header::SET_COOKIE)
                        .and_then(|v| v.to_str().ok())
                        .unwrap_or("")
                        .to_string(),
                )
            }
        };
        let (status, cookie) = sign_in("10.0.0.9:5000", Some("https")).await;
        assert_eq!(status, StatusCode::OK);
        assert!(cookie.ends_with("; Secure"), "{cookie}");
        let (status, cookie) = sign_in("10.0.0.9:5000", None).await;
        assert_eq!(status, StatusCode::OK);
        assert!(!cookie.contains("Secure"), "{cookie}");
        // An untrusted peer's header is not believed, so its https Origin
        // is not this (http) server's.
        let (status, cookie) = sign_in("192.0.2.1:5000", Some("https")).await;
        assert_eq!(status, StatusCode::FORBIDDEN);
        assert!(cookie.is_empty());
    }

    #[tokio::test]
    async fn without_auth_the_session_says_nobody_and_sets_no_cookie() {
        let (state, _tx) = state(None);
        let router = app(state.clone());
        let response = send(
            router.clone(),
            Method::POST,
            "/api/v1/session",
            &[OWN_ORIGIN],
            r#"{"token":"anything"}"#,
        )
        .await;
        assert_eq!(response.status(), StatusCode::OK);
        assert!(response.headers().get(header::SET_COOKIE).is_none());
        assert_eq!(body_text(response).await, r#"{"auth":"none","user":null}"#);
        let info = send(router, Method::GET, "/api/v1/session", &[], "").await;
        assert_eq!(info.status(), StatusCode::OK);
        assert_eq!(body_text(info).await, r#"{"auth":"none","user":null}"#);
        assert!(state.sessions.is_empty());
    }
}
