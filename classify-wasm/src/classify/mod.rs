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

pub use keys::counter;
pub use output::job_and_submission;

use detail::observe;
use orphans::{orphan_observation, orphan_trace, orphans, Orphan};
use select::{Index, Selection};
use state::Decision;

use crate::model::TrainJob;
use crate::observation::Observation;
use crate::snapshot::Snapshot;
use crate::trace::{AttemptTrace, Explanation, NoteTrace, Trace};

/// How many threads classify a snapshot's TrainJobs: two for the CLI's big
/// dumps (never in wasm, which has no threads), one everywhere else.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Threads {
    One,
    #[cfg(not(target_arch = "wasm32"))]
    Two,
}

/// Classifies a snapshot: one observation per TrainJob and per orphan, sorted.
pub fn classify(snap: &Snapshot<'_>, threads: Threads) -> Vec<Observation> {
    run::<Bare>(snap, threads)
        .into_iter()
        .map(|(o, ())| o)
        .collect()
}

/// Classifies a snapshot and explains every observation.
pub fn explain(snap: &Snapshot<'_>, threads: Threads) -> Vec<Explanation> {
    run::<Traced>(snap, threads)
        .into_iter()
        .map(|(observation, trace)| Explanation { observation, trace })
        .collect()
}

/// Classifies a snapshot and lists each observation's attempts (the trace's
/// `attempts` alone), for a table that shows them without building traces.
pub fn classify_with_attempts(
    snap: &Snapshot<'_>,
    threads: Threads,
) -> Vec<(Observation, Vec<AttemptTrace>)> {
    run::<Attempts>(snap, threads)
}

/// What [`run`] adds to each observation, from the same selection and
/// decision the observation came from.
trait Detail {
    /// Sent from the second thread of [`Threads::Two`].
    type Out: Send;
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

fn run<D: Detail>(snap: &Snapshot<'_>, threads: Threads) -> Vec<(Observation, D::Out)> {
    let ix = Index::new(snap);
    let mut read_pods = vec![false; snap.pods.len()];
    let mut out = match threads {
        Threads::One => trainjobs::<D>(snap, &ix, &snap.trainjobs, &mut read_pods),
        #[cfg(not(target_arch = "wasm32"))]
        Threads::Two => trainjobs_on_two_threads::<D>(snap, &ix, &mut read_pods),
    };
    for o in orphans(snap, &ix, &read_pods) {
        out.push((orphan_observation(&o), D::orphan(&o)));
    }
    out.sort_by(|a, b| a.0.cmp_order(&b.0));
    out
}

/// Classifies `trainjobs` (some of the snapshot's), in order, marking in
/// `read_pods` every pod read for one of them.
fn trainjobs<'s, 'a, D: Detail>(
    snap: &'s Snapshot<'a>,
    ix: &Index<'s, 'a>,
    trainjobs: &'s [TrainJob<'a>],
    read_pods: &mut [bool],
) -> Vec<(Observation, D::Out)> {
    let mut out = Vec::with_capacity(trainjobs.len());
    for t in trainjobs {
        let live = ix.live_pods(t);
        for &i in &live {
            if let Some(read) = read_pods.get_mut(i) {
                *read = true;
            }
        }
        let sel = Selection::new(snap, ix, t, &live);
        let decision = sel.decide();
        let foreign = sel.foreign_notes();
        let situation = sel.situation_notes(decision.state);
        let obs = observe(&sel, &decision, &foreign, &situation);
        out.push((obs, D::trainjob(&sel, &decision, foreign, situation)));
    }
    out
}

/// Below this many TrainJobs one thread classifies them all.
#[cfg(not(target_arch = "wasm32"))]
const TWO_THREADS_MIN_TRAINJOBS: usize = 200;

/// [`trainjobs`] over all of the snapshot's, the second half classified by
/// another thread. A TrainJob's classification reads the snapshot and the
/// index alone, so the observations are the same, in the same order, and a
/// pod is read when either half read it.
#[cfg(not(target_arch = "wasm32"))]
fn trainjobs_on_two_threads<'s, 'a, D: Detail>(
    snap: &'s Snapshot<'a>,
    ix: &Index<'s, 'a>,
    read_pods: &mut [bool],
) -> Vec<(Observation, D::Out)> {
    let all = &snap.trainjobs;
    if all.len() < TWO_THREADS_MIN_TRAINJOBS {
        return trainjobs::<D>(snap, ix, all, read_pods);
    }
    let (front, back) = all.split_at(all.len() / 2);
    std::thread::scope(|scope| {
        let spawned = std::thread::Builder::new().spawn_scoped(scope, || {
            let mut back_read = vec![false; snap.pods.len()];
            let out = trainjobs::<D>(snap, ix, back, &mut back_read);
            (out, back_read)
        });
        let Ok(back_classified) = spawned else {
            return trainjobs::<D>(snap, ix, all, read_pods);
        };
        let mut out = trainjobs::<D>(snap, ix, front, read_pods);
        match back_classified.join() {
            Ok((back_out, back_read)) => {
                out.extend(back_out);
                for (read, back) in read_pods.iter_mut().zip(back_read) {
                    *read |= back;
                }
            }
            // Not expected (classifying never panics); then this thread
            // classifies them.
            Err(_) => out.extend(trainjobs::<D>(snap, ix, back, read_pods)),
        }
        out
    })
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
        rules: rules::state_trace(sel, d),
        cause: Some(d.deciding_cause_rule().trace(sel, d)),
        execution: sel.execution_trace(),
        attempts: sel.attempts(),
        findings: sel.findings_trace(d.cause_rule.finding_wins),
        foreign,
        situation,
    }
}
