//! The projection of a Kubernetes object that the server stores: exactly the
//! fields the engine reads (CLASSIFICATION.md sections 1 to 11), type-checked
//! on the way in, and nothing else.
//!
//! Why so strict: a pod spec carries env values, args and volume sources, and
//! annotations such as `kubectl.kubernetes.io/last-applied-configuration`
//! carry a whole spec. None of it may ever leave the server, and none of it
//! needs to be held in memory. Of a pod spec only `nodeName` and
//! `schedulingGates` are kept; of labels and annotations only the keys the
//! engine reads. A field of the wrong type is dropped rather than kept, so
//! the stored projection is always valid engine input.

use std::sync::Arc;

use classify_wasm::{fields, keys};
use serde_json::{Map, Value};

/// The kinds the server watches and stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum ObjectKind {
    /// `trainer.kubeflow.org/v1alpha1` TrainJob.
    TrainJob,
    /// `jobset.x-k8s.io/v1alpha2` JobSet.
    JobSet,
    /// `kueue.x-k8s.io` Workload, `v1beta2` or `v1beta1` (Kueue mode only).
    Workload,
    /// `trainer.kubeflow.org/v1alpha1` TrainingRuntime (a TrainJob's runtime copy).
    TrainingRuntime,
    /// core/v1 Pod.
    Pod,
    /// core/v1 Node (cluster-scoped).
    Node,
    /// core/v1 Namespace (cluster-scoped), watched only with
    /// `--all-namespaces`, so the set of namespaces served is the cluster's
    /// and not guessed from the objects seen. Never part of a snapshot.
    Namespace,
}

impl ObjectKind {
    /// Every kind a snapshot holds, in the order it lists them (not
    /// [`ObjectKind::Namespace`], which only says which namespaces exist).
    pub const ALL: [ObjectKind; 6] = [
        ObjectKind::TrainJob,
        ObjectKind::JobSet,
        ObjectKind::Workload,
        ObjectKind::TrainingRuntime,
        ObjectKind::Pod,
        ObjectKind::Node,
    ];

    /// The `kind` field.
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::TrainJob => "TrainJob",
            ObjectKind::JobSet => "JobSet",
            ObjectKind::Workload => "Workload",
            ObjectKind::TrainingRuntime => "TrainingRuntime",
            ObjectKind::Pod => "Pod",
            ObjectKind::Node => "Node",
            ObjectKind::Namespace => "Namespace",
        }
    }

    /// The `apiVersion` a projection carries when the version watched is
    /// not known (the preferred one; [`project_at`] writes the one watched).
    pub fn api_version(self) -> &'static str {
        match self {
            ObjectKind::TrainJob | ObjectKind::TrainingRuntime => "trainer.kubeflow.org/v1alpha1",
            ObjectKind::JobSet => "jobset.x-k8s.io/v1alpha2",
            ObjectKind::Workload => "kueue.x-k8s.io/v1beta2",
            ObjectKind::Pod | ObjectKind::Node | ObjectKind::Namespace => "v1",
        }
    }

    /// The API group (`""` for core).
    pub fn group(self) -> &'static str {
        match self.api_version().split_once('/') {
            Some((group, _)) => group,
            None => "",
        }
    }

    /// The version within the group.
    pub fn version(self) -> &'static str {
        match self.api_version().split_once('/') {
            Some((_, version)) => version,
            None => self.api_version(),
        }
    }

    /// The plural resource name used in API paths and RBAC rules.
    pub fn plural(self) -> &'static str {
        match self {
            ObjectKind::TrainJob => "trainjobs",
            ObjectKind::JobSet => "jobsets",
            ObjectKind::Workload => "workloads",
            ObjectKind::TrainingRuntime => "trainingruntimes",
            ObjectKind::Pod => "pods",
            ObjectKind::Node => "nodes",
            ObjectKind::Namespace => "namespaces",
        }
    }

    /// Reads a kind as a URL names it: the kind, its plural or its singular,
    /// in any case (`TrainJob`, `trainjobs`, `pod`).
    pub fn parse(text: &str) -> Option<ObjectKind> {
        let lower = text.to_ascii_lowercase();
        ObjectKind::ALL
            .into_iter()
            .find(|k| lower == k.name().to_ascii_lowercase() || lower == k.plural())
    }

    /// Whether objects of this kind live in a namespace.
    pub fn namespaced(self) -> bool {
        !matches!(self, ObjectKind::Node | ObjectKind::Namespace)
    }
}

