//! A real kube-apiserver v1.20.2 and etcd for the tests, on free loopback
//! ports, with the reduced Trainer, JobSet and Kueue CRDs loaded
//! (`tests/apiserver/crds/`). `scripts/setup.sh` builds and caches the
//! binary; see `../shared/notes/real-kube-apiserver.md` for the recipe.
//!
//! One apiserver runs at a time per test binary ([`ApiServer::start`] waits
//! for the previous one to be dropped): each costs about 5 s of a core to
//! start and 400 MB to run, and the machine has two cores. Dropping an
//! [`ApiServer`] kills the apiserver, then etcd, by PID and removes their
//! temporary directory; the processes also get `SIGKILL` if the test
//! thread dies first (`setpriv --pdeathsig`), so none outlives the tests.
//!
//! There is no scheduler, kubelet or controller manager: a test writes pod
//! and node status itself ([`ApiServer::create`] writes an object's status
//! through the `/status` subresource), and deletes pods at once.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch,
    PatchParams, PostParams, VersionMatch,
};
use kube::Client;
use serde_json::{json, Value};
use tokio::io::copy_bidirectional;
use tokio::net::{TcpListener as AsyncTcpListener, TcpStream};
use tokio::sync::{watch, Semaphore, SemaphorePermit};
use tokio::task::JoinHandle;

use super::eventually;

/// The token of `admin` (group `system:masters`).
pub const ADMIN_TOKEN: &str = "admin-token-0c1f9e";
/// The token of `alice`, a user with no groups and no roles.
pub const ALICE_TOKEN: &str = "alice-token-7d2a41";
/// The token of `bob`, a user with no groups and no roles.
pub const BOB_TOKEN: &str = "bob-token-93be06";

/// The version the tests expect, as `--version` prints it.
const KUBE_VERSION: &str = "v1.20.2";
/// Where `scripts/setup-kube-apiserver.sh` caches the binary by default.
const DEFAULT_CACHE_DIR: &str = "/var/cache/dispatch-dash/kube-apiserver-v1.20.2";
/// Overrides [`DEFAULT_CACHE_DIR`], as it does for the setup script.
const CACHE_DIR_VARIABLE: &str = "DISPATCH_DASH_KUBE_APISERVER_DIR";
/// Debian's etcd-server.
const ETCD: &str = "/usr/bin/etcd";
/// util-linux: runs a command with a parent-death signal.
const SETPRIV: &str = "/usr/bin/setpriv";
/// How often the apiserver compacts etcd's history (what makes `410 Gone`).
pub const COMPACTION_INTERVAL: Duration = Duration::from_secs(2);

/// One apiserver at a time per test binary.
static ONE_AT_A_TIME: Semaphore = Semaphore::const_new(1);

/// Which Workload CRD to install.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Workloads {
    /// No Workload CRD: the cluster has no Kueue.
    None,
    /// As Kueue ships it now: v1beta1 served and deprecated, v1beta2 served
    /// and stored.
    AsKueueShips,
    /// Only v1beta2, as once v1beta1 is no longer served.
    V1beta2Only,
    /// Only v1beta1, as an older Kueue serves it.
    V1beta1Only,
    /// Only v1beta3, a version dispatch-dash does not understand.
    V1beta3Only,
    /// As [`Workloads::AsKueueShips`], with Kueue's ResourceFlavor,
    /// ClusterQueue and LocalQueue CRDs too.
    WithQueues,
}

impl Workloads {
    fn crd_files(self) -> &'static [&'static str] {
        match self {
            Workloads::None => &[],
            Workloads::AsKueueShips => &["workload-v1beta1-v1beta2.yaml"],
            Workloads::V1beta2Only => &["workload-v1beta2.yaml"],
            Workloads::V1beta1Only => &["workload-v1beta1.yaml"],
            Workloads::V1beta3Only => &["workload-v1beta3.yaml"],
            Workloads::WithQueues => &["workload-v1beta1-v1beta2.yaml", "queues.yaml"],
        }
    }
}

