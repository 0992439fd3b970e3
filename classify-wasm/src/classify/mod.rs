//! Sections 3–11: from a typed snapshot to observations and their traces,
//! one module per section of the spec.
//!
//! Each rule is one function over a [`select::Selection`] (what section 4
//! read for one TrainJob). The observation and the trace call the same
//! functions, so the explanation can never disagree with the verdict.

mod detail;
mod execution;
mod findings;
mod foreign;
mod keys;
mod orphans;
mod output;
mod rules;
mod select;
mod situation;
mod state;

pub use keys::{
    counter, ADMISSION, ADMISSION_GATED_BY, HOLD_INSTANCE, JOBSET_NAME, JOB_ID, JOB_UID, OPEN_GATE,
    QUEUE_NAME, RESTART_ATTEMPT, SUBMISSION,
};
pub use output::job_and_submission;

use detail::observe;
use orphans::{orphan_observation, orphan_trace, orphans, Orphan};
use select::{Index, Selection};
use state::Decision;

use crate::observation::Observation;
use crate::snapshot::Snapshot;
use crate::trace::{AttemptTrace, Explanation, NoteTrace, Trace};

/// Classifies a snapshot: one observation per TrainJob and per orphan, sorted.
pub fn classify(snap: &Snapshot<'_>) -> Vec<Observation> {
    run::<Bare>(snap).into_iter().map(|(o, ())| o).collect()
}

/// Classifies a snapshot and explains every observation.
pub fn explain(snap: &Snapshot<'_>) -> Vec<Explanation> {
    run::<Traced>(snap)
        .into_iter()
        .map(|(observation, trace)| Explanation { observation, trace })
        .collect()
}

/// Classifies a snapshot and lists each observation's attempts (the trace's
/// `attempts` alone), for a table that shows them without building traces.
pub fn classify_with_attempts(snap: &Snapshot<'_>) -> Vec<(Observation, Vec<AttemptTrace>)> {
    run::<Attempts>(snap)
}

/// What [`run`] adds to each observation, from the same selection and
/// decision the observation came from.
trait Detail {
    type Out;
    fn trainjob(
        sel: &Selection<'_, '_>,
        decision: &Decision,
        foreign: Vec<NoteTrace>,
        situation: Vec<NoteTrace>,
    ) -> Self::Out;
    fn orphan(o: &Orphan<'_, '_>) -> Self::Out;
}

/// The observation alone.
struct Bare;
impl Detail for Bare {
    type Out = ();
    fn trainjob(_: &Selection<'_, '_>, _: &Decision, _: Vec<NoteTrace>, _: Vec<NoteTrace>) {}
    fn orphan(_: &Orphan<'_, '_>) {}
}

/// The whole trace.
struct Traced;
impl Detail for Traced {
    type Out = Trace;
    fn trainjob(
        sel: &Selection<'_, '_>,
        decision: &Decision,
        foreign: Vec<NoteTrace>,
        situation: Vec<NoteTrace>,
    ) -> Trace {
        trace(sel, decision, foreign, situation)
    }
    fn orphan(o: &Orphan<'_, '_>) -> Trace {
        orphan_trace(o)
    }
}

/// The trace's attempts alone (an orphan has none).
struct Attempts;
impl Detail for Attempts {
    type Out = Vec<AttemptTrace>;
    fn trainjob(
        sel: &Selection<'_, '_>,
        _: &Decision,
        _: Vec<NoteTrace>,
        _: Vec<NoteTrace>,
    ) -> Vec<AttemptTrace> {
        sel.attempts()
    }
    fn orphan(_: &Orphan<'_, '_>) -> Vec<AttemptTrace> {
        Vec::new()
    }
}

fn run<D: Detail>(snap: &Snapshot<'_>) -> Vec<(Observation, D::Out)> {
    let ix = Index::new(snap);
    let mut read_pods = vec![false; snap.pods.len()];
    let mut out = Vec::with_capacity(snap.trainjobs.len());
    for t in &snap.trainjobs {
        let live = ix.live_pods(t);
        for &i in &live {
            if let Some(read) = read_pods.get_mut(i) {
                *read = true;
            }
        }
        let sel = Selection::new(snap, &ix, t, &live);
        let decision = sel.decide();
        let foreign = sel.foreign_notes();
        let situation = sel.situation_notes(decision.state);
        let obs = observe(&sel, &decision, &foreign, &situation);
        out.push((obs, D::trainjob(&sel, &decision, foreign, situation)));
    }
    for o in orphans(snap, &ix, &read_pods) {
        out.push((orphan_observation(&o), D::orphan(&o)));
    }
    out.sort_by(|a, b| a.0.cmp_order(&b.0));
    out
}

/// The whole explanation of a TrainJob: every value comes from the selection
/// and the decision the observation came from, and every rule's id and name
/// from the rule value itself.
fn trace(
    sel: &Selection<'_, '_>,
    d: &Decision,
    foreign: Vec<NoteTrace>,
    situation: Vec<NoteTrace>,
) -> Trace {
    Trace {
        decided_by: d.sentence(),
        rules: rules::STATE_RULES
            .iter()
            .map(|rule| rule.trace(sel, d))
            .collect(),
        cause: Some(d.deciding_cause_rule().trace(sel, d)),
        execution: sel.execution_trace(),
        attempts: sel.attempts(),
        findings: sel.findings_trace(d.cause_rule.finding_wins),
        foreign,
        situation,
    }
}
