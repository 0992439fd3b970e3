//! What the `--auth kubernetes` tests share, against the emulator
//! (`auth_emulator.rs`) and a real kube-apiserver (`real_apiserver_auth.rs`):
//! short auth timings, a request with its answer's status, cookie and body,
//! and sign-in from the server's own origin.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use dispatch_dash::serve::auth::{AuthConfig, AuthMode};
use hyper::{Method, StatusCode};
use serde_json::{json, Value};

use super::{body_text, request_with};

/// Kubernetes mode with a short re-check interval and cache lifetimes, so
/// a revocation shows within seconds (production: 30 s, 60 s, 10 s).
pub fn quick_auth() -> AuthConfig {
    AuthConfig {
        mode: AuthMode::Kubernetes,
        allow_ttl: Duration::from_secs(2),
        deny_ttl: Duration::from_secs(1),
        recheck_interval: Duration::from_secs(1),
        ..AuthConfig::default()
    }
}

/// A response's status, `Set-Cookie`, `WWW-Authenticate` and body.
pub struct Answer {
    pub status: StatusCode,
    pub set_cookie: Option<String>,
    pub www_authenticate: Option<String>,
    pub retry_after: Option<String>,
    pub body: String,
}

impl Answer {
    /// The body as JSON (`null` when it is not).
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or(Value::Null)
    }

    /// The namespaces a `/api/v1/namespaces` answer lists.
    pub fn namespaces(&self) -> Vec<String> {
        self.json()["namespaces"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|n| n.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    }
}

/// Sends `method path` with `headers` and `body`; the whole answer.
pub async fn send(
    addr: SocketAddr,
    method: Method,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Answer {
    let response = request_with(addr, method, path, headers, body.as_bytes().to_vec()).await;
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(String::from)
    };
    let set_cookie = header("set-cookie");
    let www_authenticate = header("www-authenticate");
    let retry_after = header("retry-after");
    Answer {
        status: response.status(),
        set_cookie,
        www_authenticate,
        retry_after,
        body: body_text(response).await,
    }
}

/// GETs `path` with `Authorization: Bearer <token>`.
pub async fn get_as(addr: SocketAddr, path: &str, token: &str) -> Answer {
    let bearer = format!("Bearer {token}");
    send(addr, Method::GET, path, &[("authorization", &bearer)], "").await
}

/// Signs in with `token` from the server's own origin; the cookie
/// (`dd_session=...`) and the answer.
pub async fn sign_in(addr: SocketAddr, token: &str) -> (Option<String>, Answer) {
    let origin = format!("http://{addr}");
    let answer = send(
        addr,
        Method::POST,
        "/api/v1/session",
        &[("origin", &origin), ("content-type", "application/json")],
        &json!({ "token": token }).to_string(),
    )
    .await;
    let cookie = answer
        .set_cookie
        .as_deref()
        .and_then(|c| c.split(';').next())
        .map(String::from);
    (cookie, answer)
}
