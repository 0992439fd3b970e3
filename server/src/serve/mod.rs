//! `dispatch-dash serve`: watch a cluster (or an embedded one), keep the
//! evidence deleted pods leave, and serve classifications and snapshots over
//! HTTP and server-sent events.
//!
//! # Modules
//!
//! - [`projection`]: the fields of an object the engine reads, and nothing
//!   else (no pod spec beyond `nodeName` and `schedulingGates`).
//! - [`store`]: the synchronous state machine the watch events are applied
//!   to: objects, captured pods, pod ownership across time.
//! - [`discovery`]: which version of each kind to watch, from API discovery.
//! - [`watch`]: the list/watch loops against the API server (kube client),
//!   with backoff and rate-limited warnings.
//! - [`health`]: each watch's state and version, for `/readyz`.
//! - [`view`]: the snapshots built from the store, per namespace and per job.
//! - [`hub`]: shared state; applies event batches, publishes `change`
//!   frames, re-classifies the jobs that changed.
//! - [`history`]: each object's observation changes, bounded.
//! - [`persist`]: `--state-dir`: the store's evidence and the history in
//!   SQLite, restored at start.
//! - [`auth`]: the auth modes, TokenReviews, SubjectAccessReviews and the
//!   cache of their answers.
//! - [`session`]: browser sessions (the `dd_session` cookie).
//! - [`limiter`]: keyed token buckets, for review misses and failed
//!   sign-ins.
//! - [`http`]: the axum router, the SSE streams, the one [`http::AppError`].
//! - `args`: the flags ([`ServeArgs`]) and the checks a start is refused
//!   for.
//! - [`metrics`]: Prometheus text.
//!
//! # HTTP API
//!
//! Every route, the stream frames (`rows`, `snapshot`, `change`,
//! `observation`), the error bodies, readiness and metrics are documented
//! once, in `docs/api.md` at the repository's root; [`http`] implements
//! them and `server/tests/api.rs` checks them.
//!
//! # Supervision
//!
//! The watch loops, the ingest loop and the HTTP server are supervised
//! [`Workers`]: if one ends or panics, [`run`](run::run) stops and returns an error
//! naming it (the process exits 1 and its Deployment restarts it) rather
//! than serve stale data. The ingest loop also ends when a write to the
//! state directory fails (`--state-dir`; see [`persist`]).
//!
//! # Exit status 2
//!
//! A state directory that cannot be used at start (a corrupt file, one
//! locked by another server, a newer schema) is [`Error::State`], which
//! `main.rs` maps to exit status 2 with the error naming the file.
//!
//! # The dashboard stream (`snapshots`)
//!
//! Its frames, their order, how a client applies a `change`, resuming with
//! `Last-Event-ID`, and what a snapshot cannot say (orphans across time)
//! are in `docs/api.md`, "The dashboard stream". [`hub`] writes the frames.

mod args;
pub mod auth;
pub mod budget;
pub mod demo_users;
pub mod discovery;
pub mod health;
pub mod history;
pub mod hosts;
pub mod http;
pub mod hub;
pub mod limiter;
pub mod listen;
pub mod metrics;
pub mod notify;
pub mod persist;
pub mod positions;
pub mod projection;
pub mod queues;
mod run;
pub mod scrape;
pub mod session;
pub mod store;
pub mod tls;
pub mod view;
pub mod watch;

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::future::Future;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use classify_wasm::Mode;
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::sync::{mpsc, watch as signal};
use tokio::task::{JoinHandle, JoinSet};

pub use args::{
    auth_config, byte_bounds, check_exposure, parse_duration, parse_public_url, parse_retention,
    ModeChoice, ServeArgs,
};

pub use run::run;

use hosts::HostPolicy;
use hub::{Hub, Scope};
use listen::{ConnectionLimits, ConnectionMetrics};
use projection::ObjectKind;
use store::{StoreLimits, WatchEvent};

