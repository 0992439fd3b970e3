//! A scenario driver: plays the Trainer, JobSet, Kueue, scheduler and
//! kubelet controllers against an [`Emulator`], running TrainJobs through
//! realistic lives, so the dashboard (and its tests) see every state the
//! classification knows: queued, gated, held, suspended, running, completed,
//! failed by OOM or a non-zero exit, node loss, preemption by the scheduler
//! or by Kueue, JobSet restarts, and orphans left behind by a deletion.
//!
//! Everything random comes from a seeded [`SplitMix64`], so a seed gives the
//! same names, stories and order of events every run (timestamps are the
//! wall clock).

pub mod objects;

use std::collections::VecDeque;
use std::future::Future;
use std::time::Duration;

use serde_json::{json, Value};

use crate::rng::SplitMix64;
use crate::time::now_rfc3339;
use crate::{Emulator, Kind};
use objects::{condition, remove_condition, set_condition, JobRef, PodRef};

/// How the driver populates and animates the cluster.
#[derive(Debug, Clone)]
pub struct ScenarioConfig {
    /// Seed of every random choice.
    pub seed: u64,
    /// How many TrainJobs are alive at once (a new one starts as one ends).
    pub jobs: usize,
    /// Pods (nodes of the distributed training) per TrainJob.
    pub pods_per_job: usize,
    /// Time per step of [`run`].
    pub pace: Duration,
    /// Namespaces the jobs are spread over (round-robin).
    pub namespaces: Vec<String>,
    /// Whether Kueue manages admission (the emulator must serve Workloads).
    pub kueue: bool,
}

impl Default for ScenarioConfig {
    fn default() -> Self {
        ScenarioConfig {
            seed: 7,
            jobs: 12,
            pods_per_job: 4,
            pace: Duration::from_secs(2),
            namespaces: vec!["team-a".into(), "team-b".into()],
            kueue: true,
        }
    }
}

/// The life a TrainJob is going to have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Story {
    /// Queued, admitted, runs and completes.
    Completes,
    /// The node container of one rank is OOMKilled (exit 137); FailedJobs.
    OutOfMemory,
    /// One rank exits with a non-zero code; FailedJobs.
    NonZeroExit,
    /// A Node goes `Ready=Unknown`, its pods are evicted by the taint
    /// manager, the JobSet restarts elsewhere.
    NodeLoss,
    /// The scheduler preempts a rank; the JobSet restarts.
    SchedulerPreemption,
    /// Kueue evicts the Workload (Preempted), requeues and re-admits it.
    /// In plain mode this plays as [`Story::SchedulerPreemption`].
    KueuePreemption,
    /// dispatch holds the job for a while, then releases it.
    Held,
    /// dispatch's admission gate is closed for a while, then opened.
    Gated,
    /// A user suspends the job, later resumes it.
    UserSuspended,
    /// A rank fails, the JobSet restarts with a new execution and completes.
    Restarted,
    /// The TrainJob is deleted while running; its JobSet, pods and runtime
    /// copy linger as orphans before they are cleaned up.
    DeletedWhileRunning,
}

impl Story {
    /// Every story.
    pub const ALL: [Story; 11] = [
        Story::Completes,
        Story::OutOfMemory,
        Story::NonZeroExit,
        Story::NodeLoss,
        Story::SchedulerPreemption,
        Story::KueuePreemption,
        Story::Held,
        Story::Gated,
        Story::UserSuspended,
        Story::Restarted,
        Story::DeletedWhileRunning,
    ];
}

/// One thing a controller does to a job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Submit {
        gated: bool,
        held: bool,
    },
    /// Nothing happens this step (queued, running, lingering).
    Wait,
    OpenGate,
    ReleaseHold,
    /// Kueue quota reserved + admitted (or plain: unsuspended); a new
    /// execution's pods are created.
    Admit,
    Schedule,
    Succeed,
    ContainerFails {
        oom: bool,
    },
    FailTrainJob,
    NodeLost,
    TaintEviction,
    NodeRecovers,
    SchedulerPreempts,
    JobSetRestart,
    KueueEvicts,
    UserSuspends,
    UserResumes,
    DeleteTrainJob,
    CleanUpOrphans,
}

