//! The shared golden cases (`../shared/cases/*.json`), read at test time by
//! the web crate's native tests.

use serde_json::Value;

fn dir() -> String {
    format!("{}/../../shared/cases", env!("CARGO_MANIFEST_DIR"))
}

/// The case `name`.
pub fn case(name: &str) -> Value {
    let path = format!("{}/{name}.json", dir());
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Every case, in file-name order.
pub fn all_cases() -> Vec<Value> {
    let mut names: Vec<_> = std::fs::read_dir(dir())
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|p| serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap())
        .collect()
}
