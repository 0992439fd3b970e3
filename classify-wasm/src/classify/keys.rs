//! Section 1: the label and annotation keys, and what a counter is.

pub const JOB_ID: &str = "dispatch.phpboyscout.uk/job-id";
pub const SUBMISSION: &str = "dispatch.phpboyscout.uk/submission";
pub const HOLD_INSTANCE: &str = "dispatch.phpboyscout.uk/hold-instance";
pub const ADMISSION: &str = "dispatch.phpboyscout.uk/admission";
pub const RESTART_ATTEMPT: &str = "jobset.sigs.k8s.io/restart-attempt";
pub const JOBSET_NAME: &str = "jobset.sigs.k8s.io/jobset-name";
pub const JOB_UID: &str = "kueue.x-k8s.io/job-uid";
pub const QUEUE_NAME: &str = "kueue.x-k8s.io/queue-name";
pub const ADMISSION_GATED_BY: &str = "kueue.x-k8s.io/admission-gated-by";
pub const OPEN_GATE: &str = "dispatch.phpboyscout.uk/open";

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
