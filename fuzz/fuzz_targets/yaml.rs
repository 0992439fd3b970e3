//! Any text, read as YAML: the YAML parser (anchors and aliases above all),
//! the rules and the conversion to JSON must return a result or an input
//! error, never panic, never overflow the stack, never grow without bound.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // A comment line first: text starting with `{` or `[` would be read as
    // JSON, and bytes that are not UTF-8 would stop at the text check, so
    // every input reaches the YAML parser.
    let text = format!("# yaml\n{}", String::from_utf8_lossy(data));
    let _ = classify_wasm::dump_to_json(&text);
    if let Ok(observations) = classify_wasm::classify(&text, Default::default()) {
        // Whatever classifies also explains, identically.
        let explained = classify_wasm::explain(&text, Default::default()).expect("explain agrees");
        assert_eq!(explained.len(), observations.len());
    }
});
