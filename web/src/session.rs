//! Who the server says you are (`/api/v1/session`) and what the page does
//! about it: the sign-in form when the API answers 401, the name and a
//! sign-out button in the header once signed in.
//!
//! The session itself is an HttpOnly cookie the browser keeps and sends on
//! every same-origin request (the event stream included); the page never
//! sees it. What it keeps here is only what the server answered.

use serde_json::Value;

/// How the server checks who you are, as it says in the session answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthMode {
    /// Tokens checked by the cluster (TokenReview).
    Kubernetes,
    /// One shared token given to the server.
    Token,
    /// No sign-in: everyone who reaches the server may read.
    None,
}

/// The server's answer to `GET` or `POST /api/v1/session`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Session {
    /// The user name, when the server has one (not with `auth: none`).
    pub user: Option<String>,
    pub groups: Vec<String>,
    pub auth: AuthMode,
}

impl Session {
    /// Reads the answer's JSON text.
    pub fn parse(text: &str) -> Result<Session, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| e.to_string())?;
        let auth = match value.get("auth").and_then(Value::as_str) {
            Some("kubernetes") => AuthMode::Kubernetes,
            Some("token") => AuthMode::Token,
            Some("none") => AuthMode::None,
            _ => return Err("the server's answer names no way of signing in".to_string()),
        };
        let user = value
            .get("user")
            .and_then(Value::as_str)
            .filter(|u| !u.is_empty())
            .map(str::to_string);
        let groups = value
            .get("groups")
            .and_then(Value::as_array)
            .map(|gs| {
                gs.iter()
                    .filter_map(|g| g.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Session { user, groups, auth })
    }
}

/// The `error` of an error answer (`{"error":"unauthorized"}`), if it has one.
fn error_text(body: &str) -> Option<String> {
    let value: Value = serde_json::from_str(body).ok()?;
    let text = value.get("error")?.as_str()?.trim();
    (!text.is_empty()).then(|| text.to_string())
}

/// What came of a sign-in (`POST /api/v1/session`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignInOutcome {
    SignedIn(Session),
    /// The server said no; its words, shown as they are.
    Rejected(String),
    /// No answer, or one the page cannot read.
    Failed(String),
}

impl SignInOutcome {
    /// The outcome of an HTTP answer with `status` and `body`.
    pub fn from_answer(status: u16, body: &str) -> SignInOutcome {
        if (200..300).contains(&status) {
            return match Session::parse(body) {
                Ok(session) => SignInOutcome::SignedIn(session),
                Err(e) => SignInOutcome::Failed(format!("unreadable answer from the server: {e}")),
            };
        }
        match error_text(body) {
            Some(text) => SignInOutcome::Rejected(text),
            None if status == 401 => SignInOutcome::Rejected("unauthorized".to_string()),
            None => SignInOutcome::Failed(format!("the server answered HTTP {status}")),
        }
    }
}

/// What the page knows about its sign-in.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub enum AuthState {
    /// Not known yet (or the server has no session routes): the dashboard
    /// is tried, and a 401 from it brings the form.
    #[default]
    Unknown,
    SignedIn(Session),
    /// The form shows, with a line of text under it when there is one.
    SignedOut {
        message: Option<String>,
    },
}

impl AuthState {
    /// The form shows instead of the dashboard.
    pub fn needs_sign_in(&self) -> bool {
        matches!(self, AuthState::SignedOut { .. })
    }

    /// The server's answer to `GET /api/v1/session`. An answer that is
    /// neither a session nor a 401 (a server without sessions answers 404)
    /// says nothing, and the dashboard's own requests decide.
    pub fn on_session_answer(&mut self, status: u16, body: &str) {
        if status == 401 {
            self.on_unauthorized();
        } else if (200..300).contains(&status) {
            if let Ok(session) = Session::parse(body) {
                *self = AuthState::SignedIn(session);
            }
        }
    }

    /// An API request answered 401: without a session, or it has ended
    /// (expired, or signed out in another tab).
    pub fn on_unauthorized(&mut self) {
        let message = match self {
            AuthState::SignedOut { message } => message.take(),
            AuthState::SignedIn(_) => {
                Some("Your session has ended. Sign in again to continue.".to_string())
            }
            AuthState::Unknown => None,
        };
        *self = AuthState::SignedOut { message };
    }

    pub fn on_sign_in(&mut self, outcome: SignInOutcome) {
        *self = match outcome {
            SignInOutcome::SignedIn(session) => AuthState::SignedIn(session),
            SignInOutcome::Rejected(text) => AuthState::SignedOut {
                message: Some(format!("Sign-in refused: {text}")),
            },
            SignInOutcome::Failed(text) => AuthState::SignedOut {
                message: Some(format!("Sign-in failed: {text}")),
            },
        };
    }

