//! What the Queues page shows of a LocalQueue and a ClusterQueue: the
//! counts, and for a ClusterQueue one bar per flavor and resource of what
//! is reserved and used against the nominal quota, with what is borrowed
//! from the cohort drawn apart.
//!
//! The amounts are exact ([`Quantity`]); the bars' lengths are per mille of
//! one scale per bar (the largest of nominal plus borrowing limit, reserved
//! and used), in integers, so the page draws what the engine says.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::read::{amount, at, integer, list, quantity, text, ClusterQueue, LocalQueue};
use super::QueueReadError;
use crate::quantity::Quantity;

/// One flavor and resource of a ClusterQueue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Bar {
    pub flavor: String,
    pub resource: String,
    pub nominal: String,
    pub reserved: String,
    pub used: String,
    /// Of the reserved, what is borrowed from the cohort.
    pub borrowed: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub borrowing_limit: Option<String>,
    /// Lengths, per mille of the bar's scale.
    pub nominal_permille: u32,
    pub reserved_permille: u32,
    pub used_permille: u32,
    pub borrowed_permille: u32,
    /// The bar in words, for its hover and for a reader without bars.
    pub sentence: String,
}

/// Workload counts a queue's status gives; absent before Kueue writes one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Counts {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reserving: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub admitted: Option<i64>,
}

