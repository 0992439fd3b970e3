//! The server's projection against the engine's set of fields read
//! (`classify_wasm::fields`), over every object of every golden case:
//!
//! - nothing is kept that the engine does not read (every key of a
//!   projection is one of `READ_KEYS`, every label one of `LABELS_READ`,
//!   every annotation one of `ANNOTATIONS_READ`, or one the queue facts
//!   read, `QUEUE_READ_KEYS`), so nothing else of a pod spec can leave the
//!   server;
//! - nothing the engine reads is dropped: a namespace rebuilt from the
//!   projections classifies exactly as the case's own snapshot does, and
//!   gives the same queue facts as each queue case's own snapshot.
//!
//! The projection follows the engine's read schema
//! (`classify_wasm::schema`), so a field added there is kept, and checked
//! here, with no change to the server.

use classify_wasm::fields::{
    is_queue_read_key, is_read_key, ANNOTATIONS_READ, LABELS_READ, QUEUE_QUANTITY_MAPS,
};
use classify_wasm::queue::{facts_in_snapshot, facts_text, Visibility};
use classify_wasm::{Mode, Options, SnapshotWriter};
use dispatch_dash::serve::projection::{project, ObjectKind};
use serde_json::Value;
use test_support::{engine_cases_dir, read_case_folder, shared_dir};

/// Every case file's snapshot, with its file name: the public cases and this
/// repo's own (those given as text are left to the engine's own harness).
fn case_snapshots() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for dir in [shared_dir().join("cases"), engine_cases_dir()] {
        for (name, text) in read_case_folder(&dir) {
            if !name.ends_with(".json") {
                continue;
            }
            let path = dir.join(&name);
            let case: Value =
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            if let Some(snapshot) = case.get("snapshot").filter(|s| s.is_object()) {
                out.push((path.display().to_string(), snapshot.clone()));
            }
        }
    }
    assert!(out.len() >= 40, "the cases were found: {}", out.len());
    out
}

/// Every key path of `value` whose key the engine does not read, skipping
/// the contents of label and annotation maps (checked apart).
fn unread_keys(value: &Value, path: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let here = format!("{path}.{key}");
                // Written for people reading a stored object (Inspect's
                // YAML); the engine does not read it.
                if path.is_empty() && key == "apiVersion" {
                    continue;
                }
                if !is_read_key(key) && !is_queue_read_key(key) {
                    out.push(here.clone());
                }
                // Label and annotation keys are checked apart, and a
                // quantity map's keys are resource names.
                if key != "labels"
                    && key != "annotations"
                    && !QUEUE_QUANTITY_MAPS.contains(&key.as_str())
                {
                    unread_keys(child, &here, out);
                }
            }
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                unread_keys(item, &format!("{path}[{i}]"), out);
            }
        }
        _ => {}
    }
}

fn kept_keys<'v>(projection: &'v Value, map: &str) -> Vec<&'v str> {
    projection["metadata"][map]
        .as_object()
        .map(|m| m.keys().map(String::as_str).collect())
        .unwrap_or_default()
}

fn projection_of(item: &Value) -> Option<(ObjectKind, Value, String)> {
    let kind = item.get("kind")?.as_str()?;
    let kind = ObjectKind::ALL
        .into_iter()
        .chain(ObjectKind::QUEUES)
        .find(|k| k.name() == kind)?;
    let stored = project(kind, item)?;
    Some((kind, stored.value(), stored.json.to_string()))
}

#[test]
fn a_projection_keeps_only_fields_the_engine_reads() {
    let mut projected = 0;
    for (file, snapshot) in case_snapshots() {
        let items = snapshot["items"].as_array().cloned().unwrap_or_default();
        let pods = snapshot["captured"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c.get("pod").cloned());
        for item in items.into_iter().chain(pods) {
            let Some((kind, projection, _)) = projection_of(&item) else {
                continue;
            };
            projected += 1;
            let mut unread = Vec::new();
            unread_keys(&projection, "", &mut unread);
            assert!(
                unread.is_empty(),
                "{file}: a {kind:?} projection keeps fields the engine does not read: {unread:?}"
            );
            for label in kept_keys(&projection, "labels") {
                assert!(LABELS_READ.contains(&label), "{file}: label {label} kept");
            }
            for annotation in kept_keys(&projection, "annotations") {
                assert!(
                    ANNOTATIONS_READ.contains(&annotation),
                    "{file}: annotation {annotation} kept"
                );
            }
        }
    }
    assert!(projected > 200, "objects projected: {projected}");
}

/// The header a case's snapshot gives, for the rebuilt one.
fn options_of(snapshot: &Value) -> Options {
    Options {
        mode: match snapshot.get("mode").and_then(Value::as_str) {
            Some("plain") => Some(Mode::Plain),
            Some("kueue") => Some(Mode::Kueue),
            _ => None,
        },
        nodes_readable: snapshot.get("nodesReadable").and_then(Value::as_bool),
    }
}

#[test]
fn a_namespace_of_projections_classifies_as_the_objects_do() {
    let mut compared = 0;
    for (file, snapshot) in case_snapshots() {
        let Ok(want) = classify_wasm::classify(&snapshot.to_string(), Options::default()) else {
            // Input the engine refuses (a field of the wrong type): the
            // projection drops such a field instead, by design.
            continue;
        };
        let mut writer = SnapshotWriter::new(options_of(&snapshot));
        for item in snapshot["items"].as_array().into_iter().flatten() {
            if let Some((_, _, json)) = projection_of(item) {
                writer.item(&json);
            }
        }
        for captured in snapshot["captured"].as_array().into_iter().flatten() {
            let uid = captured["trainJobUID"].as_str().unwrap_or_default();
            if let Some((_, _, json)) = projection_of(&captured["pod"]) {
                writer.captured(uid, &json, false);
            }
        }
        let got = classify_wasm::classify(&writer.finish(), Options::default())
            .unwrap_or_else(|e| panic!("{file}: the projections are not engine input: {e}"));
        assert_eq!(got, want, "{file}: the projections classify differently");
        compared += 1;
    }
    assert!(compared >= 40, "cases compared: {compared}");
}

#[test]
fn a_namespace_of_projections_gives_the_queue_facts_the_objects_do() {
    let dir = engine_cases_dir().join("../queue-cases");
    let mut compared = 0;
    for (name, text) in read_case_folder(&dir) {
        let case: Value = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        let snapshot = &case["snapshot"];
        let visibility: Visibility = case
            .get("visibility")
            .map(|v| serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("{name}: {e}")))
            .unwrap_or_default();
        let want = facts_in_snapshot(&snapshot.to_string(), &visibility)
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        let mut writer = SnapshotWriter::new(options_of(snapshot));
        for item in snapshot["items"].as_array().into_iter().flatten() {
            if let Some((_, _, json)) = projection_of(item) {
                writer.item(&json);
            }
        }
        let got = facts_in_snapshot(&writer.finish(), &visibility)
            .unwrap_or_else(|e| panic!("{name}: the projections are not input: {e}"));
        assert_eq!(
            facts_text(&got),
            facts_text(&want),
            "{name}: the projections give other queue facts"
        );
        assert_eq!(got, want, "{name}");
        compared += 1;
    }
    assert!(compared >= 10, "queue cases compared: {compared}");
}
