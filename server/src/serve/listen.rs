//! The accept loop: HTTP/1 connections served by hyper with the hygiene a
//! server facing untrusted clients needs, which `axum::serve` does not give:
//!
//! - a cap on open connections: at it the longest-idle keep-alive
//!   connection is closed to make room, and when none is idle the new
//!   connection is closed at once (and counted) instead of queueing
//!   without bound; and a cap per client
//!   address, so one client cannot take every connection (the kubelet's
//!   probes have a listener of their own besides, `--probe-listen`);
//! - a header-read timeout: a connection has that long to send a whole
//!   request head, counted from when it opened or finished its previous
//!   response, so half-sent requests and idle keep-alive connections are
//!   closed by the same timer;
//! - a write deadline: a connection whose writes make no progress for that
//!   long (a client that stopped reading an event stream) fails and is
//!   closed, which drops its stream and whatever it held;
//! - bounded per-connection buffers;
//! - with `--tls-cert-file`, a TLS handshake that shares the request
//!   head's time limit.
//!
//! The peer address is put in each request's extensions as axum's
//! `ConnectInfo`, for the per-client cap on event streams.

use std::collections::HashMap;
use std::convert::Infallible;
use std::future::Future as _;
use std::io;
use std::net::{IpAddr, SocketAddr};
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes, HttpBody};
use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Sleep;
use tokio_rustls::TlsAcceptor;
use tower::ServiceExt;

use super::tls::TlsConfig;

/// A request extension: the connection is the server's own TLS, so the
/// request came over HTTPS (the session cookie is then `Secure`).
#[derive(Debug, Clone, Copy)]
pub struct OverTls;

/// Bytes hyper may buffer per connection (request head, queued writes).
const CONNECTION_BUFFER: usize = 64 * 1024;
/// How long shutdown waits for open connections to finish.
const DRAIN: Duration = Duration::from_secs(10);

/// Connection-level limits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectionLimits {
    /// Connections open at once.
    pub max_connections: usize,
    /// Connections open at once from one client address.
    pub max_connections_per_client: usize,
    /// Time to send a whole request head (also the keep-alive idle limit).
    pub header_read_timeout: Duration,
    /// Time a write may make no progress before the connection is dropped.
    pub write_timeout: Duration,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        ConnectionLimits {
            max_connections: 1024,
            max_connections_per_client: 256,
            header_read_timeout: Duration::from_secs(10),
            write_timeout: Duration::from_secs(10),
        }
    }
}

/// What the accept loop counts, for `/metrics`.
#[derive(Debug, Default)]
pub struct ConnectionMetrics {
    /// Connections open now.
    pub open: AtomicU64,
    /// Connections closed at once because the cap was reached.
    pub rejected: AtomicU64,
    /// Connections closed because a request head did not arrive in time.
    pub header_timeouts: AtomicU64,
    /// Connections dropped because the client took no bytes in time.
    pub write_timeouts: AtomicU64,
    /// Requests refused because their Host header names another site.
    pub misdirected: AtomicU64,
    /// TLS handshakes that failed (`--tls-cert-file`).
    pub tls_handshake_failures: AtomicU64,
    /// Idle keep-alive connections closed at the cap to make room.
    pub idle_closed: AtomicU64,
}

impl ConnectionMetrics {
    /// Encodes these metrics for `/metrics` (serve/scrape.rs).
    pub fn encode(
        &self,
        encoder: &mut prometheus_client::encoding::DescriptorEncoder,
    ) -> std::fmt::Result {
        super::metrics::encode_gauge(
            encoder,
            "dispatch_dash_http_connections",
            "Open HTTP connections.",
            self.open.load(Ordering::Relaxed),
        )?;
        let counters = [
            (
                "dispatch_dash_http_connections_rejected",
                "Connections closed at once because the connection cap was reached.",
                &self.rejected,
            ),
            (
                "dispatch_dash_http_header_timeouts",
                "Connections closed because no complete request head arrived in time (half-sent or idle).",
                &self.header_timeouts,
            ),
            (
                "dispatch_dash_http_write_timeouts",
                "Connections dropped because the client took no bytes within the write deadline (stalled event-stream readers).",
                &self.write_timeouts,
            ),
            (
                "dispatch_dash_http_misdirected",
                "Requests refused (421) because their Host header names a site this server is not.",
                &self.misdirected,
            ),
            (
                "dispatch_dash_http_tls_handshake_failures",
                "Connections closed because their TLS handshake failed.",
                &self.tls_handshake_failures,
            ),
            (
                "dispatch_dash_http_idle_closed",
                "Idle keep-alive connections closed at the connection cap to make room for a new one.",
                &self.idle_closed,
            ),
        ];
        for (name, help, value) in counters {
            super::metrics::encode_counter(encoder, name, help, value.load(Ordering::Relaxed))?;
        }
        Ok(())
    }
}

