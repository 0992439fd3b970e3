//! The kinds the emulator serves, and how they map to API paths.

use std::fmt;
use std::str::FromStr;

use serde_json::{json, Value};

/// A kind of object the emulator stores and serves.
///
/// The set is closed on purpose: it is exactly what dispatch-dash reads, so
/// that the paths, list kinds and discovery documents can be checked against
/// what the real `kube` client generates for each one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Kind {
    /// core/v1 `pods` (namespaced).
    Pod,
    /// core/v1 `nodes` (cluster-scoped).
    Node,
    /// core/v1 `namespaces` (cluster-scoped).
    Namespace,
    /// `trainer.kubeflow.org/v1alpha1` `trainjobs` (namespaced).
    TrainJob,
    /// `trainer.kubeflow.org/v1alpha1` `trainingruntimes` (namespaced).
    TrainingRuntime,
    /// `jobset.x-k8s.io/v1alpha2` `jobsets` (namespaced).
    JobSet,
    /// `kueue.x-k8s.io` `workloads` (namespaced), stored as `v1beta2` and
    /// served as `v1beta2` and the deprecated `v1beta1`, like Kueue's CRD;
    /// only served when the emulator is configured with Kueue, in the
    /// versions [`crate::WorkloadVersions`] says.
    Workload,
    /// `kueue.x-k8s.io` `localqueues` (namespaced), versioned as Workload.
    LocalQueue,
    /// `kueue.x-k8s.io` `clusterqueues` (cluster-scoped), versioned as
    /// Workload; `v1beta1` names the cohort `spec.cohort` where the stored
    /// `v1beta2` names it `spec.cohortName` (see [`Kind::convert`]).
    ClusterQueue,
}

impl Kind {
    /// Every kind, in a fixed order.
    pub const ALL: [Kind; 9] = [
        Kind::Pod,
        Kind::Node,
        Kind::Namespace,
        Kind::TrainJob,
        Kind::TrainingRuntime,
        Kind::JobSet,
        Kind::Workload,
        Kind::LocalQueue,
        Kind::ClusterQueue,
    ];

    /// Whether this kind is Kueue's: served only with Kueue, at the
    /// versions [`crate::WorkloadVersions`] says (one Kueue release serves
    /// all of its kinds at the same versions).
    pub fn is_kueue(self) -> bool {
        matches!(self, Kind::Workload | Kind::LocalQueue | Kind::ClusterQueue)
    }

