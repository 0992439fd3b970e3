use super::*;
use test_support::Rng;
use wasm_bindgen_test::wasm_bindgen_test;

/// A client showing `namespace`, with its generation.
fn showing(namespace: &str) -> (StreamClient, u64) {
    let mut client = StreamClient::default();
    client.step(Input::Chosen {
        namespace: namespace.into(),
    });
    let generation = client.generation();
    (client, generation)
}

fn failed(generation: u64, closed: bool, now: f64) -> Input {
    Input::Failed {
        generation,
        closed,
        now,
    }
}

#[test]
#[wasm_bindgen_test]
fn choosing_a_namespace_opens_its_stream_and_opening_makes_it_live() {
    let mut client = StreamClient::default();
    assert_eq!(client.status(0.0), Status::Connecting);
    let step = client.step(Input::Chosen {
        namespace: "team a/b".into(),
    });
    let generation = client.generation();
    assert_eq!(
        step.actions,
        [Action::Open {
            generation,
            url: "/api/v1/namespaces/team%20a%2Fb/snapshots".into()
        }]
    );
    assert_eq!(client.phase(), Phase::Connecting);
    let step = client.step(Input::Opened { generation });
    assert!(step.actions.is_empty());
    assert!(step.changed);
    assert_eq!(client.status(0.0), Status::Live);
    let step = client.step(Input::Delivered { generation });
    assert!(!step.changed, "delivering while live changes nothing shown");
}

#[test]
#[wasm_bindgen_test]
fn a_network_error_reconnects_keeping_the_first_loss_and_goes_stale_after_ten_seconds() {
    let (mut client, generation) = showing("team-a");
    client.step(Input::Opened { generation });
    let step = client.step(failed(generation, false, 1_000.0));
    assert!(step.actions.is_empty(), "the browser reconnects by itself");
    client.step(failed(generation, false, 5_000.0));
    assert_eq!(
        client.status(11_000.0),
        Status::Reconnecting { since: 1_000.0 }
    );
    assert_eq!(client.status(11_001.0), Status::Stale { since: 1_000.0 });
    assert_eq!(client.status(11_001.0).class(), "stale");
    assert_eq!(
        client.status(11_001.0).text("10:00:01"),
        "stale since 10:00:01 — reconnecting…"
    );
    client.step(Input::Delivered { generation });
    assert_eq!(client.status(99_000.0), Status::Live);
}

#[test]
#[wasm_bindgen_test]
fn a_closed_stream_is_probed_once_and_retried_after_a_pause_when_not_refused() {
    for status in [None, Some(500), Some(502), Some(503)] {
        let (mut client, generation) = showing("team-a");
        let step = client.step(failed(generation, true, 1_000.0));
        assert_eq!(
            step.actions,
            [Action::Probe {
                generation,
                url: "/api/v1/namespaces/team-a/snapshots".into()
            }]
        );
        let again = client.step(failed(generation, true, 2_000.0));
        assert!(again.actions.is_empty(), "one probe at a time");
        let step = client.step(Input::Probed { generation, status });
        assert_eq!(
            step.actions,
            [Action::RetryAfter {
                generation,
                ms: RETRY_MS
            }],
            "{status:?}"
        );
        let step = client.step(Input::RetryDue { generation });
        assert_eq!(
            step.actions,
            [Action::Open {
                generation,
                url: "/api/v1/namespaces/team-a/snapshots".into()
            }]
        );
        client.step(Input::Opened { generation });
        assert_eq!(client.status(50_000.0), Status::Live);
    }
}

