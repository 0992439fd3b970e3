//! What the live page does when its namespace's event stream fails.
//!
//! An `EventSource` does not tell the status of a refused request, so the
//! page asks the same URL again (a probe that reads only the status) and
//! decides here: a 401 brings the sign-in form; a 403 means the signed-in
//! user may not see this namespace, which retrying cannot change, so the
//! page stops and says so as text, offering the namespaces they may see
//! (`GET /api/v1/namespaces`); anything else (no answer, a 5xx, a server
//! restarting) is retried.

/// What to do about a failed stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NextStep {
    /// Open a new stream after a while.
    Retry,
    /// Show the sign-in form (no session, or it ended).
    SignIn,
    /// Stop: the namespace is refused to this user.
    Stop,
}

/// A namespace refused to the signed-in user.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Denied {
    /// The namespace asked for.
    pub namespace: String,
    /// The namespaces the server lists for them now; `None` until that
    /// answer came (or when it could not be had).
    pub visible: Option<Vec<String>>,
}

impl Denied {
    /// The sentence the page shows; `user` is who the page is signed in
    /// as now (the session answer may come after the refusal).
    pub fn message(&self, user: Option<&str>) -> String {
        let who = match user {
            Some(user) => format!("The signed-in user {user}"),
            None => "The signed-in user".to_string(),
        };
        format!("{who} may not see namespace {}.", self.namespace)
    }

    /// The namespaces to offer instead (the refused one never among them).
    pub fn offers(&self) -> Vec<String> {
        self.visible
            .iter()
            .flatten()
            .filter(|ns| **ns != self.namespace)
            .cloned()
            .collect()
    }

    /// The line above the offers.
    pub fn offer_text(&self) -> String {
        match &self.visible {
            None => "Looking up the namespaces you may see…".to_string(),
            Some(_) if !self.offers().is_empty() => "Namespaces you may see:".to_string(),
            Some(_) => "You may not see any namespace here. Seeing one takes permission to list \
                        TrainJobs and pods in it; ask your cluster's administrator."
                .to_string(),
        }
    }
}

/// The live page's stream access: fine, or refused for one namespace.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NamespaceAccess {
    denied: Option<Denied>,
}

impl NamespaceAccess {
    /// The stream of `namespace` failed and the probe of its URL answered
    /// `status` (`None`: no answer).
    pub fn on_stream_failed(&mut self, namespace: &str, status: Option<u16>) -> NextStep {
        match status {
            Some(401) => {
                self.denied = None;
                NextStep::SignIn
            }
            Some(403) => {
                self.denied = Some(Denied {
                    namespace: namespace.to_string(),
                    visible: None,
                });
                NextStep::Stop
            }
            _ => NextStep::Retry,
        }
    }

    /// The namespaces the server lists for the user now (asked once the
    /// stream was refused; `None`: the list could not be had).
    pub fn on_namespaces(&mut self, visible: Option<Vec<String>>) {
        if let Some(denied) = &mut self.denied {
            denied.visible = Some(visible.unwrap_or_default());
        }
    }

    /// Another namespace is shown: it gets its own chance.
    pub fn on_namespace_chosen(&mut self) {
        self.denied = None;
    }

    /// The refusal to show, if any.
    pub fn denied(&self) -> Option<&Denied> {
        self.denied.as_ref()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[test]
    #[wasm_bindgen_test]
    fn a_403_stops_and_names_the_user_and_the_namespace() {
        let mut access = NamespaceAccess::default();
        let next = access.on_stream_failed("team-b", Some(403));
        assert_eq!(next, NextStep::Stop);
        let denied = access.denied().expect("refused");
        assert_eq!(
            denied.message(Some("alice")),
            "The signed-in user alice may not see namespace team-b."
        );
        assert!(denied.offers().is_empty());
        assert!(denied.offer_text().contains("Looking up"));
        access.on_namespaces(Some(vec!["team-a".into(), "team-c".into()]));
        let denied = access.denied().expect("still refused");
        assert_eq!(denied.offers(), ["team-a", "team-c"]);
        assert_eq!(denied.offer_text(), "Namespaces you may see:");
    }

    #[test]
    #[wasm_bindgen_test]
    fn a_401_signs_in_and_anything_else_retries() {
        let mut access = NamespaceAccess::default();
        assert_eq!(
            access.on_stream_failed("team-a", Some(401)),
            NextStep::SignIn
        );
        assert_eq!(access.denied(), None, "a sign-in is not a refusal");
        for status in [None, Some(500), Some(502), Some(503), Some(200)] {
            assert_eq!(
                access.on_stream_failed("team-a", status),
                NextStep::Retry,
                "{status:?}"
            );
            assert_eq!(access.denied(), None);
        }
    }

    #[test]
    #[wasm_bindgen_test]
    fn no_namespace_to_offer_says_what_seeing_one_takes() {
        let mut access = NamespaceAccess::default();
        access.on_stream_failed("team-a", Some(403));
        // The list still names the refused one (it was revoked a moment
        // ago): it is not offered.
        access.on_namespaces(Some(vec!["team-a".into()]));
        let denied = access.denied().expect("refused");
        assert_eq!(
            denied.message(None),
            "The signed-in user may not see namespace team-a.",
            "no name yet"
        );
        assert!(denied.offers().is_empty());
        assert!(denied.offer_text().contains("list TrainJobs and pods"));
        let mut access = NamespaceAccess::default();
        access.on_stream_failed("team-a", Some(403));
        access.on_namespaces(None);
        assert!(access
            .denied()
            .is_some_and(|d| d.offer_text().contains("may not see any")));
    }

    #[test]
    #[wasm_bindgen_test]
    fn choosing_another_namespace_clears_the_refusal_and_late_lists_are_ignored() {
        let mut access = NamespaceAccess::default();
        access.on_stream_failed("team-b", Some(403));
        access.on_namespace_chosen();
        assert_eq!(access.denied(), None);
        access.on_namespaces(Some(vec!["team-a".into()]));
        assert_eq!(
            access.denied(),
            None,
            "a list without a refusal shows nothing"
        );
    }
}
