//! The page's shared state, provided as a Leptos context: the language, the loaded model and the last
//! load error. Components read the signals and call [`AppState::accept`] with a load result.

use crate::i18n::Lang;
use crate::load::{LoadError, LoadedModel};
use crate::page_scenario::PageScenario;
use leptos::prelude::*;

/// Signals shared by every component (`(value, set_value)` pairs).
#[derive(Clone, Copy)]
pub struct AppState {
    /// Language of the page.
    pub lang: ReadSignal<Lang>,
    /// Sets the language.
    pub set_lang: WriteSignal<Lang>,
    /// The model on screen (the last one that loaded).
    pub model: ReadSignal<Option<LoadedModel>>,
    /// Replaces the model.
    pub set_model: WriteSignal<Option<LoadedModel>>,
    /// Why the last input was refused (cleared by the next good one).
    pub load_error: ReadSignal<Option<LoadError>>,
    /// Sets the load error.
    pub set_load_error: WriteSignal<Option<LoadError>>,
    /// The scenario and GPU.
    pub page: ReadSignal<PageScenario>,
    /// Sets the scenario.
    pub set_page: WriteSignal<PageScenario>,
    /// Rejected scenario input: (field key, the core's message).
    pub field_error: ReadSignal<Option<(String, String)>>,
    /// Sets the field error.
    pub set_field_error: WriteSignal<Option<(String, String)>>,
    /// Show GB (10^9) instead of GiB (2^30).
    pub use_gb: ReadSignal<bool>,
    /// Sets the unit.
    pub set_use_gb: WriteSignal<bool>,
    /// A loaded `vram measure` report, shown beside the estimate.
    pub report: ReadSignal<Option<crate::measured::LoadedReport>>,
    /// Sets the report.
    pub set_report: WriteSignal<Option<crate::measured::LoadedReport>>,
    /// A checkpoint given without its config (safetensors headers or an index alone), shown as a
    /// card beside the model on screen; cleared when a model loads.
    pub checkpoint: ReadSignal<Option<crate::load::CheckpointOnly>>,
    /// Sets the checkpoint card.
    pub set_checkpoint: WriteSignal<Option<crate::load::CheckpointOnly>>,
    /// How many things the user gave are being read (the first time, while the app chunk is
    /// fetched: `crate::deferred`).
    pub reading: ReadSignal<u32>,
    /// Sets [`AppState::reading`].
    pub set_reading: WriteSignal<u32>,
}

impl AppState {
    /// Creates the signals.
    pub fn new(lang: Lang) -> Self {
        let (lang, set_lang) = signal(lang);
        let (model, set_model) = signal(None::<LoadedModel>);
        let (load_error, set_load_error) = signal(None::<LoadError>);
        let (page, set_page) = signal(PageScenario::default());
        let (field_error, set_field_error) = signal(None::<(String, String)>);
        let (use_gb, set_use_gb) = signal(false);
        let (report, set_report) = signal(None::<crate::measured::LoadedReport>);
        let (checkpoint, set_checkpoint) = signal(None::<crate::load::CheckpointOnly>);
        let (reading, set_reading) = signal(0u32);
        AppState {
            reading,
            set_reading,
            checkpoint,
            set_checkpoint,
            report,
            set_report,
            page,
            set_page,
            field_error,
            set_field_error,
            use_gb,
            set_use_gb,
            lang,
            set_lang,
            model,
            set_model,
            load_error,
            set_load_error,
        }
    }

    /// Shows a good model (clearing the error) or the error (keeping the previous model on screen).
    pub fn accept(&self, result: Result<LoadedModel, LoadError>) {
        match result {
            Ok(model) => {
                self.set_load_error.set(None);
                self.set_report.set(None);
                self.set_checkpoint.set(None);
                self.set_model.set(Some(model));
            }
            Err(e) => self.set_load_error.set(Some(e)),
        }
    }
}

impl AppState {
    /// Shows a model read from a GGUF header with the llama.cpp engine (inference only, the file's
    /// weight type), or the error (the previous model stays).
    pub fn accept_gguf(&self, result: Result<LoadedModel, LoadError>) {
        if result.is_ok() {
            let mut page = self.page.get_untracked();
            page.task = crate::page_scenario::Task::Serve;
            crate::page_scenario::use_engine(&mut page, vram_core::scenario::Engine::LlamaCpp);
            page.infer.weights = None;
            self.set_field_error.set(None);
            self.set_page.set(page);
        }
        self.accept(result);
    }

