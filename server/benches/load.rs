//! Load benchmark of `dispatch-dash serve`.
//!
//! Run: `cargo bench -p dispatch-dash --bench load`
//!
//! Loads an in-process emulator with 1,000 TrainJobs × 16 pods over 10
//! namespaces, starts the real `dispatch-dash` binary against it (its own
//! process, so its memory is measured alone), opens 100 SSE clients on the
//! namespaces' `snapshots` streams, then churns pod status at 500 updates/s
//! for 20 s. Each update stamps the write time into a pod condition's
//! message; clients take the time from that stamp to the `change` event
//! that carries it. Reports p50/p99 of that latency, the server's peak
//! resident memory (VmRSS) and the bytes held per stored pod. Goals: p99 <
//! 100 ms, memory < 300 MB.
//!
//! Baseline, measured in the same run: one raw watch of all pods straight
//! on the emulator, timed the same way (stamp to receipt). It is what the
//! API itself costs on this machine at this moment; the server's figure
//! over it is what dispatch-dash adds.
//!
//! Then the same load against a server with `--state-dir` (a temp dir),
//! reported as its write-to-SSE p99 over the run without it (goal ≤ 1.2×),
//! and the database's growth per captured pod: pods are created and
//! deleted in two rounds of the same size, so each round adds only
//! captured pods; bytes are `state.db` + `state.db-wal`.

use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use emulator::scenario::objects::{self, JobRef, PodRef};
use emulator::{Emulator, EmulatorConfig, Kind};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::json;

const NAMESPACES: usize = 10;
const TRAINJOBS: usize = 1_000;
const PODS_PER_JOB: usize = 16;
const CLIENTS: usize = 100;
const UPDATES_PER_SEC: usize = 500;
const CHURN: Duration = Duration::from_secs(20);

fn micros_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(0)
}

fn namespace(i: usize) -> String {
    format!("load-{}", i % NAMESPACES)
}

fn pod_name(job: usize, rank: usize) -> (String, String) {
    let jr = JobRef::new(&namespace(job), &format!("job{job}"), "s1");
    let p = PodRef {
        rank,
        admission: 1,
        restart_attempt: 0,
        suffix: "abcde".into(),
    };
    (jr.namespace.clone(), p.name(&jr))
}

fn populate(emu: &Emulator) {
    let now = emulator::time::now_rfc3339();
    for n in 1..=32 {
        let _ = emu.apply(objects::node(&format!("gpu-node-{n}"), "True", &now));
    }
    for job in 0..TRAINJOBS {
        let jr = JobRef::new(&namespace(job), &format!("job{job}"), "s1");
        let tj = emu
            .create(objects::trainjob(&jr, PODS_PER_JOB, None, false))
            .expect("TrainJob");
        let uid = tj["metadata"]["uid"].as_str().unwrap_or("").to_string();
        emu.create(objects::jobset(&jr, &uid, PODS_PER_JOB, 0))
            .expect("JobSet");
        for rank in 0..PODS_PER_JOB {
            let p = PodRef {
                rank,
                admission: 1,
                restart_attempt: 0,
                suffix: "abcde".into(),
            };
            let pod = objects::pod_running(
                objects::pod(&jr, &p, &now),
                &format!("gpu-node-{}", 1 + (job + rank) % 32),
                &now,
            );
            emu.create(pod).expect("pod");
        }
    }
}

fn rss_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let at = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[at]
}

