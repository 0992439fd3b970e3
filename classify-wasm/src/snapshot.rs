//! Section 2: a snapshot, or a kubectl dump read as one, turned into typed views.

use serde::{Deserialize, Serialize};

use crate::model::{
    self, field, objects, JobSet, KubeNode, Pod, Read, ReadError, TrainJob, TrainingRuntime,
    Workload, K,
};
use crate::tree::{Documents, Node, Value};
use crate::InputError;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Plain,
    Kueue,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Plain => "plain",
            Mode::Kueue => "kueue",
        }
    }
}

impl std::str::FromStr for Mode {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "plain" => Ok(Mode::Plain),
            "kueue" => Ok(Mode::Kueue),
            other => Err(format!(
                "unknown mode \"{other}\": expected \"plain\" or \"kueue\""
            )),
        }
    }
}

/// The kinds a snapshot's items are read as (section 2); items of any other
/// kind are ignored.
pub const READ_KINDS: [&str; 6] = [
    "TrainJob",
    "JobSet",
    "Workload",
    "TrainingRuntime",
    "Pod",
    "Node",
];

/// What a caller may set explicitly, over what the input says or implies.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Options {
    pub mode: Option<Mode>,
    pub nodes_readable: Option<bool>,
}

/// A deleted pod's last state, kept against the TrainJob it was captured for.
#[derive(Debug, Clone)]
pub struct CapturedPod<'a> {
    pub trainjob_uid: &'a str,
    pub pod: Pod<'a>,
}

/// Everything one classification reads, typed and deduplicated.
#[derive(Debug, Clone)]
pub struct Snapshot<'a> {
    pub mode: Mode,
    pub nodes_readable: bool,
    /// `nodesReadable` was inferred from the presence of Nodes (section 2):
    /// then a pod whose Node is missing is passed over by cause b.
    pub nodes_inferred: bool,
    pub trainjobs: Vec<TrainJob<'a>>,
    pub jobsets: Vec<JobSet<'a>>,
    pub workloads: Vec<Workload<'a>>,
    pub runtimes: Vec<TrainingRuntime<'a>>,
    pub pods: Vec<Pod<'a>>,
    pub nodes: Vec<KubeNode<'a>>,
    pub captured: Vec<CapturedPod<'a>>,
}

pub(crate) struct Items<'n, 'a> {
    pub items: Vec<&'n Node<'a>>,
    pub snapshot: Option<&'n Node<'a>>,
}

pub(crate) fn input_error(documents: &Documents<'_>, e: ReadError) -> InputError {
    InputError {
        position: documents.source.position(e.at),
        message: e.message,
    }
}

fn not_an_object(node: &Node<'_>, what: &str) -> ReadError {
    ReadError {
        at: node.at,
        message: format!("{what} must be an object, found {}", node.type_name()),
    }
}

/// Section 2's accepted shapes, flattened to the items they hold.
pub(crate) fn collect<'n, 'a>(all_docs: &'n [Node<'a>]) -> Read<Items<'n, 'a>> {
    let docs: Vec<&Node<'a>> = all_docs.iter().filter(|d| !d.is_null()).collect();
    if docs.is_empty() {
        return Err(ReadError {
            at: all_docs.first().map_or(0, |d| d.at),
            message: "no document: expected a Snapshot or kubectl output".to_string(),
        });
    }
    let mut out = Items {
        items: Vec::new(),
        snapshot: None,
    };
    for doc in &docs {
        match &doc.value {
            Value::Map(_) | Value::Fields(_) => match model::string(doc, K::Kind)? {
                Some("Snapshot") => {
                    if docs.len() > 1 {
                        return Err(ReadError {
                            at: doc.at,
                            message: "a Snapshot must be the only document".to_string(),
                        });
                    }
                    out.snapshot = Some(doc);
                    out.items.extend(objects(doc, K::Items)?);
                }
                Some("List") => out.items.extend(objects(doc, K::Items)?),
                _ => out.items.push(doc),
            },
            Value::Seq(items) => {
                for item in items {
                    if !item.is_object() {
                        return Err(not_an_object(item, "an item"));
                    }
                    out.items.push(item);
                }
            }
            _ => {
                return Err(ReadError {
                    at: doc.at,
                    message: format!(
                        "expected a Snapshot, an object, a List or a list of objects, found {}",
                        doc.type_name()
                    ),
                })
            }
        }
    }
    Ok(out)
}

