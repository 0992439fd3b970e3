//! The effects of the offline page's Web Worker; its state and messages are
//! `crate::offline_worker`'s. On the page: starting the worker, posting
//! requests, taking answers, stopping it on Cancel. In the worker (the
//! page's own wasm, loaded by `offline-worker.js`): reading a file with
//! progress and answering from what it holds.

use std::cell::RefCell;
use std::rc::Rc;

use js_sys::{Object, Reflect, Uint8Array};
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use crate::dump_file;
use crate::offline_worker::{error_text, overrides, Held, Phase, ProgressSteps, Reply, Request};
use crate::store::ItemKey;

/// The worker's script, copied beside the page's files (web/index.html).
const SCRIPT: &str = "/offline-worker.js";

/// A reply from the worker, with the text that came beside it (a row's
/// view, or the snapshot to download), still a JavaScript string.
pub struct Answer {
    pub reply: Reply,
    pub beside: JsValue,
}

type Listener = Closure<dyn FnMut(web_sys::MessageEvent)>;
type ErrorListener = Closure<dyn FnMut(web_sys::Event)>;

/// The page's worker: started when the page opens (or at the first
/// request), stopped by Cancel (which is the only way to stop a parse under
/// way) or when it fails, started again by the next request.
pub struct PageWorker {
    running: RefCell<Option<(web_sys::Worker, Listener, ErrorListener)>>,
    on_answer: Rc<dyn Fn(Answer)>,
    on_failure: Rc<dyn Fn()>,
}

impl PageWorker {
    /// `on_answer` takes each reply; `on_failure` is told when the worker
    /// cannot start or stops on its own (its wasm failed to load, or it ran
    /// out of memory).
    pub fn new(on_answer: impl Fn(Answer) + 'static, on_failure: impl Fn() + 'static) -> Self {
        PageWorker {
            running: RefCell::new(None),
            on_answer: Rc::new(on_answer),
            on_failure: Rc::new(on_failure),
        }
    }

    /// Posts `request`, with `beside` (a `File`, or the text to classify)
    /// when it is not `undefined`.
    pub fn post(&self, request: &Request, beside: &JsValue) {
        let posted = self.ensure_started().and_then(|worker| {
            let message = Object::new();
            let json = serde_json::to_string(request).ok()?;
            Reflect::set(&message, &"json".into(), &json.into()).ok()?;
            let key = if beside.is_instance_of::<web_sys::File>() {
                "file"
            } else {
                "text"
            };
            if !beside.is_undefined() {
                Reflect::set(&message, &key.into(), beside).ok()?;
            }
            worker.post_message(&message).ok()
        });
        if posted.is_none() {
            self.stop();
            (self.on_failure)();
        }
    }

    /// Starts the worker ahead of a first request: loading the page's
    /// wasm into it then costs nothing when a dump is picked.
    pub fn warm(&self) {
        if self.ensure_started().is_none() {
            self.stop();
        }
    }

    /// Stops the worker, and whatever it was doing.
    pub fn stop(&self) {
        if let Some((worker, _, _)) = self.running.borrow_mut().take() {
            worker.terminate();
        }
    }

