//! What is read together: section 4 (what one TrainJob's classification
//! reads) and section 11 (whose absence makes an orphan) as links between
//! objects, for consumers that keep objects apart and classify only what a
//! change touches (the server's store, the browser's store).
//!
//! Every object offers or seeks [`Link`]s, read from the fields those
//! sections name ([`Links::of_item`], [`Links::of_captured`]). TrainJobs
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

use serde_json::Value;

use crate::keys;

/// One link between objects read together.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Link {
    /// A TrainJob by namespace and name: its JobSet (the JobSet of that
    /// name) and the pods whose `jobset-name` label is that name.
    Name { namespace: String, name: String },
    /// A TrainJob by its job-id and submission labels: the pods of the
    /// namespace that carry both.
    Labels {
        namespace: String,
        job_id: String,
        submission: String,
    },
    /// A TrainJob by UID as section 4 reads it: Workloads by
    /// `kueue.x-k8s.io/job-uid`, captured pods by `trainJobUID`.
    Uid(String),
    /// A TrainJob by UID as section 11 reads it: JobSets and runtime copies
    /// by their TrainJob owner references. The TrainJob does not read them
    /// through this link; its presence only keeps them from being orphans.
    Owner(String),
    /// A Node by name: the pods (live or captured) whose `spec.nodeName`
    /// it is.
    Node(String),
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

/// A non-empty string at `path` (section 1: empty is absent).
fn text_at<'v>(value: &'v Value, path: &[&str]) -> Option<&'v str> {
    let mut here = value;
    for key in path {
        here = here.get(key)?;
    }
    here.as_str().filter(|s| !s.is_empty())
}

fn label<'v>(item: &'v Value, key: &str) -> Option<&'v str> {
    text_at(item, &["metadata", "labels", key])
}

/// The UIDs of the owner references of kind TrainJob, and whether there
/// is any such reference (one without a UID counts for section 11, and
/// links nothing).
fn trainjob_owners(item: &Value) -> (bool, Vec<String>) {
    let owners: Vec<&Value> = item
        .get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|o| o.get("kind").and_then(Value::as_str) == Some("TrainJob"))
        .collect();
    let uids = owners
        .iter()
        .filter_map(|o| o.get("uid").and_then(Value::as_str))
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .collect();
    (!owners.is_empty(), uids)
}

fn node_link(pod: &Value) -> Option<Link> {
    text_at(pod, &["spec", "nodeName"]).map(|n| Link::Node(n.to_string()))
}

impl Links {
    /// The links of a snapshot item (an object with its `kind`), from the
    /// fields sections 4 and 11 read. Kinds the engine does not read link
    /// nothing.
    pub fn of_item(item: &Value) -> Links {
        let namespace = text_at(item, &["metadata", "namespace"])
            .unwrap_or("")
            .to_string();
        let name = text_at(item, &["metadata", "name"])
            .unwrap_or("")
            .to_string();
        let by_labels = match (label(item, keys::JOB_ID), label(item, keys::SUBMISSION)) {
            (Some(job_id), Some(submission)) => Some(Link::Labels {
                namespace: namespace.clone(),
                job_id: job_id.to_string(),
                submission: submission.to_string(),
            }),
            _ => None,
        };
        let mut links = Links::default();
        match item.get("kind").and_then(Value::as_str).unwrap_or("") {
            "TrainJob" => {
                links.role = Role::TrainJob;
                if let Some(uid) = text_at(item, &["metadata", "uid"]) {
                    links.offers.push(Link::Uid(uid.to_string()));
                    links.offers.push(Link::Owner(uid.to_string()));
                }
                links.offers.extend(by_labels);
                links.offers.push(Link::Name { namespace, name });
            }
            "JobSet" => {
                let (owned, uids) = trainjob_owners(item);
                if owned {
                    links.role = Role::OrphanCandidate;
                }
                links.seeks.push(Link::Name { namespace, name });
                links.seeks.extend(uids.into_iter().map(Link::Owner));
            }
            "Workload" => {
                if let Some(uid) = label(item, keys::JOB_UID) {
                    links.seeks.push(Link::Uid(uid.to_string()));
                }
            }
            "TrainingRuntime" => {
                let (owned, uids) = trainjob_owners(item);
                if owned && label(item, keys::JOB_ID).is_some() {
                    links.role = Role::OrphanCandidate;
                }
                links.seeks.extend(uids.into_iter().map(Link::Owner));
            }
            "Pod" => {
                if label(item, keys::JOB_ID).is_some() {
                    links.role = Role::OrphanCandidate;
                }
                links.seeks.extend(by_labels);
                if let Some(jobset) = label(item, keys::JOBSET_NAME) {
                    links.seeks.push(Link::Name {
                        namespace,
                        name: jobset.to_string(),
                    });
                }
                links.seeks.extend(node_link(item));
            }
            "Node" => links.offers.push(Link::Node(name)),
            _ => {}
        }
        links
    }

    /// The links of a `captured` entry (`{"trainJobUID": .., "pod": {..}}`):
    /// its TrainJob by UID, its pod's Node.
    pub fn of_captured(entry: &Value) -> Links {
        let mut links = Links::default();
        if let Some(uid) = text_at(entry, &["trainJobUID"]) {
            links.seeks.push(Link::Uid(uid.to_string()));
        }
        if let Some(pod) = entry.get("pod") {
            links.seeks.extend(node_link(pod));
        }
        links
    }
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
    pub fn upsert_links(&mut self, key: K, links: Links) {
        self.remove(&key);
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
