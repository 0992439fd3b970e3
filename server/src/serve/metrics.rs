//! The server's Prometheus metrics, rendered in the text exposition format.
//! Counters and gauges are atomics; the latency histogram has fixed buckets.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use classify_wasm::{CauseKind, Observation, State};

use super::store::{CaptureEvictions, Store};

/// Upper bounds (seconds) of the event-to-send latency histogram.
const LATENCY_BUCKETS: [f64; 12] = [
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

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

/// Every metric the server exports.
#[derive(Debug, Default)]
pub struct Metrics {
    observations: Mutex<BTreeMap<(State, CauseKind), i64>>,
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
    latency_buckets: [AtomicU64; LATENCY_BUCKETS.len()],
    latency_count: AtomicU64,
    latency_sum_micros: AtomicU64,
}

impl Metrics {
    /// Replaces one job's observations in the counts by state and cause.
    pub fn replace_observations(&self, old: &[Observation], new: &[Observation]) {
        let mut counts = self
            .observations
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        for o in old {
            *counts.entry((o.state, o.cause.kind)).or_default() -= 1;
        }
        for o in new {
            *counts.entry((o.state, o.cause.kind)).or_default() += 1;
        }
        counts.retain(|_, n| *n != 0);
    }

    /// Copies the store's counters and gauges.
    pub fn record_store(&self, store: &Store) {
        self.watch_restarts
            .store(store.watch_restarts(), Ordering::Relaxed);
        self.captured_pods
            .store(store.captured_count() as u64, Ordering::Relaxed);
        self.captured_bytes
            .store(store.captured_bytes() as u64, Ordering::Relaxed);
        *self
            .capture_evictions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner()) = store.capture_evictions();
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
        let secs = latency.as_secs_f64();
        for (bucket, bound) in self.latency_buckets.iter().zip(LATENCY_BUCKETS) {
            if secs <= bound {
                bucket.fetch_add(1, Ordering::Relaxed);
            }
        }
        self.latency_count.fetch_add(1, Ordering::Relaxed);
        self.latency_sum_micros
            .fetch_add(latency.as_micros() as u64, Ordering::Relaxed);
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = String::new();
        out.push_str("# HELP dispatch_dash_observations Observations by state and cause.\n");
        out.push_str("# TYPE dispatch_dash_observations gauge\n");
        let counts = self
            .observations
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
            .clone();
        for ((state, cause), n) in counts {
            let _ = writeln!(
                out,
                "dispatch_dash_observations{{state=\"{state}\",cause=\"{cause}\"}} {n}"
            );
        }
        let simple = [
            (
                "dispatch_dash_watch_restarts_total",
                "counter",
                "Watch streams that ended and were restarted.",
                &self.watch_restarts,
            ),
            (
                "dispatch_dash_captured_pods",
                "gauge",
                "Deleted pods whose last state is kept as evidence.",
                &self.captured_pods,
            ),
            (
                "dispatch_dash_captured_pod_bytes",
                "gauge",
                "Bytes held by captured pods.",
                &self.captured_bytes,
            ),
            (
                "dispatch_dash_replay_bytes",
                "gauge",
                "Bytes held by the change frames of every namespace's replay ring.",
                &self.replay_bytes,
            ),
            (
                "dispatch_dash_history_bytes",
                "gauge",
                "Bytes held by the observation history.",
                &self.history_bytes,
            ),
            (
                "dispatch_dash_sse_clients",
                "gauge",
                "Open server-sent event streams.",
                &self.sse_clients,
            ),
            (
                "dispatch_dash_sse_rejected_total",
                "counter",
                "SSE streams refused past the client cap.",
                &self.sse_rejected,
            ),
            (
                "dispatch_dash_sse_lagged_total",
                "counter",
                "SSE streams dropped because the client fell behind.",
                &self.sse_lagged,
            ),
        ];
        for (name, kind, help, value) in simple {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            let _ = writeln!(out, "{name} {}", value.load(Ordering::Relaxed));
        }
        let evictions = *self
            .capture_evictions
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let name = "dispatch_dash_captured_pods_evicted_total";
        let _ = writeln!(
            out,
            "# HELP {name} Captured pods evicted (or not kept) to stay within a bound.\n# TYPE {name} counter"
        );
        for (bound, n) in [
            ("trainjob_pods", evictions.trainjob_pods),
            ("trainjob_bytes", evictions.trainjob_bytes),
            ("total_pods", evictions.total_pods),
            ("total_bytes", evictions.total_bytes),
        ] {
            let _ = writeln!(out, "{name}{{bound=\"{bound}\"}} {n}");
        }
        let name = "dispatch_dash_replay_frames_evicted_total";
        let _ = writeln!(
            out,
            "# HELP {name} Change frames dropped from a namespace's replay ring to stay within a bound.\n# TYPE {name} counter"
        );
        for (bound, counter) in [
            ("frames", &self.replay_evicted_frames),
            ("bytes", &self.replay_evicted_bytes),
            ("total_bytes", &self.replay_evicted_total_bytes),
        ] {
            let _ = writeln!(
                out,
                "{name}{{bound=\"{bound}\"}} {}",
                counter.load(Ordering::Relaxed)
            );
        }
        let name = "dispatch_dash_event_to_send_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} Time from a watch event's arrival to its SSE send.\n# TYPE {name} histogram"
        );
        for (bucket, bound) in self.latency_buckets.iter().zip(LATENCY_BUCKETS) {
            let _ = writeln!(
                out,
                "{name}_bucket{{le=\"{bound}\"}} {}",
                bucket.load(Ordering::Relaxed)
            );
        }
        let count = self.latency_count.load(Ordering::Relaxed);
        let _ = writeln!(out, "{name}_bucket{{le=\"+Inf\"}} {count}");
        let _ = writeln!(
            out,
            "{name}_sum {}",
            self.latency_sum_micros.load(Ordering::Relaxed) as f64 / 1e6
        );
        let _ = writeln!(out, "{name}_count {count}");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counts_and_a_cumulative_histogram() {
        let metrics = Metrics::default();
        metrics.observe_latency(Duration::from_millis(3));
        metrics.observe_latency(Duration::from_millis(300));
        metrics.watch_restarts.fetch_add(2, Ordering::Relaxed);
        let text = metrics.render();
        assert!(text.contains("dispatch_dash_watch_restarts_total 2"));
        assert!(text.contains("dispatch_dash_event_to_send_seconds_bucket{le=\"0.005\"} 1"));
        assert!(text.contains("dispatch_dash_event_to_send_seconds_bucket{le=\"0.5\"} 2"));
        assert!(text.contains("dispatch_dash_event_to_send_seconds_count 2"));
    }

    #[test]
    fn evictions_are_counted_by_bound() {
        let metrics = Metrics::default();
        metrics.count_replay_evictions(RingBound::Bytes, 2);
        metrics.count_replay_evictions(RingBound::Frames, 1);
        let text = metrics.render();
        assert!(text.contains("dispatch_dash_replay_frames_evicted_total{bound=\"bytes\"} 2"));
        assert!(text.contains("dispatch_dash_replay_frames_evicted_total{bound=\"frames\"} 1"));
        assert!(text.contains("dispatch_dash_captured_pods_evicted_total{bound=\"total_bytes\"} 0"));
        assert!(text.contains("# TYPE dispatch_dash_captured_pods_evicted_total counter"));
    }
}
