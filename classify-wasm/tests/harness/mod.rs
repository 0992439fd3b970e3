//! One harness for every case file, natively and under wasm.
//!
//! A case file is one of:
//! - `{ "name", "about", "snapshot", "expected" }` (the shared golden cases);
//! - the same with `"input"` (raw text: a dump in JSON or YAML) instead of
//!   `"snapshot"`, optional `"options"` (`{ "mode", "nodesReadable" }`), and
//!   `"wantError"` (the exact `<line>:<column>: <message>`) instead of
//!   `"expected"`, for this repo's own cases in `classify-wasm/cases/`;
//! - a kubectl dump `X.yaml` whose expected observations are `X.expected.json`.
//!
//! The check is rust-analyzer's `check(input, expect)`: classify, serialize,
//! compare with the expectation, and print a readable diff when they differ.

#![allow(dead_code)]

use classify_wasm::{Observation, Options};
use serde_json::Value;

pub struct Case {
    pub name: String,
    pub input: String,
    pub options: Options,
    pub want: Want,
}

pub enum Want {
    Observations(Value),
    Error(String),
}

/// Turns a folder's files (name, text) into cases. Errors name the file.
pub fn cases_from_files(files: &[(String, String)]) -> Result<Vec<Case>, String> {
    let mut cases = Vec::new();
    for (name, text) in files {
        if name.ends_with(".expected.json") {
            continue;
        }
        if name.ends_with(".yaml") || name.ends_with(".yml") {
            let stem = name.trim_end_matches(".yaml").trim_end_matches(".yml");
            let expected_name = format!("{stem}.expected.json");
            let (_, expected) = files
                .iter()
                .find(|(n, _)| *n == expected_name)
                .ok_or_else(|| format!("{name}: no {expected_name} beside it"))?;
            let want =
                serde_json::from_str(expected).map_err(|e| format!("{expected_name}: {e}"))?;
            cases.push(Case {
                name: name.clone(),
                input: text.clone(),
                options: Options::default(),
                want: Want::Observations(want),
            });
            continue;
        }
        let doc: Value = serde_json::from_str(text).map_err(|e| format!("{name}: {e}"))?;
        let input = match (doc.get("snapshot"), doc.get("input")) {
            (Some(snapshot), None) => serde_json::to_string(snapshot).map_err(|e| e.to_string())?,
            (None, Some(Value::String(input))) => input.clone(),
            _ => {
                return Err(format!(
                    "{name}: a case needs exactly one of `snapshot` or `input` (a string)"
                ))
            }
        };
        let options: Options = match doc.get("options") {
            Some(o) => {
                serde_json::from_value(o.clone()).map_err(|e| format!("{name}: options: {e}"))?
            }
            None => Options::default(),
        };
        let want = match (doc.get("expected"), doc.get("wantError")) {
            (Some(expected), None) => Want::Observations(expected.clone()),
            (None, Some(Value::String(e))) => Want::Error(e.clone()),
            _ => {
                return Err(format!(
                    "{name}: a case needs exactly one of `expected` or `wantError` (a string)"
                ))
            }
        };
        cases.push(Case {
            name: name.clone(),
            input,
            options,
            want,
        });
    }
    Ok(cases)
}

/// A line diff of two texts (longest common subsequence), `-` expected, `+` actual.
pub fn diff(expected: &str, actual: &str) -> String {
    let a: Vec<&str> = expected.lines().collect();
    let b: Vec<&str> = actual.lines().collect();
    let mut lcs = vec![vec![0usize; b.len() + 1]; a.len() + 1];
    for i in (0..a.len()).rev() {
        for j in (0..b.len()).rev() {
            lcs[i][j] = if a[i] == b[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < a.len() || j < b.len() {
        if i < a.len() && j < b.len() && a[i] == b[j] {
            out.push_str(&format!("  {}\n", a[i]));
            i += 1;
            j += 1;
        } else if j < b.len() && (i == a.len() || lcs[i][j + 1] >= lcs[i + 1][j]) {
            out.push_str(&format!("+ {}\n", b[j]));
            j += 1;
        } else {
            out.push_str(&format!("- {}\n", a[i]));
            i += 1;
        }
    }
    out
}

/// Runs one case through `classify` (native or the wasm boundary) and
/// returns a readable failure, or the exact output JSON on success.
pub fn check(
    case: &Case,
    classify: impl Fn(&str, Options) -> Result<Vec<Observation>, String>,
) -> Result<String, String> {
    let got = classify(&case.input, case.options);
    match (&case.want, got) {
        (Want::Observations(expected), Ok(observations)) => {
            let actual = serde_json::to_value(&observations).map_err(|e| e.to_string())?;
            if &actual != expected {
                let e = serde_json::to_string_pretty(expected).unwrap_or_default();
                let a = serde_json::to_string_pretty(&actual).unwrap_or_default();
                return Err(format!(
                    "{}: observations differ (- expected, + actual)\n{}",
                    case.name,
                    diff(&e, &a)
                ));
            }
            // Byte for byte: our serialization of the expectation, typed, is our output.
            let typed: Vec<Observation> =
                serde_json::from_value(expected.clone()).map_err(|e| {
                    format!("{}: expected is not a list of observations: {e}", case.name)
                })?;
            let exact = serde_json::to_string(&observations).map_err(|e| e.to_string())?;
            if exact != serde_json::to_string(&typed).map_err(|e| e.to_string())? {
                return Err(format!(
                    "{}: output bytes differ from the expectation",
                    case.name
                ));
            }
            Ok(exact)
        }
        (Want::Observations(_), Err(e)) => Err(format!(
            "{}: expected observations, got the error {e}",
            case.name
        )),
        (Want::Error(want), Err(e)) if &e == want => Ok(e),
        (Want::Error(want), Err(e)) => Err(format!("{}: wrong error\n- {want}\n+ {e}", case.name)),
        (Want::Error(want), Ok(o)) => Err(format!(
            "{}: expected the error {want}, got {} observations",
            case.name,
            o.len()
        )),
    }
}

/// Runs every case and fails once, listing every failure.
pub fn check_all(
    cases: &[Case],
    classify: impl Fn(&str, Options) -> Result<Vec<Observation>, String>,
) -> Vec<String> {
    let mut failures = Vec::new();
    for case in cases {
        if let Err(e) = check(case, &classify) {
            failures.push(e);
        }
    }
    failures
}
