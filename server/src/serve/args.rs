//! The `serve` command's flags ([`ServeArgs`]) and their checks: the
//! duration and URL parsers, the auth settings and the exposure rules a
//! start is refused for, and the byte bounds the flags override.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use super::{auth, budget, notify, store, Error};

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
    /// How requests are authenticated: `kubernetes` (TokenReview and
    /// SubjectAccessReview against the cluster), `token` (one shared
    /// secret) or `none`. Default: `token` when a token is given, else `none`.
    #[arg(long, value_enum)]
    pub auth: Option<auth::AuthMode>,
    /// The shared secret of `--auth token` (also DISPATCH_DASH_TOKEN).
    #[arg(long, conflicts_with = "token_file")]
    pub token: Option<auth::Secret>,
    /// A file holding the shared secret (one trailing newline is dropped).
    #[arg(long)]
    pub token_file: Option<PathBuf>,
    /// `--auth kubernetes`: the audience TokenReviews ask for and a token
    /// must be good for, e.g. `dispatch-dash`; mint one with `kubectl
    /// create token SA --audience NAME`. Default: the API server's own.
    #[arg(long, value_name = "NAME")]
    pub token_audience: Option<String>,
    /// Serve HTTPS with this PEM certificate chain (with
    /// `--tls-key-file`); both files are read again every 10 s and a
    /// renewed pair is used from the next connection on.
    #[arg(long, value_name = "FILE", requires = "tls_key_file")]
    pub tls_cert_file: Option<PathBuf>,
    /// The PEM private key of `--tls-cert-file`.
    #[arg(long, value_name = "FILE", requires = "tls_cert_file")]
    pub tls_key_file: Option<PathBuf>,
    /// Serve `--auth kubernetes` on a non-loopback address over plain HTTP
    /// with no `--trusted-proxy` in front: tokens and session cookies then
    /// cross the network in the clear, so it must be asked for.
    #[arg(long)]
    pub allow_plaintext: bool,
    /// Serve without authentication on a non-loopback address.
    #[arg(long)]
    pub allow_unauthenticated: bool,
    /// A proxy (address or CIDR, repeatable) whose `X-Forwarded-Proto:
    /// https` marks the session cookie `Secure`.
    #[arg(long = "trusted-proxy", value_name = "CIDR")]
    pub trusted_proxies: Vec<auth::IpNet>,
    /// A session ends after this long unused, e.g. `8h`, `30m`.
    #[arg(long, default_value = "8h", value_parser = parse_duration)]
    pub session_idle_timeout: Duration,
    /// The most sessions kept; past it the longest idle is ended.
    #[arg(long, default_value_t = 10_000)]
    pub max_sessions: usize,
    /// The most server-sent event streams open at once.
    #[arg(long, default_value_t = 256)]
    pub max_sse_clients: usize,
    /// The most server-sent event streams open at once from one client
    /// address (behind a port-forward or a proxy every user shares one).
    #[arg(long, default_value_t = 64)]
    pub max_sse_per_client: usize,
    /// A Host name to serve besides localhost, the loopback addresses and
    /// the listen address (repeatable): the Service's DNS name, or the name
    /// a proxy forwards. Other Host values get 421, against DNS rebinding.
    #[arg(long = "allowed-host", value_name = "NAME")]
    pub allowed_hosts: Vec<String>,
    /// The address users open the dashboard at, e.g.
    /// `https://dispatch-dash.example.com`: links in alerts
    /// (`dispatch_dash_info`) and notifications start with it.
    #[arg(long, value_name = "URL", value_parser = parse_public_url)]
    pub public_url: Option<String>,
    /// A file holding a webhook URL (a secret: it is never logged) to post
    /// to when a TrainJob ends with any cause but `completed` or becomes
    /// held (repeatable); needs `--public-url` for the links.
    #[arg(long = "notify-url-file", value_name = "FILE", requires = "public_url")]
    pub notify_url_files: Vec<PathBuf>,
    /// The body notifications post: a Slack incoming-webhook message, or
    /// the JSON event of docs/monitoring.md.
    #[arg(long, value_enum, default_value = "json")]
    pub notify_format: notify::Format,
    /// Notify only of TrainJobs in this namespace (repeatable; default
    /// all watched).
    #[arg(long = "notify-namespace", value_name = "NAMESPACE")]
    pub notify_namespaces: Vec<String>,
    /// How long a TrainJob's news settles before it is sent, so a failure
    /// seen in steps (the TrainJob, then the pod that says why) is sent
    /// once, with its cause, e.g. `5s`.
    #[arg(long, default_value = "5s", value_parser = parse_duration)]
    pub notify_settle: Duration,
    /// Also notify of a TrainJob pending longer than this, once per wait,
    /// e.g. `2h`, `30m` (default: never).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub notify_pending_after: Option<Duration>,
    /// The most HTTP connections open at once; at it the longest-idle
    /// keep-alive connection is closed for a new one, and with none idle
    /// the new one is closed.
    #[arg(long, default_value_t = 1024)]
    pub max_connections: usize,
    /// The most HTTP connections open at once from one client address
    /// (behind a proxy every user shares one); at it that address's
    /// longest-idle connection makes room, else the new one is closed.
    #[arg(long, default_value_t = 256)]
    pub max_connections_per_client: usize,
    /// Also serve `/healthz` and `/readyz`, and nothing else, on this
    /// address, with connection slots of its own: point the kubelet's
    /// probes here, so a crowd on the main port cannot fail them.
    #[arg(long, value_name = "ADDR")]
    pub probe_listen: Option<SocketAddr>,
    /// The time a connection has to send a whole request head, from when it
    /// opened or finished its previous response (so also the keep-alive
    /// idle limit), e.g. `10s`, `500ms`.
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub header_read_timeout: Duration,
    /// The time a write may make no progress before the connection is
    /// dropped (a client that stopped reading its event stream).
    #[arg(long, default_value = "10s", value_parser = parse_duration)]
    pub write_timeout: Duration,
    /// The time a request may take to be answered (an event stream's life
    /// is not bounded, only its start).
    #[arg(long, default_value = "30s", value_parser = parse_duration)]
    pub request_timeout: Duration,
    /// The most captured (deleted) pods kept in all.
    #[arg(long, default_value_t = 50_000)]
    pub max_captured_pods: usize,
    /// The memory the bounded parts (captured pods, replay rings, history,
    /// auth caches, sessions) may take together, a number or with a Ki, Mi
    /// or Gi suffix; every byte bound below is a share of it. Default: half
    /// the cgroup's memory limit, else 512Mi (see docs/security.md).
    #[arg(long, value_name = "SIZE", value_parser = store::parse_byte_size)]
    pub memory_budget: Option<usize>,
    /// The most bytes of captured pods kept in all. Default: 35% of the
    /// memory budget.
    #[arg(long, value_name = "SIZE", value_parser = store::parse_byte_size)]
    pub max_captured_bytes: Option<usize>,
    /// The most bytes of captured pods kept per TrainJob. Default: a
    /// sixteenth of `--max-captured-bytes`.
    #[arg(long, value_name = "SIZE", value_parser = store::parse_byte_size)]
    pub max_captured_bytes_per_trainjob: Option<usize>,
    /// The most bytes of `change` events each namespace keeps for
    /// `Last-Event-ID` resumes. Default: a quarter of
    /// `--max-replay-bytes-total`.
    #[arg(long, value_name = "SIZE", value_parser = store::parse_byte_size)]
    pub max_replay_bytes: Option<usize>,
    /// The most bytes of `change` events all namespaces keep together (with
    /// `--all-namespaces` there are as many rings as namespaces). Default:
    /// 25% of the memory budget.
    #[arg(long, value_name = "SIZE", value_parser = store::parse_byte_size)]
    pub max_replay_bytes_total: Option<usize>,
    /// Keep the evidence (captured pods, pod owners, last seen pods and
    /// TrainJobs, observation history) in DIR/state.db, restored at start.
    #[arg(long, value_name = "DIR")]
    pub state_dir: Option<PathBuf>,
    /// Objects gone for longer than this lose their observation history,
    /// e.g. `7d`, `36h`.
    #[arg(long, default_value = "7d", value_parser = parse_retention)]
    pub history_retention: Duration,
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
    /// Embedded cluster: the seed of every simulated choice (the same seed
    /// plays the same stories).
    #[arg(long, default_value_t = 7)]
    pub demo_seed: u64,
    /// Embedded cluster: scenario steps played at once before serving, so
    /// the cluster starts mid-life (jobs already ended, restarted, orphaned).
    #[arg(long, default_value_t = 0)]
    pub demo_warmup_steps: u64,
    /// Embedded cluster: stand still after the warm-up, so nothing changes
    /// by itself (for screenshots, demos to a room, and tests). SIGUSR1
    /// moves it on until the first namespace's queue line changes.
    #[arg(long)]
    pub demo_still: bool,
    /// Embedded cluster: people its TokenReviews and SubjectAccessReviews
    /// know, one `TOKEN USER NAMESPACE[,NAMESPACE...]` per line, so that
    /// `--auth kubernetes` can be tried on the demo (see
    /// [`demo_users`](crate::serve::demo_users)).
    #[arg(long, value_name = "FILE")]
    pub demo_users: Option<PathBuf>,
}

