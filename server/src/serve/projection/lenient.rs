//! Parsing. Every field is read through `Lenient`: a value of the wanted
//! type is kept, any other is skipped (a map or an array is read through, not
//! built), so a wrong type never fails the object.

use super::*;

impl<'de> Deserialize<'de> for ApiObject {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Ok(Maybe::<ApiObject>::deserialize(deserializer)?
            .0
            .unwrap_or_default())
    }
}

/// A value read leniently: `Some` when it has the type `T` reads.
pub(super) struct Maybe<T>(pub(super) Option<T>);

/// A type read from a JSON value of one type; a value of another type
/// yields nothing and is skipped.
pub(super) trait Lenient: Sized {
    fn from_str(_: &str) -> Option<Self> {
        None
    }
    fn from_string(text: String) -> Option<Self> {
        Self::from_str(&text)
    }
    fn from_bool(_: bool) -> Option<Self> {
        None
    }
    fn from_integer(_: Integer) -> Option<Self> {
        None
    }
    fn from_map<'de, A: MapAccess<'de>>(mut map: A) -> Result<Option<Self>, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(None)
    }
    fn from_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(None)
    }
}

impl<'de, T: Lenient> Deserialize<'de> for Maybe<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer
            .deserialize_any(LenientVisitor(PhantomData))
            .map(Maybe)
    }
}

struct LenientVisitor<T>(PhantomData<T>);

impl<'de, T: Lenient> Visitor<'de> for LenientVisitor<T> {
    type Value = Option<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("any JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(T::from_bool(v))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(T::from_integer(Integer::Signed(v)))
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(T::from_integer(Integer::Unsigned(v)))
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(T::from_str(v))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(T::from_string(v))
    }
    fn visit_bytes<E: de::Error>(self, _: &[u8]) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_newtype_struct<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
        T::from_seq(seq)
    }
    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        T::from_map(map)
    }
}

impl Lenient for String {
    fn from_str(text: &str) -> Option<Self> {
        Some(text.to_owned())
    }
    fn from_string(text: String) -> Option<Self> {
        Some(text)
    }
}

impl Lenient for bool {
    fn from_bool(v: bool) -> Option<Self> {
        Some(v)
    }
}

impl Lenient for Integer {
    fn from_integer(v: Integer) -> Option<Self> {
        Some(v)
    }
}

/// An array: its elements of the type `T` reads, the others skipped (the
/// projection keeps only the object entries of a list).
impl<T: Lenient> Lenient for Vec<T> {
    fn from_seq<'de, A: SeqAccess<'de>>(mut seq: A) -> Result<Option<Self>, A::Error> {
        let mut kept = Vec::new();
        while let Some(element) = seq.next_element::<Maybe<T>>()? {
            kept.extend(element.0);
        }
        Ok(Some(kept))
    }
}

/// Reads the entries of a map whose key is one of `fields`, handing each to
/// `read` with the key as written in `fields` (which must read its value);
/// every other entry is skipped without allocating its key.
fn read_fields<'de, A: MapAccess<'de>>(
    mut map: A,
    fields: &'static [&'static str],
    mut read: impl FnMut(&'static str, &mut A) -> Result<(), A::Error>,
) -> Result<(), A::Error> {
    while let Some(field) = map.next_key_seed(FieldSeed(fields))? {
        match field {
            Some(field) => read(field, &mut map)?,
            None => {
                map.next_value::<IgnoredAny>()?;
            }
        }
    }
    Ok(())
}

/// The next value of `map`, read leniently.
fn lenient<'de, T: Lenient, A: MapAccess<'de>>(map: &mut A) -> Result<Option<T>, A::Error> {
    Ok(map.next_value::<Maybe<T>>()?.0)
}

fn skip<'de, A: MapAccess<'de>>(map: &mut A) -> Result<(), A::Error> {
    map.next_value::<IgnoredAny>().map(|_| ())
}

/// A map key: which of the wanted fields it is, if any.
struct FieldSeed(&'static [&'static str]);

impl<'de> DeserializeSeed<'de> for FieldSeed {
    type Value = Option<&'static str>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for FieldSeed {
    type Value = Option<&'static str>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a field name")
    }
    fn visit_str<E: de::Error>(self, key: &str) -> Result<Self::Value, E> {
        Ok(self.0.iter().copied().find(|field| *field == key))
    }
}

