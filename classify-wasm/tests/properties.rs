//! Seeded property tests: classification never panics on arbitrary objects
//! and lists, and its output is sorted and deterministic.
//!
//! The seed is fixed so that a failure reproduces; set `PROPTEST_CASES` to run
//! more cases locally.

#![cfg(not(target_arch = "wasm32"))]

use classify_wasm::{Observation, Options};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::{json, Map, Value};

const SEED: [u8; 32] = *b"dispatch-dash property seed 2026";

fn runner(cases: u32) -> TestRunner {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(cases);
    TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &SEED),
    )
}

/// Every key the engine reads (the engine's own set), and the labels and
/// annotations it reads, so that random trees hit the typed views' fields.
fn keys() -> Vec<&'static str> {
    let f = &classify_wasm::fields::READ_KEYS;
    f.iter()
        .chain(classify_wasm::fields::LABELS_READ.iter())
        .chain(classify_wasm::fields::ANNOTATIONS_READ.iter())
        .copied()
        .collect()
}

const WORDS: &[&str] = &[
    "TrainJob",
    "JobSet",
    "Workload",
    "TrainingRuntime",
    "Pod",
    "Node",
    "List",
    "Snapshot",
    "True",
    "False",
    "Unknown",
    "Complete",
    "Failed",
    "Suspended",
    "Admitted",
    "QuotaReserved",
    "Evicted",
    "Requeued",
    "DisruptionTarget",
    "PodScheduled",
    "Ready",
    "FailedJobs",
    "OOMKilled",
    "Preempted",
    "node",
    "plain",
    "kueue",
    "llm-7",
    "s3",
    "llm-7-s3",
    "u1",
    "u2",
    "1",
    "0",
    "01",
    "2",
    "dispatch.phpboyscout.uk/open",
    "2026-11-29T10:00:00Z",
    "2026-11-29T10:00:00.5+01:00",
    "",
];

fn scalar() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i32>().prop_map(|n| json!(n)),
        (-1e6f64..1e6).prop_map(|f| json!(f)),
        proptest::sample::select(WORDS).prop_map(|w| json!(w)),
        "\\PC{0,8}".prop_map(Value::String),
    ]
}

fn value() -> impl Strategy<Value = Value> {
    scalar().prop_recursive(6, 64, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..5).prop_map(Value::Array),
            proptest::collection::vec((proptest::sample::select(keys()), inner), 0..6).prop_map(
                |entries| {
                    Value::Object(
                        entries
                            .into_iter()
                            .map(|(k, v)| (k.to_string(), v))
                            .collect::<Map<_, _>>(),
                    )
                }
            ),
        ]
    })
}

/// Arbitrary objects, each given a kind the engine reads most of the time.
fn items() -> impl Strategy<Value = Vec<Value>> {
    proptest::collection::vec(
        (value(), proptest::sample::select(&WORDS[..8])).prop_map(|(v, kind)| match v {
            Value::Object(mut m) => {
                m.entry("kind").or_insert(json!(kind));
                Value::Object(m)
            }
            other => other,
        }),
        0..12,
    )
}

fn is_sorted(observations: &[Observation]) -> bool {
    observations.windows(2).all(|w| {
        let key = |o: &Observation| {
            (
                o.object.namespace.clone(),
                o.job.clone(),
                o.object.kind != "TrainJob",
                o.object.kind.clone(),
                o.object.name.clone(),
            )
        };
        key(&w[0]) <= key(&w[1])
    })
}

