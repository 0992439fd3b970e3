//! The protocol as the real kube client sees it, over HTTP on 127.0.0.1:0.

mod common;

use std::time::{Duration, Instant};

use common::{config, get, pod, raw, serve};
use emulator::{Emulator, Kind};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::{Api, ListParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use serde_json::json;

fn names(list: &kube::core::ObjectList<Pod>) -> Vec<String> {
    list.items
        .iter()
        .map(|p| p.metadata.name.clone().unwrap())
        .collect()
}

#[tokio::test]
async fn list_get_and_resource_versions() {
    let emu = Emulator::new(config(true));
    for (ns, n) in [("team-a", "p1"), ("team-a", "p2"), ("team-b", "p3")] {
        emu.create(pod(ns, n, json!({}))).unwrap();
    }
    let (server, client) = serve(&emu).await;
    let pods: Api<Pod> = Api::namespaced(client.clone(), "team-a");
    let list = pods.list(&ListParams::default()).await.unwrap();
    assert_eq!(names(&list), ["p1", "p2"]);
    assert_eq!(
        list.metadata.resource_version.as_deref(),
        Some(emu.resource_version().to_string().as_str())
    );
    let all: Api<Pod> = Api::all(client.clone());
    assert_eq!(
        all.list(&ListParams::default()).await.unwrap().items.len(),
        3
    );

    // Every object carries uid, creationTimestamp and its own resourceVersion.
    let p1 = pods.get("p1").await.unwrap();
    assert!(p1.metadata.uid.is_some() && p1.metadata.creation_timestamp.is_some());
    let rv1: u64 = p1.metadata.resource_version.unwrap().parse().unwrap();
    let updated = emu
        .patch_status(Kind::Pod, "team-a", "p1", json!({"phase": "Running"}))
        .unwrap();
    let rv2: u64 = updated["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(rv2 > rv1);
    assert_eq!(rv2, emu.resource_version());
    let p1 = pods.get("p1").await.unwrap();
    assert_eq!(p1.status.unwrap().phase.as_deref(), Some("Running"));

    // An exact list at an older resourceVersion sees the old state.
    let old = pods
        .list(
            &ListParams::default()
                .at(&rv1.to_string())
                .matching(kube::api::VersionMatch::Exact),
        )
        .await
        .unwrap();
    assert_eq!(
        old.items[0].status.as_ref().unwrap().phase.as_deref(),
        Some("Pending")
    );

    // 404 is a Status the client understands.
    match pods.get("nope").await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 404);
            assert_eq!(s.reason, "NotFound");
            assert_eq!(s.message, "pods \"nope\" not found");
        }
        other => panic!("expected 404, got {other:?}"),
    }
    // Namespaces are listed (created implicitly).
    let nss: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(client);
    let ns_names: Vec<_> = nss
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|n| n.metadata.name.unwrap())
        .collect();
    assert_eq!(ns_names, ["team-a", "team-b"]);
    drop(server);
}

#[tokio::test]
async fn pagination_is_consistent_and_expires() {
    let emu = Emulator::new(config(true));
    for i in 0..7 {
        emu.create(pod("team-a", &format!("p{i}"), json!({})))
            .unwrap();
    }
    let (_server, client) = serve(&emu).await;
    let pods: Api<Pod> = Api::namespaced(client, "team-a");
    let first = pods.list(&ListParams::default().limit(3)).await.unwrap();
    assert_eq!(names(&first), ["p0", "p1", "p2"]);
    assert_eq!(first.metadata.remaining_item_count, Some(4));
    let token = first.metadata.continue_.clone().unwrap();
    // Changes after the first page do not show in later pages.
    emu.delete(Kind::Pod, "team-a", "p4").unwrap();
    emu.create(pod("team-a", "p35", json!({}))).unwrap();
    let second = pods
        .list(&ListParams::default().limit(3).continue_token(&token))
        .await
        .unwrap();
    assert_eq!(names(&second), ["p3", "p4", "p5"]);
    assert_eq!(
        second.metadata.resource_version,
        first.metadata.resource_version
    );
    let third = pods
        .list(
            &ListParams::default()
                .limit(3)
                .continue_token(second.metadata.continue_.as_ref().unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(names(&third), ["p6"]);
    assert!(third.metadata.continue_.is_none());
    // Once the history is compacted past the list's resourceVersion: 410.
    emu.compact();
    match pods
        .list(&ListParams::default().limit(3).continue_token(&token))
        .await
    {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 410);
            assert_eq!(s.reason, "Expired");
        }
        other => panic!("expected 410, got {other:?}"),
    }
    // A garbage token is a 400, not a crash.
    match pods.list(&ListParams::default().continue_token("zz")).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 400),
        other => panic!("expected 400, got {other:?}"),
    }
}

