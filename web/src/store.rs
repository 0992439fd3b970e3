//! The browser's own copy of a namespace: every object of the snapshot, the
//! captured pods, and the observations the engine gave for them.
//!
//! A `snapshot` event replaces everything; a `change` event upserts and
//! deletes objects and adds or drops captured pods. The objects, and which
//! of them a change reaches, are the engine's incremental classifier's
//! ([`classify_wasm::LiveSnapshot`]): the store hands it each frame and
//! keeps the observations it gives back as table rows. The store has no
//! section-4 code and no reclassify loop of its own.
//!
//! Each frame is parsed once, by the engine's readers
//! ([`classify_wasm::wire`]): the items and captured pods are found as
//! slices of the frame's text and kept as that text, which
//! sub-snapshots are made of; a typed pass reads only the fields the key
//! and the linker need. A first snapshot is classified whole, from the
//! text as given.
//!
//! Nothing here touches the DOM, so every rule is unit-tested natively.

use std::collections::BTreeMap;
use std::sync::{Arc, OnceLock};

use classify_wasm::hash::KeyedMap;
use classify_wasm::wire::{self, ChangeFrame};
use classify_wasm::{
    AttemptTrace, Attempted, Explanation, InputError, LiveSnapshot, Observation, Options, OrderKey,
};
use serde_json::Value;

/// `(kind, namespace, name)`: how the store names an object (a Node has the
/// namespace `""`); the engine's, so a row and the object it observes are
/// named alike.
pub use classify_wasm::ItemKey;

/// What the table shows of a row's attempts (the trace's `attempts`): how
/// many executions the TrainJob has had, and the previous one's cause.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AttemptsSummary {
    /// 0 for an orphan, or a TrainJob none of whose pods counts (section 5).
    pub count: usize,
    /// The attempt before the current one, as [`attempt_text`] writes it.
    pub previous: Option<String>,
}

impl AttemptsSummary {
    pub fn of(attempts: &[AttemptTrace]) -> AttemptsSummary {
        // Newest first, so the previous attempt is the one after the current.
        let previous = attempts
            .iter()
            .skip_while(|a| !a.current)
            .nth(1)
            .map(attempt_text);
        AttemptsSummary {
            count: attempts.len(),
            previous,
        }
    }
}

/// One attempt as a line of text: `A=1 J=1: node-lost (captured-pod): pod
/// <name>: <detail>`, or `A=1 J=0: no finding`.
pub fn attempt_text(a: &AttemptTrace) -> String {
    match &a.cause {
        Some(c) => format!(
            "{}: {}{}: {}",
            a.execution,
            c.kind.as_str(),
            c.provenance
                .map(|p| format!(" ({})", p.as_str()))
                .unwrap_or_default(),
            c.detail
        ),
        None => format!("{}: no finding", a.execution),
    }
}

/// One table row: an observation, when it last changed and a revision that
/// changes whenever the observation (or its attempts) does.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub key: ItemKey,
    pub observation: Observation,
    pub attempts: AttemptsSummary,
    /// Milliseconds (the caller's clock) of the last change; `None` for rows
    /// as first loaded.
    pub changed_at: Option<f64>,
    /// Unique among the rows of the page, and new whenever the observation
    /// changes: the table's key. A new store's row takes an earlier store's
    /// only as the same allocation, when the two are the same
    /// ([`Store::keep_rows_of`]).
    pub revision: u64,
}

/// The next [`Row::revision`], counted for the whole page: the table keeps a
/// row's element exactly as long as its revision is shown, across stores.
fn next_revision() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// What applying an event did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// Rows whose observation is new or changed.
    pub changed: Vec<ItemKey>,
    /// Rows removed.
    pub removed: Vec<ItemKey>,
    /// Objects (TrainJobs and orphan candidates) classified again.
    pub reclassified: Vec<ItemKey>,
}

/// What changes, explanations and downloads read besides the rows: the
/// namespace's objects as the engine's incremental classifier holds them.
type Index = LiveSnapshot<Box<str>>;

/// A loaded snapshot's text, which the [`Index`] is built from on first
/// use.
#[derive(Debug, Clone)]
struct Unindexed {
    text: Arc<str>,
    overrides: Options,
}

