//! Each object's observation history: when its state, cause kind or held
//! flag changed, as the server saw it (`pending 09:00 → running 09:04 →
//! ended, out-of-memory 10:12`).
//!
//! Only a long-running reader knows this, so it lives here and not in the
//! engine. [`History`] is a plain synchronous structure: the hub feeds it
//! each re-classified job's observations with the time of the change, read
//! from the hub's clock, which tests replace, so no test races a clock.
//!
//! Bounds. Each object keeps its last [`CHANGES_PER_OBJECT`] changes; an
//! entry is a fixed-size value ([`Change`]: a time and three small enums),
//! so an object's history weighs at most its key's strings (Kubernetes
//! bounds names to 253 bytes) plus 64 × `size_of::<Change>()`. Objects gone
//! for longer than the retention (`--history-retention`) are dropped, and
//! all histories together are bounded by [`HistoryLimits`] (objects and
//! bytes): past either, objects gone longest go first, then the live
//! objects whose last change is oldest.

use std::collections::{BTreeMap, BTreeSet, HashMap, VecDeque};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use classify_wasm::queue::Preemptor;
use classify_wasm::{CauseKind, Observation, State, Time};
use serde::Serialize;

/// How many changes each object keeps; older ones go first.
pub const CHANGES_PER_OBJECT: usize = 64;

/// The default of `--history-retention`: objects gone for longer are
/// forgotten.
pub const DEFAULT_RETENTION: Duration = Duration::from_secs(7 * 86_400);

/// Which object a history is of: its kind, namespace, name and UID (a
/// TrainJob re-created under the same name has a history of its own).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct HistoryKey {
    /// The kind (`TrainJob`, or `Pod`/`JobSet`/... for an orphan).
    pub kind: String,
    /// The namespace.
    pub namespace: String,
    /// The name.
    pub name: String,
    /// The UID (`""` when it has none).
    pub uid: String,
}

impl HistoryKey {
    /// The key of an observation's object.
    pub fn of(observation: &Observation) -> HistoryKey {
        HistoryKey {
            kind: observation.object.kind.clone(),
            namespace: observation.object.namespace.clone(),
            name: observation.object.name.clone(),
            uid: observation.object.uid.clone(),
        }
    }

    fn heap_bytes(&self) -> usize {
        self.kind.capacity()
            + self.namespace.capacity()
            + self.name.capacity()
            + self.uid.capacity()
    }
}

/// One change of an object's observation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Change {
    /// When the server saw it, in seconds since the Unix epoch (UTC).
    #[serde(rename = "at", serialize_with = "serialize_rfc3339")]
    pub at_unix: i64,
    /// The state after the change.
    pub state: State,
    /// The cause kind after the change.
    pub cause: CauseKind,
    /// Whether it was held after the change.
    pub held: bool,
}

impl Change {
    /// The change an observation is, at `at_unix`.
    pub fn of(observation: &Observation, at_unix: i64) -> Change {
        Change {
            at_unix,
            state: observation.state,
            cause: observation.cause.kind,
            held: observation.held,
        }
    }

    fn same_observation(&self, other: &Change) -> bool {
        self.state == other.state && self.cause == other.cause && self.held == other.held
    }
}

fn serialize_rfc3339<S: serde::Serializer>(at: &i64, serializer: S) -> Result<S::Ok, S::Error> {
    serializer.serialize_str(&rfc3339(*at))
}

/// Seconds since the Unix epoch of a system time (negative before it).
pub fn unix_seconds(time: SystemTime) -> i64 {
    match time.duration_since(UNIX_EPOCH) {
        Ok(after) => i64::try_from(after.as_secs()).unwrap_or(i64::MAX),
        Err(before) => -i64::try_from(before.duration().as_secs()).unwrap_or(i64::MAX),
    }
}

