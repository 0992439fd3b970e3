//! What the controllers do at each `Step`: one function per step, called
//! by `Ctx::perform`, and the writes they share.

use serde_json::{json, Value};

use super::objects::{self, condition, remove_condition, set_condition, PodRef};
use super::queues::{self, CLUSTER_QUEUE};
use super::{Ctx, Job, Story};
use crate::{field, Emulator, Kind};

/// The Workload's `Evicted` message when Kueue preempts it for the
/// Workload of UID `preemptor`.
fn preempted(preemptor: &str) -> String {
    format!("Preempted to accommodate a workload (UID: {preemptor}) due to prioritization in the ClusterQueue")
}

/// The priority of a job's Workload: the job Kueue preempts has the
/// lowest, so that any other can be its preemptor.
fn priority(story: Story) -> i64 {
    if story == Story::KueuePreemption {
        0
    } else {
        100
    }
}

/// `Quota reserved in ClusterQueue …`, Kueue's words.
fn quota_reserved_message() -> String {
    format!("Quota reserved in ClusterQueue {CLUSTER_QUEUE}")
}

/// The message of a JobSet, TrainJob and Workload failed by a rank.
const FAILED_JOBS: &str = "jobset failed due to one or more job failures";

impl Ctx {
    /// `Step::Submit`: the TrainJob (suspended under Kueue or when held),
    /// the Trainer's runtime copy and, under Kueue, the Workload.
    pub(super) fn submit(
        &mut self,
        emu: &Emulator,
        job: &mut Job,
        gated: bool,
        held: bool,
        now: &str,
    ) {
        let kueue = self.config.kueue;
        let mut tj = objects::trainjob(
            &job.job,
            self.config.pods_per_job,
            self.queue(),
            kueue || held,
        );
        if gated {
            field::set(
                &mut tj,
                &["metadata", "annotations"],
                json!({ objects::GATED_BY: objects::OPEN_GATE }),
            );
        }
        if held && !kueue {
            field::set(
                &mut tj,
                &["metadata", "annotations"],
                json!({ objects::HOLD_INSTANCE: "1" }),
            );
        }
        let Ok(tj) = emu.create(tj) else { return };
        job.uid = str_at(&tj, "/metadata/uid");
        let _ = emu.create(objects::runtime_copy(&job.job, &job.uid));
        if kueue {
            self.submit_workload(emu, job, gated, held, now);
        }
    }

    /// Kueue's Workload for a submitted TrainJob: gated, deactivated (held)
    /// or pending quota.
    fn submit_workload(
        &mut self,
        emu: &Emulator,
        job: &mut Job,
        gated: bool,
        held: bool,
        now: &str,
    ) {
        let name = job.job.name();
        let wl_name = format!("trainjob-{name}-{}", self.rng.suffix(5));
        let mut wl = objects::workload(
            &job.job,
            &wl_name,
            &job.uid,
            queues::LOCAL_QUEUE,
            self.config.pods_per_job,
        );
        field::set(&mut wl, &["spec", "priority"], json!(priority(job.story)));
        if gated {
            field::set(
                &mut wl,
                &["metadata", "annotations"],
                json!({ objects::GATED_BY: objects::OPEN_GATE }),
            );
            set_condition(
                &mut wl,
                condition(
                    "QuotaReserved",
                    "False",
                    "AdmissionGated",
                    &format!("Admission is gated by: {}", objects::OPEN_GATE),
                    now,
                ),
            );
        } else if held {
            field::set(
                &mut wl,
                &["metadata", "annotations"],
                json!({ objects::HOLD_INSTANCE: "1" }),
            );
            field::set(&mut wl, &["spec", "active"], json!(false));
            set_condition(
                &mut wl,
                condition(
                    "Evicted",
                    "True",
                    "Deactivated",
                    "The workload is deactivated",
                    now,
                ),
            );
        } else {
            set_condition(&mut wl, self.quota_pending(emu, now));
        }
        if emu.create(wl).is_ok() {
            job.workload = Some(wl_name);
        }
    }

