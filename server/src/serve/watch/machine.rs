//! The watch loop's decisions, as a pure state machine in the manner of
//! kube-runtime's `watcher`: [`Machine::step`] takes what the last request
//! answered ([`Input`]) and gives what to do about it ([`Plan`]: effects to
//! carry out in order, then the one request to make next). It makes no
//! request, reads no clock and sends nothing, so every path (paging,
//! `403`, `404`, `410 Gone`, broken and empty watches, a kind that is not
//! served) is tested here without a cluster; [`super::run`] only carries
//! the plans out.
//!
//! A (re-)list is first asked for as a watch list: a watch with
//! `sendInitialEvents`, whose initial `ADDED` events are the list, ended
//! by a bookmark annotated `k8s.io/initial-events-end`, after which the
//! same stream goes on as the watch (Kubernetes 1.27 and later, the
//! WatchList feature). No list response is ever held whole, and one request
//! does both. Where it is refused (`422` or `400` from a server without the
//! feature, such as 1.20) or its stream ends before that bookmark, the
//! machine lists in pages of `limit` instead, and a server that refused it
//! as invalid is not asked again.

use std::time::Duration;

use kube::api::ApiResource;

use super::super::discovery::{self, Availability};
use super::super::health::{ListMethod, WatchState};
use super::super::projection::{ObjectKind, Projected, StoredObject};
use super::super::store::EventBody;

/// A watch shorter than this that delivered nothing ended "at once".
pub const SHORTEST_CLEAN_WATCH: Duration = Duration::from_secs(1);

/// A watch list's initial objects are sent to the store this many at a
/// time, as a list page of the same size would be.
pub const STREAMED_PAGE: usize = 500;

/// Delays between failed attempts: exponential with jitter. The n-th delay
/// of a streak is drawn uniformly from `[c/2, c]` where `c = base * 2^(n+1)`
/// capped at `cap` ("equal jitter"). The jitter keeps watches that failed
/// together from retrying in step; the floor that doubles bounds how many
/// attempts a streak makes in any stretch of time, which full or
/// decorrelated jitter (whose draws can fall back to the base) does not.
/// The randomness is a xorshift seeded per watch; nothing here needs to be
/// reproducible, but a fixed seed makes the machine's tests exact.
#[derive(Debug, Clone)]
pub struct Backoff {
    base: Duration,
    cap: Duration,
    /// Failures since the last reset.
    attempt: u32,
    rng: u64,
}

impl Backoff {
    /// A backoff from `base` to `cap`; `seed` picks the jitter sequence.
    pub fn new(base: Duration, cap: Duration, seed: u64) -> Self {
        Backoff {
            base,
            cap: cap.max(base),
            attempt: 0,
            // xorshift has one fixed point: zero.
            rng: seed | 1,
        }
    }

    /// The next delay, in `[base, cap]`.
    pub fn next_delay(&mut self) -> Duration {
        let ceiling = self
            .base
            .saturating_mul(2u32.saturating_pow(self.attempt.saturating_add(1)))
            .min(self.cap);
        self.attempt = self.attempt.saturating_add(1);
        let floor = (ceiling / 2).max(self.base.min(ceiling));
        let span = u64::try_from((ceiling - floor).as_nanos()).unwrap_or(u64::MAX);
        let offset = match span.checked_add(1) {
            Some(modulus) => self.random() % modulus,
            None => self.random(),
        };
        floor + Duration::from_nanos(offset)
    }

    /// Starts again from the base delay (after a success).
    pub fn reset(&mut self) {
        self.attempt = 0;
    }

    fn random(&mut self) -> u64 {
        let mut x = self.rng;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng = x;
        x
    }
}

/// How a (re-)list is read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitialList {
    /// As a watch list (`sendInitialEvents`), falling back to pages where
    /// the server does not stream lists.
    Streaming,
    /// In pages of `limit`, `continue` after `continue`.
    Paged,
}

/// Where a watch loop is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Phase {
    /// Asking discovery which version is served, if any.
    Discovering,
    /// Reading a watch list's initial events; `page` holds those not yet
    /// sent to the store (at most [`STREAMED_PAGE`]).
    StreamingList { page: Vec<StoredObject> },
    /// Listing, page by page.
    Listing,
    /// Watching from `resource_version`; `delivered` once this watch request
    /// has given an event that is not an `ERROR`.
    Watching {
        resource_version: String,
        delivered: bool,
    },
}

/// What the last request answered. The driver projects objects and reads
/// their resourceVersion; the machine decides what follows.
#[derive(Debug, Clone)]
pub enum Input {
    /// Discovery answered.
    Discovered(Availability),
    /// Discovery failed.
    DiscoveryFailed(String),
    /// A page of the list.
    ListPage {
        objects: Vec<Projected>,
        /// The next page's token; `None` or empty on the last page.
        continue_token: Option<String>,
        /// The list's resourceVersion, read on the last page.
        resource_version: Option<String>,
    },
    /// The list request failed, with the HTTP status when there was one.
    ListFailed { code: Option<u16>, error: String },
    /// The watch request was accepted: read its events.
    WatchOpened,
    /// The watch request failed, with the HTTP status when there was one.
    WatchRefused { code: Option<u16>, error: String },
    /// An `ADDED` or `MODIFIED` event.
    Upserted {
        object: Projected,
        resource_version: Option<String>,
    },
    /// A `DELETED` event.
    Deleted {
        object: Projected,
        resource_version: Option<String>,
    },
    /// A `BOOKMARK` event; `initial_events_end` when it is annotated
    /// `k8s.io/initial-events-end` (a watch list's initial events are over).
    Bookmark {
        resource_version: String,
        initial_events_end: bool,
    },
    /// An `ERROR` event.
    ErrorEvent { code: u16, message: String },
    /// The stream broke.
    Broken(String),
    /// The stream ended cleanly, after `lasted`.
    Ended { lasted: Duration },
}