#[tokio::test]
async fn label_and_field_selectors() {
    let emu = Emulator::new(config(true));
    emu.create(pod("team-a", "a", json!({"app": "x", "tier": "1"})))
        .unwrap();
    emu.create(pod("team-a", "b", json!({"app": "y"}))).unwrap();
    emu.create(pod("team-a", "c", json!({"tier": "2"})))
        .unwrap();
    let (_server, client) = serve(&emu).await;
    let pods: Api<Pod> = Api::namespaced(client, "team-a");
    let sel = |s: &'static str| {
        let pods = pods.clone();
        async move { names(&pods.list(&ListParams::default().labels(s)).await.unwrap()) }
    };
    assert_eq!(sel("app=x").await, ["a"]);
    assert_eq!(sel("app==y").await, ["b"]);
    assert_eq!(sel("app!=x").await, ["b", "c"]);
    assert_eq!(sel("app in (x,y)").await, ["a", "b"]);
    assert_eq!(sel("app notin (x)").await, ["b", "c"]);
    assert_eq!(sel("tier").await, ["a", "c"]);
    assert_eq!(sel("!tier").await, ["b"]);
    assert_eq!(sel("app=x,tier=1").await, ["a"]);
    assert_eq!(sel("app,!tier").await, ["b"]);
    let by_field = pods
        .list(&ListParams::default().fields("metadata.name=c"))
        .await
        .unwrap();
    assert_eq!(names(&by_field), ["c"]);
    let by_ns = pods
        .list(&ListParams::default().fields("metadata.namespace!=team-a"))
        .await
        .unwrap();
    assert!(by_ns.items.is_empty());
    match pods.list(&ListParams::default().labels("app in (x")).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 400),
        other => panic!("expected 400, got {other:?}"),
    }
}

/// Waits for the next watcher event, skipping nothing.
async fn next<S, K>(s: &mut S) -> watcher::Event<K>
where
    S: futures::Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Unpin,
{
    tokio::time::timeout(Duration::from_secs(5), s.next())
        .await
        .expect("watcher event in time")
        .expect("stream open")
        .expect("no watcher error")
}