/// Reads one stream (SSE events end with a blank line, watch events with a
/// newline), recording stamp-to-receipt latencies (ms).
async fn stamp_reader(
    url: String,
    event_end: &'static str,
    latencies: Arc<Mutex<Vec<f64>>>,
    started: Arc<std::sync::atomic::AtomicUsize>,
    measuring: Arc<std::sync::atomic::AtomicBool>,
) {
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let Ok(response) = client.get(url.parse().expect("url")).await else {
        return;
    };
    let mut body = response.into_body();
    let mut counted = false;
    let mut carry = String::new();
    while let Some(Ok(frame)) = body.frame().await {
        let Ok(data) = frame.into_data() else {
            continue;
        };
        if !counted {
            counted = true;
            started.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
        let received = micros_now();
        carry.push_str(&String::from_utf8_lossy(&data));
        // Stamps are `stamp-<micros>`; scan complete events only.
        let Some(end) = carry.rfind(event_end) else {
            continue;
        };
        let complete: String = carry.drain(..end + event_end.len()).collect();
        if !measuring.load(std::sync::atomic::Ordering::Relaxed) {
            continue;
        }
        let mut found = Vec::new();
        for piece in complete.split("stamp-").skip(1) {
            let digits: String = piece.chars().take_while(char::is_ascii_digit).collect();
            if let Ok(sent) = digits.parse::<u64>() {
                found.push(received.saturating_sub(sent) as f64 / 1000.0);
            }
        }
        if !found.is_empty() {
            latencies.lock().expect("lock").extend(found);
        }
    }
}

#[tokio::main(flavor = "multi_thread")]
async fn main() {
    let started_at = Instant::now();
    let emu = Emulator::new(EmulatorConfig {
        kueue: false,
        history: 200_000,
        default_namespace: namespace(0),
        ..EmulatorConfig::default()
    });
    populate(&emu);
    let running = emu
        .serve("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("serve");
    let dir = std::env::temp_dir().join(format!("dispatch-dash-load-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, running.kubeconfig_yaml()).expect("kubeconfig");
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
        probe.local_addr().expect("addr").port()
    };
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_dispatch-dash"));
    command
        .arg("serve")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--mode")
        .arg("plain")
        .arg("--max-sse-clients")
        .arg("200")
        // Every client of the bench comes from 127.0.0.1.
        .arg("--max-sse-per-client")
        .arg("200")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .kill_on_drop(true);
    for n in 0..NAMESPACES {
        command.arg("--namespace").arg(namespace(n));
    }
    let mut server = command.spawn().expect("server starts");
    let pid = server.id().expect("pid");
    let base = format!("http://127.0.0.1:{port}");
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let ready = match client
            .get(format!("{base}/readyz").parse().expect("url"))
            .await
        {
            Ok(r) => r.status().is_success(),
            Err(_) => false,
        };
        if ready {
            break;
        }
        assert!(Instant::now() < deadline, "server not ready within 60 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let synced_in = started_at.elapsed();

    let latencies = Arc::new(Mutex::new(Vec::new()));
    let connected = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let measuring = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for c in 0..CLIENTS {
        tokio::spawn(stamp_reader(
            format!("{base}/api/v1/namespaces/{}/snapshots", namespace(c)),
            "\n\n",
            latencies.clone(),
            connected.clone(),
            measuring.clone(),
        ));
    }
    let baseline = Arc::new(Mutex::new(Vec::new()));
    tokio::spawn(stamp_reader(
        format!(
            "{}/api/v1/pods?watch=true&resourceVersion={}",
            running.url(),
            emu.resource_version()
        ),
        "\n",
        baseline.clone(),
        connected.clone(),
        measuring.clone(),
    ));
    while connected.load(std::sync::atomic::Ordering::SeqCst) < CLIENTS {
        assert!(Instant::now() < deadline, "clients did not all connect");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    measuring.store(true, std::sync::atomic::Ordering::SeqCst);

    // Churn: UPDATES_PER_SEC pod status writes per second, in 10 ms ticks.
    let churn_emu = emu.clone();
    let churn = tokio::task::spawn_blocking(move || {
        let per_tick = UPDATES_PER_SEC / 100;
        let start = Instant::now();
        let mut written = 0usize;
        let mut seq = 0usize;
        let now = emulator::time::now_rfc3339();
        while start.elapsed() < CHURN {
            for _ in 0..per_tick {
                let job = (seq * 7919) % TRAINJOBS;
                let rank = seq % PODS_PER_JOB;
                seq += 1;
                let (ns, name) = pod_name(job, rank);
                let status = json!({
                    "phase": "Running",
                    "conditions": [
                        objects::condition("PodScheduled", "True", "", "", &now),
                        objects::condition("Ready", "True", "Churn", &format!("stamp-{}", micros_now()), &now),
                    ],
                });
                if churn_emu
                    .patch_status(Kind::Pod, &ns, &name, status)
                    .is_ok()
                {
                    written += 1;
                }
            }
            let next = Duration::from_millis(10) * (written / per_tick.max(1)) as u32;
            if let Some(wait) = next.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        written
    });
    let mut peak_rss = 0;
    while !churn.is_finished() {
        peak_rss = peak_rss.max(rss_kib(pid));
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let written = churn.await.expect("churn");
    tokio::time::sleep(Duration::from_millis(500)).await;
    measuring.store(false, std::sync::atomic::Ordering::SeqCst);
    peak_rss = peak_rss.max(rss_kib(pid));

    let metrics = match client
        .get(format!("{base}/metrics").parse().expect("url"))
        .await
    {
        Ok(r) => {
            let bytes = r
                .into_body()
                .collect()
                .await
                .map(|b| b.to_bytes())
                .unwrap_or_default();
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Err(_) => String::new(),
    };
    let metric = |name: &str| -> f64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
            .unwrap_or(f64::NAN)
    };
    let pod_bytes = metric("dispatch_dash_stored_pod_bytes ");
    let pods = metric("dispatch_dash_stored_pods ");
    let lagged = metric("dispatch_dash_sse_lagged_total ");

    let mut all = latencies.lock().expect("lock").clone();
    all.sort_by(|a, b| a.total_cmp(b));
    let mut base_all = baseline.lock().expect("lock").clone();
    base_all.sort_by(|a, b| a.total_cmp(b));
    println!("dispatch-dash load benchmark");
    println!("  cluster: {TRAINJOBS} TrainJobs x {PODS_PER_JOB} pods in {NAMESPACES} namespaces; server synced {synced_in:.1?} after start");
    println!("  churn: {written} pod status writes in {CHURN:?} (target {UPDATES_PER_SEC}/s); {CLIENTS} SSE clients");
    println!(
        "  write-to-SSE latency over {} deliveries: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms (goal p99 < 100 ms)",
        all.len(),
        percentile(&all, 0.50),
        percentile(&all, 0.99),
        all.last().copied().unwrap_or(f64::NAN)
    );
    println!(
        "  baseline, a raw watch on the emulator over {} events: p50 {:.1} ms, p99 {:.1} ms; the server adds {:.1} ms at p50 and {:.1} ms at p99",
        base_all.len(),
        percentile(&base_all, 0.50),
        percentile(&base_all, 0.99),
        percentile(&all, 0.50) - percentile(&base_all, 0.50),
        percentile(&all, 0.99) - percentile(&base_all, 0.99)
    );
    println!(
        "  server peak RSS: {:.1} MB (goal < 300 MB)",
        peak_rss as f64 / 1024.0
    );
    println!(
        "  stored pods: {pods}; bytes per stored pod: {:.0}",
        pod_bytes / pods
    );
    println!("  slow SSE clients dropped: {lagged}");
    println!("  total run time: {:.1?}", started_at.elapsed());
    let _ = server.kill().await;
    running.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
    state_dir_phase(percentile(&all, 0.99)).await;
}

/// Pods created then deleted per round of the state-directory phase.
const CAPTURE_ROUND: usize = 2_000;

/// A number from the server's `/metrics`.
async fn server_metric(base: &str, name: &str) -> f64 {
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let Ok(response) = client
        .get(format!("{base}/metrics").parse().expect("url"))
        .await
    else {
        return f64::NAN;
    };
    let bytes = response
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let prefix = format!("{name} ");
    String::from_utf8_lossy(&bytes)
        .lines()
        .find_map(|l| l.strip_prefix(&prefix).and_then(|v| v.trim().parse().ok()))
        .unwrap_or(f64::NAN)
}

/// Bytes of the database and its write-ahead log.
fn state_bytes(dir: &std::path::Path) -> u64 {
    ["state.db", "state.db-wal"]
        .iter()
        .filter_map(|f| std::fs::metadata(dir.join(f)).ok())
        .map(|m| m.len())
        .sum()
}

/// Bytes of the database file alone.
fn db_bytes(dir: &std::path::Path) -> u64 {
    std::fs::metadata(dir.join("state.db")).map_or(0, |m| m.len())
}

/// The same cluster, clients and churn against a server with
/// `--state-dir`; `p99_without` is the run without it.
async fn state_dir_phase(p99_without: f64) {
    let emu = Emulator::new(EmulatorConfig {
        kueue: false,
        history: 200_000,
        default_namespace: namespace(0),
        ..EmulatorConfig::default()
    });
    populate(&emu);
    let running = emu
        .serve("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("serve");
    let dir = std::env::temp_dir().join(format!("dispatch-dash-load-state-{}", std::process::id()));
    let state_dir = dir.join("state");
    std::fs::create_dir_all(&dir).expect("temp dir");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, running.kubeconfig_yaml()).expect("kubeconfig");
    let port = {
        let probe = std::net::TcpListener::bind("127.0.0.1:0").expect("port");
        probe.local_addr().expect("addr").port()
    };
    let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_dispatch-dash"));
    command
        .arg("serve")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .args([
            "--mode",
            "plain",
            "--max-sse-clients",
            "200",
            "--max-sse-per-client",
            "200",
        ])
        .arg("--state-dir")
        .arg(&state_dir)
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .kill_on_drop(true);
    for n in 0..NAMESPACES {
        command.arg("--namespace").arg(namespace(n));
    }
    let mut server = command.spawn().expect("server starts");
    let base = format!("http://127.0.0.1:{port}");
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let ready = match client
            .get(format!("{base}/readyz").parse().expect("url"))
            .await
        {
            Ok(r) => r.status().is_success(),
            Err(_) => false,
        };
        if ready {
            break;
        }
        assert!(Instant::now() < deadline, "server not ready within 120 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let latencies = Arc::new(Mutex::new(Vec::new()));
    let connected = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let measuring = Arc::new(std::sync::atomic::AtomicBool::new(false));
    for c in 0..CLIENTS {
        tokio::spawn(stamp_reader(
            format!("{base}/api/v1/namespaces/{}/snapshots", namespace(c)),
            "\n\n",
            latencies.clone(),
            connected.clone(),
            measuring.clone(),
        ));
    }
    while connected.load(std::sync::atomic::Ordering::SeqCst) < CLIENTS {
        assert!(Instant::now() < deadline, "clients did not all connect");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    measuring.store(true, std::sync::atomic::Ordering::SeqCst);
    let churn_emu = emu.clone();
    let written = tokio::task::spawn_blocking(move || {
        let per_tick = UPDATES_PER_SEC / 100;
        let start = Instant::now();
        let mut written = 0usize;
        let now = emulator::time::now_rfc3339();
        while start.elapsed() < CHURN {
            for _ in 0..per_tick {
                let seq = written;
                let (ns, name) = pod_name((seq * 7919) % TRAINJOBS, seq % PODS_PER_JOB);
                let status = json!({
                    "phase": "Running",
                    "conditions": [
                        objects::condition("PodScheduled", "True", "", "", &now),
                        objects::condition("Ready", "True", "Churn", &format!("stamp-{}", micros_now()), &now),
                    ],
                });
                if churn_emu.patch_status(Kind::Pod, &ns, &name, status).is_ok() {
                    written += 1;
                }
            }
            let next = Duration::from_millis(10) * (written / per_tick.max(1)) as u32;
            if let Some(wait) = next.checked_sub(start.elapsed()) {
                std::thread::sleep(wait);
            }
        }
        written
    })
    .await
    .expect("churn");
    tokio::time::sleep(Duration::from_millis(500)).await;
    measuring.store(false, std::sync::atomic::Ordering::SeqCst);
    let mut all = latencies.lock().expect("lock").clone();
    all.sort_by(|a, b| a.total_cmp(b));
    let p99 = percentile(&all, 0.99);

    // Growth per captured pod: each round creates CAPTURE_ROUND extra pods
    // and deletes them, so the live rows are as before and only captured
    // rows are added.
    let mut sizes = vec![(0.0, state_bytes(&state_dir), db_bytes(&state_dir))];
    for round in 0..2 {
        let now = emulator::time::now_rfc3339();
        let mut created = Vec::new();
        for i in 0..CAPTURE_ROUND {
            let job = i % TRAINJOBS;
            let jr = JobRef::new(&namespace(job), &format!("job{job}"), "s1");
            let p = PodRef {
                rank: PODS_PER_JOB + round * CAPTURE_ROUND + i,
                admission: 1,
                restart_attempt: 0,
                suffix: "gone0".into(),
            };
            let pod = objects::pod_terminated(
                objects::pod_running(objects::pod(&jr, &p, &now), "gpu-node-1", &now),
                "OOMKilled",
                137,
                "",
                &now,
            );
            emu.create(pod).expect("pod");
            created.push((jr.namespace.clone(), p.name(&jr)));
        }
        let want_stored = (TRAINJOBS * PODS_PER_JOB + CAPTURE_ROUND) as f64;
        while server_metric(&base, "dispatch_dash_stored_pods").await < want_stored {
            assert!(
                Instant::now() < deadline + Duration::from_secs(300),
                "pods not stored"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        for (ns, name) in &created {
            emu.delete(Kind::Pod, ns, name).expect("delete");
        }
        let want_captured = ((round + 1) * CAPTURE_ROUND) as f64;
        let captured = loop {
            let captured = server_metric(&base, "dispatch_dash_captured_pods").await;
            if captured >= want_captured {
                break captured;
            }
            assert!(
                Instant::now() < deadline + Duration::from_secs(300),
                "pods not captured"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        sizes.push((captured, state_bytes(&state_dir), db_bytes(&state_dir)));
    }
    let per_round = |bytes: fn(&(f64, u64, u64)) -> u64| -> String {
        sizes
            .windows(2)
            .map(|w| (bytes(&w[1]) as f64 - bytes(&w[0]) as f64) / (w[1].0 - w[0].0))
            .map(|b| format!("{b:.0} B"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (captured, total, _) = sizes[sizes.len() - 1];
    println!("with --state-dir (the same cluster, clients and churn: {written} writes)");
    println!(
        "  write-to-SSE latency over {} deliveries: p50 {:.1} ms, p99 {:.1} ms; {:.2}x the p99 without it (goal <= 1.2x)",
        all.len(),
        percentile(&all, 0.50),
        p99,
        p99 / p99_without
    );
    println!(
        "  database + log: {:.1} MB after the churn; with {captured} captured pods {:.1} MB, {:.0} bytes per captured pod in all",
        sizes[0].1 as f64 / 1e6,
        total as f64 / 1e6,
        total as f64 / captured,
    );
    println!(
        "  growth per captured pod, by round of {CAPTURE_ROUND}: database + log {}; database alone {}",
        per_round(|s| s.1),
        per_round(|s| s.2)
    );
    let _ = server.kill().await;
    running.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
