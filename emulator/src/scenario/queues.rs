//! Kueue's queues in the scenario: one ClusterQueue with a GPU quota, a
//! LocalQueue per namespace pointing at it, and the part of Kueue's
//! controller that reserves quota at admission and keeps the queues'
//! status true to the Workloads (counts, reservation, usage).
//!
//! The quota is smaller than what every job could ask for at once, so the
//! demo shows a job that waits behind others and is admitted when quota
//! frees, with the arithmetic the dashboard explains. The ClusterQueue is in
//! a cohort with a second one that no LocalQueue uses, so one more job's
//! worth can be borrowed, up to the borrowing limit.

use serde_json::{json, Value};

use super::objects::condition;
use crate::{Emulator, Kind};

/// The LocalQueue every namespace's jobs are submitted to.
pub const LOCAL_QUEUE: &str = "gpu";
/// The ClusterQueue every LocalQueue points at.
pub const CLUSTER_QUEUE: &str = "gpu-cq";
/// The cohort the ClusterQueue is in.
pub const COHORT: &str = "research";
/// The other ClusterQueue of the cohort: no LocalQueue points at it, so its
/// whole quota is unused and can be lent.
pub const LENDING_QUEUE: &str = "spare-cq";
/// The only ResourceFlavor of the ClusterQueue.
pub const FLAVOR: &str = "a100";
/// The resource every pod requests.
pub const GPU: &str = "nvidia.com/gpu";
/// GPUs each pod of a TrainJob requests.
pub const GPUS_PER_POD: u64 = 8;

/// The GPUs one TrainJob of `pods` pods asks for.
pub fn asks(pods: usize) -> u64 {
    pods as u64 * GPUS_PER_POD
}

/// The ClusterQueue's nominal GPU quota for `jobs` jobs of `pods` pods:
/// room for half of them, and never less than one job.
pub fn nominal_quota(jobs: usize, pods: usize) -> u64 {
    asks(pods) * (jobs as u64 / 2).max(1)
}

/// How much [`CLUSTER_QUEUE`] may borrow from its cohort, and what
/// [`LENDING_QUEUE`] has to lend: one job of `pods` pods.
pub fn borrowing_limit(pods: usize) -> u64 {
    asks(pods)
}

/// The GPUs [`CLUSTER_QUEUE`] can reserve at most: its nominal quota and
/// what it may borrow.
pub fn capacity(jobs: usize, pods: usize) -> u64 {
    nominal_quota(jobs, pods) + borrowing_limit(pods)
}

/// A ClusterQueue of the cohort, at the storage version, with an empty
/// status; `borrowing_limit` caps what it may borrow.
pub fn cluster_queue(name: &str, nominal: u64, borrowing_limit: Option<u64>) -> Value {
    let mut quota = json!({"name": GPU, "nominalQuota": nominal.to_string()});
    if let (Some(limit), Some(q)) = (borrowing_limit, quota.as_object_mut()) {
        q.insert("borrowingLimit".into(), json!(limit.to_string()));
    }
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "ClusterQueue",
        "metadata": {"name": name},
        "spec": {
            "cohortName": COHORT,
            "queueingStrategy": "BestEffortFIFO",
            "namespaceSelector": {},
            "resourceGroups": [{
                "coveredResources": [GPU],
                "flavors": [{"name": FLAVOR, "resources": [quota]}],
            }],
        },
        "status": {},
    })
}

/// Both ClusterQueues of the cohort for `jobs` jobs of `pods` pods.
pub fn cluster_queues(jobs: usize, pods: usize) -> [Value; 2] {
    let limit = borrowing_limit(pods);
    [
        cluster_queue(CLUSTER_QUEUE, nominal_quota(jobs, pods), Some(limit)),
        cluster_queue(LENDING_QUEUE, limit, None),
    ]
}

/// The LocalQueue of `namespace`, with an empty status.
pub fn local_queue(namespace: &str) -> Value {
    json!({
        "apiVersion": "kueue.x-k8s.io/v1beta2",
        "kind": "LocalQueue",
        "metadata": {"name": LOCAL_QUEUE, "namespace": namespace},
        "spec": {"clusterQueue": CLUSTER_QUEUE},
        "status": {},
    })
}

/// The pod set a Workload of `pods` pods carries: the template's requests
/// are what Kueue reserves quota for.
pub fn pod_set(pods: usize) -> Value {
    json!({
        "name": "node",
        "count": pods,
        "template": {"spec": {"containers": [{
            "name": "node",
            "image": "ghcr.io/example/train:1",
            "resources": {"requests": {GPU: GPUS_PER_POD.to_string()}},
        }]}},
    })
}

/// Whether `wl` has condition `type_` at `status`.
fn has(wl: &Value, type_: &str, status: &str) -> bool {
    wl.pointer("/status/conditions")
        .and_then(Value::as_array)
        .is_some_and(|cs| {
            cs.iter()
                .any(|c| c["type"] == type_ && c["status"] == status)
        })
}

