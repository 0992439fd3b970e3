//! The Queues page: the namespace's LocalQueues with their pending lists
//! in order, and the ClusterQueues they name with a bar per flavor and
//! resource. Its data is the server's (`GET …/queues`), asked for when the
//! page opens and again whenever a `queues` frame says the facts or the
//! boards changed; the words and lengths are the engine's
//! (`classify_wasm::queue::board`).

use std::sync::Arc;

use classify_wasm::queue::board::{Bar, ClusterQueueBoard, Counts, LocalQueueEntry};
use leptos::prelude::*;

use super::net::{fetch_text, FetchError};
use super::Nav;
use crate::query::encode;
use crate::queue_book::QueueBook;
use crate::queues_view::{segments, width, QueuesView};

fn counts_text(c: &Counts) -> String {
    let parts: Vec<String> = [
        (c.pending, "pending"),
        (c.reserving, "reserving"),
        (c.admitted, "admitted"),
    ]
    .into_iter()
    .filter_map(|(n, what)| n.map(|n| format!("{n} {what}")))
    .collect();
    if parts.is_empty() {
        "no status yet".into()
    } else {
        parts.join(", ")
    }
}

fn bar_view(bar: Bar) -> impl IntoView {
    let (own, borrowed, nominal) = segments(&bar);
    let label = format!("{} {}", bar.flavor, bar.resource);
    let title = bar.sentence.clone();
    view! {
        <div class="qbar" title=title data-flavor=bar.flavor data-resource=bar.resource>
            <span class="qbar-label">{label}</span>
            <span class="qbar-track">
                <span class="qbar-reserved" style:width=width(own)></span>
                <span class="qbar-borrowed" style:width=width(borrowed)></span>
                <span class="qbar-nominal" style:left=width(nominal)></span>
            </span>
            <span class="qbar-used-track"><span class="qbar-used" style:width=width(bar.used_permille)></span></span>
            <span class="qbar-words">{bar.sentence}</span>
        </div>
    }
}

fn cluster_queue_view(cq: ClusterQueueBoard) -> impl IntoView {
    let title = match &cq.cohort {
        Some(cohort) => format!("ClusterQueue {} (cohort {cohort})", cq.name),
        None => format!("ClusterQueue {}", cq.name),
    };
    view! {
        <section class="cluster-queue" data-name=cq.name.clone()>
            <h3>{title}</h3>
            <p class="counts">{counts_text(&cq.counts)}</p>
            {cq.stopped.map(|s| view! { <p class="error">{s}</p> })}
            {cq.bars.into_iter().map(bar_view).collect_view()}
        </section>
    }
}

fn local_queue_view(lq: LocalQueueEntry) -> impl IntoView {
    let nav = expect_context::<Nav>();
    let board = lq.board;
    let title = match &board.cluster_queue {
        Some(cq) => format!(
            "LocalQueue {}/{} → ClusterQueue {cq}",
            board.namespace, board.name
        ),
        None => format!("LocalQueue {}/{}", board.namespace, board.name),
    };
    let pending = lq
        .pending
        .into_iter()
        .map(|p| {
            let place = format!(
                "priority {}, {} in the ClusterQueue",
                p.priority,
                classify_wasm::queue::line::ordinal(p.in_cluster_queue)
            );
            let name = match p.train_job {
                Some(job) => {
                    let label = job.clone();
                    view! {
                        <button class="link open" on:click=move |_| {
                            nav.go(nav.view.get_untracked().explaining("TrainJob", &job));
                        }>{label}</button>
                    }
                    .into_any()
                }
                None => view! { <span>{format!("Workload {}", p.workload)}</span> }.into_any(),
            };
            view! { <li data-workload=p.workload.clone()>{name}" "<span class="muted">{place}</span></li> }
        })
        .collect_view();
    view! {
        <section class="local-queue" data-name=board.name.clone()>
            <h3>{title}</h3>
            <p class="counts">{counts_text(&board.counts)}</p>
            {board.stopped.map(|s| view! { <p class="error">{s}</p> })}
            <ol class="pending" aria-label="pending, in order">{pending}</ol>
            {lq.pending_cut.then(|| view! { <p class="muted">"The list holds the first 1,000 pending only."</p> })}
            {lq.pending_unavailable.map(|s| view! { <p class="muted pending-unavailable">{s}</p> })}
        </section>
    }
}

#[component]
pub fn QueuesPage(
    #[prop(into)] namespace: Signal<Option<String>>,
    /// The stream's queue facts: a new book means the queues moved.
    #[prop(into)]
    queues: Signal<Arc<QueueBook>>,
) -> impl IntoView {
    let view_state = RwSignal::new(QueuesView::Loading);
    let asked = StoredValue::new(0u64);
    // An effect syncs with the outside: the server's answer.
    Effect::new(move |_| {
        queues.track();
        let Some(ns) = namespace.get() else { return };
        let n = asked.get_value() + 1;
        asked.set_value(n);
        leptos::task::spawn_local(async move {
            let answer = fetch_text(&format!("/api/v1/namespaces/{}/queues", encode(&ns))).await;
            let shown = match answer {
                Ok(text) => QueuesView::from_answer(&text),
                Err(FetchError::Unauthorized) => {
                    QueuesView::Failed("sign in again to see the queues".into())
                }
                Err(FetchError::Forbidden) => {
                    QueuesView::Failed("you may not see this namespace".into())
                }
                Err(FetchError::Failed(e)) => QueuesView::Failed(e),
            };
            // A late answer for a namespace no longer shown is dropped.
            if asked.try_get_value() == Some(n) {
                view_state.try_set(shown);
            }
        });
    });
    let body = move || {
        match view_state.get() {
        QueuesView::Loading => view! { <p class="muted">"Loading the queues…"</p> }.into_any(),
        QueuesView::Failed(why) => view! { <p class="error" role="alert">{why}</p> }.into_any(),
        QueuesView::Shown(page) if page.local_queues.is_empty() && page.withheld.is_empty() => {
            view! { <p class="muted" id="no-queues">"No Kueue LocalQueue in this namespace."</p> }.into_any()
        }
        QueuesView::Shown(page) => view! {
            <div class="queues-columns">
                <div>{page.local_queues.into_iter().map(local_queue_view).collect_view()}</div>
                <div>{page.cluster_queues.into_iter().map(cluster_queue_view).collect_view()}</div>
            </div>
            {(!page.withheld.is_empty()).then(|| view! {
                <ul class="withheld" aria-label="withheld">{page.withheld.into_iter().map(|w| view! { <li>{w}</li> }).collect_view()}</ul>
            })}
            <p class="muted legend">"Bars: reserved within the nominal quota, borrowed from the cohort beyond it (striped), the nominal quota's end (the line); the thin bar below is what is in use."</p>
        }
        .into_any(),
    }
    };
    view! { <section class="queues" id="queues-page">{body}</section> }
}