/// Open connections per client address: only addresses with one have an
/// entry, so the map is as big as the connection cap at most.
#[derive(Debug)]
struct AddressSlots {
    max_per_client: usize,
    open: Mutex<HashMap<IpAddr, usize>>,
    /// Woken when any slot is given back.
    released: Notify,
}

/// One connection's share of its address's slots, given back on drop.
struct AddressSlot {
    slots: Arc<AddressSlots>,
    ip: IpAddr,
}

impl AddressSlots {
    fn new(max_per_client: usize) -> Arc<Self> {
        Arc::new(AddressSlots {
            max_per_client: max_per_client.max(1),
            open: Mutex::new(HashMap::new()),
            released: Notify::new(),
        })
    }

    /// A slot for `ip`, waiting up to `wait` for one to be given back.
    async fn acquire_within(self: &Arc<Self>, ip: IpAddr, wait: Duration) -> Option<AddressSlot> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            // Registered before the check, so a release between the two is
            // not missed.
            let released = self.released.notified();
            if let Some(slot) = self.acquire(ip) {
                return Some(slot);
            }
            tokio::time::timeout_at(deadline, released).await.ok()?;
        }
    }

    fn acquire(self: &Arc<Self>, ip: IpAddr) -> Option<AddressSlot> {
        let mut open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        let held = open.entry(ip).or_insert(0);
        if *held >= self.max_per_client {
            return None;
        }
        *held += 1;
        Some(AddressSlot {
            slots: self.clone(),
            ip,
        })
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let mut open = self.slots.open.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(held) = open.get_mut(&self.ip) {
            *held = held.saturating_sub(1);
            if *held == 0 {
                open.remove(&self.ip);
            }
        }
        drop(open);
        self.slots.released.notify_waiters();
    }
}

/// The open connections, with how long each has been idle (between
/// requests, its previous response sent), so that at the cap the longest
/// idle keep-alive connection can be closed for a new one rather than the
/// new one refused: a crowd of parked keep-alive connections then cannot
/// lock everyone else out. A connection with a request in flight or a
/// response (an event stream) being sent is never chosen.
#[derive(Debug, Default)]
struct ConnectionTable {
    next_id: AtomicU64,
    open: Mutex<HashMap<u64, TrackedConnection>>,
}

#[derive(Debug)]
struct TrackedConnection {
    /// The client's address.
    ip: IpAddr,
    /// Requests whose response has not been sent in full.
    busy: usize,
    /// Since when it has had none, if so.
    idle_since: Option<Instant>,
    /// Chosen to close; not chosen again.
    closing: bool,
    close: Arc<Notify>,
}

impl ConnectionTable {
    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<u64, TrackedConnection>> {
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a new connection (idle until its first request); its id
    /// and what tells it to close.
    fn open(&self, ip: IpAddr) -> (u64, Arc<Notify>) {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let close = Arc::new(Notify::new());
        self.entries().insert(
            id,
            TrackedConnection {
                ip,
                busy: 0,
                idle_since: Some(Instant::now()),
                closing: false,
                close: close.clone(),
            },
        );
        (id, close)
    }

    fn closed(&self, id: u64) {
        self.entries().remove(&id);
    }

    /// A request of connection `id` began; the guard marks its end.
    fn busy(self: &Arc<Self>, id: u64) -> BusyGuard {
        if let Some(entry) = self.entries().get_mut(&id) {
            entry.busy += 1;
            entry.idle_since = None;
        }
        BusyGuard {
            table: self.clone(),
            id,
        }
    }

    /// Tells the longest-idle connection (of `from`, when given) to close;
    /// whether there was one.
    fn close_longest_idle(&self, from: Option<IpAddr>) -> bool {
        let mut entries = self.entries();
        let chosen = entries
            .values_mut()
            .filter(|e| !e.closing && e.busy == 0 && from.is_none_or(|ip| e.ip == ip))
            .filter_map(|e| e.idle_since.map(|since| (since, e)))
            .min_by_key(|(since, _)| *since)
            .map(|(_, e)| e);
        match chosen {
            Some(entry) => {
                entry.closing = true;
                // `notify_one` keeps the wake-up if the connection is not
                // waiting yet.
                entry.close.notify_one();
                true
            }
            None => false,
        }
    }
}

/// Held while a response is being sent (it rides in the response body, so
/// an event stream stays busy for its whole life).
struct BusyGuard {
    table: Arc<ConnectionTable>,
    id: u64,
}

impl Drop for BusyGuard {
    fn drop(&mut self) {
        if let Some(entry) = self.table.entries().get_mut(&self.id) {
            entry.busy = entry.busy.saturating_sub(1);
            if entry.busy == 0 {
                entry.idle_since = Some(Instant::now());
            }
        }
    }
}

/// A response body that holds its connection's [`BusyGuard`] until it is
/// sent in full or dropped.
struct TrackedBody {
    inner: Body,
    _busy: BusyGuard,
}

impl HttpBody for TrackedBody {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.inner.size_hint()
    }
}

