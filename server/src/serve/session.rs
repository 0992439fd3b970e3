//! Browser sessions: `POST /api/v1/session` trades a token for a cookie
//! (`dd_session`) naming a session that lives here, in memory. The cookie
//! holds only a random id (32 bytes from the OS, hex); the session keeps
//! the token so every request re-reviews it (through the auth caches), and
//! a token the cluster stops accepting ends the session's use at once.
//!
//! Sessions end after [`SessionStore`]'s idle timeout, on sign-out, and,
//! past the cap in number, the longest idle goes first.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::auth::Secret;

/// The session cookie's name.
pub const COOKIE: &str = "dd_session";

/// Errors of the session store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The OS gave no random bytes.
    #[error("no randomness from the operating system: {0}")]
    Random(getrandom::Error),
}

/// One signed-in browser (its `Debug` redacts the token).
#[derive(Debug, Clone)]
struct Session {
    token: Secret,
    last_used: Instant,
}

/// The sessions, bounded in number and idle time. Its `Debug` shows how
/// many there are: a session id is as good as its token.
pub struct SessionStore {
    sessions: Mutex<HashMap<String, Session>>,
    idle_timeout: Duration,
    max_sessions: usize,
}

impl std::fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore")
            .field("sessions", &self.len())
            .field("idle_timeout", &self.idle_timeout)
            .field("max_sessions", &self.max_sessions)
            .finish()
    }
}