    /// The answer to `DELETE /api/v1/session`: `None` when none came.
    /// Either way the form shows; if the server did not confirm, it says so,
    /// because the cookie may still be valid.
    pub fn on_sign_out(&mut self, status: Option<u16>) {
        let confirmed = status.is_some_and(|s| (200..300).contains(&s) || s == 401);
        *self = AuthState::SignedOut {
            message: (!confirmed).then(|| {
                "The server did not confirm the sign-out; the session may still be valid."
                    .to_string()
            }),
        };
    }

    /// The header's "who am I" text, when there is a name to show.
    pub fn whoami(&self) -> Option<String> {
        match self {
            AuthState::SignedIn(Session {
                user: Some(user), ..
            }) => Some(user.clone()),
            _ => None,
        }
    }

    /// A sign-out button makes sense: signed in, to a server with sign-in.
    pub fn can_sign_out(&self) -> bool {
        matches!(self, AuthState::SignedIn(s) if s.auth != AuthMode::None)
    }

    /// The line under the form.
    pub fn message(&self) -> Option<String> {
        match self {
            AuthState::SignedOut { message } => message.clone(),
            _ => None,
        }
    }
}

/// How to get a token, from a 401 answer of `GET /api/v1/session`: with
/// `--auth kubernetes` it names the mode and the audience the server wants
/// (`{"error":"unauthorized","auth":"kubernetes","tokenAudience":…}`). The
/// text is shown as text.
pub fn token_hint(body: &str) -> Option<String> {
    let answer: serde_json::Value = serde_json::from_str(body).ok()?;
    if answer.get("auth").and_then(|a| a.as_str()) != Some("kubernetes") {
        return None;
    }
    let audience = answer
        .get("tokenAudience")
        .and_then(|a| a.as_str())
        .map(|a| format!(" --audience {a}"))
        .unwrap_or_default();
    Some(format!(
        "Paste a Kubernetes token, for example: kubectl create token SERVICE-ACCOUNT -n NAMESPACE{audience}"
    ))
}

