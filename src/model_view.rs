//! The model summary and the exact parameter breakdown, straight from `vram_core`.

use crate::i18n::Lang;
use crate::load::{LoadedModel, ModelSource};
use crate::state::use_state;
use leptos::prelude::*;
use vram_core::estimate::ModelSummary;
use vram_core::presets;
use vram_core::units::group_thousands;

/// Summary and parameter table of the loaded model, or the empty-state hint.
#[component]
pub fn ModelView() -> impl IntoView {
    let state = use_state();
    move || {
        let lang = state.lang.get();
        state.model.with(|m| match m {
            Some(m) => render_model(lang, m).into_any(),
            None => view! {
                <p class="empty-state" data-testid="empty-state">{lang.strings().empty_state}</p>
            }
            .into_any(),
        })
    }
}

fn render_model(lang: Lang, m: &LoadedModel) -> impl IntoView {
    let s = lang.strings();
    let sum = ModelSummary::of(&m.spec);
    // A bundled config that is not a verbatim copy of the repository's says so beside its name.
    let origin = match &m.source {
        ModelSource::Preset(id) => presets::find(id)
            .map(|p| p.origin)
            .filter(|o| !o.is_empty()),
        _ => None,
    };
    let source = match &m.source {
        ModelSource::Preset(id) => format!("{} · {}", s.from_preset, id.replace("__", "/")),
        ModelSource::File(name) => format!("{} · {}", s.from_file, name),
        ModelSource::Pasted => s.from_paste.to_string(),
    };
    // The count the preset is checked against: published, or transformers' own count of the
    // model built from this config with the rounded published figure beside it.
    let published = match &m.source {
        ModelSource::Preset(id) => presets::find(id)
            .filter(|p| p.published_params > 0)
            .map(|p| (p.published_params, p.published_rounded)),
        _ => None,
    };
    let heads = if sum.num_attention_heads == 0 {
        "—".to_string()
    } else {
        format!("{} ({})", sum.num_attention_heads, sum.num_kv_heads)
    };
    let yes_no = |b: bool| if b { s.yes } else { s.no };
    let mut rows: Vec<(&'static str, String)> = vec![
        (s.model_type, sum.model_type.clone()),
        (s.structure, lang.kind(sum.kind).to_string()),
        (
            s.layers,
            if sum.num_encoder_layers > 0 {
                format!("{} + {}", sum.num_encoder_layers, sum.num_layers)
            } else {
                sum.num_layers.to_string()
            },
        ),
        (s.hidden_size, group_thousands(sum.hidden_size)),
        (s.heads, heads),
        (s.head_dim, sum.head_dim.to_string()),
        (s.vocab, group_thousands(sum.vocab_size)),
        (s.context, group_thousands(sum.max_position_embeddings)),
        (
            s.tied_embeddings,
            yes_no(sum.tie_word_embeddings).to_string(),
        ),
    ];
    if sum.num_experts > 0 {
        rows.push((
            s.experts,
            format!("{} ({})", sum.num_experts, sum.experts_per_token),
        ));
    }
    let p = &m.params;
    let total = p.total;
    // With a checkpoint's headers the total is theirs; the breakdown is the config's reading, so
    // its shares are of the config's total (shown below the headers' when they differ).
    let config_total = if m.spec.checkpoint.as_ref().is_some_and(|c| c.params > 0) {
        vram_core::ParamCounts::of(&m.spec).total
    } else {
        total
    };
    let share = move |n: u64| format_share(n, config_total);
    let component_rows = p
        .by_component
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(c, n)| {
            view! {
                <tr>
                    <th scope="row">{lang.component(*c)}</th>
                    <td class="num">{group_thousands(*n)}</td>
                    <td class="num">{share(*n)}</td>
                </tr>
            }
        })
        .collect_view();
    let warnings = (!m.spec.warnings.is_empty()).then(|| {
        view! {
            <div class="warnings" data-testid="model-warnings">
                <strong>{s.warnings}</strong>
                <ul>{m.spec.warnings.iter().map(|w| view! { <li>{w.clone()}</li> }).collect_view()}</ul>
            </div>
        }
    });
    view! {
        <section class="card model-card" aria-labelledby="model-heading" data-testid="model-view">
            <h2 id="model-heading">
                {s.summary_heading} ": "
                <span data-testid="model-name">{m.spec.name.clone()}</span>
            </h2>
            <p class="source" data-testid="model-source">{source}</p>
            {origin.map(|o| view! {
                <p class="source" data-testid="preset-origin">{s.config_origin} ": " {o}</p>
            })}
            <crate::checkpoint_view::CheckpointSource />
            <SupportBanner />
            {m.spec.gguf.as_ref().map(|g| view! {
                <p class="source" data-testid="gguf-type">
                    {lang.local().gguf_type} ": " <strong>{m.spec.torch_dtype.clone().unwrap_or_default()}</strong>
                    " · " {group_thousands(g.file_bytes)} " B"
                </p>
            })}
            <p class="headline">
                <span class="big" data-testid="total-params" data-raw=total.to_string()>
                    {group_thousands(total)}
                </span>
                " " {s.parameters.to_lowercase()} " · " {lang.format_count(total)}
                <data hidden data-testid="total-params-raw" value=total.to_string()>{total.to_string()}</data>
            </p>
            <dl class="summary">
                {rows
                    .into_iter()
                    .map(|(k, v)| view! { <div><dt>{k}</dt><dd>{v}</dd></div> })
                    .collect_view()}
            </dl>
            {warnings}
            <h3>{s.params_heading}</h3>
            <table class="params" data-testid="param-table">
                <thead>
                    <tr>
                        <th scope="col">{s.component}</th>
                        <th scope="col" class="num">{s.parameters}</th>
                        <th scope="col" class="num">{s.share}</th>
                    </tr>
                </thead>
                <tbody>{component_rows}</tbody>
                <tfoot>
                    <tr>
                        <th scope="row">{s.total}</th>
                        <td class="num">{group_thousands(total)}</td>
                        <td class="num">{if config_total == total { "100 %" } else { "" }}</td>
                    </tr>
                    {(config_total != total)
                        .then(|| {
                            view! {
                                <tr data-testid="config-params">
                                    <th scope="row">
                                        {match lang {
                                            Lang::En => "config.json reading",
                                            Lang::Zh => "按 config.json 解读",
                                        }}
                                    </th>
                                    <td class="num">{group_thousands(config_total)}</td>
                                    <td class="num">"100 %"</td>
                                </tr>
                            }
                        })}
                    {(p.active != config_total)
                        .then(|| {
                            view! {
                                <tr data-testid="active-params">
                                    <th scope="row">{s.active}</th>
                                    <td class="num">{group_thousands(p.active)}</td>
                                    <td class="num">{share(p.active)}</td>
                                </tr>
                            }
                        })}
                    {published
                        .map(|(n, rounded)| {
                            let (label, note) = if rounded.is_empty() {
                                (s.published, String::new())
                            } else {
                                (s.transformers_count, format!("{}: {rounded}", s.published))
                            };
                            view! {
                                <tr data-testid="published-params">
                                    <th scope="row">{label}</th>
                                    <td class="num">{group_thousands(n)}</td>
                                    <td class="published-note">{note}</td>
                                </tr>
                            }
                        })}
                </tfoot>
            </table>
        </section>
    }
}

