//! The share link: the view (model, task, GPU, language and the settings that differ from the page's
//! defaults) in the URL's query string, so a link reproduces the view and stays short.
//!
//! Short format (what [`SharedState::to_query`] writes), one `key=value` pair per item:
//!
//! | key | value |
//! |---|---|
//! | `p` | preset id |
//! | `c` | a pasted or dropped config: its JSON minified (re-serialized from `serde_json::Value`), then base64url without padding |
//! | `t` | task key (`serve`, `finetune`, `train`) |
//! | `l` | language tag (`en`, `zh-CN`) |
//! | `g` | GPU id, or `custom:<bytes>` |
//! | `sv.<setting>` / `ft.<setting>` / `tr.<setting>` | a serving / fine-tuning / full-training setting that differs from its default |
//! | `lm.<setting>` | a setting of the local (llama.cpp) machine that differs from its default |
//!
//! A setting is a leaf of the scenario's JSON (nested objects are diffed leaf by leaf), named by a
//! short alias (`bs` for `batch`, `tp` for `serving.tensor_parallel_size`, ...; unknown paths by their
//! dotted JSON path). Its value is JSON text (`4`, `true`, `0.95`, `null`), or a bare string when
//! the string does not itself read as JSON (`fp8`, `all-linear`). On load the changed leaves are merged
//! over the defaults; a leaf that does not deserialize, or makes the scenario fail validation, is
//! dropped (the default stays).
//!
//! The former format — the whole state as percent-encoded JSON under `?s=`, with `mode` =
//! `train` | `infer` | `both` — is still read.

