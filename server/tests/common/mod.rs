//! Shared helpers of the server's integration tests: an emulator, the real
//! server in front of it on port 0, a small HTTP client and an SSE reader.

#![allow(dead_code)]

pub mod apiserver;
pub mod auth;

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use dispatch_dash::serve::store::StoreLimits;
use dispatch_dash::serve::{self, HttpSettings, ModeChoice, Server, ServerConfig};
use emulator::scenario::objects::{self, JobRef, PodRef};
use emulator::{Emulator, EmulatorConfig, Kind, RunningEmulator};
use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::{json, Value};

/// The namespace the tests use.
pub const NS: &str = "team-a";
/// A value that must never leave the server.
pub const SECRET: &str = "hunter2-very-secret";

/// An emulator served on 127.0.0.1:0.
pub async fn emulator(kueue: bool) -> RunningEmulator {
    serve_emulator(EmulatorConfig {
        kueue,
        ..emulator_config()
    })
    .await
}

/// The tests' emulator settings: namespace `NS`, frequent bookmarks.
pub fn emulator_config() -> EmulatorConfig {
    EmulatorConfig {
        default_namespace: NS.into(),
        bookmark_interval: Duration::from_millis(500),
        ..EmulatorConfig::default()
    }
}

/// An emulator of `config` served on 127.0.0.1:0.
pub async fn serve_emulator(config: EmulatorConfig) -> RunningEmulator {
    Emulator::new(config)
        .serve("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("emulator serves")
}

/// Settings of a test server.
pub struct Settings {
    pub mode: ModeChoice,
    /// Watch every namespace (`--all-namespaces`) instead of [`NS`] only.
    pub all_namespaces: bool,
    /// A shared token: `--auth token` (overrides `auth`'s mode and token).
    pub token: Option<String>,
    /// The auth settings (mode `none` by default).
    pub auth: serve::auth::AuthConfig,
    pub max_sse_clients: usize,
    pub limits: StoreLimits,
    pub http: HttpSettings,
    pub unready_after: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            mode: ModeChoice::Auto,
            all_namespaces: false,
            token: None,
            auth: serve::auth::AuthConfig::default(),
            max_sse_clients: 32,
            limits: StoreLimits::default(),
            http: HttpSettings::default(),
            unready_after: serve::health::UNREADY_AFTER,
        }
    }
}

/// The real server, with the real kube client, in front of `emu`.
pub async fn server(emu: &RunningEmulator, settings: Settings) -> Server {
    server_for(&emu.kubeconfig_yaml(), settings).await
}

/// The real server watching `NS` of the cluster a kubeconfig names.
pub async fn server_for(kubeconfig: &str, settings: Settings) -> Server {
    let kube = serve::config_from_kubeconfig_yaml(kubeconfig)
        .await
        .expect("kubeconfig");
    serve::start(ServerConfig {
        kube,
        namespaces: if settings.all_namespaces {
            Vec::new()
        } else {
            vec![NS.into()]
        },
        all_namespaces: settings.all_namespaces,
        mode: settings.mode,
        listen: "127.0.0.1:0".parse().expect("addr"),
        auth: match settings.token {
            Some(token) => serve::auth::AuthConfig {
                mode: serve::auth::AuthMode::Token,
                token: Some(token.into()),
                ..settings.auth
            },
            None => settings.auth,
        },
        max_sse_clients: settings.max_sse_clients,
        limits: settings.limits,
        http: settings.http,
        demo: false,
        notify: None,
        unready_after: settings.unready_after,
    })
    .await
    .expect("server starts")
}

