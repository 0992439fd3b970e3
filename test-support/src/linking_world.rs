//! A seeded random world of objects that link to each other (few
//! namespaces, names, labels and UIDs, so links collide), changed step by
//! step by upserts and deletes of items and captured pods. Shared by the
//! linking property tests of the engine (`tests/linking.rs`), the server's
//! store and the web store.

use serde_json::{json, Value};

use crate::Rng;

/// One change to the world.
#[derive(Debug, Clone)]
pub enum Step {
    /// An item added or replaced.
    Upsert(Value),
    /// An item deleted: its last state.
    Delete(Value),
    /// A captured entry added (replacing one of the same TrainJob and pod).
    Capture(Value),
    /// A captured entry dropped.
    Drop {
        trainjob_uid: String,
        pod_uid: String,
    },
}

const NAMESPACES: [&str; 2] = ["team-a", "team-b"];
const JOB_IDS: [&str; 3] = ["llm-7", "gpt-9", ""];
const SUBMISSIONS: [&str; 3] = ["s1", "s2", ""];
const NODES: [&str; 3] = ["gpu-1", "gpu-2", "gpu-3"];
const TIMES: [&str; 3] = [
    "2026-11-29T10:00:00Z",
    "2026-11-29T10:05:00Z",
    "2026-11-29T10:10:00Z",
];

/// `(kind, namespace, name)` of an item, `""` namespace for a Node.
pub fn item_key(item: &Value) -> (String, String, String) {
    let text = |v: &Value| v.as_str().unwrap_or("").to_string();
    let kind = text(&item["kind"]);
    let namespace = if kind == "Node" {
        String::new()
    } else {
        text(&item["metadata"]["namespace"])
    };
    (kind, namespace, text(&item["metadata"]["name"]))
}

/// The world: items in input order and captured entries.
pub struct World {
    pub rng: Rng,
    pub items: Vec<Value>,
    pub captured: Vec<Value>,
    /// Every TrainJob UID ever given, so links reach gone ones too.
    pub trainjob_uids: Vec<String>,
    pub pod_uids: Vec<String>,
    next_uid: u64,
    /// Whether captured entries are drawn (the server captures its own).
    pub with_captured: bool,
}

impl World {
    pub fn new(seed: u64, with_captured: bool) -> Self {
        World {
            rng: Rng::new(seed),
            items: Vec::new(),
            captured: Vec::new(),
            trainjob_uids: vec!["gone-uid".to_string()],
            pod_uids: Vec::new(),
            next_uid: 0,
            with_captured,
        }
    }

    fn fresh_uid(&mut self, prefix: &str) -> String {
        self.next_uid += 1;
        format!("{prefix}-{}", self.next_uid)
    }

    fn labels(&mut self, with_submission: bool) -> (Value, Option<String>, Option<String>) {
        let job = self.rng.pick(&JOB_IDS).to_string();
        let sub = self.rng.pick(&SUBMISSIONS).to_string();
        let mut labels = serde_json::Map::new();
        if !job.is_empty() {
            labels.insert("dispatch.phpboyscout.uk/job-id".into(), json!(job));
        }
        if with_submission && !sub.is_empty() {
            labels.insert("dispatch.phpboyscout.uk/submission".into(), json!(sub));
        }
        (
            Value::Object(labels),
            (!job.is_empty()).then_some(job),
            (!sub.is_empty()).then_some(sub),
        )
    }

    /// A TrainJob name: mostly `<job>-<sub>`, so names and labels agree.
    fn trainjob_name(&mut self) -> String {
        let job = *self.rng.pick(&["llm-7", "gpt-9", "odd"]);
        let sub = *self.rng.pick(&["s1", "s2"]);
        format!("{job}-{sub}")
    }

    fn some_trainjob_uid(&mut self) -> String {
        let uids = self.trainjob_uids.clone();
        self.rng.pick(&uids).clone()
    }

    fn owner(&mut self) -> Value {
        match self.rng.below(4) {
            0 => json!([]),
            1 => json!([{"kind": "Deployment", "name": "x", "uid": "d-1", "controller": true}]),
            _ => {
                let uid = self.some_trainjob_uid();
                json!([{"kind": "TrainJob", "name": "t", "uid": uid, "controller": true}])
            }
        }
    }

