//! `serve --state-dir` across a `kill -9`, against a real kube-apiserver
//! and etcd (`common/apiserver.rs`): the same story as `restart.rs` tells
//! against the emulator, through the genuine list/watch protocol and TLS.
//! Its own test binary, so its one apiserver does not wait on another's.
//! Needs `scripts/setup.sh` to have cached the apiserver.

mod common;

use common::apiserver::{ApiServer, Workloads};
use common::*;
use emulator::scenario::objects::{self, JobRef, PodRef};
use serde_json::{json, Value};

fn now() -> String {
    emulator::time::now_rfc3339()
}

fn uid(object: &Value) -> String {
    object["metadata"]["uid"]
        .as_str()
        .expect("a stored object has a UID")
        .to_string()
}

/// A TrainJob `<job_id>-s1` and its JobSet.
async fn create_trainjob(api: &ApiServer, job_id: &str) -> Value {
    let job = JobRef::new(NS, job_id, "s1");
    let trainjob = api.create(objects::trainjob(&job, 2, None, false)).await;
    api.create(objects::jobset(&job, &uid(&trainjob), 2, 0))
        .await;
    trainjob
}

/// A pod of the TrainJob whose node container was OOMKilled.
async fn create_oom_pod(api: &ApiServer, job_id: &str, rank: usize) -> Value {
    let job = JobRef::new(NS, job_id, "s1");
    let time = now();
    let p = PodRef {
        rank,
        admission: 1,
        restart_attempt: 0,
        suffix: format!("r{rank:04}"),
    };
    let mut pod = objects::pod_running(objects::pod(&job, &p, &time), "gpu-node-1", &time);
    // The apiserver sets it itself.
    if let Some(metadata) = pod["metadata"].as_object_mut() {
        metadata.remove("creationTimestamp");
    }
    api.create(objects::pod_terminated(pod, "OOMKilled", 137, "", &time))
        .await
}

async fn fail_trainjob(api: &ApiServer, trainjob: &Value) {
    let failed = objects::condition("Failed", "True", "FailedJobs", "jobs failed", &now());
    api.patch_status(trainjob, json!({"conditions": [failed]}))
        .await;
}

async fn snapshot_of(addr: std::net::SocketAddr) -> Option<Value> {
    get_json_raw(addr, &format!("/api/v1/namespaces/{NS}/snapshot"))
        .await
        .ok()
        .map(|(_, body)| body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn captured_evidence_survives_a_kill_9_against_a_real_apiserver() {
    let api = ApiServer::start(Workloads::None, &[NS]).await;
    let dir = TempDir::new("restart-apiserver");
    let kubeconfig = dir.0.join("kubeconfig");
    std::fs::write(&kubeconfig, api.kubeconfig_yaml()).expect("kubeconfig");
    let state_flag = dir.0.join("state").display().to_string();

    let trainjob_a = create_trainjob(&api, "oom-a").await;
    let trainjob_b = create_trainjob(&api, "oom-b").await;
    let mut pods_a = Vec::new();
    let mut pods_b = Vec::new();
    for rank in 0..2 {
        pods_a.push(create_oom_pod(&api, "oom-a", rank).await);
        pods_b.push(create_oom_pod(&api, "oom-b", rank).await);
    }

    let server = ServerProcess::start_ready(&kubeconfig, &["--state-dir", &state_flag]).await;
    let addr = server.addr;
    eventually(30, "the server holds the four pods", || async move {
        let snapshot = snapshot_of(addr).await?;
        (count_kind(&snapshot, "Pod") == 4).then_some(())
    })
    .await;
    for pod in &pods_a {
        api.delete(pod).await;
    }
    let uid_a = uid(&trainjob_a);
    eventually(30, "A's pods are captured", || {
        let uid_a = uid_a.clone();
        async move {
            let snapshot = snapshot_of(addr).await?;
            (captured_of(&snapshot, &uid_a).len() == 2).then_some(())
        }
    })
    .await;
    server.kill_9().await;

    for pod in &pods_b {
        api.delete(pod).await;
    }
    let server = ServerProcess::start_ready(&kubeconfig, &["--state-dir", &state_flag]).await;
    fail_trainjob(&api, &trainjob_a).await;
    fail_trainjob(&api, &trainjob_b).await;
    for (job, name) in [("oom-a", "oom-a-s1"), ("oom-b", "oom-b-s1")] {
        let observation = ended_from_captured_pods(server.addr, job, name, 30).await;
        assert_eq!(
            observation["cause"]["kind"], "out-of-memory",
            "{observation}"
        );
        assert_eq!(
            observation["cause"]["provenance"], "captured-pod",
            "{observation}"
        );
    }
    let snapshot = snapshot_of(server.addr).await.expect("snapshot");
    let uid_b = uid(&trainjob_b);
    let across_gap: Vec<bool> = captured_of(&snapshot, &uid_b)
        .iter()
        .map(|c| c.get("acrossGap") == Some(&Value::Bool(true)))
        .collect();
    assert_eq!(across_gap, vec![true, true], "{snapshot}");
    assert_eq!(captured_of(&snapshot, &uid_a).len(), 2, "{snapshot}");
    assert!(!snapshot.to_string().contains(SECRET));
    server.kill_9().await;
}

/// deploy/ with the state directory enabled as docs/deploy.md says (the claim
/// and the uncommented Deployment) passes a server-side dry run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deploy_with_the_state_dir_enabled_applies() {
    let api = ApiServer::start(Workloads::None, &[NS, "dispatch-dash"]).await;
    let dir = TempDir::new("deploy-state");
    let kubeconfig = dir.0.join("kubeconfig");
    std::fs::write(&kubeconfig, api.kubeconfig_yaml()).expect("kubeconfig");
    let deployment = dir.0.join("deployment.yaml");
    std::fs::write(&deployment, deployment_with_state_dir()).expect("deployment");
    let pvc = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/state/pvc.yaml");
    let output = std::process::Command::new("kubectl")
        .arg(format!("--kubeconfig={}", kubeconfig.display()))
        .args(["apply", "--dry-run=server", "-f"])
        .arg(&pvc)
        .arg("-f")
        .arg(&deployment)
        .output()
        .expect("kubectl is installed (scripts/setup.sh)");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(output.status.success(), "{text}");
    assert!(
        text.contains("persistentvolumeclaim/dispatch-dash-state created"),
        "{text}"
    );
    assert!(
        text.contains("deployment.apps/dispatch-dash created"),
        "{text}"
    );
}
