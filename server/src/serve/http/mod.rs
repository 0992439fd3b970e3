//! The HTTP API: JSON routes, the two server-sent event streams, health,
//! readiness and metrics, and the session routes. [`app`] builds the
//! router; [`app_with_assets`] adds a fallback (the web UI) without touching
//! the API routes. Who may ask what is decided in [`super::auth`]; the
//! handlers here only ask it: one layer identifies the caller of every
//! `/api` route and answers 403 for a namespace they may not see, before
//! the route learns whether it exists.
//!
//! - `layers`: what every request passes (Host, Origin, time and body
//!   limits, the API's headers);
//! - `session`: who is asking (bearer token or session cookie), the
//!   identity layer of `/api`, and the session routes;
//! - `api`: the JSON handlers, health, readiness and metrics;
//! - `sse`: the two event streams, their slots and their re-checks.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Request;
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use serde_json::json;
use tokio::sync::watch;
use tower_http::limit::RequestBodyLimitLayer;

use super::auth::Authenticator;
use super::hosts::HostPolicy;
use super::hub::Hub;
use super::listen::ConnectionMetrics;
use super::scrape::Scrape;
use super::session::SessionStore;

mod api;
mod layers;
mod session;
mod sse;

pub use session::Caller;
pub use sse::{StreamRefusal, StreamSlots};

/// Bytes a request body may have (only sign-in has a body; this stops abuse).
pub const BODY_LIMIT: usize = 16 * 1024;

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
    /// Places in line, fetched from Kueue's visibility API on demand.
    pub positions: Arc<crate::serve::positions::Positions>,
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
    layers::guarded(routes(state.clone()), state)
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
    layers::guarded(routes(state.clone()).fallback_service(assets), state)
}

/// The probe listener's router: `/healthz` and `/readyz` (which, outside
/// `--auth none`, names no namespace: a probe has no identity), nothing
/// else, with the time
/// limit. No Host check: the kubelet dials the pod's IP, and nothing here
/// reads the cluster's objects.
pub fn probe_app(state: AppState) -> Router {
    Router::new()
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(api::readyz))
        .layer(middleware::map_response(layers::api_headers))
        .layer(RequestBodyLimitLayer::new(BODY_LIMIT))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            layers::time_limit,
        ))
        .with_state(state)
}

/// `/api`, `/healthz`, `/readyz` and `/metrics`.
fn routes(state: AppState) -> Router {
    let api = Router::new()
        .route("/api/v1/namespaces", get(api::namespaces))
        .route("/api/v1/namespaces/{ns}/jobs/{job}", get(api::find))
        .route(
            "/api/v1/namespaces/{ns}/jobs/{job}/watch",
            get(sse::watch_job),
        )
        .route(
            "/api/v1/namespaces/{ns}/objects/{kind}/{name}",
            get(api::inspect),
        )
        .route("/api/v1/namespaces/{ns}/snapshot", get(api::snapshot))
        .route("/api/v1/namespaces/{ns}/queues", get(api::queues_page))
        .route("/api/v1/namespaces/{ns}/snapshots", get(sse::snapshots))
        .route_layer(middleware::from_fn_with_state(
            state.clone(),
            session::require_identity,
        ));
    Router::new()
        .merge(api)
        .route(
            "/api/v1/session",
            get(session::info)
                .post(session::sign_in)
                .delete(session::sign_out),
        )
        .route("/healthz", get(|| async { "ok" }))
        .route("/readyz", get(api::readyz))
        .route(
            "/metrics",
            get(api::metrics).layer(Extension(Arc::new(
                Scrape {
                    hub: state.hub.clone(),
                    connections: state.connections.clone(),
                    auth: state.auth.clone(),
                    public_url: state.public_url.clone(),
                }
                .into_registry(),
            ))),
        )
        .layer(middleware::map_response(layers::api_headers))
        .with_state(state)
}

#[cfg(test)]
mod tests;