/// A running etcd and kube-apiserver; both stop when this is dropped.
pub struct ApiServer {
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// The secure port's address.
    pub addr: SocketAddr,
    // Field order is drop order: the processes stop, then their directory goes.
    processes: Processes,
    dir: TempDir,
    client: Client,
    _slot: SemaphorePermit<'static>,
}

impl ApiServer {
    /// Starts etcd and the apiserver, waits for `/readyz`, loads the CRDs
    /// and creates `namespaces`. Panics, saying why, when anything fails.
    pub async fn start(workloads: Workloads, namespaces: &[&str]) -> ApiServer {
        let binary = cached_binary();
        let slot = ONE_AT_A_TIME
            .acquire()
            .await
            .expect("the apiserver semaphore is never closed");
        let dir = TempDir::new();
        let [etcd_client, etcd_peer, etcd_metrics, secure] = free_ports();
        let etcd = Process::spawn(
            "etcd",
            ETCD,
            &[
                format!("--data-dir={}", dir.path("etcd").display()),
                format!("--listen-client-urls=http://127.0.0.1:{etcd_client}"),
                format!("--advertise-client-urls=http://127.0.0.1:{etcd_client}"),
                format!("--listen-peer-urls=http://127.0.0.1:{etcd_peer}"),
                format!("--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}"),
                format!("--initial-cluster=default=http://127.0.0.1:{etcd_peer}"),
                format!("--listen-metrics-urls=http://127.0.0.1:{etcd_metrics}"),
                "--log-level=warn".into(),
            ],
            &dir,
        );
        write_credentials(&dir);
        let apiserver = Process::spawn(
            "kube-apiserver",
            &binary.display().to_string(),
            &[
                format!("--etcd-servers=http://127.0.0.1:{etcd_client}"),
                "--bind-address=127.0.0.1".into(),
                "--advertise-address=127.0.0.1".into(),
                format!("--secure-port={secure}"),
                "--insecure-port=0".into(),
                format!("--cert-dir={}", dir.path("certs").display()),
                format!("--token-auth-file={}", dir.path("tokens.csv").display()),
                "--authorization-mode=RBAC".into(),
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local".into(),
                format!(
                    "--service-account-key-file={}",
                    dir.path("sa.pub").display()
                ),
                format!(
                    "--service-account-signing-key-file={}",
                    dir.path("sa.key").display()
                ),
                "--service-cluster-ip-range=10.96.0.0/16".into(),
                "--endpoint-reconciler-type=none".into(),
                // Pods can be created without a controller manager's tokens.
                "--disable-admission-plugins=ServiceAccount".into(),
                // Watches read etcd directly, so compaction makes `410 Gone`.
                format!(
                    "--etcd-compaction-interval={}s",
                    COMPACTION_INTERVAL.as_secs()
                ),
                "--watch-cache=false".into(),
                "--v=1".into(),
            ],
            &dir,
        );
        let mut processes = Processes { apiserver, etcd };
        let addr: SocketAddr = ([127, 0, 0, 1], secure).into();
        let url = format!("https://{addr}");
        let client = wait_until_ready(&url, &dir, &mut processes).await;
        let server = ApiServer {
            url,
            addr,
            processes,
            dir,
            client,
            _slot: slot,
        };
        server.load_crds(workloads).await;
        for namespace in namespaces {
            server
                .create(json!({"apiVersion": "v1", "kind": "Namespace",
                    "metadata": {"name": namespace}}))
                .await;
        }
        server
    }

    /// A kubeconfig for `token` at `url` (the apiserver's, or a proxy's in
    /// front of it), trusting the apiserver's self-signed CA.
    pub fn kubeconfig_yaml_at(&self, url: &str, token: &str) -> String {
        kubeconfig_yaml(url, &self.dir, token)
    }