fn script(story: Story, kueue: bool) -> Vec<Step> {
    use Step::*;
    let queued: &[Step] = if kueue { &[Wait] } else { &[] };
    let mut s = vec![Submit {
        gated: story == Story::Gated,
        held: story == Story::Held,
    }];
    match story {
        Story::Gated => s.extend([Wait, Wait, OpenGate]),
        Story::Held => s.extend([Wait, Wait, ReleaseHold]),
        _ => {}
    }
    s.extend_from_slice(queued);
    s.extend([Admit, Schedule, Wait]);
    let story = if story == Story::KueuePreemption && !kueue {
        Story::SchedulerPreemption
    } else {
        story
    };
    let finish: &[Step] = &[Wait, Succeed, Wait, Wait];
    match story {
        Story::Completes | Story::Held | Story::Gated => s.extend(finish),
        Story::OutOfMemory | Story::NonZeroExit => s.extend([
            ContainerFails {
                oom: story == Story::OutOfMemory,
            },
            FailTrainJob,
            Wait,
            Wait,
        ]),
        Story::NodeLoss => {
            s.extend([
                NodeLost,
                Wait,
                TaintEviction,
                JobSetRestart,
                Schedule,
                NodeRecovers,
            ]);
            s.extend(finish);
        }
        Story::SchedulerPreemption => {
            s.extend([SchedulerPreempts, JobSetRestart, Schedule]);
            s.extend(finish);
        }
        Story::KueuePreemption => {
            s.extend([KueueEvicts, Wait, Wait, Admit, Schedule]);
            s.extend(finish);
        }
        Story::UserSuspended => {
            s.extend([UserSuspends, Wait, Wait, UserResumes, Schedule]);
            s.extend(finish);
        }
        Story::Restarted => {
            s.extend([ContainerFails { oom: false }, JobSetRestart, Schedule]);
            s.extend(finish);
        }
        Story::DeletedWhileRunning => {}
    }
    s.extend([DeleteTrainJob, Wait, CleanUpOrphans]);
    s
}

/// The driver's knowledge of one job.
#[derive(Debug)]
struct Job {
    job: JobRef,
    story: Story,
    uid: String,
    workload: Option<String>,
    admission: u32,
    attempt: u32,
    restarts: u32,
    /// Live pods of the current execution, with their node.
    pods: Vec<(PodRef, Option<String>)>,
    /// Pods marked terminating last step, deleted at the next one.
    terminating: Vec<String>,
    lost_node: Option<String>,
    script: VecDeque<Step>,
}

/// A running scenario: the jobs it animates and its random state. Made by
/// [`populate`]; [`Scenario::step`] advances it, [`Scenario::run`] loops.
#[derive(Debug)]
pub struct Scenario {
    ctx: Ctx,
    jobs: Vec<Job>,
    next_job: u64,
    next_namespace: usize,
}

const MODELS: [&str; 5] = ["llm", "vit", "bert", "rlhf", "diffusion"];

/// Creates the cluster's Nodes and an initial population of jobs already at
/// various points of their lives, so a dashboard shows data at once. Returns
/// the scenario, to be advanced with [`Scenario::step`] or [`Scenario::run`].
pub fn populate(emulator: &Emulator, config: ScenarioConfig) -> Scenario {
    let mut sc = Scenario::new(config);
    sc.populate(emulator);
    sc
}

/// Populates (as [`populate`]) and then advances the scenario every
/// `config.pace` until `shutdown` completes, keeping `config.jobs` jobs alive.
pub async fn run(emulator: Emulator, config: ScenarioConfig, shutdown: impl Future<Output = ()>) {
    populate(&emulator, config).run(emulator, shutdown).await
}

impl Scenario {
    /// A scenario that has not touched any emulator yet.
    pub fn new(mut config: ScenarioConfig) -> Self {
        if config.namespaces.is_empty() {
            config.namespaces.push("default".into());
        }
        config.pods_per_job = config.pods_per_job.max(1);
        let node_count = (config.pods_per_job * 2).max(4);
        let nodes = (1..=node_count).map(|i| format!("gpu-node-{i}")).collect();
        Scenario {
            ctx: Ctx {
                rng: SplitMix64::new(config.seed),
                config,
                nodes,
            },
            jobs: Vec::new(),
            next_job: 1,
            next_namespace: 0,
        }
    }

    /// The configuration.
    pub fn config(&self) -> &ScenarioConfig {
        &self.ctx.config
    }

