//! The observation table, the counts bar and the filters, shared by the live
//! dashboard and the offline page.

use std::collections::BTreeMap;
use std::sync::Arc;

use classify_wasm::hash::KeyedMap;
use classify_wasm::queue::QueueCell;
use classify_wasm::{CauseKind, Observation, State};
use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::{mark, Nav};
use crate::query::Filter;
use crate::queue_book::QueueBook;
use crate::row_window::{self, Geometry, RowWindow};
use crate::store::{AttemptsSummary, ItemKey, Row};
use crate::table_sync::Plan;

/// The queue cell's place in a row (`rows.js` fills the others).
const QUEUE_CELL: u32 = 9;

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
            {move || (shown.get() > row_window::DRAWN_WHOLE_UP_TO).then(|| view! {
                <span class="muted drawn-note" id="drawn-note">
                    "Only the rows near the view are drawn, so the browser's find-in-page misses the others: Search finds any row."
                </span>
            })}
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

/// A row with everything every row has: its roles, classes and elements.
/// Each row is a deep clone of it with its own text filled in (`rows.js`),
/// so a row costs a clone and a few property sets, not one call per element
/// and per attribute (building 1,834 rows element by element was most of the
/// first paint of 1,000 TrainJobs).
fn row_template(document: &web_sys::Document) -> Result<web_sys::Element, JsValue> {
    let element = |tag: &str, class: &str| -> Result<web_sys::Element, JsValue> {
        let e = document.create_element(tag)?;
        if !class.is_empty() {
            e.set_class_name(class);
        }
        Ok(e)
    };
    let tr = element("tr", "")?;
    tr.set_attribute("role", "row")?;
    tr.set_attribute("tabindex", "0")?;
    for class in [
        "job", "", "object", "", "", "", "", "exec", "attempts", "queue", "detail",
    ] {
        let td = element("td", class)?;
        td.set_attribute("role", "cell")?;
        tr.append_child(&td)?;
    }
    // The object cell holds the button that opens the explanation: the
    // kind, then the name in the text node after it.
    let cells = tr.children();
    let button = element("button", "link open")?;
    let kind = element("span", "kind")?;
    button.append_child(&kind)?;
    button.append_child(&document.create_text_node(" "))?;
    if let Some(object) = cells.item(2) {
        object.append_child(&button)?;
    }
    // The state and cause cells hold a badge each.
    for at in [3, 4] {
        if let Some(badge_cell) = cells.item(at) {
            let badge = element("span", "badge")?;
            badge_cell.append_child(&badge)?;
        }
    }
    Ok(tr)
}

/// One row's text, in the order `rows.js` reads it (a JSON array): key,
/// state, cause, job, submission, kind, name, held, foreign, execution,
/// attempts, the attempts' title, detail, and whether it changed recently.
#[derive(Debug, serde::Serialize)]
struct RowFields<'a>(
    String,
    &'static str,
    &'static str,
    &'a str,
    &'a str,
    &'a str,
    &'a str,
    String,
    &'static str,
    String,
    String,
    Option<String>,
    &'a str,
    bool,
);

impl<'a> RowFields<'a> {
    fn of(r: &'a Row, recent: bool) -> RowFields<'a> {
        let o = &r.observation;
        RowFields(
            r.key.id(),
            o.state.as_str(),
            o.cause.kind.as_str(),
            &o.job,
            &o.submission,
            &o.object.kind,
            &o.object.name,
            held_text(o),
            if o.foreign { "foreign" } else { "" },
            execution_text(o),
            attempts_text(&r.attempts),
            attempts_title(&r.attempts),
            &o.cause.detail,
            recent,
        )
    }
}

#[wasm_bindgen(module = "/src/ui/rows.js")]
extern "C" {
    /// Clones `template` once per row of `json` (an array of [`RowFields`])
    /// and fills in its text: the new rows' elements, in order.
    #[wasm_bindgen(js_name = buildRows)]
    fn build_rows(template: &web_sys::Element, json: &str) -> js_sys::Array;

    /// Fills `elements[i]`, a row shown before, with row `i` of `json` (an
    /// array of [`RowFields`]), emptied fields included.
    #[wasm_bindgen(js_name = fillRows)]
    fn fill_rows(elements: &js_sys::Array, json: &str);
}

/// The row elements in the body, by revision, in body order.
#[derive(Default)]
struct ShownRows {
    /// The body they are in. Leptos may hand a re-rendered table the body
    /// element of the one before (it patches a view of the same shape in
    /// place), rows and all: a body not drawn by this value yet is emptied
    /// first.
    body: Option<web_sys::Element>,
    template: Option<web_sys::Element>,
    order: Vec<u64>,
    elements: KeyedMap<u64, web_sys::Element>,
    /// The key id of the row each element shows, by revision: a changed
    /// row's element is filled in again ([`Plan::refill`]).
    keys: KeyedMap<u64, String>,
    /// Rows drawn as changed, with when they changed: each loses its
    /// `recent` class once [`RECENT_MS`] have passed.
    recent: Vec<(u64, f64)>,
    /// The queue cell each element shows, by revision, when it shows one.
    /// Kept apart from the row's fields: queue facts come in frames of
    /// their own, and change without the row's observation changing.
    queue_cells: KeyedMap<u64, QueueCell>,
    /// Which rows are drawn, and the others' padding.
    window: RowWindow,
    /// One row's height as last measured (0 before one is drawn).
    row_height: f64,
}

impl ShownRows {
    /// Makes the body show the rows of `rows` near the view, in order, and
    /// pads it for the others.
    fn show(&mut self, body: &web_sys::Element, rows: &[Arc<Row>], now: f64) {
        let window = RowWindow::of(rows.len(), self.geometry(body));
        let drawn = rows.get(window.drawn.clone()).unwrap_or_default();
        self.draw(body, drawn, now);
        self.window = window;
        self.measure(body);
        self.pad(body);
    }

