use super::read::amount;
use super::*;

#[test]
fn bytes_read_with_the_largest_binary_suffix_and_the_rest_canonically() {
    let q = |t: &str| Quantity::parse(t).unwrap_or_else(|e| panic!("{t}: {e}"));
    assert_eq!(amount("memory", q("64Gi")), "64Gi");
    assert_eq!(amount("memory", q("1536Mi")), "1536Mi");
    assert_eq!(amount("memory", q("1000")), "1000");
    assert_eq!(amount("ephemeral-storage", q("2Ti")), "2Ti");
    assert_eq!(amount("cpu", q("1500m")), "1500m");
    assert_eq!(amount("nvidia.com/gpu", q("1024")), "1024");
    assert_eq!(amount("memory", Quantity::ZERO), "0");
}

#[test]
fn the_preemptor_uid_is_the_first_after_an_opening_parenthesis() {
    use super::preemptor::preemptor_uid;
    let kueue = "Preempted to accommodate a workload (UID: 5b1d, JobUID: 77aa) due to \
                 prioritization in the ClusterQueue";
    assert_eq!(preemptor_uid(kueue), Some("5b1d"));
    assert_eq!(
        preemptor_uid("Preempted to accommodate a workload (UID: 5b1d)"),
        Some("5b1d")
    );
    assert_eq!(preemptor_uid("Preempted (JobUID: 77aa)"), None);
    assert_eq!(preemptor_uid("Preempted (UID: )"), None);
    assert_eq!(preemptor_uid("Evicted by an admin"), None);
}

/// A kubectl dump in YAML reads as the JSON does: plain scalars such as
/// `count: 4` and `nominalQuota: 64` are strings there.
#[test]
fn a_yaml_dump_gives_the_facts_json_gives() {
    let yaml = "\
apiVersion: v1
kind: List
items:
- apiVersion: trainer.kubeflow.org/v1alpha1
  kind: TrainJob
  metadata: {name: llm-7, namespace: team-a, uid: t1, labels: {kueue.x-k8s.io/queue-name: main}}
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: Workload
  metadata: {name: w1, namespace: team-a, uid: w1, labels: {kueue.x-k8s.io/job-uid: t1}}
  spec:
    queueName: main
    podSets:
    - name: node
      count: 4
      template: {spec: {containers: [{name: t, resources: {requests: {nvidia.com/gpu: 8}}}]}}
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: LocalQueue
  metadata: {name: main, namespace: team-a}
  spec: {clusterQueue: gpu-cq}
- apiVersion: kueue.x-k8s.io/v1beta2
  kind: ClusterQueue
  metadata: {name: gpu-cq}
  spec:
    resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors: [{name: a100, resources: [{name: nvidia.com/gpu, nominalQuota: 64}]}]
  status:
    flavorsReservation: [{name: a100, resources: [{name: nvidia.com/gpu, total: 56}]}]
";
    let facts = facts_in_snapshot(yaml, &Visibility::default()).unwrap_or_else(|e| panic!("{e}"));
    let [job] = facts.as_slice() else {
        panic!("{facts:?}")
    };
    assert_eq!(
        job.queue.sentence,
        "needs 32 nvidia.com/gpu; ClusterQueue gpu-cq has 8 of 64 free in flavor a100 \
         (56 reserved); 24 more must be released"
    );
    let json = crate::dump_to_json(yaml).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        facts_in_snapshot(&json, &Visibility::default()).unwrap_or_else(|e| panic!("{e}")),
        facts
    );
}

#[test]
fn bad_input_is_the_error_classifying_gives() {
    let error = facts_in_snapshot("{\"kind\": \"List\", \"items\": [}", &Visibility::default())
        .err()
        .map(|e| e.to_string());
    assert_eq!(
        error,
        crate::classify(
            "{\"kind\": \"List\", \"items\": [}",
            crate::Options::default()
        )
        .err()
        .map(|e| e.to_string())
    );
    assert!(error.is_some());
}

struct One<'v> {
    local: &'v serde_json::Value,
    cluster: &'v serde_json::Value,
}

impl QueueObjects for One<'_> {
    fn local_queue(&self, _: &str, _: &str) -> Lookup<'_> {
        Lookup::Found(self.local)
    }
    fn cluster_queue(&self, _: &str) -> Lookup<'_> {
        Lookup::Found(self.cluster)
    }
    fn workload_by_uid(&self, _: &str) -> Lookup<'_> {
        Lookup::NotFound
    }
}

