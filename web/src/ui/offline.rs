//! The offline page: a kubectl dump or a downloaded snapshot, pasted or
//! dropped, classified in this browser. Nothing is sent anywhere: the
//! parsing and the rules run in the page's own Web Worker
//! (`crate::offline_worker`), so a big dump never freezes the page, shows
//! its progress and can be cancelled.

use std::rc::Rc;
use std::sync::Arc;

use leptos::prelude::*;
use wasm_bindgen::{JsCast, JsValue};

use super::explain::ExplainView;
use super::offline_worker::{download_text, Answer, PageWorker};
use super::table::{Bar, Counts, Filters, Table};
use super::Nav;
use crate::dump_file::{self, PickedFile};
use crate::history::HistoryView;
use crate::offline_worker::{Classified, Explaining, Load, Loads, Reply, Request};
use crate::queue_book::QueueBook;
use crate::store::ItemKey;

/// The page's worker, and the file it was last given (a `File` is the
/// browser's, not a signal's).
#[derive(Clone, Copy)]
struct Worker {
    worker: StoredValue<Option<Rc<PageWorker>>, LocalStorage>,
    picked: StoredValue<Option<web_sys::File>, LocalStorage>,
}

impl Worker {
    /// Runs `f` on the page's worker (there is one from the page's start).
    fn with(&self, f: impl FnOnce(&PageWorker)) {
        self.worker.with_value(|w| {
            if let Some(w) = w {
                f(w)
            }
        });
    }

    fn post(&self, request: &Request, beside: &JsValue) {
        self.with(|w| w.post(request, beside));
    }

    fn stop(&self) {
        self.with(PageWorker::stop);
    }
}

/// The page's signals that the worker's answers move.
#[derive(Clone, Copy)]
struct Answers {
    loads: RwSignal<Loads>,
    explaining: RwSignal<Explaining>,
    /// The id of the snapshot asked for by Download, until it comes.
    download: RwSignal<Option<u64>>,
}

impl Answers {
    fn take(self, answer: Answer) {
        let reply = answer.reply;
        match &reply {
            Reply::Explained { .. } => {
                // One job's objects: small, so explained on this thread.
                let view = answer.beside.as_string();
                self.explaining.update(|e| {
                    e.on_reply(&reply, view.as_deref());
                });
            }
            Reply::Snapshot { id, sent } => {
                if self.download.get_untracked() == Some(*id) {
                    self.download.set(None);
                    if *sent {
                        download_text("snapshot.json", &answer.beside);
                    }
                }
            }
            _ => {
                self.loads.update(|l| {
                    l.on_reply(reply);
                });
            }
        }
    }
}

/// The page's state: what is input, the worker, and what it answered.
/// Signals only, so it is `Copy` into every handler.
#[derive(Clone, Copy)]
struct Page {
    input: DumpSource,
    mode: RwSignal<String>,
    nodes: RwSignal<String>,
    answers: Answers,
    worker: Worker,
}

impl Page {
    fn new() -> Page {
        let answers = Answers {
            loads: RwSignal::new(Loads::default()),
            explaining: RwSignal::new(Explaining::default()),
            download: RwSignal::new(None),
        };
        let loads = answers.loads;
        let worker = Worker {
            worker: StoredValue::new_local(None),
            picked: StoredValue::new_local(None),
        };
        // A worker that failed is let go, so the next request starts a new
        // one; after this callback, which is the worker's own listener.
        let failed = move || {
            loads.update(Loads::worker_failed);
            leptos::task::spawn_local(async move { worker.stop() });
        };
        let page_worker = PageWorker::new(move |answer| answers.take(answer), failed);
        // Its wasm loads while the user finds a file.
        page_worker.warm();
        worker.worker.set_value(Some(Rc::new(page_worker)));
        Page {
            input: DumpSource {
                text: RwSignal::new(String::new()),
                file: RwSignal::new(None),
                file_error: RwSignal::new(None),
            },
            mode: RwSignal::new("auto".to_string()),
            nodes: RwSignal::new("auto".to_string()),
            answers,
            worker,
        }
    }

