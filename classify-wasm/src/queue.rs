//! Queue facts: why a pending TrainJob waits under Kueue, in numbers a
//! person can act on. Additive to the spec: the observation of section 3
//! never reads anything here, and nothing here changes it.
//!
//! [`facts`] is a pure function over one TrainJob, its Workload (section
//! 4's pick), and the queue objects it names, found through
//! [`QueueObjects`] so that the server's store, the browser's store and a
//! dump ([`snapshot`]) each look them up their own way and get the same
//! answer:
//!
//! - the LocalQueue is the Workload's `spec.queueName`, else the TrainJob's
//!   `kueue.x-k8s.io/queue-name` label; the ClusterQueue is the one the
//!   LocalQueue's `spec.clusterQueue` names;
//! - what the job asks for is, per pod set, `count` × the pod's effective
//!   request (the containers' requests summed, a limit standing in for a
//!   missing request, at least any one init container's, plus the pod's
//!   overhead), summed over the pod sets;
//! - what is free is, per flavor and resource of the ClusterQueue,
//!   `nominalQuota − reserved` (`status.flavorsReservation`, else
//!   `status.flavorsUsage`), and what could be borrowed when the
//!   ClusterQueue has a cohort (v1beta2 `spec.cohortName`, v1beta1
//!   `spec.cohort`);
//! - a job whose asks exceed what the ClusterQueue could ever give in
//!   every flavor, or that Kueue says `ExceedsMaxQuota`, **never fits**.
//!
//! Quantities are exact ([`crate::quantity`]); a malformed one is reported
//! with the object, the field and the column.

pub mod board;
pub mod line;
mod preemptor;
mod read;
pub mod snapshot;

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::quantity::Quantity;
use read::{ClusterQueue, LocalQueue, PendingWorkload, Row};

pub use preemptor::preemptor_uid_of;
pub use read::QueueReadError;

pub use snapshot::{
    explanations_with_queues, explanations_with_queues_text, facts_in_snapshot, facts_text,
    may_hold_queues, pick_workload, ExplanationWithQueue, JobQueueFacts, Visibility,
};

/// A queue object as the caller could find it.
#[derive(Debug)]
pub enum Lookup<'v, T: ?Sized = Value> {
    Found(&'v T),
    NotFound,
    /// There, perhaps, but this user may not read it (or the server cannot).
    NotReadable,
}

// By hand: a derive would ask `T: Copy` of the referent.
impl<T: ?Sized> Clone for Lookup<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T: ?Sized> Copy for Lookup<'_, T> {}

/// Where [`facts`] finds the objects a Workload names.
pub trait QueueObjects {
    fn local_queue(&self, namespace: &str, name: &str) -> Lookup<'_>;
    fn cluster_queue(&self, name: &str) -> Lookup<'_>;
    /// A Workload by UID, in any namespace (a preemptor).
    fn workload_by_uid(&self, uid: &str) -> Lookup<'_>;
    /// A preemptor of this UID whose Workload is no longer held, as a
    /// long-running reader remembered it ([`Preemptor`]); a dump has none.
    fn remembered_preemptor(&self, _uid: &str) -> Lookup<'_, Preemptor> {
        Lookup::NotFound
    }
}

/// What a preemption's sentence says of the preemptor, read from its
/// Workload: small, so that a long-running reader can keep it in the
/// preempted job's history and still answer "who preempted me" after the
/// preemptor is gone.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Preemptor {
    /// The preemptor Workload's UID, as the preempted one's condition
    /// names it.
    pub uid: String,
    pub namespace: String,
    /// The Workload's name.
    pub workload: String,
    /// The TrainJob that owns it, if one does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train_job: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    /// The ClusterQueue it was admitted to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster_queue: Option<String>,
}

impl Preemptor {
    /// The record of the preemptor Workload `workload`.
    pub fn of(workload: &Value) -> Preemptor {
        preemptor::preemptor_record(workload)
    }

