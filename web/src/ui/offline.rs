//! The offline page: a kubectl dump or a downloaded snapshot, pasted or
//! dropped, classified in this browser. Nothing is sent anywhere.

use std::sync::Arc;

use classify_wasm::{Explanation, InputError, Mode};
use leptos::prelude::*;

use wasm_bindgen::JsCast;

use super::explain::ExplainView;
use super::table::{Bar, Counts, Filters, Table};
use super::Nav;
use crate::dump_file::{self, PickedFile};
use crate::history::HistoryView;
use crate::queue_book::QueueBook;
use crate::store::{AttemptsSummary, Header, ItemKey, Row, Store};

/// What the page classified.
#[derive(Debug, Clone, Default)]
pub struct Classified {
    pub rows: Vec<Arc<Row>>,
    pub explanations: Vec<Explanation>,
    /// The objects, for the YAML view and the download.
    pub store: Option<Store>,
    /// The queue facts, when the dump holds LocalQueues or ClusterQueues.
    pub queues: Arc<QueueBook>,
}

/// Reads the override selects: `auto` leaves the input's own say.
pub fn overrides(mode: &str, nodes: &str) -> Header {
    Header {
        mode: mode.parse::<Mode>().ok(),
        nodes_readable: match nodes {
            "yes" => Some(true),
            "no" => Some(false),
            _ => None,
        },
    }
}

/// Classifies the input entirely here.
pub fn classify_input(text: &str, header: Header) -> Result<Classified, InputError> {
    let explanations = classify_wasm::explain(text, header.options())?;
    let rows = explanations
        .iter()
        .enumerate()
        .map(|(i, e)| {
            Arc::new(Row {
                key: ItemKey::of(&e.observation),
                observation: e.observation.clone(),
                attempts: AttemptsSummary::of(&e.trace.attempts),
                changed_at: None,
                revision: i as u64,
            })
        })
        .collect();
    // The store (objects as YAML, Download snapshot) reads JSON; a YAML dump
    // is converted the way the engine read it, so it classifies the same.
    let classified = explanations
        .iter()
        .map(|e| classify_wasm::Attempted {
            observation: e.observation.clone(),
            attempts: e.trace.attempts.clone(),
        })
        .collect();
    let store = classify_wasm::dump_to_json(text)
        .ok()
        .and_then(|json| Store::load_classified(&json, header, classified).ok());
    // The same facts `classify --output explain` prints; the dump classified
    // above, so reading it for them fails only where it did not.
    let queues = classify_wasm::queue::may_hold_queues(text)
        .then(|| classify_wasm::queue::facts_in_snapshot(text, &Default::default()).ok())
        .flatten()
        .map(QueueBook::offline)
        .unwrap_or_default();
    Ok(Classified {
        rows,
        explanations,
        store,
        queues: Arc::new(queues),
    })
}

/// An input error as the page shows it.
pub fn error_text(e: &InputError) -> String {
    format!(
        "Line {}, column {}: {} ({})",
        e.position.line, e.position.column, e.message, e
    )
}

