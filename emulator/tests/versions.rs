//! Workloads served in the versions Kueue's CRD has: discovery as a real API
//! server answers it, objects at the version of the path, a `Warning` on the
//! deprecated version, and the counters tests rely on.

mod common;

use common::{config, get, get_with_head, serve};
use emulator::{Emulator, EmulatorConfig, Kind, WorkloadVersions};
use kube::api::{Api, DynamicObject, ListParams};
use kube::discovery::ApiResource;
use serde_json::{json, Value};

fn emulator(versions: WorkloadVersions) -> Emulator {
    Emulator::new(EmulatorConfig {
        workload_versions: versions,
        ..config(true)
    })
}

/// A Workload written with `api_version` (the scenario writes one; a
/// controller may write either).
fn workload(api_version: &str, name: &str) -> Value {
    json!({
        "apiVersion": api_version,
        "kind": "Workload",
        "metadata": {"name": name, "namespace": "team-a"},
        "spec": {"active": true},
    })
}

fn workloads_at(client: kube::Client, version: &str) -> Api<DynamicObject> {
    let ar = ApiResource {
        group: "kueue.x-k8s.io".into(),
        version: version.into(),
        api_version: format!("kueue.x-k8s.io/{version}"),
        kind: "Workload".into(),
        plural: "workloads".into(),
    };
    Api::namespaced_with(client, "team-a", &ar)
}

async fn kueue_group(addr: std::net::SocketAddr) -> Value {
    let (code, body) = get(addr, "/apis").await;
    assert_eq!(code, 200);
    let groups: Value = serde_json::from_str(&body).unwrap();
    groups["groups"]
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "kueue.x-k8s.io")
        .cloned()
        .unwrap_or(Value::Null)
}

