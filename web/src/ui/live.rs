//! The live dashboard: the namespace's `snapshots` stream feeds the store,
//! the table shows it, and `/explain` explains one of its objects.
//! What the stream's client does when it opens, fails or is refused is
//! `crate::stream_client`'s pure step; this file carries its actions out
//! (an `EventSource`, a probe, a timer, a fetch) and feeds back what
//! happened.

use std::sync::Arc;

use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::desktop::{Desktop, DesktopToggle};
use super::explain::ExplainView;
use super::net::{fetch_text, probe_status, FetchError};
use super::queues::QueuesPage;
use super::signin::Auth;
use super::table::{Bar, Counts, Filters, Table};
use super::{mark, now_ms, Nav};
use crate::history::{inspect_url, HistoryView};
use crate::query::{Filter, Page, ViewState};
use crate::queue_book::QueueBook;
use crate::repaint::{HeldChanges, Repaint, RepaintGate};
use crate::server_info::ServerInfo;
use crate::store::{ItemKey, Row, Store};
use crate::stream_client::{snapshots_url, Action, Input, Status, StreamClient};
use classify_wasm::Options;

/// What the indicator says, given the time.
fn status_text(status: Status) -> String {
    let at = status
        .since()
        .and_then(|since| {
            js_sys::Date::new(&JsValue::from_f64(since))
                .to_locale_time_string("en-GB")
                .as_string()
        })
        .unwrap_or_default();
    status.text(&at)
}

struct Connection {
    source: web_sys::EventSource,
    _handlers: Vec<Closure<dyn FnMut(web_sys::Event)>>,
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.source.close();
    }
}

#[derive(Clone, Copy)]
struct Live {
    store: RwSignal<Store>,
    loaded: RwSignal<bool>,
    client: RwSignal<StreamClient>,
    holder: StoredValue<Option<Connection>, LocalStorage>,
    repaint: StoredValue<RepaintGate>,
    held: StoredValue<HeldChanges>,
    auth: Auth,
    info: RwSignal<Option<Result<ServerInfo, String>>>,
    desktop: Desktop,
    /// The last `queues` frame's facts (empty without Kueue).
    queues: RwSignal<Arc<QueueBook>>,
}

/// Tells the views the store changed: at once for the first change after a
/// quiet frame, then once per animation frame however many `change` events
/// arrive ([`RepaintGate`]).
fn schedule_repaint(live: Live) {
    let mut gate = live.repaint.get_value();
    let now = gate.on_change();
    live.repaint.set_value(gate);
    if now == Repaint::Now {
        live.store.notify();
        request_animation_frame(move || on_frame(live));
    }
}

fn on_frame(live: Live) {
    let Some(mut gate) = live.repaint.try_get_value() else {
        return;
    };
    let now = gate.on_frame();
    live.repaint.set_value(gate);
    if now == Repaint::Now {
        live.store.notify();
        request_animation_frame(move || on_frame(live));
    }
}

/// Runs `f` when the browser is next idle (at the latest after a second),
/// after the frames and input that are waiting: for work a paint must not
/// wait for.
fn when_idle(f: impl FnOnce() + 'static) {
    let Some(window) = web_sys::window() else {
        return;
    };
    let callback = Closure::once_into_js(f);
    let options = web_sys::IdleRequestOptions::new();
    options.set_timeout(1000);
    if window
        .request_idle_callback_with_options(callback.unchecked_ref(), &options)
        .is_err()
    {
        // No idle callbacks in this browser: after this task, then.
        let _ = window.set_timeout_with_callback(callback.unchecked_ref());
    }
}

/// Frames at least this long are copied into wasm through the browser's
/// encoder (see [`message_text`]).
const ENCODED_FRAME: u32 = 64 << 10;

#[wasm_bindgen]
extern "C" {
    /// The browser's `TextEncoder`, for `encodeInto` with a JS string as the
    /// source (web-sys's takes a Rust `&str`).
    #[wasm_bindgen(js_name = TextEncoder)]
    type Utf8Encoder;

    #[wasm_bindgen(constructor, js_class = "TextEncoder", catch)]
    fn new() -> Result<Utf8Encoder, JsValue>;

    /// Writes the UTF-8 of `source` into `destination`, which is wasm
    /// memory, and says how much it `read` (UTF-16 units) and `written`
    /// (bytes).
    #[wasm_bindgen(method, js_class = "TextEncoder", js_name = encodeInto)]
    fn encode_into(
        this: &Utf8Encoder,
        source: &js_sys::JsString,
        destination: &mut [u8],
    ) -> JsValue;
}

