//! The output: one observation per object (section 3), with exactly the JSON
//! field names and values of the spec.

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    pub kind: String,
    pub namespace: String,
    pub name: String,
    pub uid: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum State {
    Ended,
    Gated,
    Held,
    Suspended,
    Pending,
    Running,
}

impl State {
    pub const ALL: [State; 6] = [
        State::Ended,
        State::Gated,
        State::Held,
        State::Suspended,
        State::Pending,
        State::Running,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            State::Ended => "ended",
            State::Gated => "gated",
            State::Held => "held",
            State::Suspended => "suspended",
            State::Pending => "pending",
            State::Running => "running",
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum CauseKind {
    None,
    Completed,
    NodeLost,
    Preempted,
    OutOfMemory,
    NonZeroExit,
    Evicted,
    DeadlineExceeded,
    Invalid,
    Unknown,
}

impl CauseKind {
    pub const ALL: [CauseKind; 10] = [
        CauseKind::None,
        CauseKind::Completed,
        CauseKind::NodeLost,
        CauseKind::Preempted,
        CauseKind::OutOfMemory,
        CauseKind::NonZeroExit,
        CauseKind::Evicted,
        CauseKind::DeadlineExceeded,
        CauseKind::Invalid,
        CauseKind::Unknown,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            CauseKind::None => "none",
            CauseKind::Completed => "completed",
            CauseKind::NodeLost => "node-lost",
            CauseKind::Preempted => "preempted",
            CauseKind::OutOfMemory => "out-of-memory",
            CauseKind::NonZeroExit => "non-zero-exit",
            CauseKind::Evicted => "evicted",
            CauseKind::DeadlineExceeded => "deadline-exceeded",
            CauseKind::Invalid => "invalid",
            CauseKind::Unknown => "unknown",
        }
    }

    /// The tie-break rank of a pod finding (section 7): lower wins.
    pub fn rank(self) -> u8 {
        match self {
            CauseKind::NodeLost => 0,
            CauseKind::Preempted => 1,
            CauseKind::OutOfMemory => 2,
            CauseKind::NonZeroExit => 3,
            _ => 4,
        }
    }
}

impl fmt::Display for CauseKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Provenance {
    Trainjob,
    Workload,
    Node,
    Pod,
    CapturedPod,
}

impl Provenance {
    pub fn as_str(self) -> &'static str {
        match self {
            Provenance::Trainjob => "trainjob",
            Provenance::Workload => "workload",
            Provenance::Node => "node",
            Provenance::Pod => "pod",
            Provenance::CapturedPod => "captured-pod",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cause {
    pub kind: CauseKind,
    pub provenance: Option<Provenance>,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Execution {
    pub admission: u64,
    pub restart_attempt: u64,
}

impl fmt::Display for Execution {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "A={} J={}", self.admission, self.restart_attempt)
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Observation {
    pub object: ObjectRef,
    pub job: String,
    pub submission: String,
    pub state: State,
    pub held: bool,
    pub hold_instance: Option<u64>,
    pub foreign: bool,
    pub cause: Cause,
    pub execution: Option<Execution>,
}

/// Section 3's order of observations, borrowed: namespace, job, TrainJobs
/// before orphans, kind, name. `str` compares by UTF-8 bytes. The one
/// definition behind [`Observation::cmp_order`] and [`OrderKey`].
type OrderFields<'a> = (&'a str, &'a str, bool, &'a str, &'a str);

fn order_fields<'a>(
    namespace: &'a str,
    job: &'a str,
    kind: &'a str,
    name: &'a str,
) -> OrderFields<'a> {
    (namespace, job, kind != "TrainJob", kind, name)
}

impl Observation {
    /// Whether entering this observation's state and cause is news worth
    /// telling a team (alerts, webhooks, desktop notifications): a TrainJob
    /// that ended with any cause but `completed`, or that is held. The
    /// one rule the server's notifications and the browser's share.
    pub fn is_news(&self) -> bool {
        self.object.kind == "TrainJob"
            && match self.state {
                State::Ended => self.cause.kind != CauseKind::Completed,
                State::Held => true,
                _ => false,
            }
    }

    /// The one line a notification leads with:
    /// `team-a/llm-7b ended: out-of-memory (attempt 3)`; the attempt is the
    /// execution's restart attempt, counted from 1.
    pub fn headline(&self) -> String {
        let mut text = format!(
            "{}/{} {}: {}",
            self.object.namespace,
            self.object.name,
            self.state.as_str(),
            self.cause.kind.as_str()
        );
        if let Some(execution) = self.execution {
            text.push_str(&format!(
                " (attempt {})",
                execution.restart_attempt.saturating_add(1)
            ));
        }
        text
    }

    /// Compares two observations in the order section 3 lists them (the
    /// engine's own output is sorted by it, stably).
    pub fn cmp_order(&self, other: &Observation) -> Ordering {
        self.order_fields().cmp(&other.order_fields())
    }

    /// The observation's place in section 3's order, as an owned key for
    /// consumers that keep observations in a sorted map (the browser's rows).
    pub fn order_key(&self) -> OrderKey {
        OrderKey {
            namespace: self.object.namespace.clone(),
            job: self.job.clone(),
            kind: self.object.kind.clone(),
            name: self.object.name.clone(),
        }
    }

    fn order_fields(&self) -> OrderFields<'_> {
        order_fields(
            &self.object.namespace,
            &self.job,
            &self.object.kind,
            &self.object.name,
        )
    }
}

/// An observation's place in section 3's order ([`Observation::order_key`]);
/// it orders exactly as [`Observation::cmp_order`] does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OrderKey {
    namespace: String,
    job: String,
    kind: String,
    name: String,
}

impl OrderKey {
    fn fields(&self) -> OrderFields<'_> {
        order_fields(&self.namespace, &self.job, &self.kind, &self.name)
    }
}

impl Ord for OrderKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.fields().cmp(&other.fields())
    }
}

impl PartialOrd for OrderKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observation(namespace: &str, job: &str, kind: &str, name: &str) -> Observation {
        Observation {
            object: ObjectRef {
                kind: kind.into(),
                namespace: namespace.into(),
                name: name.into(),
                uid: String::new(),
            },
            job: job.into(),
            submission: String::new(),
            state: State::Running,
            held: false,
            hold_instance: None,
            foreign: false,
            cause: Cause {
                kind: CauseKind::None,
                provenance: None,
                detail: String::new(),
            },
            execution: None,
        }
    }

    #[test]
    fn the_owned_key_orders_as_the_comparison_does() {
        let all = [
            observation("b", "j", "TrainJob", "j-1"),
            observation("a", "k", "Pod", "k-0"),
            observation("a", "j", "Pod", "j-0"),
            observation("a", "j", "JobSet", "j-1"),
            observation("a", "j", "TrainJob", "j-2"),
            observation("a", "j", "TrainJob", "j-1"),
            observation("a", "é", "TrainJob", "x"),
        ];
        let mut by_cmp = all.to_vec();
        by_cmp.sort_by(Observation::cmp_order);
        let mut by_key = all.to_vec();
        by_key.sort_by_key(Observation::order_key);
        assert_eq!(by_cmp, by_key);
        let names: Vec<&str> = by_cmp.iter().map(|o| o.object.name.as_str()).collect();
        // TrainJobs first within a job, then the orphans by kind and name.
        assert_eq!(names, ["j-1", "j-2", "j-1", "j-0", "k-0", "x", "j-1"]);
    }
}