    /// The API group (`""` for core).
    pub fn group(self) -> &'static str {
        match self {
            Kind::Pod | Kind::Node | Kind::Namespace => "",
            Kind::TrainJob | Kind::TrainingRuntime => "trainer.kubeflow.org",
            Kind::JobSet => "jobset.x-k8s.io",
            Kind::Workload | Kind::LocalQueue | Kind::ClusterQueue => "kueue.x-k8s.io",
        }
    }

    /// The storage version within the group: the one objects are kept at
    /// and the group's preferred version when it is served.
    pub fn version(self) -> &'static str {
        // Every kind has at least one version.
        self.versions().first().copied().unwrap_or("v1")
    }

    /// Every version the emulator can serve this kind at, the storage
    /// version first. The fields a reader uses are the same in each.
    pub fn versions(self) -> &'static [&'static str] {
        match self {
            Kind::Pod | Kind::Node | Kind::Namespace => &["v1"],
            Kind::TrainJob | Kind::TrainingRuntime => &["v1alpha1"],
            Kind::JobSet => &["v1alpha2"],
            Kind::Workload | Kind::LocalQueue | Kind::ClusterQueue => &["v1beta2", "v1beta1"],
        }
    }

    /// The `apiVersion` objects of this kind are stored with (`v1`,
    /// `group/version`).
    pub fn api_version(self) -> String {
        self.api_version_at(self.version())
    }

    /// The `apiVersion` of this kind at `version`.
    pub fn api_version_at(self, version: &str) -> String {
        if self.group().is_empty() {
            version.to_string()
        } else {
            format!("{}/{}", self.group(), version)
        }
    }

    /// The warning a request for this kind at `version` gets when that
    /// version is deprecated (the text of the CRD's `deprecationWarning`);
    /// [`crate::Emulator::deprecation`] says whether it is, as configured.
    pub fn deprecation(self, version: &str) -> Option<String> {
        (self.is_kueue() && version == "v1beta1").then(|| {
            format!(
                "{} {} is deprecated; use {}",
                self.api_version_at(version),
                self.name(),
                self.api_version()
            )
        })
    }

    /// `object`, stored at this kind's storage version, as served at
    /// `version`: its `apiVersion`, and the one field whose name differs
    /// between the versions dispatch-dash reads (a ClusterQueue's cohort).
    pub fn convert(self, object: &Value, version: &str) -> Value {
        let mut object = object.clone();
        self.convert_in_place(&mut object, version);
        object
    }

    /// As [`Kind::convert`], in place; also used to bring an object written
    /// at another version to the storage version.
    pub(crate) fn convert_in_place(self, object: &mut Value, version: &str) {
        let Some(o) = object.as_object_mut() else {
            return;
        };
        o.insert(
            "apiVersion".into(),
            Value::String(self.api_version_at(version)),
        );
        if self != Kind::ClusterQueue {
            return;
        }
        let (from, to) = if version == "v1beta1" {
            ("cohortName", "cohort")
        } else {
            ("cohort", "cohortName")
        };
        if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
            if let Some(cohort) = spec.remove(from) {
                spec.insert(to.into(), cohort);
            }
        }
    }

    /// The `kind` field value.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Pod => "Pod",
            Kind::Node => "Node",
            Kind::Namespace => "Namespace",
            Kind::TrainJob => "TrainJob",
            Kind::TrainingRuntime => "TrainingRuntime",
            Kind::JobSet => "JobSet",
            Kind::Workload => "Workload",
            Kind::LocalQueue => "LocalQueue",
            Kind::ClusterQueue => "ClusterQueue",
        }
    }

    /// The resource name used in URL paths (`pods`, `trainjobs`, ...).
    pub fn plural(self) -> &'static str {
        match self {
            Kind::Pod => "pods",
            Kind::Node => "nodes",
            Kind::Namespace => "namespaces",
            Kind::TrainJob => "trainjobs",
            Kind::TrainingRuntime => "trainingruntimes",
            Kind::JobSet => "jobsets",
            Kind::Workload => "workloads",
            Kind::LocalQueue => "localqueues",
            Kind::ClusterQueue => "clusterqueues",
        }
    }

    /// The singular resource name (what discovery reports).
    pub fn singular(self) -> &'static str {
        match self {
            Kind::Pod => "pod",
            Kind::Node => "node",
            Kind::Namespace => "namespace",
            Kind::TrainJob => "trainjob",
            Kind::TrainingRuntime => "trainingruntime",
            Kind::JobSet => "jobset",
            Kind::Workload => "workload",
            Kind::LocalQueue => "localqueue",
            Kind::ClusterQueue => "clusterqueue",
        }
    }

    /// Whether objects of this kind live in a namespace.
    pub fn namespaced(self) -> bool {
        !matches!(self, Kind::Node | Kind::Namespace | Kind::ClusterQueue)
    }

    /// The kind of a list of these objects (`PodList`, ...).
    pub fn list_kind(self) -> String {
        format!("{}List", self.name())
    }

    /// Finds the kind served at `group`/`version` under resource `plural`
    /// (whether this emulator serves that version is its configuration's
    /// business).
    pub fn from_resource(group: &str, version: &str, plural: &str) -> Option<Kind> {
        Kind::ALL
            .into_iter()
            .find(|k| k.group() == group && k.versions().contains(&version) && k.plural() == plural)
    }

    /// Finds the kind of an object from its `apiVersion` and `kind` fields;
    /// any version of the kind is accepted.
    pub fn from_type(api_version: &str, kind: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| {
            k.name() == kind
                && k.versions()
                    .iter()
                    .any(|v| k.api_version_at(v) == api_version)
        })
    }

    /// The `APIResource` entry discovery reports for this kind.
    pub(crate) fn api_resource(self) -> Value {
        json!({
            "name": self.plural(),
            "singularName": self.singular(),
            "namespaced": self.namespaced(),
            "kind": self.name(),
            "verbs": ["get", "list", "watch"],
        })
    }
}

/// The version part of an `apiVersion` (`v1`, `group/v1beta2`).
pub(crate) fn version_of(api_version: &str) -> &str {
    api_version.rsplit('/').next().unwrap_or(api_version)
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Kind {
    type Err = crate::Error;

    /// Accepts the kind (`Pod`), the plural (`pods`) or the singular (`pod`),
    /// case-insensitively.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Kind::ALL
            .into_iter()
            .find(|k| {
                k.name().eq_ignore_ascii_case(s)
                    || k.plural().eq_ignore_ascii_case(s)
                    || k.singular().eq_ignore_ascii_case(s)
            })
            .ok_or_else(|| crate::Error::UnsupportedKind {
                api_version: String::new(),
                kind: s.to_string(),
            })
    }
}
