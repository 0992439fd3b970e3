//! Pure builders for the objects the controllers write, shaped like the
//! golden cases in the classification spec. Used by the scenario driver, by
//! tests and by benchmarks that need realistic data without a cluster.

use serde_json::{json, Value};

use crate::field;

/// The label and annotation keys, from the engine that reads them: one
/// source of truth for what the scenario writes and what is classified.
pub use classify_wasm::keys::{
    ADMISSION, ADMISSION_GATED_BY as GATED_BY, HOLD_INSTANCE, JOBSET_NAME, JOB_ID,
    JOB_UID as KUEUE_JOB_UID, OPEN_GATE, QUEUE_NAME, RESTART_ATTEMPT, SUBMISSION,
};

/// Identifies one TrainJob: `<job_id>-<submission>` in `namespace`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRef {
    /// Namespace of the TrainJob and everything it owns.
    pub namespace: String,
    /// The dispatch job id (`llm-7`).
    pub job_id: String,
    /// The submission within the job (`s3`).
    pub submission: String,
}

impl JobRef {
    /// A reference to `<job_id>-<submission>` in `namespace`.
    pub fn new(namespace: &str, job_id: &str, submission: &str) -> Self {
        JobRef {
            namespace: namespace.into(),
            job_id: job_id.into(),
            submission: submission.into(),
        }
    }

    /// The TrainJob's (and its JobSet's) name.
    pub fn name(&self) -> String {
        format!("{}-{}", self.job_id, self.submission)
    }
}

/// A status condition.
pub fn condition(type_: &str, status: &str, reason: &str, message: &str, time: &str) -> Value {
    json!({
        "type": type_,
        "status": status,
        "lastTransitionTime": time,
        "reason": reason,
        "message": message,
    })
}

/// An owner reference to the TrainJob `name` of `uid`, as controller.
pub fn owner_trainjob(name: &str, uid: &str) -> Value {
    json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "name": name,
        "uid": uid,
        "controller": true,
        "blockOwnerDeletion": true,
    })
}

/// A TrainJob labelled with its job-id and submission. `queue` (Kueue mode)
/// adds the queue-name label; Kueue mode TrainJobs start suspended.
pub fn trainjob(job: &JobRef, num_nodes: usize, queue: Option<&str>, suspend: bool) -> Value {
    let mut labels = json!({ JOB_ID: job.job_id, SUBMISSION: job.submission });
    if let Some(q) = queue {
        field::set(&mut labels, &[QUEUE_NAME], json!(q));
    }
    json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainJob",
        "metadata": {
            "name": job.name(),
            "namespace": job.namespace,
            "labels": labels,
        },
        "spec": {
            "runtimeRef": {"name": "torch-distributed"},
            "trainer": {"numNodes": num_nodes},
            "suspend": suspend,
        },
        "status": {"conditions": []},
    })
}

/// The TrainingRuntime copy the Trainer makes for one TrainJob: named like
/// it, labelled with the job-id and owned by it.
pub fn runtime_copy(job: &JobRef, trainjob_uid: &str) -> Value {
    json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1",
        "kind": "TrainingRuntime",
        "metadata": {
            "name": job.name(),
            "namespace": job.namespace,
            "labels": { JOB_ID: job.job_id },
            "ownerReferences": [owner_trainjob(&job.name(), trainjob_uid)],
        },
        "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}},
    })
}

/// The JobSet of a TrainJob (same name, controlled by it).
pub fn jobset(job: &JobRef, trainjob_uid: &str, replicas: usize, restarts: u32) -> Value {
    json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": job.name(),
            "namespace": job.namespace,
            "labels": { JOB_ID: job.job_id },
            "ownerReferences": [owner_trainjob(&job.name(), trainjob_uid)],
        },
        "spec": {
            "replicatedJobs": [{"name": "node", "replicas": 1,
                "template": {"spec": {"parallelism": replicas, "completions": replicas}}}],
        },
        "status": {"restarts": restarts, "conditions": []},
    })
}

/// A Kueue Workload for a TrainJob (labelled with its UID, owned by it).
pub fn workload(job: &JobRef, name: &str, trainjob_uid: &str, queue: &str, count: usize) -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {
            "name": name,
            "namespace": job.namespace,
            "labels": { KUEUE_JOB_UID: trainjob_uid },
            "ownerReferences": [owner_trainjob(&job.name(), trainjob_uid)],
        },
        "spec": {
            "queueName": queue,
            "podSets": [super::queues::pod_set(count)],
            "active": true,
        },
        "status": {"conditions": []},
    })
}

/// Where a pod of a TrainJob sits: its rank, execution counters and name
/// suffix.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodRef {
    /// Rank within the replicated job (`node-0-<rank>`).
    pub rank: usize,
    /// Admission counter A.
    pub admission: u32,
    /// JobSet restart attempt J.
    pub restart_attempt: u32,
    /// The 5-character random suffix of the generated name.
    pub suffix: String,
}

impl PodRef {
    /// The pod name: `<trainjob>-node-0-<rank>-<suffix>`.
    pub fn name(&self, job: &JobRef) -> String {
        format!("{}-node-0-{}-{}", job.name(), self.rank, self.suffix)
    }
}

