//! Who is asking, and what they may see: the auth modes, Kubernetes
//! TokenReviews and SubjectAccessReviews, and the short-lived cache of their
//! answers.
//!
//! - `none`: every request is served; nobody is identified.
//! - `token`: one shared secret, compared in constant time.
//! - `kubernetes`: the presented token is checked with a TokenReview
//!   (`authentication.k8s.io/v1`); a user sees namespace N only when
//!   SubjectAccessReviews (`authorization.k8s.io/v1`) allow them to `list`
//!   `trainjobs.trainer.kubeflow.org` and `list` `pods` in N; `/metrics`
//!   needs `get` on the non-resource URL `/metrics` (kube-rbac-proxy's
//!   convention). The reviews go through the server's own client, whose
//!   identity needs `system:auth-delegator` ([`Authenticator::check_delegation`]).
//!
//! Answers are cached by the SHA-256 of the token (raw tokens are never
//! keys): an allow for at most [`AuthConfig::allow_ttl`], a deny for
//! [`AuthConfig::deny_ttl`], in at most [`AuthConfig::max_cache_entries`]
//! entries and [`AuthConfig::max_cache_bytes`] bytes per cache; expired
//! entries are purged as new ones come. A stream's periodic re-check asks
//! for answers no older than its interval, so a revocation reaches an open
//! stream within two intervals.
//!
//! What a caller can make the cluster do is bounded too: a `{ns}` that is
//! not a DNS-1123 label is refused before any review ([`is_namespace_name`]),
//! review misses are rate-limited per identity and failed authentications
//! per client address ([`super::limiter`]), and at most
//! [`MAX_REVIEWS_IN_FLIGHT`] reviews are in flight at once.

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::time::{Duration, Instant};

use std::sync::Arc;

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SelfSubjectAccessReview,
    SelfSubjectAccessReviewSpec, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use sha2::{Digest, Sha256};
use tokio::sync::Semaphore;

use super::limiter::{Rate, RateLimiter};

mod cache;
mod net;

pub use cache::{DecisionCache, Weigh};
pub use net::{came_over_https, IpNet};

/// The ClusterRole the server's own identity must be bound to in
/// `kubernetes` mode.
pub const AUTH_DELEGATOR_ROLE: &str = "system:auth-delegator";

/// Reviews (TokenReviews and SubjectAccessReviews) in flight at once; more
/// wait their turn, within the request's time limit.
pub const MAX_REVIEWS_IN_FLIGHT: usize = 32;

/// How fast one identity may cost SubjectAccessReviews (cache misses).
pub const REVIEW_MISS_RATE: Rate = Rate {
    burst: 64.0,
    per_second: 8.0,
};

/// How fast one client address may fail to authenticate.
pub const FAILED_AUTH_RATE: Rate = Rate {
    burst: 20.0,
    per_second: 1.0,
};

/// A secret: a token, or the shared secret of `--auth token`. Its `Debug`
/// says `[redacted]`, so no log line, panic message or `{:?}` shows it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(Arc<str>);

impl Secret {
    /// The secret's text, for comparing and sending it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("[redacted]")
    }
}

impl From<&str> for Secret {
    fn from(text: &str) -> Self {
        Secret(text.into())
    }
}

impl From<String> for Secret {
    fn from(text: String) -> Self {
        Secret(text.into())
    }
}

impl<'de> serde::Deserialize<'de> for Secret {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        String::deserialize(deserializer).map(Secret::from)
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        Ok(Secret::from(text))
    }
}

/// Whether `name` can name a namespace: a DNS-1123 label (at most 63
/// lowercase letters, digits and `-`, starting and ending with a letter or
/// digit), as the API server requires. Anything else is refused before a
/// review is asked, so a long or odd path costs the cluster nothing.
pub fn is_namespace_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    let alphanumeric = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes.first().is_some_and(alphanumeric)
        && bytes.last().is_some_and(alphanumeric)
        && bytes.iter().all(|b| alphanumeric(b) || *b == b'-')
}

/// Kueue's visibility API group, which serves a LocalQueue's pending
/// Workloads with their positions.
pub const VISIBILITY_GROUP: &str = "visibility.kueue.x-k8s.io";

/// Whether `name` can name a cluster-scoped object such as a
/// ClusterQueue: a DNS-1123 subdomain (at most 253 characters, labels of
/// [`is_namespace_name`] joined by `.`).
pub fn is_subdomain_name(name: &str) -> bool {
    name.len() <= 253 && name.split('.').all(is_namespace_name)
}

