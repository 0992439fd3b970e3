//! Notifications straight from the server (`--notify-url-file`), for teams
//! without Alertmanager: a TrainJob that ends with any cause but
//! `completed`, or becomes `held`, is posted to each webhook, as a Slack
//! incoming-webhook body or as a documented JSON event (docs/monitoring.md).
//!
//! What notifies is decided from the history's transitions (the same ones
//! the transition counter counts), so with `--state-dir` a restart, even
//! after a kill -9, does not see old news as new: the history is written
//! before a notification is queued. In one run, each (TrainJob UID,
//! execution, state, cause) notifies once.
//!
//! Sending never blocks the watches or the streams: the hub only offers an
//! event to a queue bounded in events and in bytes, and one task sends,
//! with a timeout per request, and retries 5xx answers, 429 and connection
//! errors with exponential backoff and jitter. What is dropped or fails is
//! counted in `/metrics`.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use classify_wasm::{CauseKind, Observation, State};
use http_body_util::Full;
use hyper::body::Bytes;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use serde_json::json;
use tokio::sync::watch;

use super::auth::Secret;
use super::history::{rfc3339, unix_seconds};
use super::metrics::{encode_counter, encode_gauge};

/// Events settling or waiting to be sent, at most.
pub const QUEUE_EVENTS: usize = 1024;
/// Bytes of the events settling, at most.
pub const QUEUE_BYTES: usize = 4 * 1024 * 1024;
/// The time one request may take.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Tries of one event to one webhook, the first included.
pub const ATTEMPTS: u32 = 6;
/// (TrainJob UID, execution, state, cause) remembered as sent, at most.
const SENT_REMEMBERED: usize = 100_000;

/// `--notify-format`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Format {
    /// A Slack incoming-webhook body: `{"text": ...}`.
    Slack,
    /// The JSON event of docs/monitoring.md.
    Json,
}

/// Errors of reading the notification settings.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A URL file could not be read.
    #[error("{path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// A URL file does not hold one http(s) URL.
    #[error("{path}: line 1: {what}")]
    BadUrl {
        /// The file.
        path: PathBuf,
        /// What is wrong (never the URL itself: it is a secret).
        what: &'static str,
    },
    /// The HTTPS client could not load the system's roots.
    #[error("the system's TLS roots: {0}")]
    Roots(std::io::Error),
}

/// Where and how to notify.
#[derive(Debug, Clone)]
pub struct NotifyConfig {
    /// The webhooks (secrets: never logged).
    pub urls: Vec<Secret>,
    /// The body's format.
    pub format: Format,
    /// Only these namespaces notify (all when empty).
    pub namespaces: Vec<String>,
    /// Where links to the dashboard start (`--public-url`).
    pub public_url: String,
    /// How long news settles before it is sent (`--notify-settle`).
    pub settle: Duration,
    /// Also tell of a TrainJob pending longer than this
    /// (`--notify-pending-after`).
    pub pending_after: Option<Duration>,
}

/// Reads a webhook URL from `path`: its first line, trimmed.
pub fn read_url_file(path: &Path) -> Result<Secret, Error> {
    let text = std::fs::read_to_string(path).map_err(|source| Error::Read {
        path: path.to_path_buf(),
        source,
    })?;
    let url = text.lines().next().unwrap_or_default().trim();
    let bad = |what| Error::BadUrl {
        path: path.to_path_buf(),
        what,
    };
    if url.is_empty() {
        return Err(bad("the file is empty"));
    }
    let parsed: hyper::Uri = url.parse().map_err(|_| bad("not a URL"))?;
    match parsed.scheme_str() {
        Some("https" | "http") => {}
        _ => return Err(bad("the URL must start with https:// or http://")),
    }
    if parsed.host().is_none() {
        return Err(bad("the URL has no host"));
    }
    Ok(Secret::from(url))
}

