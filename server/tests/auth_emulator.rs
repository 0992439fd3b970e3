//! `serve --auth kubernetes` against the emulator (the fast tier; the same
//! story against a real kube-apiserver is `real_apiserver_auth.rs`): the
//! emulator's TokenReviews and SubjectAccessReviews decide what alice (list
//! TrainJobs and pods in team-a), bob (nothing) and nobody see; a session
//! cookie lists and streams; a revoked grant closes alice's open stream.

mod common;

use std::time::Duration;

use common::auth::*;
use common::*;
use emulator::scenario::objects::{self, JobRef};
use emulator::{Emulator, Grant};
use hyper::{Method, StatusCode};

const ALICE_TOKEN: &str = "alice-token";
const BOB_TOKEN: &str = "bob-token";

fn alice_grants() -> [Grant; 2] {
    [
        Grant::namespaced(
            "alice",
            "list",
            "trainer.kubeflow.org",
            "trainjobs",
            "team-a",
        ),
        Grant::namespaced("alice", "list", "", "pods", "team-a"),
    ]
}

/// team-a and team-b with a TrainJob each; alice may list TrainJobs and
/// pods in team-a, and only pods in team-b (both are needed); bob is known
/// and may do nothing.
fn cluster(emu: &Emulator) {
    for ns in ["team-a", "team-b"] {
        let job = JobRef::new(ns, "llm", "s1");
        emu.create(objects::trainjob(&job, 2, None, false))
            .expect("TrainJob");
    }
    emu.set_user(ALICE_TOKEN, "alice", &[]);
    emu.set_user(BOB_TOKEN, "bob", &[]);
    for grant in alice_grants() {
        emu.grant(grant);
    }
    emu.grant(Grant::namespaced("alice", "list", "", "pods", "team-b"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbac_on_the_emulator_decides_what_each_identity_sees_and_revocation_closes_a_stream() {
    let emu = emulator(false).await;
    cluster(emu.emulator());
    let server = server(
        &emu,
        Settings {
            all_namespaces: true,
            auth: quick_auth(),
            ..Settings::default()
        },
    )
    .await;
    let addr = server.addr;
    ready(addr).await;
    let reviews_at_start = emu.emulator().reviews("selfsubjectaccessreviews");
    assert_eq!(
        reviews_at_start, 2,
        "the start-up delegation check asked twice"
    );

    // alice sees exactly team-a, bob none.
    let alice = eventually(30, "alice sees team-a", || async {
        let answer = get_as(addr, "/api/v1/namespaces", ALICE_TOKEN).await;
        (!answer.namespaces().is_empty()).then_some(answer)
    })
    .await;
    assert_eq!(alice.status, StatusCode::OK, "{}", alice.body);
    assert_eq!(alice.namespaces(), ["team-a"]);
    let bob = get_as(addr, "/api/v1/namespaces", BOB_TOKEN).await;
    assert_eq!(bob.status, StatusCode::OK);
    assert!(bob.namespaces().is_empty(), "{}", bob.body);

    // No token, or one the emulator does not know: 401.
    for headers in [vec![], vec![("authorization", "Bearer not-a-token")]] {
        for path in ["/api/v1/namespaces", "/api/v1/namespaces/team-a/snapshot"] {
            let answer = send(addr, Method::GET, path, &headers, "").await;
            assert_eq!(
                answer.status,
                StatusCode::UNAUTHORIZED,
                "{path} {headers:?}"
            );
            assert_eq!(answer.body, r#"{"error":"unauthorized"}"#);
        }
    }

    // Another namespace (pods allowed, TrainJobs not), or one that does not
    // exist: the same 403 on every route.
    for ns in ["team-b", "no-such-namespace"] {
        for route in ["jobs/llm-s1", "jobs/llm-s1/watch", "snapshot", "snapshots"] {
            let path = format!("/api/v1/namespaces/{ns}/{route}");
            let answer = get_as(addr, &path, ALICE_TOKEN).await;
            assert_eq!(answer.status, StatusCode::FORBIDDEN, "{path}");
            assert_eq!(answer.body, r#"{"error":"forbidden"}"#, "{path}");
        }
    }
    let own = get_as(addr, "/api/v1/namespaces/team-a/snapshot", ALICE_TOKEN).await;
    assert_eq!(own.status, StatusCode::OK);
    assert!(own.body.contains("llm-s1"), "{}", own.body);

    // A burst of requests costs one TokenReview per token (the cache).
    let before = emu.emulator().reviews("tokenreviews");
    for _ in 0..10 {
        get_as(addr, "/api/v1/namespaces/team-a/snapshot", ALICE_TOKEN).await;
    }
    assert_eq!(emu.emulator().reviews("tokenreviews"), before, "cached");

    // A session cookie lists and streams as alice.
    let cookie = sign_in(addr, ALICE_TOKEN)
        .await
        .0
        .expect("a session cookie");
    let with_cookie = [("cookie", cookie.as_str())];
    let listed = send(addr, Method::GET, "/api/v1/namespaces", &with_cookie, "").await;
    assert_eq!(listed.namespaces(), ["team-a"]);
    let mut stream =
        SseReader::open(addr, "/api/v1/namespaces/team-a/snapshots", &with_cookie).await;
    assert_eq!(stream.status, StatusCode::OK);
    let first = stream.next(30).await.expect("the first event");
    assert_eq!(first.event, "snapshot");
    assert!(first.data.contains("llm-s1"));
    assert!(sign_in(addr, "not-a-token").await.0.is_none(), "no cookie");

    // Revocation: the open stream ends once alice's grant is gone, and
    // team-a is then 403 to her.
    assert!(emu.emulator().revoke(&alice_grants()[0]));
    // Changes may still arrive before the re-check; the stream must end.
    tokio::time::timeout(Duration::from_secs(30), async {
        while stream.next(60).await.is_some() {}
    })
    .await
    .expect("the revoked stream is closed within 30 s (re-check every 1 s)");
    let after = send(
        addr,
        Method::GET,
        "/api/v1/namespaces/team-a/snapshot",
        &with_cookie,
        "",
    )
    .await;
    assert_eq!(after.status, StatusCode::FORBIDDEN);
    let listed = send(addr, Method::GET, "/api/v1/namespaces", &with_cookie, "").await;
    assert!(listed.namespaces().is_empty(), "{}", listed.body);
    server.shutdown().await.expect("clean shutdown");
}
