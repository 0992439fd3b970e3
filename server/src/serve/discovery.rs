//! Which version of each kind to watch, from API discovery.
//!
//! The server does not hard-code the versions it watches: a CRD can serve
//! several (Kueue's Workload serves `v1beta2` and the deprecated `v1beta1`)
//! and drop old ones. At start, and again when a watch answers `404`, the
//! discovery documents (`/apis` and `/apis/<group>/<version>`) are read and
//! [`choose`] picks, per kind, the first of the versions this project
//! understands ([`understood_versions`]) that the cluster serves. A kind
//! served only in other versions is reported as such, naming them, rather
//! than watched blind.
//!
//! [`choose`] is pure (discovery documents in, a choice out) and unit tested
//! without a cluster; [`discover`] is the thin part that fetches the
//! documents with the kube client. Discovery is readable by every
//! authenticated user, so `deploy/` RBAC needs nothing for it.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{APIGroupList, APIResourceList};
use kube::api::{ApiResource, GroupVersionKind};
use kube::Client;

use super::projection::ObjectKind;

/// Errors of [`discover`].
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A discovery document could not be read.
    #[error("reading API discovery: {0}")]
    Kube(#[from] kube::Error),
}

/// The versions of `kind` whose fields this project reads, preferred first.
/// The fields the spec reads from a Workload are the same in `v1beta1` and
/// `v1beta2`.
pub fn understood_versions(kind: ObjectKind) -> &'static [&'static str] {
    match kind {
        ObjectKind::Workload | ObjectKind::LocalQueue | ObjectKind::ClusterQueue => {
            &["v1beta2", "v1beta1"]
        }
        ObjectKind::TrainJob | ObjectKind::TrainingRuntime => &["v1alpha1"],
        ObjectKind::JobSet => &["v1alpha2"],
        ObjectKind::Pod | ObjectKind::Node | ObjectKind::Namespace => &["v1"],
    }
}

/// What discovery says about one kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Availability {
    /// Served in an understood version: watch this resource.
    Served(ApiResource),
    /// Not served at all (its CRD is not installed).
    NotServed,
    /// Served, but only in these versions, none of which this project
    /// understands.
    UnknownVersions(Vec<String>),
}

impl Availability {
    /// The `apiVersion` to watch, when there is one.
    pub fn api_version(&self) -> Option<&str> {
        match self {
            Availability::Served(resource) => Some(&resource.api_version),
            _ => None,
        }
    }
}

/// The resource of `kind` at `version`.
pub fn resource_at(kind: ObjectKind, version: &str) -> ApiResource {
    let gvk = GroupVersionKind::gvk(kind.group(), version, kind.name());
    ApiResource::from_gvk_with_plural(&gvk, kind.plural())
}

/// The core kinds are always served at `v1`; no discovery is needed.
fn core_resource(kind: ObjectKind) -> Option<ApiResource> {
    match kind {
        ObjectKind::Pod => Some(ApiResource::erase::<Pod>(&())),
        ObjectKind::Node => Some(ApiResource::erase::<Node>(&())),
        ObjectKind::Namespace => Some(ApiResource::erase::<Namespace>(&())),
        _ => None,
    }
}

/// Picks the version of `kind` to watch from the group list (`/apis`) and
/// the resource lists of the group's versions (`/apis/<group>/<version>`;
/// lists of other groups are ignored).
pub fn choose(
    kind: ObjectKind,
    groups: &APIGroupList,
    resources: &[APIResourceList],
) -> Availability {
    if let Some(resource) = core_resource(kind) {
        return Availability::Served(resource);
    }
    let Some(group) = groups.groups.iter().find(|g| g.name == kind.group()) else {
        return Availability::NotServed;
    };
    // The versions the group serves that list this kind's resource, in the
    // server's order (the preferred version first).
    let serving: Vec<&str> = group
        .versions
        .iter()
        .map(|v| v.version.as_str())
        .filter(|version| {
            let group_version = format!("{}/{version}", kind.group());
            resources.iter().any(|list| {
                list.group_version == group_version
                    && list.resources.iter().any(|r| r.name == kind.plural())
            })
        })
        .collect();
    match understood_versions(kind)
        .iter()
        .find(|v| serving.contains(v))
    {
        Some(version) => Availability::Served(resource_at(kind, version)),
        None if serving.is_empty() => Availability::NotServed,
        None => Availability::UnknownVersions(serving.iter().map(|v| v.to_string()).collect()),
    }
}

