//! Unit tests of the state directory: round trips, batches, the hub's
//! mirror of the store (evictions included), and every bad state.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use classify_wasm::{CauseKind, Mode, Provenance, State};
use serde_json::json;

use super::*;
use crate::serve::history::Change;
use crate::serve::hub::{Clock, Hub, Scope};
use crate::serve::projection::project;
use crate::serve::store::{EventBody, StoreLimits, WatchEvent};

/// A directory removed when the test ends.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let path = std::env::temp_dir().join(format!(
            "dispatch-dash-persist-{}-{}-{name}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        TempDir(path)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn trainjob(name: &str, uid: &str, failed: bool) -> StoredObject {
    let conditions = if failed {
        json!([{"type": "Failed", "status": "True", "reason": "FailedJobs", "message": "x"}])
    } else {
        json!([])
    };
    project(
        ObjectKind::TrainJob,
        &json!({"metadata": {"name": name, "namespace": "team-a", "uid": uid,
            "labels": {"dispatch.phpboyscout.uk/job-id": name, "dispatch.phpboyscout.uk/submission": "1"},
            "ownerReferences": [{"kind": "TrainJob", "uid": "not-kept-for-a-trainjob"}]},
            "status": {"conditions": conditions}}),
    )
    .expect("stored")
}

/// A pod of TrainJob `trainjob` whose node container was OOMKilled.
fn oom_pod(trainjob: &str, name: &str, uid: &str) -> StoredObject {
    project(
        ObjectKind::Pod,
        &json!({"metadata": {"name": name, "namespace": "team-a", "uid": uid,
            "labels": {"dispatch.phpboyscout.uk/job-id": trainjob, "dispatch.phpboyscout.uk/submission": "1",
                "jobset.sigs.k8s.io/jobset-name": trainjob, "jobset.sigs.k8s.io/restart-attempt": "0"},
            "annotations": {"dispatch.phpboyscout.uk/admission": "1"}},
            "spec": {"nodeName": "gpu-node-1"},
            "status": {"phase": "Failed", "containerStatuses": [{"name": "node", "state": {"terminated":
                {"exitCode": 137, "reason": "OOMKilled", "finishedAt": "2024-01-01T00:00:00Z"}}}]}}),
    )
    .expect("stored")
}

fn captured(trainjob_uid: &str, pod: &StoredObject, across_gap: bool) -> Arc<CapturedPod> {
    Arc::new(CapturedPod {
        trainjob_uid: trainjob_uid.into(),
        namespace: "team-a".into(),
        pod: Arc::new(pod.clone()),
        across_gap,
    })
}

fn key(name: &str) -> HistoryKey {
    HistoryKey {
        kind: "TrainJob".into(),
        namespace: "team-a".into(),
        name: name.into(),
        uid: format!("uid-{name}"),
    }
}

fn event(kind: ObjectKind, body: EventBody) -> WatchEvent {
    WatchEvent {
        kind,
        scope: Some("team-a".into()),
        body,
        received: Instant::now(),
    }
}

fn list(kind: ObjectKind, objects: Vec<StoredObject>) -> Vec<WatchEvent> {
    vec![
        event(kind, EventBody::ListStarted),
        event(kind, EventBody::ListPage(objects)),
        event(kind, EventBody::ListDone),
    ]
}

fn at(seconds: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_796_115_600 + seconds)
}

fn hub(dir: &Path, limits: StoreLimits, now: SystemTime) -> Result<Hub, Error> {
    Hub::new(
        Mode::Plain,
        Scope::Namespaces(vec!["team-a".into()]),
        limits,
    )
    .with_clock(Clock::from_fn(move || now))
    .with_state_dir(StateDir::open(dir)?)
}

fn captured_uids(restored: &Restored) -> Vec<(String, String)> {
    restored
        .captured
        .iter()
        .map(|c| (c.trainjob_uid.clone(), c.pod.uid.clone()))
        .collect()
}