/// One stored object: its identity, the few fields the server indexes by,
/// and its projection as JSON text, ready to be spliced into a snapshot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredObject {
    /// Its kind.
    pub kind: ObjectKind,
    /// Its namespace (`""` for a Node).
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Its UID (`""` when it has none).
    pub uid: String,
    /// The job-id label, when present and non-empty.
    pub job_id: Option<String>,
    /// The submission label, when present and non-empty.
    pub submission: Option<String>,
    /// The `jobset.sigs.k8s.io/jobset-name` label, when present and non-empty.
    pub jobset_name: Option<String>,
    /// The `kueue.x-k8s.io/job-uid` label (Workloads), when present.
    pub job_uid: Option<String>,
    /// The UIDs of its owner references of kind TrainJob, in order.
    pub trainjob_owners: Vec<String>,
    /// A pod's `spec.nodeName`, when present and non-empty.
    pub node_name: Option<String>,
    /// The projection, as compact JSON text.
    pub json: Arc<str>,
}

impl StoredObject {
    /// The projected object as a JSON value (for responses that embed it).
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.json).unwrap_or(Value::Null)
    }

    /// Bytes this object occupies in memory, approximately: the struct, its
    /// strings and the projection text.
    pub fn heap_bytes(&self) -> usize {
        let strings = [
            Some(&self.namespace),
            Some(&self.name),
            Some(&self.uid),
            self.job_id.as_ref(),
            self.submission.as_ref(),
            self.jobset_name.as_ref(),
            self.job_uid.as_ref(),
            self.node_name.as_ref(),
        ];
        std::mem::size_of::<Self>()
            + strings
                .iter()
                .flatten()
                .map(|s| s.capacity())
                .sum::<usize>()
            + self
                .trainjob_owners
                .iter()
                .map(|s| s.capacity() + 24)
                .sum::<usize>()
            + self.json.len()
            + 16
    }
}

/// Projects an object of `kind`, as the API serves it, to what the engine
/// reads. Returns `None` for a pod that neither carries a job-id nor a
/// jobset-name label: no TrainJob can read it and it is no orphan, so it is
/// not stored at all.
pub fn project(kind: ObjectKind, object: &Value) -> Option<StoredObject> {
    project_at(kind, kind.api_version(), object)
}

