//! Model input: drop a file anywhere on the page, open one with the drop zone button (Enter works),
//! paste JSON, or pick a bundled preset. Files over [`MAX_INPUT_BYTES`] are refused before reading.
//! Several `.gguf` files given together are one model: the parts of a split model. A config.json
//! given with `.safetensors` files (and optionally `model.safetensors.index.json`) is counted from
//! the files' headers, read header-only; without a config they show the checkpoint card.

use crate::deferred::{take, UserInput};
use crate::load::{check_size, LoadError, ModelSource, MAX_INPUT_BYTES};
use crate::state::{use_state, AppState};
use leptos::ev;
use leptos::html;
use leptos::prelude::*;
use vram_core::gguf_file::GgufHeader;
use vram_core::presets::PRESETS;
use wasm_bindgen::JsCast;
use web_sys::{DragEvent, File};

/// Reads `file` (after the size check) and hands the parse result to the state. A `.gguf` file is
/// read only as far as its header goes ([`read_gguf_header`]).
pub fn read_file(state: AppState, file: File) {
    let name = file.name();
    let size_bytes = file.size().max(0.0) as u64;
    if crate::load::is_gguf(&name) {
        read_gguf_files(state, vec![file]);
        return;
    }
    if let Err(e) = check_size(&name, size_bytes) {
        state.accept(Err(e));
        return;
    }
    debug_assert!(size_bytes <= MAX_INPUT_BYTES);
    leptos::task::spawn_local(async move {
        let text = wasm_bindgen_futures::JsFuture::from(file.text())
            .await
            .ok()
            .and_then(|v| v.as_string());
        match text {
            Some(text) => state.accept_text(text, ModelSource::File(name)),
            None => state.accept(Err(LoadError::Unreadable { name })),
        }
    });
}

/// Reads several files given at once: when every one is a `.gguf` file they are one model (a
/// single file, or the parts of a split model, in any order); otherwise the first file is read.
pub fn read_files(state: AppState, files: Vec<File>) {
    let names: Vec<String> = files.iter().map(File::name).collect();
    if crate::load::is_checkpoint(&names) {
        read_checkpoint_files(state, files);
    } else if files.len() > 1 && crate::load::all_gguf(&names) {
        read_gguf_files(state, files);
    } else if let Some(file) = files.into_iter().next() {
        read_file(state, file);
    }
}

/// Reads the header of every GGUF file (one after the other) and loads them as one model
/// ([`crate::load::load_gguf_files`]); the first unreadable header is the error shown.
pub fn read_gguf_files(state: AppState, files: Vec<File>) {
    leptos::task::spawn_local(async move {
        let mut headers = Vec::with_capacity(files.len());
        for file in &files {
            match read_gguf_header(file).await {
                Ok(h) => headers.push((file.name(), h)),
                Err(e) => {
                    state.accept(Err(e));
                    return;
                }
            }
        }
        state.accept_gguf(crate::load::load_gguf_files(&headers));
    });
}

/// Reads a checkpoint's files given together (one after the other): each `.safetensors` file's
/// header only ([`read_safetensors_header`]), the index and the config whole (after the size
/// check), then combines them ([`crate::load::load_checkpoint`]). The first file that cannot be
/// read is the error shown, and nothing on screen changes.
pub fn read_checkpoint_files(state: AppState, files: Vec<File>) {
    use crate::load::{is_safetensors, is_safetensors_index, CheckpointProblem, MAX_INDEX_BYTES};
    leptos::task::spawn_local(async move {
        let mut configs = Vec::new();
        let mut headers = Vec::new();
        let mut indexes = Vec::new();
        for file in &files {
            let name = file.name();
            let size = file.size().max(0.0) as u64;
            let result = if is_safetensors(&name) {
                read_safetensors_header(file)
                    .await
                    .map(|h| headers.push((name.clone(), h)))
            } else if is_safetensors_index(&name) {
                if size > MAX_INDEX_BYTES {
                    Err(LoadError::TooLarge {
                        name: name.clone(),
                        size_bytes: size,
                    })
                } else {
                    match read_text(file).await {
                        Some(text) => crate::load::parse_index_file(&name, text.as_bytes())
                            .map(|idx| indexes.push((name.clone(), idx))),
                        None => Err(LoadError::Unreadable { name: name.clone() }),
                    }
                }
            } else if name.to_ascii_lowercase().ends_with(".json") {
                match check_size(&name, size) {
                    Err(e) => Err(e),
                    Ok(()) => match read_text(file).await {
                        Some(text) => {
                            configs.push((name.clone(), text));
                            Ok(())
                        }
                        None => Err(LoadError::Unreadable { name: name.clone() }),
                    },
                }
            } else {
                Err(LoadError::Checkpoint {
                    problem: CheckpointProblem::Unexpected { name: name.clone() },
                })
            };
            if let Err(e) = result {
                state.accept(Err(e));
                return;
            }
        }
        state.accept_checkpoint(crate::load::load_checkpoint(configs, headers, indexes));
    });
}