    /// Where the rows are against the view: row 0 starts at the body's top
    /// (the padding stands in for the rows above the drawn ones).
    fn geometry(&self, body: &web_sys::Element) -> Geometry {
        let view = web_sys::window()
            .and_then(|w| w.inner_height().ok())
            .and_then(|h| h.as_f64())
            .unwrap_or(0.0);
        Geometry {
            scrolled: -body.get_bounding_client_rect().top(),
            view,
            row: self.row(),
        }
    }

    /// One row's height: as measured, or guessed before a row is drawn.
    fn row(&self) -> f64 {
        if self.row_height > 0.0 {
            self.row_height
        } else {
            row_window::ROW_HEIGHT_GUESS
        }
    }

    /// Whether the view has moved far enough into the margin to draw again.
    fn should_move(&self, body: &web_sys::Element, count: usize) -> bool {
        self.window.should_move(count, self.geometry(body))
    }

    /// Takes the height of a drawn row: every row has one (no cell wraps).
    fn measure(&mut self, body: &web_sys::Element) {
        if let Some(first) = body.first_element_child() {
            let height = first.get_bounding_client_rect().height();
            if height.is_finite() && height >= 1.0 {
                self.row_height = height;
            }
        }
    }

    /// The body's padding: the height of the rows not drawn above and below.
    fn pad(&self, body: &web_sys::Element) {
        let Some(body) = body.dyn_ref::<web_sys::HtmlElement>() else {
            return;
        };
        let row = self.row();
        let style = body.style();
        for (side, rows) in [
            ("padding-top", self.window.above),
            ("padding-bottom", self.window.below),
        ] {
            let _ = if rows == 0 {
                style.remove_property(side).map(|_| ())
            } else {
                style.set_property(side, &format!("{:.2}px", rows as f64 * row))
            };
        }
    }

