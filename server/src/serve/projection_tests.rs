use super::*;
use serde_json::json;

fn pod_with_secrets() -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": "llm-7-s3-node-0-0-abcde", "namespace": "team-a", "uid": "p1",
            "managedFields": [{"manager": "kubelet"}],
            "labels": {"dispatch.phpboyscout.uk/job-id": "llm-7",
                "dispatch.phpboyscout.uk/submission": "s3", "app": "secret-app-label"},
            "annotations": {"dispatch.phpboyscout.uk/admission": "2",
                "kubectl.kubernetes.io/last-applied-configuration": "{\"env\":\"hunter2\"}"},
            "ownerReferences": [{"kind": "Job", "name": "j", "uid": "ju", "controller": true}],
        },
        "spec": {
            "nodeName": "gpu-1",
            "schedulingGates": [{"name": "g"}],
            "containers": [{"name": "node", "env": [{"name": "TOKEN", "value": "hunter2"}]}],
            "volumes": [{"name": "s", "secret": {"secretName": "creds"}}],
        },
        "status": {
            "phase": "Failed",
            "conditions": [{"type": "Ready", "status": "False", "extra": "x"}],
            "containerStatuses": [
                {"name": "sidecar", "state": {"terminated": {"exitCode": 3}}},
                {"name": "node", "image": "img", "state": {"terminated": {"exitCode": 137,
                    "reason": "OOMKilled", "finishedAt": "2024-01-01T00:00:00Z"}},
                 "lastState": {}},
            ],
        },
    })
}

#[test]
fn a_pod_keeps_only_what_the_engine_reads() {
    let stored = project(ObjectKind::Pod, &pod_with_secrets()).expect("a job pod is stored");
    assert!(!stored.json.contains("hunter2"), "{}", stored.json);
    assert!(!stored.json.contains("managedFields"));
    assert!(!stored.json.contains("secret"));
    assert!(!stored.json.contains("sidecar"));
    let v = stored.value();
    assert_eq!(
        v["spec"],
        json!({"nodeName": "gpu-1", "schedulingGates": [{"name": "g"}]})
    );
    assert_eq!(
        v["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"],
        137
    );
    assert_eq!(
        v["metadata"]["annotations"],
        json!({"dispatch.phpboyscout.uk/admission": "2"})
    );
    assert_eq!(stored.linking.node_name.as_deref(), Some("gpu-1"));
    assert_eq!(stored.linking.job_id.as_deref(), Some("llm-7"));
    assert!(stored.linking.trainjob_owners.is_empty());
}

/// A Workload whose pod set's template carries what must never leave the
/// server, beside the resources the queue facts read.
fn workload_with_a_template() -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
        "metadata": {"name": "w", "namespace": "team-a", "uid": "w1",
            "labels": {"kueue.x-k8s.io/job-uid": "tj1"}},
        "spec": {
            "queueName": "main", "priority": 1000, "active": true,
            "podSets": [{"name": "node", "count": 4, "template": {
                "metadata": {"labels": {"app": "secret-label"}},
                "spec": {
                    "containers": [{"name": "node", "image": "registry/secret:1",
                        "args": ["--token", "hunter2"],
                        "env": [{"name": "TOKEN", "value": "hunter2"}],
                        "resources": {"requests": {"nvidia.com/gpu": "8", "cpu": 16, "bad": 1.5},
                            "limits": {"memory": "64Gi"}, "claims": [{"name": "c"}]}}],
                    "initContainers": [{"name": "init", "command": ["sh"],
                        "resources": {"requests": {"cpu": "500m"}}}],
                    "overhead": {"cpu": "250m"},
                    "volumes": [{"name": "s", "secret": {"secretName": "creds"}}],
                    "nodeSelector": {"pool": "gpu"},
                }}}],
        },
        "status": {"admission": {"clusterQueue": "gpu-cq",
            "podSetAssignments": [{"name": "node", "flavors": {"nvidia.com/gpu": "a100"}}]}},
    })
}