/// An event's frame text. A snapshot is megabytes: the browser's
/// `TextEncoder` writes it into wasm memory in one native call, since
/// wasm-bindgen's own conversion walks the string a character at a time in
/// JS first, which was a tenth of a 1,000-TrainJob first paint. It writes
/// in place (`encodeInto`), not into a new array then copied: for a 5 MB
/// snapshot 4–8 ms against 17–27 ms, measured in Chromium.
fn message_text(e: &web_sys::Event) -> Option<String> {
    let data = e.dyn_ref::<web_sys::MessageEvent>()?.data();
    match data.dyn_ref::<js_sys::JsString>() {
        Some(text) if text.length() >= ENCODED_FRAME => encoded(text).or_else(|| data.as_string()),
        _ => data.as_string(),
    }
}

/// `text` as UTF-8, written by the browser's encoder straight into the
/// string's buffer. One byte per UTF-16 unit holds an ASCII text, as a
/// snapshot nearly always is; three hold any text.
fn encoded(text: &js_sys::JsString) -> Option<String> {
    let encoder = Utf8Encoder::new().ok()?;
    let units = text.length() as usize;
    let count = |result: &JsValue, name: &str| {
        js_sys::Reflect::get(result, &JsValue::from_str(name))
            .ok()
            .and_then(|v| v.as_f64())
    };
    for capacity in [units, units.checked_mul(3)?] {
        let mut bytes = vec![0u8; capacity];
        let result = encoder.encode_into(text, &mut bytes);
        let (read, written) = (count(&result, "read")?, count(&result, "written")?);
        if read as usize == units {
            bytes.truncate(written as usize);
            return String::from_utf8(bytes).ok();
        }
    }
    None
}

/// Applies changes' frame texts, from the stream of `generation`, to the
/// store in order, and repaints.
fn apply_changes(live: Live, generation: u64, texts: Vec<String>) {
    if texts.is_empty() {
        return;
    }
    let now = now_ms();
    // Each frame's text goes to the store as it came: parsed there once.
    let applied = live.store.try_update_untracked(|s| {
        let applied: Vec<_> = texts
            .iter()
            .filter_map(|text| s.apply_change(text, now))
            .collect();
        live.desktop.after(s, &applied);
        !applied.is_empty()
    });
    if applied != Some(true) {
        return;
    }
    schedule_repaint(live);
    step(live, Input::Delivered { generation });
}

/// Feeds `input` to the stream client and carries out what it says. A
/// disposed page has no client: nothing is done.
fn step(live: Live, input: Input) {
    let Some(step) = live.client.try_update_untracked(|c| c.step(input)) else {
        return;
    };
    if step.changed {
        live.client.notify();
    }
    for action in step.actions {
        perform(live, action);
    }
}

fn perform(live: Live, action: Action) {
    match action {
        Action::Open { generation, url } => connect(live, generation, url),
        Action::Close => {
            live.holder.try_set_value(None);
        }
        Action::Probe { generation, url } => leptos::task::spawn_local(async move {
            let status = probe_status(&url).await.ok();
            step(live, Input::Probed { generation, status });
        }),
        Action::RetryAfter { generation, ms } => set_timeout(
            move || step(live, Input::RetryDue { generation }),
            std::time::Duration::from_millis(ms),
        ),
        Action::ListNamespaces { generation } => {
            leptos::task::spawn_local(offer_namespaces(live, generation))
        }
        Action::SignIn => live.auth.unauthorized(),
    }
}

