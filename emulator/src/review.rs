//! Authentication and authorization reviews: what `dispatch-dash serve
//! --auth kubernetes` asks an API server, answered from a token→user map
//! and a small allow list that tests change at runtime.
//!
//! - `POST /apis/authentication.k8s.io/v1/tokenreviews`: who a token is
//!   (`status.authenticated`, `status.user.username`, `.groups`; every
//!   authenticated user is also in `system:authenticated`, as on a real
//!   API server). An unknown token is `authenticated: false`.
//! - `POST /apis/authorization.k8s.io/v1/subjectaccessreviews`: whether a
//!   user (or one of their groups) may do a verb on a resource in a
//!   namespace, or on a non-resource URL (`status.allowed`, `.reason`).
//! - `POST /apis/authorization.k8s.io/v1/selfsubjectaccessreviews`: the
//!   same for the caller. A caller without a known bearer token is the
//!   emulator's own client (what [`crate::Emulator::kubeconfig_yaml`]
//!   connects as), which may do anything not refused with
//!   [`crate::Emulator::forbid`]; so `forbid("subjectaccessreviews")` plays
//!   a server identity without `system:auth-delegator`.
//!
//! Like on a real API server these creates persist nothing: they are
//! answered and forgotten (and counted, [`crate::Emulator::reviews`]).

use std::collections::HashMap;

use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{json, Value};

use crate::field;
use crate::status::{json_response, status};
use crate::store::Emulator;

/// The identity the emulator's own kubeconfig acts as (the name its 403
/// messages use).
pub const OWN_IDENTITY: &str = "system:serviceaccount:dispatch:dispatch-dash";

/// The most bytes a review's body may have.
pub(crate) const MAX_REVIEW_BYTES: usize = 64 * 1024;

/// A user a token stands for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct User {
    /// `status.user.username`.
    pub name: String,
    /// `status.user.groups` (besides `system:authenticated`).
    pub groups: Vec<String>,
    /// The audiences the token was minted for (`kubectl create token
    /// --audience`); empty: only the API server's own.
    pub audiences: Vec<String>,
}

/// What a grant allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum GrantTarget {
    /// A resource of an API group (`""` for core), in one namespace or, with
    /// `None`, in every namespace and at the cluster scope. `"*"` as the
    /// group or the resource matches any.
    Resource {
        /// The API group.
        group: String,
        /// The resource (plural), e.g. `pods`.
        resource: String,
        /// The namespace; `None` is cluster-wide.
        namespace: Option<String>,
    },
    /// A non-resource URL such as `/metrics` (a trailing `*` matches a
    /// prefix, as in RBAC).
    NonResourceUrl(String),
}

/// One entry of the allow list: `subject` may `verb` the `target`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Grant {
    /// A user name or a group name, matched against the review's user and
    /// groups.
    pub subject: String,
    /// The verb (`list`, `get`, ...), or `*`.
    pub verb: String,
    /// What is allowed.
    pub target: GrantTarget,
}

impl Grant {
    /// `subject` may `verb` `resource` of `group` in `namespace`.
    pub fn namespaced(
        subject: &str,
        verb: &str,
        group: &str,
        resource: &str,
        namespace: &str,
    ) -> Self {
        Grant {
            subject: subject.into(),
            verb: verb.into(),
            target: GrantTarget::Resource {
                group: group.into(),
                resource: resource.into(),
                namespace: Some(namespace.into()),
            },
        }
    }

    /// `subject` may `verb` `resource` of `group` everywhere.
    pub fn cluster_wide(subject: &str, verb: &str, group: &str, resource: &str) -> Self {
        Grant {
            subject: subject.into(),
            verb: verb.into(),
            target: GrantTarget::Resource {
                group: group.into(),
                resource: resource.into(),
                namespace: None,
            },
        }
    }

    /// `subject` may `verb` the non-resource URL `path`.
    pub fn non_resource(subject: &str, verb: &str, path: &str) -> Self {
        Grant {
            subject: subject.into(),
            verb: verb.into(),
            target: GrantTarget::NonResourceUrl(path.into()),
        }
    }