/// Errors of authentication and authorization.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// No identity was presented, or the cluster (or the shared token)
    /// rejected it.
    #[error("unauthenticated")]
    Unauthenticated,
    /// A review could not be made (the API server is unreachable or
    /// refused the server's own identity).
    #[error("a review failed: {0}")]
    Review(#[from] kube::Error),
    /// The API server answered a review without a status.
    #[error("a review came back without a status")]
    NoStatus,
    /// The caller (an identity, or a client address) asked for reviews
    /// faster than its rate; it should try again shortly.
    #[error("too many review misses; slow down")]
    RateLimited,
    /// The server's own identity may not create the reviews.
    #[error(
        "the server's own identity may not create {missing}: bind it to the ClusterRole \
         `{AUTH_DELEGATOR_ROLE}` (deploy/rbac.yaml does), or run with --auth token or --auth none"
    )]
    MissingDelegation {
        /// The resources it may not create.
        missing: String,
    },
}

/// How requests are authenticated.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthMode {
    /// Nobody is identified; every request is served.
    None,
    /// One shared bearer token.
    Token,
    /// Kubernetes identities: TokenReview and SubjectAccessReview.
    Kubernetes,
}

impl AuthMode {
    /// The mode's name, as `--auth` and the session document spell it.
    pub fn as_str(self) -> &'static str {
        match self {
            AuthMode::None => "none",
            AuthMode::Token => "token",
            AuthMode::Kubernetes => "kubernetes",
        }
    }
}

/// The auth settings.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// The mode.
    pub mode: AuthMode,
    /// The shared token of `token` mode.
    pub token: Option<Secret>,
    /// `kubernetes` mode: the audience TokenReviews ask for, and a token's
    /// review must name in `status.audiences` (`--token-audience`), so a
    /// token minted for another service is not accepted here.
    pub token_audience: Option<String>,
    /// How long an allow (a valid token, a permitted access) is cached.
    pub allow_ttl: Duration,
    /// How long a deny is cached.
    pub deny_ttl: Duration,
    /// Entries per cache at most.
    pub max_cache_entries: usize,
    /// Bytes per cache at most (keys and answers, as held).
    pub max_cache_bytes: usize,
    /// How often an open event stream re-checks its caller's access.
    pub recheck_interval: Duration,
    /// A session ends after this long unused.
    pub session_idle_timeout: Duration,
    /// Sessions at most; past it the longest idle one is evicted.
    pub max_sessions: usize,
    /// Bytes of all sessions at most (ids and tokens, as held); past it
    /// the longest idle one is evicted.
    pub max_session_bytes: usize,
    /// Peers whose `X-Forwarded-Proto` is believed.
    pub trusted_proxies: Vec<IpNet>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            mode: AuthMode::None,
            token: None,
            token_audience: None,
            allow_ttl: Duration::from_secs(60),
            deny_ttl: Duration::from_secs(10),
            max_cache_entries: 10_000,
            max_cache_bytes: 4 * 1024 * 1024,
            recheck_interval: Duration::from_secs(30),
            session_idle_timeout: Duration::from_secs(8 * 3600),
            max_sessions: 10_000,
            max_session_bytes: 32 * 1024 * 1024,
            trusted_proxies: Vec::new(),
        }
    }
}

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    /// The user name (`token` mode: `token`).
    pub user: String,
    /// The user's UID, when the cluster gave one.
    pub uid: Option<String>,
    /// The user's groups.
    pub groups: Vec<String>,
    /// The TokenReview's `extra`, passed on to SubjectAccessReviews.
    pub extra: BTreeMap<String, Vec<String>>,
}

/// The cache key of a token: its SHA-256, so no raw token is kept.
pub fn token_key(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// What a caller asks access to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Access {
    /// `list` TrainJobs and pods in a namespace.
    Namespace(String),
    /// `list` TrainJobs and pods in every namespace (one review that, when
    /// it allows, answers for all of them).
    AllNamespaces,
    /// `get` on `/metrics`.
    Metrics,
    /// `get` on one Kueue ClusterQueue (its quota, for the queue facts).
    ClusterQueue(String),
    /// `list` Kueue LocalQueues in a namespace (their status, for the
    /// queue facts).
    LocalQueues(String),
    /// `get` on `localqueues/pendingworkloads` of Kueue's visibility API
    /// for one LocalQueue (namespace, name): its place in line.
    PendingWorkloads(String, String),
}

impl Weigh for Access {
    fn weight(&self) -> usize {
        std::mem::size_of::<Self>()
            + match self {
                Access::Namespace(ns) | Access::ClusterQueue(ns) | Access::LocalQueues(ns) => {
                    ns.len()
                }
                Access::PendingWorkloads(ns, name) => ns.len() + name.len(),
                Access::AllNamespaces | Access::Metrics => 0,
            }
    }
}

/// Which namespaces of a list one caller may see, as last reviewed.
#[derive(Debug, Clone, Default)]
pub struct VisibleNamespaces {
    /// The caller may list TrainJobs and pods in every namespace.
    everywhere: bool,
    /// The namespaces reviewed.
    asked: std::collections::BTreeSet<String>,
    /// Those of them allowed.
    allowed: std::collections::BTreeSet<String>,
}

