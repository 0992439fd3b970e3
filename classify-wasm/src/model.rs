//! Small typed views of the objects the rules read: only the fields the spec
//! names, each checked for its type (section 1, Types). Everything else in an
//! object is never looked at, which is what keeps a 16,000-pod namespace cheap.

pub(crate) use crate::fields::ReadKey as K;
use crate::fields::{same_free_key, ANNOTATIONS_READ, LABELS_READ};
use crate::time::Time;
use crate::tree::{Node, Value};

/// A wrong type found while reading a view; `at` is the node's offset.
#[derive(Debug, Clone)]
pub struct ReadError {
    pub at: u32,
    pub message: String,
}

pub type Read<T> = Result<T, ReadError>;

fn wrong(node: &Node<'_>, field: &str, expected: &str) -> ReadError {
    ReadError {
        at: node.at,
        message: format!("`{field}` must be {expected}, found {}", node.type_name()),
    }
}

/// The field `key` of a mapping, absent when missing or null.
pub fn field<'n, 'a>(node: &'n Node<'a>, key: K) -> Option<&'n Node<'a>> {
    node.get_read(key).filter(|v| !v.is_null())
}

/// A string field; absent when missing, null or empty.
pub fn string<'n>(node: &'n Node<'_>, key: K) -> Read<Option<&'n str>> {
    match field(node, key) {
        None => Ok(None),
        Some(v) => as_string(v, key).map(|s| Some(s).filter(|s| !s.is_empty())),
    }
}

fn as_string<'n>(v: &'n Node<'_>, key: K) -> Read<&'n str> {
    match &v.value {
        Value::Str(s) | Value::Plain(s) => Ok(s.as_ref()),
        _ => Err(wrong(v, key.name(), "a string")),
    }
}

pub fn boolean(node: &Node<'_>, key: K) -> Read<Option<bool>> {
    let Some(v) = field(node, key) else {
        return Ok(None);
    };
    match &v.value {
        Value::Bool(b) => Ok(Some(*b)),
        // YAML 1.2 core schema booleans.
        Value::Plain(s) => match s.as_ref() {
            "true" | "True" | "TRUE" => Ok(Some(true)),
            "false" | "False" | "FALSE" => Ok(Some(false)),
            _ => Err(wrong(v, key.name(), "a boolean")),
        },
        _ => Err(wrong(v, key.name(), "a boolean")),
    }
}

/// An integer written without fraction or exponent.
pub fn integer(node: &Node<'_>, key: K) -> Read<Option<i64>> {
    let Some(v) = field(node, key) else {
        return Ok(None);
    };
    let text = match &v.value {
        Value::Number(n) => *n,
        Value::Plain(s) => s.strip_prefix('+').unwrap_or(s),
        _ => return Err(wrong(v, key.name(), "an integer")),
    };
    let digits = text.strip_prefix('-').unwrap_or(text);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(wrong(v, key.name(), "an integer"));
    }
    text.parse::<i64>().map(Some).map_err(|_| ReadError {
        at: v.at,
        message: format!("`{}` is an integer out of range", key.name()),
    })
}

pub fn object<'n, 'a>(node: &'n Node<'a>, key: K) -> Read<Option<&'n Node<'a>>> {
    match field(node, key) {
        None => Ok(None),
        Some(v) if v.is_object() => Ok(Some(v)),
        Some(v) => Err(wrong(v, key.name(), "an object")),
    }
}

/// A list field's items; each item must be an object.
pub fn objects<'n, 'a>(node: &'n Node<'a>, key: K) -> Read<&'n [Node<'a>]> {
    match field(node, key) {
        None => Ok(&[]),
        Some(v) => match &v.value {
            Value::Seq(items) => {
                for item in items {
                    if !item.is_object() {
                        return Err(wrong(item, &format!("{}[]", key.name()), "an object"));
                    }
                }
                Ok(items)
            }
            _ => Err(wrong(v, key.name(), "a list")),
        },
    }
}

/// A time field: checked to be a string when read, parsed only when asked
/// for, since most are never compared (a namespace's pods have thousands).
#[derive(Debug, Clone, Copy, Default)]
pub struct TimeText<'a>(Option<&'a str>);

