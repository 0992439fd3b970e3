//! Soak benchmark of `dispatch-dash serve --memory-budget`.
//!
//! Run: `cargo bench -p dispatch-dash --bench soak` (`SOAK_SECS`, default
//! 180; `SOAK_BUDGET_MIB`, default 64).
//!
//! The real binary, in its own process so its memory is measured alone,
//! watches an in-process emulator with `--all-namespaces` and a small
//! budget, one SSE client draining each namespace's stream, while the bench
//! pushes past every bound the budget sets:
//! - **captured pods**: 400 pods a second are created already failed, with a
//!   2 KiB termination message, and deleted, each under one of 20
//!   TrainJobs, so the server keeps each as evidence until the bounds per
//!   TrainJob and in all evict;
//! - **replay rings**: 400 pod status writes a second, each a change frame;
//! - **history**: 100 new TrainJobs a second, each deleted 200 ms later;
//!   the history keeps every one that is gone until its bound evicts.
//!
//! Every 5 s it reads the server's `/metrics`: the bytes the three bounded
//! parts hold and their evictions. At the end it prints, as `BUDGET` lines:
//! the peak of those bytes together against the budget (goal ≤ 1.0), and
//! the peak resident memory (VmRSS) against the memory limit the budget is
//! half of (goal ≤ 1.0; the other half is for the store, the snapshots and
//! the runtime, docs/security.md). The peak RSS over the budget itself is
//! printed too.

use std::collections::BTreeMap;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use emulator::scenario::objects::{self, JobRef, PodRef};
use emulator::{Emulator, EmulatorConfig, Kind};
use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;

mod common;
use common::{metrics, rss_kib};

const NAMESPACES: usize = 10;
const TRAINJOBS: usize = 200;
const PODS_PER_JOB: usize = 16;
const NODES: usize = 32;
/// Per 10 ms tick: captures, status writes, TrainJobs made and deleted.
const CAPTURES_PER_TICK: usize = 4;
const WRITES_PER_TICK: usize = 4;
const CHURNED_PER_TICK: usize = 1;
/// The TrainJobs captured pods go under.
const CAPTURING_JOBS: usize = 20;
/// Ticks a churned TrainJob lives.
const CHURN_LIFE: usize = 20;
const MESSAGE_BYTES: usize = 2_048;

fn namespace(i: usize) -> String {
    format!("soak-{}", i % NAMESPACES)
}

fn job_ref(job: usize) -> JobRef {
    JobRef::new(&namespace(job), &format!("job{job}"), "s1")
}

fn pod_ref(rank: usize, restart_attempt: u32) -> PodRef {
    PodRef {
        rank,
        admission: 1,
        restart_attempt,
        suffix: "abcde".into(),
    }
}

fn node(job: usize, rank: usize) -> String {
    format!("gpu-node-{}", 1 + (job + rank) % NODES)
}

fn populate(emu: &Emulator) {
    let now = emulator::time::now_rfc3339();
    for n in 1..=NODES {
        emu.apply(objects::node(&format!("gpu-node-{n}"), "True", &now))
            .expect("node");
    }
    for job in 0..TRAINJOBS {
        let jr = job_ref(job);
        let tj = emu
            .create(objects::trainjob(&jr, PODS_PER_JOB, None, false))
            .expect("TrainJob");
        let uid = tj["metadata"]["uid"].as_str().unwrap_or("").to_string();
        emu.create(objects::jobset(&jr, &uid, PODS_PER_JOB, 0))
            .expect("JobSet");
        for rank in 0..PODS_PER_JOB {
            let pod = objects::pod(&jr, &pod_ref(rank, 0), &now);
            emu.create(objects::pod_running(pod, &node(job, rank), &now))
                .expect("pod");
        }
    }
}

