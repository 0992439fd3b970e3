//! A YAML dump as the JSON snapshot it stands for, so that what the browser
//! classified from pasted YAML can be shown as objects and downloaded.
//!
//! A plain YAML scalar has no type of its own (section 1, Types): it is a
//! boolean or an integer only in the fields read as such, and a string in
//! every other field, so `status: True` stays the string `"True"`. The JSON
//! written here follows the same reading, which is what makes it classify
//! exactly as the YAML did.

use serde_json::{Map, Number, Value as Json};

use crate::fields::{BOOLEAN_FIELDS, INTEGER_FIELDS};
use crate::snapshot::{collect, input_error};
use crate::tree::{self, Node, Value};
use crate::InputError;

fn scalar(key: &str, text: &str) -> Json {
    if BOOLEAN_FIELDS.contains(&key) {
        match text {
            "true" | "True" | "TRUE" => return Json::Bool(true),
            "false" | "False" | "FALSE" => return Json::Bool(false),
            _ => {}
        }
    }
    if INTEGER_FIELDS.contains(&key) {
        if let Ok(n) = text.strip_prefix('+').unwrap_or(text).parse::<i64>() {
            return Json::Number(n.into());
        }
    }
    Json::String(text.to_string())
}

fn to_json(key: &str, node: &Node<'_>) -> Json {
    match &node.value {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Number(n) => n
            .parse::<Number>()
            .map(Json::Number)
            .unwrap_or_else(|_| Json::String(n.to_string())),
        Value::Str(s) => Json::String(s.to_string()),
        Value::Plain(s) => scalar(key, s),
        Value::Seq(items) => Json::Array(items.iter().map(|i| to_json(key, i)).collect()),
        Value::Map(_) | Value::Fields(_) => {
            let mut map = Map::new();
            for (k, v) in node.entries() {
                // The first of duplicate keys is the one read.
                if !map.contains_key(k) {
                    map.insert(k.to_string(), to_json(k, v));
                }
            }
            Json::Object(map)
        }
    }
}

/// The input as JSON that classifies exactly as the input does: JSON input
/// unchanged; a YAML Snapshot as a JSON one; any other YAML dump as a `List`
/// of its items. Errors are the ones classifying would give.
pub fn dump_to_json(input: &str) -> Result<String, InputError> {
    let documents = tree::parse(input)?;
    if documents.source.is_json() {
        return Ok(input.to_string());
    }
    let items = collect(&documents.docs).map_err(|e| input_error(&documents, e))?;
    let value = match items.snapshot {
        Some(snapshot) => to_json("", snapshot),
        None => serde_json::json!({
            "apiVersion": "v1",
            "kind": "List",
            "items": items.items.iter().map(|i| to_json("", i)).collect::<Vec<_>>(),
        }),
    };
    Ok(value.to_string())
}
