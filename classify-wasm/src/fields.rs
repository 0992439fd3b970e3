//! The fields the engine reads, declared once: the object keys any section
//! reads (the JSON parser builds only those), the labels and annotations of
//! section 1 that are read (the server keeps only those), and the fields a
//! YAML plain scalar is typed by (section 1, Types). The server's projection
//! is tied to these by its tests, so a field the rules start reading cannot
//! be dropped on the way in unnoticed.

use crate::classify::{
    ADMISSION, ADMISSION_GATED_BY, HOLD_INSTANCE, JOBSET_NAME, JOB_ID, JOB_UID, QUEUE_NAME,
    RESTART_ATTEMPT, SUBMISSION,
};

/// One list, two forms: the array for consumers, and a `matches!` for the
/// parser's hot path.
macro_rules! read_keys {
    ($($key:literal),+ $(,)?) => {
        /// Every object key the spec reads, at any depth (the keys inside
        /// labels and annotations are not listed: those maps keep all of
        /// theirs). The JSON parser checks the syntax of every other key's
        /// value without building it (YAML keeps every key, since anchors
        /// may point anywhere).
        pub const READ_KEYS: &[&str] = &[$($key),+];

        /// Whether `key` is one of [`READ_KEYS`].
        pub fn is_read_key(key: &str) -> bool {
            matches!(key, $($key)|+)
        }
    };
}

read_keys![
    "kind",
    "mode",
    "nodesReadable",
    "items",
    "captured",
    "trainJobUID",
    "pod",
    "metadata",
    "name",
    "namespace",
    "uid",
    "labels",
    "annotations",
    "ownerReferences",
    "controller",
    "creationTimestamp",
    "deletionTimestamp",
    "spec",
    "suspend",
    "active",
    "nodeName",
    "schedulingGates",
    "status",
    "conditions",
    "type",
    "reason",
    "message",
    "lastTransitionTime",
    "restarts",
    "admissionChecks",
    "state",
    "phase",
    "containerStatuses",
    "lastState",
    "terminated",
    "waiting",
    "exitCode",
    "finishedAt",
];

/// The labels any rule reads (section 1); no other label is looked at.
pub const LABELS_READ: [&str; 6] = [
    JOB_ID,
    SUBMISSION,
    JOBSET_NAME,
    RESTART_ATTEMPT,
    JOB_UID,
    QUEUE_NAME,
];

/// The annotations any rule reads (section 1); no other is looked at.
pub const ANNOTATIONS_READ: [&str; 3] = [HOLD_INSTANCE, ADMISSION, ADMISSION_GATED_BY];

/// The fields read as booleans: a YAML plain scalar there is a boolean.
pub const BOOLEAN_FIELDS: [&str; 4] = ["suspend", "active", "controller", "nodesReadable"];

/// The fields read as integers: a YAML plain scalar there is an integer.
pub const INTEGER_FIELDS: [&str; 2] = ["exitCode", "restarts"];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_typed_fields_are_read_fields() {
        for key in BOOLEAN_FIELDS.iter().chain(&INTEGER_FIELDS) {
            assert!(is_read_key(key), "{key} is typed but not read");
        }
    }

    #[test]
    fn the_list_has_no_duplicates_and_the_matcher_agrees_with_it() {
        let mut sorted = READ_KEYS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), READ_KEYS.len());
        assert!(READ_KEYS.iter().all(|k| is_read_key(k)));
        for other in [
            "env",
            "args",
            "managedFields",
            "Kind",
            "kind ",
            "",
            "containers",
        ] {
            assert!(!is_read_key(other), "{other}");
        }
    }

    #[test]
    fn a_label_or_annotation_read_is_never_also_the_other() {
        for label in LABELS_READ {
            assert!(!ANNOTATIONS_READ.contains(&label), "{label}");
        }
    }
}