    /// `preempted by team-b/llm-70b (priority 1000) in ClusterQueue
    /// gpu-cq`, and that its Workload has gone when `gone`.
    pub fn sentence(&self, gone: bool) -> String {
        let mut said = match &self.train_job {
            Some(trainjob) => format!("preempted by {}/{trainjob}", self.namespace),
            None => format!("preempted by Workload {}/{}", self.namespace, self.workload),
        };
        if let Some(priority) = self.priority {
            let _ = write!(said, " (priority {priority})");
        }
        if let Some(cq) = &self.cluster_queue {
            let _ = write!(said, " in ClusterQueue {cq}");
        }
        if gone {
            said.push_str("; its Workload has since gone");
        }
        said
    }

    /// The bytes its strings hold, for a reader that bounds what it keeps.
    pub fn heap_bytes(&self) -> usize {
        self.uid.len()
            + self.namespace.len()
            + self.workload.len()
            + self.train_job.as_ref().map_or(0, String::len)
            + self.cluster_queue.as_ref().map_or(0, String::len)
    }
}

/// What a queued job waits for, as a type a table can colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Wait {
    /// Asks more than the ClusterQueue could ever give.
    NeverFits,
    LocalQueueNotFound,
    LocalQueueNotReadable,
    LocalQueueStopped,
    ClusterQueueNotFound,
    ClusterQueueNotReadable,
    ClusterQueueStopped,
    /// A quantity in the Workload or a queue could not be read.
    Unreadable,
    /// Kueue has not made the Workload yet.
    NoWorkload,
    /// `spec.active` is false.
    Deactivated,
    /// Quota is free only once the workloads preempted for it leave.
    PreemptedWorkloads,
    Topology,
    NoMatchingFlavor,
    Misconfigured,
    /// Too little quota free now; releases would let it in.
    Quota,
    /// Fits only by borrowing from the cohort.
    CouldBorrow,
    /// Fits in the free quota now.
    Fits,
    /// Quota reserved; waiting for admission checks.
    AdmissionChecks,
    Admitted,
    Finished,
}

impl Wait {
    pub fn as_str(self) -> &'static str {
        match self {
            Wait::NeverFits => "neverFits",
            Wait::LocalQueueNotFound => "localQueueNotFound",
            Wait::LocalQueueNotReadable => "localQueueNotReadable",
            Wait::LocalQueueStopped => "localQueueStopped",
            Wait::ClusterQueueNotFound => "clusterQueueNotFound",
            Wait::ClusterQueueNotReadable => "clusterQueueNotReadable",
            Wait::ClusterQueueStopped => "clusterQueueStopped",
            Wait::Unreadable => "unreadable",
            Wait::NoWorkload => "noWorkload",
            Wait::Deactivated => "deactivated",
            Wait::PreemptedWorkloads => "preemptedWorkloads",
            Wait::Topology => "topology",
            Wait::NoMatchingFlavor => "noMatchingFlavor",
            Wait::Misconfigured => "misconfigured",
            Wait::Quota => "quota",
            Wait::CouldBorrow => "couldBorrow",
            Wait::Fits => "fits",
            Wait::AdmissionChecks => "admissionChecks",
            Wait::Admitted => "admitted",
            Wait::Finished => "finished",
        }
    }

    /// A few words a person reads in the dashboard's queue cell.
    pub fn words(self) -> &'static str {
        match self {
            Wait::NeverFits => "never fits",
            Wait::LocalQueueNotFound => "no LocalQueue",
            Wait::LocalQueueNotReadable => "LocalQueue withheld",
            Wait::LocalQueueStopped => "LocalQueue stopped",
            Wait::ClusterQueueNotFound => "no ClusterQueue",
            Wait::ClusterQueueNotReadable => "ClusterQueue withheld",
            Wait::ClusterQueueStopped => "ClusterQueue stopped",
            Wait::Unreadable => "unreadable",
            Wait::NoWorkload => "no Workload yet",
            Wait::Deactivated => "deactivated",
            Wait::PreemptedWorkloads => "waiting for preempted",
            Wait::Topology => "topology",
            Wait::NoMatchingFlavor => "no matching flavor",
            Wait::Misconfigured => "misconfigured",
            Wait::Quota => "waiting for quota",
            Wait::CouldBorrow => "could borrow",
            Wait::Fits => "fits",
            Wait::AdmissionChecks => "admission checks",
            Wait::Admitted => "admitted",
            Wait::Finished => "finished",
        }
    }
}

