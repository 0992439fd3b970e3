//! What the engine reads of each kind, as data: the one read schema.
//!
//! For each kind, the fields any section reads (CLASSIFICATION.md section
//! 1 gives their types, section 2 what one classification reads), with the
//! queue facts' trees besides (`crate::queue`, additive to the spec). A
//! field is a name, a [`Shape`] (its type, and for an object what is read
//! inside it) and a [`Presence`] (when a projection writes it).
//!
//! The server's projection interprets this schema: it parses what the
//! API serves down to these fields and writes them, and nothing else, so
//! adding a field the engine reads is one change here, with its tests.
//! The JSON parser's key filter ([`crate::fields::READ_KEYS`]) and the
//! typed views (`model.rs`) are tied to it by the tests below.
//!
//! Each list of fields is in the order of its names' bytes (tested), which
//! is the order a projection writes them in: the order a
//! `serde_json::Map` prints its keys in.

use crate::fields::{ANNOTATIONS_READ, LABELS_READ};

/// The type of a field, and for an object or a list what is read inside.
/// A value of another type is not read (a projection drops it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// A JSON string.
    String,
    /// A JSON boolean.
    Bool,
    /// A JSON integer (a float is not one).
    Integer,
    /// An object, of which these fields are read.
    Object(&'static [Field]),
    /// An array of objects, of each of which these fields are read; an
    /// element that is not an object is not read.
    Objects(&'static [Field]),
    /// An array of objects of which only the first whose `name` is the
    /// given string is read, with these fields (section 1: a pod's
    /// container named `node`).
    FirstNamed(&'static str, &'static [Field]),
    /// An object of string values of which only these keys are read
    /// (labels and annotations).
    Strings(&'static [&'static str]),
    /// A tree the queue facts read: any value, whose objects keep only
    /// [`crate::fields::QUEUE_READ_KEYS`] (and the maps of
    /// [`crate::fields::QUEUE_QUANTITY_MAPS`] whole).
    QueueTree,
}

/// When a projection writes a field the input has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Presence {
    /// Whenever the input has it with its type (an empty object or
    /// array included).
    Given,
    /// Only when something is read inside it.
    NonEmpty,
    /// Always: empty when the input has none.
    Always,
}

/// One field a kind is read by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub shape: Shape,
    pub presence: Presence,
}

/// A field written whenever the input has it with its type.
pub const fn given(name: &'static str, shape: Shape) -> Field {
    Field {
        name,
        shape,
        presence: Presence::Given,
    }
}

const fn non_empty(name: &'static str, shape: Shape) -> Field {
    Field {
        name,
        shape,
        presence: Presence::NonEmpty,
    }
}

/// A string field.
pub const fn string(name: &'static str) -> Field {
    given(name, Shape::String)
}

const fn integer(name: &'static str) -> Field {
    given(name, Shape::Integer)
}

const fn tree(name: &'static str) -> Field {
    given(name, Shape::QueueTree)
}

/// Section 1's metadata, for every kind.
const METADATA: &[Field] = &[
    non_empty("annotations", Shape::Strings(&ANNOTATIONS_READ)),
    string("creationTimestamp"),
    string("deletionTimestamp"),
    non_empty("labels", Shape::Strings(&LABELS_READ)),
    string("name"),
    string("namespace"),
    given(
        "ownerReferences",
        Shape::Objects(&[
            given("controller", Shape::Bool),
            string("kind"),
            string("name"),
            string("uid"),
        ]),
    ),
    string("uid"),
];

/// A status's conditions (TrainJob, Workload, Pod, Node, the queues).
const CONDITIONS: Field = given(
    "conditions",
    Shape::Objects(&[
        string("lastTransitionTime"),
        string("message"),
        string("reason"),
        string("status"),
        string("type"),
    ]),
);

/// How a container ended (section 7).
const TERMINATED: Field = given(
    "terminated",
    Shape::Object(&[
        integer("exitCode"),
        string("finishedAt"),
        string("message"),
        string("reason"),
    ]),
);

