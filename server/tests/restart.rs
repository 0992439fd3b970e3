//! `serve --state-dir` across a `kill -9`, against the emulator: the server
//! runs as the real binary in a child process so it can be killed without a
//! chance to flush anything, and restarted on the same state directory.
//! Also the bad states: a corrupt database and a second server on a locked
//! state directory get a clear error naming the file, and exit 2.

mod common;

use common::*;
use emulator::Kind;
use serde_json::Value;

/// Job A loses its pods while the server runs, then the server is killed;
/// job B loses its pods while the server is down. After the restart both
/// TrainJobs fail with FailedJobs, and both are classified from the pods
/// captured before the crash (A) and across the gap (B), not `unknown`.
#[tokio::test]
async fn captured_evidence_survives_a_kill_9_and_pods_deleted_while_down_are_captured() {
    let running = serve_emulator(emulator_config()).await;
    let emu = running.emulator().clone();
    let dir = TempDir::new("restart");
    let kubeconfig = dir.0.join("kubeconfig");
    std::fs::write(&kubeconfig, running.kubeconfig_yaml()).expect("kubeconfig");
    let state_dir = dir.0.join("state");
    let state_flag = state_dir.display().to_string();

    let uid_a = create_trainjob(&emu, "oom-a", "s1");
    create_jobset(&emu, "oom-a", "s1", &uid_a);
    let uid_b = create_trainjob(&emu, "oom-b", "s1");
    create_jobset(&emu, "oom-b", "s1", &uid_b);
    let pods_a: Vec<String> = (0..2)
        .map(|r| create_oom_pod(&emu, "oom-a", "s1", r))
        .collect();
    let pods_b: Vec<String> = (0..2)
        .map(|r| create_oom_pod(&emu, "oom-b", "s1", r))
        .collect();

    let server = ServerProcess::start_ready(&kubeconfig, &["--state-dir", &state_flag]).await;
    let addr = server.addr;
    eventually(30, "the server holds the four pods", || async move {
        let (_, snapshot) = get_json_raw(addr, &format!("/api/v1/namespaces/{NS}/snapshot"))
            .await
            .ok()?;
        (count_kind(&snapshot, "Pod") == 4).then_some(())
    })
    .await;
    for pod in &pods_a {
        emu.delete(Kind::Pod, NS, pod).expect("delete pod");
    }
    let uid = uid_a.clone();
    eventually(30, "A's pods are captured", || {
        let uid = uid.clone();
        async move {
            let (_, snapshot) = get_json_raw(addr, &format!("/api/v1/namespaces/{NS}/snapshot"))
                .await
                .ok()?;
            (captured_of(&snapshot, &uid).len() == 2).then_some(())
        }
    })
    .await;
    // What the snapshot shows was written before it was published.
    server.kill_9().await;

    for pod in &pods_b {
        emu.delete(Kind::Pod, NS, pod).expect("delete pod");
    }
    let server = ServerProcess::start_ready(&kubeconfig, &["--state-dir", &state_flag]).await;
    fail_trainjob(&emu, "oom-a", "s1");
    fail_trainjob(&emu, "oom-b", "s1");
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
    let (_, snapshot) = get_json_raw(server.addr, &format!("/api/v1/namespaces/{NS}/snapshot"))
        .await
        .expect("snapshot");
    let across_gap = |uid: &str| -> Vec<Value> {
        captured_of(&snapshot, uid)
            .iter()
            .map(|c| c.get("acrossGap").cloned().unwrap_or(Value::Bool(false)))
            .collect()
    };
    assert_eq!(
        across_gap(&uid_a),
        vec![Value::Bool(false); 2],
        "A's were seen deleted"
    );
    assert_eq!(
        across_gap(&uid_b),
        vec![Value::Bool(true); 2],
        "B's vanished in the gap"
    );
    // The history went on across the restart: A ran before the crash.
    let (_, inspect) = get_json_raw(
        server.addr,
        &format!("/api/v1/namespaces/{NS}/objects/trainjobs/oom-a-s1"),
    )
    .await
    .expect("inspect");
    let history = inspect["history"].as_array().cloned().unwrap_or_default();
    assert!(history.len() >= 2, "{inspect}");
    assert_ne!(history[0]["state"], "ended", "{inspect}");
    assert_eq!(history[history.len() - 1]["state"], "ended", "{inspect}");
    server.kill_9().await;
}

