//! One namespace's objects, classified incrementally: the loop every live
//! consumer of a stream runs, written once.
//!
//! A [`LiveSnapshot`] holds a namespace's items and captured pods as the
//! texts they came as, in input order, with the options they are read
//! with. Each change (an upsert, a delete, a captured pod added or dropped,
//! Node access changing) records which observed objects it can alter:
//! [`Linker::replace`], what changed reaches before and after it (section
//! 4 and 11's links, so a change is covered by the union of the two).
//! [`LiveSnapshot::reclassify`] then classifies exactly those objects, on
//! the sub-snapshot of their views ([`ViewSnapshots`], which the server's
//! store classifies from too), and hands back their observations:
//! each is the observation classifying the whole snapshot would give
//! (`tests/linking.rs` checks this on random worlds changed at random).
//!
//! The texts are the caller's (`T`: a `Box<str>` in the browser), spliced
//! into sub-snapshots as they are and never parsed again; what linking
//! reads of them comes in typed, as a [`LinkedObject`].

mod views;

use std::collections::{BTreeMap, BTreeSet};

use crate::link::{LinkedObject, Linker, Links, Role};
use crate::snapshot::READ_KINDS;
use crate::snapshot_writer::SnapshotWriter;
use crate::wire::{ChangeFrame, Document};
use crate::{Attempted, Explanation, InputError, Observation, Options};

pub use views::{Entry, EntryText, ViewSnapshots, ViewSource};

/// `(kind, namespace, name)`: how an object is named (a Node has the
/// namespace `""`, as in a `change` frame's deletes).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ItemKey {
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

impl ItemKey {
    pub fn new(kind: &str, namespace: &str, name: &str) -> Self {
        ItemKey {
            kind: kind.to_string(),
            namespace: namespace.to_string(),
            name: name.to_string(),
        }
    }

    /// The object an observation is about.
    pub fn of(o: &Observation) -> Self {
        ItemKey::new(&o.object.kind, &o.object.namespace, &o.object.name)
    }

    /// The key of an object of any kind as its fields name it: a Node's
    /// namespace is `""`, whatever its text says.
    pub fn named(kind: &str, namespace: &str, name: &str) -> Self {
        let namespace = match kind {
            "Node" => "",
            _ => namespace,
        };
        ItemKey::new(kind, namespace, name)
    }

    /// [`ItemKey::named`] for what linking read of an object.
    pub fn of_object(object: &LinkedObject) -> Self {
        ItemKey::named(&object.kind, &object.namespace, &object.name)
    }

    /// A stable text id (for DOM keys and URLs).
    pub fn id(&self) -> String {
        format!("{}/{}/{}", self.kind, self.namespace, self.name)
    }

    /// The key an [`ItemKey::id`] was written from. Kinds and namespaces
    /// hold no `/`, so the name is everything after the second one.
    pub fn parse_id(id: &str) -> Option<ItemKey> {
        let mut parts = id.splitn(3, '/');
        Some(ItemKey::new(parts.next()?, parts.next()?, parts.next()?))
    }
}

/// `(TrainJob UID, pod UID)`: how a captured pod is named.
pub type CapturedKey = (String, String);

/// How the snapshot names its members to the [`Linker`].
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Member {
    Item(ItemKey),
    Captured(CapturedKey),
}

/// A member's text and its place in the input order.
#[derive(Debug, Clone)]
struct Kept<T> {
    text: T,
    seq: u64,
}

/// What [`LiveSnapshot::reclassify`] found.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reclassified {
    /// The objects classified again: every TrainJob and orphan candidate
    /// a change since the last call could alter, deleted ones included.
    pub reclassified: BTreeSet<ItemKey>,
    /// Their observations now, with their attempts, in the engine's order.
    /// An object of `reclassified` that is not here has no observation
    /// any more.
    pub observed: Vec<Attempted>,
}