    fn allows(&self, subjects: &[&str], request: &AccessRequest) -> bool {
        let any = |pattern: &str, value: &str| pattern == "*" || pattern == value;
        if !subjects.contains(&self.subject.as_str()) || !any(&self.verb, request.verb()) {
            return false;
        }
        match (&self.target, request) {
            (
                GrantTarget::Resource {
                    group,
                    resource,
                    namespace,
                },
                AccessRequest::Resource {
                    group: g,
                    resource: r,
                    namespace: n,
                    ..
                },
            ) => {
                any(group, g)
                    && any(resource, r)
                    && namespace.as_ref().is_none_or(|ns| Some(ns) == n.as_ref())
            }
            (GrantTarget::NonResourceUrl(url), AccessRequest::NonResource { path, .. }) => {
                match url.strip_suffix('*') {
                    Some(prefix) => path.starts_with(prefix),
                    None => url == path,
                }
            }
            _ => false,
        }
    }
}

/// The reviews' state: who each token is, and what is allowed.
#[derive(Debug, Default)]
pub(crate) struct Access {
    pub users: HashMap<String, User>,
    pub grants: Vec<Grant>,
    /// Reviews answered, by resource (`tokenreviews`, ...).
    pub counts: HashMap<&'static str, u64>,
    /// How long each review takes to answer (see [`Emulator::set_review_latency`]).
    pub latency: std::time::Duration,
    /// Reviews being answered now, and the most there ever were at once.
    pub in_flight: u64,
    pub peak_in_flight: u64,
    /// Every review answers 503, as an API server whose etcd or webhook is
    /// down does (see [`Emulator::set_reviews_unavailable`]).
    pub unavailable: bool,
}

/// A review being answered: counted in flight until dropped.
pub(crate) struct InFlight(Emulator);

impl Drop for InFlight {
    fn drop(&mut self) {
        let access = &mut self.0.state().access;
        access.in_flight = access.in_flight.saturating_sub(1);
    }
}

/// The attributes a SubjectAccessReview asks about.
#[derive(Debug, PartialEq, Eq)]
enum AccessRequest {
    Resource {
        verb: String,
        group: String,
        resource: String,
        namespace: Option<String>,
    },
    NonResource {
        verb: String,
        path: String,
    },
}

impl AccessRequest {
    fn verb(&self) -> &str {
        match self {
            AccessRequest::Resource { verb, .. } | AccessRequest::NonResource { verb, .. } => verb,
        }
    }

    /// `resourceAttributes` or `nonResourceAttributes` of a review's spec;
    /// exactly one must be there.
    fn from_spec(spec: &Value) -> Result<Self, String> {
        let text = |v: &Value, field: &str| v.get(field).and_then(Value::as_str).map(String::from);
        match (
            spec.get("resourceAttributes"),
            spec.get("nonResourceAttributes"),
        ) {
            (Some(r), None) if r.is_object() => Ok(AccessRequest::Resource {
                verb: text(r, "verb").unwrap_or_default(),
                group: text(r, "group").unwrap_or_default(),
                // A subresource is written after a slash, as RBAC rules
                // name it: `localqueues/pendingworkloads`.
                resource: match text(r, "subresource").filter(|sub| !sub.is_empty()) {
                    Some(sub) => format!("{}/{sub}", text(r, "resource").unwrap_or_default()),
                    None => text(r, "resource").unwrap_or_default(),
                },
                namespace: text(r, "namespace").filter(|ns| !ns.is_empty()),
            }),
            (None, Some(n)) if n.is_object() => Ok(AccessRequest::NonResource {
                verb: text(n, "verb").unwrap_or_default(),
                path: text(n, "path").unwrap_or_default(),
            }),
            (Some(_), Some(_)) => {
                Err("resourceAttributes and nonResourceAttributes cannot both be specified".into())
            }
            _ => Err(
                "exactly one of nonResourceAttributes or resourceAttributes must be specified"
                    .into(),
            ),
        }
    }

    fn describe(&self) -> String {
        match self {
            AccessRequest::Resource {
                verb,
                group,
                resource,
                namespace,
            } => {
                let scope = match namespace {
                    Some(ns) => format!("in namespace {ns:?}"),
                    None => "at the cluster scope".into(),
                };
                format!("{verb} {resource:?} in API group {group:?} {scope}")
            }
            AccessRequest::NonResource { verb, path } => format!("{verb} {path:?}"),
        }
    }
}

