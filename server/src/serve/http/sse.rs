//! The two server-sent event streams (a namespace's `snapshots`, one job's
//! `watch`), the slots that cap them, and the re-check that ends a stream
//! whose caller lost access.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Path, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::Extension;
use classify_wasm::Observation;
use tokio::sync::{broadcast, watch};

use super::api::watched;
use super::session::{client_ip, Caller};
use super::{AppError, AppState};
use crate::serve::auth::{AuthMode, Spend};
use crate::serve::hub::{encode_event, Hub, JobNews, LiveFrames};
use crate::serve::queues;

/// How often an idle SSE stream sends a comment, so proxies keep it open.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// The caps on open SSE streams: in all, and per client address (so one
/// client cannot take every slot).
#[derive(Debug)]
pub struct StreamSlots {
    max_total: usize,
    max_per_client: usize,
    open: Mutex<OpenStreams>,
}

#[derive(Debug, Default)]
struct OpenStreams {
    total: usize,
    /// Only addresses with an open stream have an entry, so the map holds at
    /// most `max_total` entries.
    by_client: HashMap<IpAddr, usize>,
}

/// Why a stream was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamRefusal {
    /// Every slot is taken.
    Full,
    /// This client address holds its share.
    ClientFull,
}

impl StreamSlots {
    /// Caps of `max_total` streams, `max_per_client` of them per address.
    pub fn new(max_total: usize, max_per_client: usize) -> Self {
        StreamSlots {
            max_total,
            max_per_client,
            open: Mutex::new(OpenStreams::default()),
        }
    }

    fn open(&self) -> std::sync::MutexGuard<'_, OpenStreams> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes a slot for `client` (`None`: a caller without an address, such
    /// as an in-process test, which only the total cap applies to).
    pub fn acquire(&self, client: Option<IpAddr>) -> Result<(), StreamRefusal> {
        let mut open = self.open();
        if open.total >= self.max_total {
            return Err(StreamRefusal::Full);
        }
        if let Some(ip) = client {
            let held = open.by_client.entry(ip).or_insert(0);
            if *held >= self.max_per_client {
                if *held == 0 {
                    open.by_client.remove(&ip);
                }
                return Err(StreamRefusal::ClientFull);
            }
            *held += 1;
        }
        open.total += 1;
        Ok(())
    }

    /// Gives back a slot taken with [`StreamSlots::acquire`].
    pub fn release(&self, client: Option<IpAddr>) {
        let mut open = self.open();
        open.total = open.total.saturating_sub(1);
        if let Some(ip) = client {
            if let Some(held) = open.by_client.get_mut(&ip) {
                *held -= 1;
                if *held == 0 {
                    open.by_client.remove(&ip);
                }
            }
        }
    }

    /// Streams open now.
    pub fn total(&self) -> usize {
        self.open().total
    }

    /// Client addresses holding a stream now.
    pub fn clients(&self) -> usize {
        self.open().by_client.len()
    }
}

/// Holds an SSE slot for as long as the stream lives.
struct StreamGuard {
    state: AppState,
    client: Option<IpAddr>,
}

impl StreamGuard {
    fn acquire(state: &AppState, client: Option<IpAddr>) -> Result<StreamGuard, AppError> {
        if let Err(refusal) = state.streams.acquire(client) {
            state
                .hub
                .metrics
                .sse_rejected
                .fetch_add(1, Ordering::Relaxed);
            return Err(match refusal {
                StreamRefusal::Full => AppError::TooManyStreams,
                StreamRefusal::ClientFull => AppError::TooManyStreamsFromClient,
            });
        }
        state
            .hub
            .metrics
            .sse_clients
            .fetch_add(1, Ordering::Relaxed);
        Ok(StreamGuard {
            state: state.clone(),
            client,
        })
    }
}

impl Drop for StreamGuard {
    fn drop(&mut self) {
        self.state.streams.release(self.client);
        self.state
            .hub
            .metrics
            .sse_clients
            .fetch_sub(1, Ordering::Relaxed);
    }
}

