//! `dispatch-dash classify` as a user runs it: the real binary, real files,
//! standard input, and the bad input a careless user would give it.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_dispatch-dash"))
}

use test_support::shared_dir as shared;

fn classify_file(path: &Path, args: &[&str]) -> Output {
    bin()
        .arg("classify")
        .arg(path)
        .args(args)
        .output()
        .expect("the binary runs")
}

fn classify_stdin(input: &[u8], args: &[&str]) -> Output {
    let mut child = bin()
        .arg("classify")
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut stdin = child.stdin.take().expect("stdin");
    let input = input.to_vec();
    let writer = std::thread::spawn(move || {
        // The binary may stop reading early on an error; a broken pipe is fine.
        let _ = stdin.write_all(&input);
    });
    let out = child.wait_with_output().expect("the binary finishes");
    writer.join().expect("writer thread");
    out
}

fn temp_file(name: &str, bytes: &[u8]) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("dispatch-dash-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(name);
    std::fs::write(&path, bytes).expect("temp file");
    path
}

/// Exit status 2, nothing on stdout, and exactly one line on stderr.
fn assert_bad_input(out: &Output, want_prefix: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "stderr: {stderr}");
    assert!(
        out.stdout.is_empty(),
        "stdout: {}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    assert!(
        stderr.starts_with(want_prefix),
        "want {want_prefix:?}, got {stderr:?}"
    );
}