#[test]
fn a_workload_keeps_of_its_template_only_the_resources() {
    let stored = project(ObjectKind::Workload, &workload_with_a_template()).expect("stored");
    for secret in [
        "hunter2",
        "registry/secret",
        "secret-label",
        "creds",
        "\"sh\"",
        "pool",
        "claims",
    ] {
        assert!(
            !stored.json.contains(secret),
            "{secret} leaked: {}",
            stored.json
        );
    }
    assert_eq!(
        stored.value()["spec"],
        json!({"active": true, "priority": 1000, "queueName": "main",
            "podSets": [{"name": "node", "count": 4, "template": {"spec": {
                "containers": [{"name": "node", "resources": {
                    "requests": {"nvidia.com/gpu": "8", "cpu": 16}, "limits": {"memory": "64Gi"}}}],
                "initContainers": [{"name": "init", "resources": {"requests": {"cpu": "500m"}}}],
                "overhead": {"cpu": "250m"}}}}]})
    );
    assert_eq!(
        stored.value()["status"],
        json!({"admission": {"clusterQueue": "gpu-cq"}})
    );
}

#[test]
fn queues_keep_their_quota_and_status() {
    let cq = json!({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
        "metadata": {"name": "gpu-cq", "uid": "c1", "managedFields": [{}]},
        "spec": {"cohort": "research", "queueingStrategy": "BestEffortFIFO",
            "namespaceSelector": {}, "preemption": {"reclaimWithinCohort": "Any"},
            "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"], "flavors": [{"name": "a100",
                "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "64", "borrowingLimit": "8"}]}]}]},
        "status": {"pendingWorkloads": 3, "admittedWorkloads": 7, "reservingWorkloads": 7,
            "flavorsReservation": [{"name": "a100", "resources": [{"name": "nvidia.com/gpu",
                "total": "56", "borrowed": "0"}]}],
            "conditions": [{"type": "Active", "status": "True", "reason": "Ready", "message": "Can admit"}]}});
    let stored = project(ObjectKind::ClusterQueue, &cq).expect("stored");
    assert_eq!(stored.namespace, "", "cluster-scoped");
    let v = stored.value();
    assert_eq!(v["spec"]["cohort"], "research");
    assert_eq!(v["spec"]["resourceGroups"], cq["spec"]["resourceGroups"]);
    assert_eq!(v["spec"].get("preemption"), None);
    assert_eq!(
        v["status"]["flavorsReservation"],
        cq["status"]["flavorsReservation"]
    );
    assert_eq!(v["status"]["pendingWorkloads"], 3);
    assert_eq!(v["metadata"].get("managedFields"), None);
    let lq = json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "main", "namespace": "team-a", "uid": "l1"},
        "spec": {"clusterQueue": "gpu-cq", "stopPolicy": "Hold"},
        "status": {"pendingWorkloads": 2, "flavorsUsage": [{"name": "a100",
            "resources": [{"name": "nvidia.com/gpu", "total": "8"}]}]}});
    let stored = project(ObjectKind::LocalQueue, &lq).expect("stored");
    assert_eq!(
        (stored.namespace.as_str(), stored.name.as_str()),
        ("team-a", "main")
    );
    assert_eq!(stored.value()["spec"], lq["spec"]);
    assert_eq!(stored.value()["status"], lq["status"]);
}

#[test]
fn a_pod_of_no_job_is_not_stored() {
    let pod = json!({"metadata": {"name": "web", "namespace": "a", "labels": {"app": "web"}}});
    assert_eq!(project(ObjectKind::Pod, &pod), None);
}

#[test]
fn fields_of_the_wrong_type_are_dropped() {
    let tj = json!({"metadata": {"name": "x-s1", "uid": 7, "labels": {"dispatch.phpboyscout.uk/job-id": 3}},
        "spec": {"suspend": "yes"}, "status": {"conditions": [1, {"type": "Complete", "status": true}]}});
    let stored = project(ObjectKind::TrainJob, &tj).expect("TrainJobs are always stored");
    assert_eq!(stored.uid, "");
    assert_eq!(stored.linking.job_id, None);
    let v = stored.value();
    assert_eq!(v["spec"], Value::Null);
    assert_eq!(v["status"]["conditions"], json!([{"type": "Complete"}]));
    let observations = classify_wasm::classify(
        &format!(
            "{{\"kind\":\"Snapshot\",\"mode\":\"plain\",\"nodesReadable\":true,\"items\":[{}]}}",
            stored.json
        ),
        classify_wasm::Options::default(),
    );
    assert!(observations.is_ok(), "the projection is valid engine input");
}

#[test]
fn a_namespace_keeps_only_its_name_and_uid() {
    let ns = json!({"metadata": {"name": "team-b", "uid": "n1", "namespace": "x",
        "labels": {"kubernetes.io/metadata.name": "team-b"},
        "annotations": {"dispatch.phpboyscout.uk/hold-instance": "h"}},
        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
    let stored = project(ObjectKind::Namespace, &ns).expect("stored");
    assert_eq!(
        stored.value(),
        json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "team-b", "uid": "n1"}})
    );
    assert_eq!(
        (stored.namespace.as_str(), stored.name.as_str()),
        ("", "team-b")
    );
    assert!(!ObjectKind::ALL.contains(&ObjectKind::Namespace));
    assert_eq!(
        ObjectKind::parse("namespaces"),
        None,
        "not an inspectable kind"
    );
}

