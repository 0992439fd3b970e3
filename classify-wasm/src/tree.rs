//! A positioned document tree, the one shape both JSON and YAML input become.
//!
//! Every node remembers where it started, so that a wrong type found later, far
//! from the parser, can still name its line and column. Strings borrow from the
//! input wherever they can: most of a Pod is never read, and copying it would
//! cost more than parsing it.
//!
//! [`parse_on_two_threads`] (natively, for the CLI) parses the second half of
//! a big JSON List's items on another thread and splices them in; it gives
//! exactly what [`parse`] gives, error included. [`parse_streamed`] (also
//! the CLI's) reads a big JSON dump piece by piece instead of whole, its
//! strings copied into arenas: the same tree but for positions, and no
//! error of its own (the caller parses the whole input to name one).

use std::borrow::Cow;

use crate::fields::{read_key, same_free_key, ReadKey, ANNOTATIONS_READ, LABELS_READ, READ_KEYS};
use crate::source::{Position, Source, SourceKind};

/// Documents nest at most this deep. kubectl output stays under 30; the limit
/// exists so that `[[[[...` cannot exhaust the stack, natively or in wasm.
pub const MAX_DEPTH: usize = 256;

/// A YAML alias may not make the tree grow past this many nodes in total, so
/// that a "billion laughs" document is an error, not an out-of-memory.
const MAX_ALIAS_NODES: usize = 1_000_000;

/// For each key length below 32, the first bytes (all ASCII) of the read
/// keys of that length, as bits: one lookup rules out most keys of a dump
/// that are not read (`apiVersion`, `image`, `env`...) before
/// [`read_key`] compares them with the list.
const READ_KEY_SHAPES: [u128; 32] = read_key_shapes();

// Evaluated by the compiler: an index out of range fails the build, it
// cannot panic at run time.
#[allow(clippy::indexing_slicing)]
const fn read_key_shapes() -> [u128; 32] {
    let mut shapes = [0u128; 32];
    let mut k = 0;
    while k < READ_KEYS.len() {
        let key = READ_KEYS[k].as_bytes();
        assert!(key.len() < 32 && !key.is_empty() && key[0] < 128);
        shapes[key.len()] |= 1 << key[0];
        k += 1;
    }
    shapes
}

/// False for most keys that [`read_key`] rejects, never for one it accepts.
fn may_be_read_key(key: &str) -> bool {
    let shape = READ_KEY_SHAPES.get(key.len()).copied().unwrap_or(0);
    match key.as_bytes().first() {
        Some(&b) if b < 128 => (shape >> b) & 1 == 1,
        _ => false,
    }
}

/// [`read_key`] behind the [`may_be_read_key`] prefilter: the read key
/// `key` is, found cheaply for the many keys of a dump that are none.
fn read_key_filtered(key: &str) -> Option<ReadKey> {
    if may_be_read_key(key) {
        read_key(key)
    } else {
        None
    }
}

/// Whether a key of a labels or annotations map is one a rule reads (either
/// kind: which map it is in does not matter for keeping it).
fn is_read_free_key(key: &str) -> bool {
    LABELS_READ
        .iter()
        .chain(&ANNOTATIONS_READ)
        .any(|read| same_free_key(read, key))
}

#[derive(Debug, Clone)]
pub struct Node<'a> {
    /// Where the value starts: a byte offset for JSON, a character index for
    /// YAML (see [`Source::position`]).
    pub at: u32,
    /// In a mapping, the read key this is the value of (None for any other
    /// key, and outside mappings): always `read_key` of the entry's key, so
    /// that [`Node::get_read`] finds what [`Node::get`] finds. It sits in
    /// padding, so it costs no memory.
    pub key: Option<ReadKey>,
    pub value: Value<'a>,
}

#[derive(Debug, Clone)]
pub enum Value<'a> {
    Null,
    Bool(bool),
    /// A JSON number, as its source text.
    Number(&'a str),
    /// A JSON string or a quoted (or block) YAML scalar.
    Str(Cow<'a, str>),
    /// A plain YAML scalar that is not null: a string, boolean or integer
    /// depending on the field that reads it (section 1, Types).
    Plain(Cow<'a, str>),
    Seq(Vec<Node<'a>>),
    Map(Vec<(Cow<'a, str>, Node<'a>)>),
    /// A JSON object outside labels and annotations, of which only the
    /// entries under read keys are kept: each node's `key` says which, so
    /// the key's text need not be kept (a dump's tree is mostly these).
    Fields(Box<[Node<'a>]>),
}

impl<'a> Node<'a> {
    /// The first entry under `key`, if this is a mapping that has one: the
    /// plain lookup that [`Node::get_read`] is tested against.
    #[cfg(test)]
    pub fn get(&self, key: &str) -> Option<&Node<'a>> {
        match &self.value {
            Value::Fields(fields) => fields
                .iter()
                .find(|v| v.key.map(ReadKey::name) == Some(key)),
            // The first byte is compared before the rest: most keys of an
            // object differ there, and it saves a call to compare memory.
            Value::Map(entries) => entries
                .iter()
                .find(|(k, _)| {
                    k.len() == key.len()
                        && k.as_bytes().first() == key.as_bytes().first()
                        && k == key
                })
                .map(|(_, v)| v),
            _ => None,
        }
    }

    /// [`Node::get`] for a read key, by its id: one byte compared per entry,
    /// and no key's text touched.
    pub fn get_read(&self, key: ReadKey) -> Option<&Node<'a>> {
        match &self.value {
            Value::Fields(fields) => fields.iter().find(|v| v.key == Some(key)),
            Value::Map(entries) => entries
                .iter()
                .find(|(_, v)| v.key == Some(key))
                .map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn is_null(&self) -> bool {
        matches!(self.value, Value::Null)
    }

    /// Whether this is a mapping (a JSON object), of either form.
    pub fn is_object(&self) -> bool {
        matches!(self.value, Value::Map(_) | Value::Fields(_))
    }

    /// A mapping's entries, keys and values, in order (none for anything
    /// else).
    pub fn entries(&self) -> impl Iterator<Item = (&str, &Node<'a>)> {
        let (map, fields) = match &self.value {
            Value::Map(entries) => (entries.as_slice(), &[][..]),
            Value::Fields(fields) => (&[][..], fields.as_ref()),
            _ => (&[][..], &[][..]),
        };
        let map = map.iter().map(|(k, v)| (k.as_ref(), v));
        // A field's key is always a read key; the empty name is never used.
        let fields = fields.iter().map(|v| (v.key.map_or("", ReadKey::name), v));
        map.chain(fields)
    }

    /// A word for error messages: what the value is.
    pub fn type_name(&self) -> &'static str {
        match &self.value {
            Value::Null => "null",
            Value::Bool(_) => "a boolean",
            Value::Number(_) => "a number",
            Value::Str(_) => "a string",
            Value::Plain(_) => "a scalar",
            Value::Seq(_) => "a list",
            Value::Map(_) | Value::Fields(_) => "an object",
        }
    }
}

/// Why a document could not be parsed, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SyntaxError {
    pub position: Position,
    pub message: String,
}

/// The parsed documents of one input. A JSON input is always one document.
pub struct Documents<'a> {
    pub source: Source<'a>,
    pub docs: Vec<Node<'a>>,
}

/// Parses `text` as JSON when its first non-blank character is `{` or `[`, and
/// as YAML otherwise (section 2, Dumps).
pub fn parse(text: &str) -> Result<Documents<'_>, SyntaxError> {
    parse_with(text, json::parse)
}

/// [`parse`], with a big JSON List's items parsed by two threads (see
/// [`json::parse_on_two_threads`]); the same documents, or the same error.
#[cfg(not(target_arch = "wasm32"))]
pub fn parse_on_two_threads(text: &str) -> Result<Documents<'_>, SyntaxError> {
    parse_with(text, json::parse_on_two_threads)
}

/// A big JSON dump read piece by piece from `input` (about `len` bytes),
/// its kept strings in `arenas` (see [`json::stream`]): the documents
/// [`parse_on_two_threads`] gives for the same text, but for positions,
/// which are not kept. Unstreamed when the input has an error (parse it
/// whole to name it) or is not a JSON object with an `items` array.
#[cfg(not(target_arch = "wasm32"))]
pub fn parse_streamed<'b>(
    input: &dyn ReadAt,
    len: u64,
    arenas: &'b mut Arenas,
) -> Result<Documents<'b>, Unstreamed> {
    let doc = json::stream::parse(input, len, arenas)?;
    Ok(Documents {
        source: Source::new("", SourceKind::Json),
        docs: vec![doc],
    })
}

#[cfg(not(target_arch = "wasm32"))]
pub use json::stream::{Arenas, ReadAt, Unstreamed};

fn parse_with<'a>(
    text: &'a str,
    json_parse: fn(&'a str) -> Result<Node<'a>, json::Error>,
) -> Result<Documents<'a>, SyntaxError> {
    let first = text
        .chars()
        .find(|c| !c.is_whitespace() && *c != '\u{feff}');
    if matches!(first, Some('{') | Some('[')) {
        let source = Source::new(text, SourceKind::Json);
        let doc = json_parse(text).map_err(|e| SyntaxError {
            position: source.position(e.at),
            message: e.message,
        })?;
        Ok(Documents {
            source,
            docs: vec![doc],
        })
    } else {
        let source = Source::new(text, SourceKind::Yaml);
        let docs = yaml::parse(text)?;
        Ok(Documents { source, docs })
    }
}

