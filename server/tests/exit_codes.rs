//! `dispatch-dash serve` refuses a bad configuration at start-up with exit
//! code 2 (as clap and `classify` do for bad usage) and a message that says
//! what to change; the real binary, as an operator runs it.

mod common;

use std::process::Output;
use std::time::Duration;

use common::*;

async fn serve_with(args: &[&str]) -> Output {
    let run = tokio::process::Command::new(env!("CARGO_BIN_EXE_dispatch-dash"))
        .arg("serve")
        .args(args)
        .env_remove("DISPATCH_DASH_TOKEN")
        .env("RUST_LOG", "warn")
        .kill_on_drop(true)
        .output();
    tokio::time::timeout(Duration::from_secs(60), run)
        .await
        .expect("the refusal comes before serving, so the binary exits")
        .expect("the binary runs")
}

fn assert_refused(output: &Output, says: &str) {
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "stderr: {stderr}");
    assert!(stderr.contains(says), "{says:?} not in: {stderr}");
}

#[tokio::test]
async fn no_auth_on_a_non_loopback_address_exits_2() {
    let output = serve_with(&["--demo", "--listen", "0.0.0.0:0"]).await;
    assert_refused(&output, "--allow-unauthenticated");
}

#[tokio::test]
async fn an_empty_token_exits_2() {
    let output = serve_with(&["--demo", "--listen", "127.0.0.1:0", "--token", ""]).await;
    assert_refused(&output, "the token is empty");
    let dir = std::env::temp_dir().join(format!("dd-exit-codes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let file = dir.join("token");
    // A Secret made with --from-file: one newline, which is dropped.
    std::fs::write(&file, "\n").expect("token file");
    let path = file.to_string_lossy().into_owned();
    let output = serve_with(&["--demo", "--listen", "127.0.0.1:0", "--token-file", &path]).await;
    let _ = std::fs::remove_dir_all(&dir);
    assert_refused(&output, "the token is empty");
}

#[tokio::test]
async fn a_tls_pair_that_does_not_load_exits_2_naming_the_file() {
    let dir = std::env::temp_dir().join(format!("dd-exit-codes-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let cert = dir.join("tls.crt");
    std::fs::write(&cert, "not a certificate\n").expect("cert file");
    let cert = cert.to_string_lossy().into_owned();
    let key = dir.join("absent.key").to_string_lossy().into_owned();
    let output = serve_with(&[
        "--demo",
        "--listen",
        "127.0.0.1:0",
        "--tls-cert-file",
        &cert,
        "--tls-key-file",
        &key,
    ])
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    assert_refused(&output, "absent.key");
}

#[tokio::test]
async fn kubernetes_mode_without_the_auth_delegator_grant_exits_2() {
    let emu = emulator(false).await;
    emu.emulator().forbid("subjectaccessreviews");
    let dir = std::env::temp_dir().join(format!("dd-exit-delegation-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, emu.kubeconfig_yaml()).expect("kubeconfig");
    let path = kubeconfig.to_string_lossy().into_owned();
    let output = serve_with(&[
        "--kubeconfig",
        &path,
        "--auth",
        "kubernetes",
        "--listen",
        "127.0.0.1:0",
    ])
    .await;
    let _ = std::fs::remove_dir_all(&dir);
    assert_refused(&output, "system:auth-delegator");
    assert_refused(&output, "subjectaccessreviews.authorization.k8s.io");
}
