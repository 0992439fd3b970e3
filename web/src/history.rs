//! An object's observation history, as the server recorded it: only a
//! long-running server sees an object change, so the live page asks the
//! server (Inspect's `history` and `historyText`) and the offline page says
//! that a pasted dump has none.
//!
//! The text form (`pending 09:00 → running 09:04 → ended, out-of-memory
//! 10:12`) is the server's; the page shows it as it came, and the entries
//! as a table, so the two cannot disagree.

use serde_json::Value;

/// One recorded change: when the server saw it, and the state, cause kind
/// and held flag after it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub at: String,
    pub state: String,
    pub cause: String,
    pub held: bool,
}

/// What the explanation view shows under "History".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryView {
    /// The offline page: nothing recorded a history.
    NotKept,
    /// Asked the server; no answer yet.
    Loading,
    /// The server's record, oldest first, and its text form.
    Recorded { text: String, changes: Vec<Change> },
    /// The server could not be asked, in words for the page.
    Unavailable(String),
}

impl HistoryView {
    /// Reads an Inspect answer's JSON text.
    pub fn from_inspect(text: &str) -> HistoryView {
        let value: Value = match serde_json::from_str(text) {
            Ok(v) => v,
            Err(e) => return HistoryView::Unavailable(format!("the server's answer: {e}")),
        };
        let Some(entries) = value.get("history").and_then(Value::as_array) else {
            return HistoryView::Unavailable("the server's answer carries no history".into());
        };
        let field = |e: &Value, k: &str| e.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let changes = entries
            .iter()
            .map(|e| Change {
                at: field(e, "at"),
                state: field(e, "state"),
                cause: field(e, "cause"),
                held: e.get("held").and_then(Value::as_bool).unwrap_or(false),
            })
            .collect();
        let text = value
            .get("historyText")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        HistoryView::Recorded { text, changes }
    }

    /// The one-line summary the view puts first.
    pub fn summary(&self) -> String {
        match self {
            HistoryView::NotKept => "History is recorded only by a running dispatch-dash server, \
                which sees each change; a pasted dump holds one moment, so it has none."
                .into(),
            HistoryView::Loading => "Asking the server for this object's history…".into(),
            HistoryView::Recorded { changes, .. } if changes.is_empty() => {
                "The server has recorded no change of this object yet.".into()
            }
            HistoryView::Recorded { text, .. } => text.clone(),
            HistoryView::Unavailable(why) => format!("No history: {why}."),
        }
    }
}

/// The Inspect URL of an object, whose answer carries its history.
pub fn inspect_url(namespace: &str, kind: &str, name: &str) -> String {
    use crate::query::encode;
    format!(
        "/api/v1/namespaces/{}/objects/{}/{}",
        encode(namespace),
        encode(kind),
        encode(name)
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[test]
    #[wasm_bindgen_test]
    fn an_inspect_answer_gives_the_changes_oldest_first_and_the_servers_text() {
        let view = HistoryView::from_inspect(
            r#"{"object":{},"observation":null,"readFor":[],
                "history":[{"at":"2026-12-01T09:00:00Z","state":"pending","cause":"none","held":false},
                           {"at":"2026-12-01T09:04:00Z","state":"running","cause":"none","held":true}],
                "historyText":"pending 09:00 → running 09:04"}"#,
        );
        let HistoryView::Recorded { text, changes } = &view else {
            panic!("recorded: {view:?}")
        };
        assert_eq!(text, "pending 09:00 → running 09:04");
        assert_eq!(changes.len(), 2);
        assert_eq!(changes[0].state, "pending");
        assert_eq!(changes[1].at, "2026-12-01T09:04:00Z");
        assert!(changes[1].held && !changes[0].held);
        assert_eq!(view.summary(), "pending 09:00 → running 09:04");
    }

    #[test]
    #[wasm_bindgen_test]
    fn no_change_yet_and_a_bad_answer_say_so() {
        let empty = HistoryView::from_inspect(r#"{"history":[],"historyText":""}"#);
        assert_eq!(
            empty.summary(),
            "The server has recorded no change of this object yet."
        );
        assert!(matches!(
            HistoryView::from_inspect(r#"{"error":"not found"}"#),
            HistoryView::Unavailable(_)
        ));
        assert!(matches!(
            HistoryView::from_inspect("<html>"),
            HistoryView::Unavailable(_)
        ));
        assert!(HistoryView::NotKept.summary().contains("only by a running"));
    }

    #[test]
    #[wasm_bindgen_test]
    fn the_inspect_url_encodes_each_part() {
        assert_eq!(
            inspect_url("team-a", "TrainJob", "llm 1/x"),
            "/api/v1/namespaces/team-a/objects/TrainJob/llm%201%2Fx"
        );
    }
}