mod json {
    //! A strict RFC 8259 parser into [`Node`]s. Hand-written rather than
    //! serde_json's `Value` because it has to keep positions and borrow strings.

    use super::*;

    #[cfg(not(target_arch = "wasm32"))]
    pub(super) mod stream;

    pub struct Error {
        pub at: u32,
        pub message: String,
    }

    pub fn parse(text: &str) -> Result<Node<'_>, Error> {
        Parser::new(text).document()
    }

    /// The depth of a List's items (the document is 0, its `items` 1).
    const ITEM_DEPTH: usize = 2;

    /// Inputs smaller than this are parsed by one thread.
    #[cfg(not(target_arch = "wasm32"))]
    const TWO_THREADS_MIN: usize = 1 << 20;

    /// How far past the middle of the input a place to split it is looked for.
    #[cfg(not(target_arch = "wasm32"))]
    const SPLIT_WINDOW: usize = 256 << 10;

    /// What the second thread found from the split: the items from there to
    /// the end of their array, and the offset after its `]`.
    type Tail<'a> = Result<(Vec<Node<'a>>, usize), Error>;

    /// [`parse`], but a second thread parses, from a guessed item start in
    /// the middle of the input, the rest of the array it belongs to, while
    /// this thread parses from the start. When this thread then reaches an
    /// item of a List's items array (depth [`ITEM_DEPTH`]) at exactly that
    /// offset, it takes the second thread's items (or its error) instead of
    /// parsing them again: parsing an item depends on nothing but the text
    /// from its offset and its depth, so the tree, or the first error, is the
    /// one [`parse`] gives. A wrong guess only costs the second thread's work.
    #[cfg(not(target_arch = "wasm32"))]
    pub fn parse_on_two_threads(text: &str) -> Result<Node<'_>, Error> {
        use std::sync::atomic::{AtomicBool, Ordering};

        let Some(split) = split_guess(text.as_bytes()) else {
            return parse(text);
        };
        let abandoned = AtomicBool::new(false);
        std::thread::scope(|scope| {
            let (send, receive) = std::sync::mpsc::channel();
            let abandoned = &abandoned;
            let spawned = std::thread::Builder::new().spawn_scoped(scope, move || {
                let mut p = Parser::new(text);
                p.i = split;
                // A closed channel means the first thread is done without it.
                let _ = send.send(p.items_to_end(ITEM_DEPTH, abandoned));
            });
            let mut p = Parser::new(text);
            if spawned.is_ok() {
                p.tail = Some((split, receive));
            }
            let doc = p.document();
            // A wrong guess: the second thread stops at its next item.
            abandoned.store(true, Ordering::Relaxed);
            doc
        })
    }

    /// Where a List's item probably starts, just past the middle of `bytes`:
    /// a `{` that begins a line (after blanks) and follows a line ending in
    /// `},`, the least indented such in a window (kubectl indents deeper
    /// objects further; a one-item-per-line dump puts items at column 1).
    /// None for small inputs, or when no line looks like that.
    #[cfg(not(target_arch = "wasm32"))]
    pub(super) fn split_guess(bytes: &[u8]) -> Option<usize> {
        if bytes.len() < TWO_THREADS_MIN {
            return None;
        }
        let from = bytes.len() / 2;
        let window = bytes.get(from..(from + SPLIT_WINDOW).min(bytes.len()))?;
        Some(from + item_start_in(window)?)
    }

    /// [`split_guess`]'s search in `window`: the offset in it of the least
    /// indented `{` that begins a line after a line ending in `},`.
    #[cfg(not(target_arch = "wasm32"))]
    fn item_start_in(window: &[u8]) -> Option<usize> {
        let is_blank = |b: &u8| matches!(b, b' ' | b'\t' | b'\r');
        let mut best: Option<(usize, usize)> = None;
        for (newline, _) in window.iter().enumerate().filter(|(_, b)| **b == b'\n') {
            let before = window.get(..newline)?;
            let mut back = before.iter().rev().skip_while(|b| is_blank(b));
            if back.next() != Some(&b',')
                || back.find(|b| !is_blank(b) && **b != b'\n') != Some(&b'}')
            {
                continue;
            }
            let after = window.get(newline + 1..)?;
            let indent = after.iter().take_while(|b| is_blank(b)).count();
            if after.get(indent) == Some(&b'{') && best.is_none_or(|(_, least)| indent < least) {
                best = Some((newline + 1 + indent, indent));
            }
        }
        best.map(|(at, _)| at)
    }

    /// Where the strings a tree keeps live: in the text parsed, or
    /// (natively, for a stream) copied out of a window of it into an arena.
    pub(super) trait Keep<'t, 'a> {
        fn keep(&self, text: &'t str) -> &'a str;
    }

    /// The strings stay in the text: a whole input's tree borrows it.
    pub(super) struct InText;

    impl<'a> Keep<'a, 'a> for InText {
        fn keep(&self, text: &'a str) -> &'a str {
            text
        }
    }

    #[cfg(not(target_arch = "wasm32"))]
    impl<'t, 'a> Keep<'t, 'a> for &'a bumpalo::Bump {
        fn keep(&self, text: &'t str) -> &'a str {
            self.alloc_str(text)
        }
    }

    impl<'a> Parser<'a, 'a, InText> {
        fn new(text: &'a str) -> Self {
            Parser::keeping(text, InText)
        }

        /// The whole input as one document.
        fn document(&mut self) -> Result<Node<'a>, Error> {
            let p = self;
            p.skip_ws();
            if p.rest().starts_with("\u{feff}".as_bytes()) {
                p.i += 3;
            }
            let node = p.value(0, false)?;
            p.skip_ws();
            if p.i < p.bytes.len() {
                return Err(p.err("unexpected text after the JSON document"));
            }
            Ok(node)
        }

        /// The second thread's work: the items of an array from the cursor
        /// to its `]`, exactly as [`Parser::array`]'s loop parses them, and
        /// the offset after it. Stops early (with a result no one reads) once
        /// the first thread is done.
        #[cfg(not(target_arch = "wasm32"))]
        fn items_to_end(
            &mut self,
            depth: usize,
            abandoned: &std::sync::atomic::AtomicBool,
        ) -> Tail<'a> {
            let mut items = Vec::new();
            loop {
                self.skip_ws();
                items.push(self.value(depth, false)?);
                if self.closes_after_member(b']')? {
                    return Ok((items, self.i));
                }
                if abandoned.load(std::sync::atomic::Ordering::Relaxed) {
                    return Err(self.err("abandoned"));
                }
            }
        }
    }

    /// The offset of the first byte at or after `i` that is a `"`, a `\\`
    /// or a control character (the length when there is none): where a
    /// string's fast path stops. Most of a dump is string content, and
    /// looking at it eight bytes at a time is what keeps the parser near the
    /// speed of reading the file. A word that holds such a byte gives its
    /// offset from the lowest bit of the word's mask, with no byte loop: the
    /// masks below are exact up to their first match (a borrow only
    /// propagates upwards, past it).
    pub(super) fn plain_run_end(bytes: &[u8], mut i: usize) -> usize {
        const ONES: u64 = 0x0101_0101_0101_0101;
        const HIGHS: u64 = 0x8080_8080_8080_8080;
        /// The high bit of each byte of `word` below `n` (exact for n ≤ 128
        /// up to the first such byte).
        fn bytes_below(word: u64, n: u8) -> u64 {
            word.wrapping_sub(ONES * u64::from(n)) & !word & HIGHS
        }
        fn bytes_equal(word: u64, b: u8) -> u64 {
            bytes_below(word ^ (ONES * u64::from(b)), 1)
        }
        while let Some(chunk) = bytes.get(i..i + 8) {
            // A failed conversion (impossible for eight bytes) reads as
            // zeros, which stops the run at its first byte.
            let word = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
            let special =
                bytes_equal(word, b'"') | bytes_equal(word, b'\\') | bytes_below(word, 0x20);
            if special != 0 {
                return i + (special.trailing_zeros() / 8) as usize;
            }
            i += 8;
        }
        while let Some(&b) = bytes.get(i) {
            if b == b'"' || b == b'\\' || b < 0x20 {
                break;
            }
            i += 1;
        }
        i
    }

    /// Parses `text`, keeping the strings of its tree where `keep` says.
    struct Parser<'t, 'a, K> {
        text: &'t str,
        bytes: &'t [u8],
        keep: K,
        i: usize,
        /// The members of every object being parsed, innermost last: an
        /// object's entries are gathered here and moved out in one
        /// allocation of the exact size when it closes, instead of growing
        /// a vector of their own (a dump's tree has as many entries as the
        /// input has kilobytes, and is dropped as a whole).
        entries: Vec<(Cow<'a, str>, Node<'a>)>,
        /// The same for the fields of objects outside labels and annotations.
        fields: Vec<Node<'a>>,
        /// The same for the items of arrays.
        items: Vec<Node<'a>>,
        /// Where another thread parses the rest of an items array from, and
        /// how its result arrives (see [`parse_on_two_threads`]).
        tail: Option<(usize, std::sync::mpsc::Receiver<Tail<'a>>)>,
    }

    impl<'t, 'a, K: Keep<'t, 'a>> Parser<'t, 'a, K> {
        fn keeping(text: &'t str, keep: K) -> Self {
            Parser {
                text,
                bytes: text.as_bytes(),
                keep,
                i: 0,
                entries: Vec::new(),
                fields: Vec::new(),
                items: Vec::new(),
                tail: None,
            }
        }

        /// A string of the tree, where it is kept.
        fn kept(&self, text: Cow<'t, str>) -> Cow<'a, str> {
            match text {
                Cow::Borrowed(text) => Cow::Borrowed(self.keep.keep(text)),
                Cow::Owned(text) => Cow::Owned(text),
            }
        }

        /// The input not read yet (empty past the end).
        fn rest(&self) -> &'t [u8] {
            self.bytes.get(self.i..).unwrap_or_default()
        }

        fn err(&self, message: impl Into<String>) -> Error {
            self.err_at(self.i, message)
        }

        fn err_at(&self, at: usize, message: impl Into<String>) -> Error {
            Error {
                at: at as u32,
                message: message.into(),
            }
        }

        fn skip_ws(&mut self) {
            while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.bytes.get(self.i) {
                self.i += 1;
            }
        }

        /// A value; `free_keys` (labels and annotations) keeps the keys of an
        /// object that [`LABELS_READ`] or [`ANNOTATIONS_READ`] name, and any
        /// key whose value is not a string or null, otherwise only the keys
        /// the spec reads are kept.
        fn value(&mut self, depth: usize, free_keys: bool) -> Result<Node<'a>, Error> {
            if depth >= MAX_DEPTH {
                return Err(self.err(format!("nested more than {MAX_DEPTH} levels deep")));
            }
            let at = self.i as u32;
            let value = match self.bytes.get(self.i) {
                None => return Err(self.err("unexpected end of input, expected a value")),
                Some(b'{') => self.object(depth, free_keys)?,
                Some(b'[') => self.array(depth)?,
                Some(b'"') => {
                    let text = self.string()?;
                    Value::Str(self.kept(text))
                }
                Some(b'-' | b'0'..=b'9') => Value::Number(self.number()?),
                Some(b't') => self.literal("true", Value::Bool(true))?,
                Some(b'f') => self.literal("false", Value::Bool(false))?,
                Some(b'n') => self.literal("null", Value::Null)?,
                Some(_) => {
                    return Err(self.err(format!("expected a value, found {}", self.found())))
                }
            };
            Ok(Node {
                at,
                key: None,
                value,
            })
        }

        /// The character at the cursor, quoted, for messages.
        fn found(&self) -> String {
            match self.text.get(self.i..).and_then(|rest| rest.chars().next()) {
                Some(c) if c.is_control() => format!("{:?}", c),
                Some(c) => format!("'{c}'"),
                None => "end of input".to_string(),
            }
        }

        fn literal(&mut self, word: &str, value: Value<'a>) -> Result<Value<'a>, Error> {
            if self.rest().starts_with(word.as_bytes()) {
                self.i += word.len();
                Ok(value)
            } else {
                Err(self.err(format!("expected a value, found {}", self.found())))
            }
        }

        /// Checks a value's syntax without building it: most of a Pod (its
        /// containers, volumes and managedFields) is never read.
        fn skip(&mut self, depth: usize) -> Result<(), Error> {
            if depth >= MAX_DEPTH {
                return Err(self.err(format!("nested more than {MAX_DEPTH} levels deep")));
            }
            match self.bytes.get(self.i) {
                Some(b'{') => {
                    if self.opens_empty(b'}') {
                        return Ok(());
                    }
                    loop {
                        self.skip_ws();
                        self.key()?;
                        self.skip(depth + 1)?;
                        if self.closes_after_member(b'}')? {
                            return Ok(());
                        }
                    }
                }
                Some(b'[') => {
                    if self.opens_empty(b']') {
                        return Ok(());
                    }
                    loop {
                        self.skip_ws();
                        self.skip(depth + 1)?;
                        if self.closes_after_member(b']')? {
                            return Ok(());
                        }
                    }
                }
                // A scalar is checked as `value` would, without building a
                // node to drop: the same arms and the same errors.
                Some(b'"') => self.string().map(drop),
                Some(b'-' | b'0'..=b'9') => self.number_text().map(drop),
                Some(b't') => self.literal("true", Value::Bool(true)).map(drop),
                Some(b'f') => self.literal("false", Value::Bool(false)).map(drop),
                Some(b'n') => self.literal("null", Value::Null).map(drop),
                None => Err(self.err("unexpected end of input, expected a value")),
                Some(_) => Err(self.err(format!("expected a value, found {}", self.found()))),
            }
        }

        /// A key and its `:`, leaving the cursor on the value.
        fn key(&mut self) -> Result<Cow<'t, str>, Error> {
            if self.bytes.get(self.i) != Some(&b'"') {
                return Err(self.err(format!(
                    "expected a string key in an object, found {}",
                    self.found()
                )));
            }
            let key = self.string()?;
            self.skip_ws();
            if self.bytes.get(self.i) != Some(&b':') {
                return Err(self.err(format!("expected ':' after a key, found {}", self.found())));
            }
            self.i += 1;
            self.skip_ws();
            Ok(key)
        }

        fn object(&mut self, depth: usize, free_keys: bool) -> Result<Value<'a>, Error> {
            if free_keys {
                self.free_object(depth)
            } else {
                self.fields_object(depth)
            }
        }

        /// An object whose read keys are kept, as [`Value::Fields`].
        fn fields_object(&mut self, depth: usize) -> Result<Value<'a>, Error> {
            if self.opens_empty(b'}') {
                return Ok(Value::Fields(Box::default()));
            }
            let start = self.fields.len();
            loop {
                self.skip_ws();
                let key = self.key()?;
                if let Some(read) = read_key_filtered(&key) {
                    let free = matches!(read, ReadKey::Labels | ReadKey::Annotations);
                    let mut value = self.value(depth + 1, free)?;
                    value.key = Some(read);
                    self.fields.push(value);
                } else {
                    self.skip(depth + 1)?;
                }
                if self.closes_after_member(b'}')? {
                    return Ok(Value::Fields(self.fields.drain(start..).collect()));
                }
            }
        }

        /// A labels or annotations object, as a [`Value::Map`] that keeps
        /// its keys.
        fn free_object(&mut self, depth: usize) -> Result<Value<'a>, Error> {
            if self.opens_empty(b'}') {
                return Ok(Value::Map(Vec::new()));
            }
            let start = self.entries.len();
            loop {
                self.skip_ws();
                let key = self.key()?;
                let mut value = self.value(depth + 1, false)?;
                // A label or annotation no rule reads is dropped when it is
                // a string or null: reading it could neither fail nor
                // matter. Any other value stays, for the wrong-type error
                // reading the map gives.
                if is_read_free_key(&key) || !matches!(value.value, Value::Str(_) | Value::Null) {
                    value.key = read_key_filtered(&key);
                    let key = self.kept(key);
                    self.entries.push((key, value));
                }
                if self.closes_after_member(b'}')? {
                    return Ok(Value::Map(self.entries.drain(start..).collect()));
                }
            }
        }

        fn array(&mut self, depth: usize) -> Result<Value<'a>, Error> {
            if self.opens_empty(b']') {
                return Ok(Value::Seq(Vec::new()));
            }
            let start = self.items.len();
            loop {
                self.skip_ws();
                if depth + 1 == ITEM_DEPTH {
                    if let Some(end) = self.take_tail()? {
                        self.i = end;
                        return Ok(Value::Seq(self.items.drain(start..).collect()));
                    }
                }
                let item = self.value(depth + 1, false)?;
                self.items.push(item);
                if self.closes_after_member(b']')? {
                    return Ok(Value::Seq(self.items.drain(start..).collect()));
                }
            }
        }

        /// At the offset another thread parsed the rest of this array from:
        /// its items (pushed) and the offset after the array, or its error.
        /// None elsewhere, or when that thread failed to answer (then this
        /// one parses on).
        fn take_tail(&mut self) -> Result<Option<usize>, Error> {
            if self.tail.as_ref().is_none_or(|(at, _)| *at != self.i) {
                return Ok(None);
            }
            let Some((_, receive)) = self.tail.take() else {
                return Ok(None);
            };
            match receive.recv() {
                Ok(tail) => {
                    let (items, end) = tail?;
                    self.items.extend(items);
                    Ok(Some(end))
                }
                Err(_) => Ok(None),
            }
        }

        /// Steps over `{` or `[`; true (and past `close`) when it is empty.
        fn opens_empty(&mut self, close: u8) -> bool {
            self.i += 1;
            self.skip_ws();
            let empty = self.bytes.get(self.i) == Some(&close);
            if empty {
                self.i += 1;
            }
            empty
        }

        /// After a member: `,` continues (false), `close` ends (true).
        fn closes_after_member(&mut self, close: u8) -> Result<bool, Error> {
            self.skip_ws();
            match self.bytes.get(self.i) {
                Some(b',') => {
                    self.i += 1;
                    Ok(false)
                }
                Some(&c) if c == close => {
                    self.i += 1;
                    Ok(true)
                }
                _ => {
                    let container = if close == b'}' {
                        "an object"
                    } else {
                        "an array"
                    };
                    Err(self.err(format!(
                        "expected ',' or '{}' in {container}, found {}",
                        char::from(close),
                        self.found()
                    )))
                }
            }
        }

        fn number(&mut self) -> Result<&'a str, Error> {
            let text = self.number_text()?;
            Ok(self.keep.keep(text))
        }

        fn number_text(&mut self) -> Result<&'t str, Error> {
            let start = self.i;
            let digits = |p: &mut Self| {
                let from = p.i;
                while let Some(b'0'..=b'9') = p.bytes.get(p.i) {
                    p.i += 1;
                }
                p.i - from
            };
            if self.bytes.get(self.i) == Some(&b'-') {
                self.i += 1;
            }
            match self.bytes.get(self.i) {
                Some(b'0') => self.i += 1,
                Some(b'1'..=b'9') => {
                    digits(self);
                }
                _ => return Err(self.err_at(start, "invalid number")),
            }
            if self.bytes.get(self.i) == Some(&b'.') {
                self.i += 1;
                if digits(self) == 0 {
                    return Err(self.err_at(start, "invalid number: no digit after '.'"));
                }
            }
            if let Some(b'e' | b'E') = self.bytes.get(self.i) {
                self.i += 1;
                if let Some(b'+' | b'-') = self.bytes.get(self.i) {
                    self.i += 1;
                }
                if digits(self) == 0 {
                    return Err(self.err_at(start, "invalid number: no digit in the exponent"));
                }
            }
            Ok(&self.text[start..self.i])
        }

        fn string(&mut self) -> Result<Cow<'t, str>, Error> {
            let open = self.i;
            self.i += 1;
            let start = self.i;
            // Fast path: no escapes, borrow the slice.
            loop {
                self.i = plain_run_end(self.bytes, self.i);
                match self.bytes.get(self.i) {
                    None => return Err(self.err_at(open, "unterminated string")),
                    Some(b'"') => {
                        let s = &self.text[start..self.i];
                        self.i += 1;
                        return Ok(Cow::Borrowed(s));
                    }
                    Some(b'\\') => break,
                    Some(&b) if b < 0x20 => {
                        return Err(self.err("control character in a string; escape it"))
                    }
                    Some(_) => self.i += 1,
                }
            }
            let mut out = String::from(&self.text[start..self.i]);
            loop {
                match self.bytes.get(self.i) {
                    None => return Err(self.err_at(open, "unterminated string")),
                    Some(b'"') => {
                        self.i += 1;
                        return Ok(Cow::Owned(out));
                    }
                    Some(b'\\') => {
                        let esc = self.i;
                        self.i += 1;
                        let c = match self.bytes.get(self.i) {
                            Some(b'"') => '"',
                            Some(b'\\') => '\\',
                            Some(b'/') => '/',
                            Some(b'b') => '\u{8}',
                            Some(b'f') => '\u{c}',
                            Some(b'n') => '\n',
                            Some(b'r') => '\r',
                            Some(b't') => '\t',
                            Some(b'u') => {
                                self.i += 1;
                                let c = self.unicode_escape(esc)?;
                                out.push(c);
                                continue;
                            }
                            _ => return Err(self.err_at(esc, "invalid escape in a string")),
                        };
                        self.i += 1;
                        out.push(c);
                    }
                    Some(&b) if b < 0x20 => {
                        return Err(self.err("control character in a string; escape it"))
                    }
                    Some(_) => {
                        // Copy one whole UTF-8 character.
                        let rest = &self.text[self.i..];
                        let c = rest.chars().next().unwrap_or('\u{fffd}');
                        out.push(c);
                        self.i += c.len_utf8();
                    }
                }
            }
        }

        fn hex4(&mut self, esc: usize) -> Result<u32, Error> {
            let hex = self
                .text
                .get(self.i..self.i + 4)
                .filter(|h| h.bytes().all(|b| b.is_ascii_hexdigit()))
                .ok_or_else(|| self.err_at(esc, "invalid \\u escape: expected four hex digits"))?;
            self.i += 4;
            u32::from_str_radix(hex, 16)
                .map_err(|_| self.err_at(esc, "invalid \\u escape: expected four hex digits"))
        }

        fn unicode_escape(&mut self, esc: usize) -> Result<char, Error> {
            let high = self.hex4(esc)?;
            let code = if (0xD800..0xDC00).contains(&high) {
                if !self.rest().starts_with(b"\\u") {
                    return Err(self.err_at(esc, "unpaired surrogate in a \\u escape"));
                }
                self.i += 2;
                let low = self.hex4(esc)?;
                if !(0xDC00..0xE000).contains(&low) {
                    return Err(self.err_at(esc, "unpaired surrogate in a \\u escape"));
                }
                0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00)
            } else {
                high
            };
            char::from_u32(code)
                .ok_or_else(|| self.err_at(esc, "unpaired surrogate in a \\u escape"))
        }
    }
}

