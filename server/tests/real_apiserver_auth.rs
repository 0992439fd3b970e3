//! `serve --auth kubernetes` against a real kube-apiserver v1.20.2 (see
//! `common/apiserver.rs`): TokenReviews and SubjectAccessReviews decide
//! what alice (a Role in team-a), bob (nothing) and a ServiceAccount (get
//! on `/metrics`) see; sign-in, the cookie, sign-out; a revoked RoleBinding
//! closes an open stream; start-up without `system:auth-delegator` is
//! refused; deploy/ applies and grants exactly what it must, and the server
//! runs as its ServiceAccount, paying one TokenReview per token. Needs
//! `scripts/setup.sh` to have cached the apiserver.

mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::apiserver::{ApiServer, Workloads, ADMIN_TOKEN, ALICE_TOKEN, BOB_TOKEN};
use common::auth::*;
use common::*;
use dispatch_dash::serve::auth::{AuthConfig, AuthMode};
use dispatch_dash::serve::{self, HttpSettings, ModeChoice, Server, ServerConfig};
use hyper::{Method, StatusCode};
use k8s_openapi::api::authentication::v1::{
    TokenRequest, TokenRequestSpec, TokenReview, TokenReviewSpec,
};
use k8s_openapi::api::authorization::v1::{
    ResourceAttributes, SubjectAccessReview, SubjectAccessReviewSpec,
};
use k8s_openapi::api::core::v1::ServiceAccount;
use kube::api::{Api, PostParams};
use serde_json::{json, Value};

fn config(kubeconfig: kube::Config, auth: AuthConfig) -> ServerConfig {
    ServerConfig {
        kube: kubeconfig,
        namespaces: Vec::new(),
        all_namespaces: true,
        mode: ModeChoice::Auto,
        listen: "127.0.0.1:0".parse().expect("addr"),
        auth,
        max_sse_clients: 32,
        limits: Default::default(),
        http: HttpSettings::default(),
        demo: false,
        notify: None,
        unready_after: serve::health::UNREADY_AFTER,
    }
}

/// dispatch-dash in kubernetes mode over every namespace, as `kubeconfig`'s
/// identity, once ready.
async fn dispatch_dash(kubeconfig: &str) -> Server {
    dispatch_dash_with(kubeconfig, quick_auth()).await
}

async fn dispatch_dash_with(kubeconfig: &str, auth: AuthConfig) -> Server {
    let kube = serve::config_from_kubeconfig_yaml(kubeconfig)
        .await
        .expect("kubeconfig");
    let server = serve::start(config(kube, auth))
        .await
        .expect("the server starts");
    eventually(30, "dispatch-dash ready", || async {
        let (status, _) = get_json(server.addr, "/readyz").await;
        (status == StatusCode::OK).then_some(())
    })
    .await;
    server
}

/// alice may list TrainJobs and pods in team-a; in team-b only pods (so
/// both permissions are needed).
async fn grant_alice(api: &ApiServer) -> Value {
    for (ns, resources) in [
        (
            "team-a",
            json!([
                {"apiGroups": ["trainer.kubeflow.org"], "resources": ["trainjobs"], "verbs": ["list"]},
                {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
            ]),
        ),
        (
            "team-b",
            json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]}]),
        ),
    ] {
        api.create(json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "dashboard-viewer", "namespace": ns},
            "rules": resources,
        }))
        .await;
    }
    let binding = |ns: &str| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "alice-views", "namespace": ns},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "dashboard-viewer"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
        })
    };
    api.create(binding("team-b")).await;
    api.create(binding("team-a")).await
}

/// A new ServiceAccount's token (TokenRequest), as Prometheus would mount.
async fn service_account_token(api: &ApiServer, namespace: &str, name: &str) -> String {
    api.create(json!({"apiVersion": "v1", "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": namespace}}))
        .await;
    token_of(api, namespace, name).await
}

