//! The `change` frame. docs/api.md ("event: change") is where its format
//! and the order to apply it are written; this is where they are kept.
//!
//! Upserted objects and captured entries are JSON texts: the writer
//! splices them in as they are (the server stores its projections as
//! text), and the reader hands back the slices of the frame they are (the
//! page keeps them as text), so neither is parsed and written again.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use crate::snapshot_writer::write_captured_entry;

/// An object a change deletes, by its key (kind, namespace, name) and
/// UID. A Node's namespace is `""`.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(default)]
pub struct Deleted {
    pub kind: String,
    pub name: String,
    pub namespace: String,
    pub uid: String,
}

/// A captured pod (section 2's `captured`) the server no longer holds.
#[derive(Debug, Clone, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(default)]
pub struct DroppedCapture {
    #[serde(rename = "trainJobUID")]
    pub trainjob_uid: String,
    #[serde(rename = "podUID")]
    pub pod_uid: String,
}

/// One `change` frame's data, in the order docs/api.md says to apply its
/// parts.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChangeFrame<'a> {
    /// Objects added or replaced, each one JSON object's text.
    pub upserts: Vec<Cow<'a, str>>,
    pub deletes: Vec<Deleted>,
    /// Captured entries, each the text [`captured_entry`] writes.
    pub captured: Vec<Cow<'a, str>>,
    pub dropped: Vec<DroppedCapture>,
    /// Whether Nodes are readable, when that changed.
    pub nodes_readable: Option<bool>,
}

/// A `captured` entry's text: what [`crate::SnapshotWriter::captured`]
/// writes for one pod, for a frame that carries it outside a snapshot.
pub fn captured_entry(trainjob_uid: &str, pod_json: &str, across_gap: bool) -> String {
    let mut out = String::with_capacity(pod_json.len() + trainjob_uid.len() + 40);
    write_captured_entry(&mut out, trainjob_uid, pod_json, across_gap);
    out
}

/// The frame's parts when every list is a list: texts borrowed.
#[derive(Deserialize)]
struct Parts<'a> {
    #[serde(borrow, default)]
    upserts: Vec<&'a RawValue>,
    #[serde(default)]
    deletes: Vec<Deleted>,
    #[serde(borrow, default)]
    captured: Vec<&'a RawValue>,
    #[serde(rename = "capturedDropped", default)]
    dropped: Vec<DroppedCapture>,
    #[serde(rename = "nodesReadable", default)]
    nodes_readable: Value,
}

impl<'a> ChangeFrame<'a> {
    /// The frame's JSON text. The four lists are always there; upserts
    /// and captured entries are spliced in as they are.
    pub fn to_json(&self) -> String {
        let spliced: usize = self
            .upserts
            .iter()
            .chain(&self.captured)
            .map(|t| t.len() + 1)
            .sum();
        let mut out = String::with_capacity(spliced + 128);
        out.push_str("{\"upserts\":");
        push_texts(&mut out, &self.upserts);
        out.push_str(",\"deletes\":");
        push_serialized(&mut out, &self.deletes);
        out.push_str(",\"captured\":");
        push_texts(&mut out, &self.captured);
        out.push_str(",\"capturedDropped\":");
        push_serialized(&mut out, &self.dropped);
        match self.nodes_readable {
            Some(true) => out.push_str(",\"nodesReadable\":true"),
            Some(false) => out.push_str(",\"nodesReadable\":false"),
            None => {}
        }
        out.push('}');
        out
    }

