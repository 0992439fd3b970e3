//! A big JSON dump read piece by piece (natively, for the CLI), never held
//! whole: each piece is parsed where it lies in a window of a few MiB, and
//! the strings the tree keeps (names, labels, reasons: a few hundred bytes
//! of a pod's several kilobytes) are copied into arenas that outlive it, by
//! the parser itself as it builds the tree ([`super::Keep`]). The rest of
//! the input is never copied anywhere but the window, which is refilled in
//! place. A step run again after a refill leaves its first try's strings in
//! the arena: an item's worth per window.
//!
//! It reads one shape, the one kubectl writes and a Snapshot has: a JSON
//! object whose `items` member is an array. Two threads read it the way
//! [`super::parse_on_two_threads`] parses a text: the second from a guessed
//! item start in the middle of the input to the end of the array, the first
//! from the beginning until it reaches that very item start (or, when the
//! guess was wrong, on to the end by itself).
//!
//! Every step runs the same [`Parser`] code as parsing the whole text, from
//! the same offset and at the same depth, so the tree is the one
//! [`super::parse`] builds, positions aside. A step that fails, or that ends
//! exactly at the window's end (where a number or a literal may go on), is
//! run again once more of the input is in the window. When the input has an
//! error, or is not that shape, the stream gives up ([`Unstreamed`]) without
//! saying where: its positions are offsets into windows, so the caller
//! parses the whole input to name the error, as it would have without the
//! stream.

use std::sync::atomic::{AtomicBool, Ordering};

use bumpalo::Bump;

use super::{item_start_in, Error, Parser, ITEM_DEPTH, SPLIT_WINDOW, TWO_THREADS_MIN};
use crate::fields::ReadKey;
use crate::tree::{read_key_filtered, Node, Value};

/// Reads bytes at an offset, as `std::os::unix::fs::FileExt::read_at`
/// does: how the stream gets its input (the engine does no IO itself).
pub trait ReadAt: Sync {
    /// Reads into `buf` from `offset`; 0 at the end of the input.
    fn read_at(&self, buf: &mut [u8], offset: u64) -> std::io::Result<usize>;
}

/// The arenas a streamed tree's strings live in, one per reading thread.
#[derive(Default)]
pub struct Arenas {
    front: Bump,
    back: Bump,
}

/// The input is not read by the stream: it has an error (which parsing it
/// whole names), it is not a JSON object with an `items` array, or it
/// could not be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unstreamed;

/// The window's size while reading items (it grows for an item longer).
const PIECE: usize = 4 << 20;

/// Its size before: the members around `items` are small, and each step
/// checks the window's text for UTF-8 anew.
const HEAD_PIECE: usize = 64 << 10;

/// A failure this far before the end of the window is not for want of
/// input: no step looks further ahead than a `\uXXXX\uXXXX` pair.
const LOOKAHEAD: usize = 16;

/// Where the input is read from, and how much of it is in memory.
struct Window<'r> {
    input: &'r dyn ReadAt,
    data: Vec<u8>,
    /// The input offset of `data[0]`.
    start: u64,
    /// How much of `data` holds input.
    filled: usize,
    /// The input has no more after `data[..filled]`.
    eof: bool,
}

/// What a step found when the window's text ran out before it was done.
enum Step<T> {
    Done(T),
    /// Read more and run it again from the same offset.
    More,
}

impl<'r> Window<'r> {
    fn new(input: &'r dyn ReadAt, at: u64, size: usize) -> Self {
        Window {
            input,
            // Never empty: a refill doubles it when it is all kept.
            data: vec![0; size.max(1)],
            start: at,
            filled: 0,
            eof: false,
        }
    }

    /// The input from `cursor` (an offset in the window) to the window's
    /// end, as text: cut before a character the window holds only part of,
    /// and not text at all (the stream gives up) when it is not UTF-8.
    fn text(&self, cursor: usize) -> Result<&str, Unstreamed> {
        let bytes = self.data.get(cursor..self.filled).ok_or(Unstreamed)?;
        match std::str::from_utf8(bytes) {
            Ok(text) => Ok(text),
            Err(e) if e.error_len().is_none() && !self.eof => bytes
                .get(..e.valid_up_to())
                .and_then(|valid| std::str::from_utf8(valid).ok())
                .ok_or(Unstreamed),
            Err(_) => Err(Unstreamed),
        }
    }

