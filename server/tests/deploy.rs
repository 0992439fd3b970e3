//! The deploy/ manifests parse into k8s-openapi types, and the RBAC they
//! grant is read-only, on exactly the kinds the server reads.

use std::collections::BTreeSet;
use std::path::PathBuf;

use dispatch_dash::serve::projection::ObjectKind;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Service, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use serde_json::Value;

fn manifests() -> Vec<(String, Value)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy");
    let mut docs = Vec::new();
    for entry in std::fs::read_dir(&dir).expect("deploy/ exists") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "yaml") {
            let text = std::fs::read_to_string(&path).expect("readable");
            let parsed: Vec<Value> = serde_saphyr::from_multiple(&text).expect("valid YAML");
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            docs.extend(
                parsed
                    .into_iter()
                    .filter(|d| !d.is_null())
                    .map(|d| (name.clone(), d)),
            );
        }
    }
    docs
}

#[test]
fn manifests_parse_and_grant_only_reads_of_the_kinds_read() {
    let docs = manifests();
    let mut granted: BTreeSet<(String, String)> = BTreeSet::new();
    let mut kinds = BTreeSet::new();
    for (file, doc) in &docs {
        let kind = doc["kind"].as_str().expect("kind").to_string();
        kinds.insert(kind.clone());
        match kind.as_str() {
            "ClusterRole" => {
                let role: ClusterRole = serde_json::from_value(doc.clone()).expect(file);
                let rules = role.rules.expect("rules");
                for rule in &rules {
                    let verbs: BTreeSet<&str> = rule.verbs.iter().map(String::as_str).collect();
                    assert_eq!(
                        verbs,
                        BTreeSet::from(["get", "list", "watch"]),
                        "{file}: read-only verbs"
                    );
                    for group in rule.api_groups.iter().flatten() {
                        for resource in rule.resources.iter().flatten() {
                            granted.insert((group.clone(), resource.clone()));
                        }
                    }
                    assert!(rule.resource_names.is_none() && rule.non_resource_urls.is_none());
                }
                let has_nodes = rules
                    .iter()
                    .any(|r| r.resources.iter().flatten().any(|x| x == "nodes"));
                assert_eq!(
                    has_nodes,
                    file == "rbac-nodes.yaml",
                    "Nodes are granted in their own file"
                );
            }
            "ClusterRoleBinding" => {
                let binding: ClusterRoleBinding = serde_json::from_value(doc.clone()).expect(file);
                assert_eq!(binding.subjects.expect("subjects")[0].name, "dispatch-dash");
            }
            "ServiceAccount" => {
                let _: ServiceAccount = serde_json::from_value(doc.clone()).expect(file);
            }
            "Service" => {
                let _: Service = serde_json::from_value(doc.clone()).expect(file);
            }
            "Deployment" => {
                let deployment: Deployment = serde_json::from_value(doc.clone()).expect(file);
                let pod = deployment.spec.template.spec.expect("pod spec");
                assert_eq!(pod.service_account_name.as_deref(), Some("dispatch-dash"));
                assert_eq!(
                    pod.security_context.expect("security").run_as_non_root,
                    Some(true)
                );
                let container = &pod.containers[0];
                assert_eq!(container.args.as_ref().expect("args")[0], "serve");
                let security = container
                    .security_context
                    .as_ref()
                    .expect("container security");
                assert_eq!(security.allow_privilege_escalation, Some(false));
            }
            other => panic!("{file}: unexpected kind {other}"),
        }
    }
    assert_eq!(
        kinds,
        BTreeSet::from(
            [
                "ClusterRole",
                "ClusterRoleBinding",
                "Deployment",
                "Service",
                "ServiceAccount"
            ]
            .map(String::from)
        )
    );
    // The snapshot kinds, and Namespaces (read with --all-namespaces).
    let expected: BTreeSet<(String, String)> = ObjectKind::ALL
        .into_iter()
        .chain([ObjectKind::Namespace])
        .map(|k| (k.group().to_string(), k.plural().to_string()))
        .collect();
    assert_eq!(granted, expected, "exactly the kinds the server reads");
}