#[tokio::test]
async fn a_corrupt_state_database_is_refused_naming_the_file() {
    let running = serve_emulator(emulator_config()).await;
    let dir = TempDir::new("corrupt");
    let kubeconfig = dir.0.join("kubeconfig");
    std::fs::write(&kubeconfig, running.kubeconfig_yaml()).expect("kubeconfig");
    let state_dir = dir.0.join("state");
    std::fs::create_dir_all(&state_dir).expect("state dir");
    let file = state_dir.join("state.db");
    let garbage = b"not a database at all; really not. ".repeat(300);
    std::fs::write(&file, &garbage).expect("garbage");
    let server = ServerProcess::spawn(
        &kubeconfig,
        &["--state-dir", &state_dir.display().to_string()],
    );
    let (code, stderr) = server.exit().await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains(&file.display().to_string()), "{stderr}");
    assert!(stderr.contains("corrupt"), "{stderr}");
    assert_eq!(
        std::fs::read(&file).expect("kept"),
        garbage,
        "nothing deleted"
    );
}

#[tokio::test]
async fn a_second_server_on_a_locked_state_dir_is_refused_naming_the_file() {
    let running = serve_emulator(emulator_config()).await;
    let dir = TempDir::new("locked");
    let kubeconfig = dir.0.join("kubeconfig");
    std::fs::write(&kubeconfig, running.kubeconfig_yaml()).expect("kubeconfig");
    let state_flag = dir.0.join("state").display().to_string();
    let first = ServerProcess::start_ready(&kubeconfig, &["--state-dir", &state_flag]).await;
    let second = ServerProcess::spawn(&kubeconfig, &["--state-dir", &state_flag]);
    let (code, stderr) = second.exit().await;
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("locked by another process"), "{stderr}");
    assert!(
        stderr.contains(&format!("{state_flag}/state.db")),
        "{stderr}"
    );
    // The first is unaffected.
    let (status, _) = get_json_raw(first.addr, "/readyz")
        .await
        .expect("first answers");
    assert_eq!(status, hyper::StatusCode::OK);
    first.kill_9().await;
}

/// docs/deploy.md's way to enable the state directory in deploy/ gives a
/// Deployment that mounts the claim of `deploy/state/pvc.yaml` at the
/// `--state-dir` it passes, with the root filesystem still read-only.
#[test]
fn the_deploy_state_dir_blocks_mount_the_claim_at_the_state_dir() {
    use k8s_openapi::api::apps::v1::Deployment;
    use k8s_openapi::api::core::v1::PersistentVolumeClaim;

    let deployment: Deployment =
        serde_saphyr::from_str(&deployment_with_state_dir()).expect("a Deployment");
    let pod = deployment.spec.template.spec.expect("pod");
    assert_eq!(
        pod.security_context.as_ref().and_then(|s| s.fs_group),
        Some(65532)
    );
    let container = &pod.containers[0];
    let args = container.args.clone().unwrap_or_default();
    let state_dir = args
        .iter()
        .find_map(|a| a.strip_prefix("--state-dir="))
        .expect("--state-dir is passed");
    let mount = container
        .volume_mounts
        .iter()
        .flatten()
        .find(|m| m.mount_path == state_dir)
        .expect("a volume is mounted at the state dir");
    let claim = pod
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == mount.name)
        .and_then(|v| v.persistent_volume_claim.clone())
        .expect("the volume is a claim");
    let pvc_path =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/state/pvc.yaml");
    let pvc: PersistentVolumeClaim =
        serde_saphyr::from_str(&std::fs::read_to_string(pvc_path).expect("pvc.yaml"))
            .expect("a claim");
    assert_eq!(
        pvc.metadata.name.as_deref(),
        Some(claim.claim_name.as_str())
    );
    assert_eq!(pvc.metadata.namespace, deployment.metadata.namespace);
    assert_eq!(
        container
            .security_context
            .as_ref()
            .and_then(|s| s.read_only_root_filesystem),
        Some(true)
    );
}
