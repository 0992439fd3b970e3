//! Queue facts end to end: the emulator's demo (its Kueue reserving quota
//! in a ClusterQueue and keeping LocalQueue and ClusterQueue status), the
//! server watching both queue kinds through the real kube client, and Find
//! and Inspect saying what a waiting job waits for, with the same numbers
//! as the cluster, and following it when quota frees.
//!
//! The scenario is stepped by the test itself, never by a clock: each
//! check waits for the server to catch up with a state the test made.

mod common;

use classify_wasm::queue::{line, Wait};
use common::auth::{get_as, quick_auth};
use common::*;
use dispatch_dash::serve::positions::PositionLimits;
use dispatch_dash::serve::Server;
use emulator::scenario::objects::{self, JobRef};
use emulator::scenario::{self, queues, ScenarioConfig};
use emulator::{Grant, Kind};
use serde_json::{json, Value};
use std::time::Duration;

fn scenario_config() -> ScenarioConfig {
    ScenarioConfig {
        seed: 11,
        jobs: 8,
        pods_per_job: 2,
        namespaces: vec![NS.into()],
        kueue: true,
        ..ScenarioConfig::default()
    }
}

/// The name of a Workload of `NS` waiting for quota now, with its
/// TrainJob's name and job id.
fn waiting_for_quota(emu: &emulator::Emulator) -> Option<(String, String, String)> {
    emu.list(Kind::Workload, Some(NS))
        .into_iter()
        .find_map(|wl| {
            let words = wl["status"]["conditions"]
                .as_array()?
                .iter()
                .find(|c| c["type"] == "QuotaReserved" && c["status"] == "False")?["message"]
                .as_str()?
                .to_string();
            if !words.contains("insufficient unused quota") || wl["spec"]["active"] == false {
                return None;
            }
            let trainjob = wl["metadata"]["ownerReferences"][0]["name"]
                .as_str()?
                .to_string();
            let tj = emu.get(Kind::TrainJob, NS, &trainjob)?;
            let job = tj["metadata"]["labels"][scenario::objects::JOB_ID]
                .as_str()?
                .to_string();
            Some((wl["metadata"]["name"].as_str()?.to_string(), trainjob, job))
        })
}

/// Kueue's visibility API path of the demo LocalQueue's pending list.
fn pending_workloads_path(version: &str) -> String {
    format!(
        "/apis/visibility.kueue.x-k8s.io/{version}/namespaces/{NS}/localqueues/{}/pendingworkloads",
        queues::LOCAL_QUEUE
    )
}

/// A ClusterQueue of 16 GPUs nominal, 16 more borrowed, all reserved by
/// others, with the LocalQueue of `NS` pointing at it.
fn a_full_queue(emu: &emulator::Emulator) {
    let [cq, spare] = queues::cluster_queues(2, 2);
    for object in [cq, spare, queues::local_queue(NS)] {
        emu.create(object).expect("queue");
    }
    let mut cq = emu
        .get(Kind::ClusterQueue, "", queues::CLUSTER_QUEUE)
        .unwrap();
    cq["status"] = json!({"flavorsReservation": [{"name": queues::FLAVOR,
        "resources": [{"name": queues::GPU, "total": "32", "borrowed": "16"}]}]});
    emu.update(cq).unwrap();
}

/// TrainJob `name` of `NS` with a Workload of `priority` waiting for quota
/// since `since`; returns the Workload's name.
fn a_waiting_job(emu: &emulator::Emulator, name: &str, priority: i64, since: &str) -> String {
    let job = JobRef::new(NS, name, "s1");
    let trainjob = emu
        .create(objects::trainjob(&job, 2, Some(queues::LOCAL_QUEUE), true))
        .unwrap();
    let uid = trainjob["metadata"]["uid"].as_str().unwrap().to_string();
    let workload_name = format!("trainjob-{name}-s1-a1b2c");
    let mut workload = objects::workload(&job, &workload_name, &uid, queues::LOCAL_QUEUE, 2);
    workload["spec"]["priority"] = json!(priority);
    workload["metadata"]["creationTimestamp"] = json!(since);
    workload["status"]["conditions"] = json!([queues::waiting_for_quota(16, 0, since)]);
    emu.create(workload).unwrap();
    workload_name
}