/// One thing to do, in order, before the next request.
#[derive(Debug, Clone)]
pub enum Effect {
    /// Read this resource from now on (its `apiVersion` goes into the
    /// projections and onto the health board).
    Serve(ApiResource),
    /// The kind cannot be read: no `apiVersion` on the health board.
    Unreadable,
    /// Send this to the store.
    Send(EventBody),
    /// The data is current: health `Ok`, and say so if it was failing.
    Healthy,
    /// Record a failure: health `state`, and a rate-limited warning.
    Failed {
        state: WatchState,
        what: String,
        error: String,
    },
    /// Wait this long.
    Wait(Duration),
    /// The server does not stream lists: say so once; pages from now on.
    ListsUnstreamed(String),
    /// A (re-)list is whole, read as this says (for the metrics).
    Listed(ListMethod),
}

/// The next request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Request {
    Discover,
    /// A watch list: a watch with `sendInitialEvents`, at no
    /// resourceVersion (a consistent read).
    StreamList,
    /// A list page; `None` is the first.
    List(Option<String>),
    /// A watch from this resourceVersion.
    Watch(String),
    /// The next event of the open watch.
    NextEvent,
}

/// What one step decided.
#[derive(Debug, Clone)]
pub struct Plan {
    pub effects: Vec<Effect>,
    pub request: Request,
}

/// One watch loop's state: its phase and its backoff.
#[derive(Debug, Clone)]
pub struct Machine {
    kind: ObjectKind,
    phase: Phase,
    backoff: Backoff,
    initial_list: InitialList,
}

/// How a watch request ended, once its protocol detail is read.
enum WatchEnd {
    Rewatch,
    RewatchAfterBackoff,
    Relist,
    Failed(WatchState, String),
    NotFound,
}

impl WatchEnd {
    /// A refused watch request or an `ERROR` event, by status code.
    fn of_status(code: Option<u16>, message: String) -> Self {
        match code {
            Some(410) => WatchEnd::Relist,
            Some(404) => WatchEnd::NotFound,
            Some(403) => WatchEnd::Failed(WatchState::Forbidden, message),
            _ => WatchEnd::Failed(WatchState::Failing, message),
        }
    }

    /// A clean end: a re-watch, at once unless it delivered nothing and
    /// lasted under [`SHORTEST_CLEAN_WATCH`] (a proxy or server that closes
    /// every watch), which would otherwise spin.
    fn of_clean_end(delivered: bool, lasted: Duration) -> Self {
        if delivered || lasted >= SHORTEST_CLEAN_WATCH {
            WatchEnd::Rewatch
        } else {
            WatchEnd::RewatchAfterBackoff
        }
    }
}

impl Machine {
    /// A machine for `kind`. With what discovery found at start it begins
    /// there; with `None` (discovery failed) it begins by discovering.
    pub fn start(
        kind: ObjectKind,
        backoff: Backoff,
        availability: Option<Availability>,
        initial_list: InitialList,
    ) -> (Self, Plan) {
        let mut machine = Machine {
            kind,
            phase: Phase::Discovering,
            backoff,
            initial_list,
        };
        let plan = match availability {
            Some(found) => machine.discovered(found),
            None => Plan {
                effects: Vec::new(),
                request: Request::Discover,
            },
        };
        (machine, plan)
    }

    pub fn phase(&self) -> &Phase {
        &self.phase
    }

    /// How the next (re-)list will be read.
    pub fn initial_list(&self) -> InitialList {
        self.initial_list
    }

    /// Decides what follows `input`. An input that does not belong to the
    /// phase (which the driver never makes) starts over from discovery.
    pub fn step(&mut self, input: Input) -> Plan {
        let phase = std::mem::replace(&mut self.phase, Phase::Discovering);
        match (phase, input) {
            (Phase::Discovering, Input::Discovered(found)) => self.discovered(found),
            (Phase::Discovering, Input::DiscoveryFailed(error)) => {
                let mut effects = Vec::new();
                self.fail(
                    &mut effects,
                    WatchState::Failing,
                    "API discovery failed",
                    error,
                );
                self.plan(effects, Request::Discover)
            }
            (
                Phase::Listing,
                Input::ListPage {
                    objects,
                    continue_token,
                    resource_version,
                },
            ) => self.listed_page(objects, continue_token, resource_version),
            (Phase::Listing, Input::ListFailed { code, error }) => self.list_failed(code, error),
            (Phase::StreamingList { page }, input) => self.streaming(page, input),
            (
                Phase::Watching {
                    resource_version, ..
                },
                Input::WatchOpened,
            ) => {
                self.phase = Phase::Watching {
                    resource_version,
                    delivered: false,
                };
                self.plan(Vec::new(), Request::NextEvent)
            }
            (
                Phase::Watching {
                    resource_version, ..
                },
                Input::WatchRefused { code, error },
            ) => self.watch_ended(resource_version, WatchEnd::of_status(code, error)),
            (
                Phase::Watching {
                    resource_version,
                    delivered,
                },
                input,
            ) => self.watching(resource_version, delivered, input),
            (_, _) => self.plan(Vec::new(), Request::Discover),
        }
    }

    fn plan(&self, effects: Vec<Effect>, request: Request) -> Plan {
        Plan { effects, request }
    }

    /// Records a failure and the wait before the next attempt.
    fn fail(&mut self, effects: &mut Vec<Effect>, state: WatchState, what: &str, error: String) {
        effects.push(Effect::Failed {
            state,
            what: what.to_string(),
            error,
        });
        effects.push(Effect::Wait(self.backoff.next_delay()));
    }

    /// Starts a (re-)list: the store is told first, so the pages replace
    /// what it holds.
    fn relist(&mut self, mut effects: Vec<Effect>) -> Plan {
        effects.push(Effect::Send(EventBody::ListStarted));
        match self.initial_list {
            InitialList::Streaming => {
                self.phase = Phase::StreamingList { page: Vec::new() };
                self.plan(effects, Request::StreamList)
            }
            InitialList::Paged => {
                self.phase = Phase::Listing;
                self.plan(effects, Request::List(None))
            }
        }
    }