async fn read_text(file: &File) -> Option<String> {
    wasm_bindgen_futures::JsFuture::from(file.text())
        .await
        .ok()
        .and_then(|v| v.as_string())
}

/// Reads the first bytes of `file` until `step` has what it needs: from `first` bytes on, as many as
/// it asks for (`Err(n)`: read the first `n` bytes and call again), never the rest of the file.
async fn read_prefix<T>(
    file: &File,
    first: u64,
    step: impl Fn(&str, u64, &[u8]) -> Result<Result<T, LoadError>, u64>,
) -> Result<T, LoadError> {
    let name = file.name();
    let size = file.size().max(0.0) as u64;
    let unreadable = || LoadError::Unreadable { name: name.clone() };
    let mut n = first.min(size);
    loop {
        let blob = file
            .slice_with_f64_and_f64(0.0, n as f64)
            .map_err(|_| unreadable())?;
        let buf = wasm_bindgen_futures::JsFuture::from(blob.array_buffer())
            .await
            .map_err(|_| unreadable())?;
        let bytes = js_sys::Uint8Array::new(&buf).to_vec();
        match step(&name, size, &bytes) {
            Err(next) if next > n => n = next,
            Err(_) => return Err(unreadable()),
            Ok(result) => return result,
        }
    }
}

/// Reads the header of a safetensors file: `File.slice(0, 8)` for its length `n`, then
/// `File.slice(0, 8 + n)`; never the tensor data ([`crate::load::safetensors_step`]).
pub async fn read_safetensors_header(
    file: &File,
) -> Result<vram_core::safetensors_file::SafetensorsHeader, LoadError> {
    read_prefix(
        file,
        crate::load::SAFETENSORS_FIRST_READ,
        |name, size, bytes| match crate::load::safetensors_step(name, size, bytes) {
            crate::load::SafetensorsStep::Read(next) => Err(next),
            crate::load::SafetensorsStep::Done(result) => Ok(*result),
        },
    )
    .await
}

/// Reads the header of a GGUF file: `File.slice(0, n)` from 1 MiB, growing to what the parser asks
/// for (at least doubling), up to the core's 256 MiB header cap; never the tensor data.
pub async fn read_gguf_header(file: &File) -> Result<GgufHeader, LoadError> {
    read_prefix(
        file,
        crate::load::GGUF_FIRST_READ,
        |name, size, bytes| match crate::load::gguf_step(name, size, bytes) {
            crate::load::GgufStep::Read(next) => Err(next),
            crate::load::GgufStep::Done(result) => Ok(*result),
        },
    )
    .await
}

/// Every file of a `FileList` (a drop or the file input), in order.
fn file_list(list: Option<web_sys::FileList>) -> Vec<File> {
    list.map(|l| (0..l.length()).filter_map(|i| l.get(i)).collect())
        .unwrap_or_default()
}

fn dropped_files(ev: &DragEvent) -> Vec<File> {
    file_list(ev.data_transfer().and_then(|d| d.files()))
}

