//! What `/metrics` answers: one [`Collector`] that reads, at each scrape,
//! the hub's metrics, the store, the watches' health, the connection
//! layer's counters and the auth caches, registered once in a
//! `prometheus-client` [`Registry`] and written in the OpenMetrics text
//! format (which Prometheus negotiates and reads).

use std::collections::BTreeSet;
use std::fmt;
use std::sync::Arc;

use prometheus_client::collector::Collector;
use prometheus_client::encoding::{DescriptorEncoder, EncodeMetric};
use prometheus_client::metrics::info::Info;
use prometheus_client::registry::Registry;

use super::auth::Authenticator;
use super::history::unix_seconds;
use super::hub::Hub;
use super::listen::ConnectionMetrics;
use super::metrics::{encode_counters, encode_gauge, encode_gauges};

/// The `Content-Type` of the exposition.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Everything a scrape reads.
#[derive(Debug)]
pub struct Scrape {
    /// The watches, the store and the hub's own metrics.
    pub hub: Arc<Hub>,
    /// The connection layer's counters.
    pub connections: Arc<ConnectionMetrics>,
    /// The auth caches.
    pub auth: Arc<Authenticator>,
    /// `--public-url`, exported in `dispatch_dash_info` so alert rules can
    /// link to the dashboard (`""` when not given).
    pub public_url: String,
}

impl Scrape {
    /// A registry holding only this collector.
    pub fn into_registry(self) -> Registry {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(self));
        registry
    }
}

/// The text of one scrape of `registry`.
pub fn render(registry: &Registry) -> Result<String, fmt::Error> {
    let mut text = String::new();
    prometheus_client::encoding::text::encode(&mut text, registry)?;
    Ok(text)
}

impl Collector for Scrape {
    fn encode(&self, mut encoder: DescriptorEncoder) -> fmt::Result {
        let info = Info::new([
            ("version", env!("CARGO_PKG_VERSION")),
            ("public_url", self.public_url.as_str()),
        ]);
        info.encode(encoder.encode_descriptor(
            "dispatch_dash",
            "The server's version and the dashboard's public URL.",
            None,
            info.metric_type(),
        )?)?;
        let namespaces: BTreeSet<String> = self.hub.namespaces().into_iter().collect();
        self.hub
            .metrics
            .encode(&mut encoder, &namespaces, unix_seconds(self.hub.now()))?;
        encode_gauges(
            &mut encoder,
            "dispatch_dash_watch_up",
            "1 when every watch of the kind has listed and is watching, else 0.",
            self.hub
                .health()
                .up_by_kind()
                .into_iter()
                .map(|(kind, up)| ([("kind", kind.name())], i64::from(up))),
        )?;
        encode_counters(
            &mut encoder,
            "dispatch_dash_watch_lists",
            "Lists of a kind completed, at start and after 410 Gone, by method: watchList (a watch's initial events, sendInitialEvents) or pages (list with limit and continue, where the API server does not stream lists).",
            self.hub
                .health()
                .lists()
                .into_iter()
                .map(|((kind, method), n)| {
                    ([("kind", kind.name()), ("method", method.as_str())], n)
                }),
        )?;
        let (bytes, pods) = self.hub.with_store(|s| s.pod_bytes());
        encode_gauge(
            &mut encoder,
            "dispatch_dash_stored_pod_bytes",
            "Bytes held by stored pod projections.",
            bytes as u64,
        )?;
        encode_gauge(
            &mut encoder,
            "dispatch_dash_stored_pods",
            "Stored pod projections.",
            pods as u64,
        )?;
        let (queue_bytes, queue_objects) =
            self.hub.with_store(|s| (s.queues.bytes(), s.queues.len()));
        encode_gauge(
            &mut encoder,
            "dispatch_dash_stored_queue_bytes",
            "Bytes held by stored LocalQueue and ClusterQueue projections.",
            queue_bytes as u64,
        )?;
        encode_gauge(
            &mut encoder,
            "dispatch_dash_stored_queues",
            "Stored LocalQueue and ClusterQueue projections.",
            queue_objects as u64,
        )?;
        self.connections.encode(&mut encoder)?;
        if let Some(notifier) = self.hub.notifier() {
            notifier.metrics().encode(&mut encoder)?;
        }
        let stats = self.auth.cache_stats();
        const CACHES: [&str; 3] = ["identities", "access", "namespace_lists"];
        encode_gauges(
            &mut encoder,
            "dispatch_dash_auth_cache_entries",
            "Entries of each auth cache.",
            CACHES
                .iter()
                .zip(stats.entries)
                .map(|(cache, n)| ([("cache", *cache)], n as u64)),
        )?;
        encode_gauges(
            &mut encoder,
            "dispatch_dash_auth_cache_bytes",
            "Bytes held by each auth cache.",
            CACHES
                .iter()
                .zip(stats.bytes)
                .map(|(cache, n)| ([("cache", *cache)], n as u64)),
        )
    }
}

/// One scrape of `hub`, with no connections and no auth caches (tests).
#[cfg(test)]
pub(crate) fn text_of(hub: &Arc<Hub>) -> String {
    let scrape = Scrape {
        hub: hub.clone(),
        connections: Arc::default(),
        auth: Arc::new(Authenticator::new(
            super::auth::AuthConfig {
                mode: super::auth::AuthMode::None,
                ..Default::default()
            },
            None,
        )),
        public_url: "https://dash.example".into(),
    };
    render(&scrape.into_registry()).unwrap_or_default()
}