#[test]
#[wasm_bindgen_test]
fn a_403_stops_for_good_and_offers_the_namespaces_the_user_may_see() {
    let (mut client, generation) = showing("team-b");
    client.step(failed(generation, true, 1_000.0));
    let step = client.step(Input::Probed {
        generation,
        status: Some(403),
    });
    assert_eq!(
        step.actions,
        [Action::Close, Action::ListNamespaces { generation }]
    );
    assert_eq!(client.status(0.0), Status::Refused);
    assert_eq!(client.status(0.0).class(), "stopped");
    assert_eq!(client.status(0.0).text(""), "not allowed");
    assert!(client
        .denied()
        .is_some_and(|d| d.namespace == "team-b" && d.visible.is_none()));
    let step = client.step(Input::Listed {
        generation,
        visible: Some(vec!["team-a".into(), "team-b".into()]),
    });
    assert!(step.changed);
    assert_eq!(
        client.denied().map(Denied::offers),
        Some(vec!["team-a".into()])
    );
    // A timer or error of the refused stream opens nothing.
    assert!(client
        .step(Input::RetryDue { generation })
        .actions
        .is_empty());
    assert!(client
        .step(failed(generation, true, 9_000.0))
        .actions
        .is_empty());
    assert_eq!(client.phase(), Phase::Refused);
    // Another namespace gets its own chance.
    client.step(Input::Chosen {
        namespace: "team-a".into(),
    });
    assert_eq!(client.denied(), None);
    assert_eq!(client.phase(), Phase::Connecting);
}

#[test]
#[wasm_bindgen_test]
fn a_401_from_the_probe_or_the_list_signs_out() {
    let (mut client, generation) = showing("team-a");
    client.step(failed(generation, true, 1_000.0));
    let step = client.step(Input::Probed {
        generation,
        status: Some(401),
    });
    assert_eq!(step.actions, [Action::Close, Action::SignIn]);
    assert_eq!(client.status(0.0), Status::SignedOut);
    assert_eq!(client.denied(), None, "a sign-in is not a refusal");
    assert!(client
        .step(Input::RetryDue { generation })
        .actions
        .is_empty());

    let (mut client, generation) = showing("team-b");
    client.step(failed(generation, true, 1_000.0));
    client.step(Input::Probed {
        generation,
        status: Some(403),
    });
    let step = client.step(Input::Unauthorized { generation });
    assert_eq!(step.actions, [Action::Close, Action::SignIn]);
}

#[test]
#[wasm_bindgen_test]
fn a_browser_that_cannot_make_a_stream_retries_it() {
    let (mut client, generation) = showing("team-a");
    let step = client.step(Input::CouldNotOpen {
        generation,
        now: 3_000.0,
    });
    assert_eq!(
        step.actions,
        [Action::RetryAfter {
            generation,
            ms: RETRY_MS
        }]
    );
    assert_eq!(
        client.status(3_000.0),
        Status::Reconnecting { since: 3_000.0 }
    );
}

#[test]
#[wasm_bindgen_test]
fn answers_for_a_namespace_no_longer_shown_are_ignored() {
    let (mut client, old) = showing("team-b");
    client.step(failed(old, true, 1_000.0));
    client.step(Input::Chosen {
        namespace: "team-a".into(),
    });
    let shown = client.clone();
    for input in [
        Input::Probed {
            generation: old,
            status: Some(403),
        },
        Input::Probed {
            generation: old,
            status: Some(401),
        },
        Input::RetryDue { generation: old },
        Input::Opened { generation: old },
        failed(old, true, 2_000.0),
        Input::Unauthorized { generation: old },
    ] {
        let step = client.step(input.clone());
        assert_eq!(step, Step::default(), "{input:?}");
        assert_eq!(client, shown, "{input:?}");
    }
    // Once the page is gone nothing is current.
    let generation = client.generation();
    let step = client.step(Input::Disposed);
    assert_eq!(step.actions, [Action::Close]);
    assert!(!client.is_current(generation));
    assert!(client
        .step(Input::RetryDue { generation })
        .actions
        .is_empty());
}

/// The generation of every action, if it has one.
fn action_generation(action: &Action) -> Option<u64> {
    match action {
        Action::Open { generation, .. }
        | Action::Probe { generation, .. }
        | Action::RetryAfter { generation, .. }
        | Action::ListNamespaces { generation } => Some(*generation),
        Action::Close | Action::SignIn => None,
    }
}