/// A namespace's snapshot, kept up to date change by change, and
/// classified where the changes reach (see the module docs).
#[derive(Debug, Clone)]
pub struct LiveSnapshot<T> {
    options: Options,
    items: BTreeMap<ItemKey, Kept<T>>,
    /// Input order (an item sent again goes last): `Kept::seq` to key.
    order: BTreeMap<u64, ItemKey>,
    captured: BTreeMap<CapturedKey, Kept<T>>,
    captured_order: BTreeMap<u64, CapturedKey>,
    next_seq: u64,
    linker: Linker<Member>,
    /// The observed objects the changes since the last reclassification
    /// can alter.
    affected: BTreeSet<Member>,
}

impl<T> Default for LiveSnapshot<T> {
    fn default() -> Self {
        LiveSnapshot {
            options: Options::default(),
            items: BTreeMap::new(),
            order: BTreeMap::new(),
            captured: BTreeMap::new(),
            captured_order: BTreeMap::new(),
            next_seq: 0,
            linker: Linker::new(),
            affected: BTreeSet::new(),
        }
    }
}

impl<T: AsRef<str>> LiveSnapshot<T> {
    /// An empty snapshot read with `options`.
    pub fn new(options: Options) -> Self {
        LiveSnapshot {
            options,
            ..LiveSnapshot::default()
        }
    }

    /// The snapshot (or JSON dump: a `List`, an array or one object) in
    /// `text`, found in one pass: its items and captured pods are kept as
    /// the texts they are, never built as values. `overrides` wins over
    /// the document's own `mode` and `nodesReadable`. As section 2 reads
    /// it, an object or captured pod given twice is kept as it first came.
    /// Nothing is marked to reclassify: the caller classified the text
    /// whole.
    pub fn load(text: &str, overrides: Options) -> Result<Self, serde_json::Error>
    where
        T: for<'t> From<&'t str>,
    {
        let doc = Document::parse(text)?;
        let mut live = LiveSnapshot::new(Options {
            mode: overrides.mode.or(doc.mode),
            nodes_readable: overrides.nodes_readable.or(doc.nodes_readable),
        });
        for entry in &doc.captured {
            let (trainjob_uid, pod) = LinkedObject::of_captured_json(entry);
            let key = (trainjob_uid, pod.uid.clone());
            if !live.captured.contains_key(&key) {
                let links = Links::of_captured_pod(&key.0, &pod.fields);
                live.linker
                    .upsert_links(Member::Captured(key.clone()), links);
                live.keep_captured(T::from(entry.as_ref()), key);
            }
        }
        for item in &doc.items {
            let object = LinkedObject::of_json(item);
            if let Some(key) = item_key(&object) {
                if !live.items.contains_key(&key) {
                    let links = Links::of_object(&object);
                    live.linker.upsert_links(Member::Item(key.clone()), links);
                    live.keep_item(T::from(item.as_ref()), key);
                }
            }
        }
        Ok(live)
    }

    /// The options every classification of this snapshot uses.
    pub fn options(&self) -> Options {
        self.options
    }

    /// Whether `key` is an item of the snapshot.
    pub fn contains(&self, key: &ItemKey) -> bool {
        self.items.contains_key(key)
    }

    /// Every item's key.
    pub fn keys(&self) -> impl Iterator<Item = &ItemKey> {
        self.items.keys()
    }

    /// The role linking gives an item.
    pub fn role(&self, key: &ItemKey) -> Option<Role> {
        self.linker
            .links(&Member::Item(key.clone()))
            .map(|l| l.role)
    }

    /// Adds or replaces an object, given its text and what linking reads
    /// of it ([`LinkedObject::of_json`]); its key, or `None` for a kind
    /// the engine does not read (nothing is kept).
    pub fn upsert(&mut self, text: T, object: &LinkedObject) -> Option<ItemKey> {
        let key = item_key(object)?;
        let links = Links::of_object(object);
        let affected = self.linker.replace(Member::Item(key.clone()), Some(links));
        self.affected.extend(affected);
        self.keep_item(text, key.clone());
        Some(key)
    }

