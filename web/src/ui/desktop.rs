//! Desktop notifications for the namespace on screen, with the
//! Notification API: the toolbar's toggle (permission is asked only when
//! it is clicked), the choice kept per namespace in local storage, and the
//! notices `crate::notices::Notices` finds in each change.

use leptos::prelude::*;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

use super::Nav;
use crate::notices::{preference_key, Notice, Notices};
use crate::query::ViewState;
use crate::store::{Applied, Store};

/// What the toggle shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Off,
    On,
    /// The browser refuses (the user said no, or a policy did).
    Blocked,
    /// No Notification API here.
    Unsupported,
}

/// The page's desktop notifications.
#[derive(Clone, Copy)]
pub struct Desktop {
    notices: StoredValue<Notices>,
    choice: RwSignal<Choice>,
    namespace: StoredValue<Option<String>>,
    nav: Nav,
}

fn supported() -> bool {
    web_sys::window().is_some_and(|w| {
        js_sys::Reflect::has(&w, &JsValue::from_str("Notification")).unwrap_or(false)
    })
}

fn permission() -> Option<web_sys::NotificationPermission> {
    supported().then(web_sys::Notification::permission)
}

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok()?
}

impl Desktop {
    pub fn new(nav: Nav) -> Desktop {
        Desktop {
            notices: StoredValue::new(Notices::default()),
            choice: RwSignal::new(Choice::Off),
            namespace: StoredValue::new(None),
            nav,
        }
    }

    /// The namespace shown changed: its own choice applies.
    pub fn for_namespace(self, namespace: &str) {
        self.namespace.set_value(Some(namespace.to_string()));
        self.notices.set_value(Notices::default());
        let chosen = storage()
            .and_then(|s| s.get_item(&preference_key(namespace)).ok().flatten())
            .is_some_and(|v| v == "on");
        self.choice.set(match permission() {
            None => Choice::Unsupported,
            Some(web_sys::NotificationPermission::Denied) => Choice::Blocked,
            Some(web_sys::NotificationPermission::Granted) if chosen => Choice::On,
            Some(_) => Choice::Off,
        });
    }

    /// A snapshot was loaded: where things stand, not news.
    pub fn baseline(self, store: &Store) {
        self.notices.update_value(|n| n.baseline(store));
    }

    /// Changes were applied: shows the news, when on.
    pub fn after(self, store: &Store, applied: &[Applied]) {
        let mut found = Vec::new();
        self.notices.update_value(|n| {
            for a in applied {
                found.extend(n.after(store, a));
            }
        });
        if self.choice.get_untracked() != Choice::On
            || permission() != Some(web_sys::NotificationPermission::Granted)
        {
            return;
        }
        for notice in found {
            self.show(&notice);
        }
    }

    fn show(self, notice: &Notice) {
        let options = web_sys::NotificationOptions::new();
        options.set_body(&notice.body);
        options.set_tag(&notice.tag);
        let Ok(shown) = web_sys::Notification::new_with_options(&notice.title, &options) else {
            return;
        };
        let url = notice.url.clone();
        let nav = self.nav;
        let open = Closure::<dyn FnMut()>::new(move || {
            if let Some(w) = web_sys::window() {
                let _ = w.focus();
            }
            let (path, query) = url.split_once('?').unwrap_or((&url, ""));
            nav.go(ViewState::from_url(path, query));
        });
        shown.set_onclick(Some(open.as_ref().unchecked_ref()));
        // Lives as long as the page: one small closure per notification.
        open.forget();
    }

    fn keep(self, on: bool) {
        let Some(namespace) = self.namespace.get_value() else {
            return;
        };
        if let Some(s) = storage() {
            let key = preference_key(&namespace);
            let _ = if on {
                s.set_item(&key, "on")
            } else {
                s.remove_item(&key)
            };
        }
        self.choice.set(if on { Choice::On } else { Choice::Off });
    }

    /// The toggle was clicked: asks the browser's permission if needed.
    fn toggle(self) {
        match self.choice.get_untracked() {
            Choice::On => self.keep(false),
            Choice::Blocked | Choice::Unsupported => {}
            Choice::Off => {
                if permission() == Some(web_sys::NotificationPermission::Granted) {
                    self.keep(true);
                    return;
                }
                let Ok(asked) = web_sys::Notification::request_permission() else {
                    return;
                };
                leptos::task::spawn_local(async move {
                    let answer = wasm_bindgen_futures::JsFuture::from(asked).await;
                    match answer.ok().and_then(|v| v.as_string()).as_deref() {
                        Some("granted") => self.keep(true),
                        Some("denied") => self.choice.set(Choice::Blocked),
                        _ => {}
                    }
                });
            }
        }
    }
}

/// The toolbar's toggle.
#[component]
pub fn DesktopToggle(desktop: Desktop) -> impl IntoView {
    let label = move || match desktop.choice.get() {
        Choice::On => "Desktop notifications: on",
        Choice::Off => "Desktop notifications: off",
        Choice::Blocked => "Desktop notifications: blocked by the browser",
        Choice::Unsupported => "Desktop notifications: not supported here",
    };
    let pressed = move || (desktop.choice.get() == Choice::On).to_string();
    let disabled = move || matches!(desktop.choice.get(), Choice::Blocked | Choice::Unsupported);
    view! {
        <button id="notify" aria-pressed=pressed disabled=disabled
            title="Tell me on this computer when a TrainJob of this namespace fails or is held"
            on:click=move |_| desktop.toggle()>{label}</button>
    }
}
