//! The scenario driver writes objects the real client and the spec's shapes
//! accept, and covers every life the classification knows.

mod common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::{config, serve};
use emulator::scenario::{self, objects, ScenarioConfig};
use emulator::{Emulator, Kind};
use futures::StreamExt;
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::ApiResource;
use kube::runtime::watcher;
use serde_json::Value;

fn scenario_config(kueue: bool, seed: u64) -> ScenarioConfig {
    ScenarioConfig {
        seed,
        jobs: 12,
        pods_per_job: 3,
        pace: Duration::from_millis(10),
        namespaces: vec!["team-a".into(), "team-b".into()],
        kueue,
    }
}

fn trainjob_resource() -> ApiResource {
    ApiResource {
        group: "trainer.kubeflow.org".into(),
        version: "v1alpha1".into(),
        api_version: "trainer.kubeflow.org/v1alpha1".into(),
        kind: "TrainJob".into(),
        plural: "trainjobs".into(),
    }
}

fn cond<'a>(obj: &'a Value, type_: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == type_)
}

fn cond_is(obj: &Value, type_: &str, status: &str, reason: Option<&str>) -> bool {
    cond(obj, type_)
        .is_some_and(|c| c["status"] == status && reason.is_none_or(|r| c["reason"] == r))
}

#[tokio::test]
async fn populated_objects_are_what_the_client_reads() {
    let emu = Emulator::new(config(true));
    scenario::populate(&emu, scenario_config(true, 11));
    let (_server, client) = serve(&emu).await;

    let pods: Api<Pod> = Api::all(client.clone());
    let pods = pods.list(&ListParams::default()).await.unwrap();
    assert!(pods.items.len() >= 10, "{} pods", pods.items.len());
    for p in &pods.items {
        let name = p.metadata.name.clone().unwrap();
        let labels = p.metadata.labels.clone().unwrap();
        let trainjob = &labels[objects::JOBSET_NAME];
        assert!(name.starts_with(&format!("{trainjob}-node-0-")), "{name}");
        assert_eq!(
            name.len(),
            format!("{trainjob}-node-0-0-xxxxx").len(),
            "{name}"
        );
        assert_eq!(
            trainjob,
            &format!(
                "{}-{}",
                labels[objects::JOB_ID],
                labels[objects::SUBMISSION]
            )
        );
        assert!(labels[objects::RESTART_ATTEMPT].parse::<u32>().is_ok());
        let annotations = p.metadata.annotations.clone().unwrap();
        assert!(annotations[objects::ADMISSION].parse::<u32>().unwrap() >= 1);
        assert_eq!(p.spec.as_ref().unwrap().containers[0].name, "node");
    }

    let nodes: Api<Node> = Api::all(client.clone());
    let nodes = nodes.list(&ListParams::default()).await.unwrap();
    assert_eq!(nodes.items.len(), 6);
    assert!(nodes.items.iter().all(|n| n
        .status
        .as_ref()
        .unwrap()
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .any(|c| c.type_ == "Ready")));

    let trainjobs: Api<DynamicObject> = Api::all_with(client.clone(), &trainjob_resource());
    let trainjobs = trainjobs.list(&ListParams::default()).await.unwrap();
    assert!(trainjobs.items.len() >= 10, "{}", trainjobs.items.len());
    let mut uids = BTreeSet::new();
    for tj in &trainjobs.items {
        let labels = tj.metadata.labels.clone().unwrap();
        assert_eq!(
            tj.metadata.name.clone().unwrap(),
            format!(
                "{}-{}",
                labels[objects::JOB_ID],
                labels[objects::SUBMISSION]
            )
        );
        assert_eq!(labels[objects::QUEUE_NAME], "gpu");
        uids.insert(tj.metadata.uid.clone().unwrap());
    }
    // Every TrainJob has its Workload (labelled with its UID) and runtime copy.
    let workloads = emu.list(Kind::Workload, None);
    for uid in &uids {
        assert!(
            workloads
                .iter()
                .any(|w| w["metadata"]["labels"][objects::KUEUE_JOB_UID] == **uid),
            "no Workload for {uid}"
        );
    }
    let runtimes = emu.list(Kind::TrainingRuntime, None);
    assert!(runtimes.len() >= uids.len());
    // JobSets are controlled by their TrainJob; the orphaned one by a UID
    // that no longer exists.
    let orphans = emu
        .list(Kind::JobSet, None)
        .into_iter()
        .filter(|js| {
            let owner = &js["metadata"]["ownerReferences"][0];
            assert_eq!(owner["controller"], true);
            assert_eq!(owner["kind"], "TrainJob");
            !uids.contains(owner["uid"].as_str().unwrap())
        })
        .count();
    assert!(orphans >= 1, "the population shows an orphaned JobSet");
}

