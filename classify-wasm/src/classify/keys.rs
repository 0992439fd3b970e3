//! Section 1: the label and annotation keys, and what a counter is.

// The keys themselves are declared with the other fields the engine reads.
pub(super) use crate::fields::{
    ADMISSION, ADMISSION_GATED_BY, HOLD_INSTANCE, JOBSET_NAME, JOB_ID, JOB_UID, OPEN_GATE,
    RESTART_ATTEMPT, SUBMISSION,
};

/// 2^53 − 1: every JSON reader holds a counter up to this exactly.
pub(super) const COUNTER_MAX: u64 = 9_007_199_254_740_991;

/// "A decimal of N or more, with no sign or leading zero" (section 1).
pub fn counter(text: &str, min: u64) -> Option<u64> {
    let b = text.as_bytes();
    if b.is_empty()
        || !b.iter().all(u8::is_ascii_digit)
        || (b.len() > 1 && b.first() == Some(&b'0'))
    {
        return None;
    }
    if b.len() > 16 {
        return None;
    }
    let n: u64 = text.parse().ok()?;
    (n >= min && n <= COUNTER_MAX).then_some(n)
}

/// The entries of an admission-gated-by annotation, trimmed, empty ones dropped.
pub(super) fn gates(annotation: Option<&str>) -> Vec<&str> {
    annotation
        .map(|a| {
            a.split(',')
                .map(|g| g.trim_matches(|c: char| c.is_ascii_whitespace()))
                .filter(|g| !g.is_empty())
                .collect()
        })
        .unwrap_or_default()
}