/// A review's resource, from its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Review {
    Token,
    SubjectAccess,
    SelfSubjectAccess,
}

impl Review {
    /// The review a path creates, if it is one.
    pub(crate) fn from_path(path: &str) -> Option<Review> {
        match path.trim_end_matches('/') {
            "/apis/authentication.k8s.io/v1/tokenreviews" => Some(Review::Token),
            "/apis/authorization.k8s.io/v1/subjectaccessreviews" => Some(Review::SubjectAccess),
            "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews" => {
                Some(Review::SelfSubjectAccess)
            }
            _ => None,
        }
    }

    pub(crate) fn resource(self) -> &'static str {
        match self {
            Review::Token => "tokenreviews",
            Review::SubjectAccess => "subjectaccessreviews",
            Review::SelfSubjectAccess => "selfsubjectaccessreviews",
        }
    }

    fn group(self) -> &'static str {
        match self {
            Review::Token => "authentication.k8s.io",
            Review::SubjectAccess | Review::SelfSubjectAccess => "authorization.k8s.io",
        }
    }

    fn kind(self) -> &'static str {
        match self {
            Review::Token => "TokenReview",
            Review::SubjectAccess => "SubjectAccessReview",
            Review::SelfSubjectAccess => "SelfSubjectAccessReview",
        }
    }
}

/// The groups and resources discovery lists for the reviews, as
/// `(group, version, [APIResource])`.
pub(crate) fn discovery() -> Vec<(&'static str, &'static str, Vec<Value>)> {
    let resource = |review: Review| {
        json!({
            "name": review.resource(),
            "singularName": "",
            "namespaced": false,
            "kind": review.kind(),
            "verbs": ["create"],
        })
    };
    vec![
        ("authentication.k8s.io", "v1", vec![resource(Review::Token)]),
        (
            "authorization.k8s.io",
            "v1",
            vec![
                resource(Review::SelfSubjectAccess),
                resource(Review::SubjectAccess),
            ],
        ),
    ]
}

/// Answers a review: `bearer` is the caller's token, if any.
pub(crate) fn answer(
    emu: &Emulator,
    review: Review,
    bearer: Option<&str>,
    body: &[u8],
) -> Response {
    if emu.state().access.unavailable {
        return status(
            StatusCode::SERVICE_UNAVAILABLE,
            "ServiceUnavailable",
            &format!(
                "{} cannot be answered now: the emulator was told its reviews are unavailable",
                review.resource()
            ),
            None,
        );
    }
    if emu.is_forbidden(review.resource(), "create") {
        let message = format!(
            "{resource}.{group} is forbidden: User \"{OWN_IDENTITY}\" cannot create resource \"{resource}\" in API group \"{group}\" at the cluster scope",
            resource = review.resource(),
            group = review.group(),
        );
        return status(
            StatusCode::FORBIDDEN,
            "Forbidden",
            &message,
            Some(json!({"kind": review.resource(), "group": review.group()})),
        );
    }
    let mut object: Value = match serde_json::from_slice(body) {
        Ok(v @ Value::Object(_)) => v,
        _ => return bad_request(review, "the body must be a JSON object"),
    };
    let spec = object.get("spec").cloned().unwrap_or(Value::Null);
    let result = match review {
        Review::Token => token_status(emu, &spec),
        Review::SubjectAccess => subject_access_status(emu, &spec),
        Review::SelfSubjectAccess => self_subject_access_status(emu, bearer, &spec),
    };
    let review_status = match result {
        Ok(s) => s,
        Err(message) => return bad_request(review, &message),
    };
    emu.count_review(review.resource());
    // The answer is the request, with a status and no identity of its own:
    // nothing is stored, so there is no name, uid or resourceVersion.
    field::set(
        &mut object,
        &["apiVersion"],
        json!(format!("{}/v1", review.group())),
    );
    field::set(&mut object, &["kind"], json!(review.kind()));
    field::set(
        &mut object,
        &["metadata"],
        json!({"creationTimestamp": null}),
    );
    field::set(&mut object, &["status"], review_status);
    json_response(StatusCode::CREATED, &object)
}

