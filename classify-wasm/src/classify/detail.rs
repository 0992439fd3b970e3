//! Section 10: the observation of a TrainJob, and its detail.

use super::keys::{JOB_ID, SUBMISSION};
use super::output::job_and_submission;
use super::select::Selection;
use super::state::Decision;
use crate::observation::{Cause, ObjectRef, Observation, State};
use crate::trace::NoteTrace;

pub(super) fn join_detail(parts: impl IntoIterator<Item = String>) -> String {
    parts
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("; ")
}

pub(super) fn observe(
    sel: &Selection<'_, '_>,
    d: &Decision,
    foreign: &[NoteTrace],
    situation: &[NoteTrace],
) -> Observation {
    let t = &sel.t.meta;
    let (job, submission) = job_and_submission(t.name, t.label(JOB_ID), t.label(SUBMISSION));
    let hold = sel.hold();
    let mut parts = vec![d.cause.detail.clone()];
    if d.state != State::Held {
        parts.extend(foreign.iter().map(|n| n.text.clone()));
    }
    parts.extend(situation.iter().map(|n| n.text.clone()));
    Observation {
        object: ObjectRef {
            kind: "TrainJob".to_string(),
            namespace: t.namespace.to_string(),
            name: t.name.to_string(),
            uid: t.uid.to_string(),
        },
        job,
        submission,
        state: d.state,
        held: hold.is_some(),
        hold_instance: hold,
        foreign: !foreign.is_empty(),
        cause: Cause {
            detail: join_detail(parts),
            ..d.cause.clone()
        },
        execution: sel.execution,
    }
}
