//! Unit tests of the hub's namespace streams: no cluster, just events.

use super::*;
use crate::serve::projection::project;
use crate::serve::store::EventBody;
use serde_json::json;

fn event(kind: ObjectKind, body: EventBody) -> WatchEvent {
    WatchEvent {
        kind,
        scope: None,
        body,
        received: Instant::now(),
    }
}

fn namespace(name: &str) -> StoredObject {
    project(
        ObjectKind::Namespace,
        &json!({"metadata": {"name": name, "uid": format!("ns-{name}")}}),
    )
    .expect("stored")
}

/// A TrainJob, with an annotation the projection keeps `padding` bytes long.
fn trainjob(namespace: &str, name: &str, padding: usize) -> StoredObject {
    project(
        ObjectKind::TrainJob,
        &json!({"metadata": {"name": name, "namespace": namespace, "uid": format!("{namespace}/{name}"),
            "annotations": {classify_wasm::keys::HOLD_INSTANCE: "h".repeat(padding)}}}),
    )
    .expect("stored")
}

fn upsert(hub: &Hub, object: StoredObject) {
    hub.ingest(vec![event(object.kind, EventBody::Upserted(object))]);
}

fn delete(hub: &Hub, object: StoredObject) {
    hub.ingest(vec![event(object.kind, EventBody::Deleted(object))]);
}

/// A hub of every namespace whose Namespaces `names` are listed.
fn hub_of_all(names: &[&str], limits: StoreLimits) -> Arc<Hub> {
    let hub = Arc::new(Hub::new(Mode::Plain, Scope::All, limits));
    hub.ingest(vec![
        event(ObjectKind::Namespace, EventBody::ListStarted),
        event(
            ObjectKind::Namespace,
            EventBody::ListPage(names.iter().map(|n| namespace(n)).collect()),
        ),
        event(ObjectKind::Namespace, EventBody::ListDone),
    ]);
    hub
}

/// The first event a subscription sends, whole: a `snapshot` event's
/// pieces are put together.
fn start(subscription: &Subscription) -> (&str, u64, String) {
    let frame = &subscription.backlog[0];
    let mut bytes = frame.bytes.to_vec();
    for piece in subscription.snapshot_rest.iter() {
        bytes.extend_from_slice(piece);
    }
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let event = if text.contains("event: snapshot") {
        "snapshot"
    } else {
        "change"
    };
    (event, frame.id, text)
}

#[test]
fn an_unknown_namespace_is_not_watched_and_allocates_no_stream() {
    let hub = hub_of_all(&["team-a"], StoreLimits::default());
    assert!(hub.watches("team-a"));
    assert!(!hub.watches("nope"));
    for i in 0..100 {
        assert!(hub
            .subscribe_snapshots(&format!("random-{i}"), None)
            .is_none());
    }
    assert_eq!(hub.stream_count(), 0);
    assert_eq!(hub.namespaces(), ["team-a"]);
    // An object in a namespace with no Namespace does not make it known.
    upsert(&hub, trainjob("ghost", "x-s1", 0));
    assert!(!hub.watches("ghost"));
    assert!(hub.subscribe_snapshots("ghost", None).is_none());
    assert_eq!(hub.stream_count(), 0);
}

