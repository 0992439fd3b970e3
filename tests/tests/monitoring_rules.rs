//! The alert rules that ship (deploy/monitoring/) are checked and unit
//! tested by Debian's real `promtool`; the PrometheusRule holds exactly the
//! rules file's groups; every alert has a promtool case where it fires and
//! one where it does not; and the rules read only metrics the server has.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::process::Command;

use serde_json::Value;

fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/monitoring")
}

fn yaml(name: &str) -> Value {
    let path = dir().join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_saphyr::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn promtool(args: &[&str]) -> (bool, String) {
    let output = Command::new("promtool")
        .args(args)
        .current_dir(dir())
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "promtool: {e}: ./scripts/setup-test.sh installs it (Debian's prometheus package)"
            )
        });
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), text)
}

#[test]
fn promtool_checks_the_rules() {
    let (ok, text) = promtool(&["check", "rules", "dispatch-dash.rules.yaml"]);
    assert!(ok, "{text}");
    assert!(text.contains("SUCCESS"), "{text}");
}

#[test]
fn promtool_unit_tests_pass() {
    let (ok, text) = promtool(&["test", "rules", "dispatch-dash.rules.test.yaml"]);
    assert!(ok, "{text}");
}

#[test]
fn the_prometheus_rule_holds_exactly_the_rules_files_groups() {
    let rules = yaml("dispatch-dash.rules.yaml");
    let operator = yaml("prometheusrule.yaml");
    assert_eq!(operator["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(operator["kind"], "PrometheusRule");
    assert_eq!(operator["metadata"]["namespace"], "dispatch-dash");
    assert_eq!(operator["spec"]["groups"], rules["groups"]);
}

fn alerts() -> Vec<Value> {
    yaml("dispatch-dash.rules.yaml")["groups"]
        .as_array()
        .expect("groups")
        .iter()
        .flat_map(|g| g["rules"].as_array().cloned().unwrap_or_default())
        .collect()
}

#[test]
fn every_alert_has_a_case_that_fires_and_one_that_does_not() {
    let tests = yaml("dispatch-dash.rules.test.yaml");
    // alertname → (fires somewhere, stays silent somewhere)
    let mut seen: BTreeMap<String, (bool, bool)> = BTreeMap::new();
    for case in tests["tests"].as_array().expect("tests") {
        for check in case["alert_rule_test"]
            .as_array()
            .cloned()
            .unwrap_or_default()
        {
            let name = check["alertname"].as_str().expect("alertname").to_string();
            let fires = check["exp_alerts"]
                .as_array()
                .is_some_and(|a| !a.is_empty());
            let entry = seen.entry(name).or_default();
            if fires {
                entry.0 = true;
            } else {
                entry.1 = true;
            }
        }
    }
    let names: BTreeSet<String> = alerts()
        .iter()
        .map(|r| r["alert"].as_str().expect("alert").to_string())
        .collect();
    assert_eq!(names.len(), 4, "{names:?}");
    for name in &names {
        assert_eq!(
            seen.get(name),
            Some(&(true, true)),
            "{name}: a firing and a silent case"
        );
    }
}

/// The metric names the server exports that alerts may read
/// (server/src/serve/metrics.rs, scrape.rs).
const EXPORTED: [&str; 5] = [
    "dispatch_dash_trainjobs",
    "dispatch_dash_trainjob_transitions_total",
    "dispatch_dash_trainjob_oldest_pending_seconds",
    "dispatch_dash_watch_up",
    "dispatch_dash_info",
];

#[test]
fn the_rules_read_only_metrics_the_server_exports() {
    for rule in alerts() {
        let mut text = rule["expr"].as_str().expect("expr").to_string();
        for annotation in rule["annotations"]
            .as_object()
            .expect("annotations")
            .values()
        {
            text.push(' ');
            text.push_str(annotation.as_str().unwrap_or_default());
        }
        let names: BTreeSet<&str> = text
            .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .filter(|w| w.starts_with("dispatch_dash_"))
            .collect();
        assert!(!names.is_empty(), "{rule}");
        for name in names {
            assert!(
                EXPORTED.contains(&name),
                "{}: {name} is not exported",
                rule["alert"]
            );
        }
    }
}