    /// The watch list did not give the whole list: this list is read in
    /// pages instead, from the start (the store drops what it was sent).
    /// `unstreamed` says why the server is not asked for watch lists again.
    fn list_in_pages(&mut self, unstreamed: Option<String>) -> Plan {
        let mut effects = Vec::new();
        if let Some(why) = unstreamed {
            self.initial_list = InitialList::Paged;
            effects.push(Effect::ListsUnstreamed(why));
        }
        effects.push(Effect::Send(EventBody::ListStarted));
        self.phase = Phase::Listing;
        self.plan(effects, Request::List(None))
    }

    /// An input while a watch list's initial events are read.
    fn streaming(&mut self, mut page: Vec<StoredObject>, input: Input) -> Plan {
        match input {
            Input::WatchOpened => {
                self.phase = Phase::StreamingList { page };
                self.plan(Vec::new(), Request::NextEvent)
            }
            Input::WatchRefused {
                code: Some(404),
                error,
            } => self.list_failed(Some(404), error),
            Input::WatchRefused {
                code: Some(code @ (400 | 422)),
                error,
            } => self.list_in_pages(Some(format!("{code}: {error}"))),
            // Forbidden, failing or unreachable: the list says which, and
            // backs off, as a list does.
            Input::WatchRefused { .. } => self.list_in_pages(None),
            Input::Upserted { object, .. } => {
                let mut effects = Vec::new();
                // A pod that is no job's is not stored, as in a list page.
                if let Projected::Stored(stored) = object {
                    page.push(stored);
                }
                if page.len() >= STREAMED_PAGE {
                    effects.push(Effect::Send(EventBody::ListPage(std::mem::take(&mut page))));
                }
                self.phase = Phase::StreamingList { page };
                self.plan(effects, Request::NextEvent)
            }
            Input::Bookmark {
                resource_version,
                initial_events_end: true,
            } => {
                // The list is whole: the same stream goes on as the watch.
                self.backoff.reset();
                self.phase = Phase::Watching {
                    resource_version,
                    delivered: true,
                };
                let effects = vec![
                    Effect::Send(EventBody::ListPage(page)),
                    Effect::Send(EventBody::ListDone),
                    Effect::Listed(ListMethod::WatchList),
                    Effect::Healthy,
                ];
                self.plan(effects, Request::NextEvent)
            }
            Input::Bookmark { .. } => {
                self.phase = Phase::StreamingList { page };
                self.plan(Vec::new(), Request::NextEvent)
            }
            // A server that ends the stream without marking the end of
            // its initial events does not stream lists (it ignored the
            // request's options and watched).
            Input::Ended { .. } => self.list_in_pages(Some(
                "the watch list ended before its initial-events-end bookmark".to_string(),
            )),
            Input::Deleted { .. } => self.list_in_pages(Some(
                "a watch list's initial events held a deletion".to_string(),
            )),
            // `410`, another `ERROR` or a broken stream: this list is read
            // in pages, which say what fails.
            Input::ErrorEvent { .. } | Input::Broken(_) => self.list_in_pages(None),
            _ => self.plan(Vec::new(), Request::Discover),
        }
    }

    fn discovered(&mut self, found: Availability) -> Plan {
        match found {
            Availability::Served(resource) => self.relist(vec![Effect::Serve(resource)]),
            Availability::NotServed | Availability::UnknownVersions(_) => {
                // A kind that is not served has no objects: an empty list
                // replaces whatever was held.
                let mut effects = vec![
                    Effect::Unreadable,
                    Effect::Send(EventBody::ListStarted),
                    Effect::Send(EventBody::ListDone),
                ];
                let kind = self.kind;
                let (state, what) = match found {
                    Availability::UnknownVersions(versions) => {
                        let what = format!(
                            "{} is served only in versions this server does not understand ({}); it understands {}",
                            kind.name(),
                            versions.join(", "),
                            discovery::understood_versions(kind).join(", "),
                        );
                        (WatchState::UnknownVersions(versions), what)
                    }
                    _ => (
                        WatchState::NotServed,
                        format!(
                            "{} ({}) is not served; is its CRD installed?",
                            kind.name(),
                            kind.group()
                        ),
                    ),
                };
                self.fail(
                    &mut effects,
                    state,
                    &what,
                    "absent from API discovery".to_string(),
                );
                self.phase = Phase::Discovering;
                self.plan(effects, Request::Discover)
            }
        }
    }

    fn listed_page(
        &mut self,
        objects: Vec<Projected>,
        continue_token: Option<String>,
        resource_version: Option<String>,
    ) -> Plan {
        let page: Vec<StoredObject> = objects
            .into_iter()
            .filter_map(|object| match object {
                Projected::Stored(stored) => Some(stored),
                Projected::NotStored(_) => None,
            })
            .collect();
        let mut effects = vec![Effect::Send(EventBody::ListPage(page))];
        if let Some(token) = continue_token.filter(|token| !token.is_empty()) {
            self.phase = Phase::Listing;
            return self.plan(effects, Request::List(Some(token)));
        }
        effects.push(Effect::Send(EventBody::ListDone));
        effects.push(Effect::Listed(ListMethod::Pages));
        effects.push(Effect::Healthy);
        let resource_version = resource_version.unwrap_or_default();
        self.phase = Phase::Watching {
            resource_version: resource_version.clone(),
            delivered: false,
        };
        self.plan(effects, Request::Watch(resource_version))
    }

    fn list_failed(&mut self, code: Option<u16>, error: String) -> Plan {
        let mut effects = Vec::new();
        match code {
            Some(403) => {
                effects.push(Effect::Send(EventBody::Forbidden));
                self.fail(
                    &mut effects,
                    WatchState::Forbidden,
                    "list is forbidden",
                    error,
                );
                self.relist(effects)
            }
            Some(404) => {
                self.fail(
                    &mut effects,
                    WatchState::NotServed,
                    "list answered 404 Not Found",
                    error,
                );
                self.phase = Phase::Discovering;
                self.plan(effects, Request::Discover)
            }
            _ => {
                self.fail(&mut effects, WatchState::Failing, "list failed", error);
                self.relist(effects)
            }
        }
    }

