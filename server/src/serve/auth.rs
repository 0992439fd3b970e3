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
//! entries per cache. A stream's periodic re-check asks for answers no older
//! than its interval, so a revocation reaches an open stream within two
//! intervals.

use std::collections::{BTreeMap, HashMap};
use std::net::{IpAddr, SocketAddr};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use k8s_openapi::api::authentication::v1::{TokenReview, TokenReviewSpec};
use k8s_openapi::api::authorization::v1::{
    NonResourceAttributes, ResourceAttributes, SelfSubjectAccessReview,
    SelfSubjectAccessReviewSpec, SubjectAccessReview, SubjectAccessReviewSpec,
};
use kube::api::{Api, PostParams};
use sha2::{Digest, Sha256};

/// The ClusterRole the server's own identity must be bound to in
/// `kubernetes` mode.
pub const AUTH_DELEGATOR_ROLE: &str = "system:auth-delegator";

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
    pub token: Option<String>,
    /// How long an allow (a valid token, a permitted access) is cached.
    pub allow_ttl: Duration,
    /// How long a deny is cached.
    pub deny_ttl: Duration,
    /// Entries per cache at most.
    pub max_cache_entries: usize,
    /// How often an open event stream re-checks its caller's access.
    pub recheck_interval: Duration,
    /// A session ends after this long unused.
    pub session_idle_timeout: Duration,
    /// Sessions at most; past it the longest idle one is evicted.
    pub max_sessions: usize,
    /// Peers whose `X-Forwarded-Proto` is believed.
    pub trusted_proxies: Vec<IpNet>,
}

