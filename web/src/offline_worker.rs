//! The offline page's Web Worker as plain state, tested natively: the
//! messages between the page and its worker, what the worker keeps of a
//! classified dump, and the page's view of a load under way.
//!
//! Parsing and classifying a dump of tens of megabytes takes a second or
//! more; on the page's own thread that froze it. The worker
//! (`ui/offline_worker.rs` carries out the effects; `offline-worker.js`
//! loads the page's own wasm into it) reads the file with progress, parses
//! and classifies it, and keeps what it made. The page is sent only the
//! rows and the queue facts. One row's objects (which the page explains
//! itself, as the live page does), or the snapshot to download, are asked
//! for when wanted, so nothing the size of the dump ever crosses back to
//! the page's thread.

use std::sync::Arc;

use classify_wasm::queue::JobQueueFacts;
use classify_wasm::{Attempted, Explanation, InputError, Options};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::dump_file;
use crate::queue_book::QueueBook;
use crate::store::{objects_in, AttemptsSummary, ItemKey, Row, Store};

/// What the page asks of its worker, as the JSON of a message. The text to
/// classify (a JavaScript string) or the file to read travels beside it,
/// never inside the JSON: escaping a dump costs what parsing it does.
// Externally tagged, as all messages here: an internally tagged enum is
// read through serde's buffered `Content`, which would build every reader
// of the rows and queue facts a second time into the page's wasm.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Request {
    /// Classify what came beside this, with the override selects' values.
    Classify {
        id: u64,
        mode: String,
        nodes: String,
    },
    /// What one row of the last classification read, as a snapshot
    /// document; its text comes back beside the reply.
    Explain {
        id: u64,
        kind: String,
        namespace: String,
        name: String,
    },
    /// The last classification's objects as a snapshot document; its text
    /// comes back beside the reply.
    Snapshot { id: u64 },
}

/// How far a classification has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Phase {
    /// Reading the file: `done` of `total` bytes.
    Reading,
    /// Parsing the `total` bytes read.
    Parsing,
    /// Applying the rules to what was parsed.
    Classifying,
}

/// What the worker answers, as the JSON of a message.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Reply {
    Progress {
        id: u64,
        phase: Phase,
        done: u64,
        total: u64,
    },
    /// The rows in the engine's order, and the queue facts when the dump
    /// holds LocalQueues or ClusterQueues.
    Classified {
        id: u64,
        rows: Vec<Attempted>,
        queues: Vec<JobQueueFacts>,
    },
    /// The input was refused: where and why, as the page shows it.
    Failed { id: u64, error: String },
    /// Whether the row's snapshot came beside this reply (it does not
    /// when the last classification has no such row).
    Explained { id: u64, sent: bool },
    /// Whether the snapshot's text came beside this reply.
    Snapshot { id: u64, sent: bool },
}

impl Reply {
    /// The request this answers.
    pub fn id(&self) -> u64 {
        match self {
            Reply::Progress { id, .. }
            | Reply::Classified { id, .. }
            | Reply::Failed { id, .. }
            | Reply::Explained { id, .. }
            | Reply::Snapshot { id, .. } => *id,
        }
    }
}

/// An explanation and the objects it read, for the explanation view.
#[derive(Debug, Clone, PartialEq)]
pub struct ExplainedObject {
    pub explanation: Explanation,
    pub objects: Vec<Value>,
}

impl ExplainedObject {
    /// Explains `key` from the snapshot of what its row read, which states
    /// the mode the whole input was classified in: the page's engine gives
    /// what the worker's gave for the whole (the same property the live
    /// page's explanations rest on).
    pub fn of_view(key: &ItemKey, view: &str) -> Option<ExplainedObject> {
        let explanation = classify_wasm::explain(view, Options::default())
            .ok()?
            .into_iter()
            .find(|e| ItemKey::of(&e.observation) == *key)?;
        Some(ExplainedObject {
            explanation,
            objects: objects_in(view),
        })
    }
}

/// An input error as the page shows it.
pub fn error_text(e: &InputError) -> String {
    format!(
        "Line {}, column {}: {} ({})",
        e.position.line, e.position.column, e.message, e
    )
}

/// Reads the override selects: `auto` leaves the input's own say.
pub fn overrides(mode: &str, nodes: &str) -> Options {
    Options {
        mode: mode.parse().ok(),
        nodes_readable: match nodes {
            "yes" => Some(true),
            "no" => Some(false),
            _ => None,
        },
    }
}