    /// Classifies the picked file, or else the textarea's text.
    fn run(self) {
        let loads = self.answers.loads;
        let picked = self.worker.picked.get_value();
        let (beside, total, reading) = match &picked {
            Some(f) => (JsValue::from(f.clone()), dump_file::size_of(f.size()), true),
            None => {
                let input = self.input.text.get_untracked();
                if input.trim().is_empty() {
                    loads.update(Loads::clear);
                    return;
                }
                (JsValue::from_str(&input), input.len() as u64, false)
            }
        };
        // A load under way is dropped with its worker, not finished first.
        if loads.with_untracked(Loads::working) {
            self.worker.stop();
        }
        let mut id = 0;
        loads.update(|l| id = l.start(total, reading));
        self.answers.explaining.set(Explaining::Nothing);
        self.worker.post(
            &Request::Classify {
                id,
                mode: self.mode.get_untracked(),
                nodes: self.nodes.get_untracked(),
            },
            &beside,
        );
    }

    /// Stops the worker, and with it the load under way.
    fn cancel(self) {
        self.worker.stop();
        self.answers.loads.update(Loads::cancel);
        // A fresh one, ready for the next dump.
        self.worker.with(PageWorker::warm);
    }

    /// A picked or dropped file: refused by its size before a byte is read
    /// (reading it could crash the tab), else classified.
    fn read_file(self, picked: web_sys::File) {
        let DumpSource {
            file, file_error, ..
        } = self.input;
        let name = picked.name();
        let size = dump_file::size_of(picked.size());
        if let Err(refused) = dump_file::admit(&name, size) {
            self.worker.picked.set_value(None);
            file.set(None);
            self.answers.loads.update(Loads::clear);
            file_error.set(Some(refused));
            return;
        }
        file_error.set(None);
        self.worker.picked.set_value(Some(picked));
        file.set(Some(PickedFile { name, size }));
        self.run();
    }

    /// The text of a picked file, into the textarea, on request only: a
    /// big one costs seconds of layout there.
    fn show_text(self) {
        let Some(picked) = self.worker.picked.get_value() else {
            return;
        };
        leptos::task::spawn_local(async move {
            if let Ok(v) = wasm_bindgen_futures::JsFuture::from(picked.text()).await {
                self.input.text.set(v.as_string().unwrap_or_default());
                self.worker.picked.set_value(None);
                self.input.file.set(None);
            }
        });
    }

    /// Asks the worker for what `key`'s row read, unless asked already.
    fn ask_explanation(self, key: ItemKey) {
        if !self.answers.explaining.with_untracked(|e| e.needs(&key)) {
            return;
        }
        let mut id = 0;
        self.answers.loads.update_untracked(|l| id = l.next_id());
        self.answers.explaining.set(Explaining::Waiting {
            id,
            key: key.clone(),
        });
        self.worker.post(
            &Request::Explain {
                id,
                kind: key.kind,
                namespace: key.namespace,
                name: key.name,
            },
            &JsValue::UNDEFINED,
        );
    }

    /// Asks the worker for the snapshot to download.
    fn download(self) {
        let mut id = 0;
        self.answers.loads.update_untracked(|l| id = l.next_id());
        self.answers.download.set(Some(id));
        self.worker
            .post(&Request::Snapshot { id }, &JsValue::UNDEFINED);
    }
}

#[component]
pub fn Offline(#[prop(into)] now: Signal<f64>) -> impl IntoView {
    let nav = expect_context::<Nav>();
    let page = Page::new();
    let loads = page.answers.loads;
    let classified = Memo::new_with_compare(
        move |_| loads.with(|l| l.classified().cloned()),
        another_load,
    );
    let queues = Signal::derive(move || {
        classified.with(|c| match c {
            Some(c) => c.queues.clone(),
            None => Arc::default(),
        })
    });
    let back = Callback::new(move |_| nav.go(nav.view.get_untracked().table()));
    let target = Memo::new(move |_| explained_key(nav));
    // Asks the worker for the explanation the URL names, once the rows
    // it belongs to are there.
    Effect::new(move |_| {
        if let (Some(key), true) = (target.get(), classified.with(Option::is_some)) {
            page.ask_explanation(key);
        }
    });
    let cancel = Callback::new(move |()| page.cancel());
    let results = move || {
        if let Some(key) = target.get() {
            if classified.with(Option::is_some) {
                return explanation_view(page.answers.explaining, key, queues, back);
            }
        }
        loads.with(|l| match &l.state {
            Load::Idle => view! { <p class="muted">"Paste or drop input above, then classify."</p> }.into_any(),
            Load::Working { progress, .. } => load_progress(*progress, cancel),
            Load::Cancelled => view! { <p class="muted" id="cancelled">"Cancelled: nothing was classified."</p> }.into_any(),
            Load::Failed(e) => view! { <p class="error" id="input-error" role="alert">{e.clone()}</p> }.into_any(),
            Load::Done(c) if c.rows.is_empty() => view! { <p class="muted" id="empty">"The input holds no object of a kind that is read: nothing to show."</p> }.into_any(),
            Load::Done(_) => view! { <ClassifiedTable classified=classified queues=queues now=now /> }.into_any(),
        })
    };
    view! {
        <section class="offline">
            <p class="privacy" id="privacy">
                "Classified entirely in this browser: nothing you paste or drop is uploaded or sent anywhere."
            </p>
            <DumpInput input=page.input on_file=Callback::new(move |f| page.read_file(f))
                show_text=Callback::new(move |()| page.show_text()) />
            <OverridesBar mode=page.mode nodes=page.nodes loads=loads
                run=Callback::new(move |()| page.run()) download=Callback::new(move |()| page.download()) />
        </section>
        {results}
    }
}

