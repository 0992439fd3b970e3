//! Unit tests of [`Store::apply`]: no cluster, just events.

use super::*;
use crate::serve::projection::project;
use crate::serve::view::{self, SnapshotHeader};
use classify_wasm::{Mode, Observation, Provenance, State};
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
    project(ObjectKind::Pod, &pod_value(trainjob, name, uid, exit_code)).expect("stored")
}

/// A pod whose hold-instance annotation (a key the projection keeps) is
/// `bytes` long, so the bytes really are stored.
fn big_pod(trainjob: &str, name: &str, uid: &str, bytes: usize) -> StoredObject {
    let mut value = pod_value(trainjob, name, uid, 1);
    value["metadata"]["annotations"][classify_wasm::keys::HOLD_INSTANCE] =
        Value::from("h".repeat(bytes));
    let stored = project(ObjectKind::Pod, &value).expect("stored");
    assert!(stored.json.len() > bytes, "the annotation is kept");
    stored
}

fn pod_value(trainjob: &str, name: &str, uid: &str, exit_code: i64) -> Value {
    let (job, sub) = trainjob.rsplit_once('-').unwrap_or((trainjob, ""));
    json!({"metadata": {"name": name, "namespace": "team-a", "uid": uid,
        "labels": {"dispatch.phpboyscout.uk/job-id": job, "dispatch.phpboyscout.uk/submission": sub,
            "jobset.sigs.k8s.io/jobset-name": trainjob, "jobset.sigs.k8s.io/restart-attempt": "0"},
        "annotations": {"dispatch.phpboyscout.uk/admission": "1"}},
        "status": {"phase": "Failed", "containerStatuses": [{"name": "node", "state": {"terminated":
            {"exitCode": exit_code, "reason": "Error", "finishedAt": "2024-01-01T00:00:00Z"}}}]}})
}

fn namespace(name: &str) -> StoredObject {
    project(
        ObjectKind::Namespace,
        &json!({"metadata": {"name": name, "uid": format!("ns-{name}")}}),
    )
    .expect("stored")
}

/// Creates and deletes each pod, so each is captured.
fn capture_all(store: &mut Store, pods: impl IntoIterator<Item = StoredObject>) {
    for p in pods {
        store.apply(event(ObjectKind::Pod, EventBody::Upserted(p.clone())));
        store.apply(event(ObjectKind::Pod, EventBody::Deleted(p)));
    }
}

fn kept_of(store: &Store, trainjob_uid: &str) -> Vec<String> {
    store
        .captured_for(trainjob_uid)
        .map(|c| c.pod.uid.clone())
        .collect()
}

const KB_250: usize = 250 * 1024;

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
fn a_namespace_snapshot_is_the_same_bytes_whatever_order_pods_were_captured_in() {
    // Twelve TrainJobs with a captured pod each, captured in two orders by
    // two stores: the snapshots a stream sends and --state-dir compares
    // must not depend on that order (nor on a hash map's keys).
    let jobs: Vec<(String, String)> = (0..12)
        .map(|i| (format!("llm-{i}-s1"), format!("tj{i}")))
        .collect();
    let snapshot = |order: &mut dyn Iterator<Item = &(String, String)>| {
        let mut store = Store::new(StoreLimits::default());
        let trainjobs = jobs
            .iter()
            .map(|(name, uid)| trainjob(name, uid, true))
            .collect();
        listed(&mut store, ObjectKind::TrainJob, trainjobs);
        let pods: Vec<StoredObject> = order
            .map(|(name, uid)| pod(name, &format!("{name}-p0"), &format!("pod-of-{uid}"), 1))
            .collect();
        capture_all(&mut store, pods);
        assert_eq!(store.captured_count(), jobs.len());
        view::namespace_snapshot(&store, PLAIN, "team-a")
    };
    let forwards = snapshot(&mut jobs.iter());
    let backwards = snapshot(&mut jobs.iter().rev());
    assert_eq!(forwards, backwards);
    assert_eq!(forwards, snapshot(&mut jobs.iter()), "and from run to run");
}