/// The stream `index.html` opened before the app started, with the events
/// it buffered meanwhile (in order): taken once, and only if it is the
/// stream at `url`. One the server already refused is taken too: its
/// buffered error asks why, as the app's own stream would have.
fn take_early_stream(url: &str) -> Option<(web_sys::EventSource, js_sys::Array)> {
    let window = web_sys::window()?;
    let key = JsValue::from_str("__ddEarlyStream");
    let early = js_sys::Reflect::get(&window, &key)
        .ok()
        .filter(JsValue::is_object)?;
    let _ = js_sys::Reflect::delete_property(window.as_ref(), &key);
    let field = |name: &str| js_sys::Reflect::get(&early, &JsValue::from_str(name)).ok();
    let source = field("source")?.dyn_into::<web_sys::EventSource>().ok()?;
    let events = field("events").and_then(|e| e.dyn_into::<js_sys::Array>().ok());
    // From here on the app's own listeners get the events.
    let _ = js_sys::Reflect::set(&early, &JsValue::from_str("events"), &JsValue::NULL);
    let same_stream = field("ns")
        .and_then(|n| n.as_string())
        .is_some_and(|ns| snapshots_url(&ns) == url);
    if !same_stream {
        source.close();
        return None;
    }
    Some((source, events.unwrap_or_default()))
}

/// Whether callbacks of connection `generation` still speak for the page:
/// callbacks and timers can outlive the component (a 401 from the
/// namespaces fetch brings the form while a probe is under way), and a
/// disposed component is not current.
fn is_current(live: Live, generation: u64) -> bool {
    live.client
        .try_with_untracked(|c| c.is_current(generation))
        .unwrap_or(false)
}

/// A `snapshot` event's text: the store is loaded from it and shown, and
/// the changes held while it loaded are applied after the next frame.
fn take_snapshot(live: Live, generation: u64, text: &str) {
    let current = move || is_current(live, generation);
    let Ok(mut store) = Store::load(text, Options::default()) else {
        return;
    };
    mark("store-loaded");
    // The rows drawn from the `rows` event, or before a
    // reconnect, stay where they are the same.
    live.store
        .with_untracked(|earlier| store.keep_rows_of(earlier));
    live.desktop.baseline(&store);
    live.store.set(store);
    live.held.update_value(HeldChanges::on_snapshot);
    live.loaded.set(true);
    step(live, Input::Delivered { generation });
    mark("views-updated");
    let release = move || {
        if current() {
            let held = live.held.try_update_value(HeldChanges::release);
            apply_changes(live, generation, held.unwrap_or_default());
        }
    };
    // A hidden tab draws no frames: the changes wait a second at
    // most.
    set_timeout(release, std::time::Duration::from_secs(1));
    request_animation_frame(move || {
        mark("next-frame");
        // The table is drawn in this frame. The changes that
        // came meanwhile are applied in the task after it; the
        // store's index, which changes and explanations read,
        // is built then or when the page is next idle, not
        // before the table.
        set_timeout(release, std::time::Duration::ZERO);
        when_idle(move || {
            if current() {
                live.store.with_untracked(Store::prepare);
                mark("store-indexed");
            }
        });
    });
}

/// Whether an `error` event closed the stream: the browser gives up on an
/// HTTP error (readyState CLOSED); on a network error it reconnects by
/// itself.
fn closed_by(e: &web_sys::Event) -> bool {
    e.target()
        .and_then(|t| t.dyn_into::<web_sys::EventSource>().ok())
        .is_some_and(|s| s.ready_state() == web_sys::EventSource::CLOSED)
}