/// One thing worth telling.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The TrainJob's observation now.
    pub observation: Observation,
    /// When the server saw it (Unix seconds).
    pub at_unix: i64,
    /// Since when the job has been in its state, as far as the history
    /// knows (Unix seconds): what `--notify-pending-after` is timed from.
    pub since_unix: i64,
}

/// The counters `/metrics` shows.
#[derive(Debug, Default)]
pub struct NotifyMetrics {
    sent: AtomicU64,
    failed: AtomicU64,
    dropped: AtomicU64,
    retries: AtomicU64,
    queued_bytes: AtomicUsize,
}

impl NotifyMetrics {
    /// Encodes them.
    pub fn encode(
        &self,
        encoder: &mut prometheus_client::encoding::DescriptorEncoder,
    ) -> fmt::Result {
        for (name, help, value) in [
            (
                "dispatch_dash_notifications_sent",
                "Notifications a webhook accepted.",
                &self.sent,
            ),
            (
                "dispatch_dash_notifications_failed",
                "Notifications given up on: refused, or still failing after every retry.",
                &self.failed,
            ),
            (
                "dispatch_dash_notifications_dropped",
                "Notifications dropped because the queue was full (in events or bytes).",
                &self.dropped,
            ),
            (
                "dispatch_dash_notification_retries",
                "Requests to a webhook tried again after a 5xx, a 429, a timeout or a connection error.",
                &self.retries,
            ),
        ] {
            encode_counter(encoder, name, help, value.load(Ordering::Relaxed))?;
        }
        encode_gauge(
            encoder,
            "dispatch_dash_notification_queue_bytes",
            "Bytes of the notifications waiting to be sent.",
            self.queued_bytes.load(Ordering::Relaxed) as u64,
        )
    }
}

type SentKey = (String, Option<(u64, u64)>, State, CauseKind);

/// A TrainJob's news while it settles.
#[derive(Debug)]
struct Settling {
    event: Event,
    /// When it is sent, if it is still news then.
    due: Instant,
}

/// What the notifier holds: bounded in count, and in bytes.
#[derive(Debug, Default)]
struct Held {
    /// By TrainJob UID.
    settling: BTreeMap<String, Settling>,
    /// Pending TrainJobs, by UID, timed for `--notify-pending-after`.
    pending: BTreeMap<String, Event>,
    /// Bytes of `settling` and `pending` together.
    settling_bytes: usize,
    sent: BTreeSet<SentKey>,
    sent_order: VecDeque<SentKey>,
}

/// The bytes an event holds (its strings; the rest is small and fixed).
fn event_bytes(event: &Event) -> usize {
    let o = &event.observation;
    o.object.namespace.len()
        + o.object.name.len()
        + o.object.uid.len()
        + o.object.kind.len()
        + o.job.len()
        + o.submission.len()
        + o.cause.detail.len()
        + 256
}

/// Decides what notifies and when. The hub offers every TrainJob
/// transition and never waits; the sender ([`Outbox`]) takes what is due.
///
/// A failure is often seen in steps: the TrainJob's `Failed` condition
/// before the pod that says why (two watches, two streams), so its cause
/// reads `unknown` for a moment, then `out-of-memory`. News therefore
/// settles (`--notify-settle`, from the first step) and the last word is
/// sent; a job that stopped being news meanwhile (it runs again) sends
/// nothing.
#[derive(Debug)]
pub struct Notifier {
    config: NotifyConfig,
    /// When this notifier began (Unix seconds): a job whose wait passed
    /// `--notify-pending-after` before it was told in an earlier run (or
    /// while none ran), not now.
    started_unix: i64,
    metrics: Arc<NotifyMetrics>,
    held: Mutex<Held>,
    wake: tokio::sync::Notify,
}

