//! Label and field selectors, as the API server parses them.

use serde_json::Value;

/// One requirement of a label selector.
#[derive(Debug, Clone, PartialEq, Eq)]
enum LabelReq {
    Eq(String, String),
    NotEq(String, String),
    In(String, Vec<String>),
    NotIn(String, Vec<String>),
    Exists(String),
    NotExists(String),
}

/// A parsed `labelSelector`: requirements that must all hold (comma = AND).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(Vec<LabelReq>);

/// A parsed `fieldSelector`: `path=value`, `path==value` or `path!=value`
/// terms that must all hold. Any dotted path into the object is accepted
/// (`metadata.name`, `metadata.namespace`, `spec.nodeName`, `status.phase`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(Vec<String>, bool, String)>);

fn valid_key(k: &str) -> bool {
    !k.is_empty()
        && k.len() <= 316
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

fn valid_value(v: &str) -> bool {
    v.len() <= 63
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// Splits on commas that are not inside parentheses.
fn split_top(s: &str) -> Result<Vec<&str>, String> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut start = 0;
    for (i, c) in s.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("unbalanced ')' in selector {s:?}"));
                }
            }
            ',' if depth == 0 => {
                parts.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(format!("unbalanced '(' in selector {s:?}"));
    }
    parts.push(&s[start..]);
    Ok(parts)
}

fn parse_set(rest: &str, whole: &str) -> Result<Vec<String>, String> {
    let rest = rest.trim();
    let inner = rest
        .strip_prefix('(')
        .and_then(|r| r.strip_suffix(')'))
        .ok_or_else(|| format!("expected a parenthesised set in {whole:?}"))?;
    let values: Vec<String> = inner.split(',').map(|v| v.trim().to_string()).collect();
    if values.iter().any(|v| !valid_value(v)) {
        return Err(format!("invalid value in set in {whole:?}"));
    }
    Ok(values)
}

impl LabelSelector {
    /// Parses a selector such as `a=b,c!=d,e in (f,g),h notin (i),j,!k`.
    /// The empty string selects everything.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut reqs = Vec::new();
        if s.trim().is_empty() {
            return Ok(LabelSelector(reqs));
        }
        for part in split_top(s)? {
            let part = part.trim();
            if part.is_empty() {
                return Err(format!("empty requirement in selector {s:?}"));
            }
            let req = if let Some(key) = part.strip_prefix('!') {
                LabelReq::NotExists(key.trim().to_string())
            } else if let Some((k, v)) = part.split_once("!=") {
                LabelReq::NotEq(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = part.split_once("==") {
                LabelReq::Eq(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, v)) = part.split_once('=') {
                LabelReq::Eq(k.trim().to_string(), v.trim().to_string())
            } else if let Some((k, rest)) = split_word(part, "notin") {
                LabelReq::NotIn(k.to_string(), parse_set(rest, s)?)
            } else if let Some((k, rest)) = split_word(part, "in") {
                LabelReq::In(k.to_string(), parse_set(rest, s)?)
            } else {
                LabelReq::Exists(part.to_string())
            };
            let (key, value) = match &req {
                LabelReq::Eq(k, v) | LabelReq::NotEq(k, v) => (k, Some(v)),
                LabelReq::In(k, _)
                | LabelReq::NotIn(k, _)
                | LabelReq::Exists(k)
                | LabelReq::NotExists(k) => (k, None),
            };
            if !valid_key(key) {
                return Err(format!("invalid label key {key:?} in selector {s:?}"));
            }
            if value.is_some_and(|v| !valid_value(v)) {
                return Err(format!("invalid label value in selector {s:?}"));
            }
            reqs.push(req);
        }
        Ok(LabelSelector(reqs))
    }

    /// Whether the object's `metadata.labels` satisfy every requirement.
    pub fn matches(&self, obj: &Value) -> bool {
        let labels = obj.pointer("/metadata/labels");
        let get = |k: &str| labels.and_then(|l| l.get(k)).and_then(Value::as_str);
        self.0.iter().all(|r| match r {
            LabelReq::Eq(k, v) => get(k) == Some(v.as_str()),
            LabelReq::NotEq(k, v) => get(k) != Some(v.as_str()),
            LabelReq::In(k, vs) => get(k).is_some_and(|x| vs.iter().any(|v| v == x)),
            LabelReq::NotIn(k, vs) => get(k).is_none_or(|x| vs.iter().all(|v| v != x)),
            LabelReq::Exists(k) => get(k).is_some(),
            LabelReq::NotExists(k) => get(k).is_none(),
        })
    }
}

/// Splits `key <word> rest` where `word` is surrounded by white space.
fn split_word<'a>(part: &'a str, word: &str) -> Option<(&'a str, &'a str)> {
    let mut it = part.splitn(2, char::is_whitespace);
    let key = it.next()?.trim();
    let rest = it.next()?.trim_start();
    let after = rest.strip_prefix(word)?;
    if after.starts_with(|c: char| c.is_whitespace() || c == '(') {
        Some((key, after))
    } else {
        None
    }
}