/// Random quotas, reservations, cohorts and asks over two flavors: the
/// wait agrees with the arithmetic done plainly here.
#[test]
fn seeded_waits_agree_with_plain_arithmetic() {
    use serde_json::json;
    use test_support::Rng;
    let mut rng = Rng::new(28);
    for round in 0..2_000 {
        // Small numbers, so that an ask often meets a bound exactly.
        let count = rng.below(5) as i128;
        let per_pod = rng.below(9) as i128;
        let ask = count * per_pod;
        let flavors: Vec<(i128, i128, Option<i128>)> = (0..2)
            .map(|_| {
                let nominal = rng.below(33) as i128;
                let reserved = rng.below(40) as i128;
                let limit = rng.chance(50).then(|| rng.below(17) as i128);
                (nominal, reserved, limit)
            })
            .collect();
        let cohort = rng.chance(50);
        let flavor_json: Vec<_> = flavors
            .iter()
            .enumerate()
            .map(|(i, (nominal, _, limit))| {
                let mut r = json!({"name": "gpu", "nominalQuota": nominal.to_string()});
                if let Some(l) = limit {
                    r["borrowingLimit"] = json!(l.to_string());
                }
                json!({"name": format!("f{i}"), "resources": [r]})
            })
            .collect();
        let reservation: Vec<_> = flavors
            .iter()
            .enumerate()
            .map(|(i, (_, reserved, _))| {
                json!({"name": format!("f{i}"), "resources": [{"name": "gpu", "total": reserved.to_string()}]})
            })
            .collect();
        let mut cluster = json!({"kind": "ClusterQueue", "metadata": {"name": "cq"},
            "spec": {"resourceGroups": [{"coveredResources": ["gpu"], "flavors": flavor_json}]},
            "status": {"flavorsReservation": reservation}});
        if cohort {
            cluster["spec"]["cohortName"] = json!("pool");
        }
        let local = json!({"kind": "LocalQueue", "spec": {"clusterQueue": "cq"}});
        let trainjob = json!({"kind": "TrainJob", "metadata": {"namespace": "ns", "name": "t"}});
        let workload = json!({"kind": "Workload", "spec": {"queueName": "q", "podSets": [{"name": "p",
            "count": count, "template": {"spec": {"containers": [{"resources": {"requests": {"gpu": per_pod.to_string()}}}]}}}]}});
        let objects = One {
            local: &local,
            cluster: &cluster,
        };
        let got = facts(&trainjob, Some(&workload), &objects).map(|f| f.wait);
        let fits = |(n, r, _): &(i128, i128, Option<i128>)| ask <= n - r;
        let borrows =
            |(n, r, l): &(i128, i128, Option<i128>)| cohort && l.is_none_or(|l| ask <= n - r + l);
        let ever = |(n, _, l): &(i128, i128, Option<i128>)| {
            if cohort {
                l.is_none_or(|l| ask <= n + l)
            } else {
                ask <= *n
            }
        };
        let expected = if ask == 0 || flavors.iter().any(fits) {
            Wait::Fits
        } else if flavors.iter().any(borrows) {
            Wait::CouldBorrow
        } else if !flavors.iter().any(ever) {
            Wait::NeverFits
        } else {
            Wait::Quota
        };
        assert_eq!(
            got,
            Some(expected),
            "round {round}: ask {ask}, {flavors:?}, cohort {cohort}"
        );
    }
}

fn waiting(wait: Wait, sentence: &str) -> QueueFacts {
    QueueFacts {
        local_queue: "team-a/main".into(),
        cluster_queue: Some("gpu-cq".into()),
        wait,
        never_fits: wait == Wait::NeverFits,
        asks: Vec::new(),
        room: Vec::new(),
        sentence: sentence.into(),
        preempted_by: None,
        requeued: None,
        position: None,
    }
}

#[test]
fn the_queue_cell_shows_the_place_else_the_wait_and_hovers_the_sentences() {
    let mut facts = waiting(
        Wait::Quota,
        "needs 32 nvidia.com/gpu; 24 more must be released",
    );
    let cell = facts.cell().expect("a waiting job has a cell");
    assert_eq!(cell.text, "waiting for quota");
    assert_eq!(cell.title, facts.sentence);

    facts.position = Some(line::Position {
        in_local_queue: Some(3),
        of: Some(17),
        more: false,
        in_cluster_queue: Some(12),
        priority: None,
        unavailable: None,
        sentence: "3rd of 17 in team-a/main, 12th in ClusterQueue gpu-cq".into(),
    });
    let cell = facts.cell().expect("cell");
    assert_eq!(cell.text, "3rd of 17");
    assert_eq!(
        cell.title,
        "needs 32 nvidia.com/gpu; 24 more must be released; \
         3rd of 17 in team-a/main, 12th in ClusterQueue gpu-cq"
    );
    assert!(facts
        .lines()
        .contains(&"3rd of 17 in team-a/main, 12th in ClusterQueue gpu-cq".to_string()));
    if let Some(p) = facts.position.as_mut() {
        p.more = true;
    }
    assert_eq!(facts.cell().map(|c| c.text).as_deref(), Some("3rd of 17+"));

    // Loud, whatever its place.
    facts.never_fits = true;
    assert_eq!(facts.cell().map(|c| c.text).as_deref(), Some("never fits"));

    for settled in [Wait::Admitted, Wait::Finished] {
        assert_eq!(waiting(settled, "admitted").cell(), None);
    }
}