fn bad_request(review: Review, message: &str) -> Response {
    status(
        StatusCode::BAD_REQUEST,
        "BadRequest",
        &format!(
            "{} in version \"v1\" cannot be handled: {message}",
            review.kind()
        ),
        None,
    )
}

fn token_status(emu: &Emulator, spec: &Value) -> Result<Value, String> {
    let token = spec
        .get("token")
        .and_then(Value::as_str)
        .ok_or("spec.token: Required value")?;
    let asked: Vec<&str> = spec
        .get("audiences")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    Ok(match emu.user_of(token) {
        // A token minted for none of the audiences asked is not valid here.
        Some(user)
            if !asked.is_empty()
                && !asked.iter().any(|a| user.audiences.iter().any(|u| u == a)) =>
        {
            json!({"authenticated": false, "user": {}, "error": "[invalid bearer token, token audiences is invalid for the target audiences]"})
        }
        Some(user) => {
            let mut groups = user.groups.clone();
            groups.push("system:authenticated".into());
            let mut status = json!({
                "authenticated": true,
                "user": {"username": user.name, "uid": format!("uid-{}", user.name), "groups": groups},
            });
            if !asked.is_empty() {
                let granted: Vec<&str> = (asked.iter().copied())
                    .filter(|a| user.audiences.iter().any(|u| u == a))
                    .collect();
                field::set(&mut status, &["audiences"], json!(granted));
            }
            status
        }
        None => json!({"authenticated": false, "user": {}, "error": "invalid bearer token"}),
    })
}

