//! One memory budget, from which every byte bound of the server is derived.
//!
//! The bounded parts of the server (captured pods, the replay rings, the
//! observation history, the auth caches and the sessions) each take a fixed
//! share of one budget, so that together they cannot pass it. The budget is
//! `--memory-budget` when given; else half of the cgroup's memory limit when
//! the process runs under one (a container's `resources.limits.memory`),
//! leaving the other half for what no flag bounds: the store of live
//! objects, which grows with the cluster, the snapshots and the runtime;
//! else [`DEFAULT_BUDGET`].
//!
//! A `--max-…-bytes` flag given explicitly replaces its share; the server
//! warns when the bounds then add up past the budget.

use std::path::Path;

const MIB: usize = 1 << 20;

/// The budget when there is neither a flag nor a cgroup limit.
pub const DEFAULT_BUDGET: usize = 512 * MIB;

/// The budget is this fraction of a cgroup limit (numerator, denominator).
const CGROUP_SHARE: (usize, usize) = (1, 2);

/// The smallest budget taken: below it the shares are too small to keep a
/// single large pod, and a tiny cgroup limit is more likely a mistake.
pub const MIN_BUDGET: usize = 32 * MIB;

/// Each bounded part's share of the budget, in percent. They add up to
/// 94: the rest is slack for what is bounded by count only (rate limiters,
/// per-stream buffers).
const CAPTURED_PERCENT: usize = 35;
const REPLAY_PERCENT: usize = 25;
const HISTORY_PERCENT: usize = 20;
/// Each of the three auth caches (identities, access, namespace lists).
const AUTH_CACHE_PERCENT: usize = 3;
const SESSIONS_PERCENT: usize = 5;

/// One TrainJob may hold this fraction of all captured pods' bytes, so one
/// crash-looping job cannot evict the evidence of every other.
pub const PER_TRAINJOB_DIVISOR: usize = 16;
/// One namespace may hold this fraction of all replay bytes.
pub const PER_NAMESPACE_DIVISOR: usize = 4;

/// Where the budget came from (logged at start).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BudgetSource {
    /// `--memory-budget`.
    Flag,
    /// Half of this cgroup memory limit, in bytes.
    Cgroup(u64),
    /// No flag and no cgroup limit: [`DEFAULT_BUDGET`].
    Default,
}

/// The memory budget of the bounded parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MemoryBudget {
    /// Bytes in all.
    pub bytes: usize,
    /// Where it came from.
    pub source: BudgetSource,
}

/// Every byte bound, as derived from a budget (or replaced by a flag).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ByteBounds {
    /// Captured pods, in all.
    pub captured_total: usize,
    /// Captured pods, per TrainJob.
    pub captured_per_trainjob: usize,
    /// `change` frames kept for resumes, all namespaces together.
    pub replay_total: usize,
    /// `change` frames kept for resumes, per namespace.
    pub replay_per_namespace: usize,
    /// Observation histories, all objects.
    pub history: usize,
    /// Each auth cache.
    pub auth_cache: usize,
    /// Sign-in sessions, all together.
    pub sessions: usize,
}

impl ByteBounds {
    /// What the bounds hold at most together: the per-TrainJob and
    /// per-namespace bounds are parts of their totals, and there are three
    /// auth caches.
    pub fn sum(&self) -> usize {
        self.captured_total
            .saturating_add(self.replay_total)
            .saturating_add(self.history)
            .saturating_add(self.auth_cache.saturating_mul(3))
            .saturating_add(self.sessions)
    }
}

impl MemoryBudget {
    /// The budget of `flag` if given, else from the cgroup limit under
    /// `cgroup_root` (normally `/sys/fs/cgroup`) for the process whose
    /// `/proc/self/cgroup` reads `self_cgroup`, else the default.
    pub fn resolve(flag: Option<usize>, cgroup_root: &Path, self_cgroup: &str) -> Self {
        if let Some(bytes) = flag {
            return Self::from_flag(bytes);
        }
        match cgroup_limit(cgroup_root, self_cgroup) {
            Some(limit) => Self::from_cgroup_limit(limit),
            None => MemoryBudget {
                bytes: DEFAULT_BUDGET,
                source: BudgetSource::Default,
            },
        }
    }

    /// The budget `--memory-budget` gives.
    pub fn from_flag(bytes: usize) -> Self {
        MemoryBudget {
            bytes: bytes.max(MIN_BUDGET),
            source: BudgetSource::Flag,
        }
    }

    /// The budget under a cgroup memory limit of `limit` bytes.
    pub fn from_cgroup_limit(limit: u64) -> Self {
        let limit_usize = usize::try_from(limit).unwrap_or(usize::MAX);
        let bytes = limit_usize / CGROUP_SHARE.1 * CGROUP_SHARE.0;
        MemoryBudget {
            bytes: bytes.max(MIN_BUDGET),
            source: BudgetSource::Cgroup(limit),
        }
    }

    /// The budget of this process: the flag, else its own cgroup's limit.
    pub fn of_this_process(flag: Option<usize>) -> Self {
        let self_cgroup = std::fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        Self::resolve(flag, Path::new("/sys/fs/cgroup"), &self_cgroup)
    }