/// Opens the stream at `url` for `generation`, in place of any open one.
fn connect(live: Live, generation: u64, url: String) {
    let (source, early_events) = match take_early_stream(&url) {
        Some((source, events)) => (source, Some(events)),
        None => match web_sys::EventSource::new(&url) {
            Ok(source) => (source, None),
            Err(_) => {
                let now = now_ms();
                return step(live, Input::CouldNotOpen { generation, now });
            }
        },
    };
    let current = move || is_current(live, generation);
    let on_snapshot = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
        if !current() {
            return;
        }
        mark("snapshot-event");
        if let Some(text) = message_text(&e) {
            take_snapshot(live, generation, &text);
        }
    });
    // The server's classification of the snapshot that follows, drawn while
    // that snapshot is on its way and loading: the first paint does not
    // wait for the page's own classification, which then takes each row
    // that is the same as drawn (all of them, but for a bug). Once a
    // snapshot is loaded, the table shows it until the next one is.
    let on_rows = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
        if !current() || live.loaded.get_untracked() {
            return;
        }
        mark("rows-event");
        if let Some(store) = message_text(&e).and_then(|text| Store::of_rows(&text).ok()) {
            live.store.set(store);
            mark("rows-stored");
        }
    });
    let on_change = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
        if !current() {
            return;
        }
        if let Some(text) = message_text(&e) {
            let now = live.held.try_update_value(|h| h.on_change(text));
            apply_changes(live, generation, now.unwrap_or_default());
        }
    });
    // The queue facts as the server reads them for this caller; each frame
    // replaces the last.
    let on_queues = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
        if !current() {
            return;
        }
        if let Some(book) = message_text(&e).and_then(|text| QueueBook::from_frame(&text).ok()) {
            live.queues.set(Arc::new(book));
        }
    });
    let on_open = Closure::<dyn FnMut(web_sys::Event)>::new(move |_| {
        step(live, Input::Opened { generation });
    });
    let on_error = Closure::<dyn FnMut(web_sys::Event)>::new(move |e: web_sys::Event| {
        let closed = closed_by(&e);
        let now = now_ms();
        step(
            live,
            Input::Failed {
                generation,
                closed,
                now,
            },
        );
    });
    let _ = source.add_event_listener_with_callback("rows", on_rows.as_ref().unchecked_ref());
    let _ =
        source.add_event_listener_with_callback("snapshot", on_snapshot.as_ref().unchecked_ref());
    let _ = source.add_event_listener_with_callback("change", on_change.as_ref().unchecked_ref());
    let _ = source.add_event_listener_with_callback("queues", on_queues.as_ref().unchecked_ref());
    source.set_onopen(Some(on_open.as_ref().unchecked_ref()));
    source.set_onerror(Some(on_error.as_ref().unchecked_ref()));
    // What an early stream brought before the app listened, in order.
    for event in early_events.iter().flat_map(js_sys::Array::iter) {
        let Ok(event) = event.dyn_into::<web_sys::Event>() else {
            continue;
        };
        let handler = match event.type_().as_str() {
            "rows" => &on_rows,
            "snapshot" => &on_snapshot,
            "change" => &on_change,
            "queues" => &on_queues,
            "open" => &on_open,
            "error" => &on_error,
            _ => continue,
        };
        let _ = handler
            .as_ref()
            .unchecked_ref::<js_sys::Function>()
            .call1(&JsValue::NULL, &event);
    }
    live.holder.set_value(Some(Connection {
        source,
        _handlers: vec![
            on_rows,
            on_snapshot,
            on_change,
            on_queues,
            on_open,
            on_error,
        ],
    }));
}

/// After a refusal: asks which namespaces the user may see now (a revoked
/// grant may have changed them since the page loaded) for the offer and the
/// picker.
async fn offer_namespaces(live: Live, generation: u64) {
    let answer = fetch_text("/api/v1/namespaces").await;
    let current = live.client.try_with_untracked(|c| c.is_current(generation));
    if current != Some(true) {
        return;
    }
    let visible = match answer {
        Err(FetchError::Unauthorized) => return step(live, Input::Unauthorized { generation }),
        Ok(text) => {
            let info = ServerInfo::parse(&text);
            let visible = info.as_ref().ok().map(|i| i.namespaces.clone());
            if info.is_ok() {
                live.info.set(Some(info));
            }
            visible
        }
        Err(_) => None,
    };
    step(
        live,
        Input::Listed {
            generation,
            visible,
        },
    );
}

/// Saves `text` as a file through a temporary link.
pub fn download(name: &str, text: &str) {
    download_parts(name, &js_sys::Array::of1(&JsValue::from_str(text)));
}

/// Saves the JavaScript strings `parts` as one JSON file named `name`.
pub fn download_parts(name: &str, parts: &js_sys::Array) {
    let options = web_sys::BlobPropertyBag::new();
    options.set_type("application/json");
    let Ok(blob) = web_sys::Blob::new_with_str_sequence_and_options(parts, &options) else {
        return;
    };
    let Ok(url) = web_sys::Url::create_object_url_with_blob(&blob) else {
        return;
    };
    let document = web_sys::window().and_then(|w| w.document());
    if let Some(a) = document
        .and_then(|d| d.create_element("a").ok())
        .and_then(|a| a.dyn_into::<web_sys::HtmlAnchorElement>().ok())
    {
        a.set_href(&url);
        a.set_download(name);
        a.click();
    }
    let _ = web_sys::Url::revoke_object_url(&url);
}