mod yaml {
    //! YAML through saphyr-parser's event stream: a maintained, pure-Rust
    //! parser that builds for wasm32 and reports positions.
    //!
    //! Anchors cost nothing and aliases at most a budget. An anchored node,
    //! once complete, moves (it is not copied) into a map keyed by its
    //! anchor's id (saphyr gives each definition its own id, so a re-defined
    //! name is a new one), and a placeholder takes its place in its parent.
    //! An alias is the only copy: of the anchored node, with the anchored
    //! nodes its placeholders stand for copied in their places, every node
    //! charged to [`MAX_ALIAS_NODES`] before any is copied, from sizes kept
    //! as the tree grows rather than counted by walking it. When the
    //! document ends, each anchored node moves back into its placeholder:
    //! the tree is the one a copy per alias gives.
    //!
    //! An alias may not nest the tree deeper than [`MAX_DEPTH`] either: a
    //! chain of anchors each a few hundred levels around an alias to the
    //! last is small, but its copy would nest tens of thousands of levels,
    //! and copying, dropping or converting that tree overflows the stack.

    use saphyr_parser::{Event, Parser, ScalarStyle, Span};

    use super::*;
    use crate::hash;

    /// How big a complete node is, known without walking it.
    #[derive(Clone, Copy, Default)]
    struct Size {
        /// Its nodes, as an alias to it copies them: a mapping's keys are
        /// text, not nodes.
        nodes: usize,
        /// How many collections deep it nests (0 for a scalar): what an
        /// alias to it adds to the depth where the alias stands.
        levels: usize,
    }