/// Errors that stop the server from starting or running.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The kubeconfig could not be read.
    #[error("reading the kubeconfig: {0}")]
    Kubeconfig(#[from] kube::config::KubeconfigError),
    /// In-cluster configuration failed.
    #[error("in-cluster configuration: {0}")]
    InCluster(#[from] kube::config::InClusterError),
    /// The client could not be built, or discovery failed.
    #[error("talking to the API server: {0}")]
    Kube(#[from] kube::Error),
    /// Binding the listener, or serving.
    #[error("serving HTTP: {0}")]
    Io(#[from] std::io::Error),
    /// The embedded cluster did not start.
    #[error("starting the embedded cluster: {0}")]
    Emulator(#[from] emulator::Error),
    /// `--token` or `DISPATCH_DASH_TOKEN` is not usable as a header value.
    #[error("the token must be visible ASCII without spaces")]
    BadToken,
    /// The token given is empty.
    #[error("the token is empty (--token, --token-file or DISPATCH_DASH_TOKEN)")]
    EmptyToken,
    /// `--notify-url-file` names a file that cannot be used.
    #[error("--notify-url-file {0}")]
    Notify(#[from] notify::Error),
    /// `--demo-users` names a file that cannot be used.
    #[error(transparent)]
    DemoUsers(#[from] demo_users::Error),
    /// The token file could not be read.
    #[error("reading the token file {path}: {source}")]
    TokenFile {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// `--auth token` without a token, or a token with another mode.
    #[error("{0}")]
    AuthFlags(&'static str),
    /// `--auth none` on an address other machines reach.
    #[error(
        "refusing to serve {0} without authentication: --auth none on a non-loopback address \
         lets anyone who reaches it read the cluster. Use --auth kubernetes (or --auth token), \
         listen on 127.0.0.1, or pass --allow-unauthenticated"
    )]
    Unauthenticated(SocketAddr),
    /// `--auth kubernetes` on an address other machines reach, in plain
    /// HTTP, with nothing in front said to speak TLS.
    #[error(
        "refusing to serve {0} with --auth kubernetes over plain HTTP: bearer tokens and session \
         cookies would cross the network in the clear. Put a TLS-terminating proxy in front and \
         name it with --trusted-proxy, listen on 127.0.0.1, or pass --allow-plaintext"
    )]
    Plaintext(SocketAddr),
    /// The TLS certificate or key does not load.
    #[error(transparent)]
    Tls(#[from] tls::Error),
    /// The auth set-up failed (the server may not make reviews).
    #[error(transparent)]
    Auth(#[from] auth::Error),
    /// API discovery failed at start (`--mode auto` needs it).
    #[error(transparent)]
    Discovery(#[from] discovery::Error),
    /// A worker ended while the server was running.
    #[error("{0}; stopping rather than serving stale data")]
    WorkerEnded(WorkerEnd),
    /// The state directory cannot be used (corrupt, locked, newer schema).
    #[error(transparent)]
    State(#[from] persist::Error),
}

/// Which worker ended, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerEnd {
    /// The worker's name (`watch TrainJob in team-a`, `ingest`, `http`).
    pub name: String,
    /// It panicked (rather than returned).
    pub panicked: bool,
}

impl fmt::Display for WorkerEnd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let how = if self.panicked { "panicked" } else { "stopped" };
        write!(f, "the worker `{}` {how}", self.name)
    }
}

/// Tasks that must all run as long as the server does: the first to end
/// (return or panic) is reported by [`Workers::first_end`].
#[derive(Debug, Default)]
pub struct Workers {
    tasks: JoinSet<()>,
    names: HashMap<tokio::task::Id, String>,
}

impl Workers {
    /// Runs `task` as a worker called `name`.
    pub fn spawn(
        &mut self,
        name: impl Into<String>,
        task: impl Future<Output = ()> + Send + 'static,
    ) {
        let handle = self.tasks.spawn(task);
        self.names.insert(handle.id(), name.into());
    }

    /// Waits for the first worker to end; never completes while none has
    /// (or when there are none).
    pub async fn first_end(&mut self) -> WorkerEnd {
        let (id, panicked) = match self.tasks.join_next_with_id().await {
            Some(Ok((id, ()))) => (id, false),
            Some(Err(e)) => (e.id(), e.is_panic()),
            None => std::future::pending().await,
        };
        WorkerEnd {
            name: self.names.remove(&id).unwrap_or_else(|| "unnamed".into()),
            panicked,
        }
    }

    /// Stops every worker.
    pub fn abort_all(&mut self) {
        self.tasks.abort_all();
    }
}

/// What [`start`] needs: a kube config and the server's settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// How to reach the API server.
    pub kube: kube::Config,
    /// Namespaces to watch; empty means the config's default namespace.
    pub namespaces: Vec<String>,
    /// Watch every namespace.
    pub all_namespaces: bool,
    /// Classification mode.
    pub mode: ModeChoice,
    /// Listen address.
    pub listen: SocketAddr,
    /// Authentication and authorization.
    pub auth: auth::AuthConfig,
    /// SSE stream cap.
    pub max_sse_clients: usize,
    /// Captured pod caps.
    pub limits: StoreLimits,
    /// How long a watch may be unhealthy before `/readyz` says unready
    /// ([`health::UNREADY_AFTER`] by default).
    pub unready_after: Duration,
    /// The HTTP side's limits and Host names.
    pub http: HttpSettings,
    /// The cluster is the embedded, simulated one (the UI says so).
    pub demo: bool,
    /// Webhooks to notify (`--notify-url-file`).
    pub notify: Option<notify::NotifyConfig>,
}

/// The HTTP side's limits and Host names.
#[derive(Debug, Clone)]
pub struct HttpSettings {
    /// Host names served besides loopback and the listen address.
    pub allowed_hosts: Vec<String>,
    /// Connection caps and timeouts.
    pub connections: ConnectionLimits,
    /// The time a request may take to be answered.
    pub request_timeout: Duration,
    /// SSE streams per client address.
    pub max_sse_per_client: usize,
    /// Where the probes alone are served, besides the main address.
    pub probe_listen: Option<SocketAddr>,
    /// The main address speaks TLS with this (`--tls-cert-file`).
    pub tls: Option<Arc<tls::TlsConfig>>,
    /// How often the TLS files are read for a renewal.
    pub tls_reload_every: Duration,
    /// Where users reach the dashboard (`--public-url`).
    pub public_url: Option<String>,
    /// How often places in line are fetched, and how many are kept.
    pub positions: positions::PositionLimits,
}

impl Default for HttpSettings {
    fn default() -> Self {
        HttpSettings {
            allowed_hosts: Vec::new(),
            connections: ConnectionLimits::default(),
            request_timeout: Duration::from_secs(30),
            max_sse_per_client: 64,
            probe_listen: None,
            tls: None,
            tls_reload_every: tls::RELOAD_EVERY,
            public_url: None,
            positions: positions::PositionLimits::default(),
        }
    }
}

/// A running server.
#[derive(Debug)]
pub struct Server {
    /// The bound address.
    pub addr: SocketAddr,
    /// The probe listener's bound address (`--probe-listen`).
    pub probe_addr: Option<SocketAddr>,
    /// The shared state (tests read it).
    pub hub: Arc<Hub>,
    /// The connection layer's counters (tests read them).
    pub connections: Arc<ConnectionMetrics>,
    /// Places in line fetched (tests count the requests).
    pub positions: Arc<positions::Positions>,
    shutdown: signal::Sender<bool>,
    /// The HTTP server; `None` once [`Server::supervise`] saw it end.
    http: Option<JoinHandle<std::io::Result<()>>>,
    workers: Workers,
}

impl Server {
    /// Runs `task` as one more supervised worker (embedders and tests).
    pub fn spawn_worker(
        &mut self,
        name: impl Into<String>,
        task: impl Future<Output = ()> + Send + 'static,
    ) {
        self.workers.spawn(name, task);
    }

    /// Waits until a worker (a watch loop, the ingest loop or the HTTP
    /// server) ends or panics, which never happens to a healthy server, and
    /// says which.
    pub async fn supervise(&mut self) -> WorkerEnd {
        let http_ended = async {
            match self.http.as_mut() {
                Some(handle) => handle.await,
                None => std::future::pending().await,
            }
        };
        let http_result = tokio::select! {
            end = self.workers.first_end() => return end,
            result = http_ended => result,
        };
        self.http = None;
        WorkerEnd {
            name: "http".into(),
            panicked: http_result.is_err_and(|e| e.is_panic()),
        }
    }

    /// Stops serving: SSE streams end, in-flight requests finish, the watch
    /// loops stop.
    pub async fn shutdown(mut self) -> Result<(), Error> {
        let _ = self.shutdown.send(true);
        let served = match self.http.take() {
            Some(handle) => handle.await,
            None => Ok(Ok(())),
        };
        self.workers.abort_all();
        match served {
            Ok(result) => result.map_err(Error::from),
            Err(_) => Ok(()),
        }
    }
}

/// The custom kinds, whose versions discovery chooses.
const DISCOVERED_KINDS: [ObjectKind; 6] = [
    ObjectKind::TrainJob,
    ObjectKind::JobSet,
    ObjectKind::TrainingRuntime,
    ObjectKind::Workload,
    ObjectKind::LocalQueue,
    ObjectKind::ClusterQueue,
];

/// Connects, decides the mode and namespaces, starts the watches and the
/// HTTP server. Returns once the listener is bound.
pub async fn start(config: ServerConfig) -> Result<Server, Error> {
    start_with_state(config, None).await
}

/// [`start`], restoring from and mirroring to an opened state directory
/// (`--state-dir`): everything it holds is in the store before the first
/// list.
pub async fn start_with_state(
    config: ServerConfig,
    state: Option<persist::StateDir>,
) -> Result<Server, Error> {
    let default_namespace = config.kube.default_namespace.clone();
    let review_client = review_client(&config.kube)?;
    let client = kube::Client::try_from(config.kube)?;
    let sessions = http_sessions(&config.auth);
    let authenticator = auth::Authenticator::new(config.auth, Some(review_client));
    authenticator.check_delegation().await?;
    let discovered = match discovery::discover(&client, &DISCOVERED_KINDS).await {
        Ok(found) => Some(found),
        // `--mode auto` cannot decide without it; with a mode given, the
        // watch loops discover on their own, with backoff.
        Err(e) if config.mode != ModeChoice::Auto => {
            tracing::warn!(error = %e, "API discovery failed; the watches will retry it");
            None
        }
        Err(e) => return Err(e.into()),
    };
    let mode = mode_of(config.mode, discovered.as_ref());
    let scope = if config.all_namespaces {
        Scope::All
    } else if config.namespaces.is_empty() {
        Scope::Namespaces(vec![default_namespace])
    } else {
        Scope::Namespaces(config.namespaces.clone())
    };
    tracing::info!(mode = mode.as_str(), scope = ?scope, "watching");
    for (kind, found) in discovered.iter().flatten() {
        if let Some(api_version) = found.api_version() {
            tracing::info!(kind = kind.name(), api_version, "discovered");
        }
    }
    let hub = Hub::new(mode, scope, config.limits).with_unready_after(config.unready_after);
    let (hub, outbox) = with_notifier_and_state(hub, config.notify, state)?;
    let hub = Arc::new(hub);
    if mode == Mode::Plain {
        note_unknown_workload_versions(&hub, discovered.as_ref());
    }
    let (events_tx, events_rx) = mpsc::channel::<WatchEvent>(4096);
    let mut workers = Workers::default();
    workers.spawn("ingest", ingest_loop(hub.clone(), events_rx));
    workers.spawn("session purge", purge_sessions(sessions.clone()));
    spawn_watches(&mut workers, &hub, &client, discovered.as_ref(), &events_tx);
    let (shutdown, shutdown_rx) = signal::channel(false);
    if let Some(outbox) = outbox {
        workers.spawn("notifications", outbox.run(shutdown_rx.clone()));
    }
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    let addr = listener.local_addr()?;
    let connections = Arc::new(ConnectionMetrics::default());
    let positions = Arc::new(positions::Positions::new(
        client.clone(),
        config.http.positions,
    ));
    let state = http::AppState {
        hub: hub.clone(),
        auth: Arc::new(authenticator),
        sessions,
        hosts: Arc::new(HostPolicy::new(addr, &config.http.allowed_hosts)),
        streams: Arc::new(http::StreamSlots::new(
            config.max_sse_clients,
            config.http.max_sse_per_client,
        )),
        request_timeout: config.http.request_timeout,
        connections: connections.clone(),
        demo: config.demo,
        public_url: config.http.public_url.clone().unwrap_or_default(),
        shutdown: shutdown_rx.clone(),
        positions: positions.clone(),
    };
    let probe_addr = match config.http.probe_listen {
        Some(wanted) => Some(
            spawn_probes(
                &mut workers,
                wanted,
                &state,
                config.http.connections,
                &shutdown_rx,
            )
            .await?,
        ),
        None => None,
    };
    // The web client, embedded at build time, answers every path the API
    // does not route.
    let app = http::app_with_assets(state, crate::assets::router());
    if let Some(tls) = &config.http.tls {
        workers.spawn(
            "TLS reload",
            tls.clone()
                .watch_files(config.http.tls_reload_every, shutdown_rx.clone()),
        );
    }
    let http = tokio::spawn(listen::serve(
        listener,
        app,
        config.http.connections,
        config.http.tls.clone(),
        connections.clone(),
        shutdown_rx,
    ));
    Ok(Server {
        addr,
        probe_addr,
        hub,
        connections,
        positions,
        shutdown,
        http: Some(http),
        workers,
    })
}

/// The client reviews go through: the server's own identity too, but
/// without the client's retries. kube retries a 429, 503 or 504 up to 15
/// times, backing off for minutes, while a user waits and a review slot is
/// held; a review the API server cannot answer now fails at once, and the
/// user gets a 503 with Retry-After instead.
fn review_client(kube: &kube::Config) -> Result<kube::Client, Error> {
    let mut config = kube.clone();
    config.default_retry = false;
    Ok(kube::Client::try_from(config)?)
}

/// The hub with its notifier (and the outbox that sends for it) when
/// webhooks are configured, and restored from the state directory when
/// there is one.
fn with_notifier_and_state(
    mut hub: Hub,
    notify: Option<notify::NotifyConfig>,
    state: Option<persist::StateDir>,
) -> Result<(Hub, Option<notify::Connected>), Error> {
    let mut outbox = None;
    if let Some(notify) = notify {
        let (notifier, sender) = notify::Notifier::new(notify);
        // The HTTPS client is built now, so a machine without TLS roots
        // fails to start rather than failing every notification.
        outbox = Some(sender.connect()?);
        hub = hub.with_notifier(notifier);
    }
    if let Some(state) = state {
        hub = hub.with_state_dir(state)?;
    }
    Ok((hub, outbox))
}

/// The mode to classify in: the one asked for, or with `--mode auto`
/// Kueue iff Workloads are served in a version this server reads.
fn mode_of(
    choice: ModeChoice,
    discovered: Option<&BTreeMap<ObjectKind, discovery::Availability>>,
) -> Mode {
    match choice {
        ModeChoice::Plain => Mode::Plain,
        ModeChoice::Kueue => Mode::Kueue,
        ModeChoice::Auto => match discovered.and_then(|d| d.get(&ObjectKind::Workload)) {
            Some(discovery::Availability::Served(_)) => Mode::Kueue,
            _ => Mode::Plain,
        },
    }
}

/// Kueue is installed, but in no version this server reads: plain mode,
/// said loudly (a warning, and `/readyz`) rather than silently.
fn note_unknown_workload_versions(
    hub: &Hub,
    discovered: Option<&BTreeMap<ObjectKind, discovery::Availability>>,
) {
    let Some(discovery::Availability::UnknownVersions(versions)) =
        discovered.and_then(|d| d.get(&ObjectKind::Workload))
    else {
        return;
    };
    tracing::warn!(
        served = %versions.join(", "),
        understood = %discovery::understood_versions(ObjectKind::Workload).join(", "),
        "Workloads are served only in versions this server does not understand; classifying in plain mode"
    );
    hub.health().note_unwatched(
        ObjectKind::Workload,
        health::WatchState::UnknownVersions(versions.clone()),
    );
}

/// One watch loop per watched kind and scope, at the version discovery
/// chose (the loops discover on their own when it was not read).
fn spawn_watches(
    workers: &mut Workers,
    hub: &Arc<Hub>,
    client: &kube::Client,
    discovered: Option<&BTreeMap<ObjectKind, discovery::Availability>>,
    events: &mpsc::Sender<WatchEvent>,
) {
    for (kind, scope) in hub.watched_scopes().to_vec() {
        let availability = match (kind, discovered) {
            (ObjectKind::Pod | ObjectKind::Node, _) => {
                Some(discovery::choose(kind, &Default::default(), &[]))
            }
            (_, Some(found)) => found.get(&kind).cloned(),
            (_, None) => None,
        };
        let name = match &scope {
            Some(ns) => format!("watch {} in {ns}", kind.name()),
            None => format!("watch {}", kind.name()),
        };
        workers.spawn(
            name,
            watch::run(
                client.clone(),
                kind,
                scope,
                availability,
                events.clone(),
                hub.health().clone(),
            ),
        );
    }
}

/// Serves the probes alone on `wanted` (`--probe-listen`); returns the
/// address bound.
async fn spawn_probes(
    workers: &mut Workers,
    wanted: SocketAddr,
    state: &http::AppState,
    connections: ConnectionLimits,
    shutdown: &signal::Receiver<bool>,
) -> Result<SocketAddr, Error> {
    let probes = tokio::net::TcpListener::bind(wanted).await?;
    let addr = probes.local_addr()?;
    tracing::info!(%addr, "serving the probes");
    workers.spawn(
        "probes",
        listen::serve_or_log(
            probes,
            http::probe_app(state.clone()),
            ConnectionLimits {
                max_connections: PROBE_CONNECTIONS,
                max_connections_per_client: PROBE_CONNECTIONS,
                ..connections
            },
            Arc::new(ConnectionMetrics::default()),
            shutdown.clone(),
        ),
    );
    Ok(addr)
}

/// Connections the probe listener takes at once: the kubelet makes one
/// per probe.
const PROBE_CONNECTIONS: usize = 16;

fn http_sessions(config: &auth::AuthConfig) -> Arc<session::SessionStore> {
    Arc::new(session::SessionStore::new(
        config.session_idle_timeout,
        config.max_sessions,
        config.max_session_bytes,
    ))
}

/// Ends idle sessions on a timer, so an expired session's token does not
/// stay in memory until somebody presents its cookie again.
async fn purge_sessions(sessions: Arc<session::SessionStore>) {
    let mut timer = tokio::time::interval(sessions.purge_interval());
    timer.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        timer.tick().await;
        let ended = sessions.purge_expired(std::time::Instant::now());
        if ended > 0 {
            tracing::debug!(ended, "idle sessions ended");
        }
    }
}

/// Applies watch events in batches: whatever has queued up is applied
/// together, so a burst costs one re-classification per job, not one per
/// event, without adding a timer's delay.
async fn ingest_loop(hub: Arc<Hub>, mut events: mpsc::Receiver<WatchEvent>) {
    while let Some(first) = events.recv().await {
        let mut batch = vec![first];
        while batch.len() < 2048 {
            match events.try_recv() {
                Ok(event) => batch.push(event),
                Err(_) => break,
            }
        }
        hub.ingest(batch);
        if let Some(failure) = hub.state_failure() {
            // The database is behind memory now: stop (and be restarted)
            // rather than run on with evidence that would not survive.
            tracing::error!(%failure, "stopping: the state directory cannot be written");
            return;
        }
    }
}

/// A kube config from kubeconfig text, as for a file.
pub async fn config_from_kubeconfig_yaml(yaml: &str) -> Result<kube::Config, Error> {
    let kubeconfig = Kubeconfig::from_yaml(yaml)?;
    Ok(kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_purge_timer_ends_idle_sessions_nobody_looks_up() {
        let sessions = Arc::new(session::SessionStore::new(
            Duration::from_secs(1),
            10,
            1 << 20,
        ));
        sessions
            .create("idle-s3cret", std::time::Instant::now())
            .expect("a session");
        let timer = tokio::spawn(purge_sessions(sessions.clone()));
        // Idle for the timeout, then one tick of the timer (1 s here): no
        // lookup of the session ever happens.
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while !sessions.is_empty() {
            assert!(std::time::Instant::now() < deadline, "never purged");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        timer.abort();
    }

    #[tokio::test]
    async fn the_first_worker_to_end_is_named() {
        let mut workers = Workers::default();
        workers.spawn("forever", std::future::pending());
        workers.spawn("returns", async {});
        let end = tokio::time::timeout(Duration::from_secs(10), workers.first_end())
            .await
            .expect("an end is reported");
        assert_eq!(
            end,
            WorkerEnd {
                name: "returns".into(),
                panicked: false
            }
        );
        workers.spawn("panics", async { panic!("a bug") });
        let end = tokio::time::timeout(Duration::from_secs(10), workers.first_end())
            .await
            .expect("a panic is reported");
        assert_eq!(end.name, "panics");
        assert!(end.panicked);
        assert_eq!(end.to_string(), "the worker `panics` panicked");
        workers.abort_all();
    }

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        serve: ServeArgs,
    }

    fn args(list: &[&str]) -> ServeArgs {
        <Cli as clap::Parser>::try_parse_from(std::iter::once("serve").chain(list.iter().copied()))
            .expect("valid flags")
            .serve
    }

    #[test]
    fn the_mode_defaults_to_token_when_a_token_is_given_else_none() {
        let config = auth_config(&args(&["--token", "s3cret"]), None).expect("token mode");
        assert_eq!(config.mode, auth::AuthMode::Token);
        assert_eq!(
            config.token.as_ref().map(auth::Secret::expose),
            Some("s3cret")
        );
        let config = auth_config(&args(&[]), Some("from-env\n".into())).expect("token mode");
        assert_eq!(config.mode, auth::AuthMode::Token);
        assert_eq!(
            config.token.as_ref().map(auth::Secret::expose),
            Some("from-env"),
            "one newline dropped"
        );
        let config = auth_config(&args(&[]), None).expect("none");
        assert_eq!(config.mode, auth::AuthMode::None);
        assert_eq!(config.session_idle_timeout, Duration::from_secs(8 * 3600));
        assert_eq!(config.max_sessions, 10_000);
        assert!(matches!(
            auth_config(&args(&["--auth", "token"]), None),
            Err(Error::AuthFlags(_))
        ));
        assert!(matches!(
            auth_config(&args(&["--auth", "kubernetes", "--token", "x"]), None),
            Err(Error::AuthFlags(_))
        ));
        let config = auth_config(&args(&["--auth", "kubernetes"]), None).expect("kubernetes");
        assert_eq!(config.mode, auth::AuthMode::Kubernetes);
    }

    #[test]
    fn debug_of_the_flags_and_the_auth_settings_redacts_the_token() {
        let flags = args(&["--token", "s3cret-value"]);
        let config = auth_config(&flags, None).expect("token mode");
        for debug in [format!("{flags:?}"), format!("{config:?}")] {
            assert!(!debug.contains("s3cret-value"), "{debug}");
            assert!(debug.contains("[redacted]"), "{debug}");
        }
        let authenticator = auth::Authenticator::new(config, None);
        assert!(!format!("{authenticator:?}").contains("s3cret-value"));
    }

    #[test]
    fn kubernetes_identities_on_an_open_address_need_a_tls_proxy_or_plaintext_asked_for() {
        let open = ["--auth", "kubernetes", "--listen", "0.0.0.0:8080"];
        assert!(matches!(
            auth_config(&args(&open), None),
            Err(Error::Plaintext(_))
        ));
        let with = |extra: &[&str]| {
            let flags: Vec<&str> = open.iter().chain(extra).copied().collect();
            auth_config(&args(&flags), None)
        };
        assert!(with(&["--allow-plaintext"]).is_ok());
        assert!(with(&["--trusted-proxy", "10.0.0.0/8"]).is_ok());
        assert!(with(&["--tls-cert-file", "tls.crt", "--tls-key-file", "tls.key"]).is_ok());
        assert!(
            auth_config(&args(&["--auth", "kubernetes"]), None).is_ok(),
            "loopback"
        );
    }

    #[test]
    fn a_token_audience_is_for_kubernetes_mode_only() {
        let config = auth_config(
            &args(&["--auth", "kubernetes", "--token-audience", "dispatch-dash"]),
            None,
        )
        .expect("kubernetes");
        assert_eq!(config.token_audience.as_deref(), Some("dispatch-dash"));
        assert!(matches!(
            auth_config(&args(&["--token", "x", "--token-audience", "a"]), None),
            Err(Error::AuthFlags(_))
        ));
    }

    #[test]
    fn a_token_file_loses_one_trailing_newline_and_an_empty_token_is_an_error() {
        let dir = std::env::temp_dir().join(format!("dispatch-dash-token-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("dir");
        let file = dir.join("token");
        std::fs::write(&file, "s3cret\n\n").expect("write");
        let path = file.display().to_string();
        // Only one newline goes: the second is part of the token, which no
        // header can carry.
        assert!(matches!(
            auth_config(&args(&["--token-file", &path]), None),
            Err(Error::BadToken)
        ));
        std::fs::write(&file, "s3cret\n").expect("write");
        let config = auth_config(&args(&["--token-file", &path]), None).expect("read");
        assert_eq!(
            config.token.as_ref().map(auth::Secret::expose),
            Some("s3cret")
        );
        std::fs::write(&file, "\n").expect("write");
        assert!(matches!(
            auth_config(&args(&["--token-file", &path]), None),
            Err(Error::EmptyToken)
        ));
        assert!(matches!(
            auth_config(&args(&["--token", ""]), None),
            Err(Error::EmptyToken)
        ));
        assert!(matches!(
            auth_config(&args(&[]), Some(String::new())),
            Err(Error::EmptyToken)
        ));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn no_auth_is_refused_on_a_non_loopback_address_unless_allowed() {
        let refused = auth_config(&args(&["--listen", "0.0.0.0:8080"]), None);
        let message = refused.expect_err("refused").to_string();
        assert!(message.contains("--allow-unauthenticated"), "{message}");
        assert!(auth_config(
            &args(&["--listen", "0.0.0.0:8080", "--allow-unauthenticated"]),
            None
        )
        .is_ok());
        assert!(auth_config(
            &args(&[
                "--listen",
                "0.0.0.0:8080",
                "--auth",
                "kubernetes",
                "--allow-plaintext"
            ]),
            None
        )
        .is_ok());
        // The demo on loopback, the default, is unaffected.
        assert!(auth_config(&args(&["--demo"]), None).is_ok());
        assert!(auth_config(&args(&["--listen", "[::1]:9000"]), None).is_ok());
        assert!(check_exposure(
            "10.0.0.1:80".parse().expect("addr"),
            auth::AuthMode::Token,
            false
        )
        .is_ok());
    }

    #[test]
    fn the_history_retention_defaults_to_a_week_and_reads_days() {
        assert_eq!(args(&[]).history_retention, Duration::from_secs(7 * 86_400));
        assert_eq!(args(&[]).state_dir, None);
        let parsed = args(&["--history-retention", "30d", "--state-dir", "/var/lib/dd"]);
        assert_eq!(parsed.history_retention, Duration::from_secs(30 * 86_400));
        assert_eq!(parsed.state_dir, Some(PathBuf::from("/var/lib/dd")));
        assert_eq!(parse_retention("36h"), Ok(Duration::from_secs(36 * 3600)));
        assert!(parse_retention("400d").is_err(), "at most a year");
        assert!(parse_retention("0d").is_err());
        assert!(parse_retention("7 weeks").is_err());
        // The other duration flags keep their bound of a week.
        assert!(parse_duration("8d").is_err());
    }

    #[tokio::test]
    async fn no_workers_means_no_end() {
        let mut workers = Workers::default();
        let waited = tokio::time::timeout(Duration::from_millis(50), workers.first_end()).await;
        assert!(waited.is_err());
    }
}
