//! What the hub records when it classifies jobs again: each job's
//! observations (its cache), their history, the metrics and the
//! notifications they make, and the database operations that mirror all of
//! it. The classification itself is the engine's, through the store's
//! [`JobSnapshots`].

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Instant;

use classify_wasm::Observation;

use super::{lock, write, Hub};
use crate::serve::history::{self, HistoryDelta, HistoryKey};
use crate::serve::notify;
use crate::serve::persist::{self, Op};
use crate::serve::queues;
use crate::serve::store::{Delta, JobKey};
use crate::serve::view::JobSnapshots;

/// The database operations that mirror a batch's store changes: Pods and
/// TrainJobs as last seen, captured pods, and pod owners.
pub(super) fn store_ops(deltas: &[Delta], owners: Vec<(String, Option<String>)>) -> Vec<Op> {
    let mut ops: Vec<Op> = deltas
        .iter()
        .filter_map(|delta| match delta {
            Delta::Upsert(o) if persist::kept(o.kind) => Some(Op::PutObject(o.clone())),
            Delta::Delete(o) if persist::kept(o.kind) => Some(Op::DeleteObject {
                kind: o.kind,
                namespace: o.namespace.clone(),
                name: o.name.clone(),
            }),
            Delta::Captured(c) => Some(Op::PutCaptured(c.clone())),
            Delta::CapturedDropped {
                trainjob_uid,
                pod_uid,
                ..
            } => Some(Op::DeleteCaptured {
                trainjob_uid: trainjob_uid.clone(),
                pod_uid: pod_uid.clone(),
            }),
            _ => None,
        })
        .collect();
    ops.extend(owners.into_iter().map(|(pod_uid, owner)| match owner {
        Some(trainjob_uid) => Op::PutOwner {
            pod_uid,
            trainjob_uid,
        },
        None => Op::DeleteOwner { pod_uid },
    }));
    ops
}

/// The database operations that mirror a history delta: the histories
/// written and those dropped.
pub(super) fn history_ops(delta: HistoryDelta, ops: &mut Vec<Op>) {
    ops.extend(
        delta
            .written
            .into_iter()
            .map(|(key, history)| Op::PutHistory(key, history)),
    );
    ops.extend(delta.dropped.into_iter().map(Op::DeleteHistory));
}

impl Hub {
    /// Classifies `jobs` again; `counting_transitions` says whether what
    /// changed is news for the transition counter.
    pub(super) fn reclassify(&self, jobs: &BTreeSet<JobKey>, counting_transitions: bool) {
        let header = self.header();
        let now = self.clock.now();
        let mut ops = Vec::new();
        let mut news = Vec::new();
        for (namespace, job) in jobs {
            let (snapshots, preemptor) = self.with_store(|s| {
                let snapshots = JobSnapshots::of(s, header, namespace, job);
                (snapshots, queues::stored_preemptor(s, namespace, job))
            });
            let observations = match snapshots.observations() {
                Ok(observations) => observations,
                Err(e) => {
                    // The projections are type-checked, so this is a bug;
                    // keep the last good observations rather than none.
                    tracing::error!(%namespace, %job, error = %e, "classification failed");
                    continue;
                }
            };
            let key = (namespace.clone(), job.clone());
            let mut cache = write(&self.observations);
            let old = if observations.is_empty() {
                cache.remove(&key)
            } else {
                cache.insert(key, Arc::new(observations.clone()))
            };
            drop(cache);
            let old: &[Observation] = old.as_deref().map_or(&[], |v| v);
            let before: Vec<HistoryKey> = old.iter().map(HistoryKey::of).collect();
            let mut history = lock(&self.history);
            let mut delta = history.record_job(&before, &observations, now);
            let trainjob = observations.iter().find(|o| o.object.kind == "TrainJob");
            if let (Some(preemptor), Some(trainjob)) = (preemptor, trainjob) {
                history.remember_preemptor(&HistoryKey::of(trainjob), preemptor, &mut delta);
            }
            self.metrics.replace_observations(old, &observations, |o| {
                history.in_state_since(&HistoryKey::of(o))
            });
            if counting_transitions {
                self.metrics.count_transitions(&delta.entered);
            }
            if self.notifier.is_some() {
                let event = |o: &Observation, at_unix: i64| notify::Event {
                    observation: o.clone(),
                    at_unix,
                    since_unix: history
                        .in_state_since(&HistoryKey::of(o))
                        .unwrap_or(at_unix),
                };
                if counting_transitions {
                    // Every TrainJob transition: one that is not news ends
                    // the settling of one that was.
                    news.extend(delta.entered.iter().filter_map(|e| {
                        let o = observations
                            .iter()
                            .find(|o| e.is_transition() && HistoryKey::of(o) == e.key)?;
                        Some(event(o, e.change.at_unix))
                    }));
                }
                if old.is_empty() {
                    // First seen in this run: a job already pending is
                    // timed for --notify-pending-after from when it began.
                    let at = history::unix_seconds(now);
                    news.extend(
                        observations
                            .iter()
                            .filter(|o| o.state == classify_wasm::State::Pending)
                            .map(|o| event(o, at)),
                    );
                }
            }
            if tracing::enabled!(tracing::Level::DEBUG) {
                for (key, changed) in &delta.written {
                    tracing::debug!(
                        namespace = %key.namespace,
                        kind = %key.kind,
                        name = %key.name,
                        history = %history::timeline(&changed.changes),
                        "observation changed"
                    );
                }
            }
            self.metrics
                .history_bytes
                .store(history.bytes() as u64, std::sync::atomic::Ordering::Relaxed);
            drop(history);
            if self.state.is_some() {
                history_ops(delta, &mut ops);
            }
        }
        // Retention is checked at every batch; the first gone object is
        // the only one looked at while none has expired.
        let expired = lock(&self.history).enforce(now);
        if self.state.is_some() {
            history_ops(expired, &mut ops);
            self.write_state(&ops);
        }
        // Only now, with the history that says it happened written: a
        // restart on the state directory never sees it as news again.
        if let Some(notifier) = &self.notifier {
            let now = Instant::now();
            for event in news {
                notifier.offer(event, now);
            }
        }
    }
}
