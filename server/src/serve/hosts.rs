//! Which `Host` header values the server answers, against DNS rebinding: a
//! page on an attacker's domain whose name is made to resolve to 127.0.0.1
//! sends that domain as its Host, so refusing unknown names keeps such a
//! page from reading the API (which runs with the operator's credentials).
//!
//! Allowed: `localhost`, the loopback literals `127.0.0.1` and `[::1]`, the
//! listen address itself, any IP literal when listening on every address
//! (`0.0.0.0` or `[::]`: a probe or a scraper that dials the pod IP; a
//! literal cannot be rebound, as the page's origin would be that address),
//! and the names given with `--allowed-host`. The port is not compared: a
//! port-forward serves the same server on another port. Names compare
//! without regard to case, and a trailing dot is ignored.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

/// The Host values a server answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPolicy {
    listen: IpAddr,
    names: Vec<String>,
}

impl HostPolicy {
    /// The policy of a server listening on `listen`, with extra `names`.
    pub fn new(listen: SocketAddr, names: &[String]) -> Self {
        HostPolicy {
            listen: listen.ip(),
            names: names.iter().map(|n| normalize(n)).collect(),
        }
    }

    /// Whether a request whose Host header is `host` is served.
    pub fn allows(&self, host: &str) -> bool {
        let Some(name) = host_name(host) else {
            return false;
        };
        if let Ok(ip) = name
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        {
            // A bracket is only valid around an IPv6 literal.
            if name.starts_with('[') != ip.is_ipv6() {
                return false;
            }
            return ip == IpAddr::V4(Ipv4Addr::LOCALHOST)
                || ip == IpAddr::V6(Ipv6Addr::LOCALHOST)
                || ip == self.listen
                || self.listen.is_unspecified();
        }
        let name = normalize(name);
        name == "localhost" || self.names.contains(&name)
    }
}

fn normalize(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// The host part of a Host header (`name`, `name:port`, `[v6]:port`), or
/// `None` when it is malformed.
fn host_name(host: &str) -> Option<&str> {
    let host = host.trim();
    if host.is_empty() {
        return None;
    }
    let name = if host.starts_with('[') {
        let end = host.find(']')?;
        let (name, rest) = host.split_at(end + 1);
        if !(rest.is_empty() || valid_port(rest.strip_prefix(':')?)) {
            return None;
        }
        name
    } else {
        match host.rsplit_once(':') {
            Some((name, port)) if valid_port(port) => name,
            Some(_) => return None,
            None => host,
        }
    };
    let plain = name.trim_start_matches('[').trim_end_matches(']');
    let well_formed = !plain.is_empty()
        && plain
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b':' | b'_'));
    well_formed.then_some(name)
}

fn valid_port(port: &str) -> bool {
    !port.is_empty() && port.len() <= 5 && port.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(listen: &str, names: &[&str]) -> HostPolicy {
        let names: Vec<String> = names.iter().map(|n| n.to_string()).collect();
        HostPolicy::new(listen.parse().expect("address"), &names)
    }

    #[test]
    fn loopback_names_and_the_listen_address_are_served() {
        let p = policy("127.0.0.1:8080", &[]);
        for host in [
            "localhost",
            "localhost:8080",
            "LOCALHOST:9999",
            "localhost.",
            "127.0.0.1",
            "127.0.0.1:8080",
            "[::1]",
            "[::1]:8080",
        ] {
            assert!(p.allows(host), "{host} is served");
        }
    }

    #[test]
    fn foreign_names_and_malformed_hosts_are_refused() {
        let p = policy("127.0.0.1:8080", &[]);
        for host in [
            "evil.example.com",
            "evil.example.com:8080",
            "localhost.evil.example.com",
            "127.0.0.1.nip.io",
            "10.0.0.5:8080",
            "",
            " ",
            "localhost:",
            "localhost:80x",
            "::1",
            "[127.0.0.1]",
            "[::1",
            "[::1]x",
            "local host",
            "localhost/x",
        ] {
            assert!(!p.allows(host), "{host:?} is refused");
        }
    }

    #[test]
    fn extra_names_are_served_in_any_case() {
        let p = policy("127.0.0.1:8080", &["Dispatch.Example.COM"]);
        assert!(p.allows("dispatch.example.com"));
        assert!(p.allows("DISPATCH.example.com:443"));
        assert!(!p.allows("other.example.com"));
    }

    #[test]
    fn every_ip_literal_is_served_when_listening_on_every_address() {
        let p = policy("0.0.0.0:8080", &["dispatch-dash"]);
        assert!(p.allows("10.0.0.5:8080"), "a probe dialing the pod IP");
        assert!(p.allows("[fd00::5]:8080"));
        assert!(p.allows("dispatch-dash:8080"), "the Service name given");
        assert!(!p.allows("dispatch-dash.evil.example.com"));
        let specific = policy("10.0.0.5:8080", &[]);
        assert!(specific.allows("10.0.0.5"));
        assert!(!specific.allows("10.0.0.6"));
    }
}