#[test]
fn a_batch_round_trips_through_a_reopen() {
    let dir = TempDir::new("round-trip");
    let tj = trainjob("llm", "tj-1", true);
    let live = oom_pod("llm", "llm-0", "pod-0");
    let gone = oom_pod("llm", "llm-1", "pod-1");
    let history = ObjectHistory {
        changes: VecDeque::from(vec![
            Change {
                at_unix: 100,
                state: State::Pending,
                cause: CauseKind::None,
                held: false,
            },
            Change {
                at_unix: 200,
                state: State::Ended,
                cause: CauseKind::OutOfMemory,
                held: true,
            },
        ]),
        gone_since: Some(300),
        preempted_by: Some(preemptor()),
    };
    {
        let mut state = StateDir::open(&dir.0).expect("open");
        assert_eq!(state.path(), dir.0.join(FILE_NAME));
        state
            .write(&[
                Op::PutObject(Arc::new(tj.clone())),
                Op::PutObject(Arc::new(live.clone())),
                Op::PutOwner {
                    pod_uid: "pod-0".into(),
                    trainjob_uid: "tj-1".into(),
                },
                Op::PutCaptured(captured("tj-1", &gone, true)),
                Op::PutHistory(key("llm"), history.clone()),
                // Kinds the database does not keep are skipped.
                Op::PutObject(Arc::new(
                    project(
                        ObjectKind::Node,
                        &json!({"metadata": {"name": "gpu-node-1", "uid": "n"}}),
                    )
                    .expect("node"),
                )),
            ])
            .expect("write");
    }
    let state = StateDir::open(&dir.0).expect("reopen");
    let restored = state.load().expect("load");
    let mut objects = restored.objects.clone();
    objects.sort_by(|a, b| a.name.cmp(&b.name));
    // The re-projection gives back every indexed field, not just the JSON.
    assert_eq!(objects, vec![tj, live]);
    assert_eq!(restored.owners, vec![("pod-0".into(), "tj-1".into())]);
    assert_eq!(restored.captured.len(), 1);
    assert_eq!(*restored.captured[0].pod, gone);
    assert!(restored.captured[0].across_gap);
    assert_eq!(restored.history, vec![(key("llm"), history)]);
    assert_eq!(restored.unreadable, 0);
}

#[test]
fn a_batch_applies_in_order_and_keeps_the_capture_order() {
    let dir = TempDir::new("order");
    let mut state = StateDir::open(&dir.0).expect("open");
    let a = oom_pod("llm", "llm-a", "pod-a");
    let b = oom_pod("llm", "llm-b", "pod-b");
    state
        .write(&[
            Op::PutCaptured(captured("tj-1", &a, false)),
            Op::PutCaptured(captured("tj-1", &b, false)),
            Op::PutObject(Arc::new(a.clone())),
            Op::PutOwner {
                pod_uid: "pod-a".into(),
                trainjob_uid: "tj-1".into(),
            },
        ])
        .expect("first batch");
    state
        .write(&[
            // Dropped, then captured again: last in capture order.
            Op::DeleteCaptured {
                trainjob_uid: "tj-1".into(),
                pod_uid: "pod-a".into(),
            },
            Op::PutCaptured(captured("tj-1", &a, true)),
            Op::DeleteObject {
                kind: ObjectKind::Pod,
                namespace: "team-a".into(),
                name: "llm-a".into(),
            },
            Op::DeleteOwner {
                pod_uid: "pod-a".into(),
            },
            Op::PutHistory(key("x"), ObjectHistory::of_changes(VecDeque::new())),
            Op::DeleteHistory(key("x")),
        ])
        .expect("second batch");
    let restored = state.load().expect("load");
    assert_eq!(
        captured_uids(&restored),
        vec![
            ("tj-1".to_string(), "pod-b".to_string()),
            ("tj-1".to_string(), "pod-a".to_string())
        ]
    );
    assert!(restored.captured[1].across_gap);
    assert!(restored.objects.is_empty());
    assert!(restored.owners.is_empty());
    assert!(restored.history.is_empty());
}

