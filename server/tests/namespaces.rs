//! Namespaces cost nothing unless they exist, and every buffer is bounded
//! by bytes: the server with `--all-namespaces` against the emulator.

mod common;

use common::*;
use dispatch_dash::serve::store::StoreLimits;
use emulator::scenario::objects::{self, JobRef};
use emulator::Kind;
use hyper::StatusCode;
use serde_json::Value;

/// Every per-namespace route, for namespace `ns`.
fn routes(ns: &str) -> [String; 5] {
    [
        format!("/api/v1/namespaces/{ns}/snapshot"),
        format!("/api/v1/namespaces/{ns}/snapshots"),
        format!("/api/v1/namespaces/{ns}/jobs/llm-1"),
        format!("/api/v1/namespaces/{ns}/jobs/llm-1/watch"),
        format!("/api/v1/namespaces/{ns}/objects/pods/p0"),
    ]
}

async fn listed_namespaces(addr: std::net::SocketAddr) -> Vec<String> {
    let (status, body) = get_json(addr, "/api/v1/namespaces").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(body["allNamespaces"], true);
    body["namespaces"]
        .as_array()
        .expect("a list")
        .iter()
        .filter_map(Value::as_str)
        .map(str::to_string)
        .collect()
}

/// A name no one created, from the tests' seeded generator, so a failure
/// reproduces.
fn random_namespace(rng: &mut test_support::Rng) -> String {
    format!("ns-{:016x}", rng.next_u64())
}

