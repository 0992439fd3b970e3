//! The hasher of the engine's lookup-only maps (section 4's index, the
//! snapshot's seen-set). No map is ever iterated, so no hash reaches the
//! output; only the cost and the exposure to crafted keys differ.
//!
//! Natively (the CLI, the server) it is std's keyed SipHash: the server
//! classifies what anyone who may create a pod names, and keys chosen to
//! collide must not make its index quadratic. In wasm std has no randomness
//! to key it with anyway (its keys are fixed), and there SipHash's rounds,
//! run by a browser's baseline compiler before it optimizes them, were a
//! twentieth of a page's first classification of 7,500 objects; a multiply
//! per eight bytes (the Fx hash) does the same job for the one user's own
//! tab.

use std::collections::{HashMap, HashSet};

#[cfg(not(target_arch = "wasm32"))]
pub(crate) type BuildHash = std::collections::hash_map::RandomState;
#[cfg(target_arch = "wasm32")]
pub(crate) type BuildHash = std::hash::BuildHasherDefault<FxHasher>;

pub(crate) type Map<K, V> = HashMap<K, V, BuildHash>;
pub(crate) type Set<K> = HashSet<K, BuildHash>;

/// An empty map with room for `n` entries.
pub(crate) fn map<K, V>(n: usize) -> Map<K, V> {
    Map::with_capacity_and_hasher(n, BuildHash::default())
}

/// An empty set with room for `n` entries.
pub(crate) fn set<K>(n: usize) -> Set<K> {
    Set::with_capacity_and_hasher(n, BuildHash::default())
}

/// The Fx hash (rustc's): each eight bytes rotated in, xored and
/// multiplied, and the sum mixed once at the end.
#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct FxHasher {
    hash: u64,
}

const FX_SEED: u64 = 0x51_7c_c1_b7_27_22_0a_95;

#[cfg_attr(not(target_arch = "wasm32"), allow(dead_code))]
impl FxHasher {
    fn add(&mut self, word: u64) {
        self.hash = (self.hash.rotate_left(5) ^ word).wrapping_mul(FX_SEED);
    }
}

impl std::hash::Hasher for FxHasher {
    fn write(&mut self, bytes: &[u8]) {
        let mut words = bytes.chunks_exact(8);
        for word in &mut words {
            let mut w = [0u8; 8];
            w.copy_from_slice(word);
            self.add(u64::from_le_bytes(w));
        }
        let rest = words.remainder();
        if !rest.is_empty() {
            let mut w = [0u8; 8];
            for (to, from) in w.iter_mut().zip(rest) {
                *to = *from;
            }
            // The length too, so that a short tail differs from its zeros.
            self.add(u64::from_le_bytes(w) ^ ((rest.len() as u64) << 56));
        }
    }

    fn write_u8(&mut self, i: u8) {
        self.add(u64::from(i));
    }

    fn write_usize(&mut self, i: usize) {
        self.add(i as u64);
    }

    /// The multiplies leave the low bits (a table's bucket) depending on
    /// the low bits only: MurmurHash3's finalizer mixes every bit into
    /// every other, once per key.
    fn finish(&self) -> u64 {
        let mut h = self.hash;
        h ^= h >> 33;
        h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
        h ^= h >> 33;
        h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
        h ^ (h >> 33)
    }
}

#[cfg(test)]
mod tests {
    use std::hash::{BuildHasher, BuildHasherDefault};

    use super::FxHasher;

    #[test]
    fn keys_that_differ_anywhere_hash_apart() {
        let build = BuildHasherDefault::<FxHasher>::default();
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
        // Deterministic: the same key, the same hash.
        assert_eq!(build.hash_one(keys[0]), build.hash_one(keys[0]));
    }

    #[test]
    fn bucket_bits_spread_over_sequential_names() {
        // 4,096 names like a namespace's TrainJobs: their low 10 bits (a
        // 1,024-bucket table, 4 a bucket on average) must not pile up: no
        // bucket holds 3 times the average.
        let build = BuildHasherDefault::<FxHasher>::default();
        let mut buckets = vec![0u32; 1024];
        for i in 0..4096 {
            let name = format!("bert-{i}-s1");
            buckets[(build.hash_one(name.as_str()) & 1023) as usize] += 1;
        }
        let fullest = buckets.iter().max().copied().unwrap_or(0);
        assert!(fullest <= 12, "a bucket holds {fullest} of 4,096 names");
    }
}