/// An instant as RFC 3339 in UTC, to the second: `2026-12-01T09:04:00Z`.
pub fn rfc3339(at_unix: i64) -> String {
    // The engine's one RFC 3339 form, so the history's times read like the
    // trace's.
    Time::from_unix_seconds(at_unix).to_string()
}

/// The short text form of a history, oldest first, times as HH:MM UTC:
/// `pending 09:00 → running 09:04 → ended, out-of-memory 10:12`. The cause
/// is written when it is not `none`, and `held` when the object was held.
pub fn timeline<'a>(changes: impl IntoIterator<Item = &'a Change>) -> String {
    let mut out = String::new();
    for change in changes {
        if !out.is_empty() {
            out.push_str(" → ");
        }
        out.push_str(change.state.as_str());
        if change.cause != CauseKind::None {
            out.push_str(", ");
            out.push_str(change.cause.as_str());
        }
        if change.held && change.state != State::Held {
            out.push_str(", held");
        }
        let seconds = change.at_unix.rem_euclid(86_400);
        out.push_str(&format!(
            " {:02}:{:02}",
            seconds / 3600,
            seconds % 3600 / 60
        ));
    }
    out
}

/// The bounds of all histories together (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistoryLimits {
    /// Objects gone for longer than this are dropped.
    pub retention: Duration,
    /// The most objects with a history.
    pub objects: usize,
    /// The most bytes of histories (keys and changes).
    pub bytes: usize,
}

impl Default for HistoryLimits {
    fn default() -> Self {
        HistoryLimits {
            retention: DEFAULT_RETENTION,
            objects: 100_000,
            bytes: 128 * 1024 * 1024,
        }
    }
}

/// The most bytes of strings a remembered preemptor may hold: Kubernetes
/// bounds a UID, a namespace and three names to well under this.
pub const PREEMPTOR_MAX_BYTES: usize = 1024;

/// One object's history.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectHistory {
    /// Its changes, oldest first.
    pub changes: VecDeque<Change>,
    /// Since when it has no observation (seconds since the epoch), if gone.
    pub gone_since: Option<i64>,
    /// The last Workload seen to preempt it (a TrainJob under Kueue), kept
    /// so that "who preempted me" is answered after the preemptor is gone.
    pub preempted_by: Option<Preemptor>,
}

impl ObjectHistory {
    /// A history with these changes and nothing else.
    pub fn of_changes(changes: VecDeque<Change>) -> ObjectHistory {
        ObjectHistory {
            changes,
            gone_since: None,
            preempted_by: None,
        }
    }

    fn bytes(key: &HistoryKey) -> usize {
        // Changes and the preemptor are counted at their full bound, so an
        // object's weight does not change as it records.
        key.heap_bytes()
            + CHANGES_PER_OBJECT * std::mem::size_of::<Change>()
            + std::mem::size_of::<ObjectHistory>()
            + PREEMPTOR_MAX_BYTES
            + 64
    }
}

/// What a call changed, for the state directory to mirror.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HistoryDelta {
    /// Objects whose history (or gone time) is now this.
    pub written: Vec<(HistoryKey, ObjectHistory)>,
    /// Objects whose history was dropped.
    pub dropped: Vec<HistoryKey>,
    /// Objects that gained a change, with the change before it (`None` for
    /// an object seen for the first time): what alerts and notifications
    /// call a transition.
    pub entered: Vec<Entered>,
}

/// An object that gained a change in [`History::record_job`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entered {
    /// The object.
    pub key: HistoryKey,
    /// Its change now.
    pub change: Change,
    /// Its last change before, if it had one.
    pub previous: Option<Change>,
}

impl Entered {
    /// Whether the state or the cause changed (not only `held`).
    pub fn is_transition(&self) -> bool {
        self.previous
            .is_none_or(|p| (p.state, p.cause) != (self.change.state, self.change.cause))
    }
}

impl HistoryDelta {
    /// Whether nothing changed.
    pub fn is_empty(&self) -> bool {
        self.written.is_empty() && self.dropped.is_empty()
    }
}