/// Polls `check` every 20 ms until it returns `Some`, or panics after `secs`.
pub async fn eventually<T, F, Fut>(secs: u64, what: &str, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = check().await {
            return v;
        }
        if tokio::time::Instant::now() > deadline {
            panic!("timed out waiting for {what}");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn client() -> Client<hyper_util::client::legacy::connect::HttpConnector, Full<Bytes>> {
    Client::builder(TokioExecutor::new()).build_http()
}

/// Sends a request; `body` is sent as is.
pub async fn request(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Response<Incoming> {
    request_with(addr, hyper::Method::GET, path, headers, body).await
}

/// Sends a request with any method; `body` is sent as is.
pub async fn request_with(
    addr: SocketAddr,
    method: hyper::Method,
    path: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Response<Incoming> {
    let mut builder = Request::builder()
        .method(method)
        .uri(format!("http://{addr}{path}"));
    for (k, v) in headers {
        builder = builder.header(*k, *v);
    }
    let request = builder.body(Full::new(Bytes::from(body))).expect("request");
    client().request(request).await.expect("response")
}

/// Reads a whole response body as text.
pub async fn body_text(response: Response<Incoming>) -> String {
    let body = response
        .into_body()
        .collect()
        .await
        .expect("body")
        .to_bytes();
    String::from_utf8_lossy(&body).into_owned()
}

/// GETs `path` and reads the whole body as text.
pub async fn get_text(
    addr: SocketAddr,
    path: &str,
    headers: &[(&str, &str)],
) -> (StatusCode, String) {
    let response = request(addr, path, headers, Vec::new()).await;
    (response.status(), body_text(response).await)
}

/// GETs `path` as JSON.
pub async fn get_json(addr: SocketAddr, path: &str) -> (StatusCode, Value) {
    let (status, text) = get_text(addr, path, &[]).await;
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// One server-sent event.
#[derive(Debug, Clone)]
pub struct SseEvent {
    pub id: Option<String>,
    pub event: String,
    pub data: String,
}

impl SseEvent {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.data).expect("event data is JSON")
    }
}

/// Reads an SSE response event by event.
///
/// A `rows` event is checked, not returned: it must come right before a
/// `snapshot`, and be the engine's classification of exactly that
/// snapshot. Every test that reads a dashboard stream checks that.
pub struct SseReader {
    pub status: StatusCode,
    body: Incoming,
    buffer: String,
    rows: Option<String>,
    /// Snapshots that came with their `rows`, checked.
    pub rows_checked: usize,
}

impl SseReader {
    pub async fn open(addr: SocketAddr, path: &str, headers: &[(&str, &str)]) -> SseReader {
        let response = request(addr, path, headers, Vec::new()).await;
        SseReader {
            status: response.status(),
            body: response.into_body(),
            buffer: String::new(),
            rows: None,
            rows_checked: 0,
        }
    }

    /// The next event (comments and `queues` frames skipped: they come on
    /// a timer of their own, see [`SseReader::next_queues`]); `None` when
    /// the stream ended. Panics when nothing arrives within `secs`.
    pub async fn next(&mut self, secs: u64) -> Option<SseEvent> {
        loop {
            let event = self.next_any(secs).await?;
            if event.event != "queues" {
                return Some(event);
            }
        }
    }

    /// The next `queues` frame, read with the engine's reader; `None` when
    /// the stream ended. Panics when none arrives within `secs`.
    pub async fn next_queues(&mut self, secs: u64) -> Option<classify_wasm::wire::QueuesFrame> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let event = self.next_any(left.as_secs().max(1)).await?;
            if event.event == "queues" {
                assert_eq!(event.id, None, "a queues frame has no id");
                return Some(
                    classify_wasm::wire::QueuesFrame::parse(&event.data)
                        .expect("the engine reads the queues frame"),
                );
            }
        }
    }

    async fn next_any(&mut self, secs: u64) -> Option<SseEvent> {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(secs);
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                let mut event = SseEvent {
                    id: None,
                    event: "message".into(),
                    data: String::new(),
                };
                let mut is_event = false;
                for line in block.lines() {
                    if let Some(v) = line.strip_prefix("id: ") {
                        event.id = Some(v.to_string());
                    } else if let Some(v) = line.strip_prefix("event: ") {
                        event.event = v.to_string();
                        is_event = true;
                    } else if let Some(v) = line.strip_prefix("data: ") {
                        event.data.push_str(v);
                        is_event = true;
                    }
                }
                if !is_event {
                    continue;
                }
                if event.event == "rows" {
                    assert_eq!(event.id, None, "a rows event has no id");
                    assert!(self.rows.is_none(), "two rows events in a row");
                    self.rows = Some(event.data);
                    continue;
                }
                if let Some(rows) = self.rows.take() {
                    assert_eq!(event.event, "snapshot", "rows not followed by a snapshot");
                    let classified =
                        classify_wasm::classified_rows_json(&event.data, Default::default())
                            .expect("the snapshot classifies");
                    assert!(rows == classified, "the rows are not the snapshot's");
                    self.rows_checked += 1;
                }
                return Some(event);
            }
            let frame = tokio::time::timeout_at(deadline, self.body.frame())
                .await
                .expect("an SSE event in time");
            match frame {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        self.buffer.push_str(&String::from_utf8_lossy(&data));
                    }
                }
                Some(Err(_)) | None => return None,
            }
        }
    }
}

/// Creates a TrainJob `<job_id>-<sub>` and returns its UID.
pub fn create_trainjob(emu: &Emulator, job_id: &str, sub: &str) -> String {
    let job = JobRef::new(NS, job_id, sub);
    let created = emu
        .create(objects::trainjob(&job, 2, None, false))
        .expect("create TrainJob");
    created["metadata"]["uid"]
        .as_str()
        .expect("uid")
        .to_string()
}

