//! What is read together: section 4 (what one TrainJob's classification
//! reads) and section 11 (whose absence makes an orphan) as links between
//! objects, for consumers that keep objects apart and classify only what a
//! change touches (the server's store, the browser's store).
//!
//! Every object offers or seeks [`Link`]s, read from the fields those
//! sections name: its identity and its [`LinkFields`], declared once here.
//! A store reads them as the object comes in ([`LinkedObject::of_json`],
//! or its own projection), keeps them beside it, and asks for the links
//! ([`Links::of`], [`Links::of_captured_pod`]) without reading the object
//! again. TrainJobs
//! offer their name, their job-id and submission labels and their UID;
//! Nodes offer their name. JobSets, Workloads, pods, captured pods and
//! runtime copies seek the TrainJobs (and pods the Nodes) they may be read
//! with. A [`Linker`] indexes them incrementally and answers:
//!
//! - [`Linker::read_by`]: the objects a TrainJob reads;
//! - [`Linker::trainjobs_reading`]: the TrainJobs an object is read for;
//! - [`Linker::trainjobs_for`]: those, and the TrainJobs whose presence
//!   keeps it from being an orphan;
//! - [`Linker::affected_by`]: the observed objects (TrainJobs and orphan
//!   candidates) whose observation an object can change;
//! - [`Linker::view_of`]: a sub-snapshot that classifies given observed
//!   objects exactly as the whole snapshot does.
//!
//! The links are a superset of what the rules select, never a subset: a
//! Workload links to a TrainJob of its `job-uid` in any namespace, and a
//! TrainJob reads every JobSet of its name and every Workload of its UID
//! (section 4 picks one); the engine's own selection then picks from the
//! view. So an
//! observed object classified in the sub-snapshot of a view holding it
//! gets the observation the whole snapshot gives it, provided the caller
//! keeps only the observations of the objects it asked for, passes the
//! whole snapshot's `mode` and `nodesReadable` explicitly (a sub-snapshot
//! could infer others, section 2), and objects of one kind have distinct
//! UIDs (as the API guarantees; section 2 reads a duplicate once, the first
//! occurrence, which a view may not hold).
//!
//! Pure: no IO, no panics on input. A field of the wrong type links
//! nothing (the engine itself rejects such input). Indexes are
//! `BTreeMap`s, so every answer is deterministic.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use serde_json::Value;

use crate::keys;

/// One link between objects read together.
///
/// Its texts are shared (`Arc<str>`): a [`Linker`] hands every object the
/// equal link it already holds, so the sixteen pods of a job hold one copy
/// of its namespace, labels and JobSet name, not sixteen.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Link {
    /// A TrainJob by namespace and name: its JobSet (the JobSet of that
    /// name) and the pods whose `jobset-name` label is that name.
    Name { namespace: Arc<str>, name: Arc<str> },
    /// A TrainJob by its job-id and submission labels: the pods of the
    /// namespace that carry both.
    Labels {
        namespace: Arc<str>,
        job_id: Arc<str>,
        submission: Arc<str>,
    },
    /// A TrainJob by UID as section 4 reads it: Workloads by
    /// `kueue.x-k8s.io/job-uid`, captured pods by `trainJobUID`.
    Uid(Arc<str>),
    /// A TrainJob by UID as section 11 reads it: JobSets and runtime copies
    /// by their TrainJob owner references. The TrainJob does not read them
    /// through this link; its presence only keeps them from being orphans.
    Owner(Arc<str>),
    /// A Node by name: the pods (live or captured) whose `spec.nodeName`
    /// it is.
    Node(Arc<str>),
}

/// Whether, and how, an object has an observation of its own.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Role {
    /// A TrainJob: always observed.
    TrainJob,
    /// Observed as an orphan when none of the TrainJobs it seeks is there
    /// (section 11): a JobSet with a TrainJob owner reference, a runtime
    /// copy with a job-id label and one, a live pod with a job-id label.
    OrphanCandidate,
    /// Only read for others (Workloads, Nodes, captured pods, other pods
    /// and objects), or not read at all (kinds the engine ignores).
    #[default]
    Read,
}

impl Role {
    /// Whether objects of this role can have an observation.
    pub fn observed(self) -> bool {
        self != Role::Read
    }
}

