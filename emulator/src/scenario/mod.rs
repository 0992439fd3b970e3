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
pub mod queues;
mod steps;

use std::collections::VecDeque;
use std::future::Future;
use std::time::Duration;

use crate::rng::SplitMix64;
use crate::time::now_rfc3339;
use crate::{Emulator, Kind};
use objects::{JobRef, PodRef};

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
        let nominal_gpus = queues::nominal_quota(config.jobs, config.pods_per_job);
        let capacity_gpus = queues::capacity(config.jobs, config.pods_per_job);
        Scenario {
            ctx: Ctx {
                rng: SplitMix64::new(config.seed),
                config,
                nodes,
                nominal_gpus,
                capacity_gpus,
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
        if self.ctx.config.kueue {
            let (jobs, pods) = (self.ctx.config.jobs, self.ctx.config.pods_per_job);
            for cq in queues::cluster_queues(jobs, pods) {
                let _ = emu.apply(cq);
            }
            for ns in &self.ctx.config.namespaces {
                let _ = emu.apply(queues::local_queue(ns));
            }
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
        self.sync_queues(emu);
    }

    /// Kueue's queue controller: the queues' status from the Workloads.
    fn sync_queues(&self, emu: &Emulator) {
        if self.ctx.config.kueue {
            let namespaces = &self.ctx.config.namespaces;
            queues::sync(emu, namespaces, self.ctx.nominal_gpus, &now_rfc3339());
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
        self.sync_queues(emu);
    }

    /// Steps until the line of `namespace`'s LocalQueue changes (a Workload
    /// joins, leaves or moves), at most `max_steps` times: the steps taken,
    /// or `None` when it did not change. A still demo moves on by this, so
    /// that a test or a screenshot sees a queue move when it asks for it.
    pub fn step_until_the_line_moves(
        &mut self,
        emu: &Emulator,
        namespace: &str,
        max_steps: usize,
    ) -> Option<usize> {
        let line = |emu: &Emulator| {
            crate::visibility::local_queue_line(emu, namespace, queues::LOCAL_QUEUE)
        };
        let before = line(emu);
        (1..=max_steps).find(|_| {
            self.step(emu);
            line(emu) != before
        })
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
        let namespaces = &self.ctx.config.namespaces;
        // `new` leaves at least one namespace.
        let ns = (self.next_namespace.checked_rem(namespaces.len()))
            .and_then(|i| namespaces.get(i))
            .cloned()
            .unwrap_or_else(|| "default".into());
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

/// What every step needs besides the job: configuration, randomness,
/// Nodes, and the ClusterQueue's quota.
#[derive(Debug)]
struct Ctx {
    config: ScenarioConfig,
    rng: SplitMix64,
    nodes: Vec<String>,
    /// The ClusterQueue's nominal GPU quota.
    nominal_gpus: u64,
    /// Its nominal quota and what it may borrow from the cohort.
    capacity_gpus: u64,
}

impl Ctx {
    fn queue(&self) -> Option<&'static str> {
        self.config.kueue.then_some(queues::LOCAL_QUEUE)
    }

    /// Does what the controllers do at `step` (see the `steps` module).
    fn perform(&mut self, emu: &Emulator, job: &mut Job, step: Step) {
        let now = now_rfc3339();
        let now = now.as_str();
        match step {
            Step::Wait => {}
            Step::Submit { gated, held } => self.submit(emu, job, gated, held, now),
            Step::OpenGate => self.open_gate(emu, job, now),
            Step::ReleaseHold => self.release_hold(emu, job, now),
            // Kueue admits only within quota; a job that does not fit waits
            // in line and is tried again at its next step.
            Step::Admit => {
                if !self.admit(emu, job, now) {
                    job.script.push_front(Step::Admit);
                }
            }
            Step::Schedule => self.schedule(emu, job, now),
            Step::Succeed => self.succeed(emu, job, now),
            Step::ContainerFails { oom } => self.container_fails(emu, job, oom, now),
            Step::FailTrainJob => self.fail_trainjob(emu, job, now),
            Step::NodeLost => self.node_lost(emu, job, now),
            Step::TaintEviction => self.taint_eviction(emu, job, now),
            Step::NodeRecovers => self.node_recovers(emu, job, now),
            Step::SchedulerPreempts => self.scheduler_preempts(emu, job, now),
            Step::JobSetRestart => self.jobset_restart(emu, job, now),
            Step::KueueEvicts => self.kueue_evicts(emu, job, now),
            Step::UserSuspends => self.user_suspends(emu, job, now),
            Step::UserResumes => {
                if !self.user_resumes(emu, job, now) {
                    job.script.push_front(Step::UserResumes);
                }
            }
            Step::DeleteTrainJob => self.delete_trainjob(emu, job),
            Step::CleanUpOrphans => self.clean_up_orphans(emu, job, now),
        }
    }
}