impl Weigh for VisibleNamespaces {
    fn weight(&self) -> usize {
        std::mem::size_of::<Self>()
            + (self.asked.iter().chain(&self.allowed))
                .map(|ns| ns.len() + 32)
                .sum::<usize>()
    }
}

/// The cache sizes, for `/metrics`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheStats {
    /// Entries of each cache: identities, access decisions, namespace lists.
    pub entries: [usize; 3],
    /// Bytes of each cache, in the same order.
    pub bytes: [usize; 3],
}

/// Checks identities and access the way the mode says.
pub struct Authenticator {
    config: AuthConfig,
    client: Option<kube::Client>,
    identities: DecisionCache<[u8; 32], Option<Identity>>,
    access: DecisionCache<([u8; 32], Access), bool>,
    lists: DecisionCache<[u8; 32], Arc<VisibleNamespaces>>,
    in_flight: Semaphore,
    review_misses: RateLimiter<[u8; 32]>,
    failed_auth: RateLimiter<IpAddr>,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator")
            .field("mode", &self.config.mode)
            .field("identities", &self.identities.len())
            .field("access", &self.access.len())
            .finish_non_exhaustive()
    }
}

impl Authenticator {
    /// An authenticator; `client` (the server's own) makes the reviews of
    /// `kubernetes` mode.
    pub fn new(config: AuthConfig, client: Option<kube::Client>) -> Self {
        let (max, bytes) = (config.max_cache_entries, config.max_cache_bytes);
        Authenticator {
            config,
            client,
            identities: DecisionCache::new(max, bytes),
            access: DecisionCache::new(max, bytes),
            lists: DecisionCache::new(max, bytes),
            in_flight: Semaphore::new(MAX_REVIEWS_IN_FLIGHT),
            review_misses: RateLimiter::new(REVIEW_MISS_RATE, max),
            failed_auth: RateLimiter::new(FAILED_AUTH_RATE, max),
        }
    }

    /// The caches' sizes now.
    pub fn cache_stats(&self) -> CacheStats {
        CacheStats {
            entries: [self.identities.len(), self.access.len(), self.lists.len()],
            bytes: [
                self.identities.bytes(),
                self.access.bytes(),
                self.lists.bytes(),
            ],
        }
    }

