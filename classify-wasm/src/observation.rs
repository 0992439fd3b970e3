//! The output: one observation per object (section 3), with exactly the JSON
//! field names and values of the spec.

use serde::{Deserialize, Serialize};
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
