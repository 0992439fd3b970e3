//! The HTTP API against the emulator: Watch, Find, Inspect, orphans across
//! a re-created TrainJob, Node permission, the dashboard stream, limits and
//! faults.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::*;
use emulator::scenario::{self, ScenarioConfig};
use emulator::Kind;
use hyper::StatusCode;
use serde_json::{json, Value};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_sends_everything_then_changes_and_closes_when_the_watch_expires() {
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    let uid = create_trainjob(&emu, "llm-1", "s1");
    create_jobset(&emu, "llm-1", "s1", &uid);
    let server = server(&running, Settings::default()).await;
    let addr = server.addr;
    ready(addr).await;
    eventually(10, "job classified", || async move {
        let (_, o) = get_json(addr, &format!("/api/v1/namespaces/{NS}/jobs/llm-1")).await;
        (o.as_array().is_some_and(|a| !a.is_empty())).then_some(())
    })
    .await;

    let mut watch = SseReader::open(
        addr,
        &format!("/api/v1/namespaces/{NS}/jobs/llm-1/watch"),
        &[],
    )
    .await;
    assert_eq!(watch.status, StatusCode::OK);
    let first = watch.next(5).await.expect("initial observation");
    assert_eq!(first.event, "observation");
    assert_eq!(first.json()["object"]["name"], "llm-1-s1");
    assert_eq!(first.json()["state"], "running");

    // A change to another job sends nothing; a change to this one sends
    // the observation that differs.
    create_trainjob(&emu, "other", "s1");
    create_pod(&emu, "llm-1", "s1", 0, None);
    let changed = watch.next(5).await.expect("changed observation");
    assert_eq!(changed.json()["object"]["name"], "llm-1-s1");
    assert_ne!(changed.json(), first.json());
    fail_trainjob(&emu, "llm-1", "s1");
    let ended = watch.next(5).await.expect("ended observation");
    assert_eq!(ended.json()["state"], "ended");

    // The cluster watches expire: the stream ends cleanly.
    emu.expire_all_watches();
    assert!(watch.next(5).await.is_none(), "the stream closes");
    // Subscribing again works at once.
    let mut again = SseReader::open(
        addr,
        &format!("/api/v1/namespaces/{NS}/jobs/llm-1/watch"),
        &[],
    )
    .await;
    assert_eq!(
        again.next(5).await.expect("observation").json()["state"],
        "ended"
    );
    drop(again);
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn find_inspect_and_orphans_across_a_recreated_trainjob() {
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    let old_uid = create_trainjob(&emu, "llm-7", "s1");
    create_jobset(&emu, "llm-7", "s1", &old_uid);
    let old_pod = create_pod(&emu, "llm-7", "s1", 0, None);
    let server = server(&running, Settings::default()).await;
    let addr = server.addr;
    ready(addr).await;
    let path = format!("/api/v1/namespaces/{NS}/jobs/llm-7");
    eventually(10, "pod read for the TrainJob", || {
        let path = path.clone();
        async move {
            let (_, o) = get_json(addr, &path).await;
            (o[0]["execution"] != Value::Null).then_some(())
        }
    })
    .await;

    // Inspect a pod read for its TrainJob: no observation of its own.
    let (status, inspected) = get_json(
        addr,
        &format!("/api/v1/namespaces/{NS}/objects/pods/{old_pod}"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(inspected["observation"], Value::Null);
    assert_eq!(inspected["readFor"][0]["uid"], old_uid.as_str());
    assert_eq!(
        inspected["object"]["spec"],
        json!({"nodeName": "gpu-node-1"})
    );

    // The TrainJob is deleted and a new one of the same name created; the
    // old JobSet and pod linger.
    emu.delete(Kind::TrainJob, NS, "llm-7-s1").expect("delete");
    let new_uid = create_trainjob(&emu, "llm-7", "s1");
    let observations = eventually(10, "orphans across time", || {
        let path = path.clone();
        let new_uid = new_uid.clone();
        async move {
            let (_, o) = get_json(addr, &path).await;
            let found = o.as_array()?.len() == 3 && o[0]["object"]["uid"] == new_uid.as_str();
            found.then_some(o)
        }
    })
    .await;
    let kinds: Vec<(String, bool)> = observations
        .as_array()
        .unwrap()
        .iter()
        .map(|o| {
            (
                o["object"]["kind"].as_str().unwrap().to_string(),
                o["foreign"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        kinds,
        [
            ("TrainJob".into(), false),
            ("JobSet".into(), true),
            ("Pod".into(), true)
        ]
    );
    assert_eq!(
        observations[1]["cause"]["detail"],
        format!("JobSet llm-7-s1 has no live TrainJob of UID {old_uid}")
    );
    assert_eq!(
        observations[2]["cause"]["detail"],
        format!("Pod {old_pod} has no live TrainJob")
    );
    // The new TrainJob reads neither.
    assert_eq!(observations[0]["execution"], Value::Null);
    assert!(observations[0]["cause"]["detail"]
        .as_str()
        .unwrap()
        .contains("no JobSet"));

    // Inspect the orphan pod, with its explanation.
    let (status, inspected) = get_json(
        addr,
        &format!("/api/v1/namespaces/{NS}/objects/Pod/{old_pod}?explain=true"),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(inspected["observation"]["foreign"], true);
    assert_eq!(inspected["readFor"], json!([]));
    assert_eq!(
        inspected["explanation"]["observation"],
        inspected["observation"]
    );
    assert!(inspected["explanation"]["trace"].is_object());

    // Errors are plain.
    let (status, body) =
        get_json(addr, &format!("/api/v1/namespaces/{NS}/objects/secrets/x")).await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert_eq!(body, json!({"error": "kind not found"}));
    let (status, _) = get_json(addr, "/api/v1/namespaces/elsewhere/jobs/llm-7").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let (status, body) = get_json(addr, "/api/v1/namespaces").await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        body,
        json!({"namespaces": [NS], "allNamespaces": false, "mode": "plain", "nodesReadable": true,
               "demo": false,
               "apiVersions": {"TrainJob": "trainer.kubeflow.org/v1alpha1",
                               "JobSet": "jobset.x-k8s.io/v1alpha2",
                               "TrainingRuntime": "trainer.kubeflow.org/v1alpha1",
                               "Pod": "v1", "Node": "v1"}})
    );
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_node_permission_nodes_are_not_readable() {
    let running = emulator(true).await;
    running.emulator().forbid("nodes");
    let server = server(&running, Settings::default()).await;
    let addr = server.addr;
    ready(addr).await;
    // Ready does not wait for the queue kinds' watches (they feed only
    // the queue facts): wait until no watch is still starting.
    let body = eventually(30, "every watch past its start", || async move {
        let (status, body) = get_json(addr, "/readyz").await;
        let starting = body["watches"]
            .as_array()
            .is_some_and(|w| w.iter().any(|w| w["state"] == "pending"));
        (status == StatusCode::OK && !starting).then_some(body)
    })
    .await;
    assert_eq!(body["ready"], true);
    assert_eq!(body["mode"], "kueue");
    assert_eq!(body["nodesReadable"], false);
    assert_eq!(body["apiVersions"]["Workload"], "kueue.x-k8s.io/v1beta2");
    // The one watch not ok is the forbidden Nodes one, and it keeps the
    // server ready: Nodes are optional.
    let watches = body["watches"].as_array().expect("watches");
    let state_of = |kind: &str| {
        watches
            .iter()
            .filter(|w| w["kind"] == kind)
            .map(|w| w["state"].as_str().unwrap_or("").to_string())
            .collect::<Vec<_>>()
    };
    assert_eq!(watches.len(), 1, "{body}");
    assert_eq!(state_of("Node"), ["forbidden"], "{body}");
    let snap = snapshot(addr).await;
    assert_eq!(snap["nodesReadable"], false);
    assert_eq!(snap["mode"], "kueue");
    server.shutdown().await.expect("shutdown");
}

/// Applies one `change` event to a held snapshot, as a client does.
fn apply_change(snapshot: &mut Value, change: &Value) {
    let key = |o: &Value| {
        (
            o["kind"].as_str().unwrap_or("").to_string(),
            o["metadata"]["namespace"]
                .as_str()
                .unwrap_or("")
                .to_string(),
            o["metadata"]["name"].as_str().unwrap_or("").to_string(),
        )
    };
    let items = snapshot["items"].as_array_mut().expect("items");
    for d in change["deletes"].as_array().expect("deletes") {
        let k = (
            d["kind"].as_str().unwrap().to_string(),
            d["namespace"].as_str().unwrap().to_string(),
            d["name"].as_str().unwrap().to_string(),
        );
        items.retain(|i| key(i) != k);
    }
    for u in change["upserts"].as_array().expect("upserts") {
        match items.iter_mut().find(|i| key(i) == key(u)) {
            Some(slot) => *slot = u.clone(),
            None => items.push(u.clone()),
        }
    }
    let captured = snapshot["captured"].as_array_mut().expect("captured");
    let ckey = |c: &Value| {
        (
            c["trainJobUID"].as_str().unwrap_or("").to_string(),
            c["pod"]["metadata"]["uid"]
                .as_str()
                .unwrap_or("")
                .to_string(),
        )
    };
    for d in change["capturedDropped"]
        .as_array()
        .expect("capturedDropped")
    {
        let k = (
            d["trainJobUID"].as_str().unwrap().to_string(),
            d["podUID"].as_str().unwrap().to_string(),
        );
        captured.retain(|c| ckey(c) != k);
    }
    for c in change["captured"].as_array().expect("captured") {
        captured.retain(|held| ckey(held) != ckey(c));
        captured.push(c.clone());
    }
    if let Some(readable) = change.get("nodesReadable") {
        snapshot["nodesReadable"] = readable.clone();
    }
}

/// Items and captured entries by identity, for order-free comparison.
fn normalized(snapshot: &Value) -> (BTreeMap<String, Value>, BTreeMap<String, Value>, Value) {
    let items = snapshot["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                format!(
                    "{}/{}/{}",
                    i["kind"], i["metadata"]["namespace"], i["metadata"]["name"]
                ),
                i.clone(),
            )
        })
        .collect();
    let captured = snapshot["captured"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                format!("{}/{}", c["trainJobUID"], c["pod"]["metadata"]["uid"]),
                c.clone(),
            )
        })
        .collect();
    (items, captured, snapshot["nodesReadable"].clone())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshot_plus_changes_reproduce_the_snapshot_and_classify_the_same_offline() {
    let running = emulator(true).await;
    let emu = running.emulator().clone();
    let mut scenario = scenario::populate(
        &emu,
        ScenarioConfig {
            jobs: 12,
            pods_per_job: 3,
            namespaces: vec![NS.into()],
            ..ScenarioConfig::default()
        },
    );
    let server = server(&running, Settings::default()).await;
    let addr = server.addr;
    ready(addr).await;
    let mut stream =
        SseReader::open(addr, &format!("/api/v1/namespaces/{NS}/snapshots"), &[]).await;
    let first = stream.next(5).await.expect("snapshot event");
    assert_eq!(first.event, "snapshot");
    assert_eq!(stream.rows_checked, 1, "the snapshot came after its rows");
    let mut held = first.json();
    let mut last_id: u64 = first.id.as_deref().unwrap().parse().unwrap();
    let mut changes = 0;
    for _ in 0..25 {
        scenario.step(&emu);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // Read changes until the server's snapshot equals the held one.
    let server_snapshot = loop {
        let server_snapshot = snapshot(addr).await;
        if normalized(&server_snapshot) == normalized(&held) {
            break server_snapshot;
        }
        let change = stream.next(5).await.expect("change event");
        assert_eq!(change.event, "change");
        let id: u64 = change.id.as_deref().unwrap().parse().unwrap();
        assert!(id > last_id, "ids increase");
        last_id = id;
        apply_change(&mut held, &change.json());
        changes += 1;
    };
    assert!(changes > 0, "the scenario changed something");

    // Classifying the snapshot offline gives the server's observations.
    let offline = classify_wasm::classify(
        &server_snapshot.to_string(),
        classify_wasm::Options::default(),
    )
    .expect("the snapshot is valid input");
    let jobs: std::collections::BTreeSet<String> = offline.iter().map(|o| o.job.clone()).collect();
    let mut online = Vec::new();
    let mut with_queue_facts = 0;
    for job in &jobs {
        let (_, o) = get_json(addr, &format!("/api/v1/namespaces/{NS}/jobs/{job}")).await;
        for mut entry in o.as_array().unwrap().iter().cloned() {
            // Queue facts ride beside the observation and are in no
            // snapshot: the verdicts must agree without them.
            if entry.as_object_mut().unwrap().remove("queue").is_some() {
                with_queue_facts += 1;
            }
            online.push(entry);
        }
    }
    assert!(with_queue_facts > 0, "no TrainJob had queue facts");
    let offline: Vec<Value> = offline
        .iter()
        .map(|o| serde_json::to_value(o).unwrap())
        .collect();
    assert_eq!(offline, online);

    // Resuming with Last-Event-ID replays nothing missed, then goes live.
    drop(stream);
    let id = last_id.to_string();
    let mut resumed = SseReader::open(
        addr,
        &format!("/api/v1/namespaces/{NS}/snapshots"),
        &[("last-event-id", id.as_str())],
    )
    .await;
    scenario.step(&emu);
    let next = resumed.next(5).await.expect("a change");
    assert_eq!(
        next.event, "change",
        "a resume does not start with a snapshot"
    );
    // An unknown id starts over with a snapshot.
    let mut fresh = SseReader::open(
        addr,
        &format!("/api/v1/namespaces/{NS}/snapshots"),
        &[("last-event-id", "12")],
    )
    .await;
    assert_eq!(fresh.next(5).await.expect("snapshot").event, "snapshot");
    assert_eq!(fresh.rows_checked, 1, "a new start has its rows");
    assert_eq!(resumed.rows_checked, 0, "a resume has none");
    drop((resumed, fresh));
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn limits_token_and_no_secrets() {
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    let uid = create_trainjob(&emu, "llm-1", "s1");
    create_jobset(&emu, "llm-1", "s1", &uid);
    let pod = create_pod(&emu, "llm-1", "s1", 0, None);
    let server = server(
        &running,
        Settings {
            token: Some("s3cret-token".into()),
            max_sse_clients: 2,
            ..Settings::default()
        },
    )
    .await;
    let addr = server.addr;
    ready(addr).await;
    let auth = [("authorization", "Bearer s3cret-token")];

    // Token on every /api request; health endpoints stay open.
    let (status, body) = get_text(addr, "/api/v1/namespaces", &[]).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    assert_eq!(body, r#"{"error":"unauthorized"}"#);
    let (status, _) = get_text(
        addr,
        "/api/v1/namespaces",
        &[("authorization", "Bearer wrong")],
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let (status, _) = get_text(addr, "/api/v1/namespaces", &auth).await;
    assert_eq!(status, StatusCode::OK);
    let (status, _) = get_text(addr, "/healthz", &[]).await;
    assert_eq!(status, StatusCode::OK);

    // Body limit.
    let response = request(addr, "/api/v1/namespaces", &auth, vec![b'x'; 64 * 1024]).await;
    assert_eq!(response.status(), StatusCode::PAYLOAD_TOO_LARGE);

    // SSE cap: the third stream is refused with 503.
    let path = format!("/api/v1/namespaces/{NS}/snapshots");
    let mut a = SseReader::open(addr, &path, &auth).await;
    let mut b = SseReader::open(
        addr,
        &format!("/api/v1/namespaces/{NS}/jobs/llm-1/watch"),
        &auth,
    )
    .await;
    assert_eq!(a.status, StatusCode::OK);
    assert_eq!(b.status, StatusCode::OK);
    let snapshot_event = a.next(5).await.expect("snapshot");
    b.next(5).await.expect("observation");
    let (status, body) = get_text(addr, &path, &auth).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.contains("too many event streams"));
    drop(a);
    // A slot frees once the client is gone.
    eventually(5, "a free SSE slot", || async move {
        let response = request(addr, &path_owned(), &auth, Vec::new()).await;
        (response.status() == StatusCode::OK).then_some(())
    })
    .await;

    // Nothing from a pod spec leaves the server.
    assert!(!snapshot_event.data.contains(SECRET));
    let mut bodies = vec![snapshot_event.data];
    for path in [
        format!("/api/v1/namespaces/{NS}/snapshot"),
        format!("/api/v1/namespaces/{NS}/jobs/llm-1"),
        format!("/api/v1/namespaces/{NS}/objects/pods/{pod}?explain=true"),
        "/metrics".to_string(),
    ] {
        let (status, body) = get_text(addr, &path, &auth).await;
        assert_eq!(status, StatusCode::OK, "{path}");
        bodies.push(body);
    }
    for body in &bodies {
        assert!(!body.contains(SECRET));
        assert!(!body.contains("API_TOKEN"));
        assert!(
            !body.contains("ghcr.io/example/train"),
            "no container image either"
        );
    }
    drop(b);
    server.shutdown().await.expect("shutdown");
}

fn path_owned() -> String {
    format!("/api/v1/namespaces/{NS}/snapshots")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_server_recovers_from_drops_a_slow_api_and_a_restart() {
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    let uid = create_trainjob(&emu, "llm-1", "s1");
    let pod = create_pod(&emu, "llm-1", "s1", 0, Some(1));
    let server = server(&running, Settings::default()).await;
    let addr = server.addr;
    ready(addr).await;
    eventually(10, "pod stored", || async move {
        (count_kind(&snapshot(addr).await, "Pod") == 1).then_some(())
    })
    .await;
    emu.delete(Kind::Pod, NS, &pod).expect("delete");
    eventually(10, "pod captured", || {
        let uid = uid.clone();
        async move { (captured_of(&snapshot(addr).await, &uid).len() == 1).then_some(()) }
    })
    .await;

    // Connections drop mid-stream.
    emu.drop_connections();
    create_trainjob(&emu, "llm-2", "s1");
    eventually(10, "a change after the drop", || async move {
        (count_kind(&snapshot(addr).await, "TrainJob") == 2).then_some(())
    })
    .await;

    // A slow API.
    emu.set_latency(Duration::from_millis(300));
    emu.expire_all_watches();
    create_trainjob(&emu, "llm-3", "s1");
    eventually(10, "a change through a slow API", || async move {
        (count_kind(&snapshot(addr).await, "TrainJob") == 3).then_some(())
    })
    .await;
    emu.set_latency(Duration::ZERO);

    // The API server restarts (state kept): the server reconnects by itself.
    let running = running.restart(false).await.expect("restart");
    create_trainjob(&emu, "llm-4", "s1");
    eventually(15, "a change after the restart", || async move {
        (count_kind(&snapshot(addr).await, "TrainJob") == 4).then_some(())
    })
    .await;
    // No evidence was lost.
    assert_eq!(captured_of(&snapshot(addr).await, &uid).len(), 1);
    let (_, metrics) = get_text(addr, "/metrics", &[]).await;
    let restarts: u64 = metrics
        .lines()
        .find_map(|l| l.strip_prefix("dispatch_dash_watch_restarts_total "))
        .and_then(|v| v.parse().ok())
        .expect("restart metric");
    assert!(restarts > 0);
    server.shutdown().await.expect("shutdown");
    running.shutdown().await;
}
