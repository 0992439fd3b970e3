//! Speed of `dispatch-dash classify` on a big kubectl dump, against `jq`.
//!
//! Run: `cargo bench -p dispatch-dash --bench cli` (release build; use
//! `CARGO_TARGET_DIR=/work/main/target-rel` or any release target dir).
//!
//! Writes a kubectl `List` dump of what `kubectl get trainjobs,jobsets,pods
//! -o json` lists (no managedFields, which kubectl hides), in compact JSON
//! with one item per line: 1,000 TrainJobs, 1,000 JobSets and 16,000 full
//! pods (containers with env and volumes, affinity, tolerations,
//! conditions, container statuses), about 68 MB. Then, in the same run and
//! interleaved so that the noise of a shared machine hits both, it times the
//! release binary's `dispatch-dash classify FILE` (the default table output)
//! and `jq . FILE`, both writing to `/dev/null`, and prints the medians and
//! their ratio:
//!
//! `BUDGET cli-vs-jq: cli <ms> jq <ms> ratio <r> goal 0.05 PASS|MISS`
//!
//! Then it runs the CLI once more, alone, sampling its peak resident memory
//! (`VmHWM`), and prints it against the input's size:
//!
//! `BUDGET cli-rss-vs-input: peak <MB> input <MB> ratio <r> goal 1.0 PASS|MISS`
//!
//! `CLI_BENCH_SCALE=N` makes the dump N times as many TrainJobs (4 gives
//! 4,000 TrainJobs and 64,000 pods, about 273 MB).
//!
//! `jq` is the yardstick the issue names: what it costs to read and print
//! the same file. A MISS is a result, not a failure: the bench exits
//! non-zero only when it cannot measure (no `jq`, a command that fails, an
//! output that is not one row per TrainJob). It is not a test, so no clock
//! is ever asserted on.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// TrainJobs at `CLI_BENCH_SCALE=1`.
const TRAINJOBS_AT_SCALE_1: usize = 1_000;
const PODS_PER_JOB: usize = 16;
/// Each command runs this many times; the median is reported.
const ROUNDS: usize = 5;
const GOAL: f64 = 0.05;
/// Peak RSS over the input's size.
const RSS_GOAL: f64 = 1.0;