    /// Waits for a place among the reviews in flight.
    async fn review_slot(&self) -> Result<tokio::sync::SemaphorePermit<'_>, Error> {
        // The semaphore is never closed; a closed one would mean no review.
        self.in_flight.acquire().await.map_err(|_| Error::NoStatus)
    }

    /// The settings.
    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    /// The mode.
    pub fn mode(&self) -> AuthMode {
        self.config.mode
    }

    fn client(&self) -> Result<kube::Client, Error> {
        // Only `kubernetes` mode reviews, and it is always given a client.
        self.client.clone().ok_or(Error::Unauthenticated)
    }

    /// Who `token` is. `max_age`: ignore cached answers older than that.
    /// `origin`: the client address, whose failed attempts are
    /// rate-limited (a client out of attempts gets [`Error::RateLimited`]
    /// before its token is checked).
    pub async fn authenticate(
        &self,
        token: &str,
        max_age: Option<Duration>,
        origin: Option<IpAddr>,
    ) -> Result<Identity, Error> {
        if token.is_empty() {
            return Err(Error::Unauthenticated);
        }
        match self.config.mode {
            AuthMode::None => Err(Error::Unauthenticated),
            AuthMode::Token => {
                self.check_failed_auth_budget(origin)?;
                let expected = self.config.token.as_ref().map_or("", Secret::expose);
                if !expected.is_empty() && constant_time_eq(token.as_bytes(), expected.as_bytes()) {
                    Ok(Identity {
                        user: "token".into(),
                        uid: None,
                        groups: Vec::new(),
                        extra: BTreeMap::new(),
                    })
                } else {
                    self.spend_failed_auth(origin);
                    Err(Error::Unauthenticated)
                }
            }
            AuthMode::Kubernetes => {
                let key = token_key(token);
                let now = Instant::now();
                let answer = match self.identities.get(&key, now, max_age) {
                    Some(answer) => answer,
                    None => {
                        self.check_failed_auth_budget(origin)?;
                        let answer = self.token_review(token).await?;
                        let ttl = if answer.is_some() {
                            self.config.allow_ttl
                        } else {
                            self.spend_failed_auth(origin);
                            self.config.deny_ttl
                        };
                        self.identities
                            .put(key, answer.clone(), Instant::now(), ttl);
                        answer
                    }
                };
                answer.ok_or(Error::Unauthenticated)
            }
        }
    }

    /// [`Error::RateLimited`] when `origin` has no failed attempt left.
    fn check_failed_auth_budget(&self, origin: Option<IpAddr>) -> Result<(), Error> {
        match origin {
            Some(ip) if !self.failed_auth.has_token(&ip, Instant::now()) => Err(Error::RateLimited),
            _ => Ok(()),
        }
    }

    fn spend_failed_auth(&self, origin: Option<IpAddr>) {
        if let Some(ip) = origin {
            self.failed_auth.allow(&ip, Instant::now());
        }
    }

    async fn token_review(&self, token: &str) -> Result<Option<Identity>, Error> {
        let _slot = self.review_slot().await?;
        let api: Api<TokenReview> = Api::all(self.client()?);
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                audiences: self.config.token_audience.clone().map(|a| vec![a]),
            },
            ..TokenReview::default()
        };
        let status = api
            .create(&PostParams::default(), &review)
            .await?
            .status
            .ok_or(Error::NoStatus)?;
        if status.authenticated != Some(true) {
            return Ok(None);
        }
        if let Some(audience) = &self.config.token_audience {
            // The API server names the audiences the token is good for
            // among those asked; a token for another service names none.
            if !status.audiences.iter().flatten().any(|a| a == audience) {
                return Ok(None);
            }
        }
        let Some(user) = status.user else {
            return Ok(None);
        };
        Ok(user
            .username
            .filter(|u| !u.is_empty())
            .map(|name| Identity {
                user: name,
                uid: user.uid,
                groups: user.groups.unwrap_or_default(),
                extra: user.extra.unwrap_or_default(),
            }))
    }

    /// Whether the caller (`token`, who is `identity`) may see
    /// `namespace`. Always true outside `kubernetes` mode. A name that is
    /// not a DNS-1123 label is never seen, and costs no review. A request's
    /// review misses ([`Spend::Request`]) are rate-limited per identity; an
    /// open stream's re-checks ([`Spend::Recheck`]), bounded by the stream
    /// caps, are not.
    pub async fn may_see_namespace(
        &self,
        token: &str,
        identity: &Identity,
        namespace: &str,
        max_age: Option<Duration>,
        spend: Spend,
    ) -> Result<bool, Error> {
        if self.config.mode != AuthMode::Kubernetes {
            return Ok(true);
        }
        if !is_namespace_name(namespace) {
            return Ok(false);
        }
        let access = Access::Namespace(namespace.into());
        self.may(token, identity, access, max_age, spend).await
    }

    /// Whether the caller may `get` the ClusterQueue `name`, whose quota the
    /// queue facts show. Always true outside `kubernetes` mode. A name that
    /// is not a DNS-1123 subdomain is never allowed, and costs no review.
    pub async fn may_get_cluster_queue(
        &self,
        token: &str,
        identity: &Identity,
        name: &str,
    ) -> Result<bool, Error> {
        if self.config.mode != AuthMode::Kubernetes {
            return Ok(true);
        }
        if !is_subdomain_name(name) {
            return Ok(false);
        }
        let access = Access::ClusterQueue(name.into());
        self.may(token, identity, access, None, Spend::Request)
            .await
    }

    /// Whether the caller may `list` LocalQueues in `namespace`, as they
    /// may TrainJobs: the LocalQueue's status in the queue facts. Always
    /// true outside `kubernetes` mode; a name that is not a namespace's is
    /// never allowed, and costs no review.
    pub async fn may_list_local_queues(
        &self,
        token: &str,
        identity: &Identity,
        namespace: &str,
    ) -> Result<bool, Error> {
        if self.config.mode != AuthMode::Kubernetes {
            return Ok(true);
        }
        if !is_namespace_name(namespace) {
            return Ok(false);
        }
        let access = Access::LocalQueues(namespace.into());
        self.may(token, identity, access, None, Spend::Request)
            .await
    }

    /// Whether the caller may `get` the pending Workloads of the LocalQueue
    /// `name` in `namespace` from Kueue's visibility API, as Kueue's own
    /// roles grant `localqueues/pendingworkloads`: the place in line.
    /// Always true outside `kubernetes` mode; names that cannot be a
    /// namespace's and a LocalQueue's are never allowed, and cost no review.
    pub async fn may_get_pending_workloads(
        &self,
        token: &str,
        identity: &Identity,
        namespace: &str,
        name: &str,
    ) -> Result<bool, Error> {
        if self.config.mode != AuthMode::Kubernetes {
            return Ok(true);
        }
        if !is_namespace_name(namespace) || !is_subdomain_name(name) {
            return Ok(false);
        }
        let access = Access::PendingWorkloads(namespace.into(), name.into());
        self.may(token, identity, access, None, Spend::Request)
            .await
    }

    /// Whether the caller may read `/metrics`. Always true outside
    /// `kubernetes` mode.
    pub async fn may_read_metrics(&self, token: &str, identity: &Identity) -> Result<bool, Error> {
        self.may(token, identity, Access::Metrics, None, Spend::Request)
            .await
    }

    /// Which of `namespaces` the caller may see, in their order. Outside
    /// `kubernetes` mode, all of them. One review of every namespace at once
    /// comes first; when it allows, no namespace is reviewed alone.
    /// Otherwise each namespace not reviewed before is, at most 16 at once,
    /// and the answer for the whole list is kept as one cache entry, so a
    /// list again within the allow TTL makes no review.
    pub async fn visible_namespaces(
        &self,
        token: &str,
        identity: &Identity,
        namespaces: Vec<String>,
    ) -> Result<Vec<String>, Error> {
        use futures::StreamExt;
        if self.config.mode != AuthMode::Kubernetes {
            return Ok(namespaces);
        }
        let key = token_key(token);
        let known = self.lists.get(&key, Instant::now(), None);
        if let Some(known) = &known {
            // The usual case: the whole list was reviewed within the TTL.
            if known.everywhere {
                return Ok(namespaces);
            }
            if namespaces.iter().all(|ns| known.asked.contains(ns)) {
                return Ok(namespaces
                    .into_iter()
                    .filter(|ns| known.allowed.contains(ns))
                    .collect());
            }
        }
        let mut visible = known.as_deref().cloned().unwrap_or_default();
        if known.is_none() {
            visible.everywhere = self
                .may(token, identity, Access::AllNamespaces, None, Spend::List)
                .await?;
        }
        if !visible.everywhere {
            let unasked: Vec<String> = (namespaces.iter())
                .filter(|ns| !visible.asked.contains(*ns))
                .cloned()
                .collect();
            let verdicts: Vec<(String, Result<bool, Error>)> = futures::stream::iter(unasked)
                .map(|ns| async move {
                    let access = Access::Namespace(ns.clone());
                    let verdict = if is_namespace_name(&ns) {
                        self.may(token, identity, access, None, Spend::List).await
                    } else {
                        Ok(false)
                    };
                    (ns, verdict)
                })
                .buffered(16)
                .collect()
                .await;
            for (ns, verdict) in verdicts {
                if verdict? {
                    visible.allowed.insert(ns.clone());
                }
                visible.asked.insert(ns);
            }
        }
        let ttl = self.config.allow_ttl;
        let visible = Arc::new(visible);
        self.lists.put(key, visible.clone(), Instant::now(), ttl);
        if visible.everywhere {
            return Ok(namespaces);
        }
        Ok(namespaces
            .into_iter()
            .filter(|ns| visible.allowed.contains(ns))
            .collect())
    }

    async fn may(
        &self,
        token: &str,
        identity: &Identity,
        access: Access,
        max_age: Option<Duration>,
        spend: Spend,
    ) -> Result<bool, Error> {
        if self.config.mode != AuthMode::Kubernetes {
            return Ok(true);
        }
        let key = (token_key(token), access);
        if let Some(allowed) = self.access.get(&key, Instant::now(), max_age) {
            return Ok(allowed);
        }
        if spend == Spend::Request && !self.review_misses.allow(&key.0, Instant::now()) {
            return Err(Error::RateLimited);
        }
        let allowed = match &key.1 {
            Access::Namespace(ns) => {
                // Both reviews must allow; the second is skipped when the
                // first denies.
                self.subject_access(identity, resource("trainer.kubeflow.org", "trainjobs", ns))
                    .await?
                    && self
                        .subject_access(identity, resource("", "pods", ns))
                        .await?
            }
            Access::AllNamespaces => {
                self.subject_access(identity, resource("trainer.kubeflow.org", "trainjobs", ""))
                    .await?
                    && self
                        .subject_access(identity, resource("", "pods", ""))
                        .await?
            }
            Access::Metrics => self.subject_access_metrics(identity).await?,
            Access::ClusterQueue(name) => {
                let attributes = ResourceAttributes {
                    name: Some(name.clone()),
                    verb: Some("get".into()),
                    ..resource("kueue.x-k8s.io", "clusterqueues", "")
                };
                self.subject_access(identity, attributes).await?
            }
            Access::LocalQueues(ns) => {
                self.subject_access(identity, resource("kueue.x-k8s.io", "localqueues", ns))
                    .await?
            }
            Access::PendingWorkloads(ns, name) => {
                let attributes = ResourceAttributes {
                    name: Some(name.clone()),
                    subresource: Some("pendingworkloads".into()),
                    verb: Some("get".into()),
                    ..resource(VISIBILITY_GROUP, "localqueues", ns)
                };
                self.subject_access(identity, attributes).await?
            }
        };
        let ttl = if allowed {
            self.config.allow_ttl
        } else {
            self.config.deny_ttl
        };
        let now = Instant::now();
        if let Access::Namespace(ns) = &key.1 {
            // A fresh answer (a stream's re-check, say) that contradicts the
            // cached list makes the list stale: it is asked again.
            let stale = self.lists.get(&key.0, now, None).is_some_and(|list| {
                list.asked.contains(ns) && list.allowed.contains(ns) != allowed
            });
            if stale {
                self.lists.remove(&key.0);
            }
        }
        self.access.put(key, allowed, now, ttl);
        Ok(allowed)
    }

    async fn subject_access(
        &self,
        identity: &Identity,
        attributes: ResourceAttributes,
    ) -> Result<bool, Error> {
        self.review_access(identity, Some(attributes), None).await
    }

    async fn subject_access_metrics(&self, identity: &Identity) -> Result<bool, Error> {
        let attributes = NonResourceAttributes {
            path: Some("/metrics".into()),
            verb: Some("get".into()),
        };
        self.review_access(identity, None, Some(attributes)).await
    }

    async fn review_access(
        &self,
        identity: &Identity,
        resource_attributes: Option<ResourceAttributes>,
        non_resource_attributes: Option<NonResourceAttributes>,
    ) -> Result<bool, Error> {
        let _slot = self.review_slot().await?;
        let api: Api<SubjectAccessReview> = Api::all(self.client()?);
        let review = SubjectAccessReview {
            spec: SubjectAccessReviewSpec {
                user: Some(identity.user.clone()),
                uid: identity.uid.clone(),
                groups: Some(identity.groups.clone()),
                extra: Some(identity.extra.clone()),
                resource_attributes,
                non_resource_attributes,
            },
            ..SubjectAccessReview::default()
        };
        let status = api
            .create(&PostParams::default(), &review)
            .await?
            .status
            .ok_or(Error::NoStatus)?;
        Ok(status.allowed && status.denied != Some(true))
    }

    /// In `kubernetes` mode: fails, naming [`AUTH_DELEGATOR_ROLE`], unless
    /// the server's own identity may create TokenReviews and
    /// SubjectAccessReviews.
    pub async fn check_delegation(&self) -> Result<(), Error> {
        if self.config.mode != AuthMode::Kubernetes {
            return Ok(());
        }
        let api: Api<SelfSubjectAccessReview> = Api::all(self.client()?);
        let mut missing = Vec::new();
        for (group, resource) in [
            ("authentication.k8s.io", "tokenreviews"),
            ("authorization.k8s.io", "subjectaccessreviews"),
        ] {
            let review = SelfSubjectAccessReview {
                spec: SelfSubjectAccessReviewSpec {
                    resource_attributes: Some(ResourceAttributes {
                        group: Some(group.into()),
                        resource: Some(resource.into()),
                        verb: Some("create".into()),
                        ..ResourceAttributes::default()
                    }),
                    non_resource_attributes: None,
                },
                ..SelfSubjectAccessReview::default()
            };
            let status = api
                .create(&PostParams::default(), &review)
                .await?
                .status
                .ok_or(Error::NoStatus)?;
            if !status.allowed {
                missing.push(format!("{resource}.{group}"));
            }
        }
        if missing.is_empty() {
            Ok(())
        } else {
            Err(Error::MissingDelegation {
                missing: missing.join(" and "),
            })
        }
    }
}

