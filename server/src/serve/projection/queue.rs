//! What a projection keeps for the queue facts (`classify_wasm::queue`):
//! a Workload's pod sets and admission, and a LocalQueue's or
//! ClusterQueue's spec and status, as trees filtered to the engine's
//! [`fields::QUEUE_READ_KEYS`].
//!
//! Why a filtered tree and not typed fields: a ClusterQueue's resource
//! groups nest four levels deep, and the engine reads them whole. The
//! filter is the engine's list, so the server cannot keep a key the engine
//! does not read. Of a pod set's template that is the containers' names and
//! their `resources.requests` and `resources.limits`, and the `overhead`:
//! never an env value, an argument, an image or a volume.

use serde::de::{IgnoredAny, MapAccess, SeqAccess};
use serde_json::{Map, Number, Value};

use classify_wasm::fields;

use super::{Integer, Lenient, Maybe};

/// A JSON value with only the keys the queue facts read, at every depth.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(super) struct QueueTree(pub(super) Value);

/// A map of resource name to quantity (`requests`, `limits`, `overhead`):
/// every entry whose value is a string or an integer, whatever its key.
struct QuantityMap(Value);

fn number(v: Integer) -> Value {
    match v {
        Integer::Unsigned(n) => Value::Number(Number::from(n)),
        Integer::Signed(n) => Value::Number(Number::from(n)),
    }
}

impl Lenient for QueueTree {
    fn from_str(text: &str) -> Option<Self> {
        Some(QueueTree(Value::String(text.to_owned())))
    }
    fn from_string(text: String) -> Option<Self> {
        Some(QueueTree(Value::String(text)))
    }
    fn from_bool(v: bool) -> Option<Self> {
        Some(QueueTree(Value::Bool(v)))
    }
    fn from_integer(v: Integer) -> Option<Self> {
        Some(QueueTree(number(v)))
    }
    fn from_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Option<Self>, A::Error> {
        let mut kept = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if !fields::is_queue_read_key(&key) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let value = if fields::QUEUE_QUANTITY_MAPS.contains(&key.as_str()) {
                map.next_value::<Maybe<QuantityMap>>()?.0.map(|q| q.0)
            } else {
                map.next_value::<Maybe<QueueTree>>()?.0.map(|t| t.0)
            };
            // The last of duplicate keys wins, as in a `serde_json::Value`.
            match value {
                Some(value) => kept.insert(key, value),
                None => kept.remove(&key),
            };
        }
        Ok(Some(QueueTree(Value::Object(kept))))
    }
    fn from_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        let mut kept = Vec::new();
        while let Some(element) = seq.next_element::<Maybe<QueueTree>>()? {
            kept.extend(element.0.map(|t| t.0));
        }
        Ok(Some(QueueTree(Value::Array(kept))))
    }
}

/// A quantity as the API writes one: a string, or (written by hand) an
/// integer.
struct Scalar(Value);

impl Lenient for Scalar {
    fn from_str(text: &str) -> Option<Self> {
        Some(Scalar(Value::String(text.to_owned())))
    }
    fn from_string(text: String) -> Option<Self> {
        Some(Scalar(Value::String(text)))
    }
    fn from_integer(v: Integer) -> Option<Self> {
        Some(Scalar(number(v)))
    }
}

impl Lenient for QuantityMap {
    fn from_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Option<Self>, A::Error> {
        let mut kept = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            match map.next_value::<Maybe<Scalar>>()?.0 {
                Some(Scalar(value)) => kept.insert(key, value),
                None => kept.remove(&key),
            };
        }
        Ok(Some(QuantityMap(Value::Object(kept))))
    }
}