/// The object the URL explains, with its explanation (none while it is not
/// in the store) and its objects.
type Explained = Option<(
    ItemKey,
    Option<classify_wasm::Explanation>,
    Vec<serde_json::Value>,
)>;

/// The explained object's history, from the server: asked again whenever
/// the object's observation changes, so the timeline follows the table. A
/// late answer for an object no longer shown is dropped.
fn follow_history(explained: Memo<Explained>) -> RwSignal<HistoryView> {
    let history = RwSignal::new(HistoryView::Loading);
    let history_asked = StoredValue::new(0u64);
    let history_of: StoredValue<Option<ItemKey>> = StoredValue::new(None);
    let history_key = Memo::new(move |_| {
        explained.with(|e| {
            e.as_ref().map(|(key, explanation, _)| {
                let seen = explanation.as_ref().map(|x| {
                    (
                        x.observation.state,
                        x.observation.cause.kind,
                        x.observation.held,
                    )
                });
                (key.clone(), seen)
            })
        })
    });
    Effect::new(move |_| {
        let Some((key, _)) = history_key.get() else {
            return;
        };
        let asked = history_asked.get_value() + 1;
        history_asked.set_value(asked);
        // Another object: its history is not the last one's. The same
        // object keeps showing its last answer until the new one comes.
        if history_of.with_value(|k| k.as_ref() != Some(&key)) {
            history_of.set_value(Some(key.clone()));
            history.set(HistoryView::Loading);
        }
        let url = inspect_url(&key.namespace, &key.kind, &key.name);
        leptos::task::spawn_local(async move {
            let answer = match fetch_text(&url).await {
                Ok(text) => HistoryView::from_inspect(&text),
                Err(FetchError::Unauthorized) => HistoryView::Unavailable("not signed in".into()),
                Err(FetchError::Forbidden) => HistoryView::Unavailable("forbidden".into()),
                Err(FetchError::Failed(e)) => HistoryView::Unavailable(e),
            };
            if history_asked.try_get_value() == Some(asked) {
                history.try_set(answer);
            }
        });
    });
    history
}

/// The namespace picker: a change shows the namespace's dashboard, or its
/// Queues page from the Queues page.
#[component]
fn NamespacePicker(
    namespaces: Memo<Option<Result<Vec<String>, String>>>,
    ns: Memo<Option<String>>,
) -> impl IntoView {
    let nav = expect_context::<Nav>();
    move || match namespaces.get() {
        None => view! { <span class="muted">"loading namespaces…"</span> }.into_any(),
        Some(Err(e)) => view! { <span class="error" role="alert">{e}</span> }.into_any(),
        Some(Ok(list)) => {
            let selected = ns.get().unwrap_or_default();
            view! {
                <label>"Namespace "
                    <select id="namespace" on:change=move |ev| {
                        let n = event_target_value(&ev);
                        // The Queues page stays the Queues page.
                        let page = match nav.view.with_untracked(|v| v.page) {
                            Page::Queues => Page::Queues,
                            _ => Page::Dashboard,
                        };
                        nav.go(ViewState { page, namespace: Some(n), ..ViewState::default() });
                    }>
                        {list.into_iter().map(|n| {
                            let sel = n == selected;
                            view! { <option value=n.clone() selected=sel>{n.clone()}</option> }
                        }).collect_view()}
                    </select>
                </label>
            }
            .into_any()
        }
    }
}

