//! Client addresses: the `--trusted-proxy` blocks, and whether a request
//! came over HTTPS through one of them.

use std::net::{IpAddr, SocketAddr};

/// An address or a CIDR block (`10.0.0.0/8`, `fd00::/8`, `192.0.2.7`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IpNet {
    network: IpAddr,
    prefix: u8,
}

impl IpNet {
    /// Whether `ip` is in the block.
    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = match ip {
            IpAddr::V6(v6) => v6
                .to_ipv4_mapped()
                .map(IpAddr::V4)
                .unwrap_or(IpAddr::V6(v6)),
            v4 => v4,
        };
        match (self.network, ip) {
            (IpAddr::V4(net), IpAddr::V4(ip)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(net) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(net), IpAddr::V6(ip)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(net) & mask == u128::from(ip) & mask
            }
            _ => false,
        }
    }
}

impl std::str::FromStr for IpNet {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = || format!("{text:?} is not an IP address or a CIDR block such as 10.0.0.0/8");
        let (address, prefix) = match text.split_once('/') {
            Some((address, prefix)) => (address, Some(prefix)),
            None => (text, None),
        };
        let network: IpAddr = address.parse().map_err(|_| bad())?;
        let max = if network.is_ipv4() { 32 } else { 128 };
        let prefix = match prefix {
            Some(p) => p.parse::<u8>().ok().filter(|p| *p <= max).ok_or_else(bad)?,
            None => max,
        };
        Ok(IpNet { network, prefix })
    }
}

/// Whether the request came over HTTPS: only a trusted proxy's
/// `X-Forwarded-Proto: https` says so (the server itself speaks HTTP).
pub fn came_over_https(
    peer: Option<SocketAddr>,
    forwarded_proto: Option<&str>,
    trusted: &[IpNet],
) -> bool {
    let trusted_peer = peer.is_some_and(|p| trusted.iter().any(|net| net.contains(p.ip())));
    trusted_peer
        && forwarded_proto
            .and_then(|v| v.split(',').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("https"))
}