/// A namespace as the browser holds it.
///
/// A live snapshot's rows are all a first paint needs; its `Index` is
/// built on first use instead ([`Store::prepare`], which the page calls
/// once the table is drawn), so building it does not delay the table.
#[derive(Debug, Clone, Default)]
pub struct Store {
    index: OnceLock<Index>,
    /// Set while `index` is still to be built from a loaded text.
    unindexed: Option<Unindexed>,
    rows: BTreeMap<OrderKey, Arc<Row>>,
    row_order: KeyedMap<ItemKey, OrderKey>,
}

/// Why input could not be loaded into the store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LoadError {
    /// Not JSON, or not a snapshot or dump (line and column from the engine).
    Input(InputError),
}

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            LoadError::Input(e) => write!(f, "{e}"),
        }
    }
}

impl Store {
    /// Loads a snapshot (or a JSON dump: a `List`, an array or one object)
    /// and classifies it. The engine checks the input first, so an error
    /// names its line and column.
    ///
    /// The rows are made at once; the index of a JSON text waits for its
    /// first use ([`Store::prepare`]).
    pub fn load(text: &str, overrides: Options) -> Result<Store, LoadError> {
        // The engine validates and classifies the text as given.
        let classified =
            classify_wasm::classify_with_attempts(text, overrides).map_err(LoadError::Input)?;
        if !is_json_text(text) {
            // Refused now, with the position of what is not JSON.
            return Store::load_classified(text, overrides, classified);
        }
        let mut store = Store {
            unindexed: Some(Unindexed {
                text: text.into(),
                overrides,
            }),
            ..Store::default()
        };
        store.insert_rows(classified);
        Ok(store)
    }

    /// [`Store::load`] for a caller that already classified `text` (the
    /// offline page explains it anyway), so it is not classified twice.
    pub fn load_classified(
        text: &str,
        overrides: Options,
        classified: Vec<Attempted>,
    ) -> Result<Store, LoadError> {
        // One pass over the text finds the items; they are kept as the
        // slices of it they are, never built as values.
        let index = Index::load(text, overrides).map_err(|e| {
            LoadError::Input(InputError {
                position: classify_wasm::Position {
                    line: e.line(),
                    column: e.column(),
                },
                message: "only JSON input can be kept as a store".to_string(),
            })
        })?;
        let mut store = Store {
            index: OnceLock::from(index),
            ..Store::default()
        };
        store.insert_rows(classified);
        Ok(store)
    }

    /// A store of rows the server classified: the stream's `rows` event,
    /// the engine's [`classify_wasm::classified_rows_json`] of the snapshot
    /// that follows it. The table shows them until that snapshot is loaded
    /// ([`Store::load`], then [`Store::keep_rows_of`]). It has no index:
    /// explanations, objects and changes wait for the snapshot.
    pub fn of_rows(text: &str) -> Result<Store, serde_json::Error> {
        let classified = wire::read_rows(text)?;
        let mut store = Store::default();
        store.insert_rows(classified);
        Ok(store)
    }

    /// Takes `earlier`'s row wherever it is the same as this store's (the
    /// same observation, attempts and time of change): the same allocation,
    /// so the table keeps its element and draws nothing again. A snapshot
    /// loaded after its `rows` keeps every row they drew.
    pub fn keep_rows_of(&mut self, earlier: &Store) {
        for row in self.rows.values_mut() {
            if let Some(old) = earlier.row(&row.key) {
                let same = old.observation == row.observation
                    && old.attempts == row.attempts
                    && old.changed_at == row.changed_at;
                if same {
                    *row = old.clone();
                }
            }
        }
    }

    fn insert_rows(&mut self, classified: Vec<Attempted>) {
        for c in classified {
            self.insert_row(c.observation, AttemptsSummary::of(&c.attempts), None);
        }
    }

    /// Builds the index now if it is still to be built, so that the first
    /// change or explanation does not wait for it.
    pub fn prepare(&self) {
        self.index();
    }

    /// The index, built first if it is still to be.
    fn index(&self) -> &Index {
        self.index.get_or_init(|| match &self.unindexed {
            // The text was classified as JSON by the engine, so it parses
            // (a server's snapshot nests a few levels, far from
            // serde_json's limit of 128).
            Some(u) => Index::load(&u.text, u.overrides).unwrap_or_default(),
            None => Index::default(),
        })
    }