impl Default for AuthConfig {
    fn default() -> Self {
        AuthConfig {
            mode: AuthMode::None,
            token: None,
            allow_ttl: Duration::from_secs(60),
            deny_ttl: Duration::from_secs(10),
            max_cache_entries: 10_000,
            recheck_interval: Duration::from_secs(30),
            session_idle_timeout: Duration::from_secs(8 * 3600),
            max_sessions: 10_000,
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

/// An address or a CIDR block (`10.0.0.0/8`, `fd00::/8`, `192.0.2.7`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    network: IpAddr,
    prefix: u8,
}

impl IpNet {
    /// Whether `ip` is in the block.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6
                .to_ipv4_mapped()
                .map(IpAddr::V4)
                .unwrap_or(IpAddr::V6(v6)),
            v4 => v4,
        };
        match (self.network, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl std::str::FromStr for IpNet {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || format!("{text:?} is not an IP address or a CIDR block such as 10.0.0.0/8");
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let network: IpAddr = address.parse().map_err(|_| bad())?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(bad)?,
            None => max,
        };
        Ok(IpNet { network, prefix })
    }
}

/// Whether the request came over HTTPS: only a trusted proxy's
/// `X-Forwarded-Proto: https` says so (the server itself speaks HTTP).
pub fn came_over_https(
    peer: Option<SocketAddr>,
    forwarded_proto: Option<&str>,
    trusted: &[IpNet],
) -> bool {
    let trusted_peer = peer.is_some_and(|p| trusted.iter().any(|net| net.contains(p.ip())));
    trusted_peer
        && forwarded_proto
            .and_then(|v| v.split(',').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}

/// The cache key of a token: its SHA-256, so no raw token is kept.
pub fn token_key(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

/// A bounded map of answers that expire: allows after one TTL, denies
/// after another.
#[derive(Debug)]
pub struct DecisionCache<K, V> {
    entries: Mutex<HashMap<K, CacheEntry<V>>>,
    max_entries: usize,
}

#[derive(Debug, Clone)]
struct CacheEntry<V> {
    value: V,
    stored: Instant,
    expires: Instant,
}

impl<K: std::hash::Hash + Eq + Clone, V: Clone> DecisionCache<K, V> {
    /// A cache of at most `max_entries` entries.
    pub fn new(max_entries: usize) -> Self {
        DecisionCache {
            entries: Mutex::new(HashMap::new()),
            max_entries: max_entries.max(1),
        }
    }

    fn entries(&self) -> std::sync::MutexGuard<'_, HashMap<K, CacheEntry<V>>> {
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The answer for `key`, unless it expired or is older than `max_age`.
    pub fn get(&self, key: &K, now: Instant, max_age: Option<Duration>) -> Option<V> {
        let entries = self.entries();
        let entry = entries.get(key)?;
        let fresh = now < entry.expires
            && max_age.is_none_or(|age| now.saturating_duration_since(entry.stored) < age);
        fresh.then(|| entry.value.clone())
    }

    /// Stores an answer for `ttl`. When full, expired entries go first,
    /// then the one closest to expiring.
    pub fn put(&self, key: K, value: V, now: Instant, ttl: Duration) {
        let mut entries = self.entries();
        if entries.len() >= self.max_entries && !entries.contains_key(&key) {
            entries.retain(|_, e| now < e.expires);
            if entries.len() >= self.max_entries {
                let soonest = entries
                    .iter()
                    .min_by_key(|(_, e)| e.expires)
                    .map(|(k, _)| k.clone());
                if let Some(k) = soonest {
                    entries.remove(&k);
                }
            }
        }
        entries.insert(
            key,
            CacheEntry {
                value,
                stored: now,
                expires: now + ttl,
            },
        );
    }

    /// Entries held now (expired ones included until they are pushed out).
    pub fn len(&self) -> usize {
        self.entries().len()
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// What a caller asks access to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Access {
    /// `list` TrainJobs and pods in a namespace.
    Namespace(String),
    /// `get` on `/metrics`.
    Metrics,
}

/// Checks identities and access the way the mode says.
pub struct Authenticator {
    config: AuthConfig,
    client: Option<kube::Client>,
    identities: DecisionCache<[u8; 32], Option<Identity>>,
    access: DecisionCache<([u8; 32], Access), bool>,
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
        let max = config.max_cache_entries;
        Authenticator {
            config,
            client,
            identities: DecisionCache::new(max),
            access: DecisionCache::new(max),
        }
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
    pub async fn authenticate(
        &self,
        token: &str,
        max_age: Option<Duration>,
    ) -> Result<Identity, Error> {
        if token.is_empty() {
            return Err(Error::Unauthenticated);
        }
        match self.config.mode {
            AuthMode::None => Err(Error::Unauthenticated),
            AuthMode::Token => {
                let expected = self.config.token.as_deref().unwrap_or("");
                if !expected.is_empty() && constant_time_eq(token.as_bytes(), expected.as_bytes()) {
                    Ok(Identity {
                        user: "token".into(),
                        uid: None,
                        groups: Vec::new(),
                        extra: BTreeMap::new(),
                    })
                } else {
                    Err(Error::Unauthenticated)
                }
            }
            AuthMode::Kubernetes => {
                let key = token_key(token);
                let now = Instant::now();
                let answer = match self.identities.get(&key, now, max_age) {
                    Some(answer) => answer,
                    None => {
                        let answer = self.token_review(token).await?;
                        let ttl = if answer.is_some() {
                            self.config.allow_ttl
                        } else {
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

    async fn token_review(&self, token: &str) -> Result<Option<Identity>, Error> {
        let api: Api<TokenReview> = Api::all(self.client()?);
        let review = TokenReview {
            spec: TokenReviewSpec {
                token: token.to_string(),
                audiences: None,
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
    /// `namespace`. Always true outside `kubernetes` mode.
    pub async fn may_see_namespace(
        &self,
        token: &str,
        identity: &Identity,
        namespace: &str,
        max_age: Option<Duration>,
    ) -> Result<bool, Error> {
        self.may(
            token,
            identity,
            Access::Namespace(namespace.into()),
            max_age,
        )
        .await
    }

    /// Whether the caller may read `/metrics`. Always true outside
    /// `kubernetes` mode.
    pub async fn may_read_metrics(&self, token: &str, identity: &Identity) -> Result<bool, Error> {
        self.may(token, identity, Access::Metrics, None).await
    }

    async fn may(
        &self,
        token: &str,
        identity: &Identity,
        access: Access,
        max_age: Option<Duration>,
    ) -> Result<bool, Error> {
        if self.config.mode != AuthMode::Kubernetes {
            return Ok(true);
        }
        let key = (token_key(token), access);
        if let Some(allowed) = self.access.get(&key, Instant::now(), max_age) {
            return Ok(allowed);
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
            Access::Metrics => self.subject_access_metrics(identity).await?,
        };
        let ttl = if allowed {
            self.config.allow_ttl
        } else {
            self.config.deny_ttl
        };
        self.access.put(key, allowed, Instant::now(), ttl);
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

fn resource(group: &str, resource: &str, namespace: &str) -> ResourceAttributes {
    ResourceAttributes {
        group: Some(group.into()),
        resource: Some(resource.into()),
        namespace: Some(namespace.into()),
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
    use super::*;

    #[test]
    fn cache_keeps_answers_for_their_ttl_and_honours_a_max_age() {
        let cache: DecisionCache<u8, bool> = DecisionCache::new(8);
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
        let cache: DecisionCache<u8, bool> = DecisionCache::new(3);
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
        let auth = Authenticator::new(
            AuthConfig {
                mode: AuthMode::Token,
                token: Some("t0ken".into()),
                ..AuthConfig::default()
            },
            None,
        );
        assert_eq!(
            auth.authenticate("t0ken", None).await.expect("valid").user,
            "token"
        );
        assert!(matches!(
            auth.authenticate("t0ke", None).await,
            Err(Error::Unauthenticated)
        ));
        assert!(matches!(
            auth.authenticate("", None).await,
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