/// How many TrainJobs the dump holds: `CLI_BENCH_SCALE` thousands.
fn trainjobs() -> usize {
    let scale = std::env::var("CLI_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|&s| s > 0)
        .unwrap_or(1);
    TRAINJOBS_AT_SCALE_1 * scale
}

/// One pod as the API serves it (the engine bench's pod, without the
/// managedFields kubectl hides by default).
fn pod(job: usize, rank: usize) -> Value {
    let trainjob = format!("llm-{job}-s1");
    let name = format!("{trainjob}-node-0-{rank}-x{rank:04}");
    let failed = rank == 3 && job.is_multiple_of(10);
    let container_state = if failed {
        json!({"terminated": {"exitCode": 137, "reason": "OOMKilled", "startedAt": "2026-11-29T09:00:30Z", "finishedAt": "2026-11-29T10:00:00Z", "containerID": "containerd://abc"}})
    } else {
        json!({"running": {"startedAt": "2026-11-29T09:00:30Z"}})
    };
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name, "namespace": "team-a", "uid": format!("pod-{job}-{rank}"),
            "resourceVersion": "123456", "creationTimestamp": "2026-11-29T09:00:00Z",
            "generateName": format!("{trainjob}-node-0-{rank}-"),
            "labels": {
                "batch.kubernetes.io/controller-uid": "c0ffee", "batch.kubernetes.io/job-completion-index": rank.to_string(),
                "controller-uid": "c0ffee", "job-name": format!("{trainjob}-node-0"),
                "dispatch.phpboyscout.uk/job-id": format!("llm-{job}"), "dispatch.phpboyscout.uk/submission": "s1",
                "jobset.sigs.k8s.io/jobset-name": trainjob, "jobset.sigs.k8s.io/replicatedjob-name": "node",
                "jobset.sigs.k8s.io/restart-attempt": "0", "jobset.sigs.k8s.io/job-index": "0"
            },
            "annotations": {
                "dispatch.phpboyscout.uk/admission": "1", "batch.kubernetes.io/job-completion-index": rank.to_string(),
                "jobset.sigs.k8s.io/global-replicas": "16", "kubectl.kubernetes.io/default-container": "node"
            },
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": format!("{trainjob}-node-0"), "uid": "c0ffee", "controller": true, "blockOwnerDeletion": true}],
            "finalizers": ["batch.kubernetes.io/job-tracking"]
        },
        "spec": {
            "containers": [{
                "name": "node", "image": "registry.example.com/train/llm:2026.11", "imagePullPolicy": "IfNotPresent",
                "command": ["torchrun", "--nnodes=16", "--nproc-per-node=8", "train.py", "--config", "/etc/train/config.yaml"],
                "env": [{"name": "MASTER_ADDR", "value": format!("{trainjob}-node-0-0.{trainjob}")}, {"name": "WORLD_SIZE", "value": "128"},
                        {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": "hf", "key": "token"}}}],
                "resources": {"limits": {"nvidia.com/gpu": "8", "memory": "1500Gi"}, "requests": {"cpu": "90", "nvidia.com/gpu": "8", "memory": "1500Gi"}},
                "volumeMounts": [{"name": "config", "mountPath": "/etc/train"}, {"name": "kube-api-access-abcde", "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount", "readOnly": true}],
                "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"
            }],
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "nvidia.com/gpu.product", "operator": "In", "values": ["NVIDIA-H100-80GB-HBM3"]},
                                      {"key": "topology.kubernetes.io/zone", "operator": "In", "values": ["zone-a", "zone-b"]}]}]}}},
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": true, "hostname": format!("{trainjob}-node-0-{rank}"),
            "nodeName": format!("gpu-node-{}", (job * PODS_PER_JOB + rank) % 512), "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0, "restartPolicy": "Never", "schedulerName": "default-scheduler", "serviceAccountName": "default",
            "subdomain": trainjob, "terminationGracePeriodSeconds": 30,
            "tolerations": [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300},
                            {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}],
            "volumes": [{"name": "config", "configMap": {"name": "train-config", "defaultMode": 420}},
                        {"name": "kube-api-access-abcde", "projected": {"defaultMode": 420, "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                            {"downwardAPI": {"items": [{"path": "namespace", "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}}]}}]
        },
        "status": {
            "phase": if failed { "Failed" } else { "Running" },
            "conditions": [
                {"type": "PodReadyToStartContainers", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-29T09:00:20Z"},
                {"type": "Initialized", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-29T09:00:10Z"},
                {"type": "Ready", "status": if failed { "False" } else { "True" }, "lastProbeTime": null, "lastTransitionTime": "2026-11-29T09:00:31Z"},
                {"type": "ContainersReady", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-29T09:00:31Z"},
                {"type": "PodScheduled", "status": "True", "lastProbeTime": null, "lastTransitionTime": "2026-11-29T09:00:01Z"}
            ],
            "hostIP": "10.0.0.1", "hostIPs": [{"ip": "10.0.0.1"}], "podIP": "10.1.0.1", "podIPs": [{"ip": "10.1.0.1"}],
            "qosClass": "Guaranteed", "startTime": "2026-11-29T09:00:01Z",
            "containerStatuses": [{
                "name": "node", "ready": !failed, "restartCount": 0, "started": !failed,
                "image": "registry.example.com/train/llm:2026.11", "imageID": "registry.example.com/train/llm@sha256:0123456789abcdef",
                "containerID": "containerd://0123456789abcdef", "state": container_state, "lastState": {},
                "volumeMounts": [{"name": "config", "mountPath": "/etc/train"}]
            }]
        }
    })
}

fn trainjob(job: usize) -> Value {
    let failed = job.is_multiple_of(10);
    json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": format!("llm-{job}-s1"), "namespace": "team-a", "uid": format!("tj-{job}"),
            "creationTimestamp": "2026-11-29T09:00:00Z",
            "labels": {"dispatch.phpboyscout.uk/job-id": format!("llm-{job}"), "dispatch.phpboyscout.uk/submission": "s1"}},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": PODS_PER_JOB}},
        "status": {"conditions": if failed {
            json!([{"type": "Failed", "status": "True", "reason": "FailedJobs", "message": "jobset failed", "lastTransitionTime": "2026-11-29T10:00:05Z"}])
        } else { json!([]) }}
    })
}