/// The links of one object, and its role.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Links {
    pub role: Role,
    /// What others find it by (TrainJobs and Nodes only).
    pub offers: Vec<Link>,
    /// What it is read with.
    pub seeks: Vec<Link>,
}

/// What sections 4 and 11 read of an object to link it, besides its
/// identity: the one list of them. The server's stored object keeps these
/// (its projection hands what it parsed to [`LinkFields::of`]), the
/// browser's store reads them from an item's text
/// ([`LinkedObject::of_json`], through the same constructor), and
/// [`Links::of`] reads nothing else. Section 1: an empty string is absent.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkFields {
    /// The `dispatch.phpboyscout.uk/job-id` label.
    pub job_id: Option<String>,
    /// The `dispatch.phpboyscout.uk/submission` label.
    pub submission: Option<String>,
    /// The `jobset.sigs.k8s.io/jobset-name` label.
    pub jobset_name: Option<String>,
    /// The `kueue.x-k8s.io/job-uid` label.
    pub job_uid: Option<String>,
    /// The UIDs of the owner references of kind TrainJob, in order.
    pub trainjob_owners: Vec<String>,
    /// Whether any owner reference is of kind TrainJob, with a UID or
    /// without (one without counts for section 11 and links nothing).
    pub trainjob_owned: bool,
    /// `spec.nodeName`.
    pub node_name: Option<String>,
}

/// A non-empty text (section 1: an empty string is absent).
fn present(text: Option<&str>) -> Option<&str> {
    text.filter(|t| !t.is_empty())
}

impl LinkFields {
    /// Reads the link fields of an object from what its reader found:
    /// `label` gives a label's string value, `owners` each owner
    /// reference's `kind` and `uid` (where they are strings), `node_name`
    /// the string `spec.nodeName`. Which labels and owners link, and that
    /// an empty string is absent, are decided here, for every reader.
    pub fn of<'v>(
        label: impl Fn(&str) -> Option<&'v str>,
        owners: impl IntoIterator<Item = (Option<&'v str>, Option<&'v str>)>,
        node_name: Option<&'v str>,
    ) -> LinkFields {
        let label = |key: &str| present(label(key)).map(str::to_string);
        let mut trainjob_owned = false;
        let mut trainjob_owners = Vec::new();
        for (kind, uid) in owners {
            if kind == Some("TrainJob") {
                trainjob_owned = true;
                trainjob_owners.extend(present(uid).map(str::to_string));
            }
        }
        LinkFields {
            job_id: label(keys::JOB_ID),
            submission: label(keys::SUBMISSION),
            jobset_name: label(keys::JOBSET_NAME),
            job_uid: label(keys::JOB_UID),
            trainjob_owners,
            trainjob_owned,
            node_name: present(node_name).map(str::to_string),
        }
    }

    /// Bytes its strings hold, for stores that bound their memory.
    pub fn heap_bytes(&self) -> usize {
        let labels = [
            &self.job_id,
            &self.submission,
            &self.jobset_name,
            &self.job_uid,
            &self.node_name,
        ];
        labels
            .iter()
            .flat_map(|l| l.as_ref())
            .map(String::capacity)
            .sum::<usize>()
            + self.trainjob_owners.capacity() * std::mem::size_of::<String>()
            + self
                .trainjob_owners
                .iter()
                .map(String::capacity)
                .sum::<usize>()
    }
}

/// An object as linking reads it: `kind`, `metadata.namespace`,
/// `metadata.name`, `metadata.uid` (each `""` when absent) and its
/// [`LinkFields`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LinkedObject {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub fields: LinkFields,
}

/// The typed pass of [`LinkedObject::of_json`]: the parts of an item that
/// linking reads, everything else skipped unbuilt; each part is read by
/// [`LinkedObject::of_parts`], as [`LinkedObject::of_value`] reads it. A
/// part that is not an object where one is expected, or a key given twice,
/// fails it, and the whole value is read instead.
#[derive(serde::Deserialize)]
struct ItemText {
    kind: Option<Value>,
    metadata: Option<MetadataText>,
    spec: Option<SpecText>,
}