    /// Whether `text` (from [`Window::text`]) ends where the input does.
    fn is_last(&self, cursor: usize, text: &str) -> bool {
        self.eof && cursor + text.len() == self.filled
    }

    /// Keeps the input from `cursor` on, at the window's start (growing the
    /// window when it is all kept), and reads after it.
    fn refill(&mut self, cursor: &mut usize) -> Result<(), Unstreamed> {
        if self.eof || *cursor > self.filled {
            return Err(Unstreamed);
        }
        let kept = self.filled - *cursor;
        self.data.copy_within(*cursor..self.filled, 0);
        self.start += *cursor as u64;
        self.filled = kept;
        *cursor = 0;
        if self.filled == self.data.len() {
            self.data.resize(self.data.len().saturating_mul(2), 0);
        }
        while self.filled < self.data.len() {
            let buf = self.data.get_mut(self.filled..).ok_or(Unstreamed)?;
            let read = self
                .input
                .read_at(buf, self.start + self.filled as u64)
                .map_err(|_| Unstreamed)?;
            if read == 0 {
                self.eof = true;
                break;
            }
            self.filled += read;
        }
        Ok(())
    }

    /// Reads on from `at` (an input offset), dropping the window's input.
    fn seek(&mut self, at: u64) {
        self.start = at;
        self.filled = 0;
        self.eof = false;
    }

    /// Lets the window grow to `size` at its next refill.
    fn reserve(&mut self, size: usize) {
        if self.data.len() < size {
            self.data.resize(size, 0);
        }
    }

    /// Runs `step` on a parser at `cursor`, reading more and running it
    /// again while it fails or ends at the window's end before the input's,
    /// and moves `cursor` past what it read.
    fn run<'b, T>(
        &mut self,
        cursor: &mut usize,
        arena: &'b Bump,
        mut step: impl FnMut(&mut Parser<'_, 'b, &'b Bump>) -> Result<T, Error>,
    ) -> Result<T, Unstreamed> {
        loop {
            // The parser borrows the window: done with it before a refill.
            let judged = {
                let text = self.text(*cursor)?;
                let last = self.is_last(*cursor, text);
                let mut p = Parser::keeping(text, arena);
                let result = step(&mut p);
                (judge(result, p.i, text.len(), last)?, p.i)
            };
            match judged {
                (Step::Done(value), end) => {
                    *cursor += end;
                    return Ok(value);
                }
                (Step::More, _) => self.refill(cursor)?,
            }
        }
    }
}

/// Whether a step's result stands: an error is one when the input is all
/// in the window or when the parser stopped well before the window's end;
/// a value is one unless it ends at the window's end before the input's.
fn judge<T>(
    result: Result<T, Error>,
    end: usize,
    len: usize,
    last: bool,
) -> Result<Step<T>, Unstreamed> {
    match result {
        Ok(value) if end < len || last => Ok(Step::Done(value)),
        Err(_) if last || end + LOOKAHEAD <= len => Err(Unstreamed),
        _ => Ok(Step::More),
    }
}

/// How an items array's reading ended.
enum ItemsEnd {
    /// At its `]`; the cursor is after it.
    Closed,
    /// At the item start `at_split` said to stop at; the cursor is on it.
    Split,
}

/// Reads an items array's items from `cursor` (past its `[` and any item
/// already read) into `items`, as [`Parser::array`]'s loop parses them,
/// stopping at its `]`, or before an item that starts where `at_split`
/// (given its input offset) says to stop.
fn read_items<'b>(
    window: &mut Window<'_>,
    cursor: &mut usize,
    arena: &'b Bump,
    items: &mut Vec<Node<'b>>,
    pieces: Pieces,
    mut at_split: impl FnMut(u64) -> bool,
) -> Result<ItemsEnd, Unstreamed> {
    window.reserve(pieces.items);
    loop {
        // The parser borrows the window: done with it before a refill.
        let ended = 'items: {
            let text = window.text(*cursor)?;
            let last = window.is_last(*cursor, text);
            let mut p = Parser::keeping(text, arena);
            loop {
                p.skip_ws();
                let item_start = p.i;
                if item_start < text.len() && at_split(window.start + (*cursor + item_start) as u64)
                {
                    *cursor += item_start;
                    break 'items Some(ItemsEnd::Split);
                }
                let result = p
                    .value(ITEM_DEPTH, false)
                    .and_then(|item| Ok((item, p.closes_after_member(b']')?)));
                match judge(result, p.i, text.len(), last)? {
                    Step::Done((item, closed)) => {
                        items.push(item);
                        if closed {
                            *cursor += p.i;
                            break 'items Some(ItemsEnd::Closed);
                        }
                    }
                    Step::More => {
                        *cursor += item_start;
                        break 'items None;
                    }
                }
            }
        };
        match ended {
            Some(end) => return Ok(end),
            None => window.refill(cursor)?,
        }
    }
}