use crate::i18n::Lang;
use crate::page_scenario::{
    finetune_default, serve_default, GpuChoice, LocalMachine, PageScenario, Task,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use vram_core::Scenario;

/// The fragment that opens the page scrolled to the verdict (the element with `id="verdict"`); the
/// caller appends it after [`SharedState::to_query`].
pub const VERDICT_FRAGMENT: &str = "#verdict";

/// What the URL carries.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct SharedState {
    /// Preset id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preset: Option<String>,
    /// Config text for non-preset models (minified JSON after a round trip through a short link).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config: Option<String>,
    /// The task key (`serve`, `finetune`, `train`; the former `infer` / `both` open Serve).
    pub mode: String,
    /// Full-training scenario.
    pub train: Scenario,
    /// Fine-tuning scenario (absent in links made before the tasks: the default).
    #[serde(default = "crate::page_scenario::finetune_default")]
    pub finetune: Scenario,
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

/// Query key of each scenario of the page, in link order.
const SCENARIO_KEYS: [&str; 3] = ["sv", "ft", "tr"];
/// Query key prefix of the local machine's settings.
const LOCAL_KEY: &str = "lm";

/// Short names of scenario paths (`alias`, dotted JSON path), in the order of the struct's fields:
/// links list changed settings in this order and apply them in it (so `zero` comes before
/// `offload_params`, which needs stage 3). An alias never equals a top-level field name.
pub const SCENARIO_ALIASES: &[(&str, &str)] = &[
    ("mo", "mode"),
    ("dt", "dtype"),
    ("mp", "mixed_precision"),
    ("opt", "optimizer"),
    ("bs", "batch"),
    ("sl", "seq_len"),
    ("gc", "grad_checkpointing"),
    ("at", "attention"),
    ("lo", "lora"),
    ("r", "lora.r"),
    ("la", "lora.alpha"),
    ("lt", "lora.targets"),
    ("lq", "lora.base_quant"),
    ("n", "gpus"),
    ("z", "zero"),
    ("oo", "offload_optimizer"),
    ("op", "offload_params"),
    ("ga", "grad_accumulation"),
    ("w", "weights"),
    ("kv", "kv_dtype"),
    ("lk", "logits_to_keep"),
    ("e", "engine"),
    ("vs", "serving"),
    ("gmb", "serving.gpu_memory_bytes"),
    ("gu", "serving.gpu_memory_utilization"),
    ("tp", "serving.tensor_parallel_size"),
    ("ml", "serving.max_model_len"),
    ("mns", "serving.max_num_seqs"),
    ("mbt", "serving.max_num_batched_tokens"),
    ("bk", "serving.block_size"),
    ("ntb", "serving.non_torch_bytes"),
    ("vv", "serving.vllm_version"),
    ("us", "serving.usage"),
    ("ic", "serving.interconnect"),
    ("ee", "serving.enforce_eager"),
    ("gn", "serving.gpu_name"),
    ("lc", "llama_cpp"),
    ("ub", "llama_cpp.n_ubatch"),
    ("nb", "llama_cpp.n_batch"),
    ("kvv", "llama_cpp.kv_dtype_v"),
    ("fa", "llama_cpp.flash_attn"),
    ("ngl", "llama_cpp.n_gpu_layers"),
    ("ncm", "llama_cpp.n_cpu_moe"),
    ("cm", "llama_cpp.cpu_moe"),
    ("swa", "llama_cpp.swa_full"),
    ("nko", "llama_cpp.no_kv_offload"),
    ("ts", "llama_cpp.tensor_split"),
    ("lgb", "llama_cpp.gpu_memory_bytes"),
    ("kvu", "llama_cpp.kv_unified"),
    ("ol", "llama_cpp.ollama"),
];

/// Short names of the local machine's fields.
pub const LOCAL_ALIASES: &[(&str, &str)] = &[
    ("ram", "ram_bytes"),
    ("dsp", "display"),
    ("free", "free_bytes"),
];

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
            mode: page.task.key().into(),
            train: page.train.clone(),
            finetune: page.finetune.clone(),
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
            Some(b) => match b.trim().parse::<u64>() {
                Ok(bytes) if bytes > 0 => GpuChoice::Custom(bytes),
                _ => GpuChoice::Catalog("h100-80"),
            },
            None => vram_core::gpu_catalog::find(&self.gpu)
                .map_or(GpuChoice::Catalog("h100-80"), |g| GpuChoice::Catalog(g.id)),
        };
        PageScenario {
            task: Task::from_key(&self.mode).unwrap_or(Task::Serve),
            train: self.train.clone(),
            finetune: self.finetune.clone(),
            infer: self.infer.clone(),
            gpu,
            local: self.local.clone(),
        }
    }

    /// The short query string (`?p=…&t=…&l=…&g=…` and the changed settings); see the module doc.
    pub fn to_query(&self) -> String {
        let mut pairs: Vec<(String, String)> = Vec::new();
        if let Some(p) = &self.preset {
            pairs.push(("p".into(), p.clone()));
        } else if let Some(c) = &self.config {
            pairs.push(("c".into(), encode_config(c)));
        }
        pairs.push(("t".into(), self.mode.clone()));
        pairs.push(("l".into(), self.lang.clone()));
        pairs.push(("g".into(), self.gpu.clone()));
        let defaults = PageScenario::default();
        let scenarios = [
            (&self.infer, &defaults.infer),
            (&self.finetune, &defaults.finetune),
            (&self.train, &defaults.train),
        ];
        for (key, (current, default)) in SCENARIO_KEYS.iter().zip(scenarios) {
            for (path, value) in scenario_diff(default, current) {
                pairs.push((
                    format!("{key}.{}", alias_of(SCENARIO_ALIASES, &path)),
                    encode_value(&value),
                ));
            }
        }
        if let (Ok(d), Ok(c)) = (
            serde_json::to_value(LocalMachine::default()),
            serde_json::to_value(&self.local),
        ) {
            for (path, value) in sorted_diff(&d, &c, LOCAL_ALIASES) {
                pairs.push((
                    format!("{LOCAL_KEY}.{}", alias_of(LOCAL_ALIASES, &path)),
                    encode_value(&value),
                ));
            }
        }
        let body: Vec<String> = pairs
            .iter()
            .map(|(k, v)| format!("{}={}", percent_encode(k), percent_encode(v)))
            .collect();
        format!("?{}", body.join("&"))
    }

    /// [`SharedState::to_query`] followed by [`VERDICT_FRAGMENT`]: what goes after the page's path.
    pub fn to_query_with_fragment(&self) -> String {
        format!("{}{VERDICT_FRAGMENT}", self.to_query())
    }

    /// The former query string: the whole state as percent-encoded JSON under `s` (still read by
    /// [`SharedState::from_query`]).
    pub fn to_legacy_query(&self) -> String {
        let json = serde_json::to_string(self).unwrap_or_default();
        format!("?s={}", percent_encode(&json))
    }

    /// Parses a query string made by [`SharedState::to_query`] or the former `?s=` format (a leading
    /// `?` and a trailing `#fragment` are ignored). `None` when it carries none of the link's keys or
    /// an unreadable `s`; settings that do not read fall back to their defaults.
    pub fn from_query(query: &str) -> Option<SharedState> {
        let q = query.split('#').next().unwrap_or_default();
        let q = q.strip_prefix('?').unwrap_or(q);
        let pairs: Vec<(String, String)> = q
            .split('&')
            .filter_map(|kv| {
                let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
                Some((percent_decode(k)?, percent_decode(v)?))
            })
            .collect();
        if let Some((_, v)) = pairs.iter().find(|(k, _)| k == "s") {
            return serde_json::from_str(v).ok();
        }
        let recognised = |k: &str| {
            matches!(k, "p" | "c" | "t" | "l" | "g")
                || k.split_once('.').is_some_and(|(prefix, _)| {
                    SCENARIO_KEYS.contains(&prefix) || prefix == LOCAL_KEY
                })
        };
        if !pairs.iter().any(|(k, _)| recognised(k)) {
            return None;
        }
        let get = |key: &str| pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        let leaves = |prefix: &str, aliases: &[(&str, &str)]| -> Vec<(String, Value)> {
            pairs
                .iter()
                .filter_map(|(k, v)| {
                    let (p, rest) = k.split_once('.')?;
                    (p == prefix && !rest.is_empty())
                        .then(|| (expand_alias(aliases, rest), decode_value(v)))
                })
                .collect()
        };
        let defaults = PageScenario::default();
        Some(SharedState {
            preset: get("p").filter(|p| !p.is_empty()),
            config: if get("p").is_some_and(|p| !p.is_empty()) {
                None
            } else {
                get("c").and_then(|c| decode_config(&c))
            },
            mode: get("t").unwrap_or_else(|| Task::Serve.key().into()),
            lang: get("l").unwrap_or_default(),
            gpu: get("g").unwrap_or_else(|| "h100-80".into()),
            infer: merge_scenario(&defaults.infer, leaves("sv", SCENARIO_ALIASES)),
            finetune: merge_scenario(&defaults.finetune, leaves("ft", SCENARIO_ALIASES)),
            train: merge_scenario(&defaults.train, leaves("tr", SCENARIO_ALIASES)),
            local: merge_local(leaves(LOCAL_KEY, LOCAL_ALIASES)),
        })
    }
}