#[test]
fn the_hub_mirrors_the_store_and_its_evictions() {
    let dir = TempDir::new("mirror");
    let limits = StoreLimits {
        captured_per_trainjob: 2,
        ..StoreLimits::default()
    };
    let pods: Vec<StoredObject> = (0..3)
        .map(|i| oom_pod("llm", &format!("llm-{i}"), &format!("pod-{i}")))
        .collect();
    {
        let hub = hub(&dir.0, limits, at(0)).expect("hub");
        hub.ingest(list(
            ObjectKind::TrainJob,
            vec![trainjob("llm", "tj-1", false)],
        ));
        hub.ingest(list(ObjectKind::Pod, pods.clone()));
        // Deleted one by one: the third capture evicts the first.
        for pod in &pods {
            hub.ingest(vec![event(
                ObjectKind::Pod,
                EventBody::Deleted(pod.clone()),
            )]);
        }
        let in_memory: Vec<String> =
            hub.with_store(|s| s.captured_for("tj-1").map(|c| c.pod.uid.clone()).collect());
        assert_eq!(in_memory, vec!["pod-1", "pod-2"]);
    }
    let restored = StateDir::open(&dir.0).expect("open").load().expect("load");
    assert_eq!(
        captured_uids(&restored),
        vec![
            ("tj-1".to_string(), "pod-1".to_string()),
            ("tj-1".to_string(), "pod-2".to_string())
        ]
    );
    assert_eq!(restored.objects.len(), 1, "only the TrainJob is live");
    assert!(
        restored.owners.is_empty(),
        "the deleted pods' owners are forgotten"
    );
    // Restarted with a lower bound: the eviction happens in the file too.
    {
        let hub = hub(
            &dir.0,
            StoreLimits {
                captured_per_trainjob: 1,
                ..StoreLimits::default()
            },
            at(10),
        )
        .expect("restored");
        assert_eq!(hub.with_store(|s| s.captured_count()), 1);
    }
    let restored = StateDir::open(&dir.0).expect("open").load().expect("load");
    assert_eq!(
        captured_uids(&restored),
        vec![("tj-1".to_string(), "pod-2".to_string())]
    );
}

#[test]
fn a_pod_deleted_while_the_server_was_down_is_captured_on_the_first_list() {
    let dir = TempDir::new("gap");
    let pods = vec![
        oom_pod("llm", "llm-0", "pod-0"),
        oom_pod("llm", "llm-1", "pod-1"),
    ];
    {
        let hub = hub(&dir.0, StoreLimits::default(), at(0)).expect("hub");
        hub.ingest(list(
            ObjectKind::TrainJob,
            vec![trainjob("llm", "tj-1", false)],
        ));
        hub.ingest(list(ObjectKind::Pod, pods));
        assert_eq!(hub.find("team-a", "llm")[0].state, State::Running);
    }
    // Down: both pods are deleted and the TrainJob fails. Up again, the
    // pods are listed first, before the TrainJobs.
    let hub = hub(&dir.0, StoreLimits::default(), at(600)).expect("restored");
    assert_eq!(
        hub.with_store(|s| s.pod_bytes().1),
        2,
        "last seen pods are back"
    );
    assert!(
        !hub.ready(),
        "restored state does not make the server ready"
    );
    hub.ingest(list(ObjectKind::Pod, Vec::new()));
    hub.ingest(list(
        ObjectKind::TrainJob,
        vec![trainjob("llm", "tj-1", true)],
    ));
    let observation = hub.find("team-a", "llm")[0].clone();
    assert_eq!(observation.state, State::Ended);
    assert_eq!(observation.cause.kind, CauseKind::OutOfMemory);
    assert_eq!(observation.cause.provenance, Some(Provenance::CapturedPod));
    let across_gap: Vec<bool> =
        hub.with_store(|s| s.captured_for("tj-1").map(|c| c.across_gap).collect());
    assert_eq!(across_gap, vec![true, true]);
    // The history survived the restart and goes on from it.
    let timeline = crate::serve::history::timeline(&hub.history_of(&HistoryKey {
        kind: "TrainJob".into(),
        namespace: "team-a".into(),
        name: "llm".into(),
        uid: "tj-1".into(),
    }));
    // Running (no pods listed yet), then the OOMKilled pods, at 09:00;
    // ended from the pods captured across the gap, at 09:10.
    assert_eq!(
        timeline,
        "running 09:00 → running, out-of-memory 09:00 → ended, out-of-memory 09:10"
    );
}

