//! Shared helpers: an emulator on 127.0.0.1:0 and a real kube client for it.
#![allow(dead_code)]

use std::time::Duration;

use emulator::{Emulator, EmulatorConfig, RunningEmulator};
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub fn config(kueue: bool) -> EmulatorConfig {
    EmulatorConfig {
        kueue,
        history: 1000,
        bookmark_interval: Duration::from_millis(200),
        default_namespace: "team-a".into(),
        seed: 1,
        ..EmulatorConfig::default()
    }
}

/// Serves `emu` and builds a kube client from the generated kubeconfig, the
/// way dispatch-dash does.
pub async fn serve(emu: &Emulator) -> (RunningEmulator, kube::Client) {
    let server = emu.serve("127.0.0.1:0".parse().unwrap()).await.unwrap();
    let client = client_for(&server).await;
    (server, client)
}

pub async fn client_for(server: &RunningEmulator) -> kube::Client {
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&server.kubeconfig_yaml()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    assert_eq!(config.default_namespace, "team-a");
    kube::Client::try_from(config).unwrap()
}

pub fn pod(ns: &str, name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": ns, "labels": labels},
        "spec": {"containers": [{"name": "node", "image": "x"}]},
        "status": {"phase": "Pending"},
    })
}

/// One raw HTTP/1.1 request; returns (status code, body).
pub async fn raw(addr: std::net::SocketAddr, request: &str) -> (u16, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out).to_string();
    let code = text
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = text
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (code, body)
}

/// One raw GET; returns (status code, the whole response head, body).
pub async fn get_with_head(addr: std::net::SocketAddr, path: &str) -> (u16, String, String) {
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n");
    s.write_all(request.as_bytes()).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(5), s.read_to_end(&mut out)).await;
    let text = String::from_utf8_lossy(&out).to_string();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let code = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    (code, head.to_string(), body.to_string())
}

pub async fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    raw(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"),
    )
    .await
}
