//! Who is asking: the token a request presents (`Authorization: Bearer`,
//! else the session cookie), the layer that identifies the caller of every
//! `/api` route and refuses a namespace they may not see, and the session
//! routes that trade a token for a cookie and end it.

use std::net::{IpAddr, SocketAddr};

use axum::body::Body;
use axum::extract::{ConnectInfo, RawPathParams, Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json};
use serde::Deserialize;
use serde_json::{json, Value};

use super::layers::over_https;
use super::{AppError, AppState, BODY_LIMIT};
use crate::serve::auth::{self, AuthMode, Identity, Secret, Spend};
use crate::serve::session;

/// An identified caller: the token presented (to review again) and who the
/// cluster (or the shared token) says it is.
#[derive(Debug, Clone)]
pub struct Caller {
    pub(super) token: Secret,
    /// The session the token came from, when it came from the cookie (an
    /// id is as good as a token, so it is a [`Secret`] too).
    pub(super) session: Option<Secret>,
    pub(super) identity: Identity,
}

/// The token a request presents, and the session it came from (if from the
/// cookie): `Authorization: Bearer` first, then the session cookie.
pub(super) fn presented_token(
    state: &AppState,
    headers: &HeaderMap,
) -> Option<(Secret, Option<Secret>)> {
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
pub(super) async fn identify(
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

pub(super) fn review_failed(e: auth::Error) -> AppError {
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
pub(super) async fn require_identity(
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
pub(super) async fn sign_in(
    State(state): State<AppState>,
    request: Request,
) -> Result<Response, AppError> {
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
pub(super) async fn info(
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
pub(super) async fn sign_out(State(state): State<AppState>, request: Request) -> Response {
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

/// The client's address, when the request came over a connection (the
/// accept loop records it).
pub(super) fn client_ip(peer: Option<Extension<ConnectInfo<SocketAddr>>>) -> Option<IpAddr> {
    peer.map(|Extension(ConnectInfo(addr))| addr.ip())
}
