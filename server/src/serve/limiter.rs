//! Keyed token buckets: how often one identity or one client address may
//! cost the cluster a review. A bucket holds up to `burst` tokens and gains
//! `per_second` a second; each review miss takes one, and a caller whose
//! bucket is empty is told to come back later instead of being reviewed.
//!
//! The map is bounded: at most `max_keys` buckets. A full bucket is the same
//! as no bucket, so when the map is full those go first, then the one used
//! longest ago.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Instant;

/// The rate one key may spend at.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rate {
    /// Tokens a bucket holds at most (the burst a quiet key may spend).
    pub burst: f64,
    /// Tokens a bucket gains each second.
    pub per_second: f64,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    tokens: f64,
    updated: Instant,
}

impl Bucket {
    fn refilled(self, rate: Rate, now: Instant) -> Bucket {
        let elapsed = now.saturating_duration_since(self.updated).as_secs_f64();
        Bucket {
            tokens: (self.tokens + elapsed * rate.per_second).min(rate.burst),
            updated: now,
        }
    }
}

/// Token buckets by key, at most `max_keys` of them.
#[derive(Debug)]
pub struct RateLimiter<K> {
    rate: Rate,
    max_keys: usize,
    buckets: Mutex<HashMap<K, Bucket>>,
}

impl<K: Hash + Eq + Clone> RateLimiter<K> {
    /// Buckets of `rate`, at most `max_keys` at once.
    pub fn new(rate: Rate, max_keys: usize) -> Self {
        RateLimiter {
            rate,
            max_keys: max_keys.max(1),
            buckets: Mutex::new(HashMap::new()),
        }
    }

    fn buckets(&self) -> std::sync::MutexGuard<'_, HashMap<K, Bucket>> {
        self.buckets.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Takes one token from `key`'s bucket; `false` when it is empty.
    pub fn allow(&self, key: &K, now: Instant) -> bool {
        let rate = self.rate;
        let mut buckets = self.buckets();
        if !buckets.contains_key(key) && buckets.len() >= self.max_keys {
            buckets.retain(|_, b| b.refilled(rate, now).tokens < rate.burst);
            if buckets.len() >= self.max_keys {
                let oldest = buckets
                    .iter()
                    .min_by_key(|(_, b)| b.updated)
                    .map(|(k, _)| k.clone());
                if let Some(oldest) = oldest {
                    buckets.remove(&oldest);
                }
            }
        }
        let bucket = buckets
            .get(key)
            .map(|b| b.refilled(rate, now))
            .unwrap_or(Bucket {
                tokens: rate.burst,
                updated: now,
            });
        let allowed = bucket.tokens >= 1.0;
        let tokens = if allowed {
            bucket.tokens - 1.0
        } else {
            bucket.tokens
        };
        buckets.insert(
            key.clone(),
            Bucket {
                tokens,
                updated: now,
            },
        );
        allowed
    }

    /// Whether `key`'s bucket holds a token now, without taking it.
    pub fn has_token(&self, key: &K, now: Instant) -> bool {
        let rate = self.rate;
        self.buckets()
            .get(key)
            .is_none_or(|b| b.refilled(rate, now).tokens >= 1.0)
    }

    /// Buckets held now.
    pub fn len(&self) -> usize {
        self.buckets().len()
    }

    /// Whether no bucket is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    const RATE: Rate = Rate {
        burst: 3.0,
        per_second: 1.0,
    };

    #[test]
    fn a_key_spends_its_burst_then_its_rate() {
        let limiter = RateLimiter::new(RATE, 10);
        let t0 = Instant::now();
        for i in 0..3 {
            assert!(limiter.allow(&"bob", t0), "burst token {i}");
        }
        assert!(!limiter.allow(&"bob", t0), "the burst is spent");
        assert!(
            limiter.allow(&"alice", t0),
            "another key has its own bucket"
        );
        assert!(!limiter.allow(&"bob", t0 + Duration::from_millis(900)));
        assert!(
            limiter.allow(&"bob", t0 + Duration::from_millis(1900)),
            "one token a second comes back"
        );
        assert!(!limiter.allow(&"bob", t0 + Duration::from_millis(1950)));
    }

    #[test]
    fn the_map_is_bounded_and_idle_keys_go_first() {
        let limiter = RateLimiter::new(RATE, 2);
        let t0 = Instant::now();
        for _ in 0..3 {
            assert!(limiter.allow(&"busy", t0));
        }
        assert!(limiter.allow(&"quiet", t0));
        // Ten seconds on, "quiet" is full again (as good as absent), "busy"
        // too; a third key pushes one out and the map stays at two.
        let later = t0 + Duration::from_secs(10);
        assert!(limiter.allow(&"third", later));
        assert_eq!(limiter.len(), 1, "full buckets are dropped first");
        let many = RateLimiter::new(RATE, 50);
        for i in 0..10_000 {
            many.allow(&i, later);
        }
        assert!(many.len() <= 50, "{} buckets", many.len());
    }

    #[test]
    fn a_full_map_of_busy_keys_drops_the_one_used_longest_ago() {
        let limiter = RateLimiter::new(RATE, 2);
        let t0 = Instant::now();
        for _ in 0..3 {
            limiter.allow(&"a", t0);
        }
        for _ in 0..3 {
            limiter.allow(&"b", t0 + Duration::from_millis(10));
        }
        assert!(limiter.allow(&"c", t0 + Duration::from_millis(20)));
        assert_eq!(limiter.len(), 2);
        // "a" was dropped, so it starts afresh with a full burst.
        assert!(limiter.allow(&"a", t0 + Duration::from_millis(30)));
        assert_eq!(limiter.len(), 2);
    }
}