/// What the worker keeps of the last classification: the text, its rows,
/// and (made the first time it is wanted) the store of its objects for
/// the explanations and the download.
pub struct Held {
    text: String,
    /// The overrides, with the mode the whole was classified in.
    options: Options,
    /// The rows, until the store takes them.
    rows: Vec<Attempted>,
    /// `None` until wanted; then `Some(None)` when the text holds nothing a
    /// store can keep.
    store: Option<Option<Store>>,
}

impl Held {
    /// Parses and classifies `text`. `parsed` is told when the parse is
    /// done and the rules begin; the answer is the rows and queue facts to
    /// send the page.
    pub fn classify(
        text: String,
        options: Options,
        parsed: impl FnOnce(),
    ) -> Result<(Held, Reply), InputError> {
        let (explanations, mode) = {
            let input = classify_wasm::Parsed::new(&text)?;
            parsed();
            input.explain_in_mode(options)?
        };
        // The same facts `classify --output explain` prints; the dump was
        // classified above, so reading it for them fails only where that did.
        let queues = classify_wasm::queue::may_hold_queues(&text)
            .then(|| classify_wasm::queue::facts_in_snapshot(&text, &Default::default()).ok())
            .flatten()
            .unwrap_or_default();
        let rows: Vec<Attempted> = explanations
            .into_iter()
            .map(|e| Attempted {
                observation: e.observation,
                attempts: e.trace.attempts,
            })
            .collect();
        let held = Held {
            text,
            options: Options {
                mode: Some(mode),
                ..options
            },
            rows: rows.clone(),
            store: None,
        };
        // The id is the caller's to set.
        Ok((
            held,
            Reply::Classified {
                id: 0,
                rows,
                queues,
            },
        ))
    }

    /// What the row `key` read, as a snapshot document in the mode the
    /// whole was classified in ([`ExplainedObject::of_view`] reads it).
    pub fn view(&mut self, key: &ItemKey) -> Option<String> {
        self.store()?.view_snapshot(key)
    }

    /// The objects as a snapshot document (what "Download snapshot"
    /// saves), when the text holds any a store can keep.
    pub fn snapshot(&mut self) -> Option<String> {
        self.store().map(Store::snapshot_json)
    }

    /// The store, made from the text the first time it is wanted: most
    /// loads never open an object, and making it costs a second pass over
    /// the whole text.
    fn store(&mut self) -> Option<&Store> {
        if self.store.is_none() {
            // A YAML dump is converted the way the engine read it, so it
            // classifies the same.
            let rows = std::mem::take(&mut self.rows);
            let store = classify_wasm::dump_to_json(&self.text)
                .ok()
                .and_then(|json| Store::load_classified(&json, self.options, rows).ok());
            self.store = Some(store);
        }
        self.store.as_ref().and_then(Option::as_ref)
    }
}

/// When the worker tells the page how far it has read: at every hundredth
/// of the file and at its end, so a big file sends about a hundred
/// messages whatever its chunks are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProgressSteps {
    total: u64,
    next_at: u64,
}

impl ProgressSteps {
    pub fn new(total: u64) -> ProgressSteps {
        ProgressSteps { total, next_at: 0 }
    }

    /// Whether having read `done` bytes is worth a message.
    pub fn passed(&mut self, done: u64) -> bool {
        if done < self.next_at && done < self.total {
            return false;
        }
        let step = (self.total / 100).max(1);
        self.next_at = done.saturating_add(step);
        true
    }
}

/// What the page classified, as its thread holds it.
#[derive(Debug, Clone, Default)]
pub struct Classified {
    pub rows: Vec<Arc<Row>>,
    /// The queue facts, when the dump holds LocalQueues or ClusterQueues.
    pub queues: Arc<QueueBook>,
}

impl Classified {
    pub fn of(rows: Vec<Attempted>, queues: Vec<JobQueueFacts>) -> Classified {
        let rows = rows
            .into_iter()
            .enumerate()
            .map(|(i, a)| {
                Arc::new(Row {
                    key: ItemKey::of(&a.observation),
                    attempts: AttemptsSummary::of(&a.attempts),
                    observation: a.observation,
                    changed_at: None,
                    revision: i as u64,
                })
            })
            .collect();
        // A book of no facts shows nothing, whatever its source.
        Classified {
            rows,
            queues: Arc::new(QueueBook::offline(queues)),
        }
    }
}