/// GPUs a Workload's pod sets ask for.
fn workload_asks(wl: &Value) -> u64 {
    wl.pointer("/spec/podSets")
        .and_then(Value::as_array)
        .map_or(0, |sets| {
            sets.iter()
                .map(|s| s["count"].as_u64().unwrap_or(0) * GPUS_PER_POD)
                .sum()
        })
}

/// Where a Workload stands for its queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standing {
    /// Waiting for quota, in line.
    Pending,
    /// Holds quota, not admitted yet.
    Reserving,
    /// Holds quota and is admitted.
    Admitted,
    /// Finished, deactivated or gated: not in line and holds nothing.
    Out,
}

fn standing(wl: &Value) -> Standing {
    let finished = has(wl, "Finished", "True");
    let active = wl.pointer("/spec/active").and_then(Value::as_bool) != Some(false);
    let gated = wl
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .is_some_and(|a| a.contains_key(super::objects::GATED_BY));
    if finished || !active {
        Standing::Out
    } else if has(wl, "QuotaReserved", "True") {
        if has(wl, "Admitted", "True") {
            Standing::Admitted
        } else {
            Standing::Reserving
        }
    } else if gated {
        Standing::Out
    } else {
        Standing::Pending
    }
}

/// GPUs reserved in the ClusterQueue now, by every Workload holding quota.
pub fn reserved(emu: &Emulator) -> u64 {
    emu.list_shared(Kind::Workload, None)
        .iter()
        .filter(|wl| matches!(standing(wl), Standing::Reserving | Standing::Admitted))
        .map(|wl| workload_asks(wl))
        .sum()
}

/// The `QuotaReserved=False` condition of a Workload that asks for `asks`
/// GPUs with `free` free, in Kueue's words.
pub fn waiting_for_quota(asks: u64, free: u64, now: &str) -> Value {
    condition(
        "QuotaReserved",
        "False",
        "Pending",
        &format!(
            "couldn't assign flavors to pod set node: insufficient unused quota for {GPU} in flavor {FLAVOR}, {} more needed",
            asks.saturating_sub(free)
        ),
        now,
    )
}

/// Counts of one queue's Workloads.
#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    pending: u64,
    reserving: u64,
    admitted: u64,
    reserved_gpus: u64,
    used_gpus: u64,
}

impl Counts {
    fn add(&mut self, wl: &Value) {
        match standing(wl) {
            Standing::Pending => self.pending += 1,
            Standing::Reserving => {
                self.reserving += 1;
                self.reserved_gpus += workload_asks(wl);
            }
            Standing::Admitted => {
                self.reserving += 1;
                self.admitted += 1;
                self.reserved_gpus += workload_asks(wl);
                self.used_gpus += workload_asks(wl);
            }
            Standing::Out => {}
        }
    }

    fn flavors(gpus: u64, borrowed: Option<u64>) -> Value {
        let mut resource = json!({"name": GPU, "total": gpus.to_string()});
        if let (Some(b), Some(r)) = (borrowed, resource.as_object_mut()) {
            r.insert("borrowed".into(), json!(b.to_string()));
        }
        json!([{"name": FLAVOR, "resources": [resource]}])
    }
}

/// Writes the status of the ClusterQueue and of every LocalQueue from the
/// Workloads, as Kueue's controller does; a queue whose status did not
/// change is not written, so watchers see no empty events.
pub fn sync(emu: &Emulator, namespaces: &[String], nominal: u64, now: &str) {
    let workloads = emu.list_shared(Kind::Workload, None);
    let in_queue =
        |wl: &&std::sync::Arc<Value>| wl.pointer("/spec/queueName") == Some(&json!(LOCAL_QUEUE));
    let mut all = Counts::default();
    for wl in workloads.iter().filter(in_queue) {
        all.add(wl);
    }
    let borrowed = all.reserved_gpus.saturating_sub(nominal);
    let ready = || {
        json!([condition(
            "Active",
            "True",
            "Ready",
            "Can admit new workloads",
            now
        )])
    };
    write_status(
        emu,
        Kind::ClusterQueue,
        "",
        LENDING_QUEUE,
        json!({
            "pendingWorkloads": 0, "reservingWorkloads": 0, "admittedWorkloads": 0,
            "flavorsReservation": Counts::flavors(0, Some(0)),
            "flavorsUsage": Counts::flavors(0, Some(0)),
            "conditions": ready(),
        }),
    );
    write_status(
        emu,
        Kind::ClusterQueue,
        "",
        CLUSTER_QUEUE,
        json!({
            "pendingWorkloads": all.pending,
            "reservingWorkloads": all.reserving,
            "admittedWorkloads": all.admitted,
            "flavorsReservation": Counts::flavors(all.reserved_gpus, Some(borrowed)),
            "flavorsUsage": Counts::flavors(all.used_gpus, Some(all.used_gpus.saturating_sub(nominal))),
            "conditions": ready(),
        }),
    );
    for ns in namespaces {
        let mut counts = Counts::default();
        for wl in workloads
            .iter()
            .filter(in_queue)
            .filter(|wl| wl.pointer("/metadata/namespace") == Some(&json!(ns)))
        {
            counts.add(wl);
        }
        write_status(
            emu,
            Kind::LocalQueue,
            ns,
            LOCAL_QUEUE,
            json!({
                "pendingWorkloads": counts.pending,
                "reservingWorkloads": counts.reserving,
                "admittedWorkloads": counts.admitted,
                "flavorsReservation": Counts::flavors(counts.reserved_gpus, None),
                "flavorsUsage": Counts::flavors(counts.used_gpus, None),
                "conditions": [condition("Active", "True", "Ready",
                    "Can submit new workloads to localQueue", now)],
            }),
        );
    }
}

