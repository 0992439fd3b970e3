//! Who preempted a Workload: the UID its `Preempted` (or `Evicted` for
//! `Preempted`) condition names, and the sentence that says who that was,
//! read now, remembered, or withheld when the user may not see its
//! namespace.

use serde_json::Value;

use super::read::{at, condition, integer, is_true, list, text};
use super::{Lookup, QueueObjects};

/// The UID a `Preempted` or `Evicted` condition names:
/// `Preempted to accommodate a workload (UID: …, JobUID: …) due to …`.
pub(super) fn preemptor_uid(message: &str) -> Option<&str> {
    let (_, rest) = message.split_once("(UID: ")?;
    let end = rest.find([',', ')']).unwrap_or(rest.len());
    Some(rest.get(..end)?.trim()).filter(|uid| !uid.is_empty())
}

/// The UID of the Workload that preempted `w`, when a true `Preempted`
/// condition (or `Evicted` for `Preempted`) names one: what a store looks
/// up to hand [`super::facts`] the preemptor.
pub fn preemptor_uid_of(w: &Value) -> Option<&str> {
    let preempted = condition(w, "Preempted").filter(|c| is_true(Some(c)));
    let evicted = condition(w, "Evicted")
        .filter(|c| is_true(Some(c)) && text(c, &["reason"]) == Some("Preempted"));
    preemptor_uid(preempted.or(evicted).and_then(|c| text(c, &["message"]))?)
}

/// What [`super::Preemptor`] keeps of the preemptor Workload `p`.
pub(super) fn preemptor_record(p: &Value) -> super::Preemptor {
    let owned = |s: Option<&str>| s.unwrap_or("").to_string();
    super::Preemptor {
        uid: owned(text(p, &["metadata", "uid"])),
        namespace: owned(text(p, &["metadata", "namespace"])),
        workload: owned(text(p, &["metadata", "name"])),
        train_job: list(p, &["metadata", "ownerReferences"])
            .iter()
            .find(|o| text(o, &["kind"]) == Some("TrainJob"))
            .and_then(|o| text(o, &["name"]))
            .map(str::to_string),
        priority: at(p, &["spec", "priority"]).and_then(integer),
        cluster_queue: text(p, &["status", "admission", "clusterQueue"]).map(str::to_string),
    }
}

/// Who preempted `w`, when its conditions say: the preemptor's TrainJob
/// (or Workload), priority and ClusterQueue when it may be read, or as it
/// was remembered once its Workload went; in a namespace the user may not
/// see, no name at all.
pub(super) fn preemptor(w: &Value, objects: &dyn QueueObjects) -> Option<String> {
    let uid = preemptor_uid_of(w)?;
    Some(match objects.workload_by_uid(uid) {
        Lookup::Found(p) => preemptor_record(p).sentence(false),
        Lookup::NotReadable => HIDDEN_PREEMPTOR.to_string(),
        Lookup::NotFound => match objects.remembered_preemptor(uid) {
            Lookup::Found(p) => p.sentence(true),
            Lookup::NotReadable => HIDDEN_PREEMPTOR.to_string(),
            Lookup::NotFound => format!("preempted by a workload that is gone (UID {uid})"),
        },
    })
}

/// A preemptor in a namespace the user may not see: no name at all.
const HIDDEN_PREEMPTOR: &str = "preempted by a workload in another namespace";
