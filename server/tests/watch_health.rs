//! The watch layer against the emulator: the version discovery chooses
//! (issue 11), backoff and readiness when a watch fails, and supervision
//! (issue 7, items 5 and 6).

mod common;

use std::time::Duration;

use common::*;
use dispatch_dash::serve::projection::ObjectKind;
use dispatch_dash::serve::{ModeChoice, WorkerEnd};
use emulator::scenario::objects::{self, JobRef};
use emulator::{Emulator, EmulatorConfig, Kind, RunningEmulator, WorkloadVersions};
use hyper::StatusCode;
use serde_json::Value;

async fn kueue_emulator(versions: WorkloadVersions) -> RunningEmulator {
    serve_emulator(EmulatorConfig {
        kueue: true,
        workload_versions: versions,
        ..emulator_config()
    })
    .await
}

/// A TrainJob `llm-1-s1` and its Workload, deactivated: in Kueue mode it
/// classifies `suspended` only when the Workload was read (rule 5).
fn deactivated_job(emu: &Emulator) {
    let job = JobRef::new(NS, "llm-1", "s1");
    let trainjob = emu
        .create(objects::trainjob(&job, 2, Some("team-queue"), true))
        .expect("create TrainJob");
    let uid = trainjob["metadata"]["uid"].as_str().expect("uid");
    let mut workload = objects::workload(&job, "trainjob-llm-1-s1", uid, "team-queue", 2);
    workload["spec"]["active"] = false.into();
    emu.create(workload).expect("create Workload");
}

async fn find(addr: std::net::SocketAddr) -> Vec<Value> {
    let (_, body) = get_json(addr, &format!("/api/v1/namespaces/{NS}/jobs/llm-1")).await;
    body.as_array().cloned().unwrap_or_default()
}

/// The parts of an observation that do not depend on when it was made.
fn verdict(o: &Value) -> (Value, Value, Value, Value) {
    (
        o["object"]["name"].clone(),
        o["state"].clone(),
        o["held"].clone(),
        o["cause"].clone(),
    )
}