    /// Shows what a checkpoint's files loaded to: a model (config + headers), the checkpoint card
    /// (headers or index alone; the model on screen stays), or the error (everything stays).
    pub fn accept_checkpoint(&self, result: Result<crate::load::CheckpointLoad, LoadError>) {
        match result {
            Ok(crate::load::CheckpointLoad::Model(m)) => self.accept(Ok(*m)),
            Ok(crate::load::CheckpointLoad::Only(c)) => {
                self.set_load_error.set(None);
                self.set_checkpoint.set(Some(c));
            }
            Err(e) => self.accept(Err(e)),
        }
    }

    /// Loads dropped or pasted text: a `vram measure` report (model + scenario + measurement) or a config.
    pub fn accept_text(&self, text: String, source: crate::load::ModelSource) {
        if !crate::measured::looks_like_report(&text) {
            self.accept(crate::load::load_text(text, source));
            return;
        }
        let file_name = match &source {
            crate::load::ModelSource::File(n) => n.clone(),
            _ => "report.json".to_string(),
        };
        let current = self.model.get_untracked();
        match crate::measured::load_report(&text, &file_name, current.as_ref()) {
            Ok(r) => {
                let mut page = self.page.get_untracked();
                match r.scenario.mode {
                    vram_core::scenario::Mode::Train => {
                        // A measured LoRA step opens in Fine-tune, a full one in Train.
                        if r.scenario.lora.is_some() {
                            page.finetune = r.scenario.clone();
                            page.task = crate::page_scenario::Task::Finetune;
                        } else {
                            page.train = r.scenario.clone();
                            page.task = crate::page_scenario::Task::Train;
                        }
                    }
                    vram_core::scenario::Mode::Infer => {
                        page.infer = r.scenario.clone();
                        page.task = crate::page_scenario::Task::Serve;
                    }
                }
                self.set_load_error.set(None);
                self.set_checkpoint.set(None);
                self.set_page.set(page);
                self.set_model.set(Some(r.model.clone()));
                self.set_report.set(Some(r));
            }
            Err(e) => self.accept(Err(e)),
        }
    }

    /// Applies a change to the scenario if the core accepts the result; otherwise shows the core's
    /// message next to the field and keeps the current scenario (and results) on screen.
    pub fn change_scenario(&self, field: &str, f: impl FnOnce(&mut PageScenario)) {
        crate::perf::mark_input();
        let mut next = self.page.get_untracked();
        f(&mut next);
        let mut checked = self.check(&next);
        // Another engine may not offer the weight format or KV type chosen for this one (an fp8 KV
        // cache under transformers): the engine changes, those two go back to "auto", and the field
        // says why.
        let mut notice = None;
        if let (Err(msg), "engine") = (&checked, field) {
            let mut reset = next.clone();
            reset.infer.weights = None;
            reset.infer.kv_dtype = None;
            if self.check(&reset).is_ok() {
                notice = Some(format!("{msg} — weights and KV cache reset to auto"));
                next = reset;
                checked = Ok(());
            }
        }
        match checked {
            Ok(()) => {
                self.set_field_error
                    .set(notice.map(|m| (field.to_string(), m)));
                self.set_page.set(next);
            }
            Err(msg) => {
                // The V cache type is refused by the flash-attention setting too: explain it next to
                // the V type, whichever of the two changed.
                let key = if msg.starts_with("kv_dtype_v") {
                    "llama_ctv"
                } else {
                    field
                };
                self.set_field_error.set(Some((key.to_string(), msg)));
            }
        }
    }

    /// Applies a change only if the core accepts it, and says nothing otherwise: what a field does
    /// while the user is still typing (the `change` event then reports a bad value).
    pub fn change_scenario_quietly(&self, f: impl FnOnce(&mut PageScenario)) {
        let mut next = self.page.get_untracked();
        f(&mut next);
        if next != self.page.get_untracked() && self.check(&next).is_ok() {
            crate::perf::mark_input();
            self.set_field_error.set(None);
            self.set_page.set(next);
        }
    }

    /// The core's validation of a page scenario for the model on screen, including the estimate of
    /// the task itself: a combination the core refuses (an fp8 KV cache under transformers) is
    /// refused here, so the last good result stays on screen.
    fn check(&self, next: &PageScenario) -> Result<(), String> {
        crate::page_scenario::validate(next)?;
        self.model.with_untracked(|m| match m {
            Some(m) => {
                crate::page_scenario::validate_llama(next, &m.spec)?;
                crate::page_scenario::estimate_ok(next, &m.spec)
            }
            None => Ok(()),
        })
    }

    /// Bytes in the chosen unit, with the unit.
    pub fn fmt_bytes(&self, bytes: u64) -> String {
        crate::units_fmt::bytes(bytes, self.use_gb.get())
    }
}

/// The shared state from context (provided by `App`).
pub fn use_state() -> AppState {
    expect_context::<AppState>()
}
