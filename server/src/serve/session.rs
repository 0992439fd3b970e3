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

impl Session {
    /// What a session holds in memory: its id, its token and the map's
    /// bookkeeping. A token comes from a bounded body or header, but ten
    /// thousand 16 KiB tokens would still be 160 MiB, so bytes are bounded
    /// too.
    fn weight(&self, id: &str) -> usize {
        id.len() + self.token.expose().len() + std::mem::size_of::<(String, Session)>()
    }
}

#[derive(Default)]
struct Sessions {
    by_id: HashMap<String, Session>,
    bytes: usize,
}

impl Sessions {
    fn remove(&mut self, id: &str) -> Option<Session> {
        let session = self.by_id.remove(id)?;
        self.bytes = self.bytes.saturating_sub(session.weight(id));
        Some(session)
    }

    fn retain_unexpired(&mut self, now: Instant, idle_timeout: Duration) {
        let mut bytes = 0;
        self.by_id.retain(|id, s| {
            let keep = now.saturating_duration_since(s.last_used) < idle_timeout;
            if keep {
                bytes += s.weight(id);
            }
            keep
        });
        self.bytes = bytes;
    }

    fn remove_longest_idle(&mut self) -> bool {
        let oldest = self
            .by_id
            .iter()
            .min_by_key(|(_, s)| s.last_used)
            .map(|(id, _)| id.clone());
        oldest.is_some_and(|id| self.remove(&id).is_some())
    }
}

/// The sessions, bounded in number, bytes and idle time. Its `Debug` shows
/// how many there are: a session id is as good as its token.
pub struct SessionStore {
    sessions: Mutex<Sessions>,
    idle_timeout: Duration,
    max_sessions: usize,
    max_bytes: usize,
}

impl std::fmt::Debug for SessionStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SessionStore")
            .field("sessions", &self.len())
            .field("idle_timeout", &self.idle_timeout)
            .field("max_sessions", &self.max_sessions)
            .field("max_bytes", &self.max_bytes)
            .finish()
    }
}

impl SessionStore {
    /// A store whose sessions end after `idle_timeout` unused, holding at
    /// most `max_sessions` and `max_bytes` (see `Session::weight`).
    pub fn new(idle_timeout: Duration, max_sessions: usize, max_bytes: usize) -> Self {
        SessionStore {
            sessions: Mutex::new(Sessions::default()),
            idle_timeout,
            max_sessions: max_sessions.max(1),
            max_bytes,
        }
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, Sessions> {
        self.sessions.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Opens a session for `token` and returns its id; past a bound the
    /// expired sessions go, then the longest idle ones.
    pub fn create(&self, token: &str, now: Instant) -> Result<String, Error> {
        let id = new_session_id()?;
        let session = Session {
            token: Secret::from(token),
            last_used: now,
        };
        let weight = session.weight(&id);
        let mut sessions = self.sessions();
        let full =
            |s: &Sessions| s.by_id.len() >= self.max_sessions || s.bytes + weight > self.max_bytes;
        if full(&sessions) {
            sessions.retain_unexpired(now, self.idle_timeout);
            while full(&sessions) && sessions.remove_longest_idle() {}
        }
        sessions.bytes += weight;
        sessions.by_id.insert(id.clone(), session);
        Ok(id)
    }

    /// The token of session `id`, marking it used; `None` when there is no
    /// such session or it was idle too long (it is then removed).
    pub fn token(&self, id: &str, now: Instant) -> Option<Secret> {
        let mut sessions = self.sessions();
        let session = sessions.by_id.get_mut(id)?;
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
        let mut sessions = self.sessions();
        let before = sessions.by_id.len();
        sessions.retain_unexpired(now, self.idle_timeout);
        before - sessions.by_id.len()
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
        self.sessions().by_id.len()
    }

    /// Bytes the sessions hold now (see `Session::weight`).
    pub fn bytes(&self) -> usize {
        self.sessions().bytes
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
        let store = SessionStore::new(Duration::from_secs(100), 10, 1 << 20);
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
        let store = SessionStore::new(Duration::from_secs(100), 10, 1 << 20);
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
            SessionStore::new(Duration::from_secs(8 * 3600), 1, 1 << 20).purge_interval(),
            Duration::from_secs(60)
        );
    }

    #[test]
    fn sessions_are_capped_and_the_longest_idle_goes() {
        let store = SessionStore::new(Duration::from_secs(1000), 2, 1 << 20);
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
    fn sessions_are_bounded_in_bytes_and_the_longest_idle_goes() {
        let token = "t".repeat(16 * 1024);
        let one = Session {
            token: Secret::from(token.as_str()),
            last_used: Instant::now(),
        }
        .weight(&"0".repeat(64));
        let store = SessionStore::new(Duration::from_secs(1000), 10_000, 3 * one);
        let t0 = Instant::now();
        let at = |s| t0 + Duration::from_secs(s);
        let ids: Vec<String> = (0..10)
            .map(|i| store.create(&token, at(i)).expect("id"))
            .collect();
        assert_eq!(store.len(), 3, "three 16 KiB tokens fill the bytes");
        assert!(store.bytes() <= 3 * one, "{} > {}", store.bytes(), 3 * one);
        assert!(store.token(&ids[6], at(20)).is_none(), "older ones went");
        assert!(store.token(&ids[9], at(20)).is_some(), "the newest stays");
        store.remove(&ids[9]);
        assert_eq!(store.bytes(), 2 * one, "removal gives its bytes back");
        assert_eq!(store.purge_expired(at(5000)), 2);
        assert_eq!(store.bytes(), 0);
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
