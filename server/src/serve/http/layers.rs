//! What every request passes, whatever answers it: the Host check (DNS
//! rebinding), the Origin check of state-changing methods, the time and
//! body limits, and the headers of every API answer.

use std::net::SocketAddr;
use std::sync::atomic::Ordering;

use axum::extract::{ConnectInfo, Request, State};
use axum::http::Method;
use axum::http::{header, HeaderValue};
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::Router;
use tower_http::limit::RequestBodyLimitLayer;

use super::{AppError, AppState, BODY_LIMIT};
use crate::serve::auth;

/// Every API answer: never sniffed as another type (a JSON body holding
/// cluster text must not be run as HTML), and never stored by a cache, since
/// what a caller may see is decided per caller. An answer that says how to
/// cache itself (an event stream's `no-cache`) keeps its own word.
pub(super) async fn api_headers(mut response: Response) -> Response {
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
pub(super) fn guarded(router: Router, state: AppState) -> Router {
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
pub(super) async fn time_limit(
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
pub(super) fn same_origin(origin: &str, scheme: &str, host: &str) -> bool {
    origin
        .strip_prefix(scheme)
        .and_then(|rest| rest.strip_prefix("://"))
        .is_some_and(|rest| rest.eq_ignore_ascii_case(host))
}

/// Whether the request came over HTTPS: the server's own TLS, or a trusted
/// proxy's word.
pub(super) fn over_https(state: &AppState, request: &Request) -> bool {
    if request
        .extensions()
        .get::<crate::serve::listen::OverTls>()
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