#[tokio::test]
async fn kube_watcher_sees_added_modified_deleted() {
    let emu = Emulator::new(config(true));
    emu.create(pod("team-a", "old", json!({"job": "j"})))
        .unwrap();
    emu.create(pod("team-a", "other", json!({"job": "k"})))
        .unwrap();
    let (_server, client) = serve(&emu).await;
    let pods: Api<Pod> = Api::namespaced(client, "team-a");
    let mut w = watcher(pods, watcher::Config::default().labels("job=j")).boxed();
    assert!(matches!(next(&mut w).await, watcher::Event::Init));
    match next(&mut w).await {
        watcher::Event::InitApply(p) => assert_eq!(p.metadata.name.as_deref(), Some("old")),
        e => panic!("{e:?}"),
    }
    assert!(matches!(next(&mut w).await, watcher::Event::InitDone));

    emu.create(pod("team-a", "new", json!({"job": "j"})))
        .unwrap();
    emu.create(pod("team-a", "ignored", json!({"job": "k"})))
        .unwrap();
    emu.patch_status(Kind::Pod, "team-a", "new", json!({"phase": "Running"}))
        .unwrap();
    let mut deleted = emu.get(Kind::Pod, "team-a", "old").unwrap();
    deleted["status"]["phase"] = json!("Failed");
    emu.update(deleted).unwrap();
    emu.delete(Kind::Pod, "team-a", "old").unwrap();

    match next(&mut w).await {
        watcher::Event::Apply(p) => assert_eq!(p.metadata.name.as_deref(), Some("new")),
        e => panic!("{e:?}"),
    }
    match next(&mut w).await {
        watcher::Event::Apply(p) => {
            assert_eq!(p.metadata.name.as_deref(), Some("new"));
            assert_eq!(p.status.unwrap().phase.as_deref(), Some("Running"));
        }
        e => panic!("{e:?}"),
    }
    assert!(matches!(next(&mut w).await, watcher::Event::Apply(_)));
    match next(&mut w).await {
        // The deletion carries the last state.
        watcher::Event::Delete(p) => {
            assert_eq!(p.metadata.name.as_deref(), Some("old"));
            assert_eq!(p.status.unwrap().phase.as_deref(), Some("Failed"));
        }
        e => panic!("{e:?}"),
    }
    // A label change that takes a pod out of the selector reads as a deletion.
    emu.merge_patch(
        Kind::Pod,
        "team-a",
        "new",
        json!({"metadata": {"labels": {"job": "z"}}}),
    )
    .unwrap();
    assert!(matches!(next(&mut w).await, watcher::Event::Delete(_)));
}

#[tokio::test]
async fn bookmarks_and_timeout() {
    let emu = Emulator::new(config(true));
    emu.create(pod("team-a", "p", json!({}))).unwrap();
    let (_server, client) = serve(&emu).await;
    let pods: Api<Pod> = Api::namespaced(client, "team-a");
    let rv = emu.resource_version().to_string();

    let start = Instant::now();
    let mut stream = pods
        .watch(&WatchParams::default().timeout(1), &rv)
        .await
        .unwrap()
        .boxed();
    emu.create(pod("team-a", "q", json!({}))).unwrap();
    let mut saw_added = false;
    let mut bookmark_rv = None;
    while let Some(ev) = stream.try_next().await.unwrap() {
        match ev {
            WatchEvent::Added(p) => saw_added |= p.metadata.name.as_deref() == Some("q"),
            WatchEvent::Bookmark(b) => bookmark_rv = Some(b.metadata.resource_version),
            other => panic!("unexpected {other:?}"),
        }
    }
    // timeoutSeconds=1 closed the stream cleanly, after a bookmark or more.
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert!(saw_added);
    assert_eq!(bookmark_rv, Some(emu.resource_version().to_string()));
}

#[tokio::test]
async fn watch_from_compacted_version_is_gone_and_watcher_recovers() {
    let emu = Emulator::new(config(true));
    emu.create(pod("team-a", "p0", json!({}))).unwrap();
    let (_server, client) = serve(&emu).await;
    let pods: Api<Pod> = Api::namespaced(client, "team-a");
    let old_rv = emu.resource_version().to_string();
    emu.create(pod("team-a", "p1", json!({}))).unwrap();
    emu.compact();

    // A raw watch from before the compaction gets an ERROR event with 410.
    let mut stream = pods
        .watch(&WatchParams::default(), &old_rv)
        .await
        .unwrap()
        .boxed();
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Error(e)) => {
            assert_eq!(e.code, 410);
            assert_eq!(e.reason, "Expired");
        }
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
    assert!(stream.try_next().await.unwrap().is_none());

    // kube's watcher: its re-watch hits a compacted history, gets 410 and
    // recovers by listing again.
    let mut w = watcher(pods, watcher::Config::default()).boxed();
    assert!(matches!(next(&mut w).await, watcher::Event::Init));
    let mut init = 0;
    while let watcher::Event::InitApply(_) = next(&mut w).await {
        init += 1;
    }
    assert_eq!(init, 2);
    emu.set_latency(Duration::from_millis(300));
    emu.expire_all_watches();
    for i in 2..6 {
        emu.create(pod("team-a", &format!("p{i}"), json!({})))
            .unwrap();
    }
    emu.compact();
    let mut saw_error = false;
    let relisted = loop {
        let ev = tokio::time::timeout(Duration::from_secs(5), w.next())
            .await
            .unwrap()
            .unwrap();
        match ev {
            Err(_) => saw_error = true,
            Ok(watcher::Event::Init) => {
                let mut n = 0;
                loop {
                    match next(&mut w).await {
                        watcher::Event::InitApply(_) => n += 1,
                        watcher::Event::InitDone => break,
                        e => panic!("{e:?}"),
                    }
                }
                break n;
            }
            Ok(other) => panic!("expected a re-list, got {other:?}"),
        }
    };
    emu.set_latency(Duration::ZERO);
    assert!(saw_error, "the watcher saw the 410");
    assert_eq!(relisted, 6);
}

