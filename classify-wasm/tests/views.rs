//! The engine's views over a source that keeps its own texts
//! ([`ViewSource`]): what is classified apart, what a namespace leaves out
//! and the order a sub-snapshot is written in. `tests/linking.rs` checks
//! the views against whole snapshots on random worlds.

use classify_wasm::live::{Entry, EntryText, ViewSnapshots, ViewSource};
use classify_wasm::{Linker, Mode, Observation, Options};
use serde_json::{json, Value};

/// Objects by name, each with its text, place and whether it is apart.
struct Source {
    linker: Linker<String>,
    entries: Vec<(String, String, Option<String>, u64, bool)>,
}

impl Source {
    fn new() -> Self {
        Source {
            linker: Linker::new(),
            entries: Vec::new(),
        }
    }

    fn add(&mut self, key: &str, object: Value, place: u64, apart: bool) {
        self.linker.upsert(key.to_string(), &object);
        let namespace = object["metadata"]["namespace"].as_str().map(str::to_string);
        self.entries
            .push((key.to_string(), object.to_string(), namespace, place, apart));
    }
}

impl ViewSource for Source {
    type Key = String;
    type Place = u64;

    fn linker(&self) -> &Linker<String> {
        &self.linker
    }

    fn options(&self) -> Options {
        Options {
            mode: Some(Mode::Plain),
            nodes_readable: Some(false),
        }
    }

    fn entry(&self, key: &String) -> Option<Entry<'_, u64>> {
        let (_, text, namespace, place, apart) = self.entries.iter().find(|e| e.0 == *key)?;
        Some(Entry {
            text: EntryText::Item(text),
            place: *place,
            namespace: namespace.as_deref(),
            apart: *apart,
        })
    }
}

fn trainjob(namespace: &str, name: &str, uid: &str) -> Value {
    json!({
        "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
        "metadata": {"name": name, "namespace": namespace, "uid": uid,
                     "creationTimestamp": "2026-11-29T09:00:00Z"},
        "spec": {"runtimeRef": {"name": "torch-distributed"}, "trainer": {"numNodes": 1}},
        "status": {"conditions": []}
    })
}

fn pod(name: &str, jobset: &str) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "team-a", "uid": format!("uid-{name}"),
                     "labels": {"jobset.sigs.k8s.io/jobset-name": jobset,
                                "dispatch.phpboyscout.uk/job-id": jobset}},
        "spec": {}, "status": {"phase": "Running"}
    })
}

fn jobset_owned_by(name: &str, owner_uid: &str) -> Value {
    json!({
        "apiVersion": "jobset.x-k8s.io/v1alpha2", "kind": "JobSet",
        "metadata": {"name": name, "namespace": "team-a", "uid": format!("uid-{name}"),
                     "ownerReferences": [{"apiVersion": "trainer.kubeflow.org/v1alpha1",
                                          "kind": "TrainJob", "name": "other",
                                          "uid": owner_uid, "controller": true}]},
        "spec": {}, "status": {"conditions": []}
    })
}

fn kinds_observed(observations: &[Observation]) -> Vec<(String, String)> {
    observations
        .iter()
        .map(|o| (o.object.kind.clone(), o.object.name.clone()))
        .collect()
}

#[test]
fn an_object_classified_apart_is_an_orphan_beside_a_trainjob_of_its_name() {
    for apart in [false, true] {
        let mut source = Source::new();
        source.add("tj", trainjob("team-a", "llm", "tj-new"), 0, false);
        source.add("pod", pod("llm-node-0-0-x", "llm"), 1, apart);
        let views = ViewSnapshots::of(&source, &["tj".to_string(), "pod".to_string()], None);
        assert_eq!(views.apart.is_some(), apart);
        let observed = views.observations(|_| true).expect("classifies");
        let pods: Vec<&Observation> = observed.iter().filter(|o| o.object.kind == "Pod").collect();
        if apart {
            // Classified alone, with no TrainJob: section 11's orphan.
            assert_eq!(pods.len(), 1, "{observed:#?}");
            assert!(pods[0].foreign, "{observed:#?}");
            assert_eq!(
                pods[0].cause.detail,
                "Pod llm-node-0-0-x has no live TrainJob"
            );
        } else {
            // Read for the TrainJob of its JobSet's name: no observation.
            assert!(pods.is_empty(), "{observed:#?}");
        }
        let trainjob = observed.iter().find(|o| o.object.kind == "TrainJob");
        assert_eq!(trainjob.map(|o| o.object.uid.as_str()), Some("tj-new"));
    }
}

#[test]
fn a_namespace_leaves_the_objects_of_others_out_of_a_view() {
    let mut source = Source::new();
    source.add("tj", trainjob("team-b", "other", "tj-b"), 0, false);
    source.add("jobset", jobset_owned_by("llm", "tj-b"), 1, false);
    let targets = ["jobset".to_string()];
    let orphans = |namespace| {
        let views = ViewSnapshots::of(&source, &targets, namespace);
        let observed = views.observations(|o| o.object.namespace == "team-a");
        kinds_observed(&observed.expect("classifies"))
    };
    // Whole, the JobSet's owner is in the snapshot: not an orphan.
    assert_eq!(orphans(None), vec![]);
    // As team-a's snapshot reads it, its owner is not.
    assert_eq!(
        orphans(Some("team-a")),
        vec![("JobSet".to_string(), "llm".to_string())]
    );
}

#[test]
fn a_view_is_written_in_its_places_order() {
    let mut source = Source::new();
    source.add("a-trainjob", trainjob("team-a", "llm", "tj-1"), 3, false);
    source.add("b-pod", pod("llm-node-0-0-b", "llm"), 2, false);
    source.add("c-pod", pod("llm-node-0-0-c", "llm"), 1, false);
    let views = ViewSnapshots::of(&source, &["a-trainjob".to_string()], None);
    let at = |needle: &str| views.current.find(needle).unwrap_or(usize::MAX);
    let (trainjob, b, c) = (
        at("\"tj-1\""),
        at("llm-node-0-0-b\""),
        at("llm-node-0-0-c\""),
    );
    assert!(c < b && b < trainjob, "{}", views.current);
    assert_eq!(views.apart, None);
}
