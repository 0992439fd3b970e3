//! Seeded round trips of the stream's `change` frame: whatever the server
//! writes, the page reads back part for part, with its object texts as
//! slices of the frame.

#![cfg(not(target_arch = "wasm32"))]

use std::borrow::Cow;

use classify_wasm::wire::{captured_entry, ChangeFrame, Deleted, DroppedCapture};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::json;

const SEED: [u8; 32] = *b"dispatch-dash change frame seed!";

/// Names with the characters JSON must escape, and some it need not.
fn name() -> impl Strategy<Value = String> {
    "[a-z0-9\"\\\\\n\t\u{1}é✓ -]{0,12}"
}

fn object() -> impl Strategy<Value = String> {
    (
        proptest::sample::select(vec!["TrainJob", "JobSet", "Pod", "Node", "Workload"]),
        name(),
        name(),
    )
        .prop_map(|(kind, ns, n)| {
            json!({"kind": kind, "metadata": {"namespace": ns, "name": n}, "status": {"phase": n}})
                .to_string()
        })
}

fn frame() -> impl Strategy<Value = (ChangeFrame<'static>, Vec<(String, String, bool)>)> {
    (
        proptest::collection::vec(object(), 0..4),
        proptest::collection::vec((name(), name(), name(), name()), 0..4),
        proptest::collection::vec((name(), object(), any::<bool>()), 0..3),
        proptest::collection::vec((name(), name()), 0..3),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(|(upserts, deletes, captured, dropped, nodes_readable)| {
            let frame = ChangeFrame {
                upserts: upserts.into_iter().map(Cow::Owned).collect(),
                deletes: deletes
                    .into_iter()
                    .map(|(kind, name, namespace, uid)| Deleted {
                        kind,
                        name,
                        namespace,
                        uid,
                    })
                    .collect(),
                captured: captured
                    .iter()
                    .map(|(t, pod, gap)| Cow::Owned(captured_entry(t, pod, *gap)))
                    .collect(),
                dropped: dropped
                    .into_iter()
                    .map(|(trainjob_uid, pod_uid)| DroppedCapture {
                        trainjob_uid,
                        pod_uid,
                    })
                    .collect(),
                nodes_readable,
            };
            (frame, captured)
        })
}

#[test]
fn every_frame_written_reads_back_part_for_part() {
    let cases = std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|c| c.parse().ok())
        .unwrap_or(512);
    let mut runner = TestRunner::new_with_rng(
        Config {
            cases,
            failure_persistence: None,
            ..Config::default()
        },
        TestRng::from_seed(RngAlgorithm::ChaCha, &SEED),
    );
    runner
        .run(&frame(), |(frame, captured)| {
            let text = frame.to_json();
            // Always one JSON object, with the four lists there.
            let value: serde_json::Value = serde_json::from_str(&text).expect("JSON");
            for list in ["upserts", "deletes", "captured", "capturedDropped"] {
                prop_assert!(value[list].is_array(), "{list} in {text}");
            }
            let read = ChangeFrame::parse(&text).expect("a frame");
            prop_assert_eq!(&read, &frame);
            prop_assert!(read
                .upserts
                .iter()
                .chain(&read.captured)
                .all(|t| matches!(t, Cow::Borrowed(_))));
            // A captured entry is the snapshot's: its TrainJob UID, its pod,
            // and acrossGap only when true.
            for (entry, (uid, pod, gap)) in
                value["captured"].as_array().unwrap().iter().zip(&captured)
            {
                prop_assert_eq!(&entry["trainJobUID"], &json!(uid));
                prop_assert_eq!(
                    &entry["pod"],
                    &serde_json::from_str::<serde_json::Value>(pod).unwrap()
                );
                prop_assert_eq!(entry.get("acrossGap").is_some(), *gap);
            }
            Ok(())
        })
        .unwrap();
}