#[test]
fn kinds_parse_from_urls() {
    assert_eq!(ObjectKind::parse("trainjobs"), Some(ObjectKind::TrainJob));
    assert_eq!(ObjectKind::parse("Pod"), Some(ObjectKind::Pod));
    assert_eq!(ObjectKind::parse("secrets"), None);
    assert_eq!(ObjectKind::JobSet.group(), "jobset.x-k8s.io");
    assert_eq!(ObjectKind::Pod.group(), "");
    assert_eq!(ObjectKind::Pod.version(), "v1");
}

/// The projection as the engine's read schema defines it, computed the
/// plainest way: the schema walked over a `serde_json::Value`, a
/// `serde_json::Map` built and printed. The parser and writer the watch
/// loops use must match it byte for byte. Both follow the schema, so a
/// field added there changes both alike; what this pins is the schema's
/// meaning (types, presence, duplicates, the queue trees).
mod reference {
    use super::super::{schema_of, ObjectKind, StoredObject};
    use classify_wasm::fields;
    use classify_wasm::schema::{Field, Presence, Shape};
    use classify_wasm::LinkedObject;
    use serde_json::{Map, Value};
    use std::sync::Arc;

    pub(super) fn project_at(
        kind: ObjectKind,
        api_version: &str,
        object: &Value,
    ) -> Option<StoredObject> {
        let mut out = Map::new();
        out.insert("apiVersion".into(), Value::from(api_version));
        out.insert("kind".into(), Value::from(kind.name()));
        write(schema_of(kind), object, &mut out);
        let json: Arc<str> = Value::Object(out).to_string().into();
        let meta = object.get("metadata").unwrap_or(&Value::Null);
        let meta_str = |key: &str| {
            meta.get(key)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let stored = StoredObject {
            kind,
            namespace: if kind.namespaced() {
                meta_str("namespace")
            } else {
                String::new()
            },
            name: meta_str("name"),
            uid: meta_str("uid"),
            // What the engine links by, read from the projection itself:
            // the stored fields must be the engine's reading of it.
            linking: LinkedObject::of_json(&json).fields,
            json,
        };
        if kind == ObjectKind::Pod
            && stored.linking.job_id.is_none()
            && stored.linking.jobset_name.is_none()
        {
            return None;
        }
        Some(stored)
    }

    /// Writes the fields of `schema` that `from` has with their types.
    fn write(schema: &[Field], from: &Value, out: &mut Map<String, Value>) {
        for field in schema {
            let value = from.get(field.name);
            let object = |inner: &[Field], from: &Value| {
                let mut kept = Map::new();
                write(inner, from, &mut kept);
                Value::Object(kept)
            };
            let kept = match field.shape {
                Shape::String => value.filter(|v| v.is_string()).cloned(),
                Shape::Bool => value.filter(|v| v.is_boolean()).cloned(),
                Shape::Integer => value.filter(|v| v.is_i64() || v.is_u64()).cloned(),
                Shape::QueueTree => value.and_then(queue_tree),
                Shape::Object(inner) => match value.filter(|v| v.is_object()) {
                    Some(v) => Some(object(inner, v)),
                    None if field.presence == Presence::Always => Some(Value::Object(Map::new())),
                    None => None,
                },
                Shape::Objects(inner) => value.and_then(Value::as_array).map(|items| {
                    Value::Array(
                        items
                            .iter()
                            .filter(|e| e.is_object())
                            .map(|e| object(inner, e))
                            .collect(),
                    )
                }),
                Shape::FirstNamed(name, inner) => value
                    .and_then(Value::as_array)
                    .and_then(|items| {
                        items
                            .iter()
                            .find(|e| e.get("name").and_then(Value::as_str) == Some(name))
                    })
                    .map(|e| Value::Array(vec![object(inner, e)])),
                Shape::Strings(keys) => value.filter(|v| v.is_object()).map(|v| {
                    Value::Object(
                        keys.iter()
                            .filter_map(|k| {
                                let s = v.get(*k).filter(|s| s.is_string())?;
                                Some(((*k).to_string(), s.clone()))
                            })
                            .collect(),
                    )
                }),
            };
            match kept {
                Some(Value::Object(m)) if m.is_empty() && field.presence == Presence::NonEmpty => {}
                Some(kept) => {
                    out.insert(field.name.into(), kept);
                }
                None => {}
            }
        }
    }

    /// A queue tree: the keys the queue facts read, at every depth, and
    /// under a quantity map every string or integer entry.
    fn queue_tree(v: &Value) -> Option<Value> {
        match v {
            Value::Object(map) => Some(Value::Object(
                map.iter()
                    .filter(|(k, _)| fields::is_queue_read_key(k))
                    .filter_map(|(k, child)| {
                        let kept = if fields::QUEUE_QUANTITY_MAPS.contains(&k.as_str()) {
                            quantity_map(child)
                        } else {
                            queue_tree(child)
                        };
                        kept.map(|c| (k.clone(), c))
                    })
                    .collect(),
            )),
            Value::Array(items) => {
                Some(Value::Array(items.iter().filter_map(queue_tree).collect()))
            }
            Value::Number(n) if n.is_f64() => None,
            Value::Null => None,
            other => Some(other.clone()),
        }
    }

    fn quantity_map(v: &Value) -> Option<Value> {
        let map = v.as_object()?;
        Some(Value::Object(
            map.iter()
                .filter(|(_, q)| q.is_string() || q.is_i64() || q.is_u64())
                .map(|(k, q)| (k.clone(), q.clone()))
                .collect(),
        ))
    }
}

mod equivalence {
    use super::super::*;
    use super::reference;
    use emulator::scenario::objects::{self, JobRef, PodRef};
    use k8s_openapi::api::core::v1::{Namespace, Node, Pod};
    use serde_json::{json, Value};