/// An amount of one resource, in its canonical text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Amount {
    pub resource: String,
    pub quantity: String,
}

/// One flavor and resource of the ClusterQueue, against what the job asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Room {
    pub flavor: String,
    pub resource: String,
    pub ask: String,
    pub nominal: String,
    pub reserved: String,
    /// `nominal − reserved`, never below 0 (reserved past nominal is
    /// borrowed).
    pub free: String,
    /// Absent without a cohort; `"unlimited"` when the cohort sets none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub borrowing_limit: Option<String>,
    /// The ask fits in what is free now.
    pub fits: bool,
}

/// What the dashboard's queue column shows for one TrainJob
/// ([`QueueFacts::cell`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueCell {
    pub text: String,
    /// The hover text.
    pub title: String,
    /// Drawn loudly: the most common mistake with queues.
    pub never_fits: bool,
}

/// The queue facts of one TrainJob.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueFacts {
    /// `namespace/name`.
    pub local_queue: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_queue: Option<String>,
    pub wait: Wait,
    /// Loud on purpose: the most common mistake with queues.
    pub never_fits: bool,
    pub asks: Vec<Amount>,
    pub room: Vec<Room>,
    /// What it waits for, in one sentence.
    pub sentence: String,
    /// Who preempted it, when a `Preempted` or `Evicted` condition says.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub preempted_by: Option<String>,
    /// How often Kueue requeued its Workload after an eviction and when
    /// its backoff ends (the Workload's `status.requeueState`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requeued: Option<String>,
    /// Its place in line, from Kueue's visibility API ([`mod@line`]); only the
    /// server fetches it, so a dump's facts never have one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<line::Position>,
}

/// The LocalQueue `trainjob` waits in: its Workload's `spec.queueName`
/// (section 4's pick, if any), else its `kueue.x-k8s.io/queue-name` label.
pub fn queue_name<'v>(trainjob: &'v Value, workload: Option<&'v Value>) -> Option<&'v str> {
    workload
        .and_then(|w| read::text(w, &["spec", "queueName"]))
        .or_else(|| read::label(trainjob, crate::fields::QUEUE_NAME))
}