    /// `Step::OpenGate`: dispatch removes the admission gate.
    pub(super) fn open_gate(&mut self, emu: &Emulator, job: &mut Job, now: &str) {
        let pending = self.quota_pending(emu, now);
        let _ = emu.merge_patch(
            Kind::TrainJob,
            &job.job.namespace,
            &job.job.name(),
            json!({"metadata": {"annotations": { objects::GATED_BY: null }}}),
        );
        self.with_workload(emu, job, |wl| {
            if let Some(a) =
                field::at_mut(wl, &["metadata", "annotations"]).and_then(Value::as_object_mut)
            {
                a.remove(objects::GATED_BY);
            }
            set_condition(wl, pending);
        });
    }

    /// `Step::ReleaseHold`: dispatch releases its hold (reactivates the
    /// Workload, or unsuspends the TrainJob without Kueue).
    pub(super) fn release_hold(&mut self, emu: &Emulator, job: &mut Job, now: &str) {
        if self.config.kueue {
            let pending = self.quota_pending(emu, now);
            self.with_workload(emu, job, |wl| {
                if let Some(a) =
                    field::at_mut(wl, &["metadata", "annotations"]).and_then(Value::as_object_mut)
                {
                    a.remove(objects::HOLD_INSTANCE);
                }
                field::set(wl, &["spec", "active"], json!(true));
                remove_condition(wl, "Evicted");
                set_condition(wl, pending);
            });
        } else {
            let _ = emu.merge_patch(Kind::TrainJob, &job.job.namespace, &job.job.name(),
                json!({"metadata": {"annotations": { objects::HOLD_INSTANCE: null }}, "spec": {"suspend": false}}));
        }
    }

    /// `Step::Admit`: Kueue admits the Workload (or, without Kueue, the
    /// TrainJob is unsuspended); the JobSet and a new execution's pods.
    /// Returns false, having changed nothing but the Workload's words, when
    /// the job does not fit the ClusterQueue's free quota.
    pub(super) fn admit(&mut self, emu: &Emulator, job: &mut Job, now: &str) -> bool {
        if !self.fits(emu, job, now) {
            return false;
        }
        self.with_workload(emu, job, |wl| {
            field::set(wl, &["spec", "active"], json!(true));
            remove_condition(wl, "Evicted");
            remove_condition(wl, "Preempted");
            set_condition(
                wl,
                condition(
                    "QuotaReserved",
                    "True",
                    "QuotaReserved",
                    &quota_reserved_message(),
                    now,
                ),
            );
            set_condition(
                wl,
                condition(
                    "Admitted",
                    "True",
                    "Admitted",
                    "The workload is admitted",
                    now,
                ),
            );
            let count = wl
                .get("spec")
                .and_then(|s| s.get("podSets"))
                .and_then(|p| p.get(0))
                .and_then(|p| p.get("count"))
                .cloned()
                .unwrap_or(Value::Null);
            field::set(
                wl,
                &["status", "admission"],
                json!({"clusterQueue": CLUSTER_QUEUE,
                    "podSetAssignments": [{"name": "node", "count": count}]}),
            );
        });
        let _ = emu.merge_patch(
            Kind::TrainJob,
            &job.job.namespace,
            &job.job.name(),
            json!({"spec": {"suspend": false}}),
        );
        job.admission += 1;
        self.ensure_jobset(emu, job);
        self.new_execution(emu, job, now);
        true
    }