fn trainjob_entry<'a>(found: &'a Value, trainjob: &str) -> Option<&'a Value> {
    found
        .as_array()?
        .iter()
        .find(|o| o["object"]["kind"] == "TrainJob" && o["object"]["name"] == trainjob)
}

#[tokio::test]
async fn a_waiting_job_says_what_it_waits_for_and_follows_the_queue() {
    let running = emulator(true).await;
    let emu = running.emulator().clone();
    let config = scenario_config();
    let (jobs, pods) = (config.jobs, config.pods_per_job);
    let mut sc = scenario::populate(&emu, config);
    let mut waiting = waiting_for_quota(&emu);
    for _ in 0..200 {
        if waiting.is_some() {
            break;
        }
        sc.step(&emu);
        waiting = waiting_for_quota(&emu);
    }
    let (workload, trainjob, job) = waiting.expect("a job waits for quota within 200 steps");

    let server = server(&running, Settings::default()).await;
    let addr = server.addr;
    ready(addr).await;
    let find = format!("/api/v1/namespaces/{NS}/jobs/{job}");

    // The cluster's numbers, as Kueue's status says them.
    let capacity = queues::capacity(jobs, pods);
    let nominal = queues::nominal_quota(jobs, pods);
    let reserved = queues::reserved(&emu);
    let asks = queues::asks(pods);
    assert!(
        asks + reserved > capacity,
        "{asks} asked, {reserved} of {capacity} reserved"
    );

    let facts = eventually(20, "the waiting job's queue facts", || {
        let find = find.clone();
        let trainjob = trainjob.clone();
        async move {
            let (_, found) = get_json(addr, &find).await;
            let queue = trainjob_entry(&found, &trainjob)?.get("queue")?.clone();
            // The ClusterQueue's status may trail the Workloads by one
            // watch event: wait for the reservation the cluster holds now.
            let room = queue["room"].as_array()?.first()?.clone();
            (room["reserved"].as_str()?.parse::<u64>().ok()? == reserved).then_some(queue)
        }
    })
    .await;
    assert_eq!(facts["localQueue"], format!("{NS}/{}", queues::LOCAL_QUEUE));
    assert_eq!(facts["clusterQueue"], queues::CLUSTER_QUEUE);
    assert_eq!(facts["neverFits"], false);
    assert_eq!(facts["asks"][0]["resource"], queues::GPU);
    assert_eq!(facts["asks"][0]["quantity"], asks.to_string());
    let room = &facts["room"][0];
    assert_eq!(room["flavor"], queues::FLAVOR);
    assert_eq!(room["nominal"], nominal.to_string());
    assert_eq!(room["fits"], false);
    let sentence = facts["sentence"].as_str().expect("a sentence");
    assert!(
        sentence.starts_with(&format!("needs {asks} {}", queues::GPU)),
        "{sentence}"
    );
    // The ClusterQueue lends its borrowing limit's worth as one job (see
    // `queues::capacity`), so a waiting job is short even with borrowing,
    // by what Kueue's own words on the Workload say.
    let with_borrowing = asks + reserved - capacity;
    assert!(
        sentence.ends_with(&format!(
            "ClusterQueue {} has 0 of {nominal} free in flavor {} ({reserved} reserved); {} more must be released, or {with_borrowing} if it borrows to its limit from cohort {}",
            queues::CLUSTER_QUEUE,
            queues::FLAVOR,
            asks + reserved - nominal,
            queues::COHORT
        )),
        "{sentence}"
    );
    let words = emu.get(Kind::Workload, NS, &workload).unwrap()["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["type"] == "QuotaReserved")
        .unwrap()["message"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        words.ends_with(&format!(", {with_borrowing} more needed")),
        "{words}"
    );
    assert_eq!(facts["wait"], "quota");

    // Its place in line is Kueue's visibility API's, counted from 1.
    let (code, summary) = get_json(running.addr(), &pending_workloads_path("v1beta2")).await;
    assert_eq!(code, 200, "{summary}");
    let items = summary["items"].as_array().expect("items");
    let item = items
        .iter()
        .find(|i| i["metadata"]["name"] == workload.as_str())
        .expect("the waiting Workload is in line");
    let in_local_queue = item["positionInLocalQueue"].as_u64().unwrap() + 1;
    let in_cluster_queue = item["positionInClusterQueue"].as_u64().unwrap() + 1;
    let position = &facts["position"];
    assert_eq!(position["inLocalQueue"], in_local_queue, "{position}");
    assert_eq!(position["of"], items.len(), "{position}");
    assert_eq!(position["inClusterQueue"], in_cluster_queue, "{position}");
    assert_eq!(
        position["sentence"],
        format!(
            "{} of {} in {NS}/{}, {} in ClusterQueue {}",
            line::ordinal(in_local_queue),
            items.len(),
            queues::LOCAL_QUEUE,
            line::ordinal(in_cluster_queue),
            queues::CLUSTER_QUEUE
        )
    );

    // The queue objects held are counted, in objects and bytes: the
    // LocalQueue of the one namespace watched and both ClusterQueues.
    let (_, metrics) = get_text(addr, "/metrics", &[]).await;
    assert_eq!(
        metric_value(&metrics, "dispatch_dash_stored_queues"),
        Some(3.0),
        "{metrics}"
    );
    assert!(
        metric_value(&metrics, "dispatch_dash_stored_queue_bytes").is_some_and(|b| b > 0.0),
        "{metrics}"
    );

    // Inspect gives the same facts as Find.
    let (_, inspected) = get_json(
        addr,
        &format!("/api/v1/namespaces/{NS}/objects/trainjobs/{trainjob}"),
    )
    .await;
    assert_eq!(inspected["queue"], facts);

    // The queue moves: step until the cluster admits the Workload, and the
    // facts follow it.
    let admitted = |emu: &emulator::Emulator| {
        emu.get(Kind::Workload, NS, &workload).is_none_or(|wl| {
            wl["status"]["conditions"].as_array().is_some_and(|cs| {
                cs.iter()
                    .any(|c| c["type"] == "Admitted" && c["status"] == "True")
            })
        })
    };
    for _ in 0..400 {
        if admitted(&emu) {
            break;
        }
        sc.step(&emu);
    }
    assert!(admitted(&emu), "the waiting Workload was never admitted");
    if emu.get(Kind::Workload, NS, &workload).is_some() {
        eventually(20, "the facts of the admitted job", || {
            let find = find.clone();
            let trainjob = trainjob.clone();
            async move {
                let (_, found) = get_json(addr, &find).await;
                let entry = trainjob_entry(&found, &trainjob)?;
                (entry["queue"]["wait"] == "admitted").then_some(())
            }
        })
        .await;
    }
}

/// With `--auth kubernetes`, the cluster's RBAC decides how much of the
/// queue facts a caller sees: the LocalQueue's status needs `list` on
/// `localqueues` in the namespace, the ClusterQueue's quota `get` on that
/// ClusterQueue; what is withheld is said, never shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbac_decides_how_much_of_the_queue_a_caller_sees() {
    const TOKEN: &str = "alice-token";
    let running = emulator(true).await;
    let emu = running.emulator().clone();
    a_full_queue(&emu);
    a_waiting_job(&emu, "llm", 100, "2026-12-01T09:00:00Z");
    emu.set_user(TOKEN, "alice", &[]);
    emu.grant(Grant::namespaced(
        "alice",
        "list",
        "trainer.kubeflow.org",
        "trainjobs",
        NS,
    ));
    emu.grant(Grant::namespaced("alice", "list", "", "pods", NS));

    let server = server(
        &running,
        Settings {
            auth: quick_auth(),
            ..Settings::default()
        },
    )
    .await;
    let addr = server.addr;
    ready(addr).await;
    let path = format!("/api/v1/namespaces/{NS}/jobs/llm");
    let queue_as_alice = |wait: &'static str| {
        let path = path.clone();
        async move {
            eventually(20, &format!("alice is told {wait}"), || {
                let path = path.clone();
                async move {
                    let answer = get_as(addr, &path, TOKEN).await;
                    let queue = answer.json().get(0)?.get("queue")?.clone();
                    (queue["wait"] == wait).then_some(queue)
                }
            })
            .await
        }
    };

    // TrainJobs but no LocalQueues: the LocalQueue is not readable, and
    // nothing of it or its ClusterQueue is shown.
    let hidden = queue_as_alice("localQueueNotReadable").await;
    assert_eq!(hidden["clusterQueue"], Value::Null, "{hidden}");
    assert_eq!(hidden["room"], json!([]), "{hidden}");
    let sentence = hidden["sentence"].as_str().unwrap();
    assert!(
        sentence.contains(&format!("{NS}/{}", queues::LOCAL_QUEUE)),
        "{sentence}"
    );
    assert!(!sentence.contains("16"), "{sentence}");
    // Her dashboard stream's queues frame is reviewed as she is, too.
    let bearer = format!("Bearer {TOKEN}");
    let stream = format!("/api/v1/namespaces/{NS}/snapshots");
    let mut sse = SseReader::open(addr, &stream, &[("authorization", &bearer)]).await;
    assert_eq!(sse.status, 200);
    let frame = sse.next_queues(30).await.expect("a queues frame");
    let llm = frame.jobs.iter().find(|j| j.name == "llm-s1").expect("llm");
    assert_eq!(llm.queue.wait, Wait::LocalQueueNotReadable, "{llm:?}");
    assert_eq!((llm.queue.room.len(), &llm.queue.position), (0, &None));
    let queues_page = format!("/api/v1/namespaces/{NS}/queues");
    let page = get_as(addr, &queues_page, TOKEN).await.json();
    assert_eq!(
        (&page["localQueues"], &page["clusterQueues"]),
        (&json!([]), &json!([])),
        "{page}"
    );
    assert_eq!(
        page["withheld"],
        json!([format!(
            "LocalQueues withheld: you may not list localqueues in {NS}"
        )])
    );

    // LocalQueues too: its status, and the ClusterQueue withheld.
    emu.grant(Grant::namespaced(
        "alice",
        "list",
        "kueue.x-k8s.io",
        "localqueues",
        NS,
    ));
    let withheld = queue_as_alice("clusterQueueNotReadable").await;
    assert_eq!(
        withheld["clusterQueue"],
        queues::CLUSTER_QUEUE,
        "{withheld}"
    );
    assert_eq!(withheld["room"], json!([]), "{withheld}");
    let page = get_as(addr, &queues_page, TOKEN).await.json();
    assert_eq!(
        page["localQueues"][0]["name"],
        queues::LOCAL_QUEUE,
        "{page}"
    );
    assert_eq!(page["clusterQueues"], json!([]), "{page}");
    assert_eq!(
        page["withheld"],
        json!([format!(
            "ClusterQueue {0} withheld: you may not get clusterqueues/{0}",
            queues::CLUSTER_QUEUE
        )])
    );
    assert_eq!(
        page["localQueues"][0]["pendingUnavailable"],
        format!("position withheld: you may not get localqueues/pendingworkloads in {NS}")
    );
    // Nobody else asks here, and a line withheld from her (in Find, her
    // stream and this page) costs no request to Kueue for it.
    assert_eq!(
        server.positions.requests(),
        0,
        "a withheld line was fetched"
    );

    // And `get` on ClusterQueues: the quota, as without auth.
    emu.grant(Grant::cluster_wide(
        "alice",
        "get",
        "kueue.x-k8s.io",
        "clusterqueues",
    ));
    let shown = queue_as_alice("quota").await;
    assert_eq!(shown["room"][0]["reserved"], "32", "{shown}");
    assert_eq!(shown["room"][0]["nominal"], "16", "{shown}");
    let page = get_as(addr, &queues_page, TOKEN).await.json();
    assert_eq!(
        page["clusterQueues"][0]["bars"][0]["reserved"], "32",
        "{page}"
    );
    assert_eq!(page["withheld"], json!([]), "{page}");
    // Its place in line needs `get` on `localqueues/pendingworkloads` of
    // the visibility API there: withheld, and said so, until then.
    assert_eq!(shown["position"]["unavailable"], "withheld", "{shown}");
    assert_eq!(shown["position"].get("inLocalQueue"), None, "{shown}");
    assert_eq!(
        shown["position"]["sentence"],
        format!("position withheld: you may not get localqueues/pendingworkloads in {NS}")
    );
    emu.grant(Grant::namespaced(
        "alice",
        "get",
        "visibility.kueue.x-k8s.io",
        "localqueues/pendingworkloads",
        NS,
    ));
    eventually(20, "alice is shown her place in line", || async move {
        let answer = get_as(addr, &format!("/api/v1/namespaces/{NS}/jobs/llm"), TOKEN).await;
        let position = answer.json().get(0)?.get("queue")?.get("position")?.clone();
        (position["sentence"]
            == format!(
                "1st of 1 in {NS}/{}, 1st in ClusterQueue {}",
                queues::LOCAL_QUEUE,
                queues::CLUSTER_QUEUE
            ))
        .then_some(())
    })
    .await;
    // The stream she kept open follows her grants.
    loop {
        let frame = sse.next_queues(30).await.expect("a queues frame");
        let llm = frame.jobs.iter().find(|j| j.name == "llm-s1").expect("llm");
        let place = llm.queue.position.as_ref().map(|p| p.sentence.as_str());
        if place.is_some_and(|p| p.starts_with("1st of 1")) {
            assert_eq!(llm.queue.wait, Wait::Quota, "{llm:?}");
            break;
        }
    }
    drop(sse);
    server.shutdown().await.expect("clean shutdown");
}