    /// An input while a watch is open.
    fn watching(&mut self, mut resource_version: String, delivered: bool, input: Input) -> Plan {
        let mut effects = Vec::new();
        let delivers = matches!(
            input,
            Input::Upserted { .. } | Input::Deleted { .. } | Input::Bookmark { .. }
        );
        let mut delivered = delivered;
        if delivers && !delivered {
            // The watch delivers (an ERROR event is no delivery): the cycle
            // works again.
            delivered = true;
            self.backoff.reset();
            effects.push(Effect::Healthy);
        }
        let body = match input {
            Input::Upserted {
                object,
                resource_version: seen,
            } => {
                resource_version = seen.unwrap_or(resource_version);
                match object {
                    Projected::Stored(stored) => EventBody::Upserted(stored),
                    // A pod that lost its job labels is no longer stored.
                    Projected::NotStored(gone) => EventBody::Deleted(gone),
                }
            }
            Input::Deleted {
                object,
                resource_version: seen,
            } => {
                resource_version = seen.unwrap_or(resource_version);
                match object {
                    Projected::Stored(stored) | Projected::NotStored(stored) => {
                        EventBody::Deleted(stored)
                    }
                }
            }
            Input::Bookmark {
                resource_version: seen,
                ..
            } => {
                self.phase = Phase::Watching {
                    resource_version: seen,
                    delivered,
                };
                return self.plan(effects, Request::NextEvent);
            }
            Input::ErrorEvent { code, message } => {
                return self.watch_ended_with(
                    effects,
                    resource_version,
                    WatchEnd::of_status(Some(code), message),
                );
            }
            Input::Broken(error) => {
                return self.watch_ended_with(
                    effects,
                    resource_version,
                    WatchEnd::Failed(WatchState::Failing, error),
                );
            }
            Input::Ended { lasted } => {
                let end = WatchEnd::of_clean_end(delivered, lasted);
                if matches!(end, WatchEnd::Rewatch) {
                    self.backoff.reset();
                }
                return self.watch_ended_with(effects, resource_version, end);
            }
            _ => return self.plan(effects, Request::Discover),
        };
        effects.push(Effect::Send(body));
        self.phase = Phase::Watching {
            resource_version,
            delivered,
        };
        self.plan(effects, Request::NextEvent)
    }

    fn watch_ended(&mut self, resource_version: String, end: WatchEnd) -> Plan {
        self.watch_ended_with(Vec::new(), resource_version, end)
    }

