//! The queue facts' golden cases: `classify-wasm/queue-cases/*.json`, each
//! a `snapshot`, an optional `visibility` (what the reader may not see) and
//! `expectedQueue`, the facts as `classify --output explain` prints them.
//!
//! `UPDATE_EXPECT=1 cargo test -p classify-wasm --test queue` rewrites each
//! `expectedQueue` from the engine's output (review the diff), then checks.

#![cfg(not(target_arch = "wasm32"))]

use std::path::Path;

use test_support::harness::with_top_level_string;
use test_support::queue_cases::{self, EXPECTED_QUEUE};
use test_support::read_case_folder;

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
        if bless {
            let outcome = queue_cases::run(name, text).unwrap_or_else(|e| panic!("{e}"));
            let rewritten = with_top_level_string(text, EXPECTED_QUEUE, &outcome.rendered)
                .unwrap_or_else(|e| panic!("{name}: {e}"))
                .unwrap_or_else(|| panic!("{name}: no top-level `{EXPECTED_QUEUE}`"));
            if &rewritten != text {
                std::fs::write(dir.join(name), rewritten).unwrap_or_else(|e| panic!("{name}: {e}"));
                eprintln!("UPDATE_EXPECT: rewrote the {EXPECTED_QUEUE} of {name}");
            }
            continue;
        }
        if let Err(e) = queue_cases::check(name, text) {
            failures.push(e);
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