    /// Creates the Nodes and `config.jobs` jobs, each advanced a random
    /// number of steps into its life.
    pub fn populate(&mut self, emu: &Emulator) {
        let now = now_rfc3339();
        for n in &self.ctx.nodes {
            // Ignore "already exists": populate may run against a kept state.
            let _ = emu.apply(objects::node(n, "True", &now));
        }
        // One job of every story first (so every state is on show), then
        // random ones.
        let stories: Vec<Story> = Story::ALL
            .iter()
            .copied()
            .filter(|s| self.ctx.config.kueue || *s != Story::KueuePreemption)
            .collect();
        for i in 0..self.ctx.config.jobs {
            let story = match stories.get(i) {
                Some(s) => *s,
                None => *self.ctx.rng.pick(&stories).unwrap_or(&Story::Completes),
            };
            self.start_job(story);
            let len = self.jobs.last().map_or(0, |j| j.script.len()) as u64;
            // Stop before the deletion so the initial population is whole,
            // except for the story about orphans, shown with its orphans.
            let advance = if story == Story::DeletedWhileRunning {
                len.saturating_sub(1)
            } else {
                1 + self.ctx.rng.below(len.saturating_sub(3).max(1))
            };
            let idx = self.jobs.len() - 1;
            for _ in 0..advance {
                self.advance(emu, idx);
            }
        }
    }

    /// The stories of the jobs alive now (for tests and logs).
    pub fn stories(&self) -> Vec<(String, Story)> {
        self.jobs
            .iter()
            .map(|j| (format!("{}/{}", j.job.namespace, j.job.name()), j.story))
            .collect()
    }

    /// Advances every job by one step (some jobs wait a step at random, so
    /// lives interleave), retires ended jobs and starts new ones.
    pub fn step(&mut self, emu: &Emulator) {
        for idx in 0..self.jobs.len() {
            if self.ctx.rng.chance(0.75) {
                self.advance(emu, idx);
            }
        }
        self.jobs
            .retain(|j| !j.script.is_empty() || !j.terminating.is_empty());
        while self.jobs.len() < self.ctx.config.jobs {
            let story = *self.ctx.rng.pick(&Story::ALL).unwrap_or(&Story::Completes);
            self.start_job(story);
        }
    }

    /// Steps every `config.pace` until `shutdown` completes.
    pub async fn run(mut self, emu: Emulator, shutdown: impl Future<Output = ()>) {
        let mut shutdown = std::pin::pin!(shutdown);
        let mut tick = tokio::time::interval(self.ctx.config.pace.max(Duration::from_millis(1)));
        tick.tick().await;
        loop {
            tokio::select! {
                _ = &mut shutdown => return,
                _ = tick.tick() => self.step(&emu),
            }
        }
    }

    fn start_job(&mut self, story: Story) {
        let n = self.next_job;
        self.next_job += 1;
        let model = self.ctx.rng.pick(&MODELS).copied().unwrap_or("llm");
        let submission = format!("s{}", 1 + self.ctx.rng.below(3));
        let ns = self.ctx.config.namespaces[self.next_namespace % self.ctx.config.namespaces.len()]
            .clone();
        self.next_namespace += 1;
        self.jobs.push(Job {
            job: JobRef::new(&ns, &format!("{model}-{n}"), &submission),
            story,
            uid: String::new(),
            workload: None,
            admission: 0,
            attempt: 0,
            restarts: 0,
            pods: Vec::new(),
            terminating: Vec::new(),
            lost_node: None,
            script: script(story, self.ctx.config.kueue).into(),
        });
    }

    fn advance(&mut self, emu: &Emulator, idx: usize) {
        let Some(job) = self.jobs.get_mut(idx) else {
            return;
        };
        // Pods marked terminating at the last step are gone now.
        for name in std::mem::take(&mut job.terminating) {
            let _ = emu.delete(Kind::Pod, &job.job.namespace, &name);
        }
        if let Some(step) = job.script.pop_front() {
            self.ctx.perform(emu, job, step);
        }
    }
}

/// What every step needs besides the job: configuration, randomness, Nodes.
#[derive(Debug)]
struct Ctx {
    config: ScenarioConfig,
    rng: SplitMix64,
    nodes: Vec<String>,
}