/// The body of a sign-in request: the token as a JSON string, escaped.
pub fn sign_in_body(token: &str) -> String {
    serde_json::json!({ "token": token }).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    fn alice() -> Session {
        Session::parse(
            r#"{"user":"alice","groups":["team-a","system:authenticated"],"auth":"kubernetes"}"#,
        )
        .expect("valid")
    }

    #[test]
    #[wasm_bindgen_test]
    fn reads_a_session_answer() {
        let s = alice();
        assert_eq!(s.user.as_deref(), Some("alice"));
        assert_eq!(s.groups, ["team-a", "system:authenticated"]);
        assert_eq!(s.auth, AuthMode::Kubernetes);
        let anonymous =
            Session::parse(r#"{"user":null,"groups":[],"auth":"none"}"#).expect("valid");
        assert_eq!(anonymous.user, None);
        assert_eq!(anonymous.auth, AuthMode::None);
        let token = Session::parse(r#"{"user":"token","auth":"token"}"#).expect("valid");
        assert_eq!(token.auth, AuthMode::Token);
        assert!(token.groups.is_empty());
    }

    #[test]
    #[wasm_bindgen_test]
    fn an_answer_without_a_known_auth_mode_is_an_error() {
        assert!(Session::parse(r#"{"error":"unauthorized"}"#).is_err());
        assert!(Session::parse(r#"{"user":"a","auth":"magic"}"#).is_err());
        assert!(Session::parse("<html>").is_err());
    }

    #[test]
    #[wasm_bindgen_test]
    fn sign_in_outcomes() {
        let ok = SignInOutcome::from_answer(
            200,
            r#"{"user":"alice","groups":["team-a"],"auth":"token"}"#,
        );
        assert!(
            matches!(ok, SignInOutcome::SignedIn(Session { ref user, .. }) if user.as_deref() == Some("alice"))
        );
        // The server's words, markup and all: the page shows them as text.
        assert_eq!(
            SignInOutcome::from_answer(401, r#"{"error":"bad token <b>x</b>"}"#),
            SignInOutcome::Rejected("bad token <b>x</b>".to_string())
        );
        assert_eq!(
            SignInOutcome::from_answer(401, ""),
            SignInOutcome::Rejected("unauthorized".to_string())
        );
        assert_eq!(
            SignInOutcome::from_answer(403, r#"{"error":"forbidden"}"#),
            SignInOutcome::Rejected("forbidden".to_string())
        );
        assert!(matches!(
            SignInOutcome::from_answer(502, "Bad Gateway"),
            SignInOutcome::Failed(t) if t.contains("502")
        ));
        assert!(matches!(
            SignInOutcome::from_answer(200, "not json"),
            SignInOutcome::Failed(_)
        ));
    }

    #[test]
    #[wasm_bindgen_test]
    fn the_form_shows_on_401_and_says_why_only_when_a_session_ended() {
        let mut state = AuthState::default();
        assert!(!state.needs_sign_in(), "the dashboard is tried first");
        state.on_unauthorized();
        assert!(state.needs_sign_in());
        assert_eq!(state.message(), None, "a first visit is not an error");

        let mut state = AuthState::SignedIn(alice());
        state.on_unauthorized();
        assert!(state.needs_sign_in());
        assert!(state.message().is_some_and(|m| m.contains("ended")));
        // A second 401 (the stream and a fetch both noticed) keeps the line.
        state.on_unauthorized();
        assert!(state.message().is_some_and(|m| m.contains("ended")));
    }

    #[test]
    #[wasm_bindgen_test]
    fn a_kubernetes_401_says_how_to_mint_a_token_with_the_audience() {
        assert_eq!(
            token_hint(r#"{"error":"unauthorized","auth":"kubernetes","tokenAudience":"dispatch-dash"}"#)
                .as_deref(),
            Some("Paste a Kubernetes token, for example: kubectl create token SERVICE-ACCOUNT -n NAMESPACE --audience dispatch-dash")
        );
        let plain =
            token_hint(r#"{"error":"unauthorized","auth":"kubernetes","tokenAudience":null}"#)
                .expect("a hint");
        assert!(plain.ends_with("-n NAMESPACE"), "{plain}");
        assert_eq!(
            token_hint(r#"{"error":"unauthorized","auth":"token"}"#),
            None
        );
        assert_eq!(token_hint(r#"{"error":"unauthorized"}"#), None);
        assert_eq!(token_hint("not json"), None);
    }

    #[test]
    #[wasm_bindgen_test]
    fn the_session_answer_decides_only_when_it_is_one() {
        let mut state = AuthState::default();
        state.on_session_answer(404, "");
        assert_eq!(state, AuthState::Unknown, "a server without sessions");
        state.on_session_answer(200, r#"{"user":"alice","groups":[],"auth":"token"}"#);
        assert_eq!(state.whoami().as_deref(), Some("alice"));
        assert!(state.can_sign_out());
        state.on_session_answer(401, r#"{"error":"unauthorized"}"#);
        assert!(state.needs_sign_in());
        assert_eq!(state.whoami(), None);
        assert!(!state.can_sign_out());
    }

    #[test]
    #[wasm_bindgen_test]
    fn signing_in_and_out() {
        let mut state = AuthState::SignedOut { message: None };
        state.on_sign_in(SignInOutcome::Rejected("bad token <b>x</b>".into()));
        assert!(state.needs_sign_in());
        assert_eq!(
            state.message().as_deref(),
            Some("Sign-in refused: bad token <b>x</b>")
        );
        state.on_sign_in(SignInOutcome::Failed("cannot reach the server".into()));
        assert!(state.message().is_some_and(|m| m.contains("cannot reach")));
        state.on_sign_in(SignInOutcome::SignedIn(alice()));
        assert!(!state.needs_sign_in());
        assert_eq!(state.message(), None);
        assert_eq!(state.whoami().as_deref(), Some("alice"));

        state.on_sign_out(Some(204));
        assert_eq!(state, AuthState::SignedOut { message: None });
        let mut state = AuthState::SignedIn(alice());
        state.on_sign_out(None);
        assert!(state.needs_sign_in());
        assert!(state
            .message()
            .is_some_and(|m| m.contains("may still be valid")));
    }

    #[test]
    #[wasm_bindgen_test]
    fn no_name_and_no_sign_out_without_sign_in() {
        let none = AuthState::SignedIn(
            Session::parse(r#"{"user":null,"groups":[],"auth":"none"}"#).expect("valid"),
        );
        assert_eq!(none.whoami(), None, "a null user shows nothing");
        assert!(!none.can_sign_out(), "nothing to sign out of");
        let nameless = AuthState::SignedIn(
            Session::parse(r#"{"user":null,"groups":[],"auth":"token"}"#).expect("valid"),
        );
        assert_eq!(nameless.whoami(), None);
        assert!(nameless.can_sign_out());
    }

    #[test]
    #[wasm_bindgen_test]
    fn the_sign_in_body_escapes_the_token() {
        let body = sign_in_body(r#"a"b\c"#);
        let back: Value = serde_json::from_str(&body).expect("JSON");
        assert_eq!(back["token"], r#"a"b\c"#);
    }
}