    /// The admin kubeconfig.
    pub fn kubeconfig_yaml(&self) -> String {
        self.kubeconfig_yaml_at(&self.url, ADMIN_TOKEN)
    }

    /// A kube client as admin.
    pub fn client(&self) -> Client {
        self.client.clone()
    }

    async fn load_crds(&self, workloads: Workloads) {
        let dir = crd_dir();
        let mut files = vec!["trainer.yaml", "jobset.yaml"];
        files.extend(workloads.crd_files());
        let mut names = Vec::new();
        for file in files {
            let path = dir.join(file);
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
            let documents: Vec<Value> = serde_saphyr::from_multiple(&text)
                .unwrap_or_else(|e| panic!("{} is not YAML: {e}", path.display()));
            for crd in documents {
                names.push(crd["metadata"]["name"].as_str().unwrap_or("").to_string());
                self.create(crd).await;
            }
        }
        let crds = self
            .api("apiextensions.k8s.io/v1", "CustomResourceDefinition", None)
            .await;
        for name in names {
            eventually(30, &format!("CRD {name} established"), || {
                let crds = crds.clone();
                let name = name.clone();
                async move {
                    let crd = crds.get(&name).await.ok()?;
                    let conditions =
                        serde_json::to_value(&crd.data["status"]["conditions"]).ok()?;
                    conditions
                        .as_array()?
                        .iter()
                        .any(|c| c["type"] == "Established" && c["status"] == "True")
                        .then_some(())
                }
            })
            .await;
        }
        // Discovery serves a new group a moment after it is established.
        let client = self.client();
        eventually(30, "the CRD groups in discovery", || {
            let client = client.clone();
            async move {
                let groups = client.list_api_groups().await.ok()?;
                let served = |name: &str| groups.groups.iter().any(|g| g.name == name);
                let kueue = workloads == Workloads::None || served("kueue.x-k8s.io");
                (served("trainer.kubeflow.org") && served("jobset.x-k8s.io") && kueue).then_some(())
            }
        })
        .await;
    }

    /// The API of `kind` in `api_version` (found by discovery), in
    /// `namespace` or cluster-wide.
    pub async fn api(
        &self,
        api_version: &str,
        kind: &str,
        namespace: Option<&str>,
    ) -> Api<DynamicObject> {
        let (group, version) = match api_version.split_once('/') {
            Some((group, version)) => (group, version),
            None => ("", api_version),
        };
        let gvk = GroupVersionKind::gvk(group, version, kind);
        let (resource, _) = kube::discovery::pinned_kind(&self.client, &gvk)
            .await
            .unwrap_or_else(|e| panic!("{api_version} {kind} is not served: {e}"));
        api_of(&self.client, &resource, namespace)
    }

    async fn api_of_object(&self, object: &Value) -> (Api<DynamicObject>, String) {
        let text = |v: &Value| v.as_str().unwrap_or("").to_string();
        let api = self
            .api(
                &text(&object["apiVersion"]),
                &text(&object["kind"]),
                object["metadata"]["namespace"].as_str(),
            )
            .await;
        (api, text(&object["metadata"]["name"]))
    }

    /// Creates `object` as admin, then writes its `status` (if it has one)
    /// through the `/status` subresource, as a controller or kubelet would;
    /// returns the object as stored.
    pub async fn create(&self, object: Value) -> Value {
        let (api, name) = self.api_of_object(&object).await;
        let status = object.get("status").cloned();
        let dynamic: DynamicObject =
            serde_json::from_value(object).expect("a Kubernetes object as JSON");
        let created = api
            .create(&PostParams::default(), &dynamic)
            .await
            .unwrap_or_else(|e| panic!("create {name}: {e}"));
        let created = to_json(&created);
        match status {
            Some(status) if status.as_object().is_some_and(|s| !s.is_empty()) => {
                self.patch_status(&created, status).await
            }
            _ => created,
        }
    }