    /// Kueue's quota check: whether the job's Workload fits the
    /// ClusterQueue's free quota now. When it does not, its `QuotaReserved`
    /// says by how much (written only when those words change).
    fn fits(&self, emu: &Emulator, job: &Job, now: &str) -> bool {
        if !self.config.kueue || job.workload.is_none() {
            return true;
        }
        let asks = queues::asks(self.config.pods_per_job);
        let free = self.capacity_gpus.saturating_sub(queues::reserved(emu));
        if asks <= free {
            return true;
        }
        let waiting = queues::waiting_for_quota(asks, free, now);
        let Some(wl_name) = &job.workload else {
            return false;
        };
        if let Some(mut wl) = emu.get(Kind::Workload, &job.job.namespace, wl_name) {
            let said = wl
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| {
                    cs.iter().any(|c| {
                        c["type"] == "QuotaReserved" && c.get("message") == waiting.get("message")
                    })
                });
            if !said {
                set_condition(&mut wl, waiting);
                let _ = emu.update(wl);
            }
        }
        false
    }

    /// The `QuotaReserved=False` condition of a Workload entering the line
    /// now, with the shortfall it has at this moment.
    fn quota_pending(&self, emu: &Emulator, now: &str) -> Value {
        let asks = queues::asks(self.config.pods_per_job);
        let free = self.capacity_gpus.saturating_sub(queues::reserved(emu));
        if asks <= free {
            condition(
                "QuotaReserved",
                "False",
                "Pending",
                "the workload is waiting to be considered for admission",
                now,
            )
        } else {
            queues::waiting_for_quota(asks, free, now)
        }
    }

    /// The UID of a Workload of higher priority than the job's, in the same
    /// ClusterQueue: the one Kueue preempts the job for.
    fn preemptor(&self, emu: &Emulator, job: &Job) -> String {
        let own = priority(job.story);
        emu.list_shared(Kind::Workload, None)
            .into_iter()
            .filter(|wl| wl.pointer("/spec/queueName") == Some(&json!(queues::LOCAL_QUEUE)))
            .filter(|wl| wl.pointer("/spec/priority").and_then(Value::as_i64) > Some(own))
            .find(|wl| {
                wl.pointer("/metadata/name").and_then(Value::as_str) != job.workload.as_deref()
            })
            .map(|wl| str_at(&wl, "/metadata/uid"))
            .unwrap_or_else(|| "unknown".to_string())
    }

    /// `Step::Schedule`: the scheduler binds every pod to a ready Node and
    /// the kubelet starts it.
    pub(super) fn schedule(&mut self, emu: &Emulator, job: &mut Job, now: &str) {
        let ready: Vec<String> = self
            .nodes
            .iter()
            .filter(|n| Some(*n) != job.lost_node.as_ref())
            .cloned()
            .collect();
        for (p, node) in job.pods.iter_mut() {
            let chosen = self
                .rng
                .pick(&ready)
                .cloned()
                .unwrap_or_else(|| "gpu-node-1".into());
            if let Some(pod) = emu.get(Kind::Pod, &job.job.namespace, &p.name(&job.job)) {
                let _ = emu.update(objects::pod_running(pod, &chosen, now));
            }
            *node = Some(chosen);
        }
    }

    /// `Step::Succeed`: every rank exits 0; JobSet, TrainJob and Workload
    /// complete.
    pub(super) fn succeed(&mut self, emu: &Emulator, job: &mut Job, now: &str) {
        for (p, _) in &job.pods {
            if let Some(pod) = emu.get(Kind::Pod, &job.job.namespace, &p.name(&job.job)) {
                let _ = emu.update(objects::pod_terminated(pod, "Completed", 0, "", now));
            }
        }
        self.jobset_condition(
            emu,
            job,
            condition(
                "Completed",
                "True",
                "AllJobsCompleted",
                "jobset completed successfully",
                now,
            ),
        );
        self.trainjob_condition(
            emu,
            job,
            condition(
                "Complete",
                "True",
                "JobSetCompleted",
                "TrainJob is completed",
                now,
            ),
        );
        self.with_workload(emu, job, |wl| {
            set_condition(
                wl,
                condition(
                    "Finished",
                    "True",
                    "Succeeded",
                    "Job finished successfully",
                    now,
                ),
            );
        });
    }

    /// `Step::ContainerFails`: the node container of one rank (the
    /// second, if any) is OOMKilled or exits non-zero.
    pub(super) fn container_fails(&mut self, emu: &Emulator, job: &mut Job, oom: bool, now: &str) {
        let rank = if job.pods.len() > 1 { 1 } else { 0 };
        if let Some((p, _)) = job.pods.get(rank) {
            if let Some(pod) = emu.get(Kind::Pod, &job.job.namespace, &p.name(&job.job)) {
                let failed = if oom {
                    objects::pod_terminated(pod, "OOMKilled", 137, "", now)
                } else {
                    objects::pod_terminated(
                        pod,
                        "Error",
                        1,
                        "RuntimeError: CUDA error: an illegal memory access was encountered",
                        now,
                    )
                };
                let _ = emu.update(failed);
            }
        }
    }

    /// `Step::FailTrainJob`: the other ranks are killed, all pods go;
    /// JobSet, TrainJob and Workload fail.
    pub(super) fn fail_trainjob(&mut self, emu: &Emulator, job: &mut Job, now: &str) {
        // The other ranks are killed (SIGTERM, 143), then all pods go.
        let rank = if job.pods.len() > 1 { 1 } else { 0 };
        for (i, (p, _)) in job.pods.iter().enumerate() {
            if let Some(pod) = emu.get(Kind::Pod, &job.job.namespace, &p.name(&job.job)) {
                let pod = if i == rank {
                    pod
                } else {
                    objects::pod_terminated(pod, "Error", 143, "", now)
                };
                let _ = emu.update(objects::pod_terminating(pod, now));
                job.terminating.push(p.name(&job.job));
            }
        }
        job.pods.clear();
        self.jobset_condition(
            emu,
            job,
            condition("Failed", "True", "FailedJobs", FAILED_JOBS, now),
        );
        self.trainjob_condition(
            emu,
            job,
            condition("Failed", "True", "FailedJobs", FAILED_JOBS, now),
        );
        self.with_workload(emu, job, |wl| {
            set_condition(
                wl,
                condition("Finished", "True", "Failed", FAILED_JOBS, now),
            );
        });
    }

    /// `Step::NodeLost`: the Node of the first rank goes `Ready=Unknown`.
    pub(super) fn node_lost(&mut self, emu: &Emulator, job: &mut Job, now: &str) {
        let node = job
            .pods
            .first()
            .and_then(|(_, n)| n.clone())
            .unwrap_or_else(|| "gpu-node-1".into());
        let _ = emu.apply(objects::node(&node, "Unknown", now));
        job.lost_node = Some(node);
    }

    /// `Step::TaintEviction`: the taint manager evicts the pods on the
    /// lost Node.
    pub(super) fn taint_eviction(&mut self, emu: &Emulator, job: &mut Job, now: &str) {
        let lost = job.lost_node.clone();
        for (p, node) in &job.pods {
            if node.is_some() && *node == lost {
                if let Some(pod) = emu.get(Kind::Pod, &job.job.namespace, &p.name(&job.job)) {
                    let pod = objects::pod_disrupted(
                        pod,
                        "DeletionByTaintManager",
                        "Taint manager: deleting due to NoExecute taint",
                        now,
                    );
                    let _ = emu.update(objects::pod_terminating(pod, now));
                    job.terminating.push(p.name(&job.job));
                }
            }
        }
    }

    /// `Step::NodeRecovers`: the lost Node is `Ready` again.
    pub(super) fn node_recovers(&mut self, emu: &Emulator, job: &mut Job, now: &str) {
        if let Some(node) = job.lost_node.take() {
            let _ = emu.apply(objects::node(&node, "True", now));
        }
    }

    /// `Step::SchedulerPreempts`: the scheduler preempts the first rank.
    pub(super) fn scheduler_preempts(&mut self, emu: &Emulator, job: &mut Job, now: &str) {
        if let Some((p, _)) = job.pods.first() {
            if let Some(pod) = emu.get(Kind::Pod, &job.job.namespace, &p.name(&job.job)) {
                let pod = objects::pod_disrupted(
                    pod,
                    "PreemptionByScheduler",
                    "Preempted by a pod of higher priority on node",
                    now,
                );
                let pod = objects::pod_terminated(pod, "Error", 143, "", now);
                let _ = emu.update(objects::pod_terminating(pod, now));
                job.terminating.push(p.name(&job.job));
            }
        }
    }

    /// `Step::JobSetRestart`: the remaining pods of the old attempt are
    /// deleted; a new attempt's pods are created.
    pub(super) fn jobset_restart(&mut self, emu: &Emulator, job: &mut Job, now: &str) {
        self.terminate_all(emu, job, now);
        job.attempt += 1;
        job.restarts += 1;
        if let Some(mut js) = emu.get(Kind::JobSet, &job.job.namespace, &job.job.name()) {
            field::set(&mut js, &["status", "restarts"], json!(job.restarts));
            let _ = emu.update(js);
        }
        self.new_execution(emu, job, now);
    }

    /// `Step::KueueEvicts`: Kueue preempts and requeues the Workload; the
    /// TrainJob is suspended and its pods go.
    pub(super) fn kueue_evicts(&mut self, emu: &Emulator, job: &mut Job, now: &str) {
        let message = preempted(&self.preemptor(emu, job));
        let pending = self.quota_pending(emu, now);
        self.with_workload(emu, job, |wl| {
            set_condition(wl, condition("Evicted", "True", "Preempted", &message, now));
            set_condition(
                wl,
                condition("Preempted", "True", "InClusterQueue", &message, now),
            );
            set_condition(wl, pending);
            set_condition(
                wl,
                condition(
                    "Admitted",
                    "False",
                    "NoReservation",
                    "The workload has no reservation",
                    now,
                ),
            );
            set_condition(
                wl,
                condition("Requeued", "True", "Preempted", &message, now),
            );
            if let Some(s) = field::at_mut(wl, &["status"]).and_then(Value::as_object_mut) {
                s.remove("admission");
            }
        });
        let _ = emu.merge_patch(
            Kind::TrainJob,
            &job.job.namespace,
            &job.job.name(),
            json!({"spec": {"suspend": true}}),
        );
        self.terminate_all(emu, job, now);
    }

    /// `Step::UserSuspends`: a user deactivates the Workload (or, without
    /// Kueue, suspends the TrainJob); the pods go.
    pub(super) fn user_suspends(&mut self, emu: &Emulator, job: &mut Job, now: &str) {
        let suspend = json!({"spec": {"suspend": true}});
        let (ns, name) = (&job.job.namespace, job.job.name());
        if self.config.kueue {
            self.with_workload(emu, job, |wl| {
                field::set(wl, &["spec", "active"], json!(false));
                set_condition(
                    wl,
                    condition(
                        "Evicted",
                        "True",
                        "Deactivated",
                        "The workload is deactivated",
                        now,
                    ),
                );
                set_condition(
                    wl,
                    condition(
                        "Admitted",
                        "False",
                        "NoReservation",
                        "The workload has no reservation",
                        now,
                    ),
                );
                set_condition(
                    wl,
                    condition(
                        "QuotaReserved",
                        "False",
                        "Pending",
                        "The workload is deactivated",
                        now,
                    ),
                );
            });
            let _ = emu.merge_patch(Kind::TrainJob, ns, &name, suspend);
        } else {
            let _ = emu.merge_patch(Kind::TrainJob, ns, &name, suspend);
            self.trainjob_condition(
                emu,
                job,
                condition(
                    "Suspended",
                    "True",
                    "Suspended",
                    "TrainJob is suspended",
                    now,
                ),
            );
        }
        self.terminate_all(emu, job, now);
    }

    /// `Step::UserResumes`: the TrainJob is unsuspended, the Workload
    /// reactivated and admitted; a new execution's pods are created.
    /// Returns false, having changed nothing, when the job does not fit the
    /// ClusterQueue's free quota.
    pub(super) fn user_resumes(&mut self, emu: &Emulator, job: &mut Job, now: &str) -> bool {
        if !self.fits(emu, job, now) {
            return false;
        }
        if let Some(mut tj) = emu.get(Kind::TrainJob, &job.job.namespace, &job.job.name()) {
            field::set(&mut tj, &["spec", "suspend"], json!(false));
            remove_condition(&mut tj, "Suspended");
            let _ = emu.update(tj);
        }
        self.with_workload(emu, job, |wl| {
            field::set(wl, &["spec", "active"], json!(true));
            remove_condition(wl, "Evicted");
            set_condition(
                wl,
                condition(
                    "QuotaReserved",
                    "True",
                    "QuotaReserved",
                    &quota_reserved_message(),
                    now,
                ),
            );
            set_condition(
                wl,
                condition(
                    "Admitted",
                    "True",
                    "Admitted",
                    "The workload is admitted",
                    now,
                ),
            );
        });
        job.admission += 1;
        self.new_execution(emu, job, now);
        true
    }

    /// `Step::DeleteTrainJob`: background deletion. The TrainJob goes now;
    /// Kueue's Workload goes with it; the garbage collector gets to the
    /// JobSet, runtime copy and pods later.
    pub(super) fn delete_trainjob(&mut self, emu: &Emulator, job: &mut Job) {
        let _ = emu.delete(Kind::TrainJob, &job.job.namespace, &job.job.name());
        if let Some(wl) = job.workload.take() {
            let _ = emu.delete(Kind::Workload, &job.job.namespace, &wl);
        }
    }

    /// `Step::CleanUpOrphans`: the garbage collector removes the pods,
    /// JobSet and runtime copy a deleted TrainJob left behind.
    pub(super) fn clean_up_orphans(&mut self, emu: &Emulator, job: &mut Job, now: &str) {
        self.terminate_all(emu, job, now);
        let _ = emu.delete(Kind::JobSet, &job.job.namespace, &job.job.name());
        let _ = emu.delete(Kind::TrainingRuntime, &job.job.namespace, &job.job.name());
    }

    /// Marks every live pod of the job terminating (deleted next step).
    fn terminate_all(&mut self, emu: &Emulator, job: &mut Job, now: &str) {
        for (p, _) in std::mem::take(&mut job.pods) {
            let pod_name = p.name(&job.job);
            if job.terminating.contains(&pod_name) {
                continue;
            }
            if let Some(pod) = emu.get(Kind::Pod, &job.job.namespace, &pod_name) {
                let pod = if *field::at(&pod, &["status", "phase"]) == "Running" {
                    objects::pod_terminated(pod, "Error", 143, "", now)
                } else {
                    pod
                };
                let _ = emu.update(objects::pod_terminating(pod, now));
                job.terminating.push(pod_name);
            }
        }
    }

    fn new_execution(&mut self, emu: &Emulator, job: &mut Job, now: &str) {
        job.pods.clear();
        for rank in 0..self.config.pods_per_job {
            let p = PodRef {
                rank,
                admission: job.admission.max(1),
                restart_attempt: job.attempt,
                suffix: self.rng.suffix(5),
            };
            if emu.create(objects::pod(&job.job, &p, now)).is_ok() {
                job.pods.push((p, None));
            }
        }
    }

    fn ensure_jobset(&self, emu: &Emulator, job: &Job) {
        if emu
            .get(Kind::JobSet, &job.job.namespace, &job.job.name())
            .is_none()
        {
            let _ = emu.create(objects::jobset(
                &job.job,
                &job.uid,
                self.config.pods_per_job,
                job.restarts,
            ));
        }
    }

    fn with_workload(&self, emu: &Emulator, job: &Job, f: impl FnOnce(&mut Value)) {
        let Some(wl_name) = &job.workload else { return };
        if let Some(mut wl) = emu.get(Kind::Workload, &job.job.namespace, wl_name) {
            f(&mut wl);
            let _ = emu.update(wl);
        }
    }

    fn trainjob_condition(&self, emu: &Emulator, job: &Job, cond: Value) {
        if let Some(mut tj) = emu.get(Kind::TrainJob, &job.job.namespace, &job.job.name()) {
            set_condition(&mut tj, cond);
            let _ = emu.update(tj);
        }
    }

    fn jobset_condition(&self, emu: &Emulator, job: &Job, cond: Value) {
        if let Some(mut js) = emu.get(Kind::JobSet, &job.job.namespace, &job.job.name()) {
            set_condition(&mut js, cond);
            let _ = emu.update(js);
        }
    }
}

fn str_at(v: &Value, ptr: &str) -> String {
    v.pointer(ptr)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}