/// The counts, the filters and the table of what the page classified.
#[component]
fn ClassifiedTable(
    classified: Memo<Option<Arc<Classified>>>,
    queues: Signal<Arc<QueueBook>>,
    now: Signal<f64>,
) -> impl IntoView {
    let nav = expect_context::<Nav>();
    let filter = Memo::new(move |_| nav.view.with(|v| v.filter.clone()));
    let rows = Memo::new(move |_| {
        filter.with(|f| {
            classified.with(|c| match c {
                Some(c) => c
                    .rows
                    .iter()
                    .filter(|r| f.matches(&r.observation))
                    .cloned()
                    .collect(),
                None => Vec::new(),
            })
        })
    });
    let counts = Memo::new(move |_| {
        classified.with(|c| match c {
            Some(c) => Counts::of(c.rows.iter().map(|r| &r.observation)),
            None => Counts::default(),
        })
    });
    let total = Signal::derive(move || counts.with(|c| c.total));
    let shown = Signal::derive(move || rows.with(Vec::len));
    let open = Callback::new(move |key: ItemKey| {
        let mut v = nav.view.get_untracked().explaining(&key.kind, &key.name);
        v.namespace = Some(key.namespace.clone());
        nav.go(v);
    });
    view! {
        <Bar counts=counts />
        <Filters shown=shown total=total />
        <Table rows=rows now=now queues=queues on_open=open />
    }
}

/// Whether the rows differ: a load's rows are one `Arc`, so a progress
/// message or an explanation never makes the table think them new.
fn another_load(
    before: Option<&Option<Arc<Classified>>>,
    now: Option<&Option<Arc<Classified>>>,
) -> bool {
    match (before, now) {
        (Some(Some(a)), Some(Some(b))) => !Arc::ptr_eq(a, b),
        (Some(None), Some(None)) => false,
        _ => true,
    }
}

/// A load under way: how far, as a bar (bytes read) or a busy bar (the
/// parse), and Cancel.
fn load_progress(progress: crate::offline_worker::Progress, cancel: Callback<()>) -> AnyView {
    let bar = match progress.bar() {
        Some((done, total)) => view! { <progress id="progress-bar" max=total.to_string() value=done.to_string()></progress> }.into_any(),
        None => view! { <progress id="progress-bar"></progress> }.into_any(),
    };
    view! {
        <div class="progress" id="progress" role="status">
            {bar}
            <span id="progress-text">{progress.text()}</span>
            <button id="cancel" on:click=move |_| cancel.run(())>"Cancel"</button>
        </div>
    }
    .into_any()
}

/// The object the URL asks to explain, if any.
fn explained_key(nav: Nav) -> Option<ItemKey> {
    nav.view.with(|v| {
        let (kind, name) = v.target.clone()?;
        Some(ItemKey::new(
            &kind,
            v.namespace.as_deref().unwrap_or(""),
            &name,
        ))
    })
}

/// The explanation of `key` the worker sent, a wait for it, or a note that
/// the input does not hold it.
fn explanation_view(
    explaining: RwSignal<Explaining>,
    key: ItemKey,
    queues: Signal<Arc<QueueBook>>,
    back: Callback<()>,
) -> AnyView {
    let found = explaining.with(|e| match e {
        Explaining::Answered { key: k, found } if *k == key => Some(found.clone()),
        _ => None,
    });
    match found {
        None => view! { <p class="muted" id="explaining">"Explaining…"</p> }.into_any(),
        Some(Some(found)) => {
            let found = *found;
            let queue = Signal::derive(move || queues.with(|q| q.section(&key)));
            view! { <ExplainView explanation=found.explanation objects=found.objects on_back=back history=Signal::stored(HistoryView::NotKept) queue=queue /> }.into_any()
        }
        Some(None) => view! {
            <p class="muted">"That object is not in the input above (the page keeps nothing: paste the input again)."</p>
            <button class="link back" on:click=move |_| back.run(())>"← back to the table"</button>
        }
        .into_any(),
    }
}

