//! Unit tests of [`Store::apply`]: no cluster, just events.

use super::*;
use crate::serve::projection::project;
use crate::serve::view::{self, SnapshotHeader};
use classify_wasm::{Mode, Provenance, State};
use serde_json::{json, Value};

fn event(kind: ObjectKind, body: EventBody) -> WatchEvent {
    WatchEvent {
        kind,
        scope: Some("team-a".into()),
        body,
        received: Instant::now(),
    }
}

fn trainjob(name: &str, uid: &str, failed: bool) -> StoredObject {
    let (job, sub) = name.rsplit_once('-').unwrap_or((name, ""));
    let conditions = if failed {
        json!([{"type": "Failed", "status": "True", "reason": "FailedJobs", "message": "x"}])
    } else {
        json!([])
    };
    project(
        ObjectKind::TrainJob,
        &json!({"metadata": {"name": name, "namespace": "team-a", "uid": uid,
            "labels": {"dispatch.phpboyscout.uk/job-id": job, "dispatch.phpboyscout.uk/submission": sub}},
            "status": {"conditions": conditions}}),
    )
    .expect("stored")
}

fn pod(trainjob: &str, name: &str, uid: &str, exit_code: i64) -> StoredObject {
    let (job, sub) = trainjob.rsplit_once('-').unwrap_or((trainjob, ""));
    let value: Value = json!({"metadata": {"name": name, "namespace": "team-a", "uid": uid,
        "labels": {"dispatch.phpboyscout.uk/job-id": job, "dispatch.phpboyscout.uk/submission": sub,
            "jobset.sigs.k8s.io/jobset-name": trainjob, "jobset.sigs.k8s.io/restart-attempt": "0"},
        "annotations": {"dispatch.phpboyscout.uk/admission": "1"}},
        "status": {"phase": "Failed", "containerStatuses": [{"name": "node", "state": {"terminated":
            {"exitCode": exit_code, "reason": "Error", "finishedAt": "2024-01-01T00:00:00Z"}}}]}});
    project(ObjectKind::Pod, &value).expect("stored")
}

fn listed(store: &mut Store, kind: ObjectKind, objects: Vec<StoredObject>) -> Vec<Delta> {
    let mut deltas = store.apply(event(kind, EventBody::ListStarted));
    deltas.extend(store.apply(event(kind, EventBody::ListPage(objects))));
    deltas.extend(store.apply(event(kind, EventBody::ListDone)));
    deltas
}

const PLAIN: SnapshotHeader = SnapshotHeader {
    mode: Mode::Plain,
    nodes_readable: true,
};

#[test]
fn a_deleted_pod_is_captured_for_its_trainjob_and_dropped_with_it() {
    let mut store = Store::new(StoreLimits::default());
    listed(
        &mut store,
        ObjectKind::TrainJob,
        vec![trainjob("llm-7-s1", "tj1", true)],
    );
    listed(
        &mut store,
        ObjectKind::Pod,
        vec![pod("llm-7-s1", "p0", "pu0", 1)],
    );
    let deltas = store.apply(event(
        ObjectKind::Pod,
        EventBody::Deleted(pod("llm-7-s1", "p0", "pu0", 1)),
    ));
    assert!(deltas
        .iter()
        .any(|d| matches!(d, Delta::Captured(c) if c.trainjob_uid == "tj1" && !c.across_gap)));
    assert_eq!(store.captured_count(), 1);

    let observations = view::classify_job(&store, PLAIN, "team-a", "llm-7").expect("classifies");
    assert_eq!(observations.len(), 1);
    assert_eq!(
        observations[0].cause.provenance,
        Some(Provenance::CapturedPod)
    );

    let deltas = store.apply(event(
        ObjectKind::TrainJob,
        EventBody::Deleted(trainjob("llm-7-s1", "tj1", true)),
    ));
    assert!(deltas
        .iter()
        .any(|d| matches!(d, Delta::CapturedDropped { pod_uid, .. } if pod_uid == "pu0")));
    assert_eq!(store.captured_count(), 0);
}

#[test]
fn captures_are_capped_per_trainjob_and_in_all() {
    let mut store = Store::new(StoreLimits {
        captured_per_trainjob: 3,
        captured_total: 4,
    });
    listed(
        &mut store,
        ObjectKind::TrainJob,
        vec![trainjob("a-s1", "ta", false), trainjob("b-s1", "tb", false)],
    );
    for i in 0..5 {
        let p = pod("a-s1", &format!("a{i}"), &format!("au{i}"), 1);
        store.apply(event(ObjectKind::Pod, EventBody::Upserted(p.clone())));
        store.apply(event(ObjectKind::Pod, EventBody::Deleted(p)));
    }
    let kept: Vec<&str> = store
        .captured_for("ta")
        .map(|c| c.pod.uid.as_str())
        .collect();
    assert_eq!(kept, ["au2", "au3", "au4"], "the latest 3 are kept");
    for i in 0..2 {
        let p = pod("b-s1", &format!("b{i}"), &format!("bu{i}"), 1);
        store.apply(event(ObjectKind::Pod, EventBody::Upserted(p.clone())));
        store.apply(event(ObjectKind::Pod, EventBody::Deleted(p)));
    }
    assert_eq!(store.captured_count(), 4);
    let kept: Vec<&str> = store
        .captured_for("ta")
        .map(|c| c.pod.uid.as_str())
        .collect();
    assert_eq!(kept, ["au3", "au4"], "the oldest in all go first");
}

