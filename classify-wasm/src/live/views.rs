//! What a set of observed objects is classified from: the views the
//! [`Linker`] gives them, written as sub-snapshots. Every live consumer
//! classifies this way (the browser's [`super::LiveSnapshot`] and the
//! server's store alike); only where the texts are kept differs, which
//! [`ViewSource`] abstracts.
//!
//! Two snapshots come of it. The first holds the targets and what their
//! views read, less every object the source classifies *apart*. The second
//! holds those apart targets alone, with no TrainJob, so the engine itself
//! reports each as an orphan: section 11's last paragraph, an object left
//! by a TrainJob that is gone stays an orphan even when a TrainJob of its
//! name appears again. Only a source that remembers gone TrainJobs (the
//! server's store) has any.

use crate::link::Linker;
use crate::snapshot_writer::SnapshotWriter;
use crate::{Attempted, Explanation, InputError, Observation, Options};

/// The text of one member of a view, as a snapshot holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryText<'a> {
    /// An item: one object's JSON.
    Item(&'a str),
    /// A whole `captured` entry's JSON.
    CapturedEntry(&'a str),
    /// A captured pod, written as an entry here.
    CapturedPod {
        trainjob_uid: &'a str,
        pod: &'a str,
        across_gap: bool,
    },
}

impl EntryText<'_> {
    fn is_item(&self) -> bool {
        matches!(self, EntryText::Item(_))
    }
}

/// One member of a view, as its source keeps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Entry<'a, P> {
    pub text: EntryText<'a>,
    /// Where it goes in a snapshot: items and captured pods are each
    /// written in this order.
    pub place: P,
    /// Its namespace; `None` for a cluster-scoped object (a Node), or
    /// where the source does not say (every view then keeps it).
    pub namespace: Option<&'a str>,
    /// Classified apart: it belongs to a TrainJob that is gone (see the
    /// module docs).
    pub apart: bool,
}

/// Where a consumer keeps the objects it links: the engine reads their
/// links and texts from it and writes the sub-snapshots itself.
pub trait ViewSource {
    /// How the source names its members to the [`Linker`].
    type Key: Ord + Clone;
    /// How members are ordered in a snapshot.
    type Place: Ord;

    /// The linker every member is indexed in.
    fn linker(&self) -> &Linker<Self::Key>;
    /// What every classification reads the members with.
    fn options(&self) -> Options;
    /// A member; `None` when it is not kept (any more).
    fn entry(&self, key: &Self::Key) -> Option<Entry<'_, Self::Place>>;
}

/// The sub-snapshots a set of targets is classified from (see the module
/// docs), built while the source is at hand and classified after, so a
/// caller may release the source first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewSnapshots {
    options: Options,
    /// The targets not classified apart, with what their views read.
    pub current: String,
    /// The targets classified apart, alone; `None` when there are none.
    pub apart: Option<String>,
}

impl ViewSnapshots {
    /// The sub-snapshots of `targets` in `source`. With a `namespace`,
    /// objects of other namespaces are left out of the views, as a
    /// namespace's snapshot leaves them out (a TrainJob of another
    /// namespace that owns one of its JobSets, say); cluster-scoped ones
    /// stay.
    pub fn of<'k, S: ViewSource>(
        source: &S,
        targets: impl IntoIterator<Item = &'k S::Key>,
        namespace: Option<&str>,
    ) -> ViewSnapshots
    where
        S::Key: 'k,
    {
        let mut apart = Vec::new();
        let mut live = Vec::new();
        for key in targets {
            match source.entry(key) {
                Some(entry) if entry.apart => apart.push(entry),
                Some(_) => live.push(key),
                None => {}
            }
        }
        let in_scope = |entry: &Entry<'_, S::Place>| match (namespace, entry.namespace) {
            (Some(scope), Some(own)) => own == scope,
            _ => true,
        };
        let view = source
            .linker()
            .view_of(live)
            .into_iter()
            .filter_map(|key| source.entry(&key))
            .filter(|entry| !entry.apart && in_scope(entry))
            .collect();
        let options = source.options();
        ViewSnapshots {
            options,
            current: write(options, view),
            apart: (!apart.is_empty()).then(|| write(options, apart)),
        }
    }

    /// What `classify` gives of each snapshot that `keep` keeps: the
    /// current snapshot's, then the apart one's, each in the engine's
    /// order. (Merged, or sorted, they would cost the browser's wasm,
    /// which never classifies anything apart, two kilobytes.)
    fn both<T>(
        &self,
        classify: impl Fn(&str, Options) -> Result<Vec<T>, InputError>,
        observation: impl Fn(&T) -> &Observation,
        keep: impl Fn(&Observation) -> bool,
    ) -> Result<Vec<T>, InputError> {
        let mut out = Vec::new();
        for text in std::iter::once(&self.current).chain(&self.apart) {
            let mut classified = classify(text, self.options)?;
            classified.retain(|t| keep(observation(t)));
            out.append(&mut classified);
        }
        Ok(out)
    }

    /// The observations `keep` keeps, in the engine's order.
    pub fn observations(
        &self,
        keep: impl Fn(&Observation) -> bool,
    ) -> Result<Vec<Observation>, InputError> {
        let mut out = self.both(crate::classify, |o| o, keep)?;
        out.sort_by(Observation::cmp_order);
        Ok(out)
    }

    /// The observations `keep` keeps with their attempts: the current
    /// snapshot's, then the apart one's, each in the engine's order.
    pub fn attempted(
        &self,
        keep: impl Fn(&Observation) -> bool,
    ) -> Result<Vec<Attempted>, InputError> {
        self.both(crate::classify_with_attempts, |a| &a.observation, keep)
    }

    /// The explanations of the observations `keep` keeps, ordered as
    /// [`ViewSnapshots::attempted`].
    pub fn explanations(
        &self,
        keep: impl Fn(&Observation) -> bool,
    ) -> Result<Vec<Explanation>, InputError> {
        self.both(crate::explain, |e| &e.observation, keep)
    }
}

/// A snapshot of `entries`: the items, then the captured pods, each in
/// their places' order.
fn write<P: Ord>(options: Options, mut entries: Vec<Entry<'_, P>>) -> String {
    // Items first, each group by place: a stable order however the view
    // was iterated.
    entries.sort_unstable_by(|a, b| {
        b.text
            .is_item()
            .cmp(&a.text.is_item())
            .then_with(|| a.place.cmp(&b.place))
    });
    let mut writer = SnapshotWriter::new(options);
    for entry in entries {
        match entry.text {
            EntryText::Item(json) => writer.item(json),
            EntryText::CapturedEntry(json) => writer.captured_entry(json),
            EntryText::CapturedPod {
                trainjob_uid,
                pod,
                across_gap,
            } => writer.captured(trainjob_uid, pod, across_gap),
        }
    }
    writer.finish()
}
