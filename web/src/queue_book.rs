//! The queue facts the page holds (issue 28): from the live stream's
//! `queues` frames, or from a dump's LocalQueues and ClusterQueues on the
//! offline page. The table's queue column and the explanation's queue
//! section both read this one book, so they cannot disagree.
//!
//! The facts, their words and the cell are the engine's
//! (`classify_wasm::queue`); this only keeps them by TrainJob.

use std::collections::BTreeMap;

use classify_wasm::queue::{JobQueueFacts, QueueCell, QueueFacts};
use classify_wasm::wire::QueuesFrame;

use crate::store::ItemKey;

/// Where the facts came from, which decides what the page can say of the
/// places in line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Source {
    /// Nothing held yet (no Kueue, or no frame yet).
    #[default]
    Nothing,
    /// The server's stream: places in line come from Kueue's visibility
    /// API.
    Live,
    /// A dump read on this page: it holds no places in line.
    Offline,
}

/// The queue facts of a namespace's TrainJobs, by (namespace, name).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueueBook {
    jobs: BTreeMap<(String, String), QueueFacts>,
    /// The server cut the frame at its bound.
    cut: bool,
    source: Source,
    /// The frame's count of changes to the Queues page's boards: a book
    /// that differs only by it still makes the Queues page ask again.
    boards: u64,
}

/// The words the offline page shows where a place in line would be.
pub const NO_POSITIONS_OFFLINE: &str =
    "Places in line come from Kueue's visibility API: they are not available offline.";

impl QueueBook {
    /// The book a `queues` frame holds (it replaces the book before).
    pub fn from_frame(text: &str) -> Result<QueueBook, serde_json::Error> {
        let frame = QueuesFrame::parse(text)?;
        Ok(QueueBook {
            boards: frame.boards,
            ..QueueBook::of(frame.jobs, frame.cut, Source::Live)
        })
    }

    /// The book of a dump's facts (`classify_wasm::queue::facts_in_snapshot`).
    pub fn offline(jobs: Vec<JobQueueFacts>) -> QueueBook {
        QueueBook::of(jobs, false, Source::Offline)
    }

    fn of(jobs: Vec<JobQueueFacts>, cut: bool, source: Source) -> QueueBook {
        QueueBook {
            jobs: jobs
                .into_iter()
                .map(|j| ((j.namespace, j.name), j.queue))
                .collect(),
            cut,
            source,
            boards: 0,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.jobs.is_empty()
    }

    pub fn source(&self) -> Source {
        self.source
    }

    /// The facts of the object `key`, when it is a TrainJob that has some.
    pub fn facts(&self, key: &ItemKey) -> Option<&QueueFacts> {
        if key.kind != "TrainJob" {
            return None;
        }
        self.jobs.get(&(key.namespace.clone(), key.name.clone()))
    }

    /// The table's queue cell of `key`; `None` leaves it empty.
    pub fn cell(&self, key: &ItemKey) -> Option<QueueCell> {
        self.facts(key)?.cell()
    }

    /// The explanation's queue section for `key`: the engine's lines (the
    /// ones `classify --output explain` prints), then what the page cannot
    /// say. Empty when the TrainJob has no queue facts.
    pub fn section(&self, key: &ItemKey) -> Vec<String> {
        let Some(facts) = self.facts(key) else {
            if self.cut && key.kind == "TrainJob" {
                return vec![format!(
                    "The server sent the queue facts of the first {} TrainJobs only; \
                     this one is past them.",
                    self.jobs.len()
                )];
            }
            return Vec::new();
        };
        let mut lines = facts.lines();
        if self.source == Source::Offline {
            lines.push(NO_POSITIONS_OFFLINE.to_string());
        }
        lines
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use classify_wasm::queue::{facts_in_snapshot, Visibility};

    /// A dump with TrainJob llm-7 waiting in LocalQueue main of a full
    /// ClusterQueue, and TrainJob plain with no queue.
    fn dump() -> String {
        r#"{"kind":"List","items":[
          {"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob",
           "metadata":{"name":"llm-7","namespace":"team-a","uid":"t1",
             "labels":{"kueue.x-k8s.io/queue-name":"main"}}},
          {"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob",
           "metadata":{"name":"plain","namespace":"team-a","uid":"t2"}},
          {"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"Workload",
           "metadata":{"name":"w1","namespace":"team-a","uid":"w1",
             "labels":{"kueue.x-k8s.io/job-uid":"t1"}},
           "spec":{"queueName":"main","podSets":[{"name":"node","count":4,
             "template":{"spec":{"containers":[{"name":"t",
               "resources":{"requests":{"nvidia.com/gpu":"8"}}}]}}}]}},
          {"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"LocalQueue",
           "metadata":{"name":"main","namespace":"team-a"},"spec":{"clusterQueue":"gpu-cq"}},
          {"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"ClusterQueue",
           "metadata":{"name":"gpu-cq"},
           "spec":{"resourceGroups":[{"coveredResources":["nvidia.com/gpu"],
             "flavors":[{"name":"a100","resources":[{"name":"nvidia.com/gpu","nominalQuota":"64"}]}]}]},
           "status":{"flavorsReservation":[{"name":"a100","resources":[
             {"name":"nvidia.com/gpu","total":"56"}]}]}}]}"#
            .to_string()
    }

