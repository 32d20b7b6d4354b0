//! A checkpoint's safetensors headers on the page: the card shown when headers (or an index) are
//! given without a config (the model on screen stays), and the line on the model card saying the
//! count came from the headers. Every figure is `vram_core::checkpoint`'s.

use crate::i18n::Lang;
use crate::load::CheckpointOnly;
use crate::state::use_state;
use leptos::prelude::*;
use vram_core::checkpoint::CheckpointCount;
use vram_core::units::group_thousands;

fn pick(lang: Lang, en: &'static str, zh: &'static str) -> &'static str {
    match lang {
        Lang::En => en,
        Lang::Zh => zh,
    }
}

/// The model card's line about the checkpoint the model came with (`None` without one): "counted
/// from N safetensors headers · T tensors · weights X" or, with an index alone, its weight bytes.
pub fn source_line(lang: Lang, c: &CheckpointCount, bytes: &str) -> String {
    let zh = lang == Lang::Zh;
    if c.params > 0 {
        let quant = c
            .quantization
            .as_ref()
            .map(|q| {
                if zh {
                    format!(" · 量化布局 {q}")
                } else {
                    format!(" · quantized layout {q}")
                }
            })
            .unwrap_or_default();
        if zh {
            format!(
                "参数量按 {} 个 safetensors 文件头计数 · {} 个张量 · 权重 {bytes}{quant}",
                c.files,
                group_thousands(c.tensors)
            )
        } else {
            format!(
                "counted from {} safetensors header{} · {} tensor{} · weights {bytes}{quant}",
                c.files,
                if c.files == 1 { "" } else { "s" },
                group_thousands(c.tensors),
                if c.tensors == 1 { "" } else { "s" }
            )
        }
    } else if zh {
        format!(
            "权重 {bytes}，来自 model.safetensors.index.json（{} 个分片）；参数量按 config.json 计算",
            c.files
        )
    } else {
        format!(
            "weights {bytes} from model.safetensors.index.json ({} shard files); parameters from the config.json",
            c.files
        )
    }
}

/// The model card's checkpoint line, when the model came with headers or an index.
#[component]
pub fn CheckpointSource() -> impl IntoView {
    let state = use_state();
    move || {
        let lang = state.lang.get();
        let gb = state.use_gb.get();
        state.model.with(|m| {
            let c = m.as_ref()?.spec.checkpoint.as_deref()?;
            let bytes = crate::units_fmt::bytes(c.data_bytes, gb);
            let text = source_line(lang, c, &bytes);
            Some(view! {
                <p
                    class="source checkpoint-source"
                    data-testid="checkpoint-source"
                    data-files=c.files.to_string()
                    data-params=c.params.to_string()
                    data-bytes=c.data_bytes.to_string()
                >
                    {text}
                </p>
            })
        })
    }
}

/// The checkpoint card: what safetensors headers (or an index) given without a config say.
#[component]
pub fn CheckpointCard() -> impl IntoView {
    let state = use_state();
    move || {
        let lang = state.lang.get();
        let gb = state.use_gb.get();
        state
            .checkpoint
            .with(|c| c.as_ref().map(|c| render_card(lang, gb, c)))
    }
}

