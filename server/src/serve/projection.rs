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
//!
//! How: one parse and one write. An object is deserialized straight into an
//! [`ApiObject`], the fields a projection keeps and nothing else (what is not
//! read, a pod's env or `managedFields`, is skipped by the parser unbuilt),
//! and [`ApiObject::project`] writes the projection's JSON text directly.
//! The watch loops parse the API's responses into it; [`project`] reads an
//! object held as a `Value` (tests) through the very same code, and the state
//! directory its stored text, so no path can project differently. The text
//! is the one a `serde_json::Map` would print (keys sorted): the tests keep
//! the earlier Map-building projection as the reference, byte for byte.

use std::collections::BTreeMap;
use std::marker::PhantomData;
use std::sync::Arc;

use classify_wasm::{fields, keys, write_json_string, LinkFields};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

mod lenient;
mod queue;
use lenient::{Lenient, Maybe};
use queue::QueueTree;

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
    /// `kueue.x-k8s.io` LocalQueue, `v1beta2` or `v1beta1` (Kueue mode
    /// only). Read for the queue facts, never part of a snapshot.
    LocalQueue,
    /// `kueue.x-k8s.io` ClusterQueue (cluster-scoped), as LocalQueue.
    ClusterQueue,
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

    /// The queue kinds, watched in Kueue mode for the queue facts only.
    pub const QUEUES: [ObjectKind; 2] = [ObjectKind::LocalQueue, ObjectKind::ClusterQueue];

    /// The `kind` field.
    pub fn name(self) -> &'static str {
        match self {
            ObjectKind::TrainJob => "TrainJob",
            ObjectKind::JobSet => "JobSet",
            ObjectKind::Workload => "Workload",
            ObjectKind::TrainingRuntime => "TrainingRuntime",
            ObjectKind::Pod => "Pod",
            ObjectKind::Node => "Node",
            ObjectKind::LocalQueue => "LocalQueue",
            ObjectKind::ClusterQueue => "ClusterQueue",
            ObjectKind::Namespace => "Namespace",
        }
    }

    /// The `apiVersion` a projection carries when the version watched is
    /// not known (the preferred one; [`project_at`] writes the one watched).
    pub fn api_version(self) -> &'static str {
        match self {
            ObjectKind::TrainJob | ObjectKind::TrainingRuntime => "trainer.kubeflow.org/v1alpha1",
            ObjectKind::JobSet => "jobset.x-k8s.io/v1alpha2",
            ObjectKind::Workload | ObjectKind::LocalQueue | ObjectKind::ClusterQueue => {
                "kueue.x-k8s.io/v1beta2"
            }
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
            ObjectKind::LocalQueue => "localqueues",
            ObjectKind::ClusterQueue => "clusterqueues",
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
        !matches!(
            self,
            ObjectKind::Node | ObjectKind::Namespace | ObjectKind::ClusterQueue
        )
    }

    /// Whether this is a queue kind: read for the queue facts only, kept
    /// apart from the linked objects (no snapshot, frame or state
    /// directory holds one).
    pub fn is_queue(self) -> bool {
        matches!(self, ObjectKind::LocalQueue | ObjectKind::ClusterQueue)
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
    /// What the engine links it by besides its identity (its labels
    /// job-id, submission, jobset-name and job-uid, its TrainJob owners, a
    /// pod's `spec.nodeName`): the engine's one list of them, which the
    /// store indexes by and hands to [`classify_wasm::Links::of`].
    pub linking: LinkFields,
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
        std::mem::size_of::<Self>()
            + [&self.namespace, &self.name, &self.uid]
                .iter()
                .map(|s| s.capacity())
                .sum::<usize>()
            + self.linking.heap_bytes()
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
///
/// The object is read through the same [`ApiObject`] the watch loops parse
/// their responses into, so a projection cannot depend on where its object
/// came from.
pub fn project_at(kind: ObjectKind, api_version: &str, object: &Value) -> Option<StoredObject> {
    match ApiObject::from_value(object).project(kind, api_version) {
        Projected::Stored(stored) => Some(stored),
        Projected::NotStored(_) => None,
    }
}

/// What an object from the API becomes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Projected {
    /// It is stored: its projection.
    Stored(StoredObject),
    /// A pod of no job, which is not stored: only its kind, namespace, name
    /// and UID (`json` is `{}`), so that the removal of a pod that was
    /// stored before (it lost its job labels) can still be applied.
    NotStored(StoredObject),
}

