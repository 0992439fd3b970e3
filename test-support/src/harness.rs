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
//! Any JSON case may also carry `"expectedExplain"`: the exact text
//! `dispatch-dash classify --output explain` prints for its input (the
//! engine's `explanations_text`), checked with a line diff. Running the native
//! tests with `UPDATE_EXPECT=1` rewrites that string, and nothing else, in
//! every case file that has one ([`with_expected_explain`]).
//!
//! The check is rust-analyzer's `check(input, expect)`: classify, serialize,
//! compare with the expectation, and print a readable diff when they differ.

use classify_wasm::{Explanation, Observation, Options};
use serde_json::Value;

pub struct Case {
    pub name: String,
    pub input: String,
    pub options: Options,
    pub want: Want,
    /// The golden `--output explain` text, when the case pins one.
    pub expected_explain: Option<String>,
}

/// The key of a case's golden explanation text.
pub const EXPECTED_EXPLAIN: &str = "expectedExplain";

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
                expected_explain: None,
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
        let expected_explain = match doc.get(EXPECTED_EXPLAIN) {
            None => None,
            Some(Value::String(text)) => Some(text.clone()),
            Some(_) => return Err(format!("{name}: `{EXPECTED_EXPLAIN}` must be a string")),
        };
        if expected_explain.is_some() && !matches!(want, Want::Observations(_)) {
            return Err(format!(
                "{name}: `{EXPECTED_EXPLAIN}` needs `expected` (an error has no explanation)"
            ));
        }
        cases.push(Case {
            name: name.clone(),
            input,
            options,
            want,
            expected_explain,
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
        } else if i < a.len() && (j == b.len() || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push_str(&format!("- {}\n", a[i]));
            i += 1;
        } else {
            out.push_str(&format!("+ {}\n", b[j]));
            j += 1;
        }
    }
    out
}

/// The golden explanation check: the text `explain` renders for the case's
/// input against its `expectedExplain`, with a line diff on mismatch.
pub fn check_explain(
    case: &Case,
    explain: impl Fn(&str, Options) -> Result<Vec<Explanation>, String>,
) -> Result<(), String> {
    let Some(expected) = &case.expected_explain else {
        return Ok(());
    };
    let explained = explain(&case.input, case.options)
        .map_err(|e| format!("{}: explain failed: {e}", case.name))?;
    let actual = classify_wasm::explanations_text(&explained);
    if &actual != expected {
        return Err(format!(
            "{}: the explanation differs from `{EXPECTED_EXPLAIN}` (- expected, + actual; \
             UPDATE_EXPECT=1 cargo test -p classify-wasm rewrites it)\n{}",
            case.name,
            diff(expected, &actual)
        ));
    }
    Ok(())
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

/// Runs every case (observations, and the explanation where pinned) and
/// fails once, listing every failure.
pub fn check_all(
    cases: &[Case],
    classify: impl Fn(&str, Options) -> Result<Vec<Observation>, String>,
    explain: impl Fn(&str, Options) -> Result<Vec<Explanation>, String>,
) -> Vec<String> {
    let mut failures = Vec::new();
    for case in cases {
        if let Err(e) = check(case, &classify) {
            failures.push(e);
        }
        if let Err(e) = check_explain(case, &explain) {
            failures.push(e);
        }
    }
    failures
}

/// The bless step: `file` (a case file's text) with the string value of its
/// top-level `expectedExplain` replaced by `text`, every other byte kept, so
/// a rewrite changes that one value and the file's formatting stays as it
/// was. `None` when the file has no such key at the top level.
pub fn with_expected_explain(file: &str, text: &str) -> Result<Option<String>, String> {
    with_top_level_string(file, EXPECTED_EXPLAIN, text)
}

/// The bless step for any golden string: `file` with the string value of
/// its top-level `key` replaced by `text`, every other byte kept; `None`
/// when there is no such key.
pub fn with_top_level_string(file: &str, key: &str, text: &str) -> Result<Option<String>, String> {
    let Some(span) = top_level_string_value(file, key)? else {
        return Ok(None);
    };
    let literal = serde_json::to_string(text).map_err(|e| e.to_string())?;
    Ok(Some(format!(
        "{}{literal}{}",
        &file[..span.start],
        &file[span.end..]
    )))
}

/// The byte range of the string literal (quotes included) that is the value
/// of `key` in the top-level object of the JSON text `file`.
fn top_level_string_value(file: &str, key: &str) -> Result<Option<std::ops::Range<usize>>, String> {
    let bytes = file.as_bytes();
    // The end (exclusive) of the string literal starting at `start`.
    let string_end = |start: usize| -> Result<usize, String> {
        let mut i = start + 1;
        while i < bytes.len() {
            match bytes[i] {
                b'\\' => i += 2,
                b'"' => return Ok(i + 1),
                _ => i += 1,
            }
        }
        Err("an unterminated string".to_string())
    };
    let mut depth = 0usize;
    // At depth 1, whether the next string is a key (after `{` or `,`).
    let mut expect_key = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let end = string_end(i)?;
                if depth == 1 && expect_key {
                    let name: String =
                        serde_json::from_str(&file[i..end]).map_err(|e| e.to_string())?;
                    expect_key = false;
                    if name == key {
                        let mut j = end;
                        while j < bytes.len()
                            && (bytes[j].is_ascii_whitespace() || bytes[j] == b':')
                        {
                            j += 1;
                        }
                        if bytes.get(j) != Some(&b'"') {
                            return Err(format!("`{key}` is not a string"));
                        }
                        return Ok(Some(j..string_end(j)?));
                    }
                }
                i = end;
                continue;
            }
            b'{' | b'[' => {
                depth += 1;
                expect_key = depth == 1;
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b',' if depth == 1 => expect_key = true,
            _ => {}
        }
        i += 1;
    }
    Ok(None)
}