fn sse_response(body: Body) -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/event-stream"),
            (header::CACHE_CONTROL, "no-cache"),
        ],
        body,
    )
        .into_response()
}

const KEEP_ALIVE_COMMENT: &[u8] = b": keep-alive\n\n";

/// Re-checks, every [`crate::serve::auth::AuthConfig::recheck_interval`], that a stream's
/// caller may still see its namespace, on a task of its own (so a busy
/// stream cannot starve it); [`revoked`] completes when they may not (or
/// the check cannot be made: it fails closed). Aborted with the stream.
///
/// In every mode with an identity: a stream opened with a session cookie
/// ends once that session does (signed out, or expired), within one
/// interval, and each re-check counts as the session's use, so a dashboard
/// left open is not signed out for idling.
struct AccessWatch {
    revoked: tokio::sync::oneshot::Receiver<()>,
    task: tokio::task::JoinHandle<()>,
}

impl AccessWatch {
    fn start(state: &AppState, caller: Option<Caller>, namespace: &str) -> Option<AccessWatch> {
        let caller = caller?;
        if state.auth.mode() == AuthMode::None {
            return None;
        }
        let auth = state.auth.clone();
        let sessions = state.sessions.clone();
        let namespace = namespace.to_string();
        let (tx, revoked) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(async move {
            let interval = auth.config().recheck_interval;
            let mut timer =
                tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                timer.tick().await;
                // Answers older than one interval are asked again, so a
                // revocation ends the stream within two intervals.
                let max_age = Some(interval);
                let session_lives = caller.session.as_ref().is_none_or(|id| {
                    sessions
                        .token(id.expose(), std::time::Instant::now())
                        .is_some_and(|token| token == caller.token)
                });
                let token = caller.token.expose();
                let allowed = session_lives
                    && match auth.authenticate(token, max_age, None).await {
                        Ok(identity) => auth
                            .may_see_namespace(
                                token,
                                &identity,
                                &namespace,
                                max_age,
                                Spend::Recheck,
                            )
                            .await
                            .unwrap_or(false),
                        Err(_) => false,
                    };
                if !allowed {
                    let _ = tx.send(());
                    return;
                }
            }
        });
        Some(AccessWatch { revoked, task })
    }
}