/// Finds no Workload by UID, and remembers one preemptor, readable or not.
struct Remembering {
    preemptor: Preemptor,
    readable: bool,
}

impl QueueObjects for Remembering {
    fn local_queue(&self, _: &str, _: &str) -> Lookup<'_> {
        Lookup::NotFound
    }
    fn cluster_queue(&self, _: &str) -> Lookup<'_> {
        Lookup::NotFound
    }
    fn workload_by_uid(&self, _: &str) -> Lookup<'_> {
        Lookup::NotFound
    }
    fn remembered_preemptor(&self, uid: &str) -> Lookup<'_, Preemptor> {
        match uid == self.preemptor.uid {
            true if self.readable => Lookup::Found(&self.preemptor),
            true => Lookup::NotReadable,
            false => Lookup::NotFound,
        }
    }
}

#[test]
fn a_remembered_preemptor_is_named_after_its_workload_is_gone_and_hidden_where_it_was() {
    use serde_json::json;
    let preemptor_workload = json!({
        "metadata": {"name": "wb", "namespace": "team-b", "uid": "5b1d",
                     "ownerReferences": [{"kind": "TrainJob", "name": "llm-70b"}]},
        "spec": {"priority": 1000},
        "status": {"admission": {"clusterQueue": "gpu-cq"}},
    });
    let record = Preemptor::of(&preemptor_workload);
    assert_eq!(
        record.sentence(false),
        "preempted by team-b/llm-70b (priority 1000) in ClusterQueue gpu-cq"
    );
    // It reads back from the JSON a state directory keeps.
    let back: Preemptor = serde_json::from_value(serde_json::to_value(&record).unwrap()).unwrap();
    assert_eq!(back, record);
    assert_eq!(record.heap_bytes(), "5b1dteam-bwbllm-70bgpu-cq".len());

    let trainjob = json!({"metadata": {"name": "llm", "namespace": "team-a",
                                       "labels": {"kueue.x-k8s.io/queue-name": "main"}}});
    let preempted = |uid: &str| {
        json!({"spec": {"queueName": "main"}, "status": {"conditions": [
        {"type": "Preempted", "status": "True", "reason": "InClusterQueue",
         "message": format!("Preempted to accommodate a workload (UID: {uid}) due to prioritization in the ClusterQueue")}]}})
    };
    let said = |objects: &Remembering, uid: &str| {
        super::facts(&trainjob, Some(&preempted(uid)), objects).and_then(|f| f.preempted_by)
    };
    let mut objects = Remembering {
        preemptor: record,
        readable: true,
    };
    assert_eq!(
        said(&objects, "5b1d").as_deref(),
        Some("preempted by team-b/llm-70b (priority 1000) in ClusterQueue gpu-cq; its Workload has since gone")
    );
    assert_eq!(
        said(&objects, "77aa").as_deref(),
        Some("preempted by a workload that is gone (UID 77aa)")
    );
    objects.readable = false;
    assert_eq!(
        said(&objects, "5b1d").as_deref(),
        Some("preempted by a workload in another namespace")
    );
}

/// A Workload's `status.requeueState` in words, whichever half of it
/// Kueue wrote; a count of 0 (a reactivated Workload) says nothing.
#[test]
fn a_requeue_says_how_often_and_until_when() {
    use serde_json::json;
    let workload = |state: serde_json::Value| json!({"status": {"requeueState": state}});
    let cases = [
        (json!({"count": 1}), Some("requeued once after eviction")),
        (
            json!({"count": 2, "requeueAt": "2026-12-01T09:12:00Z"}),
            Some("requeued twice after eviction; backoff until 2026-12-01T09:12:00Z"),
        ),
        (json!({"count": 7}), Some("requeued 7 times after eviction")),
        (
            json!({"requeueAt": "2026-12-01T09:12:00Z"}),
            Some("requeue backoff until 2026-12-01T09:12:00Z"),
        ),
        (json!({"count": 0}), None),
        (json!({}), None),
    ];
    for (state, want) in cases {
        assert_eq!(
            read::requeued(&workload(state.clone())).as_deref(),
            want,
            "{state}"
        );
    }
    assert_eq!(read::requeued(&json!({"status": {}})), None);
    // It is in the hover text and the explanation's lines.
    let mut facts = waiting(Wait::Quota, "needs 32 nvidia.com/gpu");
    facts.requeued = Some("requeued once after eviction".into());
    let cell = facts.cell().expect("waiting for quota has a cell");
    assert_eq!(
        cell.title,
        "needs 32 nvidia.com/gpu; requeued once after eviction"
    );
    assert!(facts
        .lines()
        .contains(&"requeued once after eviction".to_string()));
}
