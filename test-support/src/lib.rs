//! What the workspace's tests share, so no crate copies another's test
//! code or includes its files by path:
//!
//! - [`harness`]: the one harness for every case file, natively and under
//!   wasm (rust-analyzer's `check(input, expect)`, with `UPDATE_EXPECT=1`);
//! - the folders of the cases ([`shared_dir`], [`engine_cases_dir`]) and
//!   readers of them, for native tests (wasm32 has no filesystem:
//!   `bindings/wasm` embeds the same folders at build time);
//! - [`Rng`], the one seeded generator of the tests' random inputs;
//! - [`queue_cases`], the check of the queue facts' golden cases;
//! - [`linking_world`], the seeded world of linked objects the engine's, the
//!   server store's and the web store's property tests change step by step.

pub mod harness;
pub mod linking_world;
pub mod queue_cases;

/// SplitMix64: a tiny seeded generator, so every run draws the same
/// inputs, natively and in wasm (which has no proptest).
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }

    /// One of `from`, which must not be empty.
    pub fn pick<'a, T>(&mut self, from: &'a [T]) -> &'a T {
        &from[self.below(from.len())]
    }
}

mod folders {
    use std::path::{Path, PathBuf};

    use serde_json::Value;

    /// `../shared` beside the repository (the spec's golden cases and
    /// dumps), or `DISPATCH_SHARED` when set.
    pub fn shared_dir() -> PathBuf {
        std::env::var_os("DISPATCH_SHARED")
            .map(PathBuf::from)
            .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared"))
    }

    /// The engine's own cases, `classify-wasm/cases`.
    pub fn engine_cases_dir() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../classify-wasm/cases")
    }

    /// Every case file of `dir` (`.json`, `.yaml`, `.yml`) as (file name,
    /// text), in file-name order. Panics naming the file it cannot read.
    pub fn read_case_folder(dir: &Path) -> Vec<(String, String)> {
        let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        let mut files: Vec<(String, String)> = entries
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| {
                matches!(
                    p.extension().and_then(|e| e.to_str()),
                    Some("json" | "yaml" | "yml")
                )
            })
            .map(|p| {
                let text =
                    std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
                let name = p.file_name().map(|n| n.to_string_lossy().into_owned());
                (name.unwrap_or_default(), text)
            })
            .collect();
        files.sort();
        files
    }

    /// The shared golden case `name` (`../shared/cases/{name}.json`).
    pub fn shared_case(name: &str) -> Value {
        let path = shared_dir().join("cases").join(format!("{name}.json"));
        let text =
            std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    /// Every shared golden case, in file-name order.
    pub fn shared_cases() -> Vec<Value> {
        read_case_folder(&shared_dir().join("cases"))
            .into_iter()
            .filter(|(name, _)| name.ends_with(".json"))
            .map(|(name, text)| {
                serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"))
            })
            .collect()
    }
}

pub use folders::*;