/// Creates the JobSet of a TrainJob.
pub fn create_jobset(emu: &Emulator, job_id: &str, sub: &str, trainjob_uid: &str) {
    let job = JobRef::new(NS, job_id, sub);
    emu.create(objects::jobset(&job, trainjob_uid, 2, 0))
        .expect("create JobSet");
}

/// Marks a TrainJob `Failed=True` with reason FailedJobs.
pub fn fail_trainjob(emu: &Emulator, job_id: &str, sub: &str) {
    let now = emulator::time::now_rfc3339();
    emu.patch_status(
        Kind::TrainJob,
        NS,
        &format!("{job_id}-{sub}"),
        json!({"conditions": [objects::condition("Failed", "True", "FailedJobs", "jobs failed", &now)]}),
    )
    .expect("patch status");
}

/// A running pod of TrainJob `<job_id>-<sub>` (rank `rank`, execution
/// A=1 J=0, on gpu-node-1), not created yet, and its name.
pub fn running_pod(job_id: &str, sub: &str, rank: usize) -> (Value, String) {
    let job = JobRef::new(NS, job_id, sub);
    let now = emulator::time::now_rfc3339();
    let p = PodRef {
        rank,
        admission: 1,
        restart_attempt: 0,
        suffix: format!("r{rank:04}"),
    };
    let pod = objects::pod_running(objects::pod(&job, &p, &now), "gpu-node-1", &now);
    (pod, p.name(&job))
}

/// Creates a running pod of the TrainJob whose node container carries a
/// secret env value; with `exit_code`, the container has terminated.
pub fn create_pod(
    emu: &Emulator,
    job_id: &str,
    sub: &str,
    rank: usize,
    exit_code: Option<i64>,
) -> String {
    let (mut pod, name) = running_pod(job_id, sub, rank);
    let now = emulator::time::now_rfc3339();
    pod["spec"]["containers"][0]["env"] = json!([{"name": "API_TOKEN", "value": SECRET}]);
    if let Some(code) = exit_code {
        pod = objects::pod_terminated(pod, "Error", code, "", &now);
    }
    emu.create(pod).expect("create pod");
    name
}

/// The server's snapshot of the test namespace.
pub async fn snapshot(addr: SocketAddr) -> Value {
    let (status, body) = get_json(addr, &format!("/api/v1/namespaces/{NS}/snapshot")).await;
    assert_eq!(status, StatusCode::OK);
    body
}

/// How many items of `kind` the snapshot holds.
pub fn count_kind(snapshot: &Value, kind: &str) -> usize {
    snapshot["items"]
        .as_array()
        .map(|items| items.iter().filter(|i| i["kind"] == kind).count())
        .unwrap_or(0)
}

/// Captured entries of a TrainJob UID in a snapshot.
pub fn captured_of<'a>(snapshot: &'a Value, uid: &str) -> Vec<&'a Value> {
    snapshot["captured"]
        .as_array()
        .map(|all| all.iter().filter(|c| c["trainJobUID"] == uid).collect())
        .unwrap_or_default()
}

/// Waits until the server is ready.
pub async fn ready(addr: SocketAddr) {
    eventually(10, "readiness", || async move {
        let (status, _) = get_json(addr, "/readyz").await;
        (status == StatusCode::OK).then_some(())
    })
    .await;
}

/// Creates a pod of TrainJob `<job_id>-<sub>` whose node container was
/// OOMKilled (exit 137), and returns its name.
pub fn create_oom_pod(emu: &Emulator, job_id: &str, sub: &str, rank: usize) -> String {
    let (pod, name) = running_pod(job_id, sub, rank);
    let now = emulator::time::now_rfc3339();
    emu.create(objects::pod_terminated(pod, "OOMKilled", 137, "", &now))
        .expect("create pod");
    name
}

/// Creates TrainJob `<job_id>-s1` with its JobSet and an OOMKilled pod,
/// and marks it failed: a failure whose cause is `out-of-memory`.
pub fn oom_failure(emu: &Emulator, job_id: &str) {
    let uid = create_trainjob(emu, job_id, "s1");
    create_jobset(emu, job_id, "s1", &uid);
    create_oom_pod(emu, job_id, "s1", 0);
    fail_trainjob(emu, job_id, "s1");
}

/// The value of one series in `/metrics` text (`name{labels}` exactly as
/// written), if it is there.
pub fn metric_value(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
}

/// A directory under the system's temp dir, removed on drop.
pub struct TempDir(pub std::path::PathBuf);