/// The second thread's work: from `split` (a guessed item start) to the end
/// of its array, the items and the input offset after the `]`. Stops, with
/// a result no one reads, once the first thread is done without it.
fn items_from_split<'b>(
    input: &dyn ReadAt,
    split: u64,
    arena: &'b Bump,
    abandoned: &AtomicBool,
    pieces: Pieces,
) -> Result<(Vec<Node<'b>>, u64), Unstreamed> {
    let mut window = Window::new(input, split, pieces.items);
    let mut cursor = 0;
    let mut items = Vec::new();
    match read_items(&mut window, &mut cursor, arena, &mut items, pieces, |_| {
        abandoned.load(Ordering::Relaxed)
    })? {
        ItemsEnd::Closed => Ok((items, window.start + cursor as u64)),
        ItemsEnd::Split => Err(Unstreamed),
    }
}

/// Where the second thread starts: an item start just past the middle of
/// the input (by [`item_start_in`], as for a whole text), or None for a
/// small input or when none is found.
fn split_of(input: &dyn ReadAt, len: u64) -> Option<u64> {
    if len < TWO_THREADS_MIN as u64 {
        return None;
    }
    let from = len / 2;
    let mut window = vec![0; SPLIT_WINDOW];
    let mut filled = 0;
    while filled < window.len() {
        let read = input
            .read_at(window.get_mut(filled..)?, from + filled as u64)
            .ok()?;
        if read == 0 {
            break;
        }
        filled += read;
    }
    Some(from + item_start_in(window.get(..filled)?)? as u64)
}

/// Reads `input` (about `len` bytes: the split is guessed from it, the end
/// is where reading stops) as [`super::parse_on_two_threads`] parses a whole
/// text, the kept strings copied into `arenas`; or gives up.
pub fn parse<'b>(
    input: &dyn ReadAt,
    len: u64,
    arenas: &'b mut Arenas,
) -> Result<Node<'b>, Unstreamed> {
    parse_in_pieces(input, len, arenas, Pieces::default())
}

/// The window's sizes: [`HEAD_PIECE`] and [`PIECE`], smaller in tests so
/// that every step meets a window's end.
#[derive(Debug, Clone, Copy)]
pub(in crate::tree) struct Pieces {
    pub head: usize,
    pub items: usize,
}

impl Default for Pieces {
    fn default() -> Self {
        Pieces {
            head: HEAD_PIECE,
            items: PIECE,
        }
    }
}

pub(in crate::tree) fn parse_in_pieces<'b>(
    input: &dyn ReadAt,
    len: u64,
    arenas: &'b mut Arenas,
    pieces: Pieces,
) -> Result<Node<'b>, Unstreamed> {
    let Arenas { front, back } = arenas;
    let front: &'b Bump = front;
    // Only an object, and only when it comes first: anything else (a
    // byte-order mark, an array, YAML) is for the whole parser, found out
    // before a second thread reads anything.
    let mut window = Window::new(input, 0, pieces.head);
    let mut cursor = 0;
    let object = window.run(&mut cursor, front, |p| {
        p.skip_ws();
        match p.bytes.get(p.i) {
            Some(first) => Ok(*first == b'{'),
            None => Err(p.err("no document")),
        }
    })?;
    if !object {
        return Err(Unstreamed);
    }
    let split = split_of(input, len);
    let abandoned = AtomicBool::new(false);
    std::thread::scope(|scope| {
        let (send, receive) = std::sync::mpsc::channel();
        let abandoned = &abandoned;
        let second = split.and_then(|split| {
            std::thread::Builder::new()
                .spawn_scoped(scope, move || {
                    let back: &'b Bump = back;
                    // A closed channel means the first thread is done without it.
                    let _ = send.send(items_from_split(input, split, back, abandoned, pieces));
                })
                .ok()
                .map(|_| (split, receive))
        });
        let doc = document(window, cursor, front, second, pieces);
        abandoned.store(true, Ordering::Relaxed);
        doc
    })
}

