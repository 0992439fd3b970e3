//! The hasher of the engine's lookup-only maps (section 4's index, the
//! snapshot's seen-set, the YAML reader's anchors), and of the live page's
//! own maps. No map is ever iterated into output, so no hash reaches what a
//! user reads; only the cost and the exposure to crafted keys differ.
//!
//! Every key these maps see can be chosen by someone else: anyone who may
//! create a pod names it, and a table whose keys were chosen to share a
//! bucket turns each insert into a scan of all the others. So every map is
//! keyed with a secret the chooser cannot know.
//!
//! Natively (the CLI, the server) that is std's SipHash, keyed from the OS.
//! In wasm std has no randomness (its keys are fixed, so known to anyone),
//! and there SipHash's rounds, run by a browser's baseline compiler before it
//! optimizes them, were a twentieth of a page's first classification of
//! 7,500 objects. There [`KeyedState`] is foldhash's folded multiply, keyed
//! by [`seed`]: the page passes it bytes from `crypto.getRandomValues` before
//! it classifies anything. The engine itself draws no randomness; it only
//! keeps the seed it is given. foldhash resists keys crafted without the
//! seed, which is what a pod's author has: the seed never leaves the tab.

use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::OnceLock;

use foldhash::SharedSeed;

#[cfg(not(target_arch = "wasm32"))]
pub(crate) type BuildHash = std::collections::hash_map::RandomState;
#[cfg(target_arch = "wasm32")]
pub(crate) type BuildHash = KeyedState;

pub(crate) type Map<K, V> = HashMap<K, V, BuildHash>;
pub(crate) type Set<K> = HashSet<K, BuildHash>;

/// A map keyed by the page's seed, for the live page's own tables.
pub type KeyedMap<K, V> = HashMap<K, V, KeyedState>;
/// A set keyed by the page's seed.
pub type KeyedSet<K> = HashSet<K, KeyedState>;

/// An empty map with room for `n` entries.
pub(crate) fn map<K, V>(n: usize) -> Map<K, V> {
    Map::with_capacity_and_hasher(n, BuildHash::default())
}

/// An empty set with room for `n` entries.
pub(crate) fn set<K>(n: usize) -> Set<K> {
    Set::with_capacity_and_hasher(n, BuildHash::default())
}

/// The secret every [`KeyedState::default`] uses, once [`seed`] has set it.
static SEEDED: OnceLock<Seed> = OnceLock::new();

/// Before [`seed`] is called (natively, in tests) the maps still work, with
/// a key that is public: only the page's seed makes them resist.
static UNSEEDED: Seed = Seed {
    shared: SharedSeed::from_u64(0x243f_6a88_85a3_08d3),
    per_map: 0x1319_8a2e_0370_7344,
};

struct Seed {
    shared: SharedSeed,
    per_map: u64,
}

/// Keys every [`KeyedState`] made from now on with 16 random bytes. The
/// first call wins: a map must keep the key its entries were placed with,
/// and no later call can move one. Returns whether this call set it.
pub fn seed(random: [u8; 16]) -> bool {
    let mut set = false;
    SEEDED.get_or_init(|| {
        set = true;
        Seed::from_bytes(random)
    });
    set
}

/// Whether [`seed`] has keyed the maps.
pub fn is_seeded() -> bool {
    SEEDED.get().is_some()
}

impl Seed {
    fn from_bytes(random: [u8; 16]) -> Seed {
        let (shared, per_map) = random.split_at(8);
        let word = |bytes: &[u8]| {
            let mut w = [0u8; 8];
            w.copy_from_slice(bytes);
            u64::from_le_bytes(w)
        };
        Seed {
            shared: SharedSeed::from_u64(word(shared)),
            per_map: word(per_map),
        }
    }
}

/// foldhash keyed by the page's seed (or, before it, by a public key).
#[derive(Clone, Copy)]
pub struct KeyedState {
    seed: &'static Seed,
    per_map: u64,
}

impl Default for KeyedState {
    fn default() -> Self {
        let seed = SEEDED.get().unwrap_or(&UNSEEDED);
        KeyedState {
            seed,
            per_map: seed.per_map,
        }
    }
}

impl std::fmt::Debug for KeyedState {
    // The key is the secret: it is never printed.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("KeyedState([redacted])")
    }
}

