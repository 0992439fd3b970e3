//! The view state, all of it in the URL: which page, which namespace, the
//! filters and the object explained. `ViewState::to_url` and
//! `ViewState::from_url` are inverse, so a link reproduces the view.

use std::collections::BTreeSet;

use classify_wasm::{CauseKind, Observation, State};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Page {
    #[default]
    Dashboard,
    Explain,
    Offline,
    /// Under Kueue: the namespace's LocalQueues and their ClusterQueues.
    Queues,
}

impl Page {
    pub fn path(self) -> &'static str {
        match self {
            Page::Dashboard => "/",
            Page::Explain => "/explain",
            Page::Offline => "/offline",
            Page::Queues => "/queues",
        }
    }
}

/// The table's filters.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Filter {
    /// Shown states; empty means all.
    pub states: BTreeSet<State>,
    /// Shown causes; empty means all.
    pub causes: BTreeSet<CauseKind>,
    pub held: Option<bool>,
    pub foreign: Option<bool>,
    /// Matched, case-insensitively, against job, submission, name and detail.
    pub text: String,
}

impl Filter {
    pub fn is_empty(&self) -> bool {
        *self == Filter::default()
    }

    pub fn matches(&self, o: &Observation) -> bool {
        if !self.states.is_empty() && !self.states.contains(&o.state) {
            return false;
        }
        if !self.causes.is_empty() && !self.causes.contains(&o.cause.kind) {
            return false;
        }
        if self.held.is_some_and(|h| h != o.held) {
            return false;
        }
        if self.foreign.is_some_and(|f| f != o.foreign) {
            return false;
        }
        let text = self.text.trim();
        if !text.is_empty() {
            let needle = text.to_lowercase();
            let hay = [
                o.job.as_str(),
                o.submission.as_str(),
                o.object.name.as_str(),
                o.object.kind.as_str(),
                o.cause.detail.as_str(),
            ];
            if !hay.iter().any(|h| h.to_lowercase().contains(&needle)) {
                return false;
            }
        }
        true
    }

    /// Toggles one state in or out of the filter (a click on the bar).
    pub fn toggle_state(&mut self, s: State) {
        if !self.states.remove(&s) {
            self.states.insert(s);
        }
    }

    pub fn toggle_cause(&mut self, c: CauseKind) {
        if !self.causes.remove(&c) {
            self.causes.insert(c);
        }
    }
}

/// The whole view.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ViewState {
    pub page: Page,
    pub namespace: Option<String>,
    pub filter: Filter,
    /// The object explained: kind and name (in `namespace`).
    pub target: Option<(String, String)>,
}

pub fn state_from(s: &str) -> Option<State> {
    State::ALL.into_iter().find(|x| x.as_str() == s)
}

pub fn cause_from(s: &str) -> Option<CauseKind> {
    CauseKind::ALL.into_iter().find(|x| x.as_str() == s)
}

fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

fn parse_yes_no(s: &str) -> Option<bool> {
    match s {
        "yes" => Some(true),
        "no" => Some(false),
        _ => None,
    }
}

