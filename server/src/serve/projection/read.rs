//! Parsing an object down to what the engine's read schema
//! ([`classify_wasm::schema`]) names, of every kind at once.
//!
//! The watch loops parse an object before they know its kind (a list's
//! items carry none), so the tree parsed against is the union of every
//! kind's schema ([`parse_tree`]), with the two fields the server itself
//! needs: `apiVersion` and `metadata.resourceVersion`. The kind picks what
//! is written ([`super::ApiObject::project`]).
//!
//! Leniency is the schema's: a value of another type than its field's is
//! skipped (a map or an array is read through, not built), so a wrong type
//! never fails the object; of a key given twice the last wins, as in a
//! `serde_json::Value`, a wrong-typed last one removing the first.

use std::sync::OnceLock;

use classify_wasm::schema::{self, Field, Shape};
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};

use super::lenient::{nothing_for_absent_values, Maybe};
use super::queue::QueueTree;
use super::Integer;

/// The fields of an object the parse reads, each with what is read of it.
#[derive(Debug, Default)]
pub(super) struct ParseNode {
    fields: Vec<(&'static str, ParseShape)>,
}

#[derive(Debug)]
enum ParseShape {
    String,
    Bool,
    Integer,
    Object(ParseNode),
    Objects(ParseNode),
    FirstNamed(&'static str, ParseNode),
    Strings(&'static [&'static str]),
    QueueTree,
}

impl ParseNode {
    /// The place of the field `name` among this node's fields.
    pub(super) fn index_of(&self, name: &str) -> Option<usize> {
        self.fields.iter().position(|(n, _)| *n == name)
    }

    /// The node read inside the field at `index` (an object's, or each
    /// element's of a list).
    pub(super) fn child(&self, index: usize) -> Option<&ParseNode> {
        match self.fields.get(index).map(|(_, shape)| shape) {
            Some(
                ParseShape::Object(node)
                | ParseShape::Objects(node)
                | ParseShape::FirstNamed(_, node),
            ) => Some(node),
            _ => None,
        }
    }

    /// The node read inside the object at `path` below this one.
    fn node_at(&self, path: &[&str]) -> Option<&ParseNode> {
        path.iter()
            .try_fold(self, |node, name| node.child(node.index_of(name)?))
    }

    /// Adds `fields` to this node: a field not here yet is added, an
    /// object's fields are merged into the one here.
    fn merge(&mut self, fields: &'static [Field]) {
        for field in fields {
            match self.index_of(field.name) {
                None => self.fields.push((field.name, ParseShape::of(field.shape))),
                Some(at) => {
                    if let Some(node) = self.fields.get_mut(at).and_then(|(_, s)| s.node_mut()) {
                        node.merge(schema::inner(field.shape));
                    }
                }
            }
        }
    }
}

impl ParseShape {
    fn of(shape: Shape) -> ParseShape {
        let node = |fields: &'static [Field]| {
            let mut node = ParseNode::default();
            node.merge(fields);
            node
        };
        match shape {
            Shape::String => ParseShape::String,
            Shape::Bool => ParseShape::Bool,
            Shape::Integer => ParseShape::Integer,
            Shape::Object(fields) => ParseShape::Object(node(fields)),
            Shape::Objects(fields) => ParseShape::Objects(node(fields)),
            Shape::FirstNamed(name, fields) => ParseShape::FirstNamed(name, node(fields)),
            Shape::Strings(keys) => ParseShape::Strings(keys),
            Shape::QueueTree => ParseShape::QueueTree,
        }
    }

    fn node_mut(&mut self) -> Option<&mut ParseNode> {
        match self {
            ParseShape::Object(node)
            | ParseShape::Objects(node)
            | ParseShape::FirstNamed(_, node) => Some(node),
            _ => None,
        }
    }
}

/// What the server reads of an object besides the engine's schema (and
/// never writes: `project` writes the kind's schema).
const SERVER_FIELDS: &[Field] = &[
    schema::string("apiVersion"),
    schema::given(
        "metadata",
        Shape::Object(&[schema::string("resourceVersion")]),
    ),
];

/// The tree every object is parsed against: every kind's schema, the
/// server's own Namespace, and [`SERVER_FIELDS`].
pub(super) fn parse_tree() -> &'static ParseNode {
    static TREE: OnceLock<ParseNode> = OnceLock::new();
    TREE.get_or_init(|| {
        let mut root = ParseNode::default();
        for (_, fields) in schema::KINDS {
            root.merge(fields);
        }
        root.merge(super::NAMESPACE);
        root.merge(SERVER_FIELDS);
        root
    })
}