/// Reads discovery and chooses a version for each of `kinds`. Only the
/// groups those kinds live in are read.
pub async fn discover(
    client: &Client,
    kinds: &[ObjectKind],
) -> Result<BTreeMap<ObjectKind, Availability>, Error> {
    let custom: Vec<ObjectKind> = kinds
        .iter()
        .copied()
        .filter(|k| core_resource(*k).is_none())
        .collect();
    let groups = if custom.is_empty() {
        APIGroupList::default()
    } else {
        client.list_api_groups().await?
    };
    let mut resources = Vec::new();
    for group in groups
        .groups
        .iter()
        .filter(|g| custom.iter().any(|k| k.group() == g.name))
    {
        for version in &group.versions {
            match client
                .list_api_group_resources(&version.group_version)
                .await
            {
                Ok(list) => resources.push(list),
                // Removed between the two requests: the version serves nothing.
                Err(kube::Error::Api(status)) if status.code == 404 => {}
                Err(e) => return Err(e.into()),
            }
        }
    }
    Ok(kinds
        .iter()
        .map(|k| (*k, choose(*k, &groups, &resources)))
        .collect())
}

/// Reads discovery for one kind.
pub async fn discover_kind(client: &Client, kind: ObjectKind) -> Result<Availability, Error> {
    let mut found = discover(client, &[kind]).await?;
    Ok(found.remove(&kind).unwrap_or(Availability::NotServed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    /// `/apis` as an API server writes it: every served version, the
    /// preferred one first and as `preferredVersion`.
    fn groups(groups: &[(&str, &[&str])]) -> APIGroupList {
        let groups: Vec<Value> = groups
            .iter()
            .map(|(name, versions)| {
                let gv = |v: &str| json!({"groupVersion": format!("{name}/{v}"), "version": v});
                json!({
                    "name": name,
                    "versions": versions.iter().map(|v| gv(v)).collect::<Vec<_>>(),
                    "preferredVersion": gv(versions[0]),
                })
            })
            .collect();
        serde_json::from_value(
            json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}),
        )
        .expect("an APIGroupList")
    }

    /// `/apis/<group_version>` listing `plurals` (and their status
    /// subresources, as CRDs have).
    fn resources(group_version: &str, plurals: &[&str]) -> APIResourceList {
        let resources: Vec<Value> = plurals
            .iter()
            .flat_map(|p| {
                [
                    json!({"name": p, "singularName": "", "namespaced": true, "kind": "X", "verbs": ["get", "list", "watch"]}),
                    json!({"name": format!("{p}/status"), "singularName": "", "namespaced": true, "kind": "X", "verbs": ["get"]}),
                ]
            })
            .collect();
        serde_json::from_value(json!({
            "kind": "APIResourceList",
            "apiVersion": "v1",
            "groupVersion": group_version,
            "resources": resources,
        }))
        .expect("an APIResourceList")
    }

    fn version(a: &Availability) -> Option<&str> {
        a.api_version()
    }

    #[test]
    fn workloads_prefer_v1beta2_and_fall_back_to_v1beta1() {
        let both = groups(&[("kueue.x-k8s.io", &["v1beta2", "v1beta1"])]);
        let lists = [
            resources("kueue.x-k8s.io/v1beta2", &["workloads", "clusterqueues"]),
            resources("kueue.x-k8s.io/v1beta1", &["workloads", "clusterqueues"]),
        ];
        let chosen = choose(ObjectKind::Workload, &both, &lists);
        assert_eq!(version(&chosen), Some("kueue.x-k8s.io/v1beta2"));
        let Availability::Served(resource) = chosen else {
            panic!("served")
        };
        assert_eq!(resource.plural, "workloads");
        assert_eq!(resource.kind, "Workload");

        let old = groups(&[("kueue.x-k8s.io", &["v1beta1"])]);
        let lists = [resources("kueue.x-k8s.io/v1beta1", &["workloads"])];
        assert_eq!(
            version(&choose(ObjectKind::Workload, &old, &lists)),
            Some("kueue.x-k8s.io/v1beta1")
        );

        let new = groups(&[("kueue.x-k8s.io", &["v1beta2"])]);
        let lists = [resources("kueue.x-k8s.io/v1beta2", &["workloads"])];
        assert_eq!(
            version(&choose(ObjectKind::Workload, &new, &lists)),
            Some("kueue.x-k8s.io/v1beta2")
        );
    }

    #[test]
    fn our_preference_wins_over_the_servers_when_both_are_understood() {
        // A server preferring v1beta1 (an older storage version) still gets
        // v1beta2 watched: both read the same fields, v1beta2 is not deprecated.
        let both = groups(&[("kueue.x-k8s.io", &["v1beta1", "v1beta2"])]);
        let lists = [
            resources("kueue.x-k8s.io/v1beta1", &["workloads"]),
            resources("kueue.x-k8s.io/v1beta2", &["workloads"]),
        ];
        assert_eq!(
            version(&choose(ObjectKind::Workload, &both, &lists)),
            Some("kueue.x-k8s.io/v1beta2")
        );
    }

    #[test]
    fn a_missing_group_or_resource_is_not_served() {
        let none = groups(&[("jobset.x-k8s.io", &["v1alpha2"])]);
        assert_eq!(
            choose(ObjectKind::Workload, &none, &[]),
            Availability::NotServed
        );
        // The group exists (other CRDs of it are installed) but no version
        // lists this kind's resource.
        let trainer = groups(&[("trainer.kubeflow.org", &["v1alpha1"])]);
        let lists = [resources("trainer.kubeflow.org/v1alpha1", &["trainjobs"])];
        assert_eq!(
            choose(ObjectKind::TrainingRuntime, &trainer, &lists),
            Availability::NotServed
        );
        assert_eq!(
            version(&choose(ObjectKind::TrainJob, &trainer, &lists)),
            Some("trainer.kubeflow.org/v1alpha1")
        );
        // A version the group lists whose resource list was not read (gone
        // between the requests) serves nothing.
        assert_eq!(
            choose(ObjectKind::TrainJob, &trainer, &[]),
            Availability::NotServed
        );
    }

    #[test]
    fn only_unknown_versions_are_named() {
        let future = groups(&[("kueue.x-k8s.io", &["v2", "v1"])]);
        let lists = [
            resources("kueue.x-k8s.io/v2", &["workloads"]),
            resources("kueue.x-k8s.io/v1", &["workloads"]),
        ];
        assert_eq!(
            choose(ObjectKind::Workload, &future, &lists),
            Availability::UnknownVersions(vec!["v2".into(), "v1".into()])
        );
        // A resource list of another group with the same plural is no answer.
        let jobset = groups(&[("jobset.x-k8s.io", &["v1alpha2"])]);
        let lists = [resources("example.com/v1alpha2", &["jobsets"])];
        assert_eq!(
            choose(ObjectKind::JobSet, &jobset, &lists),
            Availability::NotServed
        );
    }

    #[test]
    fn core_kinds_need_no_discovery() {
        let empty = APIGroupList::default();
        for kind in [ObjectKind::Pod, ObjectKind::Node, ObjectKind::Namespace] {
            let chosen = choose(kind, &empty, &[]);
            assert_eq!(version(&chosen), Some("v1"), "{kind:?}");
        }
    }

    #[test]
    fn every_kind_understands_at_least_one_version() {
        for kind in ObjectKind::ALL {
            assert!(!understood_versions(kind).is_empty(), "{kind:?}");
        }
    }
}
