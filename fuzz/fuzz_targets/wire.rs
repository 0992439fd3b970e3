//! Any text, read as the dashboard stream's frames (`classify_wasm::wire`),
//! as the page reads them from the server: the readers return a value or
//! nothing, never panic, and a `change` frame the page read is written back
//! by the server's writer to the same frame.

#![no_main]

use classify_wasm::wire::{ChangeFrame, Document};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = Document::parse(text);
    let _ = classify_wasm::wire::read_rows(text);
    if let Some(frame) = ChangeFrame::parse(text) {
        let written = frame.to_json();
        assert_eq!(ChangeFrame::parse(&written).as_ref(), Some(&frame), "{written}");
    }
});