impl Notifier {
    /// A notifier, and the sender that takes its news.
    pub fn new(config: NotifyConfig) -> (Arc<Notifier>, Outbox) {
        let notifier = Arc::new(Notifier {
            config,
            started_unix: unix_seconds(SystemTime::now()),
            metrics: Arc::new(NotifyMetrics::default()),
            held: Mutex::default(),
            wake: tokio::sync::Notify::new(),
        });
        let outbox = Outbox {
            notifier: notifier.clone(),
        };
        (notifier, outbox)
    }

    /// The counters.
    pub fn metrics(&self) -> &Arc<NotifyMetrics> {
        &self.metrics
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a TrainJob's transition, seen at `now`: news starts (or
    /// updates) its settling; anything else ends it. Drops it (counted)
    /// when too much is settling already.
    pub fn offer(&self, event: Event, now: Instant) {
        let o = &event.observation;
        if o.object.kind != "TrainJob" {
            return;
        }
        if !self.config.namespaces.is_empty()
            && !self.config.namespaces.contains(&o.object.namespace)
        {
            return;
        }
        let mut held = self.held();
        let held = &mut *held;
        let uid = o.object.uid.clone();
        if let Some(old) = held.pending.remove(&uid) {
            held.settling_bytes -= event_bytes(&old);
        }
        if o.state == State::Pending && self.config.pending_after.is_some() {
            let bytes = event_bytes(&event);
            if held.settling.len() + held.pending.len() >= QUEUE_EVENTS
                || held.settling_bytes + bytes > QUEUE_BYTES
            {
                self.metrics.dropped.fetch_add(1, Ordering::Relaxed);
            } else {
                held.settling_bytes += bytes;
                held.pending.insert(uid.clone(), event.clone());
                self.wake.notify_one();
            }
        }
        if let Some(old) = held.settling.remove(&uid) {
            held.settling_bytes -= event_bytes(&old.event);
            if o.is_news() {
                let bytes = event_bytes(&event);
                held.settling_bytes += bytes;
                held.settling.insert(
                    uid,
                    Settling {
                        event,
                        due: old.due,
                    },
                );
            }
        } else if o.is_news() {
            let bytes = event_bytes(&event);
            if held.settling.len() + held.pending.len() >= QUEUE_EVENTS
                || held.settling_bytes + bytes > QUEUE_BYTES
            {
                self.metrics.dropped.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(
                    namespace = %o.object.namespace,
                    name = %o.object.name,
                    "too many notifications are waiting: one was dropped"
                );
                return;
            }
            held.settling_bytes += bytes;
            held.settling.insert(
                uid,
                Settling {
                    event,
                    due: now + self.config.settle,
                },
            );
            self.wake.notify_one();
        }
        self.metrics
            .queued_bytes
            .store(held.settling_bytes, Ordering::Relaxed);
    }

    /// The bodies of the news due at `now` (`now_unix` on the wall clock)
    /// that was not sent before, and when the next is due.
    fn take_due(&self, now: Instant, now_unix: i64) -> (Vec<Bytes>, Option<Instant>) {
        let mut held = self.held();
        let held = &mut *held;
        let mut ready: Vec<Event> = Vec::new();
        let due: Vec<String> = held
            .settling
            .iter()
            .filter(|(_, s)| s.due <= now)
            .map(|(uid, _)| uid.clone())
            .collect();
        for uid in due {
            if let Some(settled) = held.settling.remove(&uid) {
                held.settling_bytes -= event_bytes(&settled.event);
                ready.push(settled.event);
            }
        }
        let mut next = held.settling.values().map(|s| s.due).min();
        if let Some(after) = self.config.pending_after {
            let after = i64::try_from(after.as_secs()).unwrap_or(i64::MAX);
            let waited: Vec<String> = held
                .pending
                .iter()
                .filter(|(_, e)| e.since_unix.saturating_add(after) <= now_unix)
                .map(|(uid, _)| uid.clone())
                .collect();
            for uid in waited {
                if let Some(event) = held.pending.remove(&uid) {
                    held.settling_bytes -= event_bytes(&event);
                    if event.since_unix.saturating_add(after) >= self.started_unix {
                        ready.push(event);
                    }
                }
            }
            let first = held
                .pending
                .values()
                .map(|e| e.since_unix.saturating_add(after))
                .min();
            if let Some(at) = first {
                let wait = Duration::from_secs(u64::try_from(at - now_unix).unwrap_or(0));
                next = Some(next.map_or(now + wait, |n| n.min(now + wait)));
            }
        }
        let mut bodies = Vec::new();
        for event in ready {
            let o = &event.observation;
            let key: SentKey = (
                o.object.uid.clone(),
                o.execution.map(|e| (e.admission, e.restart_attempt)),
                o.state,
                o.cause.kind,
            );
            if !held.sent.insert(key.clone()) {
                continue;
            }
            held.sent_order.push_back(key);
            while held.sent_order.len() > SENT_REMEMBERED {
                if let Some(oldest) = held.sent_order.pop_front() {
                    held.sent.remove(&oldest);
                }
            }
            bodies.push(Bytes::from(body(
                self.config.format,
                &event,
                &self.config.public_url,
            )));
        }
        self.metrics
            .queued_bytes
            .store(held.settling_bytes, Ordering::Relaxed);
        (bodies, next)
    }
}

/// The link to a TrainJob's explanation.
pub fn link(public_url: &str, namespace: &str, name: &str) -> String {
    format!(
        "{public_url}/explain?ns={}&kind=TrainJob&name={}",
        encode_component(namespace),
        encode_component(name)
    )
}

fn encode_component(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// `team-a/llm-7b ended: out-of-memory (attempt 3) pod …: …`: the
/// engine's headline, then the cause's detail.
pub fn summary(event: &Event) -> String {
    let o = &event.observation;
    let mut text = o.headline();
    if o.state == State::Pending {
        text.push_str(&format!(" since {}", rfc3339(event.since_unix)));
    }
    if !o.cause.detail.is_empty() {
        text.push(' ');
        text.push_str(&o.cause.detail);
    }
    text
}

/// Slack reads `&`, `<` and `>` as markup: cluster text is escaped so it
/// stays text (Slack's "Escaping text" rules).
fn slack_escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// The body of one event.
pub fn body(format: Format, event: &Event, public_url: &str) -> Vec<u8> {
    let o = &event.observation;
    let link = link(public_url, &o.object.namespace, &o.object.name);
    let value = match format {
        Format::Slack => json!({
            "text": format!("{} <{}|explanation>", slack_escape(&summary(event)), link),
        }),
        Format::Json => json!({
            "namespace": o.object.namespace,
            "name": o.object.name,
            "uid": o.object.uid,
            "state": o.state.as_str(),
            "cause": o.cause.kind.as_str(),
            "detail": o.cause.detail,
            "execution": o.execution.map(|e| json!({
                "admission": e.admission,
                "restartAttempt": e.restart_attempt,
            })),
            "attempt": o.execution.map(|e| e.restart_attempt.saturating_add(1)),
            "at": rfc3339(event.at_unix),
            "since": rfc3339(event.since_unix),
            "link": link,
        }),
    };
    serde_json::to_vec(&value).unwrap_or_default()
}

/// The sender's side: one task that posts each settled event to each
/// webhook.
#[derive(Debug)]
pub struct Outbox {
    notifier: Arc<Notifier>,
}

/// The delay before try `attempt` (1 = the first retry): doubling from
/// 500 ms, at most 30 s, with full jitter below it (AWS's "full jitter").
pub fn backoff(attempt: u32, random: u64) -> Duration {
    let cap_ms = (500u64 << attempt.saturating_sub(1).min(6)).min(30_000);
    Duration::from_millis(cap_ms / 2 + random % (cap_ms / 2 + 1))
}

enum Sent {
    Accepted,
    Retry,
    Refused,
}

type HttpsClient = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// The outbox with its HTTPS client, ready to send.
#[derive(Debug)]
pub struct Connected {
    outbox: Outbox,
    client: HttpsClient,
}

impl Outbox {
    /// Builds the HTTPS client (with the system's roots).
    pub fn connect(self) -> Result<Connected, Error> {
        let https = hyper_rustls::HttpsConnectorBuilder::new()
            .with_native_roots()
            .map_err(Error::Roots)?
            .https_or_http()
            .enable_http1()
            .build();
        let client = Client::builder(TokioExecutor::new()).build(https);
        Ok(Connected {
            outbox: self,
            client,
        })
    }
}

impl Connected {
    /// Sends until shutdown.
    pub async fn run(self, mut shutdown: watch::Receiver<bool>) {
        let Connected { outbox, client } = self;
        let notifier = &outbox.notifier;
        loop {
            let (bodies, next) = notifier.take_due(Instant::now(), unix_seconds(SystemTime::now()));
            for body in &bodies {
                for url in &notifier.config.urls {
                    outbox.deliver(&client, url, body, &mut shutdown).await;
                }
            }
            if !bodies.is_empty() {
                // Sending took time: something may be due already.
                continue;
            }
            let wait = next.map_or(Duration::from_secs(3600), |at| {
                at.saturating_duration_since(Instant::now())
            });
            tokio::select! {
                _ = tokio::time::sleep(wait) => {}
                _ = notifier.wake.notified() => {}
                changed = shutdown.changed() => {
                    if changed.is_err() || *shutdown.borrow() {
                        // The worker ends with the server.
                        std::future::pending::<()>().await;
                    }
                }
            }
        }
    }
}

impl Outbox {
    async fn deliver<C>(
        &self,
        client: &Client<C, Full<Bytes>>,
        url: &Secret,
        body: &Bytes,
        shutdown: &mut watch::Receiver<bool>,
    ) where
        C: hyper_util::client::legacy::connect::Connect + Clone + Send + Sync + 'static,
    {
        for attempt in 0..ATTEMPTS {
            if attempt > 0 {
                self.notifier
                    .metrics
                    .retries
                    .fetch_add(1, Ordering::Relaxed);
                let delay = backoff(attempt, random());
                tokio::select! {
                    _ = tokio::time::sleep(delay) => {}
                    _ = shutdown.changed() => return,
                }
            }
            match post(client, url, body).await {
                Sent::Accepted => {
                    self.notifier.metrics.sent.fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Sent::Refused => break,
                Sent::Retry => {}
            }
        }
        self.notifier.metrics.failed.fetch_add(1, Ordering::Relaxed);
        // The URL is a secret: the log names no webhook.
        tracing::warn!("a notification could not be delivered");
    }
}

async fn post<C>(client: &Client<C, Full<Bytes>>, url: &Secret, body: &Bytes) -> Sent
where
    C: hyper_util::client::legacy::connect::Connect + Clone + Send + Sync + 'static,
{
    let Ok(request) = hyper::Request::post(url.expose())
        .header(hyper::header::CONTENT_TYPE, "application/json")
        .header(
            hyper::header::USER_AGENT,
            concat!("dispatch-dash/", env!("CARGO_PKG_VERSION")),
        )
        .body(Full::new(body.clone()))
    else {
        return Sent::Refused;
    };
    match tokio::time::timeout(REQUEST_TIMEOUT, client.request(request)).await {
        Ok(Ok(response)) => {
            let status = response.status();
            if status.is_success() {
                Sent::Accepted
            } else if status.is_server_error() || status == hyper::StatusCode::TOO_MANY_REQUESTS {
                Sent::Retry
            } else {
                Sent::Refused
            }
        }
        // A connection error or no answer in time.
        Ok(Err(_)) | Err(_) => Sent::Retry,
    }
}

fn random() -> u64 {
    let mut bytes = [0u8; 8];
    let _ = getrandom::fill(&mut bytes);
    u64::from_le_bytes(bytes)
}

#[cfg(test)]
mod tests {
    use classify_wasm::{Cause, Execution, ObjectRef, Provenance};

    use super::*;

    fn oom(name: &str) -> Observation {
        Observation {
            object: ObjectRef {
                kind: "TrainJob".into(),
                namespace: "team-a".into(),
                name: name.into(),
                uid: format!("uid-{name}"),
            },
            job: name.into(),
            submission: "1".into(),
            state: State::Ended,
            held: false,
            hold_instance: None,
            foreign: false,
            cause: Cause {
                kind: CauseKind::OutOfMemory,
                provenance: Some(Provenance::Pod),
                detail: "pod llm-7b-node-0-1: node container terminated: OOMKilled, exit code 137 <b>&</b>".into(),
            },
            execution: Some(Execution {
                admission: 1,
                restart_attempt: 2,
            }),
        }
    }

    const SETTLE: Duration = Duration::from_secs(5);

    fn notifier(format: Format, namespaces: &[&str]) -> Arc<Notifier> {
        Notifier::new(NotifyConfig {
            urls: vec![Secret::from("http://127.0.0.1:9/hook")],
            format,
            namespaces: namespaces.iter().map(|n| n.to_string()).collect(),
            public_url: "https://dash.example.com".into(),
            settle: SETTLE,
            pending_after: None,
        })
        .0
    }

    fn event(observation: Observation) -> Event {
        Event {
            observation,
            at_unix: 0,
            since_unix: 0,
        }
    }

    /// What is due at `at`, as JSON.
    fn due(notifier: &Notifier, at: Instant) -> Vec<serde_json::Value> {
        notifier
            .take_due(at, 0)
            .0
            .iter()
            .map(|b| serde_json::from_slice(b).expect("json"))
            .collect()
    }

    #[test]
    fn a_slack_body_says_who_what_which_attempt_and_links_the_explanation() {
        let event = Event {
            observation: oom("llm-7b"),
            at_unix: 0,
            since_unix: 0,
        };
        let body: serde_json::Value =
            serde_json::from_slice(&body(Format::Slack, &event, "https://dash.example.com"))
                .expect("json");
        assert_eq!(
            body["text"],
            "team-a/llm-7b ended: out-of-memory (attempt 3) pod llm-7b-node-0-1: node container \
             terminated: OOMKilled, exit code 137 &lt;b&gt;&amp;&lt;/b&gt; \
             <https://dash.example.com/explain?ns=team-a&kind=TrainJob&name=llm-7b|explanation>"
        );
    }

    #[test]
    fn a_json_event_carries_the_documented_fields() {
        let event = Event {
            observation: oom("llm 7b"),
            at_unix: 1_796_115_600,
            since_unix: 1_796_115_600,
        };
        let body: serde_json::Value =
            serde_json::from_slice(&body(Format::Json, &event, "https://d.example")).expect("json");
        assert_eq!(body["namespace"], "team-a");
        assert_eq!(body["name"], "llm 7b");
        assert_eq!(body["uid"], "uid-llm 7b");
        assert_eq!(body["state"], "ended");
        assert_eq!(body["cause"], "out-of-memory");
        assert_eq!(body["execution"]["admission"], 1);
        assert_eq!(body["execution"]["restartAttempt"], 2);
        assert_eq!(body["attempt"], 3);
        assert_eq!(body["at"], "2026-12-01T09:00:00Z");
        assert_eq!(
            body["link"],
            "https://d.example/explain?ns=team-a&kind=TrainJob&name=llm%207b"
        );
    }

    #[test]
    fn each_uid_execution_state_and_cause_notifies_once() {
        let notifier = notifier(Format::Json, &[]);
        let t0 = Instant::now();
        notifier.offer(event(oom("a")), t0);
        assert!(due(&notifier, t0).is_empty(), "it settles first");
        assert_eq!(due(&notifier, t0 + SETTLE).len(), 1);
        // The same news again, later: not sent twice.
        notifier.offer(event(oom("a")), t0 + SETTLE);
        assert!(due(&notifier, t0 + 3 * SETTLE).is_empty());
        // The next attempt's failure is news of its own.
        let mut next = oom("a");
        next.execution = Some(Execution {
            admission: 1,
            restart_attempt: 3,
        });
        notifier.offer(event(next), t0 + 3 * SETTLE);
        let sent = due(&notifier, t0 + 4 * SETTLE);
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0]["attempt"], 4);
    }

    #[test]
    fn a_failure_seen_in_steps_sends_its_last_word_once() {
        let notifier = notifier(Format::Json, &[]);
        let t0 = Instant::now();
        let mut unknown = oom("a");
        unknown.cause.kind = CauseKind::Unknown;
        unknown.cause.detail = "no pod evidence was captured".into();
        notifier.offer(event(unknown), t0);
        notifier.offer(event(oom("a")), t0 + Duration::from_secs(1));
        // Settling counts from the first step, not the last.
        let sent = due(&notifier, t0 + SETTLE);
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0]["cause"], "out-of-memory");
    }

    #[test]
    fn a_job_that_is_no_news_by_the_time_it_settles_sends_nothing() {
        let notifier = notifier(Format::Json, &[]);
        let t0 = Instant::now();
        notifier.offer(event(oom("a")), t0);
        let mut running = oom("a");
        running.state = State::Running;
        running.cause.kind = CauseKind::None;
        notifier.offer(event(running), t0 + Duration::from_secs(1));
        assert!(due(&notifier, t0 + SETTLE).is_empty());
        assert_eq!(notifier.metrics.queued_bytes.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn completed_running_and_filtered_namespaces_do_not_notify_and_held_does() {
        let notifier = notifier(Format::Json, &["team-a"]);
        let mut completed = oom("done");
        completed.cause.kind = CauseKind::Completed;
        let mut running = oom("run");
        running.state = State::Running;
        running.cause.kind = CauseKind::None;
        let mut elsewhere = oom("b");
        elsewhere.object.namespace = "team-b".into();
        let mut held = oom("h");
        held.state = State::Held;
        held.cause.kind = CauseKind::None;
        let t0 = Instant::now();
        for o in [completed, running, elsewhere, held] {
            notifier.offer(event(o), t0);
        }
        let sent = due(&notifier, t0 + SETTLE);
        assert_eq!(sent.len(), 1, "{sent:?}");
        assert_eq!(sent[0]["state"], "held");
    }

    #[test]
    fn too_much_settling_drops_and_counts_and_never_waits() {
        let notifier = notifier(Format::Json, &[]);
        let t0 = Instant::now();
        for i in 0..QUEUE_EVENTS + 10 {
            notifier.offer(event(oom(&format!("job-{i}"))), t0);
        }
        assert_eq!(notifier.metrics.dropped.load(Ordering::Relaxed), 10);
        let bytes = notifier.metrics.queued_bytes.load(Ordering::Relaxed);
        assert!(bytes > 0 && bytes <= QUEUE_BYTES, "{bytes}");
        // A huge detail is bounded by bytes too.
        let mut huge = oom("huge");
        huge.cause.detail = "x".repeat(QUEUE_BYTES);
        notifier.offer(event(huge), t0);
        assert_eq!(notifier.metrics.dropped.load(Ordering::Relaxed), 11);
        assert_eq!(due(&notifier, t0 + SETTLE).len(), QUEUE_EVENTS);
        assert_eq!(notifier.metrics.queued_bytes.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_job_pending_longer_than_the_threshold_is_told_once_from_when_it_began() {
        let (notifier, _) = Notifier::new(NotifyConfig {
            urls: vec![Secret::from("http://127.0.0.1:9/hook")],
            format: Format::Json,
            namespaces: Vec::new(),
            public_url: "https://d.example".into(),
            settle: SETTLE,
            pending_after: Some(Duration::from_secs(3600)),
        });
        let start = notifier.started_unix;
        let t0 = Instant::now();
        let mut waiting = oom("q");
        waiting.state = State::Pending;
        waiting.cause.kind = CauseKind::None;
        let pending = |since: i64| Event {
            observation: waiting.clone(),
            at_unix: start,
            since_unix: since,
        };
        // Pending for 10 minutes when first seen: due 50 minutes on.
        notifier.offer(pending(start - 600), t0);
        let (none, next) = notifier.take_due(t0, start);
        assert!(none.is_empty());
        assert_eq!(next, Some(t0 + Duration::from_secs(3000)));
        let (sent, _) = notifier.take_due(t0, start + 3000);
        assert_eq!(sent.len(), 1);
        let body: serde_json::Value = serde_json::from_slice(&sent[0]).expect("json");
        assert_eq!(body["state"], "pending");
        assert_eq!(body["since"], rfc3339(start - 600));
        // Seen again (a restart's first look): told once only.
        notifier.offer(pending(start - 600), t0);
        assert!(notifier.take_due(t0, start + 9000).0.is_empty());
        // Admitted before the hour: nothing.
        let mut other = waiting.clone();
        other.object.uid = "uid-r".into();
        let mut admitted = other.clone();
        admitted.state = State::Running;
        notifier.offer(
            Event {
                observation: other,
                at_unix: start,
                since_unix: start,
            },
            t0,
        );
        notifier.offer(
            Event {
                observation: admitted,
                at_unix: start,
                since_unix: start,
            },
            t0,
        );
        assert!(notifier.take_due(t0, start + 7200).0.is_empty());
        assert_eq!(notifier.metrics.queued_bytes.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn a_wait_that_passed_the_threshold_before_this_run_began_is_not_told_again() {
        let (notifier, _) = Notifier::new(NotifyConfig {
            urls: Vec::new(),
            format: Format::Json,
            namespaces: Vec::new(),
            public_url: String::new(),
            settle: SETTLE,
            pending_after: Some(Duration::from_secs(3600)),
        });
        let start = notifier.started_unix;
        let mut waiting = oom("q");
        waiting.state = State::Pending;
        waiting.cause.kind = CauseKind::None;
        // Pending for two hours when this run first sees it (restored
        // history): the run before told it, or none ran to tell it.
        notifier.offer(
            Event {
                observation: waiting,
                at_unix: start,
                since_unix: start - 7200,
            },
            Instant::now(),
        );
        assert!(notifier.take_due(Instant::now(), start).0.is_empty());
    }

    #[test]
    fn the_backoff_doubles_to_a_cap_with_jitter_below_it() {
        assert!(backoff(1, 0) >= Duration::from_millis(250));
        assert!(backoff(1, u64::MAX) <= Duration::from_millis(500));
        assert!(backoff(3, 0) >= Duration::from_millis(1000));
        assert!(backoff(30, u64::MAX) <= Duration::from_secs(30));
        assert_ne!(backoff(4, 1), backoff(4, 977), "jittered");
    }

    #[test]
    fn a_url_file_holds_one_http_url_and_errors_never_show_it() {
        let dir = std::env::temp_dir().join(format!("dd-notify-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let good = dir.join("good");
        std::fs::write(&good, "https://hooks.example.com/T0/B0/secret-part\n").expect("write");
        let url = read_url_file(&good).expect("good");
        assert_eq!(url.expose(), "https://hooks.example.com/T0/B0/secret-part");
        assert_eq!(format!("{url:?}"), "[redacted]");
        let bad = dir.join("bad");
        std::fs::write(&bad, "ftp://secret-part\n").expect("write");
        let error = read_url_file(&bad).expect_err("bad").to_string();
        assert!(
            error.contains("line 1") && error.contains("https://"),
            "{error}"
        );
        assert!(!error.contains("secret-part"), "{error}");
        assert!(read_url_file(&dir.join("missing")).is_err());
        let _ = std::fs::remove_dir_all(&dir);
    }
}
