//! Notifications (`--notify-url-file`) against the emulator, through the
//! real kube client, to a webhook receiver on port 0: one notification per
//! failure, with its cause and a link that resolves; a receiver that is
//! down gets it after a retry; one that never answers holds up nothing;
//! and a kill -9 restart on the same state directory sends nothing twice.

mod common;

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::StatusCode as AxumStatus;
use axum::routing::post;
use axum::Router;
use common::*;
use dispatch_dash::serve::auth::Secret;
use dispatch_dash::serve::notify::{Format, NotifyConfig};
use dispatch_dash::serve::{self, ModeChoice, ServerConfig};
use serde_json::Value;

const PUBLIC_URL: &str = "https://dash.example.com";
/// Long enough for a failure's steps to arrive on a busy machine.
const SETTLE: Duration = Duration::from_secs(2);

/// How the receiver answers.
#[derive(Clone, Copy)]
enum Behaviour {
    /// 200 at once.
    Accept,
    /// 503 to the first `n` requests, then 200.
    FailFirst(usize),
    /// Never answers.
    Hang,
}

#[derive(Clone)]
struct Receiver {
    behaviour: Behaviour,
    requests: Arc<AtomicUsize>,
    accepted: Arc<Mutex<Vec<Value>>>,
}

async fn hook(State(receiver): State<Receiver>, body: String) -> AxumStatus {
    let n = receiver.requests.fetch_add(1, Ordering::SeqCst);
    match receiver.behaviour {
        Behaviour::Hang => std::future::pending().await,
        Behaviour::FailFirst(failures) if n < failures => AxumStatus::SERVICE_UNAVAILABLE,
        _ => {
            let value = serde_json::from_str(&body).expect("a JSON body");
            receiver.accepted.lock().expect("lock").push(value);
            AxumStatus::OK
        }
    }
}