    /// Merge-patches `patch` into the object named like `object` (only its
    /// apiVersion, kind and metadata name and namespace are read).
    pub async fn patch(&self, object: &Value, patch: Value) -> Value {
        let (api, name) = self.api_of_object(object).await;
        let patched = api
            .patch(&name, &PatchParams::default(), &Patch::Merge(patch))
            .await
            .unwrap_or_else(|e| panic!("patch {name}: {e}"));
        to_json(&patched)
    }

    /// Merge-patches `status` into the object's status subresource.
    pub async fn patch_status(&self, object: &Value, status: Value) -> Value {
        let (api, name) = self.api_of_object(object).await;
        let patched = api
            .patch_status(
                &name,
                &PatchParams::default(),
                &Patch::Merge(json!({ "status": status })),
            )
            .await
            .unwrap_or_else(|e| panic!("patch the status of {name}: {e}"));
        to_json(&patched)
    }

    /// Deletes the object at once (grace period 0: no kubelet would ever
    /// confirm a graceful pod deletion).
    pub async fn delete(&self, object: &Value) {
        let (api, name) = self.api_of_object(object).await;
        api.delete(
            &name,
            &DeleteParams {
                grace_period_seconds: Some(0),
                ..DeleteParams::default()
            },
        )
        .await
        .unwrap_or_else(|e| panic!("delete {name}: {e}"));
    }

    /// etcd's current revision, as the resourceVersion of a fresh list.
    pub async fn current_resource_version(&self) -> String {
        let namespaces = self.api("v1", "Namespace", None).await;
        namespaces
            .list_metadata(&ListParams::default().limit(1))
            .await
            .expect("list namespaces")
            .metadata
            .resource_version
            .expect("a list has a resourceVersion")
    }

    /// Whether etcd's history before `resource_version` has been compacted:
    /// reading exactly at it is then `410 Gone`, as is watching from it.
    pub async fn compacted_past(&self, resource_version: &str) -> bool {
        let namespaces = self.api("v1", "Namespace", None).await;
        let params = ListParams::default()
            .at(resource_version)
            .matching(VersionMatch::Exact)
            .limit(1);
        match namespaces.list_metadata(&params).await {
            Err(kube::Error::Api(status)) => status.code == 410,
            _ => false,
        }
    }

    /// The apiserver's and etcd's logs so far (for a failure message).
    pub fn logs(&self) -> String {
        self.dir.logs()
    }
}

fn api_of(client: &Client, resource: &ApiResource, namespace: Option<&str>) -> Api<DynamicObject> {
    match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    }
}

fn to_json(object: &DynamicObject) -> Value {
    serde_json::to_value(object).expect("a DynamicObject is JSON")
}

/// A kubeconfig for `token` at `url`, trusting the CA of the apiserver's
/// self-signed certificate (its file holds the certificate and the CA).
fn kubeconfig_yaml(url: &str, dir: &TempDir, token: &str) -> String {
    let ca = dir.path("certs/apiserver.crt");
    format!(
        "apiVersion: v1\nkind: Config\nclusters:\n- name: real\n  cluster:\n    server: {url}\n    certificate-authority: {}\nusers:\n- name: user\n  user:\n    token: {token}\ncontexts:\n- name: real\n  context:\n    cluster: real\n    user: user\ncurrent-context: real\n",
        ca.display()
    )
}

/// The apiserver, then etcd: field order is drop order.
struct Processes {
    apiserver: Process,
    etcd: Process,
}

