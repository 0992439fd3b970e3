//! Watch streams: newline-delimited JSON events, bookmarks, expiry.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use futures::Stream;
use serde_json::{json, Value};
use tokio::sync::watch;
use tokio::time::Instant;

use crate::field;
use crate::kind::Kind;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::status_object;
use crate::store::{Emulator, Event, EventType};

/// Where a watch starts.
#[derive(Debug, Clone, Copy)]
pub(crate) enum WatchStart {
    /// Synthetic `ADDED` events for every object that exists, then changes.
    Initial,
    /// Changes after this resourceVersion.
    After(u64),
}

/// What a watch request asked for.
#[derive(Debug)]
pub(crate) struct WatchSpec {
    pub kind: Kind,
    /// The `apiVersion` of the request's path, which objects are sent at.
    pub api_version: String,
    pub namespace: Option<String>,
    pub labels: LabelSelector,
    pub fields: FieldSelector,
    pub start: WatchStart,
    pub timeout: Option<Duration>,
    pub bookmarks: bool,
    /// `sendInitialEvents=true`: mark the end of the initial events with a
    /// bookmark annotated `k8s.io/initial-events-end`.
    pub initial_events_end: bool,
}

impl WatchSpec {
    fn selects(&self, obj: &Value) -> bool {
        let ns_ok = self.namespace.as_deref().is_none_or(|ns| {
            obj.pointer("/metadata/namespace").and_then(Value::as_str) == Some(ns)
        });
        ns_ok && self.labels.matches(obj) && self.fields.matches(obj)
    }

    /// The event a watcher with this filter sees for `ev`, if any. An object
    /// that stops matching is `DELETED` for this watcher, one that starts
    /// matching is `ADDED`, as with the API server's watch cache.
    fn translate(&self, ev: &Event) -> Option<(&'static str, Arc<Value>)> {
        if ev.kind != self.kind {
            return None;
        }
        let now = self.selects(&ev.object);
        let before = ev.prev.as_deref().is_some_and(|p| self.selects(p));
        let ty = match (ev.ty, before, now) {
            (EventType::Added, _, true) => "ADDED",
            (EventType::Deleted, _, true) => "DELETED",
            (EventType::Modified, true, true) => "MODIFIED",
            (EventType::Modified, false, true) => "ADDED",
            (EventType::Modified, true, false) => "DELETED",
            _ => return None,
        };
        Some((ty, ev.object.clone()))
    }
}

fn line(ty: &str, object: &Value) -> Bytes {
    let mut s = json!({"type": ty, "object": object}).to_string();
    s.push('\n');
    Bytes::from(s)
}

/// An event line for `object`, sent at the watch's `apiVersion` (objects
/// are stored at one version and served at the one asked for).
fn object_line(ty: &str, kind: Kind, object: &Value, api_version: &str) -> Bytes {
    if object.get("apiVersion").and_then(Value::as_str) == Some(api_version) {
        return line(ty, object);
    }
    let object = kind.convert(object, crate::kind::version_of(api_version));
    line(ty, &object)
}

struct Watcher {
    emu: Emulator,
    spec: WatchSpec,
    last_rv: u64,
    pending: VecDeque<Bytes>,
    finished: bool,
    /// Yield a transport error (the connection is cut) before finishing.
    abort: bool,
    deadline: Option<Instant>,
    next_bookmark: Option<Instant>,
    rv_rx: watch::Receiver<u64>,
    expire_rx: watch::Receiver<u64>,
    drop_rx: watch::Receiver<u64>,
    kill_rx: watch::Receiver<bool>,
}

impl Watcher {
    fn bookmark(&self, annotations: Option<Value>) -> Bytes {
        let mut meta = json!({"resourceVersion": self.last_rv.to_string()});
        if let Some(a) = annotations {
            field::set(&mut meta, &["annotations"], a);
        }
        line(
            "BOOKMARK",
            &json!({
                "kind": self.spec.kind.name(),
                "apiVersion": self.spec.api_version,
                "metadata": meta,
            }),
        )
    }

    fn expired(&mut self, requested: u64, oldest: u64) {
        let status = status_object(
            410,
            "Expired",
            &format!("too old resource version: {requested} ({oldest})"),
        );
        self.pending.push_back(line("ERROR", &status));
        self.finished = true;
    }

