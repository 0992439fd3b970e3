//! The real server against a real kube-apiserver v1.20.2 and etcd (see
//! `common/apiserver.rs`), over TLS with a bearer token: list and watch,
//! deleted-pod capture and classification from it, a `410 Gone` after
//! compaction with the pods deleted in the gap captured, and both modes.
//! The emulator tests (api.rs, evidence.rs) cover the same ground fast;
//! these prove the kube client and the watch loops against the genuine
//! protocol. Needs `scripts/setup.sh` to have cached the apiserver.

mod common;

use common::apiserver::{
    ApiServer, GapProxy, Workloads, ADMIN_TOKEN, ALICE_TOKEN, COMPACTION_INTERVAL,
};
use common::*;
use dispatch_dash::serve::{self, ModeChoice, Server};
use emulator::scenario::objects::{self, JobRef, PodRef};
use hyper::StatusCode;
use serde_json::{json, Value};

/// dispatch-dash serving `NS` from the cluster of `kubeconfig`.
async fn dispatch_dash(kubeconfig: &str, mode: ModeChoice) -> Server {
    let server = server_for(
        kubeconfig,
        Settings {
            mode,
            ..Settings::default()
        },
    )
    .await;
    // Against a real apiserver the first lists take longer than readiness
    // does against the emulator.
    eventually(30, "dispatch-dash ready", || async {
        let (status, _) = get_json(server.addr, "/readyz").await;
        (status == StatusCode::OK).then_some(())
    })
    .await;
    server
}

fn now() -> String {
    emulator::time::now_rfc3339()
}

/// A TrainJob (`queue`: Kueue mode, suspended) as the Trainer writes it.
async fn create_trainjob(api: &ApiServer, job_id: &str, queue: Option<&str>) -> Value {
    let job = JobRef::new(NS, job_id, "s1");
    api.create(objects::trainjob(&job, 2, queue, queue.is_some()))
        .await
}

fn uid(object: &Value) -> String {
    object["metadata"]["uid"]
        .as_str()
        .expect("a stored object has a UID")
        .to_string()
}

async fn create_jobset(api: &ApiServer, job_id: &str, trainjob: &Value) -> Value {
    let job = JobRef::new(NS, job_id, "s1");
    api.create(objects::jobset(&job, &uid(trainjob), 2, 0))
        .await
}

/// A pod of the TrainJob bound to gpu-node-1, its node container running
/// (or terminated with `reason`/`exit_code`), carrying a secret env value.
async fn create_pod(
    api: &ApiServer,
    job_id: &str,
    rank: usize,
    terminated: Option<(&str, i64)>,
) -> Value {
    let job = JobRef::new(NS, job_id, "s1");
    let time = now();
    let p = PodRef {
        rank,
        admission: 1,
        restart_attempt: 0,
        suffix: format!("r{rank:04}"),
    };
    let mut pod = objects::pod_running(objects::pod(&job, &p, &time), "gpu-node-1", &time);
    pod["spec"]["containers"][0]["env"] = json!([{"name": "API_TOKEN", "value": SECRET}]);
    // The apiserver sets these itself.
    if let Some(metadata) = pod["metadata"].as_object_mut() {
        metadata.remove("creationTimestamp");
    }
    if let Some((reason, code)) = terminated {
        pod = objects::pod_terminated(pod, reason, code, "", &time);
    }
    api.create(pod).await
}

async fn create_node(api: &ApiServer, ready: &str) -> Value {
    api.create(objects::node("gpu-node-1", ready, &now())).await
}

async fn fail_trainjob(api: &ApiServer, trainjob: &Value) {
    let failed = objects::condition("Failed", "True", "FailedJobs", "jobs failed", &now());
    api.patch_status(trainjob, json!({"conditions": [failed]}))
        .await;
}

/// The observations of `job_id`.
async fn observations(addr: std::net::SocketAddr, job_id: &str) -> Value {
    let (status, body) = get_json(addr, &format!("/api/v1/namespaces/{NS}/jobs/{job_id}")).await;
    assert_eq!(status, StatusCode::OK, "{body}");
    body
}

