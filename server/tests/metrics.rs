//! `/metrics` as Prometheus scrapes it, against the emulator through the
//! real kube client: the TrainJob gauges and transition counters that the
//! alert rules (deploy/monitoring/) read, in the OpenMetrics format.

mod common;

use common::*;
use dispatch_dash::serve::HttpSettings;
use hyper::StatusCode;

fn trainjobs(state: &str, cause: &str) -> String {
    format!("dispatch_dash_trainjobs{{namespace=\"{NS}\",state=\"{state}\",cause=\"{cause}\"}}")
}

fn transitions(state: &str, cause: &str) -> String {
    format!(
        "dispatch_dash_trainjob_transitions_total{{namespace=\"{NS}\",state=\"{state}\",cause=\"{cause}\"}}"
    )
}

async fn scrape(addr: std::net::SocketAddr) -> String {
    let response = request(addr, "/metrics", &[], Vec::new()).await;
    assert_eq!(response.status(), StatusCode::OK);
    let content_type = response.headers()["content-type"]
        .to_str()
        .expect("ascii")
        .to_string();
    assert!(
        content_type.starts_with("application/openmetrics-text; version=1.0.0"),
        "{content_type}"
    );
    body_text(response).await
}

/// A TrainJob that had failed before the server started is where things
/// stand, not news: it is in the gauge, and counts no transition (else
/// every restart would fire the alerts again). One that fails while the
/// server watches adds exactly one to `{state="ended",cause="out-of-memory"}`.
#[tokio::test]
async fn a_failure_while_watched_counts_one_transition_and_one_found_at_start_none() {
    let running = emulator(false).await;
    let emu = running.emulator().clone();
    oom_failure(&emu, "old");

    let server = server(
        &running,
        Settings {
            http: HttpSettings {
                public_url: Some("https://dash.example.com".into()),
                ..HttpSettings::default()
            },
            ..Settings::default()
        },
    )
    .await;
    let addr = server.addr;
    ready(addr).await;
    let text = eventually(20, "the old failure in the gauge", || async move {
        let text = scrape(addr).await;
        (metric_value(&text, &trainjobs("ended", "out-of-memory")) == Some(1.0)).then_some(text)
    })
    .await;
    assert_eq!(
        metric_value(&text, &transitions("ended", "out-of-memory")),
        Some(0.0),
        "found at start, and the series exists for increase(): {text}"
    );
    assert_eq!(
        metric_value(&text, "dispatch_dash_watch_up{kind=\"TrainJob\"}"),
        Some(1.0)
    );
    assert!(
        text.contains(&format!(
            "dispatch_dash_info{{version=\"{}\",public_url=\"https://dash.example.com\"}} 1",
            env!("CARGO_PKG_VERSION")
        )),
        "{text}"
    );
    assert!(text.ends_with("# EOF\n"));

    oom_failure(&emu, "llm");
    let text = eventually(20, "the new failure counted", || async move {
        let text = scrape(addr).await;
        (metric_value(&text, &trainjobs("ended", "out-of-memory")) == Some(2.0)).then_some(text)
    })
    .await;
    assert_eq!(
        metric_value(&text, &transitions("ended", "out-of-memory")),
        Some(1.0),
        "{text}"
    );
    // Later events about the same failed job are no new transition.
    create_oom_pod(&emu, "llm", "s1", 1);
    // A third TrainJob, created after that pod: once it is counted, the
    // pod's events were handled too.
    create_trainjob(&emu, "marker", "s1");
    let text = eventually(20, "the third TrainJob counted", || async move {
        let text = scrape(addr).await;
        let all: f64 = text
            .lines()
            .filter(|l| l.starts_with(&format!("dispatch_dash_trainjobs{{namespace=\"{NS}\"")))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
            .sum();
        (all == 3.0).then_some(text)
    })
    .await;
    assert_eq!(
        metric_value(&text, &transitions("ended", "out-of-memory")),
        Some(1.0),
        "still exactly one: {text}"
    );
}