/// A webhook receiver on 127.0.0.1:0, and its URL.
async fn receiver(behaviour: Behaviour) -> (Receiver, String) {
    let receiver = Receiver {
        behaviour,
        requests: Arc::default(),
        accepted: Arc::default(),
    };
    let app = Router::new()
        .route("/hook/secret-part", post(hook))
        .with_state(receiver.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (receiver, format!("http://{addr}/hook/secret-part"))
}

impl Receiver {
    fn accepted(&self) -> Vec<Value> {
        self.accepted.lock().expect("lock").clone()
    }
}

/// The server watching `NS` of `emu`, notifying `url` in JSON.
async fn notifying_server(emu: &emulator::RunningEmulator, url: &str) -> serve::Server {
    notifying_server_with(emu, url, ModeChoice::Plain, None).await
}

async fn notifying_server_with(
    emu: &emulator::RunningEmulator,
    url: &str,
    mode: ModeChoice,
    pending_after: Option<Duration>,
) -> serve::Server {
    let kube = serve::config_from_kubeconfig_yaml(&emu.kubeconfig_yaml())
        .await
        .expect("kubeconfig");
    serve::start(ServerConfig {
        kube,
        namespaces: vec![NS.into()],
        all_namespaces: false,
        mode,
        listen: "127.0.0.1:0".parse().expect("addr"),
        auth: serve::auth::AuthConfig::default(),
        max_sse_clients: 8,
        limits: Default::default(),
        http: Default::default(),
        demo: false,
        unready_after: serve::health::UNREADY_AFTER,
        notify: Some(NotifyConfig {
            urls: vec![Secret::from(url)],
            format: Format::Json,
            namespaces: Vec::new(),
            public_url: PUBLIC_URL.into(),
            settle: SETTLE,
            pending_after,
        }),
    })
    .await
    .expect("server starts")
}

async fn metric(addr: SocketAddr, name: &str) -> f64 {
    let (_, text) = get_text(addr, "/metrics", &[]).await;
    metric_value(&text, name).unwrap_or_else(|| panic!("{name} in {text}"))
}

#[tokio::test]
async fn a_failure_sends_one_notification_with_its_cause_and_a_link_that_resolves() {
    let (receiver, url) = receiver(Behaviour::Accept).await;
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    oom_failure(&emu, "before");
    let server = notifying_server(&running, &url).await;
    ready(server.addr).await;

    oom_failure(&emu, "llm");
    let got = eventually(20, "one notification", || {
        let receiver = receiver.clone();
        async move { (!receiver.accepted().is_empty()).then(|| receiver.accepted()) }
    })
    .await;
    // A TrainJob that made no news afterwards: once it is seen, every
    // event before it was handled.
    create_trainjob(&emu, "marker", "s1");
    eventually(20, "the marker", || async {
        let (status, _) =
            get_json(server.addr, &format!("/api/v1/namespaces/{NS}/jobs/marker")).await;
        (status == hyper::StatusCode::OK).then_some(())
    })
    .await;
    // A second word on the same failure would have settled by now.
    tokio::time::sleep(SETTLE + Duration::from_millis(500)).await;
    let all = receiver.accepted();
    assert_eq!(all.len(), 1, "only the failure seen happening: {all:?}");
    let event = &got[0];
    assert_eq!(event["namespace"], NS);
    assert_eq!(event["name"], "llm-s1");
    assert_eq!(event["state"], "ended");
    assert_eq!(event["cause"], "out-of-memory");
    assert!(
        event["detail"]
            .as_str()
            .is_some_and(|d| d.contains("OOMKilled")),
        "{event}"
    );
    let link = event["link"].as_str().expect("link");
    assert_eq!(
        link,
        format!("{PUBLIC_URL}/explain?ns={NS}&kind=TrainJob&name=llm-s1")
    );
    // What the link names is what Inspect explains: the same object, with
    // the same cause.
    let (status, inspect) = get_json(
        server.addr,
        &format!("/api/v1/namespaces/{NS}/objects/trainjobs/llm-s1"),
    )
    .await;
    assert_eq!(status, hyper::StatusCode::OK);
    assert_eq!(
        inspect["observation"]["cause"]["kind"], "out-of-memory",
        "{inspect}"
    );
    assert_eq!(
        metric(server.addr, "dispatch_dash_notifications_sent_total").await,
        1.0
    );
}

#[tokio::test]
async fn a_receiver_that_is_down_then_back_gets_it_after_a_retry() {
    let (receiver, url) = receiver(Behaviour::FailFirst(2)).await;
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    let server = notifying_server(&running, &url).await;
    ready(server.addr).await;
    oom_failure(&emu, "llm");
    for _ in 0..300 {
        if receiver.accepted().len() == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let (_, text) = get_text(server.addr, "/metrics", &[]).await;
    assert_eq!(
        receiver.accepted().len(),
        1,
        "requests {}: {text}",
        receiver.requests.load(Ordering::SeqCst)
    );
    assert_eq!(receiver.requests.load(Ordering::SeqCst), 3);
    assert_eq!(
        metric(server.addr, "dispatch_dash_notification_retries_total").await,
        2.0
    );
    assert_eq!(
        metric(server.addr, "dispatch_dash_notifications_sent_total").await,
        1.0
    );
    assert_eq!(
        metric(server.addr, "dispatch_dash_notifications_failed_total").await,
        0.0
    );
}

/// `--notify-pending-after`: a TrainJob still pending past it (under
/// Kueue, its Workload not admitted) is told once, not before.
#[tokio::test]
async fn a_job_pending_past_the_threshold_is_told_once_and_not_before() {
    let (receiver, url) = receiver(Behaviour::Accept).await;
    let running = emulator(true).await;
    let emu = running.emulator().clone();
    let server = notifying_server_with(
        &running,
        &url,
        ModeChoice::Kueue,
        Some(Duration::from_secs(3)),
    )
    .await;
    ready(server.addr).await;
    let started = std::time::Instant::now();
    let uid = create_trainjob(&emu, "waits", "s1");
    let job = emulator::scenario::objects::JobRef::new(NS, "waits", "s1");
    emu.create(emulator::scenario::objects::workload(
        &job,
        "trainjob-waits-s1",
        &uid,
        "gpu",
        2,
    ))
    .expect("Workload");
    let got = eventually(30, "the pending notification", || {
        let receiver = receiver.clone();
        async move { (!receiver.accepted().is_empty()).then(|| receiver.accepted()) }
    })
    .await;
    assert!(
        started.elapsed() >= Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(got[0]["name"], "waits-s1", "{got:?}");
    assert_eq!(got[0]["state"], "pending", "{got:?}");
    // Well past the threshold: still the one notification.
    tokio::time::sleep(Duration::from_secs(3)).await;
    let all = receiver.accepted();
    assert_eq!(all.len(), 1, "{all:?}");
}

/// While a notification waits on a receiver that never answers, the
/// watches still ingest and the streams still send: a change made after
/// it reaches an SSE client well within the request timeout (10 s).
#[tokio::test]
async fn a_receiver_that_never_answers_holds_no_watch_and_no_stream() {
    let (receiver, url) = receiver(Behaviour::Hang).await;
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    let server = notifying_server(&running, &url).await;
    ready(server.addr).await;
    let mut stream = SseReader::open(
        server.addr,
        &format!("/api/v1/namespaces/{NS}/snapshots"),
        &[],
    )
    .await;
    loop {
        if stream.next(10).await.expect("the start").event == "snapshot" {
            break;
        }
    }
    oom_failure(&emu, "first");
    eventually(20, "the receiver is holding a request", || {
        let receiver = receiver.clone();
        async move { (receiver.requests.load(Ordering::SeqCst) >= 1).then_some(()) }
    })
    .await;
    let started = std::time::Instant::now();
    create_trainjob(&emu, "second", "s1");
    loop {
        let event = stream.next(5).await.expect("a change within 5 s");
        if event.event == "change" && event.data.contains("second-s1") {
            break;
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    let (status, _) = get_json(server.addr, &format!("/api/v1/namespaces/{NS}/jobs/second")).await;
    assert_eq!(status, hyper::StatusCode::OK);
    assert!(receiver.accepted().is_empty());
}

/// The real binary on a state directory sends a failure's notification,
/// is killed with SIGKILL, and restarts on the same directory: the
/// failure is old news then, and nothing is sent twice; a new failure
/// after the restart is sent once.
#[tokio::test]
async fn a_kill_9_restart_on_the_same_state_dir_sends_nothing_twice() {
    let (receiver, url) = receiver(Behaviour::Accept).await;
    let running = serve_emulator(emulator_config()).await;
    let emu = running.emulator().clone();
    let dir = TempDir::new("notify-restart");
    let kubeconfig = dir.0.join("kubeconfig");
    std::fs::write(&kubeconfig, running.kubeconfig_yaml()).expect("kubeconfig");
    let url_file = dir.0.join("webhook-url");
    std::fs::write(&url_file, format!("{url}\n")).expect("url file");
    let state_dir = dir.0.join("state").display().to_string();
    let url_flag = url_file.display().to_string();
    let flags = [
        "--state-dir",
        state_dir.as_str(),
        "--notify-url-file",
        url_flag.as_str(),
        "--public-url",
        PUBLIC_URL,
        "--notify-settle",
        "2s",
    ];
    let server = ServerProcess::start_ready(&kubeconfig, &flags).await;
    oom_failure(&emu, "llm");
    eventually(30, "the first notification", || {
        let receiver = receiver.clone();
        async move { (receiver.accepted().len() == 1).then_some(()) }
    })
    .await;
    let stderr = std::fs::read_to_string(&server.stderr).unwrap_or_default();
    assert!(
        !stderr.contains("secret-part"),
        "the URL is never logged: {stderr}"
    );
    server.kill_9().await;

    let server = ServerProcess::start_ready(&kubeconfig, &flags).await;
    oom_failure(&emu, "next");
    eventually(30, "the new failure's notification", || {
        let receiver = receiver.clone();
        async move { (receiver.accepted().len() >= 2).then_some(()) }
    })
    .await;
    tokio::time::sleep(SETTLE + Duration::from_millis(500)).await;
    let names: Vec<Value> = receiver
        .accepted()
        .iter()
        .map(|e| e["name"].clone())
        .collect();
    assert_eq!(names, ["llm-s1", "next-s1"], "nothing twice");
    let stderr = std::fs::read_to_string(&server.stderr).unwrap_or_default();
    assert!(!stderr.contains("secret-part"), "{stderr}");
}
