//! Native TLS (`--tls-cert-file`, `--tls-key-file`) over real TCP on port
//! 0 in front of the emulator: the server answers HTTPS with its
//! certificate, marks the session cookie `Secure`, closes a client that
//! never finishes its handshake, swaps in a renewed certificate for new
//! connections, and keeps the old one when the renewal is broken. A bad
//! pair at start is an error naming the file.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::*;
use dispatch_dash::serve::listen::ConnectionLimits;
use dispatch_dash::serve::tls::{TlsConfig, TlsFiles};
use dispatch_dash::serve::HttpSettings;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// A self-signed certificate for localhost and 127.0.0.1, as PEM, and its
/// DER (to tell which one a connection was shown).
fn certificate() -> (String, String, CertificateDer<'static>) {
    let signed = rcgen::generate_simple_self_signed(vec!["localhost".into(), "127.0.0.1".into()])
        .expect("a certificate");
    (
        signed.cert.pem(),
        signed.signing_key.serialize_pem(),
        signed.cert.der().clone(),
    )
}

fn write_pair(dir: &TempDir, cert: &str, key: &str) -> TlsFiles {
    let files = TlsFiles {
        cert: dir.0.join("tls.crt"),
        key: dir.0.join("tls.key"),
    };
    std::fs::write(&files.cert, cert).expect("write cert");
    std::fs::write(&files.key, key).expect("write key");
    files
}

/// A client that trusts exactly `roots`.
fn connector(roots: &[&CertificateDer<'static>]) -> tokio_rustls::TlsConnector {
    let mut store = rustls::RootCertStore::empty();
    for root in roots {
        store.add((*root).clone()).expect("a root");
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("protocols")
        .with_root_certificates(store)
        .with_no_client_auth();
    tokio_rustls::TlsConnector::from(Arc::new(config))
}

/// One HTTPS request; returns the certificate the server showed and the
/// whole response text.
async fn https(
    addr: std::net::SocketAddr,
    connector: &tokio_rustls::TlsConnector,
    request: &str,
) -> (CertificateDer<'static>, String) {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let name = ServerName::try_from("localhost").expect("name");
    let mut tls = connector.connect(name, tcp).await.expect("TLS handshake");
    let shown = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|chain| chain.first())
        .expect("a certificate")
        .clone()
        .into_owned();
    tls.write_all(request.as_bytes()).await.expect("write");
    let mut response = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), tls.read_to_end(&mut response)).await;
    (shown, String::from_utf8_lossy(&response).into_owned())
}