    impl Size {
        const SCALAR: Size = Size {
            nodes: 1,
            levels: 0,
        };

        /// A collection whose children together are `inner`.
        fn around(inner: Size) -> Size {
            Size {
                nodes: inner.nodes.saturating_add(1),
                levels: inner.levels.saturating_add(1),
            }
        }

        /// Adds a child.
        fn add(&mut self, child: Size) {
            self.nodes = self.nodes.saturating_add(child.nodes);
            self.levels = self.levels.max(child.levels);
        }
    }

    /// A collection being read.
    struct Frame<'a> {
        at: u32,
        anchor: usize,
        /// Its children so far, together.
        inner: Size,
        kind: Kind<'a>,
    }

    enum Kind<'a> {
        Seq(Vec<Node<'a>>),
        Map {
            entries: Vec<(Cow<'a, str>, Node<'a>)>,
            key: Option<Cow<'a, str>>,
        },
    }

    /// A complete anchored node, out of its document's tree until the
    /// document ends, and its size, which an alias to it copies.
    struct Anchored<'a> {
        node: Node<'a>,
        size: Size,
    }

    type Anchors<'a> = hash::Map<u32, Anchored<'a>>;

    /// What stands in the tree for the anchored node of anchor `id` while
    /// that node is in the anchors: a `Number`, which YAML never makes
    /// otherwise, its `at` the id (the node keeps its own position).
    fn placeholder(id: u32) -> Node<'static> {
        Node {
            at: id,
            key: None,
            value: Value::Number(""),
        }
    }

    fn placeholder_of(node: &Node<'_>) -> Option<u32> {
        matches!(node.value, Value::Number(_)).then_some(node.at)
    }

    fn error(span: &Span, message: impl Into<String>) -> SyntaxError {
        SyntaxError {
            position: Position {
                line: span.start.line(),
                column: span.start.col() + 1,
            },
            message: message.into(),
        }
    }

    /// Ids count the stream's anchor definitions, of at least two
    /// characters each: more than fit a placeholder's `at` need an input
    /// too long for positions anyway.
    fn anchor_id(anchor: usize, span: &Span) -> Result<u32, SyntaxError> {
        u32::try_from(anchor).map_err(|_| error(span, "too many anchors"))
    }

    /// `node` as its parent (or the document) holds it: itself, or when it
    /// is anchored a placeholder, the node moving into `anchors`.
    fn keep<'a>(
        anchor: usize,
        node: Node<'a>,
        size: Size,
        anchors: &mut Anchors<'a>,
        waiting: &mut usize,
        span: &Span,
    ) -> Result<Node<'a>, SyntaxError> {
        if anchor == 0 {
            return Ok(node);
        }
        let id = anchor_id(anchor, span)?;
        anchors.insert(id, Anchored { node, size });
        *waiting += 1;
        Ok(placeholder(id))
    }

    /// A copy of `node` for an alias, with the anchored node of each
    /// placeholder in it copied in its place (keeping the key its parent
    /// gave the placeholder); `copied` counts every node made. None only
    /// if a placeholder's node is not in `anchors`, which cannot happen:
    /// each stays there until its document ends.
    fn copy<'a>(node: &Node<'a>, anchors: &Anchors<'a>, copied: &mut usize) -> Option<Node<'a>> {
        let source = match placeholder_of(node) {
            Some(id) => &anchors.get(&id)?.node,
            None => node,
        };
        *copied += 1;
        let value = match &source.value {
            Value::Seq(items) => Value::Seq(
                items
                    .iter()
                    .map(|item| copy(item, anchors, copied))
                    .collect::<Option<_>>()?,
            ),
            Value::Map(entries) => Value::Map(
                entries
                    .iter()
                    .map(|(k, v)| Some((k.clone(), copy(v, anchors, copied)?)))
                    .collect::<Option<_>>()?,
            ),
            // A scalar (YAML makes no `Fields`).
            other => other.clone(),
        };
        Some(Node {
            at: source.at,
            key: node.key,
            value,
        })
    }

    /// Moves the anchored node of each placeholder under `node` back into
    /// it, keeping the placeholder's key, until none is `waiting`. Each
    /// placeholder occurs once (an alias's copy has none), so each node
    /// moves once, and the walk ends at the last placeholder.
    fn resolve<'a>(node: &mut Node<'a>, anchors: &mut Anchors<'a>, waiting: &mut usize) {
        if *waiting == 0 {
            return;
        }
        if let Some(anchored) = placeholder_of(node).and_then(|id| anchors.remove(&id)) {
            let key = node.key;
            *node = anchored.node;
            node.key = key;
            *waiting -= 1;
        }
        match &mut node.value {
            Value::Seq(items) => items
                .iter_mut()
                .for_each(|item| resolve(item, anchors, waiting)),
            Value::Map(entries) => entries
                .iter_mut()
                .for_each(|(_, v)| resolve(v, anchors, waiting)),
            _ => {}
        }
    }

    /// Ends a document: its tree complete, its anchors forgotten.
    fn finish<'a>(
        current: &mut Option<Node<'a>>,
        anchors: &mut Anchors<'a>,
        waiting: &mut usize,
        docs: &mut Vec<Node<'a>>,
    ) {
        if let Some(mut doc) = current.take() {
            resolve(&mut doc, anchors, waiting);
            docs.push(doc);
        }
        anchors.clear();
        *waiting = 0;
    }

    pub fn parse(text: &str) -> Result<Vec<Node<'_>>, SyntaxError> {
        parse_counting(text).0
    }

    /// [`parse`], and how many nodes it copied: for aliases, and for
    /// anchored keys (text in the tree, nodes in the anchors). The tests
    /// hold it to the budget.
    pub(super) fn parse_counting(text: &str) -> (Result<Vec<Node<'_>>, SyntaxError>, usize) {
        let mut copied = 0;
        let docs = read(text, &mut copied);
        (docs, copied)
    }

    fn read<'a>(text: &'a str, copied: &mut usize) -> Result<Vec<Node<'a>>, SyntaxError> {
        let mut parser = Parser::new_from_str(text);
        let mut docs = Vec::new();
        let mut stack: Vec<Frame<'_>> = Vec::new();
        let mut anchors: Anchors<'_> = hash::map(0);
        // Placeholders in the document whose node is still in `anchors`.
        let mut waiting = 0usize;
        // What aliases have copied, in the whole input: the budget is the
        // input's, not each document's.
        let mut alias_nodes = 0usize;
        let mut current: Option<Node<'_>> = None;
        while let Some(next) = parser.next_event() {
            let (event, span) = next.map_err(|e| SyntaxError {
                position: Position {
                    line: e.marker().line(),
                    column: e.marker().col() + 1,
                },
                message: e.info().to_string(),
            })?;
            let at = span.start.index() as u32;
            // A complete node, its anchor (0 for none) and its size.
            let completed: Option<(usize, Node<'_>, Size)> = match event {
                Event::StreamStart | Event::Nothing | Event::DocumentStart(_) => None,
                Event::StreamEnd => break,
                Event::DocumentEnd => {
                    finish(&mut current, &mut anchors, &mut waiting, &mut docs);
                    None
                }
                Event::Alias(id) => {
                    // An anchor whose node is still open is not in the map
                    // yet: a node cannot contain itself.
                    let anchored = u32::try_from(id)
                        .ok()
                        .and_then(|id| anchors.get(&id))
                        .ok_or_else(|| error(&span, "alias to an unknown anchor"))?;
                    alias_nodes = alias_nodes.saturating_add(anchored.size.nodes);
                    if alias_nodes > MAX_ALIAS_NODES {
                        return Err(error(&span, "aliases expand to too many nodes"));
                    }
                    // The copy's collections open where the alias stands, as
                    // if written there: none may be deeper than a written one
                    // may (see the SequenceStart check).
                    if stack.len().saturating_add(anchored.size.levels) > MAX_DEPTH {
                        return Err(error(
                            &span,
                            format!("nested more than {MAX_DEPTH} levels deep"),
                        ));
                    }
                    let node = copy(&anchored.node, &anchors, copied)
                        .ok_or_else(|| error(&span, "alias to an unknown anchor"))?;
                    Some((
                        0,
                        Node {
                            at,
                            key: None,
                            value: node.value,
                        },
                        anchored.size,
                    ))
                }
                Event::Scalar(text, style, anchor, tag) => {
                    let tag_suffix = tag.as_ref().map(|t| t.suffix.as_str());
                    let value = match (style, tag_suffix) {
                        (_, Some("str")) => Value::Str(text),
                        (_, Some("null")) => Value::Null,
                        (ScalarStyle::Plain, _) => match text.as_ref() {
                            "" | "~" | "null" | "Null" | "NULL" => Value::Null,
                            _ => Value::Plain(text),
                        },
                        _ => Value::Str(text),
                    };
                    Some((
                        anchor,
                        Node {
                            at,
                            key: None,
                            value,
                        },
                        Size::SCALAR,
                    ))
                }
                Event::SequenceStart(anchor, _) => {
                    if stack.len() >= MAX_DEPTH {
                        return Err(error(
                            &span,
                            format!("nested more than {MAX_DEPTH} levels deep"),
                        ));
                    }
                    stack.push(Frame {
                        at,
                        anchor,
                        inner: Size::default(),
                        kind: Kind::Seq(Vec::new()),
                    });
                    None
                }
                Event::MappingStart(anchor, _) => {
                    if stack.len() >= MAX_DEPTH {
                        return Err(error(
                            &span,
                            format!("nested more than {MAX_DEPTH} levels deep"),
                        ));
                    }
                    stack.push(Frame {
                        at,
                        anchor,
                        inner: Size::default(),
                        kind: Kind::Map {
                            entries: Vec::new(),
                            key: None,
                        },
                    });
                    None
                }
                Event::SequenceEnd => match stack.pop() {
                    Some(Frame {
                        at,
                        anchor,
                        inner,
                        kind: Kind::Seq(items),
                    }) => Some((
                        anchor,
                        Node {
                            at,
                            key: None,
                            value: Value::Seq(items),
                        },
                        Size::around(inner),
                    )),
                    _ => return Err(error(&span, "unbalanced sequence end")),
                },
                Event::MappingEnd => match stack.pop() {
                    Some(Frame {
                        at,
                        anchor,
                        inner,
                        kind: Kind::Map { entries, .. },
                    }) => Some((
                        anchor,
                        Node {
                            at,
                            key: None,
                            value: Value::Map(entries),
                        },
                        Size::around(inner),
                    )),
                    _ => return Err(error(&span, "unbalanced mapping end")),
                },
            };
            let Some((anchor, node, size)) = completed else {
                continue;
            };
            let Some(frame) = stack.last_mut() else {
                current = Some(keep(anchor, node, size, &mut anchors, &mut waiting, &span)?);
                continue;
            };
            match &mut frame.kind {
                Kind::Seq(items) => {
                    items.push(keep(anchor, node, size, &mut anchors, &mut waiting, &span)?);
                    frame.inner.add(size);
                }
                Kind::Map { entries, key } => match key.take() {
                    None => {
                        if anchor != 0 && !matches!(node.value, Value::Seq(_) | Value::Map(_)) {
                            // The tree keeps a key as text only; its anchor
                            // keeps the node, for the aliases to it.
                            *copied += 1;
                            let id = anchor_id(anchor, &span)?;
                            anchors.insert(
                                id,
                                Anchored {
                                    node: node.clone(),
                                    size,
                                },
                            );
                        }
                        let k = match node.value {
                            Value::Str(s) | Value::Plain(s) => s,
                            Value::Null => Cow::Borrowed(""),
                            _ => return Err(error(&span, "a mapping key must be a scalar")),
                        };
                        *key = Some(k);
                    }
                    Some(k) => {
                        let mut node = keep(anchor, node, size, &mut anchors, &mut waiting, &span)?;
                        node.key = read_key(&k);
                        entries.push((k, node));
                        frame.inner.add(size);
                    }
                },
            }
        }
        finish(&mut current, &mut anchors, &mut waiting, &mut docs);
        Ok(docs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The word-at-a-time scan stops exactly at the first byte that ends a
    /// string's fast path, wherever it sits in a word or in the bytes left
    /// after the last word, with more special bytes after it or not; a
    /// byte next to one (`!` after `"`, `]` after `\\`, the space after the
    /// controls) or outside ASCII never stops it.
    #[test]
    fn plain_run_end_stops_at_every_special_byte() {
        let plain = [b'a', b'!', b' ', b']', 0x7f, 0x80, 0xc3, 0xff];
        let specials = [b'"', b'\\', 0x00, 0x0a, 0x1f];
        for len in 0..24 {
            for filler in plain {
                let bytes = vec![filler; len];
                for from in 0..=len {
                    assert_eq!(
                        json::plain_run_end(&bytes, from),
                        len,
                        "len {len} from {from}"
                    );
                }
                for special in specials {
                    for at in 0..len {
                        let mut bytes = bytes.clone();
                        bytes[at] = special;
                        // A second special byte later must not move the end.
                        for later in specials {
                            let mut bytes = bytes.clone();
                            if let Some(b) = bytes.get_mut(at + 3) {
                                *b = later;
                            }
                            for from in 0..=at {
                                assert_eq!(
                                    json::plain_run_end(&bytes, from),
                                    at,
                                    "{special:#x} at {at} of {len}, from {from}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn the_key_prefilter_passes_every_read_key_and_stops_others() {
        for key in READ_KEYS {
            assert!(may_be_read_key(key), "{key}");
        }
        for other in [
            "apiVersion",
            "imagePullPolicy",
            "env",
            "",
            "é",
            "volumes",
            "x",
        ] {
            assert!(!may_be_read_key(other), "{other}");
        }
    }

    /// A pod of one container, its one label `label` an escaped string.
    #[cfg(not(target_arch = "wasm32"))]
    fn pod_item(i: usize, label: &str) -> String {
        format!(
            "{{\"kind\":\"Pod\",\"metadata\":{{\"name\":\"p{i}\",\"labels\":{{\"{label}\":\"\\u00e9{i}\"}}}},\"spec\":{{\"containers\":[{{\"name\":\"c\"}}]}}}}"
        )
    }

    /// A kubectl List of `n` such pods, one per line.
    #[cfg(not(target_arch = "wasm32"))]
    fn pod_list(n: usize, label: &str) -> String {
        let items: Vec<String> = (0..n).map(|i| pod_item(i, label)).collect();
        format!(
            "{{\"apiVersion\":\"v1\",\"items\":[\n{}\n],\"kind\":\"List\"}}",
            items.join(",\n")
        )
    }

    /// Parsed on two threads, a List gives the same tree as on one (the
    /// second thread's items spliced in at the split), and each broken
    /// variant the same error, wherever the break is relative to the split.
    // wasm has no threads, and no two-thread entry points to test.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn two_threads_parse_what_one_parses() {
        let text = pod_list(12_000, "a");
        let split = json::split_guess(text.as_bytes()).expect("a split");
        assert!(text[split..].starts_with("{\"kind\":\"Pod\""));
        let shape = |r: Result<Node<'_>, json::Error>| match r {
            Ok(node) => format!("{node:?}"),
            Err(e) => format!("error at {}: {}", e.at, e.message),
        };
        let one = shape(json::parse(&text));
        assert!(one.starts_with("Node"), "{}", &one[..one.len().min(200)]);
        assert_eq!(one, shape(json::parse_on_two_threads(&text)));
        // Breaks before, at, just after and well after the split, and in the
        // document's tail after the items.
        for at in [
            100,
            split - 2,
            split,
            split + 7,
            split + 5_000,
            text.len() - 3,
        ] {
            for bad in ["\u{1}", "]", "\""] {
                let mut broken = text.clone();
                broken.insert_str(at, bad);
                let one = shape(json::parse(&broken));
                // A control character breaks JSON anywhere; the others
                // only outside a string.
                assert!(bad != "\u{1}" || one.starts_with("error"), "at {at}");
                assert_eq!(
                    one,
                    shape(json::parse_on_two_threads(&broken)),
                    "{bad:?} at {at}"
                );
            }
        }
    }

    /// A tree's Debug text without its positions (which a streamed tree
    /// does not keep).
    #[cfg(not(target_arch = "wasm32"))]
    fn without_positions(node: &Node<'_>) -> String {
        fn clear(node: &mut Node<'_>) {
            node.at = 0;
            match &mut node.value {
                Value::Seq(items) => items.iter_mut().for_each(clear),
                Value::Fields(fields) => fields.iter_mut().for_each(clear),
                Value::Map(entries) => entries.iter_mut().for_each(|(_, v)| clear(v)),
                _ => {}
            }
        }
        let mut node = node.clone();
        clear(&mut node);
        format!("{node:?}")
    }

    /// An input read at most `most` bytes per call, as a pipe or a network
    /// file system may give it.
    #[cfg(not(target_arch = "wasm32"))]
    struct Trickle<'t> {
        bytes: &'t [u8],
        most: usize,
    }

    #[cfg(not(target_arch = "wasm32"))]
    impl ReadAt for Trickle<'_> {
        fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
            let from = usize::try_from(offset)
                .unwrap_or(usize::MAX)
                .min(self.bytes.len());
            let n = buf.len().min(self.most).min(self.bytes.len() - from);
            buf[..n].copy_from_slice(&self.bytes[from..from + n]);
            Ok(n)
        }
    }

    /// `text` streamed with windows of `pieces` and reads of at most `most`
    /// bytes: the tree without positions, or None when it gave up.
    #[cfg(not(target_arch = "wasm32"))]
    fn streamed(text: &str, pieces: json::stream::Pieces, most: usize) -> Option<String> {
        let input = Trickle {
            bytes: text.as_bytes(),
            most,
        };
        let mut arenas = Arenas::default();
        json::stream::parse_in_pieces(&input, text.len() as u64, &mut arenas, pieces)
            .ok()
            .map(|doc| without_positions(&doc))
    }

    /// Streamed, a JSON object with `items` is the tree parsed whole,
    /// positions aside, whatever the window's sizes and the reads' lengths,
    /// with the second thread's items taken at the split or not; an input
    /// with an error, or of another shape, is not streamed at all.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn streamed_lists_are_the_trees_parsed_whole() {
        use json::stream::Pieces;
        let tiny = Pieces { head: 1, items: 1 };
        let small = Pieces { head: 7, items: 50 };
        let whole = |text: &str| json::parse(text).ok().map(|doc| without_positions(&doc));
        let check = |text: &str, pieces: Pieces, most: usize| {
            let want = whole(text);
            assert_eq!(
                streamed(text, pieces, most),
                want,
                "{pieces:?}, reads of {most}: {}",
                &text[..text.len().min(300)]
            );
            want.is_some()
        };

        // Small shapes, every window size from one byte up.
        let shapes = [
            r#"{"kind":"List","items":[]}"#,
            r#"{}"#,
            r#"  {"items":[{"kind":"Pod","metadata":{"name":"a","labels":{"x":"1","dispatch.phpboyscout.uk/job-id":"j\u00e9"}}},{"kind":"Pod"}],"kind":"List","metadata":{"resourceVersion":"1"}}  "#,
            r#"{"apiVersion":"v1","items":[{"kind":"Pod","status":{"phase":"Running","restarts":12345,"active":true}}],"items":5,"captured":[{"pod":{"kind":"Pod"}}],"mode":"kueue"}"#,
            r#"{"items":[{"kind":"Pod","metadata":{"name":"é✓"}} , {"kind":"JobSet"} ]}"#,
            // Errors: in an item, after the document, cut short, in an
            // unread member, and in an escape.
            r#"{"items":[{"kind":"Pod",}]}"#,
            r#"{"items":[{"kind":"Pod"}]} x"#,
            r#"{"items":[{"kind":"Pod"}"#,
            r#"{"other":[1,2,tru],"items":[]}"#,
            r#"{"items":[{"kind":"Pod","metadata":{"name":"\u00"}}]}"#,
        ];
        let mut read = 0;
        for text in shapes {
            for head in [1, 2, 3, 5, 8, 13, 64] {
                for items in [1, 4, 9, 33, 1000] {
                    for most in [1, 3, 1 << 20] {
                        read += usize::from(check(text, Pieces { head, items }, most));
                    }
                }
            }
        }
        assert_eq!(read, 5 * 7 * 5 * 3, "the five good shapes stream");
        // Not a JSON object first: for the whole parser.
        for other in [
            "[{\"kind\":\"Pod\"}]",
            "\u{feff}{\"items\":[]}",
            "kind: List\nitems: []\n",
        ] {
            assert_eq!(streamed(other, small, 1 << 20), None, "{other:?}");
        }

        // Random Lists of labels and annotations of every kind.
        let mut rng = Rng::new(0x5eed_0f57_13ea_4501);
        for _ in 0..200 {
            let text = random_list(&mut rng);
            assert!(check(&text, small, 5), "{text}");
            assert!(check(&text, tiny, 1 << 20), "{text}");
        }

        // Over the two-thread size: the split is taken, with every window
        // size, and each break gives up wherever it is.
        let item = |i: usize| pod_item(i, crate::keys::JOB_ID);
        let text = pod_list(12_000, crate::keys::JOB_ID);
        let split = json::split_guess(text.as_bytes()).expect("a split");
        for pieces in [
            Pieces::default(),
            small,
            Pieces {
                head: 1,
                items: 4096,
            },
        ] {
            assert!(check(&text, pieces, 1 << 16), "{pieces:?}");
        }
        for at in [
            100,
            split - 2,
            split,
            split + 7,
            split + 5_000,
            text.len() - 3,
        ] {
            for bad in ["\u{1}", "]", "\""] {
                let mut broken = text.clone();
                broken.insert_str(at, bad);
                check(&broken, small, 1 << 16);
            }
        }

        // A wrong guess: the middle of the input is one big item whose
        // container statuses look like items, one per line. The first
        // thread passes the guess and reads on by itself.
        let containers: Vec<String> = (0..40_000)
            .map(|i| format!("{{\"name\":\"c{i}\",\"image\":\"x\"}}"))
            .collect();
        let big = format!(
            "{{\"kind\":\"Pod\",\"metadata\":{{\"name\":\"big\"}},\"status\":{{\"containerStatuses\":[\n{}\n]}}}}",
            containers.join(",\n")
        );
        let text = format!(
            "{{\"items\":[{},\n{big},\n{}],\"kind\":\"List\"}}",
            item(0),
            item(1)
        );
        let guess = json::split_guess(text.as_bytes()).expect("a guess");
        assert!(
            text[guess..].starts_with("{\"name\":\"c"),
            "the guess is a container"
        );
        assert!(check(&text, Pieces::default(), 1 << 16));
        assert!(check(&text, small, 1 << 16));
    }

    /// `skip` checks an unread scalar with its own arms: every scalar, good
    /// or bad, gives under an unread key exactly what it gives under a read
    /// key of the same length (so the same offset), alone or in a list.
    #[test]
    fn unread_scalars_fail_as_read_ones() {
        let scalars = [
            "true",
            "false",
            "null",
            "tru",
            "fals",
            "nul",
            "nulll",
            "-",
            "-1",
            "1.5e3",
            "1.",
            "01",
            "1e",
            "\"ok\"",
            "\"a\\nb\"",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\ud800\"",
            "\"\u{1}\"",
            "\"open",
            "\"é\"",
            "@",
            "}",
            "]",
            ",",
            "",
            "é",
        ];
        let shape = |r: Result<Node<'_>, json::Error>| match r {
            Ok(_) => "ok".to_string(),
            Err(e) => format!("error at {}: {}", e.at, e.message),
        };
        for scalar in scalars {
            for (read, unread) in [("nodeName", "nodeNamf"), ("conditions", "conditionz")] {
                for value in [scalar.to_string(), format!("[1, {scalar}]")] {
                    let doc =
                        |key: &str| format!("{{\"kind\":\"Pod\",\"spec\":{{\"{key}\":{value}}}}}");
                    let (read_doc, unread_doc) = (doc(read), doc(unread));
                    let read_shape = shape(json::parse(&read_doc));
                    let unread_shape = shape(json::parse(&unread_doc));
                    // Whether the read field has the right type does not
                    // matter here: the parser does not check types.
                    assert_eq!(read_shape, unread_shape, "{value} under {read}");
                }
            }
        }
        // The cases above include both outcomes.
        let shape_of = |text: &str| shape(json::parse(text));
        assert_eq!(
            shape_of("{\"x\":[1, tru]}"),
            "error at 9: expected a value, found 't'"
        );
        assert_eq!(shape_of("{\"x\":[1, true]}"), "ok");
    }

    #[test]
    fn strings_around_word_boundaries_parse_as_written() {
        for len in 0..20 {
            let body = "é".repeat(len / 2) + &"x".repeat(len % 2);
            for tail in ["", "\\n", "\\\"", "\\u00e9"] {
                let text = format!("{{\"kind\": \"{body}{tail}\"}}");
                let doc = json::parse(&text).ok().expect("parses");
                let want = body.clone()
                    + match tail {
                        "\\n" => "\n",
                        "\\\"" => "\"",
                        "\\u00e9" => "é",
                        _ => "",
                    };
                match doc.get("kind").map(|n| &n.value) {
                    Some(Value::Str(s)) => assert_eq!(s.as_ref(), want),
                    _ => panic!("no string in {text}"),
                }
                let raw = format!("{{\"kind\": \"{body}\u{1}\"}}");
                assert!(json::parse(&raw).is_err(), "a control character in {raw:?}");
            }
        }
    }

    use test_support::Rng;

    /// A random JSON value for a labels or annotations map: mostly strings,
    /// and now and then an object or a list, the wrong types that JSON and
    /// YAML share (a YAML `7` or `true` is a string where a string is read).
    fn free_value(rng: &mut Rng) -> String {
        match rng.below(12) {
            0..=2 => "null".into(),
            3 => "{\"name\": \"x\"}".into(),
            4 => "[\"a\"]".into(),
            5 => "\"esc\\u00e9\\n\"".into(),
            6 => "\"\"".into(),
            _ => format!("\"v{}\"", rng.below(3)),
        }
    }

    /// A random List of pods and TrainJobs whose labels and annotations mix
    /// read keys, unread keys and read keys of the other map, with
    /// duplicates and values of every type; "labels" also appears where no
    /// rule reads it (under `spec`, inside a label).
    fn random_list(rng: &mut Rng) -> String {
        let free_keys: Vec<&str> = LABELS_READ
            .iter()
            .chain(&ANNOTATIONS_READ)
            .copied()
            .chain(["app", "name", "kind", "controller-uid", "labels", "é"])
            .collect();
        let map = |rng: &mut Rng| {
            let entries: Vec<String> = (0..rng.below(6))
                .map(|_| format!("\"{}\": {}", *rng.pick(&free_keys), free_value(rng)))
                .collect();
            format!("{{{}}}", entries.join(", "))
        };
        let items: Vec<String> = (0..1 + rng.below(4))
            .map(|i| {
                let kind = *rng.pick(&["Pod", "TrainJob", "JobSet"]);
                format!(
                    "{{\"kind\": \"{kind}\", \"metadata\": {{\"name\": \"o{i}\", \"uid\": \"u{i}\", \"labels\": {}, \"annotations\": {}}}, \"spec\": {{\"labels\": {}}}}}",
                    map(rng),
                    map(rng),
                    map(rng)
                )
            })
            .collect();
        format!("{{\"kind\": \"List\", \"items\": [{}]}}", items.join(", "))
    }

    /// An unread label or annotation that is a number, a boolean, an object
    /// or a list is kept, so reading the map fails on it as it always did.
    #[test]
    fn unread_labels_of_a_wrong_type_still_fail() {
        use crate::snapshot::{Options, Snapshot};
        for map in ["labels", "annotations"] {
            for (value, found) in [
                ("7", "a number"),
                ("false", "a boolean"),
                ("{}", "an object"),
                ("[1]", "a list"),
            ] {
                let text = format!(
                    "{{\"kind\": \"Pod\", \"metadata\": {{\"{map}\": {{\"app\": \"x\", \"zone\": {value}, \"b\": null}}}}}}"
                );
                let column = text.find(&format!(": {value}, ")).expect("the value") + 3;
                let documents = parse(&text).expect("JSON");
                let error = Snapshot::read(&documents, Options::default()).map(drop);
                assert_eq!(
                    error.map_err(|e| e.to_string()),
                    Err(format!(
                        "1:{column}: `{map}.zone` must be a string, found {found}"
                    )),
                    "{text}"
                );
            }
        }
    }

    /// Every mapping of the tree finds the same entry for every read key by
    /// its id as by its text.
    fn check_ids(node: &Node<'_>) {
        if node.is_object() {
            for (key, value) in node.entries() {
                assert_eq!(value.key, read_key(key), "{key}");
                check_ids(value);
            }
            for key in READ_KEYS {
                let id = read_key(key).expect("a read key");
                assert!(
                    std::ptr::eq(
                        node.get(key).map_or(std::ptr::null(), |n| n as *const _),
                        node.get_read(id)
                            .map_or(std::ptr::null(), |n| n as *const _)
                    ),
                    "{key}"
                );
            }
        } else if let Value::Seq(items) = &node.value {
            items.iter().for_each(check_ids);
        }
    }

    /// JSON drops the labels and annotations no rule reads when they are
    /// strings or null; YAML (of which JSON is a subset) keeps every key.
    /// Read as a snapshot, the two trees of one random input must give the
    /// same views, or the same error at the same place (the type word aside:
    /// a YAML scalar has none). Both trees look fields up by id as by text.
    #[test]
    fn json_without_the_unread_labels_reads_as_yaml_with_all_of_them() {
        use crate::snapshot::{Options, Snapshot};
        let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
        let (mut read, mut failed) = (0, 0);
        for _ in 0..400 {
            let text = random_list(&mut rng);
            let json = parse(&text).expect("JSON");
            assert!(json.source.is_json());
            let yaml = Documents {
                source: Source::new(&text, SourceKind::Yaml),
                docs: yaml::parse(&text).expect("YAML"),
            };
            for doc in json.docs.iter().chain(&yaml.docs) {
                check_ids(doc);
            }
            let outcome =
                |documents: &Documents<'_>| match Snapshot::read(documents, Options::default()) {
                    // What the rules can see of the labels and annotations, and
                    // what they make of the whole.
                    Ok(snap) => {
                        let metas = snap
                            .trainjobs
                            .iter()
                            .map(|t| &t.meta)
                            .chain(snap.jobsets.iter().map(|j| &j.meta))
                            .chain(snap.pods.iter().map(|p| &p.meta));
                        let seen: Vec<_> = metas
                            .map(|m| {
                                let labels = LABELS_READ.map(|k| m.label(k));
                                let annotations = ANNOTATIONS_READ.map(|k| m.annotation(k));
                                format!("{} {labels:?} {annotations:?}", m.name)
                            })
                            .collect();
                        format!(
                            "{seen:?} {:?}",
                            crate::classify::classify(&snap, crate::classify::Threads::One)
                        )
                    }
                    Err(e) => format!("error {e}")
                        .replace("a number", "a scalar")
                        .replace("a boolean", "a scalar"),
                };
            let from_json = outcome(&json);
            assert_eq!(from_json, outcome(&yaml), "{text}");
            if from_json.starts_with("error") {
                failed += 1;
            } else {
                read += 1;
            }
        }
        // Both outcomes are exercised, not only one.
        assert!(read > 40 && failed > 40, "{read} read, {failed} failed");
    }

    /// The nodes of a YAML tree, as an alias's copy counts them (a
    /// mapping's keys are text), after checking that no placeholder was
    /// left in it.
    fn yaml_nodes(node: &Node<'_>) -> usize {
        assert!(
            !matches!(node.value, Value::Number(_)),
            "a placeholder left at {}",
            node.at
        );
        match &node.value {
            Value::Seq(items) => 1 + items.iter().map(yaml_nodes).sum::<usize>(),
            Value::Map(entries) => 1 + entries.iter().map(|(_, v)| yaml_nodes(v)).sum::<usize>(),
            _ => 1,
        }
    }

    /// Aliases give the tree the same text written out gives, anchors
    /// nested in an aliased node, re-defined names and keys included, with
    /// the same read keys; an alias inside its own anchor's node is an
    /// error.
    #[cfg(not(target_arch = "wasm32"))]
    #[test]
    fn aliases_read_as_their_nodes_written_out() {
        let aliased = "a: &a [1, &b {name: q, kind: &c [2]}, *b]\n\
                       b: [*a, *b, *c]\n\
                       &k name: *k\n\
                       c: &a x\n\
                       status: {d: *a, *b : 3}\n";
        let written = "a: [1, {name: q, kind: [2]}, {name: q, kind: [2]}]\n\
                       b: [[1, {name: q, kind: [2]}, {name: q, kind: [2]}], {name: q, kind: [2]}, [2]]\n\
                       name: name\n\
                       c: x\n\
                       status: {d: x, {name: q, kind: [2]} : 3}\n";
        // A mapping as a key is an error either way, at the same key.
        let (aliased_error, written_error) = (yaml::parse(aliased), yaml::parse(written));
        assert_eq!(
            aliased_error.map(|_| ()).map_err(|e| e.message),
            written_error.map(|_| ()).map_err(|e| e.message)
        );
        let (aliased, written) = (
            aliased.replace(", *b : 3", ""),
            written.replace(", {name: q, kind: [2]} : 3", ""),
        );
        let (docs, copied) = yaml::parse_counting(&aliased);
        let docs = docs.expect("aliases");
        let plain = yaml::parse(&written).expect("written out");
        assert_eq!(docs.len(), 1);
        assert_eq!(without_positions(&docs[0]), without_positions(&plain[0]));
        check_ids(&docs[0]);
        // Each alias copied its node's nodes (`*b` 4, `*a` 10, `*b` 4, `*c`
        // 2, `*k` 1, the re-defined `*a` 1), and the anchored key its one.
        assert_eq!(copied, 4 + 10 + 4 + 2 + 1 + 1 + 1);
        assert_eq!(yaml_nodes(&docs[0]), yaml_nodes(&plain[0]));
        // An alias keeps its own position, its copy's insides theirs.
        let b = docs[0].get("b").expect("b");
        let Value::Seq(items) = &b.value else {
            panic!("b is a list")
        };
        assert_eq!(
            aliased.get(items[1].at as usize..).map(|r| &r[..2]),
            Some("*b")
        );
        let inner = items[1].get("name").expect("name");
        assert_eq!(aliased.get(inner.at as usize..).map(|r| &r[..1]), Some("q"));

        let own = yaml::parse("a: &r [1, *r]\n").map(|_| ());
        let e = own.expect_err("a node cannot contain itself");
        assert_eq!(e.message, "alias to an unknown anchor");
        assert_eq!((e.position.line, e.position.column), (1, 11));
    }

    /// 150 anchors nested around 200,000 scalars: read without a node
    /// copied, and an alias to the 141st copies exactly its 200,010 nodes.
    /// (Each anchored node used to be copied when it ended, 30 million
    /// nodes here: 10 s and 2.2 GB in the CLI.)
    #[test]
    fn nested_anchors_copy_nothing() {
        let anchors: String = (0..150).map(|i| format!("&a{i} [")).collect();
        let text = format!(
            "x: {anchors}{}{}\n",
            vec!["1"; 200_000].join(","),
            "]".repeat(150)
        );
        let (docs, copied) = yaml::parse_counting(&text);
        let docs = docs.expect("nested anchors");
        assert_eq!(copied, 0);
        assert_eq!(yaml_nodes(&docs[0]), 1 + 150 + 200_000);

        let text = format!("{text}y: *a140\n");
        let (docs, copied) = yaml::parse_counting(&text);
        let docs = docs.expect("nested anchors and an alias");
        assert_eq!(copied, 10 + 200_000);
        assert_eq!(yaml_nodes(&docs[0]), 1 + 150 + 200_000 + 10 + 200_000);
    }

    /// A billion laughs (9 levels of 9 aliases each) is an error at the
    /// first alias past the budget, the first `*a5`, after copying only
    /// the levels below it: 9 aliases each to `a0` (10 nodes) up to `a4`
    /// (66,430).
    #[test]
    fn a_billion_laughs_stop_at_the_budget() {
        let mut lines = vec![format!("a0: &a0 [{}]", ["lol"; 9].join(", "))];
        for k in 1..10 {
            let aliases = vec![format!("*a{}", k - 1); 9];
            lines.push(format!("a{k}: &a{k} [{}]", aliases.join(", ")));
        }
        let text = lines.join("\n");
        let (docs, copied) = yaml::parse_counting(&text);
        let e = docs.map(|_| ()).expect_err("too many nodes");
        assert_eq!(e.message, "aliases expand to too many nodes");
        assert_eq!((e.position.line, e.position.column), (7, 10));
        assert_eq!(copied, 9 * (10 + 91 + 820 + 7_381 + 66_430));
        assert!(copied <= MAX_ALIAS_NODES);
    }

    /// 100,000 anchors and 500,000 aliases to them: each alias finds its
    /// anchor by id (this used to scan the anchors, 25 billion comparisons)
    /// and copies its one node.
    #[test]
    fn many_anchors_and_aliases_copy_a_node_each() {
        let lookup = |i: usize| (i * 7_919) % 100_000;
        let anchors = (0..100_000).map(|i| format!("- &a{i} v{i}"));
        let aliases = (0..500_000).map(|i| format!("- *a{}", lookup(i)));
        let text = anchors.chain(aliases).collect::<Vec<_>>().join("\n");
        let (docs, copied) = yaml::parse_counting(&text);
        let docs = docs.expect("anchors and aliases");
        assert_eq!(copied, 500_000);
        let Value::Seq(items) = &docs[0].value else {
            panic!("a list")
        };
        assert_eq!(items.len(), 600_000);
        for (i, item) in items.iter().enumerate() {
            let j = if i < 100_000 { i } else { lookup(i - 100_000) };
            assert!(
                matches!(&item.value, Value::Plain(v) if *v == format!("v{j}")),
                "{i}"
            );
        }
    }

    /// An alias may nest the tree as deep as the same node written out may
    /// and no deeper: a chain of anchors each 255 levels around an alias
    /// to the last took a few KB to nest tens of thousands of levels, and
    /// overflowed the stack when the tree was copied, converted or dropped.
    #[test]
    fn aliases_nest_no_deeper_than_written_nodes() {
        let deep = format!("d0: &d0 {}1{}\n", "[".repeat(255), "]".repeat(255));
        // Under the document's mapping, 256 levels: as deep as allowed.
        let text = format!("{deep}d1: *d0\n");
        let (docs, copied) = yaml::parse_counting(&text);
        assert_eq!(docs.map(|d| d.len()), Ok(1));
        assert_eq!(copied, 256);
        let written = format!("d1: {}1{}\n", "[".repeat(255), "]".repeat(255));
        assert!(yaml::parse(&written).is_ok());
        // One level more is the error a written node gets, at the alias.
        let text = format!("{deep}d1: [*d0]\n");
        let (docs, copied) = yaml::parse_counting(&text);
        let e = docs.map(|_| ()).expect_err("too deep");
        assert_eq!(
            e.message,
            format!("nested more than {MAX_DEPTH} levels deep")
        );
        assert_eq!((e.position.line, e.position.column), (2, 6));
        assert_eq!(copied, 0);
        // (saphyr-parser refuses that written node first, in its own words.)
        let written = format!("d1: {}1{}\n", "[".repeat(256), "]".repeat(256));
        assert!(yaml::parse(&written).is_err());
        // The chain: each link 255 levels around an alias to the last.
        let chain: String = (1..88)
            .map(|k| {
                format!(
                    "d{k}: &d{k} {}*d{}{}\n",
                    "[".repeat(255),
                    k - 1,
                    "]".repeat(255)
                )
            })
            .collect();
        let e = yaml::parse(&format!("{deep}{chain}"))
            .map(|_| ())
            .expect_err("too deep");
        assert_eq!((e.position.line, e.position.column), (2, 264));
    }
}
