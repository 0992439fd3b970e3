//! Every case file, natively: `../shared/cases`, `../shared/dumps` and this
//! crate's own `cases/`, read from disk at test time.
//!
//! `UPDATE_EXPECT=1 cargo test -p classify-wasm` first rewrites the
//! `expectedExplain` of every own case that has one from the engine's output
//! (review the diff before committing), then checks as usual.

#![cfg(not(target_arch = "wasm32"))]

use test_support::{harness, read_case_folder as read_folder, shared_dir as shared};

use std::path::Path;

fn native(
    input: &str,
    options: classify_wasm::Options,
) -> Result<Vec<classify_wasm::Observation>, String> {
    classify_wasm::classify(input, options).map_err(|e| e.to_string())
}

fn native_explain(
    input: &str,
    options: classify_wasm::Options,
) -> Result<Vec<classify_wasm::Explanation>, String> {
    classify_wasm::explain(input, options).map_err(|e| e.to_string())
}

/// The bless mode: each case file of `dir` that has an `expectedExplain` gets
/// the text the engine renders now, and nothing else in it changes.
fn bless_explanations(dir: &Path) {
    let files = read_folder(dir);
    let cases = harness::cases_from_files(&files).unwrap_or_else(|e| panic!("{e}"));
    for (case, (name, text)) in cases.iter().zip(&files) {
        assert_eq!(&case.name, name, "cases follow the files");
        if case.expected_explain.is_none() {
            continue;
        }
        let explained = native_explain(&case.input, case.options)
            .unwrap_or_else(|e| panic!("{name}: explain failed: {e}"));
        let rendered = classify_wasm::explanations_text(&explained);
        let rewritten = harness::with_expected_explain(text, &rendered)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .unwrap_or_else(|| panic!("{name}: expectedExplain is not a top-level key"));
        if &rewritten != text {
            std::fs::write(dir.join(name), rewritten).unwrap_or_else(|e| panic!("{name}: {e}"));
            eprintln!("UPDATE_EXPECT: rewrote the expectedExplain of {name}");
        }
    }
}

fn run_folder(dir: &Path, at_least: usize) {
    let files = read_folder(dir);
    let cases = harness::cases_from_files(&files).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        cases.len() >= at_least,
        "{}: expected at least {at_least} cases, found {}",
        dir.display(),
        cases.len()
    );
    let failures = harness::check_all(&cases, native, native_explain);
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn shared_golden_cases() {
    run_folder(&shared().join("cases"), 20);
}

#[test]
fn shared_kubectl_dumps() {
    run_folder(&shared().join("dumps"), 2);
}

#[test]
fn own_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("cases");
    if std::env::var_os("UPDATE_EXPECT").is_some_and(|v| v == "1") {
        bless_explanations(&dir);
    }
    run_folder(&dir, 1);
}

/// Golden explanations exist in number, and for every id the trace can emit.
#[test]
fn golden_explanations_cover_every_rule() {
    let files = read_folder(&Path::new(env!("CARGO_MANIFEST_DIR")).join("cases"));
    let cases = harness::cases_from_files(&files).unwrap_or_else(|e| panic!("{e}"));
    let mut ids = std::collections::BTreeSet::new();
    let mut pinned = 0;
    for case in cases.iter().filter(|c| c.expected_explain.is_some()) {
        pinned += 1;
        for e in native_explain(&case.input, case.options).unwrap() {
            let t = &e.trace;
            ids.extend(
                t.rules
                    .iter()
                    .filter(|r| r.verdict == classify_wasm::Verdict::Matched)
                    .map(|r| format!("rule {}", r.id)),
            );
            ids.extend(t.cause.iter().map(|c| format!("cause {}", c.id)));
            ids.extend(t.foreign.iter().chain(&t.situation).map(|n| n.rule.clone()));
            if t.attempts.len() > 1 {
                ids.insert("several attempts".to_string());
            }
        }
    }
    assert!(pinned >= 15, "{pinned} golden explanations");
    let mut want: Vec<String> = (1..=6).map(|n| format!("rule {n}")).collect();
    want.extend(["JobSet", "TrainingRuntime", "Pod"].map(|k| format!("rule orphan/{k}")));
    want.extend(
        [
            "1",
            "2/pod-evidence",
            "2/no-evidence",
            "2/DeadlineExceeded",
            "2/TrainingRuntimeNotSupported",
            "2/other",
            "none",
            "6a",
            "6b",
            "6c",
            "6d",
            "unknown-condition",
        ]
        .map(|id| format!("cause {id}")),
    );
    want.extend((1..=5).map(|n| format!("F{n}")));
    want.extend((1..=11).map(|n| format!("S{n}")));
    want.push("several attempts".to_string());
    let missing: Vec<&String> = want.iter().filter(|id| !ids.contains(*id)).collect();
    assert!(
        missing.is_empty(),
        "no golden explanation shows {missing:?}"
    );
}

