//! Seeded property test of the linking API (`classify_wasm::link`): for
//! random snapshots changed by random sequences of upserts and deletes
//! (items and captured pods), classifying only the objects a change
//! affects, each batch on the sub-snapshot of its view, keeps exactly the
//! observations classifying the whole snapshot gives.
//!
//! The seed is fixed so that a failure reproduces; set `PROPTEST_CASES` to
//! run more cases locally.

#![cfg(not(target_arch = "wasm32"))]

use std::collections::{BTreeMap, BTreeSet};

use classify_wasm::{Linker, Observation, Options, Role};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Value};
use test_support::linking_world::{captured_key, item_key, Step, World};

const SEED: [u8; 32] = *b"dispatch-dash linking seed, 2026";

#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Key {
    Item(String, String, String),
    Captured(String, String),
}

fn key_of(item: &Value) -> Key {
    let (kind, namespace, name) = item_key(item);
    Key::Item(kind, namespace, name)
}

fn observed_key(o: &Observation) -> Key {
    Key::Item(
        o.object.kind.clone(),
        o.object.namespace.clone(),
        o.object.name.clone(),
    )
}

fn classify(doc: &Value) -> Vec<Observation> {
    classify_wasm::classify(&doc.to_string(), Options::default()).expect("the world is valid input")
}

/// What the consumer keeps: the observations by object, as computed
/// incrementally.
struct Incremental {
    linker: Linker<Key>,
    observations: BTreeMap<Key, Observation>,
    /// Sub-snapshots classified and objects classified again, to show the
    /// test is not vacuous.
    batches: usize,
    reclassified: usize,
}

impl Incremental {
    fn affected(&self, keys: &[Key], out: &mut BTreeSet<Key>) {
        for key in keys {
            out.extend(self.linker.affected_by(key));
        }
    }

    fn reclassify(&mut self, world: &World, affected: &BTreeSet<Key>, mode: &str, nodes: bool) {
        for key in affected {
            self.observations.remove(key);
        }
        if affected.is_empty() {
            return;
        }
        let view = self.linker.view_of(affected);
        let items: Vec<&Value> = world
            .items
            .iter()
            .filter(|i| view.contains(&key_of(i)))
            .collect();
        let captured: Vec<&Value> = world
            .captured
            .iter()
            .filter(|c| {
                let (t, p) = captured_key(c);
                view.contains(&Key::Captured(t, p))
            })
            .collect();
        let doc = json!({"kind": "Snapshot", "mode": mode, "nodesReadable": nodes,
            "items": items, "captured": captured});
        self.batches += 1;
        self.reclassified += affected.len();
        for o in classify(&doc) {
            let key = observed_key(&o);
            if affected.contains(&key) {
                self.observations.insert(key, o);
            }
        }
    }
}

fn check_world(seed: u64, mode: &str, nodes: bool, steps: usize) -> Result<usize, TestCaseError> {
    let mut world = World::new(seed, true);
    let mut inc = Incremental {
        linker: Linker::new(),
        observations: BTreeMap::new(),
        batches: 0,
        reclassified: 0,
    };
    let mut observed_total = 0;
    for step_no in 0..steps {
        let step = world.step();
        let keys: Vec<Key> = match &step {
            Step::Upsert(item) | Step::Delete(item) => vec![key_of(item)],
            Step::Capture(entry) => {
                let (t, p) = captured_key(entry);
                vec![Key::Captured(t, p)]
            }
            Step::Drop {
                trainjob_uid,
                pod_uid,
            } => vec![Key::Captured(trainjob_uid.clone(), pod_uid.clone())],
        };
        let mut affected = BTreeSet::new();
        inc.affected(&keys, &mut affected);
        match &step {
            Step::Upsert(item) => inc.linker.upsert(key_of(item), item),
            Step::Delete(item) => {
                prop_assert!(inc.linker.remove(&key_of(item)));
            }
            Step::Capture(entry) => {
                let (t, p) = captured_key(entry);
                inc.linker.upsert_captured(Key::Captured(t, p), entry);
            }
            Step::Drop {
                trainjob_uid,
                pod_uid,
            } => {
                inc.linker
                    .remove(&Key::Captured(trainjob_uid.clone(), pod_uid.clone()));
            }
        }
        inc.affected(&keys, &mut affected);
        inc.reclassify(&world, &affected, mode, nodes);

        let whole: BTreeMap<Key, Observation> = classify(&world.snapshot(mode, nodes))
            .into_iter()
            .map(|o| (observed_key(&o), o))
            .collect();
        prop_assert_eq!(
            &inc.observations,
            &whole,
            "seed {} step {} ({:?})",
            seed,
            step_no,
            step
        );
        // Every observed object is one the linker says can be observed.
        for key in whole.keys() {
            let role = inc.linker.links(key).map(|l| l.role);
            prop_assert!(
                matches!(role, Some(Role::TrainJob | Role::OrphanCandidate)),
                "{:?} observed with role {:?}",
                key,
                role
            );
        }
        observed_total += whole.len();
    }
    prop_assert!(inc.batches > 0);
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
                prop::sample::select(&["plain", "kueue"][..]),
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