impl<'a> Snapshot<'a> {
    /// Reads parsed documents as a snapshot, with the caller's overrides.
    pub fn read(documents: &'a Documents<'a>, options: Options) -> Result<Self, InputError> {
        Self::read_inner(documents, options, read_items).map_err(|e| input_error(documents, e))
    }

    /// [`Snapshot::read`], the items read into typed views by two threads
    /// (see [`read_items_on_two_threads`]); the same snapshot or error.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn read_on_two_threads(
        documents: &'a Documents<'a>,
        options: Options,
    ) -> Result<Self, InputError> {
        Self::read_inner(documents, options, read_items_on_two_threads)
            .map_err(|e| input_error(documents, e))
    }

    fn read_inner(
        documents: &'a Documents<'a>,
        options: Options,
        read_items: fn(&[&'a Node<'a>]) -> Read<Views<'a>>,
    ) -> Read<Self> {
        let Items { items, snapshot } = collect(&documents.docs)?;
        let views = read_items(&items)?;
        let mut snap = Snapshot {
            mode: Mode::Plain,
            nodes_readable: false,
            nodes_inferred: false,
            trainjobs: read_once(views.trainjobs, |x| &x.meta),
            jobsets: read_once(views.jobsets, |x| &x.meta),
            workloads: read_once(views.workloads, |x| &x.meta),
            runtimes: read_once(views.runtimes, |x| &x.meta),
            pods: read_once(views.pods, |x| &x.meta),
            nodes: read_once(views.nodes, |x| &x.meta),
            captured: Vec::new(),
        };

        let mut declared_mode = None;
        let mut declared_nodes = None;
        if let Some(doc) = snapshot {
            if let Some(m) = field(doc, K::Mode) {
                let text = model::string(doc, K::Mode)?;
                if let Some(text) = text {
                    declared_mode = Some(
                        text.parse::<Mode>()
                            .map_err(|message| ReadError { at: m.at, message })?,
                    );
                }
            }
            declared_nodes = model::boolean(doc, K::NodesReadable)?;
            for entry in objects(doc, K::Captured)? {
                let Some(pod) = field(entry, K::Pod) else {
                    return Err(ReadError {
                        at: entry.at,
                        message: "a captured entry must have a `pod` object".to_string(),
                    });
                };
                if !pod.is_object() {
                    return Err(not_an_object(pod, "`pod`"));
                }
                snap.captured.push(CapturedPod {
                    trainjob_uid: model::string(entry, K::TrainJobUid)?.unwrap_or(""),
                    pod: Pod::read(pod)?,
                });
            }
        }

        let inferred_mode = if !snap.workloads.is_empty()
            || snap
                .trainjobs
                .iter()
                .any(|t| t.meta.label(crate::keys::QUEUE_NAME).is_some())
        {
            Mode::Kueue
        } else {
            Mode::Plain
        };
        snap.mode = options.mode.or(declared_mode).unwrap_or(inferred_mode);
        match options.nodes_readable.or(declared_nodes) {
            Some(explicit) => snap.nodes_readable = explicit,
            None => {
                snap.nodes_readable = !snap.nodes.is_empty();
                snap.nodes_inferred = true;
            }
        }
        Ok(snap)
    }
}