impl TimeText<'_> {
    /// The instant; absent when missing or not a valid time (section 1).
    pub fn get(self) -> Option<Time> {
        self.0.and_then(Time::parse)
    }
}

fn time<'a>(node: &'a Node<'a>, key: K) -> Read<TimeText<'a>> {
    Ok(TimeText(string(node, key)?))
}

/// A string-to-string map (labels, annotations), checked when read (every
/// value must be a string; a null one is absent, like an empty one), of
/// which only the `N` keys the rules read are kept: each one's value is
/// found once, when the object is read, rather than by comparing key text
/// in the tree on every lookup (the rules look a pod's labels up a dozen
/// times, and that text lies far away in a big dump's input).
#[derive(Debug, Clone, Copy)]
struct ReadMap<'a, const N: usize> {
    /// The value of the first entry under `read[i]`; absent when missing,
    /// null or empty.
    values: [Option<&'a str>; N],
}

impl<const N: usize> Default for ReadMap<'_, N> {
    fn default() -> Self {
        ReadMap { values: [None; N] }
    }
}

impl<'a, const N: usize> ReadMap<'a, N> {
    fn read(node: &'a Node<'a>, key: K, read: &[&str; N]) -> Read<Self> {
        let mut map = ReadMap::default();
        let Some(v) = field(node, key) else {
            return Ok(map);
        };
        if !v.is_object() {
            return Err(wrong(v, key.name(), "an object"));
        }
        // Which of `read` an entry has already been found for: only the
        // first entry under a key counts, even when it is empty.
        let mut found = [false; N];
        for (k, value) in v.entries() {
            let text = match &value.value {
                Value::Str(s) | Value::Plain(s) => Some(s.as_ref()),
                Value::Null => None,
                _ => return Err(wrong(value, &format!("{}.{k}", key.name()), "a string")),
            };
            let slots = read.iter().zip(found.iter_mut()).zip(map.values.iter_mut());
            for ((read_key, found), slot) in slots {
                if !*found && same_free_key(k, read_key) {
                    *found = true;
                    *slot = text.filter(|s| !s.is_empty());
                }
            }
        }
        Ok(map)
    }

    /// The value under `key`, one of `read`.
    fn get(&self, key: &str, read: &[&str; N]) -> Option<&'a str> {
        let slot = read
            .iter()
            .position(|read_key| same_free_key(read_key, key));
        debug_assert!(slot.is_some(), "{key} is not a key the rules read");
        slot.and_then(|i| self.values.get(i).copied().flatten())
    }
}

#[derive(Debug, Clone, Default)]
pub struct OwnerRef<'a> {
    pub kind: Option<&'a str>,
    pub name: Option<&'a str>,
    pub uid: Option<&'a str>,
    pub controller: bool,
}

#[derive(Debug, Clone, Default)]
pub struct Meta<'a> {
    pub name: &'a str,
    pub namespace: &'a str,
    pub uid: &'a str,
    labels: ReadMap<'a, { LABELS_READ.len() }>,
    annotations: ReadMap<'a, { ANNOTATIONS_READ.len() }>,
    pub owners: Vec<OwnerRef<'a>>,
    pub creation: TimeText<'a>,
    pub deletion_timestamp: Option<&'a str>,
}

impl<'a> Meta<'a> {
    pub fn read(item: &'a Node<'a>) -> Read<Self> {
        let Some(m) = object(item, K::Metadata)? else {
            return Ok(Meta::default());
        };
        let owners = objects(m, K::OwnerReferences)?
            .iter()
            .map(|o| {
                Ok(OwnerRef {
                    kind: string(o, K::Kind)?,
                    name: string(o, K::Name)?,
                    uid: string(o, K::Uid)?,
                    controller: boolean(o, K::Controller)?.unwrap_or(false),
                })
            })
            .collect::<Read<Vec<_>>>()?;
        Ok(Meta {
            name: string(m, K::Name)?.unwrap_or(""),
            namespace: string(m, K::Namespace)?.unwrap_or(""),
            uid: string(m, K::Uid)?.unwrap_or(""),
            labels: ReadMap::read(m, K::Labels, &LABELS_READ)?,
            annotations: ReadMap::read(m, K::Annotations, &ANNOTATIONS_READ)?,
            owners,
            creation: time(m, K::CreationTimestamp)?,
            deletion_timestamp: string(m, K::DeletionTimestamp)?,
        })
    }

