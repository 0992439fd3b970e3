//! Seeded property tests of linking (`classify_wasm::link`) and of the
//! incremental classifier built on it (`classify_wasm::live`): for random
//! snapshots changed by random batches of upserts and deletes (items and
//! captured pods), a [`LiveSnapshot`] that classifies only what each batch
//! affects keeps exactly the observations classifying the whole snapshot
//! gives.
//!
//! The seed is fixed so that a failure reproduces; set `PROPTEST_CASES` to
//! run more cases locally.

#![cfg(not(target_arch = "wasm32"))]

use std::collections::{BTreeMap, BTreeSet};

use classify_wasm::wire::{ChangeFrame, Deleted, DroppedCapture};
use classify_wasm::{
    ItemKey, LinkedObject, Linker, LiveSnapshot, Mode, Observation, Options, Role,
};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Value};
use test_support::linking_world::{item_key, Step, World};
use test_support::Rng;

const SEED: [u8; 32] = *b"dispatch-dash linking seed, 2026";

fn key_of(item: &Value) -> ItemKey {
    let (kind, namespace, name) = item_key(item);
    ItemKey::new(&kind, &namespace, &name)
}

fn classify(doc: &str) -> Vec<Observation> {
    classify_wasm::classify(doc, Options::default()).expect("the world is valid input")
}

fn observed(doc: &str) -> BTreeMap<ItemKey, Observation> {
    classify(doc)
        .into_iter()
        .map(|o| (ItemKey::of(&o), o))
        .collect()
}

/// Applies one step through the snapshot's own calls.
fn apply_step(live: &mut LiveSnapshot<String>, step: &Step) -> Result<(), TestCaseError> {
    match step {
        Step::Upsert(item) => {
            let text = item.to_string();
            let key = live.upsert(text.clone(), &LinkedObject::of_json(&text));
            prop_assert_eq!(key, Some(key_of(item)));
        }
        Step::Delete(item) => prop_assert!(live.delete(&key_of(item))),
        Step::Capture(entry) => {
            let text = entry.to_string();
            let (trainjob_uid, pod) = LinkedObject::of_captured_json(&text);
            live.capture(text, trainjob_uid, &pod);
        }
        Step::Drop {
            trainjob_uid,
            pod_uid,
        } => prop_assert!(live.drop_captured(trainjob_uid, pod_uid)),
    }
    Ok(())
}

/// Applies one step as the `change` frame a server would send for it.
fn apply_frame(live: &mut LiveSnapshot<String>, step: &Step) {
    let mut frame = ChangeFrame::default();
    match step {
        Step::Upsert(item) => frame.upserts.push(item.to_string().into()),
        Step::Delete(item) => {
            let key = key_of(item);
            frame.deletes.push(Deleted {
                kind: key.kind,
                namespace: key.namespace,
                name: key.name,
                uid: String::new(),
            });
        }
        Step::Capture(entry) => frame.captured.push(entry.to_string().into()),
        Step::Drop {
            trainjob_uid,
            pod_uid,
        } => frame.dropped.push(DroppedCapture {
            trainjob_uid: trainjob_uid.clone(),
            pod_uid: pod_uid.clone(),
        }),
    }
    let text = frame.to_json();
    let parsed = ChangeFrame::parse(&text).expect("a written frame reads back");
    live.apply_change(&parsed);
}

