//! Connection hygiene against hostile or careless clients, over real TCP on
//! port 0 in front of the emulator: half-sent requests and idle keep-alive
//! connections are closed, at the cap the longest-idle keep-alive
//! connection makes room and past a cap of busy ones a new one is refused, a client
//! that stops reading its event stream is dropped, one address cannot take
//! every stream nor every connection, the probes have a listener of their
//! own, and a foreign Host is refused.

mod common;

use std::sync::atomic::Ordering;
use std::time::Duration;

use common::*;
use dispatch_dash::serve::listen::ConnectionLimits;
use dispatch_dash::serve::HttpSettings;
use emulator::scenario::objects;
use hyper::StatusCode;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};

fn settings(http: HttpSettings) -> Settings {
    Settings {
        http,
        ..Settings::default()
    }
}

fn limits(header_read_timeout: Duration, write_timeout: Duration, max: usize) -> ConnectionLimits {
    ConnectionLimits {
        max_connections: max,
        max_connections_per_client: max,
        header_read_timeout,
        write_timeout,
    }
}

/// Reads until the server closes the connection; panics if it has not
/// within `secs`. Returns what was read.
async fn read_until_closed(stream: &mut TcpStream, secs: u64, what: &str) -> Vec<u8> {
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    let closed = tokio::time::timeout(Duration::from_secs(secs), async {
        loop {
            match stream.read(&mut chunk).await {
                Ok(0) | Err(_) => return,
                Ok(n) => got.extend_from_slice(&chunk[..n]),
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the server closes {what} within {secs} s");
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_sent_requests_and_idle_keep_alive_connections_are_closed() {
    let emu = emulator(false).await;
    let server = server(
        &emu,
        settings(HttpSettings {
            connections: limits(Duration::from_millis(300), Duration::from_secs(10), 64),
            ..HttpSettings::default()
        }),
    )
    .await;
    ready(server.addr).await;
    let mut half_sent = Vec::new();
    for _ in 0..20 {
        let mut stream = TcpStream::connect(server.addr).await.expect("connect");
        stream
            .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            .await
            .expect("write");
        half_sent.push(stream);
    }
    // While they hang, others are served.
    let (status, body) = get_text(server.addr, "/healthz", &[]).await;
    assert_eq!((status, body.as_str()), (StatusCode::OK, "ok"));
    for stream in &mut half_sent {
        let answer = read_until_closed(stream, 10, "a half-sent request").await;
        assert!(
            !answer.starts_with(b"HTTP/1.1 200"),
            "a half-sent request is not answered"
        );
    }
    // A whole request is answered; the connection then idles and is closed.
    let mut idle = TcpStream::connect(server.addr).await.expect("connect");
    idle.write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .expect("write");
    let answer = read_until_closed(&mut idle, 10, "an idle keep-alive connection").await;
    let answer = String::from_utf8_lossy(&answer);
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.ends_with("\r\n\r\nok"), "{answer}");
    // The count follows the close, so it is polled.
    eventually(10, "the 21 timeouts counted", || async {
        (server.connections.header_timeouts.load(Ordering::Relaxed) >= 21).then_some(())
    })
    .await;
    server.shutdown().await.expect("shutdown");
}

/// Opens an event stream on a raw connection and reads until its first
/// event arrived, so the connection is busy sending it.
async fn busy_stream(addr: std::net::SocketAddr) -> TcpStream {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(
            format!("GET /api/v1/namespaces/{NS}/snapshots HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                .as_bytes(),
        )
        .await
        .expect("write");
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    while !String::from_utf8_lossy(&got).contains("event: snapshot") {
        let n = tokio::time::timeout(Duration::from_secs(20), stream.read(&mut chunk))
            .await
            .expect("the stream's first event in time")
            .expect("read");
        assert!(
            n > 0,
            "the stream ended early: {}",
            String::from_utf8_lossy(&got)
        );
        got.extend_from_slice(&chunk[..n]);
    }
    stream
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_cap_of_busy_connections_a_new_one_is_closed_at_once() {
    let emu = emulator(false).await;
    let server = server(
        &emu,
        settings(HttpSettings {
            connections: limits(Duration::from_secs(120), Duration::from_secs(10), 3),
            ..HttpSettings::default()
        }),
    )
    .await;
    ready(server.addr).await;
    let open = || server.connections.open.load(Ordering::Relaxed);
    eventually(10, "the test client's connections to close", || async {
        (open() == 0).then_some(())
    })
    .await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(busy_stream(server.addr).await);
    }
    let mut refused = TcpStream::connect(server.addr).await.expect("connect");
    let _ = refused
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await;
    let answer = read_until_closed(&mut refused, 10, "a connection past the cap").await;
    assert!(answer.is_empty(), "nothing is served past the cap");
    assert_eq!(server.connections.rejected.load(Ordering::Relaxed), 1);
    assert_eq!(
        server.connections.idle_closed.load(Ordering::Relaxed),
        0,
        "a stream is never taken for idle"
    );
    drop(held.pop());
    eventually(10, "a slot to free up", || async {
        (open() == 2).then_some(())
    })
    .await;
    let (status, _) = get_text(server.addr, "/healthz", &[]).await;
    assert_eq!(status, StatusCode::OK);
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_the_cap_the_longest_idle_keep_alive_connection_makes_room() {
    let emu = emulator(false).await;
    let server = server(
        &emu,
        settings(HttpSettings {
            connections: limits(Duration::from_secs(120), Duration::from_secs(10), 3),
            ..HttpSettings::default()
        }),
    )
    .await;
    ready(server.addr).await;
    let open = || server.connections.open.load(Ordering::Relaxed);
    eventually(10, "the test client's connections to close", || async {
        (open() == 0).then_some(())
    })
    .await;
    // One stream (busy), then two keep-alive connections that each served
    // a request and now wait for the next: `oldest` first.
    let _stream = busy_stream(server.addr).await;
    let mut oldest = TcpStream::connect(server.addr).await.expect("connect");
    assert!(get_on(&mut oldest, "/healthz").await.is_some());
    let mut newer = TcpStream::connect(server.addr).await.expect("connect");
    assert!(get_on(&mut newer, "/healthz").await.is_some());
    eventually(10, "three open connections", || async {
        (open() == 3).then_some(())
    })
    .await;

    let (status, _) = get_text(server.addr, "/healthz", &[]).await;
    assert_eq!(status, StatusCode::OK, "a new client is served at the cap");
    read_until_closed(&mut oldest, 10, "the longest-idle connection").await;
    assert_eq!(server.connections.idle_closed.load(Ordering::Relaxed), 1);
    assert_eq!(server.connections.rejected.load(Ordering::Relaxed), 0);
    assert!(
        get_on(&mut newer, "/healthz").await.is_some(),
        "the less idle one still serves"
    );
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stalled_event_stream_reader_is_dropped_and_a_fresh_client_gets_its_snapshot() {
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    let server = server(
        &running,
        settings(HttpSettings {
            connections: limits(Duration::from_secs(10), Duration::from_millis(300), 64),
            ..HttpSettings::default()
        }),
    )
    .await;
    ready(server.addr).await;
    // Pods whose termination messages make a snapshot of several megabytes,
    // more than the socket buffers of a client that does not read can hold.
    let uid = create_trainjob(&emu, "big", "s1");
    create_jobset(&emu, "big", "s1", &uid);
    let message = "x".repeat(1 << 20);
    let now = emulator::time::now_rfc3339();
    for rank in 0..8 {
        let (pod, _) = running_pod("big", "s1", rank);
        let pod = objects::pod_terminated(pod, "Error", 1, &message, &now);
        emu.create(pod).expect("create pod");
    }
    eventually(20, "the big pods in the snapshot", || async {
        (count_kind(&snapshot(server.addr).await, "Pod") == 8).then_some(())
    })
    .await;

    let socket = TcpSocket::new_v4().expect("socket");
    socket.set_recv_buffer_size(4096).expect("small buffer");
    let mut stalled = socket.connect(server.addr).await.expect("connect");
    stalled
        .write_all(
            format!("GET /api/v1/namespaces/{NS}/snapshots HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
                .as_bytes(),
        )
        .await
        .expect("write");
    eventually(30, "the stalled reader to be dropped", || async {
        let dropped = server.connections.write_timeouts.load(Ordering::Relaxed) >= 1
            && server.hub.metrics.sse_clients.load(Ordering::Relaxed) == 0;
        dropped.then_some(())
    })
    .await;
    let mut fresh = SseReader::open(
        server.addr,
        &format!("/api/v1/namespaces/{NS}/snapshots"),
        &[],
    )
    .await;
    assert_eq!(fresh.status, StatusCode::OK);
    let first = fresh.next(30).await.expect("an event");
    assert_eq!(first.event, "snapshot");
    assert_eq!(count_kind(&first.json(), "Pod"), 8);
    drop(stalled);
    drop(fresh);
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_client_address_cannot_take_every_event_stream() {
    let emu = emulator(false).await;
    let server = server(
        &emu,
        settings(HttpSettings {
            max_sse_per_client: 2,
            ..HttpSettings::default()
        }),
    )
    .await;
    ready(server.addr).await;
    let path = format!("/api/v1/namespaces/{NS}/snapshots");
    let first = SseReader::open(server.addr, &path, &[]).await;
    let second = SseReader::open(server.addr, &path, &[]).await;
    assert_eq!(
        (first.status, second.status),
        (StatusCode::OK, StatusCode::OK)
    );
    let (status, body) = get_text(server.addr, &path, &[]).await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE);
    assert!(body.contains("from this address"), "{body}");
    drop(first);
    let third = eventually(10, "a freed stream slot", || {
        let path = path.clone();
        async move {
            let reader = SseReader::open(server.addr, &path, &[]).await;
            (reader.status == StatusCode::OK).then_some(reader)
        }
    })
    .await;
    drop((second, third));
    server.shutdown().await.expect("shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_foreign_host_is_refused_and_loopback_names_are_served() {
    let emu = emulator(false).await;
    let server = server(
        &emu,
        settings(HttpSettings {
            allowed_hosts: vec!["dispatch-dash.team-a.svc".into()],
            ..HttpSettings::default()
        }),
    )
    .await;
    ready(server.addr).await;
    for host in ["evil.example.com", "evil.example.com:8080", "10.1.2.3"] {
        let (status, body) = get_text(server.addr, "/api/v1/namespaces", &[("host", host)]).await;
        assert_eq!(status, StatusCode::MISDIRECTED_REQUEST, "{host}");
        assert!(!body.contains(NS), "nothing about the cluster: {body}");
    }
    for host in [
        "localhost:1234",
        "127.0.0.1",
        "[::1]:8080",
        "dispatch-dash.team-a.svc:8080",
    ] {
        let (status, _) = get_text(server.addr, "/api/v1/namespaces", &[("host", host)]).await;
        assert_eq!(status, StatusCode::OK, "{host}");
    }
    server.shutdown().await.expect("shutdown");
}

/// Sends `GET path` on `stream` (keep-alive) and reads one whole answer's
/// head and `ok`-sized body; the status line.
async fn get_on(stream: &mut TcpStream, path: &str) -> Option<String> {
    let request = format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
    stream.write_all(request.as_bytes()).await.ok()?;
    let mut got = Vec::new();
    let mut chunk = [0u8; 4096];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        got.extend_from_slice(&chunk[..n]);
    }
    let text = String::from_utf8_lossy(&got).into_owned();
    text.lines().next().map(String::from)
}

/// A connection from `source` (another loopback address) to `addr`.
async fn connect_from(source: &str, addr: std::net::SocketAddr) -> TcpStream {
    let socket = TcpSocket::new_v4().expect("socket");
    socket
        .bind(format!("{source}:0").parse().expect("source"))
        .expect("bind a loopback source address");
    socket.connect(addr).await.expect("connect")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_address_cannot_take_every_connection_and_the_probes_have_their_own() {
    let emu = emulator(false).await;
    let server = server(
        &emu,
        settings(HttpSettings {
            connections: ConnectionLimits {
                max_connections_per_client: 4,
                ..limits(Duration::from_secs(120), Duration::from_secs(10), 8)
            },
            probe_listen: Some("127.0.0.1:0".parse().expect("addr")),
            ..HttpSettings::default()
        }),
    )
    .await;
    ready(server.addr).await;
    eventually(10, "the test client's connections to close", || async {
        (server.connections.open.load(Ordering::Relaxed) == 0).then_some(())
    })
    .await;

    // Eight keep-alive clients on 127.0.0.1, one after the other: each is
    // served, and past the address's four slots each closes that
    // address's longest-idle connection, so the four newest stay.
    let mut clients = Vec::new();
    for _ in 0..8 {
        let mut stream = TcpStream::connect(server.addr).await.expect("connect");
        let status = get_on(&mut stream, "/healthz").await.expect("served");
        assert!(status.starts_with("HTTP/1.1 200"), "{status}");
        clients.push(stream);
    }
    assert_eq!(server.connections.idle_closed.load(Ordering::Relaxed), 4);
    assert_eq!(server.connections.rejected.load(Ordering::Relaxed), 0);
    let mut busy = clients.split_off(4);
    for mut oldest in clients {
        read_until_closed(&mut oldest, 10, "one of the four oldest").await;
    }
    let keep_busy = tokio::spawn(async move {
        for _ in 0..20 {
            for stream in &mut busy {
                assert!(
                    get_on(stream, "/healthz").await.is_some(),
                    "a busy client is served"
                );
            }
        }
        busy
    });

    // Another address still gets in.
    let mut other = connect_from("127.0.0.2", server.addr).await;
    let status = get_on(&mut other, "/healthz").await.expect("served");
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    let busy = keep_busy.await.expect("the busy clients");

    // With every main slot taken (four more from 127.0.0.2, one of them
    // the connection above), the probe listener answers apart, and serves
    // nothing but the probes.
    let mut others = vec![other];
    for _ in 0..3 {
        let mut stream = connect_from("127.0.0.2", server.addr).await;
        assert!(get_on(&mut stream, "/healthz").await.is_some());
        others.push(stream);
    }
    // Those eight now wait idle between requests, so a ninth client is
    // served by closing the longest idle of them.
    let mut ninth = connect_from("127.0.0.3", server.addr).await;
    let status = get_on(&mut ninth, "/healthz")
        .await
        .expect("served at the cap");
    assert!(status.starts_with("HTTP/1.1 200"), "{status}");
    assert_eq!(server.connections.idle_closed.load(Ordering::Relaxed), 5);
    let probes = server.probe_addr.expect("a probe listener");
    for (path, expected) in [
        ("/healthz", "200"),
        ("/readyz", "200"),
        ("/api/v1/namespaces", "404"),
    ] {
        let mut stream = connect_from("127.0.0.3", probes).await;
        let status = get_on(&mut stream, path)
            .await
            .expect("the probe port answers");
        assert!(status.contains(expected), "{path}: {status}");
    }
    drop((busy, others));
    server.shutdown().await.expect("shutdown");
}