fn render_card(lang: Lang, gb: bool, ck: &CheckpointOnly) -> impl IntoView {
    let c = &ck.count;
    let zh = lang == Lang::Zh;
    let title = match (ck.files.as_slice(), &ck.index) {
        ([one], _) => one.clone(),
        ([], Some(index)) => index.clone(),
        (files, _) => format!(
            "{} {}",
            files.len(),
            pick(lang, "safetensors files", "个 safetensors 文件")
        ),
    };
    let bytes_text = format!(
        "{} ({} B)",
        crate::units_fmt::bytes(c.data_bytes, gb),
        group_thousands(c.data_bytes)
    );
    let headline = (c.params > 0).then(|| {
        view! {
            <p class="headline">
                <span class="big" data-testid="checkpoint-params">{group_thousands(c.params)}</span>
                " " {pick(lang, "parameters", "参数")} " · " {lang.format_count(c.params)}
            </p>
        }
    });
    let plural = |n: u64, one: &'static str, many: &'static str| if n == 1 { one } else { many };
    let files_text = if ck.files.is_empty() {
        if zh {
            format!(
                "仅索引：{} 个分片，{} 个张量",
                c.files,
                group_thousands(c.tensors)
            )
        } else {
            format!(
                "index alone: {} shard {}, {} {}",
                c.files,
                plural(c.files, "file", "files"),
                group_thousands(c.tensors),
                plural(c.tensors, "tensor", "tensors")
            )
        }
    } else if zh {
        format!(
            "{} 个文件头，{} 个张量",
            c.files,
            group_thousands(c.tensors)
        )
    } else {
        format!(
            "{} {}, {} {}",
            c.files,
            plural(c.files, "header", "headers"),
            group_thousands(c.tensors),
            plural(c.tensors, "tensor", "tensors")
        )
    };
    let mut rows: Vec<(&'static str, String)> = vec![
        (pick(lang, "Weight bytes", "权重字节数"), bytes_text),
        (pick(lang, "Files", "文件"), files_text),
    ];
    if !ck.files.is_empty() {
        rows.push((
            pick(lang, "Quantized layout", "量化布局"),
            c.quantization
                .clone()
                .unwrap_or_else(|| pick(lang, "none", "无").to_string()),
        ));
        if c.quant_state_bytes > 0 {
            rows.push((
                pick(lang, "Quantization state", "量化状态"),
                format!(
                    "{} ({} B)",
                    crate::units_fmt::bytes(c.quant_state_bytes, gb),
                    group_thousands(c.quant_state_bytes)
                ),
            ));
        }
    }
    if let (Some(total), false) = (c.index_total_size, ck.files.is_empty()) {
        rows.push((
            pick(lang, "Index total_size", "索引 total_size"),
            format!("{} B", group_thousands(total)),
        ));
    }
    let dtype_table = (!c.by_dtype.is_empty()).then(|| {
        let body = c
            .by_dtype
            .iter()
            .map(|d| {
                view! {
                    <tr data-testid="checkpoint-dtype" data-dtype=d.dtype.clone()>
                        <th scope="row">{d.dtype.clone()}</th>
                        <td class="num">{group_thousands(d.tensors)}</td>
                        <td class="num">{group_thousands(d.params)}</td>
                        <td class="num">{crate::units_fmt::bytes(d.bytes, gb)}</td>
                    </tr>
                }
            })
            .collect_view();
        view! {
            <div class="table-wrap">
                <table class="params">
                    <caption class="visually-hidden">{pick(lang, "Tensors by storage dtype", "按存储类型统计的张量")}</caption>
                    <thead>
                        <tr>
                            <th scope="col">{pick(lang, "dtype", "类型")}</th>
                            <th scope="col" class="num">{pick(lang, "Tensors", "张量")}</th>
                            <th scope="col" class="num">{pick(lang, "Parameters", "参数")}</th>
                            <th scope="col" class="num">{pick(lang, "Bytes", "字节")}</th>
                        </tr>
                    </thead>
                    <tbody>{body}</tbody>
                </table>
            </div>
        }
    });
    let read_note = if ck.files.is_empty() {
        pick(
            lang,
            "Read from the index's metadata.total_size and weight_map.",
            "读取自索引的 metadata.total_size 和 weight_map。",
        )
    } else {
        pick(
            lang,
            "Only the files' headers were read (8 bytes, then the JSON header), never the tensor data.",
            "只读取了文件头（先 8 字节，再读 JSON 头），从未读取张量数据。",
        )
    };
    let ask = pick(
        lang,
        "To model training and inference memory, give the model's config.json together with these files (drop or choose them at once).",
        "要计算训练和推理显存，请把模型的 config.json 与这些文件一起拖入或选择。",
    );
    view! {
        <section
            class="card checkpoint-card"
            aria-labelledby="checkpoint-heading"
            data-testid="checkpoint-card"
            data-params=c.params.to_string()
            data-bytes=c.data_bytes.to_string()
            data-files=c.files.to_string()
        >
            <h2 id="checkpoint-heading">
                {pick(lang, "Checkpoint", "检查点")} ": " <span>{title}</span>
            </h2>
            {headline}
            <dl class="summary checkpoint-summary">
                {rows
                    .into_iter()
                    .map(|(k, v)| view! { <div><dt>{k}</dt><dd>{v}</dd></div> })
                    .collect_view()}
            </dl>
            {dtype_table}
            <p class="checkpoint-ask" role="note" data-testid="checkpoint-ask">{ask}</p>
            <p class="source">{read_note}</p>
        </section>
    }
}