/// An object as the API serves it, parsed down to the fields a projection
/// keeps, of every kind at once (the kind picks among them when it is
/// projected). Everything else (a pod's env and volumes, `managedFields`,
/// the other labels and annotations) is skipped by the parser without being
/// built, and a field of the wrong type is skipped like an unknown one: the
/// projection's "wrong types dropped". The watch loops deserialize their
/// list and watch responses straight into it, so an object is parsed once
/// and its projection written once ([`ApiObject::project`]).
///
/// Duplicate keys resolve as in a `serde_json::Value` (the last one wins),
/// so parsing text directly and parsing a `Value` of it agree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiObject {
    /// The `apiVersion` written in the object (the state directory's
    /// projections say which version they were read at).
    api_version: Option<String>,
    meta: Meta,
    spec: Spec,
    status: Status,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Meta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    creation_timestamp: Option<String>,
    deletion_timestamp: Option<String>,
    /// The kept labels: key to string value.
    labels: BTreeMap<&'static str, String>,
    annotations: BTreeMap<&'static str, String>,
    /// Present when `ownerReferences` is an array; its object entries.
    owners: Option<Vec<Owner>>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Owner {
    kind: Option<String>,
    name: Option<String>,
    uid: Option<String>,
    controller: Option<bool>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Spec {
    /// TrainJob.
    suspend: Option<bool>,
    /// Workload.
    active: Option<bool>,
    /// Pod.
    node_name: Option<String>,
    /// Pod: the gates' names (`None`: a gate without a string name).
    scheduling_gates: Option<Vec<Named>>,
    /// Workload, for the queue facts.
    queue_name: Option<String>,
    priority: Option<Integer>,
    pod_sets: Option<QueueTree>,
    /// LocalQueue.
    cluster_queue: Option<String>,
    /// LocalQueue and ClusterQueue.
    stop_policy: Option<String>,
    /// ClusterQueue (`cohort` in v1beta1, `cohortName` in v1beta2).
    cohort: Option<String>,
    cohort_name: Option<String>,
    queueing_strategy: Option<String>,
    resource_groups: Option<QueueTree>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Named {
    name: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Status {
    /// TrainJob, Workload, Node, Pod.
    conditions: Option<Vec<Condition>>,
    /// JobSet.
    restarts: Option<Integer>,
    /// Workload.
    admission_checks: Option<Vec<AdmissionCheck>>,
    /// Pod.
    phase: Option<String>,
    /// Pod: the first entry of `containerStatuses` named `node`.
    node_container: Option<ContainerStatus>,
    /// Workload, for the queue facts.
    admission: Option<QueueTree>,
    /// LocalQueue and ClusterQueue.
    pending_workloads: Option<Integer>,
    reserving_workloads: Option<Integer>,
    admitted_workloads: Option<Integer>,
    flavors_reservation: Option<QueueTree>,
    flavors_usage: Option<QueueTree>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Condition {
    type_: Option<String>,
    status: Option<String>,
    reason: Option<String>,
    message: Option<String>,
    last_transition_time: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct AdmissionCheck {
    name: Option<String>,
    state: Option<String>,
    message: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ContainerStatus {
    name: Option<String>,
    state: Option<ContainerState>,
    last_state: Option<ContainerState>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ContainerState {
    terminated: Option<Terminated>,
    waiting: Option<Waiting>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Terminated {
    exit_code: Option<Integer>,
    finished_at: Option<String>,
    message: Option<String>,
    reason: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Waiting {
    message: Option<String>,
    reason: Option<String>,
}

/// A JSON integer as `serde_json::Value` holds one (`u64`, or `i64` when
/// negative); a float is no integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Integer {
    Unsigned(u64),
    Signed(i64),
}

impl ApiObject {
    /// Reads an object held as a `Value` (tests, the state directory).
    pub fn from_value(object: &Value) -> ApiObject {
        // A `&Value` deserializer cannot fail, and nothing in `ApiObject`
        // rejects a value: every field of a wrong type is skipped.
        ApiObject::deserialize(object).unwrap_or_default()
    }

    /// The object's own `apiVersion`, when it has one.
    pub fn api_version(&self) -> Option<&str> {
        self.api_version.as_deref()
    }

    /// `metadata.resourceVersion`, where a watch resumes from.
    pub fn resource_version(&self) -> Option<&str> {
        self.meta.resource_version.as_deref()
    }

    /// The projection of this object read as `kind` at `api_version`.
    pub fn project(self, kind: ObjectKind, api_version: &str) -> Projected {
        let has_label = |key: &str| self.meta.labels.get(key).is_some_and(|v| !v.is_empty());
        let stored =
            kind != ObjectKind::Pod || has_label(keys::JOB_ID) || has_label(keys::JOBSET_NAME);
        let json: Arc<str> = if stored {
            self.write(kind, api_version).into()
        } else {
            "{}".into()
        };
        let Meta {
            name,
            namespace,
            uid,
            mut labels,
            owners,
            ..
        } = self.meta;
        let identity = StoredObject {
            kind,
            namespace: if kind.namespaced() {
                namespace.unwrap_or_default()
            } else {
                String::new()
            },
            name: name.unwrap_or_default(),
            uid: uid.unwrap_or_default(),
            linking: LinkFields::default(),
            json,
        };
        if !stored {
            return Projected::NotStored(identity);
        }
        if kind == ObjectKind::Namespace {
            // Only its existence is kept: nothing of it links.
            return Projected::Stored(identity);
        }
        let mut label = |key: &str| labels.remove(key).filter(|v| !v.is_empty());
        let trainjob_owners: Vec<_> = owners
            .into_iter()
            .flatten()
            .filter(|o| o.kind.as_deref() == Some("TrainJob"))
            .collect();
        Projected::Stored(StoredObject {
            linking: LinkFields {
                job_id: label(keys::JOB_ID),
                submission: label(keys::SUBMISSION),
                jobset_name: label(keys::JOBSET_NAME),
                job_uid: label(keys::JOB_UID),
                trainjob_owned: !trainjob_owners.is_empty(),
                trainjob_owners: trainjob_owners
                    .into_iter()
                    .filter_map(|o| o.uid)
                    .filter(|uid| !uid.is_empty())
                    .collect(),
                node_name: self
                    .spec
                    .node_name
                    .filter(|n| !n.is_empty() && kind == ObjectKind::Pod),
            },
            ..identity
        })
    }

    /// The projection's JSON text. Keys are written in sorted order, as a
    /// `serde_json::Map` (a `BTreeMap`) writes them, so the text is the one
    /// the server has always stored and sent.
    fn write(&self, kind: ObjectKind, api_version: &str) -> String {
        let mut out = String::with_capacity(512);
        let mut top = JsonObject::open(&mut out);
        top.string("apiVersion", Some(api_version));
        top.string("kind", Some(kind.name()));
        let meta = &self.meta;
        top.object("metadata", |m| {
            if kind == ObjectKind::Namespace {
                // Only its existence matters: no labels, no annotations.
                m.string("name", meta.name.as_deref());
                m.string("uid", meta.uid.as_deref());
                return;
            }
            m.object_if_any("annotations", |a| write_strings(a, &meta.annotations));
            m.string("creationTimestamp", meta.creation_timestamp.as_deref());
            m.string("deletionTimestamp", meta.deletion_timestamp.as_deref());
            m.object_if_any("labels", |l| write_strings(l, &meta.labels));
            m.string("name", meta.name.as_deref());
            m.string("namespace", meta.namespace.as_deref());
            if let Some(owners) = &meta.owners {
                m.array("ownerReferences", owners, |o, owner| {
                    o.boolean("controller", owner.controller);
                    o.string("kind", owner.kind.as_deref());
                    o.string("name", owner.name.as_deref());
                    o.string("uid", owner.uid.as_deref());
                });
            }
            m.string("uid", meta.uid.as_deref());
        });
        let (spec, status) = (&self.spec, &self.status);
        top.object_if_any("spec", |s| match kind {
            ObjectKind::TrainJob => s.boolean("suspend", spec.suspend),
            ObjectKind::Workload => {
                s.boolean("active", spec.active);
                s.tree("podSets", spec.pod_sets.as_ref());
                s.integer("priority", spec.priority);
                s.string("queueName", spec.queue_name.as_deref());
            }
            ObjectKind::LocalQueue => {
                s.string("clusterQueue", spec.cluster_queue.as_deref());
                s.string("stopPolicy", spec.stop_policy.as_deref());
            }
            ObjectKind::ClusterQueue => {
                s.string("cohort", spec.cohort.as_deref());
                s.string("cohortName", spec.cohort_name.as_deref());
                s.string("queueingStrategy", spec.queueing_strategy.as_deref());
                s.tree("resourceGroups", spec.resource_groups.as_ref());
                s.string("stopPolicy", spec.stop_policy.as_deref());
            }
            ObjectKind::Pod => {
                s.string("nodeName", spec.node_name.as_deref());
                if let Some(gates) = &spec.scheduling_gates {
                    s.array("schedulingGates", gates, |g, gate| {
                        g.string("name", gate.name.as_deref())
                    });
                }
            }
            _ => {}
        });
        top.object_if_any("status", |s| match kind {
            ObjectKind::TrainJob | ObjectKind::Node => write_conditions(s, status),
            ObjectKind::JobSet => s.integer("restarts", status.restarts),
            ObjectKind::Workload => {
                s.tree("admission", status.admission.as_ref());
                if let Some(checks) = &status.admission_checks {
                    s.array("admissionChecks", checks, |c, check| {
                        c.string("message", check.message.as_deref());
                        c.string("name", check.name.as_deref());
                        c.string("state", check.state.as_deref());
                    });
                }
                write_conditions(s, status);
            }
            ObjectKind::Pod => {
                write_conditions(s, status);
                if let Some(container) = &status.node_container {
                    s.array("containerStatuses", [container], write_node_container);
                }
                s.string("phase", status.phase.as_deref());
            }
            ObjectKind::LocalQueue | ObjectKind::ClusterQueue => {
                s.integer("admittedWorkloads", status.admitted_workloads);
                write_conditions(s, status);
                s.tree("flavorsReservation", status.flavors_reservation.as_ref());
                s.tree("flavorsUsage", status.flavors_usage.as_ref());
                s.integer("pendingWorkloads", status.pending_workloads);
                s.integer("reservingWorkloads", status.reserving_workloads);
            }
            ObjectKind::TrainingRuntime | ObjectKind::Namespace => {}
        });
        top.close();
        out
    }
}

fn write_strings(out: &mut JsonObject<'_>, strings: &BTreeMap<&'static str, String>) {
    for (key, value) in strings {
        out.string(key, Some(value));
    }
}

fn write_conditions(out: &mut JsonObject<'_>, status: &Status) {
    if let Some(conditions) = &status.conditions {
        out.array("conditions", conditions, |c, condition| {
            c.string(
                "lastTransitionTime",
                condition.last_transition_time.as_deref(),
            );
            c.string("message", condition.message.as_deref());
            c.string("reason", condition.reason.as_deref());
            c.string("status", condition.status.as_deref());
            c.string("type", condition.type_.as_deref());
        });
    }
}

fn write_node_container(out: &mut JsonObject<'_>, container: &ContainerStatus) {
    let terminated = |out: &mut JsonObject<'_>, state: &ContainerState| {
        if let Some(t) = &state.terminated {
            out.object("terminated", |t_out| {
                t_out.integer("exitCode", t.exit_code);
                t_out.string("finishedAt", t.finished_at.as_deref());
                t_out.string("message", t.message.as_deref());
                t_out.string("reason", t.reason.as_deref());
            });
        }
    };
    if let Some(last) = &container.last_state {
        // Of the last state only how it ended is read.
        out.object("lastState", |l| terminated(l, last));
    }
    out.string("name", container.name.as_deref());
    if let Some(state) = &container.state {
        out.object("state", |s| {
            terminated(s, state);
            if let Some(w) = &state.waiting {
                s.object("waiting", |w_out| {
                    w_out.string("message", w.message.as_deref());
                    w_out.string("reason", w.reason.as_deref());
                });
            }
        });
    }
}

/// Writes one JSON object into a string, compact, as `serde_json` writes
/// it. Writing to a `String` cannot fail, so nothing here returns an error.
struct JsonObject<'a> {
    out: &'a mut String,
    empty: bool,
}

impl<'a> JsonObject<'a> {
    fn open(out: &'a mut String) -> Self {
        out.push('{');
        JsonObject { out, empty: true }
    }

    fn close(self) {
        self.out.push('}');
    }

    fn key(&mut self, key: &str) {
        if !self.empty {
            self.out.push(',');
        }
        self.empty = false;
        write_json_string(self.out, key);
        self.out.push(':');
    }

    fn string(&mut self, key: &str, value: Option<&str>) {
        if let Some(value) = value {
            self.key(key);
            write_json_string(self.out, value);
        }
    }

    fn boolean(&mut self, key: &str, value: Option<bool>) {
        if let Some(value) = value {
            self.key(key);
            self.out.push_str(if value { "true" } else { "false" });
        }
    }

    fn integer(&mut self, key: &str, value: Option<Integer>) {
        if let Some(value) = value {
            self.key(key);
            let digits = match value {
                Integer::Unsigned(n) => n.to_string(),
                Integer::Signed(n) => n.to_string(),
            };
            self.out.push_str(&digits);
        }
    }

    /// A queue tree, as `serde_json` writes a `Value` (its keys sorted).
    fn tree(&mut self, key: &str, value: Option<&QueueTree>) {
        if let Some(QueueTree(value)) = value {
            self.key(key);
            self.out.push_str(&value.to_string());
        }
    }

    fn object(&mut self, key: &str, fill: impl FnOnce(&mut JsonObject<'_>)) {
        self.key(key);
        let mut inner = JsonObject::open(self.out);
        fill(&mut inner);
        inner.close();
    }

    /// [`JsonObject::object`], left out entirely when `fill` writes nothing.
    fn object_if_any(&mut self, key: &str, fill: impl FnOnce(&mut JsonObject<'_>)) {
        let (mark, was_empty) = (self.out.len(), self.empty);
        self.key(key);
        let mut inner = JsonObject::open(self.out);
        fill(&mut inner);
        if inner.empty {
            self.out.truncate(mark);
            self.empty = was_empty;
        } else {
            inner.close();
        }
    }

    fn array<'i, T: 'i>(
        &mut self,
        key: &str,
        items: impl IntoIterator<Item = &'i T>,
        mut each: impl FnMut(&mut JsonObject<'_>, &T),
    ) {
        self.key(key);
        self.out.push('[');
        for (i, item) in items.into_iter().enumerate() {
            if i > 0 {
                self.out.push(',');
            }
            let mut element = JsonObject::open(self.out);
            each(&mut element, item);
            element.close();
        }
        self.out.push(']');
    }
}

#[cfg(test)]
#[path = "projection_tests.rs"]
mod tests;
