//! Any bytes, read as Kueue's `PendingWorkloadsSummary`
//! (`classify_wasm::queue::line`): a list or an error naming its line and
//! column, never a panic; and placing any Workload in a list read never
//! panics either, even at the largest positions.

#![no_main]

use classify_wasm::queue::line::{place, PendingList};
use classify_wasm::queue::{QueueFacts, Wait};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match PendingList::read(data, 4) {
        Ok(list) => {
            let facts = QueueFacts {
                local_queue: "team-a/main".into(),
                cluster_queue: Some("gpu-cq".into()),
                wait: Wait::Quota,
                never_fits: false,
                asks: vec![],
                room: vec![],
                sentence: String::new(),
                preempted_by: None,
                position: None,
            };
            for item in &list.items {
                let position = place(&list, &facts, &item.name);
                assert!(position.in_local_queue.is_some(), "{position:?}");
            }
            let _ = place(&list, &facts, "");
        }
        Err(e) => assert!(e.what.starts_with("line "), "{e}"),
    }
});