    /// The index to change, built first if it is still to be (and the text
    /// it was built from dropped).
    fn index_mut(&mut self) -> &mut Index {
        self.index();
        self.unindexed = None;
        // `index()` has just initialised the cell; OnceLock has no stable
        // `get_mut_or_init` to say so in the types.
        #[allow(clippy::expect_used)]
        self.index
            .get_mut()
            .expect("Store::index has just built the index")
    }
}

/// Whether `text` is JSON to the engine and the store alike (its first
/// non-blank character opens an object or an array).
fn is_json_text(text: &str) -> bool {
    text.trim().starts_with(['{', '['])
}

impl Store {
    fn insert_row(
        &mut self,
        o: Observation,
        attempts: AttemptsSummary,
        changed_at: Option<f64>,
    ) -> bool {
        let key = ItemKey::of(&o);
        let order = o.order_key();
        let previous = self
            .row_order
            .remove(&key)
            .and_then(|ok| self.rows.remove(&ok));
        if let Some(p) = &previous {
            if p.observation == o && p.attempts == attempts {
                self.row_order.insert(key, order.clone());
                self.rows.insert(order, p.clone());
                return false;
            }
        }
        let row = Row {
            key: key.clone(),
            observation: o,
            attempts,
            changed_at,
            revision: next_revision(),
        };
        self.row_order.insert(key, order.clone());
        self.rows.insert(order, Arc::new(row));
        true
    }

    /// Applies a `change` event's text, read by the engine's one reader
    /// ([`ChangeFrame::parse`]), to the engine's snapshot, and replaces
    /// the rows of the objects it reclassified. `now` stamps the changed
    /// rows. None when the text is not JSON (nothing applied).
    pub fn apply_change(&mut self, text: &str, now: f64) -> Option<Applied> {
        let change = ChangeFrame::parse(text)?;
        let index = self.index_mut();
        index.apply_change(&change);
        let found = match index.reclassify() {
            Ok(found) => found,
            // The server's objects are engine input by construction; a
            // failure leaves the old rows rather than losing them.
            Err(_) => return Some(Applied::default()),
        };
        let mut applied = Applied {
            reclassified: found.reclassified.iter().cloned().collect(),
            ..Applied::default()
        };
        let observed: std::collections::BTreeSet<ItemKey> = found
            .observed
            .iter()
            .map(|c| ItemKey::of(&c.observation))
            .collect();
        for key in found.reclassified.difference(&observed) {
            if let Some(order) = self.row_order.remove(key) {
                self.rows.remove(&order);
                applied.removed.push(key.clone());
            }
        }
        for c in found.observed {
            let key = ItemKey::of(&c.observation);
            let attempts = AttemptsSummary::of(&c.attempts);
            if self.insert_row(c.observation, attempts, Some(now)) {
                applied.changed.push(key);
            }
        }
        Some(applied)
    }

    /// Every row, in the spec's order.
    pub fn rows(&self) -> impl Iterator<Item = &Arc<Row>> {
        self.rows.values()
    }

    pub fn row_count(&self) -> usize {
        self.rows.len()
    }

    pub fn row(&self, key: &ItemKey) -> Option<&Arc<Row>> {
        self.row_order.get(key).and_then(|ok| self.rows.get(ok))
    }

    /// The objects the row's classification read (its view), with the
    /// captured pods (for the YAML view).
    pub fn objects_of(&self, key: &ItemKey) -> Vec<Value> {
        self.view_snapshot(key)
            .map(|view| objects_in(&view))
            .unwrap_or_default()
    }

    /// What the row's classification read (its view), as a snapshot
    /// document with this store's options; `None` when no row is `key`.
    pub fn view_snapshot(&self, key: &ItemKey) -> Option<String> {
        self.index().view_snapshot(key)
    }

    /// The explanation of one row, from its view alone.
    pub fn explain(&self, key: &ItemKey) -> Option<Explanation> {
        self.index().explain(key).ok().flatten()
    }

    /// The snapshot the browser classified, as the spec's JSON (indented,
    /// for people: it is what the page offers to download).
    pub fn snapshot_json(&self) -> String {
        let text = self.index().snapshot();
        serde_json::from_str::<Value>(&text)
            .and_then(|v| serde_json::to_string_pretty(&v))
            .unwrap_or(text)
    }
}