/// The items of each read kind, in input order, each read whole (and so
/// type-checked), duplicates included.
#[derive(Default)]
struct Views<'a> {
    trainjobs: Vec<TrainJob<'a>>,
    jobsets: Vec<JobSet<'a>>,
    workloads: Vec<Workload<'a>>,
    runtimes: Vec<TrainingRuntime<'a>>,
    pods: Vec<Pod<'a>>,
    nodes: Vec<KubeNode<'a>>,
}

impl<'a> Views<'a> {
    /// Empty lists with room for the items of each read kind in `items`:
    /// each list is given its final capacity at once, since growing them by
    /// doubling copied the views (a Pod is a few hundred bytes) and touched
    /// about twice the memory a big dump needs. An item whose `kind` is not
    /// a string is not counted; reading it is the error.
    fn with_room_for(items: &[&'a Node<'a>]) -> Self {
        let mut counts = [0usize; READ_KINDS.len()];
        for item in items {
            if let Ok(Some(kind)) = model::string(item, K::Kind) {
                if let Some(count) = READ_KINDS
                    .iter()
                    .position(|k| *k == kind)
                    .and_then(|i| counts.get_mut(i))
                {
                    *count += 1;
                }
            }
        }
        let [trainjobs, jobsets, workloads, runtimes, pods, nodes] = counts;
        Views {
            trainjobs: Vec::with_capacity(trainjobs),
            jobsets: Vec::with_capacity(jobsets),
            workloads: Vec::with_capacity(workloads),
            runtimes: Vec::with_capacity(runtimes),
            pods: Vec::with_capacity(pods),
            nodes: Vec::with_capacity(nodes),
        }
    }

    /// Reads `item` as the read kind `kind` is (section 2) and keeps it.
    fn read(&mut self, kind: &str, item: &'a Node<'a>) -> Read<()> {
        match kind {
            "TrainJob" => self.trainjobs.push(TrainJob::read(item)?),
            "JobSet" => self.jobsets.push(JobSet::read(item)?),
            "Workload" => self.workloads.push(Workload::read(item)?),
            "TrainingRuntime" => self.runtimes.push(TrainingRuntime::read(item)?),
            "Pod" => self.pods.push(Pod::read(item)?),
            "Node" => self.nodes.push(KubeNode::read(item)?),
            // Any other kind is ignored.
            _ => {}
        }
        Ok(())
    }

    /// `later`'s items after these, as if read after them.
    #[cfg(not(target_arch = "wasm32"))]
    fn append(&mut self, mut later: Views<'a>) {
        self.trainjobs.append(&mut later.trainjobs);
        self.jobsets.append(&mut later.jobsets);
        self.workloads.append(&mut later.workloads);
        self.runtimes.append(&mut later.runtimes);
        self.pods.append(&mut later.pods);
        self.nodes.append(&mut later.nodes);
    }
}

/// The views of one kind with each object kept once, at its first
/// occurrence: the same UID, or without a UID the same namespace and name,
/// is the same object (section 2).
fn read_once<'a, T>(mut views: Vec<T>, meta: impl Fn(&T) -> &model::Meta<'a>) -> Vec<T> {
    /// Which object a view is; a UID never equals a namespace and name.
    #[derive(PartialEq, Eq, Hash)]
    enum Identity<'a> {
        Uid(&'a str),
        Name(&'a str, &'a str),
    }
    // Only asked whether a key was seen, never iterated: a hash set, as
    // the B-tree's string compares of 18,000 UIDs cost more.
    let mut seen: crate::hash::Set<Identity<'a>> = crate::hash::set(views.len());
    // Keeps each in place; only the views after a duplicate move.
    views.retain(|view| {
        let meta = meta(view);
        seen.insert(if meta.uid.is_empty() {
            Identity::Name(meta.namespace, meta.name)
        } else {
            Identity::Uid(meta.uid)
        })
    });
    views
}

/// The items of a read kind, in order, each read whole (and so
/// type-checked); the first error stops it.
fn read_items<'a>(items: &[&'a Node<'a>]) -> Read<Views<'a>> {
    let mut views = Views::with_room_for(items);
    read_items_into(items, &mut views)?;
    Ok(views)
}