/// Who a review miss is charged to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Spend {
    /// A request of the caller's: rate-limited per identity.
    Request,
    /// An open stream's periodic re-check (bounded by the stream caps).
    Recheck,
    /// The namespace list: bounded by its own concurrency and cached whole.
    List,
}

/// `list` of a resource in `namespace` (`""`: every namespace).
fn resource(group: &str, resource: &str, namespace: &str) -> ResourceAttributes {
    ResourceAttributes {
        group: Some(group.into()),
        resource: Some(resource.into()),
        namespace: Some(namespace.into()).filter(|ns: &String| !ns.is_empty()),
        verb: Some("list".into()),
        ..ResourceAttributes::default()
    }
}

/// Compares in time independent of where the inputs differ.
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A token as read from a file or the environment: ONE trailing newline
/// (`\n` or `\r\n`, as a Secret made with `--from-file` has) is dropped,
/// nothing else.
pub fn strip_one_newline(text: &str) -> &str {
    text.strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(text)
}

#[cfg(test)]
mod tests {
    use super::cache::ENTRY_OVERHEAD;
    use super::*;
    use std::net::SocketAddr;

    #[test]
    fn cache_keeps_answers_for_their_ttl_and_honours_a_max_age() {
        let cache: DecisionCache<u8, bool> = DecisionCache::new(8, 1 << 20);
        let t0 = Instant::now();
        cache.put(1, true, t0, Duration::from_secs(60));
        cache.put(2, false, t0, Duration::from_secs(10));
        let at = |s| t0 + Duration::from_secs(s);
        assert_eq!(cache.get(&1, at(59), None), Some(true));
        assert_eq!(cache.get(&1, at(60), None), None, "an allow lasts 60 s");
        assert_eq!(cache.get(&2, at(9), None), Some(false));
        assert_eq!(cache.get(&2, at(10), None), None, "a deny lasts 10 s");
        assert_eq!(
            cache.get(&1, at(5), Some(Duration::from_secs(5))),
            None,
            "a re-check wants answers younger than its interval"
        );
        assert_eq!(
            cache.get(&1, at(4), Some(Duration::from_secs(5))),
            Some(true)
        );
    }