impl FieldSelector {
    /// Parses a selector such as `metadata.name=x,metadata.namespace!=y`.
    pub fn parse(s: &str) -> Result<Self, String> {
        let mut terms = Vec::new();
        if s.trim().is_empty() {
            return Ok(FieldSelector(terms));
        }
        for part in s.split(',') {
            let (path, eq, value) = if let Some((k, v)) = part.split_once("!=") {
                (k, false, v)
            } else if let Some((k, v)) = part.split_once("==") {
                (k, true, v)
            } else if let Some((k, v)) = part.split_once('=') {
                (k, true, v)
            } else {
                return Err(format!("invalid field selector term {part:?}"));
            };
            let path: Vec<String> = path.trim().split('.').map(str::to_string).collect();
            if path.iter().any(|p| p.is_empty()) {
                return Err(format!("invalid field path in {part:?}"));
            }
            terms.push((path, eq, value.trim().to_string()));
        }
        Ok(FieldSelector(terms))
    }

    /// Whether every term holds; a missing field reads as the empty string.
    pub fn matches(&self, obj: &Value) -> bool {
        self.0.iter().all(|(path, eq, value)| {
            let mut cur = Some(obj);
            for p in path {
                cur = cur.and_then(|c| c.get(p));
            }
            let actual = match cur {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Bool(b)) => b.to_string(),
                Some(Value::Number(n)) => n.to_string(),
                _ => String::new(),
            };
            (actual == *value) == *eq
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(labels: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "labels": labels}})
    }

    #[test]
    fn label_forms() {
        let o = pod(json!({"a": "1", "b": "2"}));
        let m = |s: &str| LabelSelector::parse(s).unwrap().matches(&o);
        assert!(m(""));
        assert!(m("a=1") && m("a==1") && !m("a=2"));
        assert!(m("a!=2") && !m("a!=1") && m("c!=1"));
        assert!(m("a in (1,3)") && !m("a in (3)") && !m("c in (1)"));
        assert!(m("a notin (2,3)") && !m("a notin (1)") && m("c notin (1)"));
        assert!(m("a") && !m("c") && m("!c") && !m("!a"));
        assert!(m("a=1,b in (2),!c") && !m("a=1,b=3"));
    }

    #[test]
    fn bad_label_selectors() {
        for s in ["a in (1", "a=1,", "=1", "a in 1", "a=$", ")"] {
            assert!(LabelSelector::parse(s).is_err(), "{s}");
        }
    }

    #[test]
    fn field_selector() {
        let o = pod(json!({}));
        let m = |s: &str| FieldSelector::parse(s).unwrap().matches(&o);
        assert!(m("metadata.name=p") && m("metadata.namespace==ns"));
        assert!(!m("metadata.name!=p") && m("metadata.name=p,metadata.namespace!=x"));
        assert!(FieldSelector::parse("metadata.name").is_err());
    }
}
