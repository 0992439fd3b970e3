//! The deploy/ manifests parse into k8s-openapi types, and the RBAC they
//! grant is read-only, on exactly the kinds the server reads, plus
//! `system:auth-delegator` for `--auth kubernetes`; the server runs with
//! `--auth kubernetes` with the probes on their own port, and a
//! NetworkPolicy admits ingress to the HTTP port from the ingress and
//! monitoring namespaces only, and egress to DNS and the API server only.
//! (real_apiserver_auth.rs applies them to a real apiserver.)

use std::collections::BTreeSet;
use std::path::PathBuf;

use dispatch_dash::serve::budget::MemoryBudget;
use dispatch_dash::serve::projection::ObjectKind;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{Service, ServiceAccount};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::Value;

/// Kueue's visibility API, whose pending workloads the server only gets.
const VISIBILITY: &str = dispatch_dash::serve::auth::VISIBILITY_GROUP;

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
    let mut bound_roles = BTreeSet::new();
    let mut container_port = None;
    for (file, doc) in &docs {
        let kind = doc["kind"].as_str().expect("kind").to_string();
        kinds.insert(kind.clone());
        match kind.as_str() {
            "ClusterRole" => {
                let role: ClusterRole = serde_json::from_value(doc.clone()).expect(file);
                let rules = role.rules.expect("rules");
                for rule in &rules {
                    let verbs: BTreeSet<&str> = rule.verbs.iter().map(String::as_str).collect();
                    // The visibility API's pending workloads are only got;
                    // everything else is read and watched.
                    let visibility = rule.api_groups.iter().flatten().any(|g| g == VISIBILITY);
                    let read_only = if visibility {
                        BTreeSet::from(["get"])
                    } else {
                        BTreeSet::from(["get", "list", "watch"])
                    };
                    assert_eq!(verbs, read_only, "{file}: read-only verbs");
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
                let subjects = binding.subjects.expect("subjects");
                assert_eq!(subjects.len(), 1, "{file}: one subject");
                assert_eq!(subjects[0].kind, "ServiceAccount");
                assert_eq!(subjects[0].name, "dispatch-dash");
                assert_eq!(subjects[0].namespace.as_deref(), Some("dispatch-dash"));
                bound_roles.insert(binding.role_ref.name);
            }
            "ServiceAccount" => {
                let _: ServiceAccount = serde_json::from_value(doc.clone()).expect(file);
            }
            "Service" => {
                let _: Service = serde_json::from_value(doc.clone()).expect(file);
            }
            "NetworkPolicy" => {
                let policy: NetworkPolicy = serde_json::from_value(doc.clone()).expect(file);
                let spec = policy.spec.expect("spec");
                assert_eq!(
                    spec.pod_selector
                        .as_ref()
                        .and_then(|s| s.match_labels.as_ref())
                        .and_then(|l| l.get("app.kubernetes.io/name"))
                        .map(String::as_str),
                    Some("dispatch-dash")
                );
                assert_eq!(
                    spec.policy_types,
                    Some(vec!["Ingress".to_string(), "Egress".to_string()]),
                    "both directions are restricted"
                );
                let ingress = spec.ingress.expect("ingress rules");
                assert_eq!(ingress.len(), 2, "the HTTP port, and the probe port");
                let tcp_ports =
                    |ports: &Option<Vec<k8s_openapi::api::networking::v1::NetworkPolicyPort>>| {
                        let ports = ports.as_ref().expect("the rule names its ports");
                        assert!(ports.iter().all(|p| p.protocol.as_deref() == Some("TCP")
                            || p.protocol.as_deref() == Some("UDP")));
                        assert!(ports.iter().all(|p| p.end_port.is_none()));
                        ports
                            .iter()
                            .map(|p| (p.protocol.clone().unwrap_or_default(), p.port.clone()))
                            .collect::<Vec<_>>()
                    };
                assert_eq!(
                    tcp_ports(&ingress[0].ports),
                    vec![("TCP".into(), Some(IntOrString::Int(8080)))]
                );
                let from = ingress[0]
                    .from
                    .as_ref()
                    .expect("the HTTP port names who may reach it");
                let namespaces: BTreeSet<String> = from
                    .iter()
                    .map(|peer| {
                        assert!(peer.ip_block.is_none(), "no address block admits the world");
                        peer.namespace_selector
                            .as_ref()
                            .and_then(|s| s.match_labels.as_ref())
                            .and_then(|l| l.get("kubernetes.io/metadata.name"))
                            .cloned()
                            .expect("a namespace by name")
                    })
                    .collect();
                assert_eq!(
                    namespaces,
                    BTreeSet::from(["ingress-nginx".to_string(), "monitoring".to_string()])
                );
                assert_eq!(
                    tcp_ports(&ingress[1].ports),
                    vec![("TCP".into(), Some(IntOrString::Int(8081)))]
                );
                let egress = spec.egress.expect("egress rules");
                assert_eq!(egress.len(), 2, "DNS, and the API server");
                assert_eq!(
                    tcp_ports(&egress[0].ports),
                    vec![
                        ("UDP".into(), Some(IntOrString::Int(53))),
                        ("TCP".into(), Some(IntOrString::Int(53)))
                    ]
                );
                let dns = egress[0].to.as_ref().expect("DNS is the cluster's");
                assert_eq!(dns.len(), 1);
                assert_eq!(
                    tcp_ports(&egress[1].ports),
                    vec![
                        ("TCP".into(), Some(IntOrString::Int(443))),
                        ("TCP".into(), Some(IntOrString::Int(6443)))
                    ],
                    "only the API server's ports"
                );
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
                let args = container.args.as_ref().expect("args");
                assert_eq!(args[0], "serve");
                assert!(
                    args.iter().any(|a| a == "--auth=kubernetes"),
                    "deploy/ runs --auth kubernetes: {args:?}"
                );
                assert!(!args
                    .iter()
                    .any(|a| a.starts_with("--allow-unauthenticated")));
                assert!(
                    container
                        .env
                        .iter()
                        .flatten()
                        .all(|e| e.name != "DISPATCH_DASH_TOKEN"),
                    "no shared token next to Kubernetes identities"
                );
                container_port = container
                    .ports
                    .iter()
                    .flatten()
                    .find(|p| p.name.as_deref() == Some("http"))
                    .map(|p| p.container_port);
                let probe_port = container
                    .ports
                    .iter()
                    .flatten()
                    .find(|p| p.name.as_deref() == Some("probes"))
                    .map(|p| p.container_port);
                assert_eq!(probe_port, Some(8081));
                assert!(
                    args.iter().any(|a| a == "--probe-listen=0.0.0.0:8081"),
                    "{args:?}"
                );
                for probe in [&container.readiness_probe, &container.liveness_probe] {
                    let port = probe
                        .as_ref()
                        .and_then(|p| p.http_get.as_ref())
                        .map(|g| g.port.clone());
                    assert_eq!(
                        port,
                        Some(IntOrString::String("probes".into())),
                        "the probes use their own listener"
                    );
                }
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
                "NetworkPolicy",
                "Service",
                "ServiceAccount"
            ]
            .map(String::from)
        )
    );
    // The snapshot kinds, Namespaces (read with --all-namespaces) and the
    // queues (for the queue facts).
    let expected: BTreeSet<(String, String)> = ObjectKind::ALL
        .into_iter()
        .chain([ObjectKind::Namespace])
        .chain(ObjectKind::QUEUES)
        .map(|k| (k.group().to_string(), k.plural().to_string()))
        .chain([(
            VISIBILITY.to_string(),
            "localqueues/pendingworkloads".to_string(),
        )])
        .collect();
    assert_eq!(granted, expected, "exactly the kinds the server reads");
    assert_eq!(
        bound_roles,
        BTreeSet::from(
            [
                "dispatch-dash-node-reader",
                "dispatch-dash-reader",
                "system:auth-delegator"
            ]
            .map(String::from)
        ),
        "the reads, and the reviews of --auth kubernetes"
    );
    assert_eq!(container_port, Some(8080), "the NetworkPolicy's port");
}