/// The defaults a short link's scenarios are diffed against, by query key (for tests and callers that
/// want to know what a link leaves out).
pub fn scenario_default(key: &str) -> Option<Scenario> {
    match key {
        "sv" => Some(serve_default()),
        "ft" => Some(finetune_default()),
        "tr" => Some(Scenario::default()),
        _ => None,
    }
}

/// A scenario as JSON with its llama.cpp inputs always present (they are skipped when default), so
/// that changed llama.cpp settings diff leaf by leaf.
fn scenario_value(s: &Scenario) -> Value {
    let mut v = serde_json::to_value(s).unwrap_or(Value::Null);
    if let Value::Object(m) = &mut v {
        if !m.contains_key("llama_cpp") {
            let lc = serde_json::to_value(&s.llama_cpp).unwrap_or(Value::Null);
            m.insert("llama_cpp".into(), lc);
        }
    }
    v
}

/// The changed leaves of a scenario (dotted path, new value), in [`SCENARIO_ALIASES`] order.
fn scenario_diff(default: &Scenario, current: &Scenario) -> Vec<(String, Value)> {
    sorted_diff(
        &scenario_value(default),
        &scenario_value(current),
        SCENARIO_ALIASES,
    )
}

fn sorted_diff(default: &Value, current: &Value, aliases: &[(&str, &str)]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    diff_leaves(default, current, &mut Vec::new(), &mut out);
    out.sort_by_key(|(path, _)| order_of(aliases, path));
    out
}