#[component]
pub fn Offline(#[prop(into)] now: Signal<f64>) -> impl IntoView {
    let nav = expect_context::<Nav>();
    let text = RwSignal::new(String::new());
    // A picked or dropped file's text, kept out of the textarea.
    let file: RwSignal<Option<PickedFile>> = RwSignal::new(None);
    let file_error: RwSignal<Option<String>> = RwSignal::new(None);
    let mode = RwSignal::new("auto".to_string());
    let nodes = RwSignal::new("auto".to_string());
    let result: RwSignal<Option<Result<Classified, String>>> = RwSignal::new(None);
    let input = DumpSource {
        text,
        file,
        file_error,
    };

    let run = Callback::new(move |()| {
        let header = overrides(&mode.get_untracked(), &nodes.get_untracked());
        let classified = match file.with_untracked(|f| f.as_ref().map(|f| f.text.clone())) {
            Some(picked) => classify_input(&picked, header),
            None => {
                let input = text.get_untracked();
                if input.trim().is_empty() {
                    result.set(None);
                    return;
                }
                classify_input(&input, header)
            }
        };
        result.set(Some(classified.map_err(|e| error_text(&e))));
    });
    let read_file = Callback::new(move |picked: web_sys::File| {
        let name = picked.name();
        let size = dump_file::size_of(picked.size());
        // Refused before a byte is read: reading it could crash the tab.
        if let Err(refused) = dump_file::admit(&name, size) {
            file.set(None);
            result.set(None);
            file_error.set(Some(refused));
            return;
        }
        file_error.set(None);
        leptos::task::spawn_local(async move {
            match wasm_bindgen_futures::JsFuture::from(picked.text()).await {
                Ok(v) => {
                    let text: Arc<str> = Arc::from(v.as_string().unwrap_or_default());
                    file.set(Some(PickedFile { name, size, text }));
                    run.run(());
                }
                Err(_) => file_error.set(Some(format!("{name} could not be read"))),
            }
        });
    });

    let filter = Memo::new(move |_| nav.view.with(|v| v.filter.clone()));
    let rows = Memo::new(move |_| {
        filter.with(|f| {
            result.with(|r| match r {
                Some(Ok(c)) => c
                    .rows
                    .iter()
                    .filter(|r| f.matches(&r.observation))
                    .cloned()
                    .collect(),
                _ => Vec::new(),
            })
        })
    });
    let counts = Memo::new(move |_| {
        result.with(|r| match r {
            Some(Ok(c)) => Counts::of(c.rows.iter().map(|r| &r.observation)),
            _ => Counts::default(),
        })
    });
    let total = Signal::derive(move || counts.with(|c| c.total));
    let shown = Signal::derive(move || rows.with(Vec::len));
    let queues = Signal::derive(move || {
        result.with(|r| match r {
            Some(Ok(c)) => c.queues.clone(),
            _ => Arc::default(),
        })
    });
    let open = Callback::new(move |key: ItemKey| {
        let mut v = nav.view.get_untracked().explaining(&key.kind, &key.name);
        v.namespace = Some(key.namespace.clone());
        nav.go(v);
    });
    let back = Callback::new(move |_| nav.go(nav.view.get_untracked().table()));
    let target = Memo::new(move |_| explained_key(nav));
    let results = move || {
        if let Some(key) = target.get() {
            return explanation_view(result, key, queues, back);
        }
        match result.get() {
            None => view! { <p class="muted">"Paste or drop input above, then classify."</p> }.into_any(),
            Some(Err(e)) => view! { <p class="error" id="input-error" role="alert">{e}</p> }.into_any(),
            Some(Ok(c)) if c.rows.is_empty() => view! { <p class="muted" id="empty">"The input holds no object of a kind that is read: nothing to show."</p> }.into_any(),
            Some(Ok(_)) => view! {
                <Bar counts=counts />
                <Filters shown=shown total=total />
                <Table rows=rows now=now queues=queues on_open=open />
            }
            .into_any(),
        }
    };
    view! {
        <section class="offline">
            <p class="privacy" id="privacy">
                "Classified entirely in this browser: nothing you paste or drop is uploaded or sent anywhere."
            </p>
            <DumpInput input=input on_file=read_file />
            <OverridesBar mode=mode nodes=nodes result=result run=run />
        </section>
        {results}
    }
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

/// The explanation of `key` from what the page classified, or a note that
/// the input does not hold it.
fn explanation_view(
    result: RwSignal<Option<Result<Classified, String>>>,
    key: ItemKey,
    queues: Signal<Arc<QueueBook>>,
    back: Callback<()>,
) -> AnyView {
    let found = result.with(|r| match r {
        Some(Ok(c)) => c
            .explanations
            .iter()
            .find(|e| ItemKey::of(&e.observation) == key)
            .cloned()
            .map(|e| {
                let objects = c.store.as_ref().map(|s| s.objects_of(&key));
                (e, objects.unwrap_or_default())
            }),
        _ => None,
    });
    match found {
        Some((e, objects)) => {
            let queue = Signal::derive(move || queues.with(|q| q.section(&key)));
            view! { <ExplainView explanation=e objects=objects on_back=back history=Signal::stored(HistoryView::NotKept) queue=queue /> }.into_any()
        }
        None => view! {
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
fn DumpInput(input: DumpSource, on_file: Callback<web_sys::File>) -> impl IntoView {
    let DumpSource {
        text,
        file,
        file_error,
    } = input;
    let dragging = RwSignal::new(false);
    // Shows a picked file's text in the textarea, which then is the input.
    let show_text = move |_| {
        if let Some(picked) = file.get_untracked() {
            text.set(picked.text.to_string());
            file.set(None);
        }
    };
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
                    "Classifying the file "<strong id="picked-name">{label}</strong>
                    " (its text is not shown, which keeps a large dump quick). "
                    <button class="link" id="show-text" on:click=show_text>"Show the text"</button>
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
    result: RwSignal<Option<Result<Classified, String>>>,
    run: Callback<()>,
) -> impl IntoView {
    let rerun = move || {
        if result.with_untracked(Option::is_some) {
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
            <button id="download" disabled=move || !result.with(|r| matches!(r, Some(Ok(c)) if c.store.is_some()))
                on:click=move |_| {
                    let text = result.with_untracked(|r| match r { Some(Ok(c)) => c.store.as_ref().map(Store::snapshot_json), _ => None });
                    if let Some(t) = text { super::live::download("snapshot.json", &t) }
                }>"Download snapshot"</button>
        </div>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::Value;

    #[test]
    fn yaml_dumps_classify_and_keep_their_objects() {
        let dir = test_support::shared_dir().join("dumps");
        let mut seen = 0;
        for entry in std::fs::read_dir(dir).unwrap() {
            let p = entry.unwrap().path();
            if p.extension().is_some_and(|e| e == "yaml") {
                let text = std::fs::read_to_string(&p).unwrap();
                let c = classify_input(&text, Header::default()).unwrap();
                // The objects are kept for the YAML view and the download.
                let store = c.store.as_ref().expect("a store from the YAML dump");
                let snapshot: Value = serde_json::from_str(&store.snapshot_json()).unwrap();
                assert!(!snapshot["items"].as_array().unwrap().is_empty());
                let expected: Value = serde_json::from_str(
                    &std::fs::read_to_string(p.with_extension("expected.json")).unwrap(),
                )
                .unwrap();
                let got: Vec<Value> = c
                    .rows
                    .iter()
                    .map(|r| serde_json::to_value(&r.observation).unwrap())
                    .collect();
                assert_eq!(Value::Array(got), expected, "{}", p.display());
                seen += 1;
            }
        }
        assert!(seen > 0);
    }

    #[test]
    fn errors_show_line_and_column() {
        let e = classify_input(
            "{\n  \"kind\": \"Snapshot\",\n  \"mode\": 3\n}",
            Header::default(),
        )
        .unwrap_err();
        let t = error_text(&e);
        assert!(t.starts_with("Line 3, column "), "{t}");
    }

    #[test]
    fn overrides_read_the_selects() {
        assert_eq!(overrides("auto", "auto"), Header::default());
        assert_eq!(overrides("kueue", "no").mode, Some(Mode::Kueue));
        assert_eq!(overrides("plain", "yes").nodes_readable, Some(true));
    }
}