#[test]
fn a_pod_missing_from_a_relist_is_captured_across_a_gap() {
    let mut store = Store::new(StoreLimits::default());
    listed(
        &mut store,
        ObjectKind::TrainJob,
        vec![trainjob("llm-7-s1", "tj1", true)],
    );
    listed(
        &mut store,
        ObjectKind::Pod,
        vec![
            pod("llm-7-s1", "p0", "pu0", 1),
            pod("llm-7-s1", "p1", "pu1", 0),
        ],
    );
    store.apply(event(ObjectKind::Pod, EventBody::WatchEnded));
    let deltas = listed(
        &mut store,
        ObjectKind::Pod,
        vec![pod("llm-7-s1", "p1", "pu1", 0)],
    );
    let captured: Vec<_> = deltas
        .iter()
        .filter_map(|d| match d {
            Delta::Captured(c) => Some((c.pod.uid.clone(), c.across_gap)),
            _ => None,
        })
        .collect();
    assert_eq!(captured, [("pu0".to_string(), true)]);
    let snapshot = view::namespace_snapshot(&store, PLAIN, "team-a");
    assert!(snapshot.contains("\"acrossGap\":true"));
    assert_eq!(store.watch_restarts(), 1);
}

#[test]
fn a_pod_of_a_gone_trainjob_stays_an_orphan_when_the_name_is_reused() {
    let mut store = Store::new(StoreLimits::default());
    listed(
        &mut store,
        ObjectKind::TrainJob,
        vec![trainjob("llm-7-s1", "old", false)],
    );
    listed(
        &mut store,
        ObjectKind::Pod,
        vec![pod("llm-7-s1", "p0", "pu0", 0)],
    );
    assert_eq!(store.pod_owner("pu0"), Some("old"));
    store.apply(event(
        ObjectKind::TrainJob,
        EventBody::Deleted(trainjob("llm-7-s1", "old", false)),
    ));
    store.apply(event(
        ObjectKind::TrainJob,
        EventBody::Upserted(trainjob("llm-7-s1", "new", false)),
    ));
    let p0 = store
        .get(ObjectKind::Pod, "team-a", "p0")
        .expect("pod")
        .clone();
    assert!(store.belongs_to_gone_trainjob(&p0));

    let observations = view::classify_job(&store, PLAIN, "team-a", "llm-7").expect("classifies");
    let kinds: Vec<(&str, &str)> = observations
        .iter()
        .map(|o| (o.object.kind.as_str(), o.object.name.as_str()))
        .collect();
    assert_eq!(kinds, [("TrainJob", "llm-7-s1"), ("Pod", "p0")]);
    let orphan = &observations[1];
    assert!(orphan.foreign);
    assert_eq!(orphan.state, State::Ended);
    assert!(
        orphan.cause.detail.contains("has no live TrainJob"),
        "{}",
        orphan.cause.detail
    );
    // The new TrainJob does not read the old pod: it has no pods.
    assert!(
        observations[0].cause.detail.contains("no JobSet"),
        "{}",
        observations[0].cause.detail
    );

    // Deleting the old pod now captures nothing for the new TrainJob.
    store.apply(event(
        ObjectKind::Pod,
        EventBody::Deleted(p0.as_ref().clone()),
    ));
    assert_eq!(store.captured_count(), 0);
}

#[test]
fn forbidden_nodes_make_nodes_unreadable_and_count_as_synced() {
    let mut store = Store::new(StoreLimits::default());
    let node_scope = WatchEvent {
        kind: ObjectKind::Node,
        scope: None,
        body: EventBody::Forbidden,
        received: Instant::now(),
    };
    let deltas = store.apply(node_scope);
    assert_eq!(deltas, [Delta::NodesReadable(false)]);
    assert!(!store.nodes_readable());
    assert!(store.synced(&[(ObjectKind::Node, None)]));
}

#[test]
fn touching_a_pod_marks_its_job_dirty() {
    let mut store = Store::new(StoreLimits::default());
    listed(
        &mut store,
        ObjectKind::TrainJob,
        vec![trainjob("llm-7-s1", "tj1", false)],
    );
    store.take_dirty();
    store.apply(event(
        ObjectKind::Pod,
        EventBody::Upserted(pod("llm-7-s1", "p0", "pu0", 0)),
    ));
    let dirty = store.take_dirty();
    assert!(dirty.contains(&("team-a".to_string(), "llm-7".to_string())));
    // An identical upsert changes nothing.
    let deltas = store.apply(event(
        ObjectKind::Pod,
        EventBody::Upserted(pod("llm-7-s1", "p0", "pu0", 0)),
    ));
    assert!(deltas.is_empty());
    assert!(store.take_dirty().is_empty());
}