/// A value read: of the type its field wants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Parsed {
    String(String),
    Bool(bool),
    Integer(Integer),
    Object(Fields),
    Objects(Vec<Fields>),
    /// The kept keys of a labels or annotations map, with their values.
    Strings(Vec<(&'static str, String)>),
    Tree(QueueTree),
}

/// The fields read of one object, by their place in its [`ParseNode`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct Fields(Vec<(usize, Parsed)>);

impl Fields {
    /// The value of the field at `index`, if read.
    pub(super) fn get(&self, index: usize) -> Option<&Parsed> {
        self.0.iter().find(|(i, _)| *i == index).map(|(_, v)| v)
    }

    /// Sets a field as a later key does: replaced, or removed when the
    /// later value was not of the field's type.
    fn set(&mut self, index: usize, value: Option<Parsed>) {
        self.0.retain(|(i, _)| *i != index);
        if let Some(value) = value {
            self.0.push((index, value));
        }
    }

    /// The string at `path` below these fields, read against `node`.
    pub(super) fn string_at(&self, node: &ParseNode, path: &[&str]) -> Option<&str> {
        match self.at(node, path)? {
            Parsed::String(s) => Some(s),
            _ => None,
        }
    }

    /// The elements of the list at `path` below these fields, with the
    /// node each was read against.
    pub(super) fn objects_at<'s, 'n>(
        &'s self,
        node: &'n ParseNode,
        path: &[&str],
    ) -> Option<(&'n ParseNode, &'s [Fields])> {
        let (last, parent) = path.split_last()?;
        let (node, fields) = match parent {
            [] => (node, self),
            _ => match self.at(node, parent)? {
                Parsed::Object(fields) => (node.node_at(parent)?, fields),
                _ => return None,
            },
        };
        let index = node.index_of(last)?;
        match fields.get(index)? {
            Parsed::Objects(list) => Some((node.child(index)?, list)),
            _ => None,
        }
    }

    /// The value at `path` below these fields, read against `node`.
    pub(super) fn at(&self, node: &ParseNode, path: &[&str]) -> Option<&Parsed> {
        let (first, rest) = path.split_first()?;
        let index = node.index_of(first)?;
        let value = self.get(index)?;
        if rest.is_empty() {
            return Some(value);
        }
        match value {
            Parsed::Object(fields) => fields.at(node.child(index)?, rest),
            _ => None,
        }
    }
}

/// Reads an object against `node`; `None` when it is not an object.
pub(super) fn read_object<'de, D: Deserializer<'de>>(
    node: &ParseNode,
    deserializer: D,
) -> Result<Option<Fields>, D::Error> {
    let read = ObjectSeed(node).deserialize(deserializer)?;
    Ok(match read {
        Some(Parsed::Object(fields)) => Some(fields),
        _ => None,
    })
}

/// Reads one value of `shape`: `None` when it has another type.
struct ShapeSeed<'n>(&'n ParseShape);

impl<'de> DeserializeSeed<'de> for ShapeSeed<'_> {
    type Value = Option<Parsed>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        let visitor = match self.0 {
            // Leaves and queue trees read as the lenient readers read them.
            ParseShape::String => {
                return Ok(Maybe::<String>::deserialize(d)?.0.map(Parsed::String))
            }
            ParseShape::Bool => return Ok(Maybe::<bool>::deserialize(d)?.0.map(Parsed::Bool)),
            ParseShape::Integer => {
                return Ok(Maybe::<Integer>::deserialize(d)?.0.map(Parsed::Integer))
            }
            ParseShape::QueueTree => {
                return Ok(Maybe::<QueueTree>::deserialize(d)?.0.map(Parsed::Tree))
            }
            ParseShape::Object(node) => ShapeVisitor::Object(node),
            ParseShape::Objects(node) => ShapeVisitor::Objects(node, None),
            ParseShape::FirstNamed(name, node) => ShapeVisitor::Objects(node, Some(name)),
            ParseShape::Strings(keys) => ShapeVisitor::Strings(keys),
        };
        d.deserialize_any(visitor)
    }
}

/// Reads an object against `node` (the root of a kind, or an element of
/// an array of objects): `None` when it is not an object.
struct ObjectSeed<'n>(&'n ParseNode);

impl<'de> DeserializeSeed<'de> for ObjectSeed<'_> {
    type Value = Option<Parsed>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(ShapeVisitor::Object(self.0))
    }
}

/// A map key: the place of the wanted field it is, if any.
struct KeySeed<'n>(&'n ParseNode);

impl<'de> DeserializeSeed<'de> for KeySeed<'_> {
    type Value = Option<usize>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeySeed<'_> {
    type Value = Option<usize>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.index_of(key))
    }
}