type Tail<'b> = Result<(Vec<Node<'b>>, u64), Unstreamed>;

/// The first thread's work: the whole document from its `{` (at `cursor`
/// in `window`), as [`Parser::document`] and [`Parser::fields_object`]
/// parse an object, with the items from the split (when `second` has them)
/// taken from the second thread.
fn document<'b>(
    mut window: Window<'_>,
    mut cursor: usize,
    arena: &'b Bump,
    mut second: Option<(u64, std::sync::mpsc::Receiver<Tail<'b>>)>,
    pieces: Pieces,
) -> Result<Node<'b>, Unstreamed> {
    let empty = window.run(&mut cursor, arena, |p| {
        p.skip_ws();
        Ok(p.opens_empty(b'}'))
    })?;
    let mut fields = Vec::new();
    if !empty {
        loop {
            let (read, items_array) = window.run(&mut cursor, arena, |p| {
                p.skip_ws();
                let read = read_key_filtered(&p.key()?);
                Ok((read, p.bytes.get(p.i) == Some(&b'[')))
            })?;
            match read {
                Some(ReadKey::Items) if items_array => {
                    let at = cursor as u32;
                    let mut items = Vec::new();
                    if !window.run(&mut cursor, arena, |p| Ok(p.opens_empty(b']')))? {
                        read_items_taking_the_split(
                            &mut window,
                            &mut cursor,
                            arena,
                            &mut items,
                            &mut second,
                            pieces,
                        )?;
                    }
                    fields.push(Node {
                        at,
                        key: Some(ReadKey::Items),
                        value: Value::Seq(items),
                    });
                }
                Some(read) => {
                    let free = matches!(read, ReadKey::Labels | ReadKey::Annotations);
                    let mut node = window.run(&mut cursor, arena, |p| p.value(1, free))?;
                    node.key = Some(read);
                    fields.push(node);
                }
                None => window.run(&mut cursor, arena, |p| p.skip(1))?,
            }
            if window.run(&mut cursor, arena, |p| p.closes_after_member(b'}'))? {
                break;
            }
        }
    }

    // Nothing may follow the document but blanks.
    window.run(&mut cursor, arena, |p| {
        p.skip_ws();
        if p.i < p.bytes.len() {
            return Err(p.err("unexpected text after the JSON document"));
        }
        Ok(())
    })?;
    let value = if empty {
        Value::Fields(Box::default())
    } else {
        Value::Fields(fields.into_boxed_slice())
    };
    Ok(Node {
        at: 0,
        key: None,
        value,
    })
}

/// [`read_items`] for the first thread: at the split, the second thread's
/// items and the offset after their `]`; past it without stopping there (a
/// wrong guess), on by itself.
fn read_items_taking_the_split<'b>(
    window: &mut Window<'_>,
    cursor: &mut usize,
    arena: &'b Bump,
    items: &mut Vec<Node<'b>>,
    second: &mut Option<(u64, std::sync::mpsc::Receiver<Tail<'b>>)>,
    pieces: Pieces,
) -> Result<(), Unstreamed> {
    loop {
        let split = second.as_ref().map(|(split, _)| *split);
        let end = read_items(window, cursor, arena, items, pieces, |at| {
            split.is_some_and(|split| at >= split)
        })?;
        match end {
            ItemsEnd::Closed => return Ok(()),
            ItemsEnd::Split => {
                let at = window.start + *cursor as u64;
                let Some((split, receive)) = second.take() else {
                    continue;
                };
                if at != split {
                    // Past the guess without an item there: parse on alone.
                    continue;
                }
                match receive.recv() {
                    Ok(tail) => {
                        let (tail_items, after) = tail?;
                        items.extend(tail_items);
                        window.seek(after);
                        *cursor = 0;
                        return Ok(());
                    }
                    // The second thread could not answer: parse on.
                    Err(_) => continue,
                }
            }
        }
    }
}
