//! The engine's JS boundary, compiled only for wasm32 (natively this crate
//! is empty). It is deliberately thin, as regorus's `bindings/wasm`: a
//! string and a plain options object in, plain JS values out, and one error
//! helper. The engine itself (`classify-wasm`) has no wasm dependency.
//!
//! ```js
//! classify(input, { mode: "kueue", nodesReadable: false }) // -> Observation[]
//! explain(input)                                           // -> { observation, trace }[]
//! ```
//! Errors are thrown as JS `Error`s whose message is the CLI's:
//! `<line>:<column>: <what is wrong>`.

#![forbid(unsafe_code)]
#![cfg(target_arch = "wasm32")]

use classify_wasm::Options;
use serde::Serialize;
use wasm_bindgen::prelude::*;

/// The one error helper: every failure becomes a JS `Error` with a message.
fn js_error(message: impl std::fmt::Display) -> JsError {
    JsError::new(&message.to_string())
}

fn options(value: JsValue) -> Result<Options, JsError> {
    if value.is_undefined() || value.is_null() {
        return Ok(Options::default());
    }
    serde_wasm_bindgen::from_value(value).map_err(|e| js_error(format!("options: {e}")))
}

/// `null` for `None` and plain objects for maps, exactly as the JSON output.
fn to_js<T: Serialize>(value: &T) -> Result<JsValue, JsError> {
    value
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(js_error)
}

/// Classifies a snapshot or kubectl dump: `Observation[]`.
#[wasm_bindgen]
pub fn classify(input: &str, options_value: JsValue) -> Result<JsValue, JsError> {
    let observations = classify_wasm::classify(input, options(options_value)?).map_err(js_error)?;
    to_js(&observations)
}

/// Classifies and explains: `{ observation, trace }[]`.
#[wasm_bindgen]
pub fn explain(input: &str, options_value: JsValue) -> Result<JsValue, JsError> {
    let explained = classify_wasm::explain(input, options(options_value)?).map_err(js_error)?;
    to_js(&explained)
}