/// Collects the leaves of `current` that differ from `default`. Objects are diffed key by key (an
/// object where the default has `null` or nothing is diffed against an empty object); anything else
/// that differs is a leaf.
fn diff_leaves(
    default: &Value,
    current: &Value,
    path: &mut Vec<String>,
    out: &mut Vec<(String, Value)>,
) {
    match (default, current) {
        (Value::Object(_) | Value::Null, Value::Object(cur)) => {
            let empty = Map::new();
            let def = default.as_object().unwrap_or(&empty);
            for (k, v) in cur {
                let d = def.get(k).unwrap_or(&Value::Null);
                if d == v {
                    continue;
                }
                path.push(k.clone());
                diff_leaves(d, v, path, out);
                path.pop();
            }
        }
        _ => {
            if default != current && !path.is_empty() {
                out.push((path.join("."), current.clone()));
            }
        }
    }
}

/// Position of a path in the alias table (by its longest listed prefix); unknown paths go last.
fn order_of(aliases: &[(&str, &str)], path: &str) -> (usize, String) {
    let best = aliases
        .iter()
        .enumerate()
        .filter(|(_, (_, p))| path == *p || path.starts_with(&format!("{p}.")))
        .max_by_key(|(_, (_, p))| p.len())
        .map_or(usize::MAX, |(i, _)| i);
    (best, path.to_string())
}

/// The short name of a dotted path: its alias, or the alias of its longest listed prefix followed by
/// the rest, or the path itself.
fn alias_of(aliases: &[(&str, &str)], path: &str) -> String {
    aliases
        .iter()
        .filter_map(|(a, p)| {
            if path == *p {
                Some((p.len(), a.to_string()))
            } else {
                path.strip_prefix(&format!("{p}."))
                    .map(|rest| (p.len(), format!("{a}.{rest}")))
            }
        })
        .max_by_key(|(len, _)| *len)
        .map_or_else(|| path.to_string(), |(_, s)| s)
}

/// Inverse of [`alias_of`]: expands the first segment when it is an alias.
fn expand_alias(aliases: &[(&str, &str)], key: &str) -> String {
    let (first, rest) = match key.split_once('.') {
        Some((f, r)) => (f, Some(r)),
        None => (key, None),
    };
    let head = aliases
        .iter()
        .find(|(a, _)| *a == first)
        .map_or(first, |(_, p)| *p);
    match rest {
        Some(r) => format!("{head}.{r}"),
        None => head.to_string(),
    }
}

/// A leaf's text: a bare string when it does not read as JSON, else JSON.
fn encode_value(v: &Value) -> String {
    match v {
        Value::String(s) if !s.is_empty() && serde_json::from_str::<Value>(s).is_err() => s.clone(),
        _ => serde_json::to_string(v).unwrap_or_default(),
    }
}

/// Inverse of [`encode_value`].
fn decode_value(s: &str) -> Value {
    serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.to_string()))
}

/// Sets `path` (dot-separated) in `root`, turning non-object intermediates into objects.
fn set_path(root: &mut Value, path: &str, value: Value) {
    let mut cur = root;
    let mut segments = path.split('.').peekable();
    while let Some(seg) = segments.next() {
        if !cur.is_object() {
            *cur = Value::Object(Map::new());
        }
        let Value::Object(m) = cur else { return };
        if segments.peek().is_none() {
            m.insert(seg.to_string(), value);
            return;
        }
        cur = m.entry(seg.to_string()).or_insert(Value::Null);
    }
}

/// Whether a scenario read from a link is one the page accepts (ranges of the core's validation).
fn scenario_ok(s: &Scenario) -> bool {
    s.validate().is_ok() && vram_core::infer::vllm::validate(&s.serving).is_ok()
}