/// [`project`] for an object read at `api_version` (the version watched,
/// which discovery chose; the engine reads a kind the same in each).
pub fn project_at(kind: ObjectKind, api_version: &str, object: &Value) -> Option<StoredObject> {
    let mut out = Map::new();
    out.insert("apiVersion".into(), Value::from(api_version));
    out.insert("kind".into(), Value::from(kind.name()));
    let meta = object.get("metadata").unwrap_or(&Value::Null);
    let meta_out = if kind == ObjectKind::Namespace {
        // Only its existence matters: no labels, no annotations.
        pick_strings(meta, &["name", "uid"])
    } else {
        project_metadata(meta)
    };
    out.insert("metadata".into(), Value::Object(meta_out));
    let spec = object.get("spec").unwrap_or(&Value::Null);
    let status = object.get("status").unwrap_or(&Value::Null);
    let mut spec_out = Map::new();
    let mut status_out = Map::new();
    match kind {
        ObjectKind::TrainJob => {
            copy_bool(spec, "suspend", &mut spec_out);
            copy_conditions(status, &mut status_out);
        }
        ObjectKind::JobSet => copy_integer(status, "restarts", &mut status_out),
        ObjectKind::Workload => {
            copy_bool(spec, "active", &mut spec_out);
            copy_conditions(status, &mut status_out);
            if let Some(checks) = status.get("admissionChecks").and_then(Value::as_array) {
                let checks = checks
                    .iter()
                    .filter(|c| c.is_object())
                    .map(|c| Value::Object(pick_strings(c, &["name", "state", "message"])))
                    .collect();
                status_out.insert("admissionChecks".into(), Value::Array(checks));
            }
        }
        ObjectKind::TrainingRuntime | ObjectKind::Namespace => {}
        ObjectKind::Node => copy_conditions(status, &mut status_out),
        ObjectKind::Pod => {
            copy_string(spec, "nodeName", &mut spec_out);
            if let Some(gates) = spec.get("schedulingGates").and_then(Value::as_array) {
                let gates = gates
                    .iter()
                    .filter(|g| g.is_object())
                    .map(|g| Value::Object(pick_strings(g, &["name"])))
                    .collect();
                spec_out.insert("schedulingGates".into(), Value::Array(gates));
            }
            copy_string(status, "phase", &mut status_out);
            copy_conditions(status, &mut status_out);
            let node_container = status
                .get("containerStatuses")
                .and_then(Value::as_array)
                .and_then(|all| {
                    all.iter()
                        .find(|c| c.get("name").and_then(Value::as_str) == Some("node"))
                });
            if let Some(container) = node_container {
                status_out.insert(
                    "containerStatuses".into(),
                    Value::Array(vec![project_node_container(container)]),
                );
            }
        }
    }
    if !spec_out.is_empty() {
        out.insert("spec".into(), Value::Object(spec_out));
    }
    if !status_out.is_empty() {
        out.insert("status".into(), Value::Object(status_out));
    }
    let json: Arc<str> = Value::Object(out).to_string().into();
    let meta_str = |key: &str| {
        meta.get(key)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let label = |key: &str| {
        meta.get("labels")
            .and_then(|l| l.get(key))
            .and_then(Value::as_str)
            .filter(|v| !v.is_empty())
            .map(str::to_string)
    };
    let stored = StoredObject {
        kind,
        namespace: if kind.namespaced() {
            meta_str("namespace")
        } else {
            String::new()
        },
        name: meta_str("name"),
        uid: meta_str("uid"),
        job_id: label(keys::JOB_ID),
        submission: label(keys::SUBMISSION),
        jobset_name: label(keys::JOBSET_NAME),
        job_uid: label(keys::JOB_UID),
        trainjob_owners: meta
            .get("ownerReferences")
            .and_then(Value::as_array)
            .map(|owners| {
                owners
                    .iter()
                    .filter(|o| o.get("kind").and_then(Value::as_str) == Some("TrainJob"))
                    .filter_map(|o| o.get("uid").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        node_name: spec
            .get("nodeName")
            .and_then(Value::as_str)
            .filter(|n| !n.is_empty() && kind == ObjectKind::Pod)
            .map(str::to_string),
        json,
    };
    if kind == ObjectKind::Pod && stored.job_id.is_none() && stored.jobset_name.is_none() {
        return None;
    }
    Some(stored)
}

fn project_metadata(meta: &Value) -> Map<String, Value> {
    let mut out = pick_strings(
        meta,
        &[
            "name",
            "namespace",
            "uid",
            "creationTimestamp",
            "deletionTimestamp",
        ],
    );
    for (field, kept) in [
        ("labels", &fields::LABELS_READ[..]),
        ("annotations", &fields::ANNOTATIONS_READ[..]),
    ] {
        let picked = pick_strings(meta.get(field).unwrap_or(&Value::Null), kept);
        if !picked.is_empty() {
            out.insert(field.into(), Value::Object(picked));
        }
    }
    if let Some(owners) = meta.get("ownerReferences").and_then(Value::as_array) {
        let owners: Vec<Value> = owners
            .iter()
            .filter(|o| o.is_object())
            .map(|o| {
                let mut owner = pick_strings(o, &["kind", "name", "uid"]);
                copy_bool(o, "controller", &mut owner);
                Value::Object(owner)
            })
            .collect();
        out.insert("ownerReferences".into(), Value::Array(owners));
    }
    out
}

fn project_node_container(container: &Value) -> Value {
    let mut out = pick_strings(container, &["name"]);
    let terminated = |state: &Value| {
        state.get("terminated").filter(|t| t.is_object()).map(|t| {
            let mut kept = pick_strings(t, &["reason", "message", "finishedAt"]);
            copy_integer(t, "exitCode", &mut kept);
            Value::Object(kept)
        })
    };
    if let Some(state) = container.get("state").filter(|s| s.is_object()) {
        let mut kept = Map::new();
        if let Some(t) = terminated(state) {
            kept.insert("terminated".into(), t);
        }
        if let Some(w) = state.get("waiting").filter(|w| w.is_object()) {
            kept.insert(
                "waiting".into(),
                Value::Object(pick_strings(w, &["reason", "message"])),
            );
        }
        out.insert("state".into(), Value::Object(kept));
    }
    if let Some(last) = container.get("lastState").filter(|s| s.is_object()) {
        let mut kept = Map::new();
        if let Some(t) = terminated(last) {
            kept.insert("terminated".into(), t);
        }
        out.insert("lastState".into(), Value::Object(kept));
    }
    Value::Object(out)
}

fn copy_conditions(status: &Value, out: &mut Map<String, Value>) {
    if let Some(conditions) = status.get("conditions").and_then(Value::as_array) {
        let kept = conditions
            .iter()
            .filter(|c| c.is_object())
            .map(|c| {
                Value::Object(pick_strings(
                    c,
                    &["type", "status", "reason", "message", "lastTransitionTime"],
                ))
            })
            .collect();
        out.insert("conditions".into(), Value::Array(kept));
    }
}

/// The string-valued fields among `keys`; anything else is dropped.
fn pick_strings(from: &Value, keys: &[&str]) -> Map<String, Value> {
    keys.iter()
        .filter_map(|k| {
            from.get(*k)
                .filter(|v| v.is_string())
                .map(|v| ((*k).to_string(), v.clone()))
        })
        .collect()
}

fn copy_string(from: &Value, key: &str, out: &mut Map<String, Value>) {
    if let Some(v) = from.get(key).filter(|v| v.is_string()) {
        out.insert(key.into(), v.clone());
    }
}

fn copy_bool(from: &Value, key: &str, out: &mut Map<String, Value>) {
    if let Some(v) = from.get(key).filter(|v| v.is_boolean()) {
        out.insert(key.into(), v.clone());
    }
}

fn copy_integer(from: &Value, key: &str, out: &mut Map<String, Value>) {
    if let Some(v) = from.get(key).filter(|v| v.is_i64() || v.is_u64()) {
        out.insert(key.into(), v.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod_with_secrets() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "llm-7-s3-node-0-0-abcde", "namespace": "team-a", "uid": "p1",
                "managedFields": [{"manager": "kubelet"}],
                "labels": {"dispatch.phpboyscout.uk/job-id": "llm-7",
                    "dispatch.phpboyscout.uk/submission": "s3", "app": "secret-app-label"},
                "annotations": {"dispatch.phpboyscout.uk/admission": "2",
                    "kubectl.kubernetes.io/last-applied-configuration": "{\"env\":\"hunter2\"}"},
                "ownerReferences": [{"kind": "Job", "name": "j", "uid": "ju", "controller": true}],
            },
            "spec": {
                "nodeName": "gpu-1",
                "schedulingGates": [{"name": "g"}],
                "containers": [{"name": "node", "env": [{"name": "TOKEN", "value": "hunter2"}]}],
                "volumes": [{"name": "s", "secret": {"secretName": "creds"}}],
            },
            "status": {
                "phase": "Failed",
                "conditions": [{"type": "Ready", "status": "False", "extra": "x"}],
                "containerStatuses": [
                    {"name": "sidecar", "state": {"terminated": {"exitCode": 3}}},
                    {"name": "node", "image": "img", "state": {"terminated": {"exitCode": 137,
                        "reason": "OOMKilled", "finishedAt": "2024-01-01T00:00:00Z"}},
                     "lastState": {}},
                ],
            },
        })
    }

    #[test]
    fn a_pod_keeps_only_what_the_engine_reads() {
        let stored = project(ObjectKind::Pod, &pod_with_secrets()).expect("a job pod is stored");
        assert!(!stored.json.contains("hunter2"), "{}", stored.json);
        assert!(!stored.json.contains("managedFields"));
        assert!(!stored.json.contains("secret"));
        assert!(!stored.json.contains("sidecar"));
        let v = stored.value();
        assert_eq!(
            v["spec"],
            json!({"nodeName": "gpu-1", "schedulingGates": [{"name": "g"}]})
        );
        assert_eq!(
            v["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
            137
        );
        assert_eq!(
            v["metadata"]["annotations"],
            json!({"dispatch.phpboyscout.uk/admission": "2"})
        );
        assert_eq!(stored.node_name.as_deref(), Some("gpu-1"));
        assert_eq!(stored.job_id.as_deref(), Some("llm-7"));
        assert!(stored.trainjob_owners.is_empty());
    }

    #[test]
    fn a_pod_of_no_job_is_not_stored() {
        let pod = json!({"metadata": {"name": "web", "namespace": "a", "labels": {"app": "web"}}});
        assert_eq!(project(ObjectKind::Pod, &pod), None);
    }

    #[test]
    fn fields_of_the_wrong_type_are_dropped() {
        let tj = json!({"metadata": {"name": "x-s1", "uid": 7, "labels": {"dispatch.phpboyscout.uk/job-id": 3}},
            "spec": {"suspend": "yes"}, "status": {"conditions": [1, {"type": "Complete", "status": true}]}});
        let stored = project(ObjectKind::TrainJob, &tj).expect("TrainJobs are always stored");
        assert_eq!(stored.uid, "");
        assert_eq!(stored.job_id, None);
        let v = stored.value();
        assert_eq!(v["spec"], Value::Null);
        assert_eq!(v["status"]["conditions"], json!([{"type": "Complete"}]));
        let observations = classify_wasm::classify(
            &format!("{{\"kind\":\"Snapshot\",\"mode\":\"plain\",\"nodesReadable\":true,\"items\":[{}]}}", stored.json),
            classify_wasm::Options::default(),
        );
        assert!(observations.is_ok(), "the projection is valid engine input");
    }

    #[test]
    fn a_namespace_keeps_only_its_name_and_uid() {
        let ns = json!({"metadata": {"name": "team-b", "uid": "n1", "namespace": "x",
            "labels": {"kubernetes.io/metadata.name": "team-b"},
            "annotations": {"dispatch.phpboyscout.uk/hold-instance": "h"}},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
        let stored = project(ObjectKind::Namespace, &ns).expect("stored");
        assert_eq!(
            stored.value(),
            json!({"apiVersion": "v1", "kind": "Namespace",
                "metadata": {"name": "team-b", "uid": "n1"}})
        );
        assert_eq!(
            (stored.namespace.as_str(), stored.name.as_str()),
            ("", "team-b")
        );
        assert!(!ObjectKind::ALL.contains(&ObjectKind::Namespace));
        assert_eq!(
            ObjectKind::parse("namespaces"),
            None,
            "not an inspectable kind"
        );
    }

    #[test]
    fn kinds_parse_from_urls() {
        assert_eq!(ObjectKind::parse("trainjobs"), Some(ObjectKind::TrainJob));
        assert_eq!(ObjectKind::parse("Pod"), Some(ObjectKind::Pod));
        assert_eq!(ObjectKind::parse("secrets"), None);
        assert_eq!(ObjectKind::JobSet.group(), "jobset.x-k8s.io");
        assert_eq!(ObjectKind::Pod.group(), "");
        assert_eq!(ObjectKind::Pod.version(), "v1");
    }
}
