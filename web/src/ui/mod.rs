//! The Leptos components. State lives in the plain structs of `store`,
//! `query` and `session`; Effects here only sync with the outside (the URL,
//! the event stream, the session, timers).

mod desktop;
mod explain;
mod live;
mod net;
mod offline;
pub mod offline_worker;
mod queues;
mod signin;
mod table;

use leptos::prelude::*;
use wasm_bindgen::JsValue;

use crate::query::{Page, ViewState};
use crate::session::AuthState;

fn window() -> web_sys::Window {
    // The page runs in a browser tab, which always has a window; without
    // one there is nothing to draw into or to report to.
    #[allow(clippy::expect_used)]
    web_sys::window().expect("a browser window")
}

/// The view the address bar describes.
fn current_view() -> ViewState {
    let loc = window().location();
    ViewState::from_url(
        &loc.pathname().unwrap_or_default(),
        &loc.search().unwrap_or_default(),
    )
}

/// Makes the address bar say `v`: a new history entry when `push`.
fn write_url(v: &ViewState, push: bool) {
    let url = v.to_url();
    let loc = window().location();
    let here = format!(
        "{}{}",
        loc.pathname().unwrap_or_default(),
        loc.search().unwrap_or_default()
    );
    if here == url {
        return;
    }
    if let Ok(history) = window().history() {
        let _ = if push {
            history.push_state_with_url(&JsValue::NULL, "", Some(&url))
        } else {
            history.replace_state_with_url(&JsValue::NULL, "", Some(&url))
        };
    }
}

/// Where the app keeps its view: a signal mirrored in the URL.
#[derive(Clone, Copy)]
pub struct Nav {
    pub view: RwSignal<ViewState>,
}

impl Nav {
    /// Goes to another view with a history entry (back returns).
    pub fn go(self, v: ViewState) {
        write_url(&v, true);
        self.view.set(v);
    }

    /// Changes the view in place (filters, text): no history entry.
    pub fn replace(self, f: impl FnOnce(&mut ViewState)) {
        self.view.update(f);
        self.view.with_untracked(|v| write_url(v, false));
    }
}

/// A `performance.mark` named `dd:{name}`: where the time of a page load
/// goes, read by the benchmark (tests/e2e/bench/budgets.mjs).
pub fn mark(name: &str) {
    if let Some(p) = web_sys::window().and_then(|w| w.performance()) {
        let _ = p.mark(&format!("dd:{name}"));
    }
}

pub fn now_ms() -> f64 {
    js_sys::Date::now()
}

/// A clock signal ticking every second, for "changed recently" marks and
/// the connection indicator.
fn clock() -> ReadSignal<f64> {
    let (now, set_now) = signal(now_ms());
    if let Ok(handle) = set_interval_with_handle(
        move || set_now.set(now_ms()),
        std::time::Duration::from_millis(1000),
    ) {
        on_cleanup(move || handle.clear());
    }
    now
}

#[component]
pub fn App() -> impl IntoView {
    let nav = Nav {
        view: RwSignal::new(current_view()),
    };
    provide_context(nav);
    let auth = signin::Auth::new();
    provide_context(auth);
    let on_pop = window_event_listener(leptos::ev::popstate, move |_| {
        nav.view.set(current_view());
    });
    on_cleanup(move || on_pop.remove());
    let now = clock();
    let offline = Memo::new(move |_| nav.view.with(|v| v.page == Page::Offline));
    let on_queues = Memo::new(move |_| nav.view.with(|v| v.page == Page::Queues));
    let needs_sign_in = Memo::new(move |_| auth.state.with(AuthState::needs_sign_in));
    // The live page asks who it is signed in as; the offline page asks
    // nothing, so it needs no sign-in.
    Effect::new(move |_| {
        if !offline.get() {
            auth.ask_once();
        }
    });
    // Between the live pages the namespace stays.
    let go_live = move |_| {
        let namespace = nav.view.with_untracked(|v| v.namespace.clone());
        nav.go(ViewState {
            namespace,
            ..ViewState::default()
        })
    };
    let go_queues = move |_| {
        let namespace = nav.view.with_untracked(|v| v.namespace.clone());
        nav.go(ViewState {
            page: Page::Queues,
            namespace,
            ..ViewState::default()
        })
    };
    let go_offline = move |_| {
        nav.go(ViewState {
            page: Page::Offline,
            ..ViewState::default()
        })
    };
    view! {
        <header class="top">
            <h1>"dispatch-dash"</h1>
            <nav aria-label="pages">
                <button class="link" aria-current=move || (!offline.get() && !on_queues.get()).then_some("page") on:click=go_live>"Live"</button>
                <button class="link" id="nav-queues" aria-current=move || on_queues.get().then_some("page") on:click=go_queues>"Queues"</button>
                <button class="link" aria-current=move || offline.get().then_some("page") on:click=go_offline>"Offline"</button>
            </nav>
            <signin::WhoAmI />
        </header>
        <main>
            {move || if offline.get() {
                view! { <offline::Offline now=now /> }.into_any()
            } else if needs_sign_in.get() {
                view! { <signin::SignIn /> }.into_any()
            } else {
                view! { <live::Live now=now /> }.into_any()
            }}
        </main>
    }
}
