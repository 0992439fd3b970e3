//! Places in line, from Kueue's visibility API: a LocalQueue's pending
//! Workloads (`GET /apis/visibility.kueue.x-k8s.io/{version}/namespaces/
//! {ns}/localqueues/{name}/pendingworkloads`), fetched with the kube client
//! when somebody asks for a queued TrainJob's facts, never watched.
//!
//! Kueue computes the list on every request, so it is fetched at most once
//! per LocalQueue every [`PositionLimits::ttl`], however many callers ask
//! at once: one request is in flight per LocalQueue and the others wait
//! for its answer. Answers, failures included, are kept in a cache bounded
//! in LocalQueues and in bytes; each list is bounded in items (`limit`)
//! and its body in bytes before it is read. The version is chosen by
//! discovery (`v1beta2`, then `v1beta1`) and re-read every
//! [`PositionLimits::discovery_ttl`].
//!
//! When the list cannot be had the reason is kept ([`Unavailable`]) and
//! said: not served, refused, or failing. A position is never guessed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use classify_wasm::queue::line::{PendingList, Unavailable};
use http_body_util::{BodyExt, Limited};
use kube::Client;
use tokio::sync::OnceCell;

use super::auth::{is_namespace_name, is_subdomain_name, VISIBILITY_GROUP};

/// The versions of the visibility API whose summaries this server reads,
/// preferred first.
const VERSIONS: [&str; 2] = ["v1beta2", "v1beta1"];

/// How much is fetched and kept.
#[derive(Debug, Clone, Copy)]
pub struct PositionLimits {
    /// A LocalQueue's list is fetched again after this long.
    pub ttl: Duration,
    /// Discovery of the group is read again after this long.
    pub discovery_ttl: Duration,
    /// Items asked for per list (Kueue's own largest `limit`).
    pub items: usize,
    /// The largest body read.
    pub body_bytes: usize,
    /// LocalQueues kept.
    pub queues: usize,
    /// Bytes of lists kept.
    pub bytes: usize,
}

impl Default for PositionLimits {
    fn default() -> Self {
        PositionLimits {
            ttl: Duration::from_secs(5),
            discovery_ttl: Duration::from_secs(60),
            items: 1000,
            // A summary item is about 400 bytes; 1,000 of them fit.
            body_bytes: 1 << 20,
            queues: 512,
            bytes: 16 << 20,
        }
    }
}

/// A LocalQueue's list, or why there is none.
#[derive(Debug, Clone)]
pub enum Fetched {
    Listed(Arc<PendingList>),
    Unavailable(Unavailable),
}

impl Fetched {
    fn bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + match self {
                Fetched::Listed(list) => list.bytes(),
                Fetched::Unavailable(_) => 0,
            }
    }
}

type QueueKey = (String, String);

/// What discovery says of the visibility API.
#[derive(Debug, Clone, Copy)]
enum Discovered {
    Served(&'static str),
    NotServed,
    Failing,
}

struct Entry {
    started: Instant,
    answer: Arc<OnceCell<Fetched>>,
    /// Counted once the answer is in.
    bytes: usize,
}

#[derive(Default)]
struct Cache {
    entries: HashMap<QueueKey, Entry>,
    bytes: usize,
}

impl Cache {
    /// Drops the entry started longest ago.
    fn evict_oldest(&mut self) {
        let oldest = self
            .entries
            .iter()
            .min_by_key(|(_, e)| e.started)
            .map(|(k, _)| k.clone());
        if let Some(entry) = oldest.and_then(|k| self.entries.remove(&k)) {
            self.bytes = self.bytes.saturating_sub(entry.bytes);
        }
    }
}

/// The fetcher and its cache; one per server.
pub struct Positions {
    client: Option<Client>,
    limits: PositionLimits,
    cache: Mutex<Cache>,
    /// What discovery last said, and when.
    version: tokio::sync::Mutex<Option<(Instant, Discovered)>>,
    requests: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for Positions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (queues, bytes) = self.held();
        f.debug_struct("Positions")
            .field("cluster", &self.client.is_some())
            .field("limits", &self.limits)
            .field("queues", &queues)
            .field("bytes", &bytes)
            .finish()
    }
}