impl Lenient for ApiObject {
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        let mut object = ApiObject::default();
        const FIELDS: &[&str] = &["apiVersion", "metadata", "spec", "status"];
        read_fields(map, FIELDS, |field, map| {
            match field {
                "apiVersion" => object.api_version = lenient(map)?,
                "metadata" => object.meta = lenient(map)?.unwrap_or_default(),
                "spec" => object.spec = lenient(map)?.unwrap_or_default(),
                "status" => object.status = lenient(map)?.unwrap_or_default(),
                _ => skip(map)?,
            }
            Ok(())
        })?;
        Ok(Some(object))
    }
}

impl Lenient for Meta {
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        let mut meta = Meta::default();
        const FIELDS: &[&str] = &[
            "name",
            "namespace",
            "uid",
            "resourceVersion",
            "creationTimestamp",
            "deletionTimestamp",
            "labels",
            "annotations",
            "ownerReferences",
        ];
        read_fields(map, FIELDS, |field, map| {
            match field {
                "name" => meta.name = lenient(map)?,
                "namespace" => meta.namespace = lenient(map)?,
                "uid" => meta.uid = lenient(map)?,
                "resourceVersion" => meta.resource_version = lenient(map)?,
                "creationTimestamp" => meta.creation_timestamp = lenient(map)?,
                "deletionTimestamp" => meta.deletion_timestamp = lenient(map)?,
                "labels" => {
                    meta.labels = lenient::<KeptLabels, _>(map)?.unwrap_or_default().0;
                }
                "annotations" => {
                    meta.annotations = lenient::<KeptAnnotations, _>(map)?.unwrap_or_default().0;
                }
                "ownerReferences" => meta.owners = lenient(map)?,
                _ => skip(map)?,
            }
            Ok(())
        })?;
        Ok(Some(meta))
    }
}

/// The string values of the keys in `kept`, the last of duplicates winning.
fn read_kept_strings<'de, A: MapAccess<'de>>(
    map: A,
    kept: &'static [&'static str],
) -> Result<BTreeMap<&'static str, String>, A::Error> {
    let mut strings = BTreeMap::new();
    read_fields(map, kept, |key, map| {
        match lenient::<String, _>(map)? {
            Some(value) => strings.insert(key, value),
            None => strings.remove(key),
        };
        Ok(())
    })?;
    Ok(strings)
}

#[derive(Default)]
struct KeptLabels(BTreeMap<&'static str, String>);

impl Lenient for KeptLabels {
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        read_kept_strings(map, &fields::LABELS_READ).map(|kept| Some(KeptLabels(kept)))
    }
}

#[derive(Default)]
struct KeptAnnotations(BTreeMap<&'static str, String>);

impl Lenient for KeptAnnotations {
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        read_kept_strings(map, &fields::ANNOTATIONS_READ).map(|kept| Some(KeptAnnotations(kept)))
    }
}

impl Lenient for Owner {
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        let mut owner = Owner::default();
        read_fields(map, &["kind", "name", "uid", "controller"], |field, map| {
            match field {
                "kind" => owner.kind = lenient(map)?,
                "name" => owner.name = lenient(map)?,
                "uid" => owner.uid = lenient(map)?,
                "controller" => owner.controller = lenient(map)?,
                _ => skip(map)?,
            }
            Ok(())
        })?;
        Ok(Some(owner))
    }
}

impl Lenient for Spec {
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        let mut spec = Spec::default();
        const FIELDS: &[&str] = &[
            "suspend",
            "active",
            "nodeName",
            "schedulingGates",
            "queueName",
            "priority",
            "podSets",
            "clusterQueue",
            "stopPolicy",
            "cohort",
            "cohortName",
            "queueingStrategy",
            "resourceGroups",
        ];
        read_fields(map, FIELDS, |field, map| {
            match field {
                "suspend" => spec.suspend = lenient(map)?,
                "active" => spec.active = lenient(map)?,
                "nodeName" => spec.node_name = lenient(map)?,
                "schedulingGates" => spec.scheduling_gates = lenient(map)?,
                "queueName" => spec.queue_name = lenient(map)?,
                "priority" => spec.priority = lenient(map)?,
                "podSets" => spec.pod_sets = lenient(map)?,
                "clusterQueue" => spec.cluster_queue = lenient(map)?,
                "stopPolicy" => spec.stop_policy = lenient(map)?,
                "cohort" => spec.cohort = lenient(map)?,
                "cohortName" => spec.cohort_name = lenient(map)?,
                "queueingStrategy" => spec.queueing_strategy = lenient(map)?,
                "resourceGroups" => spec.resource_groups = lenient(map)?,
                _ => skip(map)?,
            }
            Ok(())
        })?;
        Ok(Some(spec))
    }
}