    fn conditions(&mut self, types: &[&str]) -> Value {
        let mut out = Vec::new();
        for t in types {
            if self.rng.chance(35) {
                let status = *self.rng.pick(&["True", "False"]);
                let time = *self.rng.pick(&TIMES);
                out.push(
                    json!({"type": t, "status": status, "reason": "R", "message": "m",
                    "lastTransitionTime": time}),
                );
            }
        }
        Value::Array(out)
    }

    fn pod(&mut self, namespace: &str, name: &str, uid: &str) -> Value {
        let (mut labels, _, _) = self.labels(true);
        if self.rng.chance(60) {
            let js = self.trainjob_name();
            labels["jobset.sigs.k8s.io/jobset-name"] = json!(js);
        }
        labels["jobset.sigs.k8s.io/restart-attempt"] = json!(self.rng.below(2).to_string());
        let admission = (1 + self.rng.below(2)).to_string();
        let mut spec = json!({});
        if self.rng.chance(70) {
            spec["nodeName"] = json!(self.rng.pick(&NODES));
        }
        let terminated = match self.rng.below(4) {
            0 => json!({"exitCode": 1, "reason": "Error", "finishedAt": self.rng.pick(&TIMES)}),
            1 => {
                json!({"exitCode": 137, "reason": "OOMKilled", "finishedAt": self.rng.pick(&TIMES)})
            }
            _ => Value::Null,
        };
        let state = if terminated.is_null() {
            json!({"running": {}})
        } else {
            json!({ "terminated": terminated })
        };
        let phase = *self
            .rng
            .pick(&["Running", "Failed", "Pending", "Succeeded"]);
        let conditions = self.conditions(&["DisruptionTarget", "PodScheduled", "Ready"]);
        json!({"kind": "Pod", "apiVersion": "v1",
            "metadata": {"namespace": namespace, "name": name, "uid": uid, "labels": labels,
                "annotations": {"dispatch.phpboyscout.uk/admission": admission}},
            "spec": spec,
            "status": {"phase": phase, "conditions": conditions,
                "containerStatuses": [{"name": "node", "state": state}]}})
    }

    /// A new or changed item; `namespace` and `name` from a small set, so
    /// an upsert often replaces an item.
    fn item(&mut self) -> Value {
        let namespace = self.rng.pick(&NAMESPACES).to_string();
        match self.rng.below(10) {
            0 | 1 => {
                let name = self.trainjob_name();
                let existing = self.find("TrainJob", &namespace, &name);
                let uid = match existing {
                    Some(old) if self.rng.chance(70) => {
                        old["metadata"]["uid"].as_str().unwrap_or("").to_string()
                    }
                    _ => {
                        let uid = self.fresh_uid("tj");
                        self.trainjob_uids.push(uid.clone());
                        uid
                    }
                };
                let (labels, _, _) = if self.rng.chance(80) {
                    // Labels that agree with the name.
                    let (job, sub) = name.rsplit_once('-').unwrap_or((&name, ""));
                    (
                        json!({"dispatch.phpboyscout.uk/job-id": job,
                            "dispatch.phpboyscout.uk/submission": sub}),
                        None,
                        None,
                    )
                } else {
                    self.labels(true)
                };
                let conditions = self.conditions(&["Complete", "Failed", "Suspended"]);
                json!({"kind": "TrainJob", "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "metadata": {"namespace": namespace, "name": name, "uid": uid, "labels": labels},
                    "spec": {"suspend": self.rng.chance(10)},
                    "status": {"conditions": conditions}})
            }
            2 => {
                let name = self.trainjob_name();
                let owners = self.owner();
                let uid = self.fresh_uid("js");
                json!({"kind": "JobSet", "apiVersion": "jobset.x-k8s.io/v1alpha2",
                    "metadata": {"namespace": namespace, "name": name, "uid": uid,
                        "ownerReferences": owners},
                    "status": {"restarts": self.rng.below(2)}})
            }
            3 => {
                let name = format!("wl-{}", self.rng.below(3));
                let job_uid = self.some_trainjob_uid();
                let owners = self.owner();
                let uid = self.fresh_uid("wl");
                let conditions = self.conditions(&["QuotaReserved", "Admitted", "Evicted"]);
                json!({"kind": "Workload", "apiVersion": "kueue.x-k8s.io/v1beta2",
                    "metadata": {"namespace": namespace, "name": name, "uid": uid,
                        "creationTimestamp": self.rng.pick(&TIMES),
                        "labels": {"kueue.x-k8s.io/job-uid": job_uid}, "ownerReferences": owners},
                    "spec": {"active": self.rng.chance(85)},
                    "status": {"conditions": conditions}})
            }
            4 => {
                let name = self.trainjob_name();
                let (labels, _, _) = self.labels(false);
                let owners = self.owner();
                let uid = self.fresh_uid("rt");
                json!({"kind": "TrainingRuntime", "apiVersion": "trainer.kubeflow.org/v1alpha1",
                    "metadata": {"namespace": namespace, "name": name, "uid": uid, "labels": labels,
                        "ownerReferences": owners}})
            }
            5 => {
                let name = self.rng.pick(&NODES).to_string();
                let ready = *self.rng.pick(&["True", "False"]);
                json!({"kind": "Node", "apiVersion": "v1",
                    "metadata": {"name": name, "uid": format!("node-{name}")},
                    "status": {"conditions": [{"type": "Ready", "status": ready}]}})
            }
            _ => {
                let name = format!("pod-{}", self.rng.below(8));
                let uid = match self.find("Pod", &namespace, &name) {
                    Some(old) if self.rng.chance(70) => {
                        old["metadata"]["uid"].as_str().unwrap_or("").to_string()
                    }
                    _ => {
                        let uid = self.fresh_uid("pod");
                        self.pod_uids.push(uid.clone());
                        uid
                    }
                };
                self.pod(&namespace, &name, &uid)
            }
        }
    }

