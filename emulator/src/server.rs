//! The HTTP side: routing, discovery, get/list, and serving on a socket.

use std::net::SocketAddr;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Query, Request, State};
use axum::http::{header, Method, StatusCode};
use axum::response::Response;
use axum::Router;
use serde_json::{json, Value};
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;

use crate::field;
use crate::kind::Kind;
use crate::selector::{FieldSelector, LabelSelector};
use crate::status::{json_response, status};
use crate::store::Emulator;
use crate::watch::{watch_response, WatchSpec, WatchStart};
use crate::Result;

/// What a handler needs: the emulator and this server's kill switch (so a
/// shutdown ends the watch streams this server is serving).
#[derive(Clone)]
pub(crate) struct ServerState {
    pub emulator: Emulator,
    pub kill: watch::Receiver<bool>,
}

fn ok(body: &Value) -> Response {
    json_response(StatusCode::OK, body)
}

fn bad_request(message: &str) -> Response {
    status(StatusCode::BAD_REQUEST, "BadRequest", message, None)
}

fn not_found_path(path: &str) -> Response {
    status(
        StatusCode::NOT_FOUND,
        "NotFound",
        &format!("the server could not find the requested resource (path {path})"),
        Some(
            json!({"causes": [{"reason": "UnexpectedServerResponse", "message": "404 page not found"}]}),
        ),
    )
}

/// Where a request goes.
#[derive(Debug, PartialEq, Eq)]
enum Route {
    Version,
    CoreVersions,
    Groups,
    Group(String),
    ResourceList(String, String),
    Resource {
        kind: Kind,
        version: String,
        namespace: Option<String>,
        name: Option<String>,
        subresource: Option<String>,
    },
    NotFound,
}

fn route(path: &str) -> Route {
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match segs.as_slice() {
        ["version"] => Route::Version,
        ["api"] => Route::CoreVersions,
        ["api", "v1"] => Route::ResourceList(String::new(), "v1".into()),
        ["api", "v1", rest @ ..] => resource_route("", "v1", rest),
        ["apis"] => Route::Groups,
        ["apis", g] => Route::Group((*g).into()),
        ["apis", g, v] => Route::ResourceList((*g).into(), (*v).into()),
        ["apis", g, v, rest @ ..] => resource_route(g, v, rest),
        _ => Route::NotFound,
    }
}

fn resource_route(group: &str, version: &str, rest: &[&str]) -> Route {
    let find = |plural: &str| Kind::from_resource(group, version, plural);
    let (kind, namespace, rest) = match rest {
        ["namespaces", ns, plural, tail @ ..] => match find(plural) {
            Some(k) if k.namespaced() => (k, Some((*ns).to_string()), tail),
            _ => return Route::NotFound,
        },
        [plural, tail @ ..] => match find(plural) {
            Some(k) => (k, None, tail),
            None => return Route::NotFound,
        },
        [] => return Route::NotFound,
    };
    let (name, subresource) = match rest {
        [] => (None, None),
        [name] => (Some((*name).to_string()), None),
        [name, sub] => (Some((*name).to_string()), Some((*sub).to_string())),
        _ => return Route::NotFound,
    };
    // A namespaced kind has no single objects outside a namespace.
    if name.is_some() && kind.namespaced() && namespace.is_none() {
        return Route::NotFound;
    }
    Route::Resource {
        kind,
        version: version.to_string(),
        namespace,
        name,
        subresource,
    }
}

