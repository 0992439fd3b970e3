//! Every case file again, under wasm32 in Node, through the JS boundary that
//! the browser uses. The files are embedded at compile time by build.rs
//! (there is no filesystem here); the engine's native run
//! (classify-wasm/tests/cases.rs) reads the same folders.

#![cfg(target_arch = "wasm32")]

// The engine's own harness, so the native and the wasm runs cannot check
// cases apart.
use test_support::harness;

use wasm_bindgen::JsValue;
use wasm_bindgen_test::wasm_bindgen_test;

include!(concat!(env!("OUT_DIR"), "/embedded_cases.rs"));

fn through_js(
    input: &str,
    options: classify_wasm::Options,
) -> Result<Vec<classify_wasm::Observation>, String> {
    let options = serde_wasm_bindgen::to_value(&options).expect("options serialize");
    match classify_wasm_bindings::classify(input, options) {
        Ok(value) => {
            serde_wasm_bindgen::from_value(value).map_err(|e| format!("not observations: {e}"))
        }
        Err(e) => {
            let value: JsValue = e.into();
            let error: js_sys::Error = value.into();
            Err(String::from(error.message()))
        }
    }
}

fn explain_through_js(
    input: &str,
    options: classify_wasm::Options,
) -> Result<Vec<classify_wasm::Explanation>, String> {
    let options = serde_wasm_bindgen::to_value(&options).expect("options serialize");
    match classify_wasm_bindings::explain(input, options) {
        Ok(value) => {
            serde_wasm_bindgen::from_value(value).map_err(|e| format!("not explanations: {e}"))
        }
        Err(e) => {
            let value: JsValue = e.into();
            let error: js_sys::Error = value.into();
            Err(String::from(error.message()))
        }
    }
}

fn folder(prefix: &str) -> Vec<(String, String)> {
    EMBEDDED
        .iter()
        .filter_map(|(name, text)| {
            name.strip_prefix(prefix)
                .map(|n| (n.to_string(), text.to_string()))
        })
        .collect()
}

fn run(prefix: &str, at_least: usize) {
    let cases = harness::cases_from_files(&folder(prefix)).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        cases.len() >= at_least,
        "{prefix}: {} cases embedded",
        cases.len()
    );
    let failures = harness::check_all(&cases, through_js, explain_through_js);
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[wasm_bindgen_test]
fn shared_golden_cases_under_wasm() {
    run("shared/cases/", 20);
}

#[wasm_bindgen_test]
fn shared_kubectl_dumps_under_wasm() {
    run("shared/dumps/", 2);
}

#[wasm_bindgen_test]
fn own_cases_under_wasm() {
    run("cases/", 1);
}

/// The queue facts' golden cases, computed by the engine compiled to wasm32
/// (as the offline page computes them) with the native run's check.
#[wasm_bindgen_test]
fn queue_golden_cases_under_wasm() {
    let files = folder("queue-cases/");
    assert!(files.len() >= 12, "{} queue cases embedded", files.len());
    let failures: Vec<String> = files
        .iter()
        .filter_map(|(name, text)| test_support::queue_cases::check(name, text).err())
        .collect();
    assert!(
        failures.is_empty(),
        "{} failed:\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[wasm_bindgen_test]
fn explain_returns_observation_and_trace() {
    let (_, text) = EMBEDDED
        .iter()
        .find(|(n, _)| n.ends_with("failed-oom-earliest.json"))
        .expect("embedded");
    let doc: serde_json::Value = serde_json::from_str(text).unwrap();
    let value =
        classify_wasm_bindings::explain(&doc["snapshot"].to_string(), JsValue::UNDEFINED).unwrap();
    let explained: Vec<classify_wasm::Explanation> = serde_wasm_bindgen::from_value(value).unwrap();
    assert_eq!(explained.len(), 1);
    assert!(explained[0].trace.findings[0].winner);
    assert_eq!(
        explained[0].observation.cause.kind,
        classify_wasm::CauseKind::OutOfMemory
    );
}

#[wasm_bindgen_test]
fn bad_options_throw_an_error() {
    // A plain JS object, as a page would pass it.
    let options = serde::Serialize::serialize(
        &serde_json::json!({ "mode": "batch" }),
        &serde_wasm_bindgen::Serializer::json_compatible(),
    )
    .unwrap();
    let err = classify_wasm_bindings::classify("{}", options).unwrap_err();
    let error: js_sys::Error = JsValue::from(err).into();
    assert!(String::from(error.message()).starts_with("options:"));
}

#[wasm_bindgen_test]
fn input_errors_throw_the_cli_message() {
    let err = classify_wasm_bindings::classify("[\"a\"]", JsValue::UNDEFINED).unwrap_err();
    let error: js_sys::Error = JsValue::from(err).into();
    assert_eq!(
        String::from(error.message()),
        "1:2: an item must be an object, found a string"
    );
}
