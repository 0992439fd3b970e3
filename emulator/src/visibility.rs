//! Kueue's visibility API (`visibility.kueue.x-k8s.io`): a LocalQueue's
//! pending Workloads in the order Kueue would admit them, with their
//! positions in the LocalQueue and in its ClusterQueue.
//!
//! Kueue serves it from an aggregated API server; here it is one more
//! group, served with Kueue at the versions its other kinds are, and
//! switched off alone with [`crate::Emulator::set_visibility_served`]
//! (a Kueue without the visibility server) or refused with
//! `forbid("localqueues/pendingworkloads")`.

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use crate::status::{json_response, status};
use crate::{Emulator, Kind};

/// The API group.
pub(crate) const GROUP: &str = "visibility.kueue.x-k8s.io";

/// The resource a pending-workloads request is for, as RBAC names it.
pub const PENDING_WORKLOADS: &str = "localqueues/pendingworkloads";

/// Kueue's default and largest `limit`.
const MAX_LIMIT: usize = 1000;

/// A request for one LocalQueue's pending Workloads.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct PendingRequest {
    pub version: String,
    pub namespace: String,
    pub local_queue: String,
}

impl PendingRequest {
    /// The request `segs` (a path split on `/`) makes, when it is one.
    pub(crate) fn from_segments(segs: &[&str]) -> Option<PendingRequest> {
        match segs {
            ["apis", GROUP, version, "namespaces", ns, "localqueues", name, "pendingworkloads"] => {
                Some(PendingRequest {
                    version: (*version).to_string(),
                    namespace: (*ns).to_string(),
                    local_queue: (*name).to_string(),
                })
            }
            _ => None,
        }
    }
}

/// The versions served: those of Kueue's kinds, while it is served.
pub(crate) fn served_versions(emu: &Emulator) -> &'static [&'static str] {
    if emu.visibility_served() {
        emu.served_versions(Kind::LocalQueue)
    } else {
        &[]
    }
}

/// The group's `APIResource`s, as Kueue's visibility server lists them.
pub(crate) fn resources() -> Vec<Value> {
    let resource = |name: &str, kind: &str, namespaced: bool, verbs: &[&str]| {
        json!({"name": name, "singularName": "", "namespaced": namespaced,
            "kind": kind, "verbs": verbs})
    };
    vec![
        resource("clusterqueues", "ClusterQueue", false, &[]),
        resource(
            "clusterqueues/pendingworkloads",
            "PendingWorkloadsSummary",
            false,
            &["get"],
        ),
        resource("localqueues", "LocalQueue", true, &[]),
        resource(PENDING_WORKLOADS, "PendingWorkloadsSummary", true, &["get"]),
    ]
}

/// Whether a Workload waits in line for quota: active, not finished, not
/// holding quota, and not held back by an admission gate.
pub fn in_line(workload: &Value) -> bool {
    let condition = |type_: &str| {
        workload
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.get("type").and_then(Value::as_str) == Some(type_)
                        && c.get("status").and_then(Value::as_str) == Some("True")
                })
            })
    };
    let active = workload.pointer("/spec/active").and_then(Value::as_bool) != Some(false);
    let gated = workload
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(classify_wasm::keys::ADMISSION_GATED_BY));
    active && !gated && !condition("Finished") && !condition("QuotaReserved")
}

fn text<'v>(value: &'v Value, pointer: &str) -> &'v str {
    value.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// The pending Workloads of every LocalQueue pointing at `cluster_queue`,
/// in the order Kueue would admit them (`BestEffortFIFO`: higher priority
/// first, then older), each with its LocalQueue's namespace and name.
fn line_of(emu: &Emulator, cluster_queue: &str) -> Vec<(Value, String, String)> {
    let local_queues: Vec<(String, String)> = emu
        .list(Kind::LocalQueue, None)
        .iter()
        .filter(|lq| text(lq, "/spec/clusterQueue") == cluster_queue)
        .map(|lq| {
            (
                text(lq, "/metadata/namespace").to_string(),
                text(lq, "/metadata/name").to_string(),
            )
        })
        .collect();
    let mut line: Vec<(Value, String, String)> = emu
        .list(Kind::Workload, None)
        .into_iter()
        .filter(in_line)
        .filter_map(|wl| {
            let key = (
                text(&wl, "/metadata/namespace").to_string(),
                text(&wl, "/spec/queueName").to_string(),
            );
            local_queues.contains(&key).then_some((wl, key.0, key.1))
        })
        .collect();
    let priority = |wl: &Value| {
        wl.pointer("/spec/priority")
            .and_then(Value::as_i64)
            .unwrap_or(0)
    };
    line.sort_by(|(a, ..), (b, ..)| {
        priority(b)
            .cmp(&priority(a))
            .then_with(|| {
                text(a, "/metadata/creationTimestamp").cmp(text(b, "/metadata/creationTimestamp"))
            })
            .then_with(|| text(a, "/metadata/name").cmp(text(b, "/metadata/name")))
    });
    line
}