#[test]
fn subscribers_at_one_namespace_version_share_one_snapshot_copy() {
    let hub = hub_of_all(&["team-a", "team-b"], StoreLimits::default());
    upsert(&hub, trainjob("team-a", "a-s1", 0));
    upsert(&hub, trainjob("team-b", "b-s1", 0));
    // team-b has a subscriber, so its changes make frames (and ids).
    let _b = hub.subscribe_snapshots("team-b", None).expect("watched");
    let first = hub.subscribe_snapshots("team-a", None).expect("watched");
    upsert(&hub, trainjob("team-b", "b-s2", 0));
    let second = hub.subscribe_snapshots("team-a", None).expect("watched");
    assert_eq!(start(&first).0, "snapshot");
    assert_eq!(first.backlog[0].id, second.backlog[0].id);
    assert_eq!(
        first.backlog[0].bytes.as_ptr(),
        second.backlog[0].bytes.as_ptr(),
        "one copy, though another namespace changed in between"
    );

    let cached = |hub: &Hub| {
        lock(&hub.streams)
            .by_namespace
            .get("team-a")
            .is_some_and(|stream| stream.start.is_some())
    };
    assert!(cached(&hub), "kept for the next subscriber at this version");
    upsert(&hub, trainjob("team-a", "a-s2", 0));
    // A start of a version gone is never handed out again: not kept (a
    // whole namespace's snapshot per namespace, at scale).
    assert!(!cached(&hub));
    let third = hub.subscribe_snapshots("team-a", None).expect("watched");
    assert_ne!(
        third.backlog[0].bytes.as_ptr(),
        first.backlog[0].bytes.as_ptr()
    );
    assert!(third.backlog[0].id > first.backlog[0].id);
    assert!(start(&third).2.contains("a-s2"));
    // Resuming from the first snapshot's id replays only team-a's change.
    let resumed = hub
        .subscribe_snapshots("team-a", Some(first.backlog[0].id))
        .expect("watched");
    assert_eq!(resumed.backlog.len(), 1);
    let (event, _, text) = start(&resumed);
    assert_eq!(event, "change");
    assert!(text.contains("a-s2") && !text.contains("b-s2"), "{text}");
}

/// A snapshot start is sent in pieces: put together they are one event
/// whose data is the namespace's snapshot as `GET .../snapshot` writes it,
/// and its objects' pieces are the store's own texts, not copies.
#[test]
fn a_snapshot_start_shares_the_stores_texts_and_is_the_namespace_snapshot() {
    let hub = hub_of_all(&["team-a"], StoreLimits::default());
    for n in 0..5 {
        upsert(&hub, trainjob("team-a", &format!("a-s{n}"), 100));
    }
    let sub = hub.subscribe_snapshots("team-a", None).expect("watched");
    let (event, id, text) = start(&sub);
    assert_eq!(event, "snapshot");
    assert_eq!(
        text,
        format!(
            "id: {id}\nevent: snapshot\ndata: {}\n\n",
            hub.snapshot("team-a")
        )
    );
    let stored: Vec<usize> = hub.with_store(|store| {
        store
            .in_namespace(ObjectKind::TrainJob, "team-a")
            .map(|o| o.json.as_ptr() as usize)
            .collect()
    });
    let shared = sub
        .snapshot_rest
        .iter()
        .filter(|piece| stored.contains(&(piece.as_ptr() as usize)))
        .count();
    assert_eq!(shared, 5, "each TrainJob's text is the store's");
}

/// The data line of one encoded event.
fn data_of(bytes: &[u8]) -> String {
    let text = std::str::from_utf8(bytes).expect("UTF-8");
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("data: "))
        .expect("a data line");
    line.to_string()
}

/// A snapshot start sends the snapshot's rows first: the engine's
/// classification of exactly that snapshot, with no event id, shared like
/// the snapshot. A resume sends none.
#[test]
fn a_snapshot_start_has_its_rows_first_and_a_resume_has_none() {
    let hub = hub_of_all(&["team-a"], StoreLimits::default());
    upsert(&hub, trainjob("team-a", "a-s1", 0));
    let first = hub.subscribe_snapshots("team-a", None).expect("watched");
    let rows = first.rows.clone().expect("rows before a snapshot");
    assert!(
        rows.starts_with(b"event: rows\ndata: ") && rows.ends_with(b"\n\n"),
        "one event with no id: {rows:?}"
    );
    let snapshot = data_of(start(&first).2.as_bytes());
    let data = data_of(&rows);
    assert_eq!(
        data,
        classify_wasm::classified_rows_json(&snapshot, Default::default()).unwrap()
    );
    let parsed: Vec<classify_wasm::Attempted> = serde_json::from_str(&data).unwrap();
    assert_eq!(parsed.len(), 1);
    assert_eq!(parsed[0].observation.object.name, "a-s1");

    let second = hub.subscribe_snapshots("team-a", None).expect("watched");
    assert_eq!(
        second.rows.as_ref().map(|r| r.as_ptr()),
        Some(rows.as_ptr()),
        "one copy at one version"
    );

    upsert(&hub, trainjob("team-a", "a-s2", 0));
    let resumed = hub
        .subscribe_snapshots("team-a", Some(first.backlog[0].id))
        .expect("watched");
    assert_eq!(start(&resumed).0, "change");
    assert!(resumed.rows.is_none(), "a resume has no rows");
    let fresh = hub.subscribe_snapshots("team-a", None).expect("watched");
    let names: Vec<String> =
        serde_json::from_str::<Vec<classify_wasm::Attempted>>(&data_of(&fresh.rows.unwrap()))
            .unwrap()
            .into_iter()
            .map(|r| r.observation.object.name)
            .collect();
    assert_eq!(names, ["a-s1", "a-s2"]);
}

