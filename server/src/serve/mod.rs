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
//! - [`watch`]: the list/watch loops against the API server (kube client).
//! - [`view`]: the snapshots built from the store, per namespace and per job.
//! - [`hub`]: shared state; applies event batches, publishes `change`
//!   frames, re-classifies the jobs that changed.
//! - [`http`]: the axum router, the SSE streams, the one [`http::AppError`].
//! - [`metrics`]: Prometheus text.
//!
//! # HTTP API
//!
//! Every `/api` route answers JSON (or SSE), and requires
//! `Authorization: Bearer <token>` when a token is configured. Errors are
//! `{"error": "<message>"}` with a 4xx/5xx status. A namespace that is not
//! watched, or (with `--all-namespaces`) has no Namespace object, is 404 on
//! every `{ns}` route.
//!
//! - `GET /api/v1/namespaces` → `{"namespaces":[..],"allNamespaces":bool,
//!   "mode":"plain"|"kueue","nodesReadable":bool}`.
//! - `GET /api/v1/namespaces/{ns}/jobs/{job}` → Find: a JSON array of the
//!   job's observations (CLASSIFICATION.md section 3), TrainJobs first, then
//!   orphans.
//! - `GET /api/v1/namespaces/{ns}/objects/{kind}/{name}[?explain=true]` →
//!   Inspect: `{"object": <projection>, "observation": <observation>|null,
//!   "readFor": [{"kind","namespace","name","uid"}], "explanation": ..}`.
//!   `observation` is null for an object read for a TrainJob (its TrainJob's
//!   observation covers it; `readFor` names it). `kind` is a kind, plural or
//!   singular in any case (`TrainJob`, `pods`).
//! - `GET /api/v1/namespaces/{ns}/jobs/{job}/watch` → Watch (SSE, section
//!   12): one `observation` event per object of the job, then an
//!   `observation` event whenever an object's observation differs from the
//!   last one sent. Data is one observation. The stream ends (cleanly) when a
//!   cluster watch the job depends on expires or drops, or on shutdown;
//!   subscribe again.
//! - `GET /api/v1/namespaces/{ns}/snapshot` → the snapshot the engine would
//!   read now, in the spec's section 2 format, captured pods included.
//! - `GET /api/v1/namespaces/{ns}/snapshots` → the dashboard stream (SSE).
//! - `GET /healthz` (always `ok`), `GET /readyz` (`{"ready","mode",
//!   "nodesReadable"}`, 503 until every watch has listed once), `GET
//!   /metrics` (Prometheus text).
//!
//! # The dashboard stream (`snapshots`)
//!
//! Each event's data is one line of JSON.
//!
//! - `event: snapshot`, `id: N`: data is a full snapshot (the `snapshot`
//!   route's document). It replaces whatever the client held.
//! - `event: change`, `id: M` (M > N, increasing): data is
//!   `{"upserts":[object..],"deletes":[{"kind","namespace","name","uid"}..],
//!   "captured":[{"trainJobUID","pod",("acrossGap":true)}..],
//!   "capturedDropped":[{"trainJobUID","podUID"}..],("nodesReadable":bool)}`.
//!   Apply it to the held snapshot in this order: remove each `deletes`
//!   entry (by kind, namespace and name), replace-or-add each `upserts`
//!   object (by kind, namespace and name), remove each `capturedDropped`
//!   entry (by TrainJob UID and pod UID), replace-or-add each `captured`
//!   entry (same key), and set `nodesReadable` when present. Objects in
//!   `upserts` and `deletes` are namespace `ns`'s, or Nodes (namespace `""`).
//!   An object appears at most once per event.
//! - Comments (`: keep-alive`) every 15 s on an idle stream.
//!
//! Reconnecting with `Last-Event-ID: <id>` replays the missed `change`
//! events when the server still holds them (the last 1024 per namespace,
//! and no more than `--max-replay-bytes` of them), else starts with a fresh
//! `snapshot`. Ids start from the server's start
//! time in microseconds, so an id from an earlier server process is never
//! mistaken for a recent one. A client that falls more than 256 events
//! behind is disconnected; it reconnects with `Last-Event-ID`.
//!
//! A snapshot classifies, offline, exactly as the server classifies, except
//! for one thing only a long-running reader knows: an object whose TrainJob
//! is gone while a new TrainJob of the same name exists (section 11's last
//! paragraph). The server reports those as orphans; a single snapshot
//! cannot say which UID a pod once belonged to.

