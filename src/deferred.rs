//! The code the first load does not carry. Everything that needs a model — reading one (the config
//! resolvers, the GGUF and safetensors readers, `vram measure` reports, share links) and showing one
//! (the task form, the verdict, the breakdown, the charts, the planner, the exports) — sits behind
//! the split functions below, all in one wasm chunk (`app`). `scripts/split-wasm.sh` cuts it out of
//! the build; the first call of any of them fetches it (the service worker has usually cached it by
//! then: it stores every file of the bundle right after the first visit's `load`). So the first load
//! is the page's shell: header, language switch, drop zone, presets, paste box (docs/performance.md).
//!
//! Each function is `fallible`: when the chunk cannot be fetched (offline before the service worker
//! stored it) the caller gets [`SplitLoaderError`] and says so, instead of the page aborting.

use crate::load::{LoadError, ModelSource};
use crate::state::AppState;
use leptos::prelude::*;
use leptos::wasm_split::{wasm_split, SplitLoaderError};
use wasm_bindgen::JsCast;
use web_sys::File;

/// One thing the user gave the page to read.
pub enum UserInput {
    /// Files dropped or opened together (a config, GGUF parts, a checkpoint, a `vram measure` report).
    Files(Vec<File>),
    /// Text pasted into the box or onto the page.
    Text(String, ModelSource),
    /// A bundled preset, by id.
    Preset(String),
    /// The query of a share link (`?…`) and the URL's `#` fragment.
    Link { query: String, fragment: String },
}

/// Reads `input` in the background; the model, or the error, reaches the page through [`AppState`].
pub fn take(state: AppState, input: UserInput) {
    state.set_reading.update(|n| *n += 1);
    leptos::task::spawn_local(async move {
        if read(state, input).await.is_err() {
            state.set_load_error.set(Some(LoadError::ChunkUnavailable));
        }
        state.set_reading.update(|n| *n = n.saturating_sub(1));
    });
}

/// The share link of what is on screen (`?…#verdict`); `None` when the chunk cannot be fetched.
pub async fn share_query(state: AppState) -> Option<String> {
    link_query(state).await.ok()
}

/// The input pane's cards for a loaded model (task form, model details). A chunk that cannot be
/// fetched is reported as any load error is, next to the loader ([`LoadError::ChunkUnavailable`]).
pub async fn inputs_pane(state: AppState) -> AnyView {
    loaded_inputs().await.unwrap_or_else(|_| unavailable(state))
}

/// The results pane for a loaded model (support banner, verdict, breakdown, charts, exports).
pub async fn results_pane(state: AppState) -> AnyView {
    loaded_results()
        .await
        .unwrap_or_else(|_| unavailable(state))
}

fn unavailable(state: AppState) -> AnyView {
    state.set_load_error.set(Some(LoadError::ChunkUnavailable));
    ().into_any()
}

/// Fetches the chunk once the page is idle after mounting, so that it is there when the first
/// model is chosen; a failure is left for the first real call to report.
pub fn prefetch_when_idle() {
    let start = || {
        leptos::task::spawn_local(async {
            let _ = prefetch_app().await;
        })
    };
    match web_sys::window() {
        Some(w) => {
            let cb = wasm_bindgen::closure::Closure::once_into_js(start);
            if w.request_idle_callback(cb.unchecked_ref()).is_err() {
                start();
            }
        }
        None => start(),
    }
}

#[wasm_split(app, wasm_split_path = ::leptos::wasm_split, fallible, preload(prefetch_app))]
fn read(state: AppState, input: UserInput) -> Result<(), SplitLoaderError> {
    match input {
        UserInput::Files(files) => crate::model_input::read_files(state, files),
        UserInput::Text(text, source) => state.accept_text(text, source),
        UserInput::Preset(id) => state.accept(crate::load::load_preset(&id)),
        UserInput::Link { query, fragment } => crate::share::restore(state, &query, &fragment),
    }
    Ok(())
}

#[wasm_split(app, wasm_split_path = ::leptos::wasm_split, fallible)]
fn link_query(state: AppState) -> Result<String, SplitLoaderError> {
    Ok(crate::results_view::share_query(state))
}

#[wasm_split(app, wasm_split_path = ::leptos::wasm_split, fallible)]
fn loaded_inputs() -> Result<AnyView, SplitLoaderError> {
    use crate::i18n::Lang;
    let state = crate::state::use_state();
    Ok(view! {
        <crate::scenario_form::ScenarioForm />
        <details class="card model-details" data-testid="model-details">
            <summary>{move || if state.lang.get() == Lang::Zh { "模型详情与参数表" } else { "Model details and parameter table" }}</summary>
            <crate::model_view::ModelView />
        </details>
    }
    .into_any())
}

#[wasm_split(app, wasm_split_path = ::leptos::wasm_split, fallible)]
fn loaded_results() -> Result<AnyView, SplitLoaderError> {
    Ok(
        view! { <crate::model_view::SupportBanner /> <crate::results_view::ResultsView /> }
            .into_any(),
    )
}
