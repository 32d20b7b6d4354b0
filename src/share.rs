//! The share link: the whole view (model, scenario, GPU, language) in the URL's query string, as one
//! JSON value under `s`, so a link reproduces the view. Presets travel by id; other configs travel as
//! their text.

use crate::i18n::Lang;
use crate::page_scenario::{GpuChoice, LocalMachine, PageMode, PageScenario};
use serde::{Deserialize, Serialize};
use vram_core::Scenario;

/// What the URL carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedState {
    /// Preset id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Config text for non-preset models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// `train`, `infer` or `both`.
    pub mode: String,
    /// Training scenario.
    pub train: Scenario,
    /// Inference scenario.
    pub infer: Scenario,
    /// GPU id, or `custom:<bytes>`.
    pub gpu: String,
    /// Language tag.
    pub lang: String,
    /// The local machine of the llama.cpp view.
    #[serde(default, skip_serializing_if = "is_default_local")]
    pub local: LocalMachine,
}

fn is_default_local(l: &LocalMachine) -> bool {
    *l == LocalMachine::default()
}

impl SharedState {
    /// Captures the view.
    pub fn capture(
        page: &PageScenario,
        preset: Option<&str>,
        config: Option<&str>,
        lang: Lang,
    ) -> Self {
        SharedState {
            preset: preset.map(String::from),
            config: config.map(String::from),
            mode: page.mode.key().into(),
            train: page.train.clone(),
            infer: page.infer.clone(),
            gpu: match &page.gpu {
                GpuChoice::Catalog(id) => id.to_string(),
                GpuChoice::Custom(b) => format!("custom:{b}"),
            },
            lang: lang.tag().into(),
            local: page.local.clone(),
        }
    }

    /// The page scenario it describes (unknown values fall back to defaults).
    pub fn page(&self) -> PageScenario {
        let gpu = match self.gpu.strip_prefix("custom:") {
            Some(b) => GpuChoice::Custom(b.parse().unwrap_or(80 << 30)),
            None => vram_core::gpu_catalog::find(&self.gpu)
                .map_or(GpuChoice::Catalog("h100-80"), |g| GpuChoice::Catalog(g.id)),
        };
        PageScenario {
            mode: PageMode::from_key(&self.mode).unwrap_or(PageMode::Both),
            train: self.train.clone(),
            infer: self.infer.clone(),
            gpu,
            local: self.local.clone(),
        }
    }

    /// The query string (`?s=…`), percent-encoded.
    pub fn to_query(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("?s={}", percent_encode(&json))
    }

    /// Parses a query string made by [`SharedState::to_query`].
    pub fn from_query(query: &str) -> Option<SharedState> {
        let q = query.strip_prefix('?').unwrap_or(query);
        let value = q.split('&').find_map(|kv| kv.strip_prefix("s="))?;
        serde_json::from_str(&percent_decode(value)?).ok()
    }
}

fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(b as char)
            }
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' => {
                let hex = s.get(i + 1..i + 3)?;
                out.push(u8::from_str_radix(hex, 16).ok()?);
                i += 3;
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).ok()
}
