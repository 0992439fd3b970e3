//! Section 2's snapshot document, written from JSON texts the caller already
//! holds: the one writer of `{"kind":"Snapshot",...}` for the server's
//! namespace and per-job snapshots and the browser's sub-snapshots, so the
//! document the engine reads is spelled in one place. Objects are spliced in
//! as given (they are not parsed again); only the header and the captured
//! entries' TrainJob UIDs are written here.

use crate::snapshot::Options;

/// Writes one snapshot document: the header from [`Options`] (a field the
/// options leave `None` is left out, so the engine infers it), then every
/// [`item`](SnapshotWriter::item), then every captured pod.
///
/// ```
/// use classify_wasm::{Mode, Options, SnapshotWriter};
/// let mut w = SnapshotWriter::new(Options { mode: Some(Mode::Plain), nodes_readable: Some(true) });
/// w.item(r#"{"kind":"Pod","metadata":{"name":"p"}}"#);
/// w.captured("uid-1", r#"{"kind":"Pod","metadata":{"name":"q"}}"#, false);
/// assert_eq!(
///     w.finish(),
///     r#"{"kind":"Snapshot","mode":"plain","nodesReadable":true,"items":[{"kind":"Pod","metadata":{"name":"p"}}],"captured":[{"trainJobUID":"uid-1","pod":{"kind":"Pod","metadata":{"name":"q"}}}]}"#
/// );
/// ```
#[derive(Debug, Clone)]
pub struct SnapshotWriter {
    out: String,
    captured: String,
    items: usize,
}

impl SnapshotWriter {
    /// A document with the given header and, so far, no items.
    pub fn new(options: Options) -> Self {
        Self::with_capacity(options, 4096)
    }

    /// [`SnapshotWriter::new`], reserving `bytes` for the items.
    pub fn with_capacity(options: Options, bytes: usize) -> Self {
        let mut out = String::with_capacity(bytes.saturating_add(96));
        write_header(&mut out, options);
        SnapshotWriter {
            out,
            captured: String::new(),
            items: 0,
        }
    }

    /// Appends an object (one JSON object's text) to `items`.
    pub fn item(&mut self, json: &str) {
        if self.items > 0 {
            self.out.push(',');
        }
        self.out.push_str(json);
        self.items += 1;
    }

    /// Appends a captured pod of the TrainJob `trainjob_uid` (section 2's
    /// `captured`). `across_gap` adds the server's `"acrossGap":true` mark
    /// (the pod vanished while the watch was down), which the engine does not
    /// read and the wire format carries.
    pub fn captured(&mut self, trainjob_uid: &str, pod_json: &str, across_gap: bool) {
        self.next_captured();
        write_captured_entry(&mut self.captured, trainjob_uid, pod_json, across_gap);
    }

    /// Appends a whole `captured` entry that is already JSON text, as a
    /// stream delivered it.
    pub fn captured_entry(&mut self, entry_json: &str) {
        self.next_captured();
        self.captured.push_str(entry_json);
    }

    fn next_captured(&mut self) {
        if !self.captured.is_empty() {
            self.captured.push(',');
        }
    }

    /// The document.
    pub fn finish(mut self) -> String {
        self.out.push_str(BETWEEN_ITEMS_AND_CAPTURED);
        self.out.push_str(&self.captured);
        self.out.push_str(END);
        self.out
    }
}

const BETWEEN_ITEMS_AND_CAPTURED: &str = "],\"captured\":[";
const END: &str = "]}";

/// The document's start, up to the `[` of its items.
fn write_header(out: &mut String, options: Options) {
    out.push_str("{\"kind\":\"Snapshot\",");
    if let Some(mode) = options.mode {
        out.push_str("\"mode\":\"");
        out.push_str(mode.as_str());
        out.push_str("\",");
    }
    if let Some(readable) = options.nodes_readable {
        out.push_str(if readable {
            "\"nodesReadable\":true,"
        } else {
            "\"nodesReadable\":false,"
        });
    }
    out.push_str("\"items\":[");
}

/// One piece of a document [`SnapshotPieces`] writes: text it wrote, or an
/// object the caller holds, to be spliced in as it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece<P> {
    Text(String),
    Object(P),
}

impl<P: AsRef<str>> Piece<P> {
    /// The piece's text.
    pub fn as_str(&self) -> &str {
        match self {
            Piece::Text(text) => text,
            Piece::Object(object) => object.as_ref(),
        }
    }

    /// The document `pieces` make, as one text.
    pub fn joined(pieces: &[Piece<P>]) -> String {
        pieces.iter().map(Piece::as_str).collect()
    }
}