fn check_input(text: &str) -> Result<(), TestCaseError> {
    let first = classify_wasm::classify(text, Options::default());
    let second = classify_wasm::classify(text, Options::default());
    prop_assert_eq!(&first, &second, "classification is not deterministic");
    if let Ok(observations) = first {
        prop_assert!(is_sorted(&observations), "not sorted: {:?}", observations);
        let explained =
            classify_wasm::explain(text, Options::default()).expect("explain agrees with classify");
        let attempted = classify_wasm::classify_with_attempts(text, Options::default())
            .expect("classify_with_attempts agrees with classify");
        for (a, e) in attempted.iter().zip(&explained) {
            prop_assert_eq!(&a.attempts, &e.trace.attempts);
            // Newest first: (R, A) strictly decreasing, and only the first is current.
            let keys: Vec<(u64, u64)> = a
                .attempts
                .iter()
                .map(|x| {
                    (
                        x.execution.admission + x.execution.restart_attempt,
                        x.execution.admission,
                    )
                })
                .collect();
            prop_assert!(keys.windows(2).all(|w| w[0] > w[1]), "order: {:?}", keys);
            prop_assert!(a.attempts.first().is_none_or(|x| x.current));
            prop_assert!(a.attempts.iter().skip(1).all(|x| !x.current));
            prop_assert_eq!(
                a.attempts.first().map(|x| x.execution),
                e.observation.execution
            );
        }
        let again: Vec<Observation> = explained.into_iter().map(|e| e.observation).collect();
        prop_assert_eq!(&observations, &again);
        let plain: Vec<Observation> = attempted.into_iter().map(|a| a.observation).collect();
        prop_assert_eq!(observations, plain);
    }
    Ok(())
}

#[test]
fn arbitrary_snapshots_never_panic_and_sort() {
    runner(400)
        .run(&(items(), value(), value()), |(items, mode, captured)| {
            let snapshot =
                json!({"kind": "Snapshot", "mode": mode, "items": items, "captured": captured});
            check_input(&snapshot.to_string())
        })
        .unwrap();
}

#[test]
fn arbitrary_lists_and_documents_never_panic() {
    runner(400)
        .run(&(items(), value()), |(items, doc)| {
            check_input(&json!({"kind": "List", "items": items}).to_string())?;
            check_input(&Value::Array(items).to_string())?;
            check_input(&doc.to_string())
        })
        .unwrap();
}