/// How far a load has come, as the page shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Progress {
    pub phase: Phase,
    pub done: u64,
    pub total: u64,
}

impl Progress {
    /// The progress bar's value and maximum; `None` while it cannot say
    /// how far (the parse and the rules are one step of the engine).
    pub fn bar(&self) -> Option<(u64, u64)> {
        match self.phase {
            Phase::Reading if self.total > 0 => Some((self.done.min(self.total), self.total)),
            _ => None,
        }
    }

    pub fn text(&self) -> String {
        match self.phase {
            Phase::Reading => format!(
                "Reading {} of {}…",
                dump_file::size_text(self.done),
                dump_file::size_text(self.total)
            ),
            Phase::Parsing => format!("Parsing {}…", dump_file::size_text(self.total)),
            Phase::Classifying => format!(
                "Classifying the objects of {}…",
                dump_file::size_text(self.total)
            ),
        }
    }
}

/// The page's classification, from its start to its rows.
#[derive(Debug, Clone, Default)]
pub enum Load {
    /// Nothing asked yet.
    #[default]
    Idle,
    Working {
        id: u64,
        progress: Progress,
    },
    Done(Arc<Classified>),
    /// The input was refused, or the worker failed.
    Failed(String),
    /// Cancelled by the user: the worker that held it was stopped.
    Cancelled,
}

/// What the page says when the worker itself stops (out of memory, say),
/// rather than refusing the input.
pub const WORKER_FAILED: &str = "This page could not finish classifying the input (a dump this large may need more memory than a browser tab has): run dispatch-dash classify FILE in a terminal instead, which reads any size.";

/// The page's loads, one at a time: a new one, a cancel or a failed
/// worker makes every reply to an earlier one stale.
#[derive(Debug, Clone, Default)]
pub struct Loads {
    last_id: u64,
    current: Option<u64>,
    pub state: Load,
}

impl Loads {
    /// Starts a load of `total` bytes (0 for pasted text, read at once)
    /// and gives its request id.
    pub fn start(&mut self, total: u64, reading: bool) -> u64 {
        let id = self.next_id();
        self.current = Some(id);
        let phase = if reading {
            Phase::Reading
        } else {
            Phase::Parsing
        };
        self.state = Load::Working {
            id,
            progress: Progress {
                phase,
                done: 0,
                total,
            },
        };
        id
    }

    /// An id for a request that is not a load (an explanation, a
    /// snapshot): ids never repeat, so no answer is taken for another's.
    pub fn next_id(&mut self) -> u64 {
        self.last_id += 1;
        self.last_id
    }

    /// Whether a load is under way (Cancel is offered).
    pub fn working(&self) -> bool {
        matches!(self.state, Load::Working { .. })
    }

    /// The user cancelled: the caller stops the worker.
    pub fn cancel(&mut self) {
        if self.working() {
            self.current = None;
            self.state = Load::Cancelled;
        }
    }

    /// The worker stopped without an answer.
    pub fn worker_failed(&mut self) {
        self.current = None;
        if !matches!(self.state, Load::Done(_)) {
            self.state = Load::Failed(WORKER_FAILED.into());
        }
    }

    /// Nothing to classify: the page shows its prompt again.
    pub fn clear(&mut self) {
        self.current = None;
        self.state = Load::Idle;
    }

    /// Takes a reply about the current load; a stale one, or one that is
    /// not about a load, changes nothing. Whether it was taken.
    pub fn on_reply(&mut self, reply: Reply) -> bool {
        if self.current != Some(reply.id()) {
            return false;
        }
        match reply {
            Reply::Progress {
                id,
                phase,
                done,
                total,
            } => {
                self.state = Load::Working {
                    id,
                    progress: Progress { phase, done, total },
                };
            }
            Reply::Classified { rows, queues, .. } => {
                self.current = None;
                self.state = Load::Done(Arc::new(Classified::of(rows, queues)));
            }
            Reply::Failed { error, .. } => {
                self.current = None;
                self.state = Load::Failed(error);
            }
            Reply::Explained { .. } | Reply::Snapshot { .. } => return false,
        }
        true
    }