/// Waits until the first observation of `job_id` satisfies `accept`.
async fn observed(
    addr: std::net::SocketAddr,
    job_id: &str,
    what: &str,
    accept: impl Fn(&Value) -> bool,
) -> Value {
    eventually(30, what, || async {
        let all = observations(addr, job_id).await;
        all.get(0).filter(|first| accept(first)).cloned()
    })
    .await
}

/// The Workload versions discovery serves, and the preferred one.
async fn workload_versions(api: &ApiServer) -> (Vec<String>, String) {
    let groups = api.client().list_api_groups().await.expect("discovery");
    let kueue = groups
        .groups
        .iter()
        .find(|g| g.name == "kueue.x-k8s.io")
        .expect("the kueue.x-k8s.io group is served");
    let versions = kueue.versions.iter().map(|v| v.version.clone()).collect();
    let preferred = kueue
        .preferred_version
        .as_ref()
        .map(|v| v.version.clone())
        .unwrap_or_default();
    (versions, preferred)
}

async fn watch_restarts(addr: std::net::SocketAddr) -> u64 {
    let (_, metrics) = get_text(addr, "/metrics", &[]).await;
    metrics
        .lines()
        .find_map(|l| l.strip_prefix("dispatch_dash_watch_restarts_total "))
        .and_then(|v| v.parse().ok())
        .expect("the watch restart metric")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_and_watches_over_tls_with_a_token() {
    let api = ApiServer::start(Workloads::None, &[NS]).await;
    let listed = create_trainjob(&api, "llm-1", None).await;
    create_jobset(&api, "llm-1", &listed).await;
    let server = dispatch_dash(&api.kubeconfig_yaml(), ModeChoice::Auto).await;
    let addr = server.addr;

    // No Workload API is served: auto mode is plain. Nodes are readable.
    let (_, ready) = get_json(addr, "/readyz").await;
    assert_eq!(
        (&ready["ready"], &ready["mode"], &ready["nodesReadable"]),
        (&json!(true), &json!("plain"), &json!(true)),
        "{ready}"
    );
    assert_eq!(
        ready["apiVersions"]["TrainJob"],
        "trainer.kubeflow.org/v1alpha1"
    );
    assert!(ready["apiVersions"].get("Workload").is_none(), "{ready}");
    // Kubernetes 1.20 has no WatchList feature: it refuses a watch with
    // sendInitialEvents as invalid (422), so every kind is listed in pages.
    let (_, metrics) = get_text(addr, "/metrics", &[]).await;
    for kind in ["TrainJob", "JobSet", "Pod"] {
        let series = |method: &str| {
            format!("dispatch_dash_watch_lists_total{{kind=\"{kind}\",method=\"{method}\"}}")
        };
        assert_eq!(
            metric_value(&metrics, &series("pages")),
            Some(1.0),
            "{metrics}"
        );
        assert_eq!(
            metric_value(&metrics, &series("watchList")),
            None,
            "{metrics}"
        );
    }
    // What existed before the server started was listed.
    eventually(30, "the listed TrainJob and JobSet", || async {
        let snap = snapshot(addr).await;
        (count_kind(&snap, "TrainJob") == 1 && count_kind(&snap, "JobSet") == 1).then_some(())
    })
    .await;
    // The token is what the apiserver authorizes: a wrong one is 401, a
    // known user without roles is 403.
    for (token, code) in [("not-a-token", 401), (ALICE_TOKEN, 403)] {
        let config = serve::config_from_kubeconfig_yaml(&api.kubeconfig_yaml_at(&api.url, token))
            .await
            .expect("kubeconfig");
        let client = kube::Client::try_from(config).expect("client");
        let pods: kube::Api<k8s_openapi::api::core::v1::Pod> = kube::Api::namespaced(client, NS);
        match pods.list(&Default::default()).await {
            Err(kube::Error::Api(status)) => assert_eq!(status.code, code, "{token}"),
            other => panic!("listing pods with {token} gave {other:?}"),
        }
    }
    let first = observed(
        addr,
        "llm-1",
        "llm-1 running, with its JobSet but no pods",
        |o| o["state"] == "running" && o["cause"]["detail"] == "no pods",
    )
    .await;
    assert_eq!(first["object"]["uid"], uid(&listed).as_str());

    // What is created afterwards arrives through the watches: a Node, a
    // pod on it, a second TrainJob.
    let node = create_node(&api, "True").await;
    let pod = create_pod(&api, "llm-1", 0, None).await;
    let watched = create_trainjob(&api, "llm-2", None).await;
    eventually(30, "the watched Node, Pod and TrainJob", || async {
        let snap = snapshot(addr).await;
        (count_kind(&snap, "TrainJob") == 2
            && count_kind(&snap, "Pod") == 1
            && count_kind(&snap, "Node") == 1)
            .then_some(())
    })
    .await;
    // Pods and Nodes are separate watches: until both have arrived the pod
    // may be on a node not found.
    let healthy = observed(
        addr,
        "llm-1",
        "llm-1 reading its pod on a Ready node",
        |o| o["execution"] != Value::Null && o["cause"]["kind"] == "none",
    )
    .await;
    assert_eq!(healthy["state"], "running");
    assert_eq!(healthy["cause"]["detail"], "", "{healthy}");
    let (status, inspected) = get_json(
        addr,
        &format!(
            "/api/v1/namespaces/{NS}/objects/pods/{}",
            pod["metadata"]["name"].as_str().expect("pod name")
        ),
    )
    .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(inspected["readFor"][0]["uid"], uid(&listed).as_str());
    let second = observed(addr, "llm-2", "llm-2 observed", |_| true).await;
    assert_eq!(second["object"]["uid"], uid(&watched).as_str());

    // A status change written through /status is watched too: the node
    // goes NotReady and the running job is on a lost node.
    api.patch_status(
        &node,
        json!({"conditions": [objects::condition("Ready", "False", "KubeletNotReady",
            "container runtime is down", &now())]}),
    )
    .await;
    let lost = observed(addr, "llm-1", "llm-1 on a lost node", |o| {
        o["cause"]["kind"] == "node-lost"
    })
    .await;
    assert_eq!(lost["cause"]["provenance"], "node");
    assert_eq!(
        lost["cause"]["detail"],
        "node gpu-node-1 Ready=False: KubeletNotReady: container runtime is down"
    );
    let snap = snapshot(addr).await.to_string();
    assert!(!snap.contains(SECRET), "no env value leaves the server");
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleted_pods_are_captured_and_a_failed_job_is_classified_from_them() {
    let api = ApiServer::start(Workloads::None, &[NS]).await;
    let server = dispatch_dash(&api.kubeconfig_yaml(), ModeChoice::Auto).await;
    let addr = server.addr;
    let trainjob = create_trainjob(&api, "llm-1", None).await;
    let trainjob_uid = uid(&trainjob);
    create_jobset(&api, "llm-1", &trainjob).await;
    create_node(&api, "True").await;
    let oom = create_pod(&api, "llm-1", 0, Some(("OOMKilled", 137))).await;
    let error = create_pod(&api, "llm-1", 1, Some(("Error", 1))).await;
    let live = observed(addr, "llm-1", "out-of-memory from the live pods", |o| {
        o["cause"]["kind"] == "out-of-memory"
    })
    .await;
    assert_eq!(live["cause"]["provenance"], "pod");

    // The pods go (as the JobSet's Jobs are cleaned up), then the TrainJob
    // fails: only the captured pods can say why.
    api.delete(&oom).await;
    api.delete(&error).await;
    let snap = eventually(30, "both deleted pods captured", || async {
        let snap = snapshot(addr).await;
        (count_kind(&snap, "Pod") == 0 && captured_of(&snap, &trainjob_uid).len() == 2)
            .then_some(snap)
    })
    .await;
    assert!(
        captured_of(&snap, &trainjob_uid)
            .iter()
            .all(|c| c.get("acrossGap").is_none()),
        "seen deleted, not across a gap: {snap}"
    );
    assert!(!snap.to_string().contains(SECRET));
    fail_trainjob(&api, &trainjob).await;
    let ended = observed(addr, "llm-1", "llm-1 ended, from captured pods", |o| {
        o["state"] == "ended" && o["cause"]["provenance"] == "captured-pod"
    })
    .await;
    assert_eq!(ended["cause"]["kind"], "out-of-memory", "{ended}");
    assert_eq!(
        ended["cause"]["detail"],
        format!(
            "pod {}: node container terminated: OOMKilled, exit code 137; other ranks: {} \
             non-zero-exit (node container terminated: Error, exit code 1)",
            oom["metadata"]["name"].as_str().expect("name"),
            error["metadata"]["name"].as_str().expect("name"),
        )
    );
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn after_410_gone_the_server_relists_and_captures_pods_deleted_in_the_gap() {
    let api = ApiServer::start(Workloads::None, &[NS]).await;
    // dispatch-dash reaches the apiserver through a proxy that can cut it
    // off while the cluster goes on.
    let proxy = GapProxy::start(api.addr).await;
    let server = dispatch_dash(
        &api.kubeconfig_yaml_at(&proxy.url, ADMIN_TOKEN),
        ModeChoice::Auto,
    )
    .await;
    let addr = server.addr;
    let trainjob = create_trainjob(&api, "llm-3", None).await;
    let trainjob_uid = uid(&trainjob);
    create_jobset(&api, "llm-3", &trainjob).await;
    create_node(&api, "True").await;
    let kept = create_pod(&api, "llm-3", 0, None).await;
    let vanished = create_pod(&api, "llm-3", 1, Some(("OOMKilled", 137))).await;
    eventually(30, "both pods stored", || async {
        (count_kind(&snapshot(addr).await, "Pod") == 2).then_some(())
    })
    .await;
    // A pod's status is written after the pod (the apiserver drops the
    // status a create carries), so the server may hold the pod before its
    // termination. The cut below must not come between the two: the
    // server can capture only the last state it saw. The live OOM finding
    // shows it saw the terminated state.
    observed(addr, "llm-3", "out-of-memory from the live pods", |o| {
        o["cause"]["kind"] == "out-of-memory" && o["cause"]["provenance"] == "pod"
    })
    .await;
    let restarts_before = watch_restarts(addr).await;

    // The gap: a pod is deleted while dispatch-dash cannot see, and etcd
    // compacts the history past everything dispatch-dash saw.
    proxy.cut();
    let seen_up_to = api.current_resource_version().await;
    api.delete(&vanished).await;
    // Two compactions at most: each compacts to the revision of the last.
    eventually(
        30 * COMPACTION_INTERVAL.as_secs(),
        &format!("etcd compacted past resourceVersion {seen_up_to}"),
        || async { api.compacted_past(&seen_up_to).await.then_some(()) },
    )
    .await;
    proxy.restore();

    // Re-watching from the old resourceVersion is 410 Gone: the server
    // lists again and captures the pod that is missing from the new list.
    let captured = eventually(60, "the pod deleted in the gap captured", || async {
        let snap = snapshot(addr).await;
        let captured = captured_of(&snap, &trainjob_uid);
        (captured.len() == 1).then(|| captured[0].clone())
    })
    .await;
    assert_eq!(captured["acrossGap"], true, "{captured}");
    assert_eq!(
        captured["pod"]["metadata"]["name"],
        vanished["metadata"]["name"]
    );
    let snap = snapshot(addr).await;
    let pods: Vec<&Value> = snap["items"]
        .as_array()
        .expect("items")
        .iter()
        .filter(|i| i["kind"] == "Pod")
        .collect();
    assert_eq!(pods.len(), 1, "{snap}");
    assert_eq!(pods[0]["metadata"]["name"], kept["metadata"]["name"]);
    assert!(watch_restarts(addr).await > restarts_before);

    // The captured evidence is what classifies the job once it fails: the
    // first observation of it as ended already carries it.
    fail_trainjob(&api, &trainjob).await;
    let ended = observed(addr, "llm-3", "llm-3 ended", |o| o["state"] == "ended").await;
    assert_eq!(ended["cause"]["kind"], "out-of-memory", "{ended}");
    assert_eq!(ended["cause"]["provenance"], "captured-pod", "{ended}");
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kueue_mode_follows_the_workload_from_pending_to_admitted() {
    let api = ApiServer::start(Workloads::AsKueueShips, &[NS]).await;
    let server = dispatch_dash(&api.kubeconfig_yaml(), ModeChoice::Auto).await;
    let addr = server.addr;
    // The Workload API is served: auto mode is Kueue (whichever Workload
    // version the server reads: the CRD serves both).
    let (_, ready) = get_json(addr, "/readyz").await;
    assert_eq!(ready["mode"], "kueue", "{ready}");
    assert_eq!(
        workload_versions(&api).await,
        (
            vec!["v1beta2".to_string(), "v1beta1".to_string()],
            "v1beta2".to_string()
        )
    );
    // The apiserver kept the deprecation (a 1.20 apiserver knows the field).
    let crds = api
        .api("apiextensions.k8s.io/v1", "CustomResourceDefinition", None)
        .await;
    let crd = crds
        .get("workloads.kueue.x-k8s.io")
        .await
        .expect("the Workload CRD");
    let v1beta1 = &crd.data["spec"]["versions"][0];
    assert_eq!(v1beta1["name"], "v1beta1");
    assert_eq!(v1beta1["deprecated"], true);
    assert_eq!(
        v1beta1["deprecationWarning"],
        "This version is deprecated. Use v1beta2 instead."
    );

    let job = JobRef::new(NS, "llm-5", "s1");
    let trainjob = create_trainjob(&api, "llm-5", Some("gpu")).await;
    let mut workload =
        objects::workload(&job, "trainjob-llm-5-s1-3f1a2", &uid(&trainjob), "gpu", 2);
    workload["apiVersion"] = json!("kueue.x-k8s.io/v1beta2");
    workload["status"]["conditions"] = json!([objects::condition(
        "QuotaReserved",
        "False",
        "Pending",
        "insufficient unused quota for nvidia.com/gpu in flavor h100",
        &now()
    )]);
    let workload = api.create(workload).await;
    let pending = observed(addr, "llm-5", "llm-5 pending for quota", |o| {
        o["state"] == "pending"
            && o["cause"]["detail"]
                .as_str()
                .is_some_and(|d| d.contains("Workload QuotaReserved=False"))
    })
    .await;
    assert_eq!(pending["cause"]["kind"], "none");
    assert_eq!(
        pending["cause"]["detail"],
        "Workload QuotaReserved=False: Pending: insufficient unused quota for nvidia.com/gpu in flavor h100"
    );

    // A TrainJob of the queue without a Workload is pending too, and says so.
    create_trainjob(&api, "llm-6", Some("gpu")).await;
    let orphan = observed(addr, "llm-6", "llm-6 without a Workload", |_| true).await;
    assert_eq!(orphan["state"], "pending");
    assert!(
        orphan["cause"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("no Workload")),
        "{orphan}"
    );

    // Kueue admits the Workload and unsuspends the TrainJob; the JobSet's
    // pod runs on a Ready node.
    let time = now();
    api.patch_status(
        &workload,
        json!({"conditions": [
            objects::condition("QuotaReserved", "True", "QuotaReserved", "Quota reserved in ClusterQueue gpu", &time),
            objects::condition("Admitted", "True", "Admitted", "The workload is admitted", &time),
        ]}),
    )
    .await;
    api.patch(&trainjob, json!({"spec": {"suspend": false}}))
        .await;
    create_jobset(&api, "llm-5", &trainjob).await;
    create_node(&api, "True").await;
    create_pod(&api, "llm-5", 0, None).await;
    // Pods and Nodes are separate watches: until both have arrived the pod
    // may be on a node not found.
    let running = observed(
        addr,
        "llm-5",
        "llm-5 admitted and running on a Ready node",
        |o| {
            o["state"] == "running" && o["execution"] != Value::Null && o["cause"]["kind"] == "none"
        },
    )
    .await;
    assert_eq!(running["held"], false);
    assert_eq!(running["foreign"], false, "{running}");
    server.shutdown().await.expect("clean shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_v1beta2_only_workload_crd_serves_only_v1beta2() {
    // For the switch away from v1beta1: the CRD variant loads and a
    // Workload is stored and read at v1beta2.
    let api = ApiServer::start(Workloads::V1beta2Only, &[NS]).await;
    assert_eq!(
        workload_versions(&api).await,
        (vec!["v1beta2".to_string()], "v1beta2".to_string())
    );
    let job = JobRef::new(NS, "llm-8", "s1");
    let mut workload = objects::workload(&job, "trainjob-llm-8-s1-0a1b2", "uid-8", "gpu", 1);
    workload["apiVersion"] = json!("kueue.x-k8s.io/v1beta2");
    let stored = api.create(workload).await;
    assert_eq!(stored["apiVersion"], "kueue.x-k8s.io/v1beta2");
    assert_eq!(stored["spec"]["queueName"], "gpu");
}

/// What the apiserver counts of requests at deprecated versions (its
/// `apiserver_requested_deprecated_apis` gauge), for Workloads.
async fn deprecated_workload_requests(api: &ApiServer) -> Vec<String> {
    let request = hyper::Request::get("/metrics")
        .body(Vec::new())
        .expect("a request");
    let metrics = api
        .client()
        .request_text(request)
        .await
        .expect("the apiserver's metrics");
    metrics
        .lines()
        .filter(|l| {
            l.starts_with("apiserver_requested_deprecated_apis{")
                && l.contains("group=\"kueue.x-k8s.io\"")
                && l.contains("resource=\"workloads\"")
        })
        .map(str::to_string)
        .collect()
}

/// Issue 11: against Kueue's Workload CRD as shipped (v1beta1 deprecated,
/// v1beta2 stored), auto mode watches v1beta2, reports it, and makes no
/// request the apiserver counts as deprecated; with v1beta1 removed, or on an
/// older Kueue that serves only v1beta1, the user sees the same verdicts.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workloads_are_read_at_the_version_the_cluster_prefers() {
    let mut verdicts = Vec::new();
    for (workloads, expected) in [
        (Workloads::AsKueueShips, "kueue.x-k8s.io/v1beta2"),
        (Workloads::V1beta2Only, "kueue.x-k8s.io/v1beta2"),
        (Workloads::V1beta1Only, "kueue.x-k8s.io/v1beta1"),
    ] {
        let api = ApiServer::start(workloads, &[NS]).await;
        // A deactivated Workload: only a server that read it calls the job
        // suspended.
        let job = JobRef::new(NS, "llm-8", "s1");
        let trainjob = create_trainjob(&api, "llm-8", Some("gpu")).await;
        let mut workload = objects::workload(&job, "trainjob-llm-8-s1", &uid(&trainjob), "gpu", 2);
        workload["apiVersion"] = json!(expected);
        workload["spec"]["active"] = json!(false);
        api.create(workload).await;
        let server = dispatch_dash(&api.kubeconfig_yaml(), ModeChoice::Auto).await;
        let addr = server.addr;
        let (_, ready) = get_json(addr, "/readyz").await;
        assert_eq!(ready["mode"], "kueue", "{workloads:?}: {ready}");
        assert_eq!(
            ready["apiVersions"]["Workload"], expected,
            "{workloads:?}: {ready}"
        );
        let (_, namespaces) = get_json(addr, "/api/v1/namespaces").await;
        assert_eq!(namespaces["apiVersions"]["Workload"], expected);
        let suspended = observed(addr, "llm-8", "llm-8 suspended by its Workload", |o| {
            o["state"] == "suspended"
        })
        .await;
        verdicts.push((
            suspended["state"].clone(),
            suspended["held"].clone(),
            suspended["cause"].clone(),
        ));
        let snap = snapshot(addr).await;
        let read = snap["items"]
            .as_array()
            .and_then(|items| items.iter().find(|i| i["kind"] == "Workload"))
            .cloned()
            .expect("the Workload is in the snapshot");
        assert_eq!(read["apiVersion"], expected);
        server.shutdown().await.expect("clean shutdown");
        if workloads == Workloads::AsKueueShips {
            assert_eq!(
                deprecated_workload_requests(&api).await,
                Vec::<String>::new(),
                "dispatch-dash made no request at the deprecated v1beta1"
            );
            // The check can fail: a request at v1beta1 is counted.
            let v1beta1 = api
                .api("kueue.x-k8s.io/v1beta1", "Workload", Some(NS))
                .await;
            v1beta1
                .list(&Default::default())
                .await
                .expect("v1beta1 is still served");
            let counted = deprecated_workload_requests(&api).await;
            assert!(
                counted.iter().any(|l| l.contains("version=\"v1beta1\"")),
                "the apiserver counts deprecated requests: {counted:?}"
            );
        }
    }
    assert_eq!(verdicts[0], verdicts[1], "v1beta1 removed: nothing changes");
    assert_eq!(
        verdicts[0], verdicts[2],
        "read at v1beta1: the same verdict"
    );
}

/// Issue 11: a Kueue whose Workloads are served only in a version this
/// server does not understand is not silently ignored: auto mode classifies
/// in plain mode and `/readyz` names the kind and the versions served.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workloads_served_only_in_an_unknown_version_are_named() {
    let api = ApiServer::start(Workloads::V1beta3Only, &[NS]).await;
    let trainjob = create_trainjob(&api, "llm-9", None).await;
    create_jobset(&api, "llm-9", &trainjob).await;
    let server = dispatch_dash(&api.kubeconfig_yaml(), ModeChoice::Auto).await;
    let addr = server.addr;
    let (status, ready) = get_json(addr, "/readyz").await;
    assert_eq!(status, StatusCode::OK, "plain mode works: {ready}");
    assert_eq!(ready["mode"], "plain", "{ready}");
    let named = ready["watches"]
        .as_array()
        .and_then(|w| w.iter().find(|e| e["kind"] == "Workload"))
        .cloned()
        .unwrap_or_else(|| panic!("Workload is named in /readyz: {ready}"));
    assert_eq!(named["state"], "unknownVersions", "{named}");
    assert_eq!(named["servedVersions"], json!(["v1beta3"]), "{named}");
    assert!(ready["apiVersions"].get("Workload").is_none(), "{ready}");
    // The jobs are still classified, in plain mode.
    let observed = observed(addr, "llm-9", "llm-9 classified", |_| true).await;
    assert_eq!(observed["object"]["uid"], uid(&trainjob).as_str());
    server.shutdown().await.expect("clean shutdown");
}

/// Queue facts with Kueue's own queue CRDs and its sample queue setup
/// (`config/samples/single-clusterqueue-setup.yaml`: a ResourceFlavor
/// `default-flavor`, a ClusterQueue `cluster-queue` of 9 CPUs and 36Gi, a
/// LocalQueue `user-queue`), their status written as Kueue's controller
/// does, through the status subresource. The facts follow a reservation
/// that changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queue_facts_follow_kueues_own_queues() {
    let api = ApiServer::start(Workloads::WithQueues, &[NS]).await;
    api.create(
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ResourceFlavor",
        "metadata": {"name": "default-flavor"}}),
    )
    .await;
    let reservation = |cpu: &str, memory: &str| {
        json!({"flavorsReservation": [{"name": "default-flavor", "resources": [
                {"name": "cpu", "total": cpu, "borrowed": "0"},
                {"name": "memory", "total": memory, "borrowed": "0"}]}],
            "pendingWorkloads": 1, "reservingWorkloads": 1, "admittedWorkloads": 1,
            "conditions": [objects::condition("Active", "True", "Ready", "Can admit new workloads", &now())]})
    };
    let cluster_queue = api
        .create(
            json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
            "metadata": {"name": "cluster-queue"},
            "spec": {"namespaceSelector": {}, "resourceGroups": [{
                "coveredResources": ["cpu", "memory"],
                "flavors": [{"name": "default-flavor", "resources": [
                    {"name": "cpu", "nominalQuota": 9},
                    {"name": "memory", "nominalQuota": "36Gi"}]}]}]},
            "status": reservation("4", "8Gi")}),
        )
        .await;
    api.create(
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "user-queue", "namespace": NS},
        "spec": {"clusterQueue": "cluster-queue"},
        "status": {"pendingWorkloads": 1, "reservingWorkloads": 0, "admittedWorkloads": 0,
            "conditions": [objects::condition("Active", "True", "Ready",
                "Can submit new workloads to localQueue", &now())]}}),
    )
    .await;

    let job = JobRef::new(NS, "llm-9", "s1");
    let trainjob = create_trainjob(&api, "llm-9", Some("user-queue")).await;
    let mut workload = objects::workload(
        &job,
        "trainjob-llm-9-s1-7c2d1",
        &uid(&trainjob),
        "user-queue",
        2,
    );
    workload["apiVersion"] = json!("kueue.x-k8s.io/v1beta2");
    workload["spec"]["podSets"][0]["template"]["spec"]["containers"][0]["resources"] =
        json!({"requests": {"cpu": "4", "memory": "8Gi"}});
    workload["status"]["conditions"] = json!([objects::condition(
        "QuotaReserved",
        "False",
        "Pending",
        "couldn't assign flavors to pod set node: insufficient unused quota for cpu in flavor default-flavor, 3 more needed",
        &now()
    )]);
    api.create(workload).await;

    let server = dispatch_dash(&api.kubeconfig_yaml(), ModeChoice::Auto).await;
    let addr = server.addr;
    let (_, ready) = get_json(addr, "/readyz").await;
    assert_eq!(
        ready["apiVersions"]["ClusterQueue"], "kueue.x-k8s.io/v1beta2",
        "{ready}"
    );
    assert_eq!(
        ready["apiVersions"]["LocalQueue"], "kueue.x-k8s.io/v1beta2",
        "{ready}"
    );

    let queue_of = |wait: &'static str| async move {
        eventually(30, &format!("llm-9's queue facts say {wait}"), || async {
            let found = observations(addr, "llm-9").await;
            let queue = found.get(0)?.get("queue")?.clone();
            (queue["wait"] == wait).then_some(queue)
        })
        .await
    };
    // 2 × 4 CPUs asked, 5 of 9 free: blocked on CPU; memory fits.
    let blocked = queue_of("quota").await;
    assert_eq!(blocked["localQueue"], format!("{NS}/user-queue"));
    assert_eq!(blocked["clusterQueue"], "cluster-queue");
    assert_eq!(blocked["neverFits"], false);
    let rows = blocked["room"].as_array().expect("room");
    let cpu = rows
        .iter()
        .find(|r| r["resource"] == "cpu")
        .expect("a cpu row");
    assert_eq!(
        (&cpu["ask"], &cpu["free"], &cpu["nominal"], &cpu["fits"]),
        (&json!("8"), &json!("5"), &json!("9"), &json!(false)),
        "{blocked}"
    );
    let memory = rows
        .iter()
        .find(|r| r["resource"] == "memory")
        .expect("a memory row");
    assert_eq!(memory["fits"], true, "{blocked}");
    let sentence = blocked["sentence"].as_str().expect("a sentence");
    assert!(
        sentence.starts_with("needs 8 cpu; ClusterQueue cluster-queue has 5 of 9 free in flavor default-flavor (4 reserved)"),
        "{sentence}"
    );

    // Kueue's controller writes a smaller reservation: the facts follow.
    api.patch_status(&cluster_queue, reservation("1", "8Gi"))
        .await;
    let fits = queue_of("fits").await;
    let cpu = fits["room"]
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["resource"] == "cpu"))
        .expect("a cpu row");
    assert_eq!(
        (&cpu["free"], &cpu["fits"]),
        (&json!("8"), &json!(true)),
        "{fits}"
    );
    server.shutdown().await.expect("clean shutdown");
}
