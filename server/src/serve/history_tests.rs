use std::time::{Duration, SystemTime, UNIX_EPOCH};

use classify_wasm::{Cause, CauseKind, ObjectRef, Observation, Provenance, State};

use super::*;

/// 2026-12-01T09:00:00Z.
const NINE: u64 = 1_796_115_600;

fn at(minutes_after_nine: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(NINE + minutes_after_nine * 60)
}

fn observation(name: &str, state: State, cause: CauseKind, held: bool) -> Observation {
    Observation {
        object: ObjectRef {
            kind: "TrainJob".into(),
            namespace: "team-a".into(),
            name: name.into(),
            uid: format!("uid-{name}"),
        },
        job: name.into(),
        submission: "1".into(),
        state,
        held,
        hold_instance: None,
        foreign: false,
        cause: Cause {
            kind: cause,
            provenance: (cause != CauseKind::None).then_some(Provenance::CapturedPod),
            detail: String::new(),
        },
        execution: None,
    }
}

fn key(name: &str) -> HistoryKey {
    HistoryKey::of(&observation(name, State::Pending, CauseKind::None, false))
}

#[test]
fn instants_are_written_as_rfc3339_utc() {
    assert_eq!(rfc3339(0), "1970-01-01T00:00:00Z");
    assert_eq!(rfc3339(NINE as i64), "2026-12-01T09:00:00Z");
    assert_eq!(rfc3339(951_782_400 + 86_399), "2000-02-29T23:59:59Z");
    assert_eq!(rfc3339(-1), "1969-12-31T23:59:59Z");
}

#[test]
fn only_changes_are_recorded_and_the_timeline_reads_them_oldest_first() {
    let mut history = History::new(HistoryLimits::default());
    let job = |state, cause| vec![observation("a", state, cause, false)];
    history.record_job(&[], &job(State::Pending, CauseKind::None), at(0));
    // The same observation again is no change.
    let same = history.record_job(&[key("a")], &job(State::Pending, CauseKind::None), at(2));
    assert!(same.is_empty(), "{same:?}");
    history.record_job(&[key("a")], &job(State::Running, CauseKind::None), at(4));
    let ended = history.record_job(
        &[key("a")],
        &job(State::Ended, CauseKind::OutOfMemory),
        at(72),
    );
    assert_eq!(ended.written.len(), 1);
    let changes = &history.of(&key("a")).expect("recorded").changes;
    assert_eq!(
        timeline(changes),
        "pending 09:00 → running 09:04 → ended, out-of-memory 10:12"
    );
    let json = serde_json::to_value(changes.back().expect("one")).expect("json");
    assert_eq!(
        json,
        serde_json::json!({"at": "2026-12-01T10:12:00Z", "state": "ended", "cause": "out-of-memory", "held": false})
    );
    // Held with the same state is a change too.
    history.record_job(
        &[key("a")],
        &[observation("a", State::Ended, CauseKind::OutOfMemory, true)],
        at(80),
    );
    assert!(timeline(&history.of(&key("a")).expect("recorded").changes)
        .ends_with("ended, out-of-memory, held 10:20"));
}

#[test]
fn each_object_keeps_its_last_64_changes() {
    let mut history = History::new(HistoryLimits::default());
    for minute in 0..100u64 {
        let state = if minute % 2 == 0 {
            State::Pending
        } else {
            State::Running
        };
        history.record_job(
            &[key("a")],
            &[observation("a", state, CauseKind::None, false)],
            at(minute),
        );
    }
    let changes = &history.of(&key("a")).expect("recorded").changes;
    assert_eq!(changes.len(), CHANGES_PER_OBJECT);
    // What the byte bound counts per object: 64 fixed-size values.
    assert!(
        changes.capacity() <= CHANGES_PER_OBJECT,
        "{}",
        changes.capacity()
    );
    assert_eq!(std::mem::size_of::<Change>(), 16);
    assert_eq!(
        changes.front().map(|c| c.at_unix),
        Some((NINE + 36 * 60) as i64)
    );
    assert_eq!(
        changes.back().map(|c| c.at_unix),
        Some((NINE + 99 * 60) as i64)
    );
}