/// The names of the Workloads waiting in the LocalQueue `namespace/name`,
/// in the order its pending-workloads answer lists them.
pub fn local_queue_line(emu: &Emulator, namespace: &str, name: &str) -> Vec<String> {
    let Some(local_queue) = emu.get(Kind::LocalQueue, namespace, name) else {
        return Vec::new();
    };
    line_of(emu, text(&local_queue, "/spec/clusterQueue"))
        .into_iter()
        .filter(|(_, ns, lq)| ns == namespace && lq == name)
        .map(|(wl, ..)| text(&wl, "/metadata/name").to_string())
        .collect()
}

fn param(params: &[(String, String)], name: &str) -> Result<Option<usize>, String> {
    match params.iter().find(|(k, _)| k == name) {
        None => Ok(None),
        Some((_, v)) => v
            .parse()
            .map(Some)
            .map_err(|_| format!("invalid {name} {v:?}: expected a non-negative integer")),
    }
}

/// Answers a pending-workloads request.
pub(crate) fn answer(
    emu: &Emulator,
    request: &PendingRequest,
    params: &[(String, String)],
) -> Response {
    if emu.is_forbidden(PENDING_WORKLOADS, "get") {
        return status(
            StatusCode::FORBIDDEN,
            "Forbidden",
            &format!(
                "localqueues.{GROUP} \"{}\" is forbidden: User \"system:serviceaccount:dispatch:dispatch-dash\" cannot get resource \"localqueues/pendingworkloads\" in API group \"{GROUP}\" in the namespace \"{}\"",
                request.local_queue, request.namespace
            ),
            Some(json!({"name": request.local_queue, "group": GROUP, "kind": "localqueues"})),
        );
    }
    let (limit, offset) = match (param(params, "limit"), param(params, "offset")) {
        (Ok(limit), Ok(offset)) => (
            limit.unwrap_or(MAX_LIMIT).min(MAX_LIMIT),
            offset.unwrap_or(0),
        ),
        (Err(e), _) | (_, Err(e)) => {
            return status(StatusCode::BAD_REQUEST, "BadRequest", &e, None);
        }
    };
    let Some(local_queue) = emu.get(Kind::LocalQueue, &request.namespace, &request.local_queue)
    else {
        return status(
            StatusCode::NOT_FOUND,
            "NotFound",
            &format!("localqueues.{GROUP} \"{}\" not found", request.local_queue),
            Some(json!({"name": request.local_queue, "group": GROUP, "kind": "localqueues"})),
        );
    };
    let line = line_of(emu, text(&local_queue, "/spec/clusterQueue"));
    let mut in_local_queue = 0usize;
    let items: Vec<Value> = line
        .iter()
        .enumerate()
        .filter_map(|(in_cluster_queue, (wl, ns, lq))| {
            if *ns != request.namespace || *lq != request.local_queue {
                return None;
            }
            let position = in_local_queue;
            in_local_queue += 1;
            Some(json!({
                "metadata": {
                    "name": text(wl, "/metadata/name"),
                    "namespace": ns,
                    "creationTimestamp": wl.pointer("/metadata/creationTimestamp"),
                    "ownerReferences": wl.pointer("/metadata/ownerReferences"),
                },
                "priority": wl.pointer("/spec/priority").and_then(Value::as_i64).unwrap_or(0),
                "localQueueName": lq,
                "positionInClusterQueue": in_cluster_queue,
                "positionInLocalQueue": position,
            }))
        })
        .skip(offset)
        .take(limit)
        .collect();
    json_response(
        StatusCode::OK,
        &json!({
            "kind": "PendingWorkloadsSummary",
            "apiVersion": format!("{GROUP}/{}", request.version),
            "metadata": {},
            "items": items,
        }),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_pending_workloads_path_is_a_request() {
        let segs = |p: &str| {
            p.split('/')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect::<Vec<_>>()
        };
        let path = segs("/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/main/pendingworkloads");
        let path: Vec<&str> = path.iter().map(String::as_str).collect();
        assert_eq!(
            PendingRequest::from_segments(&path),
            Some(PendingRequest {
                version: "v1beta2".into(),
                namespace: "team-a".into(),
                local_queue: "main".into()
            })
        );
        let other =
            segs("/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/main");
        let other: Vec<&str> = other.iter().map(String::as_str).collect();
        assert_eq!(PendingRequest::from_segments(&other), None);
    }

    #[test]
    fn in_line_is_active_unreserved_unfinished_and_ungated() {
        let wl = |spec: Value, conditions: Value, annotations: Value| {
            json!({"metadata": {"annotations": annotations}, "spec": spec,
                "status": {"conditions": conditions}})
        };
        let reserved = json!([{"type": "QuotaReserved", "status": "True"}]);
        let waiting = json!([{"type": "QuotaReserved", "status": "False"}]);
        let finished = json!([{"type": "Finished", "status": "True"}]);
        let gate = json!({(classify_wasm::keys::ADMISSION_GATED_BY): "x"});
        assert!(in_line(&wl(json!({}), waiting.clone(), json!({}))));
        assert!(!in_line(&wl(json!({}), reserved, json!({}))));
        assert!(!in_line(&wl(json!({}), finished, json!({}))));
        assert!(!in_line(&wl(
            json!({"active": false}),
            waiting.clone(),
            json!({})
        )));
        assert!(!in_line(&wl(json!({}), waiting, gate)));
    }
}