/// The place in line comes from Kueue's visibility API, fetched at most
/// once per LocalQueue per TTL however many ask; when the API refuses the
/// server or is not served, the position says which and is never guessed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_place_in_line_is_kueues_or_said_to_be_unavailable() {
    let running = emulator(true).await;
    let emu = running.emulator().clone();
    a_full_queue(&emu);
    // Higher priority goes first, then the older.
    a_waiting_job(&emu, "llm", 100, "2026-12-01T09:00:00Z");
    a_waiting_job(&emu, "vit", 100, "2026-12-01T08:00:00Z");
    a_waiting_job(&emu, "bert", 500, "2026-12-01T10:00:00Z");

    // The default TTL: many asking at once cost one request.
    let server = server(&running, Settings::default()).await;
    let addr = server.addr;
    ready(addr).await;
    let position_of = |job: &'static str| position_in_line(addr, job);
    let llm = eventually(20, "llm's place in line", || async move {
        position_of("llm").await
    })
    .await;
    assert_eq!(
        llm["sentence"],
        format!(
            "3rd of 3 in {NS}/{}, 3rd in ClusterQueue {}",
            queues::LOCAL_QUEUE,
            queues::CLUSTER_QUEUE
        ),
        "{llm}"
    );
    assert_eq!(
        (&llm["inLocalQueue"], &llm["of"], &llm["priority"]),
        (&json!(3), &json!(3), &json!(100))
    );
    let before = server.positions.requests();
    let asked = futures::future::join_all(
        ["bert", "vit", "llm", "bert", "vit", "llm"]
            .into_iter()
            .map(position_of),
    )
    .await;
    let sentences: Vec<String> = asked
        .iter()
        .map(|p| {
            p.as_ref().expect("a position")["sentence"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(sentences[0].starts_with("1st of 3"), "{sentences:?}");
    assert!(sentences[1].starts_with("2nd of 3"), "{sentences:?}");
    assert!(
        server.positions.requests() <= before + 1,
        "six asking within the TTL fetched {} times",
        server.positions.requests() - before
    );
    server.shutdown().await.expect("clean shutdown");

    // A TTL of zero fetches on every ask, so each change below shows at
    // once.
    let server = server_with_positions(&running, Duration::ZERO).await;
    let addr = server.addr;
    ready(addr).await;
    let position_of = |job: &'static str| position_in_line(addr, job);
    let unavailable = |why: &'static str| async move {
        eventually(20, &format!("the position is {why}"), || async move {
            let position = position_of("llm").await?;
            (position["unavailable"] == why).then_some(position)
        })
        .await
    };

    // The API refuses the server: a 403.
    emu.forbid(emulator::visibility::PENDING_WORKLOADS);
    let refused = unavailable("forbidden").await;
    assert_eq!(
        refused["sentence"],
        "position not available: the server may not read Kueue's visibility API"
    );
    assert_eq!(refused.get("inLocalQueue"), None, "{refused}");
    emu.allow(emulator::visibility::PENDING_WORKLOADS);

    // A Kueue without its visibility server: a 404, and no such group.
    emu.set_visibility_served(false);
    let (code, _) = get_json(running.addr(), &pending_workloads_path("v1beta2")).await;
    assert_eq!(code, 404, "the emulator no longer serves the group");
    let missing = unavailable("notServed").await;
    assert_eq!(
        missing["sentence"],
        "position not available: the cluster does not serve Kueue's visibility API"
    );

    // Served again: the position is back.
    emu.set_visibility_served(true);
    eventually(20, "the position is back", || async move {
        let position = position_of("llm").await?;
        (position["inLocalQueue"] == 3).then_some(())
    })
    .await;
    server.shutdown().await.expect("clean shutdown");
}

/// The dashboard stream carries the same facts as Find in its `queues`
/// frames, and a new frame when a place in line changes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_stream_follows_the_place_in_line() {
    let running = emulator(true).await;
    let emu = running.emulator().clone();
    a_full_queue(&emu);
    a_waiting_job(&emu, "llm", 100, "2026-12-01T09:00:00Z");
    a_waiting_job(&emu, "vit", 100, "2026-12-01T08:00:00Z");
    let server = server_with_positions(&running, Duration::ZERO).await;
    let addr = server.addr;
    ready(addr).await;
    let place_of = |frame: &classify_wasm::wire::QueuesFrame, job: &str| {
        frame
            .jobs
            .iter()
            .find(|j| j.name == format!("{job}-s1"))
            .and_then(|j| j.queue.position.clone())
            .map(|p| p.sentence)
    };
    let mut sse = SseReader::open(addr, &format!("/api/v1/namespaces/{NS}/snapshots"), &[]).await;
    assert_eq!(sse.status, 200);
    let mut frame = sse.next_queues(30).await.expect("a queues frame");
    // A watch may still be catching up: frames follow until it has.
    while place_of(&frame, "llm").is_none_or(|p| !p.starts_with("2nd of 2")) {
        frame = sse.next_queues(30).await.expect("a queues frame");
    }
    assert!(!frame.cut);
    let (_, found) = get_json(addr, &format!("/api/v1/namespaces/{NS}/jobs/llm")).await;
    let from_find = trainjob_entry(&found, "llm-s1").expect("llm")["queue"].clone();
    let in_frame = frame.jobs.iter().find(|j| j.name == "llm-s1").expect("llm");
    assert_eq!(serde_json::to_value(&in_frame.queue).unwrap(), from_find);
    let cell = in_frame.queue.cell().expect("a waiting job has a cell");
    assert_eq!(cell.text, "2nd of 2");

    // A higher priority joins the line ahead of both: the next frame says so.
    a_waiting_job(&emu, "gpt", 900, "2026-12-01T11:00:00Z");
    let moved = loop {
        let frame = sse.next_queues(30).await.expect("a queues frame");
        if let Some(place) = place_of(&frame, "llm").filter(|p| p.starts_with("3rd of 3")) {
            break (place, frame);
        }
    };
    assert_eq!(
        place_of(&moved.1, "gpt").as_deref().map(|p| &p[..8]),
        Some("1st of 3"),
        "{:?}",
        moved.0
    );
    drop(sse);
    server.shutdown().await.expect("clean shutdown");
}