/// Polls `/readyz` as admin over TLS until it says `ok` (60 s at most: the
/// start takes about 5 s on an idle machine), and returns the admin client.
async fn wait_until_ready(url: &str, dir: &TempDir, processes: &mut Processes) -> Client {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    let mut last_error = String::from("no certificate yet");
    loop {
        processes.apiserver.check_alive(dir);
        processes.etcd.check_alive(dir);
        // The certificate appears when the apiserver starts serving; a
        // client is built each time in case it was read half-written.
        if dir.path("certs/apiserver.crt").exists() {
            match ready_client(url, dir).await {
                Ok(client) => return client,
                Err(e) => last_error = e,
            }
        }
        if tokio::time::Instant::now() > deadline {
            panic!(
                "kube-apiserver not ready (/readyz) within 60 s: {last_error}\n{}",
                dir.logs()
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn ready_client(url: &str, dir: &TempDir) -> Result<Client, String> {
    let config =
        dispatch_dash::serve::config_from_kubeconfig_yaml(&kubeconfig_yaml(url, dir, ADMIN_TOKEN))
            .await
            .map_err(|e| e.to_string())?;
    let client = Client::try_from(config).map_err(|e| e.to_string())?;
    let request = hyper::Request::get("/readyz")
        .body(Vec::new())
        .map_err(|e| e.to_string())?;
    let body = client
        .request_text(request)
        .await
        .map_err(|e| e.to_string())?;
    if body.trim() == "ok" {
        Ok(client)
    } else {
        Err(format!("/readyz said {body:?}"))
    }
}

/// The cached kube-apiserver; panics, naming the setup script, when it is
/// missing or the wrong version. Never skips.
fn cached_binary() -> PathBuf {
    let dir = std::env::var_os(CACHE_DIR_VARIABLE)
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_CACHE_DIR));
    let binary = dir.join("kube-apiserver");
    let version = Command::new(&binary)
        .arg("--version")
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "no kube-apiserver at {} ({e}): run scripts/setup.sh (it builds and caches \
                 kube-apiserver {KUBE_VERSION}; {CACHE_DIR_VARIABLE} overrides the directory)",
                binary.display()
            )
        });
    let printed = String::from_utf8_lossy(&version.stdout);
    assert!(
        printed.contains(KUBE_VERSION),
        "{} --version printed {printed:?}, not {KUBE_VERSION}: run scripts/setup.sh",
        binary.display()
    );
    assert!(
        Path::new(ETCD).exists(),
        "no {ETCD}: run scripts/setup.sh (it installs etcd-server)"
    );
    binary
}

/// Four distinct free loopback ports. The listeners are held until all four
/// are chosen, so they differ; another process could still take one before
/// the child binds it, which is then a clear failure to start.
fn free_ports() -> [u16; 4] {
    let listeners: Vec<TcpListener> = (0..4)
        .map(|_| TcpListener::bind("127.0.0.1:0").expect("bind a free loopback port"))
        .collect();
    let port = |i: usize| listeners[i].local_addr().expect("a bound address").port();
    [port(0), port(1), port(2), port(3)]
}

/// The service-account key pair and the static token file.
fn write_credentials(dir: &TempDir) {
    let key = dir.path("sa.key");
    let public = dir.path("sa.pub");
    run_openssl(&["genrsa", "-out", &key.display().to_string(), "2048"]);
    run_openssl(&[
        "rsa",
        "-in",
        &key.display().to_string(),
        "-pubout",
        "-out",
        &public.display().to_string(),
    ]);
    let tokens = format!(
        "{ADMIN_TOKEN},admin,admin-uid,\"system:masters\"\n{ALICE_TOKEN},alice,alice-uid\n{BOB_TOKEN},bob,bob-uid\n"
    );
    std::fs::write(dir.path("tokens.csv"), tokens).expect("write the token file");
}

fn run_openssl(args: &[&str]) {
    let output = Command::new("openssl")
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("openssl not found ({e}): run scripts/setup.sh"));
    assert!(
        output.status.success(),
        "openssl {args:?} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn crd_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/apiserver/crds")
}

/// A child process, killed and reaped on drop.
struct Process {
    name: &'static str,
    child: Child,
}

