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

/// A complete node, its anchor (0 for none) and its size.
type Completed<'a> = (usize, Node<'a>, Size);

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
        let completed: Option<Completed<'_>> = match event {
            Event::StreamStart | Event::Nothing | Event::DocumentStart(_) => None,
            Event::StreamEnd => break,
            Event::DocumentEnd => {
                finish(&mut current, &mut anchors, &mut waiting, &mut docs);
                None
            }
            Event::Alias(id) => Some(alias(
                id,
                at,
                &span,
                stack.len(),
                &anchors,
                &mut alias_nodes,
                copied,
            )?),
            Event::Scalar(text, style, anchor, tag) => {
                let tag_suffix = tag.as_ref().map(|t| t.suffix.as_str());
                let value = scalar(text, style, tag_suffix);
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
                open(&mut stack, at, anchor, Kind::Seq(Vec::new()), &span)?;
                None
            }
            Event::MappingStart(anchor, _) => {
                let kind = Kind::Map {
                    entries: Vec::new(),
                    key: None,
                };
                open(&mut stack, at, anchor, kind, &span)?;
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
        add_child(
            frame,
            (anchor, node, size),
            &mut anchors,
            &mut waiting,
            copied,
            &span,
        )?;
    }
    finish(&mut current, &mut anchors, &mut waiting, &mut docs);
    Ok(docs)
}

/// A scalar's value: by its tag when it is `!!str` or `!!null`; otherwise
/// a plain scalar is null when written as one and [`Value::Plain`] when
/// not, and any other scalar is a string.
fn scalar<'a>(text: Cow<'a, str>, style: ScalarStyle, tag_suffix: Option<&str>) -> Value<'a> {
    match (style, tag_suffix) {
        (_, Some("str")) => Value::Str(text),
        (_, Some("null")) => Value::Null,
        (ScalarStyle::Plain, _) => match text.as_ref() {
            "" | "~" | "null" | "Null" | "NULL" => Value::Null,
            _ => Value::Plain(text),
        },
        _ => Value::Str(text),
    }
}

/// An alias's copy of the anchored node of anchor `id`, standing at `at`
/// with `depth` collections open around it: charged first to the input's
/// budget (`alias_nodes`) and to [`MAX_DEPTH`].
fn alias<'a>(
    id: usize,
    at: u32,
    span: &Span,
    depth: usize,
    anchors: &Anchors<'a>,
    alias_nodes: &mut usize,
    copied: &mut usize,
) -> Result<Completed<'a>, SyntaxError> {
    // An anchor whose node is still open is not in the map yet: a node
    // cannot contain itself.
    let anchored = u32::try_from(id)
        .ok()
        .and_then(|id| anchors.get(&id))
        .ok_or_else(|| error(span, "alias to an unknown anchor"))?;
    *alias_nodes = alias_nodes.saturating_add(anchored.size.nodes);
    if *alias_nodes > MAX_ALIAS_NODES {
        return Err(error(span, "aliases expand to too many nodes"));
    }
    // The copy's collections open where the alias stands, as if written
    // there: none may be deeper than a written one may (see [`open`]).
    if depth.saturating_add(anchored.size.levels) > MAX_DEPTH {
        return Err(error(
            span,
            format!("nested more than {MAX_DEPTH} levels deep"),
        ));
    }
    let node = copy(&anchored.node, anchors, copied)
        .ok_or_else(|| error(span, "alias to an unknown anchor"))?;
    Ok((
        0,
        Node {
            at,
            key: None,
            value: node.value,
        },
        anchored.size,
    ))
}

/// Opens a collection of `kind` at `at`, unless that would nest the tree
/// deeper than [`MAX_DEPTH`].
fn open<'a>(
    stack: &mut Vec<Frame<'a>>,
    at: u32,
    anchor: usize,
    kind: Kind<'a>,
    span: &Span,
) -> Result<(), SyntaxError> {
    if stack.len() >= MAX_DEPTH {
        return Err(error(
            span,
            format!("nested more than {MAX_DEPTH} levels deep"),
        ));
    }
    stack.push(Frame {
        at,
        anchor,
        inner: Size::default(),
        kind,
    });
    Ok(())
}

/// Adds a complete node to the open collection `frame`: an item of a
/// sequence, or a mapping's key (as text) or the value under it.
fn add_child<'a>(
    frame: &mut Frame<'a>,
    (anchor, node, size): Completed<'a>,
    anchors: &mut Anchors<'a>,
    waiting: &mut usize,
    copied: &mut usize,
    span: &Span,
) -> Result<(), SyntaxError> {
    match &mut frame.kind {
        Kind::Seq(items) => {
            items.push(keep(anchor, node, size, anchors, waiting, span)?);
            frame.inner.add(size);
        }
        Kind::Map { entries, key } => match key.take() {
            None => {
                if anchor != 0 && !matches!(node.value, Value::Seq(_) | Value::Map(_)) {
                    // The tree keeps a key as text only; its anchor keeps the
                    // node, for the aliases to it.
                    *copied += 1;
                    let id = anchor_id(anchor, span)?;
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
                    _ => return Err(error(span, "a mapping key must be a scalar")),
                };
                *key = Some(k);
            }
            Some(k) => {
                let mut node = keep(anchor, node, size, anchors, waiting, span)?;
                node.key = read_key(&k);
                entries.push((k, node));
                frame.inner.add(size);
            }
        },
    }
    Ok(())
}
