//! The live page's client of a namespace's `snapshots` stream, as a state
//! machine with a pure step, in the manner of kube-runtime's `watcher`.
//!
//! [`StreamClient::step`] takes what happened ([`Input`]) and says what to
//! do about it ([`Action`]); `ui/live.rs` only carries the actions out with
//! an `EventSource`, a probe, a timer and a fetch, and feeds their outcomes
//! back. Every input that answers an action carries the generation that
//! action was made in: a stream, probe or timer of a namespace no longer
//! shown is ignored here, not in each callback.
//!
//! An `EventSource` reconnects by itself after a network error, but gives
//! up (readyState `CLOSED`) on an HTTP error, whose status it does not
//! tell. Then the client probes the same URL for the status, and
//! [`NamespaceAccess`] decides: sign in (401), stop (403), or open a new
//! stream after [`RETRY_MS`].

use crate::namespace_access::{Denied, NamespaceAccess, NextStep};

/// After this long without a connection the data is called stale.
pub const STALE_AFTER_MS: f64 = 10_000.0;
/// Wait before opening a new stream when the browser gave up on one.
pub const RETRY_MS: u64 = 2000;

/// Where the client is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Phase {
    /// No namespace is shown (yet, or the page is gone).
    Idle,
    /// A stream was opened and has not answered yet.
    Connecting,
    /// The stream is open, or has delivered since it last failed.
    Live,
    /// The stream failed at `since` and has not delivered since.
    /// `probing`: the browser gave up on it and the probe is under way.
    Reconnecting { since: f64, probing: bool },
    /// Refused for good (403): no more retries.
    Refused,
    /// The session is gone (401): the sign-in form takes over.
    SignedOut,
}

/// What the connection indicator shows, given the time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Status {
    Connecting,
    Live,
    Reconnecting {
        since: f64,
    },
    /// Reconnecting for longer than [`STALE_AFTER_MS`].
    Stale {
        since: f64,
    },
    Refused,
    SignedOut,
}

impl Status {
    /// The indicator's class suffix (`conn-…`).
    pub fn class(self) -> &'static str {
        match self {
            Status::Connecting => "connecting",
            Status::Live => "live",
            Status::Reconnecting { .. } => "reconnecting",
            Status::Stale { .. } => "stale",
            Status::Refused => "stopped",
            Status::SignedOut => "signed-out",
        }
    }

    /// The indicator's words; `at` is the failure's time of day, as the
    /// page formats it.
    pub fn text(self, at: &str) -> String {
        match self {
            Status::Connecting => "connecting…".into(),
            Status::Live => "live".into(),
            Status::Reconnecting { .. } => format!("reconnecting… (since {at})"),
            Status::Stale { .. } => format!("stale since {at} — reconnecting…"),
            Status::Refused => "not allowed".into(),
            Status::SignedOut => "signed out".into(),
        }
    }

    /// When the connection was lost, if it is.
    pub fn since(self) -> Option<f64> {
        match self {
            Status::Reconnecting { since } | Status::Stale { since } => Some(since),
            _ => None,
        }
    }
}

/// What happened.
#[derive(Debug, Clone, PartialEq)]
pub enum Input {
    /// The page shows `namespace` now: a new stream, a new generation.
    Chosen { namespace: String },
    /// The page is gone: nothing is current any more.
    Disposed,
    /// The browser could not make an `EventSource` at all.
    CouldNotOpen { generation: u64, now: f64 },
    /// The stream opened.
    Opened { generation: u64 },
    /// A snapshot was loaded or changes were applied from the stream.
    Delivered { generation: u64 },
    /// The stream failed; `closed`: the browser gave up on it.
    Failed {
        generation: u64,
        closed: bool,
        now: f64,
    },
    /// The probe of the stream's URL answered `status` (`None`: no answer).
    Probed {
        generation: u64,
        status: Option<u16>,
    },
    /// The wait of [`Action::RetryAfter`] is over.
    RetryDue { generation: u64 },
    /// The namespaces the user may see now, asked after a refusal
    /// (`None`: the list could not be had).
    Listed {
        generation: u64,
        visible: Option<Vec<String>>,
    },
    /// A request made for this generation answered 401.
    Unauthorized { generation: u64 },
}

/// What to do about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Open the stream at `url`, replacing (and closing) any open one.
    Open { generation: u64, url: String },
    /// Close the open stream, if any.
    Close,
    /// Ask `url` for the status of its refusal: answer with
    /// [`Input::Probed`].
    Probe { generation: u64, url: String },
    /// Answer with [`Input::RetryDue`] after `ms`.
    RetryAfter { generation: u64, ms: u64 },
    /// Ask the namespaces the user may see: answer with [`Input::Listed`]
    /// or [`Input::Unauthorized`].
    ListNamespaces { generation: u64 },
    /// Hand the page over to the sign-in form.
    SignIn,
}

/// What a step did: the actions to carry out, and whether anything shown
/// (the status or the refusal) may have changed.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Step {
    pub actions: Vec<Action>,
    pub changed: bool,
}

/// The stream client: the namespace shown, its generation, the phase and
/// the namespace's access.
#[derive(Debug, Clone, PartialEq)]
pub struct StreamClient {
    namespace: Option<String>,
    generation: u64,
    phase: Phase,
    access: NamespaceAccess,
}

impl Default for StreamClient {
    fn default() -> Self {
        StreamClient {
            namespace: None,
            generation: 0,
            phase: Phase::Idle,
            access: NamespaceAccess::default(),
        }
    }
}

