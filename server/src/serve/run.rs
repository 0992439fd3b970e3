//! The `serve` command: from its flags to a running server, on the
//! cluster a kubeconfig or the pod names, or on the embedded one, until a
//! signal or a worker's end stops it.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use kube::config::{KubeConfigOptions, Kubeconfig};

use super::listen::ConnectionLimits;
use super::store::StoreLimits;
use super::{
    auth_config, budget, byte_bounds, config_from_kubeconfig_yaml, demo_users, health, notify,
    persist, positions, start_with_state, tls, Error, HttpSettings, ServeArgs, ServerConfig,
};

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

/// The most steps one SIGUSR1 plays on a still demo: enough for any line of
/// the demo to move, few enough that a demo without Kueue answers at once.
const MOVE_ON_MAX_STEPS: usize = 200;

/// A still demo's scenario: on each SIGUSR1 it plays steps until the line of
/// `namespace`'s LocalQueue changes, then stands still again. A test or a
/// screenshot makes a queue move exactly when it is ready to see it, instead
/// of racing a living demo.
async fn move_on_request(
    mut scenario: emulator::scenario::Scenario,
    emu: emulator::Emulator,
    namespace: String,
    stopped: tokio::sync::oneshot::Receiver<()>,
) {
    #[cfg(unix)]
    {
        let Ok(mut signal) =
            tokio::signal::unix::signal(tokio::signal::unix::SignalKind::user_defined1())
        else {
            return;
        };
        let mut stopped = std::pin::pin!(stopped);
        loop {
            tokio::select! {
                _ = &mut stopped => return,
                Some(()) = signal.recv() => {
                    match scenario.step_until_the_line_moves(&emu, &namespace, MOVE_ON_MAX_STEPS) {
                        Some(steps) => tracing::info!(
                            steps, namespace = %namespace,
                            "the embedded cluster moved on until its line changed (SIGUSR1)"
                        ),
                        None => tracing::info!(
                            steps = MOVE_ON_MAX_STEPS, namespace = %namespace,
                            "the embedded cluster moved on; its line did not change (SIGUSR1)"
                        ),
                    }
                }
                else => return,
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (scenario, emu, namespace, stopped.await);
    }
}

/// The embedded cluster while it runs, and how to stop its scenario.
type Embedded = (emulator::RunningEmulator, tokio::sync::oneshot::Sender<()>);

/// Runs `dispatch-dash serve` until SIGTERM or ctrl-c.
pub async fn run(args: ServeArgs) -> Result<(), Error> {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info")),
        )
        .try_init();
    let mut auth = auth_config(&args, std::env::var("DISPATCH_DASH_TOKEN").ok())?;
    let tls_config = match (&args.tls_cert_file, &args.tls_key_file) {
        (Some(cert), Some(key)) => Some(Arc::new(tls::TlsConfig::load(tls::TlsFiles {
            cert: cert.clone(),
            key: key.clone(),
        })?)),
        _ => None,
    };
    let bounds = memory_bounds(&args);
    auth.max_cache_bytes = bounds.auth_cache;
    auth.max_session_bytes = bounds.sessions;
    // Before anything else: a corrupt, locked or newer database stops the
    // start with its name, and nothing is listed into a store that would
    // not be restored.
    let state = match &args.state_dir {
        Some(dir) => {
            let state = persist::StateDir::open(dir)?;
            tracing::info!(file = %state.path().display(), "using the state directory");
            Some(state)
        }
        None => None,
    };
    let notify = notify_config(&args)?;
    let (kube, namespaces, embedded) = cluster_config(&args).await?;
    let demo = embedded.is_some();
    let config = ServerConfig {
        kube,
        namespaces,
        all_namespaces: args.all_namespaces,
        mode: args.mode,
        listen: args.listen,
        auth,
        max_sse_clients: args.max_sse_clients,
        limits: store_limits(&args, &bounds),
        http: http_settings(&args, tls_config.clone()),
        demo,
        unready_after: health::UNREADY_AFTER,
        notify,
    };
    let mut server = start_with_state(config, state).await?;
    let scheme = if tls_config.is_some() {
        "https"
    } else {
        "http"
    };
    tracing::info!("dispatch-dash is serving on {scheme}://{}/", server.addr);
    let ended = tokio::select! {
        _ = wait_for_signal() => None,
        end = server.supervise() => Some(end),
    };
    match &ended {
        None => tracing::info!("shutting down"),
        Some(end) => tracing::error!(%end, "a worker ended; shutting down"),
    }
    let result = server.shutdown().await;
    if let Some((running, stop_scenario)) = embedded {
        let _ = stop_scenario.send(());
        running.shutdown().await;
    }
    match ended {
        Some(end) => Err(Error::WorkerEnded(end)),
        None => result,
    }
}

/// The byte bounds, as shares of the memory budget unless a flag sets one;
/// logged, and warned of when the flags add up past the budget.
fn memory_bounds(args: &ServeArgs) -> budget::ByteBounds {
    let budget = budget::MemoryBudget::of_this_process(args.memory_budget);
    let bounds = byte_bounds(args, &budget);
    tracing::info!(
        budget = budget.bytes,
        source = ?budget.source,
        bounds = ?bounds,
        "memory budget"
    );
    if bounds.sum() > budget.bytes {
        tracing::warn!(
            budget = budget.bytes,
            bounds = bounds.sum(),
            "the --max-…-bytes flags add up past the memory budget"
        );
    }
    bounds
}

/// The webhooks of `--notify-url-file`, read now so a missing file stops
/// the start.
fn notify_config(args: &ServeArgs) -> Result<Option<notify::NotifyConfig>, Error> {
    if args.notify_url_files.is_empty() {
        return Ok(None);
    }
    let urls = args
        .notify_url_files
        .iter()
        .map(|path| notify::read_url_file(path))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Some(notify::NotifyConfig {
        urls,
        format: args.notify_format,
        namespaces: args.notify_namespaces.clone(),
        public_url: args.public_url.clone().unwrap_or_default(),
        settle: args.notify_settle,
        pending_after: args.notify_pending_after,
    }))
}