impl Process {
    fn spawn(name: &'static str, program: &str, args: &[String], dir: &TempDir) -> Process {
        let log = std::fs::File::create(dir.path(&format!("{name}.log"))).expect("create a log");
        let err = log.try_clone().expect("clone a log handle");
        // With setpriv, the child gets SIGKILL when this thread ends, so a
        // test binary killed before any Drop runs leaves nothing behind.
        let mut command = if Path::new(SETPRIV).exists() {
            let mut command = Command::new(SETPRIV);
            command.args(["--pdeathsig", "KILL", "--", program]);
            command
        } else {
            Command::new(program)
        };
        let child = command
            .args(args)
            .stdin(Stdio::null())
            .stdout(log)
            .stderr(err)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {name} ({program}): {e}"));
        Process { name, child }
    }

    /// Panics with the logs when the process has exited.
    fn check_alive(&mut self, dir: &TempDir) {
        if let Ok(Some(status)) = self.child.try_wait() {
            panic!("{} exited early ({status})\n{}", self.name, dir.logs());
        }
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        // By PID: `Child::kill` signals exactly this process.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Temporary directories are `<prefix><pid>-<n>`.
const TEMP_DIR_PREFIX: &str = "dispatch-dash-apiserver-";

/// Removes the directories of test binaries that were killed before their
/// `Drop` ran (their processes died with them: `setpriv --pdeathsig`).
fn remove_stale_dirs() {
    let Ok(entries) = std::fs::read_dir(std::env::temp_dir()) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(TEMP_DIR_PREFIX))
            .and_then(|rest| rest.split('-').next())
        else {
            continue;
        };
        if !Path::new("/proc").join(pid).exists() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// A directory removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        remove_stale_dirs();
        let path = std::env::temp_dir().join(format!(
            "{TEMP_DIR_PREFIX}{}-{}",
            std::process::id(),
            COUNTER.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&path);
        std::fs::create_dir_all(path.join("certs")).expect("create the temporary directory");
        TempDir(path)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }

    /// The last lines of each log.
    fn logs(&self) -> String {
        let mut out = String::new();
        for name in ["etcd", "kube-apiserver"] {
            let text =
                std::fs::read_to_string(self.path(&format!("{name}.log"))).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            let tail = &lines[lines.len().saturating_sub(30)..];
            out.push_str(&format!("--- {name}.log (last {} lines)\n", tail.len()));
            for line in tail {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A TCP proxy in front of the apiserver that a test can cut (every
/// connection dropped, new ones closed at once) and restore: a network gap
/// between dispatch-dash and a cluster that keeps running. TLS passes
/// through untouched.
pub struct GapProxy {
    /// `https://127.0.0.1:<port>`, for a kubeconfig.
    pub url: String,
    open: watch::Sender<bool>,
    accept: JoinHandle<()>,
}

impl GapProxy {
    /// A proxy to `upstream` on a free loopback port, open.
    pub async fn start(upstream: SocketAddr) -> GapProxy {
        let listener = AsyncTcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the proxy");
        let url = format!(
            "https://{}",
            listener.local_addr().expect("the proxy's address")
        );
        let (open, _) = watch::channel(true);
        let accept_open = open.clone();
        let accept = tokio::spawn(async move {
            while let Ok((mut downstream, _)) = listener.accept().await {
                let mut is_open = accept_open.subscribe();
                if !*is_open.borrow_and_update() {
                    continue; // dropped: the connection closes
                }
                tokio::spawn(async move {
                    let Ok(mut up) = TcpStream::connect(upstream).await else {
                        return;
                    };
                    tokio::select! {
                        _ = copy_bidirectional(&mut downstream, &mut up) => {}
                        // Cut, or the proxy is gone.
                        _ = is_open.wait_for(|open| !*open) => {}
                    }
                });
            }
        });
        GapProxy { url, open, accept }
    }

    /// Drops every connection and refuses new ones until [`Self::restore`].
    pub fn cut(&self) {
        self.open.send_replace(false);
    }

    /// Lets connections through again.
    pub fn restore(&self) {
        self.open.send_replace(true);
    }
}

impl Drop for GapProxy {
    fn drop(&mut self) {
        self.open.send_replace(false);
        self.accept.abort();
    }
}