/// `--public-url`: an absolute `http` or `https` URL with a host, and no
/// query or fragment (links append their own); one trailing `/` is dropped.
pub fn parse_public_url(text: &str) -> Result<String, String> {
    let rest = text
        .strip_prefix("https://")
        .or_else(|| text.strip_prefix("http://"))
        .ok_or_else(|| format!("{text:?} must start with https:// or http://"))?;
    let host = rest.split('/').next().unwrap_or_default();
    if host.is_empty() {
        return Err(format!("{text:?} has no host"));
    }
    if let Some(bad) = text.chars().find(|c| {
        matches!(c, '?' | '#' | '"' | '<' | '>' | '\\' | '`') || c.is_whitespace() || c.is_control()
    }) {
        return Err(format!("{text:?} may not hold {bad:?}"));
    }
    Ok(text.strip_suffix('/').unwrap_or(text).to_string())
}

/// A duration flag: `10s`, `500ms`, `2m`, or plain seconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    parse_duration_within(text, 7.0 * 86_400.0, "a week")
}

/// A retention flag: as [`parse_duration`], also in days (`7d`), up to
/// a year.
pub fn parse_retention(text: &str) -> Result<Duration, String> {
    parse_duration_within(text, 366.0 * 86_400.0, "a year")
}

fn parse_duration_within(text: &str, max_seconds: f64, max_name: &str) -> Result<Duration, String> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration such as 10s or 500ms"))?;
    let seconds = match unit {
        "" | "s" => value,
        "ms" => value / 1000.0,
        "m" => value * 60.0,
        "h" => value * 3600.0,
        "d" => value * 86_400.0,
        _ => return Err(format!("{text:?}: the unit must be ms, s, m, h or d")),
    };
    if !seconds.is_finite() || seconds <= 0.0 || seconds > max_seconds {
        return Err(format!(
            "{text:?} must be more than 0 and at most {max_name}"
        ));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// The byte bounds of `budget`, each replaced by its flag when given; a
/// per-TrainJob or per-namespace share follows its total's flag.
pub fn byte_bounds(args: &ServeArgs, budget: &budget::MemoryBudget) -> budget::ByteBounds {
    let derived = budget.bounds();
    let captured_total = args.max_captured_bytes.unwrap_or(derived.captured_total);
    let replay_total = args.max_replay_bytes_total.unwrap_or(derived.replay_total);
    budget::ByteBounds {
        captured_total,
        captured_per_trainjob: args
            .max_captured_bytes_per_trainjob
            .unwrap_or(captured_total / budget::PER_TRAINJOB_DIVISOR),
        replay_total,
        replay_per_namespace: args
            .max_replay_bytes
            .unwrap_or(replay_total / budget::PER_NAMESPACE_DIVISOR),
        ..derived
    }
}

/// The auth settings from the flags and the environment (`env_token`:
/// DISPATCH_DASH_TOKEN): the mode defaults to `token` when a token is given,
/// else `none`; a token from a file or the environment loses one trailing
/// newline; an empty token is an error, as is `--auth none` on a
/// non-loopback address without `--allow-unauthenticated`.
pub fn auth_config(args: &ServeArgs, env_token: Option<String>) -> Result<auth::AuthConfig, Error> {
    let token = match (&args.token, &args.token_file) {
        (Some(token), _) => Some(token.expose().to_string()),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path).map_err(|source| Error::TokenFile {
                path: path.clone(),
                source,
            })?;
            Some(auth::strip_one_newline(&text).to_string())
        }
        (None, None) => env_token.map(|t| auth::strip_one_newline(&t).to_string()),
    };
    if let Some(token) = &token {
        if token.is_empty() {
            return Err(Error::EmptyToken);
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            return Err(Error::BadToken);
        }
    }
    let mode = match (args.auth, &token) {
        (Some(mode), _) => mode,
        (None, Some(_)) => auth::AuthMode::Token,
        (None, None) => auth::AuthMode::None,
    };
    match (mode, &token) {
        (auth::AuthMode::Token, None) => {
            return Err(Error::AuthFlags(
                "--auth token needs a token: --token, --token-file or DISPATCH_DASH_TOKEN",
            ))
        }
        (auth::AuthMode::Kubernetes | auth::AuthMode::None, Some(_)) => {
            return Err(Error::AuthFlags(
                "a token is given (--token, --token-file or DISPATCH_DASH_TOKEN) but --auth is not token",
            ))
        }
        _ => {}
    }
    check_exposure(args.listen, mode, args.allow_unauthenticated)?;
    if mode == auth::AuthMode::Kubernetes
        && !args.listen.ip().is_loopback()
        && args.trusted_proxies.is_empty()
        && args.tls_cert_file.is_none()
        && !args.allow_plaintext
    {
        return Err(Error::Plaintext(args.listen));
    }
    if args.token_audience.is_some() && mode != auth::AuthMode::Kubernetes {
        return Err(Error::AuthFlags(
            "--token-audience is for --auth kubernetes (the audience its TokenReviews ask for)",
        ));
    }
    Ok(auth::AuthConfig {
        mode,
        token: token.map(auth::Secret::from),
        token_audience: args.token_audience.clone().filter(|a| !a.is_empty()),
        session_idle_timeout: args.session_idle_timeout,
        max_sessions: args.max_sessions.max(1),
        trusted_proxies: args.trusted_proxies.clone(),
        ..auth::AuthConfig::default()
    })
}

/// Refuses `--auth none` on an address other machines reach, unless
/// `--allow-unauthenticated`.
pub fn check_exposure(
    listen: SocketAddr,
    mode: auth::AuthMode,
    allow_unauthenticated: bool,
) -> Result<(), Error> {
    if mode == auth::AuthMode::None && !listen.ip().is_loopback() && !allow_unauthenticated {
        return Err(Error::Unauthenticated(listen));
    }
    Ok(())
}
