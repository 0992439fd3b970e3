//! End-to-end classification of a big namespace, against the parse-only floor.
//!
//! The snapshot holds 1,000 TrainJobs with 16 pods each, every pod a full
//! realistic object as the API serves it (managedFields, containers with env
//! and volumes, conditions, container statuses). In the same run we time
//! `serde_json::from_slice::<serde_json::Value>` on the same bytes: the goal is
//! end-to-end `classify` in at most 1.0× that time, which typed views make
//! possible by skipping what the rules never read. Results are reported as a
//! ratio because these machines are noisy; `cargo bench -p classify-wasm`
//! prints it at the end.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{criterion_group, Criterion, Throughput};
use serde_json::{json, Value};

const TRAINJOBS: usize = 1_000;
const PODS_PER_JOB: usize = 16;

fn managed_fields(manager: &str) -> Value {
    json!([
        {
            "manager": manager, "operation": "Update", "apiVersion": "v1",
            "time": "2026-11-29T09:00:01Z", "fieldsType": "FieldsV1",
            "fieldsV1": {
                "f:metadata": {"f:annotations": {".": {}, "f:dispatch.phpboyscout.uk/admission": {}},
                    "f:labels": {".": {}, "f:dispatch.phpboyscout.uk/job-id": {}, "f:dispatch.phpboyscout.uk/submission": {},
                        "f:jobset.sigs.k8s.io/jobset-name": {}, "f:jobset.sigs.k8s.io/restart-attempt": {}},
                    "f:ownerReferences": {".": {}, "k:{\"uid\":\"00000000-0000-0000-0000-000000000000\"}": {}}},
                "f:spec": {"f:containers": {"k:{\"name\":\"node\"}": {".": {}, "f:command": {}, "f:env": {".": {},
                    "k:{\"name\":\"MASTER_ADDR\"}": {".": {}, "f:name": {}, "f:value": {}},
                    "k:{\"name\":\"WORLD_SIZE\"}": {".": {}, "f:name": {}, "f:value": {}}},
                    "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {".": {}, "f:limits": {}, "f:requests": {}}}},
                    "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:subdomain": {}, "f:tolerations": {}}
            }
        },
        {
            "manager": "kubelet", "operation": "Update", "apiVersion": "v1",
            "time": "2026-11-29T09:01:00Z", "fieldsType": "FieldsV1", "subresource": "status",
            "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"ContainersReady\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
                "k:{\"type\":\"Initialized\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}},
                "k:{\"type\":\"Ready\"}": {".": {}, "f:lastProbeTime": {}, "f:lastTransitionTime": {}, "f:status": {}, "f:type": {}}},
                "f:containerStatuses": {}, "f:hostIP": {}, "f:phase": {}, "f:podIP": {}, "f:podIPs": {".": {}, "k:{\"ip\":\"10.0.0.1\"}": {".": {}, "f:ip": {}}}, "f:startTime": {}}}
        }
    ])
}

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
            "finalizers": ["batch.kubernetes.io/job-tracking"],
            "managedFields": managed_fields("kube-controller-manager")
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
            "dnsPolicy": "ClusterFirst", "enableServiceLinks": true, "hostname": format!("{trainjob}-node-0-{rank}"),
            "nodeName": format!("gpu-node-{}", (job * PODS_PER_JOB + rank) % 512), "preemptionPolicy": "PreemptLowerPriority",
            "priority": 0, "restartPolicy": "Never", "schedulerName": "default-scheduler", "serviceAccountName": "default",
            "subdomain": trainjob, "terminationGracePeriodSeconds": 30,
            "tolerations": [{"effect": "NoExecute", "key": "node.kubernetes.io/not-ready", "operator": "Exists", "tolerationSeconds": 300},
                            {"effect": "NoExecute", "key": "node.kubernetes.io/unreachable", "operator": "Exists", "tolerationSeconds": 300},
                            {"effect": "NoSchedule", "key": "nvidia.com/gpu", "operator": "Exists"}],
            "volumes": [{"name": "config", "configMap": {"name": "train-config", "defaultMode": 420}},
                        {"name": "kube-api-access-abcde", "projected": {"defaultMode": 420, "sources": [{"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}]}}]
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

fn snapshot_bytes() -> Vec<u8> {
    let mut items = Vec::with_capacity(TRAINJOBS * (PODS_PER_JOB + 2));
    for job in 0..TRAINJOBS {
        let name = format!("llm-{job}-s1");
        let uid = format!("tj-{job}");
        let failed = job.is_multiple_of(10);
        items.push(json!({
            "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": name, "namespace": "team-a", "uid": uid, "creationTimestamp": "2026-11-29T09:00:00Z",
                "labels": {"dispatch.phpboyscout.uk/job-id": format!("llm-{job}"), "dispatch.phpboyscout.uk/submission": "s1"},
                "managedFields": managed_fields("dispatch")},
            "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": PODS_PER_JOB}},
            "status": {"conditions": if failed {
                json!([{"type": "Failed", "status": "True", "reason": "FailedJobs", "message": "jobset failed", "lastTransitionTime": "2026-11-29T10:00:05Z"}])
            } else { json!([]) }}
        }));
        items.push(json!({
            "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
            "metadata": {"name": name, "namespace": "team-a", "uid": format!("js-{job}"),
                "ownerReferences": [{"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob", "name": name, "uid": uid, "controller": true}],
                "managedFields": managed_fields("trainer")},
            "spec": {"replicatedJobs": [{"name": "node", "replicas": 1}]},
            "status": {"restarts": 0}
        }));
        for rank in 0..PODS_PER_JOB {
            items.push(pod(job, rank));
        }
    }
    let snapshot =
        json!({"kind": "Snapshot", "mode": "plain", "nodesReadable": false, "items": items});
    serde_json::to_vec(&snapshot).expect("serializes")
}

/// Median of `runs` timings of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn benches(c: &mut Criterion) {
    let bytes = snapshot_bytes();
    let text = std::str::from_utf8(&bytes).expect("UTF-8");
    let observations = classify_wasm::classify(text, Default::default())
        .expect("classifies")
        .len();
    assert_eq!(observations, TRAINJOBS);

    let mut group = c.benchmark_group("namespace-16k-pods");
    group.sample_size(10);
    group.measurement_time(Duration::from_secs(20));
    group.throughput(Throughput::Bytes(bytes.len() as u64));
    group.bench_function("serde_json Value parse (floor)", |b| {
        b.iter(|| black_box(serde_json::from_slice::<Value>(black_box(&bytes)).expect("parses")))
    });
    group.bench_function("classify end to end", |b| {
        b.iter(|| {
            black_box(
                classify_wasm::classify_bytes(black_box(&bytes), Default::default())
                    .expect("classifies"),
            )
        })
    });
    let parsed = classify_wasm::Parsed::new(text).expect("parses");
    group.bench_function("rules on a parsed snapshot", |b| {
        b.iter(|| black_box(parsed.classify(Default::default()).expect("classifies")))
    });
    group.finish();

    // The ratio, measured here in one run, interleaved so that noise hits both.
    let mut floor = Vec::new();
    let mut end_to_end = Vec::new();
    for _ in 0..3 {
        floor.push(median(3, || {
            drop(black_box(serde_json::from_slice::<Value>(&bytes)))
        }));
        end_to_end.push(median(3, || {
            drop(black_box(classify_wasm::classify_bytes(
                &bytes,
                Default::default(),
            )))
        }));
    }
    floor.sort();
    end_to_end.sort();
    let rules = median(5, || drop(black_box(parsed.classify(Default::default()))));
    println!();
    println!(
        "input: {:.1} MB, {} TrainJobs, {} pods",
        bytes.len() as f64 / 1e6,
        TRAINJOBS,
        TRAINJOBS * PODS_PER_JOB
    );
    println!("serde_json::Value parse (floor): {:?}", floor[1]);
    println!("classify end to end:             {:?}", end_to_end[1]);
    println!(
        "ratio end-to-end / floor:        {:.2} (goal <= 1.00)",
        end_to_end[1].as_secs_f64() / floor[1].as_secs_f64()
    );
    println!(
        "rules on a parsed snapshot:      {:?} ({:.2} µs per observation)",
        rules,
        rules.as_secs_f64() * 1e6 / observations as f64
    );
}

criterion_group!(group, benches);

fn main() {
    group();
    Criterion::default().configure_from_args().final_summary();
}
