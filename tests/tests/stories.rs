//! The emulator's scenario driver and the engine, end to end: every story a
//! TrainJob can live through is driven step by step in both modes, and after
//! every step the namespace is classified as `dispatch-dash` would see it,
//! deleted pods' last states captured as a Watch captures them. Each story
//! must show the verdict it is about; if the scenario stops telling its story
//! realistically, or the engine stops reading it, this fails.

use std::collections::{BTreeMap, BTreeSet};

use classify_wasm::{CauseKind, Observation, Options, Provenance, State};
use emulator::scenario::{self, ScenarioConfig, Story};
use emulator::{Emulator, EmulatorConfig, Kind};
use serde_json::{json, Value};

const KINDS: [Kind; 6] = [
    Kind::TrainJob,
    Kind::JobSet,
    Kind::Workload,
    Kind::TrainingRuntime,
    Kind::Pod,
    Kind::Node,
];

/// A verdict as the test compares it: state, cause kind, provenance.
type Verdict = (State, CauseKind, Option<&'static str>);

/// What the stories showed over the run: per story, every (state, cause,
/// provenance) seen, and whether an orphan or a new execution appeared.
#[derive(Default)]
struct Seen {
    verdicts: BTreeMap<String, BTreeSet<Verdict>>,
    orphans: BTreeSet<String>,
    restarted: BTreeSet<String>,
}

fn label<'v>(pod: &'v Value, key: &str) -> Option<&'v str> {
    pod["metadata"]["labels"][key].as_str()
}

fn run(kueue: bool, steps: usize) -> Seen {
    let emu = Emulator::new(EmulatorConfig {
        kueue,
        ..EmulatorConfig::default()
    });
    let config = ScenarioConfig {
        seed: 2026,
        jobs: 11,
        pods_per_job: 3,
        kueue,
        namespaces: vec!["team-a".into()],
        ..ScenarioConfig::default()
    };
    let mut sc = scenario::populate(&emu, config);
    let mut seen = Seen::default();
    let mut story_of: BTreeMap<String, Story> = BTreeMap::new();
    // Captured pods by pod UID, as a Watch keeps them: against the TrainJob read for them.
    let mut captured: BTreeMap<String, Value> = BTreeMap::new();
    let mut live_pods: BTreeMap<String, Value> = BTreeMap::new();
    for _ in 0..steps {
        for (name, story) in sc.stories() {
            story_of.insert(
                name.rsplit('/').next().unwrap_or_default().to_string(),
                story,
            );
        }
        let items: Vec<Value> = KINDS
            .iter()
            .filter(|k| kueue || **k != Kind::Workload)
            .flat_map(|k| emu.list(*k, None))
            .collect();
        let trainjob_uids: BTreeMap<String, String> = items
            .iter()
            .filter(|i| i["kind"] == "TrainJob")
            .map(|t| {
                (
                    t["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    t["metadata"]["uid"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                )
            })
            .collect();
        let now: BTreeMap<String, Value> = items
            .iter()
            .filter(|i| i["kind"] == "Pod")
            .map(|p| {
                (
                    p["metadata"]["uid"]
                        .as_str()
                        .unwrap_or_default()
                        .to_string(),
                    p.clone(),
                )
            })
            .collect();
        for (uid, pod) in &live_pods {
            if !now.contains_key(uid) {
                let owner = label(pod, "jobset.sigs.k8s.io/jobset-name")
                    .and_then(|js| trainjob_uids.get(js));
                if let Some(tj) = owner {
                    captured.insert(uid.clone(), json!({"trainJobUID": tj, "pod": pod}));
                }
            }
        }
        live_pods = now;
        let snapshot = json!({
            "kind": "Snapshot", "mode": if kueue { "kueue" } else { "plain" }, "nodesReadable": true,
            "items": items, "captured": captured.values().collect::<Vec<_>>(),
        });
        let observations: Vec<Observation> =
            classify_wasm::classify(&snapshot.to_string(), Options::default())
                .expect("the emulator's objects classify");
        for o in observations {
            if o.object.kind != "TrainJob" {
                seen.orphans.insert(format!("{}-{}", o.job, o.submission));
                continue;
            }
            let Some(story) = story_of.get(&o.object.name) else {
                continue;
            };
            if o.execution.is_some_and(|e| e.restart_attempt > 0) {
                seen.restarted.insert(format!("{story:?}"));
            }
            seen.verdicts
                .entry(format!("{story:?}"))
                .or_default()
                .insert((
                    o.state,
                    o.cause.kind,
                    o.cause.provenance.map(Provenance::as_str),
                ));
        }
        sc.step(&emu);
    }
    seen
}

fn saw(seen: &Seen, story: &str, state: State, cause: CauseKind) -> bool {
    seen.verdicts
        .get(story)
        .is_some_and(|v| v.iter().any(|(s, c, _)| *s == state && *c == cause))
}

fn check(seen: &Seen, kueue: bool) {
    let report = format!("{:#?}", seen.verdicts);
    let must = [
        ("Completes", State::Ended, CauseKind::Completed),
        ("OutOfMemory", State::Ended, CauseKind::OutOfMemory),
        ("NonZeroExit", State::Ended, CauseKind::NonZeroExit),
        ("NodeLoss", State::Running, CauseKind::NodeLost),
        ("Held", State::Held, CauseKind::None),
        ("Gated", State::Gated, CauseKind::None),
        ("UserSuspended", State::Suspended, CauseKind::None),
        ("Restarted", State::Ended, CauseKind::Completed),
    ];
    for (story, state, cause) in must {
        assert!(
            saw(seen, story, state, cause),
            "kueue={kueue}: {story} never showed {state} / {cause}\n{report}"
        );
    }
    let preempted = |story: &str| {
        seen.verdicts
            .get(story)
            .is_some_and(|v| v.iter().any(|(_, c, _)| *c == CauseKind::Preempted))
    };
    assert!(
        preempted("SchedulerPreemption"),
        "kueue={kueue}: no preemption seen\n{report}"
    );
    if kueue {
        // Evicted pods are SIGTERMed (exit 143) and captured: by rule 6a that
        // pod evidence outranks the Workload's Evicted condition, so the
        // requeued job reads pending with the pods' cause.
        let requeued = seen.verdicts.get("KueuePreemption").is_some_and(|v| {
            v.iter()
                .any(|(s, c, _)| *s == State::Pending && *c != CauseKind::None)
        });
        assert!(
            requeued,
            "Kueue preemption never showed a requeued job\n{report}"
        );
        assert!(
            saw(seen, "Completes", State::Pending, CauseKind::None),
            "never queued\n{report}"
        );
    }
    assert!(
        seen.restarted.contains("Restarted"),
        "no new execution seen: {:?}",
        seen.restarted
    );
    assert!(
        !seen.orphans.is_empty(),
        "a deleted TrainJob left no orphans"
    );
}

#[test]
fn every_story_shows_its_verdict_in_plain_mode() {
    check(&run(false, 60), false);
}

#[test]
fn every_story_shows_its_verdict_in_kueue_mode() {
    check(&run(true, 60), true);
}