    /// Makes the body show `rows`, in order, after the [`Plan`].
    fn draw(&mut self, body: &web_sys::Element, rows: &[Arc<Row>], now: f64) {
        let template = match &self.template {
            Some(t) => t.clone(),
            None => match web_sys::window()
                .and_then(|w| w.document())
                .and_then(|d| row_template(&d).ok())
            {
                Some(t) => self.template.insert(t).clone(),
                None => return,
            },
        };
        if self.body.as_ref() != Some(body) {
            body.set_text_content(None);
            self.body = Some(body.clone());
            self.order.clear();
            self.elements.clear();
            self.keys.clear();
            self.recent.clear();
            self.queue_cells.clear();
        }
        let revisions: Vec<u64> = rows.iter().map(|r| r.revision).collect();
        let mut plan = Plan::between(&self.order, &revisions);
        let keys = &self.keys;
        plan.refill(
            |revision| keys.get(&revision).cloned(),
            |index| rows.get(index).map(|r| r.key.id()),
        );
        for revision in &plan.removed {
            if let Some(e) = self.elements.remove(revision) {
                e.remove();
            }
            self.keys.remove(revision);
        }
        let refilled_before: Vec<u64> = plan.refilled.iter().map(|(r, _)| *r).collect();
        self.recent
            .retain(|(r, _)| !plan.removed.contains(r) && !refilled_before.contains(r));
        let recent_of = |r: &Row| r.changed_at.filter(|t| now - t < RECENT_MS);
        if !plan.refilled.is_empty() {
            let elements = js_sys::Array::new();
            let mut fields = Vec::with_capacity(plan.refilled.len());
            for (before, index) in &plan.refilled {
                let (Some(e), Some(r)) = (self.elements.remove(before), rows.get(*index)) else {
                    continue;
                };
                self.keys.remove(before);
                elements.push(&e);
                let recent = recent_of(r);
                let row_fields = RowFields::of(r, recent.is_some());
                self.keep(r, e, row_fields.0.clone(), recent);
                fields.push(row_fields);
            }
            // Serializing strings and flags cannot fail; an empty list
            // would leave those rows' old text, until they next change.
            let json = serde_json::to_string(&fields).unwrap_or_else(|_| "[]".into());
            fill_rows(&elements, &json);
        }
        let created: Vec<(&Row, Option<f64>)> = plan
            .created
            .iter()
            .filter_map(|i| rows.get(*i))
            .map(|r| (&**r, recent_of(r)))
            .collect();
        if !created.is_empty() {
            let fields: Vec<RowFields> = created
                .iter()
                .map(|(r, recent)| RowFields::of(r, recent.is_some()))
                .collect();
            // Serializing strings and flags cannot fail; an empty list
            // would only leave those rows to the next call.
            let json = serde_json::to_string(&fields).unwrap_or_else(|_| "[]".into());
            let built = build_rows(&template, &json);
            for ((i, (r, recent)), row_fields) in (0u32..).zip(&created).zip(fields) {
                let Ok(e) = built.get(i).dyn_into::<web_sys::Element>() else {
                    continue;
                };
                self.keep(r, e, row_fields.0, *recent);
            }
        }
        for place in &plan.places {
            let Some(e) = revisions
                .get(place.index)
                .and_then(|r| self.elements.get(r))
            else {
                continue;
            };
            let before = place.before.and_then(|b| self.elements.get(&b));
            // A refilled row often is where it belongs already; moving it
            // anyway would take the focus off it (and relayout it).
            let in_place = e.parent_node().as_ref() == Some(body.as_ref())
                && e.next_element_sibling().as_ref() == before;
            if !in_place {
                let _ = body.insert_before(e, before.map(|b| b.as_ref()));
            }
        }
        // Only what is in the body: a row the browser failed to build is
        // made again next time, not taken as shown.
        let elements = &self.elements;
        self.order = revisions
            .into_iter()
            .filter(|r| elements.contains_key(r))
            .collect();
    }

    /// Makes each shown TrainJob's queue cell say what `book` says of it.
    /// Only cells that differ from what they show are touched, so a book
    /// that did not change costs a lookup per shown row, and a page without
    /// Kueue nothing at all.
    fn show_queues(&mut self, rows: &[Arc<Row>], book: &QueueBook) {
        if book.is_empty() && self.queue_cells.is_empty() {
            return;
        }
        let elements = &self.elements;
        self.queue_cells
            .retain(|revision, _| elements.contains_key(revision));
        for row in rows {
            let Some(element) = self.elements.get(&row.revision) else {
                continue;
            };
            let wanted = book.cell(&row.key);
            if self.queue_cells.get(&row.revision) == wanted.as_ref() {
                continue;
            }
            let Some(cell) = element.children().item(QUEUE_CELL) else {
                continue;
            };
            match wanted {
                Some(wanted) => {
                    cell.set_text_content(Some(&wanted.text));
                    let _ = cell.set_attribute("title", &wanted.title);
                    // Loud on purpose: the most common mistake with queues.
                    let _ = cell
                        .class_list()
                        .toggle_with_force("never-fits", wanted.never_fits);
                    self.queue_cells.insert(row.revision, wanted);
                }
                None => {
                    cell.set_text_content(None);
                    let _ = cell.remove_attribute("title");
                    let _ = cell.class_list().remove_1("never-fits");
                    self.queue_cells.remove(&row.revision);
                }
            }
        }
    }

    /// Takes `e` as the element of row `r`, whose key id is `key`; it is
    /// marked recent since `recent`, if that is given.
    fn keep(&mut self, r: &Row, e: web_sys::Element, key: String, recent: Option<f64>) {
        self.elements.insert(r.revision, e);
        self.keys.insert(r.revision, key);
        if let Some(t) = recent {
            self.recent.push((r.revision, t));
        }
    }