#[tokio::test]
async fn forbidden_nodes_and_kueue_switch() {
    // Kueue on: the group is discovered and Workloads are served.
    let emu = Emulator::new(config(true));
    emu.create(emulator::scenario::objects::node(
        "n1",
        "True",
        "2026-11-29T10:00:00Z",
    ))
    .unwrap();
    let (server, client) = serve(&emu).await;
    let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
    assert!(discovery.has_group("kueue.x-k8s.io"));
    assert!(discovery.has_group("trainer.kubeflow.org"));
    assert!(discovery.has_group("jobset.x-k8s.io"));
    let nodes: Api<Node> = Api::all(client.clone());
    assert_eq!(
        nodes
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    emu.forbid("nodes");
    match nodes.list(&ListParams::default()).await {
        Err(kube::Error::Api(s)) => {
            assert_eq!(s.code, 403);
            assert_eq!(s.reason, "Forbidden");
            assert!(
                s.message.contains("cannot list resource \"nodes\""),
                "{}",
                s.message
            );
        }
        other => panic!("expected 403, got {other:?}"),
    }
    emu.allow("nodes");
    assert!(nodes.list(&ListParams::default()).await.is_ok());
    let v = client.apiserver_version().await.unwrap();
    assert_eq!(v.major, "1");
    drop(server);

    // Kueue off: no group in discovery, 404 on the Workload API.
    let plain = Emulator::new(config(false));
    let (server, client) = serve(&plain).await;
    let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
    assert!(!discovery.has_group("kueue.x-k8s.io"));
    assert!(discovery.has_group("trainer.kubeflow.org"));
    let ar = kube::discovery::ApiResource {
        group: "kueue.x-k8s.io".into(),
        version: "v1beta1".into(),
        api_version: "kueue.x-k8s.io/v1beta1".into(),
        kind: "Workload".into(),
        plural: "workloads".into(),
    };
    let workloads: Api<kube::api::DynamicObject> = Api::namespaced_with(client, "team-a", &ar);
    match workloads.list(&ListParams::default()).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 404),
        other => panic!("expected 404, got {other:?}"),
    }
    let (code, _) = get(server.addr(), "/apis/kueue.x-k8s.io/v1beta1").await;
    assert_eq!(code, 404);
}

#[tokio::test]
async fn bad_http_input_gets_status_objects() {
    let emu = Emulator::new(config(true));
    let (server, _client) = serve(&emu).await;
    let addr = server.addr();
    let (code, body) = raw(addr, "POST /api/v1/namespaces/a/pods HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}").await;
    assert_eq!(code, 405);
    assert!(
        body.contains("\"kind\":\"Status\"") && body.contains("\"code\":405"),
        "{body}"
    );
    for (path, want) in [
        ("/api/v1/namespaces/a/pods?limit=abc", 400),
        ("/api/v1/pods?watch=true&resourceVersion=xyz", 400),
        ("/api/v1/pods?labelSelector=a%20in%20(", 400),
        ("/api/v1/pods?timeoutSeconds=-1&watch=1", 400),
        ("/api/v1/pods?continue=%ff%fe", 400),
        ("/api/v1/nothing", 404),
        ("/apis/a/b/c/d/e/f/g/h", 404),
        ("/api/v1/pods/x", 404),
        ("/%%%", 404),
        ("/api/v1/namespaces/a/pods/p/exec", 404),
    ] {
        let (code, body) = get(addr, path).await;
        assert_eq!(code, want, "{path}: {body}");
        assert!(body.contains("\"kind\":\"Status\""), "{path}: {body}");
    }
    // And the server is still fine.
    let (code, body) = get(addr, "/api").await;
    assert_eq!(code, 200);
    assert!(body.contains("APIVersions"));
}