/// The bless step rewrites the one string and keeps every other byte.
#[test]
fn bless_rewrites_only_the_expected_explain() {
    let file = "{\n  \"name\": \"x\",\n  \"snapshot\": {\"expectedExplain\": \"inner\"},\n  \"expectedExplain\": \"old\\ntext\",\n  \"expected\": []\n}\n";
    let rewritten = harness::with_expected_explain(file, "new \"text\"\n")
        .unwrap()
        .unwrap();
    assert_eq!(
        rewritten,
        "{\n  \"name\": \"x\",\n  \"snapshot\": {\"expectedExplain\": \"inner\"},\n  \"expectedExplain\": \"new \\\"text\\\"\\n\",\n  \"expected\": []\n}\n"
    );
    assert_eq!(
        harness::with_expected_explain("{\"name\": \"x\"}", "t").unwrap(),
        None
    );
}

/// The explanation's observation is the observation.
#[test]
fn explain_agrees_with_classify() {
    for (name, text) in read_folder(&shared().join("cases")) {
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let input = doc["snapshot"].to_string();
        let plain = classify_wasm::classify(&input, Default::default()).unwrap();
        let explained = classify_wasm::explain(&input, Default::default()).unwrap();
        let from_explain: Vec<_> = explained.into_iter().map(|e| e.observation).collect();
        assert_eq!(plain, from_explain, "{name}");
    }
}

/// A YAML dump converted to JSON classifies exactly as the YAML did: every
/// YAML input among the case files, own and shared.
#[test]
fn yaml_dumps_convert_to_json_that_classifies_the_same() {
    let mut inputs: Vec<(String, String)> = read_folder(&shared().join("dumps"))
        .into_iter()
        .filter(|(name, _)| name.ends_with(".yaml"))
        .collect();
    for (name, text) in read_folder(&Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")) {
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        if let Some(input) = doc["input"]
            .as_str()
            .filter(|i| !i.trim_start().starts_with(['{', '[']))
        {
            inputs.push((name, input.to_string()));
        }
    }
    assert!(inputs.len() >= 4, "{} YAML inputs", inputs.len());
    for (name, yaml) in inputs {
        let from_yaml = classify_wasm::classify(&yaml, Default::default());
        match classify_wasm::dump_to_json(&yaml) {
            Ok(json) => {
                assert!(json.starts_with('{'), "{name}: {json}");
                assert_eq!(
                    classify_wasm::classify(&json, Default::default()),
                    from_yaml,
                    "{name}"
                );
            }
            // Only input that is no dump at all fails to convert, with the same error.
            Err(e) => assert_eq!(from_yaml, Err(e), "{name}"),
        }
    }
}

fn own_case_explained(name: &str) -> Vec<classify_wasm::Explanation> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("cases")
        .join(name);
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    classify_wasm::explain(&doc["snapshot"].to_string(), Default::default()).unwrap()
}

/// Issue 10's done-when job: three attempts, newest first, each with its own
/// cause in the observation's form, as the JSON the browser and scripts read.
#[test]
fn attempts_list_every_execution_newest_first_with_its_own_cause() {
    let explained = own_case_explained("attempts-oom-node-lost-exit.json");
    let attempts = serde_json::to_value(&explained[0].trace.attempts).unwrap();
    assert_eq!(
        attempts,
        serde_json::json!([
            {
                "execution": { "admission": 1, "restartAttempt": 2 },
                "current": true,
                "cause": {
                    "kind": "non-zero-exit",
                    "provenance": "pod",
                    "detail": "pod train-1-s1-node-0-0-c2: node container terminated: Error, exit code 1"
                },
                "pods": ["train-1-s1-node-0-0-c2"]
            },
            {
                "execution": { "admission": 1, "restartAttempt": 1 },
                "current": false,
                "cause": {
                    "kind": "node-lost",
                    "provenance": "captured-pod",
                    "detail": "pod train-1-s1-node-0-0-b1: DisruptionTarget: DeletionByTaintManager: Taint manager: deleting due to NoExecute taint; other ranks: train-1-s1-node-0-0-b1 non-zero-exit (node container terminated: Error, exit code 143)"
                },
                "pods": ["train-1-s1-node-0-0-b1"]
            },
            {
                "execution": { "admission": 1, "restartAttempt": 0 },
                "current": false,
                "cause": {
                    "kind": "out-of-memory",
                    "provenance": "captured-pod",
                    "detail": "pod train-1-s1-node-0-0-a0: node container terminated: OOMKilled, exit code 137"
                },
                "pods": ["train-1-s1-node-0-0-a0"]
            }
        ])
    );
    // The current attempt's cause is the observation's cause.
    assert_eq!(
        explained[0].trace.attempts[0].cause.as_ref(),
        Some(&explained[0].observation.cause)
    );
}