/// The pressure, one tick every 10 ms until `stop`.
async fn drive(emu: Emulator, stop: Arc<AtomicBool>) -> BTreeMap<&'static str, u64> {
    let mut done = BTreeMap::from([("captured", 0), ("written", 0), ("churned", 0)]);
    let message = "x".repeat(MESSAGE_BYTES);
    let mut tick = tokio::time::interval(Duration::from_millis(10));
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let (mut capture, mut write, mut churn) = (0usize, 0usize, 0usize);
    while !stop.load(Ordering::Relaxed) {
        tick.tick().await;
        let now = emulator::time::now_rfc3339();
        for _ in 0..CAPTURES_PER_TICK {
            let job = capture % CAPTURING_JOBS;
            let jr = job_ref(job);
            // A rank past the live ones, and a new name every time.
            let p = pod_ref(PODS_PER_JOB, 1 + (capture / CAPTURING_JOBS) as u32);
            let pod = objects::pod_running(objects::pod(&jr, &p, &now), &node(job, 0), &now);
            let pod = objects::pod_terminated(pod, "Error", 1, &message, &now);
            if emu.create(pod).is_ok() && emu.delete(Kind::Pod, &jr.namespace, &p.name(&jr)).is_ok()
            {
                *done.entry("captured").or_default() += 1;
            }
            capture += 1;
        }
        for _ in 0..WRITES_PER_TICK {
            let job = write % TRAINJOBS;
            let rank = (write / TRAINJOBS) % PODS_PER_JOB;
            let jr = job_ref(job);
            let mut pod = objects::pod_running(
                objects::pod(&jr, &pod_ref(rank, 0), &now),
                &node(job, rank),
                &now,
            );
            objects::set_condition(
                &mut pod,
                objects::condition("Soak", "True", "Write", &format!("write {write}"), &now),
            );
            if emu.apply(pod).is_ok() {
                *done.entry("written").or_default() += 1;
            }
            write += 1;
        }
        for _ in 0..CHURNED_PER_TICK {
            let churned = |n: usize| JobRef::new(&namespace(n), &format!("churn{n}"), "s1");
            if emu
                .create(objects::trainjob(&churned(churn), 1, None, false))
                .is_ok()
            {
                *done.entry("churned").or_default() += 1;
            }
            if let Some(old) = churn.checked_sub(CHURN_LIFE * CHURNED_PER_TICK) {
                let jr = churned(old);
                let _ = emu.delete(Kind::TrainJob, &jr.namespace, &jr.name());
            }
            churn += 1;
        }
    }
    done
}

/// Drains one namespace's stream, so the server keeps its replay ring.
async fn drain(url: String) {
    let client: Client<_, Empty<Bytes>> = Client::builder(TokioExecutor::new()).build_http();
    let Ok(response) = client.get(url.parse().expect("url")).await else {
        return;
    };
    let mut body = response.into_body();
    while let Some(Ok(_)) = body.frame().await {}
}

const BOUNDED: [&str; 3] = [
    "dispatch_dash_captured_pod_bytes",
    "dispatch_dash_replay_bytes",
    "dispatch_dash_history_bytes",
];

fn get(m: &BTreeMap<String, f64>, name: &str) -> f64 {
    m.get(name).copied().unwrap_or(0.0)
}

