//! Section 9: situation, the notes S1–S11.

use super::keys::{counter, gates, ADMISSION_GATED_BY, OPEN_GATE};
use super::select::Selection;
use crate::model::{with_words, words, AdmissionCheck, Pod};
use crate::observation::State;
use crate::snapshot::Mode;
use crate::trace::NoteTrace;

impl<'s, 'a> Selection<'s, 'a> {
    /// Section 9, S1–S11 (none for an ended object).
    pub(super) fn situation_notes(&self, state: State) -> Vec<NoteTrace> {
        let mut notes = Vec::new();
        if state == State::Ended {
            return notes;
        }
        let mut note = |rule: &str, text: String| {
            notes.push(NoteTrace {
                rule: rule.to_string(),
                text,
            })
        };
        let kueue = self.mode == Mode::Kueue;
        if kueue && self.workload.is_none() {
            note("S1", "no Workload".to_string());
        }
        if let Some((kind, Some(value))) = self.hold_annotation() {
            if counter(value, 1).is_none() {
                note(
                    "S2",
                    format!("{kind} hold-instance \"{value}\" is not a hold instance"),
                );
            }
        }
        if kueue && !self.gated() {
            if let Some(w) = self.workload {
                if gates(w.meta.annotation(ADMISSION_GATED_BY)).contains(&OPEN_GATE) {
                    note("S3", "Workload still carries dispatch's gate".to_string());
                }
            }
        }
        let others: Vec<&str> = gates(self.t.meta.annotation(ADMISSION_GATED_BY))
            .into_iter()
            .filter(|g| *g != OPEN_GATE)
            .collect();
        if !others.is_empty() {
            note("S4", format!("admission gated by {}", others.join(", ")));
        }
        if state == State::Suspended {
            note("S5", self.suspended_text());
        }
        if let Some(w) = self.workload.filter(|_| kueue) {
            if !w.conditions.is_true("Admitted") {
                match w.conditions.get("QuotaReserved") {
                    Some(q) if !q.is_true() => note(
                        "S6",
                        with_words(
                            &format!("Workload QuotaReserved={}", q.status.unwrap_or("")),
                            &q.words(),
                        ),
                    ),
                    Some(_) => {
                        for check in w
                            .admission_checks
                            .iter()
                            .filter(|c| c.state != Some("Ready"))
                        {
                            note("S6", admission_check_text(check));
                        }
                    }
                    None => {}
                }
            }
            if let Some(r) = w
                .conditions
                .get("Requeued")
                .filter(|c| c.status == Some("False"))
            {
                note("S7", with_words("Workload Requeued=False", &r.words()));
            }
        }
        let active = matches!(state, State::Pending | State::Running);
        if active && self.admitted() {
            if self.jobset.is_none() {
                note("S8", "no JobSet".to_string());
            } else if self.live().next().is_none() {
                note("S8", "no pods".to_string());
            }
        }
        if let Some(n) = self.jobset.and_then(|js| js.restarts).filter(|n| *n > 0) {
            note("S9", format!("JobSet restarts: {n}"));
        }
        if active {
            let mut stalls = self
                .current()
                .filter(|p| !p.captured)
                .filter_map(|p| pod_stall(p.pod));
            let mut shown = 0;
            for text in stalls.by_ref().take(3) {
                note("S10", text);
                shown += 1;
            }
            let more = stalls.count();
            if shown == 3 && more > 0 {
                note("S10", format!("and {more} more"));
            }
        }
        if self.execution.is_some() {
            let outside = self.live().filter(|p| !self.in_current(p)).count();
            if outside > 0 {
                note(
                    "S11",
                    format!("live pods outside the current execution: {outside}"),
                );
            }
        }
        notes
    }

    /// S5: what keeps a suspended object suspended, in its mode's words.
    fn suspended_text(&self) -> String {
        match self.mode {
            Mode::Plain if self.t.suspend == Some(true) => {
                "TrainJob spec.suspend is true".to_string()
            }
            Mode::Plain => with_words(
                "TrainJob Suspended",
                &self
                    .conds()
                    .get("Suspended")
                    .map(|c| c.words())
                    .unwrap_or_default(),
            ),
            Mode::Kueue => "Workload spec.active is false".to_string(),
        }
    }
}

/// S6 for an admission check that is not Ready: its name, state and
/// message.
fn admission_check_text(check: &AdmissionCheck<'_>) -> String {
    let mut text = format!("admission check {}", check.name.unwrap_or(""));
    if let Some(s) = check.state {
        text.push(' ');
        text.push_str(s);
    }
    if let Some(m) = check.message {
        text.push_str(": ");
        text.push_str(m);
    }
    text
}

/// S10 for one pod: the first reason it is stalled, if any.
pub(super) fn pod_stall(pod: &Pod<'_>) -> Option<String> {
    let name = pod.meta.name;
    if let Some(c) = pod
        .conditions
        .get("PodScheduled")
        .filter(|c| c.status == Some("False"))
    {
        return Some(with_words(
            &format!("pod {name} PodScheduled=False"),
            &c.words(),
        ));
    }
    if !pod.scheduling_gates.is_empty() {
        return Some(format!(
            "pod {name} scheduling gated by {}",
            pod.scheduling_gates.join(", ")
        ));
    }
    if let Some(w) = pod.node_container.as_ref().and_then(|c| c.waiting.as_ref()) {
        if w.reason
            .is_some_and(|r| r != "ContainerCreating" && r != "PodInitializing")
        {
            return Some(with_words(
                &format!("pod {name} node container waiting"),
                &words(w.reason, w.message),
            ));
        }
    }
    if pod.meta.deletion_timestamp.is_some() {
        return Some(format!("pod {name} terminating"));
    }
    None
}
