//! Every case file, natively: `../shared/cases`, `../shared/dumps` and this
//! crate's own `cases/`, read from disk at test time.

#![cfg(not(target_arch = "wasm32"))]

mod harness;

use std::path::{Path, PathBuf};

fn shared() -> PathBuf {
    std::env::var_os("DISPATCH_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"))
}

fn read_folder(dir: &Path) -> Vec<(String, String)> {
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut files: Vec<(String, String)> = entries
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| {
            matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("json" | "yaml" | "yml")
            )
        })
        .map(|p| {
            let text =
                std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
            (p.file_name().unwrap().to_string_lossy().into_owned(), text)
        })
        .collect();
    files.sort();
    files
}

fn native(
    input: &str,
    options: classify_wasm::Options,
) -> Result<Vec<classify_wasm::Observation>, String> {
    classify_wasm::classify(input, options).map_err(|e| e.to_string())
}

fn run_folder(dir: &Path, at_least: usize) {
    let files = read_folder(dir);
    let cases = harness::cases_from_files(&files).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        cases.len() >= at_least,
        "{}: expected at least {at_least} cases, found {}",
        dir.display(),
        cases.len()
    );
    let failures = harness::check_all(&cases, native);
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n\n")
    );
}

#[test]
fn shared_golden_cases() {
    run_folder(&shared().join("cases"), 20);
}

#[test]
fn shared_kubectl_dumps() {
    run_folder(&shared().join("dumps"), 2);
}

#[test]
fn own_cases() {
    run_folder(&Path::new(env!("CARGO_MANIFEST_DIR")).join("cases"), 1);
}

/// The explanation's observation is the observation.
#[test]
fn explain_agrees_with_classify() {
    for (name, text) in read_folder(&shared().join("cases")) {
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let input = doc["snapshot"].to_string();
        let plain = classify_wasm::classify(&input, Default::default()).unwrap();
        let explained = classify_wasm::explain(&input, Default::default()).unwrap();
        let from_explain: Vec<_> = explained.into_iter().map(|e| e.observation).collect();
        assert_eq!(plain, from_explain, "{name}");
    }
}

/// A YAML dump converted to JSON classifies exactly as the YAML did: every
/// YAML input among the case files, own and shared.
#[test]
fn yaml_dumps_convert_to_json_that_classifies_the_same() {
    let mut inputs: Vec<(String, String)> = read_folder(&shared().join("dumps"))
        .into_iter()
        .filter(|(name, _)| name.ends_with(".yaml"))
        .collect();
    for (name, text) in read_folder(&Path::new(env!("CARGO_MANIFEST_DIR")).join("cases")) {
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        if let Some(input) = doc["input"]
            .as_str()
            .filter(|i| !i.trim_start().starts_with(['{', '[']))
        {
            inputs.push((name, input.to_string()));
        }
    }
    assert!(inputs.len() >= 4, "{} YAML inputs", inputs.len());
    for (name, yaml) in inputs {
        let from_yaml = classify_wasm::classify(&yaml, Default::default());
        match classify_wasm::dump_to_json(&yaml) {
            Ok(json) => {
                assert!(json.starts_with('{'), "{name}: {json}");
                assert_eq!(
                    classify_wasm::classify(&json, Default::default()),
                    from_yaml,
                    "{name}"
                );
            }
            // Only input that is no dump at all fails to convert, with the same error.
            Err(e) => assert_eq!(from_yaml, Err(e), "{name}"),
        }
    }
}