/// Merges changed leaves over a default scenario, group by group (a group is a top-level field, so
/// the leaves of a new LoRA object land together); a group that does not deserialize or validate is
/// retried leaf by leaf, and a leaf that still fails is dropped.
fn merge_scenario(default: &Scenario, mut leaves: Vec<(String, Value)>) -> Scenario {
    leaves.sort_by_key(|(path, _)| order_of(SCENARIO_ALIASES, path));
    let mut base = scenario_value(default);
    let mut current = default.clone();
    let try_apply = |base: &Value, group: &[(String, Value)]| -> Option<(Value, Scenario)> {
        let mut v = base.clone();
        for (path, value) in group {
            set_path(&mut v, path, value.clone());
        }
        let s: Scenario = serde_json::from_value(v.clone()).ok()?;
        scenario_ok(&s).then_some((v, s))
    };
    let mut i = 0;
    while i < leaves.len() {
        let top = leaves[i]
            .0
            .split('.')
            .next()
            .unwrap_or_default()
            .to_string();
        let mut j = i;
        while j < leaves.len() && leaves[j].0.split('.').next() == Some(top.as_str()) {
            j += 1;
        }
        let group = &leaves[i..j];
        if let Some((v, s)) = try_apply(&base, group) {
            base = v;
            current = s;
        } else {
            for leaf in group {
                if let Some((v, s)) = try_apply(&base, std::slice::from_ref(leaf)) {
                    base = v;
                    current = s;
                }
            }
        }
        i = j;
    }
    current
}

/// Merges changed leaves over the default local machine, dropping those that do not deserialize.
fn merge_local(leaves: Vec<(String, Value)>) -> LocalMachine {
    let mut base = serde_json::to_value(LocalMachine::default()).unwrap_or(Value::Null);
    let mut current = LocalMachine::default();
    for (path, value) in leaves {
        let mut v = base.clone();
        set_path(&mut v, &path, value);
        if let Ok(l) = serde_json::from_value::<LocalMachine>(v.clone()) {
            base = v;
            current = l;
        }
    }
    current
}

/// A config for the `c` key: minified JSON when it parses (the text as is otherwise), base64url.
pub fn encode_config(text: &str) -> String {
    let compact = serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| serde_json::to_string(&v).ok())
        .unwrap_or_else(|| text.to_string());
    base64url_encode(compact.as_bytes())
}

/// Inverse of [`encode_config`] (`None` for text that is not base64url of UTF-8).
pub fn decode_config(encoded: &str) -> Option<String> {
    String::from_utf8(base64url_decode(encoded)?).ok()
}

const B64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64 with the URL-safe alphabet (`-`, `_`) and no padding.
fn base64url_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        let chars = chunk.len() + 1;
        for k in 0..chars {
            let idx = ((n >> (18 - 6 * k)) & 63) as usize;
            out.push(B64[idx] as char);
        }
    }
    out
}

/// Inverse of [`base64url_encode`]; also accepts `+`, `/` and trailing `=`.
fn base64url_decode(s: &str) -> Option<Vec<u8>> {
    let s = s.trim_end_matches('=');
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut acc: u32 = 0;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' | b'+' => 62,
            b'_' | b'/' => 63,
            _ => return None,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
            acc &= (1 << bits) - 1;
        }
    }
    // A lone trailing character carries fewer than 8 bits: not valid base64.
    (bits < 6).then_some(out)
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

/// Opens a share link: its language, settings and model, then (with [`VERDICT_FRAGMENT`]) scrolls
/// to the verdict once the results pane, a chunk of its own, has drawn it.
pub fn restore(state: crate::state::AppState, query: &str, fragment: &str) {
    use leptos::prelude::Set;
    let Some(shared) = SharedState::from_query(query) else {
        return;
    };
    if let Some(lang) = crate::i18n::Lang::from_tag(&shared.lang) {
        state.set_lang.set(lang);
    }
    state.set_page.set(shared.page());
    let loaded = match (&shared.preset, &shared.config) {
        (Some(id), _) => crate::load::load_preset(id),
        (None, Some(text)) => {
            crate::load::load_text(text.clone(), crate::load::ModelSource::Pasted)
        }
        _ => return,
    };
    let ok = loaded.is_ok();
    state.accept(loaded);
    if ok && fragment == VERDICT_FRAGMENT {
        scroll_to_verdict(SCROLL_TRIES);
    }
}

/// How many times (50 ms apart) a share link looks for the verdict to scroll to: the results
/// chunk may still be on its way.
const SCROLL_TRIES: u32 = 100;

fn scroll_to_verdict(tries_left: u32) {
    leptos::leptos_dom::helpers::set_timeout(
        move || match web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.get_element_by_id("verdict"))
        {
            Some(el) => el.scroll_into_view(),
            None if tries_left > 0 => scroll_to_verdict(tries_left - 1),
            None => {}
        },
        std::time::Duration::from_millis(50),
    );
}