/// A component's share of the total: two decimals, `< 0.01 %` for tiny non-zero parts.
pub fn format_share(part: u64, total: u64) -> String {
    if total == 0 {
        return "—".to_string();
    }
    let pct = part as f64 * 100.0 / total as f64;
    if part > 0 && pct < 0.005 {
        "< 0.01 %".to_string()
    } else {
        format!("{pct:.2} %")
    }
}

/// The banner shown with every estimate of a generic reading (`model.support = "generic"`): an
/// unknown `model_type` read as a llama-style decoder, whose counts are not verified.
#[component]
pub fn SupportBanner() -> impl IntoView {
    let state = use_state();
    move || {
        let lang = state.lang.get();
        state.model.with(|m| {
            let m = m.as_ref()?;
            (vram_core::estimate::support_of(&m.spec) == "generic").then(|| {
                let mt = if m.spec.model_type.is_empty() {
                    "?".to_string()
                } else {
                    m.spec.model_type.clone()
                };
                let text = match lang {
                    Lang::En => format!(
                        "Generic reading: counts not verified for model_type \"{mt}\". Every figure here rests on reading this config as a llama-style decoder (see the assumptions); give the model's .safetensors files with this config, or its GGUF file, for an exact count."
                    ),
                    Lang::Zh => format!(
                        "通用解读：model_type \"{mt}\" 的参数量未经验证。此处所有数字都按 llama 式解码器解读该配置（见所做的假设）；连同该配置一起提供模型的 .safetensors 文件，或拖入其 GGUF 文件，即可得到精确计数。"
                    ),
                };
                view! {
                    <p class="support-banner" role="note" data-testid="support-banner" data-support="generic">
                        {text}
                    </p>
                }
            })
        })
    }
}