/// [`SnapshotWriter`]'s document, byte for byte, as pieces that leave the
/// objects where the caller holds them (`P`, say an `Arc<str>` a store
/// keeps): a server that sends one namespace's snapshot to many clients
/// shares its objects' texts instead of copying them into each document.
/// Consecutive text is one piece.
#[derive(Debug, Clone)]
pub struct SnapshotPieces<P> {
    pieces: Vec<Piece<P>>,
    /// Text written since the last object.
    text: String,
    items: usize,
    captured: Vec<Piece<P>>,
    captured_text: String,
    any_captured: bool,
}

impl<P> SnapshotPieces<P> {
    /// A document with the given header and, so far, no items.
    pub fn new(options: Options) -> Self {
        let mut text = String::with_capacity(96);
        write_header(&mut text, options);
        SnapshotPieces {
            pieces: Vec::new(),
            text,
            items: 0,
            captured: Vec::new(),
            captured_text: String::new(),
            any_captured: false,
        }
    }

    /// Appends an object (one JSON object's text, held by the caller) to
    /// `items`.
    pub fn item(&mut self, object: P) {
        if self.items > 0 {
            self.text.push(',');
        }
        self.pieces
            .push(Piece::Text(std::mem::take(&mut self.text)));
        self.pieces.push(Piece::Object(object));
        self.items += 1;
    }

    /// Appends a captured pod, as [`SnapshotWriter::captured`] does.
    pub fn captured(&mut self, trainjob_uid: &str, pod: P, across_gap: bool) {
        if self.any_captured {
            self.captured_text.push(',');
        }
        self.any_captured = true;
        self.captured_text.push_str("{\"trainJobUID\":");
        write_json_string(&mut self.captured_text, trainjob_uid);
        self.captured_text.push_str(",\"pod\":");
        self.captured
            .push(Piece::Text(std::mem::take(&mut self.captured_text)));
        self.captured.push(Piece::Object(pod));
        if across_gap {
            self.captured_text.push_str(",\"acrossGap\":true");
        }
        self.captured_text.push('}');
    }

    /// The document's pieces, in order: no text piece is empty and no two
    /// are next to each other.
    pub fn finish(mut self) -> Vec<Piece<P>> {
        self.text.push_str(BETWEEN_ITEMS_AND_CAPTURED);
        let mut captured = self.captured;
        // The first captured entry's opening joins the text before it.
        if let Some(Piece::Text(first)) = captured.first_mut() {
            self.text.push_str(first);
            first.clear();
        }
        self.captured_text.push_str(END);
        if captured.is_empty() {
            self.text.push_str(&self.captured_text);
            self.pieces.push(Piece::Text(self.text));
        } else {
            self.pieces.push(Piece::Text(self.text));
            self.pieces.extend(captured);
            self.pieces.push(Piece::Text(self.captured_text));
        }
        self.pieces
            .retain(|p| !matches!(p, Piece::Text(t) if t.is_empty()));
        self.pieces
    }
}

/// One `captured` entry, `{"trainJobUID":..,"pod":{..}}` (with
/// `"acrossGap":true` when `across_gap`), appended to `out`: what
/// [`SnapshotWriter::captured`] writes, for a stream frame that carries
/// entries outside a snapshot.
pub(crate) fn write_captured_entry(
    out: &mut String,
    trainjob_uid: &str,
    pod_json: &str,
    across_gap: bool,
) {
    out.push_str("{\"trainJobUID\":");
    write_json_string(out, trainjob_uid);
    out.push_str(",\"pod\":");
    out.push_str(pod_json);
    if across_gap {
        out.push_str(",\"acrossGap\":true");
    }
    out.push('}');
}

