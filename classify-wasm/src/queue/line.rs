//! A pending Workload's place in line, from Kueue's visibility API
//! (`visibility.kueue.x-k8s.io`): a LocalQueue's `pendingworkloads` is a
//! `PendingWorkloadsSummary` whose items carry `positionInLocalQueue` and
//! `positionInClusterQueue`, counted from 0, and `priority`.
//!
//! The list is read here ([`PendingList::read`]) and a Workload's place in
//! it written out ([`place`]), so that whoever fetches the list (the
//! server, on demand) shows the same words. A position is never guessed:
//! when the list could not be had, [`unavailable`] says why.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::{QueueFacts, Wait};

/// One item of a `PendingWorkloadsSummary`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingItem {
    pub name: String,
    pub position_in_local_queue: u64,
    pub position_in_cluster_queue: u64,
    pub priority: i64,
}

/// A LocalQueue's pending Workloads as the visibility API listed them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PendingList {
    pub items: Vec<PendingItem>,
    /// The list holds as many items as were asked for: there may be more.
    pub cut: bool,
}

/// A summary that is not one, with where and what.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("PendingWorkloadsSummary: {what}")]
pub struct PendingListError {
    pub what: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireSummary {
    #[serde(default)]
    items: Vec<WireItem>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireItem {
    metadata: WireMetadata,
    position_in_local_queue: u64,
    position_in_cluster_queue: u64,
    #[serde(default)]
    priority: i64,
}

#[derive(Deserialize)]
struct WireMetadata {
    name: String,
}

impl PendingList {
    /// Reads a `PendingWorkloadsSummary` fetched with `limit`.
    pub fn read(body: &[u8], limit: usize) -> Result<PendingList, PendingListError> {
        let summary: WireSummary = serde_json::from_slice(body).map_err(|e| PendingListError {
            what: format!("line {} column {}: {e}", e.line(), e.column()),
        })?;
        let cut = summary.items.len() >= limit;
        Ok(PendingList {
            items: summary
                .items
                .into_iter()
                .map(|item| PendingItem {
                    name: item.metadata.name,
                    position_in_local_queue: item.position_in_local_queue,
                    position_in_cluster_queue: item.position_in_cluster_queue,
                    priority: item.priority,
                })
                .collect(),
            cut,
        })
    }

    /// Bytes held, for the caches that keep lists.
    pub fn bytes(&self) -> usize {
        std::mem::size_of::<Self>()
            + self
                .items
                .iter()
                .map(|i| std::mem::size_of::<PendingItem>() + i.name.len())
                .sum::<usize>()
    }
}

/// Why no position is shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Unavailable {
    /// The cluster does not serve the visibility API.
    NotServed,
    /// The cluster refused the server.
    Forbidden,
    /// The API answered with an error, or could not be reached or read.
    Failing,
    /// This user may not `get` `localqueues/pendingworkloads` here.
    Withheld,
}

/// A Workload's place in its LocalQueue's line, or why it is not known.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Position {
    /// From 1, as a person counts; absent when not listed or not known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_local_queue: Option<u64>,
    /// How many the LocalQueue's list holds.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub of: Option<u64>,
    /// The list was cut at its limit: `of` is a lower bound.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub more: bool,
    /// From 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub in_cluster_queue: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub unavailable: Option<Unavailable>,
    pub sentence: String,
}

/// Whether the facts describe a Workload that waits in line for quota, the
/// only kind the visibility API lists.
pub fn waits_in_line(facts: &QueueFacts) -> bool {
    match facts.wait {
        Wait::NeverFits
        | Wait::PreemptedWorkloads
        | Wait::Topology
        | Wait::NoMatchingFlavor
        | Wait::Misconfigured
        | Wait::Quota
        | Wait::CouldBorrow
        | Wait::Fits
        | Wait::ClusterQueueNotReadable
        | Wait::ClusterQueueNotFound
        | Wait::ClusterQueueStopped
        | Wait::LocalQueueStopped => true,
        Wait::LocalQueueNotFound
        | Wait::LocalQueueNotReadable
        | Wait::Unreadable
        | Wait::NoWorkload
        | Wait::Deactivated
        | Wait::AdmissionChecks
        | Wait::Admitted
        | Wait::Finished => false,
    }
}

/// `n` (from 1) as an English ordinal: 1st, 2nd, 3rd, 4th, 11th, 21st.
pub fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The place of `workload` (its name) in `list`, the line of the facts'
/// LocalQueue: "3rd of 17 in team-a/main, 12th in ClusterQueue gpu-cq".
pub fn place(list: &PendingList, facts: &QueueFacts, workload: &str) -> Position {
    let of = list.items.len() as u64;
    let count = if list.cut {
        format!("{of} or more")
    } else {
        of.to_string()
    };
    let Some(item) = list.items.iter().find(|i| i.name == workload) else {
        let sentence = if list.cut {
            format!(
                "not among the first {count} pending in {}",
                facts.local_queue
            )
        } else {
            format!("not among the {count} pending in {}", facts.local_queue)
        };
        return Position {
            in_local_queue: None,
            of: Some(of),
            more: list.cut,
            in_cluster_queue: None,
            priority: None,
            unavailable: None,
            sentence,
        };
    };
    let in_local_queue = item.position_in_local_queue.saturating_add(1);
    let in_cluster_queue = item.position_in_cluster_queue.saturating_add(1);
    let mut sentence = format!(
        "{} of {count} in {}",
        ordinal(in_local_queue),
        facts.local_queue
    );
    if let Some(cq) = &facts.cluster_queue {
        sentence.push_str(&format!(
            ", {} in ClusterQueue {cq}",
            ordinal(in_cluster_queue)
        ));
    }
    Position {
        in_local_queue: Some(in_local_queue),
        of: Some(of),
        more: list.cut,
        in_cluster_queue: Some(in_cluster_queue),
        priority: Some(item.priority),
        unavailable: None,
        sentence,
    }
}