/// The Queues page's data: the LocalQueue with its pending list in
/// Kueue's order (each Workload with its TrainJob), and the ClusterQueue's
/// bars with the numbers the emulator holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queues_page_lists_the_line_and_the_quota() {
    let running = emulator(true).await;
    let emu = running.emulator().clone();
    a_full_queue(&emu);
    let llm = a_waiting_job(&emu, "llm", 100, "2026-12-01T09:00:00Z");
    let bert = a_waiting_job(&emu, "bert", 500, "2026-12-01T10:00:00Z");
    let server = server_with_positions(&running, Duration::ZERO).await;
    let addr = server.addr;
    ready(addr).await;
    let path = format!("/api/v1/namespaces/{NS}/queues");
    let page = eventually(20, "both waiting jobs are listed", || {
        let path = path.clone();
        async move {
            let (code, page) = get_json(addr, &path).await;
            assert_eq!(code, 200, "{page}");
            let pending = page["localQueues"][0]["pending"].as_array()?;
            (pending.len() == 2 && pending.iter().all(|p| p["trainJob"].is_string()))
                .then_some(page)
        }
    })
    .await;
    let local = &page["localQueues"][0];
    assert_eq!(local["name"], queues::LOCAL_QUEUE, "{page}");
    assert_eq!(local["clusterQueue"], queues::CLUSTER_QUEUE, "{page}");
    let order: Vec<(&str, &str, u64)> = local["pending"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            (
                p["workload"].as_str().unwrap(),
                p["trainJob"].as_str().unwrap(),
                p["inLocalQueue"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [(bert.as_str(), "bert-s1", 1), (llm.as_str(), "llm-s1", 2)]
    );
    let cq = &page["clusterQueues"][0];
    assert_eq!(cq["name"], queues::CLUSTER_QUEUE, "{page}");
    let bar = &cq["bars"][0];
    assert_eq!(
        (&bar["nominal"], &bar["reserved"], &bar["borrowed"]),
        (&json!("16"), &json!("32"), &json!("16")),
        "{page}"
    );
    assert_eq!(page["withheld"], json!([]));

    // Without the visibility API the line is said to be unknown, and the
    // quota is still shown.
    emu.set_visibility_served(false);
    let page = eventually(20, "the line is said to be unknown", || {
        let path = path.clone();
        async move {
            let (_, page) = get_json(addr, &path).await;
            page["localQueues"][0]
                .get("pendingUnavailable")
                .is_some()
                .then_some(page)
        }
    })
    .await;
    assert_eq!(
        page["localQueues"][0]["pendingUnavailable"],
        "position not available: the cluster does not serve Kueue's visibility API"
    );
    assert_eq!(page["localQueues"][0]["pending"], json!([]));
    assert_eq!(page["clusterQueues"][0]["bars"][0]["reserved"], "32");
    server.shutdown().await.expect("clean shutdown");
}

/// The `position` Find gives TrainJob `{job}-s1` of `NS`.
async fn position_in_line(addr: std::net::SocketAddr, job: &str) -> Option<Value> {
    let (_, found) = get_json(addr, &format!("/api/v1/namespaces/{NS}/jobs/{job}")).await;
    trainjob_entry(&found, &format!("{job}-s1"))?
        .get("queue")?
        .get("position")
        .cloned()
}

/// The server watching `NS` of `running`, its positions fetched at most
/// every `ttl` and discovery of the visibility API kept as long.
async fn server_with_positions(running: &emulator::RunningEmulator, ttl: Duration) -> Server {
    let mut settings = Settings::default();
    settings.http.positions = PositionLimits {
        ttl,
        discovery_ttl: ttl,
        ..PositionLimits::default()
    };
    server(running, settings).await
}
