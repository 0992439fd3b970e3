//! The fields the engine reads, declared once: the object keys any section
//! reads (the JSON parser builds only those), the labels and annotations of
//! section 1 that are read (the server keeps only those), and the fields a
//! YAML plain scalar is typed by (section 1, Types). The read schema
//! (`schema.rs`), which the server's projection follows, is tied to these
//! by its tests, so a field the rules start reading cannot be dropped on
//! the way in unnoticed.

/// Section 1's label and annotation keys. Declared here, the bottom of the
/// engine's module graph, so that reading them depends on nothing else.
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

/// One list, three forms: the array for consumers, a `match` for the
/// parser's hot path, and [`ReadKey`], the id the tree keeps with each value
/// under a read key so that the typed views find a field by comparing one
/// byte, not strings.
macro_rules! read_keys {
    ($($name:ident = $key:literal),+ $(,)?) => {
        /// Every object key the spec reads, at any depth (the keys inside
        /// labels and annotations are not listed: the JSON parser keeps those
        /// of [`LABELS_READ`] and [`ANNOTATIONS_READ`], and any other whose
        /// value is not a string or null, for its wrong-type error). The JSON
        /// parser checks the syntax of every other key's value without
        /// building it (YAML keeps every key, since anchors may point
        /// anywhere).
        pub const READ_KEYS: &[&str] = &[$($key),+];

        /// One of [`READ_KEYS`], by name.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        pub(crate) enum ReadKey {
            $($name),+
        }

        impl ReadKey {
            /// The key as written in the input (and in error messages).
            pub(crate) fn name(self) -> &'static str {
                match self {
                    $(ReadKey::$name => $key),+
                }
            }
        }

        /// The read key `key` is, if it is one of [`READ_KEYS`].
        pub(crate) fn read_key(key: &str) -> Option<ReadKey> {
            match key {
                $($key => Some(ReadKey::$name),)+
                _ => None,
            }
        }
    };
}

/// Whether `key` is one of [`READ_KEYS`].
pub fn is_read_key(key: &str) -> bool {
    read_key(key).is_some()
}

read_keys![
    Kind = "kind",
    Mode = "mode",
    NodesReadable = "nodesReadable",
    Items = "items",
    Captured = "captured",
    TrainJobUid = "trainJobUID",
    Pod = "pod",
    Metadata = "metadata",
    Name = "name",
    Namespace = "namespace",
    Uid = "uid",
    Labels = "labels",
    Annotations = "annotations",
    OwnerReferences = "ownerReferences",
    Controller = "controller",
    CreationTimestamp = "creationTimestamp",
    DeletionTimestamp = "deletionTimestamp",
    Spec = "spec",
    Suspend = "suspend",
    Active = "active",
    NodeName = "nodeName",
    SchedulingGates = "schedulingGates",
    Status = "status",
    Conditions = "conditions",
    Type = "type",
    Reason = "reason",
    Message = "message",
    LastTransitionTime = "lastTransitionTime",
    Restarts = "restarts",
    AdmissionChecks = "admissionChecks",
    State = "state",
    Phase = "phase",
    ContainerStatuses = "containerStatuses",
    LastState = "lastState",
    Terminated = "terminated",
    Waiting = "waiting",
    ExitCode = "exitCode",
    FinishedAt = "finishedAt",
];

/// Whether two label or annotation keys are the same, the last byte
/// compared before the rest: keys of one length (`…/job-id`,
/// `…/jobset-name`) mostly differ there, and it saves a call to compare
/// memory. The parser's filter and the typed views' lookup both use it.
pub(crate) fn same_free_key(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.as_bytes().last() == b.as_bytes().last() && a == b
}

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

/// The keys the queue facts (`crate::queue`) read inside a Workload's
/// `spec.podSets`, `status.admission` and `status.requeueState`, and a ClusterQueue's
/// `spec.resourceGroups` and a queue's `status.flavorsReservation` and
/// `flavorsUsage`, at any depth, and the fields of the queue objects'
/// `spec` and `status` besides `conditions`. Additive to the spec: no rule
/// reads them. A store that keeps queue objects keeps these and nothing
/// else of those trees, with the entries of the maps in
/// [`QUEUE_QUANTITY_MAPS`].
pub const QUEUE_READ_KEYS: [&str; 34] = [
    // Pod sets, flavors and resources are named.
    "name",
    "spec",
    // Workload
    "queueName",
    "priority",
    "podSets",
    "count",
    "template",
    "containers",
    "initContainers",
    "resources",
    "overhead",
    "admission",
    "clusterQueue",
    "requeueState",
    "requeueAt",
    // LocalQueue and ClusterQueue
    "stopPolicy",
    "pendingWorkloads",
    "reservingWorkloads",
    "admittedWorkloads",
    "flavorsReservation",
    "flavorsUsage",
    "resourceGroups",
    "coveredResources",
    "flavors",
    "nominalQuota",
    "borrowingLimit",
    "lendingLimit",
    "cohort",
    "cohortName",
    "queueingStrategy",
    "total",
    "borrowed",
    // Quantity maps (see QUEUE_QUANTITY_MAPS)
    "requests",
    "limits",
];

/// The maps of resource name to quantity the queue facts read whole (a
/// container's `resources.requests` and `resources.limits`, a pod's
/// `overhead`): their keys are resource names, not field names.
pub const QUEUE_QUANTITY_MAPS: [&str; 3] = ["requests", "limits", "overhead"];

/// Whether `key` is one the queue facts read (see [`QUEUE_READ_KEYS`]).
pub fn is_queue_read_key(key: &str) -> bool {
    QUEUE_READ_KEYS.contains(&key)
}

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
        for key in READ_KEYS {
            assert_eq!(read_key(key).map(ReadKey::name), Some(*key));
        }
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