#[test]
fn captures_are_capped_per_trainjob_and_in_all() {
    let mut store = Store::new(StoreLimits {
        captured_per_trainjob: 3,
        captured_total: 4,
        ..StoreLimits::default()
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
    assert_eq!(
        store.capture_evictions(),
        CaptureEvictions {
            trainjob_pods: 2,
            total_pods: 1,
            ..CaptureEvictions::default()
        }
    );
}

#[test]
fn captured_pods_with_250_kb_annotations_are_bounded_by_bytes_per_trainjob() {
    let one = big_pod("a-s1", "x", "x", KB_250).heap_bytes();
    let mut store = Store::new(StoreLimits {
        // Room for three such pods, not four; the count bound is far away.
        captured_bytes_per_trainjob: 3 * one + one / 2,
        ..StoreLimits::default()
    });
    listed(
        &mut store,
        ObjectKind::TrainJob,
        vec![trainjob("a-s1", "ta", false)],
    );
    capture_all(
        &mut store,
        (0..5).map(|i| big_pod("a-s1", &format!("a{i}"), &format!("au{i}"), KB_250)),
    );
    assert_eq!(
        kept_of(&store, "ta"),
        ["au2", "au3", "au4"],
        "the oldest go"
    );
    assert!(store.captured_bytes() <= 3 * one + one / 2);
    assert!(
        store.captured_bytes() > 3 * KB_250,
        "the annotations are held"
    );
    assert_eq!(store.capture_evictions().trainjob_bytes, 2);
    let snapshot = view::namespace_snapshot(&store, PLAIN, "team-a");
    assert!(snapshot.len() > 3 * KB_250, "the snapshot carries them");
}

#[test]
fn captured_pods_with_250_kb_annotations_are_bounded_by_bytes_in_all() {
    let one = big_pod("a-s1", "x", "x", KB_250).heap_bytes();
    let mut store = Store::new(StoreLimits {
        captured_bytes_total: 3 * one + one / 2,
        ..StoreLimits::default()
    });
    listed(
        &mut store,
        ObjectKind::TrainJob,
        vec![trainjob("a-s1", "ta", false), trainjob("b-s1", "tb", false)],
    );
    capture_all(
        &mut store,
        (0..2).map(|i| big_pod("a-s1", &format!("a{i}"), &format!("au{i}"), KB_250)),
    );
    capture_all(
        &mut store,
        (0..2).map(|i| big_pod("b-s1", &format!("b{i}"), &format!("bu{i}"), KB_250)),
    );
    assert_eq!(kept_of(&store, "ta"), ["au1"], "the oldest in all goes");
    assert_eq!(kept_of(&store, "tb"), ["bu0", "bu1"]);
    assert_eq!(store.captured_count(), 3);
    assert_eq!(
        store.capture_evictions(),
        CaptureEvictions {
            total_bytes: 1,
            ..CaptureEvictions::default()
        }
    );
    // Deleting a TrainJob gives its bytes back.
    store.apply(event(
        ObjectKind::TrainJob,
        EventBody::Deleted(trainjob("b-s1", "tb", false)),
    ));
    assert_eq!(store.captured_count(), 1);
    assert!(store.captured_bytes() < 2 * one);
    capture_all(&mut store, [big_pod("a-s1", "a9", "au9", KB_250)]);
    assert_eq!(kept_of(&store, "ta"), ["au1", "au9"], "room again");
}

#[test]
fn the_count_bounds_still_hold_for_big_pods() {
    let mut store = Store::new(StoreLimits {
        captured_per_trainjob: 2,
        captured_total: 3,
        ..StoreLimits::default()
    });
    listed(
        &mut store,
        ObjectKind::TrainJob,
        vec![trainjob("a-s1", "ta", false), trainjob("b-s1", "tb", false)],
    );
    capture_all(
        &mut store,
        (0..3).map(|i| big_pod("a-s1", &format!("a{i}"), &format!("au{i}"), KB_250)),
    );
    capture_all(
        &mut store,
        (0..2).map(|i| big_pod("b-s1", &format!("b{i}"), &format!("bu{i}"), KB_250)),
    );
    assert_eq!(kept_of(&store, "ta"), ["au2"]);
    assert_eq!(kept_of(&store, "tb"), ["bu0", "bu1"]);
    let evictions = store.capture_evictions();
    assert_eq!((evictions.trainjob_pods, evictions.total_pods), (1, 1));
    assert_eq!((evictions.trainjob_bytes, evictions.total_bytes), (0, 0));
}

#[test]
fn a_pod_larger_than_a_whole_byte_budget_is_not_kept_and_is_counted() {
    let mut store = Store::new(StoreLimits {
        captured_bytes_per_trainjob: 100 * 1024,
        ..StoreLimits::default()
    });
    listed(
        &mut store,
        ObjectKind::TrainJob,
        vec![trainjob("a-s1", "ta", false)],
    );
    capture_all(&mut store, [pod("a-s1", "small", "su", 1)]);
    let p = big_pod("a-s1", "big", "bu", KB_250);
    store.apply(event(ObjectKind::Pod, EventBody::Upserted(p.clone())));
    let deltas = store.apply(event(ObjectKind::Pod, EventBody::Deleted(p)));
    assert!(!deltas.iter().any(|d| matches!(d, Delta::Captured(_))));
    assert!(
        !deltas
            .iter()
            .any(|d| matches!(d, Delta::CapturedDropped { .. })),
        "the small one stays: nothing was evicted for the big one"
    );
    assert_eq!(kept_of(&store, "ta"), ["su"]);
    assert_eq!(store.capture_evictions().trainjob_bytes, 1);

    let mut store = Store::new(StoreLimits {
        captured_bytes_total: 100 * 1024,
        ..StoreLimits::default()
    });
    listed(
        &mut store,
        ObjectKind::TrainJob,
        vec![trainjob("a-s1", "ta", false)],
    );
    capture_all(&mut store, [big_pod("a-s1", "big", "bu", KB_250)]);
    assert_eq!(store.captured_count(), 0);
    assert_eq!(store.captured_bytes(), 0);
    assert_eq!(store.capture_evictions().total_bytes, 1);
}

#[test]
fn byte_sizes_read_plain_numbers_and_binary_suffixes() {
    assert_eq!(parse_byte_size("65536"), Ok(65536));
    assert_eq!(parse_byte_size("512Ki"), Ok(512 * 1024));
    assert_eq!(parse_byte_size("64Mi"), Ok(64 << 20));
    assert_eq!(parse_byte_size(" 2Gi "), Ok(2 << 30));
    assert_eq!(parse_byte_size("0"), Ok(0));
    for bad in [
        "",
        "Mi",
        "-1",
        "1.5Mi",
        "1MB",
        "1 Mi",
        "1mi",
        "99999999999999999999999",
    ] {
        assert_eq!(parse_byte_size(bad), Err(ByteSizeError), "{bad:?}");
    }
}

#[test]
fn listed_namespaces_are_known_and_objects_alone_are_not() {
    let mut store = Store::new(StoreLimits::default());
    let all = |kind, body| WatchEvent {
        kind,
        scope: None,
        body,
        received: Instant::now(),
    };
    listed(
        &mut store,
        ObjectKind::TrainJob,
        vec![trainjob("a-s1", "ta", false)],
    );
    // Before Namespaces are listed, the namespaces seen in objects count.
    assert_eq!(store.namespace_list(), NamespaceList::Pending);
    assert!(store.knows_namespace("team-a"));
    assert!(!store.knows_namespace("team-b"));
    store.take_dirty();

    store.apply(all(ObjectKind::Namespace, EventBody::ListStarted));
    store.apply(all(
        ObjectKind::Namespace,
        EventBody::ListPage(vec![namespace("team-b"), namespace("empty")]),
    ));
    let deltas = store.apply(all(ObjectKind::Namespace, EventBody::ListDone));
    assert_eq!(store.namespace_list(), NamespaceList::Listed);
    assert!(store.synced(&[(ObjectKind::Namespace, None)]));
    assert!(deltas
        .iter()
        .all(|d| matches!(d, Delta::Upsert(o) if o.kind == ObjectKind::Namespace)));
    assert!(
        store.take_dirty().is_empty(),
        "no job depends on a Namespace"
    );
    assert!(store.knows_namespace("empty"));
    assert!(
        !store.knows_namespace("team-a"),
        "objects alone do not make a namespace"
    );
    assert_eq!(
        store.known_namespaces().into_iter().collect::<Vec<_>>(),
        ["empty", "team-b"]
    );
    assert!(
        !store.namespaces().contains("empty"),
        "Namespaces hold no objects"
    );

    store.apply(all(
        ObjectKind::Namespace,
        EventBody::Deleted(namespace("empty")),
    ));
    assert!(!store.knows_namespace("empty"));

    // Forbidden: back to the namespaces objects are seen in.
    store.apply(all(ObjectKind::Namespace, EventBody::Forbidden));
    assert_eq!(store.namespace_list(), NamespaceList::Forbidden);
    assert!(store.knows_namespace("team-a"));
    assert!(!store.knows_namespace("team-b"));
    assert!(store.get(ObjectKind::Namespace, "", "team-b").is_none());
    assert!(store.holds_objects_in("team-a"));
    assert!(
        !store.holds_objects_in("team-"),
        "a prefix is not a namespace"
    );
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

use test_support::linking_world;

type ObservedKey = (String, String, String);

fn by_object(
    observations: impl IntoIterator<Item = Observation>,
) -> BTreeMap<ObservedKey, Observation> {
    observations
        .into_iter()
        .map(|o| {
            let key = (
                o.object.kind.clone(),
                o.object.namespace.clone(),
                o.object.name.clone(),
            );
            (key, o)
        })
        .collect()
}

/// What classifying a namespace whole gives, as the server judges it: its
/// snapshot, less the objects known to belong to a gone TrainJob, which are
/// classified apart (so they stay orphans).
fn whole_namespace(store: &Store, header: SnapshotHeader, namespace: &str) -> Vec<Observation> {
    let items: Vec<Arc<StoredObject>> = ObjectKind::ALL
        .into_iter()
        .flat_map(|kind| store.in_namespace(kind, namespace))
        .cloned()
        .collect();
    let (gone, live): (Vec<_>, Vec<_>) = items
        .into_iter()
        .partition(|o| store.belongs_to_gone_trainjob(o));
    let options = classify_wasm::Options {
        mode: Some(header.mode),
        nodes_readable: Some(header.nodes_readable),
    };
    let write = |items: &[Arc<StoredObject>], captured: &[&Arc<CapturedPod>]| {
        let mut writer = classify_wasm::SnapshotWriter::new(options);
        for item in items {
            writer.item(&item.json);
        }
        for c in captured {
            writer.captured(&c.trainjob_uid, &c.pod.json, c.across_gap);
        }
        writer.finish()
    };
    let captured: Vec<&Arc<CapturedPod>> = store.captured_in(namespace).collect();
    let current = write(&live, &captured);
    let apart = write(&gone, &[]);
    let mut out = classify_wasm::classify(&current, options).expect("valid");
    out.extend(classify_wasm::classify(&apart, options).expect("valid"));
    out.retain(|o| o.object.namespace == namespace);
    out
}

/// The store's part of the linking property test (see
/// classify-wasm/tests/linking.rs): random objects upserted and deleted
/// one event at a time; re-classifying only the dirty jobs, each from its
/// sub-snapshots, keeps what classifying each namespace whole gives, with
/// captured pods and the memory of gone TrainJobs in play.
#[test]
fn classifying_the_dirty_jobs_equals_classifying_the_namespaces_whole() {
    let mut observed = 0;
    let mut gone_seen = 0;
    let mut captured_seen = 0;
    for seed in 0..24u64 {
        let header = SnapshotHeader {
            mode: if seed % 2 == 0 {
                Mode::Plain
            } else {
                Mode::Kueue
            },
            nodes_readable: seed % 3 != 0,
        };
        let mut world = linking_world::World::new(0x5eed_0000 + seed, false);
        let mut store = Store::new(StoreLimits::default());
        let mut cache: BTreeMap<JobKey, Vec<Observation>> = BTreeMap::new();
        for step_no in 0..60 {
            let step = world.step();
            let (item, deleted) = match &step {
                linking_world::Step::Upsert(item) => (item, false),
                linking_world::Step::Delete(item) => (item, true),
                other => panic!("the store captures its own pods: {other:?}"),
            };
            let kind = ObjectKind::parse(item["kind"].as_str().unwrap_or("")).expect("a kind");
            // A pod the projection does not keep is never stored.
            let Some(stored) = project(kind, item) else {
                continue;
            };
            let body = if deleted {
                EventBody::Deleted(stored)
            } else {
                EventBody::Upserted(stored)
            };
            store.apply(WatchEvent {
                kind,
                scope: None,
                body,
                received: Instant::now(),
            });
            for (namespace, job) in store.take_dirty() {
                let observations =
                    view::classify_job(&store, header, &namespace, &job).expect("valid");
                if observations.is_empty() {
                    cache.remove(&(namespace, job));
                } else {
                    cache.insert((namespace, job), observations);
                }
            }
            let incremental = by_object(cache.values().flatten().cloned());
            let whole = by_object(
                ["team-a", "team-b"]
                    .into_iter()
                    .flat_map(|ns| whole_namespace(&store, header, ns)),
            );
            assert_eq!(incremental, whole, "seed {seed} step {step_no}: {step:?}");
            observed += whole.len();
            captured_seen += store.captured_count();
            gone_seen += ObjectKind::ALL
                .into_iter()
                .flat_map(|k| ["team-a", "team-b"].map(|ns| (k, ns)))
                .flat_map(|(k, ns)| store.in_namespace(k, ns))
                .filter(|o| store.belongs_to_gone_trainjob(o))
                .count();
        }
    }
    // Not vacuous: many observations, captured pods and gone TrainJobs' objects.
    assert!(observed > 1000, "{observed}");
    assert!(
        captured_seen > 0 && gone_seen > 0,
        "{captured_seen} {gone_seen}"
    );
}

#[test]
fn the_trainjobs_reading_an_object_are_the_linkers() {
    let mut store = Store::new(StoreLimits::default());
    let jobset = |name: &str, owner: &str| {
        project(
            ObjectKind::JobSet,
            &json!({"metadata": {"name": name, "namespace": "team-a", "uid": format!("js-{name}"),
                "ownerReferences": [{"kind": "TrainJob", "name": "t", "uid": owner}]}}),
        )
        .expect("stored")
    };
    let workload = project(
        ObjectKind::Workload,
        &json!({"metadata": {"name": "w", "namespace": "team-a", "uid": "w1",
            "labels": {"kueue.x-k8s.io/job-uid": "u1"}}}),
    )
    .expect("stored");
    let objects = vec![
        trainjob("llm-7-s1", "u1", false),
        jobset("llm-7-s1", "u1"),
        jobset("other-s1", "u1"),
        workload.clone(),
        pod("llm-7-s1", "p0", "pu0", 0),
    ];
    for object in objects {
        store.apply(WatchEvent {
            kind: object.kind,
            scope: None,
            body: EventBody::Upserted(object),
            received: Instant::now(),
        });
    }
    let names = |found: Vec<Arc<StoredObject>>| -> Vec<String> {
        found.iter().map(|tj| tj.name.clone()).collect()
    };
    let get = |kind, name| store.get(kind, "team-a", name).expect("stored").clone();
    assert_eq!(
        names(store.trainjobs_reading(&get(ObjectKind::JobSet, "llm-7-s1"))),
        ["llm-7-s1"]
    );
    // Owned, but of another name: not read for the TrainJob.
    assert!(store
        .trainjobs_reading(&get(ObjectKind::JobSet, "other-s1"))
        .is_empty());
    assert_eq!(names(store.trainjobs_reading(&workload)), ["llm-7-s1"]);
    assert_eq!(
        names(store.trainjobs_reading(&get(ObjectKind::Pod, "p0"))),
        ["llm-7-s1"]
    );
}
