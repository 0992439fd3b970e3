//! Any bytes at all: the dump parser and the rules must return observations
//! or an input error, never panic, never overflow the stack.

#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(observations) = classify_wasm::classify_bytes(data, Default::default()) {
        // Whatever classifies also explains, identically.
        let explained = classify_wasm::explain_bytes(data, Default::default()).expect("explain agrees");
        assert_eq!(explained.len(), observations.len());
    }
});