/// A token of an existing ServiceAccount (TokenRequest, default audiences).
async fn token_of(api: &ApiServer, namespace: &str, name: &str) -> String {
    let accounts: Api<ServiceAccount> = Api::namespaced(api.client(), namespace);
    let request = TokenRequest {
        spec: Some(TokenRequestSpec {
            expiration_seconds: Some(3600),
            ..TokenRequestSpec::default()
        }),
        ..TokenRequest::default()
    };
    accounts
        .create_token_request(name, &PostParams::default(), &request)
        .await
        .expect("a ServiceAccount token")
        .status
        .and_then(|s| s.token)
        .expect("a token request's token")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rbac_decides_what_each_identity_sees_and_a_revoked_binding_closes_the_stream() {
    let api = ApiServer::start(Workloads::None, &["team-a", "team-b"]).await;
    let alice_binding = grant_alice(&api).await;
    let server = dispatch_dash(&api.kubeconfig_yaml()).await;
    let addr = server.addr;

    // admin sees both teams (the server knows them), alice team-a only,
    // bob nothing.
    eventually(30, "admin sees team-a and team-b", || async {
        let names = get_as(addr, "/api/v1/namespaces", ADMIN_TOKEN)
            .await
            .namespaces();
        (names.contains(&"team-a".to_string()) && names.contains(&"team-b".to_string()))
            .then_some(())
    })
    .await;
    let alice = get_as(addr, "/api/v1/namespaces", ALICE_TOKEN).await;
    assert_eq!(alice.status, StatusCode::OK, "{}", alice.body);
    assert_eq!(alice.namespaces(), ["team-a"]);
    let bob = get_as(addr, "/api/v1/namespaces", BOB_TOKEN).await;
    assert_eq!(bob.status, StatusCode::OK);
    assert!(bob.namespaces().is_empty(), "{}", bob.body);

    // No identity, or one the cluster rejects: 401 with a JSON body.
    for headers in [vec![], vec![("authorization", "Bearer not-a-token")]] {
        for path in [
            "/api/v1/namespaces",
            "/api/v1/namespaces/team-a/snapshot",
            "/api/v1/session",
        ] {
            let answer = send(addr, Method::GET, path, &headers, "").await;
            assert_eq!(
                answer.status,
                StatusCode::UNAUTHORIZED,
                "{path} {headers:?}"
            );
            assert_eq!(answer.www_authenticate.as_deref(), Some("Bearer"));
            if path == "/api/v1/session" {
                // The sign-in form's hint: the mode, and no audience asked.
                assert_eq!(
                    answer.json(),
                    serde_json::json!({"error": "unauthorized", "auth": "kubernetes", "tokenAudience": null})
                );
            } else {
                assert_eq!(answer.body, r#"{"error":"unauthorized"}"#);
            }
        }
    }

    // The API server itself sets `status.error` on every token it rejects
    // ("invalid bearer token" at least), so that field cannot mean the token
    // could not be checked: such a token is the 401 above, and a review
    // the API server cannot answer at all is what gives 503.
    let reviews: Api<TokenReview> = Api::all(api.client());
    let rejected = reviews
        .create(
            &PostParams::default(),
            &TokenReview {
                spec: TokenReviewSpec {
                    token: "not-a-token".into(),
                    audiences: None,
                },
                ..TokenReview::default()
            },
        )
        .await
        .expect("a TokenReview")
        .status
        .expect("a status");
    assert_ne!(rejected.authenticated, Some(true), "{rejected:?}");
    assert!(
        rejected.error.as_deref().is_some_and(|e| !e.is_empty()),
        "{rejected:?}"
    );

    // Every route of team-b (pods allowed, TrainJobs not) and of a namespace
    // that does not exist is the same 403 for alice.
    for ns in ["team-b", "no-such-namespace"] {
        for route in [
            "jobs/llm-1",
            "jobs/llm-1/watch",
            "objects/pod/p-0",
            "snapshot",
            "snapshots",
        ] {
            let path = format!("/api/v1/namespaces/{ns}/{route}");
            let answer = get_as(addr, &path, ALICE_TOKEN).await;
            assert_eq!(answer.status, StatusCode::FORBIDDEN, "{path}");
            assert_eq!(answer.body, r#"{"error":"forbidden"}"#, "{path}");
        }
    }
    assert_eq!(
        get_as(addr, "/api/v1/namespaces/team-a/snapshot", ALICE_TOKEN)
            .await
            .status,
        StatusCode::OK
    );
    assert_eq!(
        get_as(addr, "/api/v1/namespaces/team-a/snapshot", BOB_TOKEN)
            .await
            .status,
        StatusCode::FORBIDDEN
    );

    // A cross-site sign-in is refused, and sets no cookie.
    let evil = send(
        addr,
        Method::POST,
        "/api/v1/session",
        &[("origin", "http://evil.example.com")],
        &json!({ "token": ALICE_TOKEN }).to_string(),
    )
    .await;
    assert_eq!(evil.status, StatusCode::FORBIDDEN);
    assert_eq!(evil.body, r#"{"error":"forbidden"}"#);
    assert!(evil.set_cookie.is_none());
    // A rejected token: 401 and no cookie.
    let (cookie, refused) = sign_in(addr, "not-a-token").await;
    assert_eq!(refused.status, StatusCode::UNAUTHORIZED);
    assert!(cookie.is_none());

    // Sign-in: the cookie lists and streams as alice.
    let (cookie, signed_in) = sign_in(addr, ALICE_TOKEN).await;
    assert_eq!(signed_in.status, StatusCode::OK, "{}", signed_in.body);
    assert_eq!(
        signed_in.json(),
        json!({"user": "alice", "groups": ["system:authenticated"], "auth": "kubernetes"})
    );
    let set_cookie = signed_in.set_cookie.as_deref().expect("a cookie");
    assert!(set_cookie.contains("HttpOnly") && set_cookie.contains("SameSite=Strict"));
    assert!(!set_cookie.contains(ALICE_TOKEN));
    let cookie = cookie.expect("a session cookie");
    let with_cookie = [("cookie", cookie.as_str())];
    let listed = send(addr, Method::GET, "/api/v1/namespaces", &with_cookie, "").await;
    assert_eq!(listed.namespaces(), ["team-a"]);
    let who = send(addr, Method::GET, "/api/v1/session", &with_cookie, "").await;
    assert_eq!(who.json()["user"], "alice");
    let mut stream =
        SseReader::open(addr, "/api/v1/namespaces/team-a/snapshots", &with_cookie).await;
    assert_eq!(stream.status, StatusCode::OK);
    let first = stream.next(30).await.expect("the first event");
    assert_eq!(first.event, "snapshot");
    drop(stream);

    // Sign-out ends the session server-side.
    let origin = format!("http://{addr}");
    let out = send(
        addr,
        Method::DELETE,
        "/api/v1/session",
        &[("origin", &origin), ("cookie", &cookie)],
        "",
    )
    .await;
    assert_eq!(out.status, StatusCode::NO_CONTENT);
    assert!(out
        .set_cookie
        .as_deref()
        .is_some_and(|c| c.contains("Max-Age=0")));
    for path in ["/api/v1/session", "/api/v1/namespaces"] {
        let after = send(addr, Method::GET, path, &with_cookie, "").await;
        assert_eq!(after.status, StatusCode::UNAUTHORIZED, "{path}");
    }

    // /metrics: a ServiceAccount allowed `get` on the non-resource URL
    // reads it; alice (a valid identity without it) gets 403, nobody 401.
    api.create(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "metrics-reader"},
        "rules": [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}],
    }))
    .await;
    api.create(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "prometheus-metrics"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "metrics-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "team-b"}],
    }))
    .await;
    let prometheus = service_account_token(&api, "team-b", "prometheus").await;
    let scraped = get_as(addr, "/metrics", &prometheus).await;
    assert_eq!(scraped.status, StatusCode::OK, "{}", scraped.body);
    assert!(scraped.body.contains("dispatch_dash_stored_pods"));
    let alice_metrics = get_as(addr, "/metrics", ALICE_TOKEN).await;
    assert_eq!(alice_metrics.status, StatusCode::FORBIDDEN);
    assert_eq!(alice_metrics.body, r#"{"error":"forbidden"}"#);
    let nobody = send(addr, Method::GET, "/metrics", &[], "").await;
    assert_eq!(nobody.status, StatusCode::UNAUTHORIZED);
    // Health and readiness stay open and say nothing about jobs.
    let (status, health) = get_text(addr, "/healthz", &[]).await;
    assert_eq!((status, health.as_str()), (StatusCode::OK, "ok"));
    let (status, ready) = get_text(addr, "/readyz", &[]).await;
    assert_eq!(status, StatusCode::OK);
    assert!(!ready.contains("team-a"), "{ready}");

    // Revocation: alice's open stream (from a new session) closes once her
    // RoleBinding is gone; then the namespace is 403 to her.
    let (cookie, _) = sign_in(addr, ALICE_TOKEN).await;
    let cookie = cookie.expect("a second session");
    let with_cookie = [("cookie", cookie.as_str())];
    let mut stream =
        SseReader::open(addr, "/api/v1/namespaces/team-a/snapshots", &with_cookie).await;
    assert_eq!(
        stream.next(30).await.expect("the first event").event,
        "snapshot"
    );
    api.delete(&alice_binding).await;
    // Changes may still arrive before the re-check; the stream must end.
    tokio::time::timeout(Duration::from_secs(60), async {
        while stream.next(120).await.is_some() {}
    })
    .await
    .expect("the revoked stream is closed within 60 s");
    eventually(30, "team-a is 403 to alice after the revocation", || {
        let cookie = cookie.clone();
        async move {
            let answer = send(
                addr,
                Method::GET,
                "/api/v1/namespaces/team-a/snapshot",
                &[("cookie", cookie.as_str())],
                "",
            )
            .await;
            (answer.status == StatusCode::FORBIDDEN).then_some(())
        }
    })
    .await;
    server.shutdown().await.expect("clean shutdown");
}