#[test]
fn a_newer_schema_is_refused_and_left_alone() {
    let dir = TempDir::new("newer");
    drop(StateDir::open(&dir.0).expect("create"));
    let path = dir.0.join(FILE_NAME);
    {
        let conn = Connection::open(&path).expect("raw");
        conn.pragma_update(None, "user_version", SCHEMA_VERSION + 1)
            .expect("bump");
    }
    let error = StateDir::open(&dir.0).expect_err("refused");
    assert!(
        matches!(
            error,
            Error::NewerSchema { found, known, .. }
                if found == SCHEMA_VERSION + 1 && known == SCHEMA_VERSION
        ),
        "{error:?}"
    );
    assert!(
        error.to_string().contains(&path.display().to_string()),
        "{error}"
    );
    let conn = Connection::open(&path).expect("raw");
    let version: i64 = conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("version");
    assert_eq!(version, SCHEMA_VERSION + 1, "untouched");
}

#[test]
fn a_corrupt_file_is_refused_naming_it_and_nothing_is_deleted() {
    let dir = TempDir::new("corrupt");
    std::fs::create_dir_all(&dir.0).expect("dir");
    let path = dir.0.join(FILE_NAME);
    let garbage = b"this is no database, but it is 40 bytes!".repeat(200);
    std::fs::write(&path, &garbage).expect("garbage");
    let error = StateDir::open(&dir.0).expect_err("refused");
    assert!(matches!(error, Error::Corrupt { .. }), "{error:?}");
    assert!(
        error.to_string().contains(&path.display().to_string()),
        "{error}"
    );
    assert_eq!(std::fs::read(&path).expect("still there"), garbage);

    // A real database of another program is not taken over either.
    let other = TempDir::new("other");
    std::fs::create_dir_all(&other.0).expect("dir");
    Connection::open(other.0.join(FILE_NAME))
        .expect("raw")
        .execute_batch("CREATE TABLE theirs (x)")
        .expect("theirs");
    assert!(matches!(
        StateDir::open(&other.0),
        Err(Error::Corrupt { .. })
    ));
}

#[test]
fn a_second_opener_gets_a_lock_error_at_once() {
    let dir = TempDir::new("lock");
    let held = StateDir::open(&dir.0).expect("first");
    // No busy wait (rusqlite's default is 5 s): a locked file fails at once.
    let timeout: i64 = held
        .conn
        .pragma_query_value(None, "busy_timeout", |row| row.get(0))
        .expect("busy_timeout");
    assert_eq!(timeout, 0);
    let error = StateDir::open(&dir.0).expect_err("locked");
    assert!(matches!(error, Error::Locked { .. }), "{error:?}");
    assert!(error.to_string().contains(FILE_NAME), "{error}");
    drop(held);
    StateDir::open(&dir.0).expect("free again");
}

#[test]
fn objects_of_namespaces_no_longer_watched_are_not_restored_and_leave_the_file() {
    let dir = TempDir::new("scope");
    {
        let mut state = StateDir::open(&dir.0).expect("open");
        let mut value = oom_pod("llm", "llm-0", "pod-x").value();
        value["metadata"]["namespace"] = json!("team-b");
        let elsewhere = project(ObjectKind::Pod, &value).expect("stored");
        state
            .write(&[
                Op::PutObject(Arc::new(trainjob("llm", "tj-1", false))),
                Op::PutObject(Arc::new(elsewhere)),
            ])
            .expect("write");
    }
    {
        let hub = hub(&dir.0, StoreLimits::default(), at(0)).expect("restored");
        assert_eq!(
            hub.with_store(|s| s.pod_bytes().1),
            0,
            "team-b is not watched"
        );
        assert_eq!(
            hub.find("team-a", "llm").len(),
            1,
            "the restored TrainJob is classified"
        );
    }
    let restored = StateDir::open(&dir.0).expect("open").load().expect("load");
    let names: Vec<&str> = restored.objects.iter().map(|o| o.name.as_str()).collect();
    assert_eq!(names, vec!["llm"]);
}