/// The rows are not sent when they would be longer than the snapshot (the
/// bound on a start) and than the floor; the snapshot alone still starts
/// the stream.
#[test]
fn rows_longer_than_their_snapshot_are_not_sent() {
    let items: Vec<String> = (0..2000)
        .map(|i| {
            format!(
                r#"{{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{{"name":"t{i}","namespace":"n","uid":"u{i}"}}}}"#
            )
        })
        .collect();
    let snapshot = format!(r#"{{"kind":"Snapshot","items":[{}]}}"#, items.join(","));
    let rows = classify_wasm::classified_rows_json(&snapshot, Default::default()).unwrap();
    assert!(
        rows.len() > snapshot.len() && rows.len() > view::ROWS_FLOOR,
        "{} {}",
        rows.len(),
        snapshot.len()
    );
    assert_eq!(view::namespace_rows(&snapshot), None);
    let padded = format!("{}{}", snapshot, " ".repeat(rows.len()));
    assert_eq!(view::namespace_rows(&padded), Some(rows));
}

#[tokio::test]
async fn a_stream_is_freed_when_it_has_no_subscriber_and_no_object() {
    let hub = Arc::new(Hub::new(
        Mode::Plain,
        Scope::Namespaces(vec!["team-a".into(), "empty".into()]),
        StoreLimits::default(),
    ));
    let empty = hub.subscribe_snapshots("empty", None).expect("watched");
    let also_empty = hub.subscribe_snapshots("empty", None).expect("watched");
    assert_eq!(hub.stream_count(), 1);
    let resume_id = empty.backlog[0].id;
    drop(empty);
    assert_eq!(hub.stream_count(), 1, "one subscriber is left");
    drop(also_empty);
    assert_eq!(hub.stream_count(), 0, "the last one left");

    // Changes while no stream exists are not lost to a client resuming
    // from an id of the freed stream: it starts from a snapshot.
    upsert(&hub, trainjob("empty", "late-s1", 0));
    let again = hub
        .subscribe_snapshots("empty", Some(resume_id))
        .expect("watched");
    let (event, id, text) = start(&again);
    assert_eq!(event, "snapshot");
    assert!(id > resume_id);
    assert!(text.contains("late-s1"));
    drop(again);
    assert_eq!(hub.stream_count(), 1, "it holds an object now");

    // The object goes: the idle stream goes with the next batch.
    delete(&hub, trainjob("empty", "late-s1", 0));
    assert_eq!(hub.stream_count(), 0);
}

#[tokio::test]
async fn a_deleted_namespace_closes_and_frees_its_stream() {
    let hub = hub_of_all(&["team-a"], StoreLimits::default());
    upsert(&hub, trainjob("team-a", "a-s1", 0));
    let mut subscription = hub.subscribe_snapshots("team-a", None).expect("watched");
    assert_eq!(hub.stream_count(), 1);
    delete(&hub, namespace("team-a"));
    assert_eq!(hub.stream_count(), 0);
    assert!(matches!(
        subscription.live.recv().await,
        Err(broadcast::error::RecvError::Closed)
    ));
    assert!(!hub.watches("team-a"), "its objects linger, but it is gone");
    assert!(hub.subscribe_snapshots("team-a", None).is_none());
    assert!(hub.namespaces().is_empty());
}

#[tokio::test]
async fn the_replay_ring_is_bounded_by_bytes() {
    let hub = hub_of_all(
        &["team-a"],
        StoreLimits {
            replay_bytes_per_namespace: 10_000,
            ..StoreLimits::default()
        },
    );
    let mut live = hub.subscribe_snapshots("team-a", None).expect("watched");
    let start_id = live.backlog[0].id;
    // Five frames of about 3 KB: the ring keeps the last three.
    let mut ids = Vec::new();
    for i in 0..5 {
        upsert(&hub, trainjob("team-a", &format!("t-s{i}"), 3_000));
        ids.push(live.live.recv().await.expect("a live frame").id);
    }
    let resumed = hub
        .subscribe_snapshots("team-a", Some(start_id))
        .expect("watched");
    assert_eq!(start(&resumed).0, "snapshot", "the first frames are gone");
    let resumed = hub
        .subscribe_snapshots("team-a", Some(ids[1]))
        .expect("watched");
    let replayed: Vec<u64> = resumed.backlog.iter().map(|f| f.id).collect();
    assert_eq!(replayed, ids[2..]);
    assert!(super::super::scrape::text_of(&hub)
        .contains("dispatch_dash_replay_frames_evicted_total{bound=\"bytes\"} 2"));

    // One frame larger than the whole ring is sent, not kept, and the three
    // kept before it can no longer be replayed.
    upsert(&hub, trainjob("team-a", "huge-s1", 20_000));
    let huge = live.live.recv().await.expect("sent live");
    assert!(huge.bytes.len() > 10_000);
    let resumed = hub
        .subscribe_snapshots("team-a", Some(ids[4]))
        .expect("watched");
    assert_eq!(start(&resumed).0, "snapshot");
    let resumed = hub
        .subscribe_snapshots("team-a", Some(huge.id))
        .expect("watched");
    assert!(resumed.backlog.is_empty(), "up to date");
    assert!(super::super::scrape::text_of(&hub)
        .contains("dispatch_dash_replay_frames_evicted_total{bound=\"bytes\"} 6"));
}

#[tokio::test]
async fn the_rings_of_all_namespaces_are_bounded_together() {
    let hub = hub_of_all(
        &["team-a", "team-b"],
        StoreLimits {
            replay_bytes_per_namespace: 100_000,
            replay_bytes_total: 10_000,
            ..StoreLimits::default()
        },
    );
    let mut a = hub.subscribe_snapshots("team-a", None).expect("watched");
    let mut b = hub.subscribe_snapshots("team-b", None).expect("watched");
    // Frames of about 3 KB, alternating namespaces: each ring alone is far
    // under its own bound, but together only the last three fit.
    let mut ids = Vec::new();
    for i in 0..6 {
        let (ns, live) = if i % 2 == 0 {
            ("team-a", &mut a)
        } else {
            ("team-b", &mut b)
        };
        upsert(&hub, trainjob(ns, &format!("t{i}-s1"), 3_000));
        ids.push((ns, live.live.recv().await.expect("a live frame").id));
    }
    // The oldest frames went, whichever namespace they were of: team-a
    // keeps only its last frame (ids[4]), team-b its last two (ids[3],
    // ids[5]).
    let resumed = hub
        .subscribe_snapshots("team-a", Some(ids[2].1))
        .expect("watched");
    let replayed: Vec<u64> = resumed.backlog.iter().map(|f| f.id).collect();
    assert_eq!(replayed, [ids[4].1]);
    let resumed = hub
        .subscribe_snapshots("team-a", Some(ids[0].1))
        .expect("watched");
    assert_eq!(start(&resumed).0, "snapshot", "team-a's oldest is gone");
    let resumed = hub
        .subscribe_snapshots("team-b", Some(ids[1].1))
        .expect("watched");
    let replayed: Vec<u64> = resumed.backlog.iter().map(|f| f.id).collect();
    assert_eq!(replayed, [ids[3].1, ids[5].1]);
    assert!(super::super::scrape::text_of(&hub)
        .contains("dispatch_dash_replay_frames_evicted_total{bound=\"total_bytes\"} 3"));
    // What the rings hold together is a gauge, within the bound it keeps.
    let metrics = super::super::scrape::text_of(&hub);
    let gauge = |name: &str| -> u64 {
        metrics
            .lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
            .unwrap_or_else(|| panic!("{name} in {metrics}"))
    };
    let replay = gauge("dispatch_dash_replay_bytes");
    assert!((6_000..=10_000).contains(&replay), "{replay}");
    assert!(
        gauge("dispatch_dash_history_bytes") > 0,
        "six TrainJobs were observed"
    );
}
