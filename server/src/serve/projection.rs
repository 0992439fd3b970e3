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
//! is the one a `serde_json::Map` would print (keys sorted): the tests
//! walk the engine's read schema over a `Value` into a `Map` as the
//! reference, and match it byte for byte.

use std::sync::Arc;

use classify_wasm::{keys, schema, write_json_string, LinkFields};
use serde::{Deserialize, Deserializer};
use serde_json::Value;

mod lenient;
mod queue;
mod read;
use lenient::{Lenient, Maybe};
use queue::QueueTree;
use read::{Fields, ParseNode, Parsed};

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

/// An object as the API serves it, parsed down to the fields the engine's
/// read schema names ([`classify_wasm::schema`]), of every kind at once
/// (the kind picks among them when it is projected; see `read.rs`).
/// Everything else (a pod's env and volumes, `managedFields`, the other
/// labels and annotations) is skipped by the parser without being built,
/// and a field of the wrong type is skipped like an unknown one: the
/// projection's "wrong types dropped". The watch loops deserialize their
/// list and watch responses straight into it, so an object is parsed once
/// and its projection written once ([`ApiObject::project`]).
///
/// Duplicate keys resolve as in a `serde_json::Value` (the last one wins),
/// so parsing text directly and parsing a `Value` of it agree.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ApiObject {
    fields: Fields,
}

/// What the server keeps of a Namespace: only that it exists.
pub(super) const NAMESPACE: &[schema::Field] = &[schema::metadata(&[
    schema::string("name"),
    schema::string("uid"),
])];

/// What is written of an object of `kind` below its `apiVersion` and
/// `kind`: the engine's schema of it, or the server's Namespace.
fn schema_of(kind: ObjectKind) -> &'static [schema::Field] {
    match kind {
        ObjectKind::Namespace => NAMESPACE,
        kind => schema::of_kind(kind.name()).unwrap_or(&[]),
    }
}

/// A JSON integer as `serde_json::Value` holds one (`u64`, or `i64` when
/// negative); a float is no integer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Integer {
    Unsigned(u64),
    Signed(i64),
}

impl<'de> Deserialize<'de> for ApiObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let fields = read::read_object(read::parse_tree(), deserializer)?;
        Ok(ApiObject {
            fields: fields.unwrap_or_default(),
        })
    }
}

impl ApiObject {
    /// Reads an object held as a `Value` (tests, the state directory).
    pub fn from_value(object: &Value) -> ApiObject {
        // A `&Value` deserializer cannot fail, and nothing in `ApiObject`
        // rejects a value: every field of a wrong type is skipped.
        ApiObject::deserialize(object).unwrap_or_default()
    }

    fn string(&self, path: &[&str]) -> Option<&str> {
        self.fields.string_at(read::parse_tree(), path)
    }

    /// The object's own `apiVersion`, when it has one.
    pub fn api_version(&self) -> Option<&str> {
        self.string(&["apiVersion"])
    }

    /// `metadata.resourceVersion`, where a watch resumes from.
    pub fn resource_version(&self) -> Option<&str> {
        self.string(&["metadata", "resourceVersion"])
    }

    /// Whether the object carries the label `key` with a value.
    fn has_label(&self, key: &str) -> bool {
        match self.fields.at(read::parse_tree(), &["metadata", "labels"]) {
            Some(Parsed::Strings(labels)) => labels.iter().any(|(k, v)| *k == key && !v.is_empty()),
            _ => false,
        }
    }

    /// The projection of this object read as `kind` at `api_version`.
    pub fn project(self, kind: ObjectKind, api_version: &str) -> Projected {
        let stored = kind != ObjectKind::Pod
            || self.has_label(keys::JOB_ID)
            || self.has_label(keys::JOBSET_NAME);
        let json: Arc<str> = if stored {
            self.write(kind, api_version).into()
        } else {
            "{}".into()
        };
        let text = |path: &[&str]| self.string(path).unwrap_or_default().to_string();
        let identity = StoredObject {
            kind,
            namespace: if kind.namespaced() {
                text(&["metadata", "namespace"])
            } else {
                String::new()
            },
            name: text(&["metadata", "name"]),
            uid: text(&["metadata", "uid"]),
            linking: LinkFields::default(),
            json,
        };
        if !stored {
            return Projected::NotStored(identity);
        }
        Projected::Stored(StoredObject {
            linking: self.linking(kind),
            ..identity
        })
    }

