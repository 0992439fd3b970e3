//! The browser's own copy of a namespace: every object of the snapshot, the
//! captured pods, and the observations the engine gave for them.
//!
//! A `snapshot` event replaces everything; a `change` event upserts and
//! deletes objects and adds or drops captured pods. Only the TrainJobs a
//! change touches are classified again: the store links objects that
//! section 4 of the spec reads together (a TrainJob with its JobSet, its
//! Workload, its pods, its runtime copy and its captured pods) into
//! components, builds one sub-snapshot per touched component and asks the
//! engine for that component alone. Nodes are not links (many jobs share a
//! Node): they are added to every component whose pods name them.
//!
//! Nothing here touches the DOM, so every rule is unit-tested natively.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, OnceLock};

use classify_wasm::{
    AttemptTrace, Attempted, Explanation, InputError, Mode, Observation, Options, READ_KINDS,
};
use serde_json::{Map, Value};

const JOB_ID: &str = "dispatch.phpboyscout.uk/job-id";
const SUBMISSION: &str = "dispatch.phpboyscout.uk/submission";
const JOBSET_NAME: &str = "jobset.sigs.k8s.io/jobset-name";
const JOB_UID: &str = "kueue.x-k8s.io/job-uid";

/// `(kind, namespace, name)`: how the store names an object (a Node has the
/// namespace `""`).
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

/// The order of section 3: namespace, job, TrainJobs before orphans, kind, name.
pub type OrderKey = (String, String, bool, String, String);

pub fn order_key(o: &Observation) -> OrderKey {
    (
        o.object.namespace.clone(),
        o.job.clone(),
        o.object.kind != "TrainJob",
        o.object.kind.clone(),
        o.object.name.clone(),
    )
}

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
    /// Unique among the store's rows, and new whenever the observation
    /// changes: the table's key.
    pub revision: u64,
}

#[derive(Debug, Clone)]
struct Item {
    value: Value,
    /// The item as JSON text, written once, when a sub-snapshot first needs
    /// it (a first load classifies the text it was given, so it needs none).
    json: OnceLock<String>,
    tokens: Vec<String>,
    node_name: Option<String>,
}

#[derive(Debug, Clone)]
struct Captured {
    trainjob_uid: String,
    pod_uid: String,
    /// The whole `captured` entry as the server sent it.
    value: Value,
    /// As JSON text, written when first needed.
    json: OnceLock<String>,
}

impl Item {
    fn json(&self) -> &str {
        self.json.get_or_init(|| self.value.to_string())
    }
}

impl Captured {
    fn json(&self) -> &str {
        self.json.get_or_init(|| self.value.to_string())
    }
}

/// The snapshot header: what the server (or the user) says about the mode
/// and Node access.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Header {
    pub mode: Option<Mode>,
    pub nodes_readable: Option<bool>,
}

impl Header {
    pub fn options(self) -> Options {
        Options {
            mode: self.mode,
            nodes_readable: self.nodes_readable,
        }
    }
}

/// What applying an event did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// Rows whose observation is new or changed.
    pub changed: Vec<ItemKey>,
    /// Rows removed.
    pub removed: Vec<ItemKey>,
    /// Components classified again.
    pub components: usize,
}

/// A namespace as the browser holds it.
#[derive(Debug, Clone, Default)]
pub struct Store {
    pub header: Header,
    items: BTreeMap<ItemKey, Item>,
    /// Input order of the items (the order a snapshot is written in).
    order: Vec<ItemKey>,
    captured: Vec<Captured>,
    by_token: HashMap<String, BTreeSet<ItemKey>>,
    pods_by_node: HashMap<String, BTreeSet<ItemKey>>,
    rows: BTreeMap<OrderKey, Arc<Row>>,
    row_order: HashMap<ItemKey, OrderKey>,
    next_revision: u64,
}

fn str_at<'v>(v: &'v Value, path: &[&str]) -> Option<&'v str> {
    let mut here = v;
    for p in path {
        here = here.get(p)?;
    }
    here.as_str().filter(|s| !s.is_empty())
}