/// A pod's container named `node`: its state, and of its last state only
/// how it ended.
const NODE_CONTAINER: &[Field] = &[
    given("lastState", Shape::Object(&[TERMINATED])),
    string("name"),
    given(
        "state",
        Shape::Object(&[
            TERMINATED,
            given(
                "waiting",
                Shape::Object(&[string("message"), string("reason")]),
            ),
        ]),
    ),
];

/// A queue's counts and conditions (LocalQueue and ClusterQueue).
const QUEUE_STATUS: &[Field] = &[
    integer("admittedWorkloads"),
    CONDITIONS,
    tree("flavorsReservation"),
    tree("flavorsUsage"),
    integer("pendingWorkloads"),
    integer("reservingWorkloads"),
];

/// An object's `metadata`, always written, of which `fields` are read.
pub const fn metadata(fields: &'static [Field]) -> Field {
    Field {
        name: "metadata",
        shape: Shape::Object(fields),
        presence: Presence::Always,
    }
}

const fn spec(fields: &'static [Field]) -> Field {
    non_empty("spec", Shape::Object(fields))
}

const fn status(fields: &'static [Field]) -> Field {
    non_empty("status", Shape::Object(fields))
}

/// What is read of a TrainJob, below its `apiVersion` and `kind`.
pub const TRAINJOB: &[Field] = &[
    metadata(METADATA),
    spec(&[given("suspend", Shape::Bool)]),
    status(&[CONDITIONS]),
];

/// What is read of a JobSet.
pub const JOBSET: &[Field] = &[metadata(METADATA), status(&[integer("restarts")])];

/// What is read of a Kueue Workload (its pod sets, priority, queue and
/// admission for the queue facts).
pub const WORKLOAD: &[Field] = &[
    metadata(METADATA),
    spec(&[
        given("active", Shape::Bool),
        tree("podSets"),
        integer("priority"),
        string("queueName"),
    ]),
    status(&[
        tree("admission"),
        given(
            "admissionChecks",
            Shape::Objects(&[string("message"), string("name"), string("state")]),
        ),
        CONDITIONS,
        given(
            "requeueState",
            Shape::Object(&[integer("count"), string("requeueAt")]),
        ),
    ]),
];

/// What is read of a TrainJob's runtime copy.
pub const TRAINING_RUNTIME: &[Field] = &[metadata(METADATA)];

/// What is read of a Pod: of its spec only `nodeName` and
/// `schedulingGates`.
pub const POD: &[Field] = &[
    metadata(METADATA),
    spec(&[
        string("nodeName"),
        given("schedulingGates", Shape::Objects(&[string("name")])),
    ]),
    status(&[
        CONDITIONS,
        given(
            "containerStatuses",
            Shape::FirstNamed("node", NODE_CONTAINER),
        ),
        string("phase"),
    ]),
];

/// What is read of a Node.
pub const NODE: &[Field] = &[metadata(METADATA), status(&[CONDITIONS])];

/// What the queue facts read of a LocalQueue.
pub const LOCAL_QUEUE: &[Field] = &[
    metadata(METADATA),
    spec(&[string("clusterQueue"), string("stopPolicy")]),
    status(QUEUE_STATUS),
];

/// What the queue facts read of a ClusterQueue.
pub const CLUSTER_QUEUE: &[Field] = &[
    metadata(METADATA),
    spec(&[
        string("cohort"),
        string("cohortName"),
        string("queueingStrategy"),
        tree("resourceGroups"),
        string("stopPolicy"),
    ]),
    status(QUEUE_STATUS),
];

/// Every kind the engine reads, by its `kind`, with what is read of it.
pub const KINDS: [(&str, &[Field]); 8] = [
    ("TrainJob", TRAINJOB),
    ("JobSet", JOBSET),
    ("Workload", WORKLOAD),
    ("TrainingRuntime", TRAINING_RUNTIME),
    ("Pod", POD),
    ("Node", NODE),
    ("LocalQueue", LOCAL_QUEUE),
    ("ClusterQueue", CLUSTER_QUEUE),
];

/// What is read of an object of `kind`; `None` for a kind not read.
pub fn of_kind(kind: &str) -> Option<&'static [Field]> {
    KINDS.iter().find(|(k, _)| *k == kind).map(|(_, f)| *f)
}

