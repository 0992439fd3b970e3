use super::layers::same_origin;
use super::*;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;

use axum::body::Body;
use axum::extract::ConnectInfo;
use axum::http::Method;
use serde_json::{json, Value};

use crate::serve::auth::{self, AuthMode, Secret};
use crate::serve::hub::Scope;
use crate::serve::projection::ObjectKind;
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
        positions: Arc::new(crate::serve::positions::Positions::without_cluster()),
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
    let labels =
        json!({"dispatch.phpboyscout.uk/job-id": "llm", "dispatch.phpboyscout.uk/submission": "1"});
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
    let want = json!([{"kind": "TrainJob", "namespace": "team-a", "name": "llm-1", "uid": "tj-1"}]);
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
    let (status, body) = call(router.clone(), "/api/v1/namespaces/team-a/jobs/llm-1", None).await;
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
        let (status, body) = call_host(router.clone(), uri, None, "evil.example.com:8080").await;
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
    assert_eq!(slots.clients(), 0, "no entry outlives its streams");
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
            let mut request =
                HttpRequest::post("/api/v1/session").header(header::HOST, "dispatch.example.com");
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

#[tokio::test]
async fn find_and_inspect_carry_a_queued_trainjobs_queue_facts() {
    use crate::serve::projection::project;
    use crate::serve::store::{EventBody, WatchEvent};
    use std::time::Instant;

    let hub = Hub::new(
        Mode::Kueue,
        Scope::Namespaces(vec!["team-a".into()]),
        StoreLimits::default(),
    );
    let event = |kind: ObjectKind, object: Value| WatchEvent {
        kind,
        scope: (kind != ObjectKind::ClusterQueue).then(|| "team-a".to_string()),
        body: EventBody::Upserted(project(kind, &object).expect("stored")),
        received: Instant::now(),
    };
    let trainjob = json!({"metadata": {"name": "llm", "namespace": "team-a", "uid": "tj1"},
        "spec": {"suspend": true}});
    let workload = json!({"metadata": {"name": "w", "namespace": "team-a", "uid": "w1",
            "labels": {"kueue.x-k8s.io/job-uid": "tj1"}},
        "spec": {"queueName": "main", "podSets": [{"name": "node", "count": 4,
            "template": {"spec": {"containers": [{"name": "node", "env": [{"name": "T", "value": "hunter2"}],
                "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}}}]},
        "status": {"conditions": [{"type": "QuotaReserved", "status": "False",
            "reason": "Pending", "message": "insufficient quota"}]}});
    // Before any queue is listed, neither route has a `queue` field.
    hub.ingest(vec![
        event(ObjectKind::TrainJob, trainjob),
        event(ObjectKind::Workload, workload),
    ]);
    let (state, _tx) = state_of(hub, None);
    let find = "/api/v1/namespaces/team-a/jobs/llm";
    let inspect = "/api/v1/namespaces/team-a/objects/trainjobs/llm";
    let (_, body) = call(app(state.clone()), find, None).await;
    assert!(!body.contains("\"queue\""), "{body}");
    state.hub.ingest(vec![
        event(
            ObjectKind::LocalQueue,
            json!({"metadata": {"name": "main", "namespace": "team-a"},
                "spec": {"clusterQueue": "gpu-cq"}}),
        ),
        event(
            ObjectKind::ClusterQueue,
            crate::serve::queues::tests::cluster_queue_value("56"),
        ),
    ]);
    let sentence = "needs 32 nvidia.com/gpu; ClusterQueue gpu-cq has 8 of 64 free in flavor a100 (56 reserved); 24 more must be released";
    let (status, body) = call(app(state.clone()), find, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let found: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(found[0]["object"]["kind"], "TrainJob", "{body}");
    assert_eq!(found[0]["state"], "pending", "the observation is unchanged");
    assert_eq!(found[0]["queue"]["wait"], "quota", "{body}");
    assert!(
        found[0]["queue"]["sentence"]
            .as_str()
            .is_some_and(|s| s.starts_with(sentence)),
        "{body}"
    );
    let (status, body) = call(app(state), inspect, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    let inspected: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(
        inspected["queue"], found[0]["queue"],
        "Find and Inspect agree"
    );
    assert!(
        !body.contains("hunter2"),
        "nothing of the template's env: {body}"
    );
}

#[tokio::test]
async fn a_preemptor_is_still_named_in_find_after_its_workload_is_gone() {
    use crate::serve::projection::project;
    use crate::serve::store::{EventBody, WatchEvent};
    use std::time::Instant;

    let hub = Hub::new(
        Mode::Kueue,
        Scope::Namespaces(vec!["team-a".into()]),
        StoreLimits::default(),
    );
    let event = |kind: ObjectKind,
                 body: fn(crate::serve::projection::StoredObject) -> EventBody,
                 object: Value| {
        WatchEvent {
            kind,
            scope: (kind != ObjectKind::ClusterQueue).then(|| "team-a".to_string()),
            body: body(project(kind, &object).expect("stored")),
            received: Instant::now(),
        }
    };
    let preemptor = json!({"metadata": {"name": "w-big", "namespace": "team-a", "uid": "wb",
            "ownerReferences": [{"kind": "TrainJob", "name": "llm-70b", "uid": "tjb"}]},
        "spec": {"queueName": "main", "priority": 1000},
        "status": {"admission": {"clusterQueue": "gpu-cq"}}});
    hub.ingest(vec![
        event(
            ObjectKind::LocalQueue,
            EventBody::Upserted,
            json!({"metadata": {"name": "main", "namespace": "team-a"},
                "spec": {"clusterQueue": "gpu-cq"}}),
        ),
        event(
            ObjectKind::ClusterQueue,
            EventBody::Upserted,
            crate::serve::queues::tests::cluster_queue_value("56"),
        ),
        event(ObjectKind::Workload, EventBody::Upserted, preemptor.clone()),
        event(
            ObjectKind::TrainJob,
            EventBody::Upserted,
            json!({"metadata": {"name": "llm", "namespace": "team-a", "uid": "tj1"},
                "spec": {"suspend": true}}),
        ),
        event(
            ObjectKind::Workload,
            EventBody::Upserted,
            json!({"metadata": {"name": "w", "namespace": "team-a", "uid": "w1",
                    "labels": {"kueue.x-k8s.io/job-uid": "tj1"}},
                "spec": {"queueName": "main", "podSets": [{"name": "node", "count": 4,
                    "template": {"spec": {"containers": [{"name": "node",
                        "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}}}]},
                "status": {"conditions": [
                    {"type": "QuotaReserved", "status": "False", "reason": "Pending", "message": "x"},
                    {"type": "Preempted", "status": "True", "reason": "InClusterQueue",
                     "message": "Preempted to accommodate a workload (UID: wb, JobUID: tjb) due to prioritization in the ClusterQueue"}]}}),
        ),
    ]);
    let (state, _tx) = state_of(hub, None);
    let find = "/api/v1/namespaces/team-a/jobs/llm";
    let preempted_by = |body: &str| {
        let found: Value = serde_json::from_str(body).expect("json");
        found[0]["queue"]["preemptedBy"].clone()
    };
    let (_, body) = call(app(state.clone()), find, None).await;
    assert_eq!(
        preempted_by(&body),
        "preempted by team-a/llm-70b (priority 1000) in ClusterQueue gpu-cq",
        "{body}"
    );
    state.hub.ingest(vec![event(
        ObjectKind::Workload,
        EventBody::Deleted,
        preemptor,
    )]);
    let (status, body) = call(app(state), find, None).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    assert_eq!(
        preempted_by(&body),
        "preempted by team-a/llm-70b (priority 1000) in ClusterQueue gpu-cq; its Workload has since gone",
        "the job's history remembers the preemptor: {body}"
    );
}
