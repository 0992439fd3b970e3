//! Section 8: foreign, the notes F1–F5.

use super::keys::{JOBSET_NAME, JOB_ID, SUBMISSION};
use super::select::Selection;
use crate::model::Meta;
use crate::snapshot::Mode;
use crate::trace::NoteTrace;

impl<'s, 'a> Selection<'s, 'a> {
    /// Section 8, F1–F5.
    pub(super) fn foreign_notes(&self) -> Vec<NoteTrace> {
        let mut notes = Vec::new();
        let t = &self.t.meta;
        let mut note = |rule: &str, text: String| {
            notes.push(NoteTrace {
                rule: rule.to_string(),
                text,
            })
        };
        if let Some(l) = t.label(JOB_ID) {
            if !t.name.starts_with(&format!("{l}-")) {
                note(
                    "F1",
                    format!("TrainJob name does not start with job-id {l}"),
                );
            }
        }
        if let Some(s) = t.label(SUBMISSION) {
            if !t.name.ends_with(&format!("-{s}")) {
                note(
                    "F2",
                    format!("TrainJob name does not end with submission {s}"),
                );
            }
        }
        let controlled_elsewhere = |meta: &Meta<'a>| {
            meta.controller()
                .filter(|o| o.uid.is_some_and(|u| t.uid.is_empty() || u != t.uid))
                .map(|o| (o.kind.unwrap_or(""), o.name.unwrap_or("")))
        };
        if let Some(js) = self.jobset {
            if let Some((kind, owner)) = controlled_elsewhere(&js.meta) {
                note(
                    "F3",
                    format!("JobSet {} is controlled by {kind} {owner}", js.meta.name),
                );
            }
        }
        if self.mode == Mode::Kueue {
            if let Some(w) = self.workload {
                if let Some((kind, owner)) = controlled_elsewhere(&w.meta) {
                    note(
                        "F4",
                        format!("Workload {} is controlled by {kind} {owner}", w.meta.name),
                    );
                }
            }
        }
        let mut contradictions = self.live().filter_map(|p| {
            let m = &p.pod.meta;
            let differs = |key: &'static str, theirs: Option<&str>| {
                let mine = m.label(key)?;
                (theirs.is_some_and(|v| v != mine))
                    .then(|| format!("pod {} has {key}={mine}", m.name))
            };
            differs(JOB_ID, t.label(JOB_ID))
                .or_else(|| differs(SUBMISSION, t.label(SUBMISSION)))
                .or_else(|| differs(JOBSET_NAME, Some(t.name)))
        });
        let mut shown = 0;
        for text in contradictions.by_ref().take(3) {
            note("F5", text);
            shown += 1;
        }
        let more = contradictions.count();
        if shown == 3 && more > 0 {
            note("F5", format!("and {more} more"));
        }
        notes
    }
}