#[tokio::main]
async fn main() {
    let env = |name: &str, default: u64| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let soak = Duration::from_secs(env("SOAK_SECS", 180));
    let budget_mib = env("SOAK_BUDGET_MIB", 64);
    let emu = Emulator::new(EmulatorConfig {
        kueue: false,
        default_namespace: namespace(0),
        ..EmulatorConfig::default()
    });
    populate(&emu);
    let running = emu
        .serve("127.0.0.1:0".parse().expect("addr"))
        .await
        .expect("serve");
    let dir = std::env::temp_dir().join(format!("dispatch-dash-soak-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(&kubeconfig, running.kubeconfig_yaml()).expect("kubeconfig");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let mut server = tokio::process::Command::new(env!("CARGO_BIN_EXE_dispatch-dash"))
        .arg("serve")
        .arg("--kubeconfig")
        .arg(&kubeconfig)
        .arg("--listen")
        .arg(format!("127.0.0.1:{port}"))
        .arg("--mode")
        .arg("plain")
        .arg("--all-namespaces")
        .arg("--memory-budget")
        .arg(format!("{budget_mib}Mi"))
        .env("RUST_LOG", "warn")
        .env_remove("DISPATCH_DASH_TOKEN")
        .stdout(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("server starts");
    let pid = server.id().expect("pid");
    let base = format!("http://127.0.0.1:{port}");
    let want_pods = (TRAINJOBS * PODS_PER_JOB) as f64;
    let deadline = Instant::now() + Duration::from_secs(120);
    while get(&metrics(&base).await, "dispatch_dash_stored_pods") < want_pods {
        assert!(
            Instant::now() < deadline,
            "the server never stored every pod"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    for n in 0..NAMESPACES {
        tokio::spawn(drain(format!(
            "{base}/api/v1/namespaces/{}/snapshots",
            namespace(n)
        )));
    }

    let stop = Arc::new(AtomicBool::new(false));
    let driver = tokio::spawn(drive(emu.clone(), stop.clone()));
    let started = Instant::now();
    let mut peak_rss_kib = 0;
    let mut peak_bounded = 0.0f64;
    let mut peaks: BTreeMap<&str, f64> = BTreeMap::new();
    let mut last = BTreeMap::new();
    let mut next_scrape = started;
    while started.elapsed() < soak {
        peak_rss_kib = peak_rss_kib.max(rss_kib(pid));
        if Instant::now() >= next_scrape {
            next_scrape += Duration::from_secs(5);
            last = metrics(&base).await;
            let bounded: f64 = BOUNDED.iter().map(|n| get(&last, n)).sum();
            peak_bounded = peak_bounded.max(bounded);
            for name in BOUNDED {
                let peak = peaks.entry(name).or_default();
                *peak = peak.max(get(&last, name));
            }
            println!(
                "  {:>4} s: RSS {:.1} MiB; captured {:.1} MiB, replay {:.1} MiB, history {:.1} MiB, stored pods {:.1} MiB",
                started.elapsed().as_secs(),
                rss_kib(pid) as f64 / 1024.0,
                get(&last, BOUNDED[0]) / 1_048_576.0,
                get(&last, BOUNDED[1]) / 1_048_576.0,
                get(&last, BOUNDED[2]) / 1_048_576.0,
                get(&last, "dispatch_dash_stored_pod_bytes") / 1_048_576.0,
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    stop.store(true, Ordering::Relaxed);
    let done = driver.await.unwrap_or_default();
    peak_rss_kib = peak_rss_kib.max(rss_kib(pid));

    let budget = (budget_mib * 1_048_576) as f64;
    let peak_rss = (peak_rss_kib * 1024) as f64;
    println!("dispatch-dash soak benchmark");
    println!(
        "  {TRAINJOBS} TrainJobs x {PODS_PER_JOB} pods in {NAMESPACES} namespaces, --memory-budget {budget_mib}Mi, {} s: {} pods captured, {} status writes, {} TrainJobs made and deleted",
        soak.as_secs(),
        done.get("captured").copied().unwrap_or(0),
        done.get("written").copied().unwrap_or(0),
        done.get("churned").copied().unwrap_or(0),
    );
    for (name, peak) in &peaks {
        println!("  peak {name}: {:.1} MiB", peak / 1_048_576.0);
    }
    let evicted: Vec<String> = last
        .iter()
        .filter(|(name, _)| name.contains("_evicted_total"))
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    println!("  evictions: {}", evicted.join(", "));
    let pass = |ok: bool| if ok { "PASS" } else { "MISS" };
    let bounded_ratio = peak_bounded / budget;
    println!(
        "BUDGET soak-bounded-bytes: peak {:.1} MiB held by captured pods, replay rings and history / budget {budget_mib} MiB = {bounded_ratio:.2} (goal <= 1.0) {}",
        peak_bounded / 1_048_576.0,
        pass(bounded_ratio <= 1.0)
    );
    let rss_ratio = peak_rss / (2.0 * budget);
    println!(
        "BUDGET soak-rss: peak RSS {:.1} MiB / the limit the budget is half of, {} MiB = {rss_ratio:.2} (goal <= 1.0) {}",
        peak_rss / 1_048_576.0,
        2 * budget_mib,
        pass(rss_ratio <= 1.0)
    );
    println!("  peak RSS / budget = {:.2}", peak_rss / budget);
    let _ = server.kill().await;
    running.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}