fn get(path: &str) -> String {
    format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn https_is_served_the_cookie_is_secure_and_a_renewal_is_picked_up() {
    let dir = TempDir::new("tls");
    let (cert_a, key_a, der_a) = certificate();
    let files = write_pair(&dir, &cert_a, &key_a);
    let tls = Arc::new(TlsConfig::load(files.clone()).expect("the pair loads"));
    let emu = emulator(false).await;
    let server = server(
        &emu,
        Settings {
            token: Some("shared-s3cret".into()),
            http: HttpSettings {
                connections: ConnectionLimits {
                    header_read_timeout: Duration::from_secs(1),
                    ..ConnectionLimits::default()
                },
                tls: Some(tls.clone()),
                tls_reload_every: Duration::from_millis(100),
                ..HttpSettings::default()
            },
            ..Settings::default()
        },
    )
    .await;
    let trusting_a = connector(&[&der_a]);

    let (shown, health) = https(server.addr, &trusting_a, &get("/healthz")).await;
    assert_eq!(shown, der_a);
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");

    let body = r#"{"token":"shared-s3cret"}"#;
    // The browser's Origin is the https one; an http one is another site.
    let sign_in = |origin: &str| {
        format!(
            "POST /api/v1/session HTTP/1.1\r\nHost: localhost\r\nOrigin: {origin}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
    };
    let (_, refused) = https(server.addr, &trusting_a, &sign_in("http://localhost")).await;
    assert!(refused.starts_with("HTTP/1.1 403"), "{refused}");
    let (_, signed_in) = https(server.addr, &trusting_a, &sign_in("https://localhost")).await;
    let cookie = signed_in
        .lines()
        .find(|l| l.to_ascii_lowercase().starts_with("set-cookie:"))
        .unwrap_or_else(|| panic!("a cookie in {signed_in}"));
    assert!(cookie.contains("; Secure"), "{cookie}");

    // Plain HTTP on the TLS port is not served.
    let mut plain = TcpStream::connect(server.addr).await.expect("connect");
    plain
        .write_all(get("/healthz").as_bytes())
        .await
        .expect("write");
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), plain.read_to_end(&mut answer)).await;
    assert!(
        !String::from_utf8_lossy(&answer).contains("200 OK"),
        "{answer:?}"
    );

    // A client that opens and never says hello is closed at the head
    // timeout.
    let mut silent = TcpStream::connect(server.addr).await.expect("connect");
    let mut byte = [0u8; 1];
    let closed = tokio::time::timeout(Duration::from_secs(10), silent.read(&mut byte)).await;
    assert!(
        matches!(closed, Ok(Ok(0)) | Ok(Err(_))),
        "a silent client is closed: {closed:?}"
    );

    // A broken renewal (the key of another certificate) keeps the old pair.
    let (cert_b, key_b, der_b) = certificate();
    let (_, key_c, _) = certificate();
    std::fs::write(&files.cert, &cert_b).expect("write");
    std::fs::write(&files.key, &key_c).expect("write");
    let broken = tls
        .reload_if_changed()
        .expect_err("a key of another certificate");
    assert!(broken.to_string().contains("tls.crt and"), "{broken}");
    let (shown, _) = https(server.addr, &trusting_a, &get("/healthz")).await;
    assert_eq!(shown, der_a, "a pair that does not load is not used");

    // A good renewal is shown to the next connection.
    std::fs::write(&files.key, &key_b).expect("write");
    let trusting_both = connector(&[&der_a, &der_b]);
    eventually(10, "the renewed certificate is served", || async {
        let (shown, _) = https(server.addr, &trusting_both, &get("/healthz")).await;
        (shown == der_b).then_some(())
    })
    .await;
    server.shutdown().await.expect("shutdown");
}

#[test]
fn a_bad_pair_names_the_file_and_what_is_wrong() {
    let dir = TempDir::new("tls-bad");
    let (cert, key, _) = certificate();
    let (_, other_key, _) = certificate();

    let files = write_pair(&dir, "not a certificate\n", &key);
    let error = TlsConfig::load(files.clone()).expect_err("no certificate");
    let text = error.to_string();
    assert!(
        text.contains("tls.crt") && text.contains("no PEM certificate"),
        "{text}"
    );

    std::fs::write(&files.cert, &cert).expect("write");
    std::fs::write(&files.key, "").expect("write");
    let text = TlsConfig::load(files.clone())
        .expect_err("no key")
        .to_string();
    assert!(
        text.contains("tls.key") && text.contains("no PEM private key"),
        "{text}"
    );

    std::fs::write(&files.key, &other_key).expect("write");
    let text = TlsConfig::load(files.clone())
        .expect_err("a key of another certificate")
        .to_string();
    assert!(text.contains("tls.crt and"), "{text}");

    let missing = TlsFiles {
        cert: dir.0.join("absent.crt"),
        key: files.key.clone(),
    };
    let text = TlsConfig::load(missing).expect_err("missing").to_string();
    assert!(text.contains("absent.crt"), "{text}");

    std::fs::write(&files.key, &key).expect("write");
    let config = TlsConfig::load(files).expect("the matching pair loads");
    assert!(!format!("{config:?}").contains("PRIVATE KEY"), "{config:?}");
}