    fn ensure_started(&self) -> Option<web_sys::Worker> {
        if let Some((worker, _, _)) = self.running.borrow().as_ref() {
            return Some(worker.clone());
        }
        let (js, wasm) = own_wasm()?;
        let options = web_sys::WorkerOptions::new();
        options.set_type(web_sys::WorkerType::Module);
        let worker = web_sys::Worker::new_with_options(SCRIPT, &options).ok()?;
        let on_answer = self.on_answer.clone();
        let on_failure = self.on_failure.clone();
        let listener: Listener = Closure::new(move |event: web_sys::MessageEvent| {
            let data = event.data();
            if Reflect::get(&data, &"broken".into()).is_ok_and(|b| !b.is_undefined()) {
                on_failure();
                return;
            }
            let reply = Reflect::get(&data, &"json".into())
                .ok()
                .and_then(|j| j.as_string())
                .and_then(|j| serde_json::from_str::<Reply>(&j).ok());
            match reply {
                Some(reply) => on_answer(Answer {
                    reply,
                    beside: Reflect::get(&data, &"text".into()).unwrap_or(JsValue::UNDEFINED),
                }),
                None => on_failure(),
            }
        });
        let on_failure = self.on_failure.clone();
        let errors: ErrorListener = Closure::new(move |_: web_sys::Event| on_failure());
        worker.set_onmessage(Some(listener.as_ref().unchecked_ref()));
        worker.set_onerror(Some(errors.as_ref().unchecked_ref()));
        worker.set_onmessageerror(Some(errors.as_ref().unchecked_ref()));
        let load = Object::new();
        let urls = Object::new();
        let loading = Reflect::set(&urls, &"js".into(), &js.into())
            .and_then(|_| Reflect::set(&urls, &"wasm".into(), &wasm.into()))
            .and_then(|_| Reflect::set(&load, &"load".into(), &urls))
            .and_then(|_| worker.post_message(&load));
        if loading.is_err() {
            // A worker never told what to load would wait for ever.
            worker.terminate();
            return None;
        }
        *self.running.borrow_mut() = Some((worker.clone(), listener, errors));
        Some(worker)
    }
}

impl Drop for PageWorker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// The page's own module and wasm, as Trunk's start-up links name them
/// (their names carry a hash): the worker loads the very same files.
fn own_wasm() -> Option<(String, String)> {
    let document = web_sys::window()?.document()?;
    let href = |selector: &str| {
        document
            .query_selector(selector)
            .ok()
            .flatten()
            .and_then(|link| link.get_attribute("href"))
    };
    Some((
        href("link[rel=modulepreload][href$='.js']")?,
        href("link[rel=preload][href$='_bg.wasm']")?,
    ))
}

/// Saves a JavaScript string (the snapshot the worker wrote) as a file,
/// without copying it into the page's wasm.
pub fn download_text(name: &str, text: &JsValue) {
    super::live::download_parts(name, &js_sys::Array::of1(text));
}

// The worker's side.

thread_local! {
    /// The last classification, answered from until the next one.
    static HELD: RefCell<Option<Held>> = const { RefCell::new(None) };
}

/// Keys the engine's maps in the worker, as `crate::mount` does on the
/// page, with the worker's own `crypto`.
pub fn key_hashes_in_worker() {
    let mut random = [0u8; 16];
    let drawn = js_sys::global()
        .dyn_into::<web_sys::WorkerGlobalScope>()
        .ok()
        .and_then(|scope| scope.crypto().ok())
        .is_some_and(|c| c.get_random_values_with_u8_array(&mut random).is_ok());
    if drawn {
        classify_wasm::hash::seed(random);
    }
}

/// One message from the page, as `offline-worker.js` hands it over.
pub fn on_message(data: JsValue) {
    let request = Reflect::get(&data, &"json".into())
        .ok()
        .and_then(|j| j.as_string())
        .and_then(|j| serde_json::from_str::<Request>(&j).ok());
    let Some(request) = request else {
        return;
    };
    match request {
        Request::Classify { id, mode, nodes } => {
            let file = Reflect::get(&data, &"file".into())
                .ok()
                .and_then(|f| f.dyn_into::<web_sys::File>().ok());
            let text = Reflect::get(&data, &"text".into())
                .ok()
                .and_then(|t| t.as_string());
            wasm_bindgen_futures::spawn_local(async move {
                let reply = classify(id, file, text, &mode, &nodes).await;
                reply_to_page(&reply, None);
            });
        }
        Request::Explain {
            id,
            kind,
            namespace,
            name,
        } => {
            let key = ItemKey::new(&kind, &namespace, &name);
            let view = HELD.with(|held| held.borrow_mut().as_mut().and_then(|h| h.view(&key)));
            let sent = view.is_some();
            reply_to_page(&Reply::Explained { id, sent }, view.as_deref());
        }
        Request::Snapshot { id } => {
            let text = HELD.with(|held| held.borrow_mut().as_mut().and_then(Held::snapshot));
            let sent = text.is_some();
            reply_to_page(&Reply::Snapshot { id, sent }, text.as_deref());
        }
    }
}