impl Counts {
    fn read(v: &Value) -> Counts {
        let count = |field: &str| at(v, &["status", field]).and_then(integer);
        Counts {
            pending: count("pendingWorkloads"),
            reserving: count("reservingWorkloads"),
            admitted: count("admittedWorkloads"),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ClusterQueueBoard {
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cohort: Option<String>,
    /// Why it admits nothing, when it is stopped or inactive.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    pub counts: Counts,
    pub bars: Vec<Bar>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueBoard {
    pub namespace: String,
    pub name: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cluster_queue: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<String>,
    pub counts: Counts,
}

/// The Queues page of a namespace as one caller may see it (the server's
/// `GET …/queues`, docs/api.md): its
/// LocalQueues with their pending lists in order, the ClusterQueues they
/// name that the caller may `get`, and what was withheld, in words.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueuesPage {
    pub local_queues: Vec<LocalQueueEntry>,
    pub cluster_queues: Vec<ClusterQueueBoard>,
    pub withheld: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LocalQueueEntry {
    #[serde(flatten)]
    pub board: LocalQueueBoard,
    /// Its pending Workloads in Kueue's order, from the visibility API.
    #[serde(default)]
    pub pending: Vec<PendingEntry>,
    /// The list was cut at the server's bound.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pending_cut: bool,
    /// Why there is no pending list, when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pending_unavailable: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingEntry {
    pub workload: String,
    /// Its TrainJob, when the server holds it (the page opens its
    /// explanation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub train_job: Option<String>,
    /// From 1.
    pub in_local_queue: u64,
    pub in_cluster_queue: u64,
    pub priority: i64,
}

impl QueuesPage {
    /// Reads what the server's `GET …/queues` answered.
    pub fn parse(text: &str) -> Result<QueuesPage, serde_json::Error> {
        serde_json::from_str(text)
    }
}

/// The LocalQueue `namespace/name` as the page shows it.
pub fn local_queue_board(namespace: &str, name: &str, v: &Value) -> LocalQueueBoard {
    let local = LocalQueue::read(v);
    LocalQueueBoard {
        namespace: namespace.to_string(),
        name: name.to_string(),
        cluster_queue: local.cluster_queue.map(str::to_string),
        stopped: match (local.stop_policy, &local.inactive) {
            (Some(policy), _) => Some(format!("stopped (stopPolicy {policy})")),
            (None, Some(words)) => Some(format!("inactive: {words}")),
            (None, None) => None,
        },
        counts: Counts::read(v),
    }
}

/// Per flavor and resource, a `status` list's `field` (`total` or
/// `borrowed`), under `source` (`flavorsReservation` or `flavorsUsage`).
fn amounts(
    v: &Value,
    object: &str,
    source: &str,
    field: &str,
) -> Result<Vec<(String, String, Quantity)>, QueueReadError> {
    let mut out = Vec::new();
    for (fi, f) in list(v, &["status", source]).iter().enumerate() {
        let flavor = text(f, &["name"]).unwrap_or("");
        for (ri, r) in list(f, &["resources"]).iter().enumerate() {
            if let Some(q) = at(r, &[field]) {
                let path = format!("status.{source}[{fi}].resources[{ri}].{field}");
                let resource = text(r, &["name"]).unwrap_or("");
                out.push((
                    flavor.to_string(),
                    resource.to_string(),
                    quantity(q, object, &path)?,
                ));
            }
        }
    }
    Ok(out)
}

fn find(list: &[(String, String, Quantity)], flavor: &str, resource: &str) -> Quantity {
    list.iter()
        .find(|(f, r, _)| f == flavor && r == resource)
        .map_or(Quantity::ZERO, |(_, _, q)| *q)
}

/// `part` per mille of `whole`, within 0..=1000 (0 for an empty whole).
fn permille(part: Quantity, whole: Quantity) -> u32 {
    let (part, whole) = (part.milli().max(0), whole.milli());
    if whole <= 0 {
        return 0;
    }
    let share = part.saturating_mul(1000) / whole;
    u32::try_from(share.min(1000)).unwrap_or(1000)
}

/// The ClusterQueue `name` as the page shows it; a quantity that cannot be
/// read is a located error, as in the queue facts.
pub fn cluster_queue_board(name: &str, v: &Value) -> Result<ClusterQueueBoard, QueueReadError> {
    let cq = ClusterQueue::read(name, v)?;
    let object = format!("ClusterQueue {name}");
    // Kueue before v0.5 wrote only the usage; it is the reservation when
    // admission checks are not in use (as the facts read it).
    let reservation_source = if at(v, &["status", "flavorsReservation"]).is_some() {
        "flavorsReservation"
    } else {
        "flavorsUsage"
    };
    let reserved = amounts(v, &object, reservation_source, "total")?;
    let borrowed = amounts(v, &object, reservation_source, "borrowed")?;
    let used = amounts(v, &object, "flavorsUsage", "total")?;
    let bars = cq
        .quotas()
        .into_iter()
        .map(|(flavor, resource, nominal, limit)| {
            let reserved = find(&reserved, flavor, resource);
            let used = find(&used, flavor, resource);
            let borrowed = find(&borrowed, flavor, resource);
            let reach = nominal
                .checked_add(limit.unwrap_or(Quantity::ZERO))
                .unwrap_or(nominal);
            let scale = reach.max(reserved).max(used);
            let of = |q| amount(resource, q);
            let mut sentence = format!(
                "{flavor} {resource}: {} of {} reserved, {} used",
                of(reserved),
                of(nominal),
                of(used)
            );
            if borrowed > Quantity::ZERO {
                sentence.push_str(&format!(", {} borrowed", of(borrowed)));
            }
            if let Some(limit) = limit {
                sentence.push_str(&format!(", borrowing limit {}", of(limit)));
            }
            Bar {
                flavor: flavor.to_string(),
                resource: resource.to_string(),
                nominal: of(nominal),
                reserved: of(reserved),
                used: of(used),
                borrowed: of(borrowed),
                borrowing_limit: limit.map(of),
                nominal_permille: permille(nominal, scale),
                reserved_permille: permille(reserved, scale),
                used_permille: permille(used, scale),
                borrowed_permille: permille(borrowed, scale),
                sentence,
            }
        })
        .collect();
    Ok(ClusterQueueBoard {
        name: name.to_string(),
        cohort: cq.cohort().map(str::to_string),
        stopped: cq.stopped(),
        counts: Counts::read(v),
        bars,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_cluster_queue_gives_a_bar_per_flavor_and_resource_in_its_order() {
        let cq = json!({"metadata": {"name": "gpu-cq"},
            "spec": {"cohortName": "research", "resourceGroups": [
                {"coveredResources": ["nvidia.com/gpu"], "flavors": [
                    {"name": "a100", "resources": [{"name": "nvidia.com/gpu",
                        "nominalQuota": "64", "borrowingLimit": "16"}]},
                    {"name": "h100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": 8}]}]},
                {"coveredResources": ["memory"], "flavors": [
                    {"name": "default", "resources": [{"name": "memory", "nominalQuota": "1Ti"}]}]}]},
            "status": {"pendingWorkloads": 3, "admittedWorkloads": 7,
                "flavorsReservation": [{"name": "a100", "resources": [
                    {"name": "nvidia.com/gpu", "total": "72", "borrowed": "8"}]}],
                "flavorsUsage": [{"name": "a100", "resources": [
                    {"name": "nvidia.com/gpu", "total": "40"}]},
                    {"name": "default", "resources": [{"name": "memory", "total": "512Gi"}]}]}});
        let board = cluster_queue_board("gpu-cq", &cq).expect("a board");
        assert_eq!(board.cohort.as_deref(), Some("research"));
        assert_eq!(board.counts.pending, Some(3));
        assert_eq!(board.counts.reserving, None);
        let order: Vec<(&str, &str)> = board
            .bars
            .iter()
            .map(|b| (b.flavor.as_str(), b.resource.as_str()))
            .collect();
        assert_eq!(
            order,
            [
                ("a100", "nvidia.com/gpu"),
                ("h100", "nvidia.com/gpu"),
                ("default", "memory")
            ]
        );
        let a100 = &board.bars[0];
        assert_eq!(
            a100.sentence,
            "a100 nvidia.com/gpu: 72 of 64 reserved, 40 used, 8 borrowed, borrowing limit 16"
        );
        // Scale 80 (64 + 16): nominal 800‰, reserved 900‰, used 500‰.
        assert_eq!(
            (
                a100.nominal_permille,
                a100.reserved_permille,
                a100.used_permille,
                a100.borrowed_permille
            ),
            (800, 900, 500, 100)
        );
        let h100 = &board.bars[1];
        assert_eq!((h100.reserved.as_str(), h100.nominal_permille), ("0", 1000));
        let memory = &board.bars[2];
        assert_eq!(
            memory.sentence,
            "default memory: 0 of 1Ti reserved, 512Gi used"
        );
        assert_eq!(memory.used_permille, 500);
    }

    #[test]
    fn a_page_reads_back_as_written() {
        let cq = json!({"spec": {"resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": "default", "resources": [{"name": "cpu", "nominalQuota": "8"}]}]}]}});
        let page = QueuesPage {
            local_queues: vec![LocalQueueEntry {
                board: local_queue_board(
                    "team-a",
                    "main",
                    &json!({"spec": {"clusterQueue": "cq"}}),
                ),
                pending: vec![PendingEntry {
                    workload: "w".into(),
                    train_job: Some("llm-7".into()),
                    in_local_queue: 1,
                    in_cluster_queue: 3,
                    priority: 100,
                }],
                pending_cut: true,
                pending_unavailable: None,
            }],
            cluster_queues: vec![cluster_queue_board("cq", &cq).expect("a board")],
            withheld: vec!["ClusterQueue other not found".into()],
        };
        let text = serde_json::to_string(&page).expect("serializes");
        assert_eq!(QueuesPage::parse(&text).expect("reads back"), page);
        assert!(QueuesPage::parse(r#"{"localQueues":[{"name":1}]}"#).is_err());
    }

    #[test]
    fn a_bad_quantity_is_located_and_a_stopped_queue_says_so() {
        let bad = json!({"spec": {"resourceGroups": []},
            "status": {"flavorsUsage": [{"name": "a100", "resources": [
                {"name": "nvidia.com/gpu", "total": "lots"}]}]}});
        let e = cluster_queue_board("gpu-cq", &bad).expect_err("not a quantity");
        assert_eq!(e.field, "status.flavorsUsage[0].resources[0].total");
        let stopped = json!({"spec": {"stopPolicy": "Hold"}});
        let board = cluster_queue_board("gpu-cq", &stopped).expect("a board");
        assert_eq!(
            board.stopped.as_deref(),
            Some("ClusterQueue gpu-cq is stopped (stopPolicy Hold)")
        );
        let local = local_queue_board(
            "team-a",
            "main",
            &json!({"spec": {"clusterQueue": "gpu-cq", "stopPolicy": "HoldAndDrain"},
                "status": {"pendingWorkloads": 2, "reservingWorkloads": 1}}),
        );
        assert_eq!(
            local.stopped.as_deref(),
            Some("stopped (stopPolicy HoldAndDrain)")
        );
        assert_eq!(
            (
                local.counts.pending,
                local.counts.reserving,
                local.counts.admitted
            ),
            (Some(2), Some(1), None)
        );
        assert_eq!(local.cluster_queue.as_deref(), Some("gpu-cq"));
    }
}
