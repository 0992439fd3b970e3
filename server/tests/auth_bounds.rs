//! What one signed-in cluster user, or one client address, can make the
//! server and the cluster do, against the emulator's TokenReviews and
//! SubjectAccessReviews (counted by the emulator):
//! - a `{ns}` that is not a DNS-1123 label is 403 before any review, and
//!   leaves the caches as they were;
//! - review misses are rate-limited per identity, failed sign-ins per
//!   client address (429 past the rate);
//! - the namespace list asks one cluster-wide review first, and a second
//!   list within the TTL makes no review, for 2,000 namespaces and 10 users;
//! - every API answer says `nosniff` and `no-store`; `/readyz` names no
//!   namespace to a caller without an identity;
//! - `--token-audience` admits only tokens minted for it;
//! - signing out ends the session's open streams, in `--auth token` too;
//! - a token the cluster cannot check now is 503 with `Retry-After`: the
//!   session is kept and nothing is cached;
//! - however many identities arrive at once, at most
//!   `MAX_REVIEWS_IN_FLIGHT` reviews are in flight.

mod common;

use std::time::Duration;

use common::auth::*;
use common::*;
use dispatch_dash::serve::auth::{AuthConfig, MAX_REVIEWS_IN_FLIGHT};
use emulator::{Emulator, Grant};
use hyper::{Method, StatusCode};
use serde_json::json;

const BOB: &str = "bob-token";
const PROMETHEUS: &str = "prometheus-token";

fn users(emu: &Emulator) {
    emu.set_user(BOB, "bob", &[]);
    emu.set_user(PROMETHEUS, "prometheus", &[]);
    emu.grant(Grant::non_resource("prometheus", "get", "/metrics"));
}

/// Lets `user` list TrainJobs and pods in every namespace: all a dashboard
/// reads.
fn may_list_everywhere(e: &Emulator, user: &str) {
    e.grant(Grant::cluster_wide(
        user,
        "list",
        "trainer.kubeflow.org",
        "trainjobs",
    ));
    e.grant(Grant::cluster_wide(user, "list", "", "pods"));
}

/// The auth caches' entries and bytes, as `/metrics` says.
async fn cache_gauges(addr: std::net::SocketAddr) -> Vec<(String, f64)> {
    let answer = get_as(addr, "/metrics", PROMETHEUS).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    answer
        .body
        .lines()
        .filter(|l| l.starts_with("dispatch_dash_auth_cache_"))
        .filter_map(|l| l.rsplit_once(' '))
        .map(|(name, value)| (name.to_string(), value.parse().unwrap_or(f64::NAN)))
        .collect()
}