/// The items of a snapshot document, then its captured pods: the objects
/// the YAML view shows.
pub fn objects_in(snapshot: &str) -> Vec<Value> {
    let Ok(Value::Object(mut m)) = serde_json::from_str::<Value>(snapshot) else {
        return Vec::new();
    };
    let mut out = match m.remove("items") {
        Some(Value::Array(a)) => a,
        _ => Vec::new(),
    };
    if let Some(Value::Array(c)) = m.remove("captured") {
        out.extend(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use classify_wasm::State;
    use test_support::linking_world::{item_key, Step, World};
    use test_support::{shared_case as case, shared_cases as all_cases};

    type ObservedKey = (String, String, String);

    fn rows_by_object(store: &Store) -> BTreeMap<ObservedKey, (Observation, AttemptsSummary)> {
        store
            .rows()
            .map(|r| {
                let key = (
                    r.key.kind.clone(),
                    r.key.namespace.clone(),
                    r.key.name.clone(),
                );
                (key, (r.observation.clone(), r.attempts.clone()))
            })
            .collect()
    }

    /// The rows on top of the engine's incremental classifier (whose
    /// loop classify-wasm/tests/linking.rs tests): a random snapshot
    /// loaded, then random `change` events (upserts, deletes, captured
    /// pods added and dropped) applied; the rows, with their attempts, are
    /// always those loading the whole snapshot gives.
    #[test]
    fn applying_changes_equals_loading_the_whole_snapshot() {
        let mut rows_seen = 0;
        let mut reclassified = 0;
        for seed in 0..12u64 {
            let mode = if seed % 2 == 0 { "plain" } else { "kueue" };
            let nodes = seed % 3 != 0;
            let mut world = World::new(0x000e_b000 + seed, true);
            for _ in 0..15 {
                world.step();
            }
            let mut store =
                Store::load(&world.snapshot(mode, nodes).to_string(), Options::default())
                    .expect("valid");
            for step_no in 0..45 {
                let step = world.step();
                let change = match &step {
                    Step::Upsert(item) => serde_json::json!({"upserts": [item], "deletes": []}),
                    Step::Delete(item) => {
                        let (kind, namespace, name) = item_key(item);
                        serde_json::json!({"upserts": [], "deletes": [
                            {"kind": kind, "namespace": namespace, "name": name}]})
                    }
                    Step::Capture(entry) => {
                        serde_json::json!({"upserts": [], "deletes": [], "captured": [entry]})
                    }
                    Step::Drop {
                        trainjob_uid,
                        pod_uid,
                    } => serde_json::json!({"upserts": [], "deletes": [],
                        "capturedDropped": [{"trainJobUID": trainjob_uid, "podUID": pod_uid}]}),
                };
                let applied = store
                    .apply_change(&change.to_string(), step_no as f64)
                    .expect("JSON");
                reclassified += applied.reclassified.len();
                let whole =
                    Store::load(&world.snapshot(mode, nodes).to_string(), Options::default())
                        .expect("valid");
                assert_eq!(
                    rows_by_object(&store),
                    rows_by_object(&whole),
                    "seed {seed} step {step_no}: {step:?}"
                );
                rows_seen += whole.row_count();
            }
        }
        assert!(
            rows_seen > 1000 && reclassified > 0,
            "{rows_seen} {reclassified}"
        );
    }

    /// A live snapshot's index waits for its first use; built then (or by
    /// `prepare`), it is the one an eager load builds.
    #[test]
    fn a_new_store_never_reuses_the_revisions_of_an_earlier_one() {
        // The table keeps an element while its revision is shown: a store
        // loaded after a reconnect must not take the old rows' revisions,
        // or the old elements (and their old text) would stay. (Only
        // `keep_rows_of` hands a row on, and only one that is the same.)
        let text = case("complete")["snapshot"].to_string();
        let revisions = |s: &Store| -> std::collections::HashSet<u64> {
            s.rows().map(|r| r.revision).collect()
        };
        let first = Store::load(&text, Options::default()).unwrap();
        let second = Store::load(&text, Options::default()).unwrap();
        assert!(!revisions(&first).is_empty());
        assert_eq!(
            revisions(&first).len(),
            first.row_count(),
            "unique within one"
        );
        assert!(revisions(&first).is_disjoint(&revisions(&second)));
    }

    /// The stream's `rows` event shows exactly the rows its snapshot's load
    /// makes, on every golden case; loaded after them, the snapshot keeps
    /// every one of their allocations (the table draws nothing again), and
    /// a row that differs is drawn anew.
    #[test]
    fn the_servers_rows_are_the_snapshots_and_its_load_keeps_them() {
        let content = |s: &Store| -> Vec<(ItemKey, Observation, AttemptsSummary, Option<f64>)> {
            s.rows()
                .map(|r| {
                    let r = &**r;
                    (
                        r.key.clone(),
                        r.observation.clone(),
                        r.attempts.clone(),
                        r.changed_at,
                    )
                })
                .collect()
        };
        let mut seen = 0;
        for case in test_support::shared_cases() {
            let text = case["snapshot"].to_string();
            let rows = classify_wasm::classified_rows_json(&text, Default::default()).unwrap();
            let early = Store::of_rows(&rows).unwrap();
            let mut loaded = Store::load(&text, Options::default()).unwrap();
            assert_eq!(content(&early), content(&loaded));
            loaded.keep_rows_of(&early);
            assert!(early
                .rows()
                .zip(loaded.rows())
                .all(|(a, b)| Arc::ptr_eq(a, b)));
            seen += early.row_count();
        }
        assert!(seen >= 20, "{seen}");

        let text = case("complete")["snapshot"].to_string();
        let mut rows: Vec<Attempted> = serde_json::from_str(
            &classify_wasm::classified_rows_json(&text, Default::default()).unwrap(),
        )
        .unwrap();
        rows[0]
            .observation
            .cause
            .detail
            .push_str(" (an older classification)");
        let early = Store::of_rows(&serde_json::to_string(&rows).unwrap()).unwrap();
        let mut loaded = Store::load(&text, Options::default()).unwrap();
        loaded.keep_rows_of(&early);
        let kept: Vec<bool> = early
            .rows()
            .zip(loaded.rows())
            .map(|(a, b)| Arc::ptr_eq(a, b))
            .collect();
        assert!(!kept[0], "a row that differs is not kept");
        assert_ne!(
            early.rows().next().unwrap().revision,
            loaded.rows().next().unwrap().revision
        );

        let bad = Store::of_rows("[{\"observation\": 7}]").unwrap_err();
        assert_eq!((bad.line(), bad.column() > 0), (1, true), "{bad}");
    }

    #[test]
    fn the_index_of_a_loaded_snapshot_is_built_on_first_use() {
        let text = case("complete")["snapshot"].to_string();
        let store = Store::load(&text, Options::default()).unwrap();
        assert!(store.index.get().is_none(), "built before its first use");
        assert!(store.row_count() > 0, "the rows are made at once");
        store.prepare();
        let eager = Index::load(&text, Options::default()).unwrap();
        let built = store.index.get().expect("prepare builds it");
        assert_eq!(built.options(), eager.options());
        assert_eq!(built.snapshot(), eager.snapshot());
        assert!(built.keys().next().is_some());

        // A change builds it too, and then the text it came from is let go.
        let mut store = Store::load(&text, Options::default()).unwrap();
        store
            .apply_change(r#"{"upserts": [], "deletes": []}"#, 1.0)
            .expect("JSON");
        assert!(store.index.get().is_some());
        assert!(store.unindexed.is_none());

        // Text that is not JSON is still refused at load, with its position.
        let yaml = "kind: List\nitems: []\n";
        assert!(matches!(
            Store::load(yaml, Options::default()),
            Err(LoadError::Input(_))
        ));
    }

    #[test]
    fn load_gives_the_golden_observations() {
        for c in all_cases() {
            let text = c["snapshot"].to_string();
            let store = Store::load(&text, Options::default()).unwrap();
            let got: Vec<Value> = store
                .rows()
                .map(|r| serde_json::to_value(&r.observation).unwrap())
                .collect();
            let mut want: Vec<Value> = c["expected"].as_array().unwrap().clone();
            let mut got_sorted = got.clone();
            let k = |v: &Value| v["object"].to_string();
            want.sort_by_key(k);
            got_sorted.sort_by_key(k);
            assert_eq!(got_sorted, want, "case {}", c["name"]);
        }
    }

    /// Each row's explanation, from its view alone, is of the row's own
    /// observation: what the whole snapshot gives.
    #[test]
    fn explanations_on_views_match_the_whole() {
        let mut explained = 0;
        for c in all_cases() {
            let text = c["snapshot"].to_string();
            let store = Store::load(&text, Options::default()).unwrap();
            for row in store.rows() {
                let explanation = store.explain(&row.key).expect("every row is explained");
                assert_eq!(
                    explanation.observation, row.observation,
                    "case {}",
                    c["name"]
                );
                explained += 1;
            }
        }
        assert!(explained >= 20, "{explained}");
    }

    #[test]
    fn a_change_reclassifies_only_its_job() {
        let c = case("complete");
        let snap = &c["snapshot"];
        // Two copies of the job: the second renamed.
        let text = snap.to_string();
        let renamed = text
            .replace("llm-7", "gpt-9")
            .replace("c187c749", "d187c749")
            .replace("b64061a5", "c64061a5");
        let second: Value = serde_json::from_str(&renamed).unwrap();
        let mut both = snap.clone();
        both["items"]
            .as_array_mut()
            .unwrap()
            .extend(second["items"].as_array().unwrap().iter().cloned());
        let mut store = Store::load(&both.to_string(), Options::default()).unwrap();
        assert_eq!(store.row_count(), 2);
        let key = ItemKey::new("TrainJob", "team-a", "gpt-9-s3");
        assert_eq!(store.row(&key).unwrap().observation.state, State::Ended);

        // The TrainJob loses its Complete condition: it runs again.
        let mut tj = second["items"][0].clone();
        tj["status"] = serde_json::json!({});
        let applied = store
            .apply_change(
                &serde_json::json!({"upserts": [tj], "deletes": []}).to_string(),
                42.0,
            )
            .expect("JSON");
        // The TrainJob and its pods (orphan candidates), not the other job.
        assert!(applied.reclassified.contains(&key));
        assert!(
            applied
                .reclassified
                .iter()
                .all(|k| k.name.starts_with("gpt-9")),
            "{:?}",
            applied.reclassified
        );
        assert_eq!(applied.changed, vec![key.clone()]);
        let row = store.row(&key).unwrap();
        assert_ne!(row.observation.state, State::Ended);
        assert_eq!(row.changed_at, Some(42.0));
        let other = store
            .row(&ItemKey::new("TrainJob", "team-a", "llm-7-s3"))
            .unwrap();
        assert_eq!(other.observation.state, State::Ended);
        assert_eq!(other.changed_at, None);

        // Deleting the TrainJob leaves its JobSet as an orphan.
        let applied = store.apply_change(
            &serde_json::json!({"upserts": [], "deletes": [{"kind": "TrainJob", "namespace": "team-a", "name": "gpt-9-s3", "uid": "x"}]}).to_string(),
            43.0,
        ).expect("JSON");
        assert_eq!(applied.removed, vec![key.clone()]);
        let orphan = store
            .row(&ItemKey::new("JobSet", "team-a", "gpt-9-s3"))
            .unwrap();
        assert!(orphan.observation.foreign);
        assert_eq!(orphan.observation.state, State::Ended);
        // Everything left of gpt-9 is an orphan; llm-7 is untouched.
        for r in store.rows() {
            if r.observation.job == "gpt-9" {
                assert!(r.observation.foreign && r.key.kind != "TrainJob");
            } else {
                assert_eq!(r.changed_at, None);
            }
        }
    }

    /// The engine's own case of issue 10: three attempts, the previous one lost its node.
    fn three_attempts_case() -> Value {
        let path = format!(
            "{}/../classify-wasm/cases/attempts-oom-node-lost-exit.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    #[test]
    fn rows_carry_their_attempts_and_a_captured_pod_updates_them() {
        let c = three_attempts_case();
        let mut snap = c["snapshot"].clone();
        let key = ItemKey::new("TrainJob", "team-a", "train-1-s1");
        let whole = Store::load(&snap.to_string(), Options::default()).unwrap();
        let row = whole.row(&key).unwrap();
        assert_eq!(row.attempts.count, 3);
        assert_eq!(
            row.attempts.previous.as_deref(),
            Some(
                "A=1 J=1: node-lost (captured-pod): pod train-1-s1-node-0-0-b1: DisruptionTarget: \
                 DeletionByTaintManager: Taint manager: deleting due to NoExecute taint; other \
                 ranks: train-1-s1-node-0-0-b1 non-zero-exit (node container terminated: Error, \
                 exit code 143)"
            )
        );

        // Without the first attempt's captured pod the job has two attempts;
        // the pod arriving changes the attempts and not the observation, and
        // the row is still marked changed.
        let oom = snap["captured"].as_array_mut().unwrap().remove(0);
        assert_eq!(oom["pod"]["metadata"]["name"], "train-1-s1-node-0-0-a0");
        let mut store = Store::load(&snap.to_string(), Options::default()).unwrap();
        let before = store.row(&key).unwrap().clone();
        assert_eq!(before.attempts.count, 2);
        let applied = store
            .apply_change(
                &serde_json::json!({"upserts": [], "deletes": [], "captured": [oom]}).to_string(),
                7.0,
            )
            .expect("JSON");
        assert_eq!(applied.changed, vec![key.clone()]);
        let after = store.row(&key).unwrap();
        assert_eq!(after.observation, before.observation);
        assert_eq!(after.attempts, row.attempts);
        assert_ne!(after.revision, before.revision);
        assert_eq!(after.changed_at, Some(7.0));
    }

    /// Items are kept as the text they came as (sub-snapshots are made of
    /// it), from a first load and from a change, in every shape a document
    /// can have.
    #[test]
    fn items_are_kept_as_the_text_sent() {
        let pod = r#"{ "kind": "Pod", "metadata": { "name": "p", "namespace": "ns" } }"#;
        let key = ItemKey::new("Pod", "ns", "p");
        for doc in [
            format!(r#"{{"kind":"Snapshot","mode":"plain","items":[{pod}],"captured":[]}}"#),
            format!(r#"{{"kind":"List","items":[{pod}]}}"#),
            format!("[{pod}]"),
            pod.to_string(),
        ] {
            let store = Store::load(&doc, Options::default()).unwrap();
            let view = store.view_snapshot(&key).unwrap();
            assert!(view.contains(pod), "{doc}: {view}");
        }
        let mut store =
            Store::load(r#"{"kind":"Snapshot","items":[]}"#, Options::default()).unwrap();
        let change = format!(r#"{{"upserts":[{pod}],"deletes":[]}}"#);
        assert!(store.apply_change(&change, 1.0).is_some());
        assert!(store.view_snapshot(&key).unwrap().contains(pod));
        // Not JSON: nothing applied. A part of another type is ignored.
        assert_eq!(store.apply_change("{", 2.0), None);
        let odd =
            r#"{"upserts":{"kind":"Pod"},"deletes":[{"kind":"Pod","namespace":"ns","name":"p"}]}"#;
        assert!(store.apply_change(odd, 3.0).is_some());
        assert!(store.index().keys().next().is_none());
    }

    #[test]
    fn item_ids_round_trip() {
        for key in [
            ItemKey::new("TrainJob", "team-a", "llm-7-s3"),
            ItemKey::new("Node", "", "gpu-node-1"),
            ItemKey::new("Pod", "ns", "a/b"),
        ] {
            assert_eq!(ItemKey::parse_id(&key.id()), Some(key.clone()));
        }
        assert_eq!(ItemKey::parse_id("TrainJob/team-a"), None);
    }

    #[test]
    fn download_round_trips() {
        let c = case("failed-captured-evidence");
        let store = Store::load(&c["snapshot"].to_string(), Options::default()).unwrap();
        let again = Store::load(&store.snapshot_json(), Options::default()).unwrap();
        let a: Vec<_> = store.rows().map(|r| r.observation.clone()).collect();
        let b: Vec<_> = again.rows().map(|r| r.observation.clone()).collect();
        assert_eq!(a, b);
        assert!(!a.is_empty());
    }

    #[test]
    fn explain_and_objects_of_a_row() {
        let c = case("failed-oom-earliest");
        let store = Store::load(&c["snapshot"].to_string(), Options::default()).unwrap();
        let key = store.rows().next().unwrap().key.clone();
        let e = store.explain(&key).unwrap();
        assert_eq!(e.observation, store.row(&key).unwrap().observation);
        assert!(!e.trace.decided_by.is_empty());
        assert!(store.objects_of(&key).len() > 1);
    }

    #[test]
    fn bad_input_names_line_and_column() {
        let err = Store::load(
            "{\n  \"kind\": \"Snapshot\",\n  \"mode\": 3\n}",
            Options::default(),
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("3:"), "{err}");
    }
}