/// The queue facts of `trainjob`, read with `workload` (section 4's pick,
/// if any); `None` when neither names a LocalQueue.
pub fn facts(
    trainjob: &Value,
    workload: Option<&Value>,
    objects: &dyn QueueObjects,
) -> Option<QueueFacts> {
    let namespace = read::text(trainjob, &["metadata", "namespace"]).unwrap_or("");
    let queue_name = queue_name(trainjob, workload)?;
    let mut out = QueueFacts {
        local_queue: format!("{namespace}/{queue_name}"),
        cluster_queue: None,
        wait: Wait::NoWorkload,
        never_fits: false,
        asks: Vec::new(),
        room: Vec::new(),
        sentence: String::new(),
        preempted_by: workload.and_then(|w| preemptor::preemptor(w, objects)),
        requeued: workload.and_then(read::requeued),
        position: None,
    };
    if let Some((wait, sentence)) = workload.and_then(read::settled) {
        out.cluster_queue = workload
            .and_then(|w| read::text(w, &["status", "admission", "clusterQueue"]))
            .map(str::to_string);
        return Some(out.with(wait, sentence));
    }
    let local = match objects.local_queue(namespace, queue_name) {
        Lookup::Found(v) => LocalQueue::read(v),
        Lookup::NotFound => {
            let sentence = format!("LocalQueue {} not found", out.local_queue);
            return Some(out.with(Wait::LocalQueueNotFound, sentence));
        }
        Lookup::NotReadable => {
            let sentence = format!("LocalQueue {} not readable", out.local_queue);
            return Some(out.with(Wait::LocalQueueNotReadable, sentence));
        }
    };
    if let Some(policy) = local.stop_policy {
        let sentence = format!(
            "LocalQueue {} is stopped (stopPolicy {policy})",
            out.local_queue
        );
        return Some(out.with(Wait::LocalQueueStopped, sentence));
    }
    let Some(cq_name) = local.cluster_queue else {
        let sentence = format!("LocalQueue {} names no ClusterQueue", out.local_queue);
        return Some(out.with(Wait::Misconfigured, sentence));
    };
    out.cluster_queue = Some(cq_name.to_string());
    let cluster = match objects.cluster_queue(cq_name) {
        Lookup::Found(v) => ClusterQueue::read(cq_name, v),
        Lookup::NotFound => {
            return Some(out.with(
                Wait::ClusterQueueNotFound,
                format!("ClusterQueue {cq_name} not found"),
            ))
        }
        Lookup::NotReadable => {
            let sentence = format!(
                "ClusterQueue {cq_name} not readable: its quota is withheld; LocalQueue {} {}",
                out.local_queue,
                local.counts()
            );
            return Some(out.with(Wait::ClusterQueueNotReadable, sentence));
        }
    };
    let cluster = match cluster {
        Ok(cluster) => cluster,
        Err(e) => return Some(out.with(Wait::Unreadable, e.to_string())),
    };
    if let Some(stopped) = cluster.stopped() {
        return Some(out.with(Wait::ClusterQueueStopped, stopped));
    }
    if let Some(words) = local.inactive {
        let sentence = format!("LocalQueue {} is inactive: {words}", out.local_queue);
        return Some(out.with(Wait::LocalQueueStopped, sentence));
    }
    let Some(workload) = workload else {
        let sentence = format!("no Workload yet in LocalQueue {}", out.local_queue);
        return Some(out.with(Wait::NoWorkload, sentence));
    };
    let pending = match PendingWorkload::read(workload) {
        Ok(pending) => pending,
        Err(e) => return Some(out.with(Wait::Unreadable, e.to_string())),
    };
    out.asks = pending
        .asks
        .iter()
        .map(|(resource, q)| Amount {
            resource: resource.clone(),
            quantity: read::amount(resource, *q),
        })
        .collect();
    let verdict = cluster.verdict(&pending.asks);
    out.room = verdict.rows.iter().map(Row::room).collect();
    let (wait, sentence) = typed_wait(verdict.wait, verdict.sentence, &pending, cq_name);
    Some(out.with(wait, sentence))
}

/// What a Workload that reached its ClusterQueue waits for: the arithmetic's
/// `wait` and `sentence`, unless Kueue's `QuotaReserved=False` reason types
/// the wait otherwise (Kueue 0.19 and later). Never fitting by either is
/// said as such.
fn typed_wait(
    wait: Wait,
    sentence: String,
    pending: &PendingWorkload,
    cq_name: &str,
) -> (Wait, String) {
    match (wait, pending.reason.as_deref()) {
        (Wait::NeverFits, _) => (Wait::NeverFits, sentence),
        (_, Some("ExceedsMaxQuota")) => (
            Wait::NeverFits,
            format!(
                "never fits: {}",
                pending.words_or("exceeds the ClusterQueue's maximum quota")
            ),
        ),
        (_, Some("WaitingForPreemptedWorkloads")) => (
            Wait::PreemptedWorkloads,
            format!("waiting for preempted workloads to leave ClusterQueue {cq_name}"),
        ),
        (_, Some("TopologyPlacementFailed")) => (
            Wait::Topology,
            format!(
                "no topology placement: {}",
                pending.words_or("TopologyPlacementFailed")
            ),
        ),
        (_, Some("NoMatchingFlavor")) => (
            Wait::NoMatchingFlavor,
            format!(
                "no flavor of ClusterQueue {cq_name} matches: {}",
                pending.words_or("NoMatchingFlavor")
            ),
        ),
        (_, Some("Misconfigured")) => (
            Wait::Misconfigured,
            format!("misconfigured: {}", pending.words_or("Misconfigured")),
        ),
        (wait, _) => (wait, sentence),
    }
}

