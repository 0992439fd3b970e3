//! The bounded, expiring cache the review answers are kept in, and what
//! its entries weigh.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::Identity;

/// What a cache entry weighs: the bytes its key or answer holds, counted
/// against [`super::AuthConfig::max_cache_bytes`].
pub trait Weigh {
    /// Bytes held, the value itself included.
    fn weight(&self) -> usize;
}

impl Weigh for bool {
    fn weight(&self) -> usize {
        1
    }
}

impl Weigh for u8 {
    fn weight(&self) -> usize {
        1
    }
}

impl Weigh for [u8; 32] {
    fn weight(&self) -> usize {
        32
    }
}

impl<A: Weigh, B: Weigh> Weigh for (A, B) {
    fn weight(&self) -> usize {
        self.0.weight() + self.1.weight()
    }
}

impl<T: Weigh> Weigh for Option<T> {
    fn weight(&self) -> usize {
        std::mem::size_of::<Self>() + self.as_ref().map_or(0, Weigh::weight)
    }
}

impl<T: Weigh> Weigh for Arc<T> {
    fn weight(&self) -> usize {
        std::mem::size_of::<Self>() + T::weight(self)
    }
}

impl Weigh for Identity {
    fn weight(&self) -> usize {
        std::mem::size_of::<Self>()
            + self.user.len()
            + self.uid.as_ref().map_or(0, String::len)
            + self.groups.iter().map(|g| g.len() + 24).sum::<usize>()
            + (self.extra.iter())
                .map(|(k, v)| k.len() + v.iter().map(|x| x.len() + 24).sum::<usize>() + 48)
                .sum::<usize>()
    }
}

/// A bounded map of answers that expire: allows after one TTL, denies
/// after another. Bounded by count and by bytes; expired entries are purged
/// as new ones come (at most once a second, so a burst of inserts costs one
/// sweep), and when it is still full the entries closest to expiring go.
#[derive(Debug)]
pub struct DecisionCache<K, V> {
    inner: Mutex<CacheInner<K, V>>,
    max_entries: usize,
    max_bytes: usize,
}

#[derive(Debug)]
struct CacheInner<K, V> {
    entries: HashMap<K, CacheEntry<V>>,
    bytes: usize,
    next_sweep: Option<Instant>,
}

#[derive(Debug, Clone)]
struct CacheEntry<V> {
    value: V,
    stored: Instant,
    expires: Instant,
    weight: usize,
}

/// How often inserts purge expired entries.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// What the map itself spends per entry, besides the key and the answer.
pub(super) const ENTRY_OVERHEAD: usize = 48;

impl<K: std::hash::Hash + Eq + Clone + Weigh, V: Clone + Weigh> DecisionCache<K, V> {
    /// A cache of at most `max_entries` entries and `max_bytes` bytes.
    pub fn new(max_entries: usize, max_bytes: usize) -> Self {
        DecisionCache {
            inner: Mutex::new(CacheInner {
                entries: HashMap::new(),
                bytes: 0,
                next_sweep: None,
            }),
            max_entries: max_entries.max(1),
            max_bytes,
        }
    }

    fn inner(&self) -> std::sync::MutexGuard<'_, CacheInner<K, V>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The answer for `key`, unless it expired or is older than `max_age`.
    pub fn get(&self, key: &K, now: Instant, max_age: Option<Duration>) -> Option<V> {
        let inner = self.inner();
        let entry = inner.entries.get(key)?;
        let fresh = now < entry.expires
            && max_age.is_none_or(|age| now.saturating_duration_since(entry.stored) < age);
        fresh.then(|| entry.value.clone())
    }

    /// Stores an answer for `ttl`. An answer heavier than the whole byte
    /// bound is not stored.
    pub fn put(&self, key: K, value: V, now: Instant, ttl: Duration) {
        let weight = key.weight() + value.weight() + ENTRY_OVERHEAD;
        if weight > self.max_bytes {
            return;
        }
        let mut inner = self.inner();
        if let Some(old) = inner.entries.remove(&key) {
            inner.bytes -= old.weight;
        }
        if inner.next_sweep.is_none_or(|at| now >= at) {
            inner.next_sweep = Some(now + SWEEP_EVERY);
            let mut freed = 0;
            inner.entries.retain(|_, e| {
                let keep = now < e.expires;
                if !keep {
                    freed += e.weight;
                }
                keep
            });
            inner.bytes -= freed;
        }
        while !inner.entries.is_empty()
            && (inner.entries.len() >= self.max_entries || inner.bytes + weight > self.max_bytes)
        {
            let soonest = (inner.entries.iter())
                .min_by_key(|(_, e)| e.expires)
                .map(|(k, _)| k.clone());
            let Some(soonest) = soonest else { break };
            if let Some(gone) = inner.entries.remove(&soonest) {
                inner.bytes -= gone.weight;
            }
        }
        inner.bytes += weight;
        inner.entries.insert(
            key,
            CacheEntry {
                value,
                stored: now,
                expires: now + ttl,
                weight,
            },
        );
    }

    /// Forgets `key`'s answer.
    pub fn remove(&self, key: &K) {
        let mut inner = self.inner();
        if let Some(gone) = inner.entries.remove(key) {
            inner.bytes -= gone.weight;
        }
    }

    /// Entries held now (expired ones included until they are purged).
    pub fn len(&self) -> usize {
        self.inner().entries.len()
    }

    /// Bytes held now, as [`Weigh`] counts them.
    pub fn bytes(&self) -> usize {
        self.inner().bytes
    }

    /// Whether the cache holds nothing.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}
