//! The `snapshot` frame's reader (its writer is [`crate::SnapshotWriter`]),
//! which also reads what a user pastes or drops: a `List`, an array of
//! objects, or one object. docs/api.md ("event: snapshot") and spec
//! section 2 give the format.
//!
//! One pass over the text finds the items and captured entries as slices
//! of it, without building them as values.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use crate::Mode;

/// A document's parts as text slices of it: one pass over the input finds
/// the items and captured entries without building them.
#[derive(Deserialize)]
struct DocumentParts<'a> {
    kind: Option<Value>,
    mode: Option<Value>,
    #[serde(rename = "nodesReadable")]
    nodes_readable: Option<Value>,
    #[serde(borrow)]
    items: Option<Vec<&'a RawValue>>,
    #[serde(borrow)]
    captured: Option<Vec<&'a RawValue>>,
}

/// What a document holds: the header a snapshot gives, and its objects
/// and captured entries as texts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Document<'a> {
    /// A snapshot's `mode`, when it names one.
    pub mode: Option<Mode>,
    /// A snapshot's `nodesReadable`, when it is a boolean.
    pub nodes_readable: Option<bool>,
    /// Each object's JSON text.
    pub items: Vec<Cow<'a, str>>,
    /// A snapshot's captured entries, each one's JSON text.
    pub captured: Vec<Cow<'a, str>>,
}

fn mode_of(v: Option<&Value>) -> Option<Mode> {
    v.and_then(Value::as_str).and_then(|s| s.parse().ok())
}

pub(super) fn texts<'a>(raws: Option<Vec<&'a RawValue>>) -> Vec<Cow<'a, str>> {
    raws.into_iter()
        .flatten()
        .map(|r| Cow::Borrowed(r.get()))
        .collect()
}

fn owned_texts<'a>(values: Option<&Value>) -> Vec<Cow<'a, str>> {
    values
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|v| Cow::Owned(v.to_string()))
        .collect()
}

impl<'a> Document<'a> {
    /// A snapshot, a `List`, an array of objects or one object: the items
    /// (and, of a snapshot, its header and captured pods).
    pub fn parse(text: &'a str) -> Result<Document<'a>, serde_json::Error> {
        let trimmed = text.trim();
        let fast = if trimmed.starts_with('[') {
            serde_json::from_str::<Vec<&RawValue>>(trimmed)
                .ok()
                .map(|items| Document {
                    mode: None,
                    nodes_readable: None,
                    items: texts(Some(items)),
                    captured: Vec::new(),
                })
        } else if trimmed.starts_with('{') {
            serde_json::from_str::<DocumentParts>(trimmed)
                .ok()
                .map(|parts| match parts.kind.as_ref().and_then(Value::as_str) {
                    Some("Snapshot") => Document {
                        mode: mode_of(parts.mode.as_ref()),
                        nodes_readable: parts.nodes_readable.as_ref().and_then(Value::as_bool),
                        items: texts(parts.items),
                        captured: texts(parts.captured),
                    },
                    Some("List") => Document {
                        mode: None,
                        nodes_readable: None,
                        items: texts(parts.items),
                        captured: Vec::new(),
                    },
                    _ => Document {
                        mode: None,
                        nodes_readable: None,
                        items: vec![Cow::Borrowed(trimmed)],
                        captured: Vec::new(),
                    },
                })
        } else {
            None
        };
        if let Some(document) = fast {
            return Ok(document);
        }
        // What the typed pass refused (a part of another type, a key given
        // twice, a scalar) is read whole, with the same meaning.
        let doc: Value = serde_json::from_str(text)?;
        Ok(match doc.get("kind").and_then(Value::as_str) {
            Some("Snapshot") => Document {
                mode: mode_of(doc.get("mode")),
                nodes_readable: doc.get("nodesReadable").and_then(Value::as_bool),
                items: owned_texts(doc.get("items")),
                captured: owned_texts(doc.get("captured")),
            },
            Some("List") => Document {
                mode: None,
                nodes_readable: None,
                items: owned_texts(doc.get("items")),
                captured: Vec::new(),
            },
            _ => Document {
                mode: None,
                nodes_readable: None,
                items: match doc {
                    Value::Array(a) => a.iter().map(|v| Cow::Owned(v.to_string())).collect(),
                    other => vec![Cow::Owned(other.to_string())],
                },
                captured: Vec::new(),
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Options, SnapshotWriter};

    #[test]
    fn reads_back_what_the_snapshot_writer_writes() {
        let mut writer = SnapshotWriter::new(Options {
            mode: Some(Mode::Kueue),
            nodes_readable: Some(false),
        });
        writer.item(r#"{"kind":"TrainJob","metadata":{"name":"a"}}"#);
        writer.captured("t1", r#"{"kind":"Pod"}"#, true);
        let text = writer.finish();
        let doc = Document::parse(&text).expect("a snapshot");
        assert_eq!(doc.mode, Some(Mode::Kueue));
        assert_eq!(doc.nodes_readable, Some(false));
        assert_eq!(
            doc.items,
            vec![r#"{"kind":"TrainJob","metadata":{"name":"a"}}"#]
        );
        assert_eq!(
            doc.captured,
            vec![r#"{"trainJobUID":"t1","pod":{"kind":"Pod"},"acrossGap":true}"#]
        );
        assert!(doc.items.iter().all(|t| matches!(t, Cow::Borrowed(_))));
    }

    #[test]
    fn a_list_an_array_and_one_object_are_their_items() {
        let list = Document::parse(r#"{"kind":"List","items":[{"kind":"Pod"}]}"#).unwrap();
        assert_eq!(list.items, vec![r#"{"kind":"Pod"}"#]);
        let array = Document::parse(r#" [{"kind":"Pod"},{"kind":"Node"}] "#).unwrap();
        assert_eq!(array.items.len(), 2);
        let one = Document::parse(r#"{"kind":"Pod"}"#).unwrap();
        assert_eq!(one.items, vec![r#"{"kind":"Pod"}"#]);
        assert_eq!(one.mode, None);
    }

    #[test]
    fn a_part_of_another_type_is_read_with_the_same_meaning() {
        let doc = Document::parse(r#"{"kind":"Snapshot","mode":"plain","nodesReadable":"yes","items":[{"kind":"Pod"}],"captured":{}}"#).unwrap();
        assert_eq!(doc.mode, Some(Mode::Plain));
        assert_eq!(doc.nodes_readable, None);
        assert_eq!(doc.items, vec![r#"{"kind":"Pod"}"#]);
        assert!(doc.captured.is_empty());
    }

    #[test]
    fn text_that_is_not_json_is_an_error_with_its_place() {
        let e = Document::parse("{\n  \"kind\": ").unwrap_err();
        assert_eq!((e.line(), e.column()), (2, 10), "{e}");
    }
}