/// No position, and why, for the facts' LocalQueue.
pub fn unavailable(why: Unavailable, facts: &QueueFacts) -> Position {
    let namespace = facts.local_queue.split('/').next().unwrap_or_default();
    Position {
        in_local_queue: None,
        of: None,
        more: false,
        in_cluster_queue: None,
        priority: None,
        unavailable: Some(why),
        sentence: unavailable_sentence(why, namespace),
    }
}

/// Why a LocalQueue of `namespace` has no places in line to show.
pub fn unavailable_sentence(why: Unavailable, namespace: &str) -> String {
    match why {
        Unavailable::NotServed => {
            "position not available: the cluster does not serve Kueue's visibility API".to_string()
        }
        Unavailable::Forbidden => {
            "position not available: the server may not read Kueue's visibility API".to_string()
        }
        Unavailable::Failing => {
            "position not available: Kueue's visibility API is failing".to_string()
        }
        Unavailable::Withheld => format!(
            "position withheld: you may not get localqueues/pendingworkloads in {namespace}"
        ),
    }
}

/// The name of a Workload, as the list names it.
pub fn workload_name(workload: &Value) -> Option<&str> {
    workload.pointer("/metadata/name").and_then(Value::as_str)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn facts(cluster_queue: Option<&str>) -> QueueFacts {
        QueueFacts {
            local_queue: "team-a/main".into(),
            cluster_queue: cluster_queue.map(String::from),
            wait: Wait::Quota,
            never_fits: false,
            asks: vec![],
            room: vec![],
            sentence: String::new(),
            preempted_by: None,
            requeued: None,
            position: None,
        }
    }

    fn summary(names: &[(&str, u64, u64)]) -> Vec<u8> {
        let items: Vec<Value> = names
            .iter()
            .map(|(name, lq, cq)| {
                json!({"metadata": {"name": name, "namespace": "team-a"},
                    "priority": 100, "localQueueName": "main",
                    "positionInLocalQueue": lq, "positionInClusterQueue": cq})
            })
            .collect();
        serde_json::to_vec(&json!({"kind": "PendingWorkloadsSummary",
            "apiVersion": "visibility.kueue.x-k8s.io/v1beta2", "metadata": {}, "items": items}))
        .expect("json")
    }

    #[test]
    fn ordinals_follow_english() {
        let got: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 23, 101, 111, 112]
            .into_iter()
            .map(ordinal)
            .collect();
        assert_eq!(
            got,
            [
                "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "23rd",
                "101st", "111th", "112th"
            ]
        );
    }

    #[test]
    fn positions_from_zero_are_shown_from_one() {
        let mut names: Vec<(String, u64, u64)> =
            (0..17).map(|i| (format!("wl-{i}"), i, i + 9)).collect();
        names[2].0 = "mine".into();
        let borrowed: Vec<(&str, u64, u64)> =
            names.iter().map(|(n, a, b)| (n.as_str(), *a, *b)).collect();
        let list = PendingList::read(&summary(&borrowed), 1000).expect("read");
        let position = place(&list, &facts(Some("gpu-cq")), "mine");
        assert_eq!(
            position.sentence,
            "3rd of 17 in team-a/main, 12th in ClusterQueue gpu-cq"
        );
        assert_eq!(
            (
                position.in_local_queue,
                position.of,
                position.in_cluster_queue
            ),
            (Some(3), Some(17), Some(12))
        );
        assert_eq!(position.priority, Some(100));
        // Without a readable LocalQueue's ClusterQueue name, no second half.
        let position = place(&list, &facts(None), "mine");
        assert_eq!(position.sentence, "3rd of 17 in team-a/main");
    }

    #[test]
    fn a_list_cut_at_its_limit_says_so_and_a_missing_workload_is_not_placed() {
        let list = PendingList::read(&summary(&[("a", 0, 0), ("b", 1, 1)]), 2).expect("read");
        assert!(list.cut);
        let position = place(&list, &facts(Some("gpu-cq")), "b");
        assert_eq!(
            position.sentence,
            "2nd of 2 or more in team-a/main, 2nd in ClusterQueue gpu-cq"
        );
        let position = place(&list, &facts(Some("gpu-cq")), "mine");
        assert_eq!(position.in_local_queue, None);
        assert_eq!(
            position.sentence,
            "not among the first 2 or more pending in team-a/main"
        );
        let list = PendingList::read(&summary(&[("a", 0, 0)]), 1000).expect("read");
        assert_eq!(
            place(&list, &facts(None), "mine").sentence,
            "not among the 1 pending in team-a/main"
        );
    }

    #[test]
    fn a_summary_that_is_not_one_is_a_located_error() {
        let err = PendingList::read(b"{\"items\": [\n{\"metadata\": {}}]}", 10).expect_err("bad");
        assert!(err.what.starts_with("line 2 column"), "{err}");
        assert!(err.what.contains("name"), "{err}");
        assert!(PendingList::read(b"[", 10).is_err());
    }

    #[test]
    fn each_reason_is_said_and_no_position_is_guessed() {
        for why in [
            Unavailable::NotServed,
            Unavailable::Forbidden,
            Unavailable::Failing,
            Unavailable::Withheld,
        ] {
            let position = unavailable(why, &facts(Some("gpu-cq")));
            assert_eq!(position.in_local_queue, None);
            assert_eq!(position.unavailable, Some(why));
            assert!(
                position.sentence.starts_with("position not available")
                    || position.sentence
                        == "position withheld: you may not get localqueues/pendingworkloads in team-a",
                "{}",
                position.sentence
            );
        }
    }
}