/// A freshly created, not yet scheduled pod of a TrainJob's JobSet.
pub fn pod(job: &JobRef, p: &PodRef, created: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": p.name(job),
            "namespace": job.namespace,
            "creationTimestamp": created,
            "labels": {
                JOBSET_NAME: job.name(),
                "jobset.sigs.k8s.io/replicatedjob-name": "node",
                RESTART_ATTEMPT: p.restart_attempt.to_string(),
                "batch.kubernetes.io/job-completion-index": p.rank.to_string(),
                JOB_ID: job.job_id,
                SUBMISSION: job.submission,
            },
            "annotations": { ADMISSION: p.admission.to_string() },
            "ownerReferences": [{
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": format!("{}-node-0", job.name()),
                "uid": format!("job-{}-{}", job.name(), p.restart_attempt),
                "controller": true,
                "blockOwnerDeletion": true,
            }],
        },
        "spec": {
            "containers": [{"name": "node", "image": "ghcr.io/example/train:1",
                "resources": {"limits": {"nvidia.com/gpu": "8"}}}],
            "restartPolicy": "Never",
        },
        "status": {
            "phase": "Pending",
            "conditions": [condition("PodScheduled", "False", "Unschedulable",
                "0/8 nodes are available: 8 Insufficient nvidia.com/gpu.", created)],
        },
    })
}

/// The pod bound to `node` with its node container running.
pub fn pod_running(mut pod: Value, node: &str, time: &str) -> Value {
    field::set(&mut pod, &["spec", "nodeName"], json!(node));
    let status = json!({
        "phase": "Running",
        "conditions": [
            condition("PodScheduled", "True", "", "", time),
            condition("Ready", "True", "", "", time),
        ],
        "containerStatuses": [container_status(true, json!({"running": {"startedAt": time}}))],
    });
    field::set(&mut pod, &["status"], status);
    pod
}

/// The status of the `node` container (k8s-openapi requires image fields).
fn container_status(ready: bool, state: Value) -> Value {
    json!({
        "name": "node",
        "image": "ghcr.io/example/train:1",
        "imageID": "ghcr.io/example/train@sha256:4f1c0b2e",
        "ready": ready,
        "restartCount": 0,
        "started": ready,
        "state": state,
    })
}

/// The pod with its node container terminated (`Succeeded` on exit 0, else
/// `Failed`).
pub fn pod_terminated(
    mut pod: Value,
    reason: &str,
    exit_code: i64,
    message: &str,
    time: &str,
) -> Value {
    let started = pod
        .pointer("/status/containerStatuses/0/state/running/startedAt")
        .cloned()
        .unwrap_or_else(|| json!(time));
    let mut terminated = json!({"exitCode": exit_code, "reason": reason,
        "startedAt": started, "finishedAt": time});
    if !message.is_empty() {
        field::set(&mut terminated, &["message"], json!(message));
    }
    let phase = if exit_code == 0 {
        "Succeeded"
    } else {
        "Failed"
    };
    field::set(&mut pod, &["status", "phase"], json!(phase));
    field::set(
        &mut pod,
        &["status", "containerStatuses"],
        json!([container_status(false, json!({"terminated": terminated}))]),
    );
    if let Some(conds) =
        field::at_mut(&mut pod, &["status", "conditions"]).and_then(Value::as_array_mut)
    {
        conds.retain(|c| c["type"] != "Ready");
        conds.push(condition("Ready", "False", "PodCompleted", "", time));
    }
    pod
}

/// Adds a `DisruptionTarget=True` condition (why the pod is being removed).
pub fn pod_disrupted(mut pod: Value, reason: &str, message: &str, time: &str) -> Value {
    if !field::at(&pod, &["status", "conditions"]).is_array() {
        field::set(&mut pod, &["status", "conditions"], json!([]));
    }
    if let Some(conds) =
        field::at_mut(&mut pod, &["status", "conditions"]).and_then(Value::as_array_mut)
    {
        conds.retain(|c| c["type"] != "DisruptionTarget");
        conds.push(condition("DisruptionTarget", "True", reason, message, time));
    }
    pod
}

/// Marks the pod terminating (graceful deletion in progress).
pub fn pod_terminating(mut pod: Value, time: &str) -> Value {
    field::set(&mut pod, &["metadata", "deletionTimestamp"], json!(time));
    field::set(
        &mut pod,
        &["metadata", "deletionGracePeriodSeconds"],
        json!(30),
    );
    pod
}

/// A GPU Node whose `Ready` condition has `status` (`True`, `False`,
/// `Unknown`).
pub fn node(name: &str, ready: &str, time: &str) -> Value {
    let (reason, message) = match ready {
        "True" => ("KubeletReady", "kubelet is posting ready status"),
        "False" => ("KubeletNotReady", "container runtime is down"),
        _ => ("NodeStatusUnknown", "Kubelet stopped posting node status."),
    };
    json!({
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true"},
        },
        "spec": {},
        "status": {
            "capacity": {"nvidia.com/gpu": "8"},
            "conditions": [condition("Ready", ready, reason, message, time)],
        },
    })
}

/// Sets (replacing any entry of that type) a condition in `obj.status.conditions`.
pub fn set_condition(obj: &mut Value, cond: Value) {
    if !field::at(obj, &["status"]).is_object() {
        field::set(obj, &["status"], json!({}));
    }
    if !field::at(obj, &["status", "conditions"]).is_array() {
        field::set(obj, &["status", "conditions"], json!([]));
    }
    if let Some(conds) = field::at_mut(obj, &["status", "conditions"]).and_then(Value::as_array_mut)
    {
        match conds
            .iter_mut()
            .find(|c| c["type"] == *field::at(&cond, &["type"]))
        {
            Some(c) => *c = cond,
            None => conds.push(cond),
        }
    }
}

/// Removes a condition type from `obj.status.conditions`.
pub fn remove_condition(obj: &mut Value, type_: &str) {
    if let Some(conds) = field::at_mut(obj, &["status", "conditions"]).and_then(Value::as_array_mut)
    {
        conds.retain(|c| c["type"] != type_);
    }
}