impl Drop for AccessWatch {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Completes when the stream's caller lost access (never without a watch).
async fn revoked(access: &mut Option<AccessWatch>) {
    match access {
        // A dropped sender (the task ended) counts as revoked: fail closed.
        Some(watch) => {
            let _ = (&mut watch.revoked).await;
        }
        None => std::future::pending::<()>().await,
    }
}

/// How often a stream's queue facts are read again: Kueue's visibility
/// API is asked at most this often per LocalQueue (`serve::positions`), and
/// a frame is sent only when the facts differ from the last sent.
const QUEUE_FACTS_EVERY: Duration = Duration::from_secs(5);

/// Sends a stream's `queues` frames, on a task of its own: computing them
/// asks for reviews and positions, which a stream busy with changes would
/// otherwise cancel before they finish. Aborted with the stream.
struct QueueFeed {
    frames: tokio::sync::mpsc::Receiver<Bytes>,
    task: tokio::task::JoinHandle<()>,
}

impl QueueFeed {
    fn start(state: &AppState, caller: Option<Caller>, namespace: &str) -> QueueFeed {
        let state = state.clone();
        let namespace = namespace.to_string();
        // One frame waits at most: a newer one is computed at the next tick.
        let (tx, frames) = tokio::sync::mpsc::channel(1);
        let task = tokio::spawn(async move {
            let mut timer = tokio::time::interval(QUEUE_FACTS_EVERY);
            timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut said = queues::FeedState::default();
            loop {
                timer.tick().await;
                let (mut gathered, held) = state.hub.with_store(|store| {
                    (
                        queues::gather_namespace(store, &namespace, queues::FRAME_MAX_JOBS),
                        queues::hold_boards(store, &namespace),
                    )
                });
                state.hub.remember_preemptors(&mut gathered.0);
                let caller = caller.as_ref().map(|c| (c.token.expose(), &c.identity));
                // A review that cannot be made now is asked again next tick;
                // the page keeps the facts it has.
                let Ok(frame) =
                    queues::frame_for(gathered, &state.positions, &state.auth, caller).await
                else {
                    continue;
                };
                let Ok(boards) = queues::boards_for(held, &state.auth, caller).await else {
                    continue;
                };
                let Some(text) = said.next(frame, boards) else {
                    continue;
                };
                if tx.send(encode_event(None, "queues", &text)).await.is_err() {
                    return;
                }
            }
        });
        QueueFeed { frames, task }
    }
}

impl Drop for QueueFeed {
    fn drop(&mut self) {
        self.task.abort();
    }
}

struct SnapshotStream {
    /// The start: a `rows` and a `snapshot` event's first piece, or a
    /// resume's changes.
    backlog: VecDeque<Bytes>,
    /// The rest of the `snapshot` event, shared by every client of the same
    /// start (not copied per client).
    snapshot_rest: SnapshotRest,
    live: LiveFrames,
    shutdown: watch::Receiver<bool>,
    keep_alive: tokio::time::Interval,
    access: Option<AccessWatch>,
    queues: QueueFeed,
    _guard: StreamGuard,
}

/// About how many bytes of a snapshot's pieces go out as one chunk: the
/// connection's buffer (`listen.rs`). A piece is one object, a few hundred
/// bytes: sent one by one, a thousand clients joining at once cost millions
/// of polls. Gathered, each client copies a chunk at a time and holds at
/// most its buffer and one chunk more. Smaller chunks cost latency: at
/// 16 KiB the load bench's write-to-SSE p99 was half again as long.
const SNAPSHOT_CHUNK: usize = 64 << 10;

/// The pieces of a `snapshot` event still to send, and how many were.
struct SnapshotRest {
    pieces: Arc<[Bytes]>,
    sent: usize,
}

impl SnapshotRest {
    fn new(pieces: Arc<[Bytes]>) -> Self {
        SnapshotRest { pieces, sent: 0 }
    }