fn check_world(seed: u64, mode: Mode, nodes: bool, steps: usize) -> Result<usize, TestCaseError> {
    let mut world = World::new(seed, true);
    let mut batching = Rng::new(seed ^ 0x5eed);
    let mut live: LiveSnapshot<String> = LiveSnapshot::new(Options {
        mode: Some(mode),
        nodes_readable: Some(nodes),
    });
    // What a consumer keeps: the observations by object, as reclassified.
    let mut kept: BTreeMap<ItemKey, Observation> = BTreeMap::new();
    let (mut batches, mut reclassified) = (0usize, 0usize);
    let mut observed_total = 0;
    let mut step_no = 0;
    while step_no < steps {
        // One to three steps before the classification catches up.
        let batch = 1 + batching.below(3);
        let mut applied = Vec::new();
        for _ in 0..batch {
            let step = world.step();
            if batch == 1 && batching.chance(50) {
                apply_frame(&mut live, &step);
            } else {
                apply_step(&mut live, &step)?;
            }
            applied.push(step);
            step_no += 1;
        }
        let found = live.reclassify().expect("the world is valid input");
        for key in &found.reclassified {
            kept.remove(key);
        }
        for c in &found.observed {
            let key = ItemKey::of(&c.observation);
            prop_assert!(found.reclassified.contains(&key));
            kept.insert(key, c.observation.clone());
        }
        batches += 1;
        reclassified += found.reclassified.len();

        let whole = observed(&world.snapshot(mode.as_str(), nodes).to_string());
        prop_assert_eq!(
            &kept,
            &whole,
            "seed {} step {} ({:?})",
            seed,
            step_no,
            applied
        );
        // Every observed object is one linking says can be observed.
        for key in whole.keys() {
            let role = live.role(key);
            prop_assert!(
                matches!(role, Some(Role::TrainJob | Role::OrphanCandidate)),
                "{:?} observed with role {:?}",
                key,
                role
            );
        }
        observed_total += whole.len();
    }
    prop_assert!(batches > 0 && reclassified > 0);
    // The snapshot it holds is the world's, and loads back as it is.
    let held = live.snapshot();
    prop_assert_eq!(observed(&held), kept.clone());
    let reloaded: LiveSnapshot<String> =
        LiveSnapshot::load(&held, Options::default()).expect("a written snapshot loads");
    prop_assert_eq!(reloaded.snapshot(), held);
    prop_assert_eq!(reloaded.options(), live.options());
    // A Node's change of access reclassifies everything, as a whole
    // classification under the other setting gives.
    live.set_nodes_readable(!nodes);
    let found = live.reclassify().expect("the world is valid input");
    for key in &found.reclassified {
        kept.remove(key);
    }
    for c in found.observed {
        kept.insert(ItemKey::of(&c.observation), c.observation);
    }
    prop_assert_eq!(
        kept,
        observed(&world.snapshot(mode.as_str(), !nodes).to_string())
    );
    Ok(observed_total)
}

#[test]
fn classifying_what_a_change_affects_equals_classifying_the_whole() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(48);
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &SEED),
    );
    let observed = std::cell::Cell::new(0usize);
    runner
        .run(
            &(
                any::<u64>(),
                prop::sample::select(&[Mode::Plain, Mode::Kueue][..]),
                any::<bool>(),
            ),
            |(seed, mode, nodes)| {
                observed.set(observed.get() + check_world(seed, mode, nodes, 60)?);
                Ok(())
            },
        )
        .unwrap();
    // The worlds are not trivially empty.
    assert!(
        observed.get() > 1000,
        "only {} observations",
        observed.get()
    );
}