    /// Each part's share of the budget.
    pub fn bounds(&self) -> ByteBounds {
        let share = |percent: usize| self.bytes / 100 * percent;
        let captured_total = share(CAPTURED_PERCENT);
        let replay_total = share(REPLAY_PERCENT);
        ByteBounds {
            captured_total,
            captured_per_trainjob: captured_total / PER_TRAINJOB_DIVISOR,
            replay_total,
            replay_per_namespace: replay_total / PER_NAMESPACE_DIVISOR,
            history: share(HISTORY_PERCENT),
            auth_cache: share(AUTH_CACHE_PERCENT),
            sessions: share(SESSIONS_PERCENT),
        }
    }
}

/// The memory limit of the cgroup a process is in, if it has one: cgroup
/// v2's `memory.max` of its own group (the line `0::/path` of
/// `/proc/self/cgroup`), then at the root (a container with its own cgroup
/// namespace sees its group as the root); else v1's
/// `memory/memory.limit_in_bytes`. `max`, or a v1 value near `i64::MAX`,
/// means no limit.
fn cgroup_limit(root: &Path, self_cgroup: &str) -> Option<u64> {
    let v2_group = self_cgroup
        .lines()
        .find_map(|line| line.strip_prefix("0::"))
        .map(|path| path.trim().trim_start_matches('/'));
    let mut candidates = Vec::new();
    if let Some(group) = v2_group.filter(|g| !g.is_empty()) {
        candidates.push(root.join(group).join("memory.max"));
    }
    candidates.push(root.join("memory.max"));
    candidates.push(root.join("memory").join("memory.limit_in_bytes"));
    candidates
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .find_map(|text| parse_limit(&text))
}

/// A cgroup limit file's value: `None` for `max` or for a v1 "unlimited"
/// (a page-rounded `i64::MAX`), or for anything unreadable.
fn parse_limit(text: &str) -> Option<u64> {
    let value: u64 = text.trim().parse().ok()?;
    (value < 1 << 60).then_some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake cgroup tree, removed when dropped.
    struct CgroupDir(std::path::PathBuf);

    impl CgroupDir {
        fn path(&self) -> &Path {
            &self.0
        }
    }

    impl Drop for CgroupDir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn cgroup_dir(files: &[(&str, &str)]) -> CgroupDir {
        use std::sync::atomic::{AtomicU32, Ordering};
        static NEXT: AtomicU32 = AtomicU32::new(0);
        let dir = CgroupDir(std::env::temp_dir().join(format!(
            "dispatch-dash-cgroup-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        )));
        for (path, text) in files {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().expect("has a parent")).expect("mkdir");
            std::fs::write(path, text).expect("write");
        }
        std::fs::create_dir_all(dir.path()).expect("mkdir");
        dir
    }

    #[test]
    fn a_flag_wins_over_the_cgroup() {
        let dir = cgroup_dir(&[("memory.max", "536870912\n")]);
        let budget = MemoryBudget::resolve(Some(100 * MIB), dir.path(), "0::/\n");
        assert_eq!(
            budget,
            MemoryBudget {
                bytes: 100 * MIB,
                source: BudgetSource::Flag
            }
        );
    }

    #[test]
    fn half_of_a_v2_limit_in_the_processs_own_group() {
        let dir = cgroup_dir(&[
            ("memory.max", "max\n"),
            ("kubepods/pod1/ctr/memory.max", "536870912\n"),
        ]);
        let budget = MemoryBudget::resolve(None, dir.path(), "0::/kubepods/pod1/ctr\n");
        assert_eq!(budget.bytes, 256 * MIB);
        assert_eq!(budget.source, BudgetSource::Cgroup(512 * MIB as u64));
    }

    #[test]
    fn a_cgroup_namespace_sees_its_limit_at_the_root() {
        let dir = cgroup_dir(&[("memory.max", "1073741824\n")]);
        let budget = MemoryBudget::resolve(None, dir.path(), "0::/\n");
        assert_eq!(budget.bytes, 512 * MIB);
    }

    #[test]
    fn v1_limits_and_unlimited_values() {
        let dir = cgroup_dir(&[("memory/memory.limit_in_bytes", "268435456\n")]);
        assert_eq!(MemoryBudget::resolve(None, dir.path(), "").bytes, 128 * MIB);
        let unlimited = cgroup_dir(&[
            ("memory.max", "max\n"),
            ("memory/memory.limit_in_bytes", "9223372036854771712\n"),
        ]);
        assert_eq!(
            MemoryBudget::resolve(None, unlimited.path(), "0::/\n"),
            MemoryBudget {
                bytes: DEFAULT_BUDGET,
                source: BudgetSource::Default
            }
        );
        let none = cgroup_dir(&[]);
        assert_eq!(
            MemoryBudget::resolve(None, none.path(), "").source,
            BudgetSource::Default
        );
    }

    #[test]
    fn a_tiny_limit_still_gets_the_minimum() {
        let dir = cgroup_dir(&[("memory.max", "16777216\n")]);
        assert_eq!(
            MemoryBudget::resolve(None, dir.path(), "").bytes,
            MIN_BUDGET
        );
    }

    #[test]
    fn the_shares_fit_the_budget() {
        for bytes in [
            MIN_BUDGET,
            256 * MIB,
            DEFAULT_BUDGET,
            4096 * MIB,
            3 * MIB + 7,
        ] {
            let bounds = MemoryBudget {
                bytes,
                source: BudgetSource::Flag,
            }
            .bounds();
            assert!(bounds.sum() <= bytes, "{bounds:?} past {bytes}");
            assert!(bounds.captured_per_trainjob <= bounds.captured_total);
            assert!(bounds.replay_per_namespace <= bounds.replay_total);
            assert!(bounds.auth_cache > 0 && bounds.sessions > 0);
        }
    }
}