    /// Queues every change since `last_rv` that this watch selects.
    fn catch_up(&mut self) {
        match self.emu.events_since(self.last_rv) {
            Ok((rv, events)) => {
                for ev in &events {
                    if let Some((ty, obj)) = self.spec.translate(ev) {
                        let event = object_line(ty, self.spec.kind, &obj, &self.spec.api_version);
                        self.pending.push_back(event);
                    }
                }
                self.last_rv = self.last_rv.max(rv);
            }
            Err(e) => self.expired(e.requested, e.oldest),
        }
    }

    fn start(&mut self) {
        match self.spec.start {
            WatchStart::Initial => {
                match self
                    .emu
                    .snapshot(self.spec.kind, self.spec.namespace.as_deref(), None)
                {
                    Ok((rv, items)) => {
                        for obj in items.iter().filter(|o| self.spec.selects(o)) {
                            let event =
                                object_line("ADDED", self.spec.kind, obj, &self.spec.api_version);
                            self.pending.push_back(event);
                        }
                        self.last_rv = rv;
                        if self.spec.initial_events_end {
                            let b =
                                self.bookmark(Some(json!({"k8s.io/initial-events-end": "true"})));
                            self.pending.push_back(b);
                        }
                    }
                    Err(e) => self.expired(e.requested, e.oldest),
                }
            }
            WatchStart::After(rv) => {
                self.last_rv = rv;
                self.catch_up();
            }
        }
    }

    /// Waits for something to send; false when the stream is over.
    async fn fill(&mut self) {
        let far = Instant::now() + Duration::from_secs(365 * 24 * 3600);
        let deadline = self.deadline.unwrap_or(far);
        let bookmark_at = self.next_bookmark.unwrap_or(far);
        tokio::select! {
            _ = tokio::time::sleep_until(deadline) => {
                self.finished = true;
            }
            _ = self.expire_rx.changed() => {
                self.finished = true;
            }
            _ = self.drop_rx.changed() => {
                self.finished = true;
                self.abort = true;
            }
            _ = self.kill_rx.changed() => {
                self.finished = true;
                self.abort = true;
            }
            _ = tokio::time::sleep_until(bookmark_at) => {
                self.catch_up();
                if !self.finished {
                    let b = self.bookmark(None);
                    self.pending.push_back(b);
                }
                self.next_bookmark = Some(Instant::now() + self.emu.config().bookmark_interval.max(Duration::from_millis(10)));
            }
            changed = self.rv_rx.changed() => {
                if changed.is_err() {
                    self.finished = true;
                } else {
                    self.catch_up();
                }
            }
        }
    }
}

/// The body of a watch response: a stream of newline-delimited JSON events.
/// It ends cleanly on `timeoutSeconds` or `expire_all_watches`, after a 410
/// `ERROR` event when the watcher fell out of the history, and with an error
/// (a cut connection) on `drop_connections` or server shutdown.
pub(crate) fn watch_response(
    emu: Emulator,
    spec: WatchSpec,
    kill_rx: watch::Receiver<bool>,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static {
    let now = Instant::now();
    let mut rv_rx = emu.inner.rv_tx.subscribe();
    rv_rx.mark_unchanged();
    let mut expire_rx = emu.inner.expire_tx.subscribe();
    expire_rx.mark_unchanged();
    let mut drop_rx = emu.inner.drop_tx.subscribe();
    drop_rx.mark_unchanged();
    let interval = emu
        .config()
        .bookmark_interval
        .max(Duration::from_millis(10));
    let mut w = Watcher {
        deadline: spec.timeout.map(|t| now + t),
        next_bookmark: spec
            .bookmarks
            .then(|| now + interval.min(Duration::from_secs(1))),
        emu,
        spec,
        last_rv: 0,
        pending: VecDeque::new(),
        finished: false,
        abort: false,
        rv_rx,
        expire_rx,
        drop_rx,
        kill_rx,
    };
    // Subscribed before reading the state, so no change can slip between.
    w.start();
    futures::stream::unfold(w, |mut w| async move {
        loop {
            if w.abort {
                w.abort = false;
                w.pending.clear();
                return Some((
                    Err(std::io::Error::new(
                        std::io::ErrorKind::ConnectionAborted,
                        "emulator dropped the connection",
                    )),
                    w,
                ));
            }
            if let Some(b) = w.pending.pop_front() {
                return Some((Ok(b), w));
            }
            if w.finished {
                return None;
            }
            w.fill().await;
        }
    })
}