fn read_items_into<'a>(items: &[&'a Node<'a>], views: &mut Views<'a>) -> Read<()> {
    for item in items {
        if let Some(kind) = model::string(item, K::Kind)? {
            views.read(kind, item)?;
        }
    }
    Ok(())
}

/// Below this many items one thread reads them all.
#[cfg(not(target_arch = "wasm32"))]
const TWO_THREADS_MIN_ITEMS: usize = 2_000;

/// [`read_items`], the second half of the items read by another thread.
/// Reading an item depends on that item alone, so the views are the same,
/// and the first half's first error, when it has one, is the first error.
/// The first half's lists have room for all, so the second's are appended
/// to them without growing them.
#[cfg(not(target_arch = "wasm32"))]
fn read_items_on_two_threads<'a>(items: &[&'a Node<'a>]) -> Read<Views<'a>> {
    if items.len() < TWO_THREADS_MIN_ITEMS {
        return read_items(items);
    }
    let (front, back) = items.split_at(items.len() / 2);
    std::thread::scope(|scope| {
        let Ok(back_read) = std::thread::Builder::new().spawn_scoped(scope, || read_items(back))
        else {
            return read_items(items);
        };
        let mut views = Views::with_room_for(items);
        read_items_into(front, &mut views)?;
        match back_read.join() {
            Ok(back) => views.append(back?),
            // Not expected (reading never panics); then this thread reads it.
            Err(_) => read_items_into(back, &mut views)?,
        }
        Ok(views)
    })
}

// Only the two-thread reading is tested here, and wasm has no threads.
#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use crate::tree;

    /// A List of `n` items (pods and TrainJobs, every tenth a duplicate of
    /// the one before), with a wrong type in the items named by `broken`.
    fn list(n: usize, broken: &[usize]) -> String {
        let items: Vec<String> = (0..n)
            .map(|i| {
                let uid = if i % 10 == 9 { i - 1 } else { i };
                let kind = if i % 3 == 0 { "TrainJob" } else { "Pod" };
                let name = if broken.contains(&i) {
                    "5".to_string()
                } else {
                    format!("\"o{i}\"")
                };
                format!(
                    r#"{{"kind":"{kind}","metadata":{{"name":{name},"uid":"u{uid}","labels":{{"dispatch.phpboyscout.uk/job-id":"j{i}"}}}},"status":{{"phase":"Running"}}}}"#
                )
            })
            .collect();
        format!(r#"{{"kind":"List","items":[{}]}}"#, items.join(",\n"))
    }

    fn read(text: &str, two_threads: bool) -> String {
        let documents = tree::parse(text).expect("parses");
        let read = if two_threads {
            Snapshot::read_on_two_threads(&documents, Options::default())
        } else {
            Snapshot::read(&documents, Options::default())
        };
        match read {
            Ok(snap) => format!("{snap:?}"),
            Err(e) => format!("error {e}"),
        }
    }

    /// Read on two threads, the snapshot is the one read on one, duplicates
    /// across the halves included, and so is the first error, whichever half
    /// it is in.
    #[test]
    fn two_threads_read_what_one_reads() {
        let n = 2 * TWO_THREADS_MIN_ITEMS + 1;
        let whole = list(n, &[]);
        let one = read(&whole, false);
        assert!(
            one.starts_with("Snapshot"),
            "{}",
            &one[..one.len().min(300)]
        );
        assert_eq!(one, read(&whole, true));
        for broken in [
            &[5][..],
            &[n - 2],
            &[n / 2],
            &[7, n - 3],
            &[n / 2 - 1, n / 2],
        ] {
            let text = list(n, broken);
            let one = read(&text, false);
            assert!(one.starts_with("error"), "{broken:?}: {one}");
            assert_eq!(one, read(&text, true), "{broken:?}");
        }
    }
}