    /// Deletes an object; whether it was there.
    pub fn delete(&mut self, key: &ItemKey) -> bool {
        let affected = self.linker.replace(Member::Item(key.clone()), None);
        self.affected.extend(affected);
        forget(&mut self.items, &mut self.order, key)
    }

    /// Adds or replaces a captured pod, given its entry's text and what
    /// [`LinkedObject::of_captured_json`] read of it.
    pub fn capture(&mut self, text: T, trainjob_uid: String, pod: &LinkedObject) {
        let key = (trainjob_uid, pod.uid.clone());
        let links = Links::of_captured_pod(&key.0, &pod.fields);
        let affected = self
            .linker
            .replace(Member::Captured(key.clone()), Some(links));
        self.affected.extend(affected);
        self.keep_captured(text, key);
    }

    /// Drops a captured pod; whether it was there.
    pub fn drop_captured(&mut self, trainjob_uid: &str, pod_uid: &str) -> bool {
        let key = (trainjob_uid.to_string(), pod_uid.to_string());
        let affected = self.linker.replace(Member::Captured(key.clone()), None);
        self.affected.extend(affected);
        forget(&mut self.captured, &mut self.captured_order, &key)
    }

    /// Says whether Nodes can be read; when that changes, every object is
    /// classified again.
    pub fn set_nodes_readable(&mut self, readable: bool) {
        if self.options.nodes_readable != Some(readable) {
            self.options.nodes_readable = Some(readable);
            self.affected
                .extend(self.items.keys().cloned().map(Member::Item));
        }
    }