    fn jobs() -> Vec<JobQueueFacts> {
        facts_in_snapshot(&dump(), &Visibility::default()).expect("facts")
    }

    fn llm() -> ItemKey {
        ItemKey::new("TrainJob", "team-a", "llm-7")
    }

    #[test]
    fn a_frame_fills_the_cell_and_the_section_with_the_engines_words() {
        let frame = QueuesFrame {
            jobs: jobs(),
            ..QueuesFrame::default()
        };
        let book = QueueBook::from_frame(&frame.to_json()).expect("a frame");
        assert_eq!(book.source(), Source::Live);
        let facts = book.facts(&llm()).expect("llm waits");
        let cell = book.cell(&llm()).expect("a cell");
        assert_eq!(cell, facts.cell().expect("the engine's cell"));
        assert_eq!(cell.text, "waiting for quota");
        assert!(
            cell.title.contains("needs 32 nvidia.com/gpu"),
            "{}",
            cell.title
        );
        assert_eq!(book.section(&llm()), facts.lines());
        // Only TrainJobs with facts have a cell or a section.
        let plain = ItemKey::new("TrainJob", "team-a", "plain");
        assert_eq!((book.cell(&plain), book.section(&plain).len()), (None, 0));
        let workload = ItemKey::new("Workload", "team-a", "llm-7");
        assert_eq!(book.cell(&workload), None);
        assert!(QueueBook::from_frame("{\"jobs\":7}").is_err());
    }

    #[test]
    fn a_frame_that_only_says_the_boards_changed_is_a_new_book() {
        let frame = |boards| {
            let frame = QueuesFrame {
                jobs: jobs(),
                boards,
                ..QueuesFrame::default()
            };
            QueueBook::from_frame(&frame.to_json()).expect("a frame")
        };
        assert_eq!(frame(1), frame(1));
        // The Queues page asks for its boards again on a new book.
        assert_ne!(frame(1), frame(2));
        assert_eq!(frame(2).section(&llm()), frame(1).section(&llm()));
    }

    #[test]
    fn offline_the_section_says_places_are_not_known_and_a_cut_frame_says_so() {
        let book = QueueBook::offline(jobs());
        let section = book.section(&llm());
        assert_eq!(
            section.last().map(String::as_str),
            Some(NO_POSITIONS_OFFLINE)
        );
        assert_eq!(section.len(), jobs()[0].queue.lines().len() + 1);

        let cut = QueuesFrame {
            jobs: jobs(),
            cut: true,
            ..QueuesFrame::default()
        };
        let book = QueueBook::from_frame(&cut.to_json()).expect("a frame");
        let past = book.section(&ItemKey::new("TrainJob", "team-a", "zeta"));
        assert_eq!(past.len(), 1);
        assert!(past[0].contains("first 1 TrainJobs"), "{past:?}");
        assert!(QueueBook::default().is_empty());
    }
}
