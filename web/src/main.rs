#![forbid(unsafe_code)]
// No unwrap, expect, panic or unchecked indexing outside the tests, as in
// the engine: a bad object, request or frame is an error, not a crash. The
// few sites that cannot fail carry an `allow` that says why.
#![cfg_attr(
    not(test),
    deny(
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::indexing_slicing,
        clippy::panic,
        clippy::too_many_lines
    )
)]

use wasm_bindgen::prelude::*;

/// On the page, the app; in the offline page's worker (the same wasm,
/// loaded by `offline-worker.js`), only the hash keys: its messages come
/// through [`offline_worker_message`].
fn main() {
    if web_sys::window().is_some() {
        web::mount();
    } else {
        web::ui::offline_worker::key_hashes_in_worker();
    }
}

/// The offline page's worker hands each message here.
#[wasm_bindgen]
pub fn offline_worker_message(data: JsValue) {
    web::ui::offline_worker::on_message(data);
}
