//! Where things are in the input: line and column, counted from 1, columns in
//! characters (section 2). Positions are computed only when an error needs
//! one, so the happy path never pays for them.

use std::fmt;

/// A line and column, both counted from 1; the column counts characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct Position {
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for Position {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    /// Node offsets are byte offsets.
    Json,
    /// Node offsets are character indexes (what saphyr-parser reports).
    Yaml,
}

/// The input text, kept to turn a node's offset into a [`Position`].
#[derive(Debug, Clone, Copy)]
pub struct Source<'a> {
    text: &'a str,
    kind: SourceKind,
}

impl<'a> Source<'a> {
    pub fn new(text: &'a str, kind: SourceKind) -> Self {
        Source { text, kind }
    }

    pub fn is_json(&self) -> bool {
        self.kind == SourceKind::Json
    }

    pub fn position(&self, offset: u32) -> Position {
        let offset = offset as usize;
        let mut line = 1;
        let mut column = 1;
        let chars = self.text.char_indices().enumerate();
        for (char_index, (byte_index, c)) in chars {
            let here = match self.kind {
                SourceKind::Json => byte_index,
                SourceKind::Yaml => char_index,
            };
            if here >= offset {
                break;
            }
            if c == '\n' {
                line += 1;
                column = 1;
            } else {
                column += 1;
            }
        }
        Position { line, column }
    }
}

/// The position of the first byte that is not UTF-8, for input that is not text.
pub fn utf8_error_position(bytes: &[u8], valid_up_to: usize) -> Position {
    let valid = bytes
        .get(..valid_up_to)
        .and_then(|b| std::str::from_utf8(b).ok())
        .unwrap_or_default();
    Source::new(valid, SourceKind::Json).position(valid_up_to as u32)
}