#[test]
fn histories_past_the_retention_at_start_are_dropped_from_the_file_too() {
    let dir = TempDir::new("retention");
    let gone_at = crate::serve::history::unix_seconds(at(0));
    let kept = |gone_since| ObjectHistory {
        changes: VecDeque::from(vec![Change {
            at_unix: gone_at - 60,
            state: State::Ended,
            cause: CauseKind::Completed,
            held: false,
        }]),
        gone_since,
        preempted_by: None,
    };
    {
        let mut state = StateDir::open(&dir.0).expect("open");
        state
            .write(&[
                Op::PutHistory(key("old"), kept(Some(gone_at))),
                Op::PutHistory(key("recent"), kept(Some(gone_at + 86_400))),
            ])
            .expect("write");
    }
    let limits = StoreLimits {
        history_retention: Duration::from_secs(86_400),
        ..StoreLimits::default()
    };
    // A day and an hour after `old` went: it is past the retention.
    let hub = hub(&dir.0, limits, at(86_400 + 3_600)).expect("restored");
    assert!(hub.history_of(&key("old")).is_empty());
    assert_eq!(hub.history_of(&key("recent")).len(), 1);
    drop(hub);
    let restored = StateDir::open(&dir.0).expect("open").load().expect("load");
    let names: Vec<&str> = restored
        .history
        .iter()
        .map(|(k, _)| k.name.as_str())
        .collect();
    assert_eq!(names, vec!["recent"]);
}

/// The preemptor a history keeps in these tests.
fn preemptor() -> classify_wasm::queue::Preemptor {
    classify_wasm::queue::Preemptor {
        uid: "5b1d".into(),
        namespace: "team-b".into(),
        workload: "wb".into(),
        train_job: Some("llm-70b".into()),
        priority: Some(1000),
        cluster_queue: Some("gpu-cq".into()),
    }
}

/// The file a server of schema version 1 wrote: its history table has no
/// `preempted_by`.
const SCHEMA_1: &str = "
CREATE TABLE objects (kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    json TEXT NOT NULL, PRIMARY KEY (kind, namespace, name)) WITHOUT ROWID;
CREATE TABLE pod_owners (pod_uid TEXT PRIMARY KEY, trainjob_uid TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE captured (trainjob_uid TEXT NOT NULL, pod_uid TEXT NOT NULL,
    namespace TEXT NOT NULL, across_gap INTEGER NOT NULL, pod_json TEXT NOT NULL,
    UNIQUE (trainjob_uid, pod_uid));
CREATE TABLE history (kind TEXT NOT NULL, namespace TEXT NOT NULL, name TEXT NOT NULL,
    uid TEXT NOT NULL, gone_since INTEGER, changes TEXT NOT NULL,
    PRIMARY KEY (kind, namespace, name, uid)) WITHOUT ROWID;
INSERT INTO history VALUES ('TrainJob', 'team-a', 'llm', 'tj-1', NULL,
    '[[100,\"pending\",\"none\",false]]');
PRAGMA user_version = 1;
";

#[test]
fn a_file_of_schema_1_is_migrated_at_open_and_keeps_its_history() {
    let dir = TempDir::new("migrate-1");
    std::fs::create_dir_all(&dir.0).expect("dir");
    {
        let conn = rusqlite::Connection::open(dir.0.join(FILE_NAME)).expect("v1 file");
        conn.execute_batch(SCHEMA_1).expect("v1 schema");
    }
    let key = HistoryKey {
        kind: "TrainJob".into(),
        namespace: "team-a".into(),
        name: "llm".into(),
        uid: "tj-1".into(),
    };
    {
        let mut state = StateDir::open(&dir.0).expect("a v1 file opens");
        let restored = state.load().expect("load");
        assert_eq!(restored.unreadable, 0);
        let [(restored_key, kept)] = restored.history.as_slice() else {
            panic!("one history: {:?}", restored.history);
        };
        assert_eq!(restored_key, &key);
        assert_eq!(kept.changes.len(), 1);
        assert_eq!(kept.preempted_by, None);
        // The migrated table takes a preemptor.
        let mut with_preemptor = kept.clone();
        with_preemptor.preempted_by = Some(preemptor());
        state
            .write(&[Op::PutHistory(key.clone(), with_preemptor)])
            .expect("write after the migration");
    }
    let state = StateDir::open(&dir.0).expect("reopen at version 2");
    let version: i64 = state
        .conn
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .expect("version");
    assert_eq!(version, SCHEMA_VERSION);
    let restored = state.load().expect("load");
    assert_eq!(restored.history[0].1.preempted_by, Some(preemptor()));
}