impl BuildHasher for KeyedState {
    type Hasher = foldhash::fast::FoldHasher<'static>;

    fn build_hasher(&self) -> Self::Hasher {
        foldhash::fast::FoldHasher::with_seed(self.per_map, &self.seed.shared)
    }
}

#[cfg(test)]
mod tests {
    use std::hash::BuildHasher;

    use super::{KeyedState, Seed};

    fn state(seed: &'static Seed) -> KeyedState {
        KeyedState {
            seed,
            per_map: seed.per_map,
        }
    }

    fn leaked(random: [u8; 16]) -> &'static Seed {
        Box::leak(Box::new(Seed::from_bytes(random)))
    }

    /// A 1,024-bucket table's index: hashbrown takes the low bits.
    fn bucket(build: &KeyedState, key: &str) -> usize {
        (build.hash_one(key) & 1023) as usize
    }

    #[test]
    fn names_crafted_to_share_a_bucket_under_one_key_spread_under_another() {
        // What a pod's author can do with a key they know: search names
        // until 64 of them land in one bucket.
        let known = state(leaked(*b"0123456789abcdef"));
        let target = bucket(&known, "llm-7b-node-0-0");
        let crafted: Vec<String> = (0u64..)
            .map(|i| format!("llm-7b-node-0-{i}"))
            .filter(|name| bucket(&known, name) == target)
            .take(64)
            .collect();
        assert_eq!(crafted.len(), 64);

        // The same names in a tab keyed with a secret: no bucket holds more
        // than a handful (64 names over 1,024 buckets average 1/16).
        let secret = state(leaked(*b"a tab's own seed"));
        let mut buckets = vec![0u32; 1024];
        for name in &crafted {
            buckets[bucket(&secret, name)] += 1;
        }
        let fullest = buckets.iter().max().copied().unwrap_or(0);
        assert!(fullest <= 4, "a bucket holds {fullest} of 64 crafted names");
    }

    #[test]
    fn keys_that_differ_anywhere_hash_apart() {
        let build = KeyedState::default();
        let keys = [
            ("team-a", "bert-1019-s1", "s1"),
            ("team-a", "bert-1019-s2", "s1"),
            ("team-b", "bert-1019-s1", "s1"),
            ("team-a", "bert-1019-s1", ""),
            ("team-a", "bert-1019-s1\0", ""),
            ("", "", ""),
        ];
        let hashes: Vec<u64> = keys.iter().map(|k| build.hash_one(k)).collect();
        for (i, a) in hashes.iter().enumerate() {
            for (j, b) in hashes.iter().enumerate() {
                assert!(i == j || a != b, "{:?} and {:?}", keys[i], keys[j]);
            }
        }
        // Deterministic within a tab: the same key, the same hash.
        assert_eq!(build.hash_one(keys[0]), build.hash_one(keys[0]));
    }

    #[test]
    fn bucket_bits_spread_over_sequential_names() {
        // 4,096 names like a namespace's TrainJobs: their low 10 bits (a
        // 1,024-bucket table, 4 a bucket on average) must not pile up: no
        // bucket holds 3 times the average.
        let build = KeyedState::default();
        let mut buckets = vec![0u32; 1024];
        for i in 0..4096 {
            let name = format!("bert-{i}-s1");
            buckets[bucket(&build, &name)] += 1;
        }
        let fullest = buckets.iter().max().copied().unwrap_or(0);
        assert!(fullest <= 12, "a bucket holds {fullest} of 4,096 names");
    }

    #[test]
    fn the_first_seed_keys_every_later_map_and_is_never_printed() {
        let before = KeyedState::default().hash_one("team-a/bert");
        assert!(super::seed(*b"page entropy 16b"));
        assert!(super::is_seeded());
        // A second seed cannot move the key under maps already filled.
        assert!(!super::seed(*b"another 16 bytes"));
        let after = KeyedState::default();
        assert_ne!(after.hash_one("team-a/bert"), before);
        assert_eq!(
            after.hash_one("team-a/bert"),
            state(leaked(*b"page entropy 16b")).hash_one("team-a/bert")
        );
        assert_eq!(format!("{after:?}"), "KeyedState([redacted])");
    }
}