/// A TrainJob reads exactly its pods, JobSet, Workload and captured pods,
/// and a pod of another namespace or other labels is read for nothing.
#[test]
fn read_by_and_trainjobs_for_follow_section_4() {
    let tj = json!({"kind": "TrainJob", "metadata": {"namespace": "a", "name": "llm-7-s1",
        "uid": "u1", "labels": {"dispatch.phpboyscout.uk/job-id": "llm-7",
        "dispatch.phpboyscout.uk/submission": "s1"}}});
    let by_labels = json!({"kind": "Pod", "metadata": {"namespace": "a", "name": "p1",
        "labels": {"dispatch.phpboyscout.uk/job-id": "llm-7",
        "dispatch.phpboyscout.uk/submission": "s1"}}, "spec": {"nodeName": "n1"}});
    let by_jobset = json!({"kind": "Pod", "metadata": {"namespace": "a", "name": "p2",
        "labels": {"jobset.sigs.k8s.io/jobset-name": "llm-7-s1"}}});
    let elsewhere = json!({"kind": "Pod", "metadata": {"namespace": "b", "name": "p1",
        "labels": {"dispatch.phpboyscout.uk/job-id": "llm-7",
        "dispatch.phpboyscout.uk/submission": "s1"}}});
    let only_job_id = json!({"kind": "Pod", "metadata": {"namespace": "a", "name": "p3",
        "labels": {"dispatch.phpboyscout.uk/job-id": "llm-7"}}});
    let workload = json!({"kind": "Workload", "metadata": {"namespace": "a", "name": "w",
        "labels": {"kueue.x-k8s.io/job-uid": "u1"}}});
    let jobset = json!({"kind": "JobSet", "metadata": {"namespace": "a", "name": "llm-7-s1"}});
    let owned = json!({"kind": "JobSet", "metadata": {"namespace": "a", "name": "other",
        "ownerReferences": [{"kind": "TrainJob", "uid": "u1"}]}});
    let node = json!({"kind": "Node", "metadata": {"name": "n1"}});
    let other_node = json!({"kind": "Node", "metadata": {"name": "n2"}});
    let captured = json!({"trainJobUID": "u1", "pod": {"kind": "Pod", "metadata": {"name": "c"}}});
    let mut linker: Linker<String> = Linker::new();
    for (name, item) in [
        ("tj", &tj),
        ("by_labels", &by_labels),
        ("by_jobset", &by_jobset),
        ("elsewhere", &elsewhere),
        ("only_job_id", &only_job_id),
        ("workload", &workload),
        ("jobset", &jobset),
        ("owned", &owned),
        ("node", &node),
        ("other_node", &other_node),
    ] {
        linker.upsert(name.to_string(), item);
    }
    linker.upsert_captured("captured".to_string(), &captured);
    let names = |set: BTreeSet<String>| set.into_iter().collect::<Vec<_>>();
    assert_eq!(
        names(linker.read_by(&"tj".to_string())),
        [
            "by_jobset",
            "by_labels",
            "captured",
            "jobset",
            "node",
            "workload"
        ]
    );
    assert_eq!(
        names(linker.trainjobs_for(&"by_labels".to_string())),
        ["tj"]
    );
    // A JobSet of another name that the TrainJob owns is not read for it,
    // but the TrainJob keeps it from being an orphan.
    assert_eq!(names(linker.trainjobs_for(&"owned".to_string())), ["tj"]);
    assert!(linker.trainjobs_reading(&"owned".to_string()).is_empty());
    assert_eq!(
        names(linker.trainjobs_reading(&"jobset".to_string())),
        ["tj"]
    );
    assert_eq!(
        names(linker.trainjobs_reading(&"workload".to_string())),
        ["tj"]
    );
    assert!(linker.trainjobs_for(&"elsewhere".to_string()).is_empty());
    assert!(linker.trainjobs_for(&"only_job_id".to_string()).is_empty());
    // The Node changes the TrainJob reading its pod, not the pod (observed
    // only as an orphan, which a Node never changes).
    assert_eq!(names(linker.affected_by(&"node".to_string())), ["tj"]);
    // The TrainJob changes itself and the orphan candidates seeking it.
    assert_eq!(
        names(linker.affected_by(&"tj".to_string())),
        ["by_labels", "owned", "tj"]
    );
    assert!(linker.remove(&"tj".to_string()));
    assert!(linker.read_by(&"tj".to_string()).is_empty());
    assert!(linker.trainjobs_for(&"by_labels".to_string()).is_empty());
    assert!(!linker.remove(&"tj".to_string()));
}

