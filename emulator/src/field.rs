//! Panic-free counterparts of serde_json's `value[key]` indexing, for the
//! crate's `deny(clippy::indexing_slicing)`: each gives what the indexing
//! gives where it succeeds, and does nothing where it would panic (a step
//! of the path that is neither an object nor `null`).

use serde_json::{Map, Value};

static NULL: Value = Value::Null;

/// `&v[k0][k1]...`: the value at a path of object keys, or `null` where a
/// key is missing or a step is not an object.
pub(crate) fn at<'a>(v: &'a Value, path: &[&str]) -> &'a Value {
    path.iter().try_fold(v, |v, k| v.get(*k)).unwrap_or(&NULL)
}

/// `&mut v[k0][k1]...`: as with serde_json's `IndexMut`, a `null` on the way
/// becomes an empty object and a missing key is inserted as `null`. `None`
/// where a step is neither an object nor `null` (where indexing panics).
pub(crate) fn at_mut<'a>(v: &'a mut Value, path: &[&str]) -> Option<&'a mut Value> {
    let mut cur = v;
    for k in path {
        if cur.is_null() {
            *cur = Value::Object(Map::new());
        }
        cur = cur.as_object_mut()?.entry(*k).or_insert(Value::Null);
    }
    Some(cur)
}

/// `v[k0][k1]... = value`, or nothing where that indexing would panic.
pub(crate) fn set(v: &mut Value, path: &[&str], value: Value) {
    if let Some(slot) = at_mut(v, path) {
        *slot = value;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn matches_indexing() {
        let mut a = json!({"x": 1});
        let mut b = a.clone();
        a["m"]["n"] = json!(2);
        set(&mut b, &["m", "n"], json!(2));
        assert_eq!(a, b);
        assert_eq!(at(&a, &["m", "n"]), &a["m"]["n"]);
        assert_eq!(at(&a, &["x", "y"]), &Value::Null);
        // Mutable access inserts the missing keys, as `IndexMut` does.
        let _ = a["p"]["q"].as_array_mut();
        let _ = at_mut(&mut b, &["p", "q"]).and_then(Value::as_array_mut);
        assert_eq!(a, b);
    }

    #[test]
    fn no_panic_where_indexing_panics() {
        let mut v = json!({"x": 1});
        set(&mut v, &["x", "y"], json!(2));
        assert_eq!(v, json!({"x": 1}));
        assert!(at_mut(&mut v, &["x", "y"]).is_none());
    }
}