#[test]
fn the_image_is_built_locked_and_runs_with_authentication() {
    let dockerfile =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../Dockerfile"))
            .expect("the Dockerfile");
    let build = dockerfile
        .lines()
        .find(|l| l.contains("cargo build"))
        .expect("a cargo build");
    assert!(build.contains("--locked"), "{build}");
    let cmd = dockerfile
        .lines()
        .find(|l| l.starts_with("CMD"))
        .expect("a CMD");
    assert!(cmd.contains(r#""--auth", "kubernetes""#), "{cmd}");
    // Every base is pinned by digest: a tag alone can be moved under a
    // rebuild.
    let bases: Vec<&str> = dockerfile
        .lines()
        .filter(|l| l.starts_with("FROM "))
        .collect();
    assert_eq!(bases.len(), 2, "a build stage and a runtime stage");
    for from in bases {
        let image = from.split_whitespace().nth(1).unwrap_or("");
        let digest = image.split_once("@sha256:").map(|(_, d)| d);
        assert!(
            digest.is_some_and(|d| d.len() == 64 && d.bytes().all(|b| b.is_ascii_hexdigit())),
            "not pinned by digest: {from}"
        );
    }
}

#[test]
fn the_deployment_never_runs_a_moving_tag() {
    for (file, doc) in manifests() {
        if doc["kind"] != "Deployment" {
            continue;
        }
        for container in doc["spec"]["template"]["spec"]["containers"]
            .as_array()
            .expect("containers")
        {
            let image = container["image"].as_str().expect("an image");
            let (_, tag) = image.rsplit_once(':').expect("a tag or a digest");
            assert!(
                image.contains("@sha256:") || (tag != "latest" && !tag.contains('/')),
                "{file}: {image} names no version"
            );
        }
    }
}

/// `serve` with `deploy/`'s arguments, and with the image's `CMD`, passes
/// the start-up checks of its configuration (it would exit 2 otherwise).
#[test]
fn the_shipped_arguments_pass_serves_start_up_checks() {
    #[derive(clap::Parser)]
    struct Cli {
        #[command(subcommand)]
        command: Command,
    }
    #[derive(clap::Subcommand)]
    enum Command {
        Serve(dispatch_dash::serve::ServeArgs),
    }
    let check = |argv: Vec<String>| {
        let cli = <Cli as clap::Parser>::try_parse_from(
            std::iter::once("dispatch-dash".to_string()).chain(argv.clone()),
        )
        .unwrap_or_else(|e| panic!("{argv:?}: {e}"));
        let Command::Serve(args) = cli.command;
        dispatch_dash::serve::auth_config(&args, None)
            .unwrap_or_else(|e| panic!("{argv:?} is refused at start: {e}"));
        args
    };
    let deployment = manifests()
        .into_iter()
        .find(|(_, doc)| doc["kind"] == "Deployment")
        .expect("a Deployment")
        .1;
    let container = &deployment["spec"]["template"]["spec"]["containers"][0];
    let args: Vec<String> = serde_json::from_value(container["args"].clone()).expect("args");
    let args = check(args);

    // The pod's memory limit covers the bounded parts' budget with half of
    // it to spare, for the store of live objects and the runtime, which no
    // flag bounds.
    let limit = container["resources"]["limits"]["memory"]
        .as_str()
        .expect("a memory limit");
    let limit = dispatch_dash::serve::store::parse_byte_size(limit)
        .unwrap_or_else(|e| panic!("{limit}: {e}")) as u64;
    let budget = match args.memory_budget {
        Some(bytes) => MemoryBudget::from_flag(bytes),
        None => MemoryBudget::from_cgroup_limit(limit),
    };
    let bounds = dispatch_dash::serve::byte_bounds(&args, &budget);
    assert!(
        bounds.sum() <= budget.bytes,
        "{bounds:?} add up past the budget {budget:?}"
    );
    assert!(
        budget.bytes as u64 <= limit / 2,
        "the budget {budget:?} leaves less than half of the {limit}-byte limit"
    );
    let dockerfile =
        std::fs::read_to_string(PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../Dockerfile"))
            .expect("the Dockerfile");
    let cmd = dockerfile
        .lines()
        .find_map(|l| l.strip_prefix("CMD "))
        .expect("a CMD");
    check(serde_json::from_str(cmd).expect("CMD is a JSON array"));
}
