//! The dashboard stream's frames (docs/api.md, "The dashboard stream"):
//! for each of `rows`, `snapshot` and `change`, the one writer the server
//! calls and the one reader the page calls. Neither side writes or reads a
//! frame by hand.
//!
//! | frame | writer | reader |
//! |---|---|---|
//! | `rows` | [`classified_rows_json`] | [`read_rows`] |
//! | `snapshot` | [`SnapshotWriter`] | [`Document::parse`] |
//! | `change` | [`ChangeFrame::to_json`] | [`ChangeFrame::parse`] |
//! | `queues` | [`QueuesFrame::to_json`] | [`QueuesFrame::parse`] |

mod change;
mod queues;
mod snapshot;

pub use change::{captured_entry, ChangeFrame, Deleted, DroppedCapture};
pub use queues::QueuesFrame;
pub use snapshot::Document;

pub use crate::snapshot_writer::SnapshotWriter;
pub use crate::{classified_rows_json, Attempted};

/// Reads a `rows` frame: the [`Attempted`] rows [`classified_rows_json`]
/// wrote, in the engine's order.
pub fn read_rows(text: &str) -> Result<Vec<Attempted>, serde_json::Error> {
    serde_json::from_str(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Options;

    #[test]
    fn rows_read_back_as_written() {
        let snapshot = r#"{"kind":"Snapshot","mode":"plain","items":[{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"a","namespace":"team-a","uid":"u1","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{}}]}"#;
        let text = classified_rows_json(snapshot, Options::default()).expect("rows");
        let rows = read_rows(&text).expect("read back");
        assert_eq!(
            rows,
            crate::classify_with_attempts(snapshot, Options::default()).unwrap()
        );
        assert_eq!(rows.len(), 1);
        assert!(read_rows("{\"observation\":1}").is_err());
    }
}