    /// Applies a `change` frame, in the order docs/api.md gives: deletes,
    /// upserts, captured pods, dropped captured pods, then Node access.
    pub fn apply_change(&mut self, change: &ChangeFrame<'_>)
    where
        T: for<'t> From<&'t str>,
    {
        for d in &change.deletes {
            self.delete(&ItemKey::named(&d.kind, &d.namespace, &d.name));
        }
        for text in &change.upserts {
            let object = LinkedObject::of_json(text);
            self.upsert(T::from(text.as_ref()), &object);
        }
        for entry in &change.captured {
            let (trainjob_uid, pod) = LinkedObject::of_captured_json(entry);
            self.capture(T::from(entry.as_ref()), trainjob_uid, &pod);
        }
        for d in &change.dropped {
            self.drop_captured(&d.trainjob_uid, &d.pod_uid);
        }
        if let Some(readable) = change.nodes_readable {
            self.set_nodes_readable(readable);
        }
    }

    /// Classifies the objects the changes since the last call can alter,
    /// on one sub-snapshot of their views. An error (which input the
    /// snapshot's own texts gave cannot cause, short of a text that is not
    /// an object) forgets what was to be classified; the caller keeps its
    /// earlier observations.
    pub fn reclassify(&mut self) -> Result<Reclassified, InputError> {
        let affected = std::mem::take(&mut self.affected);
        let reclassified: BTreeSet<ItemKey> = affected
            .iter()
            .filter_map(|m| match m {
                Member::Item(key) => Some(key.clone()),
                Member::Captured(_) => None,
            })
            .collect();
        if reclassified.is_empty() {
            return Ok(Reclassified::default());
        }
        let observed = ViewSnapshots::of(&Source(self), &affected, None)
            .attempted(|o| reclassified.contains(&ItemKey::of(o)))?;
        Ok(Reclassified {
            reclassified,
            observed,
        })
    }

    /// What the item `key`'s classification reads (its view), as a
    /// snapshot document; `None` when there is no such item.
    pub fn view_snapshot(&self, key: &ItemKey) -> Option<String> {
        self.items
            .contains_key(key)
            .then(|| ViewSnapshots::of(&Source(self), [&Member::Item(key.clone())], None).current)
    }

    /// The explanation of the item `key`'s observation, from its view
    /// alone; `Ok(None)` when it has none.
    pub fn explain(&self, key: &ItemKey) -> Result<Option<Explanation>, InputError> {
        if !self.items.contains_key(key) {
            return Ok(None);
        }
        let view = ViewSnapshots::of(&Source(self), [&Member::Item(key.clone())], None);
        Ok(view
            .explanations(|o| ItemKey::of(o) == *key)?
            .into_iter()
            .next())
    }

    /// The whole snapshot, as one line of JSON: the items, then the
    /// captured pods, each in input order.
    pub fn snapshot(&self) -> String {
        let mut writer = SnapshotWriter::new(self.options);
        for key in self.order.values() {
            if let Some(kept) = self.items.get(key) {
                writer.item(kept.text.as_ref());
            }
        }
        for key in self.captured_order.values() {
            if let Some(kept) = self.captured.get(key) {
                writer.captured_entry(kept.text.as_ref());
            }
        }
        writer.finish()
    }

    /// Keeps an item's text, last in the input order (its links are the
    /// caller's to index: a change marks what it alters, a load does not).
    fn keep_item(&mut self, text: T, key: ItemKey) {
        self.next_seq += 1;
        keep_last(&mut self.items, &mut self.order, self.next_seq, key, text);
    }

    /// [`LiveSnapshot::keep_item`] for a captured pod.
    fn keep_captured(&mut self, text: T, key: CapturedKey) {
        self.next_seq += 1;
        keep_last(
            &mut self.captured,
            &mut self.captured_order,
            self.next_seq,
            key,
            text,
        );
    }
}

/// Keeps `text` under `key`, at `seq` in the input order (an earlier text
/// of the key leaves the order).
fn keep_last<K: Ord + Clone, T>(
    kept: &mut BTreeMap<K, Kept<T>>,
    order: &mut BTreeMap<u64, K>,
    seq: u64,
    key: K,
    text: T,
) {
    forget(kept, order, &key);
    order.insert(seq, key.clone());
    kept.insert(key, Kept { text, seq });
}

/// Drops the text kept under `key` and its place in the input order;
/// whether there was one.
fn forget<K: Ord, T>(
    kept: &mut BTreeMap<K, Kept<T>>,
    order: &mut BTreeMap<u64, K>,
    key: &K,
) -> bool {
    match kept.remove(key) {
        Some(old) => {
            order.remove(&old.seq);
            true
        }
        None => false,
    }
}

/// The snapshot as the engine's views read it (a private key type, so a
/// wrapper rather than the snapshot itself).
struct Source<'a, T>(&'a LiveSnapshot<T>);

impl<T: AsRef<str>> ViewSource for Source<'_, T> {
    type Key = Member;
    type Place = u64;

    fn linker(&self) -> &Linker<Member> {
        &self.0.linker
    }

    fn options(&self) -> Options {
        self.0.options
    }

    fn entry(&self, member: &Member) -> Option<Entry<'_, u64>> {
        let (text, seq, namespace) = match member {
            Member::Item(key) => {
                let (key, kept) = self.0.items.get_key_value(key)?;
                let namespace = (key.kind != "Node").then_some(key.namespace.as_str());
                (EntryText::Item(kept.text.as_ref()), kept.seq, namespace)
            }
            // The entry's namespace is not kept; no view here is scoped.
            Member::Captured(key) => {
                let kept = self.0.captured.get(key)?;
                (EntryText::CapturedEntry(kept.text.as_ref()), kept.seq, None)
            }
        };
        Some(Entry {
            text,
            place: seq,
            namespace,
            apart: false,
        })
    }
}

/// The key of an object of a kind the engine reads; `None` otherwise.
fn item_key(object: &LinkedObject) -> Option<ItemKey> {
    READ_KINDS
        .contains(&object.kind.as_str())
        .then(|| ItemKey::of_object(object))
}