#[derive(serde::Deserialize)]
struct MetadataText {
    name: Option<Value>,
    namespace: Option<Value>,
    uid: Option<Value>,
    labels: Option<Value>,
    #[serde(rename = "ownerReferences")]
    owner_references: Option<Value>,
}

#[derive(serde::Deserialize)]
struct SpecText {
    #[serde(rename = "nodeName")]
    node_name: Option<Value>,
}

/// The typed pass of a `captured` entry.
#[derive(serde::Deserialize)]
struct CapturedText {
    #[serde(rename = "trainJobUID")]
    trainjob_uid: Option<Value>,
    pod: Option<ItemText>,
}

/// The parts of an item linking reads, wherever they were found.
struct Parts<'v> {
    kind: Option<&'v Value>,
    name: Option<&'v Value>,
    namespace: Option<&'v Value>,
    uid: Option<&'v Value>,
    labels: Option<&'v Value>,
    owner_references: Option<&'v Value>,
    node_name: Option<&'v Value>,
}

impl ItemText {
    fn parts(&self) -> Parts<'_> {
        let metadata = self.metadata.as_ref();
        Parts {
            kind: self.kind.as_ref(),
            name: metadata.and_then(|m| m.name.as_ref()),
            namespace: metadata.and_then(|m| m.namespace.as_ref()),
            uid: metadata.and_then(|m| m.uid.as_ref()),
            labels: metadata.and_then(|m| m.labels.as_ref()),
            owner_references: metadata.and_then(|m| m.owner_references.as_ref()),
            node_name: self.spec.as_ref().and_then(|s| s.node_name.as_ref()),
        }
    }
}

/// A non-empty string (section 1: empty is absent).
fn text(value: Option<&Value>) -> Option<&str> {
    value?.as_str().filter(|s| !s.is_empty())
}

impl LinkedObject {
    fn of_parts(parts: Parts<'_>) -> LinkedObject {
        let owners = parts
            .owner_references
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|o| {
                (
                    o.get("kind").and_then(Value::as_str),
                    o.get("uid").and_then(Value::as_str),
                )
            });
        LinkedObject {
            kind: parts.kind.and_then(Value::as_str).unwrap_or("").to_string(),
            namespace: text(parts.namespace).unwrap_or("").to_string(),
            name: text(parts.name).unwrap_or("").to_string(),
            uid: text(parts.uid).unwrap_or("").to_string(),
            fields: LinkFields::of(
                |key| {
                    parts
                        .labels
                        .and_then(|l| l.get(key))
                        .and_then(Value::as_str)
                },
                owners,
                parts.node_name.and_then(Value::as_str),
            ),
        }
    }

    /// Reads an item (an object with its `kind`). A field of the wrong type
    /// links nothing.
    pub fn of_value(item: &Value) -> LinkedObject {
        let metadata = item.get("metadata");
        let meta = |key: &str| metadata.and_then(|m| m.get(key));
        LinkedObject::of_parts(Parts {
            kind: item.get("kind"),
            name: meta("name"),
            namespace: meta("namespace"),
            uid: meta("uid"),
            labels: meta("labels"),
            owner_references: meta("ownerReferences"),
            node_name: item.get("spec").and_then(|s| s.get("nodeName")),
        })
    }

    /// Reads an item's JSON text: a typed pass that builds only the parts
    /// linking reads, or, where it is refused, the whole value, so the
    /// answer is always [`LinkedObject::of_value`]'s. Text that is not JSON
    /// reads as nothing.
    pub fn of_json(text: &str) -> LinkedObject {
        match serde_json::from_str::<ItemText>(text) {
            Ok(item) => LinkedObject::of_parts(item.parts()),
            Err(_) => LinkedObject::of_value(&serde_json::from_str(text).unwrap_or(Value::Null)),
        }
    }

    /// Reads a `captured` entry's JSON text (`{"trainJobUID": .., "pod":
    /// {..}}`): the TrainJob UID (`""` when absent) and the pod, as
    /// [`LinkedObject::of_json`] reads an item.
    pub fn of_captured_json(entry: &str) -> (String, LinkedObject) {
        match serde_json::from_str::<CapturedText>(entry) {
            Ok(captured) => (
                text(captured.trainjob_uid.as_ref())
                    .unwrap_or("")
                    .to_string(),
                captured
                    .pod
                    .map(|pod| LinkedObject::of_parts(pod.parts()))
                    .unwrap_or_default(),
            ),
            Err(_) => {
                let whole: Value = serde_json::from_str(entry).unwrap_or(Value::Null);
                (
                    text(whole.get("trainJobUID")).unwrap_or("").to_string(),
                    whole
                        .get("pod")
                        .map(LinkedObject::of_value)
                        .unwrap_or_default(),
                )
            }
        }
    }
}