#[test]
fn same_seed_same_population() {
    let names = |seed| {
        let emu = Emulator::new(config(true));
        scenario::populate(&emu, scenario_config(true, seed));
        emu.list(Kind::Pod, None)
            .into_iter()
            .map(|p| format!("{} {}", p["metadata"]["name"], p["metadata"]["uid"]))
            .collect::<Vec<_>>()
    };
    assert_eq!(names(3), names(3));
    assert_ne!(names(3), names(4));
}

/// What a scan of the cluster found, accumulated over a run.
fn scan(emu: &Emulator, seen: &mut BTreeSet<&'static str>) {
    for w in emu.list(Kind::Workload, None) {
        if cond_is(&w, "QuotaReserved", "False", None) {
            seen.insert("queued");
        }
        if cond_is(&w, "Admitted", "True", None) {
            seen.insert("admitted");
        }
        if cond_is(&w, "Evicted", "True", Some("Preempted"))
            && cond_is(&w, "Requeued", "True", None)
        {
            seen.insert("kueue-preempted");
        }
        if w["metadata"]["annotations"][objects::HOLD_INSTANCE].is_string() {
            seen.insert("held");
        }
        if w["spec"]["active"] == false
            && !w["metadata"]["annotations"][objects::HOLD_INSTANCE].is_string()
        {
            seen.insert("suspended");
        }
    }
    let trainjob_uids: BTreeSet<String> = emu
        .list(Kind::TrainJob, None)
        .into_iter()
        .map(|tj| {
            if cond_is(&tj, "Complete", "True", None) {
                seen.insert("complete");
            }
            if cond_is(&tj, "Failed", "True", Some("FailedJobs")) {
                seen.insert("failed");
            }
            let ann = &tj["metadata"]["annotations"];
            if ann[objects::GATED_BY] == objects::OPEN_GATE {
                seen.insert("gated");
            }
            if ann[objects::HOLD_INSTANCE].is_string() {
                seen.insert("held");
            }
            if tj["spec"]["suspend"] == true && cond_is(&tj, "Suspended", "True", None) {
                seen.insert("suspended");
            }
            tj["metadata"]["uid"].as_str().unwrap().to_string()
        })
        .collect();
    for p in emu.list(Kind::Pod, None) {
        let term = &p["status"]["containerStatuses"][0]["state"]["terminated"];
        if term["reason"] == "OOMKilled" && term["exitCode"] == 137 {
            seen.insert("oom");
        }
        if term["reason"] == "Error" && term["exitCode"] == 1 {
            seen.insert("exit-1");
        }
        if cond_is(
            &p,
            "DisruptionTarget",
            "True",
            Some("DeletionByTaintManager"),
        ) {
            seen.insert("taint-eviction");
        }
        if cond_is(
            &p,
            "DisruptionTarget",
            "True",
            Some("PreemptionByScheduler"),
        ) {
            seen.insert("scheduler-preempted");
        }
        if p["metadata"]["deletionTimestamp"].is_string() {
            seen.insert("terminating");
        }
        if p["metadata"]["labels"][objects::RESTART_ATTEMPT] == "1" {
            seen.insert("new-execution");
        }
        if p["status"]["phase"] == "Running" {
            seen.insert("running");
        }
    }
    for n in emu.list(Kind::Node, None) {
        if cond_is(&n, "Ready", "Unknown", None) {
            seen.insert("node-lost");
        }
    }
    for js in emu.list(Kind::JobSet, None) {
        if js["status"]["restarts"].as_u64().unwrap_or(0) >= 1 {
            seen.insert("jobset-restarted");
        }
        if !trainjob_uids.contains(
            js["metadata"]["ownerReferences"][0]["uid"]
                .as_str()
                .unwrap_or(""),
        ) {
            seen.insert("orphans");
        }
    }
}

fn lives(kueue: bool) -> BTreeSet<&'static str> {
    let mut emu_config = config(kueue);
    emu_config.history = 100_000;
    let emu = Emulator::new(emu_config);
    let mut sc = scenario::populate(&emu, scenario_config(kueue, 5));
    let mut seen = BTreeSet::new();
    scan(&emu, &mut seen);
    for _ in 0..60 {
        sc.step(&emu);
        scan(&emu, &mut seen);
    }
    // The namespace stays alive: ended jobs are replaced.
    assert_eq!(sc.stories().len(), 12);
    seen
}

