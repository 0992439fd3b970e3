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

mod json;
mod yaml;

#[cfg(test)]
mod tests;
