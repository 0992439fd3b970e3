//! The queue facts' golden cases: `classify-wasm/queue-cases/*.json`, each
//! a `snapshot`, an optional `visibility` (what the reader may not see) and
//! `expectedQueue`, the facts as `classify --output explain` prints them.
//!
//! `UPDATE_EXPECT=1 cargo test -p classify-wasm --test queue` rewrites each
//! `expectedQueue` from the engine's output (review the diff), then checks.

#![cfg(not(target_arch = "wasm32"))]

use std::path::Path;

use classify_wasm::queue::{facts_in_snapshot, facts_text, JobQueueFacts, Visibility};
use serde_json::Value;
use test_support::harness::{diff, with_top_level_string};
use test_support::read_case_folder;

const EXPECTED: &str = "expectedQueue";

fn run(name: &str, case: &Value) -> Result<(String, Vec<JobQueueFacts>), String> {
    let snapshot = case
        .get("snapshot")
        .ok_or_else(|| format!("{name}: no `snapshot`"))?;
    let visibility: Visibility = match case.get("visibility") {
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| format!("{name}: {e}"))?,
        None => Visibility::default(),
    };
    let facts = facts_in_snapshot(&snapshot.to_string(), &visibility)
        .map_err(|e| format!("{name}: {e}"))?;
    Ok((facts_text(&facts), facts))
}

#[test]
fn queue_golden_cases() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("queue-cases");
    let files = read_case_folder(&dir);
    assert!(
        files.len() >= 12,
        "{}: {} cases",
        dir.display(),
        files.len()
    );
    let bless = std::env::var_os("UPDATE_EXPECT").is_some();
    let mut failures = Vec::new();
    for (name, text) in &files {
        let case: Value = serde_json::from_str(text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let (rendered, facts) = run(name, &case).unwrap_or_else(|e| panic!("{e}"));
        assert!(!facts.is_empty(), "{name}: no TrainJob got queue facts");
        // What the JSON of Find and Inspect carries reads back to itself.
        let json = serde_json::to_string(&facts).unwrap_or_else(|e| panic!("{name}: {e}"));
        let back: Vec<JobQueueFacts> =
            serde_json::from_str(&json).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(back, facts, "{name}: the JSON does not read back");
        if bless {
            let rewritten = with_top_level_string(text, EXPECTED, &rendered)
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .unwrap_or_else(|| panic!("{name}: no top-level `{EXPECTED}`"));
            if &rewritten != text {
                std::fs::write(dir.join(name), rewritten).unwrap_or_else(|e| panic!("{name}: {e}"));
                eprintln!("UPDATE_EXPECT: rewrote the {EXPECTED} of {name}");
            }
            continue;
        }
        let expected = case
            .get(EXPECTED)
            .and_then(Value::as_str)
            .unwrap_or_else(|| panic!("{name}: no string `{EXPECTED}`"));
        if expected != rendered {
            failures.push(format!("{name}:\n{}", diff(expected, &rendered)));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