/// How long a new connection waits, at the cap, for the idle connection it
/// closed to give back its slot.
const EVICTION_WAIT: Duration = Duration::from_secs(1);

/// Whether a new connection from `ip` may be served, and the slot and
/// permit it holds now. At a cap, the longest-idle keep-alive connection
/// (of this address, at its own cap) is closed to make room, and the new
/// one waits for what that gives back (`None` here, taken within
/// [`EVICTION_WAIT`]); only when every connection is busy is it refused
/// (`None` in all).
fn admit(
    addresses: &Arc<AddressSlots>,
    permits: &Arc<Semaphore>,
    table: &ConnectionTable,
    metrics: &ConnectionMetrics,
    ip: IpAddr,
) -> Option<(Option<AddressSlot>, Option<OwnedSemaphorePermit>)> {
    let address_slot = match addresses.acquire(ip) {
        Some(slot) => Some(slot),
        None if table.close_longest_idle(Some(ip)) => {
            metrics.idle_closed.fetch_add(1, Ordering::Relaxed);
            None
        }
        None => {
            metrics.rejected.fetch_add(1, Ordering::Relaxed);
            return None;
        }
    };
    let permit = match permits.clone().try_acquire_owned() {
        Ok(permit) => Some(permit),
        // The connection closed for this address's slot gives back a
        // permit too: one is closed, not two.
        Err(_) if address_slot.is_none() => None,
        Err(_) if table.close_longest_idle(None) => {
            metrics.idle_closed.fetch_add(1, Ordering::Relaxed);
            None
        }
        Err(_) => {
            metrics.rejected.fetch_add(1, Ordering::Relaxed);
            return None;
        }
    };
    Some((address_slot, permit))
}

/// Serves `app` on `listener` until `shutdown` turns true, then lets open
/// connections finish (SSE streams end on the same signal) for up to
/// `DRAIN` (10 s).
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    tls: Option<Arc<TlsConfig>>,
    metrics: Arc<ConnectionMetrics>,
    mut shutdown: watch::Receiver<bool>,
) -> io::Result<()> {
    let permits = Arc::new(Semaphore::new(limits.max_connections));
    let table = Arc::new(ConnectionTable::default());
    let addresses = AddressSlots::new(limits.max_connections_per_client);
    let mut connections = JoinSet::new();
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stopping(&mut shutdown) => break,
        };
        // Reap finished connection tasks so the set stays as big as the
        // number of open connections.
        while connections.try_join_next().is_some() {}
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: wait a moment
                // rather than spin.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let Some((address_slot, permit)) = admit(&addresses, &permits, &table, &metrics, peer.ip())
        else {
            drop(stream);
            continue;
        };
        let permits = permits.clone();
        let table = table.clone();
        let _ = stream.set_nodelay(true);
        let app = app.clone();
        let metrics = metrics.clone();
        let shutdown = shutdown.clone();
        // The acceptor is taken now, so a reload applies from the next
        // connection on.
        let acceptor = tls.as_ref().map(|tls| tls.acceptor());
        let addresses = addresses.clone();
        connections.spawn(async move {
            let address_slot = match address_slot {
                Some(slot) => slot,
                None => match addresses.acquire_within(peer.ip(), EVICTION_WAIT).await {
                    Some(slot) => slot,
                    None => {
                        metrics.rejected.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                },
            };
            let permit = match permit {
                Some(permit) => permit,
                None => match tokio::time::timeout(EVICTION_WAIT, permits.acquire_owned()).await {
                    Ok(Ok(permit)) => permit,
                    _ => {
                        metrics.rejected.fetch_add(1, Ordering::Relaxed);
                        return;
                    }
                },
            };
            let (id, close) = table.open(peer.ip());
            let tracked = Tracked {
                table: table.clone(),
                id,
                close,
            };
            metrics.open.fetch_add(1, Ordering::Relaxed);
            let stream = DeadlineStream::new(stream, limits.write_timeout, metrics.clone());
            serve_plain_or_tls(
                stream, acceptor, peer, tracked, app, limits, &metrics, shutdown,
            )
            .await;
            metrics.open.fetch_sub(1, Ordering::Relaxed);
            table.closed(id);
            drop(permit);
            drop(address_slot);
        });
    }
    drop(listener);
    let drained = tokio::time::timeout(DRAIN, async {
        while connections.join_next().await.is_some() {}
    })
    .await;
    if drained.is_err() {
        connections.abort_all();
    }
    Ok(())
}