#[tokio::test]
async fn restart_keeps_or_wipes_state_on_the_same_port() {
    let emu = Emulator::new(config(true));
    emu.create(pod("team-a", "p", json!({}))).unwrap();
    let (server, client) = serve(&emu).await;
    let addr = server.addr();
    let pods: Api<Pod> = Api::namespaced(client.clone(), "team-a");
    let mut stream = pods
        .watch(&WatchParams::default(), "0")
        .await
        .unwrap()
        .boxed();
    assert!(matches!(
        stream.try_next().await.unwrap(),
        Some(WatchEvent::Added(_))
    ));

    let server = server.restart(false).await.unwrap();
    assert_eq!(server.addr(), addr);
    // The open watch was cut by the restart.
    let ended = tokio::time::timeout(Duration::from_secs(3), async {
        while let Ok(Some(_)) = stream.try_next().await {}
    })
    .await;
    assert!(ended.is_ok(), "watch ended by restart");
    assert_eq!(
        pods.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );

    let server = server.restart(true).await.unwrap();
    assert_eq!(server.addr(), addr);
    assert!(pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .is_empty());
    server.shutdown().await;
    assert!(pods.list(&ListParams::default()).await.is_err());
}

/// Opens a raw watch, runs `fault` once the stream is open, and returns the
/// raw response (headers and chunked body) up to the connection's end.
async fn raw_watch_until_closed(
    emu: &Emulator,
    addr: std::net::SocketAddr,
    fault: fn(&Emulator),
) -> String {
    let reader = tokio::spawn(raw(
        addr,
        "GET /api/v1/namespaces/team-a/pods?watch=true HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ));
    tokio::time::sleep(Duration::from_millis(150)).await;
    emu.create(pod(
        "team-a",
        &format!("p{}", emu.resource_version()),
        json!({}),
    ))
    .unwrap();
    tokio::time::sleep(Duration::from_millis(100)).await;
    fault(emu);
    let (code, body) = tokio::time::timeout(Duration::from_secs(3), reader)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(code, 200);
    body
}

#[tokio::test]
async fn expire_ends_watches_cleanly_and_drop_cuts_them() {
    let emu = Emulator::new(config(true));
    let (server, _client) = serve(&emu).await;
    // A clean end: the chunked body is terminated by its zero-size chunk.
    let body = raw_watch_until_closed(&emu, server.addr(), Emulator::expire_all_watches).await;
    assert!(body.contains("\"type\":\"ADDED\""), "{body}");
    assert!(body.ends_with("0\r\n\r\n"), "{body:?}");
    // A dropped connection: the body stops without its final chunk.
    let body = raw_watch_until_closed(&emu, server.addr(), Emulator::drop_connections).await;
    assert!(body.contains("\"type\":\"ADDED\""), "{body}");
    assert!(!body.ends_with("0\r\n\r\n"), "{body:?}");
}

#[tokio::test]
async fn streaming_list_and_single_object_watch() {
    let emu = Emulator::new(config(true));
    emu.create(pod("team-a", "a", json!({}))).unwrap();
    emu.create(pod("team-a", "b", json!({}))).unwrap();
    let (_server, client) = serve(&emu).await;
    let pods: Api<Pod> = Api::namespaced(client, "team-a");

    // sendInitialEvents: initial ADDED events, then the initial-events-end
    // bookmark, which kube's watcher turns into InitDone.
    let mut w = watcher(pods.clone(), watcher::Config::default().streaming_lists()).boxed();
    assert!(matches!(next(&mut w).await, watcher::Event::Init));
    assert!(matches!(next(&mut w).await, watcher::Event::InitApply(_)));
    assert!(matches!(next(&mut w).await, watcher::Event::InitApply(_)));
    assert!(matches!(next(&mut w).await, watcher::Event::InitDone));

    // kube watches one object with fieldSelector=metadata.name=<name>.
    let mut one = kube::runtime::watcher::watch_object(pods, "b").boxed();
    let first = tokio::time::timeout(Duration::from_secs(5), one.next())
        .await
        .unwrap();
    assert_eq!(
        first.unwrap().unwrap().unwrap().metadata.name.as_deref(),
        Some("b")
    );
    emu.patch_status(Kind::Pod, "team-a", "a", json!({"phase": "Running"}))
        .unwrap();
    emu.patch_status(Kind::Pod, "team-a", "b", json!({"phase": "Running"}))
        .unwrap();
    let changed = tokio::time::timeout(Duration::from_secs(5), one.next())
        .await
        .unwrap();
    let changed = changed.unwrap().unwrap().unwrap();
    assert_eq!(changed.metadata.name.as_deref(), Some("b"));
    assert_eq!(changed.status.unwrap().phase.as_deref(), Some("Running"));
    emu.delete(Kind::Pod, "team-a", "b").unwrap();
    let gone = tokio::time::timeout(Duration::from_secs(5), one.next())
        .await
        .unwrap();
    assert!(gone.unwrap().unwrap().is_none());
}

/// A watch list is checked as the API server checks it, and refused with
/// `422 Invalid` (a Status the client can read) by a server without the
/// WatchList feature, where a client must list instead.
#[tokio::test]
async fn watch_lists_are_validated_and_refused_where_not_served() {
    let emu = Emulator::new(config(true));
    emu.create(pod("team-a", "a", json!({}))).unwrap();
    let (server, client) = serve(&emu).await;
    let addr = server.addr();
    let invalid = [
        // sendInitialEvents without resourceVersionMatch=NotOlderThan
        "/api/v1/pods?watch=true&sendInitialEvents=true&allowWatchBookmarks=true",
        "/api/v1/pods?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=Exact",
        // resourceVersionMatch on a plain watch
        "/api/v1/pods?watch=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true",
        // the end of the initial events is a bookmark: they must be allowed
        "/api/v1/pods?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan",
    ];
    for path in invalid {
        let (code, body) = get(addr, path).await;
        assert_eq!(code, 422, "{path}: {body}");
        assert!(
            body.contains("\"reason\":\"Invalid\"") && body.contains("Forbidden"),
            "{path}: {body}"
        );
    }
    let pods: Api<Pod> = Api::namespaced(client, "team-a");
    let params = WatchParams::streaming_lists().timeout(1);
    assert!(pods.watch(&params, "").await.is_ok(), "served by default");

    emu.set_watch_list_served(false);
    match pods.watch(&params, "").await {
        Err(kube::Error::Api(status)) => {
            assert_eq!(status.code, 422);
            assert!(status.message.contains("forbidden for watch"), "{status:?}");
        }
        Err(other) => panic!("a Status, not {other}"),
        Ok(_) => panic!("a server without the WatchList feature refuses it"),
    }
    // Plain lists and watches are unaffected.
    assert_eq!(
        pods.list(&ListParams::default()).await.unwrap().items.len(),
        1
    );
    assert!(pods
        .watch(&WatchParams::default().timeout(1), "0")
        .await
        .is_ok());
}

/// The queue kinds as the real client reads them: discovered in Kueue's
/// group, a ClusterQueue cluster-scoped, and its cohort under the name of
/// the version asked for (`cohortName` at v1beta2, `cohort` at v1beta1),
/// in a get, a list and a watch alike.
#[tokio::test]
async fn queues_are_served_at_both_versions_with_the_cohort_renamed() {
    use emulator::scenario::queues;
    let emu = Emulator::new(config(true));
    emu.create(queues::cluster_queue(queues::CLUSTER_QUEUE, 64, None))
        .unwrap();
    emu.create(queues::local_queue("team-a")).unwrap();
    // Written at v1beta1 with `cohort`: stored with `cohortName`.
    emu.create(
        json!({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
        "metadata": {"name": "old-cq"}, "spec": {"cohort": "legacy"}}),
    )
    .unwrap();
    assert_eq!(
        emu.get(Kind::ClusterQueue, "", "old-cq").unwrap()["spec"]["cohortName"],
        "legacy"
    );
    let (_server, client) = serve(&emu).await;
    let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
    let kueue = discovery.get("kueue.x-k8s.io").unwrap();
    let (cq_resource, caps) = kueue
        .recommended_resources()
        .into_iter()
        .find(|(r, _)| r.kind == "ClusterQueue")
        .unwrap();
    assert_eq!(cq_resource.version, "v1beta2");
    assert_eq!(caps.scope, kube::discovery::Scope::Cluster);
    assert!(kueue
        .recommended_resources()
        .iter()
        .any(|(r, c)| r.kind == "LocalQueue" && c.scope == kube::discovery::Scope::Namespaced));

    let at = |version: &str, kind: &str, plural: &str| kube::discovery::ApiResource {
        group: "kueue.x-k8s.io".into(),
        version: version.into(),
        api_version: format!("kueue.x-k8s.io/{version}"),
        kind: kind.into(),
        plural: plural.into(),
    };
    let v2: Api<kube::api::DynamicObject> = Api::all_with(
        client.clone(),
        &at("v1beta2", "ClusterQueue", "clusterqueues"),
    );
    let v1: Api<kube::api::DynamicObject> = Api::all_with(
        client.clone(),
        &at("v1beta1", "ClusterQueue", "clusterqueues"),
    );
    let got = v2.get(queues::CLUSTER_QUEUE).await.unwrap();
    assert_eq!(got.data["spec"]["cohortName"], queues::COHORT);
    assert!(got.data["spec"].get("cohort").is_none());
    let old = v1.get(queues::CLUSTER_QUEUE).await.unwrap();
    assert_eq!(old.data["spec"]["cohort"], queues::COHORT);
    assert!(old.data["spec"].get("cohortName").is_none());
    assert_eq!(
        old.types.as_ref().unwrap().api_version,
        "kueue.x-k8s.io/v1beta1"
    );
    let listed = v1.list(&ListParams::default()).await.unwrap();
    let cohorts: Vec<_> = listed
        .items
        .iter()
        .map(|q| q.data["spec"]["cohort"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(cohorts, [queues::COHORT, "legacy"]);

    let lq: Api<kube::api::DynamicObject> = Api::namespaced_with(
        client.clone(),
        "team-a",
        &at("v1beta1", "LocalQueue", "localqueues"),
    );
    let local = lq.get(queues::LOCAL_QUEUE).await.unwrap();
    assert_eq!(local.data["spec"]["clusterQueue"], queues::CLUSTER_QUEUE);

    // A change seen through a v1beta1 watch carries the old name too.
    let rv = listed.metadata.resource_version.unwrap();
    let mut events = v1
        .watch(&WatchParams::default().timeout(5), &rv)
        .await
        .unwrap()
        .boxed();
    let mut renamed = queues::cluster_queue(queues::CLUSTER_QUEUE, 64, None);
    renamed["spec"]["cohortName"] = json!("other");
    emu.update(renamed).unwrap();
    match events.try_next().await.unwrap() {
        Some(WatchEvent::Modified(q)) => {
            assert_eq!(q.data["spec"]["cohort"], "other");
            assert!(q.data["spec"].get("cohortName").is_none());
        }
        other => panic!("expected MODIFIED, got {other:?}"),
    }
}

/// Kueue's visibility API: a LocalQueue's pending Workloads in admission
/// order (priority, then age) with their positions in the LocalQueue and
/// in the ClusterQueue its neighbours share; `limit` and `offset`; 403 when
/// refused, 404 when not served, and the group in discovery only then.
#[tokio::test]
async fn visibility_lists_pending_workloads_with_their_positions() {
    use emulator::scenario::queues;
    let emu = Emulator::new(config(true));
    emu.create(queues::cluster_queue(queues::CLUSTER_QUEUE, 64, None))
        .unwrap();
    emu.create(queues::local_queue("team-a")).unwrap();
    emu.create(queues::local_queue("team-b")).unwrap();
    let workload = |ns: &str, name: &str, priority: i64, created: &str, reserved: &str| {
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
            "metadata": {"name": name, "namespace": ns, "creationTimestamp": created},
            "spec": {"queueName": queues::LOCAL_QUEUE, "priority": priority,
                "podSets": [queues::pod_set(1)]},
            "status": {"conditions": [{"type": "QuotaReserved", "status": reserved}]}})
    };
    for w in [
        workload("team-a", "w1", 0, "2026-12-01T09:00:00Z", "False"),
        workload("team-b", "w2", 100, "2026-12-01T09:05:00Z", "False"),
        workload("team-a", "w3", 0, "2026-12-01T09:10:00Z", "False"),
        workload("team-a", "w4", 1000, "2026-12-01T08:00:00Z", "True"),
    ] {
        emu.create(w).unwrap();
    }
    let (server, client) = serve(&emu).await;
    let discovery = kube::Discovery::new(client.clone()).run().await.unwrap();
    assert!(discovery.has_group("visibility.kueue.x-k8s.io"));
    let path = |version: &str, ns: &str, query: &str| {
        format!("/apis/visibility.kueue.x-k8s.io/{version}/namespaces/{ns}/localqueues/gpu/pendingworkloads{query}")
    };
    let positions = |body: &str| -> Vec<(String, u64, u64)> {
        let summary: serde_json::Value = serde_json::from_str(body).unwrap();
        summary["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| {
                (
                    i["metadata"]["name"].as_str().unwrap().to_string(),
                    i["positionInLocalQueue"].as_u64().unwrap(),
                    i["positionInClusterQueue"].as_u64().unwrap(),
                )
            })
            .collect()
    };
    for version in ["v1beta2", "v1beta1"] {
        let (code, body) = get(server.addr(), &path(version, "team-a", "")).await;
        assert_eq!(code, 200, "{body}");
        assert!(
            body.contains("\"kind\":\"PendingWorkloadsSummary\""),
            "{body}"
        );
        assert!(
            body.contains(&format!(
                "\"apiVersion\":\"visibility.kueue.x-k8s.io/{version}\""
            )),
            "{body}"
        );
        assert_eq!(
            positions(&body),
            [("w1".to_string(), 0, 1), ("w3".to_string(), 1, 2)]
        );
    }
    let (_, body) = get(server.addr(), &path("v1beta2", "team-b", "")).await;
    assert_eq!(positions(&body), [("w2".to_string(), 0, 0)]);
    let (_, body) = get(
        server.addr(),
        &path("v1beta2", "team-a", "?limit=1&offset=1"),
    )
    .await;
    assert_eq!(positions(&body), [("w3".to_string(), 1, 2)]);
    let (code, body) = get(server.addr(), &path("v1beta2", "team-a", "?limit=x")).await;
    assert_eq!(code, 400, "{body}");
    let (code, _) = get(
        server.addr(),
        "/apis/visibility.kueue.x-k8s.io/v1beta2/namespaces/team-a/localqueues/nope/pendingworkloads",
    )
    .await;
    assert_eq!(code, 404);

    emu.forbid(emulator::visibility::PENDING_WORKLOADS);
    let (code, body) = get(server.addr(), &path("v1beta2", "team-a", "")).await;
    assert_eq!(code, 403, "{body}");
    emu.allow(emulator::visibility::PENDING_WORKLOADS);

    emu.set_visibility_served(false);
    let (code, _) = get(server.addr(), &path("v1beta2", "team-a", "")).await;
    assert_eq!(code, 404);
    let discovery = kube::Discovery::new(client).run().await.unwrap();
    assert!(!discovery.has_group("visibility.kueue.x-k8s.io"));
    assert!(discovery.has_group("kueue.x-k8s.io"));
}