impl TempDir {
    /// A fresh, empty directory named after `what` and this process.
    pub fn new(what: &str) -> TempDir {
        let path = std::env::temp_dir().join(format!(
            "dispatch-dash-{what}-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or(0)
        ));
        std::fs::create_dir_all(&path).expect("temp dir");
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The real `dispatch-dash serve` binary as a child process (so a test can
/// `kill -9` it), watching `NS` in plain mode.
pub struct ServerProcess {
    child: tokio::process::Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Its standard error, in a file beside the kubeconfig (a pipe nobody
    /// reads could fill and stall it).
    pub stderr: std::path::PathBuf,
}

/// A free port on 127.0.0.1 (free when asked; the server binds it next).
pub fn free_port() -> u16 {
    let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
    probe.local_addr().expect("addr").port()
}

impl ServerProcess {
    /// Starts the binary with `--kubeconfig kubeconfig` and `extra` flags,
    /// without waiting for it.
    pub fn spawn(kubeconfig: &std::path::Path, extra: &[&str]) -> ServerProcess {
        let addr: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().expect("addr");
        let stderr = kubeconfig.with_extension(format!("{}.stderr", addr.port()));
        let log = std::fs::File::create(&stderr).expect("stderr file");
        let child = tokio::process::Command::new(env!("CARGO_BIN_EXE_dispatch-dash"))
            .arg("serve")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .arg("--listen")
            .arg(addr.to_string())
            .args(["--mode", "plain", "--namespace", NS])
            .args(extra)
            .env("RUST_LOG", "warn")
            .stdout(std::process::Stdio::null())
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .expect("the server binary starts");
        ServerProcess {
            child,
            addr,
            stderr,
        }
    }

    /// Starts it and waits (with a deadline) until `/readyz` says ready.
    pub async fn start_ready(kubeconfig: &std::path::Path, extra: &[&str]) -> ServerProcess {
        let mut server = ServerProcess::spawn(kubeconfig, extra);
        let addr = server.addr;
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok(Some(status)) = server.child.try_wait() {
                let stderr = std::fs::read_to_string(&server.stderr).unwrap_or_default();
                panic!("the server exited before it was ready: {status}\n{stderr}");
            }
            if let Ok(Ok((StatusCode::OK, _))) =
                tokio::time::timeout(Duration::from_secs(5), get_json_raw(addr, "/readyz")).await
            {
                return server;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the server was not ready within 60 s"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// SIGKILL, and waits for the process to be gone.
    pub async fn kill_9(mut self) {
        self.child.start_kill().expect("kill");
        let _ = self.child.wait().await;
    }

    /// Waits for the process to exit by itself (with a deadline) and
    /// returns its exit code and standard error.
    pub async fn exit(mut self) -> (Option<i32>, String) {
        let status = tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("the server exits within 60 s")
            .expect("status");
        let stderr = std::fs::read_to_string(&self.stderr).unwrap_or_default();
        (status.code(), stderr)
    }
}

/// `get_json`, but a refused connection is an error instead of a panic
/// (for a server that is still starting).
pub async fn get_json_raw(addr: SocketAddr, path: &str) -> Result<(StatusCode, Value), String> {
    let client: Client<_, Full<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let request = Request::get(format!("http://{addr}{path}"))
        .body(Full::new(Bytes::new()))
        .map_err(|e| e.to_string())?;
    let response = client.request(request).await.map_err(|e| e.to_string())?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|e| e.to_string())?
        .to_bytes();
    Ok((status, serde_json::from_slice(&body).unwrap_or(Value::Null)))
}

/// The one observation of a TrainJob `name` (job `job`), once Find has it
/// as `ended` from captured pods; panics with the last one seen after
/// `secs`.
pub async fn ended_from_captured_pods(addr: SocketAddr, job: &str, name: &str, secs: u64) -> Value {
    let path = format!("/api/v1/namespaces/{NS}/jobs/{job}");
    let mut last = Value::Null;
    let deadline = std::time::Instant::now() + Duration::from_secs(secs);
    loop {
        if let Ok((StatusCode::OK, found)) = get_json_raw(addr, &path).await {
            if let Some(observation) = found
                .as_array()
                .and_then(|all| all.iter().find(|o| o["object"]["name"] == name))
            {
                if observation["state"] == "ended" {
                    return observation.clone();
                }
                last = observation.clone();
            }
        }
        assert!(
            std::time::Instant::now() < deadline,
            "{name} was not ended within {secs} s; last seen: {last}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `deploy/deployment.yaml` with its three `state-dir` blocks uncommented,
/// as docs/deploy.md says to enable the state directory.
pub fn deployment_with_state_dir() -> String {
    let path =
        std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/deployment.yaml");
    let text = std::fs::read_to_string(path).expect("deploy/deployment.yaml");
    let mut out = String::new();
    let mut in_block = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("# state-dir (") {
            in_block = true;
            out.push_str(line);
        } else if in_block && trimmed.starts_with("# ") {
            let indent = &line[..line.len() - trimmed.len()];
            out.push_str(indent);
            out.push_str(&trimmed[2..]);
        } else {
            in_block = false;
            out.push_str(line);
        }
        out.push('\n');
    }
    out
}