#[test]
fn kueue_mode_covers_every_life() {
    let seen = lives(true);
    for want in [
        "queued",
        "admitted",
        "running",
        "complete",
        "failed",
        "oom",
        "exit-1",
        "node-lost",
        "taint-eviction",
        "scheduler-preempted",
        "kueue-preempted",
        "held",
        "gated",
        "suspended",
        "new-execution",
        "jobset-restarted",
        "terminating",
        "orphans",
    ] {
        assert!(
            seen.contains(want),
            "kueue mode never showed {want}: {seen:?}"
        );
    }
}

#[test]
fn plain_mode_covers_every_life() {
    let seen = lives(false);
    for want in [
        "running",
        "complete",
        "failed",
        "oom",
        "exit-1",
        "node-lost",
        "taint-eviction",
        "scheduler-preempted",
        "held",
        "gated",
        "suspended",
        "new-execution",
        "jobset-restarted",
        "terminating",
        "orphans",
    ] {
        assert!(
            seen.contains(want),
            "plain mode never showed {want}: {seen:?}"
        );
    }
    assert!(!seen.contains("kueue-preempted") && !seen.contains("admitted"));
}

#[tokio::test]
async fn run_animates_the_cluster_until_shutdown() {
    let emu = Emulator::new(config(false));
    let (_server, client) = serve(&emu).await;
    let pods: Api<Pod> = Api::all(client);
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let driver = tokio::spawn(scenario::run(
        emu.clone(),
        scenario_config(false, 9),
        async {
            let _ = rx.await;
        },
    ));
    // A watcher sees pods deleted with their last state (a terminating pod
    // with a finished node container), which is what evidence capture needs.
    let mut w = watcher(pods, watcher::Config::default()).boxed();
    let captured = tokio::time::timeout(Duration::from_secs(10), async {
        while let Some(ev) = w.next().await {
            if let Ok(watcher::Event::Delete(p)) = ev {
                if p.metadata.deletion_timestamp.is_some() {
                    return p;
                }
            }
        }
        panic!("watch ended");
    })
    .await
    .expect("a pod deletion within 10 s");
    assert!(captured
        .metadata
        .labels
        .unwrap()
        .contains_key(objects::JOB_ID));
    let _ = tx.send(());
    tokio::time::timeout(Duration::from_secs(2), driver)
        .await
        .unwrap()
        .unwrap();
    let rv = emu.resource_version();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(emu.resource_version(), rv, "the driver stopped");
}

/// Kueue's part of the demo keeps to its quota: over a run, jobs wait in
/// line with the shortfall in their words and are admitted once quota frees;
/// the reservation passes the nominal quota only by borrowing, within the
/// borrowing limit, and the ClusterQueue's
/// status is a true count of the Workloads after every step.
#[test]
fn the_queue_moves_within_its_quota() {
    use scenario::queues;
    let mut emu_config = config(true);
    emu_config.history = 100_000;
    let emu = Emulator::new(emu_config);
    let sc_config = scenario_config(true, 5);
    let nominal = queues::nominal_quota(sc_config.jobs, sc_config.pods_per_job);
    let capacity = queues::capacity(sc_config.jobs, sc_config.pods_per_job);
    let mut borrowed_at_some_point = false;
    let mut sc = scenario::populate(&emu, sc_config);
    let mut waited: BTreeSet<String> = BTreeSet::new();
    let mut admitted_after_waiting = 0;
    for _ in 0..80 {
        sc.step(&emu);
        let reserved = queues::reserved(&emu);
        assert!(
            reserved <= capacity,
            "{reserved} GPUs reserved of {capacity}"
        );
        borrowed_at_some_point |= reserved > nominal;
        let workloads = emu.list(Kind::Workload, None);
        let mut pending = 0;
        for w in &workloads {
            let name = w["metadata"]["name"].as_str().unwrap().to_string();
            if cond_is(w, "QuotaReserved", "True", None) {
                if waited.remove(&name) {
                    admitted_after_waiting += 1;
                }
            } else if let Some(c) = cond(w, "QuotaReserved") {
                let words = c["message"].as_str().unwrap();
                if words.contains("insufficient unused quota for nvidia.com/gpu in flavor a100") {
                    let short: u64 = words
                        .rsplit(", ")
                        .next()
                        .and_then(|t| t.strip_suffix(" more needed"))
                        .and_then(|n| n.parse().ok())
                        .unwrap_or_else(|| panic!("no shortfall in {words:?}"));
                    assert!(short > 0 && short <= queues::asks(3), "{words}");
                    waited.insert(name);
                }
            }
            let out = w["spec"]["active"] == false
                || cond_is(w, "Finished", "True", None)
                || w["metadata"]["annotations"][objects::GATED_BY].is_string();
            if !out && !cond_is(w, "QuotaReserved", "True", None) {
                pending += 1;
            }
        }
        let cq = emu
            .get(Kind::ClusterQueue, "", queues::CLUSTER_QUEUE)
            .unwrap();
        assert_eq!(cq["status"]["pendingWorkloads"], pending);
        let reservation = &cq["status"]["flavorsReservation"][0]["resources"][0];
        assert_eq!(reservation["total"], reserved.to_string());
        assert_eq!(
            reservation["borrowed"],
            reserved.saturating_sub(nominal).to_string()
        );
        let per_namespace: u64 = ["team-a", "team-b"]
            .iter()
            .map(|ns| {
                emu.get(Kind::LocalQueue, ns, queues::LOCAL_QUEUE).unwrap()["status"]
                    ["pendingWorkloads"]
                    .as_u64()
                    .unwrap()
            })
            .sum();
        assert_eq!(per_namespace, pending);
    }
    assert!(
        admitted_after_waiting > 0,
        "no job waited for quota and was then admitted"
    );
    assert!(borrowed_at_some_point, "no job borrowed from the cohort");
}