    /// What the engine links the object by ([`LinkFields::of`] decides
    /// which labels and owners count), read from what its projection
    /// keeps (the kind's schema): its labels, owner references and
    /// `spec.nodeName` (a Pod's; a Namespace keeps none of them).
    fn linking(&self, kind: ObjectKind) -> LinkFields {
        let tree = read::parse_tree();
        let kept = |path: &[&str]| schema::keeps(schema_of(kind), path);
        let labels = match self.fields.at(tree, &["metadata", "labels"]) {
            Some(Parsed::Strings(labels)) if kept(&["metadata", "labels"]) => labels.as_slice(),
            _ => &[],
        };
        let label = |key: &str| {
            labels
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.as_str())
        };
        let owners = self
            .fields
            .objects_at(tree, &["metadata", "ownerReferences"])
            .filter(|_| kept(&["metadata", "ownerReferences"]))
            .into_iter()
            .flat_map(|(node, owners)| {
                owners
                    .iter()
                    .map(move |o| (o.string_at(node, &["kind"]), o.string_at(node, &["uid"])))
            });
        let node_name = self
            .string(&["spec", "nodeName"])
            .filter(|_| kept(&["spec", "nodeName"]));
        LinkFields::of(label, owners, node_name)
    }

    /// The projection's JSON text: `apiVersion`, `kind`, then what the
    /// kind's schema reads, in its order, which is the order a
    /// `serde_json::Map` (a `BTreeMap`) writes keys in, so the text is the
    /// one the server has always stored and sent.
    fn write(&self, kind: ObjectKind, api_version: &str) -> String {
        let mut out = String::with_capacity(512);
        let mut top = JsonObject::open(&mut out);
        top.string("apiVersion", Some(api_version));
        top.string("kind", Some(kind.name()));
        write_fields(&mut top, schema_of(kind), read::parse_tree(), &self.fields);
        top.close();
        out
    }
}

/// Writes the fields of `schema` that `fields` holds (read against
/// `node`), each as its [`schema::Presence`] says.
fn write_fields(
    out: &mut JsonObject<'_>,
    schema: &[schema::Field],
    node: &ParseNode,
    fields: &Fields,
) {
    use schema::{Presence, Shape};
    for field in schema {
        let Some(at) = node.index_of(field.name) else {
            continue;
        };
        let value = fields.get(at);
        let inner = node.child(at);
        match (field.shape, value) {
            (Shape::String, Some(Parsed::String(s))) => out.string(field.name, Some(s)),
            (Shape::Bool, Some(Parsed::Bool(b))) => out.boolean(field.name, Some(*b)),
            (Shape::Integer, Some(Parsed::Integer(n))) => out.integer(field.name, Some(*n)),
            (Shape::QueueTree, Some(Parsed::Tree(tree))) => out.tree(field.name, Some(tree)),
            (Shape::Object(below), value) => {
                let Some(inner) = inner else {
                    continue;
                };
                let empty = Fields::default();
                let object = match value {
                    Some(Parsed::Object(object)) => object,
                    _ if field.presence == Presence::Always => &empty,
                    _ => continue,
                };
                out.object_as(field.presence, field.name, |o| {
                    write_fields(o, below, inner, object)
                });
            }
            (Shape::Objects(below), Some(Parsed::Objects(list))) => {
                if let Some(inner) = inner {
                    out.array(field.name, list, |o, element| {
                        write_fields(o, below, inner, element)
                    });
                }
            }
            (Shape::FirstNamed(_, below), Some(Parsed::Object(element))) => {
                if let Some(inner) = inner {
                    out.array(field.name, [element], |o, element| {
                        write_fields(o, below, inner, element)
                    });
                }
            }
            (Shape::Strings(_), Some(Parsed::Strings(strings))) => {
                let mut sorted: Vec<&(&str, String)> = strings.iter().collect();
                sorted.sort_unstable_by_key(|(key, _)| *key);
                out.object_as(field.presence, field.name, |o| {
                    for (key, value) in sorted {
                        o.string(key, Some(value));
                    }
                });
            }
            _ => {}
        }
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

    /// [`JsonObject::object`], or [`JsonObject::object_if_any`] for a
    /// field written only when something is read inside it.
    fn object_as(
        &mut self,
        presence: schema::Presence,
        key: &str,
        fill: impl FnOnce(&mut JsonObject<'_>),
    ) {
        match presence {
            schema::Presence::NonEmpty => self.object_if_any(key, fill),
            schema::Presence::Given | schema::Presence::Always => self.object(key, fill),
        }
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