impl Positions {
    /// Fetches with `client`, as the server's own identity.
    pub fn new(client: Client, limits: PositionLimits) -> Self {
        Positions {
            client: Some(client),
            limits,
            cache: Mutex::default(),
            version: tokio::sync::Mutex::new(None),
            requests: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// No cluster to ask: no position is shown at all.
    pub fn without_cluster() -> Self {
        Positions {
            client: None,
            limits: PositionLimits::default(),
            cache: Mutex::default(),
            version: tokio::sync::Mutex::new(None),
            requests: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// Requests made to the visibility API (discovery not counted).
    pub fn requests(&self) -> u64 {
        self.requests.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// `(LocalQueues, bytes)` held.
    pub fn held(&self) -> (usize, usize) {
        let cache = self.cache();
        (cache.entries.len(), cache.bytes)
    }

    fn cache(&self) -> MutexGuard<'_, Cache> {
        // A panic while holding the lock leaves a cache that is still
        // consistent enough to read: entries and their byte counts.
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The pending list of LocalQueue `name` in `namespace`; `None` without
    /// a cluster, or for names no LocalQueue can have.
    pub async fn list(&self, namespace: &str, name: &str) -> Option<Fetched> {
        let client = self.client.as_ref()?;
        if !is_namespace_name(namespace) || !is_subdomain_name(name) {
            return None;
        }
        let key: QueueKey = (namespace.to_string(), name.to_string());
        let answer = {
            let mut cache = self.cache();
            let now = Instant::now();
            match cache.entries.get(&key) {
                Some(entry) if now.duration_since(entry.started) < self.limits.ttl => {
                    entry.answer.clone()
                }
                _ => {
                    if let Some(stale) = cache.entries.remove(&key) {
                        cache.bytes = cache.bytes.saturating_sub(stale.bytes);
                    }
                    while cache.entries.len() >= self.limits.queues.max(1) {
                        cache.evict_oldest();
                    }
                    let answer = Arc::new(OnceCell::new());
                    cache.entries.insert(
                        key.clone(),
                        Entry {
                            started: now,
                            answer: answer.clone(),
                            bytes: 0,
                        },
                    );
                    answer
                }
            }
        };
        let fetched = answer
            .get_or_init(|| self.fetch(client, namespace, name))
            .await
            .clone();
        let mut cache = self.cache();
        let mut added = 0;
        if let Some(entry) = cache.entries.get_mut(&key) {
            if Arc::ptr_eq(&entry.answer, &answer) && entry.bytes == 0 {
                entry.bytes = key.0.len() + key.1.len() + fetched.bytes();
                added = entry.bytes;
            }
        }
        cache.bytes += added;
        while cache.bytes > self.limits.bytes && !cache.entries.is_empty() {
            cache.evict_oldest();
        }
        Some(fetched)
    }

    /// The version to ask, from discovery kept for `discovery_ttl`.
    async fn version(&self, client: &Client) -> Discovered {
        let mut held = self.version.lock().await;
        if let Some((at, version)) = *held {
            if at.elapsed() < self.limits.discovery_ttl {
                return version;
            }
        }
        let version = match client.list_api_groups().await {
            Ok(groups) => groups
                .groups
                .iter()
                .find(|g| g.name == VISIBILITY_GROUP)
                .and_then(|group| {
                    VERSIONS
                        .into_iter()
                        .find(|v| group.versions.iter().any(|served| served.version == *v))
                })
                .map_or(Discovered::NotServed, Discovered::Served),
            Err(e) => {
                tracing::warn!(error = %e, "discovering Kueue's visibility API failed");
                Discovered::Failing
            }
        };
        *held = Some((Instant::now(), version));
        version
    }

    async fn fetch(&self, client: &Client, namespace: &str, name: &str) -> Fetched {
        let version = match self.version(client).await {
            Discovered::Served(version) => version,
            Discovered::NotServed => return Fetched::Unavailable(Unavailable::NotServed),
            Discovered::Failing => return Fetched::Unavailable(Unavailable::Failing),
        };
        // Both names were checked to be DNS-1123 names: nothing to escape.
        let uri = format!(
            "/apis/{VISIBILITY_GROUP}/{version}/namespaces/{namespace}/localqueues/{name}/pendingworkloads?limit={}",
            self.limits.items
        );
        let Ok(request) = axum::http::Request::get(uri).body(kube::client::Body::empty()) else {
            return Fetched::Unavailable(Unavailable::Failing);
        };
        self.requests
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let response = match client.send(request).await {
            Ok(response) => response,
            Err(e) => {
                tracing::warn!(error = %e, namespace, local_queue = name, "fetching pending workloads failed");
                return Fetched::Unavailable(Unavailable::Failing);
            }
        };
        let status = response.status();
        match status.as_u16() {
            200 => {}
            // A 404 is what an API server without the group answers; the
            // LocalQueue itself was found, or nobody would ask.
            404 => return Fetched::Unavailable(Unavailable::NotServed),
            401 | 403 => return Fetched::Unavailable(Unavailable::Forbidden),
            code => {
                tracing::warn!(
                    code,
                    namespace,
                    local_queue = name,
                    "Kueue's visibility API answered an error"
                );
                return Fetched::Unavailable(Unavailable::Failing);
            }
        }
        let body = match Limited::new(response.into_body(), self.limits.body_bytes)
            .collect()
            .await
        {
            Ok(body) => body.to_bytes(),
            Err(e) => {
                tracing::warn!(error = %e, namespace, local_queue = name, limit = self.limits.body_bytes, "reading pending workloads failed");
                return Fetched::Unavailable(Unavailable::Failing);
            }
        };
        match PendingList::read(&body, self.limits.items) {
            Ok(list) => Fetched::Listed(Arc::new(list)),
            Err(e) => {
                tracing::warn!(error = %e, namespace, local_queue = name, "unreadable pending workloads");
                Fetched::Unavailable(Unavailable::Failing)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use emulator::{Emulator, EmulatorConfig};

    async fn positions_against_emulator(
        limits: PositionLimits,
    ) -> (emulator::RunningEmulator, Positions) {
        let emu = Emulator::new(EmulatorConfig {
            kueue: true,
            ..EmulatorConfig::default()
        });
        let running = emu
            .serve("127.0.0.1:0".parse().expect("addr"))
            .await
            .expect("emulator");
        let config = crate::serve::config_from_kubeconfig_yaml(&running.kubeconfig_yaml())
            .await
            .expect("kubeconfig");
        let client = Client::try_from(config).expect("client");
        (running, Positions::new(client, limits))
    }

    #[tokio::test]
    async fn the_cache_is_bounded_in_queues_and_in_bytes() {
        let (running, positions) = positions_against_emulator(PositionLimits {
            queues: 2,
            ..PositionLimits::default()
        })
        .await;
        for name in ["a", "b", "c"] {
            // No such LocalQueue: the emulator's visibility API answers 404.
            let fetched = positions.list("team-a", name).await;
            assert!(
                matches!(fetched, Some(Fetched::Unavailable(Unavailable::NotServed))),
                "{fetched:?}"
            );
        }
        let (queues, bytes) = positions.held();
        assert_eq!(queues, 2, "the oldest was dropped");
        assert!(bytes > 0);
        // Within the TTL, a LocalQueue still held is not fetched again;
        // the dropped one is.
        let requests = positions.requests();
        positions.list("team-a", "c").await;
        assert_eq!(positions.requests(), requests);
        positions.list("team-a", "a").await;
        assert_eq!(positions.requests(), requests + 1);
        drop(running);

        let (_running, positions) = positions_against_emulator(PositionLimits {
            bytes: 1,
            ..PositionLimits::default()
        })
        .await;
        assert!(positions.list("team-a", "a").await.is_some());
        assert_eq!(positions.held(), (0, 0), "nothing fits in one byte");
    }

    #[tokio::test]
    async fn names_no_local_queue_can_have_are_never_asked_for() {
        let (_running, positions) = positions_against_emulator(PositionLimits::default()).await;
        for (namespace, name) in [
            ("team-a", "a/b"),
            ("team-a", "x?limit=1"),
            ("Team", "a"),
            ("team-a", ""),
        ] {
            assert!(
                positions.list(namespace, name).await.is_none(),
                "{namespace:?} {name:?}"
            );
        }
        assert_eq!(positions.requests(), 0);
        assert!(Positions::without_cluster()
            .list("team-a", "main")
            .await
            .is_none());
    }
}