/// The `snapshots` stream of `namespace`.
pub fn snapshots_url(namespace: &str) -> String {
    format!(
        "/api/v1/namespaces/{}/snapshots",
        crate::query::encode(namespace)
    )
}

impl StreamClient {
    pub fn phase(&self) -> Phase {
        self.phase
    }

    /// The generation of the namespace shown now.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether an answer made in `generation` is still about the stream
    /// shown.
    pub fn is_current(&self, generation: u64) -> bool {
        self.phase != Phase::Idle && generation == self.generation
    }

    /// The refusal to show, if any.
    pub fn denied(&self) -> Option<&Denied> {
        self.access.denied()
    }

    /// What the indicator shows at `now`.
    pub fn status(&self, now: f64) -> Status {
        match self.phase {
            Phase::Idle | Phase::Connecting => Status::Connecting,
            Phase::Live => Status::Live,
            Phase::Reconnecting { since, .. } if now - since > STALE_AFTER_MS => {
                Status::Stale { since }
            }
            Phase::Reconnecting { since, .. } => Status::Reconnecting { since },
            Phase::Refused => Status::Refused,
            Phase::SignedOut => Status::SignedOut,
        }
    }

    /// Applies `input` and says what to do.
    pub fn step(&mut self, input: Input) -> Step {
        let before = (self.phase, self.access.clone());
        let actions = self.actions_for(input);
        let changed = before != (self.phase, self.access.clone());
        Step { actions, changed }
    }

    fn actions_for(&mut self, input: Input) -> Vec<Action> {
        match input {
            Input::Chosen { namespace } => {
                self.generation += 1;
                self.phase = Phase::Connecting;
                self.access.on_namespace_chosen();
                let url = snapshots_url(&namespace);
                self.namespace = Some(namespace);
                vec![Action::Open {
                    generation: self.generation,
                    url,
                }]
            }
            Input::Disposed => {
                // A later answer of the last generation finds it changed.
                self.generation += 1;
                self.phase = Phase::Idle;
                self.namespace = None;
                vec![Action::Close]
            }
            input if answer_generation(&input).is_some_and(|g| !self.is_current(g)) => Vec::new(),
            Input::CouldNotOpen { now, .. } => {
                self.lost(now, false);
                vec![self.retry()]
            }
            Input::Opened { .. } | Input::Delivered { .. } => {
                if matches!(
                    self.phase,
                    Phase::Connecting | Phase::Reconnecting { probing: false, .. }
                ) {
                    self.phase = Phase::Live;
                }
                Vec::new()
            }
            Input::Failed { closed, now, .. } => {
                if self.is_settled() || self.is_probing() {
                    return Vec::new();
                }
                self.lost(now, closed);
                match (&self.namespace, closed) {
                    (Some(namespace), true) => vec![Action::Probe {
                        generation: self.generation,
                        url: snapshots_url(namespace),
                    }],
                    _ => Vec::new(),
                }
            }
            Input::Probed { status, .. } => {
                let (Some(namespace), true) = (&self.namespace, self.is_probing()) else {
                    return Vec::new();
                };
                match self.access.on_stream_failed(namespace, status) {
                    NextStep::SignIn => self.sign_out(),
                    NextStep::Stop => {
                        self.phase = Phase::Refused;
                        vec![
                            Action::Close,
                            Action::ListNamespaces {
                                generation: self.generation,
                            },
                        ]
                    }
                    NextStep::Retry => {
                        if let Phase::Reconnecting { since, .. } = self.phase {
                            self.phase = Phase::Reconnecting {
                                since,
                                probing: false,
                            };
                        }
                        vec![self.retry()]
                    }
                }
            }
            Input::RetryDue { .. } => match (&self.namespace, self.is_settled()) {
                (Some(namespace), false) => vec![Action::Open {
                    generation: self.generation,
                    url: snapshots_url(namespace),
                }],
                _ => Vec::new(),
            },
            Input::Listed { visible, .. } => {
                self.access.on_namespaces(visible);
                Vec::new()
            }
            Input::Unauthorized { .. } => self.sign_out(),
        }
    }

    /// The connection is lost at `now`, unless it already was (the first
    /// loss's time stays).
    fn lost(&mut self, now: f64, probing: bool) {
        let since = match self.phase {
            Phase::Reconnecting { since, .. } => since,
            _ => now,
        };
        self.phase = Phase::Reconnecting { since, probing };
    }

    fn retry(&self) -> Action {
        Action::RetryAfter {
            generation: self.generation,
            ms: RETRY_MS,
        }
    }

    fn sign_out(&mut self) -> Vec<Action> {
        self.phase = Phase::SignedOut;
        vec![Action::Close, Action::SignIn]
    }

    /// Refused or signed out: nothing but another namespace or a new page
    /// opens a stream again.
    fn is_settled(&self) -> bool {
        matches!(self.phase, Phase::Refused | Phase::SignedOut)
    }

    fn is_probing(&self) -> bool {
        matches!(self.phase, Phase::Reconnecting { probing: true, .. })
    }
}

/// The generation of the action `input` answers; `None` for the page's own
/// inputs, which are always current.
fn answer_generation(input: &Input) -> Option<u64> {
    match input {
        Input::CouldNotOpen { generation, .. }
        | Input::Opened { generation }
        | Input::Delivered { generation }
        | Input::Failed { generation, .. }
        | Input::Probed { generation, .. }
        | Input::RetryDue { generation }
        | Input::Listed { generation, .. }
        | Input::Unauthorized { generation } => Some(*generation),
        Input::Chosen { .. } | Input::Disposed => None,
    }
}

#[cfg(test)]
mod tests;