impl Ctx {
    fn queue(&self) -> Option<&'static str> {
        self.config.kueue.then_some("gpu")
    }

    fn perform(&mut self, emu: &Emulator, job: &mut Job, step: Step) {
        let now = now_rfc3339();
        let ns = job.job.namespace.clone();
        let name = job.job.name();
        let kueue = self.config.kueue;
        match step {
            Step::Wait => {}
            Step::Submit { gated, held } => {
                let mut tj = objects::trainjob(
                    &job.job,
                    self.config.pods_per_job,
                    self.queue(),
                    kueue || held,
                );
                if gated {
                    tj["metadata"]["annotations"] =
                        json!({ objects::GATED_BY: objects::OPEN_GATE });
                }
                if held && !kueue {
                    tj["metadata"]["annotations"] = json!({ objects::HOLD_INSTANCE: "1" });
                }
                let Ok(tj) = emu.create(tj) else { return };
                job.uid = str_at(&tj, "/metadata/uid");
                let _ = emu.create(objects::runtime_copy(&job.job, &job.uid));
                if kueue {
                    let wl_name = format!("trainjob-{name}-{}", self.rng.suffix(5));
                    let mut wl = objects::workload(
                        &job.job,
                        &wl_name,
                        &job.uid,
                        "gpu",
                        self.config.pods_per_job,
                    );
                    if gated {
                        wl["metadata"]["annotations"] =
                            json!({ objects::GATED_BY: objects::OPEN_GATE });
                        set_condition(
                            &mut wl,
                            condition(
                                "QuotaReserved",
                                "False",
                                "AdmissionGated",
                                &format!("Admission is gated by: {}", objects::OPEN_GATE),
                                &now,
                            ),
                        );
                    } else if held {
                        wl["metadata"]["annotations"] = json!({ objects::HOLD_INSTANCE: "1" });
                        wl["spec"]["active"] = json!(false);
                        set_condition(
                            &mut wl,
                            condition(
                                "Evicted",
                                "True",
                                "Deactivated",
                                "The workload is deactivated",
                                &now,
                            ),
                        );
                    } else {
                        set_condition(&mut wl, quota_pending(&now));
                    }
                    if emu.create(wl).is_ok() {
                        job.workload = Some(wl_name);
                    }
                }
            }
            Step::OpenGate => {
                let _ = emu.merge_patch(
                    Kind::TrainJob,
                    &ns,
                    &name,
                    json!({"metadata": {"annotations": { objects::GATED_BY: null }}}),
                );
                self.with_workload(emu, job, |wl| {
                    if let Some(a) = wl["metadata"]["annotations"].as_object_mut() {
                        a.remove(objects::GATED_BY);
                    }
                    set_condition(wl, quota_pending(&now));
                });
            }
            Step::ReleaseHold => {
                if kueue {
                    self.with_workload(emu, job, |wl| {
                        if let Some(a) = wl["metadata"]["annotations"].as_object_mut() {
                            a.remove(objects::HOLD_INSTANCE);
                        }
                        wl["spec"]["active"] = json!(true);
                        remove_condition(wl, "Evicted");
                        set_condition(wl, quota_pending(&now));
                    });
                } else {
                    let _ = emu.merge_patch(Kind::TrainJob, &ns, &name,
                        json!({"metadata": {"annotations": { objects::HOLD_INSTANCE: null }}, "spec": {"suspend": false}}));
                }
            }
            Step::Admit => {
                self.with_workload(emu, job, |wl| {
                    wl["spec"]["active"] = json!(true);
                    remove_condition(wl, "Evicted");
                    remove_condition(wl, "Preempted");
                    set_condition(wl, condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue gpu", &now));
                    set_condition(wl, condition("Admitted", "True", "Admitted", "The workload is admitted", &now));
                    wl["status"]["admission"] = json!({"clusterQueue": "gpu",
                        "podSetAssignments": [{"name": "node", "count": wl["spec"]["podSets"][0]["count"].clone()}]});
                });
                let _ = emu.merge_patch(
                    Kind::TrainJob,
                    &ns,
                    &name,
                    json!({"spec": {"suspend": false}}),
                );
                job.admission += 1;
                self.ensure_jobset(emu, job);
                self.new_execution(emu, job, &now);
            }
            Step::Schedule => {
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
                    if let Some(pod) = emu.get(Kind::Pod, &ns, &p.name(&job.job)) {
                        let _ = emu.update(objects::pod_running(pod, &chosen, &now));
                    }
                    *node = Some(chosen);
                }
            }
            Step::Succeed => {
                for (p, _) in &job.pods {
                    if let Some(pod) = emu.get(Kind::Pod, &ns, &p.name(&job.job)) {
                        let _ = emu.update(objects::pod_terminated(pod, "Completed", 0, "", &now));
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
                        &now,
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
                        &now,
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
                            &now,
                        ),
                    );
                });
            }
            Step::ContainerFails { oom } => {
                let rank = if job.pods.len() > 1 { 1 } else { 0 };
                if let Some((p, _)) = job.pods.get(rank) {
                    if let Some(pod) = emu.get(Kind::Pod, &ns, &p.name(&job.job)) {
                        let failed = if oom {
                            objects::pod_terminated(pod, "OOMKilled", 137, "", &now)
                        } else {
                            objects::pod_terminated(pod, "Error", 1, "RuntimeError: CUDA error: an illegal memory access was encountered", &now)
                        };
                        let _ = emu.update(failed);
                    }
                }
            }
            Step::FailTrainJob => {
                // The other ranks are killed (SIGTERM, 143), then all pods go.
                let rank = if job.pods.len() > 1 { 1 } else { 0 };
                for (i, (p, _)) in job.pods.iter().enumerate() {
                    if let Some(pod) = emu.get(Kind::Pod, &ns, &p.name(&job.job)) {
                        let pod = if i == rank {
                            pod
                        } else {
                            objects::pod_terminated(pod, "Error", 143, "", &now)
                        };
                        let _ = emu.update(objects::pod_terminating(pod, &now));
                        job.terminating.push(p.name(&job.job));
                    }
                }
                job.pods.clear();
                self.jobset_condition(
                    emu,
                    job,
                    condition(
                        "Failed",
                        "True",
                        "FailedJobs",
                        "jobset failed due to one or more job failures",
                        &now,
                    ),
                );
                self.trainjob_condition(
                    emu,
                    job,
                    condition(
                        "Failed",
                        "True",
                        "FailedJobs",
                        "jobset failed due to one or more job failures",
                        &now,
                    ),
                );
                self.with_workload(emu, job, |wl| {
                    set_condition(
                        wl,
                        condition(
                            "Finished",
                            "True",
                            "Failed",
                            "jobset failed due to one or more job failures",
                            &now,
                        ),
                    );
                });
            }
            Step::NodeLost => {
                let node = job
                    .pods
                    .first()
                    .and_then(|(_, n)| n.clone())
                    .unwrap_or_else(|| "gpu-node-1".into());
                let _ = emu.apply(objects::node(&node, "Unknown", &now));
                job.lost_node = Some(node);
            }
            Step::TaintEviction => {
                let lost = job.lost_node.clone();
                for (p, node) in &job.pods {
                    if node.is_some() && *node == lost {
                        if let Some(pod) = emu.get(Kind::Pod, &ns, &p.name(&job.job)) {
                            let pod = objects::pod_disrupted(
                                pod,
                                "DeletionByTaintManager",
                                "Taint manager: deleting due to NoExecute taint",
                                &now,
                            );
                            let _ = emu.update(objects::pod_terminating(pod, &now));
                            job.terminating.push(p.name(&job.job));
                        }
                    }
                }
            }
            Step::NodeRecovers => {
                if let Some(node) = job.lost_node.take() {
                    let _ = emu.apply(objects::node(&node, "True", &now));
                }
            }
            Step::SchedulerPreempts => {
                if let Some((p, _)) = job.pods.first() {
                    if let Some(pod) = emu.get(Kind::Pod, &ns, &p.name(&job.job)) {
                        let pod = objects::pod_disrupted(
                            pod,
                            "PreemptionByScheduler",
                            "Preempted by a pod of higher priority on node",
                            &now,
                        );
                        let pod = objects::pod_terminated(pod, "Error", 143, "", &now);
                        let _ = emu.update(objects::pod_terminating(pod, &now));
                        job.terminating.push(p.name(&job.job));
                    }
                }
            }
            Step::JobSetRestart => {
                // The remaining pods of the old attempt are deleted; a new
                // attempt's pods are created.
                self.terminate_all(emu, job, &now);
                job.attempt += 1;
                job.restarts += 1;
                if let Some(mut js) = emu.get(Kind::JobSet, &ns, &name) {
                    js["status"]["restarts"] = json!(job.restarts);
                    let _ = emu.update(js);
                }
                self.new_execution(emu, job, &now);
            }
            Step::KueueEvicts => {
                self.with_workload(emu, job, |wl| {
                    let msg = "Preempted to accommodate a workload (UID: 1f2e) due to prioritization in the ClusterQueue";
                    set_condition(wl, condition("Evicted", "True", "Preempted", msg, &now));
                    set_condition(wl, condition("Preempted", "True", "InClusterQueue", msg, &now));
                    set_condition(wl, condition("QuotaReserved", "False", "Pending", "couldn't assign flavors to pod set node: insufficient quota", &now));
                    set_condition(wl, condition("Admitted", "False", "NoReservation", "The workload has no reservation", &now));
                    set_condition(wl, condition("Requeued", "True", "Preempted", msg, &now));
                    if let Some(s) = wl["status"].as_object_mut() {
                        s.remove("admission");
                    }
                });
                let _ = emu.merge_patch(
                    Kind::TrainJob,
                    &ns,
                    &name,
                    json!({"spec": {"suspend": true}}),
                );
                self.terminate_all(emu, job, &now);
            }
            Step::UserSuspends => {
                if kueue {
                    self.with_workload(emu, job, |wl| {
                        wl["spec"]["active"] = json!(false);
                        set_condition(
                            wl,
                            condition(
                                "Evicted",
                                "True",
                                "Deactivated",
                                "The workload is deactivated",
                                &now,
                            ),
                        );
                        set_condition(
                            wl,
                            condition(
                                "Admitted",
                                "False",
                                "NoReservation",
                                "The workload has no reservation",
                                &now,
                            ),
                        );
                        set_condition(
                            wl,
                            condition(
                                "QuotaReserved",
                                "False",
                                "Pending",
                                "The workload is deactivated",
                                &now,
                            ),
                        );
                    });
                    let _ = emu.merge_patch(
                        Kind::TrainJob,
                        &ns,
                        &name,
                        json!({"spec": {"suspend": true}}),
                    );
                } else {
                    let _ = emu.merge_patch(
                        Kind::TrainJob,
                        &ns,
                        &name,
                        json!({"spec": {"suspend": true}}),
                    );
                    self.trainjob_condition(
                        emu,
                        job,
                        condition(
                            "Suspended",
                            "True",
                            "Suspended",
                            "TrainJob is suspended",
                            &now,
                        ),
                    );
                }
                self.terminate_all(emu, job, &now);
            }
            Step::UserResumes => {
                if let Some(mut tj) = emu.get(Kind::TrainJob, &ns, &name) {
                    tj["spec"]["suspend"] = json!(false);
                    remove_condition(&mut tj, "Suspended");
                    let _ = emu.update(tj);
                }
                self.with_workload(emu, job, |wl| {
                    wl["spec"]["active"] = json!(true);
                    remove_condition(wl, "Evicted");
                    set_condition(
                        wl,
                        condition(
                            "QuotaReserved",
                            "True",
                            "QuotaReserved",
                            "Quota reserved in ClusterQueue gpu",
                            &now,
                        ),
                    );
                    set_condition(
                        wl,
                        condition(
                            "Admitted",
                            "True",
                            "Admitted",
                            "The workload is admitted",
                            &now,
                        ),
                    );
                });
                job.admission += 1;
                self.new_execution(emu, job, &now);
            }
            Step::DeleteTrainJob => {
                // Background deletion: the TrainJob goes now; Kueue's
                // Workload goes with it; the garbage collector gets to the
                // JobSet, runtime copy and pods later.
                let _ = emu.delete(Kind::TrainJob, &ns, &name);
                if let Some(wl) = job.workload.take() {
                    let _ = emu.delete(Kind::Workload, &ns, &wl);
                }
            }
            Step::CleanUpOrphans => {
                self.terminate_all(emu, job, &now);
                let _ = emu.delete(Kind::JobSet, &ns, &name);
                let _ = emu.delete(Kind::TrainingRuntime, &ns, &name);
            }
        }
    }

    /// Marks every live pod of the job terminating (deleted next step).
    fn terminate_all(&mut self, emu: &Emulator, job: &mut Job, now: &str) {
        for (p, _) in std::mem::take(&mut job.pods) {
            let pod_name = p.name(&job.job);
            if job.terminating.contains(&pod_name) {
                continue;
            }
            if let Some(pod) = emu.get(Kind::Pod, &job.job.namespace, &pod_name) {
                let pod = if pod["status"]["phase"] == "Running" {
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

fn quota_pending(now: &str) -> Value {
    condition("QuotaReserved", "False", "Pending",
        "couldn't assign flavors to pod set node: insufficient quota for nvidia.com/gpu in flavor a100, 16 more needed", now)
}

fn str_at(v: &Value, ptr: &str) -> String {
    v.pointer(ptr)
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string()
}