/// The server in front of `emu` with `--all-namespaces` and `auth`, ready.
async fn watching_all(
    emu: &emulator::RunningEmulator,
    auth: AuthConfig,
) -> dispatch_dash::serve::Server {
    let server = server(
        emu,
        Settings {
            all_namespaces: true,
            auth,
            ..Settings::default()
        },
    )
    .await;
    ready(server.addr).await;
    server
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn names_that_are_not_namespaces_are_refused_before_any_review() {
    let emu = emulator(false).await;
    users(emu.emulator());
    let server = watching_all(&emu, quick_auth()).await;
    let addr = server.addr;
    // Bob is known (one TokenReview) before the attack starts.
    assert_eq!(
        get_as(addr, "/api/v1/namespaces", BOB).await.status,
        StatusCode::OK
    );
    let before = cache_gauges(addr).await;
    let token_reviews = emu.emulator().reviews("tokenreviews");
    let access_reviews = emu.emulator().reviews("subjectaccessreviews");

    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    for i in 0..2_000 {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        // 60,000 bytes: long, distinct, and each a different wrong shape.
        let filler = format!("{seed:016x}").repeat(3_750);
        let name = match i % 3 {
            0 => filler,
            1 => format!("UPPER{}", &filler[..59_995]),
            _ => format!("-{}", &filler[..59_999]),
        };
        assert_eq!(name.len(), 60_000);
        let answer = get_as(addr, &format!("/api/v1/namespaces/{name}/snapshot"), BOB).await;
        assert_eq!(answer.status, StatusCode::FORBIDDEN, "name {i}");
        assert_eq!(answer.json(), json!({"error": "forbidden"}));
    }
    // Not a review more, of either kind (the /metrics reads above are
    // prometheus's, whose reviews are cached after the first).
    let after = cache_gauges(addr).await;
    assert!(
        emu.emulator().reviews("subjectaccessreviews") - access_reviews <= 1,
        "at most prometheus's /metrics review again"
    );
    assert!(emu.emulator().reviews("tokenreviews") - token_reviews <= 1);
    for ((name, was), (_, now)) in before.iter().zip(&after) {
        if name.contains("bytes") {
            assert!(now - was < 1_000.0, "{name}: {was} → {now}");
        }
    }
    // A 64-byte name is no namespace either; a good one that is not
    // watched is still the same 403 for bob.
    let long = "a".repeat(64);
    let answer = get_as(addr, &format!("/api/v1/namespaces/{long}/jobs/x"), BOB).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
    let answer = get_as(addr, "/api/v1/namespaces/no-such-ns/jobs/x", BOB).await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_misses_are_rate_limited_per_identity_and_failed_sign_ins_per_address() {
    let emu = emulator(false).await;
    users(emu.emulator());
    emu.emulator().set_user("carol-token", "carol", &[]);
    // Identities stay cached for the whole test.
    let auth = AuthConfig {
        allow_ttl: Duration::from_secs(600),
        ..quick_auth()
    };
    let server = watching_all(&emu, auth).await;
    let addr = server.addr;

    // Bob walks 300 distinct, well-formed namespaces: each is a review miss.
    let access_reviews = emu.emulator().reviews("subjectaccessreviews");
    let started = std::time::Instant::now();
    let mut limited = 0;
    for i in 0..300 {
        let answer = get_as(addr, &format!("/api/v1/namespaces/ns-{i}/snapshot"), BOB).await;
        match answer.status {
            StatusCode::FORBIDDEN => {}
            StatusCode::TOO_MANY_REQUESTS => {
                limited += 1;
                assert_eq!(answer.json()["error"], "too many requests; slow down");
            }
            other => panic!("namespace {i}: {other} {}", answer.body),
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let reviewed = emu.emulator().reviews("subjectaccessreviews") - access_reviews;
    // The burst (64) and 8 a second after it; bob is denied at the first
    // of each namespace's two reviews.
    assert!(
        limited > 0,
        "300 misses in {elapsed:.1} s were never limited"
    );
    assert!(
        (reviewed as f64) <= 64.0 + 8.0 * elapsed + 1.0,
        "{reviewed} reviews in {elapsed:.1} s"
    );
    // Carol is another identity: her own budget.
    let answer = get_as(addr, "/api/v1/namespaces/ns-1/snapshot", "carol-token").await;
    assert_eq!(answer.status, StatusCode::FORBIDDEN, "{}", answer.body);

    // Unknown tokens from one address: 20, then one a second.
    let token_reviews = emu.emulator().reviews("tokenreviews");
    let started = std::time::Instant::now();
    let mut refused = 0;
    for i in 0..100 {
        let answer = get_as(addr, "/api/v1/namespaces", &format!("guess-{i}")).await;
        match answer.status {
            StatusCode::UNAUTHORIZED => {}
            StatusCode::TOO_MANY_REQUESTS => refused += 1,
            other => panic!("guess {i}: {other}"),
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let reviewed = emu.emulator().reviews("tokenreviews") - token_reviews;
    assert!(
        refused > 0,
        "100 failed guesses in {elapsed:.1} s were never limited"
    );
    assert!(
        (reviewed as f64) <= 20.0 + elapsed + 1.0,
        "{reviewed} TokenReviews in {elapsed:.1} s"
    );
    // A known identity is not held back by the address's failures while
    // its answer is cached: it costs no review.
    assert_eq!(
        get_as(addr, "/api/v1/namespaces", BOB).await.status,
        StatusCode::OK
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_namespace_list_scales_to_2000_namespaces_and_10_users() {
    let emu = emulator(false).await;
    let e = emu.emulator();
    for i in 0..2_000 {
        e.create(json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": format!("ns-{i:04}")}}))
            .expect("Namespace");
    }
    e.set_user("admin-token", "admin", &[]);
    may_list_everywhere(e, "admin");
    let mut tokens = Vec::new();
    for u in 0..10 {
        let (token, user) = (format!("user-{u}-token"), format!("user-{u}"));
        e.set_user(&token, &user, &[]);
        if u < 8 {
            // Most users may read every namespace...
            may_list_everywhere(e, &user);
        } else {
            // ...two may read three each.
            for ns in [u, u + 100, u + 1000].map(|n| format!("ns-{n:04}")) {
                e.grant(Grant::namespaced(
                    &user,
                    "list",
                    "trainer.kubeflow.org",
                    "trainjobs",
                    &ns,
                ));
                e.grant(Grant::namespaced(&user, "list", "", "pods", &ns));
            }
        }
        tokens.push(token);
    }
    let auth = AuthConfig {
        allow_ttl: Duration::from_secs(600),
        deny_ttl: Duration::from_secs(600),
        ..quick_auth()
    };
    let server = watching_all(&emu, auth).await;
    let addr = server.addr;
    // An admin (not one of the ten) waits until the server knows them all.
    let listed = eventually(60, "the server lists 2,000 namespaces", || async {
        let n = get_as(addr, "/api/v1/namespaces", "admin-token")
            .await
            .namespaces()
            .len();
        (n >= 2_000).then_some(n)
    })
    .await;

    let before = e.reviews("subjectaccessreviews");
    for (u, token) in tokens.iter().enumerate() {
        let answer = get_as(addr, "/api/v1/namespaces", token).await;
        assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
        let expected = if u < 8 { listed } else { 3 };
        assert_eq!(answer.namespaces().len(), expected, "user {u}");
    }
    let first = e.reviews("subjectaccessreviews") - before;
    // Eight users: 2 cluster-wide reviews each. Two: 1 denied cluster-wide
    // review, then one per namespace (two for the three allowed).
    let listed = listed as u64;
    assert_eq!(
        first,
        8 * 2 + 2 * (1 + listed + 3),
        "reviews of the first lists"
    );

    let before = e.reviews("subjectaccessreviews");
    for token in &tokens {
        let answer = get_as(addr, "/api/v1/namespaces", token).await;
        assert_eq!(answer.status, StatusCode::OK);
    }
    assert_eq!(
        e.reviews("subjectaccessreviews") - before,
        0,
        "a second list within the TTL makes no review"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_answers_are_not_sniffed_or_stored_and_readyz_names_no_namespace_to_strangers() {
    let emu = emulator(false).await;
    users(emu.emulator());
    // Pods may not be watched in team-a: that watch is unhealthy and /readyz
    // lists it.
    emu.emulator().forbid("pods");
    let server = server(
        &emu,
        Settings {
            auth: quick_auth(),
            unready_after: Duration::from_millis(1),
            ..Settings::default()
        },
    )
    .await;
    let addr = server.addr;
    let answer = eventually(30, "/readyz lists the forbidden pod watch", || async {
        let answer = send(addr, Method::GET, "/readyz", &[], "").await;
        answer.body.contains("forbidden").then_some(answer)
    })
    .await;
    let watches = answer.json()["watches"].clone();
    let pods = (watches.as_array().expect("watches").iter())
        .find(|w| w["kind"] == "Pod")
        .expect("the Pod watch")
        .clone();
    assert_eq!(pods["state"], "forbidden");
    assert!(
        pods.get("namespace").is_none(),
        "no namespace to a stranger: {pods}"
    );
    assert!(!answer.body.contains(NS), "{}", answer.body);
    // A caller who may see team-a is told which namespace's watch it is.
    emu.emulator().grant(Grant::namespaced(
        "bob",
        "list",
        "trainer.kubeflow.org",
        "trainjobs",
        NS,
    ));
    emu.emulator()
        .grant(Grant::namespaced("bob", "list", "", "pods", NS));
    let told = get_as(addr, "/readyz", BOB).await;
    let pods = (told.json()["watches"].as_array().expect("watches").iter())
        .find(|w| w["kind"] == "Pod")
        .expect("the Pod watch")
        .clone();
    assert_eq!(pods["namespace"], NS, "{}", told.body);

    for path in ["/api/v1/namespaces", "/readyz", "/healthz"] {
        let response = request_with(
            addr,
            Method::GET,
            path,
            &[("authorization", &format!("Bearer {BOB}"))],
            Vec::new(),
        )
        .await;
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(String::from)
        };
        assert_eq!(
            header("x-content-type-options").as_deref(),
            Some("nosniff"),
            "{path}"
        );
        assert_eq!(
            header("cache-control").as_deref(),
            Some("no-store"),
            "{path}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_audience_admits_only_tokens_minted_for_it() {
    let emu = emulator(false).await;
    let e = emu.emulator();
    // Alice's token was minted for this dashboard; bob's for the API server.
    e.set_user_with_audiences("alice-aud-token", "alice", &["dispatch-dash"]);
    e.set_user(BOB, "bob", &[]);
    for user in ["alice", "bob"] {
        may_list_everywhere(e, user);
    }
    let server = server(
        &emu,
        Settings {
            auth: AuthConfig {
                token_audience: Some("dispatch-dash".into()),
                ..quick_auth()
            },
            ..Settings::default()
        },
    )
    .await;
    let addr = server.addr;
    ready(addr).await;
    let alice = get_as(addr, "/api/v1/namespaces", "alice-aud-token").await;
    assert_eq!(alice.status, StatusCode::OK, "{}", alice.body);
    assert_eq!(alice.namespaces(), [NS]);
    let bob = get_as(addr, "/api/v1/namespaces", BOB).await;
    assert_eq!(
        bob.status,
        StatusCode::UNAUTHORIZED,
        "a token for another audience"
    );
    // The sign-in form learns which audience to mint a token for.
    let hint = send(addr, Method::GET, "/api/v1/session", &[], "").await;
    assert_eq!(hint.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        hint.json(),
        json!({"error": "unauthorized", "auth": "kubernetes", "tokenAudience": "dispatch-dash"})
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signing_out_ends_the_sessions_streams_in_token_mode_too() {
    let emu = emulator(false).await;
    let server = server(
        &emu,
        Settings {
            token: Some("shared-s3cret".into()),
            auth: AuthConfig {
                recheck_interval: Duration::from_millis(500),
                ..AuthConfig::default()
            },
            ..Settings::default()
        },
    )
    .await;
    let addr = server.addr;
    ready(addr).await;
    let (cookie, answer) = sign_in(addr, "shared-s3cret").await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let cookie = cookie.expect("a session cookie");
    let with_cookie = [("cookie", cookie.as_str())];
    let mut stream = SseReader::open(
        addr,
        &format!("/api/v1/namespaces/{NS}/snapshots"),
        &with_cookie,
    )
    .await;
    assert_eq!(stream.status, StatusCode::OK);
    assert_eq!(
        stream.next(30).await.expect("the snapshot").event,
        "snapshot"
    );

    // The token is still good, but the session it came with is over: the
    // stream ends within a re-check or two.
    let origin = format!("http://{addr}");
    let signed_out = send(
        addr,
        Method::DELETE,
        "/api/v1/session",
        &[("cookie", cookie.as_str()), ("origin", origin.as_str())],
        "",
    )
    .await;
    assert_eq!(signed_out.status, StatusCode::NO_CONTENT);
    tokio::time::timeout(Duration::from_secs(10), async {
        while stream.next(30).await.is_some() {}
    })
    .await
    .expect("the signed-out session's stream ends within 10 s (re-check every 0.5 s)");
    let after = send(addr, Method::GET, "/api/v1/namespaces", &with_cookie, "").await;
    assert_eq!(after.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crowd_of_new_identities_keeps_at_most_the_cap_of_reviews_in_flight() {
    let emu = emulator(false).await;
    let e = emu.emulator();
    const CROWD: usize = 100;
    for i in 0..CROWD {
        e.set_user(&format!("crowd-token-{i}"), &format!("user-{i}"), &[]);
    }
    let server = watching_all(&emu, quick_auth()).await;
    let addr = server.addr;
    // Every review takes long enough that the whole crowd arrives while the
    // first ones are still being answered.
    e.set_review_latency(Duration::from_millis(500));
    let crowd = (0..CROWD).map(|i| async move {
        get_as(addr, "/api/v1/namespaces", &format!("crowd-token-{i}"))
            .await
            .status
    });
    let answers = futures::future::join_all(crowd).await;
    assert!(
        answers.iter().all(|s| *s == StatusCode::OK),
        "every identity is answered, in turn: {answers:?}"
    );
    let peak = e.peak_reviews_in_flight();
    assert!(
        peak <= MAX_REVIEWS_IN_FLIGHT as u64,
        "{peak} reviews were in flight at once"
    );
    // The crowd did overlap: the cap, not the arrival, bounded it.
    assert!(peak >= 4, "only {peak} reviews overlapped");
    assert!(e.reviews("tokenreviews") >= CROWD as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_the_cluster_cannot_check_now_is_503_and_keeps_its_session() {
    let emu = emulator(false).await;
    let e = emu.emulator();
    users(e);
    may_list_everywhere(e, "bob");
    let auth = quick_auth();
    let identity_ttl = auth.allow_ttl;
    let server = watching_all(&emu, auth).await;
    let addr = server.addr;
    let (cookie, answer) = sign_in(addr, BOB).await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    let cookie = cookie.expect("a session cookie");
    let headers = [("cookie", cookie.as_str())];
    let list = || send(addr, Method::GET, "/api/v1/namespaces", &headers, "");
    assert_eq!(list().await.status, StatusCode::OK);

    // The API server cannot answer reviews; once bob's identity is older
    // than its TTL it must be checked again, and cannot be.
    e.set_reviews_unavailable(true);
    tokio::time::sleep(identity_ttl + Duration::from_millis(100)).await;
    let reviews = e.reviews("tokenreviews");
    for _ in 0..3 {
        let answer = list().await;
        assert_eq!(
            answer.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}",
            answer.body
        );
        assert_eq!(answer.retry_after.as_deref(), Some("5"));
        assert_eq!(
            answer.json(),
            json!({"error": "authentication is unavailable; try again later"})
        );
    }
    assert_eq!(
        e.reviews("tokenreviews"),
        reviews,
        "503s are not answers: nothing was reviewed"
    );

    // Back: the same cookie works, so the session was kept, and the first
    // request reviews the token again, so no failure was cached.
    e.set_reviews_unavailable(false);
    let answer = list().await;
    assert_eq!(answer.status, StatusCode::OK, "{}", answer.body);
    assert_eq!(e.reviews("tokenreviews"), reviews + 1);
}
