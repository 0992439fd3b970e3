//! Desktop notifications for the namespace on screen: which rows became
//! news (the engine's `Observation::is_news`, the rule the server's
//! webhooks follow too) since the page last looked. Plain state; the page
//! shows what it returns with the Notification API.

use std::collections::BTreeMap;

use classify_wasm::{CauseKind, State};

use crate::query::ViewState;
use crate::store::{Applied, ItemKey, Store};

/// One desktop notification.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// The same job's later word replaces its earlier one (a failure seen
    /// in steps: `unknown`, then `out-of-memory`), rather than stacking.
    pub tag: String,
    /// `team-a/llm-7b ended: out-of-memory (attempt 3)`.
    pub title: String,
    /// The cause's detail.
    pub body: String,
    /// The explanation's URL.
    pub url: String,
}

/// Where each TrainJob row stood when last looked at.
#[derive(Debug, Clone, Default)]
pub struct Notices {
    seen: BTreeMap<ItemKey, (State, CauseKind)>,
}

/// The local-storage key of the choice for `namespace`.
pub fn preference_key(namespace: &str) -> String {
    format!("dd:notify:{namespace}")
}

impl Notices {
    /// Takes a loaded snapshot's rows as where things stand: no news.
    pub fn baseline(&mut self, store: &Store) {
        self.seen = store
            .rows()
            .filter(|r| r.key.kind == "TrainJob")
            .map(|r| {
                (
                    r.key.clone(),
                    (r.observation.state, r.observation.cause.kind),
                )
            })
            .collect();
    }

    /// After a change was applied: the TrainJob rows that entered news.
    pub fn after(&mut self, store: &Store, applied: &Applied) -> Vec<Notice> {
        for key in &applied.removed {
            self.seen.remove(key);
        }
        let mut notices = Vec::new();
        for key in applied.changed.iter().filter(|k| k.kind == "TrainJob") {
            let Some(row) = store.row(key) else {
                self.seen.remove(key);
                continue;
            };
            let o = &row.observation;
            let now = (o.state, o.cause.kind);
            let before = self.seen.insert(key.clone(), now);
            if before == Some(now) || !o.is_news() {
                continue;
            }
            let view = ViewState {
                namespace: Some(key.namespace.clone()),
                ..ViewState::default()
            }
            .explaining(&key.kind, &key.name);
            notices.push(Notice {
                tag: format!("dd:{}/{}", key.namespace, key.name),
                title: o.headline(),
                body: o.cause.detail.clone(),
                url: view.to_url(),
            });
        }
        notices
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use classify_wasm::Options;

    /// One TrainJob whose status has `conditions`, as a snapshot text.
    fn snapshot(conditions: serde_json::Value) -> String {
        serde_json::json!({
            "kind": "Snapshot",
            "mode": "plain",
            "nodesReadable": false,
            "items": [{
                "apiVersion": "trainer.kubeflow.org/v1alpha1",
                "kind": "TrainJob",
                "metadata": {"name": "llm-s1", "namespace": "team-a", "uid": "u1",
                    "creationTimestamp": "2026-11-29T09:00:00Z"},
                "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 2}},
                "status": {"conditions": conditions},
            }],
            "captured": [],
        })
        .to_string()
    }

    fn change(conditions: serde_json::Value) -> String {
        let items: serde_json::Value = serde_json::from_str(&snapshot(conditions)).expect("json");
        serde_json::json!({"upserts": items["items"], "deletes": [], "captured": [], "capturedDropped": []})
            .to_string()
    }

    fn failed() -> serde_json::Value {
        serde_json::json!([{"type": "Failed", "status": "True", "reason": "FailedJobs",
            "message": "jobs failed", "lastTransitionTime": "2026-12-01T09:00:00Z"}])
    }

    #[test]
    fn a_job_that_fails_after_the_snapshot_is_one_notice_linking_its_explanation() {
        let mut store =
            Store::load(&snapshot(serde_json::json!([])), Options::default()).expect("loads");
        let mut notices = Notices::default();
        notices.baseline(&store);
        let applied = store.apply_change(&change(failed()), 1.0).expect("applies");
        let got = notices.after(&store, &applied);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(got[0].title.starts_with("team-a/llm-s1 ended: "), "{got:?}");
        assert_eq!(got[0].tag, "dd:team-a/llm-s1");
        assert_eq!(got[0].url, "/explain?ns=team-a&kind=TrainJob&name=llm-s1");
        // The same state and cause again is no news.
        let applied = store.apply_change(&change(failed()), 2.0).expect("applies");
        assert!(notices.after(&store, &applied).is_empty());
    }

    #[test]
    fn what_the_snapshot_shows_and_jobs_that_complete_are_no_news() {
        let mut store = Store::load(&snapshot(failed()), Options::default()).expect("loads");
        let mut notices = Notices::default();
        notices.baseline(&store);
        let applied = store.apply_change(&change(failed()), 1.0).expect("applies");
        assert!(
            notices.after(&store, &applied).is_empty(),
            "failed before the page looked"
        );
        let complete = serde_json::json!([{"type": "Complete", "status": "True",
            "reason": "AllJobsCompleted", "message": "done", "lastTransitionTime": "2026-12-01T09:00:00Z"}]);
        let mut store =
            Store::load(&snapshot(serde_json::json!([])), Options::default()).expect("loads");
        notices.baseline(&store);
        let applied = store.apply_change(&change(complete), 1.0).expect("applies");
        assert!(
            notices.after(&store, &applied).is_empty(),
            "completed is no news"
        );
    }

    #[test]
    fn the_choice_is_kept_per_namespace() {
        assert_eq!(preference_key("team-a"), "dd:notify:team-a");
        assert_ne!(preference_key("team-a"), preference_key("team-b"));
    }
}