impl SessionStore {
    /// A store whose sessions end after `idle_timeout` unused, holding at
    /// most `max_sessions`.
    pub fn new(idle_timeout: Duration, max_sessions: usize) -> Self {
        SessionStore {
            sessions: Mutex::new(HashMap::new()),
            idle_timeout,
            max_sessions: max_sessions.max(1),
        }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<String, Session>> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens a session for `token` and returns its id.
    pub fn create(&self, token: &str, now: Instant) -> Result<String, Error> {
        let id = new_session_id()?;
        let mut sessions = self.sessions();
        if sessions.len() >= self.max_sessions {
            let idle_timeout = self.idle_timeout;
            sessions.retain(|_, s| now.saturating_duration_since(s.last_used) < idle_timeout);
            while sessions.len() >= self.max_sessions {
                let oldest = sessions
                    .iter()
                    .min_by_key(|(_, s)| s.last_used)
                    .map(|(id, _)| id.clone());
                match oldest {
                    Some(oldest) => sessions.remove(&oldest),
                    None => break,
                };
            }
        }
        sessions.insert(
            id.clone(),
            Session {
                token: Secret::from(token),
                last_used: now,
            },
        );
        Ok(id)
    }

    /// The token of session `id`, marking it used; `None` when there is no
    /// such session or it was idle too long (it is then removed).
    pub fn token(&self, id: &str, now: Instant) -> Option<Secret> {
        let mut sessions = self.sessions();
        let session = sessions.get_mut(id)?;
        if now.saturating_duration_since(session.last_used) >= self.idle_timeout {
            sessions.remove(id);
            return None;
        }
        session.last_used = now;
        Some(session.token.clone())
    }

    /// Ends every session idle for the timeout, so their tokens leave
    /// memory without waiting to be looked up; returns how many ended.
    pub fn purge_expired(&self, now: Instant) -> usize {
        let idle_timeout = self.idle_timeout;
        let mut sessions = self.sessions();
        let before = sessions.len();
        sessions.retain(|_, s| now.saturating_duration_since(s.last_used) < idle_timeout);
        before - sessions.len()
    }

    /// How often [`SessionStore::purge_expired`] should run: a tenth of
    /// the idle timeout, between a second and a minute.
    pub fn purge_interval(&self) -> Duration {
        (self.idle_timeout / 10).clamp(Duration::from_secs(1), Duration::from_secs(60))
    }

    /// Ends session `id` (sign-out, or its token was rejected).
    pub fn remove(&self, id: &str) {
        self.sessions().remove(id);
    }

    /// Sessions held now.
    pub fn len(&self) -> usize {
        self.sessions().len()
    }

    /// Whether no session is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// 32 random bytes from the OS, as 64 hex digits.
fn new_session_id() -> Result<String, Error> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(Error::Random)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The `Set-Cookie` value that opens session `id`.
pub fn set_cookie(id: &str, secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}={id}; HttpOnly; SameSite=Strict; Path=/{secure}")
}

/// The `Set-Cookie` value that makes the browser forget the session.
pub fn clear_cookie(secure: bool) -> String {
    let secure = if secure { "; Secure" } else { "" };
    format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0{secure}")
}

/// The session id in `Cookie` header values, if any.
pub fn session_id<'a>(cookie_headers: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    cookie_headers
        .flat_map(|h| h.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE)
        .map(|(_, value)| value.trim())
        .filter(|v| !v.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_lives_while_used_and_ends_when_idle() {
        let store = SessionStore::new(Duration::from_secs(100), 10);
        let t0 = Instant::now();
        let id = store.create("tok", t0).expect("id");
        assert_eq!(id.len(), 64);
        assert!(id.bytes().all(|b| b.is_ascii_hexdigit()));
        let at = |s| t0 + Duration::from_secs(s);
        assert_eq!(
            store.token(&id, at(99)).as_ref().map(Secret::expose),
            Some("tok")
        );
        assert_eq!(
            store.token(&id, at(198)).as_ref().map(Secret::expose),
            Some("tok"),
            "use renews it"
        );
        assert_eq!(store.token(&id, at(298)), None, "100 s idle ends it");
        assert!(store.is_empty(), "an expired session is removed");
        assert_eq!(store.token("unknown", t0), None);
    }

    #[test]
    fn expired_sessions_are_purged_without_a_lookup_and_tokens_never_print() {
        let store = SessionStore::new(Duration::from_secs(100), 10);
        let t0 = Instant::now();
        let old = store.create("old-s3cret", t0).expect("id");
        let fresh = store
            .create("fresh-s3cret", t0 + Duration::from_secs(50))
            .expect("id");
        assert!(!format!("{store:?}").contains("s3cret"), "{store:?}");
        assert_eq!(store.purge_expired(t0 + Duration::from_secs(99)), 0);
        assert_eq!(store.purge_expired(t0 + Duration::from_secs(100)), 1);
        assert_eq!(store.len(), 1);
        assert!(store.token(&old, t0 + Duration::from_secs(101)).is_none());
        assert!(store.token(&fresh, t0 + Duration::from_secs(101)).is_some());
        assert_eq!(store.purge_interval(), Duration::from_secs(10));
        assert_eq!(
            SessionStore::new(Duration::from_secs(8 * 3600), 1).purge_interval(),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn sessions_are_capped_and_the_longest_idle_goes() {
        let store = SessionStore::new(Duration::from_secs(1000), 2);
        let t0 = Instant::now();
        let at = |s| t0 + Duration::from_secs(s);
        let a = store.create("a", at(0)).expect("id");
        let b = store.create("b", at(1)).expect("id");
        assert_ne!(a, b, "ids are random");
        store.token(&a, at(2));
        let c = store.create("c", at(3)).expect("id");
        assert_eq!(store.len(), 2);
        assert_eq!(store.token(&b, at(4)), None, "b was idle longest");
        assert!(store.token(&a, at(4)).is_some());
        assert!(store.token(&c, at(4)).is_some());
        store.remove(&a);
        assert_eq!(store.token(&a, at(5)), None, "signed out");
    }

    #[test]
    fn cookies_carry_the_attributes() {
        assert_eq!(
            set_cookie("ab12", false),
            "dd_session=ab12; HttpOnly; SameSite=Strict; Path=/"
        );
        assert_eq!(
            set_cookie("ab12", true),
            "dd_session=ab12; HttpOnly; SameSite=Strict; Path=/; Secure"
        );
        assert!(clear_cookie(false).contains("Max-Age=0"));
        assert!(clear_cookie(false).starts_with("dd_session=;"));
    }

    #[test]
    fn the_session_id_is_found_among_cookies() {
        let headers = ["theme=dark; dd_session=abc123", "other=1"];
        assert_eq!(session_id(headers.iter().copied()), Some("abc123"));
        assert_eq!(session_id(["dd_session_x=1"].iter().copied()), None);
        assert_eq!(session_id(["dd_session="].iter().copied()), None);
        assert_eq!(session_id(std::iter::empty()), None);
    }
}