    /// A watch request is over: the store is told (section 12 closes the
    /// Watches that depend on it), then what follows.
    fn watch_ended_with(
        &mut self,
        mut effects: Vec<Effect>,
        resource_version: String,
        end: WatchEnd,
    ) -> Plan {
        effects.push(Effect::Send(EventBody::WatchEnded));
        let rewatch = |machine: &mut Machine, effects| {
            machine.phase = Phase::Watching {
                resource_version: resource_version.clone(),
                delivered: false,
            };
            machine.plan(effects, Request::Watch(resource_version.clone()))
        };
        match end {
            WatchEnd::Relist => self.relist(effects),
            WatchEnd::Rewatch => rewatch(self, effects),
            WatchEnd::RewatchAfterBackoff => {
                effects.push(Effect::Wait(self.backoff.next_delay()));
                rewatch(self, effects)
            }
            WatchEnd::Failed(state, error) => {
                self.fail(&mut effects, state, "watch failed", error);
                rewatch(self, effects)
            }
            WatchEnd::NotFound => {
                self.fail(
                    &mut effects,
                    WatchState::NotServed,
                    "watch answered 404 Not Found",
                    "404 Not Found".to_string(),
                );
                self.phase = Phase::Discovering;
                self.plan(effects, Request::Discover)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::{BACKOFF_BASE, BACKOFF_CAP};
    use super::*;
    use crate::serve::discovery::resource_at;
    use crate::serve::projection::project_at;
    use test_support::Rng;

    /// A pod of job `j`, stored, at resourceVersion `rv`.
    fn pod(name: &str) -> StoredObject {
        let value = serde_json::json!({"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "uid": format!("uid-{name}"),
                "labels": {"dispatch.phpboyscout.uk/job-id": "j"}},
            "status": {"phase": "Running"}});
        project_at(ObjectKind::Pod, "v1", &value).expect("a job pod is stored")
    }

    fn upserted(name: &str, rv: &str) -> Input {
        Input::Upserted {
            object: Projected::Stored(pod(name)),
            resource_version: Some(rv.to_string()),
        }
    }

    fn trainjobs() -> Availability {
        Availability::Served(resource_at(ObjectKind::TrainJob, "v1"))
    }

    /// A plan in one line: its effects, then `→` and the request.
    fn render(plan: &Plan) -> String {
        let effects: Vec<String> = plan.effects.iter().map(render_effect).collect();
        let request = match &plan.request {
            Request::Discover => "→ discover".to_string(),
            Request::StreamList => "→ watch list".to_string(),
            Request::List(None) => "→ list first".to_string(),
            Request::List(Some(token)) => format!("→ list after {token}"),
            Request::Watch(rv) => format!("→ watch from {rv:?}"),
            Request::NextEvent => "→ next".to_string(),
        };
        match effects.is_empty() {
            true => request,
            false => format!("{} {request}", effects.join("; ")),
        }
    }

    fn render_effect(effect: &Effect) -> String {
        match effect {
            Effect::Serve(resource) => format!("serve {}", resource.api_version),
            Effect::Unreadable => "unreadable".to_string(),
            Effect::Send(body) => match body {
                EventBody::ListStarted => "send list-started".to_string(),
                EventBody::ListPage(page) => format!("send page({})", page.len()),
                EventBody::ListDone => "send list-done".to_string(),
                EventBody::Upserted(o) => format!("send upserted {}", o.name),
                EventBody::Deleted(o) => format!("send deleted {}", o.name),
                EventBody::WatchEnded => "send watch-ended".to_string(),
                EventBody::Forbidden => "send forbidden".to_string(),
            },
            Effect::Healthy => "healthy".to_string(),
            Effect::Failed { state, what, .. } => format!("failed {}: {what}", state.as_str()),
            Effect::Wait(_) => "wait".to_string(),
            Effect::ListsUnstreamed(_) => "lists unstreamed".to_string(),
            Effect::Listed(ListMethod::WatchList) => "listed by watch list".to_string(),
            Effect::Listed(ListMethod::Pages) => "listed in pages".to_string(),
        }
    }

    /// Feeds `inputs` to a machine started on `availability` and checks
    /// each plan, rendered, against `expected` (the start's plan first).
    fn check(availability: Option<Availability>, inputs: Vec<Input>, expected: &[&str]) -> Machine {
        check_with(InitialList::Paged, availability, inputs, expected)
    }

    /// [`check`], reading lists as `initial_list` says.
    fn check_with(
        initial_list: InitialList,
        availability: Option<Availability>,
        inputs: Vec<Input>,
        expected: &[&str],
    ) -> Machine {
        let (mut machine, plan) = Machine::start(
            ObjectKind::TrainJob,
            Backoff::new(BACKOFF_BASE, BACKOFF_CAP, 7),
            availability,
            initial_list,
        );
        let mut got = vec![render(&plan)];
        for input in inputs {
            got.push(render(&machine.step(input)));
        }
        let want: Vec<String> = expected.iter().map(|s| s.to_string()).collect();
        assert_eq!(got, want);
        machine
    }

    /// A machine that has listed and opened a watch from resourceVersion 7.
    fn watching() -> Machine {
        check(
            Some(trainjobs()),
            vec![
                Input::ListPage {
                    objects: vec![],
                    continue_token: None,
                    resource_version: Some("7".into()),
                },
                Input::WatchOpened,
            ],
            &[
                "serve trainer.kubeflow.org/v1; send list-started → list first",
                "send page(0); send list-done; listed in pages; healthy → watch from \"7\"",
                "→ next",
            ],
        )
    }

    fn waits(plan: &Plan) -> Vec<Duration> {
        plan.effects
            .iter()
            .filter_map(|effect| match effect {
                Effect::Wait(delay) => Some(*delay),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn it_lists_in_pages_then_watches_from_the_lists_version() {
        let machine = check(
            Some(trainjobs()),
            vec![
                Input::ListPage {
                    objects: vec![
                        Projected::Stored(pod("a")),
                        Projected::NotStored(pod("no-job")),
                    ],
                    continue_token: Some("t1".into()),
                    resource_version: Some("5".into()),
                },
                Input::ListPage {
                    objects: vec![Projected::Stored(pod("b"))],
                    // The last page may carry an empty token.
                    continue_token: Some(String::new()),
                    resource_version: Some("9".into()),
                },
            ],
            &[
                "serve trainer.kubeflow.org/v1; send list-started → list first",
                "send page(1) → list after t1",
                "send page(1); send list-done; listed in pages; healthy → watch from \"9\"",
            ],
        );
        assert_eq!(
            machine.phase(),
            &Phase::Watching {
                resource_version: "9".into(),
                delivered: false
            }
        );
    }

    #[test]
    fn events_are_sent_and_the_watch_resumes_from_the_last_version_seen() {
        let mut machine = watching();
        let plans: Vec<String> = vec![
            upserted("a", "8"),
            upserted("b", "9"),
            Input::Upserted {
                // A pod that lost its job labels is a deletion.
                object: Projected::NotStored(pod("c")),
                resource_version: Some("10".into()),
            },
            Input::Deleted {
                object: Projected::Stored(pod("a")),
                resource_version: Some("11".into()),
            },
            Input::Bookmark {
                resource_version: "12".into(),
                initial_events_end: false,
            },
            Input::Ended {
                lasted: Duration::from_secs(290),
            },
        ]
        .into_iter()
        .map(|input| render(&machine.step(input)))
        .collect();
        assert_eq!(
            plans,
            [
                "healthy; send upserted a → next",
                "send upserted b → next",
                "send deleted c → next",
                "send deleted a → next",
                "→ next",
                "send watch-ended → watch from \"12\"",
            ]
        );
    }

    #[test]
    fn gone_relists_whether_the_request_or_an_event_says_it() {
        let mut machine = watching();
        let relist = "send watch-ended; send list-started → list first";
        assert_eq!(
            render(&machine.step(Input::ErrorEvent {
                code: 410,
                message: "too old resource version".into()
            })),
            relist
        );
        assert_eq!(machine.phase(), &Phase::Listing);
        let mut machine = watching();
        machine.step(Input::Ended {
            lasted: Duration::from_secs(290),
        });
        assert_eq!(
            render(&machine.step(Input::WatchRefused {
                code: Some(410),
                error: "gone".into()
            })),
            relist
        );
    }

    #[test]
    fn a_forbidden_list_is_told_to_the_store_and_retried_after_a_backoff() {
        check(
            Some(trainjobs()),
            vec![
                Input::ListFailed {
                    code: Some(403),
                    error: "forbidden".into(),
                },
                Input::ListFailed {
                    code: Some(500),
                    error: "boom".into(),
                },
            ],
            &[
                "serve trainer.kubeflow.org/v1; send list-started → list first",
                "send forbidden; failed forbidden: list is forbidden; wait; send list-started → list first",
                "failed failing: list failed; wait; send list-started → list first",
            ],
        );
    }

    #[test]
    fn not_found_discovers_again_and_a_kind_not_served_holds_nothing() {
        let mut machine = watching();
        assert_eq!(
            render(&machine.step(Input::ErrorEvent {
                code: 404,
                message: "not found".into()
            })),
            "send watch-ended; failed notServed: watch answered 404 Not Found; wait → discover"
        );
        assert_eq!(
            render(&machine.step(Input::Discovered(Availability::NotServed))),
            "unreadable; send list-started; send list-done; \
             failed notServed: TrainJob (trainer.kubeflow.org) is not served; is its CRD installed?; wait → discover"
        );
        assert_eq!(
            render(&machine.step(Input::Discovered(Availability::UnknownVersions(vec![
                "v9".into()
            ])))),
            "unreadable; send list-started; send list-done; \
             failed unknownVersions: TrainJob is served only in versions this server does not understand (v9); \
             it understands v1alpha1; wait → discover"
        );
        check(
            Some(trainjobs()),
            vec![Input::ListFailed {
                code: Some(404),
                error: "not found".into(),
            }],
            &[
                "serve trainer.kubeflow.org/v1; send list-started → list first",
                "failed notServed: list answered 404 Not Found; wait → discover",
            ],
        );
    }

    #[test]
    fn discovery_is_retried_until_it_answers() {
        check(
            None,
            vec![
                Input::DiscoveryFailed("connection refused".into()),
                Input::Discovered(trainjobs()),
            ],
            &[
                "→ discover",
                "failed failing: API discovery failed; wait → discover",
                "serve trainer.kubeflow.org/v1; send list-started → list first",
            ],
        );
    }

    #[test]
    fn an_error_event_or_a_broken_stream_is_no_delivery_and_waits_before_rewatching() {
        let mut machine = watching();
        assert_eq!(
            render(&machine.step(Input::ErrorEvent {
                code: 500,
                message: "internal".into()
            })),
            "send watch-ended; failed failing: watch failed; wait → watch from \"7\""
        );
        machine.step(Input::WatchOpened);
        assert_eq!(
            render(&machine.step(Input::Broken("reset by peer".into()))),
            "send watch-ended; failed failing: watch failed; wait → watch from \"7\""
        );
        assert_eq!(
            render(&machine.step(Input::WatchRefused {
                code: Some(403),
                error: "forbidden".into()
            })),
            "send watch-ended; failed forbidden: watch failed; wait → watch from \"7\""
        );
    }

    #[test]
    fn a_watch_that_ends_at_once_having_delivered_nothing_backs_off_more_each_time() {
        let mut machine = watching();
        let mut delays = Vec::new();
        for _ in 0..6 {
            let plan = machine.step(Input::Ended {
                lasted: Duration::from_millis(3),
            });
            assert_eq!(render(&plan), "send watch-ended; wait → watch from \"7\"");
            delays.extend(waits(&plan));
            machine.step(Input::WatchOpened);
        }
        for (n, delay) in delays.iter().enumerate() {
            let ceiling = (BACKOFF_BASE * 2u32.pow(n as u32 + 1)).min(BACKOFF_CAP);
            assert!(*delay >= ceiling / 2 && *delay <= ceiling, "{n}: {delay:?}");
        }
        // A quiet watch that ran to its timeout re-watches at once, and so
        // does one that delivered, however short.
        assert_eq!(
            render(&machine.step(Input::Ended {
                lasted: Duration::from_secs(290)
            })),
            "send watch-ended → watch from \"7\""
        );
        machine.step(Input::WatchOpened);
        machine.step(upserted("a", "8"));
        assert_eq!(
            render(&machine.step(Input::Ended {
                lasted: Duration::from_millis(3)
            })),
            "send watch-ended → watch from \"8\""
        );
    }

    #[test]
    fn a_watch_that_delivers_resets_the_backoff() {
        let mut machine = watching();
        for _ in 0..8 {
            machine.step(Input::Broken("reset".into()));
            machine.step(Input::WatchOpened);
        }
        let long = waits(&machine.step(Input::Broken("reset".into())));
        assert!(long.iter().all(|d| *d >= BACKOFF_CAP / 2), "{long:?}");
        machine.step(Input::WatchOpened);
        // An ERROR event does not count as delivering.
        machine.step(Input::ErrorEvent {
            code: 500,
            message: "internal".into(),
        });
        machine.step(Input::WatchOpened);
        machine.step(upserted("a", "8"));
        let short = waits(&machine.step(Input::Broken("reset".into())));
        assert_eq!(short.len(), 1);
        assert!(
            short
                .iter()
                .all(|d| *d >= BACKOFF_BASE && *d <= BACKOFF_BASE * 2),
            "{short:?}"
        );
    }

    fn end_of_initial_events(rv: &str) -> Input {
        Input::Bookmark {
            resource_version: rv.into(),
            initial_events_end: true,
        }
    }

    fn refused(code: u16) -> Input {
        Input::WatchRefused {
            code: Some(code),
            error: "refused".into(),
        }
    }

    #[test]
    fn a_watch_list_is_the_list_then_the_same_stream_is_the_watch() {
        let mut machine = check_with(
            InitialList::Streaming,
            Some(trainjobs()),
            vec![
                Input::WatchOpened,
                upserted("a", "3"),
                Input::Upserted {
                    object: Projected::NotStored(pod("no-job")),
                    resource_version: Some("4".into()),
                },
                Input::Bookmark {
                    resource_version: "5".into(),
                    initial_events_end: false,
                },
                upserted("b", "6"),
                end_of_initial_events("9"),
                upserted("c", "10"),
            ],
            &[
                "serve trainer.kubeflow.org/v1; send list-started → watch list",
                "→ next",
                "→ next",
                "→ next",
                "→ next",
                "→ next",
                "send page(2); send list-done; listed by watch list; healthy → next",
                "send upserted c → next",
            ],
        );
        assert_eq!(
            machine.phase(),
            &Phase::Watching {
                resource_version: "10".into(),
                delivered: true
            }
        );
        // The watch goes on as any other: a clean end resumes it from the
        // last version seen, with no list; a 410 reads the list again,
        // streamed.
        let ended = machine.step(Input::Ended {
            lasted: Duration::from_secs(290),
        });
        assert_eq!(render(&ended), "send watch-ended → watch from \"10\"");
        machine.step(Input::WatchOpened);
        let gone = machine.step(Input::ErrorEvent {
            code: 410,
            message: "too old".into(),
        });
        assert_eq!(
            render(&gone),
            "send watch-ended; send list-started → watch list"
        );
    }

    #[test]
    fn a_watch_lists_objects_reach_the_store_a_page_at_a_time() {
        let (mut machine, _) = Machine::start(
            ObjectKind::TrainJob,
            Backoff::new(BACKOFF_BASE, BACKOFF_CAP, 7),
            Some(trainjobs()),
            InitialList::Streaming,
        );
        machine.step(Input::WatchOpened);
        let mut sent = Vec::new();
        for n in 0..(2 * STREAMED_PAGE + 1) {
            let plan = machine.step(upserted(&format!("p{n}"), "1"));
            sent.extend(plan.effects.iter().map(render_effect));
        }
        let plan = machine.step(end_of_initial_events("2"));
        sent.extend(plan.effects.iter().map(render_effect));
        let page = format!("send page({STREAMED_PAGE})");
        assert_eq!(
            sent,
            [
                &page,
                &page,
                "send page(1)",
                "send list-done",
                "listed by watch list",
                "healthy",
            ]
        );
    }

    #[test]
    fn a_server_without_watch_lists_is_listed_in_pages_from_then_on() {
        for code in [400, 422] {
            let mut machine = check_with(
                InitialList::Streaming,
                Some(trainjobs()),
                vec![
                    refused(code),
                    Input::ListPage {
                        objects: vec![Projected::Stored(pod("a"))],
                        continue_token: None,
                        resource_version: Some("7".into()),
                    },
                    Input::WatchOpened,
                    Input::ErrorEvent {
                        code: 410,
                        message: "too old".into(),
                    },
                ],
                &[
                    "serve trainer.kubeflow.org/v1; send list-started → watch list",
                    "lists unstreamed; send list-started → list first",
                    "send page(1); send list-done; listed in pages; healthy → watch from \"7\"",
                    "→ next",
                    "send watch-ended; send list-started → list first",
                ],
            );
            assert_eq!(machine.initial_list(), InitialList::Paged);
            let plan = machine.step(Input::ListPage {
                objects: vec![],
                continue_token: None,
                resource_version: Some("8".into()),
            });
            assert_eq!(
                render(&plan),
                "send page(0); send list-done; listed in pages; healthy → watch from \"8\""
            );
        }
    }

    #[test]
    fn a_watch_list_that_ends_unmarked_is_read_again_in_pages() {
        // A server that ignores sendInitialEvents watches instead: its
        // stream ends without the bookmark. What it sent is dropped (the
        // list starts again) and watch lists are not asked for again.
        let machine = check_with(
            InitialList::Streaming,
            Some(trainjobs()),
            vec![
                Input::WatchOpened,
                upserted("a", "3"),
                Input::Ended {
                    lasted: Duration::from_secs(290),
                },
            ],
            &[
                "serve trainer.kubeflow.org/v1; send list-started → watch list",
                "→ next",
                "→ next",
                "lists unstreamed; send list-started → list first",
            ],
        );
        assert_eq!(machine.initial_list(), InitialList::Paged);
        // Initial events are all ADDED; a deletion among them is as wrong.
        let machine = check_with(
            InitialList::Streaming,
            Some(trainjobs()),
            vec![
                Input::WatchOpened,
                Input::Deleted {
                    object: Projected::Stored(pod("a")),
                    resource_version: Some("3".into()),
                },
            ],
            &[
                "serve trainer.kubeflow.org/v1; send list-started → watch list",
                "→ next",
                "lists unstreamed; send list-started → list first",
            ],
        );
        assert_eq!(machine.initial_list(), InitialList::Paged);
    }

    #[test]
    fn a_failing_watch_list_is_read_in_pages_which_say_what_fails() {
        // Forbidden (a role with list but not watch), a broken stream or
        // an ERROR event: this list is read in pages, and the next one is
        // asked for as a watch list again.
        let inputs: [(Vec<Input>, &str); 4] = [
            (vec![refused(403)], "send list-started → list first"),
            (vec![refused(500)], "send list-started → list first"),
            (
                vec![Input::WatchOpened, Input::Broken("reset".into())],
                "send list-started → list first",
            ),
            (
                vec![
                    Input::WatchOpened,
                    Input::ErrorEvent {
                        code: 410,
                        message: "too old".into(),
                    },
                ],
                "send list-started → list first",
            ),
        ];
        for (inputs, last) in inputs {
            let (mut machine, _) = Machine::start(
                ObjectKind::TrainJob,
                Backoff::new(BACKOFF_BASE, BACKOFF_CAP, 7),
                Some(trainjobs()),
                InitialList::Streaming,
            );
            let plans: Vec<String> = inputs
                .into_iter()
                .map(|input| render(&machine.step(input)))
                .collect();
            assert_eq!(plans.last().map(String::as_str), Some(last), "{plans:?}");
            assert_eq!(machine.initial_list(), InitialList::Streaming);
            let plan = machine.step(Input::ListFailed {
                code: Some(403),
                error: "forbidden".into(),
            });
            assert_eq!(
                render(&plan),
                "send forbidden; failed forbidden: list is forbidden; wait; send list-started → watch list"
            );
        }
        // 404: the kind went away; discovery says what is served now.
        check_with(
            InitialList::Streaming,
            Some(trainjobs()),
            vec![refused(404)],
            &[
                "serve trainer.kubeflow.org/v1; send list-started → watch list",
                "failed notServed: list answered 404 Not Found; wait → discover",
            ],
        );
    }

    #[test]
    fn an_input_that_does_not_belong_to_the_phase_starts_over_from_discovery() {
        let mut machine = watching();
        let plan = machine.step(Input::ListFailed {
            code: None,
            error: "?".into(),
        });
        assert_eq!(render(&plan), "→ discover");
        assert_eq!(machine.phase(), &Phase::Discovering);
    }

    /// Random answers to whatever the machine asks, over many seeds: the
    /// request always fits the phase, every wait is within the backoff's
    /// bounds, and the store never gets an event inside a list (between
    /// `ListStarted` and `ListDone`), which it could not place.
    #[test]
    fn seeded_runs_keep_the_store_protocol() {
        for seed in 0..200 {
            let mut rng = Rng::new(seed);
            let initial_list = match seed % 2 {
                0 => InitialList::Streaming,
                _ => InitialList::Paged,
            };
            let (mut machine, mut plan) = Machine::start(
                ObjectKind::TrainJob,
                Backoff::new(BACKOFF_BASE, BACKOFF_CAP, seed),
                None,
                initial_list,
            );
            let mut in_list = false;
            for step in 0..300 {
                for effect in &plan.effects {
                    match effect {
                        Effect::Send(EventBody::ListStarted) => in_list = true,
                        Effect::Send(EventBody::ListDone) => in_list = false,
                        Effect::Send(EventBody::ListPage(_)) => {
                            assert!(in_list, "seed {seed} step {step}: a page outside a list")
                        }
                        Effect::Send(EventBody::Upserted(_) | EventBody::Deleted(_)) => {
                            assert!(!in_list, "seed {seed} step {step}: an event inside a list")
                        }
                        Effect::Wait(delay) => {
                            assert!(*delay >= BACKOFF_BASE && *delay <= BACKOFF_CAP)
                        }
                        _ => {}
                    }
                }
                let fits = matches!(
                    (&plan.request, machine.phase()),
                    (Request::Discover, Phase::Discovering)
                        | (Request::List(_), Phase::Listing)
                        | (
                            Request::StreamList | Request::NextEvent,
                            Phase::StreamingList { .. }
                        )
                        | (
                            Request::Watch(_) | Request::NextEvent,
                            Phase::Watching { .. }
                        )
                );
                assert!(
                    fits,
                    "seed {seed} step {step}: {:?} in {:?}",
                    plan.request,
                    machine.phase()
                );
                let code = *rng.pick(&[
                    None,
                    Some(400),
                    Some(403),
                    Some(404),
                    Some(410),
                    Some(422),
                    Some(500),
                ]);
                let input = match plan.request {
                    Request::Discover => match rng.below(4) {
                        0 => Input::DiscoveryFailed("down".into()),
                        1 => Input::Discovered(Availability::NotServed),
                        _ => Input::Discovered(trainjobs()),
                    },
                    Request::List(_) => match rng.below(4) {
                        0 => Input::ListFailed {
                            code,
                            error: "x".into(),
                        },
                        1 => Input::ListPage {
                            objects: vec![Projected::Stored(pod("p"))],
                            continue_token: Some(format!("t{step}")),
                            resource_version: None,
                        },
                        _ => Input::ListPage {
                            objects: vec![Projected::Stored(pod("p"))],
                            continue_token: None,
                            resource_version: Some(format!("{step}")),
                        },
                    },
                    Request::Watch(_) | Request::StreamList => match rng.below(3) {
                        0 => Input::WatchRefused {
                            code,
                            error: "x".into(),
                        },
                        _ => Input::WatchOpened,
                    },
                    Request::NextEvent => match rng.below(8) {
                        0 => Input::ErrorEvent {
                            code: code.unwrap_or(500),
                            message: "x".into(),
                        },
                        1 => Input::Broken("x".into()),
                        2 => Input::Ended {
                            lasted: Duration::from_millis(rng.below(3000) as u64),
                        },
                        3 => Input::Bookmark {
                            resource_version: format!("{step}"),
                            initial_events_end: rng.below(2) == 0,
                        },
                        _ => upserted("p", &format!("{step}")),
                    },
                };
                plan = machine.step(input);
            }
        }
    }

    #[test]
    fn backoff_delays_stay_within_base_and_cap() {
        for seed in 0..50 {
            let mut b = Backoff::new(BACKOFF_BASE, BACKOFF_CAP, seed);
            for _ in 0..200 {
                let d = b.next_delay();
                assert!(d >= BACKOFF_BASE && d <= BACKOFF_CAP, "{d:?}");
            }
        }
    }

    #[test]
    fn backoff_doubles_its_range_up_to_the_cap() {
        for seed in 0..20 {
            let mut b = Backoff::new(BACKOFF_BASE, BACKOFF_CAP, seed);
            for n in 0..20u32 {
                let ceiling = (BACKOFF_BASE * 2u32.pow(n + 1)).min(BACKOFF_CAP);
                let d = b.next_delay();
                assert!(d >= ceiling / 2 && d <= ceiling, "attempt {n}: {d:?}");
            }
        }
        // So a streak makes few attempts: in the first 10 s, at most 5.
        let mut b = Backoff::new(BACKOFF_BASE, BACKOFF_CAP, 9);
        let mut elapsed = Duration::ZERO;
        let mut attempts = 0;
        while elapsed < Duration::from_secs(10) {
            elapsed += b.next_delay();
            attempts += 1;
        }
        assert!(attempts <= 6, "{attempts}");
    }

    #[test]
    fn backoff_resets_to_the_base_range() {
        let mut b = Backoff::new(BACKOFF_BASE, BACKOFF_CAP, 3);
        for _ in 0..30 {
            b.next_delay();
        }
        assert!(b.next_delay() >= BACKOFF_CAP / 2);
        b.reset();
        let d = b.next_delay();
        assert!(d >= BACKOFF_BASE && d <= BACKOFF_BASE * 2, "{d:?}");
    }

    #[test]
    fn backoff_jitter_spreads_over_the_range() {
        let mut b = Backoff::new(Duration::from_millis(100), BACKOFF_CAP, 42);
        let first: Vec<Duration> = (0..400)
            .map(|_| {
                b.reset();
                b.next_delay()
            })
            .collect();
        let low = first
            .iter()
            .filter(|d| **d < Duration::from_millis(150))
            .count();
        let high = first
            .iter()
            .filter(|d| **d > Duration::from_millis(150))
            .count();
        assert!(low > 100 && high > 100, "{low} low, {high} high");
        // Two watches with different seeds do not retry in step.
        let mut a = Backoff::new(BACKOFF_BASE, BACKOFF_CAP, 1);
        let mut c = Backoff::new(BACKOFF_BASE, BACKOFF_CAP, 2);
        let same = (0..10).filter(|_| a.next_delay() == c.next_delay()).count();
        assert!(same < 10);
        // A degenerate range is the base.
        let mut flat = Backoff::new(BACKOFF_BASE, BACKOFF_BASE, 5);
        assert_eq!(flat.next_delay(), BACKOFF_BASE);
    }
}
