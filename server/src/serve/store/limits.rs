//! How much a [`Store`](super::Store) and the hub's replay rings may hold,
//! and the byte sizes the flags give them in.

use super::CAPTURED_PER_TRAINJOB;

const MIB: usize = 1024 * 1024;

/// The memory bounds of a [`Store`](super::Store) and of the hub's replay rings.
///
/// The byte defaults sit far above what ordinary objects weigh, so in
/// practice the counts bind: a projected pod weighs about 1.3 KB, so 256
/// captured pods of one TrainJob weigh about 0.35 MB and 50,000 in all
/// about 65 MB. The byte bounds bind only when pods carry long annotation
/// values or messages (Kubernetes allows 256 KiB of annotations per object).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoreLimits {
    /// Captured pods kept per TrainJob.
    pub captured_per_trainjob: usize,
    /// Captured pods kept in all; the oldest go first.
    pub captured_total: usize,
    /// Bytes of captured pods kept per TrainJob; the oldest go first.
    pub captured_bytes_per_trainjob: usize,
    /// Bytes of captured pods kept in all; the oldest go first.
    pub captured_bytes_total: usize,
    /// Bytes of `change` frames each namespace keeps for `Last-Event-ID`
    /// resumes (read by the hub; the frame count bound is fixed).
    pub replay_bytes_per_namespace: usize,
    /// Bytes of `change` frames all namespaces' rings keep together; past
    /// it the oldest frame of any namespace goes first.
    pub replay_bytes_total: usize,
    /// Objects gone for longer than this lose their observation history
    /// (read by the hub, see [`crate::serve::history`]).
    pub history_retention: std::time::Duration,
    /// Bytes of all observation histories together (read by the hub).
    pub history_bytes: usize,
}

impl Default for StoreLimits {
    fn default() -> Self {
        StoreLimits {
            captured_per_trainjob: CAPTURED_PER_TRAINJOB,
            captured_total: 50_000,
            captured_bytes_per_trainjob: 16 * MIB,
            captured_bytes_total: 256 * MIB,
            replay_bytes_per_namespace: 64 * MIB,
            replay_bytes_total: 256 * MIB,
            history_retention: crate::serve::history::DEFAULT_RETENTION,
            history_bytes: crate::serve::history::HistoryLimits::default().bytes,
        }
    }
}

/// Captured pods evicted to stay within a bound, by bound, since the start.
/// A pod larger than a whole byte budget is not kept, and counts under
/// that bound.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CaptureEvictions {
    /// Past `captured_per_trainjob`.
    pub trainjob_pods: u64,
    /// Past `captured_bytes_per_trainjob`.
    pub trainjob_bytes: u64,
    /// Past `captured_total`.
    pub total_pods: u64,
    /// Past `captured_bytes_total`.
    pub total_bytes: u64,
}

/// A byte size that is not a whole number with an optional binary suffix.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("expected a byte size such as 65536, 512Ki, 64Mi or 1Gi")]
pub struct ByteSizeError;

/// Reads a byte size: a whole number of bytes, optionally with a binary
/// suffix `Ki`, `Mi` or `Gi` (as Kubernetes quantities write them).
pub fn parse_byte_size(text: &str) -> Result<usize, ByteSizeError> {
    let text = text.trim();
    let (digits, multiplier) = [("Ki", 1usize << 10), ("Mi", 1 << 20), ("Gi", 1 << 30)]
        .into_iter()
        .find_map(|(suffix, m)| text.strip_suffix(suffix).map(|d| (d, m)))
        .unwrap_or((text, 1));
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(ByteSizeError);
    }
    digits
        .parse::<usize>()
        .ok()
        .and_then(|n| n.checked_mul(multiplier))
        .ok_or(ByteSizeError)
}
