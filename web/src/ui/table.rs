//! The observation table, the counts bar and the filters, shared by the live
//! dashboard and the offline page.

use std::collections::BTreeMap;
use std::sync::Arc;

use classify_wasm::{CauseKind, Observation, State};
use leptos::prelude::*;
use wasm_bindgen::JsCast;

use super::Nav;
use crate::query::Filter;
use crate::store::{AttemptsSummary, ItemKey, Row};

/// How long a changed row stays marked.
pub const RECENT_MS: f64 = 5000.0;

#[component]
pub fn StateBadge(state: State) -> impl IntoView {
    view! { <span class=format!("badge state-{}", state.as_str())>{state.as_str()}</span> }
}

#[component]
pub fn CauseBadge(cause: CauseKind) -> impl IntoView {
    view! { <span class=format!("badge cause-{}", cause.as_str())>{cause.as_str()}</span> }
}

fn held_text(o: &Observation) -> String {
    match (o.held, o.hold_instance) {
        (true, Some(i)) => format!("held #{i}"),
        (true, None) => "held".into(),
        (false, _) => String::new(),
    }
}

fn execution_text(o: &Observation) -> String {
    o.execution.map(|e| e.to_string()).unwrap_or_default()
}

/// The attempts cell: the number of executions (empty when none counts).
pub fn attempts_text(a: &AttemptsSummary) -> String {
    if a.count == 0 {
        String::new()
    } else {
        a.count.to_string()
    }
}

/// The attempts cell's hover text: the previous attempt's cause, so "why did
/// it restart?" is answered without opening the explanation.
pub fn attempts_title(a: &AttemptsSummary) -> Option<String> {
    a.previous.as_ref().map(|p| format!("previous attempt {p}"))
}

/// Counts by state and by cause.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Counts {
    pub total: usize,
    pub states: BTreeMap<State, usize>,
    pub causes: BTreeMap<CauseKind, usize>,
}

impl Counts {
    pub fn of<'a>(rows: impl Iterator<Item = &'a Observation>) -> Counts {
        let mut c = Counts::default();
        for o in rows {
            c.total += 1;
            *c.states.entry(o.state).or_default() += 1;
            *c.causes.entry(o.cause.kind).or_default() += 1;
        }
        c
    }
}

/// The bar: one segment per state and per cause, sized by count; a click
/// toggles that filter.
#[component]
pub fn Bar(#[prop(into)] counts: Signal<Counts>) -> impl IntoView {
    let nav = expect_context::<Nav>();
    let states = move || {
        let c = counts.get();
        let selected = nav.view.with(|v| v.filter.states.clone());
        State::ALL
            .into_iter()
            .filter_map(|s| c.states.get(&s).map(|n| (s, *n)))
            .map(|(s, n)| {
                let pct = 100.0 * n as f64 / c.total.max(1) as f64;
                let on = selected.contains(&s);
                view! {
                    <button class=format!("seg state-{}", s.as_str()) class:on=on aria-pressed=on.to_string()
                        title=format!("{n} {} — click to filter", s.as_str())
                        style:flex-grow=format!("{pct:.3}")
                        on:click=move |_| nav.replace(|v| v.filter.toggle_state(s))>
                        {format!("{} {n}", s.as_str())}
                    </button>
                }
            })
            .collect_view()
    };
    let causes = move || {
        let c = counts.get();
        let selected = nav.view.with(|v| v.filter.causes.clone());
        CauseKind::ALL
            .into_iter()
            .filter_map(|s| c.causes.get(&s).map(|n| (s, *n)))
            .map(|(s, n)| {
                let pct = 100.0 * n as f64 / c.total.max(1) as f64;
                let on = selected.contains(&s);
                view! {
                    <button class=format!("seg cause-{}", s.as_str()) class:on=on aria-pressed=on.to_string()
                        title=format!("{n} {} — click to filter", s.as_str())
                        style:flex-grow=format!("{pct:.3}")
                        on:click=move |_| nav.replace(|v| v.filter.toggle_cause(s))>
                        {format!("{} {n}", s.as_str())}
                    </button>
                }
            })
            .collect_view()
    };
    view! {
        <section class="bars" aria-label="counts">
            <div class="bar" role="group" aria-label="by state"><span class="bar-title">"state"</span>{states}</div>
            <div class="bar" role="group" aria-label="by cause"><span class="bar-title">"cause"</span>{causes}</div>
        </section>
    }
}

fn tri(value: Option<bool>) -> &'static str {
    match value {
        None => "any",
        Some(true) => "yes",
        Some(false) => "no",
    }
}

fn parse_tri(s: &str) -> Option<bool> {
    match s {
        "yes" => Some(true),
        "no" => Some(false),
        _ => None,
    }
}

