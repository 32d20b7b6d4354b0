//! The page: header with the language switch, model input, and the results.

use crate::checkpoint_view::CheckpointCard;
use crate::deferred::{take, UserInput};
use crate::i18n::Lang;
use crate::model_input::{install_page_drop, DropZone, LoadErrorBox, PasteBox, PresetPicker};
use crate::state::AppState;
use leptos::prelude::*;

const LANG_KEY: &str = "vram.lang";
/// How long the inputs rest before the address bar's share link is rewritten.
const URL_DELAY: std::time::Duration = std::time::Duration::from_millis(250);

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
    // Keep the URL equal to the view, so the address bar is always a share link. Written once the
    // inputs rest for a moment (URL_DELAY), in a task of its own: building the link and
    // `history.replaceState` take a few ms that nothing on screen waits for, and typing or a held
    // stepper would otherwise pay them on every change.
    let url_generation = std::rc::Rc::new(std::cell::Cell::new(0u64));
    Effect::new(move |_| {
        state.page.track();
        state.lang.track();
        state.model.track();
        if state.model.with_untracked(|m| m.is_none()) {
            return;
        }
        let mine = url_generation.get() + 1;
        url_generation.set(mine);
        let url_generation = url_generation.clone();
        leptos::leptos_dom::helpers::set_timeout(
            move || {
                if url_generation.get() != mine {
                    return;
                }
                leptos::task::spawn_local(async move {
                    let Some(query) = crate::deferred::share_query(state).await else {
                        return;
                    };
                    if let Some(w) = web_sys::window() {
                        if let Ok(h) = w.history() {
                            let _ = h.replace_state_with_url(
                                &wasm_bindgen::JsValue::NULL,
                                "",
                                Some(&query),
                            );
                        }
                    }
                });
            },
            URL_DELAY,
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
    let loaded = Memo::new(move |_| state.model.with(|m| m.is_some()));
    // The loader collapses to one line once a model is on screen; "Change" opens it again, and the
    // next model that loads closes it.
    let (loader_open, set_loader_open) = signal(false);
    Effect::new(move |_| {
        state.model.track();
        set_loader_open.set(false);
    });
    let model_line = move || {
        let lang = state.lang.get();
        state.model.with(|m| {
            m.as_ref().map(|m| {
                let name = m.spec.name.clone();
                let title = name.clone();
                let params = lang.format_count(m.params.total);
                view! {
                    <div class="model-line" data-testid="model-line">
                        <span class="model-line-name" title=title>{name}</span>
                        <span class="model-line-params">{params}</span>
                        <button
                            type="button"
                            class="secondary small"
                            data-testid="change-model"
                            aria-expanded=move || loader_open.get().to_string()
                            on:click=move |_| set_loader_open.update(|o| *o = !*o)
                        >
                            {if lang == Lang::Zh { "更换模型" } else { "Change model" }}
                        </button>
                    </div>
                }
            })
        })
    };
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
        <main class:loaded=loaded>
            <div class="pane-inputs">
                <section class="card input-card" aria-label="config.json">
                    {model_line}
                    <div class="loader" class:collapsed=move || loaded.get() && !loader_open.get()>
                        <DropZone />
                        <div class="input-row">
                            <PresetPicker />
                            <PasteBox />
                        </div>
                    </div>
                    <LoadErrorBox />
                    <Show when=move || { state.reading.get() > 0 }>
                        <p class="loading-note" role="status" data-testid="model-loading">
                            {move || if state.lang.get() == Lang::Zh { "正在读取模型…" } else { "Reading the model…" }}
                        </p>
                    </Show>
                </section>
                <CheckpointCard />
                {move || if loaded.get() {
                    view! { <Suspense fallback=|| ()>{Suspend::new(crate::deferred::inputs_pane(state))}</Suspense> }.into_any()
                } else {
                    view! { <p class="empty-state" data-testid="empty-state">{move || s().empty_state}</p> }.into_any()
                }}
            </div>
            <div class="pane-results">
                {move || loaded.get().then(|| view! { <Suspense fallback=|| ()>{Suspend::new(crate::deferred::results_pane(state))}</Suspense> })}
            </div>
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

/// Restores model, scenario, GPU and language from a share link (`?s=…`): the reader's chunk
/// decodes it ([`crate::share::restore`]).
fn restore_from_url(state: AppState) {
    let Some(location) = web_sys::window().map(|w| w.location()) else {
        return;
    };
    let query = location.search().unwrap_or_default();
    if query.len() > 1 {
        let fragment = location.hash().unwrap_or_default();
        take(state, UserInput::Link { query, fragment });
    }
}
