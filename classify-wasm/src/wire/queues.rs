//! The `queues` frame: the queue facts (`crate::queue`) of a namespace's
//! TrainJobs as the stream's caller may see them, sent when they differ from
//! the last sent. docs/api.md ("event: queues") is where its format is
//! written; this is where it is kept.

use serde::{Deserialize, Serialize};

use crate::queue::JobQueueFacts;

/// One `queues` frame's data: every TrainJob of the namespace with queue
/// facts, in name order. It replaces the frame before it whole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuesFrame {
    pub jobs: Vec<JobQueueFacts>,
    /// The server held more than its bound: `jobs` is the first of them.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cut: bool,
    /// How many times, since the stream began, the Queues page's boards
    /// changed as the caller may see them (the namespace's LocalQueues and
    /// the ClusterQueues they name): the page asks for them again when this
    /// changes, even when no job's facts did. 0 while there is none.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub boards: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

impl QueuesFrame {
    /// The frame's data, as the server sends it.
    pub fn to_json(&self) -> String {
        // A struct of strings, numbers and flags always serializes.
        serde_json::to_string(self).unwrap_or_else(|_| r#"{"jobs":[]}"#.into())
    }

    /// Reads a frame [`QueuesFrame::to_json`] wrote.
    pub fn parse(text: &str) -> Result<QueuesFrame, serde_json::Error> {
        serde_json::from_str(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::queue::{facts_in_snapshot, Visibility};

    #[test]
    fn a_frame_reads_back_as_written() {
        let dump = r#"{"kind":"List","items":[
          {"apiVersion":"trainer.kubeflow.org/v1alpha1","kind":"TrainJob",
           "metadata":{"name":"llm-7","namespace":"team-a","uid":"t1",
             "labels":{"kueue.x-k8s.io/queue-name":"main"}}},
          {"apiVersion":"kueue.x-k8s.io/v1beta2","kind":"LocalQueue",
           "metadata":{"name":"main","namespace":"team-a"},"spec":{"clusterQueue":"gpu-cq"}}]}"#;
        let jobs = facts_in_snapshot(dump, &Visibility::default()).expect("facts");
        assert_eq!(jobs.len(), 1);
        for (cut, boards) in [(false, 0), (true, 3)] {
            let frame = QueuesFrame {
                jobs: jobs.clone(),
                cut,
                boards,
            };
            let text = frame.to_json();
            assert_eq!(text.contains("\"cut\""), cut);
            assert_eq!(text.contains("\"boards\":3"), boards == 3);
            assert_eq!(QueuesFrame::parse(&text).expect("read back"), frame);
        }
        assert!(QueuesFrame::parse(r#"{"jobs":[{"name":"x"}]}"#).is_err());
    }
}