/// Serves one admitted connection, first completing the TLS handshake when
/// the server has TLS.
#[allow(clippy::too_many_arguments)]
async fn serve_plain_or_tls(
    stream: DeadlineStream<TcpStream>,
    acceptor: Option<TlsAcceptor>,
    peer: SocketAddr,
    tracked: Tracked,
    app: Router,
    limits: ConnectionLimits,
    metrics: &Arc<ConnectionMetrics>,
    shutdown: watch::Receiver<bool>,
) {
    match acceptor {
        None => {
            serve_connection(stream, peer, false, tracked, app, limits, metrics, shutdown).await
        }
        // The handshake shares the request head's time limit, so a
        // client that opens and says nothing is closed the same way.
        Some(acceptor) => {
            match tokio::time::timeout(limits.header_read_timeout, acceptor.accept(stream)).await {
                Ok(Ok(stream)) => {
                    serve_connection(stream, peer, true, tracked, app, limits, metrics, shutdown)
                        .await;
                }
                Ok(Err(e)) => {
                    metrics
                        .tls_handshake_failures
                        .fetch_add(1, Ordering::Relaxed);
                    tracing::debug!(%peer, error = %e, "TLS handshake failed");
                }
                Err(_) => {
                    metrics.header_timeouts.fetch_add(1, Ordering::Relaxed);
                }
            }
        }
    }
}

/// [`serve`] as a supervised worker: it returns only on shutdown or when
/// serving failed, which it logs.
pub async fn serve_or_log(
    listener: TcpListener,
    app: Router,
    limits: ConnectionLimits,
    metrics: Arc<ConnectionMetrics>,
    shutdown: watch::Receiver<bool>,
) {
    if let Err(e) = serve(listener, app, limits, None, metrics, shutdown).await {
        tracing::error!(error = %e, "a listener failed");
    }
}

/// Completes once shutdown is signalled (or its sender is gone).
async fn stopping(shutdown: &mut watch::Receiver<bool>) {
    let _ = shutdown.wait_for(|down| *down).await;
}

/// A connection's entry in the [`ConnectionTable`].
struct Tracked {
    table: Arc<ConnectionTable>,
    id: u64,
    close: Arc<Notify>,
}

