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
        if back.next() != Some(&b',') || back.find(|b| !is_blank(b) && **b != b'\n') != Some(&b'}')
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
        let special = bytes_equal(word, b'"') | bytes_equal(word, b'\\') | bytes_below(word, 0x20);
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
            Some(_) => return Err(self.err(format!("expected a value, found {}", self.found()))),
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
        char::from_u32(code).ok_or_else(|| self.err_at(esc, "unpaired surrogate in a \\u escape"))
    }
}