/// A kubeconfig file for kubectl, removed on drop.
struct KubeconfigFile(PathBuf);

impl KubeconfigFile {
    fn new(yaml: &str) -> KubeconfigFile {
        let path = std::env::temp_dir().join(format!(
            "dispatch-dash-auth-kubeconfig-{}.yaml",
            std::process::id()
        ));
        std::fs::write(&path, yaml).expect("write the kubeconfig");
        KubeconfigFile(path)
    }

    /// Runs kubectl with this kubeconfig: (success, stdout and stderr).
    fn kubectl(&self, args: &[&str]) -> (bool, String) {
        let output = Command::new("kubectl")
            .arg(format!("--kubeconfig={}", self.0.display()))
            .args(args)
            .output()
            .expect("kubectl is installed (scripts/setup.sh)");
        (
            output.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&output.stdout),
                String::from_utf8_lossy(&output.stderr)
            ),
        )
    }
}

impl Drop for KubeconfigFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

fn deploy_dir() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../deploy")
        .display()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn start_up_needs_auth_delegator_and_deploy_grants_exactly_what_is_read() {
    let api = ApiServer::start(Workloads::WithQueues, &["team-a", "dispatch-dash"]).await;

    // alice may not create reviews: the server refuses to start, naming
    // the ClusterRole.
    let alice = serve::config_from_kubeconfig_yaml(&api.kubeconfig_yaml_at(&api.url, ALICE_TOKEN))
        .await
        .expect("kubeconfig");
    let refused = serve::start(config(alice, quick_auth()))
        .await
        .expect_err("no auth-delegator, no start");
    let message = refused.to_string();
    assert!(message.contains("system:auth-delegator"), "{message}");
    assert!(message.contains("tokenreviews"), "{message}");

    let kubeconfig = KubeconfigFile::new(&api.kubeconfig_yaml());
    let (ok, out) = kubeconfig.kubectl(&["apply", "--dry-run=server", "-f", &deploy_dir()]);
    assert!(ok, "kubectl apply --dry-run=server -f deploy/: {out}");
    // The RBAC for real, then what the ServiceAccount may and may not do.
    for file in ["serviceaccount.yaml", "rbac.yaml", "rbac-nodes.yaml"] {
        let path = format!("{}/{file}", deploy_dir());
        let (ok, out) = kubectl_apply(&kubeconfig, &path);
        assert!(ok, "kubectl apply -f {file}: {out}");
    }
    let service_account = "--as=system:serviceaccount:dispatch-dash:dispatch-dash";
    let mut must = Vec::new();
    for resource in [
        "trainjobs.trainer.kubeflow.org",
        "trainingruntimes.trainer.kubeflow.org",
        "jobsets.jobset.x-k8s.io",
        "workloads.kueue.x-k8s.io",
        "pods",
    ] {
        for verb in ["get", "list", "watch"] {
            must.push(vec![verb, resource, "-n", "team-a"]);
        }
    }
    for resource in ["nodes", "namespaces"] {
        for verb in ["get", "list", "watch"] {
            must.push(vec![verb, resource]);
        }
    }
    for verb in ["get", "list", "watch"] {
        must.push(vec![verb, "localqueues.kueue.x-k8s.io", "-n", "team-a"]);
        must.push(vec![verb, "clusterqueues.kueue.x-k8s.io"]);
    }
    must.push(vec!["create", "tokenreviews.authentication.k8s.io"]);
    must.push(vec!["create", "subjectaccessreviews.authorization.k8s.io"]);
    for args in &must {
        let (yes, out) = can_i(&kubeconfig, args, service_account);
        assert!(yes, "the ServiceAccount must be able to {args:?}: {out}");
    }
    let mut must_not: Vec<Vec<&str>> = Vec::new();
    for verb in ["create", "update", "delete", "patch"] {
        must_not.push(vec![verb, "pods", "-n", "team-a"]);
        must_not.push(vec![verb, "trainjobs.trainer.kubeflow.org", "-n", "team-a"]);
    }
    must_not.push(vec!["get", "secrets", "-n", "team-a"]);
    must_not.push(vec!["list", "secrets", "-n", "dispatch-dash"]);
    must_not.push(vec!["list", "configmaps", "-n", "team-a"]);
    must_not.push(vec!["get", "configmaps", "-n", "dispatch-dash"]);
    must_not.push(vec!["create", "pods/exec", "-n", "team-a"]);
    for args in &must_not {
        let (yes, out) = can_i(&kubeconfig, args, service_account);
        assert!(
            !yes,
            "the ServiceAccount must not be able to {args:?}: {out}"
        );
    }
    // Kueue's visibility API is an aggregated one that this cluster does
    // not serve, so kubectl cannot resolve its resource; its RBAC is asked
    // with a SubjectAccessReview instead: `get` on the place in line, and
    // nothing else of the group.
    let pending = |verb: &str, subresource: &str| ResourceAttributes {
        group: Some("visibility.kueue.x-k8s.io".into()),
        resource: Some("localqueues".into()),
        subresource: Some(subresource.into()).filter(|s: &String| !s.is_empty()),
        name: Some("user-queue".into()),
        namespace: Some("team-a".into()),
        verb: Some(verb.into()),
        ..ResourceAttributes::default()
    };
    let server_account = "system:serviceaccount:dispatch-dash:dispatch-dash";
    assert!(may(&api, server_account, pending("get", "pendingworkloads")).await);
    for (verb, subresource) in [
        ("list", "pendingworkloads"),
        ("get", ""),
        ("create", "pendingworkloads"),
    ] {
        assert!(
            !may(&api, server_account, pending(verb, subresource)).await,
            "the ServiceAccount must not {verb} localqueues/{subresource} of the visibility API"
        );
    }

    // And the server runs as that ServiceAccount, in kubernetes mode with
    // the production cache lifetimes.
    let token = token_of(&api, "dispatch-dash", "dispatch-dash").await;
    let production = AuthConfig {
        mode: AuthMode::Kubernetes,
        ..AuthConfig::default()
    };
    let server = dispatch_dash_with(&api.kubeconfig_yaml_at(&api.url, &token), production).await;
    let admin = get_as(server.addr, "/api/v1/namespaces", ADMIN_TOKEN).await;
    assert_eq!(admin.status, StatusCode::OK, "{}", admin.body);
    // A page load's worth of requests costs one TokenReview per token: the
    // apiserver's own request counter says so.
    let before = token_reviews_served(&api).await;
    for token in [ALICE_TOKEN, BOB_TOKEN] {
        for path in [
            "/api/v1/namespaces",
            "/api/v1/namespaces/team-a/snapshot",
            "/api/v1/namespaces/team-a/jobs/llm-1",
            "/api/v1/session",
        ] {
            for _ in 0..3 {
                get_as(server.addr, path, token).await;
            }
        }
    }
    // The apiserver counts a request just after answering it: wait for the
    // two to be counted, then there must be no more.
    let api = &api;
    let counted = eventually(10, "the TokenReviews counted", || async move {
        let delta = token_reviews_served(api).await - before;
        (delta >= 2.0).then_some(delta)
    })
    .await;
    assert_eq!(counted, 2.0, "one TokenReview per token");
    server.shutdown().await.expect("clean shutdown");
}