    /// A label's value; absent when missing or empty. `key` is one of
    /// [`LABELS_READ`]: no other label is kept.
    pub fn label(&self, key: &str) -> Option<&'a str> {
        self.labels.get(key, &LABELS_READ)
    }

    /// An annotation's value, like [`Meta::label`]; `key` is one of
    /// [`ANNOTATIONS_READ`].
    pub fn annotation(&self, key: &str) -> Option<&'a str> {
        self.annotations.get(key, &ANNOTATIONS_READ)
    }

    /// The first owner reference with `controller: true`.
    pub fn controller(&self) -> Option<&OwnerRef<'a>> {
        self.owners.iter().find(|o| o.controller)
    }

    pub fn trainjob_owners(&self) -> impl Iterator<Item = &OwnerRef<'a>> {
        self.owners.iter().filter(|o| o.kind == Some("TrainJob"))
    }
}

#[derive(Debug, Clone, Default)]
pub struct Condition<'a> {
    pub kind: Option<&'a str>,
    pub status: Option<&'a str>,
    pub reason: Option<&'a str>,
    pub message: Option<&'a str>,
    pub last_transition: TimeText<'a>,
}

impl<'a> Condition<'a> {
    pub fn is_true(&self) -> bool {
        self.status == Some("True")
    }

    /// `<reason>: <message>`, or the one that is not empty, or nothing.
    pub fn words(&self) -> String {
        words(self.reason, self.message)
    }
}

/// Section 4's order among a TrainJob's Workloads: the greater rank is read
/// (the newest `creationTimestamp`, a missing or invalid one older than any
/// valid one, then the greatest name); of equal ranks, the first.
pub fn workload_rank(creation: Option<Time>, name: &str) -> (Option<Time>, &[u8]) {
    (creation, name.as_bytes())
}

pub fn words(reason: Option<&str>, message: Option<&str>) -> String {
    match (reason, message) {
        (Some(r), Some(m)) => format!("{r}: {m}"),
        (Some(one), None) | (None, Some(one)) => one.to_string(),
        (None, None) => String::new(),
    }
}

/// `<prefix>: <words>`, leaving out `: ` when the words are empty.
pub fn with_words(prefix: &str, words: &str) -> String {
    if words.is_empty() {
        prefix.to_string()
    } else {
        format!("{prefix}: {words}")
    }
}

#[derive(Debug, Clone, Default)]
pub struct Conditions<'a>(pub Vec<Condition<'a>>);

impl<'a> Conditions<'a> {
    fn read(status: Option<&'a Node<'a>>) -> Read<Self> {
        let Some(status) = status else {
            return Ok(Conditions::default());
        };
        objects(status, K::Conditions)?
            .iter()
            .map(|c| {
                Ok(Condition {
                    kind: string(c, K::Type)?,
                    status: string(c, K::Status)?,
                    reason: string(c, K::Reason)?,
                    message: string(c, K::Message)?,
                    last_transition: time(c, K::LastTransitionTime)?,
                })
            })
            .collect::<Read<Vec<_>>>()
            .map(Conditions)
    }

    /// The first entry of this type; entries with an absent type are ignored.
    pub fn get(&self, kind: &str) -> Option<&Condition<'a>> {
        self.0.iter().find(|c| c.kind == Some(kind))
    }

    pub fn is_true(&self, kind: &str) -> bool {
        self.get(kind).is_some_and(Condition::is_true)
    }

    /// Each condition type once, by its first entry, in order.
    pub fn firsts(&self) -> impl Iterator<Item = &Condition<'a>> {
        self.0.iter().enumerate().filter_map(|(i, c)| {
            let kind = c.kind?;
            (!self.0.iter().take(i).any(|e| e.kind == Some(kind))).then_some(c)
        })
    }
}

fn status_of<'a>(item: &'a Node<'a>) -> Read<Option<&'a Node<'a>>> {
    object(item, K::Status)
}

fn spec_of<'a>(item: &'a Node<'a>) -> Read<Option<&'a Node<'a>>> {
    object(item, K::Spec)
}

#[derive(Debug, Clone)]
pub struct TrainJob<'a> {
    pub meta: Meta<'a>,
    pub suspend: Option<bool>,
    pub conditions: Conditions<'a>,
}

