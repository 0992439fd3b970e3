//! Section 5: the execution, the highest R = A + J among the pods read, and
//! which pods belong to it; with the trace of how each pod counted.

use super::keys::{counter, ADMISSION, RESTART_ATTEMPT};
use super::select::{ReadPod, Selection};
use crate::observation::Execution;
use crate::trace::{ExecutionPod, ExecutionTrace};

/// The highest R, preferring the higher A on a tie; `None` when no pod counts.
pub(super) fn current_execution(pods: &[ReadPod<'_, '_>]) -> Option<Execution> {
    pods.iter()
        .filter_map(ReadPod::counters)
        .max_by_key(|&(a, j)| (a + j, a))
        .map(|(a, j)| Execution {
            admission: a,
            restart_attempt: j,
        })
}

impl<'s, 'a> Selection<'s, 'a> {
    /// Whether a pod is in the current execution; every pod is when no pod
    /// counts.
    pub(super) fn in_current(&self, p: &ReadPod<'_, '_>) -> bool {
        match self.execution {
            None => true,
            Some(e) => p.counters() == Some((e.admission, e.restart_attempt)),
        }
    }

    pub(super) fn current(&self) -> impl Iterator<Item = &ReadPod<'s, 'a>> {
        self.pods.iter().filter(|p| self.in_current(p))
    }

    /// The trace's execution: the current one, and why each pod counts or not.
    pub(super) fn execution_trace(&self) -> ExecutionTrace {
        ExecutionTrace {
            current: self.execution,
            pods: self
                .pods
                .iter()
                .map(|p| {
                    let a = p.pod.meta.annotation(ADMISSION);
                    let j = p.pod.meta.label(RESTART_ATTEMPT);
                    let counters = p.counters();
                    let in_current = self.in_current(p);
                    let why = match (counters, self.execution) {
                        (Some((a, j)), _) if in_current => {
                            format!("counted: A={a} J={j} R={}, the current execution", a + j)
                        }
                        (Some((a, j)), _) => {
                            format!("counted: A={a} J={j} R={}, an older execution", a + j)
                        }
                        (None, None) => {
                            "not counted (no pod counts, so every pod is read as current)"
                                .to_string()
                        }
                        (None, Some(_)) => {
                            match (a.and_then(|v| counter(v, 0)), j.and_then(|v| counter(v, 0))) {
                                (None, _) => format!(
                                    "not counted: admission annotation {} is not a counter",
                                    a.map_or("absent".to_string(), |v| format!("{v:?}"))
                                ),
                                _ => format!(
                                    "not counted: restart-attempt label {} is not a counter",
                                    j.map_or("absent".to_string(), |v| format!("{v:?}"))
                                ),
                            }
                        }
                    };
                    ExecutionPod {
                        pod: p.pod.meta.name.to_string(),
                        captured: p.captured,
                        admission: a.map(str::to_string),
                        restart_attempt: j.map(str::to_string),
                        r: counters.map(|(a, j)| a + j),
                        counted: counters.is_some(),
                        in_current,
                        why,
                    }
                })
                .collect(),
        }
    }
}
