//! The monitoring tier: Debian's real Prometheus scrapes the server (with
//! `--auth kubernetes` and a token file, as deploy/ runs it) in front of
//! the emulator, evaluates the shipped rules (deploy/monitoring/), and a
//! real Alertmanager routes the `TrainJobFailed` they fire to a webhook
//! receiver on port 0. What PromQL says of `dispatch_dash_trainjobs`
//! agrees with the Find JSON. `./scripts/setup-test.sh` installs both.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::routing::post;
use axum::{Json, Router};
use common::auth::{get_as, quick_auth};
use common::*;
use dispatch_dash::serve::HttpSettings;
use emulator::Grant;
use serde_json::Value;

const PROMETHEUS_TOKEN: &str = "prometheus-token";
const ALICE_TOKEN: &str = "alice-token";
const PUBLIC_URL: &str = "https://dash.example.com";

/// A child process killed when dropped, with its output in a file.
struct Child {
    child: tokio::process::Child,
    log: PathBuf,
}

impl Child {
    fn start(program: &str, args: &[String], log: PathBuf) -> Child {
        let out = std::fs::File::create(&log).expect("log file");
        let child = tokio::process::Command::new(program)
            .args(args)
            .stdout(out.try_clone().expect("log"))
            .stderr(out)
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| {
                panic!("{program}: {e}: ./scripts/setup-test.sh installs Debian's prometheus and prometheus-alertmanager")
            });
        Child { child, log }
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// A webhook receiver on 127.0.0.1:0 that keeps every alert posted.
async fn receiver() -> (Arc<Mutex<Vec<Value>>>, String) {
    async fn hook(State(got): State<Arc<Mutex<Vec<Value>>>>, Json(body): Json<Value>) {
        let alerts = body["alerts"].as_array().cloned().unwrap_or_default();
        got.lock().expect("lock").extend(alerts);
    }
    let got: Arc<Mutex<Vec<Value>>> = Arc::default();
    let app = Router::new()
        .route("/alerts", post(hook))
        .with_state(got.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    (got, format!("http://{addr}/alerts"))
}

fn rules_file() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy/monitoring/dispatch-dash.rules.yaml")
        .canonicalize()
        .expect("the shipped rules")
}

/// Prometheus, scraping `target` every second with `token_file`.
fn prometheus(dir: &Path, target: &str, token_file: &Path, alertmanager: &str) -> (Child, String) {
    let config = format!(
        "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n\
         rule_files:\n  - {rules}\n\
         alerting:\n  alertmanagers:\n    - static_configs:\n        - targets: ['{alertmanager}']\n\
         scrape_configs:\n  - job_name: dispatch-dash\n    authorization:\n      credentials_file: {token}\n    \
         static_configs:\n      - targets: ['{target}']\n",
        rules = rules_file().display(),
        token = token_file.display(),
    );
    let path = dir.join("prometheus.yml");
    std::fs::write(&path, config).expect("config");
    let listen = format!("127.0.0.1:{}", free_port());
    let child = Child::start(
        "prometheus",
        &[
            format!("--config.file={}", path.display()),
            format!("--storage.tsdb.path={}", dir.join("tsdb").display()),
            format!("--web.listen-address={listen}"),
        ],
        dir.join("prometheus.log"),
    );
    (child, listen)
}

/// Alertmanager, routing everything to `webhook` at once.
fn alertmanager(dir: &Path, webhook: &str) -> (Child, String) {
    let config = format!(
        "route:\n  receiver: hook\n  group_by: [alertname, namespace, cause]\n  group_wait: 1s\n  \
         group_interval: 1s\n  repeat_interval: 1h\n\
         receivers:\n  - name: hook\n    webhook_configs:\n      - url: '{webhook}'\n        send_resolved: false\n"
    );
    let path = dir.join("alertmanager.yml");
    std::fs::write(&path, config).expect("config");
    let listen = format!("127.0.0.1:{}", free_port());
    let child = Child::start(
        "prometheus-alertmanager",
        &[
            format!("--config.file={}", path.display()),
            format!("--storage.path={}", dir.join("am").display()),
            format!("--web.listen-address={listen}"),
            // One instance: no gossip port.
            "--cluster.listen-address=".into(),
        ],
        dir.join("alertmanager.log"),
    );
    (child, listen)
}

/// An instant PromQL query's result vector (empty while Prometheus starts).
async fn query(prometheus: &str, promql: &str) -> Vec<Value> {
    let addr = prometheus.parse().expect("addr");
    let path = format!("/api/v1/query?query={}", percent(promql));
    match get_json_raw(addr, &path).await {
        Ok((_, body)) => body["data"]["result"]
            .as_array()
            .cloned()
            .unwrap_or_default(),
        Err(_) => Vec::new(),
    }
}

fn percent(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                char::from(b).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// TrainJobs by (state, cause), as PromQL says for `NS` (zeros left out).
async fn by_promql(prometheus: &str) -> BTreeMap<(String, String), u64> {
    let promql = format!("dispatch_dash_trainjobs{{namespace=\"{NS}\"}} > 0");
    query(prometheus, &promql)
        .await
        .iter()
        .map(|s| {
            let m = &s["metric"];
            let key = (
                m["state"].as_str().unwrap_or_default().to_string(),
                m["cause"].as_str().unwrap_or_default().to_string(),
            );
            let n = s["value"][1]
                .as_str()
                .and_then(|v| v.parse().ok())
                .unwrap_or(0);
            (key, n)
        })
        .collect()
}

/// TrainJobs by (state, cause), as the Find JSON of each job says.
async fn by_find(addr: std::net::SocketAddr, jobs: &[&str]) -> BTreeMap<(String, String), u64> {
    let mut counts = BTreeMap::new();
    for job in jobs {
        let answer = get_as(
            addr,
            &format!("/api/v1/namespaces/{NS}/jobs/{job}"),
            ALICE_TOKEN,
        )
        .await;
        // Find answers the job's observations, an array.
        for o in answer.json().as_array().cloned().unwrap_or_default() {
            if o["object"]["kind"] == "TrainJob" {
                let key = (
                    o["state"].as_str().unwrap_or_default().to_string(),
                    o["cause"]["kind"].as_str().unwrap_or_default().to_string(),
                );
                *counts.entry(key).or_default() += 1;
            }
        }
    }
    counts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prometheus_scrapes_promql_agrees_with_find_and_alertmanager_delivers_train_job_failed() {
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    emu.set_user(PROMETHEUS_TOKEN, "prometheus", &[]);
    emu.grant(Grant::non_resource("prometheus", "get", "/metrics"));
    emu.set_user(ALICE_TOKEN, "alice", &[]);
    emu.grant(Grant::namespaced(
        "alice",
        "list",
        "trainer.kubeflow.org",
        "trainjobs",
        NS,
    ));
    emu.grant(Grant::namespaced("alice", "list", "", "pods", NS));
    let uid = create_trainjob(&emu, "run", "s1");
    create_jobset(&emu, "run", "s1", &uid);

    let server = server(
        &running,
        Settings {
            auth: quick_auth(),
            http: HttpSettings {
                public_url: Some(PUBLIC_URL.into()),
                ..HttpSettings::default()
            },
            ..Settings::default()
        },
    )
    .await;
    ready(server.addr).await;

    let dir = TempDir::new("monitoring");
    let token_file = dir.0.join("token");
    std::fs::write(&token_file, PROMETHEUS_TOKEN).expect("token");
    let (alerts, webhook) = receiver().await;
    let (am, am_addr) = alertmanager(&dir.0, &webhook);
    let (prom, prom_addr) = prometheus(&dir.0, &server.addr.to_string(), &token_file, &am_addr);

    // The scrape is authorized: the target is up.
    let up = eventually(60, "Prometheus scrapes dispatch-dash", || {
        let prom_addr = prom_addr.clone();
        async move {
            let up = query(&prom_addr, "up{job=\"dispatch-dash\"}").await;
            (up.first()?["value"][1] == "1").then_some(up)
        }
    })
    .await;
    assert_eq!(up.len(), 1, "{up:?}\n{}", prom.log());

    // The OOMKilled pod is in the store before its TrainJob fails: pods and
    // TrainJobs come through separate watches, and a failure seen first
    // would be counted, and alerted on, as `unknown` for a moment.
    let uid = create_trainjob(&emu, "llm", "s1");
    create_jobset(&emu, "llm", "s1", &uid);
    let pod = create_oom_pod(&emu, "llm", "s1", 0);
    let inspect = format!("/api/v1/namespaces/{NS}/objects/pods/{pod}");
    eventually(60, "the OOMKilled pod is stored", || {
        let inspect = inspect.clone();
        async move {
            (get_as(server.addr, &inspect, ALICE_TOKEN)
                .await
                .status
                .as_u16()
                == 200)
                .then_some(())
        }
    })
    .await;
    fail_trainjob(&emu, "llm", "s1");
    // PromQL and the Find JSON agree, once the failure is in both.
    let jobs = ["run", "llm"];
    let agreed = eventually(60, "PromQL agrees with Find", || {
        let prom_addr = prom_addr.clone();
        async move {
            let promql = by_promql(&prom_addr).await;
            let find = by_find(server.addr, &jobs).await;
            let ended = promql.get(&("ended".into(), "out-of-memory".into())) == Some(&1);
            (ended && promql == find).then_some(promql)
        }
    })
    .await;
    assert_eq!(agreed.values().sum::<u64>(), 2, "{agreed:?}");

    let alert = eventually(90, "Alertmanager delivers TrainJobFailed", || {
        let alerts = alerts.clone();
        async move {
            alerts
                .lock()
                .expect("lock")
                .iter()
                .find(|a| a["labels"]["alertname"] == "TrainJobFailed")
                .cloned()
        }
    })
    .await;
    assert_eq!(alert["labels"]["namespace"], NS, "{alert}");
    assert_eq!(alert["labels"]["cause"], "out-of-memory", "{alert}");
    assert_eq!(alert["labels"]["severity"], "warning", "{alert}");
    assert_eq!(
        alert["annotations"]["dashboard"],
        format!("{PUBLIC_URL}/?ns={NS}&state=ended&cause=out-of-memory"),
        "{alert}"
    );
    assert!(am.log().contains("Listening"), "{}", am.log());
}