impl Lenient for Named {
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        let mut named = Named::default();
        read_fields(map, &["name"], |field, map| {
            match field {
                "name" => named.name = lenient(map)?,
                _ => skip(map)?,
            }
            Ok(())
        })?;
        Ok(Some(named))
    }
}

impl Lenient for Status {
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        let mut status = Status::default();
        const FIELDS: &[&str] = &[
            "conditions",
            "restarts",
            "admissionChecks",
            "phase",
            "containerStatuses",
            "admission",
            "pendingWorkloads",
            "reservingWorkloads",
            "admittedWorkloads",
            "flavorsReservation",
            "flavorsUsage",
        ];
        read_fields(map, FIELDS, |field, map| {
            match field {
                "conditions" => status.conditions = lenient(map)?,
                "restarts" => status.restarts = lenient(map)?,
                "admissionChecks" => status.admission_checks = lenient(map)?,
                "phase" => status.phase = lenient(map)?,
                "admission" => status.admission = lenient(map)?,
                "pendingWorkloads" => status.pending_workloads = lenient(map)?,
                "reservingWorkloads" => status.reserving_workloads = lenient(map)?,
                "admittedWorkloads" => status.admitted_workloads = lenient(map)?,
                "flavorsReservation" => status.flavors_reservation = lenient(map)?,
                "flavorsUsage" => status.flavors_usage = lenient(map)?,
                "containerStatuses" => {
                    let all: Option<Vec<ContainerStatus>> = lenient(map)?;
                    status.node_container = all
                        .into_iter()
                        .flatten()
                        .find(|c| c.name.as_deref() == Some("node"));
                }
                _ => skip(map)?,
            }
            Ok(())
        })?;
        Ok(Some(status))
    }
}

impl Lenient for Condition {
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        let mut c = Condition::default();
        const FIELDS: &[&str] = &["type", "status", "reason", "message", "lastTransitionTime"];
        read_fields(map, FIELDS, |field, map| {
            match field {
                "type" => c.type_ = lenient(map)?,
                "status" => c.status = lenient(map)?,
                "reason" => c.reason = lenient(map)?,
                "message" => c.message = lenient(map)?,
                "lastTransitionTime" => c.last_transition_time = lenient(map)?,
                _ => skip(map)?,
            }
            Ok(())
        })?;
        Ok(Some(c))
    }
}

impl Lenient for AdmissionCheck {
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        let mut check = AdmissionCheck::default();
        read_fields(map, &["name", "state", "message"], |field, map| {
            match field {
                "name" => check.name = lenient(map)?,
                "state" => check.state = lenient(map)?,
                "message" => check.message = lenient(map)?,
                _ => skip(map)?,
            }
            Ok(())
        })?;
        Ok(Some(check))
    }
}

impl Lenient for ContainerStatus {
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        let mut c = ContainerStatus::default();
        read_fields(map, &["name", "state", "lastState"], |field, map| {
            match field {
                "name" => c.name = lenient(map)?,
                "state" => c.state = lenient(map)?,
                "lastState" => c.last_state = lenient(map)?,
                _ => skip(map)?,
            }
            Ok(())
        })?;
        Ok(Some(c))
    }
}

impl Lenient for ContainerState {
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        let mut state = ContainerState::default();
        read_fields(map, &["terminated", "waiting"], |field, map| {
            match field {
                "terminated" => state.terminated = lenient(map)?,
                "waiting" => state.waiting = lenient(map)?,
                _ => skip(map)?,
            }
            Ok(())
        })?;
        Ok(Some(state))
    }
}

impl Lenient for Terminated {
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        let mut t = Terminated::default();
        const FIELDS: &[&str] = &["reason", "message", "finishedAt", "exitCode"];
        read_fields(map, FIELDS, |field, map| {
            match field {
                "reason" => t.reason = lenient(map)?,
                "message" => t.message = lenient(map)?,
                "finishedAt" => t.finished_at = lenient(map)?,
                "exitCode" => t.exit_code = lenient(map)?,
                _ => skip(map)?,
            }
            Ok(())
        })?;
        Ok(Some(t))
    }
}

impl Lenient for Waiting {
    fn from_map<'de, A: MapAccess<'de>>(map: A) -> Result<Option<Self>, A::Error> {
        let mut w = Waiting::default();
        read_fields(map, &["reason", "message"], |field, map| {
            match field {
                "reason" => w.reason = lenient(map)?,
                "message" => w.message = lenient(map)?,
                _ => skip(map)?,
            }
            Ok(())
        })?;
        Ok(Some(w))
    }
}