/// Every request lands here: the emulator parses paths itself so that any
/// malformed input becomes a `Status`, never a panic.
async fn handle(State(state): State<ServerState>, req: Request) -> Response {
    let emu = state.emulator.clone();
    let latency = emu.latency();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    if let Some(review) = crate::review::Review::from_path(req.uri().path()) {
        return review_request(&emu, review, req).await;
    }
    if req.method() != Method::GET {
        return status(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            &format!(
                "the server does not allow this method on the requested resource ({} {}): the emulator is read-only over HTTP",
                req.method(),
                req.uri().path()
            ),
            None,
        );
    }
    let params: Vec<(String, String)> = match Query::try_from_uri(req.uri()) {
        Ok(Query(p)) => p,
        Err(e) => return bad_request(&format!("invalid query string: {e}")),
    };
    let path = req.uri().path().to_string();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if let Some(pending) = crate::visibility::PendingRequest::from_segments(&segs) {
        if !crate::visibility::served_versions(&emu).contains(&pending.version.as_str()) {
            return not_found_path(&path);
        }
        return crate::visibility::answer(&emu, &pending, &params);
    }
    match route(&path) {
        Route::Version => ok(&version_info()),
        Route::CoreVersions => ok(&json!({
            "kind": "APIVersions",
            "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": ""}],
        })),
        Route::Groups => ok(&json!({
            "kind": "APIGroupList",
            "apiVersion": "v1",
            "groups": served_groups(&emu).into_iter().map(|(g, v)| group_doc(&g, &v)).collect::<Vec<_>>(),
        })),
        Route::Group(g) => match served_groups(&emu).into_iter().find(|(name, _)| *name == g) {
            Some((g, v)) => {
                let mut doc = group_doc(&g, &v);
                field::set(&mut doc, &["kind"], json!("APIGroup"));
                field::set(&mut doc, &["apiVersion"], json!("v1"));
                ok(&doc)
            }
            None => not_found_path(&path),
        },
        Route::ResourceList(g, v) => resource_list(&emu, &g, v, &path),
        Route::Resource {
            kind,
            version,
            namespace,
            name,
            subresource,
        } => {
            if !emu.serves_version(kind, &version) {
                return not_found_path(&path);
            }
            let request = ResourceRequest {
                kind,
                version,
                namespace,
                name,
                subresource,
            };
            let deprecation = emu.deprecation(kind, &request.version);
            let mut response = resource(&state, request, &params).await;
            if let Some(text) = deprecation {
                // What a real API server sends for a CRD version marked
                // `deprecated: true`: RFC 7234 warn-code 299.
                let warning = format!("299 - {text:?}");
                if let Ok(value) = header::HeaderValue::from_str(&warning) {
                    response.headers_mut().insert(header::WARNING, value);
                }
            }
            response
        }
        Route::NotFound => not_found_path(&path),
    }
}

/// The `APIResourceList` of group `g` at version `v`: the kinds, reviews
/// and visibility resources served there; a 404 when there is none.
fn resource_list(emu: &Emulator, g: &str, v: String, path: &str) -> Response {
    let mut resources: Vec<Value> = Kind::ALL
        .into_iter()
        .filter(|k| k.group() == g && emu.serves_version(*k, &v))
        .map(|k| k.api_resource())
        .collect();
    for (group, version, reviews) in crate::review::discovery() {
        if group == g && version == v {
            resources.extend(reviews);
        }
    }
    if g == crate::visibility::GROUP
        && crate::visibility::served_versions(emu).contains(&v.as_str())
    {
        resources.extend(crate::visibility::resources());
    }
    if resources.is_empty() {
        return not_found_path(path);
    }
    let gv = if g.is_empty() { v } else { format!("{g}/{v}") };
    ok(&json!({
        "kind": "APIResourceList",
        "apiVersion": "v1",
        "groupVersion": gv,
        "resources": resources,
    }))
}

/// What `/version` answers: a cluster of the Kubernetes version the
/// emulator's wire format follows.
fn version_info() -> Value {
    json!({
        "major": "1",
        "minor": "33",
        "gitVersion": "v1.33.0-dispatch-emulator",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.24.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    })
}

/// A review is created (POST) and answered; nothing is stored.
async fn review_request(emu: &Emulator, review: crate::review::Review, req: Request) -> Response {
    if req.method() != Method::POST {
        return status(
            StatusCode::METHOD_NOT_ALLOWED,
            "MethodNotAllowed",
            &format!(
                "the server does not allow this method on the requested resource ({} {}): {} can only be created",
                req.method(),
                req.uri().path(),
                review.resource()
            ),
            None,
        );
    }
    let bearer = req
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .map(str::to_string);
    let body = match axum::body::to_bytes(req.into_body(), crate::review::MAX_REVIEW_BYTES).await {
        Ok(body) => body,
        Err(_) => {
            return status(
                StatusCode::PAYLOAD_TOO_LARGE,
                "RequestEntityTooLarge",
                "the request body is too large",
                None,
            )
        }
    };
    let (_in_flight, latency) = emu.review_started();
    if !latency.is_zero() {
        tokio::time::sleep(latency).await;
    }
    crate::review::answer(emu, review, bearer.as_deref(), &body)
}