#[test]
fn json_output_is_the_golden_expectation() {
    let mut checked = 0;
    for entry in std::fs::read_dir(shared().join("cases")).expect("shared cases") {
        let path = entry.expect("entry").path();
        let case: serde_json::Value =
            serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        let snapshot = temp_file("snapshot.json", case["snapshot"].to_string().as_bytes());
        let out = classify_file(&snapshot, &["--output", "json"]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let got: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
        assert_eq!(got, case["expected"], "{}", path.display());
        checked += 1;
    }
    assert!(checked >= 20);
}

#[test]
fn yaml_dumps_from_a_file_and_from_stdin() {
    let dump = shared().join("dumps/kueue-list.yaml");
    let expected: serde_json::Value = serde_json::from_slice(
        &std::fs::read(shared().join("dumps/kueue-list.expected.json")).unwrap(),
    )
    .unwrap();
    let from_file = classify_file(&dump, &["-o", "json"]);
    assert!(from_file.status.success());
    assert_eq!(
        serde_json::from_slice::<serde_json::Value>(&from_file.stdout).unwrap(),
        expected
    );
    let from_stdin = classify_stdin(&std::fs::read(&dump).unwrap(), &["-", "-o", "json"]);
    assert_eq!(from_stdin.stdout, from_file.stdout);
}

#[test]
fn table_is_aligned_and_names_every_column() {
    let out = classify_file(&shared().join("dumps/kueue-list.yaml"), &[]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    let header = lines.next().expect("a header");
    for column in [
        "NAMESPACE",
        "JOB",
        "SUBMISSION",
        "OBJECT",
        "STATE",
        "CAUSE",
        "HELD",
        "FOREIGN",
        "DETAIL",
    ] {
        assert!(header.contains(column), "{header}");
    }
    let row = lines.next().expect("a row");
    assert!(row.starts_with("team-a"), "{row}");
    // Aligned: every column starts where its header does.
    let at = header.find("STATE").unwrap();
    assert_eq!(&row[at..at + 5], "ended");
}

#[test]
fn explain_prints_the_deciding_rule_and_the_facts() {
    let case: serde_json::Value = serde_json::from_slice(
        &std::fs::read(shared().join("cases/failed-oom-earliest.json")).unwrap(),
    )
    .unwrap();
    let out = classify_stdin(
        case["snapshot"].to_string().as_bytes(),
        &["--output", "explain"],
    );
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("decided by: Rule 2, Failed: state ended, cause out-of-memory"),
        "{text}"
    );
    assert!(text.contains("rule 1 Complete: not matched"), "{text}");
    assert!(text.contains("rule 3 Gated: not reached"), "{text}");
    assert!(
        text.contains("=> 2026-11-29T10:10:00Z llm-7-s3-node-0-0-x9k2p"),
        "{text}"
    );
}

/// `--output explain-json` is the explanation values the wasm `explain`
/// returns (the engine's serde JSON), attempts included, and `--output
/// explain` is exactly the engine's rendering of them, the text the golden
/// `expectedExplain` cases pin.
#[test]
fn explain_json_is_the_engines_explanations_and_explain_is_their_text() {
    let case: serde_json::Value = serde_json::from_slice(
        &std::fs::read(shared().join("cases/execution-selection.json")).unwrap(),
    )
    .unwrap();
    let input = case["snapshot"].to_string();
    let engine = classify_wasm::explain(&input, Default::default()).unwrap();

    let out = classify_stdin(input.as_bytes(), &["--output", "explain-json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON output");
    assert_eq!(printed, serde_json::to_value(&engine).unwrap());
    let typed: Vec<classify_wasm::Explanation> = serde_json::from_value(printed.clone()).unwrap();
    assert_eq!(typed, engine);
    // Scripts read the attempts from it: each TrainJob's executions, one current.
    let attempts = printed[0]["trace"]["attempts"]
        .as_array()
        .expect("attempts");
    assert!(attempts.len() > 1, "{attempts:?}");
    assert_eq!(
        attempts.iter().filter(|a| a["current"] == true).count(),
        1,
        "{attempts:?}"
    );
    assert_eq!(attempts[0]["execution"], case["expected"][0]["execution"]);

    let text = classify_stdin(input.as_bytes(), &["--output", "explain"]);
    assert!(text.status.success());
    assert_eq!(
        String::from_utf8(text.stdout).unwrap(),
        classify_wasm::explanations_text(&engine)
    );

    let bad = classify_stdin(b"[\"a\"]", &["--output", "explain-json"]);
    assert_bad_input(&bad, "error: <stdin>:1:2: ");
}

/// The repo's case of issue 10's job, restarted twice (three attempts,
/// each with its own cause).
fn restarted_job_case() -> serde_json::Value {
    let path = test_support::engine_cases_dir().join("attempts-oom-node-lost-exit.json");
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

/// `--output attempts-json` is the values of the dashboard stream's `rows`
/// event: each observation, in the engine's order, with its attempts, and
/// the attempts are the explanation's.
#[test]
fn attempts_json_is_the_rows_events_values() {
    let case = restarted_job_case();
    let input = case["snapshot"].to_string();
    let out = classify_stdin(input.as_bytes(), &["--output", "attempts-json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let printed: Vec<classify_wasm::Attempted> =
        serde_json::from_slice(&out.stdout).expect("JSON output");
    let rows: Vec<classify_wasm::Attempted> = serde_json::from_str(
        &classify_wasm::classified_rows_json(&input, Default::default()).unwrap(),
    )
    .unwrap();
    assert_eq!(printed, rows);
    let observations: Vec<_> = printed.iter().map(|r| r.observation.clone()).collect();
    assert_eq!(
        serde_json::to_value(&observations).unwrap(),
        case["expected"]
    );
    let explained = classify_wasm::explain(&input, Default::default()).unwrap();
    assert_eq!(printed[0].attempts, explained[0].trace.attempts);
    assert!(printed[0].attempts.len() > 2, "{:?}", printed[0].attempts);

    let bad = classify_stdin(b"[\"a\"]", &["-o", "attempts-json"]);
    assert_bad_input(&bad, "error: <stdin>:1:2: ");
}

/// Issue 10's job restarted twice: all three causes, newest first, in both
/// explanation outputs.
#[test]
fn a_job_restarted_twice_shows_every_attempts_cause() {
    let case = restarted_job_case();
    let input = case["snapshot"].to_string();
    let out = classify_stdin(input.as_bytes(), &["-o", "explain-json"]);
    assert!(out.status.success());
    let printed: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed[0]["observation"], case["expected"][0]);
    let causes: Vec<(serde_json::Value, bool, &str, &str)> = printed[0]["trace"]["attempts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| {
            (
                a["execution"]["restartAttempt"].clone(),
                a["current"] == true,
                a["cause"]["kind"].as_str().unwrap_or(""),
                a["cause"]["provenance"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        causes,
        [
            (2.into(), true, "non-zero-exit", "pod"),
            (1.into(), false, "node-lost", "captured-pod"),
            (0.into(), false, "out-of-memory", "captured-pod"),
        ]
    );
    let text = classify_stdin(input.as_bytes(), &["-o", "explain"]);
    let text = String::from_utf8(text.stdout).unwrap();
    let section: Vec<&str> = text
        .lines()
        .skip_while(|l| *l != "attempts (newest first):")
        .skip(1)
        .take_while(|l| l.starts_with("  "))
        .collect();
    assert_eq!(section.len(), 3, "{text}");
    assert!(
        section[0].starts_with(
            "  * A=1 J=2 current, pods train-1-s1-node-0-0-c2: non-zero-exit, from pod: "
        ),
        "{text}"
    );
    assert!(
        section[1].starts_with(
            "    A=1 J=1, pods train-1-s1-node-0-0-b1: node-lost, from captured-pod: "
        ),
        "{text}"
    );
    assert!(
        section[2].starts_with(
            "    A=1 J=0, pods train-1-s1-node-0-0-a0: out-of-memory, from captured-pod: "
        ),
        "{text}"
    );
}

#[test]
fn overrides_change_the_reading() {
    let case: serde_json::Value = serde_json::from_slice(
        &std::fs::read(shared().join("cases/running-nodes-not-readable.json")).unwrap(),
    )
    .unwrap();
    let input = case["snapshot"].to_string();
    let readable = classify_stdin(
        input.as_bytes(),
        &["-o", "json", "--nodes-readable", "true"],
    );
    let got: serde_json::Value = serde_json::from_slice(&readable.stdout).unwrap();
    assert_eq!(got[0]["cause"]["kind"], "node-lost");
    let bad_mode = classify_stdin(input.as_bytes(), &["--mode", "batch"]);
    assert_eq!(bad_mode.status.code(), Some(2));
}

#[test]
fn bad_input_is_one_line_with_line_and_column() {
    let garbage: Vec<u8> = (0..4096u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 24) as u8)
        .collect();
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        ("garbage.bin", garbage, "error: "),
        ("binary.bin", b"\x00\x01\xff\xfe".to_vec(), "error: "),
        (
            "truncated.json",
            br#"{"kind":"List","items":[{"kind":"Pod","metadata":{"name":"#.to_vec(),
            "error: ",
        ),
        (
            "tab.yaml",
            b"kind: List\nitems:\n- kind: Pod\n  metadata:\n\tname: x\n".to_vec(),
            "error: ",
        ),
        ("empty.yaml", Vec::new(), "error: "),
        ("strings.json", br#"["a", "b"]"#.to_vec(), "error: "),
        ("deep.json", "[".repeat(100_000).into_bytes(), "error: "),
        ("deep.yaml", "- ".repeat(100_000).into_bytes(), "error: "),
    ];
    for (name, bytes, _) in &cases {
        let path = temp_file(name, bytes);
        let out = classify_file(&path, &[]);
        assert_bad_input(&out, &format!("error: {}:", path.display()));
        // `<source>:<line>:<column>: <what>`: two numbers after the path.
        let stderr = String::from_utf8_lossy(&out.stderr);
        let rest = &stderr[format!("error: {}:", path.display()).len()..];
        let mut parts = rest.splitn(3, ':');
        let line: usize = parts
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("a line in {stderr}"));
        let column: usize = parts
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("a column in {stderr}"));
        assert!(line >= 1 && column >= 1, "{stderr}");
        assert!(parts.next().is_some_and(|what| what.len() > 2), "{stderr}");
    }
    let empty = classify_stdin(b"", &[]);
    assert_bad_input(&empty, "error: <stdin>:1:1: no document");
    let tab = classify_file(&temp_file("tab2.yaml", &cases[3].1), &[]);
    assert!(String::from_utf8_lossy(&tab.stderr).contains(":5:2: tabs disallowed"));
    let strings = classify_file(&temp_file("strings2.json", &cases[5].1), &[]);
    assert!(String::from_utf8_lossy(&strings.stderr)
        .ends_with(":1:2: an item must be an object, found a string\n"));
}

#[test]
fn a_200_megabyte_file_cut_short_is_an_error_at_its_end() {
    let line = format!(
        "{{\"kind\":\"ConfigMap\",\"data\":{{\"blob\":\"{}\"}}}},\n",
        "x".repeat(1000)
    );
    let lines = 200_000_000 / line.len();
    let mut bytes = Vec::with_capacity(lines * line.len() + 2);
    bytes.extend_from_slice(b"[\n");
    for _ in 0..lines {
        bytes.extend_from_slice(line.as_bytes());
    }
    bytes.truncate(bytes.len() - 2); // drop the last ",\n": the closing `]` is missing
    let path = temp_file("big.json", &bytes);
    drop(bytes);
    let out = classify_file(&path, &[]);
    let _ = std::fs::remove_file(&path);
    assert_bad_input(
        &out,
        &format!(
            "error: {}:{}:{}: expected ',' or ']' in an array",
            path.display(),
            lines + 1,
            line.len() - 1
        ),
    );
}

#[test]
fn missing_file_is_an_error_not_a_panic() {
    let out = classify_file(Path::new("/nonexistent/dump.yaml"), &[]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("error: /nonexistent/dump.yaml: "));
}

#[test]
fn the_example_dump_in_the_repo_classifies() {
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/team-a.yaml");
    let out = classify_file(&example, &["-o", "json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let observations: Vec<classify_wasm::Observation> =
        serde_json::from_slice(&out.stdout).unwrap();
    assert!(observations.iter().any(|o| o.object.kind == "TrainJob"));
    assert!(
        observations
            .iter()
            .any(|o| o.object.kind != "TrainJob" && o.foreign),
        "the example shows orphans"
    );
}

/// A dump big enough to be read and parsed by two threads (over 4 MB, one
/// item per line) prints what the engine, on one thread, classifies it as;
/// broken in its second half, it prints the engine's error.
#[test]
fn a_big_dump_read_on_two_threads_is_what_one_thread_reads() {
    let mut items = Vec::new();
    for job in 0..1_500 {
        items.push(format!(
            r#"{{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{{"name":"llm-{job}-s1","namespace":"team-a","uid":"tj-{job}","labels":{{"dispatch.phpboyscout.uk/job-id":"llm-{job}","dispatch.phpboyscout.uk/submission":"s1"}}}},"spec":{{}},"status":{{"conditions":[]}}}}"#
        ));
        for rank in 0..8 {
            let phase = if (job + rank) % 13 == 0 {
                "Failed"
            } else {
                "Running"
            };
            items.push(format!(
                r#"{{"apiVersion":"v1","kind":"Pod","metadata":{{"name":"llm-{job}-s1-node-0-{rank}","namespace":"team-a","uid":"pod-{job}-{rank}","labels":{{"jobset.sigs.k8s.io/jobset-name":"llm-{job}-s1","dispatch.phpboyscout.uk/job-id":"llm-{job}","dispatch.phpboyscout.uk/submission":"s1","jobset.sigs.k8s.io/restart-attempt":"0"}}}},"spec":{{"nodeName":"n{rank}","containers":[{{"name":"node","image":"{}"}}]}},"status":{{"phase":"{phase}"}}}}"#,
                "x".repeat(300)
            ));
        }
    }
    let text = format!(
        "{{\"apiVersion\":\"v1\",\"items\":[\n{}\n],\"kind\":\"List\"}}\n",
        items.join(",\n")
    );
    assert!(text.len() > 4 << 20, "{} bytes", text.len());
    let path = temp_file("two-threads.json", text.as_bytes());
    let out = classify_file(&path, &["-o", "json"]);
    let engine = classify_wasm::classify(&text, Default::default()).unwrap();
    assert_eq!(engine.len(), 1_500);
    let mut want = serde_json::to_string_pretty(&engine).unwrap();
    want.push('\n');
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.stdout == want.as_bytes(),
        "the CLI's observations differ"
    );

    let _ = std::fs::remove_file(&path);

    // A wrong type (found reading the views) and a syntax error (found
    // parsing), both in the second half.
    for (from, to) in [
        (
            r#""name":"llm-1400-s1-node-0-3""#,
            r#""name":["llm-1400-s1-node-0-3"]"#,
        ),
        (r#""uid":"pod-1400-5""#, r#""uid":"pod-1400-5" "x""#),
    ] {
        let broken = text.replacen(from, to, 1);
        assert_ne!(broken, text);
        let error = classify_wasm::classify(&broken, Default::default()).unwrap_err();
        let path = temp_file("two-threads-broken.json", broken.as_bytes());
        let out = classify_file(&path, &[]);
        let _ = std::fs::remove_file(&path);
        assert_bad_input(&out, &format!("error: {}:{error}\n", path.display()));
    }
}

/// A dump with Kueue's queues: `explain` adds each queued TrainJob's
/// `queue:` section, and `explain-json` its facts in `queue` beside the
/// observation, both exactly the engine's.
#[test]
fn explanations_carry_the_queue_facts_of_a_dump_with_queues() {
    let case: serde_json::Value = serde_json::from_slice(
        &std::fs::read(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../classify-wasm/queue-cases/blocked-on-two-resources-in-two-flavors.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let input = case["snapshot"].to_string();
    let visibility = classify_wasm::queue::Visibility::default();
    let facts = classify_wasm::queue::facts_in_snapshot(&input, &visibility).unwrap();
    let explained = classify_wasm::explain(&input, Default::default()).unwrap();

    let out = classify_stdin(input.as_bytes(), &["-o", "explain"]);
    assert!(out.status.success());
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text,
        classify_wasm::queue::explanations_with_queues_text(&explained, &facts)
    );
    assert!(
        text.contains(
            "queue:\n  LocalQueue team-a/main, ClusterQueue gpu-cq\n  wait: quota\n  needs 32 \
             nvidia.com/gpu and 64 cpu;"
        ),
        "{text}"
    );

    let out = classify_stdin(input.as_bytes(), &["-o", "explain-json"]);
    assert!(out.status.success());
    let printed: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(printed.len(), explained.len());
    let job = printed
        .iter()
        .find(|e| e["observation"]["object"]["kind"] == "TrainJob")
        .unwrap();
    assert_eq!(job["queue"], serde_json::to_value(&facts[0].queue).unwrap());
    assert_eq!(job["queue"]["wait"], "quota");
    assert_eq!(job["queue"]["neverFits"], false);
    // Nothing else in the explanation changed.
    let mut bare = job.clone();
    bare.as_object_mut().unwrap().remove("queue");
    let engine = explained
        .iter()
        .find(|e| e.observation.object.kind == "TrainJob")
        .unwrap();
    assert_eq!(bare, serde_json::to_value(engine).unwrap());
}