fn label<'v>(v: &'v Value, key: &str) -> Option<&'v str> {
    v.get("metadata")?
        .get("labels")?
        .get(key)?
        .as_str()
        .filter(|s| !s.is_empty())
}

fn trainjob_owner_uids(v: &Value) -> Vec<String> {
    v.get("metadata")
        .and_then(|m| m.get("ownerReferences"))
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter(|r| r.get("kind").and_then(Value::as_str) == Some("TrainJob"))
        .filter_map(|r| r.get("uid").and_then(Value::as_str))
        .filter(|u| !u.is_empty())
        .map(str::to_string)
        .collect()
}

/// The links an object has to others it is read with (section 4, and the
/// owner references of section 11).
fn tokens(kind: &str, v: &Value) -> Vec<String> {
    let ns = str_at(v, &["metadata", "namespace"]).unwrap_or("");
    let name = str_at(v, &["metadata", "name"]).unwrap_or("");
    let uid = str_at(v, &["metadata", "uid"]);
    let mut out = Vec::new();
    let by_labels = match (label(v, JOB_ID), label(v, SUBMISSION)) {
        (Some(j), Some(s)) => Some(format!("l:{ns}\u{0}{j}\u{0}{s}")),
        _ => None,
    };
    match kind {
        "TrainJob" => {
            out.push(format!("n:{ns}\u{0}{name}"));
            if let Some(uid) = uid {
                out.push(format!("u:{uid}"));
            }
            out.extend(by_labels);
        }
        "JobSet" => {
            out.push(format!("n:{ns}\u{0}{name}"));
            out.extend(trainjob_owner_uids(v).into_iter().map(|u| format!("u:{u}")));
        }
        "Workload" => out.extend(label(v, JOB_UID).map(|u| format!("u:{u}"))),
        "TrainingRuntime" => {
            out.extend(trainjob_owner_uids(v).into_iter().map(|u| format!("u:{u}")));
        }
        "Pod" => {
            out.extend(by_labels);
            if let Some(js) = label(v, JOBSET_NAME) {
                out.push(format!("n:{ns}\u{0}{js}"));
            }
        }
        _ => {}
    }
    out
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
    pub fn load(text: &str, overrides: Header) -> Result<Store, LoadError> {
        // The engine validates and classifies the text as given.
        let classified = classify_wasm::classify_with_attempts(text, overrides.options())
            .map_err(LoadError::Input)?;
        Store::load_classified(text, overrides, classified)
    }

    /// [`Store::load`] for a caller that already classified `text` (the
    /// offline page explains it anyway), so it is not classified twice.
    pub fn load_classified(
        text: &str,
        overrides: Header,
        classified: Vec<Attempted>,
    ) -> Result<Store, LoadError> {
        let doc: Value = serde_json::from_str(text).map_err(|e| {
            LoadError::Input(InputError {
                position: classify_wasm::Position {
                    line: e.line(),
                    column: e.column(),
                },
                message: "only JSON input can be kept as a store".to_string(),
            })
        })?;
        let mut store = Store::default();
        let mut header = overrides;
        // The document is taken apart, not copied: its items move into the store.
        let kind = doc.get("kind").and_then(Value::as_str).map(str::to_string);
        let items: Vec<Value> = match doc {
            Value::Object(mut m) if kind.as_deref() == Some("Snapshot") => {
                if header.mode.is_none() {
                    header.mode = m
                        .get("mode")
                        .and_then(Value::as_str)
                        .and_then(|s| s.parse().ok());
                }
                if header.nodes_readable.is_none() {
                    header.nodes_readable = m.get("nodesReadable").and_then(Value::as_bool);
                }
                if let Some(Value::Array(captured)) = m.remove("captured") {
                    for c in captured {
                        store.put_captured(c);
                    }
                }
                match m.remove("items") {
                    Some(Value::Array(a)) => a,
                    _ => Vec::new(),
                }
            }
            Value::Object(mut m) if kind.as_deref() == Some("List") => match m.remove("items") {
                Some(Value::Array(a)) => a,
                _ => Vec::new(),
            },
            Value::Array(a) => a,
            other => vec![other],
        };
        store.header = header;
        for item in items {
            store.put(item);
        }
        for c in classified {
            store.insert_row(c.observation, AttemptsSummary::of(&c.attempts), None);
        }
        Ok(store)
    }

    fn put_captured(&mut self, value: Value) {
        let trainjob_uid = value
            .get("trainJobUID")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let pod_uid = value
            .get("pod")
            .and_then(|p| str_at(p, &["metadata", "uid"]))
            .unwrap_or("")
            .to_string();
        self.captured
            .retain(|c| !(c.trainjob_uid == trainjob_uid && c.pod_uid == pod_uid));
        self.captured.push(Captured {
            trainjob_uid,
            pod_uid,
            value,
            json: OnceLock::new(),
        });
    }

    /// Adds or replaces an object; returns its key (None for kinds not read).
    fn put(&mut self, value: Value) -> Option<ItemKey> {
        let kind = value.get("kind").and_then(Value::as_str)?.to_string();
        if !READ_KINDS.contains(&kind.as_str()) {
            return None;
        }
        let ns = str_at(&value, &["metadata", "namespace"]).unwrap_or("");
        let name = str_at(&value, &["metadata", "name"]).unwrap_or("");
        let key = ItemKey::new(&kind, if kind == "Node" { "" } else { ns }, name);
        self.remove(&key);
        let tokens = tokens(&kind, &value);
        for t in &tokens {
            self.by_token
                .entry(t.clone())
                .or_default()
                .insert(key.clone());
        }
        let node_name = if kind == "Pod" {
            str_at(&value, &["spec", "nodeName"]).map(str::to_string)
        } else {
            None
        };
        if let Some(n) = &node_name {
            self.pods_by_node
                .entry(n.clone())
                .or_default()
                .insert(key.clone());
        }
        self.order.push(key.clone());
        self.items.insert(
            key.clone(),
            Item {
                value,
                json: OnceLock::new(),
                tokens,
                node_name,
            },
        );
        Some(key)
    }

    fn remove(&mut self, key: &ItemKey) -> bool {
        let Some(item) = self.items.remove(key) else {
            return false;
        };
        for t in &item.tokens {
            if let Some(set) = self.by_token.get_mut(t) {
                set.remove(key);
                if set.is_empty() {
                    self.by_token.remove(t);
                }
            }
        }
        if let Some(n) = &item.node_name {
            if let Some(set) = self.pods_by_node.get_mut(n) {
                set.remove(key);
                if set.is_empty() {
                    self.pods_by_node.remove(n);
                }
            }
        }
        self.order.retain(|k| k != key);
        true
    }

    /// Every object linked to `start`, `start` included (not Nodes).
    fn component(&self, start: &ItemKey) -> BTreeSet<ItemKey> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![start.clone()];
        let mut tokens_seen: BTreeSet<&str> = BTreeSet::new();
        while let Some(k) = todo.pop() {
            if !seen.insert(k.clone()) {
                continue;
            }
            let Some(item) = self.items.get(&k) else {
                continue;
            };
            for t in &item.tokens {
                if !tokens_seen.insert(t.as_str()) {
                    continue;
                }
                for other in self.by_token.get(t).into_iter().flatten() {
                    if !seen.contains(other) {
                        todo.push(other.clone());
                    }
                }
            }
        }
        seen.retain(|k| self.items.contains_key(k));
        seen
    }

    /// The objects a touch of `key` (as it is now) reaches.
    fn touched(&self, key: &ItemKey, out: &mut BTreeSet<ItemKey>) {
        if key.kind == "Node" {
            for pod in self.pods_by_node.get(&key.name).into_iter().flatten() {
                out.extend(self.component(pod));
            }
        } else {
            out.insert(key.clone());
            out.extend(self.component(key));
        }
    }

    fn touched_by_uid(&self, uid: &str, out: &mut BTreeSet<ItemKey>) {
        for k in self.by_token.get(&format!("u:{uid}")).into_iter().flatten() {
            out.extend(self.component(k));
        }
    }

    /// The sub-snapshot of a component: its objects in input order, the
    /// Nodes its pods name, and the captured pods of its TrainJobs.
    fn sub_snapshot(&self, component: &BTreeSet<ItemKey>) -> String {
        let mut uids: BTreeSet<&str> = BTreeSet::new();
        let mut nodes: BTreeSet<&str> = BTreeSet::new();
        let mut out = String::with_capacity(4096);
        out.push_str("{\"kind\":\"Snapshot\",");
        if let Some(m) = self.header.mode {
            out.push_str(&format!("\"mode\":\"{}\",", m.as_str()));
        }
        if let Some(n) = self.header.nodes_readable {
            out.push_str(&format!("\"nodesReadable\":{n},"));
        }
        out.push_str("\"items\":[");
        let mut first = true;
        let mut push = |out: &mut String, json: &str| {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(json);
        };
        for k in self.order.iter().filter(|k| component.contains(*k)) {
            let item = &self.items[k];
            if k.kind == "TrainJob" {
                if let Some(u) = str_at(&item.value, &["metadata", "uid"]) {
                    uids.insert(u);
                }
            }
            if let Some(n) = &item.node_name {
                nodes.insert(n);
            }
            push(&mut out, item.json());
        }
        for n in nodes {
            if let Some(node) = self.items.get(&ItemKey::new("Node", "", n)) {
                push(&mut out, node.json());
            }
        }
        out.push_str("],\"captured\":[");
        let mut first = true;
        for c in self
            .captured
            .iter()
            .filter(|c| uids.contains(c.trainjob_uid.as_str()))
        {
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(c.json());
        }
        out.push_str("]}");
        out
    }

    fn insert_row(
        &mut self,
        o: Observation,
        attempts: AttemptsSummary,
        changed_at: Option<f64>,
    ) -> bool {
        let key = ItemKey::of(&o);
        let order = order_key(&o);
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
        self.next_revision += 1;
        let row = Row {
            key: key.clone(),
            observation: o,
            attempts,
            changed_at,
            revision: self.next_revision,
        };
        self.row_order.insert(key, order.clone());
        self.rows.insert(order, Arc::new(row));
        true
    }

    /// Classifies the components holding `keys` again, replacing their rows.
    fn reclassify(&mut self, affected: BTreeSet<ItemKey>, now: f64) -> Applied {
        let mut applied = Applied::default();
        let mut old: BTreeSet<ItemKey> = affected
            .iter()
            .filter(|k| self.row_order.contains_key(*k))
            .cloned()
            .collect();
        let mut todo: BTreeSet<ItemKey> = affected
            .into_iter()
            .filter(|k| self.items.contains_key(k))
            .collect();
        let mut fresh: Vec<Attempted> = Vec::new();
        while let Some(start) = todo.pop_first() {
            let component = self.component(&start);
            for k in &component {
                todo.remove(k);
                if self.row_order.contains_key(k) {
                    old.insert(k.clone());
                }
            }
            applied.components += 1;
            let text = self.sub_snapshot(&component);
            match classify_wasm::classify_with_attempts(&text, self.header.options()) {
                Ok(classified) => fresh.extend(
                    classified
                        .into_iter()
                        .filter(|c| component.contains(&ItemKey::of(&c.observation))),
                ),
                Err(_) => {
                    // The server's objects are engine input by construction; a
                    // failure leaves the old rows rather than losing them.
                    continue;
                }
            }
        }
        let new_keys: BTreeSet<ItemKey> =
            fresh.iter().map(|c| ItemKey::of(&c.observation)).collect();
        for k in old.difference(&new_keys) {
            if let Some(ok) = self.row_order.remove(k) {
                self.rows.remove(&ok);
                applied.removed.push(k.clone());
            }
        }
        for c in fresh {
            let key = ItemKey::of(&c.observation);
            let attempts = AttemptsSummary::of(&c.attempts);
            if self.insert_row(c.observation, attempts, Some(now)) {
                applied.changed.push(key);
            }
        }
        applied
    }

    /// Applies a `change` event (`upserts`, `deletes`, `captured`,
    /// `capturedDropped`, `nodesReadable`); `now` stamps the changed rows.
    pub fn apply_change(&mut self, change: &Value, now: f64) -> Applied {
        let mut affected = BTreeSet::new();
        let mut uids: Vec<String> = Vec::new();
        let upserts = change.get("upserts").and_then(Value::as_array);
        let deletes = change.get("deletes").and_then(Value::as_array);
        // Before: what each changed object reached.
        let mut keys: Vec<ItemKey> = Vec::new();
        for u in upserts.into_iter().flatten() {
            let kind = u.get("kind").and_then(Value::as_str).unwrap_or("");
            let ns = if kind == "Node" {
                ""
            } else {
                str_at(u, &["metadata", "namespace"]).unwrap_or("")
            };
            keys.push(ItemKey::new(
                kind,
                ns,
                str_at(u, &["metadata", "name"]).unwrap_or(""),
            ));
        }
        for d in deletes.into_iter().flatten() {
            let kind = d.get("kind").and_then(Value::as_str).unwrap_or("");
            let ns = if kind == "Node" {
                ""
            } else {
                d.get("namespace").and_then(Value::as_str).unwrap_or("")
            };
            keys.push(ItemKey::new(
                kind,
                ns,
                d.get("name").and_then(Value::as_str).unwrap_or(""),
            ));
        }
        for k in &keys {
            self.touched(k, &mut affected);
        }
        // Apply.
        // In the order the stream's contract gives: deletes, then upserts.
        for k in &keys[upserts.map_or(0, Vec::len)..] {
            self.remove(k);
        }
        for u in upserts.into_iter().flatten() {
            self.put(u.clone());
        }
        for c in change
            .get("captured")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            if let Some(u) = c.get("trainJobUID").and_then(Value::as_str) {
                uids.push(u.to_string());
            }
            self.put_captured(c.clone());
        }
        for d in change
            .get("capturedDropped")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let t = d.get("trainJobUID").and_then(Value::as_str).unwrap_or("");
            let p = d.get("podUID").and_then(Value::as_str).unwrap_or("");
            self.captured
                .retain(|c| !(c.trainjob_uid == t && c.pod_uid == p));
            uids.push(t.to_string());
        }
        let mut everything = false;
        if let Some(n) = change.get("nodesReadable").and_then(Value::as_bool) {
            if self.header.nodes_readable != Some(n) {
                self.header.nodes_readable = Some(n);
                everything = true;
            }
        }
        // After: what each changed object reaches now.
        for k in &keys {
            self.touched(k, &mut affected);
        }
        for u in &uids {
            self.touched_by_uid(u, &mut affected);
        }
        if everything {
            affected.extend(self.items.keys().filter(|k| k.kind != "Node").cloned());
        }
        self.reclassify(affected, now)
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

    /// The objects the row's classification read, with the captured pods
    /// (for the YAML view).
    pub fn objects_of(&self, key: &ItemKey) -> Vec<Value> {
        let component = self.component(key);
        let text = self.sub_snapshot(&component);
        let Ok(Value::Object(mut m)) = serde_json::from_str::<Value>(&text) else {
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

    /// The explanation of one row, from its component alone.
    pub fn explain(&self, key: &ItemKey) -> Option<Explanation> {
        if !self.items.contains_key(key) {
            return None;
        }
        let text = self.sub_snapshot(&self.component(key));
        classify_wasm::explain(&text, self.header.options())
            .ok()?
            .into_iter()
            .find(|e| ItemKey::of(&e.observation) == *key)
    }

    /// The snapshot the browser classified, as the spec's JSON.
    pub fn snapshot_json(&self) -> String {
        let mut m = Map::new();
        m.insert("kind".into(), Value::from("Snapshot"));
        if let Some(mode) = self.header.mode {
            m.insert("mode".into(), Value::from(mode.as_str()));
        }
        if let Some(n) = self.header.nodes_readable {
            m.insert("nodesReadable".into(), Value::from(n));
        }
        m.insert(
            "items".into(),
            Value::Array(
                self.order
                    .iter()
                    .map(|k| self.items[k].value.clone())
                    .collect(),
            ),
        );
        m.insert(
            "captured".into(),
            Value::Array(self.captured.iter().map(|c| c.value.clone()).collect()),
        );
        serde_json::to_string_pretty(&Value::Object(m)).unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use classify_wasm::State;

    fn case(name: &str) -> Value {
        let path = format!(
            "{}/../../shared/cases/{name}.json",
            env!("CARGO_MANIFEST_DIR")
        );
        serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
    }

    fn all_cases() -> Vec<Value> {
        let dir = format!("{}/../../shared/cases", env!("CARGO_MANIFEST_DIR"));
        let mut names: Vec<_> = std::fs::read_dir(dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|e| e == "json"))
            .collect();
        names.sort();
        names
            .into_iter()
            .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
            .collect()
    }

    #[test]
    fn load_gives_the_golden_observations() {
        for c in all_cases() {
            let text = c["snapshot"].to_string();
            let store = Store::load(&text, Header::default()).unwrap();
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

    /// Classifying component by component gives what the whole snapshot gives.
    #[test]
    fn per_component_classification_matches_the_whole() {
        for c in all_cases() {
            let text = c["snapshot"].to_string();
            let mut store = Store::load(&text, Header::default()).unwrap();
            let before: Vec<Observation> = store.rows().map(|r| r.observation.clone()).collect();
            let all: BTreeSet<ItemKey> = store.items.keys().cloned().collect();
            store.reclassify(all, 1.0);
            let after: Vec<Observation> = store.rows().map(|r| r.observation.clone()).collect();
            assert_eq!(before, after, "case {}", c["name"]);
        }
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
        let mut store = Store::load(&both.to_string(), Header::default()).unwrap();
        assert_eq!(store.row_count(), 2);
        let key = ItemKey::new("TrainJob", "team-a", "gpt-9-s3");
        assert_eq!(store.row(&key).unwrap().observation.state, State::Ended);

        // The TrainJob loses its Complete condition: it runs again.
        let mut tj = second["items"][0].clone();
        tj["status"] = serde_json::json!({});
        let applied =
            store.apply_change(&serde_json::json!({"upserts": [tj], "deletes": []}), 42.0);
        assert_eq!(applied.components, 1);
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
            &serde_json::json!({"upserts": [], "deletes": [{"kind": "TrainJob", "namespace": "team-a", "name": "gpt-9-s3", "uid": "x"}]}),
            43.0,
        );
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
        let whole = Store::load(&snap.to_string(), Header::default()).unwrap();
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
        let mut store = Store::load(&snap.to_string(), Header::default()).unwrap();
        let before = store.row(&key).unwrap().clone();
        assert_eq!(before.attempts.count, 2);
        let applied = store.apply_change(
            &serde_json::json!({"upserts": [], "deletes": [], "captured": [oom]}),
            7.0,
        );
        assert_eq!(applied.changed, vec![key.clone()]);
        let after = store.row(&key).unwrap();
        assert_eq!(after.observation, before.observation);
        assert_eq!(after.attempts, row.attempts);
        assert_ne!(after.revision, before.revision);
        assert_eq!(after.changed_at, Some(7.0));
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
        let store = Store::load(&c["snapshot"].to_string(), Header::default()).unwrap();
        let again = Store::load(&store.snapshot_json(), Header::default()).unwrap();
        let a: Vec<_> = store.rows().map(|r| r.observation.clone()).collect();
        let b: Vec<_> = again.rows().map(|r| r.observation.clone()).collect();
        assert_eq!(a, b);
        assert!(!a.is_empty());
    }

    #[test]
    fn explain_and_objects_of_a_row() {
        let c = case("failed-oom-earliest");
        let store = Store::load(&c["snapshot"].to_string(), Header::default()).unwrap();
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
            Header::default(),
        )
        .unwrap_err();
        assert!(err.to_string().starts_with("3:"), "{err}");
    }
}