impl Links {
    /// The links of an object of `kind` (as its `kind` field says) from
    /// its identity and [`LinkFields`]: what sections 4 and 11 read. Kinds
    /// the engine does not read link nothing.
    pub fn of(kind: &str, namespace: &str, name: &str, uid: &str, fields: &LinkFields) -> Links {
        let by_labels = match (fields.job_id.as_deref(), fields.submission.as_deref()) {
            (Some(job_id), Some(submission)) => Some(Link::Labels {
                namespace: namespace.into(),
                job_id: job_id.into(),
                submission: submission.into(),
            }),
            _ => None,
        };
        let by_name = || Link::Name {
            namespace: namespace.into(),
            name: name.into(),
        };
        let owners = || {
            fields
                .trainjob_owners
                .iter()
                .map(|uid| Link::Owner(uid.as_str().into()))
        };
        let mut links = Links::default();
        match kind {
            "TrainJob" => {
                links.role = Role::TrainJob;
                if !uid.is_empty() {
                    links.offers.push(Link::Uid(uid.into()));
                    links.offers.push(Link::Owner(uid.into()));
                }
                links.offers.extend(by_labels);
                links.offers.push(by_name());
            }
            "JobSet" => {
                if fields.trainjob_owned {
                    links.role = Role::OrphanCandidate;
                }
                links.seeks.push(by_name());
                links.seeks.extend(owners());
            }
            "Workload" => {
                if let Some(uid) = fields.job_uid.as_deref() {
                    links.seeks.push(Link::Uid(uid.into()));
                }
            }
            "TrainingRuntime" => {
                if fields.trainjob_owned && fields.job_id.is_some() {
                    links.role = Role::OrphanCandidate;
                }
                links.seeks.extend(owners());
            }
            "Pod" => {
                if fields.job_id.is_some() {
                    links.role = Role::OrphanCandidate;
                }
                links.seeks.extend(by_labels);
                if let Some(jobset) = fields.jobset_name.as_deref() {
                    links.seeks.push(Link::Name {
                        namespace: namespace.into(),
                        name: jobset.into(),
                    });
                }
                links.seeks.extend(node_link(fields));
            }
            "Node" => links.offers.push(Link::Node(name.into())),
            _ => {}
        }
        links
    }

    /// [`Links::of`] an object read whole.
    pub fn of_object(object: &LinkedObject) -> Links {
        Links::of(
            &object.kind,
            &object.namespace,
            &object.name,
            &object.uid,
            &object.fields,
        )
    }

    /// The links of a snapshot item (an object with its `kind`).
    pub fn of_item(item: &Value) -> Links {
        Links::of_object(&LinkedObject::of_value(item))
    }

    /// The links of a captured pod: its TrainJob by UID (`""`: none), its
    /// pod's Node.
    pub fn of_captured_pod(trainjob_uid: &str, pod: &LinkFields) -> Links {
        let mut links = Links::default();
        if !trainjob_uid.is_empty() {
            links.seeks.push(Link::Uid(trainjob_uid.into()));
        }
        links.seeks.extend(node_link(pod));
        links
    }

    /// The links of a `captured` entry (`{"trainJobUID": .., "pod": {..}}`).
    pub fn of_captured(entry: &Value) -> Links {
        let pod = entry
            .get("pod")
            .map(LinkedObject::of_value)
            .unwrap_or_default();
        Links::of_captured_pod(text(entry.get("trainJobUID")).unwrap_or(""), &pod.fields)
    }
}

fn node_link(pod: &LinkFields) -> Option<Link> {
    pod.node_name.as_deref().map(|node| Link::Node(node.into()))
}