/// `/readyz`'s entry for the watch of `kind`, when it is not ok.
fn watch_entry(readyz: &Value, kind: &str) -> Option<Value> {
    readyz["watches"]
        .as_array()?
        .iter()
        .find(|w| w["kind"] == kind)
        .cloned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workloads_are_watched_at_the_preferred_understood_version() {
    let mut verdicts = Vec::new();
    for (versions, expected, deprecated_allowed) in [
        (WorkloadVersions::Both, "kueue.x-k8s.io/v1beta2", false),
        (
            WorkloadVersions::V1beta2Only,
            "kueue.x-k8s.io/v1beta2",
            false,
        ),
        (
            WorkloadVersions::V1beta1Only,
            "kueue.x-k8s.io/v1beta1",
            true,
        ),
    ] {
        let running = kueue_emulator(versions).await;
        let emu = running.emulator().clone();
        deactivated_job(&emu);
        let server = server(&running, Settings::default()).await;
        let addr = server.addr;
        ready(addr).await;

        let (status, readyz) = get_json(addr, "/readyz").await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(
            readyz["mode"], "kueue",
            "{versions:?}: auto follows discovery"
        );
        assert_eq!(readyz["apiVersions"]["Workload"], expected, "{versions:?}");
        assert_eq!(
            readyz["apiVersions"]["TrainJob"],
            "trainer.kubeflow.org/v1alpha1"
        );
        let (_, namespaces) = get_json(addr, "/api/v1/namespaces").await;
        assert_eq!(namespaces["apiVersions"]["Workload"], expected);
        assert_eq!(
            server.hub.health().api_versions()[&ObjectKind::Workload].as_deref(),
            Some(expected)
        );

        // Classified as before, whichever version was read.
        let observations = eventually(10, "the job classified", || async move {
            let found = find(addr).await;
            (!found.is_empty()).then_some(found)
        })
        .await;
        assert_eq!(
            observations[0]["state"], "suspended",
            "{versions:?}: {observations:?}"
        );
        verdicts.push(observations.iter().map(verdict).collect::<Vec<_>>());
        let snap = snapshot(addr).await;
        let workload = snap["items"]
            .as_array()
            .and_then(|items| items.iter().find(|i| i["kind"] == "Workload"))
            .cloned()
            .expect("the Workload is in the snapshot");
        assert_eq!(workload["apiVersion"], expected);

        assert!(emu.requests(Kind::Workload, "watch") >= 1);
        if !deprecated_allowed {
            assert_eq!(
                emu.deprecated_requests(),
                0,
                "{versions:?}: no request at the deprecated v1beta1"
            );
        }
        server.shutdown().await.expect("shutdown");
    }
    assert_eq!(verdicts[0], verdicts[1]);
    assert_eq!(verdicts[0], verdicts[2]);
}

/// `dispatch_dash_watch_lists_total` of `kind` by `method`, when present.
fn lists_of(metrics: &str, kind: &str, method: &str) -> Option<f64> {
    metric_value(
        metrics,
        &format!("dispatch_dash_watch_lists_total{{kind=\"{kind}\",method=\"{method}\"}}"),
    )
}

/// Lists are read as watch lists where the API server streams them (no
/// list request at all), and in pages where it refuses them as a server
/// without the WatchList feature does. Both read the same objects, a
/// re-list after `410 Gone` is read the same way and still captures what
/// vanished in the gap, and `/metrics` says which way each kind was read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_are_streamed_where_served_and_paged_where_refused() {
    let mut verdicts = Vec::new();
    for (served, method, not) in [(true, "watchList", "pages"), (false, "pages", "watchList")] {
        let running = emulator(false).await;
        let emu = running.emulator().clone();
        emu.set_watch_list_served(served);
        let uid = create_trainjob(&emu, "llm-1", "s1");
        create_jobset(&emu, "llm-1", "s1", &uid);
        let pods: Vec<String> = (0..3)
            .map(|rank| create_pod(&emu, "llm-1", "s1", rank, None))
            .collect();
        let server = server(&running, Settings::default()).await;
        let addr = server.addr;
        ready(addr).await;
        let (_, metrics) = get_text(addr, "/metrics", &[]).await;
        for kind in ["TrainJob", "JobSet", "Pod"] {
            assert_eq!(lists_of(&metrics, kind, method), Some(1.0), "{metrics}");
            assert_eq!(lists_of(&metrics, kind, not), None, "{metrics}");
        }
        let pod_lists = emu.requests(Kind::Pod, "list");
        match served {
            true => assert_eq!(pod_lists, 0, "one watch request is the list"),
            false => assert!(pod_lists >= 1, "listed in pages"),
        }
        assert_eq!(count_kind(&snapshot(addr).await, "Pod"), 3);

        // A gap: a pod goes while the API is away and the history is
        // compacted; the re-list (410) is read the same way.
        let emu_addr = running.addr();
        running.shutdown().await;
        emu.delete(Kind::Pod, NS, &pods[2]).expect("delete");
        emu.compact();
        let running = emu.serve(emu_addr).await.expect("emulator back");
        let uid_then = uid.clone();
        eventually(30, "the pod captured across the gap", || {
            let uid = uid_then.clone();
            async move {
                let snap = snapshot(addr).await;
                (count_kind(&snap, "Pod") == 2 && captured_of(&snap, &uid).len() == 1).then_some(())
            }
        })
        .await;
        let (_, metrics) = get_text(addr, "/metrics", &[]).await;
        assert_eq!(lists_of(&metrics, "Pod", method), Some(2.0), "{metrics}");
        assert_eq!(lists_of(&metrics, "Pod", not), None, "{metrics}");
        verdicts.push(find(addr).await.iter().map(verdict).collect::<Vec<_>>());
        server.shutdown().await.expect("shutdown");
        drop(running);
    }
    assert_eq!(
        verdicts[0], verdicts[1],
        "read either way, the same verdicts"
    );
    assert!(!verdicts[0].is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_that_goes_away_is_rediscovered() {
    // An older Kueue: only v1beta1.
    let running = kueue_emulator(WorkloadVersions::V1beta1Only).await;
    let emu = running.emulator().clone();
    deactivated_job(&emu);
    let server = server(&running, Settings::default()).await;
    let addr = server.addr;
    ready(addr).await;
    let (_, readyz) = get_json(addr, "/readyz").await;
    assert_eq!(readyz["apiVersions"]["Workload"], "kueue.x-k8s.io/v1beta1");

    // Upgraded: v1beta1 is no longer served; the open watch ends.
    emu.set_workload_versions(WorkloadVersions::V1beta2Only);
    emu.expire_all_watches();
    eventually(20, "Workloads watched at v1beta2", || async move {
        let (status, readyz) = get_json(addr, "/readyz").await;
        (status == StatusCode::OK && readyz["apiVersions"]["Workload"] == "kueue.x-k8s.io/v1beta2")
            .then_some(())
    })
    .await;
    // Still reading: a new Workload shows up, at v1beta2.
    let job = JobRef::new(NS, "llm-2", "s1");
    emu.create(objects::workload(
        &job,
        "trainjob-llm-2-s1",
        "uid-2",
        "team-queue",
        1,
    ))
    .expect("create Workload");
    eventually(10, "the new Workload", || async move {
        let snap = snapshot(addr).await;
        let items = snap["items"].as_array().cloned().unwrap_or_default();
        let workloads: Vec<&Value> = items.iter().filter(|i| i["kind"] == "Workload").collect();
        (workloads.len() == 2
            && workloads
                .iter()
                .all(|w| w["apiVersion"] == "kueue.x-k8s.io/v1beta2"))
        .then_some(())
    })
    .await;
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kind_that_is_not_served_is_named_and_makes_the_server_unready() {
    // Kueue mode asked for, on a cluster without Kueue.
    let running = emulator(false).await;
    let server = server(
        &running,
        Settings {
            mode: ModeChoice::Kueue,
            unready_after: Duration::from_secs(1),
            ..Settings::default()
        },
    )
    .await;
    let addr = server.addr;
    // Unready while the other watches are listed and fine: only Workload
    // is named, beside the queues (not served either, but optional: they
    // are named and never make the server unready).
    let readyz = eventually(15, "unready, naming Workload alone", || async move {
        let (status, readyz) = get_json(addr, "/readyz").await;
        let named = readyz["watches"].as_array().map(|w| {
            w.iter()
                .filter(|w| w["kind"] != "LocalQueue" && w["kind"] != "ClusterQueue")
                .count()
        }) == Some(1);
        (status == StatusCode::SERVICE_UNAVAILABLE
            && named
            && watch_entry(&readyz, "Workload").is_some_and(|w| w["state"] == "notServed"))
        .then_some(readyz)
    })
    .await;
    let entry = watch_entry(&readyz, "Workload").expect("entry");
    assert_eq!(entry["namespace"], NS);
    assert_eq!(entry["apiVersion"], Value::Null);
    assert!(entry["since"].as_str().is_some_and(|s| !s.is_empty()));
    assert_eq!(readyz["apiVersions"]["Workload"], Value::Null);
    // The other kinds are watched.
    assert_eq!(
        readyz["apiVersions"]["TrainJob"],
        "trainer.kubeflow.org/v1alpha1"
    );
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_kind_is_named_makes_the_server_unready_and_recovers() {
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    emu.forbid("trainjobs");
    let server = server(
        &running,
        Settings {
            unready_after: Duration::from_secs(1),
            ..Settings::default()
        },
    )
    .await;
    let addr = server.addr;
    let readyz = eventually(15, "unready, naming TrainJob", || async move {
        let (status, readyz) = get_json(addr, "/readyz").await;
        (status == StatusCode::SERVICE_UNAVAILABLE
            && watch_entry(&readyz, "TrainJob").is_some_and(|w| w["state"] == "forbidden"))
        .then_some(readyz)
    })
    .await;
    assert_eq!(
        watch_entry(&readyz, "TrainJob").expect("entry")["apiVersion"],
        "trainer.kubeflow.org/v1alpha1"
    );
    // No internal detail: the entry is a state, not the API's message.
    assert!(!readyz.to_string().contains("serviceaccount"), "{readyz}");

    // The lists back off: over four seconds, a few attempts, not one
    // every 200 ms.
    let before = emu.requests(Kind::TrainJob, "list");
    tokio::time::sleep(Duration::from_secs(4)).await;
    let during = emu.requests(Kind::TrainJob, "list") - before;
    assert!(during <= 8, "{during} lists in 4 s");

    emu.allow("trainjobs");
    create_trainjob(&emu, "llm-1", "s1");
    // The next attempt comes within the backoff's cap (30 s).
    eventually(45, "ready again with the TrainJob", || async move {
        let (status, _) = get_json(addr, "/readyz").await;
        (status == StatusCode::OK && count_kind(&snapshot(addr).await, "TrainJob") == 1)
            .then_some(())
    })
    .await;
    let (_, readyz) = get_json(addr, "/readyz").await;
    assert!(watch_entry(&readyz, "TrainJob").is_none(), "{readyz}");
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forbidden_watch_backs_off_instead_of_retrying_every_200_ms() {
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    create_trainjob(&emu, "llm-1", "s1");
    // Lists work; watches are refused.
    emu.forbid_verb("trainjobs", "watch");
    let server = server(&running, Settings::default()).await;
    let addr = server.addr;
    eventually(15, "the watch reported forbidden", || async move {
        let (_, readyz) = get_json(addr, "/readyz").await;
        watch_entry(&readyz, "TrainJob")
            .is_some_and(|w| w["state"] == "forbidden")
            .then_some(())
    })
    .await;
    let before = emu.requests(Kind::TrainJob, "watch");
    tokio::time::sleep(Duration::from_secs(4)).await;
    let during = emu.requests(Kind::TrainJob, "watch") - before;
    assert!(during <= 8, "{during} watches in 4 s");
    // Still served from the list.
    eventually(10, "the listed TrainJob", || async move {
        (count_kind(&snapshot(addr).await, "TrainJob") == 1).then_some(())
    })
    .await;

    emu.allow("trainjobs");
    create_trainjob(&emu, "llm-2", "s1");
    eventually(45, "watching again", || async move {
        let (_, readyz) = get_json(addr, "/readyz").await;
        (watch_entry(&readyz, "TrainJob").is_none()
            && count_kind(&snapshot(addr).await, "TrainJob") == 2)
            .then_some(())
    })
    .await;
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watch_that_ends_cleanly_at_once_is_reopened_after_a_backoff() {
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    create_trainjob(&emu, "llm-1", "s1");
    let server = server(&running, Settings::default()).await;
    let addr = server.addr;
    ready(addr).await;
    // Every watch now answers 200 and ends before its first event.
    emu.set_watches_end_at_once(true);
    emu.expire_all_watches();
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = emu.requests(Kind::TrainJob, "watch");
    tokio::time::sleep(Duration::from_secs(4)).await;
    let during = emu.requests(Kind::TrainJob, "watch") - before;
    // At once would be hundreds a second; the backoff starts at 200 ms and
    // doubles.
    assert!(during <= 8, "{during} watches in 4 s");

    // Watches that deliver again: changes arrive again.
    emu.set_watches_end_at_once(false);
    create_trainjob(&emu, "llm-2", "s1");
    eventually(45, "watching again", || async move {
        (count_kind(&snapshot(addr).await, "TrainJob") == 2).then_some(())
    })
    .await;
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_panics_is_reported_by_the_supervisor() {
    let running = emulator(false).await;
    let mut server = server(&running, Settings::default()).await;
    ready(server.addr).await;
    // The real workers run on: nothing to report.
    let quiet = tokio::time::timeout(Duration::from_millis(300), server.supervise()).await;
    assert!(quiet.is_err(), "no worker ended: {quiet:?}");
    server.spawn_worker("injected", async {
        panic!("a bug in a worker");
    });
    let end = tokio::time::timeout(Duration::from_secs(10), server.supervise())
        .await
        .expect("the supervisor reports the end");
    assert_eq!(
        end,
        WorkerEnd {
            name: "injected".into(),
            panicked: true
        }
    );
    assert_eq!(
        dispatch_dash::serve::Error::WorkerEnded(end).to_string(),
        "the worker `injected` panicked; stopping rather than serving stale data"
    );
    server.shutdown().await.expect("shutdown");
}
