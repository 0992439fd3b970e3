//! Sign-in: the form shown instead of the dashboard when the API answers
//! 401, and the header's name and sign-out button. The state and its rules
//! are `crate::session::AuthState`; this only talks to the server and shows
//! it. Everything the server says is rendered as text.

use leptos::prelude::*;

use super::net::request;
use crate::session::{sign_in_body, token_hint, AuthState, SignInOutcome};

const SESSION_URL: &str = "/api/v1/session";

/// The page's sign-in state, shared through the context.
#[derive(Clone, Copy)]
pub struct Auth {
    pub state: RwSignal<AuthState>,
    /// How to mint a token, when the server said (`token_hint`).
    hint: RwSignal<Option<String>>,
    asked: StoredValue<bool>,
}

impl Auth {
    pub fn new() -> Auth {
        Auth {
            state: RwSignal::new(AuthState::default()),
            hint: RwSignal::new(None),
            asked: StoredValue::new(false),
        }
    }

    /// An API request (a fetch, or the probe after the stream failed)
    /// answered 401.
    pub fn unauthorized(self) {
        self.state.update(AuthState::on_unauthorized);
    }

    /// Asks the server once who the page is signed in as, for the header.
    /// Only the live page calls it: the offline page makes no request.
    pub fn ask_once(self) {
        if self.asked.get_value() {
            return;
        }
        self.asked.set_value(true);
        leptos::task::spawn_local(async move {
            // No answer says nothing: the dashboard's own requests decide.
            if let Ok(answer) = request("GET", SESSION_URL, None).await {
                if answer.status == 401 {
                    self.hint.set(token_hint(&answer.body));
                }
                self.state
                    .update(|s| s.on_session_answer(answer.status, &answer.body));
            }
        });
    }
}

/// The form: one password field, Enter submits.
#[component]
pub fn SignIn() -> impl IntoView {
    let auth = expect_context::<Auth>();
    let token = NodeRef::<leptos::html::Input>::new();
    let pending = RwSignal::new(false);
    let message = Memo::new(move |_| auth.state.with(AuthState::message));
    let submit = move |ev: leptos::ev::SubmitEvent| {
        ev.prevent_default();
        if pending.get_untracked() {
            return;
        }
        let Some(input) = token.get_untracked() else {
            return;
        };
        let secret = input.value();
        pending.set(true);
        leptos::task::spawn_local(async move {
            let outcome = match request("POST", SESSION_URL, Some(&sign_in_body(&secret))).await {
                Ok(answer) => SignInOutcome::from_answer(answer.status, &answer.body),
                Err(e) => SignInOutcome::Failed(e),
            };
            // The secret does not stay in the page, whatever the outcome;
            // this form goes away on success, so it is reset first.
            input.set_value("");
            pending.try_set(false);
            auth.state.try_update(|s| s.on_sign_in(outcome));
        });
    };
    Effect::new(move |_| {
        if let Some(input) = token.get() {
            let _ = input.focus();
        }
    });
    view! {
        <form id="signin" class="signin" on:submit=submit>
            <h2>"Sign in"</h2>
            <p class="muted">"This server asks who you are before it shows the cluster."</p>
            <p id="signin-hint" class="muted">{move || auth.hint.get().unwrap_or_default()}</p>
            <label for="token">"Token"</label>
            <input id="token" name="token" type="password" autocomplete="current-password"
                required=true node_ref=token />
            <button type="submit" class="primary" disabled=move || pending.get()>"Sign in"</button>
            <p id="signin-error" class="error" role="alert">{move || message.get().unwrap_or_default()}</p>
        </form>
    }
}

/// The header's part: who you are, and a way out.
#[component]
pub fn WhoAmI() -> impl IntoView {
    let auth = expect_context::<Auth>();
    let name = Memo::new(move |_| auth.state.with(AuthState::whoami));
    let can_sign_out = Memo::new(move |_| auth.state.with(AuthState::can_sign_out));
    let pending = RwSignal::new(false);
    let sign_out = move |_| {
        pending.set(true);
        leptos::task::spawn_local(async move {
            let status = request("DELETE", SESSION_URL, None)
                .await
                .ok()
                .map(|a| a.status);
            pending.try_set(false);
            auth.state.try_update(|s| s.on_sign_out(status));
        });
    };
    view! {
        <div class="session">
            {move || name.get().map(|n| view! {
                <span class="muted">"Signed in as "</span><span id="whoami">{n}</span>
            })}
            {move || can_sign_out.get().then(|| view! {
                <button id="signout" on:click=sign_out disabled=move || pending.get()>"Sign out"</button>
            })}
        </div>
    }
}