#[allow(clippy::too_many_arguments)]
async fn serve_connection<S>(
    stream: S,
    peer: SocketAddr,
    over_tls: bool,
    tracked: Tracked,
    app: Router,
    limits: ConnectionLimits,
    metrics: &ConnectionMetrics,
    mut shutdown: watch::Receiver<bool>,
) where
    S: AsyncRead + AsyncWrite + Unpin + Send + 'static,
{
    let Tracked { table, id, close } = tracked;
    let service = hyper::service::service_fn(move |mut request: hyper::Request<Incoming>| {
        request.extensions_mut().insert(ConnectInfo(peer));
        if over_tls {
            request.extensions_mut().insert(OverTls);
        }
        let app = app.clone();
        let busy = table.busy(id);
        async move {
            let response = app.oneshot(request).await.unwrap_or_else(|e| match e {});
            Ok::<_, Infallible>(response.map(|inner| Body::new(TrackedBody { inner, _busy: busy })))
        }
    });
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(limits.header_read_timeout)
        .max_buf_size(CONNECTION_BUFFER)
        .serve_connection(TokioIo::new(stream), service);
    let mut connection = std::pin::pin!(connection);
    let result = tokio::select! {
        result = connection.as_mut() => result,
        () = stopping(&mut shutdown) => {
            connection.as_mut().graceful_shutdown();
            connection.as_mut().await
        }
        // Chosen at the cap while idle: a graceful shutdown closes an idle
        // connection at once (and lets a request that just arrived finish).
        () = close.notified() => {
            connection.as_mut().graceful_shutdown();
            connection.as_mut().await
        }
    };
    if let Err(e) = result {
        if e.is_timeout() {
            metrics.header_timeouts.fetch_add(1, Ordering::Relaxed);
        }
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}

/// A stream whose writes must make progress: once a write has been pending
/// for `deadline`, it fails with `TimedOut`, and hyper closes the
/// connection. Reads are untouched (the header-read timeout covers them).
pub struct DeadlineStream<S> {
    inner: S,
    deadline: Duration,
    /// Armed when a write first returns `Pending`; cleared by progress.
    stalled: Option<Pin<Box<Sleep>>>,
    metrics: Arc<ConnectionMetrics>,
}

impl<S> DeadlineStream<S> {
    /// Wraps `inner`.
    pub fn new(inner: S, deadline: Duration, metrics: Arc<ConnectionMetrics>) -> Self {
        DeadlineStream {
            inner,
            deadline,
            stalled: None,
            metrics,
        }
    }

    /// After the inner write returned `Pending`: `Pending` again, unless the
    /// deadline has passed.
    fn poll_stalled<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let deadline = self.deadline;
        let timer = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(deadline)));
        match timer.as_mut().poll(cx) {
            Poll::Ready(()) => {
                self.stalled = None;
                self.metrics.write_timeouts.fetch_add(1, Ordering::Relaxed);
                Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the client took no bytes within the write deadline",
                )))
            }
            Poll::Pending => Poll::Pending,
        }
    }

    fn progressed<T>(
        &mut self,
        result: Poll<io::Result<T>>,
        cx: &mut Context<'_>,
    ) -> Poll<io::Result<T>> {
        match result {
            Poll::Ready(r) => {
                self.stalled = None;
                Poll::Ready(r)
            }
            Poll::Pending => self.poll_stalled(cx),
        }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for DeadlineStream<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_read(cx, buf)
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for DeadlineStream<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write(cx, buf);
        this.progressed(result, cx)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_write_vectored(cx, bufs);
        this.progressed(result, cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_flush(cx);
        this.progressed(result, cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let result = Pin::new(&mut this.inner).poll_shutdown(cx);
        this.progressed(result, cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn one_address_holds_at_most_its_share_and_gets_it_back() {
        let slots = AddressSlots::new(2);
        let a: IpAddr = "127.0.0.1".parse().expect("ip");
        let b: IpAddr = "127.0.0.2".parse().expect("ip");
        let first = slots.acquire(a).expect("one");
        let _second = slots.acquire(a).expect("two");
        assert!(slots.acquire(a).is_none(), "a third from the same address");
        assert!(
            slots.acquire(b).is_some(),
            "another address has its own share"
        );
        drop(first);
        assert!(
            slots.acquire(a).is_some(),
            "a closed connection frees its slot"
        );
    }

    #[tokio::test]
    async fn a_write_that_makes_no_progress_fails_at_the_deadline() {
        let metrics = Arc::new(ConnectionMetrics::default());
        let (near, mut far) = tokio::io::duplex(64);
        let mut stream = DeadlineStream::new(near, Duration::from_millis(50), metrics.clone());
        // The pipe holds 64 bytes: the first write fills it.
        stream.write_all(&[1; 64]).await.expect("fits the pipe");
        let stalled = tokio::time::timeout(Duration::from_secs(30), stream.write_all(&[2; 64]))
            .await
            .expect("the deadline, not the test's timeout, ends the write");
        let error = stalled.expect_err("nobody reads the other end");
        assert_eq!(error.kind(), io::ErrorKind::TimedOut);
        assert_eq!(metrics.write_timeouts.load(Ordering::Relaxed), 1);
        // Reads still work, and progress clears the timer.
        let mut first = [0; 64];
        far.read_exact(&mut first)
            .await
            .expect("the first 64 bytes");
        assert_eq!(first, [1; 64]);
    }

    #[tokio::test]
    async fn a_slow_but_moving_reader_is_not_dropped() {
        let metrics = Arc::new(ConnectionMetrics::default());
        let (near, mut far) = tokio::io::duplex(16);
        let mut stream = DeadlineStream::new(near, Duration::from_secs(5), metrics.clone());
        let reader = tokio::spawn(async move {
            let mut got = Vec::new();
            let mut chunk = [0; 16];
            while got.len() < 256 {
                let n = far.read(&mut chunk).await.expect("read");
                got.extend_from_slice(&chunk[..n]);
            }
            got
        });
        stream
            .write_all(&[7; 256])
            .await
            .expect("the reader keeps up");
        assert_eq!(reader.await.expect("reader"), vec![7; 256]);
        assert_eq!(metrics.write_timeouts.load(Ordering::Relaxed), 0);
    }
}