    #[test]
    fn cache_is_bounded_expired_first_then_the_soonest_to_expire() {
        let cache: DecisionCache<u8, bool> = DecisionCache::new(3, 1 << 20);
        let t0 = Instant::now();
        cache.put(1, true, t0, Duration::from_secs(60));
        cache.put(2, false, t0, Duration::from_secs(10));
        cache.put(3, true, t0, Duration::from_secs(30));
        cache.put(4, true, t0, Duration::from_secs(60));
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get(&2, t0, None), None, "the soonest to expire went");
        assert_eq!(cache.get(&1, t0, None), Some(true));
        let later = t0 + Duration::from_secs(40);
        cache.put(5, true, later, Duration::from_secs(60));
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get(&3, later, None), None, "the expired one went");
        assert_eq!(cache.get(&1, later, None), Some(true));
        assert_eq!(cache.get(&4, later, None), Some(true));
    }

    #[test]
    fn cache_is_bounded_in_bytes_and_purges_expired_entries_on_insert() {
        // Each entry: a 32-byte key, a 1-byte answer and the overhead.
        let per_entry = 32 + 1 + ENTRY_OVERHEAD;
        let cache: DecisionCache<[u8; 32], bool> = DecisionCache::new(1_000, per_entry * 10);
        let t0 = Instant::now();
        for i in 0..100u8 {
            cache.put([i; 32], true, t0, Duration::from_secs(60));
            assert!(cache.bytes() <= per_entry * 10, "{} bytes", cache.bytes());
        }
        assert_eq!(cache.len(), 10, "the byte bound, not the count, decides");
        assert_eq!(cache.bytes(), per_entry * 10);
        // Short-lived entries are gone at the next insert after they expire,
        // whether or not the cache is full.
        let short: DecisionCache<[u8; 32], bool> = DecisionCache::new(1_000, 1 << 20);
        for i in 0..50u8 {
            short.put([i; 32], false, t0, Duration::from_secs(1));
        }
        short.put(
            [200; 32],
            true,
            t0 + Duration::from_secs(2),
            Duration::from_secs(60),
        );
        assert_eq!(short.len(), 1, "expired entries purged on insert");
        assert_eq!(short.bytes(), per_entry);
        // Replacing an entry does not count it twice.
        short.put(
            [200; 32],
            false,
            t0 + Duration::from_secs(2),
            Duration::from_secs(60),
        );
        assert_eq!(short.bytes(), per_entry);
        // An answer heavier than the whole bound is not kept.
        let tiny: DecisionCache<[u8; 32], bool> = DecisionCache::new(10, 10);
        tiny.put([1; 32], true, t0, Duration::from_secs(60));
        assert!(tiny.is_empty());
    }

    #[test]
    fn identities_weigh_what_they_hold() {
        let small = Identity {
            user: "a".into(),
            uid: None,
            groups: Vec::new(),
            extra: BTreeMap::new(),
        };
        let big = Identity {
            groups: vec!["g".repeat(10_000)],
            ..small.clone()
        };
        assert!(big.weight() >= small.weight() + 10_000);
        assert!(Some(big).weight() > 10_000);
    }

    #[test]
    fn namespace_names_are_dns_1123_labels() {
        for good in ["team-a", "a", "0", "a-b-c", &"a".repeat(63)] {
            assert!(is_namespace_name(good), "{good}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "Team",
            "a_b",
            "a.b",
            "ä",
            &"a".repeat(64),
            "a/b",
            " a",
        ] {
            assert!(!is_namespace_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn a_secret_never_prints() {
        let secret = Secret::from("s3cret-value");
        assert_eq!(format!("{secret:?}"), "[redacted]");
        assert_eq!(secret.expose(), "s3cret-value");
        let config = AuthConfig {
            token: Some(secret),
            ..AuthConfig::default()
        };
        assert!(!format!("{config:?}").contains("s3cret"));
    }

    /// `--auth token` with the shared token `t0ken`.
    fn shared_token_authenticator() -> Authenticator {
        Authenticator::new(
            AuthConfig {
                mode: AuthMode::Token,
                token: Some("t0ken".into()),
                ..AuthConfig::default()
            },
            None,
        )
    }

    #[tokio::test]
    async fn failed_attempts_from_one_address_run_out_and_others_are_unaffected() {
        let auth = shared_token_authenticator();
        let guesser: IpAddr = "192.0.2.1".parse().expect("ip");
        let user: IpAddr = "192.0.2.2".parse().expect("ip");
        let mut refused = 0;
        for i in 0..30 {
            match auth
                .authenticate(&format!("guess-{i}"), None, Some(guesser))
                .await
            {
                Err(Error::Unauthenticated) => {}
                Err(Error::RateLimited) => refused += 1,
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            refused, 10,
            "20 failures, then none until the bucket refills"
        );
        // Even the right token waits: the address is out of attempts.
        assert!(matches!(
            auth.authenticate("t0ken", None, Some(guesser)).await,
            Err(Error::RateLimited)
        ));
        assert!(auth.authenticate("t0ken", None, Some(user)).await.is_ok());
        // Successes spend nothing.
        for _ in 0..100 {
            assert!(auth.authenticate("t0ken", None, Some(user)).await.is_ok());
        }
    }

    #[test]
    fn the_default_ttls_are_the_issues() {
        let config = AuthConfig::default();
        assert_eq!(config.allow_ttl, Duration::from_secs(60));
        assert!(config.deny_ttl < config.allow_ttl);
        // A revocation reaches an open stream within two re-check intervals.
        assert!(config.recheck_interval * 2 <= Duration::from_secs(90));
        assert_eq!(config.session_idle_timeout, Duration::from_secs(8 * 3600));
    }

    #[test]
    fn token_keys_are_hashes_not_tokens() {
        let key = token_key("alice-token");
        assert_eq!(key, token_key("alice-token"));
        assert_ne!(key, token_key("alice-token2"));
        assert!(!key.windows(5).any(|w| w == b"alice"));
    }

    #[test]
    fn one_trailing_newline_is_dropped() {
        assert_eq!(strip_one_newline("s3cret\n"), "s3cret");
        assert_eq!(strip_one_newline("s3cret\r\n"), "s3cret");
        assert_eq!(strip_one_newline("s3cret\n\n"), "s3cret\n");
        assert_eq!(strip_one_newline("s3cret"), "s3cret");
        assert_eq!(strip_one_newline("\n"), "");
    }

    #[test]
    fn cidrs_and_addresses_match() {
        let net: IpNet = "10.0.0.0/8".parse().expect("cidr");
        assert!(net.contains("10.1.2.3".parse().expect("ip")));
        assert!(!net.contains("11.0.0.1".parse().expect("ip")));
        assert!(net.contains("::ffff:10.0.0.1".parse().expect("mapped ip")));
        let one: IpNet = "192.0.2.7".parse().expect("address");
        assert!(one.contains("192.0.2.7".parse().expect("ip")));
        assert!(!one.contains("192.0.2.8".parse().expect("ip")));
        let all: IpNet = "0.0.0.0/0".parse().expect("cidr");
        assert!(all.contains("8.8.8.8".parse().expect("ip")));
        let v6: IpNet = "fd00::/8".parse().expect("cidr");
        assert!(v6.contains("fd12::1".parse().expect("ip")));
        assert!(!v6.contains("fe80::1".parse().expect("ip")));
        assert!("10.0.0.0/33".parse::<IpNet>().is_err());
        assert!("proxy".parse::<IpNet>().is_err());
    }

    #[test]
    fn https_is_believed_only_from_a_trusted_proxy() {
        let trusted: Vec<IpNet> = vec!["10.0.0.0/8".parse().expect("cidr")];
        let proxy: SocketAddr = "10.0.0.5:4000".parse().expect("addr");
        let stranger: SocketAddr = "192.0.2.1:4000".parse().expect("addr");
        assert!(came_over_https(Some(proxy), Some("https"), &trusted));
        assert!(came_over_https(Some(proxy), Some("HTTPS, http"), &trusted));
        assert!(!came_over_https(Some(proxy), Some("http"), &trusted));
        assert!(!came_over_https(Some(proxy), None, &trusted));
        assert!(!came_over_https(Some(stranger), Some("https"), &trusted));
        assert!(!came_over_https(None, Some("https"), &trusted));
    }

    #[tokio::test]
    async fn token_mode_compares_the_shared_token() {
        let auth = shared_token_authenticator();
        assert_eq!(
            auth.authenticate("t0ken", None, None)
                .await
                .expect("valid")
                .user,
            "token"
        );
        assert!(matches!(
            auth.authenticate("t0ke", None, None).await,
            Err(Error::Unauthenticated)
        ));
        assert!(matches!(
            auth.authenticate("", None, None).await,
            Err(Error::Unauthenticated)
        ));
    }

    #[test]
    fn token_comparison_is_exact() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