async fn classify(
    id: u64,
    file: Option<web_sys::File>,
    text: Option<String>,
    mode: &str,
    nodes: &str,
) -> Reply {
    // What the last classification held is let go first: a worker holds
    // one dump, not two.
    HELD.with(|held| held.borrow_mut().take());
    let text = match (file, text) {
        (Some(file), _) => match read(id, &file).await {
            Ok(text) => text,
            Err(error) => return Reply::Failed { id, error },
        },
        (None, Some(text)) => text,
        (None, None) => String::new(),
    };
    let total = text.len() as u64;
    let progress = |phase| Reply::Progress {
        id,
        phase,
        done: total,
        total,
    };
    reply_to_page(&progress(Phase::Parsing), None);
    match Held::classify(text, overrides(mode, nodes), || {
        reply_to_page(&progress(Phase::Classifying), None)
    }) {
        Ok((held, mut reply)) => {
            if let Reply::Classified { id: answered, .. } = &mut reply {
                *answered = id;
            }
            HELD.with(|h| *h.borrow_mut() = Some(held));
            reply
        }
        Err(e) => Reply::Failed {
            id,
            error: error_text(&e),
        },
    }
}

/// Reads `file` a chunk at a time, telling the page how far it is.
async fn read(id: u64, file: &web_sys::File) -> Result<String, String> {
    let name = file.name();
    let total = dump_file::size_of(file.size());
    dump_file::admit(&name, total)?;
    let unreadable = || format!("{name} could not be read");
    let reader = file
        .stream()
        .get_reader()
        .dyn_into::<web_sys::ReadableStreamDefaultReader>()
        .map_err(|_| unreadable())?;
    // Admitted above, so the size is at most the page's limit.
    let mut bytes: Vec<u8> = Vec::with_capacity(usize::try_from(total).unwrap_or(0));
    let mut steps = ProgressSteps::new(total);
    loop {
        let chunk = wasm_bindgen_futures::JsFuture::from(reader.read())
            .await
            .map_err(|_| unreadable())?;
        if Reflect::get(&chunk, &"done".into()).is_ok_and(|d| d.is_truthy()) {
            break;
        }
        let value = Reflect::get(&chunk, &"value".into())
            .ok()
            .and_then(|v| v.dyn_into::<Uint8Array>().ok())
            .ok_or_else(unreadable)?;
        let start = bytes.len();
        bytes.resize(start + value.length() as usize, 0);
        if let Some(into) = bytes.get_mut(start..) {
            value.copy_to(into);
        }
        // A file that grew past its size as it was read is refused all
        // the same.
        dump_file::admit(&name, bytes.len() as u64)?;
        let done = bytes.len() as u64;
        if steps.passed(done) {
            reply_to_page(
                &Reply::Progress {
                    id,
                    phase: Phase::Reading,
                    done,
                    total,
                },
                None,
            );
        }
    }
    String::from_utf8(bytes).map_err(|e| {
        // The engine says where: the line and column of the first bad byte.
        match classify_wasm::as_text(e.as_bytes()) {
            Err(located) => error_text(&located),
            Ok(_) => format!("{name} is not UTF-8 text"),
        }
    })
}

fn reply_to_page(reply: &Reply, beside: Option<&str>) {
    let Ok(json) = serde_json::to_string(reply) else {
        return;
    };
    let message = Object::new();
    let _ = Reflect::set(&message, &"json".into(), &json.into());
    if let Some(text) = beside {
        let _ = Reflect::set(&message, &"text".into(), &text.into());
    }
    if let Ok(scope) = js_sys::global().dyn_into::<web_sys::DedicatedWorkerGlobalScope>() {
        let _ = scope.post_message(&message);
    }
}