/// A labels or annotations key: which of the kept ones it is, if any.
struct KeptKeySeed(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for KeptKeySeed {
    type Value = Option<&'static str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for KeptKeySeed {
    type Value = Option<&'static str>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a label or annotation key")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().copied().find(|kept| *kept == key))
    }
}

/// Reads an object against its node, an array of objects (all of them, or
/// the first of a `name`), or a map of the kept strings; any other value
/// reads as `None`.
enum ShapeVisitor<'n> {
    Object(&'n ParseNode),
    Objects(&'n ParseNode, Option<&'static str>),
    Strings(&'static [&'static str]),
}

impl<'de> Visitor<'de> for ShapeVisitor<'_> {
    type Value = Option<Parsed>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E: de::Error>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E: de::Error>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    nothing_for_absent_values!();

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let (node, named) = match self {
            ShapeVisitor::Objects(node, named) => (node, named),
            _ => {
                while seq.next_element::<IgnoredAny>()?.is_some() {}
                return Ok(None);
            }
        };
        let mut kept = Vec::new();
        while let Some(element) = seq.next_element_seed(ObjectSeed(node))? {
            if let Some(Parsed::Object(fields)) = element {
                kept.push(fields);
            }
        }
        Ok(match named {
            None => Some(Parsed::Objects(kept)),
            Some(name) => kept
                .into_iter()
                .find(|fields| fields.string_at(node, &["name"]) == Some(name))
                .map(Parsed::Object),
        })
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        match self {
            ShapeVisitor::Object(node) => {
                let mut fields = Fields::default();
                while let Some(key) = map.next_key_seed(KeySeed(node))? {
                    match key.and_then(|at| Some((at, node.fields.get(at)?))) {
                        Some((at, (_, shape))) => {
                            let value = map.next_value_seed(ShapeSeed(shape))?;
                            fields.set(at, value);
                        }
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Some(Parsed::Object(fields)))
            }
            ShapeVisitor::Strings(keys) => {
                let mut strings: Vec<(&'static str, String)> = Vec::new();
                while let Some(key) = map.next_key_seed(KeptKeySeed(keys))? {
                    match key {
                        Some(key) => {
                            let value = map.next_value::<Maybe<String>>()?.0;
                            strings.retain(|(k, _)| *k != key);
                            strings.extend(value.map(|v| (key, v)));
                        }
                        None => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(Some(Parsed::Strings(strings)))
            }
            _ => {
                while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
                Ok(None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether `node` reads every field of `fields` with that field's own
    /// shape (a merge keeps the first shape of a name: two kinds that gave
    /// one name two shapes would parse one of them wrong).
    fn reads_as(node: &ParseNode, fields: &'static [Field]) -> Result<(), String> {
        for field in fields {
            let at = node
                .index_of(field.name)
                .ok_or_else(|| format!("{} is not parsed", field.name))?;
            let same = match (field.shape, node.fields.get(at).map(|(_, s)| s)) {
                (Shape::String, Some(ParseShape::String))
                | (Shape::Bool, Some(ParseShape::Bool))
                | (Shape::Integer, Some(ParseShape::Integer))
                | (Shape::QueueTree, Some(ParseShape::QueueTree))
                | (Shape::Object(_), Some(ParseShape::Object(_)))
                | (Shape::Objects(_), Some(ParseShape::Objects(_))) => true,
                (Shape::FirstNamed(a, _), Some(ParseShape::FirstNamed(b, _))) => a == *b,
                (Shape::Strings(a), Some(ParseShape::Strings(b))) => a == *b,
                _ => false,
            };
            if !same {
                return Err(format!("{} is parsed with another shape", field.name));
            }
            if let Some(child) = node.child(at) {
                reads_as(child, schema::inner(field.shape))
                    .map_err(|e| format!("{}.{e}", field.name))?;
            }
        }
        Ok(())
    }

    #[test]
    fn the_parse_tree_reads_every_kind_as_its_schema_says() {
        let tree = parse_tree();
        for (kind, fields) in schema::KINDS {
            assert_eq!(reads_as(tree, fields), Ok(()), "{kind}");
        }
        assert_eq!(reads_as(tree, super::super::NAMESPACE), Ok(()));
        assert_eq!(reads_as(tree, SERVER_FIELDS), Ok(()));
        // And the check can fail: a name read with another shape.
        const CLASH: &[Field] = &[schema::given(
            "metadata",
            Shape::Object(&[schema::given("name", Shape::Bool)]),
        )];
        assert_eq!(
            reads_as(tree, CLASH),
            Err("metadata.name is parsed with another shape".to_string())
        );
    }
}