/// Percent-encodes a query value (everything but unreserved characters).
pub fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// Decodes a query value (`+` is a space); bad escapes are kept as text.
pub fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while let Some(&byte) = bytes.get(i) {
        match byte {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = bytes
                    .get(i + 1..i + 3)
                    .and_then(|h| std::str::from_utf8(h).ok());
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(v) => {
                        out.push(v);
                        i += 2;
                    }
                    None => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl ViewState {
    /// Reads a path and query string (`?` optional).
    pub fn from_url(path: &str, query: &str) -> ViewState {
        let page = match path.trim_end_matches('/') {
            "/explain" => Page::Explain,
            "/offline" => Page::Offline,
            "/queues" => Page::Queues,
            _ => Page::Dashboard,
        };
        let mut v = ViewState {
            page,
            ..ViewState::default()
        };
        let mut kind = None;
        let mut name = None;
        for pair in query.trim_start_matches('?').split('&') {
            if pair.is_empty() {
                continue;
            }
            let (k, val) = pair.split_once('=').unwrap_or((pair, ""));
            let val = decode(val);
            match k {
                "ns" if !val.is_empty() => v.namespace = Some(val),
                "state" => v
                    .filter
                    .states
                    .extend(val.split(',').filter_map(state_from)),
                "cause" => v
                    .filter
                    .causes
                    .extend(val.split(',').filter_map(cause_from)),
                "held" => v.filter.held = parse_yes_no(&val),
                "foreign" => v.filter.foreign = parse_yes_no(&val),
                "q" => v.filter.text = val,
                "kind" if !val.is_empty() => kind = Some(val),
                "name" if !val.is_empty() => name = Some(val),
                _ => {}
            }
        }
        if let (Some(k), Some(n)) = (kind, name) {
            v.target = Some((k, n));
        }
        v
    }

    /// The query string, starting with `?` (or empty).
    pub fn query(&self) -> String {
        let mut parts: Vec<String> = Vec::new();
        if let Some(ns) = &self.namespace {
            parts.push(format!("ns={}", encode(ns)));
        }
        if !self.filter.states.is_empty() {
            let s: Vec<&str> = self.filter.states.iter().map(|s| s.as_str()).collect();
            parts.push(format!("state={}", s.join(",")));
        }
        if !self.filter.causes.is_empty() {
            let s: Vec<&str> = self.filter.causes.iter().map(|s| s.as_str()).collect();
            parts.push(format!("cause={}", s.join(",")));
        }
        if let Some(h) = self.filter.held {
            parts.push(format!("held={}", yes_no(h)));
        }
        if let Some(f) = self.filter.foreign {
            parts.push(format!("foreign={}", yes_no(f)));
        }
        if !self.filter.text.is_empty() {
            parts.push(format!("q={}", encode(&self.filter.text)));
        }
        if let Some((k, n)) = &self.target {
            parts.push(format!("kind={}", encode(k)));
            parts.push(format!("name={}", encode(n)));
        }
        if parts.is_empty() {
            String::new()
        } else {
            format!("?{}", parts.join("&"))
        }
    }

    pub fn to_url(&self) -> String {
        format!("{}{}", self.page.path(), self.query())
    }

    /// The explanation URL of an object, keeping the rest of the view.
    pub fn explaining(&self, kind: &str, name: &str) -> ViewState {
        let mut v = self.clone();
        if v.page != Page::Offline {
            v.page = Page::Explain;
        }

        v.target = Some((kind.to_string(), name.to_string()));
        v
    }

    /// Back to the table from an explanation.
    pub fn table(&self) -> ViewState {
        let mut v = self.clone();
        if v.page == Page::Explain {
            v.page = Page::Dashboard;
        }
        v.target = None;
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use wasm_bindgen_test::wasm_bindgen_test;

    #[test]
    #[wasm_bindgen_test]
    fn the_queues_page_has_its_path_and_opens_an_explanation() {
        let v = ViewState::from_url("/queues", "?ns=team-a");
        assert_eq!(
            (v.page, v.namespace.as_deref()),
            (Page::Queues, Some("team-a"))
        );
        assert_eq!(v.to_url(), "/queues?ns=team-a");
        let e = v.explaining("TrainJob", "llm-7");
        assert_eq!(e.page, Page::Explain);
        assert_eq!(e.to_url(), "/explain?ns=team-a&kind=TrainJob&name=llm-7");
    }

    #[test]
    #[wasm_bindgen_test]
    fn round_trip() {
        let mut v = ViewState {
            page: Page::Explain,
            namespace: Some("team a/é".into()),
            ..ViewState::default()
        };
        v.filter.states.insert(State::Running);
        v.filter.states.insert(State::Ended);
        v.filter.causes.insert(CauseKind::OutOfMemory);
        v.filter.held = Some(false);
        v.filter.foreign = Some(true);
        v.filter.text = "llm 7&x=%".into();
        v.target = Some(("TrainJob".into(), "llm-7-s3".into()));
        let url = v.to_url();
        let (path, query) = url.split_once('?').unwrap();
        assert_eq!(ViewState::from_url(path, query), v);
        assert_eq!(ViewState::from_url("/", ""), ViewState::default());
    }

    #[test]
    #[wasm_bindgen_test]
    fn decode_tolerates_bad_escapes() {
        assert_eq!(decode("a%2"), "a%2");
        assert_eq!(decode("%zz+b"), "%zz b");
        assert_eq!(decode("%C3%A9"), "é");
    }

    #[test]
    #[wasm_bindgen_test]
    fn toggles() {
        let mut f = Filter::default();
        f.toggle_state(State::Held);
        assert!(f.states.contains(&State::Held));
        f.toggle_state(State::Held);
        assert!(f.is_empty());
        f.toggle_cause(CauseKind::Evicted);
        assert!(f.causes.contains(&CauseKind::Evicted));
    }
}
