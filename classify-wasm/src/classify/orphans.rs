//! Section 11: orphans, what is left of a TrainJob that is gone.

use super::keys::{JOBSET_NAME, JOB_ID, SUBMISSION};
use super::output::job_and_submission;
use super::select::Index;
use crate::model::Meta;
use crate::observation::{Cause, CauseKind, ObjectRef, Observation, State};
use crate::snapshot::Snapshot;
use crate::trace::{ExecutionTrace, RuleTrace, Trace, Verdict};

/// One of section 11's orphan rules, one per kind of object left behind.
pub(super) struct OrphanRule {
    /// The object's kind, as the observation names it.
    pub(super) kind: &'static str,
    /// The trace's rule id: `orphan/<kind>`.
    pub(super) id: &'static str,
    pub(super) name: &'static str,
}

pub(super) static ORPHAN_JOBSET: OrphanRule = OrphanRule {
    kind: "JobSet",
    id: "orphan/JobSet",
    name: "JobSet with no live TrainJob",
};
pub(super) static ORPHAN_RUNTIME: OrphanRule = OrphanRule {
    kind: "TrainingRuntime",
    id: "orphan/TrainingRuntime",
    name: "TrainingRuntime with no live TrainJob",
};
pub(super) static ORPHAN_POD: OrphanRule = OrphanRule {
    kind: "Pod",
    id: "orphan/Pod",
    name: "Pod with no live TrainJob",
};

/// An orphan (section 11): what is left of a TrainJob that is gone.
pub(super) struct Orphan<'s, 'a> {
    pub(super) rule: &'static OrphanRule,
    pub(super) meta: &'s Meta<'a>,
    /// The name job and submission come from.
    pub(super) name: &'a str,
    pub(super) why: String,
}

pub(super) fn orphan_observation(o: &Orphan<'_, '_>) -> Observation {
    let (job, submission) =
        job_and_submission(o.name, o.meta.label(JOB_ID), o.meta.label(SUBMISSION));
    let mut detail = format!("{} {} has no live TrainJob", o.rule.kind, o.meta.name);
    if let Some(uid) = o.meta.trainjob_owners().next().and_then(|r| r.uid) {
        detail.push_str(&format!(" of UID {uid}"));
    }
    Observation {
        object: ObjectRef {
            kind: o.rule.kind.to_string(),
            namespace: o.meta.namespace.to_string(),
            name: o.meta.name.to_string(),
            uid: o.meta.uid.to_string(),
        },
        job,
        submission,
        state: State::Ended,
        held: false,
        hold_instance: None,
        foreign: true,
        cause: Cause {
            kind: CauseKind::Unknown,
            provenance: None,
            detail,
        },
        execution: None,
    }
}

pub(super) fn orphan_trace(o: &Orphan<'_, '_>) -> Trace {
    Trace {
        decided_by: format!("Section 11, orphan {}: {}", o.rule.kind, o.why),
        rules: vec![RuleTrace {
            id: o.rule.id.to_string(),
            name: o.rule.name.to_string(),
            verdict: Verdict::Matched,
            facts: vec![o.why.clone()],
        }],
        cause: None,
        execution: ExecutionTrace {
            current: None,
            pods: Vec::new(),
        },
        attempts: Vec::new(),
        findings: Vec::new(),
        foreign: Vec::new(),
        situation: Vec::new(),
    }
}

pub(super) fn orphans<'s, 'a>(
    snap: &'s Snapshot<'a>,
    ix: &Index<'s, 'a>,
    read_pods: &[bool],
) -> Vec<Orphan<'s, 'a>> {
    let mut out = Vec::new();
    let gone = |meta: &Meta<'a>| {
        let mut owners = meta.trainjob_owners().peekable();
        owners.peek().is_some()
            && owners.all(|o| o.uid.is_none_or(|u| !ix.trainjob_uids.contains(u)))
    };
    let uids = |meta: &Meta<'a>| {
        meta.trainjob_owners()
            .map(|o| o.uid.unwrap_or("\"\""))
            .collect::<Vec<_>>()
            .join(", ")
    };
    for js in &snap.jobsets {
        if gone(&js.meta) {
            out.push(Orphan {
                rule: &ORPHAN_JOBSET,
                meta: &js.meta,
                name: js.meta.name,
                why: format!(
                    "owned by TrainJob UID {}, none of which is in the snapshot",
                    uids(&js.meta)
                ),
            });
        }
    }
    for rt in &snap.runtimes {
        if rt.meta.label(JOB_ID).is_some() && gone(&rt.meta) {
            out.push(Orphan {
                rule: &ORPHAN_RUNTIME,
                meta: &rt.meta,
                name: rt.meta.name,
                why: format!(
                    "a runtime copy owned by TrainJob UID {}, none of which is in the snapshot",
                    uids(&rt.meta)
                ),
            });
        }
    }
    for (p, read) in snap.pods.iter().zip(read_pods) {
        if !read && p.meta.label(JOB_ID).is_some() {
            out.push(Orphan {
                rule: &ORPHAN_POD,
                meta: &p.meta,
                name: p.meta.label(JOBSET_NAME).unwrap_or(p.meta.name),
                why: format!(
                    "carries job-id {} but no TrainJob in the snapshot reads it (section 4)",
                    p.meta.label(JOB_ID).unwrap_or("")
                ),
            });
        }
    }
    out
}
