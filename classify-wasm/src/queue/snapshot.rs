//! The queue facts of a whole dump or snapshot, as the CLI and the offline
//! page give them: every TrainJob that names a LocalQueue, read with the
//! Workload section 4 picks and the dump's LocalQueues and ClusterQueues.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::read::{label, text};
use super::{facts, Lookup, QueueFacts, QueueObjects};
use crate::fields::JOB_UID;
use crate::model::workload_rank;
use crate::time::Time;
use crate::{dump_to_json, explanations_text, Explanation, InputError, Position};

/// What the reader may not see: objects in these namespaces, and these
/// ClusterQueues, are looked up as not readable. A dump has no RBAC of its
/// own, so the CLI passes the default (everything readable); the server's
/// decisions and the test cases fill it in.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Visibility {
    #[serde(default)]
    pub hidden_namespaces: BTreeSet<String>,
    #[serde(default)]
    pub unreadable_cluster_queues: BTreeSet<String>,
}

/// One TrainJob's queue facts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobQueueFacts {
    pub namespace: String,
    pub name: String,
    pub queue: QueueFacts,
}

struct Index<'v> {
    visibility: &'v Visibility,
    local_queues: BTreeMap<(&'v str, &'v str), &'v Value>,
    cluster_queues: BTreeMap<&'v str, &'v Value>,
    workloads_by_uid: BTreeMap<&'v str, &'v Value>,
}

impl Index<'_> {
    fn visible<'v>(&self, namespace: &str, v: &'v Value) -> Lookup<'v> {
        if self.visibility.hidden_namespaces.contains(namespace) {
            Lookup::NotReadable
        } else {
            Lookup::Found(v)
        }
    }
}

impl QueueObjects for Index<'_> {
    fn local_queue(&self, namespace: &str, name: &str) -> Lookup<'_> {
        match self.local_queues.get(&(namespace, name)) {
            Some(v) => self.visible(namespace, v),
            None if self.visibility.hidden_namespaces.contains(namespace) => Lookup::NotReadable,
            None => Lookup::NotFound,
        }
    }

    fn cluster_queue(&self, name: &str) -> Lookup<'_> {
        if self.visibility.unreadable_cluster_queues.contains(name) {
            return Lookup::NotReadable;
        }
        self.cluster_queues
            .get(name)
            .map_or(Lookup::NotFound, |v| Lookup::Found(v))
    }

    fn workload_by_uid(&self, uid: &str) -> Lookup<'_> {
        match self.workloads_by_uid.get(uid) {
            Some(v) => self.visible(text(v, &["metadata", "namespace"]).unwrap_or(""), v),
            None => Lookup::NotFound,
        }
    }
}

/// The queue facts of every TrainJob in `input` (JSON or YAML, a Snapshot,
/// a List or kubectl's documents) that names a LocalQueue, in namespace and
/// name order. Empty when the input holds no LocalQueue and no
/// ClusterQueue: without them there is nothing to say beyond section 9.
/// Errors are the ones classifying the input gives.
pub fn facts_in_snapshot(
    input: &str,
    visibility: &Visibility,
) -> Result<Vec<JobQueueFacts>, InputError> {
    let json = dump_to_json(input)?;
    let value: Value = serde_json::from_str(&json).map_err(|e| InputError {
        position: Position {
            line: e.line(),
            column: e.column(),
        },
        message: e.to_string(),
    })?;
    let items: &[Value] = match value.get("kind").and_then(Value::as_str) {
        Some("Snapshot") | Some("List") => value
            .get("items")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice),
        _ => std::slice::from_ref(&value),
    };
    fn kind(v: &Value) -> &str {
        v.get("kind").and_then(Value::as_str).unwrap_or("")
    }
    let namespace = |v: &'_ Value| -> String {
        text(v, &["metadata", "namespace"])
            .unwrap_or("")
            .to_string()
    };
    let mut index = Index {
        visibility,
        local_queues: BTreeMap::new(),
        cluster_queues: BTreeMap::new(),
        workloads_by_uid: BTreeMap::new(),
    };
    // Section 4's pick per namespace and job UID, keeping the first of
    // equal ranks.
    let mut picked: BTreeMap<(String, &str), &Value> = BTreeMap::new();
    for item in items {
        let name = text(item, &["metadata", "name"]).unwrap_or("");
        match kind(item) {
            "LocalQueue" => {
                let ns = text(item, &["metadata", "namespace"]).unwrap_or("");
                index.local_queues.entry((ns, name)).or_insert(item);
            }
            "ClusterQueue" => {
                index.cluster_queues.entry(name).or_insert(item);
            }
            "Workload" => {
                if let Some(uid) = text(item, &["metadata", "uid"]) {
                    index.workloads_by_uid.entry(uid).or_insert(item);
                }
                if let Some(job_uid) = label(item, JOB_UID) {
                    let key = (namespace(item), job_uid);
                    let better = picked.get(&key).is_none_or(|best| outranks(item, best));
                    if better {
                        picked.insert(key, item);
                    }
                }
            }
            _ => {}
        }
    }
    if index.local_queues.is_empty() && index.cluster_queues.is_empty() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    let mut seen = BTreeSet::new();
    for item in items.iter().filter(|i| kind(i) == "TrainJob") {
        let ns = namespace(item);
        let name = text(item, &["metadata", "name"]).unwrap_or("").to_string();
        if visibility.hidden_namespaces.contains(&ns) || !seen.insert((ns.clone(), name.clone())) {
            continue;
        }
        let workload = text(item, &["metadata", "uid"])
            .and_then(|uid| picked.get(&(ns.clone(), uid)).copied());
        if let Some(queue) = facts(item, workload, &index) {
            out.push(JobQueueFacts {
                namespace: ns,
                name,
                queue,
            });
        }
    }
    out.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
    Ok(out)
}

