//! The deleted pods' captured evidence: kept against the TrainJob each pod
//! was read for, oldest first, within the per-TrainJob and total bounds.

use super::*;

/// A deleted pod's last state, kept against the TrainJob it was read for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapturedPod {
    /// The UID of the TrainJob the pod is evidence for.
    pub trainjob_uid: String,
    /// The TrainJob's namespace.
    pub namespace: String,
    /// The pod's last known state.
    pub pod: Arc<StoredObject>,
    /// The pod vanished while the watch was down: this is its last state the
    /// server saw, not the state it was deleted in.
    pub across_gap: bool,
}

impl CapturedPod {
    /// Bytes this entry holds, approximately: the pod (counted whole for
    /// each TrainJob it is kept for, though it is shared), the strings and
    /// the bookkeeping of the store's queues and order map.
    pub fn heap_bytes(&self) -> usize {
        self.pod.heap_bytes()
            + self.trainjob_uid.capacity()
            + self.namespace.capacity()
            + std::mem::size_of::<Self>()
            + 96
    }
}

/// One TrainJob's captured pods, oldest first, and what they weigh.
#[derive(Debug, Default)]
pub(super) struct CapturedQueue {
    /// `(capture sequence number, entry, its bytes)`.
    pub(super) entries: VecDeque<(u64, Arc<CapturedPod>, usize)>,
    pub(super) bytes: usize,
}

impl Store {
    /// Keeps a deleted pod's last state against the TrainJob it was read for.
    pub(super) fn capture(
        &mut self,
        pod: Arc<StoredObject>,
        across_gap: bool,
        deltas: &mut Vec<Delta>,
    ) {
        if pod.linking.job_id.is_none() {
            return;
        }
        let trainjobs: Vec<(String, String)> = match self.pod_owner.get(&pod.uid) {
            Some(owner) => self
                .trainjobs_by_uid
                .get(owner)
                .map(|(ns, _)| vec![(owner.clone(), ns.clone())])
                .unwrap_or_default(),
            None => self
                .trainjobs_selecting(&pod)
                .into_iter()
                .filter(|tj| !tj.uid.is_empty())
                .map(|tj| (tj.uid.clone(), tj.namespace.clone()))
                .collect(),
        };
        for (trainjob_uid, namespace) in trainjobs {
            let captured = Arc::new(CapturedPod {
                trainjob_uid: trainjob_uid.clone(),
                namespace,
                pod: pod.clone(),
                across_gap,
            });
            self.keep_captured(captured, true, deltas);
            self.mark_trainjob(&trainjob_uid);
        }
        self.enforce_total_capture_bounds(deltas);
    }

    /// Keeps one captured pod last in its TrainJob's queue (replacing an
    /// earlier capture of the same pod), then applies the per-TrainJob
    /// bounds. `announce`: push [`Delta::Captured`] (not for a restore).
    /// Returns whether it is kept (a pod larger than a whole budget is not).
    pub(super) fn keep_captured(
        &mut self,
        captured: Arc<CapturedPod>,
        announce: bool,
        deltas: &mut Vec<Delta>,
    ) -> bool {
        let trainjob_uid = captured.trainjob_uid.clone();
        let pod = captured.pod.clone();
        {
            // The same pod captured twice (deleted, re-listed) is kept once.
            let replaced = self.forget_captured(&trainjob_uid, &pod.uid);
            let bytes = captured.heap_bytes();
            let oversize = if bytes > self.limits.captured_bytes_per_trainjob {
                Some(&mut self.capture_evictions.trainjob_bytes)
            } else if bytes > self.limits.captured_bytes_total {
                Some(&mut self.capture_evictions.total_bytes)
            } else {
                None
            };
            if let Some(counter) = oversize {
                // Keeping it would evict everything else and still not fit.
                *counter += 1;
                if replaced {
                    deltas.push(Delta::CapturedDropped {
                        namespace: captured.namespace.clone(),
                        trainjob_uid: trainjob_uid.clone(),
                        pod_uid: pod.uid.clone(),
                    });
                }
                return false;
            }
            let seq = self.next_capture;
            self.next_capture += 1;
            let queue = self.captured.entry(trainjob_uid.clone()).or_default();
            queue.entries.push_back((seq, captured.clone(), bytes));
            self.linker.upsert_links(
                Linked::captured(&trainjob_uid, &pod.uid),
                links_of_captured(&captured),
            );
            queue.bytes += bytes;
            self.captured_bytes += bytes;
            self.capture_order.insert(seq, trainjob_uid.clone());
            if announce {
                deltas.push(Delta::Captured(captured));
            }
            while let Some(queue) = self.captured.get(&trainjob_uid) {
                if queue.entries.len() > self.limits.captured_per_trainjob {
                    self.capture_evictions.trainjob_pods += 1;
                } else if queue.bytes > self.limits.captured_bytes_per_trainjob {
                    self.capture_evictions.trainjob_bytes += 1;
                } else {
                    break;
                }
                self.drop_oldest_of(&trainjob_uid, deltas);
            }
        }
        true
    }

    /// Drops the oldest captured pods of any TrainJob past the global bounds.
    pub(super) fn enforce_total_capture_bounds(&mut self, deltas: &mut Vec<Delta>) {
        loop {
            if self.capture_order.len() > self.limits.captured_total {
                self.capture_evictions.total_pods += 1;
            } else if self.captured_bytes > self.limits.captured_bytes_total {
                self.capture_evictions.total_bytes += 1;
            } else {
                break;
            }
            let Some((_, trainjob_uid)) = self.capture_order.first_key_value() else {
                break;
            };
            let trainjob_uid = trainjob_uid.clone();
            self.drop_oldest_of(&trainjob_uid, deltas);
            self.mark_trainjob(&trainjob_uid);
        }
    }

    /// Removes the entry of `pod_uid` from a TrainJob's captured pods, if
    /// any, without a delta (the caller replaces or reports it).
    pub(super) fn forget_captured(&mut self, trainjob_uid: &str, pod_uid: &str) -> bool {
        let Some(queue) = self.captured.get_mut(trainjob_uid) else {
            return false;
        };
        let Some(at) = queue
            .entries
            .iter()
            .position(|(_, c, _)| c.pod.uid == pod_uid)
        else {
            return false;
        };
        if let Some((seq, _, bytes)) = queue.entries.remove(at) {
            self.linker.remove(&Linked::captured(trainjob_uid, pod_uid));
            queue.bytes -= bytes;
            self.captured_bytes -= bytes;
            self.capture_order.remove(&seq);
        }
        if queue.entries.is_empty() {
            self.captured.remove(trainjob_uid);
        }
        true
    }

    pub(super) fn drop_oldest_of(&mut self, trainjob_uid: &str, deltas: &mut Vec<Delta>) {
        let Some(queue) = self.captured.get_mut(trainjob_uid) else {
            return;
        };
        if let Some((seq, dropped, bytes)) = queue.entries.pop_front() {
            self.linker
                .remove(&Linked::captured(&dropped.trainjob_uid, &dropped.pod.uid));
            queue.bytes -= bytes;
            self.captured_bytes -= bytes;
            self.capture_order.remove(&seq);
            deltas.push(Delta::CapturedDropped {
                namespace: dropped.namespace.clone(),
                trainjob_uid: dropped.trainjob_uid.clone(),
                pod_uid: dropped.pod.uid.clone(),
            });
        }
        if queue.entries.is_empty() {
            self.captured.remove(trainjob_uid);
        }
    }
}