#[component]
pub fn Filters(
    #[prop(into)] shown: Signal<usize>,
    #[prop(into)] total: Signal<usize>,
) -> impl IntoView {
    let nav = expect_context::<Nav>();
    let text = move || nav.view.with(|v| v.filter.text.clone());
    let held = move || tri(nav.view.with(|v| v.filter.held));
    let foreign = move || tri(nav.view.with(|v| v.filter.foreign));
    let summary = move || {
        let f = nav.view.with(|v| v.filter.clone());
        let mut parts: Vec<String> = Vec::new();
        if !f.states.is_empty() {
            parts.push(format!(
                "state: {}",
                f.states
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        if !f.causes.is_empty() {
            parts.push(format!(
                "cause: {}",
                f.causes
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
        parts.join("; ")
    };
    view! {
        <section class="filters" aria-label="filters">
            <label>"Search "
                <input type="search" id="filter-text" placeholder="job, name or detail" prop:value=text
                    on:input=move |ev| { let t = event_target_value(&ev); nav.replace(|v| v.filter.text = t) } />
            </label>
            <label>"Held "
                <select id="filter-held" prop:value=held on:change=move |ev| { let t = parse_tri(&event_target_value(&ev)); nav.replace(|v| v.filter.held = t) }>
                    <option value="any">"any"</option><option value="yes">"yes"</option><option value="no">"no"</option>
                </select>
            </label>
            <label>"Foreign "
                <select id="filter-foreign" prop:value=foreign on:change=move |ev| { let t = parse_tri(&event_target_value(&ev)); nav.replace(|v| v.filter.foreign = t) }>
                    <option value="any">"any"</option><option value="yes">"yes"</option><option value="no">"no"</option>
                </select>
            </label>
            <span class="filter-summary">{summary}</span>
            <span class="shown" id="shown-count">{move || format!("{} of {} shown", shown.get(), total.get())}</span>
            <button id="clear-filters" disabled=move || nav.view.with(|v| v.filter.is_empty())
                on:click=move |_| nav.replace(|v| v.filter = Filter::default())>"Clear filters"</button>
        </section>
    }
}

/// Moves the focus from the row `tr` to the row above or below.
fn focus_sibling(ev: &web_sys::KeyboardEvent, tr: &web_sys::Element, down: bool) {
    let next = if down {
        tr.next_element_sibling()
    } else {
        tr.previous_element_sibling()
    };
    if let Some(el) = next.and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) {
        ev.prevent_default();
        let _ = el.focus();
    }
}

/// The row an event happened in (its target or an ancestor), with its key.
fn row_of(ev: &web_sys::Event) -> Option<(web_sys::Element, ItemKey)> {
    let target = ev.target()?.dyn_into::<web_sys::Element>().ok()?;
    let tr = target.closest("tbody > tr[data-key]").ok()??;
    let key = ItemKey::parse_id(&tr.get_attribute("data-key")?)?;
    Some((tr, key))
}

/// Whether the event's target is the row itself (not a control inside it).
fn on_row_itself(ev: &web_sys::Event, tr: &web_sys::Element) -> bool {
    ev.target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|t| &t == tr)
}

/// Makes the strings every row repeats (roles, classes, states and causes,
/// kinds) JS strings once: without it each cell's copy is decoded from
/// wasm memory again, which a profile of the first paint of 1,000 rows
/// showed as its largest single cost.
pub fn intern_row_strings() {
    for s in [
        "row",
        "cell",
        "0",
        "job",
        "object",
        "exec",
        "attempts",
        "detail",
        "link open",
        "kind",
        " ",
        "",
        "foreign",
        "held",
        "TrainJob",
        "JobSet",
        "Workload",
        "Pod",
        "TrainingRuntime",
    ] {
        wasm_bindgen::intern(s);
    }
    for state in State::ALL {
        wasm_bindgen::intern(state.as_str());
        wasm_bindgen::intern(&format!("badge state-{}", state.as_str()));
    }
    for cause in CauseKind::ALL {
        wasm_bindgen::intern(cause.as_str());
        wasm_bindgen::intern(&format!("badge cause-{}", cause.as_str()));
    }
}

/// One row. It has no event handlers of its own: the table body handles
/// clicks and keys for all its rows (see [`Table`]), so 1,000 rows add no
/// 3,000 listeners.
fn row_view(r: Arc<Row>, now: Signal<f64>) -> impl IntoView {
    let o = &r.observation;
    // Only a row that changed follows the clock: rows as first loaded are
    // never recent, so a tick of `now` re-runs nothing for them.
    let recent: Signal<bool> = match r.changed_at {
        Some(t) => Signal::derive(move || now.get() - t < RECENT_MS),
        None => Signal::stored(false),
    };
    view! {
        <tr role="row" tabindex="0" data-key=r.key.id() data-state=o.state.as_str() data-cause=o.cause.kind.as_str()
            class:recent=recent>
            <td role="cell" class="job">{o.job.clone()}</td>
            <td role="cell">{o.submission.clone()}</td>
            <td role="cell" class="object">
                <button class="link open">
                    <span class="kind">{o.object.kind.clone()}</span>" "{o.object.name.clone()}
                </button>
            </td>
            <td role="cell"><StateBadge state=o.state /></td>
            <td role="cell"><CauseBadge cause=o.cause.kind /></td>
            <td role="cell">{held_text(o)}</td>
            <td role="cell">{if o.foreign { "foreign" } else { "" }}</td>
            <td role="cell" class="exec">{execution_text(o)}</td>
            <td role="cell" class="attempts" title=attempts_title(&r.attempts)>{attempts_text(&r.attempts)}</td>
            <td role="cell" class="detail">{o.cause.detail.clone()}</td>
        </tr>
    }
}

#[component]
pub fn Table(
    #[prop(into)] rows: Signal<Vec<Arc<Row>>>,
    #[prop(into)] now: Signal<f64>,
    on_open: Callback<ItemKey>,
) -> impl IntoView {
    view! {
        <table class="obs" role="table" aria-label="observations">
            <thead role="rowgroup"><tr role="row">
                <th scope="col" role="columnheader">"job"</th><th scope="col" role="columnheader">"submission"</th><th scope="col" role="columnheader">"object"</th>
                <th scope="col" role="columnheader">"state"</th><th scope="col" role="columnheader">"cause"</th><th scope="col" role="columnheader">"held"</th>
                <th scope="col" role="columnheader">"foreign"</th><th scope="col" role="columnheader">"execution"</th>
                <th scope="col" role="columnheader" title="executions (A, J) of the TrainJob; hover a count for the previous attempt's cause">"attempts"</th>
                <th scope="col" role="columnheader">"detail"</th>
            </tr></thead>
            <tbody role="rowgroup"
                on:click=move |ev: web_sys::MouseEvent| {
                    // The object's button opens the explanation.
                    let on_button = ev
                        .target()
                        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
                        .and_then(|t| t.closest("button.open").ok().flatten())
                        .is_some();
                    if let (true, Some((_, key))) = (on_button, row_of(&ev)) {
                        on_open.run(key);
                    }
                }
                on:dblclick=move |ev: web_sys::MouseEvent| {
                    if let Some((_, key)) = row_of(&ev) {
                        on_open.run(key);
                    }
                }
                on:keydown=move |ev: web_sys::KeyboardEvent| {
                    let Some((tr, key)) = row_of(&ev) else { return };
                    match ev.key().as_str() {
                        "ArrowDown" if on_row_itself(&ev, &tr) => focus_sibling(&ev, &tr, true),
                        "ArrowUp" if on_row_itself(&ev, &tr) => focus_sibling(&ev, &tr, false),
                        "Enter" => on_open.run(key),
                        _ => {}
                    }
                }>
                <For each=move || rows.get() key=|r| r.revision let:r>
                    {row_view(r, now)}
                </For>
            </tbody>
        </table>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use classify_wasm::{AttemptTrace, Cause, CauseKind, Execution, Provenance};

    fn attempt(a: u64, j: u64, current: bool, cause: Option<Cause>) -> AttemptTrace {
        AttemptTrace {
            execution: Execution {
                admission: a,
                restart_attempt: j,
            },
            current,
            cause,
            pods: vec![format!("p-{a}-{j}")],
        }
    }

    #[test]
    fn the_attempts_cell_counts_and_hovers_the_previous_cause() {
        let lost = Cause {
            kind: CauseKind::NodeLost,
            provenance: Some(Provenance::CapturedPod),
            detail: "pod p-1-1: DisruptionTarget: DeletionByTaintManager".into(),
        };
        let summary = AttemptsSummary::of(&[
            attempt(1, 2, true, None),
            attempt(1, 1, false, Some(lost)),
            attempt(1, 0, false, None),
        ]);
        assert_eq!(attempts_text(&summary), "3");
        assert_eq!(
            attempts_title(&summary).as_deref(),
            Some(
                "previous attempt A=1 J=1: node-lost (captured-pod): pod p-1-1: \
                 DisruptionTarget: DeletionByTaintManager"
            )
        );

        let first = AttemptsSummary::of(&[attempt(1, 0, true, None)]);
        assert_eq!(attempts_text(&first), "1");
        assert_eq!(attempts_title(&first), None, "no previous attempt");

        let none = AttemptsSummary::of(&[]);
        assert_eq!(attempts_text(&none), "");
        assert_eq!(attempts_title(&none), None);
    }

    #[test]
    fn a_previous_attempt_without_a_finding_says_so() {
        let summary = AttemptsSummary::of(&[attempt(2, 0, true, None), attempt(1, 1, false, None)]);
        assert_eq!(
            attempts_title(&summary).as_deref(),
            Some("previous attempt A=1 J=1: no finding")
        );
    }
}