/// Appends `text` as a JSON string literal, escaped exactly as `serde_json`
/// escapes it: `"`, `\` and the control characters below U+0020 (the usual
/// short forms, else `\u00xx`); everything else as it is. The one escaper of
/// the JSON the engine's consumers write by hand (the server's projections).
pub fn write_json_string(out: &mut String, text: &str) {
    out.push('"');
    let mut plain_from = 0;
    for (i, byte) in text.bytes().enumerate() {
        let short = match byte {
            b'"' => "\\\"",
            b'\\' => "\\\\",
            0x08 => "\\b",
            0x0c => "\\f",
            b'\n' => "\\n",
            b'\r' => "\\r",
            b'\t' => "\\t",
            0x00..=0x1f => "",
            _ => continue,
        };
        // Every byte matched above is ASCII, so `i` is a char boundary.
        out.push_str(text.get(plain_from..i).unwrap_or_default());
        plain_from = i + 1;
        if short.is_empty() {
            out.push_str("\\u00");
            for nibble in [byte >> 4, byte & 0xf] {
                out.extend(char::from_digit(u32::from(nibble), 16));
            }
        } else {
            out.push_str(short);
        }
    }
    out.push_str(text.get(plain_from..).unwrap_or_default());
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::Mode;

    fn options(mode: Option<Mode>, nodes_readable: Option<bool>) -> Options {
        Options {
            mode,
            nodes_readable,
        }
    }

    #[test]
    fn strings_are_escaped_as_serde_json_escapes_them() {
        let mut all: String = (0u8..0x80).map(char::from).collect();
        all.push_str("é 漢 🚀 \u{2028} \u{fffd}");
        for text in [all.as_str(), "", "plain", "\"", "a\\b", "\u{0}", "end\n"] {
            let mut out = String::new();
            write_json_string(&mut out, text);
            assert_eq!(out, serde_json::to_string(text).expect("a string"));
        }
    }

    #[test]
    fn a_header_left_to_inference_is_not_written() {
        let w = SnapshotWriter::new(options(None, None));
        assert_eq!(
            w.finish(),
            r#"{"kind":"Snapshot","items":[],"captured":[]}"#
        );
        let w = SnapshotWriter::new(options(Some(Mode::Kueue), Some(false)));
        assert_eq!(
            w.finish(),
            r#"{"kind":"Snapshot","mode":"kueue","nodesReadable":false,"items":[],"captured":[]}"#
        );
    }

    #[test]
    fn uids_are_escaped_and_the_document_is_what_serde_reads() {
        let mut w = SnapshotWriter::new(options(Some(Mode::Plain), Some(true)));
        w.item(r#"{"kind":"TrainJob","metadata":{"name":"a"}}"#);
        w.item(r#"{"kind":"Pod","metadata":{"name":"b"}}"#);
        let odd = "u\"\\\n\u{1}é";
        w.captured(odd, r#"{"kind":"Pod"}"#, true);
        w.captured_entry(r#"{"trainJobUID":"x","pod":{"kind":"Pod"}}"#);
        let text = w.finish();
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(value["items"].as_array().unwrap().len(), 2);
        assert_eq!(value["captured"][0]["trainJobUID"], odd);
        assert_eq!(value["captured"][0]["acrossGap"], true);
        assert_eq!(value["captured"][1]["trainJobUID"], "x");
        assert!(value["captured"][1].get("acrossGap").is_none());
    }

    #[test]
    fn a_written_snapshot_classifies_as_its_items_do() {
        let trainjob = r#"{"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob","metadata":{"name":"job-1","namespace":"ns","uid":"t1","creationTimestamp":"2026-01-01T00:00:00Z"},"spec":{"suspend":true}}"#;
        let mut w = SnapshotWriter::new(options(Some(Mode::Plain), Some(true)));
        w.item(trainjob);
        let written = crate::classify(&w.finish(), Options::default()).unwrap();
        let list = format!(r#"{{"kind":"List","items":[{trainjob}]}}"#);
        let direct = crate::classify(&list, options(Some(Mode::Plain), Some(true))).unwrap();
        assert_eq!(written, direct);
        assert_eq!(written.len(), 1);
    }

    /// The pieces are the writer's document, byte for byte, for any number
    /// of items and captured pods (none, one, many), any header, and
    /// texts that need escaping; no text piece is empty, and no two text
    /// pieces are next to each other.
    #[test]
    fn pieces_are_the_writers_document() {
        let objects = [
            r#"{"kind":"Pod","metadata":{"name":"a"}}"#,
            r#"{"kind":"TrainJob"}"#,
            "{}",
        ];
        let uids = ["t1", "", "u\"\\\n"];
        let headers = [
            options(None, None),
            options(Some(Mode::Plain), Some(true)),
            options(Some(Mode::Kueue), Some(false)),
        ];
        for header in headers {
            for items in 0..4 {
                for captured in 0..4 {
                    let mut writer = SnapshotWriter::new(header);
                    let mut pieces = SnapshotPieces::new(header);
                    for i in 0..items {
                        let object = objects[i % objects.len()];
                        writer.item(object);
                        pieces.item(object);
                    }
                    for c in 0..captured {
                        let (uid, object) = (uids[c % uids.len()], objects[c % objects.len()]);
                        writer.captured(uid, object, c % 2 == 1);
                        pieces.captured(uid, object, c % 2 == 1);
                    }
                    let pieces = pieces.finish();
                    let text = Piece::joined(&pieces);
                    assert_eq!(text, writer.finish(), "{items} items, {captured} captured");
                    let objects_seen = pieces
                        .iter()
                        .filter(|p| matches!(p, Piece::Object(_)))
                        .count();
                    assert_eq!(objects_seen, items + captured);
                    for pair in pieces.windows(2) {
                        assert!(
                            !matches!(pair, [Piece::Text(_), Piece::Text(_)]),
                            "{pieces:?}"
                        );
                    }
                    assert!(!pieces
                        .iter()
                        .any(|p| matches!(p, Piece::Text(t) if t.is_empty())));
                }
            }
        }
    }
}