    /// The rows shown, when the last load ended in some.
    pub fn classified(&self) -> Option<&Arc<Classified>> {
        match &self.state {
            Load::Done(c) => Some(c),
            _ => None,
        }
    }
}

/// The explanation the page asked its worker for, by the object it is of.
#[derive(Debug, Clone, Default, PartialEq)]
pub enum Explaining {
    #[default]
    Nothing,
    Waiting {
        id: u64,
        key: ItemKey,
    },
    Answered {
        key: ItemKey,
        found: Option<Box<ExplainedObject>>,
    },
}

impl Explaining {
    /// Whether `key` is neither asked nor answered yet.
    pub fn needs(&self, key: &ItemKey) -> bool {
        match self {
            Explaining::Nothing => true,
            Explaining::Waiting { key: k, .. } | Explaining::Answered { key: k, .. } => k != key,
        }
    }

    /// Takes the answer to the explanation asked for last, with the view
    /// that came beside it, and explains it; another changes nothing.
    pub fn on_reply(&mut self, reply: &Reply, view: Option<&str>) -> bool {
        let Reply::Explained { id, sent } = *reply else {
            return false;
        };
        match self {
            Explaining::Waiting { id: asked, key } if *asked == id => {
                let found = view
                    .filter(|_| sent)
                    .and_then(|v| ExplainedObject::of_view(key, v))
                    .map(Box::new);
                *self = Explaining::Answered {
                    key: key.clone(),
                    found,
                };
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use classify_wasm::Mode;

    fn yaml_dumps() -> Vec<std::path::PathBuf> {
        let dir = test_support::shared_dir().join("dumps");
        let mut paths: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
            .collect();
        paths.sort();
        assert!(!paths.is_empty());
        paths
    }

    /// A reply as it crosses to the page: written as JSON and read back.
    fn across(reply: &Reply) -> Reply {
        serde_json::from_str(&serde_json::to_string(reply).unwrap()).unwrap()
    }

    /// Every shared dump and case, as text.
    fn inputs() -> Vec<(String, String)> {
        let mut inputs: Vec<(String, String)> = yaml_dumps()
            .into_iter()
            .map(|p| {
                (
                    p.display().to_string(),
                    std::fs::read_to_string(&p).unwrap(),
                )
            })
            .collect();
        // The shared golden cases and the engine's own (attempts, captured
        // pods), each a snapshot document.
        let engine = test_support::read_case_folder(&test_support::engine_cases_dir())
            .into_iter()
            .filter_map(|(name, text)| Some((name, serde_json::from_str::<Value>(&text).ok()?)));
        let shared = test_support::shared_cases()
            .into_iter()
            .map(|case| (case["name"].to_string(), case));
        for (name, case) in shared.chain(engine) {
            if case["snapshot"].is_object() {
                inputs.push((name, case["snapshot"].to_string()));
            }
        }
        inputs
    }

    #[test]
    fn every_dump_classifies_in_the_worker_as_expected_and_keeps_its_objects() {
        for path in yaml_dumps() {
            let text = std::fs::read_to_string(&path).unwrap();
            let mut told = false;
            let (mut held, reply) =
                Held::classify(text, Options::default(), || told = true).unwrap();
            assert!(told, "the parse is said to be done");
            let Reply::Classified { rows, queues, .. } = across(&reply) else {
                panic!("{reply:?}")
            };
            let classified = Classified::of(rows, queues);
            let expected: Value = serde_json::from_str(
                &std::fs::read_to_string(path.with_extension("expected.json")).unwrap(),
            )
            .unwrap();
            let got: Vec<Value> = classified
                .rows
                .iter()
                .map(|r| serde_json::to_value(&r.observation).unwrap())
                .collect();
            assert_eq!(Value::Array(got), expected, "{}", path.display());
            // The objects are kept for the YAML view and the download.
            let first = classified.rows.first().expect("a row");
            let view = held.view(&first.key).expect("a view");
            let found = ExplainedObject::of_view(&first.key, &view).expect("explained");
            assert!(!found.objects.is_empty(), "{}", path.display());
            let snapshot: Value = serde_json::from_str(&held.snapshot().unwrap()).unwrap();
            assert!(!snapshot["items"].as_array().unwrap().is_empty());
        }
    }

    #[test]
    fn the_page_explains_each_row_from_its_view_as_the_worker_did_the_whole() {
        let mut rows = 0;
        for (name, text) in inputs() {
            for (mode, nodes) in [("auto", "auto"), ("kueue", "no"), ("plain", "yes")] {
                let options = overrides(mode, nodes);
                let Ok(whole) = classify_wasm::explain(&text, options) else {
                    continue;
                };
                let (mut held, _) = Held::classify(text.clone(), options, || {}).unwrap();
                for e in whole {
                    let key = ItemKey::of(&e.observation);
                    let view = held.view(&key).unwrap_or_else(|| panic!("{name}: {key:?}"));
                    let found = ExplainedObject::of_view(&key, &view)
                        .unwrap_or_else(|| panic!("{name} {mode} {nodes}: {key:?}"));
                    assert_eq!(found.explanation, e, "{name} {mode} {nodes}: {key:?}");
                    rows += 1;
                }
            }
        }
        assert!(rows > 50, "{rows}");
    }

    #[test]
    fn the_worker_has_a_view_only_of_what_it_classified() {
        let path = yaml_dumps().remove(0);
        let (mut held, _) = Held::classify(
            std::fs::read_to_string(path).unwrap(),
            Options::default(),
            || {},
        )
        .unwrap();
        assert!(held
            .view(&ItemKey::new("TrainJob", "nowhere", "none"))
            .is_none());
    }

    #[test]
    fn a_bad_input_is_refused_with_its_line_and_column() {
        let Err(e) = Held::classify(
            "{\n  \"kind\": \"Snapshot\",\n  \"mode\": 3\n}".into(),
            Options::default(),
            || {},
        ) else {
            panic!("accepted")
        };
        let t = error_text(&e);
        assert!(t.starts_with("Line 3, column "), "{t}");
    }

    #[test]
    fn the_overrides_reach_the_engine() {
        assert_eq!(overrides("auto", "auto"), Options::default());
        assert_eq!(overrides("kueue", "no").mode, Some(Mode::Kueue));
        assert_eq!(overrides("plain", "yes").nodes_readable, Some(true));
        // A TrainJob with nothing to say runs in plain mode and waits for
        // its Workload under Kueue: the worker passes the override on.
        let text = r#"{"kind":"Snapshot","mode":"plain","items":[{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"a","namespace":"team-a","uid":"u1","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{}}]}"#;
        let state = |options: Options| match Held::classify(text.into(), options, || {}).unwrap().1
        {
            Reply::Classified { rows, .. } => rows.first().unwrap().observation.state,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            state(overrides("auto", "auto")),
            classify_wasm::State::Running
        );
        assert_ne!(
            state(overrides("kueue", "auto")),
            classify_wasm::State::Running
        );
    }

    #[test]
    fn requests_read_back_as_written() {
        for request in [
            Request::Classify {
                id: 1,
                mode: "kueue".into(),
                nodes: "auto".into(),
            },
            Request::Explain {
                id: 2,
                kind: "TrainJob".into(),
                namespace: "team-a".into(),
                name: "llm-7".into(),
            },
            Request::Snapshot { id: 3 },
        ] {
            let json = serde_json::to_string(&request).unwrap();
            assert_eq!(serde_json::from_str::<Request>(&json).unwrap(), request);
        }
        assert!(serde_json::from_str::<Request>(r#"{"delete":{"id":1}}"#).is_err());
    }

    #[test]
    fn reading_progress_is_told_about_a_hundred_times_and_at_the_end() {
        let total = 68 * 1024 * 1024;
        let mut steps = ProgressSteps::new(total);
        let told = (0..=total)
            .step_by(64 * 1024)
            .chain([total])
            .filter(|&done| steps.passed(done))
            .count();
        assert!((99..=102).contains(&told), "{told}");
        // The end is always told, however small the file.
        let mut tiny = ProgressSteps::new(10);
        assert!(tiny.passed(0));
        assert!(tiny.passed(10));
        let mut empty = ProgressSteps::new(0);
        assert!(empty.passed(0));
    }

    #[test]
    fn progress_reads_as_bytes_then_as_the_parse() {
        let reading = Progress {
            phase: Phase::Reading,
            done: 512 * 1024,
            total: 2 * 1024 * 1024,
        };
        assert_eq!(reading.bar(), Some((512 * 1024, 2 * 1024 * 1024)));
        assert_eq!(reading.text(), "Reading 512.0 KiB of 2.0 MiB…");
        let parsing = Progress {
            phase: Phase::Parsing,
            ..reading
        };
        assert_eq!(parsing.bar(), None);
        assert_eq!(parsing.text(), "Parsing 2.0 MiB…");
        let classifying = Progress {
            phase: Phase::Classifying,
            ..reading
        };
        assert_eq!(classifying.text(), "Classifying the objects of 2.0 MiB…");
    }

    fn classified(id: u64) -> Reply {
        let text = std::fs::read_to_string(yaml_dumps().remove(0)).unwrap();
        match Held::classify(text, Options::default(), || {}).unwrap().1 {
            Reply::Classified { rows, queues, .. } => Reply::Classified { id, rows, queues },
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_load_goes_from_its_progress_to_its_rows() {
        let mut loads = Loads::default();
        let id = loads.start(1000, true);
        assert!(loads.working());
        assert!(loads.on_reply(Reply::Progress {
            id,
            phase: Phase::Reading,
            done: 500,
            total: 1000
        }));
        let Load::Working { progress, .. } = &loads.state else {
            panic!("{:?}", loads.state)
        };
        assert_eq!(progress.bar(), Some((500, 1000)));
        assert!(loads.on_reply(classified(id)));
        let rows = loads.classified().expect("rows").rows.len();
        assert!(rows > 0);
        // Done: a late progress of the same load changes nothing.
        assert!(!loads.on_reply(Reply::Progress {
            id,
            phase: Phase::Reading,
            done: 1000,
            total: 1000
        }));
        assert!(loads.classified().is_some());
    }

    #[test]
    fn a_cancelled_or_replaced_load_takes_no_late_answer() {
        let mut loads = Loads::default();
        let first = loads.start(1000, true);
        loads.cancel();
        assert!(matches!(loads.state, Load::Cancelled));
        assert!(!loads.on_reply(classified(first)));
        assert!(matches!(loads.state, Load::Cancelled));

        let second = loads.start(0, false);
        let third = loads.start(0, false);
        assert!(second < third);
        assert!(!loads.on_reply(Reply::Failed {
            id: second,
            error: "old".into()
        }));
        assert!(loads.working());
        assert!(loads.on_reply(Reply::Failed {
            id: third,
            error: "Line 1, column 1: bad".into()
        }));
        assert!(matches!(&loads.state, Load::Failed(e) if e.starts_with("Line 1")));
        // Cancel is for a load under way only.
        loads.cancel();
        assert!(matches!(loads.state, Load::Failed(_)));
    }

    #[test]
    fn a_worker_that_stops_fails_the_load_but_keeps_rows_shown() {
        let mut loads = Loads::default();
        loads.start(10, true);
        loads.worker_failed();
        assert!(matches!(&loads.state, Load::Failed(e) if e == WORKER_FAILED));
        assert!(WORKER_FAILED.contains("dispatch-dash classify"));

        let id = loads.start(10, true);
        assert!(loads.on_reply(classified(id)));
        loads.worker_failed();
        assert!(loads.classified().is_some());
        // Explanations are not loads.
        let asked = loads.next_id();
        assert!(!loads.on_reply(Reply::Explained {
            id: asked,
            sent: false
        }));
    }

    #[test]
    fn an_explanation_is_asked_once_and_only_the_last_answer_is_taken() {
        let key = ItemKey::new("TrainJob", "team-a", "a");
        let other = ItemKey::new("TrainJob", "team-a", "b");
        let mut explaining = Explaining::default();
        assert!(explaining.needs(&key));
        explaining = Explaining::Waiting {
            id: 7,
            key: key.clone(),
        };
        assert!(!explaining.needs(&key));
        assert!(explaining.needs(&other));
        assert!(!explaining.on_reply(&Reply::Explained { id: 6, sent: false }, None));
        assert!(!explaining.on_reply(&Reply::Snapshot { id: 7, sent: true }, Some("{}")));
        assert!(explaining.on_reply(&Reply::Explained { id: 7, sent: false }, None));
        assert_eq!(
            explaining,
            Explaining::Answered {
                key: key.clone(),
                found: None
            }
        );
        assert!(!explaining.needs(&key));
        assert!(!explaining.on_reply(&Reply::Explained { id: 7, sent: false }, None));
    }
}