    /// Reads a frame, parsed once; its upserts and captured entries are
    /// the slices of `text` they are. None when `text` is not a JSON
    /// object. A part of another type than this contract gives (a list
    /// that is not a list, an entry whose fields are not strings, a
    /// `nodesReadable` that is not a boolean) is left out, and the rest
    /// still applies: a newer server's frame still updates an older page.
    pub fn parse(text: &'a str) -> Option<ChangeFrame<'a>> {
        // A derived struct would also read a JSON array, by position.
        if !text.trim_start().starts_with('{') {
            return None;
        }
        if let Ok(parts) = serde_json::from_str::<Parts>(text) {
            return Some(ChangeFrame {
                upserts: borrowed(parts.upserts),
                deletes: parts.deletes,
                captured: borrowed(parts.captured),
                dropped: parts.dropped,
                nodes_readable: parts.nodes_readable.as_bool(),
            });
        }
        let frame: serde_json::Map<String, Value> = serde_json::from_str(text).ok()?;
        let list = |name: &str| {
            frame
                .get(name)
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default()
        };
        let texts = |name: &str| {
            list(name)
                .iter()
                .map(|v| Cow::Owned(v.to_string()))
                .collect()
        };
        Some(ChangeFrame {
            upserts: texts("upserts"),
            deletes: typed(list("deletes")),
            captured: texts("captured"),
            dropped: typed(list("capturedDropped")),
            nodes_readable: frame.get("nodesReadable").and_then(Value::as_bool),
        })
    }
}

fn push_texts(out: &mut String, texts: &[Cow<'_, str>]) {
    out.push('[');
    for (i, text) in texts.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(text);
    }
    out.push(']');
}

fn push_serialized<T: Serialize>(out: &mut String, values: &[T]) {
    // Strings and a derived struct always serialize; `[]` keeps the frame
    // well formed were that ever not so.
    out.push_str(&serde_json::to_string(values).unwrap_or_else(|_| "[]".into()));
}

fn borrowed(raws: Vec<&RawValue>) -> Vec<Cow<'_, str>> {
    raws.into_iter().map(|r| Cow::Borrowed(r.get())).collect()
}

fn typed<T: for<'de> Deserialize<'de>>(values: &[Value]) -> Vec<T> {
    values
        .iter()
        .filter_map(|v| T::deserialize(v).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn deleted(kind: &str, namespace: &str, name: &str) -> Deleted {
        Deleted {
            kind: kind.into(),
            name: name.into(),
            namespace: namespace.into(),
            uid: format!("{name}-uid"),
        }
    }

    #[test]
    fn writes_the_documented_frame() {
        let frame = ChangeFrame {
            deletes: vec![deleted("JobSet", "team-a", "rlhf-5-s1")],
            ..ChangeFrame::default()
        };
        assert_eq!(
            frame.to_json(),
            r#"{"upserts":[],"deletes":[{"kind":"JobSet","name":"rlhf-5-s1","namespace":"team-a","uid":"rlhf-5-s1-uid"}],"captured":[],"capturedDropped":[]}"#
        );
    }

    #[test]
    fn splices_texts_and_reads_them_back_as_slices() {
        let pod = r#"{"kind":"Pod","metadata":{"name":"p","namespace":"team-a","uid":"p1"}}"#;
        let frame = ChangeFrame {
            upserts: vec![Cow::Borrowed(
                r#"{"kind":"TrainJob","metadata":{"name":"a"}}"#,
            )],
            deletes: vec![deleted("Node", "", "n1")],
            captured: vec![Cow::Owned(captured_entry("t\"1", pod, true))],
            dropped: vec![DroppedCapture {
                trainjob_uid: "t1".into(),
                pod_uid: "p0".into(),
            }],
            nodes_readable: Some(false),
        };
        let text = frame.to_json();
        assert!(
            text.contains(r#"{"trainJobUID":"t\"1","pod":{"kind":"Pod""#),
            "{text}"
        );
        assert!(text.ends_with(r#","nodesReadable":false}"#), "{text}");
        let read = ChangeFrame::parse(&text).expect("a frame");
        assert_eq!(read, frame);
        assert!(
            read.upserts.iter().all(|u| matches!(u, Cow::Borrowed(_))),
            "upserts are slices of the frame"
        );
    }

    #[test]
    fn a_part_of_another_type_is_left_out_and_the_rest_applies() {
        let text = r#"{"upserts":{"not":"a list"},"deletes":[{"kind":"Pod","name":7},{"kind":"Pod","name":"p","namespace":"team-a"}],"captured":[{"trainJobUID":"t"}],"capturedDropped":"x","nodesReadable":"yes"}"#;
        let read = ChangeFrame::parse(text).expect("a frame");
        assert!(read.upserts.is_empty());
        assert_eq!(
            read.deletes,
            vec![Deleted {
                kind: "Pod".into(),
                name: "p".into(),
                namespace: "team-a".into(),
                uid: String::new(),
            }]
        );
        assert_eq!(
            read.captured,
            vec![Cow::<str>::Borrowed(r#"{"trainJobUID":"t"}"#)]
        );
        assert!(read.dropped.is_empty());
        assert_eq!(read.nodes_readable, None);
    }

    #[test]
    fn missing_lists_are_empty_and_text_that_is_no_object_is_none() {
        assert_eq!(ChangeFrame::parse("{}"), Some(ChangeFrame::default()));
        assert_eq!(ChangeFrame::parse("[]"), None);
        assert_eq!(ChangeFrame::parse("{\"upserts\":["), None);
    }
}