/// R ties go to the higher A, in the order and in the current mark; an
/// attempt without a finding has a null cause.
#[test]
fn attempts_break_r_ties_by_admission() {
    let explained = own_case_explained("attempts-readmission-ties.json");
    let trace = &explained[0].trace;
    let order: Vec<(u64, u64, bool, bool)> = trace
        .attempts
        .iter()
        .map(|a| {
            (
                a.execution.admission,
                a.execution.restart_attempt,
                a.current,
                a.cause.is_some(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            (2, 1, true, false),
            (1, 2, false, true),
            (2, 0, false, true),
            (1, 1, false, true),
            (1, 0, false, false),
        ]
    );
    assert_eq!(
        Some(trace.attempts[0].execution),
        explained[0].observation.execution
    );
}

/// No counted pod (execution null) and orphans: no attempts at all.
#[test]
fn no_attempts_without_a_counted_pod_or_for_an_orphan() {
    for name in [
        "attempts-none-without-counters.json",
        "explain-orphans.json",
    ] {
        let explained = own_case_explained(name);
        assert!(!explained.is_empty(), "{name}");
        for e in explained {
            assert_eq!(e.observation.execution, None, "{name}");
            assert!(
                e.trace.attempts.is_empty(),
                "{name}: {:?}",
                e.trace.attempts
            );
        }
    }
}

/// `classify_with_attempts` is `classify` plus the trace's attempts, for
/// every case that classifies (shared and own).
#[test]
fn classify_with_attempts_is_classify_plus_the_traces_attempts() {
    let mut inputs = Vec::new();
    for dir in [
        shared().join("cases"),
        Path::new(env!("CARGO_MANIFEST_DIR")).join("cases"),
    ] {
        let files = read_folder(&dir);
        let cases = harness::cases_from_files(&files).unwrap_or_else(|e| panic!("{e}"));
        inputs.extend(
            cases
                .into_iter()
                .filter(|c| matches!(c.want, harness::Want::Observations(_))),
        );
    }
    assert!(inputs.len() >= 40, "{} inputs", inputs.len());
    let mut several = 0;
    for case in inputs {
        let attempted = classify_wasm::classify_with_attempts(&case.input, case.options).unwrap();
        let plain = classify_wasm::classify(&case.input, case.options).unwrap();
        let explained = classify_wasm::explain(&case.input, case.options).unwrap();
        assert_eq!(attempted.len(), plain.len(), "{}", case.name);
        for ((a, o), e) in attempted.iter().zip(&plain).zip(&explained) {
            assert_eq!(&a.observation, o, "{}", case.name);
            assert_eq!(a.attempts, e.trace.attempts, "{}", case.name);
            several += usize::from(a.attempts.len() > 1);
        }
    }
    assert!(several >= 3, "{several} objects with several attempts");
}

/// Every shared case's items, ten times over, each copy in namespaces and
/// with UIDs of its own (so that no copy is read as a duplicate of
/// another, and each reads only itself): a List of 260 TrainJobs, about
/// 800 objects and many shapes, big enough to be classified on two threads.
fn every_case_ten_times() -> String {
    fn rename(value: &mut serde_json::Value, uids: &[String], copy: &str) {
        match value {
            serde_json::Value::String(s) if uids.contains(s) => *s = format!("{s}-{copy}"),
            serde_json::Value::Array(items) => {
                items.iter_mut().for_each(|v| rename(v, uids, copy));
            }
            serde_json::Value::Object(entries) => {
                entries.values_mut().for_each(|v| rename(v, uids, copy));
            }
            _ => {}
        }
    }
    let mut items = Vec::new();
    for (case_index, (name, text)) in read_folder(&shared().join("cases")).iter().enumerate() {
        let case: serde_json::Value = serde_json::from_str(text).expect(name);
        let snapshot = &case["snapshot"];
        let case_items = snapshot
            .get("items")
            .unwrap_or(snapshot)
            .as_array()
            .cloned()
            .unwrap_or_default();
        let uids: Vec<String> = case_items
            .iter()
            .filter_map(|item| item["metadata"]["uid"].as_str().map(str::to_string))
            .collect();
        for copy in 0..10 {
            let copy = format!("case{case_index}-copy{copy}");
            for item in &case_items {
                let mut item = item.clone();
                rename(&mut item, &uids, &copy);
                if let Some(ns) = item["metadata"]["namespace"].as_str() {
                    item["metadata"]["namespace"] = format!("{ns}-{copy}").into();
                }
                items.push(item);
            }
        }
    }
    serde_json::json!({"kind": "List", "items": items}).to_string()
}

/// Classified, explained and listed with attempts by the CLI's two
/// threads, the copies give exactly what one thread gives: the same
/// observations in the same order, pods read by the second half's
/// TrainJobs not reported as orphans.
#[test]
fn two_threads_classify_what_one_classifies() {
    let text = every_case_ten_times();
    let options = classify_wasm::Options::default();
    let one = classify_wasm::Parsed::new(&text).unwrap();
    let two = classify_wasm::Parsed::new_on_two_threads(&text).unwrap();
    let observations = one.classify(options).unwrap();
    let trainjobs = observations
        .iter()
        .filter(|o| o.object.kind == "TrainJob" && !o.foreign)
        .count();
    assert!(trainjobs >= 250, "{trainjobs} TrainJobs");
    assert!(observations.iter().any(|o| o.foreign), "orphans too");
    assert_eq!(observations, two.classify(options).unwrap());
    assert_eq!(one.explain(options).unwrap(), two.explain(options).unwrap());
    assert_eq!(
        one.classify_with_attempts(options).unwrap(),
        two.classify_with_attempts(options).unwrap()
    );
}
