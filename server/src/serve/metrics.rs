//! The server's Prometheus metrics. Prometheus' own Rust client
//! (`prometheus-client`) writes them, in the OpenMetrics text format; the
//! values are kept where they are cheapest to keep (atomics, a few small
//! maps, the store) and read at scrape time by a [`Collector`](prometheus_client::collector::Collector)
//! (`serve/scrape.rs` gathers them).
//!
//! No metric has a per-job label: the TrainJob series are bounded by
//! namespaces × states × causes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use classify_wasm::{CauseKind, Observation, State};
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeGaugeValue, EncodeLabelSet, EncodeMetric,
};
use prometheus_client::metrics::counter::{ConstCounter, Counter};
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::metrics::MetricType;

use super::history::Entered;
use super::store::{CaptureEvictions, Store};

/// Upper bounds (seconds) of the event-to-send latency histogram.
const LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// The labels of the TrainJob series: never a job's name.
#[derive(Debug, Clone, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct JobLabels {
    /// The TrainJob's namespace.
    pub namespace: String,
    /// Its state (`running`, `pending`, ...).
    pub state: &'static str,
    /// Its cause kind (`none`, `out-of-memory`, ...).
    pub cause: &'static str,
}

impl JobLabels {
    fn new(namespace: &str, state: State, cause: CauseKind) -> JobLabels {
        JobLabels {
            namespace: namespace.to_string(),
            state: state.as_str(),
            cause: cause.as_str(),
        }
    }
}

/// The bound a replay ring evicted a frame for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RingBound {
    /// More frames than the ring keeps.
    Frames,
    /// More bytes than the ring keeps (or one frame larger than all of it).
    Bytes,
    /// More bytes than the rings of every namespace keep together.
    TotalBytes,
}

/// The TrainJobs by namespace, state and cause, and since when each
/// pending one has been pending.
#[derive(Debug, Default)]
struct TrainJobs {
    counts: BTreeMap<(String, State, CauseKind), i64>,
    /// Namespace → TrainJob UID (or name) → pending since (Unix seconds).
    pending_since: BTreeMap<String, BTreeMap<String, i64>>,
    /// The namespaces with transition series.
    counted: BTreeSet<String>,
}