/// TokenReviews the apiserver has answered (`apiserver_request_total`).
async fn token_reviews_served(api: &ApiServer) -> f64 {
    let request = hyper::Request::get("/metrics")
        .body(Vec::new())
        .expect("request");
    let text = api
        .client()
        .request_text(request)
        .await
        .expect("the apiserver's metrics");
    text.lines()
        .filter(|l| {
            l.starts_with("apiserver_request_total{") && l.contains(r#"resource="tokenreviews""#)
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

fn kubectl_apply(kubeconfig: &KubeconfigFile, path: &str) -> (bool, String) {
    kubeconfig.kubectl(&["apply", "-f", path])
}

/// Whether the cluster's RBAC lets `user` do what `attributes` say, by a
/// SubjectAccessReview made as the admin.
async fn may(api: &ApiServer, user: &str, attributes: ResourceAttributes) -> bool {
    let review = SubjectAccessReview {
        spec: SubjectAccessReviewSpec {
            user: Some(user.into()),
            resource_attributes: Some(attributes),
            ..SubjectAccessReviewSpec::default()
        },
        ..SubjectAccessReview::default()
    };
    let answer = Api::<SubjectAccessReview>::all(api.client())
        .create(&PostParams::default(), &review)
        .await
        .expect("a review");
    answer.status.is_some_and(|s| s.allowed)
}

/// `kubectl auth can-i ARGS --as=...`: whether it said yes.
fn can_i(kubeconfig: &KubeconfigFile, args: &[&str], as_user: &str) -> (bool, String) {
    let mut all = vec!["auth", "can-i"];
    all.extend_from_slice(args);
    all.push(as_user);
    let (_, out) = kubeconfig.kubectl(&all);
    (out.lines().next().map(str::trim) == Some("yes"), out)
}

/// The queue facts under the cluster's own RBAC, with Kueue's queue CRDs:
/// alice, allowed TrainJobs, pods and LocalQueues in team-a, sees the
/// LocalQueue's counts but not the quota of a ClusterQueue she may not
/// `get`; a ClusterRole granting that `get` shows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alice_sees_her_local_queue_but_only_the_cluster_queues_she_may_get() {
    use emulator::scenario::objects::{self, JobRef};
    let api = ApiServer::start(Workloads::WithQueues, &["team-a"]).await;
    api.create(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": "queue-viewer", "namespace": "team-a"},
        "rules": [
            {"apiGroups": ["trainer.kubeflow.org"], "resources": ["trainjobs"], "verbs": ["list"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["list"]},
            {"apiGroups": ["kueue.x-k8s.io"], "resources": ["localqueues"], "verbs": ["list"]},
        ],
    }))
    .await;
    api.create(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": "alice-queues", "namespace": "team-a"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "queue-viewer"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
    }))
    .await;
    let time = emulator::time::now_rfc3339();
    api.create(json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "ClusterQueue",
        "metadata": {"name": "gpu-cq"},
        "spec": {"namespaceSelector": {}, "resourceGroups": [{"coveredResources": ["nvidia.com/gpu"],
            "flavors": [{"name": "a100", "resources": [{"name": "nvidia.com/gpu", "nominalQuota": "64"}]}]}]},
        "status": {"flavorsReservation": [{"name": "a100", "resources": [
            {"name": "nvidia.com/gpu", "total": "56", "borrowed": "0"}]}]}}))
        .await;
    api.create(
        json!({"apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "LocalQueue",
        "metadata": {"name": "main", "namespace": "team-a"},
        "spec": {"clusterQueue": "gpu-cq"},
        "status": {"pendingWorkloads": 3, "reservingWorkloads": 7, "admittedWorkloads": 7}}),
    )
    .await;
    let job = JobRef::new("team-a", "llm-7", "s1");
    let trainjob = api
        .create(objects::trainjob(&job, 4, Some("main"), true))
        .await;
    let uid = trainjob["metadata"]["uid"]
        .as_str()
        .expect("a uid")
        .to_string();
    let mut workload = objects::workload(&job, "trainjob-llm-7-s1-1a2b3", &uid, "main", 4);
    workload["apiVersion"] = json!("kueue.x-k8s.io/v1beta2");
    workload["status"]["conditions"] = json!([objects::condition(
        "QuotaReserved",
        "False",
        "Pending",
        "couldn't assign flavors to pod set node",
        &time
    )]);
    api.create(workload).await;

    let server = dispatch_dash(&api.kubeconfig_yaml()).await;
    let addr = server.addr;
    let queue_as = |token: &'static str, wait: &'static str| async move {
        eventually(30, &format!("{token} is told {wait}"), || async {
            let answer = get_as(addr, "/api/v1/namespaces/team-a/jobs/llm-7", token).await;
            let queue = answer.json().get(0)?.get("queue")?.clone();
            (queue["wait"] == wait).then_some(queue)
        })
        .await
    };
    // admin may get every ClusterQueue: 32 asked, 8 of 64 free.
    let admin = queue_as(ADMIN_TOKEN, "quota").await;
    assert_eq!(admin["room"][0]["free"], "8", "{admin}");
    // alice: the LocalQueue's counts, the ClusterQueue withheld.
    let alice = queue_as(ALICE_TOKEN, "clusterQueueNotReadable").await;
    assert_eq!(alice["localQueue"], "team-a/main", "{alice}");
    assert_eq!(alice["room"], json!([]), "{alice}");
    let sentence = alice["sentence"].as_str().expect("a sentence");
    assert!(sentence.contains("3 pending"), "{sentence}");
    assert!(!sentence.contains("64"), "{sentence}");
    // This cluster runs no Kueue visibility server: admin is told so, and
    // alice, who may not get `localqueues/pendingworkloads`, is told her
    // place is withheld before anything is asked.
    assert_eq!(admin["position"]["unavailable"], "notServed", "{admin}");
    assert_eq!(alice["position"]["unavailable"], "withheld", "{alice}");
    // A ClusterRole that lets her get ClusterQueues, and the place in line:
    // the quota, and the same answer as admin's.
    api.create(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "clusterqueue-reader"},
        "rules": [{"apiGroups": ["kueue.x-k8s.io"], "resources": ["clusterqueues"], "verbs": ["get"]},
            {"apiGroups": ["visibility.kueue.x-k8s.io"], "resources": ["localqueues/pendingworkloads"], "verbs": ["get"]}],
    }))
    .await;
    api.create(json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "alice-clusterqueues"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "clusterqueue-reader"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
    }))
    .await;
    let granted = queue_as(ALICE_TOKEN, "quota").await;
    assert_eq!(granted["room"], admin["room"], "{granted}");
    // Both denials were cached by one request, the place in line's a
    // moment later: wait for it to expire too.
    eventually(
        30,
        "alice is told what admin is of the place in line",
        || async {
            let answer = get_as(addr, "/api/v1/namespaces/team-a/jobs/llm-7", ALICE_TOKEN).await;
            let position = answer.json().get(0)?.get("queue")?.get("position")?.clone();
            (position == admin["position"]).then_some(())
        },
    )
    .await;
    server.shutdown().await.expect("clean shutdown");
}