/// An incremental index of links over the consumer's object keys `K`
/// (items and captured entries alike). See the module docs.
#[derive(Debug, Clone)]
pub struct Linker<K> {
    objects: BTreeMap<K, Links>,
    offered: BTreeMap<Link, BTreeSet<K>>,
    sought: BTreeMap<Link, BTreeSet<K>>,
}

impl<K: Ord + Clone> Default for Linker<K> {
    fn default() -> Self {
        Linker {
            objects: BTreeMap::new(),
            offered: BTreeMap::new(),
            sought: BTreeMap::new(),
        }
    }
}

fn unlink<K: Ord>(map: &mut BTreeMap<Link, BTreeSet<K>>, link: &Link, key: &K) {
    if let Some(set) = map.get_mut(link) {
        set.remove(key);
        if set.is_empty() {
            map.remove(link);
        }
    }
}

impl<K: Ord + Clone> Linker<K> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces a snapshot item.
    pub fn upsert(&mut self, key: K, item: &Value) {
        self.upsert_links(key, Links::of_item(item));
    }

    /// Adds or replaces a `captured` entry.
    pub fn upsert_captured(&mut self, key: K, entry: &Value) {
        self.upsert_links(key, Links::of_captured(entry));
    }

    /// Adds or replaces an object by its links.
    pub fn upsert_links(&mut self, key: K, mut links: Links) {
        self.remove(&key);
        for link in links.offers.iter_mut().chain(links.seeks.iter_mut()) {
            self.intern(link);
        }
        for link in &links.offers {
            self.offered
                .entry(link.clone())
                .or_default()
                .insert(key.clone());
        }
        for link in &links.seeks {
            self.sought
                .entry(link.clone())
                .or_default()
                .insert(key.clone());
        }
        self.objects.insert(key, links);
    }

    /// Adds or replaces (`Some`) or forgets (`None`) an object, and
    /// returns the observed objects whose observation the change can
    /// alter: [`Linker::affected_by`] before it and after it, whose union
    /// covers it. Every live consumer marks its changes with this.
    pub fn replace(&mut self, key: K, links: Option<Links>) -> BTreeSet<K> {
        let mut affected = self.affected_by(&key);
        match links {
            Some(links) => self.upsert_links(key.clone(), links),
            None => {
                self.remove(&key);
            }
        }
        affected.extend(self.affected_by(&key));
        affected
    }

    /// Makes `link` share the texts of the equal link already indexed, if
    /// any (see [`Link`]).
    fn intern(&self, link: &mut Link) {
        let known = self
            .offered
            .get_key_value(link)
            .or_else(|| self.sought.get_key_value(link));
        if let Some((known, _)) = known {
            *link = known.clone();
        }
    }

    /// Forgets an object; whether it was known.
    pub fn remove(&mut self, key: &K) -> bool {
        let Some(links) = self.objects.remove(key) else {
            return false;
        };
        for link in &links.offers {
            unlink(&mut self.offered, link, key);
        }
        for link in &links.seeks {
            unlink(&mut self.sought, link, key);
        }
        true
    }

    /// The links of a known object.
    pub fn links(&self, key: &K) -> Option<&Links> {
        self.objects.get(key)
    }

    /// Every known object.
    pub fn keys(&self) -> impl Iterator<Item = &K> {
        self.objects.keys()
    }

    pub fn len(&self) -> usize {
        self.objects.len()
    }

    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    fn role(&self, key: &K) -> Role {
        self.objects.get(key).map_or(Role::Read, |l| l.role)
    }

    /// The objects that seek `link`.
    pub fn seeking<'l>(&'l self, link: &Link) -> impl Iterator<Item = &'l K> + 'l {
        self.sought.get(link).into_iter().flatten()
    }

    /// The objects that offer `link`.
    pub fn offering<'l>(&'l self, link: &Link) -> impl Iterator<Item = &'l K> + 'l {
        self.offered.get(link).into_iter().flatten()
    }

    /// The TrainJobs `key` is read for (section 4) or whose presence keeps
    /// it from being an orphan (section 11); for a pod exactly the
    /// TrainJobs section 4 reads it for. Empty for TrainJobs and Nodes.
    pub fn trainjobs_for(&self, key: &K) -> BTreeSet<K> {
        match self.objects.get(key) {
            Some(links) => self.trainjobs_seeked_by(links),
            None => BTreeSet::new(),
        }
    }

    /// [`Linker::trainjobs_for`] an object that is not (or no longer)
    /// indexed, by its links: a deleted pod's TrainJobs, say.
    pub fn trainjobs_seeked_by(&self, links: &Links) -> BTreeSet<K> {
        self.trainjobs_offering(links.seeks.iter())
    }

    /// The TrainJobs that read `key` (section 4): [`Linker::trainjobs_for`]
    /// less those it only names as an owner (section 11). For a JobSet the
    /// TrainJob of its name; for a Workload the TrainJobs of its job-uid
    /// (in any namespace: the engine reads only its own namespace's).
    pub fn trainjobs_reading(&self, key: &K) -> BTreeSet<K> {
        let seeks = self.objects.get(key).into_iter().flat_map(|l| &l.seeks);
        self.trainjobs_offering(seeks.filter(|link| !matches!(link, Link::Owner(_))))
    }

    fn trainjobs_offering<'l>(&self, seeks: impl Iterator<Item = &'l Link>) -> BTreeSet<K> {
        let mut out = BTreeSet::new();
        for link in seeks {
            out.extend(
                self.offering(link)
                    .filter(|o| self.role(o) == Role::TrainJob)
                    .cloned(),
            );
        }
        out
    }

    /// The objects TrainJob `trainjob` reads: those seeking what it offers
    /// (not as an owner; a superset of section 4's selection, see the
    /// module docs) and the Nodes those name. Empty for other objects.
    pub fn read_by(&self, trainjob: &K) -> BTreeSet<K> {
        let mut out = BTreeSet::new();
        let Some(links) = self.objects.get(trainjob) else {
            return out;
        };
        if links.role != Role::TrainJob {
            return out;
        }
        for link in links.offers.iter().filter(|l| !matches!(l, Link::Owner(_))) {
            out.extend(self.seeking(link).cloned());
        }
        let nodes: Vec<K> = out
            .iter()
            .filter_map(|k| self.objects.get(k))
            .flat_map(|l| &l.seeks)
            .filter(|link| matches!(link, Link::Node(_)))
            .flat_map(|link| self.offering(link).cloned())
            .collect();
        out.extend(nodes);
        out
    }

    /// The observed objects whose observation `key`, as indexed now, can
    /// change: itself when observed; for a TrainJob the orphan candidates
    /// seeking it; for a Node the TrainJobs reading its pods; for others
    /// the TrainJobs they are read for. A change is covered by the union
    /// of this before and after it.
    pub fn affected_by(&self, key: &K) -> BTreeSet<K> {
        let mut out = BTreeSet::new();
        let Some(links) = self.objects.get(key) else {
            return out;
        };
        if links.role.observed() {
            out.insert(key.clone());
        }
        for link in &links.offers {
            for seeker in self.seeking(link) {
                if matches!(link, Link::Node(_)) {
                    out.extend(self.trainjobs_for(seeker));
                } else if self.role(seeker).observed() {
                    out.insert(seeker.clone());
                }
            }
        }
        out.extend(self.trainjobs_for(key));
        out
    }

    /// What to classify `key`'s observation from: a TrainJob with what it
    /// reads, an orphan candidate with the TrainJobs it seeks, anything
    /// else alone.
    pub fn view(&self, key: &K) -> BTreeSet<K> {
        let mut out = match self.role(key) {
            Role::TrainJob => self.read_by(key),
            Role::OrphanCandidate => self.trainjobs_for(key),
            Role::Read => BTreeSet::new(),
        };
        if self.objects.contains_key(key) {
            out.insert(key.clone());
        }
        out
    }

    /// The union of the views of `keys`: one sub-snapshot in which each of
    /// them is classified as in the whole snapshot.
    pub fn view_of<'k>(&self, keys: impl IntoIterator<Item = &'k K>) -> BTreeSet<K>
    where
        K: 'k,
    {
        let mut out = BTreeSet::new();
        for key in keys {
            out.extend(self.view(key));
        }
        out
    }
}
