//! The dispatch-dash browser client: a live dashboard fed by the server's
//! event stream, an explanation view and an offline page, all classifying
//! in the browser with the `classify-wasm` engine.
//!
//! State lives in plain structs (`store::Store`, `query::ViewState`,
//! `timeline::Layout`, `session::AuthState`,
//! `namespace_access::NamespaceAccess`, `history::HistoryView`,
//! `repaint::RepaintGate`) with methods, tested natively;
//! `ui` holds the Leptos components.

#![forbid(unsafe_code)]

#[cfg(test)]
mod golden;
pub mod history;
pub mod namespace_access;
pub mod query;
pub mod repaint;
pub mod server_info;
pub mod session;
pub mod store;
pub mod table_sync;
pub mod timeline;
pub mod ui;
pub mod yaml;

/// Mounts the app on the page's body.
pub fn mount() {
    ui::mark("wasm-start");
    leptos::mount::mount_to_body(ui::App);
}