/// What a store reads of an item's text to link it (the typed pass of
/// `LinkedObject::of_json`) gives what the whole value gives: for every item
/// of every case, for items whose fields have other types or repeat (read
/// whole instead), and for captured entries alike.
#[test]
fn the_fields_read_from_text_link_as_the_whole_item_does() {
    use classify_wasm::{LinkedObject, Links};
    let mut texts: Vec<String> = test_support::shared_cases()
        .iter()
        .flat_map(|c| {
            c["snapshot"]["items"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|v| v.to_string())
        .collect();
    assert!(texts.len() > 50, "{}", texts.len());
    texts.extend(
        [
            r#"{"kind":"Pod","metadata":null,"spec":{"nodeName":"n1"}}"#,
            r#"{"kind":"Pod","metadata":"x"}"#,
            r#"{"kind":"Pod","metadata":{"name":"a","name":"b","labels":{"k":1}}}"#,
            r#"{"kind":"Pod","metadata":{"name":"a","labels":[1]},"spec":"s"}"#,
            r#"{"kind":"Pod","metadata":{"name":"p","labels":{"dispatch.phpboyscout.uk/job-id":"j","dispatch.phpboyscout.uk/submission":""}},"spec":{"nodeName":""}}"#,
            r#"{"kind":"JobSet","metadata":{"name":"j","ownerReferences":[{"kind":"TrainJob"},{"kind":"TrainJob","uid":"u"},"x"]}}"#,
            r#"{"kind":"TrainingRuntime","metadata":{"name":"r","labels":{"dispatch.phpboyscout.uk/job-id":"j"},"ownerReferences":[{"kind":"TrainJob","uid":7}]}}"#,
            r#"{"kind":3}"#,
            r#"[1,2]"#,
            "not JSON",
        ]
        .map(String::from),
    );
    for text in &texts {
        let whole: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let read = LinkedObject::of_json(text);
        assert_eq!(read, LinkedObject::of_value(&whole), "{text}");
        assert_eq!(Links::of_object(&read), Links::of_item(&whole), "{text}");
    }
    for text in [
        r#"{"trainJobUID":"u","pod":{"metadata":{"uid":"p"},"spec":{"nodeName":"n"}}}"#,
        r#"{"trainJobUID":"u","pod":null}"#,
        r#"{"trainJobUID":5,"pod":"x"}"#,
        r#"{"trainJobUID":"","pod":{"metadata":{"uid":"p"}}}"#,
    ] {
        let whole: Value = serde_json::from_str(text).unwrap_or(Value::Null);
        let (trainjob_uid, pod) = LinkedObject::of_captured_json(text);
        assert_eq!(
            Links::of_captured_pod(&trainjob_uid, &pod.fields),
            Links::of_captured(&whole),
            "{text}"
        );
        let whole_pod = whole
            .get("pod")
            .map(LinkedObject::of_value)
            .unwrap_or_default();
        assert_eq!(pod.uid, whole_pod.uid, "{text}");
    }
}

/// Equal links share their texts: the pods of one job hold one copy of
/// what they seek (the linker hands each the link it already indexes), and
/// what they are linked to is unchanged by it.
#[test]
fn equal_links_share_their_texts() {
    use classify_wasm::{keys, Link};
    let trainjob = json!({"kind": "TrainJob", "metadata": {"name": "j-s1", "namespace": "ns",
        "uid": "tj-1", "labels": {keys::JOB_ID: "j", keys::SUBMISSION: "s1"}}});
    let pod = |name: &str| {
        json!({"kind": "Pod", "metadata": {"name": name, "namespace": "ns", "uid": name,
            "labels": {keys::JOB_ID: "j", keys::SUBMISSION: "s1", keys::JOBSET_NAME: "j-s1"}},
            "spec": {"nodeName": "n1"}})
    };
    let mut linker: Linker<String> = Linker::new();
    linker.upsert("tj".to_string(), &trainjob);
    linker.upsert("p1".to_string(), &pod("p1"));
    linker.upsert("p2".to_string(), &pod("p2"));
    let sought = |key: &str| {
        linker
            .links(&key.to_string())
            .expect("indexed")
            .seeks
            .clone()
    };
    let (first, second) = (sought("p1"), sought("p2"));
    assert_eq!(first, second);
    assert_eq!(first.len(), 3, "{first:?}");
    for (a, b) in first.iter().zip(&second) {
        let shared = match (a, b) {
            (
                Link::Labels {
                    namespace: n1,
                    job_id: j1,
                    submission: s1,
                },
                Link::Labels {
                    namespace: n2,
                    job_id: j2,
                    submission: s2,
                },
            ) => {
                std::sync::Arc::ptr_eq(n1, n2)
                    && std::sync::Arc::ptr_eq(j1, j2)
                    && std::sync::Arc::ptr_eq(s1, s2)
            }
            (
                Link::Name {
                    namespace: n1,
                    name: a,
                },
                Link::Name {
                    namespace: n2,
                    name: b,
                },
            ) => std::sync::Arc::ptr_eq(n1, n2) && std::sync::Arc::ptr_eq(a, b),
            (Link::Node(a), Link::Node(b)) => std::sync::Arc::ptr_eq(a, b),
            other => panic!("unexpected links {other:?}"),
        };
        assert!(shared, "{a:?} is held twice");
    }
    let both: BTreeSet<String> = ["p1", "p2"].map(String::from).into();
    assert_eq!(linker.read_by(&"tj".to_string()), both);
}
