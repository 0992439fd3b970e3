//! Deleted-pod evidence against the emulator, through the real kube client
//! and the real HTTP server: capture, the 256 cap, a gap across a forced
//! `410`, and classification from captured pods.

mod common;

use common::*;
use emulator::Kind;
use hyper::StatusCode;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_pods_are_captured_capped_and_survive_a_gap() {
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    let server = server(&running, Settings::default()).await;
    let addr = server.addr;
    ready(addr).await;

    // A FailedJobs TrainJob whose 300 pods are deleted while watched.
    let uid = create_trainjob(&emu, "llm-1", "s1");
    let mut pods = Vec::new();
    for rank in 0..300 {
        pods.push(create_pod(&emu, "llm-1", "s1", rank, Some(1)));
    }
    eventually(20, "300 pods stored", || async move {
        (count_kind(&snapshot(addr).await, "Pod") == 300).then_some(())
    })
    .await;
    for name in &pods {
        emu.delete(Kind::Pod, NS, name).expect("delete pod");
    }
    fail_trainjob(&emu, "llm-1", "s1");
    let snap = eventually(20, "captures capped at 256", || {
        let uid = uid.clone();
        async move {
            let snap = snapshot(addr).await;
            (count_kind(&snap, "Pod") == 0 && captured_of(&snap, &uid).len() == 256).then_some(snap)
        }
    })
    .await;
    // The latest 256 are kept: the first 44 pods are gone.
    let names: Vec<&str> = captured_of(&snap, &uid)
        .iter()
        .filter_map(|c| c["pod"]["metadata"]["name"].as_str())
        .collect();
    assert!(!names.contains(&pods[0].as_str()));
    assert!(names.contains(&pods[299].as_str()));
    assert!(!snap.to_string().contains(SECRET));

    // Classified from the captured pods.
    let (status, observations) =
        get_json(addr, &format!("/api/v1/namespaces/{NS}/jobs/llm-1")).await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(
        observations[0]["cause"]["provenance"], "captured-pod",
        "{observations}"
    );
    assert_eq!(observations[0]["cause"]["kind"], "non-zero-exit");

    // One never watched: no evidence.
    create_trainjob(&emu, "llm-2", "s1");
    fail_trainjob(&emu, "llm-2", "s1");
    let observations = eventually(10, "llm-2 classified", || async move {
        let (_, o) = get_json(addr, &format!("/api/v1/namespaces/{NS}/jobs/llm-2")).await;
        (o[0]["state"] == "ended").then_some(o)
    })
    .await;
    assert_eq!(
        observations[0]["cause"]["detail"],
        "no pod evidence was captured"
    );
    assert_eq!(observations[0]["cause"]["kind"], "unknown");

    // A gap: the API goes away, a pod is deleted and the history compacted,
    // the API comes back; the server re-lists (410) and captures the pod
    // from its last cached state.
    let uid3 = create_trainjob(&emu, "llm-3", "s1");
    let kept = create_pod(&emu, "llm-3", "s1", 0, None);
    let vanished = create_pod(&emu, "llm-3", "s1", 1, Some(137));
    eventually(10, "llm-3 pods stored", || async move {
        (count_kind(&snapshot(addr).await, "Pod") == 2).then_some(())
    })
    .await;
    let emu_addr = running.addr();
    running.shutdown().await;
    emu.delete(Kind::Pod, NS, &vanished).expect("delete");
    emu.compact();
    let running = emu.serve(emu_addr).await.expect("emulator back");
    let snap = eventually(20, "capture across the gap", || {
        let uid3 = uid3.clone();
        async move {
            let snap = snapshot(addr).await;
            let captured = captured_of(&snap, &uid3);
            (captured.len() == 1).then(|| captured[0].clone())
        }
    })
    .await;
    assert_eq!(snap["acrossGap"], true);
    assert_eq!(snap["pod"]["metadata"]["name"], vanished.as_str());
    let snap = snapshot(addr).await;
    assert_eq!(count_kind(&snap, "Pod"), 1);
    assert_eq!(
        snap["items"]
            .as_array()
            .unwrap()
            .iter()
            .find(|i| i["kind"] == "Pod")
            .unwrap()["metadata"]["name"],
        kept.as_str()
    );
    // The evidence held before the gap is still there.
    assert_eq!(captured_of(&snap, &uid).len(), 256);
    let (_, metrics) = get_text(addr, "/metrics", &[]).await;
    assert!(
        metrics.contains("dispatch_dash_captured_pods 257"),
        "{metrics}"
    );

    // The TrainJob goes: its evidence goes with it.
    emu.delete(Kind::TrainJob, NS, "llm-1-s1")
        .expect("delete TrainJob");
    eventually(10, "evidence dropped", || {
        let uid = uid.clone();
        async move {
            captured_of(&snapshot(addr).await, &uid)
                .is_empty()
                .then_some(())
        }
    })
    .await;
    server.shutdown().await.expect("clean shutdown");
    running.shutdown().await;
}