/// Whether Workload `w` is read before `best` (section 4: the newest
/// `creationTimestamp`, then the greatest name; of equal ranks, the first).
fn outranks(w: &Value, best: &Value) -> bool {
    let rank = |w: &Value| {
        let creation = text(w, &["metadata", "creationTimestamp"]).and_then(Time::parse);
        let name = text(w, &["metadata", "name"]).unwrap_or("");
        (creation, name.to_string())
    };
    let ((wc, wn), (bc, bn)) = (rank(w), rank(best));
    workload_rank(wc, &wn) > workload_rank(bc, &bn)
}

/// Section 4's pick among the Workloads of one TrainJob: what a store that
/// holds them apart hands [`facts`].
pub fn pick_workload<'v>(workloads: impl IntoIterator<Item = &'v Value>) -> Option<&'v Value> {
    workloads.into_iter().fold(None, |best, w| match best {
        Some(best) if !outranks(w, best) => Some(best),
        _ => Some(w),
    })
}

/// The facts as text: a `namespace/name` line per job, its facts indented
/// under it, a blank line between jobs.
pub fn facts_text(jobs: &[JobQueueFacts]) -> String {
    let blocks: Vec<String> = jobs
        .iter()
        .map(|job| {
            let mut block = format!("{}/{}\n", job.namespace, job.name);
            for line in job.queue.lines() {
                block.push_str("  ");
                block.push_str(&line);
                block.push('\n');
            }
            block
        })
        .collect();
    blocks.join("\n")
}

fn facts_of<'f>(jobs: &'f [JobQueueFacts], e: &Explanation) -> Option<&'f QueueFacts> {
    let o = &e.observation.object;
    if o.kind != "TrainJob" {
        return None;
    }
    jobs.iter()
        .find(|j| j.namespace == o.namespace && j.name == o.name)
        .map(|j| &j.queue)
}

/// [`explanations_text`] with a `queue:` section after each TrainJob that
/// has queue facts: what `classify --output explain` prints.
pub fn explanations_with_queues_text(explained: &[Explanation], jobs: &[JobQueueFacts]) -> String {
    let mut out = String::new();
    for (i, e) in explained.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&explanations_text(std::slice::from_ref(e)));
        if let Some(facts) = facts_of(jobs, e) {
            out.push_str("queue:\n");
            for line in facts.lines() {
                out.push_str("  ");
                out.push_str(&line);
                out.push('\n');
            }
        }
    }
    out
}

/// An explanation as JSON, with its TrainJob's queue facts in `queue`
/// beside the observation when it has any: what `classify --output
/// explain-json` prints, and Find and Inspect carry.
#[derive(Debug, Clone, Serialize)]
pub struct ExplanationWithQueue<'e> {
    #[serde(flatten)]
    pub explanation: &'e Explanation,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub queue: Option<&'e QueueFacts>,
}

pub fn explanations_with_queues<'e>(
    explained: &'e [Explanation],
    jobs: &'e [JobQueueFacts],
) -> Vec<ExplanationWithQueue<'e>> {
    explained
        .iter()
        .map(|explanation| ExplanationWithQueue {
            explanation,
            queue: facts_of(jobs, explanation),
        })
        .collect()
}

/// Whether `input` could hold a LocalQueue or a ClusterQueue at all: a
/// cheap test that spares reading a big dump a second time for nothing.
pub fn may_hold_queues(input: &str) -> bool {
    input.contains("LocalQueue") || input.contains("ClusterQueue")
}