#[test]
fn objects_gone_longer_than_the_retention_are_dropped() {
    let limits = HistoryLimits {
        retention: Duration::from_secs(3600),
        ..HistoryLimits::default()
    };
    let mut history = History::new(limits);
    history.record_job(
        &[],
        &[
            observation("a", State::Running, CauseKind::None, false),
            observation("b", State::Running, CauseKind::None, false),
        ],
        at(0),
    );
    // `a` is gone at 09:10; `b` stays.
    let gone = history.record_job(
        &[key("a"), key("b")],
        &[observation("b", State::Running, CauseKind::None, false)],
        at(10),
    );
    assert_eq!(gone.written.len(), 1);
    assert_eq!(gone.written[0].1.gone_since, Some((NINE + 600) as i64));
    // Within the retention it is still there, and shown.
    assert!(history.enforce(at(70)).dropped.is_empty());
    assert!(history.of(&key("a")).is_some());
    // Past it, it goes; the live object stays however old.
    assert_eq!(history.enforce(at(71)).dropped, vec![key("a")]);
    assert!(history.of(&key("a")).is_none());
    assert!(history.enforce(at(100_000)).dropped.is_empty());
    assert_eq!(history.len(), 1);
}

#[test]
fn an_object_seen_again_is_no_longer_gone() {
    let limits = HistoryLimits {
        retention: Duration::from_secs(60),
        ..HistoryLimits::default()
    };
    let mut history = History::new(limits);
    let running = [observation("a", State::Running, CauseKind::None, false)];
    history.record_job(&[], &running, at(0));
    history.record_job(&[key("a")], &[], at(1));
    history.record_job(&[], &running, at(2));
    assert_eq!(history.of(&key("a")).expect("kept").gone_since, None);
    assert!(history.enforce(at(500)).dropped.is_empty());
}

#[test]
fn the_count_and_byte_bounds_drop_gone_objects_first() {
    let limits = HistoryLimits {
        objects: 2,
        ..HistoryLimits::default()
    };
    let mut history = History::new(limits);
    let running = |name: &str| observation(name, State::Running, CauseKind::None, false);
    history.record_job(&[], &[running("a"), running("b")], at(0));
    history.record_job(&[key("a")], &[], at(1));
    let delta = history.record_job(&[], &[running("c")], at(2));
    assert_eq!(delta.dropped, vec![key("a")], "the gone one goes first");
    // Only live ones left: the one whose last change is oldest goes.
    history.record_job(
        &[key("c")],
        &[observation("c", State::Ended, CauseKind::Completed, false)],
        at(3),
    );
    let delta = history.record_job(&[], &[running("d")], at(4));
    assert_eq!(delta.dropped, vec![key("b")]);
    assert_eq!(history.len(), 2);

    let one_object = ObjectHistory::bytes(&key("a"));
    let mut history = History::new(HistoryLimits {
        bytes: one_object * 2,
        ..HistoryLimits::default()
    });
    history.record_job(&[], &[running("a"), running("b"), running("c")], at(0));
    assert_eq!(history.len(), 2);
    assert!(history.bytes() <= one_object * 2);
}

