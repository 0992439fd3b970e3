//! Publishing: the `change` frames a batch makes, one per namespace, put
//! in that namespace's replay ring and sent to its live streams, with the
//! rings bounded together in bytes.

use super::*;

pub(super) fn new_stream(id: u64) -> NamespaceStream {
    NamespaceStream {
        floor: id,
        version: id,
        ring: VecDeque::new(),
        ring_bytes: 0,
        tx: broadcast::channel(CLIENT_BACKLOG).0,
        start: None,
    }
}

/// The net effect of a batch on one namespace's stream.
#[derive(Default)]
struct NamespaceChange {
    /// The final state of each object touched: `None` when deleted.
    objects: BTreeMap<(ObjectKind, String), Option<Arc<StoredObject>>>,
    /// The identity of each deleted object.
    deletes: BTreeMap<(ObjectKind, String), Deleted>,
    captured: BTreeMap<(String, String), Option<Arc<CapturedPod>>>,
    nodes_readable: Option<bool>,
}

impl NamespaceChange {
    /// The `change` event's data, written by the engine's one writer.
    /// Projections are spliced in as the JSON text they are stored as, not
    /// parsed and written again.
    fn to_json(&self) -> String {
        let mut frame = ChangeFrame {
            nodes_readable: self.nodes_readable,
            ..ChangeFrame::default()
        };
        for (key, object) in &self.objects {
            match object {
                Some(object) => frame.upserts.push(Cow::Borrowed(&object.json)),
                None => frame.deletes.extend(self.deletes.get(key).cloned()),
            }
        }
        for ((trainjob_uid, pod_uid), entry) in &self.captured {
            match entry {
                Some(c) => frame.captured.push(Cow::Owned(wire::captured_entry(
                    &c.trainjob_uid,
                    &c.pod.json,
                    c.across_gap,
                ))),
                None => frame.dropped.push(DroppedCapture {
                    trainjob_uid: trainjob_uid.clone(),
                    pod_uid: pod_uid.clone(),
                }),
            }
        }
        frame.to_json()
    }
}

impl Hub {
    /// Turns a batch's deltas into one `change` frame per open namespace
    /// stream they touch, kept in its ring and sent to its subscribers.
    pub(super) fn publish_changes(&self, streams: &mut Streams, deltas: &[Delta], born: Instant) {
        let changes = collect_changes(streams, deltas);
        for (namespace, change) in changes {
            // Only namespaces someone has subscribed to keep a stream; a later
            // subscriber starts from a snapshot anyway.
            let Some(stream) = streams.by_namespace.get_mut(&namespace) else {
                continue;
            };
            streams.last_id += 1;
            let id = streams.last_id;
            let frame = Frame {
                id,
                bytes: encode_event(Some(id), "change", &change.to_json()),
                born,
            };
            stream.version = id;
            // A start built at an older version is never handed out again
            // (a subscriber gets one built at the version it joins), so
            // keeping it would only hold a whole snapshot of the namespace.
            stream.start = None;
            let size = frame.bytes.len();
            if size > self.replay_bytes {
                // Larger than the whole ring: sent live, never replayed, so a
                // resume from before it starts from a snapshot, and the
                // frames before it can never be replayed either.
                self.metrics
                    .count_replay_evictions(RingBound::Bytes, stream.ring.len() + 1);
                stream.ring.clear();
                stream.ring_bytes = 0;
                stream.floor = id;
            } else {
                stream.ring.push_back(frame.clone());
                stream.ring_bytes += size;
                loop {
                    let bound = if stream.ring.len() > RING_FRAMES {
                        RingBound::Frames
                    } else if stream.ring_bytes > self.replay_bytes {
                        RingBound::Bytes
                    } else {
                        break;
                    };
                    let Some(evicted) = stream.ring.pop_front() else {
                        break;
                    };
                    stream.ring_bytes -= evicted.bytes.len();
                    stream.floor = evicted.id;
                    self.metrics.count_replay_evictions(bound, 1);
                }
            }
            let _ = stream.tx.send(frame);
        }
        self.bound_rings_together(streams);
    }

    /// Keeps the rings of all namespaces within `replay_bytes_total`
    /// together: each ring has its own bound, but with `--all-namespaces`
    /// their number grows with the cluster's. The oldest frame of any
    /// namespace goes first (ids increase across namespaces).
    fn bound_rings_together(&self, streams: &mut Streams) {
        let mut total: usize = streams.by_namespace.values().map(|s| s.ring_bytes).sum();
        while total > self.replay_bytes_total {
            let oldest = streams
                .by_namespace
                .values_mut()
                .filter(|s| !s.ring.is_empty())
                .min_by_key(|s| s.ring.front().map_or(u64::MAX, |f| f.id));
            let Some(stream) = oldest else { break };
            let Some(evicted) = stream.ring.pop_front() else {
                break;
            };
            stream.ring_bytes -= evicted.bytes.len();
            stream.floor = evicted.id;
            total -= evicted.bytes.len();
            self.metrics
                .count_replay_evictions(RingBound::TotalBytes, 1);
        }
        self.metrics
            .replay_bytes
            .store(total as u64, std::sync::atomic::Ordering::Relaxed);
    }
}

/// The net effect of a batch on each open namespace stream.
fn collect_changes(streams: &Streams, deltas: &[Delta]) -> BTreeMap<String, NamespaceChange> {
    let mut changes: BTreeMap<String, NamespaceChange> = BTreeMap::new();
    // Cluster-scoped changes go to every open namespace stream.
    let all: Vec<String> = streams.by_namespace.keys().cloned().collect();
    let targets = |ns: &str| -> Vec<String> {
        if ns.is_empty() {
            all.clone()
        } else {
            vec![ns.to_string()]
        }
    };
    for delta in deltas {
        match delta {
            // Which namespaces exist is no part of any snapshot.
            Delta::Upsert(o) | Delta::Delete(o) if o.kind == ObjectKind::Namespace => {}
            Delta::Upsert(o) => {
                for ns in targets(&o.namespace) {
                    changes
                        .entry(ns)
                        .or_default()
                        .objects
                        .insert((o.kind, o.name.clone()), Some(o.clone()));
                }
            }
            Delta::Delete(o) => {
                for ns in targets(&o.namespace) {
                    let change = changes.entry(ns).or_default();
                    change.objects.insert((o.kind, o.name.clone()), None);
                    change.deletes.insert(
                        (o.kind, o.name.clone()),
                        Deleted {
                            kind: o.kind.name().to_string(),
                            name: o.name.clone(),
                            namespace: o.namespace.clone(),
                            uid: o.uid.clone(),
                        },
                    );
                }
            }
            Delta::Captured(c) => {
                changes
                    .entry(c.namespace.clone())
                    .or_default()
                    .captured
                    .insert((c.trainjob_uid.clone(), c.pod.uid.clone()), Some(c.clone()));
            }
            Delta::CapturedDropped {
                namespace,
                trainjob_uid,
                pod_uid,
            } => {
                changes
                    .entry(namespace.clone())
                    .or_default()
                    .captured
                    .insert((trainjob_uid.clone(), pod_uid.clone()), None);
            }
            Delta::NodesReadable(readable) => {
                for ns in &all {
                    changes.entry(ns.clone()).or_default().nodes_readable = Some(*readable);
                }
            }
            Delta::WatchInterrupted { .. } => {}
        }
    }
    changes
}