fn subject_access_status(emu: &Emulator, spec: &Value) -> Result<Value, String> {
    let user = spec.get("user").and_then(Value::as_str).unwrap_or("");
    let groups: Vec<&str> = spec
        .get("groups")
        .and_then(Value::as_array)
        .map(|g| g.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if user.is_empty() && groups.is_empty() {
        return Err("at least one of user or group must be specified".into());
    }
    let request = AccessRequest::from_spec(spec)?;
    let mut subjects = groups;
    if !user.is_empty() {
        subjects.push(user);
    }
    Ok(decision(
        emu.grants_allow(&subjects, &request),
        user,
        &request,
    ))
}

fn self_subject_access_status(
    emu: &Emulator,
    bearer: Option<&str>,
    spec: &Value,
) -> Result<Value, String> {
    let request = AccessRequest::from_spec(spec)?;
    match bearer.and_then(|t| emu.user_of(t)) {
        Some(user) => {
            let mut subjects: Vec<&str> = user.groups.iter().map(String::as_str).collect();
            subjects.push(&user.name);
            Ok(decision(
                emu.grants_allow(&subjects, &request),
                &user.name,
                &request,
            ))
        }
        None => {
            let allowed = match &request {
                AccessRequest::Resource { verb, resource, .. } => !emu.is_forbidden(resource, verb),
                AccessRequest::NonResource { .. } => true,
            };
            Ok(decision(allowed, OWN_IDENTITY, &request))
        }
    }
}

fn decision(allowed: bool, user: &str, request: &AccessRequest) -> Value {
    let what = request.describe();
    if allowed {
        json!({"allowed": true, "reason": format!("the emulator's allow list lets {user:?} {what}")})
    } else {
        json!({"allowed": false, "reason": format!("no grant of the emulator lets {user:?} {what}")})
    }
}

impl Emulator {
    /// Makes `token` stand for `user` (in `groups`) in TokenReviews,
    /// replacing whoever it stood for.
    pub fn set_user(&self, token: &str, user: &str, groups: &[&str]) {
        self.state().access.users.insert(
            token.to_string(),
            User {
                name: user.to_string(),
                groups: groups.iter().map(|g| g.to_string()).collect(),
                audiences: Vec::new(),
            },
        );
    }

    /// As [`Emulator::set_user`], for a token minted for `audiences`: a
    /// TokenReview that asks for audiences accepts it only for those, and
    /// names them in `status.audiences`, as the API server does.
    pub fn set_user_with_audiences(&self, token: &str, user: &str, audiences: &[&str]) {
        self.state().access.users.insert(
            token.to_string(),
            User {
                name: user.to_string(),
                groups: Vec::new(),
                audiences: audiences.iter().map(|a| a.to_string()).collect(),
            },
        );
    }

    /// Makes `token` unknown again: its TokenReviews say
    /// `authenticated: false`.
    pub fn remove_token(&self, token: &str) {
        self.state().access.users.remove(token);
    }

    /// Adds `grant` to the allow list SubjectAccessReviews are decided by.
    pub fn grant(&self, grant: Grant) {
        let access = &mut self.state().access;
        if !access.grants.contains(&grant) {
            access.grants.push(grant);
        }
    }

    /// Removes `grant` from the allow list (as deleting a RoleBinding
    /// does); whether it was there.
    pub fn revoke(&self, grant: &Grant) -> bool {
        let access = &mut self.state().access;
        let before = access.grants.len();
        access.grants.retain(|g| g != grant);
        access.grants.len() != before
    }

    /// How many reviews of `resource` (`tokenreviews`,
    /// `subjectaccessreviews`, `selfsubjectaccessreviews`) were answered.
    pub fn reviews(&self, resource: &str) -> u64 {
        self.state()
            .access
            .counts
            .iter()
            .filter(|(r, _)| **r == resource)
            .map(|(_, n)| n)
            .sum()
    }

    fn user_of(&self, token: &str) -> Option<User> {
        if token.is_empty() {
            return None;
        }
        self.state().access.users.get(token).cloned()
    }

    fn grants_allow(&self, subjects: &[&str], request: &AccessRequest) -> bool {
        self.state()
            .access
            .grants
            .iter()
            .any(|g| g.allows(subjects, request))
    }

    /// Makes every review take `latency` to answer, on top of
    /// [`Emulator::set_latency`], so that a test can see how many a client
    /// keeps in flight at once.
    pub fn set_review_latency(&self, latency: std::time::Duration) {
        self.state().access.latency = latency;
    }

    /// While `unavailable`, every review answers `503 ServiceUnavailable`:
    /// the token or the access could not be checked.
    pub fn set_reviews_unavailable(&self, unavailable: bool) {
        self.state().access.unavailable = unavailable;
    }

    /// The most reviews that were ever being answered at once.
    pub fn peak_reviews_in_flight(&self) -> u64 {
        self.state().access.peak_in_flight
    }

    /// Counts a review in flight until the guard drops; returns how long it
    /// should take.
    pub(crate) fn review_started(&self) -> (InFlight, std::time::Duration) {
        let mut state = self.state();
        let access = &mut state.access;
        access.in_flight += 1;
        access.peak_in_flight = access.peak_in_flight.max(access.in_flight);
        let latency = access.latency;
        drop(state);
        (InFlight(self.clone()), latency)
    }

    fn count_review(&self, resource: &'static str) {
        *self.state().access.counts.entry(resource).or_default() += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EmulatorConfig;
    use axum::body::to_bytes;

    async fn post(
        emu: &Emulator,
        review: Review,
        bearer: Option<&str>,
        body: Value,
    ) -> (u16, Value) {
        let response = answer(emu, review, bearer, body.to_string().as_bytes());
        let code = response.status().as_u16();
        let bytes = to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        (code, serde_json::from_slice(&bytes).expect("JSON"))
    }

    fn token_review(token: &str) -> Value {
        json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}})
    }

    fn sar(user: &str, groups: &[&str], attributes: Value) -> Value {
        let mut spec = json!({"user": user, "groups": groups});
        for (k, v) in attributes.as_object().expect("attributes") {
            spec[k] = v.clone();
        }
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": spec})
    }

    fn list(group: &str, resource: &str, namespace: &str) -> Value {
        json!({"resourceAttributes": {"verb": "list", "group": group, "resource": resource, "namespace": namespace}})
    }

    #[tokio::test]
    async fn token_reviews_name_known_tokens_and_reject_others() {
        let emu = Emulator::new(EmulatorConfig::default());
        emu.set_user("alice-token", "alice", &["team-a-devs"]);
        let (code, body) = post(&emu, Review::Token, None, token_review("alice-token")).await;
        assert_eq!(code, 201);
        assert_eq!(body["kind"], "TokenReview");
        assert_eq!(body["apiVersion"], "authentication.k8s.io/v1");
        assert_eq!(body["status"]["authenticated"], true);
        assert_eq!(body["status"]["user"]["username"], "alice");
        assert_eq!(
            body["status"]["user"]["groups"],
            json!(["team-a-devs", "system:authenticated"])
        );
        for unknown in ["bob-token", "", "alice-token "] {
            let (code, body) = post(&emu, Review::Token, None, token_review(unknown)).await;
            assert_eq!(code, 201, "{unknown:?}");
            assert_eq!(body["status"]["authenticated"], false, "{unknown:?}");
            assert!(body["status"]["user"].get("username").is_none());
        }
        emu.remove_token("alice-token");
        let (_, body) = post(&emu, Review::Token, None, token_review("alice-token")).await;
        assert_eq!(body["status"]["authenticated"], false, "a removed token");
        assert_eq!(emu.reviews("tokenreviews"), 5);
        let (code, body) = post(&emu, Review::Token, None, json!({"spec": {}})).await;
        assert_eq!((code, body["kind"].as_str()), (400, Some("Status")));
        assert_eq!(
            emu.reviews("tokenreviews"),
            5,
            "a refused review is not counted"
        );
    }

    #[tokio::test]
    async fn a_subresource_is_granted_as_rbac_names_it() {
        let emu = Emulator::new(EmulatorConfig::default());
        emu.grant(Grant::namespaced(
            "alice",
            "get",
            "visibility.kueue.x-k8s.io",
            "localqueues/pendingworkloads",
            "team-a",
        ));
        let get = |subresource: &str| {
            json!({"resourceAttributes": {"verb": "get", "group": "visibility.kueue.x-k8s.io",
                "resource": "localqueues", "subresource": subresource, "name": "main",
                "namespace": "team-a"}})
        };
        let allowed = |body: &Value| body["status"]["allowed"].as_bool();
        let (code, body) = post(
            &emu,
            Review::SubjectAccess,
            None,
            sar("alice", &[], get("pendingworkloads")),
        )
        .await;
        assert_eq!((code, allowed(&body)), (201, Some(true)), "{body}");
        // The grant is for the subresource, not the LocalQueue itself.
        let (_, body) = post(
            &emu,
            Review::SubjectAccess,
            None,
            sar("alice", &[], get("")),
        )
        .await;
        assert_eq!(allowed(&body), Some(false), "{body}");
    }

    #[tokio::test]
    async fn subject_access_reviews_follow_the_allow_list_and_revocation() {
        let emu = Emulator::new(EmulatorConfig::default());
        let trainjobs = Grant::namespaced(
            "alice",
            "list",
            "trainer.kubeflow.org",
            "trainjobs",
            "team-a",
        );
        emu.grant(trainjobs.clone());
        emu.grant(Grant::namespaced("devs", "list", "", "pods", "team-a"));
        emu.grant(Grant::non_resource("prometheus", "get", "/metrics"));
        let allowed = |body: &Value| body["status"]["allowed"].as_bool();
        let ask = |user: &'static str, groups: &'static [&'static str], attrs: Value| {
            let emu = emu.clone();
            async move { post(&emu, Review::SubjectAccess, None, sar(user, groups, attrs)).await }
        };

        let (code, body) = ask(
            "alice",
            &[],
            list("trainer.kubeflow.org", "trainjobs", "team-a"),
        )
        .await;
        assert_eq!(code, 201);
        assert_eq!(body["kind"], "SubjectAccessReview");
        assert_eq!(allowed(&body), Some(true));
        assert!(body["status"]["reason"]
            .as_str()
            .is_some_and(|r| r.contains("alice")));
        let (_, body) = ask(
            "alice",
            &[],
            list("trainer.kubeflow.org", "trainjobs", "team-b"),
        )
        .await;
        assert_eq!(allowed(&body), Some(false), "another namespace");
        let (_, body) = ask("alice", &[], list("", "pods", "team-a")).await;
        assert_eq!(
            allowed(&body),
            Some(false),
            "pods are granted to the group only"
        );
        let (_, body) = ask("alice", &["devs"], list("", "pods", "team-a")).await;
        assert_eq!(allowed(&body), Some(true), "through a group");
        let (_, body) = ask(
            "bob",
            &[],
            list("trainer.kubeflow.org", "trainjobs", "team-a"),
        )
        .await;
        assert_eq!(allowed(&body), Some(false), "bob has nothing");
        let watch = json!({"resourceAttributes": {"verb": "watch", "group": "trainer.kubeflow.org", "resource": "trainjobs", "namespace": "team-a"}});
        let (_, body) = ask("alice", &[], watch).await;
        assert_eq!(allowed(&body), Some(false), "another verb");
        let metrics = json!({"nonResourceAttributes": {"verb": "get", "path": "/metrics"}});
        let (_, body) = ask("prometheus", &[], metrics.clone()).await;
        assert_eq!(allowed(&body), Some(true));
        let (_, body) = ask("alice", &[], metrics).await;
        assert_eq!(allowed(&body), Some(false));

        assert!(emu.revoke(&trainjobs));
        assert!(!emu.revoke(&trainjobs), "revoked once");
        let (_, body) = ask(
            "alice",
            &[],
            list("trainer.kubeflow.org", "trainjobs", "team-a"),
        )
        .await;
        assert_eq!(allowed(&body), Some(false), "after the revocation");

        let (code, _) = ask("", &[], list("", "pods", "team-a")).await;
        assert_eq!(code, 400, "no user and no group");
        let (code, _) = post(
            &emu,
            Review::SubjectAccess,
            None,
            json!({"spec": {"user": "alice"}}),
        )
        .await;
        assert_eq!(code, 400, "no attributes");
    }

    #[tokio::test]
    async fn cluster_wide_grants_match_every_namespace() {
        let emu = Emulator::new(EmulatorConfig::default());
        emu.grant(Grant::cluster_wide("admin", "*", "*", "*"));
        let (_, body) = post(
            &emu,
            Review::SubjectAccess,
            None,
            sar("admin", &[], list("", "pods", "anywhere")),
        )
        .await;
        assert_eq!(body["status"]["allowed"], true);
    }

    #[tokio::test]
    async fn self_reviews_are_the_emulators_own_identity_unless_forbidden() {
        let emu = Emulator::new(EmulatorConfig::default());
        let create = |group: &str, resource: &str| json!({"kind": "SelfSubjectAccessReview", "spec": {"resourceAttributes": {"verb": "create", "group": group, "resource": resource}}});
        let (code, body) = post(
            &emu,
            Review::SelfSubjectAccess,
            None,
            create("authorization.k8s.io", "subjectaccessreviews"),
        )
        .await;
        assert_eq!(code, 201);
        assert_eq!(body["status"]["allowed"], true);
        emu.forbid("subjectaccessreviews");
        let (_, body) = post(
            &emu,
            Review::SelfSubjectAccess,
            None,
            create("authorization.k8s.io", "subjectaccessreviews"),
        )
        .await;
        assert_eq!(body["status"]["allowed"], false, "the delegation is gone");
        let (_, body) = post(
            &emu,
            Review::SelfSubjectAccess,
            None,
            create("authentication.k8s.io", "tokenreviews"),
        )
        .await;
        assert_eq!(body["status"]["allowed"], true);
        let (code, body) = post(
            &emu,
            Review::SubjectAccess,
            None,
            sar("alice", &[], list("", "pods", "a")),
        )
        .await;
        assert_eq!((code, body["reason"].as_str()), (403, Some("Forbidden")));
        // A known bearer token asks as its user.
        emu.set_user("alice-token", "alice", &[]);
        let (_, body) = post(
            &emu,
            Review::SelfSubjectAccess,
            Some("alice-token"),
            create("authentication.k8s.io", "tokenreviews"),
        )
        .await;
        assert_eq!(body["status"]["allowed"], false, "alice has no grants");
        assert_eq!(emu.reviews("selfsubjectaccessreviews"), 4);
    }

    #[test]
    fn review_paths() {
        assert_eq!(
            Review::from_path("/apis/authentication.k8s.io/v1/tokenreviews"),
            Some(Review::Token)
        );
        assert_eq!(
            Review::from_path("/apis/authorization.k8s.io/v1/subjectaccessreviews"),
            Some(Review::SubjectAccess)
        );
        assert_eq!(
            Review::from_path("/apis/authorization.k8s.io/v1beta1/subjectaccessreviews"),
            None
        );
        assert_eq!(Review::from_path("/api/v1/pods"), None);
    }
}