impl<'a> TrainJob<'a> {
    pub fn read(item: &'a Node<'a>) -> Read<Self> {
        let suspend = match spec_of(item)? {
            Some(spec) => boolean(spec, K::Suspend)?,
            None => None,
        };
        Ok(TrainJob {
            meta: Meta::read(item)?,
            suspend,
            conditions: Conditions::read(status_of(item)?)?,
        })
    }
}

#[derive(Debug, Clone)]
pub struct JobSet<'a> {
    pub meta: Meta<'a>,
    pub restarts: Option<i64>,
}

impl<'a> JobSet<'a> {
    pub fn read(item: &'a Node<'a>) -> Read<Self> {
        let restarts = match status_of(item)? {
            Some(status) => integer(status, K::Restarts)?,
            None => None,
        };
        Ok(JobSet {
            meta: Meta::read(item)?,
            restarts,
        })
    }
}

#[derive(Debug, Clone)]
pub struct AdmissionCheck<'a> {
    pub name: Option<&'a str>,
    pub state: Option<&'a str>,
    pub message: Option<&'a str>,
}

#[derive(Debug, Clone)]
pub struct Workload<'a> {
    pub meta: Meta<'a>,
    pub active: Option<bool>,
    pub conditions: Conditions<'a>,
    pub admission_checks: Vec<AdmissionCheck<'a>>,
}

impl<'a> Workload<'a> {
    pub fn read(item: &'a Node<'a>) -> Read<Self> {
        let active = match spec_of(item)? {
            Some(spec) => boolean(spec, K::Active)?,
            None => None,
        };
        let status = status_of(item)?;
        let admission_checks = match status {
            Some(status) => objects(status, K::AdmissionChecks)?
                .iter()
                .map(|c| {
                    Ok(AdmissionCheck {
                        name: string(c, K::Name)?,
                        state: string(c, K::State)?,
                        message: string(c, K::Message)?,
                    })
                })
                .collect::<Read<Vec<_>>>()?,
            None => Vec::new(),
        };
        Ok(Workload {
            meta: Meta::read(item)?,
            active,
            conditions: Conditions::read(status)?,
            admission_checks,
        })
    }
}

#[derive(Debug, Clone)]
pub struct TrainingRuntime<'a> {
    pub meta: Meta<'a>,
}

impl<'a> TrainingRuntime<'a> {
    pub fn read(item: &'a Node<'a>) -> Read<Self> {
        Ok(TrainingRuntime {
            meta: Meta::read(item)?,
        })
    }
}

/// A Kubernetes Node (not to be confused with a tree [`Node`]).
#[derive(Debug, Clone)]
pub struct KubeNode<'a> {
    pub meta: Meta<'a>,
    pub conditions: Conditions<'a>,
}

impl<'a> KubeNode<'a> {
    pub fn read(item: &'a Node<'a>) -> Read<Self> {
        Ok(KubeNode {
            meta: Meta::read(item)?,
            conditions: Conditions::read(status_of(item)?)?,
        })
    }
}

#[derive(Debug, Clone, Default)]
pub struct Terminated<'a> {
    pub reason: Option<&'a str>,
    pub message: Option<&'a str>,
    pub exit_code: i64,
    pub finished_at: TimeText<'a>,
}

#[derive(Debug, Clone, Default)]
pub struct Waiting<'a> {
    pub reason: Option<&'a str>,
    pub message: Option<&'a str>,
}

#[derive(Debug, Clone, Default)]
pub struct NodeContainer<'a> {
    /// `state.terminated`, or when that is absent `lastState.terminated`.
    pub terminated: Option<Terminated<'a>>,
    pub waiting: Option<Waiting<'a>>,
}

#[derive(Debug, Clone)]
pub struct Pod<'a> {
    pub meta: Meta<'a>,
    pub node_name: Option<&'a str>,
    pub scheduling_gates: Vec<&'a str>,
    pub phase: Option<&'a str>,
    pub conditions: Conditions<'a>,
    pub node_container: Option<NodeContainer<'a>>,
}