/// The server in front of `running`, watching every namespace.
async fn all_namespaces_server(
    running: &emulator::RunningEmulator,
) -> dispatch_dash::serve::Server {
    server(
        running,
        Settings {
            all_namespaces: true,
            ..Settings::default()
        },
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_namespaces_get_404_and_allocate_nothing_and_real_ones_come_and_go() {
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    create_trainjob(&emu, "llm-1", "s1");
    let server = all_namespaces_server(&running).await;
    let addr = server.addr;
    ready(addr).await;
    assert!(listed_namespaces(addr).await.contains(&NS.to_string()));

    let mut rng = test_support::Rng::new(0x9e37_79b9_7f4a_7c15);
    for i in 0..3_000 {
        let ns = random_namespace(&mut rng);
        let path = &routes(&ns)[i % 5];
        let (status, body) = get_text(addr, path, &[]).await;
        assert_eq!(
            (status, body.as_str()),
            (
                StatusCode::NOT_FOUND,
                r#"{"error":"namespace is not watched"}"#
            ),
            "{path}"
        );
    }
    assert_eq!(server.hub.stream_count(), 0, "no stream for any of them");
    assert!(!listed_namespaces(addr)
        .await
        .iter()
        .any(|n| n.starts_with("ns-")));

    // A namespace created later becomes listable and servable.
    let job = JobRef::new("team-new", "llm-1", "s1");
    emu.create(objects::trainjob(&job, 2, None, false))
        .expect("create TrainJob");
    eventually(10, "the new namespace listed", || async move {
        listed_namespaces(addr)
            .await
            .contains(&"team-new".to_string())
            .then_some(())
    })
    .await;
    let snapshot = eventually(10, "the new namespace's TrainJob", || async move {
        let (status, body) = get_json(addr, "/api/v1/namespaces/team-new/snapshot").await;
        (status == StatusCode::OK && count_kind(&body, "TrainJob") == 1).then_some(body)
    })
    .await;
    assert_eq!(snapshot["items"][0]["metadata"]["namespace"], "team-new");
    let mut stream = SseReader::open(addr, "/api/v1/namespaces/team-new/snapshots", &[]).await;
    assert_eq!(stream.status, StatusCode::OK);
    assert_eq!(stream.next(5).await.expect("snapshot").event, "snapshot");
    assert_eq!(server.hub.stream_count(), 1);

    // Deleted: 404 again, though its objects linger in the emulator, and
    // the open stream ends and is freed.
    emu.delete(Kind::Namespace, "", "team-new")
        .expect("delete Namespace");
    assert!(stream.next(10).await.is_none(), "the stream ends");
    for path in routes("team-new") {
        let (status, _) = get_text(addr, &path, &[]).await;
        assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
    }
    assert!(!listed_namespaces(addr)
        .await
        .contains(&"team-new".to_string()));
    eventually(10, "the stream freed", || async {
        (server.hub.stream_count() == 0).then_some(())
    })
    .await;
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_permission_to_list_namespaces_the_namespaces_seen_are_served() {
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    emu.forbid("namespaces");
    create_trainjob(&emu, "llm-1", "s1");
    let server = all_namespaces_server(&running).await;
    let addr = server.addr;
    ready(addr).await;
    eventually(10, "the namespace seen in objects", || async move {
        listed_namespaces(addr)
            .await
            .contains(&NS.to_string())
            .then_some(())
    })
    .await;
    let (status, _) = get_json(addr, &format!("/api/v1/namespaces/{NS}/snapshot")).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = get_json(addr, "/api/v1/namespaces/nowhere/snapshot").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    server.shutdown().await.expect("shutdown");
}

/// Creates a pod of `llm-1-s1` whose kept hold-instance annotation is
/// `bytes` long, and returns its name.
fn create_big_pod(emu: &emulator::Emulator, rank: usize, bytes: usize) -> String {
    let (pod, name) = running_pod("llm-1", "s1", rank);
    let now = emulator::time::now_rfc3339();
    let mut pod = objects::pod_terminated(pod, "Error", 1, "", &now);
    pod["metadata"]["annotations"][classify_wasm::keys::HOLD_INSTANCE] =
        Value::from("h".repeat(bytes));
    emu.create(pod).expect("create pod");
    name
}

fn metric(text: &str, series: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {series} in {text}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn captured_pods_and_the_replay_ring_are_bounded_by_bytes() {
    const BIG: usize = 250 * 1024;
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    let uid = create_trainjob(&emu, "llm-1", "s1");
    create_jobset(&emu, "llm-1", "s1", &uid);
    let server = server(
        &running,
        Settings {
            limits: StoreLimits {
                // Two such pods fit, three do not; the count bounds are far.
                captured_bytes_per_trainjob: 3 * BIG - BIG / 2,
                // About three frames that each carry one such pod.
                replay_bytes_per_namespace: 3 * BIG + BIG / 2,
                ..StoreLimits::default()
            },
            ..Settings::default()
        },
    )
    .await;
    let addr = server.addr;
    ready(addr).await;
    let path = format!("/api/v1/namespaces/{NS}/snapshots");
    let mut live = SseReader::open(addr, &path, &[]).await;
    let first = live.next(5).await.expect("snapshot");
    assert_eq!(first.event, "snapshot");
    let start_id = first.id.clone().expect("an id");

    let mut last_pod_uid = String::new();
    for rank in 0..4 {
        let name = create_big_pod(&emu, rank, BIG);
        let pod = emu.get(Kind::Pod, NS, &name).expect("created");
        last_pod_uid = pod["metadata"]["uid"].as_str().expect("uid").to_string();
        emu.delete(Kind::Pod, NS, &name).expect("delete pod");
    }
    let snapshot = eventually(20, "the last pod captured", || {
        let last_pod_uid = last_pod_uid.clone();
        let uid = uid.clone();
        async move {
            let s = snapshot(addr).await;
            let captured = captured_of(&s, &uid);
            captured
                .iter()
                .any(|c| c["pod"]["metadata"]["uid"] == last_pod_uid.as_str())
                .then_some(s)
        }
    })
    .await;
    let captured = captured_of(&snapshot, &uid);
    assert_eq!(captured.len(), 2, "the two latest fit in the byte bound");
    assert!(captured.iter().all(|c| c["pod"]["metadata"]["annotations"]
        [classify_wasm::keys::HOLD_INSTANCE]
        .as_str()
        .is_some_and(|v| v.len() == BIG)));
    let (_, metrics) = get_text(addr, "/metrics", &[]).await;
    assert_eq!(
        metric(
            &metrics,
            "dispatch_dash_captured_pods_evicted_total{bound=\"trainjob_bytes\"}"
        ),
        2
    );
    assert!(
        metric(
            &metrics,
            "dispatch_dash_replay_frames_evicted_total{bound=\"bytes\"}"
        ) > 0
    );

    // The frames since the first snapshot weigh more than the ring holds:
    // resuming from it starts from a fresh snapshot, not a partial replay.
    let mut resumed = SseReader::open(addr, &path, &[("last-event-id", &start_id)]).await;
    let restart = resumed.next(5).await.expect("an event");
    assert_eq!(restart.event, "snapshot");
    assert_eq!(captured_of(&restart.json(), &uid).len(), 2);
    drop((live, resumed));
    server.shutdown().await.expect("shutdown");
}