/// Listens on the window so a file dropped anywhere loads; shows the overlay while dragging.
/// Returns the "dragging" signal for the overlay.
pub fn install_page_drop(state: AppState) -> ReadSignal<bool> {
    let (dragging, set_dragging) = signal(false);
    // `dragover` must be cancelled or the browser never fires `drop` (and opens the file instead).
    let _ = window_event_listener(ev::dragover, move |ev: DragEvent| {
        ev.prevent_default();
        set_dragging.set(true);
    });
    let _ = window_event_listener(ev::dragenter, move |ev: DragEvent| {
        ev.prevent_default();
        set_dragging.set(true);
    });
    let _ = window_event_listener(ev::dragleave, move |ev: DragEvent| {
        // Leaving the window (no related target) ends the drag; moving between elements does not.
        if ev.related_target().is_none() {
            set_dragging.set(false);
        }
    });
    let _ = window_event_listener(ev::drop, move |ev: DragEvent| {
        ev.prevent_default();
        set_dragging.set(false);
        let files = dropped_files(&ev);
        if !files.is_empty() {
            take(state, UserInput::Files(files));
        }
    });
    // Pasting JSON anywhere outside a text field loads it.
    let _ = window_event_listener(ev::paste, move |ev: web_sys::ClipboardEvent| {
        let in_field = ev
            .target()
            .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
            .is_some_and(|el| matches!(el.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"));
        if in_field {
            return;
        }
        let Some(text) = ev.clipboard_data().and_then(|d| d.get_data("text").ok()) else {
            return;
        };
        if text.trim_start().starts_with('{') {
            ev.prevent_default();
            take(state, UserInput::Text(text, ModelSource::Pasted));
        }
    });
    dragging
}

/// The drop zone: a large button that opens the file dialog (Enter or click), plus the hidden input.
#[component]
pub fn DropZone() -> impl IntoView {
    let state = use_state();
    let input_ref: NodeRef<html::Input> = NodeRef::new();
    let open = move |_| {
        if let Some(input) = input_ref.get() {
            input.click();
        }
    };
    let on_change = move |_| {
        let Some(input) = input_ref.get() else { return };
        let files = file_list(input.files());
        if !files.is_empty() {
            take(state, UserInput::Files(files));
        }
        // Allow opening the same file again.
        input.set_value("");
    };
    let s = move || state.lang.get().strings();
    view! {
        <div class="drop-zone" data-testid="drop-zone">
            <button type="button" class="drop-button" data-testid="open-file" on:click=open>
                <span class="drop-title">{move || s().drop_title}</span>
                <span class="drop-hint">{move || s().drop_hint}</span>
            </button>
            <input
                type="file"
                accept=".json,application/json,.gguf,.safetensors"
                multiple
                class="visually-hidden"
                tabindex="-1"
                aria-hidden="true"
                data-testid="file-input"
                node_ref=input_ref
                on:change=on_change
            />
        </div>
    }
}

/// A text area to paste a config into, with a load button.
#[component]
pub fn PasteBox() -> impl IntoView {
    let state = use_state();
    let (text, set_text) = signal(String::new());
    let s = move || state.lang.get().strings();
    let load = move |_| {
        let t = text.get_untracked();
        if !t.trim().is_empty() {
            take(state, UserInput::Text(t, ModelSource::Pasted));
        }
    };
    view! {
        <div class="paste-box">
            <label for="paste-json">{move || s().paste_label}</label>
            <textarea
                id="paste-json"
                rows="3"
                spellcheck="false"
                data-testid="paste-input"
                placeholder=move || s().paste_placeholder
                prop:value=text
                on:input=move |ev| set_text.set(event_target_value(&ev))
            ></textarea>
            <button type="button" data-testid="paste-load" on:click=load>
                {move || s().paste_button}
            </button>
        </div>
    }
}

/// Families alphabetically, the catch-all groups ("Other decoders", "Encoder & classic") last.
fn families() -> Vec<&'static str> {
    let mut out: Vec<&'static str> = Vec::new();
    for p in PRESETS {
        if !out.contains(&p.family) {
            out.push(p.family);
        }
    }
    out.sort_by_key(|f| {
        (
            matches!(*f, "Other decoders" | "Encoder & classic"),
            f.to_lowercase(),
        )
    });
    out
}

/// Whether a preset matches the search text (case-insensitive, on repo and family).
pub fn preset_matches(repo: &str, family: &str, query: &str) -> bool {
    let q = query.trim().to_lowercase();
    q.is_empty() || repo.to_lowercase().contains(&q) || family.to_lowercase().contains(&q)
}

/// The preset picker: a search box filtering a select grouped by family.
#[component]
pub fn PresetPicker() -> impl IntoView {
    let state = use_state();
    let (query, set_query) = signal(String::new());
    let s = move || state.lang.get().strings();
    let selected = move || {
        state.model.with(|m| match m.as_ref().map(|m| &m.source) {
            Some(ModelSource::Preset(id)) => id.to_string(),
            _ => String::new(),
        })
    };
    let on_change = move |ev| {
        let id = event_target_value(&ev);
        if !id.is_empty() {
            take(state, UserInput::Preset(id));
        }
    };
    let groups = move || {
        let q = query.get();
        families()
            .into_iter()
            .filter_map(|family| {
                let options: Vec<_> = PRESETS
                    .iter()
                    .filter(|p| p.family == family && preset_matches(p.repo, p.family, &q))
                    .map(|p| view! { <option value=p.id>{p.repo}</option> })
                    .collect();
                (!options.is_empty()).then(|| view! { <optgroup label=family>{options}</optgroup> })
            })
            .collect_view()
    };
    view! {
        <div class="preset-picker">
            <label for="preset-search">{move || s().preset_search}</label>
            <input
                id="preset-search"
                type="search"
                data-testid="preset-search"
                prop:value=query
                on:input=move |ev| set_query.set(event_target_value(&ev))
            />
            <label for="preset-select">{move || s().preset_label}</label>
            <select id="preset-select" data-testid="preset-select" on:change=on_change prop:value=selected>
                <option value="">{move || s().preset_choose}</option>
                {groups}
            </select>
        </div>
    }
}

/// The load error, shown next to the inputs.
#[component]
pub fn LoadErrorBox() -> impl IntoView {
    let state = use_state();
    move || {
        state.load_error.get().map(|e| {
            let lang = state.lang.get();
            view! {
                <div class="load-error" role="alert" data-testid="load-error">
                    <strong>{lang.strings().error_heading}</strong>
                    <p>{lang.load_error(&e)}</p>
                </div>
            }
        })
    }
}