pub mod http;
pub mod hub;
pub mod metrics;
pub mod projection;
pub mod store;
pub mod view;
pub mod watch;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::AtomicUsize;
use std::sync::Arc;
use std::time::Duration;

use classify_wasm::Mode;
use kube::config::{KubeConfigOptions, Kubeconfig};
use tokio::sync::{mpsc, watch as signal};
use tokio::task::JoinHandle;

use hub::{Hub, Scope};
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
}

/// Which mode to classify in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ModeChoice {
    /// Kueue when discovery shows the Workload API is served.
    Auto,
    /// Plain mode.
    Plain,
    /// Kueue mode.
    Kueue,
}

/// `dispatch-dash serve` arguments.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,
    /// A namespace to watch (repeatable); default: the context's namespace.
    #[arg(long = "namespace", short = 'n')]
    pub namespaces: Vec<String>,
    /// Watch every namespace.
    #[arg(long, conflicts_with = "namespaces")]
    pub all_namespaces: bool,
    /// Classification mode.
    #[arg(long, value_enum, default_value = "auto")]
    pub mode: ModeChoice,
    /// A kubeconfig file (default: KUBECONFIG, then ~/.kube/config, then in-cluster).
    #[arg(long)]
    pub kubeconfig: Option<PathBuf>,
    /// Require `Authorization: Bearer <token>` on /api (also DISPATCH_DASH_TOKEN).
    #[arg(long)]
    pub token: Option<String>,
    /// The most server-sent event streams open at once.
    #[arg(long, default_value_t = 256)]
    pub max_sse_clients: usize,
    /// The most captured (deleted) pods kept in all.
    #[arg(long, default_value_t = 50_000)]
    pub max_captured_pods: usize,
    /// The most bytes of captured pods kept in all (a number, or with a
    /// Ki, Mi or Gi suffix).
    #[arg(long, default_value = "256Mi", value_parser = store::parse_byte_size)]
    pub max_captured_bytes: usize,
    /// The most bytes of captured pods kept per TrainJob.
    #[arg(long, default_value = "16Mi", value_parser = store::parse_byte_size)]
    pub max_captured_bytes_per_trainjob: usize,
    /// The most bytes of `change` events each namespace keeps for
    /// `Last-Event-ID` resumes.
    #[arg(long, default_value = "64Mi", value_parser = store::parse_byte_size)]
    pub max_replay_bytes: usize,
    /// Run against an embedded, simulated cluster (also the default when no
    /// kubeconfig is found).
    #[arg(long)]
    pub demo: bool,
    /// Embedded cluster: TrainJobs alive at once.
    #[arg(long, default_value_t = 12)]
    pub demo_jobs: usize,
    /// Embedded cluster: pods per TrainJob.
    #[arg(long, default_value_t = 4)]
    pub demo_pods_per_job: usize,
    /// Embedded cluster: milliseconds between scenario steps.
    #[arg(long, default_value_t = 2000)]
    pub demo_pace_ms: u64,
    /// Embedded cluster: serve the Kueue API (`false` for a plain cluster).
    #[arg(long, default_value_t = true, action = clap::ArgAction::Set)]
    pub demo_kueue: bool,
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
    /// Bearer token for /api.
    pub token: Option<String>,
    /// SSE stream cap.
    pub max_sse_clients: usize,
    /// Captured pod caps.
    pub limits: StoreLimits,
}