    /// Takes the `recent` mark off rows that changed [`RECENT_MS`] or more
    /// before `now`.
    fn expire(&mut self, now: f64) {
        let elements = &self.elements;
        self.recent.retain(|(revision, t)| {
            let still = now - t < RECENT_MS;
            if let (false, Some(e)) = (still, elements.get(revision)) {
                let _ = e.class_list().remove_1("recent");
            }
            still
        });
    }
}

#[component]
pub fn Table(
    #[prop(into)] rows: Signal<Vec<Arc<Row>>>,
    #[prop(into)] now: Signal<f64>,
    /// The queue facts of the jobs shown (empty without Kueue).
    #[prop(into)]
    queues: Signal<Arc<QueueBook>>,
    on_open: Callback<ItemKey>,
) -> impl IntoView {
    // The body's rows are not Leptos views: this effect keeps them in step
    // with `rows` (see [`ShownRows`]), the DOM being the outside it syncs.
    let body = NodeRef::<leptos::html::Tbody>::new();
    let shown = StoredValue::new_local(ShownRows::default());
    // Bumped when the view has scrolled (or the window resized) far enough
    // into the drawn rows' margin that other rows must be drawn.
    let moved = RwSignal::new(0u64);
    Effect::new(move |_| {
        let Some(body) = body.get() else { return };
        let now = now.get_untracked();
        moved.track();
        let book = queues.get_untracked();
        rows.with(|rows| {
            shown.update_value(|s| {
                s.show(&body, rows, now);
                // Rows newly drawn get their queue cells at once.
                let drawn = rows.get(s.window.drawn.clone()).unwrap_or_default();
                s.show_queues(drawn, &book);
            })
        });
        mark("rows-drawn");
    });
    for event in ["scroll", "resize"] {
        let listener = window_event_listener_untyped(event, move |_| {
            let Some(body) = body.get_untracked() else {
                return;
            };
            let count = rows.with_untracked(Vec::len);
            if shown.with_value(|s| s.should_move(&body, count)) {
                moved.update(|m| *m += 1);
            }
        });
        on_cleanup(move || listener.remove());
    }
    // After the rows (effects run in the order they are made), and again
    // whenever a queues frame comes.
    Effect::new(move |_| {
        let book = queues.get();
        rows.with(|rows| shown.update_value(|s| s.show_queues(rows, &book)));
    });
    Effect::new(move |_| {
        let now = now.get();
        shown.update_value(|s| s.expire(now));
    });
    view! {
        <table class="obs" role="table" aria-label="observations">
            <thead role="rowgroup"><tr role="row">
                <th scope="col" role="columnheader">"job"</th><th scope="col" role="columnheader">"submission"</th><th scope="col" role="columnheader">"object"</th>
                <th scope="col" role="columnheader">"state"</th><th scope="col" role="columnheader">"cause"</th><th scope="col" role="columnheader">"held"</th>
                <th scope="col" role="columnheader">"foreign"</th><th scope="col" role="columnheader">"execution"</th>
                <th scope="col" role="columnheader" title="executions (A, J) of the TrainJob; hover a count for the previous attempt's cause">"attempts"</th>
                <th scope="col" role="columnheader" title="under Kueue: a waiting TrainJob's place in line, or what it waits for; hover for what blocks it">"queue"</th>
                <th scope="col" role="columnheader">"detail"</th>
            </tr></thead>
            <tbody role="rowgroup" node_ref=body
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

    /// The order `rows.js` destructures a row in, checked on every row of
    /// every golden case: a field moved on one side only fails here.
    #[test]
    fn a_rows_fields_are_in_the_order_rows_js_reads_them() {
        use crate::store::Store;
        use classify_wasm::Options;
        let mut seen = 0;
        let (mut held, mut titled, mut foreign) = (0, 0, 0);
        for case in test_support::shared_cases() {
            let store = Store::load(&case["snapshot"].to_string(), Options::default()).unwrap();
            for r in store.rows() {
                let o = &r.observation;
                let json = serde_json::to_value(RowFields::of(r, seen % 2 == 0)).unwrap();
                let expected = serde_json::json!([
                    r.key.id(),
                    o.state.as_str(),
                    o.cause.kind.as_str(),
                    o.job,
                    o.submission,
                    o.object.kind,
                    o.object.name,
                    held_text(o),
                    if o.foreign { "foreign" } else { "" },
                    execution_text(o),
                    attempts_text(&r.attempts),
                    attempts_title(&r.attempts),
                    o.cause.detail,
                    seen % 2 == 0,
                ]);
                assert_eq!(json, expected, "{}", r.key.id());
                held += usize::from(o.held);
                foreign += usize::from(o.foreign);
                titled += usize::from(attempts_title(&r.attempts).is_some());
                seen += 1;
            }
        }
        assert!(
            seen >= 20 && held > 0 && foreign > 0 && titled > 0,
            "{seen} {held} {foreign} {titled}"
        );
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