/// How to reach the cluster, the namespaces to watch, and the embedded
/// cluster when there is no other (its scenario's namespaces are watched
/// unless some were named).
async fn cluster_config(
    args: &ServeArgs,
) -> Result<(kube::Config, Vec<String>, Option<Embedded>), Error> {
    let mut namespaces = args.namespaces.clone();
    let cluster = find_cluster(args);
    if !matches!(cluster, ClusterSource::Embedded) && args.demo_users.is_some() {
        // A real cluster's users are its own; pretending otherwise would
        // mislead whoever reads the flag.
        return Err(Error::AuthFlags(
            "--demo-users is for the embedded cluster only; a real cluster knows its own users",
        ));
    }
    let (config, embedded) = match cluster {
        ClusterSource::File(path) => {
            tracing::info!(kubeconfig = %path.display(), "using kubeconfig");
            let kubeconfig = Kubeconfig::read_from(&path)?;
            let config =
                kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                    .await?;
            (config, None)
        }
        ClusterSource::InCluster => (kube::Config::incluster()?, None),
        ClusterSource::Embedded => {
            let (running, scenario_namespaces, stop_scenario) = start_embedded(args).await?;
            if namespaces.is_empty() && !args.all_namespaces {
                namespaces = scenario_namespaces;
            }
            let config = config_from_kubeconfig_yaml(&running.kubeconfig_yaml()).await?;
            (config, Some((running, stop_scenario)))
        }
    };
    Ok((config, namespaces, embedded))
}

fn store_limits(args: &ServeArgs, bounds: &budget::ByteBounds) -> StoreLimits {
    StoreLimits {
        captured_total: args.max_captured_pods,
        captured_bytes_total: bounds.captured_total,
        captured_bytes_per_trainjob: bounds.captured_per_trainjob,
        replay_bytes_per_namespace: bounds.replay_per_namespace,
        replay_bytes_total: bounds.replay_total,
        history_bytes: bounds.history,
        history_retention: args.history_retention,
        ..StoreLimits::default()
    }
}

fn http_settings(args: &ServeArgs, tls: Option<Arc<tls::TlsConfig>>) -> HttpSettings {
    HttpSettings {
        allowed_hosts: args.allowed_hosts.clone(),
        connections: ConnectionLimits {
            max_connections: args.max_connections.max(1),
            max_connections_per_client: args.max_connections_per_client.max(1),
            header_read_timeout: args.header_read_timeout,
            write_timeout: args.write_timeout,
        },
        probe_listen: args.probe_listen,
        tls,
        tls_reload_every: tls::RELOAD_EVERY,
        public_url: args.public_url.clone(),
        positions: positions::PositionLimits::default(),
        request_timeout: args.request_timeout,
        max_sse_per_client: args.max_sse_per_client.max(1),
    }
}

/// Starts the emulator on 127.0.0.1:0 and the scenario driver. The
/// population and the warm-up steps are played before this returns, so the
/// first list of every watch sees them: with `--demo-still` the cluster the
/// server reads is then fixed by the seed alone.
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
        seed: args.demo_seed,
        jobs: args.demo_jobs,
        pods_per_job: args.demo_pods_per_job,
        pace: Duration::from_millis(args.demo_pace_ms.max(1)),
        kueue: args.demo_kueue,
        ..emulator::scenario::ScenarioConfig::default()
    };
    let namespaces = scenario.namespaces.clone();
    let emu = emulator::Emulator::new(emulator::EmulatorConfig {
        kueue: args.demo_kueue,
        // Like Kueue's current CRD: v1beta2 stored, v1beta1 deprecated.
        workload_versions: emulator::WorkloadVersions::Both,
        default_namespace: namespaces
            .first()
            .cloned()
            .unwrap_or_else(|| "default".into()),
        ..emulator::EmulatorConfig::default()
    });
    if let Some(path) = &args.demo_users {
        let users = demo_users::read(path)?;
        demo_users::install(&emu, &users);
        tracing::info!(users = users.len(), file = %path.display(), "the embedded cluster knows these users");
    }
    let mut scenario = emulator::scenario::populate(&emu, scenario);
    for _ in 0..args.demo_warmup_steps {
        scenario.step(&emu);
    }
    let running = emu.serve(([127, 0, 0, 1], 0).into()).await?;
    tracing::info!(
        url = %running.url(),
        "serving an embedded, SIMULATED cluster (demo): its jobs are not real. \
         To watch a real cluster, pass --kubeconfig FILE, set KUBECONFIG, or create ~/.kube/config, \
         and leave out --demo"
    );
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    if args.demo_still {
        tracing::info!(
            steps = args.demo_warmup_steps,
            "the embedded cluster stands still (--demo-still); SIGUSR1 moves it on \
             until the line of the first namespace's LocalQueue changes"
        );
        let first = namespaces.first().cloned().unwrap_or_default();
        tokio::spawn(move_on_request(scenario, emu, first, stopped));
    } else {
        tokio::spawn(scenario.run(emu, async move {
            let _ = stopped.await;
        }));
    }
    Ok((running, namespaces, stop))
}