fn versions_of(group: &Value) -> Vec<String> {
    group["versions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test]
async fn both_versions_are_discovered_and_v1beta1_warns_and_is_counted() {
    let emu = emulator(WorkloadVersions::Both);
    emu.create(workload("kueue.x-k8s.io/v1beta1", "w1"))
        .unwrap();
    emu.create(workload("kueue.x-k8s.io/v1beta2", "w2"))
        .unwrap();
    let (server, client) = serve(&emu).await;
    let addr = server.addr();

    let group = kueue_group(addr).await;
    assert_eq!(versions_of(&group), ["v1beta2", "v1beta1"]);
    assert_eq!(group["preferredVersion"]["version"], "v1beta2");
    let (code, body) = get(addr, "/apis/kueue.x-k8s.io").await;
    assert_eq!(code, 200);
    let doc: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(doc["kind"], "APIGroup");
    assert_eq!(
        doc["preferredVersion"]["groupVersion"],
        "kueue.x-k8s.io/v1beta2"
    );
    for v in ["v1beta1", "v1beta2"] {
        let (code, body) = get(addr, &format!("/apis/kueue.x-k8s.io/{v}")).await;
        assert_eq!(code, 200, "{v}");
        let doc: Value = serde_json::from_str(&body).unwrap();
        assert_eq!(doc["groupVersion"], format!("kueue.x-k8s.io/{v}"));
        assert_eq!(doc["resources"][0]["name"], "workloads");
    }
    assert_eq!(
        emu.deprecated_requests(),
        0,
        "discovery is no request for the kind"
    );

    // v1beta2: objects at v1beta2, whatever version they were written with.
    let list = workloads_at(client.clone(), "v1beta2")
        .list(&ListParams::default())
        .await
        .unwrap();
    assert_eq!(list.items.len(), 2);
    for item in &list.items {
        assert_eq!(
            item.types.as_ref().unwrap().api_version,
            "kueue.x-k8s.io/v1beta2"
        );
    }
    let (_, head, body) = get_with_head(
        addr,
        "/apis/kueue.x-k8s.io/v1beta2/namespaces/team-a/workloads/w1",
    )
    .await;
    assert!(!head.to_ascii_lowercase().contains("warning:"), "{head}");
    assert_eq!(
        serde_json::from_str::<Value>(&body).unwrap()["apiVersion"],
        "kueue.x-k8s.io/v1beta2"
    );
    assert_eq!(emu.deprecated_requests(), 0);
    assert_eq!(emu.requests(Kind::Workload, "list"), 1);
    assert_eq!(emu.requests(Kind::Workload, "get"), 1);

    // v1beta1: the same objects at v1beta1, with the CRD's warning.
    let list = workloads_at(client.clone(), "v1beta1")
        .list(&ListParams::default())
        .await
        .unwrap();
    assert!(list
        .items
        .iter()
        .all(|i| i.types.as_ref().unwrap().api_version == "kueue.x-k8s.io/v1beta1"));
    let (code, head, body) = get_with_head(
        addr,
        "/apis/kueue.x-k8s.io/v1beta1/namespaces/team-a/workloads?watch=true&timeoutSeconds=1",
    )
    .await;
    assert_eq!(code, 200);
    assert!(
        head.contains(
            "warning: 299 - \"kueue.x-k8s.io/v1beta1 Workload is deprecated; use kueue.x-k8s.io/v1beta2\""
        ),
        "{head}"
    );
    let first: Value =
        serde_json::from_str(body.lines().find(|l| l.starts_with('{')).unwrap()).unwrap();
    assert_eq!(first["object"]["apiVersion"], "kueue.x-k8s.io/v1beta1");
    assert_eq!(emu.deprecated_requests(), 2);
    assert_eq!(emu.requests(Kind::Workload, "watch"), 1);
    // Stored once, at the storage version.
    assert_eq!(
        emu.get(Kind::Workload, "team-a", "w1").unwrap()["apiVersion"],
        "kueue.x-k8s.io/v1beta2"
    );
}

#[tokio::test]
async fn one_version_only_answers_404_at_the_other() {
    for (versions, served, gone) in [
        (WorkloadVersions::V1beta2Only, "v1beta2", "v1beta1"),
        (WorkloadVersions::V1beta1Only, "v1beta1", "v1beta2"),
    ] {
        let emu = emulator(versions);
        emu.create(workload("kueue.x-k8s.io/v1beta1", "w1"))
            .unwrap();
        let (server, client) = serve(&emu).await;
        let group = kueue_group(server.addr()).await;
        assert_eq!(versions_of(&group), [served]);
        assert_eq!(group["preferredVersion"]["version"], served);
        let (code, _) = get(server.addr(), &format!("/apis/kueue.x-k8s.io/{gone}")).await;
        assert_eq!(code, 404);
        match workloads_at(client.clone(), gone)
            .list(&ListParams::default())
            .await
        {
            Err(kube::Error::Api(s)) => assert_eq!(s.code, 404),
            other => panic!("expected 404 at {gone}, got {other:?}"),
        }
        let list = workloads_at(client.clone(), served)
            .list(&ListParams::default())
            .await
            .unwrap();
        assert_eq!(list.items.len(), 1);
        assert_eq!(
            emu.deprecated_requests(),
            0,
            "one version alone is not deprecated"
        );
        assert_eq!(
            list.items[0].types.as_ref().unwrap().api_version,
            format!("kueue.x-k8s.io/{served}")
        );
        // An upgrade (or downgrade) switches what is served, objects kept.
        emu.set_workload_versions(WorkloadVersions::Both);
        let list = workloads_at(client, gone)
            .list(&ListParams::default())
            .await
            .unwrap();
        assert_eq!(list.items.len(), 1);
        assert_eq!(emu.deprecated_requests(), u64::from(gone == "v1beta1"));
    }
}

#[tokio::test]
async fn a_verb_can_be_forbidden_alone_and_requests_are_counted_when_refused() {
    let emu = Emulator::new(config(true));
    let (server, _client) = serve(&emu).await;
    emu.forbid_verb("trainjobs", "watch");
    let list = "/apis/trainer.kubeflow.org/v1alpha1/namespaces/team-a/trainjobs";
    assert_eq!(get(server.addr(), list).await.0, 200);
    let (code, body) = get(server.addr(), &format!("{list}?watch=true")).await;
    assert_eq!(code, 403);
    assert!(body.contains("cannot watch resource"), "{body}");
    assert_eq!(emu.requests(Kind::TrainJob, "list"), 1);
    assert_eq!(emu.requests(Kind::TrainJob, "watch"), 1);
    emu.allow("trainjobs");
    let (code, _) = get(
        server.addr(),
        &format!("{list}?watch=true&timeoutSeconds=1"),
    )
    .await;
    assert_eq!(code, 200);
    assert_eq!(emu.requests(Kind::TrainJob, "watch"), 2);
}