fn random_input(rng: &mut Rng, client: &StreamClient, now: f64) -> Input {
    // Mostly answers for the current generation, some for older ones.
    let current = client.generation();
    let generation = if rng.chance(80) {
        current
    } else {
        current.saturating_sub(1 + rng.below(3) as u64)
    };
    let status = *rng.pick(&[None, Some(200), Some(401), Some(403), Some(500), Some(503)]);
    match rng.below(100) {
        0..=4 => Input::Chosen {
            namespace: rng.pick(&["team-a", "team-b", "ns/with space"]).to_string(),
        },
        5 => Input::Disposed,
        6..=9 => Input::CouldNotOpen { generation, now },
        10..=24 => Input::Opened { generation },
        25..=39 => Input::Delivered { generation },
        40..=64 => Input::Failed {
            generation,
            closed: rng.chance(50),
            now,
        },
        65..=79 => Input::Probed { generation, status },
        80..=91 => Input::RetryDue { generation },
        92..=97 => Input::Listed {
            generation,
            visible: rng.chance(70).then(|| vec!["team-a".into()]),
        },
        _ => Input::Unauthorized { generation },
    }
}

/// Whatever comes in whatever order: actions carry the current generation,
/// answers of another generation change nothing, a settled client opens no
/// stream, one probe is in flight at a time, and the first loss's time
/// stays until the stream delivers.
#[test]
fn seeded_random_inputs_keep_the_invariants() {
    for seed in 0..200 {
        let mut rng = Rng::new(seed);
        let mut client = StreamClient::default();
        let mut now = 0.0;
        for i in 0..300 {
            now += rng.below(4_000) as f64;
            let input = random_input(&mut rng, &client, now);
            let before = client.clone();
            let step = client.step(input.clone());
            let at = format!("seed {seed} step {i}: {input:?} from {before:?}");

            if let Some(generation) = answer_generation(&input) {
                if !before.is_current(generation) {
                    assert_eq!(step, Step::default(), "{at}");
                    assert_eq!(client, before, "{at}");
                    continue;
                }
            }
            for action in &step.actions {
                if let Some(generation) = action_generation(action) {
                    assert_eq!(generation, client.generation(), "{at}: {action:?}");
                }
            }
            let opens = step
                .actions
                .iter()
                .any(|a| matches!(a, Action::Open { .. }));
            if matches!(client.phase(), Phase::Refused | Phase::SignedOut) {
                assert!(!opens, "{at}: a settled client opened a stream");
            }
            let probes = step
                .actions
                .iter()
                .filter(|a| matches!(a, Action::Probe { .. }))
                .count();
            if probes > 0 {
                assert_eq!(probes, 1, "{at}");
                assert!(
                    !matches!(before.phase(), Phase::Reconnecting { probing: true, .. }),
                    "{at}: a second probe while one is in flight"
                );
                assert!(
                    matches!(client.phase(), Phase::Reconnecting { probing: true, .. }),
                    "{at}"
                );
            }
            if let (Phase::Reconnecting { since: was, .. }, Phase::Reconnecting { since, .. }) =
                (before.phase(), client.phase())
            {
                assert_eq!(was, since, "{at}: the first loss's time moved");
            }
            if client.phase() == Phase::Refused {
                assert!(client.denied().is_some(), "{at}: refused without saying so");
            }
            assert_eq!(
                step.changed,
                before.phase() != client.phase() || before.denied() != client.denied(),
                "{at}"
            );
            let stale = matches!(
                client.status(now + STALE_AFTER_MS + 1.0),
                Status::Stale { .. }
            );
            assert_eq!(
                stale,
                matches!(client.phase(), Phase::Reconnecting { .. }),
                "{at}"
            );
        }
    }
}