    /// The next chunk to send ([`snapshot_chunk`]); `None` once all are.
    fn next_chunk(&mut self) -> Option<Bytes> {
        let (chunk, next) = snapshot_chunk(&self.pieces, self.sent)?;
        self.sent = next;
        if next >= self.pieces.len() {
            // Sent: let the start go. Its pieces are the store's texts as
            // they were; a stream that kept them would keep every object
            // the namespace has changed since, for as long as it is open.
            *self = SnapshotRest::new(Arc::new([]));
        }
        Some(chunk)
    }
}

/// The chunk of `pieces` from `from` on, and where the next begins: the
/// piece alone when it is [`SNAPSHOT_CHUNK`] or more, else the pieces that
/// fit in it, copied together.
fn snapshot_chunk(pieces: &[Bytes], from: usize) -> Option<(Bytes, usize)> {
    let rest = pieces.get(from..)?;
    let first = rest.first()?;
    if first.len() >= SNAPSHOT_CHUNK {
        return Some((first.clone(), from + 1));
    }
    let mut chunk: Vec<u8> = Vec::with_capacity(SNAPSHOT_CHUNK);
    let mut next = from;
    for piece in rest {
        if !chunk.is_empty() && chunk.len() + piece.len() > SNAPSHOT_CHUNK {
            break;
        }
        chunk.extend_from_slice(piece);
        next += 1;
    }
    Some((Bytes::from(chunk), next))
}

pub(super) async fn snapshots(
    State(state): State<AppState>,
    Path(ns): Path<String>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    caller: Option<Extension<Caller>>,
    headers: HeaderMap,
) -> Result<Response, AppError> {
    watched(&state, &ns)?;
    let guard = StreamGuard::acquire(&state, client_ip(peer))?;
    let last_event_id = headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    let subscription = state
        .hub
        .subscribe_snapshots(&ns, last_event_id)
        .ok_or(AppError::NamespaceNotWatched)?;
    let hub = state.hub.clone();
    let caller = caller.map(|Extension(c)| c);
    let stream = SnapshotStream {
        backlog: (subscription.rows.into_iter())
            .chain(subscription.backlog.into_iter().map(|frame| frame.bytes))
            .collect(),
        snapshot_rest: SnapshotRest::new(subscription.snapshot_rest),
        live: subscription.live,
        shutdown: state.shutdown.clone(),
        keep_alive: keep_alive_timer(),
        queues: QueueFeed::start(&state, caller.clone(), &ns),
        access: AccessWatch::start(&state, caller, &ns),
        _guard: guard,
    };
    let body = futures::stream::unfold(stream, move |mut s| {
        let hub = hub.clone();
        async move {
            if let Some(bytes) = s.backlog.pop_front() {
                return Some((Ok::<Bytes, Infallible>(bytes), s));
            }
            if let Some(chunk) = s.snapshot_rest.next_chunk() {
                return Some((Ok(chunk), s));
            }
            tokio::select! {
                received = s.live.recv() => match received {
                    Ok(frame) => {
                        hub.metrics.observe_latency(frame.born.elapsed());
                        Some((Ok(frame.bytes), s))
                    }
                    Err(broadcast::error::RecvError::Lagged(_)) => {
                        // Too slow: drop it; it resumes with Last-Event-ID.
                        hub.metrics.sse_lagged.fetch_add(1, Ordering::Relaxed);
                        None
                    }
                    Err(broadcast::error::RecvError::Closed) => None,
                },
                Some(frame) = s.queues.frames.recv() => Some((Ok(frame), s)),
                _ = s.keep_alive.tick() => Some((Ok(Bytes::from_static(KEEP_ALIVE_COMMENT)), s)),
                _ = shutting_down(&mut s.shutdown) => None,
                _ = revoked(&mut s.access) => None,
            }
        }
    });
    Ok(sse_response(Body::from_stream(body)))
}

/// Completes when the server shuts down (never, if it has no shutdown
/// signal any more).
async fn shutting_down(shutdown: &mut watch::Receiver<bool>) {
    if shutdown.wait_for(|down| *down).await.is_err() {
        std::future::pending::<()>().await;
    }
}

fn keep_alive_timer() -> tokio::time::Interval {
    let mut timer = tokio::time::interval_at(tokio::time::Instant::now() + KEEP_ALIVE, KEEP_ALIVE);
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    timer
}

/// An observation's identity, for "differs from the last one sent".
fn object_key(o: &Observation) -> (String, String, String) {
    (
        o.object.kind.clone(),
        o.object.name.clone(),
        o.object.uid.clone(),
    )
}

struct JobStream {
    hub: Arc<Hub>,
    namespace: String,
    job: String,
    sent: HashMap<(String, String, String), Observation>,
    pending: VecDeque<Bytes>,
    next_id: u64,
    news: broadcast::Receiver<JobNews>,
    shutdown: watch::Receiver<bool>,
    keep_alive: tokio::time::Interval,
    access: Option<AccessWatch>,
    _guard: StreamGuard,
}

impl JobStream {
    /// Queues every observation that differs from the last one sent.
    fn refresh(&mut self) {
        let observations = self.hub.find(&self.namespace, &self.job);
        for o in observations.iter() {
            let key = object_key(o);
            if self.sent.get(&key) == Some(o) {
                continue;
            }
            let data = serde_json::to_string(o).unwrap_or_default();
            self.pending
                .push_back(encode_event(Some(self.next_id), "observation", &data));
            self.next_id += 1;
            self.sent.insert(key, o.clone());
        }
    }
}

pub(super) async fn watch_job(
    State(state): State<AppState>,
    Path((ns, job)): Path<(String, String)>,
    peer: Option<Extension<ConnectInfo<SocketAddr>>>,
    caller: Option<Extension<Caller>>,
) -> Result<Response, AppError> {
    watched(&state, &ns)?;
    let guard = StreamGuard::acquire(&state, client_ip(peer))?;
    let access = AccessWatch::start(&state, caller.map(|Extension(c)| c), &ns);
    // Subscribe before the first Find so no change falls in between.
    let news = state.hub.subscribe_news();
    let mut stream = JobStream {
        hub: state.hub.clone(),
        namespace: ns,
        job,
        sent: HashMap::new(),
        pending: VecDeque::new(),
        next_id: 1,
        news,
        shutdown: state.shutdown.clone(),
        keep_alive: keep_alive_timer(),
        access,
        _guard: guard,
    };
    stream.refresh();
    let body = futures::stream::unfold(stream, |mut s| async move {
        loop {
            if let Some(bytes) = s.pending.pop_front() {
                return Some((Ok::<Bytes, Infallible>(bytes), s));
            }
            tokio::select! {
                news = s.news.recv() => match news {
                    Ok(JobNews::Changed(jobs)) => {
                        if jobs.contains(&(s.namespace.clone(), s.job.clone())) {
                            s.refresh();
                        }
                    }
                    // Missed news: compare against a fresh Find.
                    Err(broadcast::error::RecvError::Lagged(_)) => s.refresh(),
                    Ok(JobNews::WatchInterrupted(scope)) => {
                        if scope.as_ref().is_none_or(|ns| *ns == s.namespace) {
                            // Section 12: the stream closes; the caller
                            // subscribes again.
                            return None;
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                },
                _ = s.keep_alive.tick() => {
                    return Some((Ok(Bytes::from_static(KEEP_ALIVE_COMMENT)), s));
                }
                _ = shutting_down(&mut s.shutdown) => return None,
                _ = revoked(&mut s.access) => return None,
            }
        }
    });
    Ok(sse_response(Body::from_stream(body)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The chunks put together are the pieces put together; a chunk of
    /// several pieces stays within the bound; a big piece goes alone, as it
    /// is (no copy).
    #[test]
    fn snapshot_pieces_go_out_in_bounded_chunks() {
        let mut rng = test_support::Rng::new(11);
        for _ in 0..50 {
            let pieces: Vec<Bytes> = (0..rng.below(300))
                .map(|i| {
                    let len = match rng.below(20) {
                        0 => SNAPSHOT_CHUNK + rng.below(1000),
                        _ => rng.below(900),
                    };
                    Bytes::from(vec![b'a' + (i % 26) as u8; len])
                })
                .collect();
            let mut sent = Vec::new();
            let mut at = 0;
            while let Some((chunk, next)) = snapshot_chunk(&pieces, at) {
                assert!(next > at, "progress");
                if next - at > 1 {
                    assert!(chunk.len() <= SNAPSHOT_CHUNK, "{}", chunk.len());
                } else if pieces[at].len() >= SNAPSHOT_CHUNK {
                    assert_eq!(chunk.as_ptr(), pieces[at].as_ptr(), "not copied");
                }
                sent.extend_from_slice(&chunk);
                at = next;
            }
            assert_eq!(at, pieces.len());
            assert_eq!(sent, pieces.concat());
        }
    }

    /// A stream lets its start's pieces go once they are sent, so an open
    /// stream does not keep the store's texts of the moment it joined.
    #[test]
    fn a_sent_snapshot_is_let_go() {
        let text: Arc<str> = "x".repeat(SNAPSHOT_CHUNK / 2).into();
        let piece = |text: &Arc<str>| Bytes::from(text.as_bytes().to_vec());
        let pieces: Arc<[Bytes]> = (0..5).map(|_| piece(&text)).collect::<Vec<_>>().into();
        let mut rest = SnapshotRest::new(pieces.clone());
        let mut sent = Vec::new();
        let mut held = Vec::new();
        while let Some(chunk) = rest.next_chunk() {
            held.push(Arc::strong_count(&pieces));
            sent.extend_from_slice(&chunk);
        }
        assert_eq!(sent.len(), 5 * text.len());
        // Two pieces a chunk: held while a chunk is left, let go with the last.
        assert_eq!(held, [2, 2, 1]);
        assert!(rest.next_chunk().is_none());
    }
}