/// A running server.
#[derive(Debug)]
pub struct Server {
    /// The bound address.
    pub addr: SocketAddr,
    /// The shared state (tests read it).
    pub hub: Arc<Hub>,
    shutdown: signal::Sender<bool>,
    http: JoinHandle<std::io::Result<()>>,
    workers: Vec<JoinHandle<()>>,
}

impl Server {
    /// Stops serving: SSE streams end, in-flight requests finish, the watch
    /// loops stop.
    pub async fn shutdown(self) -> Result<(), Error> {
        let _ = self.shutdown.send(true);
        let served = self.http.await;
        for worker in &self.workers {
            worker.abort();
        }
        match served {
            Ok(result) => result.map_err(Error::from),
            Err(_) => Ok(()),
        }
    }
}

/// Connects, decides the mode and namespaces, starts the watches and the
/// HTTP server. Returns once the listener is bound.
pub async fn start(config: ServerConfig) -> Result<Server, Error> {
    let default_namespace = config.kube.default_namespace.clone();
    let client = kube::Client::try_from(config.kube)?;
    let mode = match config.mode {
        ModeChoice::Plain => Mode::Plain,
        ModeChoice::Kueue => Mode::Kueue,
        ModeChoice::Auto => {
            if watch::kueue_served(&client).await? {
                Mode::Kueue
            } else {
                Mode::Plain
            }
        }
    };
    let scope = if config.all_namespaces {
        Scope::All
    } else if config.namespaces.is_empty() {
        Scope::Namespaces(vec![default_namespace])
    } else {
        Scope::Namespaces(config.namespaces.clone())
    };
    tracing::info!(mode = mode.as_str(), scope = ?scope, "watching");
    let hub = Arc::new(Hub::new(mode, scope, config.limits));
    let (events_tx, events_rx) = mpsc::channel::<WatchEvent>(4096);
    let mut workers = vec![tokio::spawn(ingest_loop(hub.clone(), events_rx))];
    for (kind, scope) in hub.watched_scopes().to_vec() {
        workers.push(tokio::spawn(watch::run(
            client.clone(),
            kind,
            scope,
            events_tx.clone(),
        )));
    }
    let (shutdown, shutdown_rx) = signal::channel(false);
    let state = http::AppState {
        hub: hub.clone(),
        token: config.token.map(Arc::from),
        max_sse_clients: config.max_sse_clients,
        sse_clients: Arc::new(AtomicUsize::new(0)),
        shutdown: shutdown_rx.clone(),
    };
    let listener = tokio::net::TcpListener::bind(config.listen).await?;
    let addr = listener.local_addr()?;
    // The web client, embedded at build time, answers every path the API
    // does not route.
    let app = http::with_assets(http::app(state), crate::assets::router());
    let mut stop = shutdown_rx;
    let http = tokio::spawn(async move {
        axum::serve(listener, app)
            .with_graceful_shutdown(async move {
                let _ = stop.wait_for(|down| *down).await;
            })
            .await
    });
    Ok(Server {
        addr,
        hub,
        shutdown,
        http,
        workers,
    })
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
    }
}

/// Where the kube config comes from.
enum ClusterSource {
    /// A kubeconfig file.
    File(PathBuf),
    /// The pod's service account.
    InCluster,
    /// No cluster: run the embedded one.
    Embedded,
}

fn find_cluster(args: &ServeArgs) -> ClusterSource {
    if args.demo {
        return ClusterSource::Embedded;
    }
    if let Some(path) = &args.kubeconfig {
        return ClusterSource::File(path.clone());
    }
    if let Some(paths) = std::env::var_os("KUBECONFIG") {
        if let Some(path) = std::env::split_paths(&paths).find(|p| p.is_file()) {
            return ClusterSource::File(path);
        }
    }
    if let Some(home) = std::env::var_os("HOME") {
        let path = PathBuf::from(home).join(".kube").join("config");
        if path.is_file() {
            return ClusterSource::File(path);
        }
    }
    if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
        return ClusterSource::InCluster;
    }
    ClusterSource::Embedded
}