/// Why the stream was refused, with the namespaces the user may see
/// offered instead.
fn denied_banner(live: Live, nav: Nav) -> Option<impl IntoView> {
    live.client.with(|c| c.denied().cloned()).map(|denied| {
        let offers = denied.offers();
        let offer_text = denied.offer_text();
        view! {
            <section id="forbidden" class="banner forbidden" role="alert">
                <p id="forbidden-message">{move || {
                    let user = live.auth.state.with(|s| s.whoami());
                    denied.message(user.as_deref())
                }}</p>
                <p>{offer_text}</p>
                <ul id="forbidden-offers">
                    {offers.into_iter().map(|n| {
                        let label = n.clone();
                        view! {
                            <li><button class="link" on:click=move |_| {
                                nav.go(ViewState { namespace: Some(n.clone()), ..ViewState::default() });
                            }>{label}</button></li>
                        }
                    }).collect_view()}
                </ul>
            </section>
        }
    })
}

/// Downloads the namespace's snapshot, named by the namespace and the time.
fn save_snapshot(live: Live, namespace: &str) {
    let text = live.store.with_untracked(Store::snapshot_json);
    let name = format!(
        "snapshot-{namespace}-{}.json",
        js_sys::Date::new_0()
            .to_iso_string()
            .as_string()
            .unwrap_or_default()
            .replace(':', "")
    );
    download(&name, &text);
}

/// The store's rows the filter shows. A row's revision changes whenever
/// its content does, so two lists are the same when their rows are the
/// same allocations: comparing 1,000 observations field by field on every
/// change is not needed.
fn filtered_rows(live: Live, filter: Memo<Filter>) -> Memo<Vec<Arc<Row>>> {
    Memo::new_with_compare(
        move |_| {
            filter.with(|f| {
                live.store.with(|s| {
                    s.rows()
                        .filter(|r| f.matches(&r.observation))
                        .cloned()
                        .collect()
                })
            })
        },
        |old, new| match (old, new) {
            (Some(old), Some(new)) => {
                old.len() != new.len() || old.iter().zip(new).any(|(a, b)| !Arc::ptr_eq(a, b))
            }
            _ => true,
        },
    )
}

/// Asks the server which namespaces it watches and whether it is a demo;
/// a 401 brings the sign-in form.
fn fetch_server_info(live: Live) {
    let info = live.info;
    leptos::task::spawn_local(async move {
        let result = match fetch_text("/api/v1/namespaces").await {
            Ok(text) => ServerInfo::parse(&text),
            Err(FetchError::Unauthorized) => {
                live.auth.unauthorized();
                return;
            }
            Err(FetchError::Forbidden) => Err("the server refused to list namespaces".into()),
            Err(FetchError::Failed(e)) => Err(e),
        };
        info.try_set(Some(result));
    });
}

/// Says that the cluster is the embedded, simulated one.
fn demo_banner() -> impl IntoView {
    view! {
        <p id="demo-banner" class="banner demo" role="note">
            <strong>"Demo cluster. "</strong>
            "These jobs are simulated by the embedded cluster, not read from a real one. \
             Start the server with a kubeconfig to watch yours."
        </p>
    }
}

/// The explained object: its explanation with the server's history and
/// the queue section, "Loading…" until the first snapshot, or a note that
/// it is not in the namespace (any more).
fn explanation_view(
    live: Live,
    (key, explanation, objects): (
        ItemKey,
        Option<classify_wasm::Explanation>,
        Vec<serde_json::Value>,
    ),
    back: Callback<()>,
    history: RwSignal<HistoryView>,
) -> AnyView {
    match explanation {
        Some(e) => {
            let queue = Signal::derive(move || live.queues.with(|q| q.section(&key)));
            view! { <ExplainView explanation=e objects=objects on_back=back history=history queue=queue /> }.into_any()
        }
        None if live.loaded.get() => view! {
            <p class="muted">{format!("{} {} is not in namespace {} (any more).", key.kind, key.name, key.namespace)}</p>
            <button class="link back" on:click=move |_| back.run(())>"← back to the table"</button>
        }
        .into_any(),
        None => view! { <p class="muted">"Loading…"</p> }.into_any(),
    }
}

