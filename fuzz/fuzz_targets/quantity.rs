//! Any text, read as a Kubernetes resource quantity
//! (`classify_wasm::quantity`): a quantity or a located error, never a
//! panic; the error's column is within the text, and a quantity's
//! canonical text reads back to it.

#![no_main]

use classify_wasm::quantity::Quantity;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match Quantity::parse(text) {
        Ok(q) => assert_eq!(Quantity::parse(&q.to_string()), Ok(q), "{text:?}"),
        Err(e) => assert!(
            e.column >= 1 && e.column <= text.chars().count() + 1,
            "{text:?}: {e}"
        ),
    }
});