/// Whether `fields` read the field at `path` (through objects).
pub fn keeps(fields: &[Field], path: &[&str]) -> bool {
    let Some((first, rest)) = path.split_first() else {
        return false;
    };
    match fields.iter().find(|f| f.name == *first) {
        Some(_) if rest.is_empty() => true,
        Some(Field {
            shape: Shape::Object(inner),
            ..
        }) => keeps(inner, rest),
        _ => false,
    }
}

/// The fields inside a field (an object's, or each element's of a list);
/// none for a leaf.
pub fn inner(shape: Shape) -> &'static [Field] {
    match shape {
        Shape::Object(fields) | Shape::Objects(fields) | Shape::FirstNamed(_, fields) => fields,
        Shape::String | Shape::Bool | Shape::Integer | Shape::Strings(_) | Shape::QueueTree => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::{
        is_queue_read_key, is_read_key, BOOLEAN_FIELDS, INTEGER_FIELDS, READ_KEYS,
    };
    use crate::snapshot::READ_KINDS;

    fn walk(fields: &'static [Field], out: &mut Vec<&'static Field>) {
        for field in fields {
            out.push(field);
            walk(inner(field.shape), out);
        }
    }

    fn every_field() -> Vec<&'static Field> {
        let mut out = Vec::new();
        for (_, fields) in KINDS {
            walk(fields, &mut out);
        }
        out
    }

    fn is_queue_kind(kind: &str) -> bool {
        matches!(kind, "LocalQueue" | "ClusterQueue")
    }

    #[test]
    fn every_list_is_in_the_order_a_projection_writes() {
        fn check(fields: &'static [Field]) {
            let names: Vec<&str> = fields.iter().map(|f| f.name).collect();
            let mut sorted = names.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(names, sorted, "in byte order, each once");
            for field in fields {
                check(inner(field.shape));
            }
        }
        for (_, fields) in KINDS {
            check(fields);
        }
    }

    #[test]
    fn the_kinds_are_the_kinds_read() {
        let snapshot_kinds: Vec<&str> = KINDS
            .iter()
            .map(|(kind, _)| *kind)
            .filter(|kind| !is_queue_kind(kind))
            .collect();
        assert_eq!(snapshot_kinds, READ_KINDS.to_vec());
        assert_eq!(of_kind("Pod"), Some(POD));
        assert_eq!(of_kind("Deployment"), None);
        assert!(keeps(POD, &["spec", "nodeName"]));
        assert!(!keeps(NODE, &["spec", "nodeName"]));
        assert!(!keeps(POD, &["spec", "containers"]));
        assert!(!keeps(POD, &[]));
    }

    /// Every key the schema names outside the queue trees is one the JSON
    /// parser keeps, and every key it keeps for an object is named here:
    /// the two lists cannot drift apart.
    #[test]
    fn the_parsers_keys_are_the_schemas() {
        let named: Vec<&str> = every_field().iter().map(|f| f.name).collect();
        for (kind, fields) in KINDS {
            let mut inside = Vec::new();
            walk(fields, &mut inside);
            for field in inside {
                // The queue facts' fields are theirs (Workload's included).
                assert!(
                    is_read_key(field.name) || is_queue_read_key(field.name),
                    "{kind}: {} is not a read key",
                    field.name
                );
            }
        }
        // Besides the document's own keys (section 2) and the `kind`.
        let document = [
            "kind",
            "mode",
            "nodesReadable",
            "items",
            "captured",
            "trainJobUID",
            "pod",
        ];
        for key in READ_KEYS {
            assert!(
                document.contains(key) || named.contains(key),
                "{key} is parsed but read of no kind"
            );
        }
    }

    /// The YAML typing of section 1 agrees with the schema's types.
    #[test]
    fn the_typed_fields_have_the_schemas_types() {
        let fields = every_field();
        let typed =
            |name: &str, shape: Shape| fields.iter().any(|f| f.name == name && f.shape == shape);
        for name in BOOLEAN_FIELDS.iter().filter(|n| **n != "nodesReadable") {
            assert!(typed(name, Shape::Bool), "{name}");
        }
        for name in INTEGER_FIELDS {
            assert!(typed(name, Shape::Integer), "{name}");
        }
    }
}