/// Replaces the status of a queue when it differs, ignoring the conditions'
/// times (a condition keeps its transition time while it holds).
fn write_status(emu: &Emulator, kind: Kind, namespace: &str, name: &str, mut status: Value) {
    let Some(mut queue) = emu.get(kind, namespace, name) else {
        return;
    };
    let old_conditions = queue.pointer("/status/conditions").cloned();
    let same_conditions = |old: &Option<Value>, new: &Value| {
        let strip = |v: &Value| {
            v.as_array().map(|cs| {
                cs.iter()
                    .map(|c| (c["type"].clone(), c["status"].clone(), c["message"].clone()))
                    .collect::<Vec<_>>()
            })
        };
        old.as_ref().and_then(strip) == strip(new)
    };
    if let (Some(old), Some(s)) = (&old_conditions, status.as_object_mut()) {
        if s.get("conditions")
            .is_some_and(|new| same_conditions(&old_conditions, new))
        {
            s.insert("conditions".into(), old.clone());
        }
    }
    if queue.get("status") == Some(&status) {
        return;
    }
    if let Some(q) = queue.as_object_mut() {
        q.insert("status".into(), status);
    }
    let _ = emu.update(queue);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EmulatorConfig;

    fn workload(ns: &str, name: &str, pods: usize, conditions: Value) -> Value {
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": ns},
            "spec": {"queueName": LOCAL_QUEUE, "active": true, "podSets": [pod_set(pods)]},
            "status": {"conditions": conditions}})
    }

    #[test]
    fn status_counts_and_reservation_follow_the_workloads() {
        let emu = Emulator::new(EmulatorConfig::default());
        let namespaces = vec!["team-a".to_string(), "team-b".to_string()];
        for cq in cluster_queues(8, 2) {
            emu.create(cq).unwrap();
        }
        for ns in &namespaces {
            emu.create(local_queue(ns)).unwrap();
        }
        let t = "2026-12-01T09:00:00Z";
        let admitted = json!([
            condition("QuotaReserved", "True", "QuotaReserved", "", t),
            condition("Admitted", "True", "Admitted", "", t)
        ]);
        emu.create(workload("team-a", "a", 4, admitted.clone()))
            .unwrap();
        emu.create(workload("team-b", "b", 5, admitted)).unwrap();
        emu.create(workload(
            "team-a",
            "c",
            2,
            json!([waiting_for_quota(16, 0, t)]),
        ))
        .unwrap();
        assert_eq!(reserved(&emu), 72);
        sync(&emu, &namespaces, 64, t);
        let cq = emu.get(Kind::ClusterQueue, "", CLUSTER_QUEUE).unwrap();
        assert_eq!(cq["status"]["pendingWorkloads"], 1);
        assert_eq!(cq["status"]["admittedWorkloads"], 2);
        let reservation = &cq["status"]["flavorsReservation"][0]["resources"][0];
        assert_eq!(reservation["total"], "72");
        assert_eq!(reservation["borrowed"], "8");
        let a = emu.get(Kind::LocalQueue, "team-a", LOCAL_QUEUE).unwrap();
        assert_eq!(a["status"]["pendingWorkloads"], 1);
        assert_eq!(a["status"]["reservingWorkloads"], 1);
        assert_eq!(
            a["status"]["flavorsReservation"][0]["resources"][0]["total"],
            "32"
        );

        // Nothing changed: nothing is written.
        let rv = emu.resource_version();
        sync(&emu, &namespaces, 64, "2026-12-01T09:10:00Z");
        assert_eq!(emu.resource_version(), rv);
    }

    #[test]
    fn the_quota_leaves_room_for_half_the_jobs_and_one_borrowed() {
        assert_eq!(nominal_quota(12, 4), 6 * 32);
        assert_eq!(nominal_quota(1, 3), 24);
        assert_eq!(asks(3), 24);
        assert_eq!(capacity(12, 4), 7 * 32);
        let [cq, spare] = cluster_queues(12, 4);
        let quota = &cq["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0];
        assert_eq!(quota["nominalQuota"], "192");
        assert_eq!(quota["borrowingLimit"], "32");
        assert_eq!(
            spare["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"],
            "32"
        );
        assert_eq!(spare["spec"]["cohortName"], COHORT);
    }
}