/// Every object's history. See the module docs.
#[derive(Debug)]
pub struct History {
    limits: HistoryLimits,
    objects: HashMap<HistoryKey, ObjectHistory>,
    /// Gone objects by `(gone since, key)`, so the oldest are found first.
    gone: BTreeSet<(i64, HistoryKey)>,
    bytes: usize,
}

impl History {
    /// No history yet.
    pub fn new(limits: HistoryLimits) -> Self {
        History {
            limits,
            objects: HashMap::new(),
            gone: BTreeSet::new(),
            bytes: 0,
        }
    }

    /// The limits in force.
    pub fn limits(&self) -> HistoryLimits {
        self.limits
    }

    /// How many objects have a history.
    pub fn len(&self) -> usize {
        self.objects.len()
    }

    /// Whether no object has a history.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// Bytes of all histories (see [`ObjectHistory`]'s accounting).
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// An object's changes, oldest first.
    pub fn of(&self, key: &HistoryKey) -> Option<&ObjectHistory> {
        self.objects.get(key)
    }

    /// Puts back a history read from the state directory (start-up only);
    /// the bounds are applied by the next [`History::record_job`] or
    /// [`History::enforce`].
    pub fn restore(&mut self, key: HistoryKey, mut history: ObjectHistory) {
        while history.changes.len() > CHANGES_PER_OBJECT {
            history.changes.pop_front();
        }
        history.changes.shrink_to_fit();
        self.remove(&key);
        self.bytes += ObjectHistory::bytes(&key);
        if let Some(since) = history.gone_since {
            self.gone.insert((since, key.clone()));
        }
        self.objects.insert(key, history);
    }

    /// Records a re-classified job: `before` are the keys of its objects'
    /// previous observations, `after` its observations now, seen at `now`.
    /// An object whose observation differs from its last change gains a
    /// change; an object in `before` but not in `after` is gone since `now`.
    pub fn record_job(
        &mut self,
        before: &[HistoryKey],
        after: &[Observation],
        now: SystemTime,
    ) -> HistoryDelta {
        let now = unix_seconds(now);
        let mut delta = HistoryDelta::default();
        let mut present: BTreeSet<HistoryKey> = BTreeSet::new();
        for observation in after {
            let key = HistoryKey::of(observation);
            present.insert(key.clone());
            let change = Change::of(observation, now);
            let is_new = !self.objects.contains_key(&key);
            if is_new {
                self.bytes += ObjectHistory::bytes(&key);
            }
            let entry = self
                .objects
                .entry(key.clone())
                .or_insert_with(|| ObjectHistory::of_changes(VecDeque::new()));
            let mut touched = false;
            if let Some(since) = entry.gone_since.take() {
                self.gone.remove(&(since, key.clone()));
                touched = true;
            }
            if entry
                .changes
                .back()
                .is_none_or(|last| !last.same_observation(&change))
            {
                // Drop before pushing, so the queue never grows past the
                // bound and its allocation stays within what is counted.
                while entry.changes.len() >= CHANGES_PER_OBJECT {
                    entry.changes.pop_front();
                }
                let previous = entry.changes.back().copied();
                entry.changes.push_back(change);
                delta.entered.push(Entered {
                    key: key.clone(),
                    change,
                    previous,
                });
                touched = true;
            }
            if touched {
                delta.written.push((key, entry.clone()));
            }
        }
        for key in before {
            if present.contains(key) {
                continue;
            }
            if let Some(entry) = self.objects.get_mut(key) {
                if entry.gone_since.is_none() {
                    entry.gone_since = Some(now);
                    self.gone.insert((now, key.clone()));
                    delta.written.push((key.clone(), entry.clone()));
                }
            }
        }
        let enforced = self.enforce_at(now);
        // A key written then dropped in the same call is only dropped.
        delta
            .written
            .retain(|(key, _)| !enforced.dropped.contains(key));
        delta.dropped = enforced.dropped;
        delta
    }