/// A kube config from kubeconfig text, as for a file.
pub async fn config_from_kubeconfig_yaml(yaml: &str) -> Result<kube::Config, Error> {
    let kubeconfig = Kubeconfig::from_yaml(yaml)?;
    Ok(kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?)
}

async fn wait_for_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        _ = ctrl_c => {},
        _ = terminate => {},
    }
}

/// Runs `dispatch-dash serve` until SIGTERM or ctrl-c.
pub async fn run(args: ServeArgs) -> Result<(), Error> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .try_init();
    let token = args
        .token
        .clone()
        .or_else(|| std::env::var("DISPATCH_DASH_TOKEN").ok())
        .filter(|t| !t.is_empty());
    if token
        .as_ref()
        .is_some_and(|t| !t.bytes().all(|b| b.is_ascii_graphic()))
    {
        return Err(Error::BadToken);
    }
    let mut namespaces = args.namespaces.clone();
    let mut embedded = None;
    let kube_config = match find_cluster(&args) {
        ClusterSource::File(path) => {
            tracing::info!(kubeconfig = %path.display(), "using kubeconfig");
            let kubeconfig = Kubeconfig::read_from(&path)?;
            kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?
        }
        ClusterSource::InCluster => kube::Config::incluster()?,
        ClusterSource::Embedded => {
            let (running, scenario_namespaces, stop_scenario) = start_embedded(&args).await?;
            if namespaces.is_empty() && !args.all_namespaces {
                namespaces = scenario_namespaces;
            }
            let config = config_from_kubeconfig_yaml(&running.kubeconfig_yaml()).await?;
            embedded = Some((running, stop_scenario));
            config
        }
    };
    let server = start(ServerConfig {
        kube: kube_config,
        namespaces,
        all_namespaces: args.all_namespaces,
        mode: args.mode,
        listen: args.listen,
        token,
        max_sse_clients: args.max_sse_clients,
        limits: StoreLimits {
            captured_total: args.max_captured_pods,
            captured_bytes_total: args.max_captured_bytes,
            captured_bytes_per_trainjob: args.max_captured_bytes_per_trainjob,
            replay_bytes_per_namespace: args.max_replay_bytes,
            ..StoreLimits::default()
        },
    })
    .await?;
    tracing::info!("dispatch-dash is serving on http://{}/", server.addr);
    wait_for_signal().await;
    tracing::info!("shutting down");
    let result = server.shutdown().await;
    if let Some((running, stop_scenario)) = embedded {
        let _ = stop_scenario.send(());
        running.shutdown().await;
    }
    result
}

/// Starts the emulator on 127.0.0.1:0 and the scenario driver.
async fn start_embedded(
    args: &ServeArgs,
) -> Result<
    (
        emulator::RunningEmulator,
        Vec<String>,
        tokio::sync::oneshot::Sender<()>,
    ),
    Error,
> {
    let scenario = emulator::scenario::ScenarioConfig {
        jobs: args.demo_jobs,
        pods_per_job: args.demo_pods_per_job,
        pace: Duration::from_millis(args.demo_pace_ms.max(1)),
        kueue: args.demo_kueue,
        ..emulator::scenario::ScenarioConfig::default()
    };
    let namespaces = scenario.namespaces.clone();
    let emu = emulator::Emulator::new(emulator::EmulatorConfig {
        kueue: args.demo_kueue,
        default_namespace: namespaces
            .first()
            .cloned()
            .unwrap_or_else(|| "default".into()),
        ..emulator::EmulatorConfig::default()
    });
    let running = emu.serve(([127, 0, 0, 1], 0).into()).await?;
    tracing::info!(url = %running.url(), "no cluster configured: running an embedded, simulated one");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(emulator::scenario::run(emu, scenario, async move {
        let _ = stopped.await;
    }));
    Ok((running, namespaces, stop))
}
