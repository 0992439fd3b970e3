//! The dispatch-dash browser client: a live dashboard fed by the server's
//! event stream, an explanation view and an offline page, all classifying
//! in the browser with the `classify-wasm` engine.
//!
//! State lives in plain structs (`store::Store`, `query::ViewState`,
//! `timeline::Layout`, `session::AuthState`,
//! `namespace_access::NamespaceAccess`, `stream_client::StreamClient`,
//! `history::HistoryView`, `repaint::RepaintGate`, `row_window::RowWindow`, `notices::Notices`,
//! `queue_book::QueueBook`, `queues_view::QueuesView`,
//! `dump_file::PickedFile`, `offline_worker::Loads`) with
//! methods, tested natively;
//! `ui` holds the Leptos components.

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

pub mod dump_file;
pub mod history;
pub mod namespace_access;
pub mod notices;
pub mod offline_worker;
pub mod query;
pub mod queue_book;
pub mod queues_view;
pub mod repaint;
pub mod row_window;
pub mod server_info;
pub mod session;
pub mod store;
pub mod stream_client;
pub mod table_sync;
pub mod timeline;
pub mod ui;
pub mod yaml;

/// Mounts the app on the page's body.
pub fn mount() {
    ui::mark("wasm-start");
    key_hashes();
    leptos::mount::mount_to_body(ui::App);
}

/// Keys the engine's maps and the page's own with 16 bytes from
/// `crypto.getRandomValues`, before any is made: their keys are names that
/// anyone who may create a pod chooses (see `classify_wasm::hash`). A page
/// without `crypto` still works, with maps a crafted namespace can slow.
fn key_hashes() {
    let mut random = [0u8; 16];
    let drawn = web_sys::window()
        .and_then(|w| w.crypto().ok())
        .is_some_and(|c| c.get_random_values_with_u8_array(&mut random).is_ok());
    if drawn && classify_wasm::hash::seed(random) {
        ui::mark("hashes-keyed");
    }
}