/// The preemption story is Kueue's: the Workload it evicts names, by UID, a
/// Workload of the same LocalQueue with a higher priority, which is there
/// to be resolved when the eviction is written.
#[test]
fn a_preempted_workload_names_a_preemptor_of_higher_priority() {
    let emu = Emulator::new(config(true));
    let mut sc = scenario::populate(&emu, scenario_config(true, 5));
    let mut named = 0;
    for _ in 0..120 {
        sc.step(&emu);
        let workloads = emu.list(Kind::Workload, None);
        for w in &workloads {
            let Some(c) = cond(w, "Preempted").filter(|c| c["status"] == "True") else {
                continue;
            };
            let words = c["message"].as_str().unwrap();
            let uid = words
                .split_once("(UID: ")
                .and_then(|(_, rest)| rest.split_once(')'))
                .map(|(uid, _)| uid)
                .unwrap_or_else(|| panic!("no preemptor UID in {words:?}"));
            let Some(preemptor) = workloads.iter().find(|p| p["metadata"]["uid"] == uid) else {
                // The preemptor may have finished and gone since.
                continue;
            };
            assert!(
                preemptor["spec"]["priority"].as_i64() > w["spec"]["priority"].as_i64(),
                "{} preempted by a Workload of no higher priority",
                w["metadata"]["name"]
            );
            assert_eq!(preemptor["spec"]["queueName"], w["spec"]["queueName"]);
            named += 1;
        }
    }
    assert!(named > 0, "no Workload was preempted by one still there");
}

/// A still demo moves on when asked until a LocalQueue's line changes: the
/// pending-workloads answer then differs from before.
#[test]
fn a_still_demo_moves_on_until_the_line_moves() {
    use emulator::visibility::local_queue_line;
    let emu = Emulator::new(config(true));
    let mut sc = scenario::populate(&emu, scenario_config(true, 7));
    for _ in 0..60 {
        sc.step(&emu);
    }
    for _ in 0..5 {
        let before = local_queue_line(&emu, "team-a", scenario::queues::LOCAL_QUEUE);
        let rv = emu.resource_version();
        let steps = sc
            .step_until_the_line_moves(&emu, "team-a", 200)
            .expect("the line moved within 200 steps");
        assert!(steps >= 1);
        assert!(emu.resource_version() > rv, "the cluster moved");
        let after = local_queue_line(&emu, "team-a", scenario::queues::LOCAL_QUEUE);
        assert_ne!(before, after, "after {steps} steps");
    }
    // Without Kueue there is no line to move: it says so after its bound.
    let plain = Emulator::new(config(false));
    let mut sc = scenario::populate(&plain, scenario_config(false, 7));
    assert_eq!(sc.step_until_the_line_moves(&plain, "team-a", 10), None);
}