/// Realistic snapshots: TrainJobs with pods, conditions and Workloads drawn
/// from the spec's vocabulary. Each TrainJob gives exactly one observation.
#[test]
fn realistic_snapshots_give_one_observation_per_trainjob() {
    let condition = (
        proptest::sample::select(
            &[
                "Complete",
                "Failed",
                "Suspended",
                "Created",
                "Admitted",
                "QuotaReserved",
                "Evicted",
                "DisruptionTarget",
                "PodScheduled",
                "Ready",
            ][..],
        ),
        proptest::sample::select(&["True", "False", "Unknown"][..]),
        proptest::sample::select(
            &[
                "FailedJobs",
                "DeadlineExceeded",
                "Preempted",
                "PreemptionByScheduler",
                "DeletionByTaintManager",
                "Other",
                "",
            ][..],
        ),
        proptest::option::of(0u32..120),
    )
        .prop_map(|(t, s, r, minute)| {
            let mut c = json!({"type": t, "status": s, "reason": r});
            if let Some(m) = minute {
                c["lastTransitionTime"] =
                    json!(format!("2026-11-29T{:02}:{:02}:00Z", 8 + m / 60, m % 60));
            }
            c
        });
    let conditions = proptest::collection::vec(condition, 0..4);
    let pod = (
        0usize..3,
        0u8..3,
        0u8..3,
        conditions.clone(),
        proptest::option::of((0i32..140, 0u32..60)),
        any::<bool>(),
    );
    let job = (
        conditions.clone(),
        proptest::collection::vec(pod, 0..5),
        any::<bool>(),
        proptest::option::of(conditions),
        proptest::option::of("[0-9]{1,2}"),
    );
    let strategy = (
        proptest::collection::vec(job, 1..6),
        any::<bool>(),
        proptest::option::of(any::<bool>()),
    );
    runner(300)
        .run(&strategy, |(jobs, kueue, nodes)| {
            let mut items = Vec::new();
            let mut captured = Vec::new();
            for (j, (conds, pods, suspend, workload, hold)) in jobs.iter().enumerate() {
                let name = format!("job-{j}-s1");
                let uid = format!("uid-{j}");
                items.push(json!({"kind": "TrainJob", "metadata": {"name": name, "namespace": "ns", "uid": uid,
                    "labels": {"dispatch.phpboyscout.uk/job-id": format!("job-{j}"), "dispatch.phpboyscout.uk/submission": "s1"},
                    "annotations": {"dispatch.phpboyscout.uk/hold-instance": hold}},
                    "spec": {"suspend": suspend}, "status": {"conditions": conds}}));
                if let Some(wconds) = workload {
                    items.push(json!({"kind": "Workload", "metadata": {"name": format!("w-{j}"), "namespace": "ns", "uid": format!("w-{j}"),
                        "labels": {"kueue.x-k8s.io/job-uid": uid}}, "spec": {"active": !suspend}, "status": {"conditions": wconds}}));
                }
                for (p, (node, a, r, pconds, term, is_captured)) in pods.iter().enumerate() {
                    let mut pod = json!({"kind": "Pod", "metadata": {"name": format!("{name}-node-0-{p}"), "namespace": "ns", "uid": format!("p-{j}-{p}"),
                        "labels": {"jobset.sigs.k8s.io/jobset-name": name, "jobset.sigs.k8s.io/restart-attempt": r.to_string(), "dispatch.phpboyscout.uk/job-id": format!("job-{j}")},
                        "annotations": {"dispatch.phpboyscout.uk/admission": a.to_string()}},
                        "spec": {"nodeName": format!("n{node}")}, "status": {"phase": "Running", "conditions": pconds}});
                    if let Some((code, minute)) = term {
                        pod["status"]["containerStatuses"] = json!([{"name": "node", "state": {"terminated": {"exitCode": code, "reason": if *code == 137 { "OOMKilled" } else { "Error" }, "finishedAt": format!("2026-11-29T09:{minute:02}:00Z")}}}]);
                    }
                    if *is_captured {
                        captured.push(json!({"trainJobUID": uid, "pod": pod}));
                    } else {
                        items.push(pod);
                    }
                }
            }
            items.push(json!({"kind": "Node", "metadata": {"name": "n1"}, "status": {"conditions": [{"type": "Ready", "status": "False", "reason": "KubeletDown"}]}}));
            let mut snapshot = json!({"kind": "Snapshot", "mode": if kueue { "kueue" } else { "plain" }, "items": items, "captured": captured});
            if let Some(n) = nodes {
                snapshot["nodesReadable"] = json!(n);
            }
            let text = snapshot.to_string();
            check_input(&text)?;
            let observations = classify_wasm::classify(&text, Options::default()).expect("a well-formed snapshot classifies");
            // JSON text is YAML too: read as YAML (a comment first), where the
            // parser builds every key, it must classify the same.
            let as_yaml = classify_wasm::classify(&format!("# yaml\n{text}"), Options::default());
            prop_assert_eq!(as_yaml.as_ref(), Ok(&observations));
            // And that YAML, converted back to JSON, still classifies the same.
            let converted = classify_wasm::dump_to_json(&format!("# yaml\n{text}")).expect("converts");
            let reclassified = classify_wasm::classify(&converted, Options::default());
            prop_assert_eq!(reclassified.as_ref(), Ok(&observations));
            let trainjobs = observations.iter().filter(|o| o.object.kind == "TrainJob").count();
            prop_assert_eq!(trainjobs, jobs.len());
            for o in &observations {
                prop_assert_eq!(o.held, o.hold_instance.is_some());
                if o.object.kind != "TrainJob" {
                    prop_assert!(o.foreign);
                }
            }
            Ok(())
        })
        .unwrap();
}