/// What the page classifies: the textarea's text, or a picked file's,
/// which is kept out of the textarea; and why a file was not read.
#[derive(Debug, Clone, Copy)]
struct DumpSource {
    text: RwSignal<String>,
    file: RwSignal<Option<PickedFile>>,
    file_error: RwSignal<Option<String>>,
}

/// The drop area: the file picker, what was picked (or why it was
/// refused), and the textarea, hidden while a file is the input.
#[component]
fn DumpInput(
    input: DumpSource,
    on_file: Callback<web_sys::File>,
    show_text: Callback<()>,
) -> impl IntoView {
    let DumpSource {
        text,
        file,
        file_error,
    } = input;
    let dragging = RwSignal::new(false);
    let on_drop = move |ev: web_sys::DragEvent| {
        ev.prevent_default();
        dragging.set(false);
        if let Some(file) = ev
            .data_transfer()
            .and_then(|d| d.files())
            .and_then(|f| f.get(0))
        {
            on_file.run(file);
        }
    };
    let on_pick = move |ev: web_sys::Event| {
        let picker = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::HtmlInputElement>().ok());
        if let Some(file) = picker.and_then(|i| i.files()).and_then(|f| f.get(0)) {
            on_file.run(file);
        }
    };
    view! {
        <div class="drop" class:dragging=move || dragging.get()
            on:dragover=move |ev: web_sys::DragEvent| { ev.prevent_default(); dragging.set(true); }
            on:dragleave=move |_| dragging.set(false)
            on:drop=on_drop>
            <label for="input">"A "<code>"kubectl get trainjobs,jobsets,workloads,pods,nodes -o yaml"</code>" (or "<code>"-o json"</code>") dump, or a downloaded snapshot — paste it, drop a file here, or "
                <input type="file" id="file" accept=".json,.yaml,.yml,.txt,application/json" on:change=on_pick />
            </label>
            {move || file_error.get().map(|why| view! { <p class="error" id="file-error" role="alert">{why}</p> })}
            {move || file.with(|f| f.as_ref().map(PickedFile::label)).map(|label| view! {
                <p class="picked" id="picked">
                    "The input is the file "<strong id="picked-name">{label}</strong>
                    " (its text is not shown, which keeps a large dump quick). "
                    <button class="link" id="show-text" on:click=move |_| show_text.run(())>"Show the text"</button>
                </p>
            })}
            <textarea id="input" rows="12" spellcheck="false" placeholder="apiVersion: v1\nkind: List\nitems: ..."
                hidden=move || file.with(Option::is_some)
                prop:value=move || text.get()
                on:input=move |ev| text.set(event_target_value(&ev))></textarea>
        </div>
    }
}

/// The mode and nodes overrides (a change re-classifies what was
/// classified), Classify, and Download snapshot.
#[component]
fn OverridesBar(
    mode: RwSignal<String>,
    nodes: RwSignal<String>,
    loads: RwSignal<Loads>,
    run: Callback<()>,
    download: Callback<()>,
) -> impl IntoView {
    let rerun = move || {
        if loads.with_untracked(|l| !matches!(l.state, Load::Idle)) {
            run.run(())
        }
    };
    view! {
        <div class="overrides">
            <label>"Mode "
                <select id="mode" on:change=move |ev| { mode.set(event_target_value(&ev)); rerun() }>
                    <option value="auto">"as the input says"</option>
                    <option value="plain">"plain"</option>
                    <option value="kueue">"kueue"</option>
                </select>
            </label>
            <label>"Nodes readable "
                <select id="nodes" on:change=move |ev| { nodes.set(event_target_value(&ev)); rerun() }>
                    <option value="auto">"as the input says"</option>
                    <option value="yes">"yes"</option>
                    <option value="no">"no"</option>
                </select>
            </label>
            <button id="classify" class="primary" on:click=move |_| run.run(())>"Classify"</button>
            <button id="download" disabled=move || loads.with(|l| l.classified().is_none())
                on:click=move |_| download.run(())>"Download snapshot"</button>
        </div>
    }
}
