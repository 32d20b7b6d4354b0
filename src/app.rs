//! The page: header with the language switch, model input, and the results.

use crate::checkpoint_view::CheckpointCard;
use crate::i18n::Lang;
use crate::load::{load_preset, load_text, ModelSource};
use crate::model_input::{install_page_drop, DropZone, LoadErrorBox, PasteBox, PresetPicker};
use crate::model_view::{ModelView, SupportBanner};
use crate::results_view::{share_query, ResultsView};
use crate::scenario_form::ScenarioForm;
use crate::share::SharedState;
use crate::state::AppState;
use leptos::prelude::*;

const LANG_KEY: &str = "vram.lang";

fn storage() -> Option<web_sys::Storage> {
    web_sys::window()?.local_storage().ok().flatten()
}

/// The language the page starts in: the remembered choice, else the browser's preference list,
/// else English.
fn initial_lang() -> Lang {
    if let Some(l) = storage()
        .and_then(|s| s.get_item(LANG_KEY).ok().flatten())
        .and_then(|t| Lang::from_tag(&t))
    {
        return l;
    }
    let Some(window) = web_sys::window() else {
        return Lang::default();
    };
    let langs = window.navigator().languages();
    let tags: Vec<String> = langs.iter().filter_map(|v| v.as_string()).collect();
    Lang::from_browser(tags.iter().map(String::as_str))
}

/// The whole page.
#[component]
pub fn App() -> impl IntoView {
    let state = AppState::new(initial_lang());
    provide_context(state);
    restore_from_url(state);
    let dragging = install_page_drop(state);
    // Keep the URL equal to the view, so the address bar is always a share link.
    Effect::new(move |_| {
        state.page.track();
        state.lang.track();
        state.model.track();
        if state.model.with(|m| m.is_none()) {
            return;
        }
        let query = share_query(state);
        // In a task of its own: `history.replaceState` is slow (a few ms) and nothing on screen
        // waits for it.
        leptos::leptos_dom::helpers::set_timeout(
            move || {
                if let Some(w) = web_sys::window() {
                    if let Ok(h) = w.history() {
                        let _ = h.replace_state_with_url(
                            &wasm_bindgen::JsValue::NULL,
                            "",
                            Some(&query),
                        );
                    }
                }
            },
            std::time::Duration::ZERO,
        );
    });
    Effect::new(move |_| {
        let lang = state.lang.get();
        if let Some(doc) = web_sys::window().and_then(|w| w.document()) {
            if let Some(html) = doc.document_element() {
                let _ = html.set_attribute("lang", lang.tag());
            }
            doc.set_title(lang.strings().title);
        }
    });
    let s = move || state.lang.get().strings();
    view! {
        <div class="drop-overlay" class:visible=dragging aria-hidden="true" data-testid="drop-overlay">
            <p>{move || s().drop_overlay}</p>
        </div>
        <header class="page-header">
            <div>
                <h1>{move || s().title}</h1>
                <p class="tagline">{move || s().tagline}</p>
            </div>
            <LangSwitch />
        </header>
        <main>
            <section class="card input-card" aria-label="config.json">
                <DropZone />
                <div class="input-row">
                    <PresetPicker />
                    <PasteBox />
                </div>
                <LoadErrorBox />
            </section>
            <CheckpointCard />
            <ModelView />
            {move || state.model.with(|m| m.is_some()).then(|| view! { <ScenarioForm /> <SupportBanner /> <ResultsView /> })}
        </main>
    }
}

/// English / 简体中文 switch.
#[component]
fn LangSwitch() -> impl IntoView {
    let state = crate::state::use_state();
    let on_change = move |ev| {
        let tag = event_target_value(&ev);
        if let Some(lang) = Lang::from_tag(&tag) {
            state.set_lang.set(lang);
            if let Some(s) = storage() {
                let _ = s.set_item(LANG_KEY, lang.tag());
            }
        }
    };
    view! {
        <div class="lang-switch">
            <label for="lang-select">{move || state.lang.get().strings().language}</label>
            <select
                id="lang-select"
                data-testid="lang-select"
                prop:value=move || state.lang.get().tag()
                on:change=on_change
            >
                <option value="en">"English"</option>
                <option value="zh-CN">"简体中文"</option>
            </select>
        </div>
    }
}

/// Restores model, scenario, GPU and language from a share link (`?s=…`).
fn restore_from_url(state: AppState) {
    let Some(search) = web_sys::window().and_then(|w| w.location().search().ok()) else {
        return;
    };
    let Some(shared) = SharedState::from_query(&search) else {
        return;
    };
    if let Some(lang) = Lang::from_tag(&shared.lang) {
        state.set_lang.set(lang);
    }
    state.set_page.set(shared.page());
    let loaded = match (&shared.preset, &shared.config) {
        (Some(id), _) => Some(load_preset(id)),
        (None, Some(text)) => Some(load_text(text.clone(), ModelSource::Pasted)),
        _ => None,
    };
    if let Some(r) = loaded {
        state.accept(r);
    }
}