impl QueueFacts {
    fn with(mut self, wait: Wait, sentence: String) -> QueueFacts {
        self.wait = wait;
        self.never_fits = wait == Wait::NeverFits;
        self.sentence = sentence;
        self
    }

    /// The dashboard's queue cell for a job that waits in line or cannot
    /// wait (a missing, unreadable or stopped queue): its place when one is
    /// known, else what it waits for; the hover text is the sentence and the
    /// place's. `None` once it is admitted or finished, which the state
    /// column says.
    pub fn cell(&self) -> Option<QueueCell> {
        if matches!(self.wait, Wait::Admitted | Wait::Finished) {
            return None;
        }
        let place = self.position.as_ref().and_then(|p| {
            let at = p.in_local_queue?;
            Some(match (p.of, p.more) {
                (Some(of), true) => format!("{} of {of}+", line::ordinal(at)),
                (Some(of), false) => format!("{} of {of}", line::ordinal(at)),
                (None, _) => line::ordinal(at),
            })
        });
        let text = match place {
            _ if self.never_fits => Wait::NeverFits.words().to_string(),
            Some(place) => place,
            None => self.wait.words().to_string(),
        };
        let mut title = self.sentence.clone();
        if let Some(requeued) = &self.requeued {
            title.push_str("; ");
            title.push_str(requeued);
        }
        if let Some(position) = &self.position {
            title.push_str("; ");
            title.push_str(&position.sentence);
        }
        Some(QueueCell {
            text,
            title,
            never_fits: self.never_fits,
        })
    }

    /// The facts as the lines of an explanation's queue section.
    pub fn lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        let mut queue = format!("LocalQueue {}", self.local_queue);
        if let Some(cq) = &self.cluster_queue {
            let _ = write!(queue, ", ClusterQueue {cq}");
        }
        lines.push(queue);
        lines.push(format!("wait: {}", self.wait.as_str()));
        lines.push(self.sentence.clone());
        if let Some(position) = &self.position {
            lines.push(position.sentence.clone());
        }
        if let Some(by) = &self.preempted_by {
            lines.push(by.clone());
        }
        if let Some(requeued) = &self.requeued {
            lines.push(requeued.clone());
        }
        if !self.asks.is_empty() {
            let asks: Vec<String> = self
                .asks
                .iter()
                .map(|a| format!("{} {}", a.quantity, a.resource))
                .collect();
            lines.push(format!("asks: {}", asks.join(", ")));
        }
        for room in &self.room {
            let mut line = format!(
                "flavor {} {}: asks {}, {} of {} free ({} reserved)",
                room.flavor, room.resource, room.ask, room.free, room.nominal, room.reserved
            );
            if let Some(limit) = &room.borrowing_limit {
                let _ = write!(line, ", borrowing limit {limit}");
            }
            line.push_str(if room.fits { ", fits" } else { ", short" });
            lines.push(line);
        }
        lines
    }
}

/// Checked sums that saturate instead of failing: quantities read are
/// below 10^27 units, so a sum of a few million of them cannot reach
/// `i128`'s bounds, and saturating keeps the functions total.
fn add(a: Quantity, b: Quantity) -> Quantity {
    a.checked_add(b).unwrap_or(if b.milli() < 0 {
        Quantity::from_milli(i128::MIN)
    } else {
        Quantity::from_milli(i128::MAX)
    })
}

fn sub(a: Quantity, b: Quantity) -> Quantity {
    add(a, Quantity::from_milli(b.milli().saturating_neg()))
}

#[cfg(test)]
mod tests;