fn jobset(job: usize) -> Value {
    let name = format!("llm-{job}-s1");
    json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "namespace": "team-a", "uid": format!("js-{job}"),
            "ownerReferences": [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": name, "uid": format!("tj-{job}"), "controller": true}]},
        "spec": {"replicatedJobs": [{"name": "node", "replicas": 1}]},
        "status": {"restarts": 0}
    })
}

/// Writes the dump to `path`, one item per line (the whole `Value` at once
/// would cost more memory than the file), and returns its size in bytes.
fn write_dump(path: &Path) -> std::io::Result<u64> {
    let mut out = BufWriter::new(File::create(path)?);
    write!(out, "{{\"apiVersion\":\"v1\",\"kind\":\"List\",\"items\":[")?;
    let mut first = true;
    let mut item = |out: &mut BufWriter<File>, value: Value| -> std::io::Result<()> {
        if !first {
            write!(out, ",")?;
        }
        first = false;
        writeln!(out)?;
        serde_json::to_writer(&mut *out, &value)?;
        Ok(())
    };
    for job in 0..trainjobs() {
        item(&mut out, trainjob(job))?;
    }
    for job in 0..trainjobs() {
        item(&mut out, jobset(job))?;
    }
    for job in 0..trainjobs() {
        for rank in 0..PODS_PER_JOB {
            item(&mut out, pod(job, rank))?;
        }
    }
    writeln!(out, "\n],\"metadata\":{{\"resourceVersion\":\"\"}}}}")?;
    out.flush()?;
    Ok(std::fs::metadata(path)?.len())
}

/// The first `jq` on the PATH, else `/usr/bin/jq`.
fn find_jq() -> Option<PathBuf> {
    std::env::var_os("PATH")
        .into_iter()
        .flat_map(|paths| std::env::split_paths(&paths).collect::<Vec<_>>())
        .map(|dir| dir.join("jq"))
        .chain([PathBuf::from("/usr/bin/jq")])
        .find(|path| path.is_file())
}

/// Runs `command` with its output to `/dev/null`, timed.
fn timed(command: &mut Command) -> Result<Duration, String> {
    let null = File::create("/dev/null").map_err(|e| format!("/dev/null: {e}"))?;
    let start = Instant::now();
    let status = command
        .stdout(Stdio::from(null))
        .stderr(Stdio::inherit())
        .status()
        .map_err(|e| format!("{command:?}: {e}"))?;
    let elapsed = start.elapsed();
    if !status.success() {
        return Err(format!("{command:?} failed: {status}"));
    }
    Ok(elapsed)
}

fn median(mut times: Vec<Duration>) -> Duration {
    times.sort();
    times.get(times.len() / 2).copied().unwrap_or_default()
}