    const T0: &str = "2026-03-01T09:00:00Z";
    const T1: &str = "2026-03-01T09:04:00Z";

    /// A pod as a real API server serves it: managedFields, the
    /// last-applied annotation, env, volumes, resources, several containers
    /// and init containers, tolerations, every status field.
    fn full_pod() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {
                "name": "llm-7-s3-node-0-1-x2k9p", "generateName": "llm-7-s3-node-0-1-",
                "namespace": "team-a", "uid": "0f1d6a1e-8d4c-4b6e-9a55-1c0e2c1d7f10",
                "resourceVersion": "918273", "generation": 1,
                "creationTimestamp": T0, "deletionTimestamp": T1,
                "deletionGracePeriodSeconds": 30,
                "labels": {
                    "dispatch.phpboyscout.uk/job-id": "llm-7",
                    "dispatch.phpboyscout.uk/submission": "s3",
                    "jobset.sigs.k8s.io/jobset-name": "llm-7-s3",
                    "jobset.sigs.k8s.io/restart-attempt": "2",
                    "batch.kubernetes.io/job-completion-index": "1",
                    "controller-uid": "9e0c", "app": "trainer"
                },
                "annotations": {
                    "dispatch.phpboyscout.uk/admission": "3",
                    "dispatch.phpboyscout.uk/hold-instance": "h-1",
                    "kubectl.kubernetes.io/last-applied-configuration":
                        "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"spec\":{\"env\":[{\"name\":\"TOKEN\",\"value\":\"hunter2\"}]}}\n",
                    "note": "quotes \" backslash \\ tab \t newline \n bell \u{7} del \u{7f} é 漢 🚀"
                },
                "ownerReferences": [
                    {"apiVersion": "batch/v1", "kind": "Job", "name": "llm-7-s3-node-0",
                     "uid": "9e0c", "controller": true, "blockOwnerDeletion": true},
                    {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
                     "name": "llm-7-s3", "uid": "tj-uid-7", "controller": false}
                ],
                "finalizers": ["batch.kubernetes.io/job-tracking"],
                "managedFields": [{
                    "manager": "kube-controller-manager", "operation": "Update",
                    "apiVersion": "v1", "time": T0, "fieldsType": "FieldsV1",
                    "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:app": {}}}}
                }, {
                    "manager": "kubelet", "operation": "Update", "apiVersion": "v1",
                    "time": T1, "fieldsType": "FieldsV1", "subresource": "status",
                    "fieldsV1": {"f:status": {"f:conditions": {"k:{\"type\":\"Ready\"}": {}}}}
                }]
            },
            "spec": {
                "nodeName": "gpu-node-3",
                "schedulingGates": [{"name": "kueue.x-k8s.io/admission"}],
                "restartPolicy": "Never", "serviceAccountName": "trainer",
                "terminationGracePeriodSeconds": 30, "priority": 0,
                "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
                "initContainers": [{"name": "init", "image": "busybox", "command": ["sh", "-c", "true"]}],
                "containers": [{
                    "name": "node", "image": "ghcr.io/x/trainer:1.2",
                    "args": ["--lr", "3e-4"],
                    "env": [{"name": "TOKEN", "value": "hunter2"},
                            {"name": "FROM_SECRET", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "k"}}}],
                    "resources": {"limits": {"nvidia.com/gpu": "8", "memory": "512Gi"},
                                  "requests": {"cpu": "32"}},
                    "volumeMounts": [{"name": "creds", "mountPath": "/creds", "readOnly": true}],
                    "ports": [{"containerPort": 29500, "protocol": "TCP"}]
                }, {"name": "sidecar", "image": "envoy"}],
                "volumes": [{"name": "creds", "secret": {"secretName": "creds", "defaultMode": 420}},
                            {"name": "scratch", "emptyDir": {"sizeLimit": "1Ti"}}]
            },
            "status": {
                "phase": "Failed", "hostIP": "10.0.0.3", "podIP": "10.1.0.9",
                "podIPs": [{"ip": "10.1.0.9"}], "qosClass": "Burstable", "startTime": T0,
                "conditions": [
                    {"type": "PodScheduled", "status": "True", "lastProbeTime": null,
                     "lastTransitionTime": T0},
                    {"type": "Ready", "status": "False", "reason": "PodFailed",
                     "message": "containers with unready status: [node]", "lastTransitionTime": T1},
                    {"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
                     "message": "node is shutting down", "lastTransitionTime": T1}
                ],
                "initContainerStatuses": [{"name": "init", "ready": true, "restartCount": 0,
                    "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
                "containerStatuses": [
                    {"name": "sidecar", "ready": false, "restartCount": 0, "image": "envoy",
                     "imageID": "sha256:1", "containerID": "containerd://1",
                     "state": {"terminated": {"exitCode": 3, "reason": "Error"}}},
                    {"name": "node", "ready": false, "restartCount": 1, "image": "ghcr.io/x/trainer:1.2",
                     "imageID": "sha256:2", "containerID": "containerd://2", "started": false,
                     "state": {"terminated": {"exitCode": 137, "reason": "OOMKilled",
                        "message": "out of memory", "startedAt": T0, "finishedAt": T1,
                        "containerID": "containerd://2"}},
                     "lastState": {"terminated": {"exitCode": 1, "reason": "Error",
                        "startedAt": T0, "finishedAt": T0}}},
                    {"name": "node", "state": {"running": {"startedAt": T0}}}
                ]
            }
        })
    }

    /// A node as a real API server serves it, with the bulky status
    /// (images, addresses, capacity) none of which is kept.
    fn full_node() -> Value {
        json!({
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "gpu-node-3", "uid": "n-3", "resourceVersion": "77",
                "creationTimestamp": T0,
                "labels": {"kubernetes.io/hostname": "gpu-node-3", "nvidia.com/gpu.count": "8"},
                "annotations": {"node.alpha.kubernetes.io/ttl": "0"}},
            "spec": {"podCIDR": "10.1.0.0/24", "taints": [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]},
            "status": {
                "capacity": {"cpu": "96", "nvidia.com/gpu": "8"},
                "allocatable": {"cpu": "95", "nvidia.com/gpu": "8"},
                "addresses": [{"type": "InternalIP", "address": "10.0.0.3"}],
                "images": [{"names": ["ghcr.io/x/trainer:1.2"], "sizeBytes": 123456789}],
                "nodeInfo": {"kubeletVersion": "v1.34.1", "machineID": "m", "systemUUID": "s",
                    "bootID": "b", "kernelVersion": "6.1", "osImage": "Ubuntu",
                    "containerRuntimeVersion": "containerd://2", "kubeProxyVersion": "v1.34.1",
                    "operatingSystem": "linux", "architecture": "amd64"},
                "conditions": [
                    {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
                     "message": "ok", "lastHeartbeatTime": T1, "lastTransitionTime": T0},
                    {"type": "Ready", "status": "True", "reason": "KubeletReady",
                     "message": "kubelet is posting ready status", "lastHeartbeatTime": T1,
                     "lastTransitionTime": T0}
                ]
            }
        })
    }

    fn full_namespace() -> Value {
        json!({"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "team-a", "uid": "ns-a", "resourceVersion": "5",
                "creationTimestamp": T0,
                "labels": {"kubernetes.io/metadata.name": "team-a",
                    "dispatch.phpboyscout.uk/job-id": "not-a-job"},
                "managedFields": [{"manager": "kubectl"}]},
            "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
    }

    /// Every kind, as the emulator's scenarios write them and as a real
    /// cluster serves them.
    fn realistic_objects() -> Vec<(ObjectKind, Value)> {
        let job = JobRef::new("team-a", "llm-7", "s3");
        let p = PodRef {
            rank: 2,
            admission: 3,
            restart_attempt: 1,
            suffix: "q7x2z".into(),
        };
        let pod = objects::pod(&job, &p, T0);
        let running = objects::pod_running(pod.clone(), "gpu-node-3", T1);
        let mut queued = objects::trainjob(&job, 4, Some("team-queue"), true);
        objects::set_condition(
            &mut queued,
            objects::condition("Suspended", "True", "Suspended", "queued", T0),
        );
        let mut workload =
            objects::workload(&job, "trainjob-llm-7-s3-1a2b3", "tj-uid-7", "team-queue", 4);
        workload["status"]["admissionChecks"] = json!([
            {"name": "provisioning", "state": "Pending", "message": "waiting for capacity",
             "lastTransitionTime": T0, "podSetUpdates": [{"name": "node"}]},
            "not-an-object",
            {"name": "quota", "state": "Ready"}
        ]);
        vec![
            (ObjectKind::Pod, full_pod()),
            (ObjectKind::Pod, pod.clone()),
            (ObjectKind::Pod, running.clone()),
            (
                ObjectKind::Pod,
                objects::pod_terminated(running.clone(), "OOMKilled", 137, "out of memory", T1),
            ),
            (
                ObjectKind::Pod,
                objects::pod_disrupted(running.clone(), "PreemptionByScheduler", "preempted", T1),
            ),
            (ObjectKind::Pod, objects::pod_terminating(running, T1)),
            (ObjectKind::Pod, super::pod_with_secrets()),
            (ObjectKind::Node, full_node()),
            (ObjectKind::Node, objects::node("gpu-1", "False", T0)),
            (ObjectKind::Namespace, full_namespace()),
            (
                ObjectKind::TrainJob,
                objects::trainjob(&job, 4, None, false),
            ),
            (ObjectKind::TrainJob, queued),
            (
                ObjectKind::TrainingRuntime,
                objects::runtime_copy(&job, "tj-uid-7"),
            ),
            (ObjectKind::JobSet, objects::jobset(&job, "tj-uid-7", 4, 2)),
            (ObjectKind::Workload, workload),
            (ObjectKind::Workload, super::workload_with_a_template()),
            (
                ObjectKind::ClusterQueue,
                json!({"kind": "ClusterQueue", "metadata": {"name": "gpu-cq", "uid": "c"},
                    "spec": {"cohortName": "r", "resourceGroups": [{"coveredResources": ["cpu"],
                        "flavors": [{"name": "f", "resources": [{"name": "cpu", "nominalQuota": "8",
                            "lendingLimit": "2"}]}]}], "stopPolicy": "None"},
                    "status": {"flavorsUsage": [{"name": "f", "resources": [{"name": "cpu",
                        "total": "2", "borrowed": "0"}]}], "admittedWorkloads": 1,
                        "conditions": [{"type": "Active", "status": "True"}]}}),
            ),
            (
                ObjectKind::LocalQueue,
                json!({"kind": "LocalQueue", "metadata": {"name": "main", "namespace": "a"},
                    "spec": {"clusterQueue": "gpu-cq"},
                    "status": {"reservingWorkloads": 1, "flavorsReservation": [{"name": "f",
                        "resources": [{"name": "cpu", "total": "2"}]}]}}),
            ),
        ]
    }

    /// The projection of `object` parsed from `text` (as a watch parses
    /// it) and from its `Value`, both checked against the schema's
    /// reference.
    fn assert_same_projection(kind: ObjectKind, api_version: &str, object: &Value) {
        let want = reference::project_at(kind, api_version, object);
        let from_value = project_at(kind, api_version, object);
        assert_eq!(from_value, want, "{kind:?} from its Value: {object}");
        for text in [object.to_string(), format!("{object:#}")] {
            let parsed: ApiObject = serde_json::from_str(&text).expect("parses");
            let from_text = match parsed.project(kind, api_version) {
                Projected::Stored(stored) => Some(stored),
                Projected::NotStored(_) => None,
            };
            assert_eq!(from_text, want, "{kind:?} from its text: {text}");
        }
    }

    #[test]
    fn every_kind_projects_as_the_schema_says_from_text_and_from_a_value() {
        for (kind, object) in realistic_objects() {
            assert_same_projection(kind, kind.api_version(), &object);
            // The version watched is what the projection says.
            assert_same_projection(kind, "example.test/v9", &object);
            let stored = project(kind, &object).expect("every realistic object is stored");
            assert!(!stored.json.contains("hunter2"), "{}", stored.json);
            assert!(!stored.json.contains("managedFields"), "{}", stored.json);
        }
    }

    /// The old watch path read pods, nodes and namespaces as k8s-openapi
    /// types and printed them back to a `Value` (normalizing nothing the
    /// API server sends: its times are already `...Z` to the second); the
    /// new one reads their text. Same bytes.
    #[test]
    fn core_kinds_project_as_the_typed_watch_did() {
        fn typed<K: serde::de::DeserializeOwned + serde::Serialize>(object: &Value) -> Value {
            let typed: K = serde_json::from_value(object.clone()).expect("a valid object");
            serde_json::to_value(typed).expect("serializes")
        }
        let mut checked = 0;
        // Not `pod_with_secrets`: its owner reference lacks the
        // `apiVersion` an API server requires (the typed path wrote `""`).
        for (kind, object) in realistic_objects()
            .into_iter()
            .filter(|(_, o)| o != &super::pod_with_secrets())
        {
            let old_watch_value = match kind {
                ObjectKind::Pod => typed::<Pod>(&object),
                ObjectKind::Node => typed::<Node>(&object),
                ObjectKind::Namespace => typed::<Namespace>(&object),
                _ => continue,
            };
            let old = reference::project_at(kind, "v1", &old_watch_value);
            let text = object.to_string();
            let new = match serde_json::from_str::<ApiObject>(&text)
                .expect("parses")
                .project(kind, "v1")
            {
                Projected::Stored(stored) => Some(stored),
                Projected::NotStored(_) => None,
            };
            assert_eq!(new, old, "{kind:?}: {text}");
            checked += 1;
        }
        assert!(checked >= 8, "{checked}");
    }

    /// The state directory reads projections back as text: the projection
    /// of a projection is itself, at the version it was read at.
    #[test]
    fn a_projection_read_back_is_itself() {
        // Not a Namespace: its labels are read (as they always were) but
        // not kept, and the state directory does not hold namespaces.
        for (kind, object) in realistic_objects()
            .into_iter()
            .filter(|(kind, _)| *kind != ObjectKind::Namespace)
        {
            let Some(stored) = project_at(kind, "example.test/v9", &object) else {
                continue;
            };
            let again: ApiObject = serde_json::from_str(&stored.json).expect("parses");
            assert_eq!(again.api_version(), Some("example.test/v9"));
            assert_eq!(
                again.project(kind, "example.test/v9"),
                Projected::Stored(stored)
            );
        }
    }

    #[test]
    fn a_pod_of_no_job_keeps_only_its_identity() {
        let pod = json!({"metadata": {"name": "web", "namespace": "a", "uid": "u",
            "labels": {"app": "web", "dispatch.phpboyscout.uk/job-id": ""}}, "spec": {"nodeName": "n"}});
        let text = pod.to_string();
        let parsed: ApiObject = serde_json::from_str(&text).expect("parses");
        let Projected::NotStored(identity) = parsed.project(ObjectKind::Pod, "v1") else {
            panic!("an empty job-id is no job");
        };
        assert_eq!(
            (
                identity.namespace.as_str(),
                identity.name.as_str(),
                identity.uid.as_str()
            ),
            ("a", "web", "u")
        );
        assert_eq!(&*identity.json, "{}");
        assert_eq!(identity.linking.node_name, None);
    }

    /// A value of every type at every key the projection reads, nested at
    /// random, as text with duplicate keys too: the parser keeps and drops
    /// exactly what the schema's reference keeps of the parsed `Value`.
    #[test]
    fn random_shapes_and_wrong_types_project_as_the_schema_says() {
        // The engine's set of keys read, its labels and annotations, and
        // a few keys and values it does not read.
        static KEYS: std::sync::LazyLock<Vec<&'static str>> = std::sync::LazyLock::new(|| {
            use classify_wasm::fields::{
                ANNOTATIONS_READ, LABELS_READ, QUEUE_READ_KEYS, READ_KEYS,
            };
            READ_KEYS
                .iter()
                .chain(QUEUE_READ_KEYS.iter())
                .chain(["overhead", "nvidia.com/gpu", "env", "image"].iter())
                .chain(LABELS_READ.iter())
                .chain(ANNOTATIONS_READ.iter())
                .chain(["apiVersion", "TrainJob", "node", "resourceVersion", "other"].iter())
                .copied()
                .collect()
        });
        use test_support::Rng;
        fn value(rng: &mut Rng, depth: usize, out: &mut String) {
            let choice = if depth == 0 {
                rng.below(7)
            } else {
                rng.below(10)
            };
            match choice {
                0 => out.push_str("null"),
                1 => out.push_str(["true", "false"][rng.below(2)]),
                2 => out.push_str(
                    ["0", "137", "-1", "2.5", "18446744073709551616", "1e3"][rng.below(6)],
                ),
                3..=6 => {
                    let text = KEYS[rng.below(KEYS.len())];
                    let text = [text, "", "\u{1}é\"\\"][rng.below(3)];
                    out.push_str(&serde_json::to_string(text).expect("a string"));
                }
                7 => {
                    out.push('[');
                    for i in 0..rng.below(4) {
                        if i > 0 {
                            out.push(',');
                        }
                        value(rng, depth - 1, out);
                    }
                    out.push(']');
                }
                _ => {
                    out.push('{');
                    for i in 0..rng.below(7) {
                        if i > 0 {
                            out.push(',');
                        }
                        let key = KEYS[rng.below(KEYS.len())];
                        out.push_str(&serde_json::to_string(key).expect("a key"));
                        out.push(':');
                        value(rng, depth - 1, out);
                    }
                    out.push('}');
                }
            }
        }
        // Every realistic object with one value anywhere in it (a field read,
        // its parent, an array entry) replaced by a random one.
        let mut rng = Rng::new(0x2545_f491_4f6c_dd1d);
        let mut mutated = 0;
        for (kind, object) in realistic_objects() {
            let mut pointers = Vec::new();
            collect_pointers(&object, String::new(), &mut pointers);
            for _ in 0..400 {
                let mut changed = object.clone();
                let mut replacement = String::new();
                value(&mut rng, 3, &mut replacement);
                let pointer = &pointers[rng.below(pointers.len())];
                if let Some(slot) = changed.pointer_mut(pointer) {
                    *slot = serde_json::from_str(&replacement).expect("valid JSON");
                }
                assert_same_projection(kind, "v1", &changed);
                mutated += 1;
            }
        }
        assert!(mutated > 5_000, "{mutated}");
        // Every kind a snapshot holds, and the Namespaces and queues
        // watched besides.
        let kinds: Vec<ObjectKind> = ObjectKind::ALL
            .into_iter()
            .chain([ObjectKind::Namespace])
            .chain(ObjectKind::QUEUES)
            .collect();
        let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
        let mut stored = 0;
        for case in 0..20_000 {
            let mut text = String::new();
            // Mostly objects, deep enough to reach every field read.
            if case % 10 == 0 {
                value(&mut rng, 6, &mut text);
            } else {
                text.push('{');
                for (i, top) in ["metadata", "spec", "status"].iter().enumerate() {
                    if i > 0 {
                        text.push(',');
                    }
                    text.push_str(&format!("\"{top}\":"));
                    value(&mut rng, 5, &mut text);
                }
                text.push('}');
            }
            let as_value: Value = serde_json::from_str(&text).expect("valid JSON");
            let kind = kinds[case % kinds.len()];
            let want = reference::project_at(kind, "v1", &as_value);
            let parsed: ApiObject = serde_json::from_str(&text).expect("any JSON parses");
            let got = match parsed.project(kind, "v1") {
                Projected::Stored(s) => Some(s),
                Projected::NotStored(_) => None,
            };
            assert_eq!(got, want, "{kind:?}: {text}");
            assert_eq!(project_at(kind, "v1", &as_value), want, "{kind:?}: {text}");
            stored += usize::from(want.is_some_and(|w| !w.json.ends_with("\"metadata\":{}}")));
        }
        // Shapes from nothing rarely match what is read (the mutations above
        // reach every field); some do, past an empty object.
        assert!(
            stored > 300,
            "the cases reach past an empty object: {stored}"
        );
    }

    fn collect_pointers(value: &Value, at: String, out: &mut Vec<String>) {
        match value {
            Value::Object(map) => {
                for (key, v) in map {
                    collect_pointers(
                        v,
                        format!("{at}/{}", key.replace('~', "~0").replace('/', "~1")),
                        out,
                    );
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    collect_pointers(v, format!("{at}/{i}"), out);
                }
            }
            _ => {}
        }
        out.push(at);
    }
}
