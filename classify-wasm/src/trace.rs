//! The explanation of one observation, as a value: the deciding rule first,
//! then every rule with its verdict and the facts it read, the execution,
//! the findings and every attempt's own cause. It serializes to JSON for the
//! browser and implements `Display` for the terminal; [`explanations_text`]
//! is the CLI's whole `--output explain` text.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::observation::{Cause, CauseKind, Execution, Observation};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Explanation {
    pub observation: Observation,
    pub trace: Trace,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Matched,
    NotMatched,
    NotReached,
}

impl Verdict {
    /// The verdict as the explanation text and the browser write it.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Matched => "matched",
            Verdict::NotMatched => "not matched",
            Verdict::NotReached => "not reached",
        }
    }
}

/// One rule and what it saw. `id` is the spec's: `1`..`6`, `6a`..`6d`,
/// `2/FailedJobs`, `unknown-condition`, `orphan/JobSet`...
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RuleTrace {
    pub id: String,
    pub name: String,
    pub verdict: Verdict,
    pub facts: Vec<String>,
}

/// Where a finding came from in a pod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum FindingSource {
    DisruptionTarget,
    NodeContainer,
}

impl FindingSource {
    /// The source as the explanation text and the browser write it.
    pub fn word(self) -> &'static str {
        match self {
            FindingSource::DisruptionTarget => "DisruptionTarget",
            FindingSource::NodeContainer => "node container",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FindingTrace {
    pub pod: String,
    pub pod_uid: String,
    pub captured: bool,
    pub source: FindingSource,
    pub kind: CauseKind,
    pub rank: u8,
    /// RFC 3339 in UTC; `None` for an undated finding (ordered last).
    pub date: Option<String>,
    pub detail: String,
    pub winner: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionPod {
    pub pod: String,
    pub captured: bool,
    /// The raw `dispatch.phpboyscout.uk/admission` annotation.
    pub admission: Option<String>,
    /// The raw `jobset.sigs.k8s.io/restart-attempt` label.
    pub restart_attempt: Option<String>,
    /// A + J when both are counters.
    pub r: Option<u64>,
    pub counted: bool,
    pub in_current: bool,
    /// Why the pod counts, or why not.
    pub why: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecutionTrace {
    pub current: Option<Execution>,
    pub pods: Vec<ExecutionPod>,
}

/// One execution (A, J) of a TrainJob and its own section-7 winner, from
/// that execution's pods alone. The observation's cause reads the current
/// execution only; these say why each earlier attempt ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AttemptTrace {
    pub execution: Execution,
    /// The execution section 5 picks (the observation's `execution`).
    pub current: bool,
    /// The winning finding as a cause, in the observation's form; `None`
    /// when the execution's pods have no finding.
    pub cause: Option<Cause>,
    /// The execution's pods, live and captured, in name order.
    pub pods: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NoteTrace {
    /// `F1`..`F5`, `S1`..`S11`.
    pub rule: String,
    pub text: String,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trace {
    /// The deciding rule, in one sentence.
    pub decided_by: String,
    /// Rules 1–6 in order (or the orphan rule for an orphan).
    pub rules: Vec<RuleTrace>,
    /// The cause rule (a–d, a Failed-reason row, or the unknown-condition rule).
    pub cause: Option<RuleTrace>,
    pub execution: ExecutionTrace,
    /// Every execution among the counted pods, newest first (higher R, then
    /// higher A); empty for an orphan or when no pod counts.
    #[serde(default)]
    pub attempts: Vec<AttemptTrace>,
    pub findings: Vec<FindingTrace>,
    pub foreign: Vec<NoteTrace>,
    pub situation: Vec<NoteTrace>,
}

impl fmt::Display for Trace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "decided by: {}", self.decided_by)?;
        let rule = |f: &mut fmt::Formatter<'_>, r: &RuleTrace| -> fmt::Result {
            writeln!(f, "  rule {} {}: {}", r.id, r.name, r.verdict.word())?;
            for fact in &r.facts {
                writeln!(f, "      {fact}")?;
            }
            Ok(())
        };
        writeln!(f, "rules:")?;
        for r in &self.rules {
            rule(f, r)?;
        }
        if let Some(cause) = &self.cause {
            writeln!(f, "cause:")?;
            rule(f, cause)?;
        }
        match &self.execution.current {
            Some(e) => writeln!(f, "execution: {e}")?,
            None => writeln!(f, "execution: none (no pod counts towards one)")?,
        }
        for p in &self.execution.pods {
            let mark = if p.in_current { "*" } else { " " };
            let origin = if p.captured { " (captured)" } else { "" };
            writeln!(f, "  {mark} {}{origin}: {}", p.pod, p.why)?;
        }
        if !self.findings.is_empty() {
            writeln!(f, "findings (earliest first):")?;
            for x in &self.findings {
                let mark = if x.winner { "=>" } else { "  " };
                let origin = if x.captured { " captured" } else { "" };
                writeln!(
                    f,
                    "  {mark} {} {}{origin} [{} rank {}] {}: {}",
                    x.date.as_deref().unwrap_or("undated"),
                    x.pod,
                    x.kind,
                    x.rank,
                    x.source.word(),
                    x.detail
                )?;
            }
        }
        if !self.attempts.is_empty() {
            writeln!(f, "attempts (newest first):")?;
            for a in &self.attempts {
                let (mark, current) = if a.current {
                    ("*", " current")
                } else {
                    (" ", "")
                };
                let cause = match &a.cause {
                    Some(c) => format!(
                        "{}{}: {}",
                        c.kind,
                        c.provenance
                            .map(|p| format!(", from {}", p.as_str()))
                            .unwrap_or_default(),
                        c.detail
                    ),
                    None => "no finding".to_string(),
                };
                writeln!(
                    f,
                    "  {mark} {}{current}, pods {}: {cause}",
                    a.execution,
                    a.pods.join(", ")
                )?;
            }
        }
        for (title, notes) in [("foreign", &self.foreign), ("situation", &self.situation)] {
            if !notes.is_empty() {
                writeln!(f, "{title}:")?;
                for n in notes {
                    writeln!(f, "  {}: {}", n.rule, n.text)?;
                }
            }
        }
        Ok(())
    }
}

/// Every explanation as a person reads it, one block per object separated by
/// a blank line: `<Kind> <ns>/<name>: <state> (<cause>[, from <provenance>])`,
/// the detail, then the trace. This is exactly what `dispatch-dash classify
/// --output explain` prints, and what a case's `expectedExplain` pins; it
/// lives here so the CLI and the golden harness cannot render it apart.
pub fn explanations_text(explained: &[Explanation]) -> String {
    use fmt::Write as _;
    let mut out = String::new();
    for (i, e) in explained.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let o = &e.observation;
        let _ = writeln!(
            out,
            "{} {}/{}: {} ({}{})",
            o.object.kind,
            o.object.namespace,
            o.object.name,
            o.state,
            o.cause.kind,
            o.cause
                .provenance
                .map(|p| format!(", from {}", p.as_str()))
                .unwrap_or_default()
        );
        if !o.cause.detail.is_empty() {
            let _ = writeln!(out, "detail: {}", o.cause.detail);
        }
        out.push_str(&e.trace.to_string());
    }
    out.split('\n')
        .map(printable)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Text from the cluster never reaches a terminal as control sequences: each
/// control character becomes U+FFFD.
pub fn printable(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { '\u{fffd}' } else { c })
        .collect()
}