/// Every metric the hub keeps.
#[derive(Debug)]
pub struct Metrics {
    observations: Mutex<BTreeMap<(State, CauseKind), i64>>,
    trainjobs: Mutex<TrainJobs>,
    transitions: Family<JobLabels, Counter>,
    /// Watch streams that ended and were restarted.
    pub watch_restarts: AtomicU64,
    /// Captured pods held now.
    pub captured_pods: AtomicU64,
    /// Bytes of the captured pods held now.
    pub captured_bytes: AtomicU64,
    /// Bytes of every namespace's replay ring together.
    pub replay_bytes: AtomicU64,
    /// Bytes of the observation history.
    pub history_bytes: AtomicU64,
    /// Captured pods evicted, by bound (copied from the store).
    capture_evictions: Mutex<CaptureEvictions>,
    /// Replay frames evicted past the frame bound.
    replay_evicted_frames: AtomicU64,
    /// Replay frames evicted past the byte bound.
    replay_evicted_bytes: AtomicU64,
    replay_evicted_total_bytes: AtomicU64,
    /// Open SSE streams.
    pub sse_clients: AtomicU64,
    /// SSE streams refused because the cap was reached.
    pub sse_rejected: AtomicU64,
    /// SSE streams dropped because the client fell behind.
    pub sse_lagged: AtomicU64,
    latency: Histogram,
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics {
            observations: Mutex::default(),
            trainjobs: Mutex::default(),
            transitions: Family::default(),
            watch_restarts: AtomicU64::default(),
            captured_pods: AtomicU64::default(),
            captured_bytes: AtomicU64::default(),
            replay_bytes: AtomicU64::default(),
            history_bytes: AtomicU64::default(),
            capture_evictions: Mutex::default(),
            replay_evicted_frames: AtomicU64::default(),
            replay_evicted_bytes: AtomicU64::default(),
            replay_evicted_total_bytes: AtomicU64::default(),
            sse_clients: AtomicU64::default(),
            sse_rejected: AtomicU64::default(),
            sse_lagged: AtomicU64::default(),
            latency: Histogram::new(LATENCY_BUCKETS),
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn is_trainjob(o: &Observation) -> bool {
    o.object.kind == "TrainJob"
}

/// What identifies a TrainJob among its namespace's while it lives.
fn job_id(o: &Observation) -> &str {
    if o.object.uid.is_empty() {
        &o.object.name
    } else {
        &o.object.uid
    }
}

impl Metrics {
    /// Replaces one job's observations in the counts by state and cause,
    /// and in the TrainJob counts by namespace. `pending_since` gives, for
    /// a pending TrainJob, since when it has been pending.
    pub fn replace_observations(
        &self,
        old: &[Observation],
        new: &[Observation],
        pending_since: impl Fn(&Observation) -> Option<i64>,
    ) {
        {
            let mut counts = lock(&self.observations);
            for o in old {
                *counts.entry((o.state, o.cause.kind)).or_default() -= 1;
            }
            for o in new {
                *counts.entry((o.state, o.cause.kind)).or_default() += 1;
            }
            counts.retain(|_, n| *n != 0);
        }
        let mut jobs = lock(&self.trainjobs);
        for o in old.iter().filter(|o| is_trainjob(o)) {
            let key = (o.object.namespace.clone(), o.state, o.cause.kind);
            *jobs.counts.entry(key).or_default() -= 1;
            if let Some(pending) = jobs.pending_since.get_mut(&o.object.namespace) {
                pending.remove(job_id(o));
            }
        }
        for o in new.iter().filter(|o| is_trainjob(o)) {
            let key = (o.object.namespace.clone(), o.state, o.cause.kind);
            *jobs.counts.entry(key).or_default() += 1;
            if o.state == State::Pending {
                if let Some(since) = pending_since(o) {
                    jobs.pending_since
                        .entry(o.object.namespace.clone())
                        .or_default()
                        .insert(job_id(o).to_string(), since);
                }
            }
            self.start_transitions_of(&mut jobs, &o.object.namespace);
        }
        jobs.pending_since.retain(|_, p| !p.is_empty());
    }

    /// Makes the `ended` transition series of a namespace exist, at 0.
    fn start_transitions_of(&self, jobs: &mut TrainJobs, namespace: &str) {
        if jobs.counted.contains(namespace) {
            return;
        }
        jobs.counted.insert(namespace.to_string());
        // Every cause an ended TrainJob can have (all but `none`).
        for cause in CauseKind::ALL.into_iter().filter(|c| *c != CauseKind::None) {
            let _ = self
                .transitions
                .get_or_create(&JobLabels::new(namespace, State::Ended, cause));
        }
    }

    /// Counts the TrainJobs that entered a state and cause (an object
    /// seen for the first time enters its first).
    pub fn count_transitions(&self, entered: &[Entered]) {
        let mut jobs = lock(&self.trainjobs);
        for e in entered {
            if e.key.kind != "TrainJob" || !e.is_transition() {
                continue;
            }
            self.start_transitions_of(&mut jobs, &e.key.namespace);
            self.transitions
                .get_or_create(&JobLabels::new(
                    &e.key.namespace,
                    e.change.state,
                    e.change.cause,
                ))
                .inc();
        }
    }

    /// Copies the store's counters and gauges.
    pub fn record_store(&self, store: &Store) {
        self.watch_restarts
            .store(store.watch_restarts(), Ordering::Relaxed);
        self.captured_pods
            .store(store.captured_count() as u64, Ordering::Relaxed);
        self.captured_bytes
            .store(store.captured_bytes() as u64, Ordering::Relaxed);
        *lock(&self.capture_evictions) = store.capture_evictions();
    }

    /// Counts frames a replay ring evicted.
    pub fn count_replay_evictions(&self, bound: RingBound, frames: usize) {
        let counter = match bound {
            RingBound::Frames => &self.replay_evicted_frames,
            RingBound::Bytes => &self.replay_evicted_bytes,
            RingBound::TotalBytes => &self.replay_evicted_total_bytes,
        };
        counter.fetch_add(frames as u64, Ordering::Relaxed);
    }

    /// Records the time from a watch event's arrival to its SSE send.
    pub fn observe_latency(&self, latency: Duration) {
        self.latency.observe(latency.as_secs_f64());
    }

    /// Encodes every metric the hub keeps. `namespaces` are those served
    /// now: a namespace gone has no TrainJob series left; `now_unix` is
    /// the time pending ages are measured at.
    pub fn encode(
        &self,
        encoder: &mut DescriptorEncoder,
        namespaces: &BTreeSet<String>,
        now_unix: i64,
    ) -> fmt::Result {
        let observations = lock(&self.observations).clone();
        encode_gauges(
            encoder,
            "dispatch_dash_observations",
            "Observations (TrainJobs and orphans) by state and cause.",
            observations.iter().map(|((state, cause), n)| {
                ([("state", state.as_str()), ("cause", cause.as_str())], *n)
            }),
        )?;
        self.encode_trainjobs(encoder, namespaces, now_unix)?;
        for (name, help, value) in [
            (
                "dispatch_dash_captured_pods",
                "Deleted pods whose last state is kept as evidence.",
                &self.captured_pods,
            ),
            (
                "dispatch_dash_captured_pod_bytes",
                "Bytes held by captured pods.",
                &self.captured_bytes,
            ),
            (
                "dispatch_dash_replay_bytes",
                "Bytes held by the change frames of every namespace's replay ring.",
                &self.replay_bytes,
            ),
            (
                "dispatch_dash_history_bytes",
                "Bytes held by the observation history.",
                &self.history_bytes,
            ),
            (
                "dispatch_dash_sse_clients",
                "Open server-sent event streams.",
                &self.sse_clients,
            ),
        ] {
            encode_gauge(encoder, name, help, value.load(Ordering::Relaxed))?;
        }
        for (name, help, value) in [
            (
                "dispatch_dash_watch_restarts",
                "Watch streams that ended and were restarted.",
                &self.watch_restarts,
            ),
            (
                "dispatch_dash_sse_rejected",
                "SSE streams refused past the client cap.",
                &self.sse_rejected,
            ),
            (
                "dispatch_dash_sse_lagged",
                "SSE streams dropped because the client fell behind.",
                &self.sse_lagged,
            ),
        ] {
            encode_counter(encoder, name, help, value.load(Ordering::Relaxed))?;
        }
        let evictions = *lock(&self.capture_evictions);
        encode_counters(
            encoder,
            "dispatch_dash_captured_pods_evicted",
            "Captured pods evicted (or not kept) to stay within a bound.",
            [
                ("trainjob_pods", evictions.trainjob_pods),
                ("trainjob_bytes", evictions.trainjob_bytes),
                ("total_pods", evictions.total_pods),
                ("total_bytes", evictions.total_bytes),
            ]
            .map(|(bound, n)| ([("bound", bound)], n)),
        )?;
        encode_counters(
            encoder,
            "dispatch_dash_replay_frames_evicted",
            "Change frames dropped from a namespace's replay ring to stay within a bound.",
            [
                ("frames", &self.replay_evicted_frames),
                ("bytes", &self.replay_evicted_bytes),
                ("total_bytes", &self.replay_evicted_total_bytes),
            ]
            .map(|(bound, n)| ([("bound", bound)], n.load(Ordering::Relaxed))),
        )?;
        self.latency.encode(encoder.encode_descriptor(
            "dispatch_dash_event_to_send_seconds",
            "Time from a watch event's arrival to its SSE send.",
            None,
            self.latency.metric_type(),
        )?)
    }

    fn encode_trainjobs(
        &self,
        encoder: &mut DescriptorEncoder,
        namespaces: &BTreeSet<String>,
        now_unix: i64,
    ) -> fmt::Result {
        let (counts, oldest) = {
            let mut jobs = lock(&self.trainjobs);
            // A namespace no longer served, with no TrainJob left, loses
            // its series (with --all-namespaces, namespaces come and go).
            jobs.counts
                .retain(|(namespace, _, _), n| *n != 0 || namespaces.contains(namespace));
            // So do its transitions: a counter that vanishes is a stale
            // series to Prometheus, not a reset.
            let live: BTreeSet<&String> = jobs.counts.keys().map(|(ns, _, _)| ns).collect();
            let gone: Vec<String> = jobs
                .counted
                .iter()
                .filter(|ns| !namespaces.contains(*ns) && !live.contains(ns))
                .cloned()
                .collect();
            for namespace in &gone {
                for state in State::ALL {
                    for cause in CauseKind::ALL {
                        self.transitions
                            .remove(&JobLabels::new(namespace, state, cause));
                    }
                }
                jobs.counted.remove(namespace);
            }
            for namespace in namespaces {
                self.start_transitions_of(&mut jobs, namespace);
            }
            let oldest: BTreeMap<String, i64> = jobs
                .pending_since
                .iter()
                .filter_map(|(ns, jobs)| Some((ns.clone(), *jobs.values().min()?)))
                .collect();
            (jobs.counts.clone(), oldest)
        };
        encode_gauges(
            encoder,
            "dispatch_dash_trainjobs",
            "TrainJobs now, by namespace, state and cause.",
            counts
                .iter()
                .map(|((ns, state, cause), n)| (JobLabels::new(ns, *state, *cause), *n)),
        )?;
        self.transitions.encode(encoder.encode_descriptor(
            "dispatch_dash_trainjob_transitions",
            "Times a TrainJob's classification entered a state and cause.",
            None,
            MetricType::Counter,
        )?)?;
        let served_or_pending: BTreeSet<&String> = namespaces.iter().chain(oldest.keys()).collect();
        encode_gauges(
            encoder,
            "dispatch_dash_trainjob_oldest_pending_seconds",
            "How long the TrainJob pending longest has been pending, by namespace (0 when none is).",
            served_or_pending.into_iter().map(|ns| {
                let age = oldest
                    .get(ns)
                    .map_or(0, |since| now_unix.saturating_sub(*since).max(0));
                ([("namespace", ns.as_str())], age)
            }),
        )
    }
}

/// Encodes one gauge without labels.
pub fn encode_gauge(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: impl EncodeGaugeValue,
) -> fmt::Result {
    let gauge = ConstGauge::new(value);
    gauge.encode(encoder.encode_descriptor(name, help, None, gauge.metric_type())?)
}

/// Encodes one counter without labels; `name` is without `_total`, which
/// the encoder appends.
pub fn encode_counter(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    value: impl EncodeCounterValue,
) -> fmt::Result {
    let counter = ConstCounter::new(value);
    counter.encode(encoder.encode_descriptor(name, help, None, counter.metric_type())?)
}

/// Encodes a family of gauges, one series per label set.
pub fn encode_gauges<L: EncodeLabelSet, V: EncodeGaugeValue>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, V)>,
) -> fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in series {
        ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// Encodes a family of counters, one series per label set; `name` is
/// without `_total`.
pub fn encode_counters<L: EncodeLabelSet, V: EncodeCounterValue>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    series: impl IntoIterator<Item = (L, V)>,
) -> fmt::Result {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, value) in series {
        ConstCounter::new(value).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use classify_wasm::{Cause, ObjectRef};
    use prometheus_client::collector::Collector;
    use prometheus_client::registry::Registry;

    use super::super::history::{Change, HistoryKey};
    use super::*;

    /// 2026-12-01T09:00:00Z.
    const NOW: i64 = 1_796_115_600;

    #[derive(Debug)]
    struct Only(Arc<Metrics>, BTreeSet<String>);

    impl Collector for Only {
        fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
            self.0.encode(&mut encoder, &self.1, NOW)
        }
    }

    fn text(metrics: &Arc<Metrics>, namespaces: &[&str]) -> String {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Only(
            metrics.clone(),
            namespaces.iter().map(|n| n.to_string()).collect(),
        )));
        let mut out = String::new();
        prometheus_client::encoding::text::encode(&mut out, &registry).expect("encodes");
        out
    }

    fn trainjob(namespace: &str, name: &str, state: State, cause: CauseKind) -> Observation {
        Observation {
            object: ObjectRef {
                kind: "TrainJob".into(),
                namespace: namespace.into(),
                name: name.into(),
                uid: format!("uid-{name}"),
            },
            job: name.into(),
            submission: "1".into(),
            state,
            held: false,
            hold_instance: None,
            foreign: false,
            cause: Cause {
                kind: cause,
                provenance: None,
                detail: String::new(),
            },
            execution: None,
        }
    }

    fn entered(o: &Observation, previous: Option<(State, CauseKind)>) -> Entered {
        let change = |(state, cause)| Change {
            at_unix: NOW,
            state,
            cause,
            held: false,
        };
        Entered {
            key: HistoryKey::of(o),
            change: change((o.state, o.cause.kind)),
            previous: previous.map(change),
        }
    }

    fn value(text: &str, series: &str) -> Option<f64> {
        text.lines()
            .find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.parse().ok())
    }

    #[test]
    fn renders_counts_and_a_cumulative_histogram() {
        let metrics = Arc::new(Metrics::default());
        metrics.observe_latency(Duration::from_millis(3));
        metrics.observe_latency(Duration::from_millis(300));
        metrics.watch_restarts.fetch_add(2, Ordering::Relaxed);
        let text = text(&metrics, &[]);
        assert!(
            text.contains("dispatch_dash_watch_restarts_total 2"),
            "{text}"
        );
        assert!(text.contains("dispatch_dash_event_to_send_seconds_bucket{le=\"0.005\"} 1"));
        assert!(text.contains("dispatch_dash_event_to_send_seconds_bucket{le=\"0.5\"} 2"));
        assert!(text.contains("dispatch_dash_event_to_send_seconds_count 2"));
        assert!(text.ends_with("# EOF\n"), "OpenMetrics ends with EOF");
    }

    #[test]
    fn evictions_are_counted_by_bound() {
        let metrics = Arc::new(Metrics::default());
        metrics.count_replay_evictions(RingBound::Bytes, 2);
        metrics.count_replay_evictions(RingBound::Frames, 1);
        let text = text(&metrics, &[]);
        assert!(text.contains("dispatch_dash_replay_frames_evicted_total{bound=\"bytes\"} 2"));
        assert!(text.contains("dispatch_dash_replay_frames_evicted_total{bound=\"frames\"} 1"));
        assert!(text.contains("dispatch_dash_captured_pods_evicted_total{bound=\"total_bytes\"} 0"));
        assert!(text.contains("# TYPE dispatch_dash_captured_pods_evicted counter"));
    }

    #[test]
    fn trainjobs_are_counted_by_namespace_state_and_cause_and_orphans_are_not() {
        let metrics = Arc::new(Metrics::default());
        let running = trainjob("team-a", "a", State::Running, CauseKind::None);
        let mut orphan = trainjob("team-a", "pod-x", State::Running, CauseKind::None);
        orphan.object.kind = "Pod".into();
        metrics.replace_observations(&[], &[running.clone(), orphan], |_| None);
        let text1 = text(&metrics, &["team-a"]);
        let series =
            "dispatch_dash_trainjobs{namespace=\"team-a\",state=\"running\",cause=\"none\"}";
        assert_eq!(value(&text1, series), Some(1.0), "{text1}");
        assert_eq!(
            value(
                &text1,
                "dispatch_dash_observations{state=\"running\",cause=\"none\"}"
            ),
            Some(2.0)
        );
        let ended = trainjob("team-a", "a", State::Ended, CauseKind::OutOfMemory);
        metrics.replace_observations(&[running], &[ended], |_| None);
        let text2 = text(&metrics, &["team-a"]);
        assert_eq!(
            value(&text2, series),
            Some(0.0),
            "a served namespace keeps its zeros"
        );
        assert_eq!(
            value(
                &text2,
                "dispatch_dash_trainjobs{namespace=\"team-a\",state=\"ended\",cause=\"out-of-memory\"}"
            ),
            Some(1.0)
        );
    }

    #[test]
    fn a_namespace_no_longer_served_with_no_trainjob_loses_its_series() {
        let metrics = Arc::new(Metrics::default());
        let job = trainjob("gone", "a", State::Running, CauseKind::None);
        metrics.replace_observations(&[], std::slice::from_ref(&job), |_| None);
        metrics.replace_observations(&[job], &[], |_| None);
        assert!(text(&metrics, &["gone"]).contains("transitions_total{namespace=\"gone\""));
        let text = text(&metrics, &["team-a"]);
        assert!(
            !text.contains("dispatch_dash_trainjobs{namespace=\"gone\""),
            "{text}"
        );
        assert!(
            !text.contains("transitions_total{namespace=\"gone\""),
            "{text}"
        );
        assert!(!text.contains("dispatch_dash_trainjob_oldest_pending_seconds{namespace=\"gone\""));
    }

    #[test]
    fn each_entry_into_a_state_and_cause_counts_once_and_held_flips_do_not() {
        let metrics = Arc::new(Metrics::default());
        let running = trainjob("team-a", "a", State::Running, CauseKind::None);
        let ended = trainjob("team-a", "a", State::Ended, CauseKind::OutOfMemory);
        let series = "dispatch_dash_trainjob_transitions_total{namespace=\"team-a\",state=\"ended\",cause=\"out-of-memory\"}";
        // Before anything ended, the series is there at 0, so that
        // `increase()` sees the first failure.
        let text0 = text(&metrics, &["team-a"]);
        assert_eq!(value(&text0, series), Some(0.0), "{text0}");
        metrics.count_transitions(&[entered(&running, None)]);
        metrics.count_transitions(&[entered(&ended, Some((State::Running, CauseKind::None)))]);
        // Only `held` changed: the same state and cause.
        metrics.count_transitions(&[entered(
            &ended,
            Some((State::Ended, CauseKind::OutOfMemory)),
        )]);
        let mut orphan = ended.clone();
        orphan.object.kind = "Pod".into();
        metrics.count_transitions(&[entered(&orphan, None)]);
        let text1 = text(&metrics, &["team-a"]);
        assert_eq!(value(&text1, series), Some(1.0), "{text1}");
        assert_eq!(
            value(
                &text1,
                "dispatch_dash_trainjob_transitions_total{namespace=\"team-a\",state=\"running\",cause=\"none\"}"
            ),
            Some(1.0)
        );
        assert!(text1.contains("# TYPE dispatch_dash_trainjob_transitions counter"));
    }

    #[test]
    fn the_oldest_pending_age_is_per_namespace_and_zero_when_none_is_pending() {
        let metrics = Arc::new(Metrics::default());
        let young = trainjob("team-a", "young", State::Pending, CauseKind::None);
        let old = trainjob("team-a", "old", State::Pending, CauseKind::None);
        let since = |o: &Observation| {
            Some(if o.object.name == "old" {
                NOW - 900
            } else {
                NOW - 60
            })
        };
        metrics.replace_observations(&[], &[young], since);
        metrics.replace_observations(&[], std::slice::from_ref(&old), since);
        let series = |ns: &str| {
            format!("dispatch_dash_trainjob_oldest_pending_seconds{{namespace=\"{ns}\"}}")
        };
        let text1 = text(&metrics, &["team-a", "team-b"]);
        assert_eq!(value(&text1, &series("team-a")), Some(900.0), "{text1}");
        assert_eq!(value(&text1, &series("team-b")), Some(0.0));
        let running = trainjob("team-a", "old", State::Running, CauseKind::None);
        metrics.replace_observations(&[old], &[running], since);
        assert_eq!(
            value(&text(&metrics, &["team-a"]), &series("team-a")),
            Some(60.0)
        );
    }

    /// However many TrainJobs there are, and whatever they are called, the
    /// TrainJob series are bounded by namespaces × states × causes, and
    /// carry no label but those three.
    #[test]
    fn trainjob_series_are_bounded_by_namespaces_states_and_causes() {
        let metrics = Arc::new(Metrics::default());
        let causes = CauseKind::ALL;
        let namespaces = ["team-a", "team-b"];
        let mut jobs = Vec::new();
        for i in 0..5_000usize {
            let ns = namespaces[i % 2];
            let state = State::ALL[(i / 2) % State::ALL.len()];
            let cause = causes[(i / 13) % causes.len()];
            let job = trainjob(ns, &format!("job-{i}"), state, cause);
            metrics.count_transitions(&[entered(&job, None)]);
            jobs.push(job);
        }
        metrics.replace_observations(&[], &jobs, |_| Some(NOW - 5));
        let text = text(&metrics, &namespaces);
        let bound = namespaces.len() * State::ALL.len() * causes.len();
        for family in [
            "dispatch_dash_trainjobs{",
            "dispatch_dash_trainjob_transitions_total{",
            "dispatch_dash_trainjob_oldest_pending_seconds{",
        ] {
            let series: Vec<&str> = text.lines().filter(|l| l.starts_with(family)).collect();
            assert!(!series.is_empty(), "{family}");
            assert!(series.len() <= bound, "{family}: {} series", series.len());
            for line in series {
                let labels = &line[family.len()..line.find('}').expect("labels end")];
                let keys: Vec<&str> = labels
                    .split(',')
                    .map(|kv| kv.split('=').next().unwrap_or_default())
                    .collect();
                assert!(
                    keys == ["namespace", "state", "cause"] || keys == ["namespace"],
                    "{line}"
                );
                assert!(!line.contains("job-"), "no job name in {line}");
            }
        }
    }
}