#[component]
pub fn Live(#[prop(into)] now: Signal<f64>) -> impl IntoView {
    let nav = expect_context::<Nav>();
    let info: RwSignal<Option<Result<ServerInfo, String>>> = RwSignal::new(None);
    let live = Live {
        store: RwSignal::new(Store::default()),
        loaded: RwSignal::new(false),
        client: RwSignal::new(StreamClient::default()),
        holder: StoredValue::new_local(None),
        repaint: StoredValue::new(RepaintGate::default()),
        held: StoredValue::new(HeldChanges::default()),
        auth: expect_context::<Auth>(),
        info,
        desktop: Desktop::new(nav),
        queues: RwSignal::new(Arc::default()),
    };
    fetch_server_info(live);
    let namespaces = Memo::new(move |_| info.get().map(|r| r.map(|i| i.namespaces)));
    let demo = Memo::new(move |_| matches!(info.get(), Some(Ok(ServerInfo { demo: true, .. }))));
    // Pick the first namespace when the URL names none.
    Effect::new(move |_| {
        if let Some(Ok(list)) = namespaces.get() {
            if nav.view.with_untracked(|v| v.namespace.is_none()) {
                if let Some(first) = list.first().cloned() {
                    nav.replace(|v| v.namespace = Some(first));
                }
            }
        }
    });
    let ns = Memo::new(move |_| nav.view.with(|v| v.namespace.clone()));
    // One stream per namespace shown.
    Effect::new(move |_| {
        let Some(namespace) = ns.get() else { return };
        live.holder.set_value(None);
        live.loaded.set(false);
        live.store.set(Store::default());
        live.queues.set(Arc::default());
        live.desktop.for_namespace(&namespace);
        step(live, Input::Chosen { namespace });
    });
    on_cleanup(move || step(live, Input::Disposed));

    let filter = Memo::new(move |_| nav.view.with(|v| v.filter.clone()));
    let rows = filtered_rows(live, filter);
    let counts = Memo::new(move |_| {
        live.store
            .with(|s| Counts::of(s.rows().map(|r| &r.observation)))
    });
    let total = Signal::derive(move || counts.with(|c| c.total));
    let shown = Signal::derive(move || rows.with(Vec::len));
    let open = Callback::new(move |key: ItemKey| {
        nav.go(nav.view.get_untracked().explaining(&key.kind, &key.name));
    });
    let back = Callback::new(move |_| nav.go(nav.view.get_untracked().table()));
    let target = Memo::new(move |_| {
        nav.view.with(|v| {
            if v.page != Page::Explain {
                return None;
            }
            let (kind, name) = v.target.clone()?;
            Some(ItemKey::new(
                &kind,
                v.namespace.as_deref().unwrap_or(""),
                &name,
            ))
        })
    });
    let explained = Memo::new(move |_| {
        let key = target.get()?;
        live.store
            .with(|s| Some((key.clone(), s.explain(&key), s.objects_of(&key))))
    });
    let history = follow_history(explained);

    let indicator = move || {
        let status = live.client.with(|c| c.status(now.get()));
        let text = status_text(status);
        view! { <span id="connection" class=format!("conn conn-{}", status.class()) role="status">{text}</span> }
    };
    let body = move || {
        if live.client.with(|c| c.denied().is_some()) {
            return denied_banner(live, nav).into_any();
        }
        if nav.view.with(|v| v.page == Page::Queues) {
            return view! { <QueuesPage namespace=ns queues=live.queues /> }.into_any();
        }
        if let Some(explained) = explained.get() {
            return explanation_view(live, explained, back, history);
        }
        // The table is drawn, empty, before the first snapshot comes (not
        // in the same task as its rows): the snapshot then only fills it in.
        let waiting = move || {
            (!live.loaded.get()).then(|| {
                let text = if live.store.with(|s| s.row_count() > 0) {
                    "The server's classification: loading the snapshot to explain it…"
                } else {
                    "Waiting for the first snapshot…"
                };
                view! { <p class="muted" id="loading">{text}</p> }
            })
        };
        view! {
            {waiting}
            <Bar counts=counts />
            <Filters shown=shown total=total />
            <Table rows=rows now=now queues=live.queues on_open=open />
        }
        .into_any()
    };
    view! {
        {move || demo.get().then(demo_banner)}
        <section class="toolbar">
            <NamespacePicker namespaces=namespaces ns=ns />
            {indicator}
            <button id="download" on:click=move |_| save_snapshot(live, &ns.get_untracked().unwrap_or_default()) disabled=move || !live.loaded.get()>"Download snapshot"</button>
            <DesktopToggle desktop=live.desktop />
        </section>
        {body}
    }
}