/// Each served group with its served versions, the preferred first.
fn served_groups(emu: &Emulator) -> Vec<(String, Vec<&'static str>)> {
    let mut groups: Vec<(String, Vec<&'static str>)> = Vec::new();
    for k in Kind::ALL {
        let versions = emu.served_versions(k);
        if k.group().is_empty() || versions.is_empty() {
            continue;
        }
        if !groups.iter().any(|(g, _)| g == k.group()) {
            groups.push((k.group().to_string(), Vec::new()));
        }
        let Some((_, served)) = groups.iter_mut().find(|(g, _)| g == k.group()) else {
            continue;
        };
        for v in versions {
            if !served.contains(v) {
                served.push(v);
            }
        }
    }
    let visibility = crate::visibility::served_versions(emu);
    if !visibility.is_empty() {
        groups.push((crate::visibility::GROUP.to_string(), visibility.to_vec()));
    }
    // The review groups every API server serves (what `--auth kubernetes`
    // creates).
    for (group, version, _) in crate::review::discovery() {
        groups.push((group.to_string(), vec![version]));
    }
    groups
}

/// An `APIGroup` document: every served version, the preferred (storage)
/// one first and as `preferredVersion`, as a real API server lists them.
fn group_doc(group: &str, versions: &[&str]) -> Value {
    let gv = |v: &str| json!({"groupVersion": format!("{group}/{v}"), "version": v});
    let listed: Vec<Value> = versions.iter().map(|v| gv(v)).collect();
    let preferred = versions.first().map(|v| gv(v)).unwrap_or(Value::Null);
    json!({"name": group, "versions": listed, "preferredVersion": preferred})
}

/// Objects are served at the version of the path they were asked at.
fn at_version(kind: Kind, object: &Value, api_version: &str) -> Value {
    kind.convert(object, crate::kind::version_of(api_version))
}

/// A request for objects of one kind at one version.
struct ResourceRequest {
    kind: Kind,
    version: String,
    namespace: Option<String>,
    name: Option<String>,
    subresource: Option<String>,
}

/// Query parameters of a get/list/watch.
#[derive(Debug, Default)]
struct Params {
    watch: bool,
    resource_version: Option<String>,
    resource_version_match: Option<String>,
    limit: Option<usize>,
    continue_token: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
    timeout: Option<Duration>,
    bookmarks: bool,
    send_initial_events: bool,
}

fn truthy(v: &str) -> bool {
    matches!(v, "true" | "1" | "True" | "TRUE")
}

fn parse_params(raw: &[(String, String)]) -> std::result::Result<Params, String> {
    let mut p = Params::default();
    for (k, v) in raw {
        match k.as_str() {
            "watch" => p.watch = truthy(v),
            "resourceVersion" => p.resource_version = Some(v.clone()),
            "resourceVersionMatch" => p.resource_version_match = Some(v.clone()),
            "limit" => {
                let n: i64 = v.parse().map_err(|_| format!("invalid limit {v:?}"))?;
                // limit <= 0 means "no limit", as in the API server.
                p.limit = usize::try_from(n).ok().filter(|n| *n > 0);
            }
            "continue" => p.continue_token = Some(v.clone()).filter(|v| !v.is_empty()),
            "labelSelector" => p.labels = LabelSelector::parse(v)?,
            "fieldSelector" => p.fields = FieldSelector::parse(v)?,
            "timeoutSeconds" => {
                let n: u64 = v
                    .parse()
                    .map_err(|_| format!("invalid timeoutSeconds {v:?}"))?;
                p.timeout = Some(Duration::from_secs(n));
            }
            "allowWatchBookmarks" => p.bookmarks = truthy(v),
            "sendInitialEvents" => p.send_initial_events = truthy(v),
            _ => {}
        }
    }
    Ok(p)
}

fn parse_rv(v: &str) -> std::result::Result<u64, String> {
    v.parse()
        .map_err(|_| format!("invalid resource version {v:?}: expected a decimal number"))
}

/// `continue` tokens are opaque to clients; this one is `<rv>/<namespace>/<name>`
/// of the last item served, hex-encoded.
fn encode_continue(rv: u64, last: &(String, String)) -> String {
    format!("{rv}/{}/{}", last.0, last.1)
        .bytes()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn decode_continue(token: &str) -> Option<(u64, (String, String))> {
    if !token.len().is_multiple_of(2) || !token.is_ascii() {
        return None;
    }
    let bytes: Option<Vec<u8>> = (0..token.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(token.get(i..i + 2)?, 16).ok())
        .collect();
    let text = String::from_utf8(bytes?).ok()?;
    let mut it = text.splitn(3, '/');
    let rv = it.next()?.parse().ok()?;
    let ns = it.next()?.to_string();
    let name = it.next()?.to_string();
    Some((rv, (ns, name)))
}

fn verb(name: &Option<String>, params: &Params) -> &'static str {
    if params.watch {
        "watch"
    } else if name.is_some() {
        "get"
    } else {
        "list"
    }
}

async fn resource(
    state: &ServerState,
    request: ResourceRequest,
    raw: &[(String, String)],
) -> Response {
    let ResourceRequest {
        kind,
        version,
        namespace,
        name,
        subresource,
    } = request;
    let emu = &state.emulator;
    let params = match parse_params(raw) {
        Ok(p) => p,
        Err(e) => return bad_request(&e),
    };
    let verb = verb(&name, &params);
    emu.count_request(kind, verb, emu.deprecation(kind, &version).is_some());
    let api_version = kind.api_version_at(&version);
    if emu.is_forbidden(kind.plural(), verb) {
        let scope = match &namespace {
            Some(ns) => format!("in the namespace \"{ns}\""),
            None => "at the cluster scope".to_string(),
        };
        let message = format!(
            "{plural} is forbidden: User \"system:serviceaccount:dispatch:dispatch-dash\" cannot {verb} resource \"{plural}\" in API group \"{group}\" {scope}",
            plural = kind.plural(),
            group = kind.group(),
        );
        return status(
            StatusCode::FORBIDDEN,
            "Forbidden",
            &message,
            Some(json!({"kind": kind.plural(), "group": kind.group()})),
        );
    }
    if let Some(sub) = &subresource {
        if sub != "status" || params.watch {
            return not_found_path(&format!("{}/{sub}", kind.plural()));
        }
    }
    if let Some(name) = name {
        if params.watch {
            return bad_request("watch of a single object by path is not supported; use fieldSelector=metadata.name=<name>");
        }
        let ns = namespace.unwrap_or_default();
        // The API server names the resource `pods` or `trainjobs.trainer.kubeflow.org`.
        let resource = if kind.group().is_empty() {
            kind.plural().to_string()
        } else {
            format!("{}.{}", kind.plural(), kind.group())
        };
        return match emu.get(kind, &ns, &name) {
            Some(obj) => ok(&at_version(kind, &obj, &api_version)),
            None => status(
                StatusCode::NOT_FOUND,
                "NotFound",
                &format!("{resource} \"{name}\" not found"),
                Some(json!({"name": name, "group": kind.group(), "kind": kind.plural()})),
            ),
        };
    }
    if params.watch {
        return watch_request(state, kind, api_version, namespace, params);
    }
    list(emu, kind, &api_version, namespace.as_deref(), &params)
}

fn list(
    emu: &Emulator,
    kind: Kind,
    api_version: &str,
    namespace: Option<&str>,
    params: &Params,
) -> Response {
    let (at, after) = match &params.continue_token {
        Some(token) => match decode_continue(token) {
            Some((rv, last)) => (Some(rv), Some(last)),
            None => return bad_request("invalid continue token"),
        },
        None => {
            let exact = params.resource_version_match.as_deref() == Some("Exact");
            match params.resource_version.as_deref() {
                Some(v) if exact && !v.is_empty() => match parse_rv(v) {
                    Ok(rv) => (Some(rv), None),
                    Err(e) => return bad_request(&e),
                },
                // Unset, "0" (any) and NotOlderThan all read the latest state.
                Some(v) if !v.is_empty() => match parse_rv(v) {
                    Ok(_) => (None, None),
                    Err(e) => return bad_request(&e),
                },
                _ => (None, None),
            }
        }
    };
    let (rv, items) = match emu.snapshot(kind, namespace, at) {
        Ok(s) => s,
        Err(expired) => {
            let message = if params.continue_token.is_some() {
                "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.".to_string()
            } else {
                format!(
                    "too old resource version: {} ({})",
                    expired.requested, expired.oldest
                )
            };
            return status(StatusCode::GONE, "Expired", &message, None);
        }
    };
    let mut selected = items.into_iter().filter(|o| {
        params.labels.matches(o)
            && params.fields.matches(o)
            && after
                .as_ref()
                .is_none_or(|last| crate::store::object_key(o) > *last)
    });
    let mut page: Vec<Value> = Vec::new();
    let mut last_key = None;
    let limit = params.limit.unwrap_or(usize::MAX);
    for o in selected.by_ref() {
        if page.len() == limit {
            // there is at least one more: put it back by counting it below
            let remaining = 1 + selected.count();
            let token = last_key
                .as_ref()
                .map(|k| encode_continue(rv, k))
                .unwrap_or_default();
            return ok(&list_doc(
                kind,
                api_version,
                rv,
                page,
                Some((token, remaining)),
            ));
        }
        last_key = Some(crate::store::object_key(&o));
        page.push(at_version(kind, &o, api_version));
    }
    ok(&list_doc(kind, api_version, rv, page, None))
}

fn list_doc(
    kind: Kind,
    api_version: &str,
    rv: u64,
    items: Vec<Value>,
    more: Option<(String, usize)>,
) -> Value {
    let mut meta = json!({"resourceVersion": rv.to_string()});
    if let Some((token, remaining)) = more {
        field::set(&mut meta, &["continue"], json!(token));
        field::set(&mut meta, &["remainingItemCount"], json!(remaining));
    }
    json!({
        "kind": kind.list_kind(),
        "apiVersion": api_version,
        "metadata": meta,
        "items": items,
    })
}

/// The API server's checks of a watch's `sendInitialEvents` and
/// `resourceVersionMatch` (apimachinery's `validateWatchOptions`), and how
/// a server without the WatchList feature (Kubernetes 1.19 to 1.26) refuses
/// either: `422 Invalid`, so that a client falls back to a list.
fn watch_list_refusal(params: &Params, served: bool) -> Option<Response> {
    let invalid = |message: &str| {
        status(
            StatusCode::UNPROCESSABLE_ENTITY,
            "Invalid",
            &format!("ListOptions.meta.k8s.io \"\" is invalid: {message}"),
            None,
        )
    };
    let asks = params.send_initial_events || params.resource_version_match.is_some();
    if !asks {
        return None;
    }
    if !served {
        return Some(invalid(
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch",
        ));
    }
    if !params.send_initial_events {
        // So `resourceVersionMatch` was given, on a plain watch.
        return Some(invalid(
            "resourceVersionMatch: Forbidden: resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
        ));
    }
    if params.resource_version_match.as_deref() != Some("NotOlderThan") {
        return Some(invalid(
            "resourceVersionMatch: Forbidden: sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
        ));
    }
    if !params.bookmarks {
        return Some(invalid(
            "allowWatchBookmarks: Forbidden: allowWatchBookmarks must be set when sendInitialEvents is provided",
        ));
    }
    None
}

fn watch_request(
    state: &ServerState,
    kind: Kind,
    api_version: String,
    namespace: Option<String>,
    params: Params,
) -> Response {
    if let Some(refusal) = watch_list_refusal(&params, state.emulator.watch_list_served()) {
        return refusal;
    }
    let rv = params.resource_version.as_deref().unwrap_or("");
    let start = if rv.is_empty() || rv == "0" || params.send_initial_events {
        // "Get state and start at most recent / any": synthetic ADDED events
        // for what exists, then changes.
        if !rv.is_empty() {
            if let Err(e) = parse_rv(rv) {
                return bad_request(&e);
            }
        }
        WatchStart::Initial
    } else {
        match parse_rv(rv) {
            Ok(n) => WatchStart::After(n),
            Err(e) => return bad_request(&e),
        }
    };
    let spec = WatchSpec {
        kind,
        api_version,
        namespace,
        labels: params.labels,
        fields: params.fields,
        start,
        timeout: params.timeout,
        bookmarks: params.bookmarks,
        initial_events_end: params.send_initial_events && params.bookmarks,
    };
    let body = if state.emulator.watches_end_at_once() {
        // A 200 that ends before its first event, as a proxy or an API
        // server under load may answer.
        Body::empty()
    } else {
        Body::from_stream(watch_response(
            state.emulator.clone(),
            spec,
            state.kill.clone(),
        ))
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(body)
        .unwrap_or_else(|_| {
            status(
                StatusCode::INTERNAL_SERVER_ERROR,
                "InternalError",
                "could not build the watch response",
                None,
            )
        })
}

/// An emulator being served over HTTP. Dropping it shuts the server down
/// (without waiting); [`RunningEmulator::shutdown`] waits for it.
#[derive(Debug)]
pub struct RunningEmulator {
    addr: SocketAddr,
    emulator: Emulator,
    stop: Option<oneshot::Sender<()>>,
    kill: watch::Sender<bool>,
    task: Option<JoinHandle<()>>,
}

impl RunningEmulator {
    /// The address the server is bound to (the real port when 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// The server's base URL, `http://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// A kubeconfig pointing at this server (see [`Emulator::kubeconfig_yaml`]).
    pub fn kubeconfig_yaml(&self) -> String {
        self.emulator.kubeconfig_yaml(self.addr)
    }

    /// The emulator being served.
    pub fn emulator(&self) -> &Emulator {
        &self.emulator
    }

    /// Stops accepting connections, ends this server's watch streams and
    /// waits (at most two seconds) for open connections to close. The
    /// emulator's state is untouched.
    pub async fn shutdown(mut self) {
        self.stop_now();
        if let Some(task) = self.task.take() {
            let abort = task.abort_handle();
            if tokio::time::timeout(Duration::from_secs(2), task)
                .await
                .is_err()
            {
                abort.abort();
            }
        }
    }

    /// An "emulator restart": shuts the server down, optionally wipes the
    /// state ([`Emulator::wipe`]), and serves again on the same address, so
    /// clients see their connections drop and then reconnect to the same URL.
    pub async fn restart(self, wipe: bool) -> Result<RunningEmulator> {
        let emulator = self.emulator.clone();
        let addr = self.addr;
        self.shutdown().await;
        if wipe {
            emulator.wipe();
        }
        emulator.serve(addr).await
    }

    fn stop_now(&mut self) {
        self.kill.send_replace(true);
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for RunningEmulator {
    fn drop(&mut self) {
        self.stop_now();
    }
}

impl Emulator {
    /// Serves the emulator over plain HTTP on `addr` (port 0 picks a free
    /// port; only that address is bound). Returns once the socket is
    /// listening, so a client may connect straight away.
    pub async fn serve(&self, addr: SocketAddr) -> Result<RunningEmulator> {
        let socket = if addr.is_ipv4() {
            tokio::net::TcpSocket::new_v4()?
        } else {
            tokio::net::TcpSocket::new_v6()?
        };
        // Allows a restart to bind the same port while old connections are
        // in TIME_WAIT.
        socket.set_reuseaddr(true)?;
        socket.bind(addr)?;
        let listener = socket.listen(1024)?;
        let addr = listener.local_addr()?;
        let (kill, kill_rx) = watch::channel(false);
        let (stop, stop_rx) = oneshot::channel::<()>();
        let app = Router::new().fallback(handle).with_state(ServerState {
            emulator: self.clone(),
            kill: kill_rx,
        });
        let task = tokio::spawn(async move {
            let server = axum::serve(listener, app).with_graceful_shutdown(async move {
                let _ = stop_rx.await;
            });
            let _ = server.await;
        });
        Ok(RunningEmulator {
            addr,
            emulator: self.clone(),
            stop: Some(stop),
            kill,
            task: Some(task),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routes() {
        assert_eq!(route("/version"), Route::Version);
        assert_eq!(
            route("/api/v1/namespaces/a/pods/p"),
            Route::Resource {
                kind: Kind::Pod,
                version: "v1".into(),
                namespace: Some("a".into()),
                name: Some("p".into()),
                subresource: None
            }
        );
        assert_eq!(
            route("/api/v1/namespaces/a"),
            Route::Resource {
                kind: Kind::Namespace,
                version: "v1".into(),
                namespace: None,
                name: Some("a".into()),
                subresource: None
            }
        );
        assert!(matches!(
            route("/apis/jobset.x-k8s.io/v1alpha2/jobsets"),
            Route::Resource {
                kind: Kind::JobSet,
                namespace: None,
                name: None,
                ..
            }
        ));
        assert_eq!(route("/api/v1/pods/p"), Route::NotFound);
        assert_eq!(route("/api/v1/namespaces/a/nodes"), Route::NotFound);
        assert_eq!(route("/apis/x/y/z/w/v/u/t"), Route::NotFound);
        assert_eq!(route("/"), Route::NotFound);
    }

    #[test]
    fn continue_tokens_round_trip_and_reject_garbage() {
        let t = encode_continue(42, &("ns".into(), "a/b".into()));
        assert_eq!(decode_continue(&t), Some((42, ("ns".into(), "a/b".into()))));
        for bad in ["", "zz", "abc", "é1", "3031"] {
            assert_eq!(decode_continue(bad), None, "{bad}");
        }
    }
}