    fn find(&self, kind: &str, namespace: &str, name: &str) -> Option<Value> {
        let key = (kind.to_string(), namespace.to_string(), name.to_string());
        self.items.iter().find(|i| item_key(i) == key).cloned()
    }

    fn captured_entry(&mut self) -> Value {
        let trainjob_uid = self.some_trainjob_uid();
        // Sometimes the UID of a pod that is (or was) live.
        let pod_uid = if !self.pod_uids.is_empty() && self.rng.chance(40) {
            let uids = self.pod_uids.clone();
            self.rng.pick(&uids).clone()
        } else {
            self.fresh_uid("cap")
        };
        let namespace = self.rng.pick(&NAMESPACES).to_string();
        let name = format!("gone-{}", self.rng.below(4));
        let pod = self.pod(&namespace, &name, &pod_uid);
        let mut entry = json!({"trainJobUID": trainjob_uid, "pod": pod});
        if self.rng.chance(20) {
            entry["acrossGap"] = json!(true);
        }
        entry
    }

    /// Draws one step and applies it to the world.
    pub fn step(&mut self) -> Step {
        let roll = self.rng.below(100);
        if roll < 20 && !self.items.is_empty() {
            let at = self.rng.below(self.items.len());
            return Step::Delete(self.items.remove(at));
        }
        if self.with_captured && roll < 30 {
            if roll < 24 || self.captured.is_empty() {
                let entry = self.captured_entry();
                let (t, p) = captured_key(&entry);
                self.captured
                    .retain(|c| captured_key(c) != (t.clone(), p.clone()));
                self.captured.push(entry.clone());
                return Step::Capture(entry);
            }
            let at = self.rng.below(self.captured.len());
            let (trainjob_uid, pod_uid) = captured_key(&self.captured.remove(at));
            return Step::Drop {
                trainjob_uid,
                pod_uid,
            };
        }
        let item = self.item();
        let key = item_key(&item);
        match self.items.iter().position(|i| item_key(i) == key) {
            // Replaced in place: the input order of the others is kept.
            Some(at) => self.items[at] = item.clone(),
            None => self.items.push(item.clone()),
        }
        Step::Upsert(item)
    }

    /// The whole world as a snapshot document.
    pub fn snapshot(&self, mode: &str, nodes_readable: bool) -> Value {
        json!({"kind": "Snapshot", "mode": mode, "nodesReadable": nodes_readable,
            "items": self.items, "captured": self.captured})
    }
}

/// `(trainJobUID, pod UID)` of a captured entry.
pub fn captured_key(entry: &Value) -> (String, String) {
    (
        entry["trainJobUID"].as_str().unwrap_or("").to_string(),
        entry["pod"]["metadata"]["uid"]
            .as_str()
            .unwrap_or("")
            .to_string(),
    )
}