    /// Keeps `preemptor` as what last preempted the object of `key`, which
    /// must have a history already (a [`History::record_job`] made it), and
    /// adds to `delta` what to mirror when that changed it. A preemptor
    /// past [`PREEMPTOR_MAX_BYTES`] is not kept.
    pub fn remember_preemptor(
        &mut self,
        key: &HistoryKey,
        preemptor: Preemptor,
        delta: &mut HistoryDelta,
    ) {
        if preemptor.heap_bytes() > PREEMPTOR_MAX_BYTES {
            return;
        }
        let Some(entry) = self.objects.get_mut(key) else {
            return;
        };
        if entry.preempted_by.as_ref() == Some(&preemptor) {
            return;
        }
        entry.preempted_by = Some(preemptor);
        let now = entry.clone();
        match delta.written.iter_mut().find(|(k, _)| k == key) {
            Some((_, written)) => *written = now,
            None => delta.written.push((key.clone(), now)),
        }
    }

    /// What last preempted the object of `key`, as it was remembered.
    pub fn preemptor_of(&self, key: &HistoryKey) -> Option<&Preemptor> {
        self.objects.get(key)?.preempted_by.as_ref()
    }

    /// Since when (seconds since the epoch) an object has been in the state
    /// of its last change: the first of the last run of changes in that
    /// state, as far back as the kept changes go.
    pub fn in_state_since(&self, key: &HistoryKey) -> Option<i64> {
        let changes = &self.objects.get(key)?.changes;
        let state = changes.back()?.state;
        changes
            .iter()
            .rev()
            .take_while(|c| c.state == state)
            .last()
            .map(|c| c.at_unix)
    }

    /// Drops the objects gone for longer than the retention at `now`, then
    /// whatever exceeds the count and byte bounds.
    pub fn enforce(&mut self, now: SystemTime) -> HistoryDelta {
        self.enforce_at(unix_seconds(now))
    }

    fn enforce_at(&mut self, now: i64) -> HistoryDelta {
        let retention = i64::try_from(self.limits.retention.as_secs()).unwrap_or(i64::MAX);
        let mut dropped = Vec::new();
        while let Some((since, key)) = self.gone.first().cloned() {
            let expired = now.saturating_sub(since) > retention;
            let over = self.objects.len() > self.limits.objects || self.bytes > self.limits.bytes;
            if !(expired || over) {
                break;
            }
            self.remove(&key);
            dropped.push(key);
        }
        while self.objects.len() > self.limits.objects || self.bytes > self.limits.bytes {
            // Only live objects are left: the one whose last change is
            // oldest goes (a scan, but only past a bound).
            let Some(key) = self
                .objects
                .iter()
                .min_by_key(|(key, h)| (h.changes.back().map_or(i64::MIN, |c| c.at_unix), *key))
                .map(|(key, _)| key.clone())
            else {
                break;
            };
            self.remove(&key);
            dropped.push(key);
        }
        HistoryDelta {
            dropped,
            ..HistoryDelta::default()
        }
    }

    fn remove(&mut self, key: &HistoryKey) {
        if let Some(old) = self.objects.remove(key) {
            self.bytes -= ObjectHistory::bytes(key);
            if let Some(since) = old.gone_since {
                self.gone.remove(&(since, key.clone()));
            }
        }
    }

    /// Every history, for tests and the state directory's checks.
    pub fn iter(&self) -> impl Iterator<Item = (&HistoryKey, &ObjectHistory)> {
        self.objects.iter()
    }

    /// The histories as a sorted map (tests compare them).
    pub fn to_map(&self) -> BTreeMap<HistoryKey, ObjectHistory> {
        self.objects
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}

#[cfg(test)]
#[path = "history_tests.rs"]
mod tests;