fn terminated<'a>(state: Option<&'a Node<'a>>) -> Read<Option<Terminated<'a>>> {
    let Some(state) = state else {
        return Ok(None);
    };
    let Some(t) = object(state, K::Terminated)? else {
        return Ok(None);
    };
    Ok(Some(Terminated {
        reason: string(t, K::Reason)?,
        message: string(t, K::Message)?,
        exit_code: integer(t, K::ExitCode)?.unwrap_or(0),
        finished_at: time(t, K::FinishedAt)?,
    }))
}

impl<'a> Pod<'a> {
    pub fn read(item: &'a Node<'a>) -> Read<Self> {
        let (node_name, scheduling_gates) = match spec_of(item)? {
            Some(spec) => (
                string(spec, K::NodeName)?,
                objects(spec, K::SchedulingGates)?
                    .iter()
                    .map(|g| Ok(string(g, K::Name)?.unwrap_or("")))
                    .collect::<Read<Vec<_>>>()?,
            ),
            None => (None, Vec::new()),
        };
        let status = status_of(item)?;
        let (phase, node_container) = match status {
            Some(status) => {
                let phase = string(status, K::Phase)?;
                let mut node_container = None;
                for c in objects(status, K::ContainerStatuses)? {
                    // Every entry is type-checked; the first named `node` is read.
                    let name = string(c, K::Name)?;
                    let state = object(c, K::State)?;
                    let last_state = object(c, K::LastState)?;
                    let current = terminated(state)?;
                    let last = terminated(last_state)?;
                    let waiting = match state {
                        Some(state) => match object(state, K::Waiting)? {
                            Some(w) => Some(Waiting {
                                reason: string(w, K::Reason)?,
                                message: string(w, K::Message)?,
                            }),
                            None => None,
                        },
                        None => None,
                    };
                    if name == Some("node") && node_container.is_none() {
                        node_container = Some(NodeContainer {
                            terminated: current.or(last),
                            waiting,
                        });
                    }
                }
                (phase, node_container)
            }
            None => (None, None),
        };
        Ok(Pod {
            meta: Meta::read(item)?,
            node_name,
            scheduling_gates,
            phase,
            conditions: Conditions::read(status)?,
            node_container,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::keys::{ADMISSION, HOLD_INSTANCE, JOB_ID, SUBMISSION};
    use crate::tree;

    fn meta_of(labels: &str, annotations: &str) -> Result<[Option<String>; 4], String> {
        let text = format!(
            r#"{{"kind":"Pod","metadata":{{"name":"p","labels":{labels},"annotations":{annotations}}}}}"#
        );
        let documents = tree::parse(&text).map_err(|e| e.message)?;
        let item = documents.docs.first().ok_or("no document")?;
        let meta = Meta::read(item).map_err(|e| e.message)?;
        Ok([
            meta.label(JOB_ID),
            meta.label(SUBMISSION),
            meta.annotation(ADMISSION),
            meta.annotation(HOLD_INSTANCE),
        ]
        .map(|v| v.map(str::to_string)))
    }

    /// A read label or annotation is the value of the first entry under its
    /// key, absent when that entry is null or empty even if a later one is
    /// not; every value must be a string or null, read or not.
    #[test]
    fn labels_and_annotations_read_the_first_entry_under_each_key() {
        let some = |s: &str| Some(s.to_string());
        assert_eq!(
            meta_of(
                &format!(
                    r#"{{"{JOB_ID}":"llm","other":"x","{SUBMISSION}":"s1","{JOB_ID}":"later"}}"#
                ),
                &format!(r#"{{"{ADMISSION}":"2"}}"#)
            ),
            Ok([some("llm"), some("s1"), some("2"), None])
        );
        assert_eq!(
            meta_of(
                &format!(
                    r#"{{"{JOB_ID}":"","{JOB_ID}":"later","{SUBMISSION}":null,"{SUBMISSION}":"s2"}}"#
                ),
                &format!(r#"{{"{HOLD_INSTANCE}":"h","{HOLD_INSTANCE}":""}}"#)
            ),
            Ok([None, None, None, some("h")])
        );
        assert_eq!(meta_of("{}", "null"), Ok([None, None, None, None]));
        assert_eq!(
            meta_of(r#"{"other":5}"#, "{}"),
            Err("`labels.other` must be a string, found a number".to_string())
        );
        assert_eq!(
            meta_of("{}", "[]"),
            Err("`annotations` must be an object, found a list".to_string())
        );
    }
}