#[test]
fn a_change_says_what_it_entered_from_and_held_flips_are_no_transition() {
    let mut history = History::new(HistoryLimits::default());
    let first = history.record_job(
        &[],
        &[observation("a", State::Pending, CauseKind::None, false)],
        at(0),
    );
    assert_eq!(first.entered.len(), 1);
    assert!(first.entered[0].previous.is_none());
    assert!(
        first.entered[0].is_transition(),
        "first seen enters its state"
    );
    let held = history.record_job(
        &[key("a")],
        &[observation("a", State::Pending, CauseKind::None, true)],
        at(5),
    );
    assert_eq!(held.entered.len(), 1, "held is a change");
    assert!(
        !held.entered[0].is_transition(),
        "but the state and cause are the same"
    );
    let same = history.record_job(
        &[key("a")],
        &[observation("a", State::Pending, CauseKind::None, true)],
        at(6),
    );
    assert!(same.entered.is_empty());
    let ended = history.record_job(
        &[key("a")],
        &[observation(
            "a",
            State::Ended,
            CauseKind::OutOfMemory,
            false,
        )],
        at(9),
    );
    let entered = &ended.entered[0];
    assert!(entered.is_transition());
    assert_eq!(entered.previous.map(|p| p.state), Some(State::Pending));
    assert_eq!(entered.change.cause, CauseKind::OutOfMemory);
}

#[test]
fn an_object_is_in_its_state_since_the_first_change_of_its_last_run() {
    let mut history = History::new(HistoryLimits::default());
    let job = |state, held| vec![observation("a", state, CauseKind::None, held)];
    history.record_job(&[], &job(State::Running, false), at(0));
    history.record_job(&[key("a")], &job(State::Pending, false), at(10));
    // Held and released while pending: still pending since minute 10.
    history.record_job(&[key("a")], &job(State::Pending, true), at(20));
    history.record_job(&[key("a")], &job(State::Pending, false), at(30));
    let minute = |m: u64| Some((NINE + m * 60) as i64);
    assert_eq!(history.in_state_since(&key("a")), minute(10));
    history.record_job(&[key("a")], &job(State::Running, false), at(40));
    assert_eq!(history.in_state_since(&key("a")), minute(40));
    assert_eq!(history.in_state_since(&key("nope")), None);
}

fn preemptor(workload: &str) -> Preemptor {
    Preemptor {
        uid: "wb".into(),
        namespace: "team-b".into(),
        workload: workload.into(),
        train_job: Some("llm-70b".into()),
        priority: Some(1000),
        cluster_queue: Some("gpu-cq".into()),
    }
}

#[test]
fn a_preemptor_is_remembered_once_within_its_bound_and_only_for_a_known_object() {
    let mut history = History::new(HistoryLimits::default());
    let first = history.record_job(
        &[],
        &[observation("a", State::Pending, CauseKind::None, false)],
        at(0),
    );
    let mut delta = first.clone();
    history.remember_preemptor(&key("a"), preemptor("w-big"), &mut delta);
    assert_eq!(delta.written.len(), 1, "one entry per object: {delta:?}");
    assert_eq!(
        delta.written[0].1.preempted_by,
        Some(preemptor("w-big")),
        "the written history carries it"
    );
    assert_eq!(history.preemptor_of(&key("a")), Some(&preemptor("w-big")));

    let mut unchanged = HistoryDelta::default();
    history.remember_preemptor(&key("a"), preemptor("w-big"), &mut unchanged);
    assert!(unchanged.written.is_empty(), "the same preemptor again");

    let mut unknown = HistoryDelta::default();
    history.remember_preemptor(&key("nobody"), preemptor("w-big"), &mut unknown);
    assert!(unknown.written.is_empty());
    assert_eq!(history.preemptor_of(&key("nobody")), None);

    let mut too_big = HistoryDelta::default();
    let huge = "w".repeat(PREEMPTOR_MAX_BYTES);
    history.remember_preemptor(&key("a"), preemptor(&huge), &mut too_big);
    assert!(too_big.written.is_empty(), "past the bound, not kept");
    assert_eq!(history.preemptor_of(&key("a")), Some(&preemptor("w-big")));

    let mut next = HistoryDelta::default();
    history.remember_preemptor(&key("a"), preemptor("w-bigger"), &mut next);
    assert_eq!(next.written.len(), 1, "a new preemptor is written");
    assert_eq!(
        history.preemptor_of(&key("a")),
        Some(&preemptor("w-bigger"))
    );
}