fn millis(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn measure(dump: &Path, jq: &Path) -> Result<(), String> {
    let cli = env!("CARGO_BIN_EXE_dispatch-dash");
    let classify = || {
        let mut command = Command::new(cli);
        command.arg("classify").arg(dump);
        command
    };
    let jq_dot = || {
        let mut command = Command::new(jq);
        command.arg(".").arg(dump);
        command
    };

    // Before timing anything: the CLI reads this dump and prints a header
    // and one row per TrainJob, or the timing would measure an error path.
    let output = classify()
        .output()
        .map_err(|e| format!("{cli} classify: {e}"))?;
    if !output.status.success() {
        return Err(format!(
            "{cli} classify failed: {}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        ));
    }
    let rows = output
        .stdout
        .split(|&b| b == b'\n')
        .filter(|l| !l.is_empty())
        .count();
    if rows != trainjobs() + 1 {
        return Err(format!(
            "classify printed {rows} lines, not a header and {} rows",
            trainjobs()
        ));
    }
    // Warm the page cache and both programs once, untimed.
    timed(&mut jq_dot())?;

    let mut cli_times = Vec::with_capacity(ROUNDS);
    let mut jq_times = Vec::with_capacity(ROUNDS);
    for _ in 0..ROUNDS {
        cli_times.push(timed(&mut classify())?);
        jq_times.push(timed(&mut jq_dot())?);
    }
    let cli_ms = millis(median(cli_times));
    let jq_ms = millis(median(jq_times));
    let ratio = cli_ms / jq_ms;
    println!(
        "BUDGET cli-vs-jq: cli {cli_ms:.1} ms jq {jq_ms:.1} ms ratio {ratio:.4} goal {GOAL} {}",
        if ratio <= GOAL { "PASS" } else { "MISS" }
    );
    let peak = peak_rss_bytes(&mut classify())?;
    let input = std::fs::metadata(dump)
        .map_err(|e| format!("{}: {e}", dump.display()))?
        .len();
    let ratio = peak as f64 / input as f64;
    println!(
        "BUDGET cli-rss-vs-input: peak {:.1} MB input {:.1} MB ratio {ratio:.2} goal {RSS_GOAL} {}",
        peak as f64 / 1e6,
        input as f64 / 1e6,
        if ratio <= RSS_GOAL { "PASS" } else { "MISS" }
    );
    Ok(())
}

/// Runs `command` to `/dev/null` and gives the most memory it held at
/// once: its `VmHWM`, sampled every millisecond until it exits. The mark
/// only rises, so a sample misses no more than the last millisecond.
fn peak_rss_bytes(command: &mut Command) -> Result<u64, String> {
    let null = File::create("/dev/null").map_err(|e| format!("/dev/null: {e}"))?;
    let mut child = command
        .stdout(Stdio::from(null))
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| format!("{command:?}: {e}"))?;
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            if !status.success() {
                return Err(format!("{command:?} failed: {status}"));
            }
            break;
        }
        let hwm = std::fs::read_to_string(&status_file).ok().and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        });
        peak_kib = peak_kib.max(hwm.unwrap_or(0));
        std::thread::sleep(Duration::from_millis(1));
    }
    if peak_kib == 0 {
        return Err("no VmHWM was read: is /proc mounted?".into());
    }
    Ok(peak_kib * 1024)
}

fn main() -> ExitCode {
    // `cargo bench` passes `--bench`; there is nothing to filter.
    // `CLI_BENCH_WRITE_ONLY=PATH` writes the dump there and stops: the
    // offline page's benchmark (tests/e2e/bench/offline.mjs) picks it.
    if let Some(path) = std::env::var_os("CLI_BENCH_WRITE_ONLY").map(PathBuf::from) {
        return match write_dump(&path) {
            Ok(bytes) => {
                println!("wrote {} ({bytes} bytes)", path.display());
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("cli bench: writing {}: {e}", path.display());
                ExitCode::FAILURE
            }
        };
    }
    let Some(jq) = find_jq() else {
        eprintln!(
            "cli bench: jq is not installed (not on PATH nor /usr/bin/jq): nothing to compare with"
        );
        return ExitCode::FAILURE;
    };
    // `CLI_BENCH_DUMP=PATH` writes the dump there and keeps it, to profile
    // the CLI on the very input it is timed on.
    let kept = std::env::var_os("CLI_BENCH_DUMP").map(PathBuf::from);
    let dump = kept.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!(
            "dispatch-dash-cli-bench-{}.json",
            std::process::id()
        ))
    });
    let result = write_dump(&dump)
        .map_err(|e| format!("writing {}: {e}", dump.display()))
        .and_then(|bytes| {
            println!(
                "input: {:.1} MB kubectl List dump, {} TrainJobs, {} pods; {ROUNDS} rounds each, medians, {}",
                bytes as f64 / 1e6,
                trainjobs(),
                trainjobs() * PODS_PER_JOB,
                jq.display()
            );
            measure(&dump, &jq)
        });
    if kept.is_none() {
        let _ = std::fs::remove_file(&dump);
    }
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cli bench: {e}");
            ExitCode::FAILURE
        }
    }
}
