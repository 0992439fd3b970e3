//! The queue facts' golden cases (`classify-wasm/queue-cases/*.json`), one
//! check for the native run and the wasm run: a case is a `snapshot`, an
//! optional `visibility` (what the reader may not see) and `expectedQueue`,
//! the facts as `classify --output explain` prints them.

use classify_wasm::queue::{facts_in_snapshot, facts_text, JobQueueFacts, Visibility};
use serde_json::Value;

use crate::harness::diff;

/// The key of a case's golden queue text.
pub const EXPECTED_QUEUE: &str = "expectedQueue";

/// What the engine gives for one case file.
pub struct QueueOutcome {
    pub case: Value,
    /// The facts as `classify --output explain` prints them.
    pub rendered: String,
    pub facts: Vec<JobQueueFacts>,
}

/// Reads a case file's text and computes its queue facts. Errors name the
/// file.
pub fn run(name: &str, text: &str) -> Result<QueueOutcome, String> {
    let case: Value = serde_json::from_str(text).map_err(|e| format!("{name}: {e}"))?;
    let snapshot = case
        .get("snapshot")
        .ok_or_else(|| format!("{name}: no `snapshot`"))?;
    let visibility: Visibility = match case.get("visibility") {
        Some(v) => serde_json::from_value(v.clone()).map_err(|e| format!("{name}: {e}"))?,
        None => Visibility::default(),
    };
    let facts = facts_in_snapshot(&snapshot.to_string(), &visibility)
        .map_err(|e| format!("{name}: {e}"))?;
    if facts.is_empty() {
        return Err(format!("{name}: no TrainJob got queue facts"));
    }
    // What the JSON of Find and Inspect carries reads back to itself.
    let json = serde_json::to_string(&facts).map_err(|e| format!("{name}: {e}"))?;
    let back: Vec<JobQueueFacts> =
        serde_json::from_str(&json).map_err(|e| format!("{name}: {e}"))?;
    if back != facts {
        return Err(format!("{name}: the facts' JSON does not read back"));
    }
    Ok(QueueOutcome {
        rendered: facts_text(&facts),
        case,
        facts,
    })
}

/// Checks one case file against its `expectedQueue`, with a line diff on
/// mismatch.
pub fn check(name: &str, text: &str) -> Result<(), String> {
    let outcome = run(name, text)?;
    let expected = outcome
        .case
        .get(EXPECTED_QUEUE)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("{name}: no string `{EXPECTED_QUEUE}`"))?;
    if expected != outcome.rendered {
        return Err(format!(
            "{name}: the queue facts differ from `{EXPECTED_QUEUE}` (- expected, + actual; \
             UPDATE_EXPECT=1 cargo test -p classify-wasm --test queue rewrites it)\n{}",
            diff(expected, &outcome.rendered)
        ));
    }
    Ok(())
}
