//! The charts rendered to SVG strings (as the downloads are) at a desktop (800×400) and a phone
//! (390×300) size: the main line solid and the comparison dashed, the y range set by the main line
//! (outliers and a far capacity clipped and marked at the top), the current setting marked, the
//! legend above the plot and short phase labels on narrow charts. Set `CHART_SVG_DIR` to keep the
//! SVGs for a look.

use plotters::prelude::*;
use vram_core::scenario::AttentionImpl;
use vram_core::Scenario;
use vram_web::charts::{draw_phase_bars, draw_sweep, short_phase_labels, ChartText, ChartTheme};
use vram_web::compute::{self, Series, Sweep};
use vram_web::i18n::Lang;
use vram_web::load::load_preset;

const GIB: f64 = (1u64 << 30) as f64;
const SIZES: [(u32, u32); 2] = [(800, 400), (390, 300)];
/// PALETTE[0] and PALETTE[1] as the SVG writes them.
const BLUE: &str = "#0072B2";
const ORANGE: &str = "#E69F00";
/// The light theme's capacity colour.
const CAPACITY: &str = "#B3261E";

fn text(series: &[&str]) -> ChartText {
    ChartText {
        title: "Training memory vs sequence length".into(),
        x_label: "sequence length (tokens)".into(),
        y_label: "GiB".into(),
        capacity: "usable GPU memory".into(),
        largest_fit: "largest that fits".into(),
        series: series.iter().map(|s| s.to_string()).collect(),
    }
}

fn keep(name: &str, size: (u32, u32), svg: &str) {
    if let Ok(dir) = std::env::var("CHART_SVG_DIR") {
        let path = format!("{dir}/{name}-{}x{}.svg", size.0, size.1);
        std::fs::write(path, svg).expect("write the SVG");
    }
}

fn sweep_svg(name: &str, sweep: &Sweep, t: &ChartText, size: (u32, u32), dark: bool) -> String {
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let theme = if dark {
            ChartTheme::DARK
        } else {
            ChartTheme::LIGHT
        };
        draw_sweep(&root, sweep, GIB, t, &theme).expect("draw");
    }
    keep(name, size, &svg);
    svg
}

/// An attribute of an SVG tag.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    let len = tag[start..].find('"')?;
    Some(&tag[start..start + len])
}

/// Every `<tag ...>` opening (without its content).
fn tags<'a>(svg: &'a str, tag: &str) -> Vec<&'a str> {
    let open = format!("<{tag} ");
    svg.match_indices(&open)
        .map(|(i, _)| {
            let end = svg[i..].find('>').map_or(svg.len(), |e| i + e);
            &svg[i..end]
        })
        .collect()
}

/// A drawn text: x, y, anchor and content.
struct Text {
    x: f64,
    y: f64,
    anchor: String,
    size: f64,
    content: String,
}

fn texts(svg: &str) -> Vec<Text> {
    svg.match_indices("<text ")
        .filter_map(|(i, _)| {
            let end = i + svg[i..].find('>')?;
            let tag = &svg[i..end];
            let close = end + svg[end..].find("</text>")?;
            Some(Text {
                x: attr(tag, "x")?.parse().ok()?,
                y: attr(tag, "y")?.parse().ok()?,
                anchor: attr(tag, "text-anchor")?.to_string(),
                size: attr(tag, "font-size")?.parse().ok()?,
                content: svg[end + 1..close].trim().to_string(),
            })
        })
        .collect()
}

/// The y tick labels (right-aligned numbers): (y, value).
fn y_ticks(svg: &str) -> Vec<(f64, f64)> {
    texts(svg)
        .into_iter()
        .filter(|t| t.anchor == "end")
        .filter_map(|t| Some((t.y, t.content.replace(',', "").parse::<f64>().ok()?)))
        .collect()
}

/// Polylines of a colour: (opacity, points).
fn polylines(svg: &str, colour: &str) -> Vec<(f64, Vec<(f64, f64)>)> {
    tags(svg, "polyline")
        .into_iter()
        .filter(|t| attr(t, "stroke") == Some(colour))
        .map(|t| {
            let opacity = attr(t, "opacity")
                .and_then(|o| o.parse().ok())
                .unwrap_or(1.0);
            let pts = attr(t, "points")
                .unwrap_or("")
                .split_whitespace()
                .filter_map(|p| {
                    let (x, y) = p.split_once(',')?;
                    Some((x.parse().ok()?, y.parse().ok()?))
                })
                .collect();
            (opacity, pts)
        })
        .collect()
}

/// The top of the plot: the highest y tick label (the plot's top edge is at or above it).
fn top_tick_y(svg: &str) -> f64 {
    y_ticks(svg)
        .iter()
        .map(|t| t.0)
        .fold(f64::INFINITY, f64::min)
}

fn max_tick(svg: &str) -> f64 {
    y_ticks(svg).iter().map(|t| t.1).fold(0.0, f64::max)
}

fn smol() -> vram_web::load::LoadedModel {
    load_preset("HuggingFaceTB__SmolLM2-135M-Instruct").expect("preset")
}

#[test]
fn seq_sweep_draws_the_chosen_attention_solid_and_the_other_light_and_dashed() {
    let m = smol();
    for (attention, primary) in [
        (AttentionImpl::Sdpa, 1),
        (AttentionImpl::Flash, 1),
        (AttentionImpl::Eager, 0),
    ] {
        let s = Scenario {
            attention,
            seq_len: 3000,
            ..Scenario::default()
        };
        let sweep = compute::train_seq_sweep(&m.spec, &s, 24 << 30, None, ["eager", "SDPA"]);
        assert_eq!(sweep.primary, primary, "{attention:?}");
        assert_eq!(sweep.current, Some(3000));
        for series in &sweep.series {
            let xs: Vec<u64> = series.points.iter().map(|p| p.0).collect();
            assert!(xs.contains(&3000), "the current length is a swept point");
            assert!(xs.windows(2).all(|w| w[0] < w[1]), "sorted, deduplicated");
        }
        let (main, other) = if primary == 1 {
            (ORANGE, BLUE)
        } else {
            (BLUE, ORANGE)
        };
        for size in SIZES {
            let svg = sweep_svg(
                &format!("seq-{attention:?}"),
                &sweep,
                &text(&["eager", "SDPA"]),
                size,
                false,
            );
            let solid = polylines(&svg, main);
            assert!(
                solid.iter().any(|(o, p)| *o == 1.0 && p.len() >= 5),
                "{attention:?} {size:?}: the main line is one solid polyline"
            );
            let dashes: Vec<_> = polylines(&svg, other)
                .into_iter()
                .filter(|(_, p)| p.len() <= 3)
                .collect();
            assert!(
                dashes.len() >= 8,
                "{attention:?} {size:?}: the comparison is dashed ({} dashes)",
                dashes.len()
            );
            assert!(
                dashes.iter().all(|(o, _)| *o < 1.0),
                "{attention:?}: the comparison is light"
            );
        }
    }
}

#[test]
fn eager_does_not_stretch_the_axis_when_sdpa_is_chosen() {
    let m = load_preset("meta-llama__Llama-3.1-8B").expect("preset");
    let s = Scenario::default();
    let sweep = compute::train_seq_sweep(&m.spec, &s, 80 << 30, None, ["eager", "SDPA"]);
    let top = |i: usize| {
        sweep.series[i]
            .points
            .iter()
            .map(|p| p.1)
            .max()
            .unwrap_or(0) as f64
            / GIB
    };
    assert!(top(0) > 4.0 * top(1), "eager {} vs SDPA {}", top(0), top(1));
    for size in SIZES {
        let svg = sweep_svg("seq-8b", &sweep, &text(&["eager", "SDPA"]), size, true);
        let max = max_tick(&svg);
        assert!(
            max < top(0) / 2.0,
            "{size:?}: axis {max} set by eager {}",
            top(0)
        );
        // Every dashed piece of eager stays inside the plot (clipped at its top edge).
        let top_y = plot_top(&svg);
        let legend_y = texts(&svg)
            .into_iter()
            .find(|t| t.content == "eager")
            .map_or(-1.0, |t| t.y);
        for (_, pts) in polylines(&svg, BLUE) {
            // (The legend's swatch is drawn in the band above the plot.)
            for (_, y) in pts.into_iter().filter(|p| (p.1 - legend_y).abs() > 1.0) {
                assert!(
                    y >= top_y - 0.5,
                    "{size:?}: eager clipped ({y} above {top_y})"
                );
            }
        }
    }
}

/// The top edge of the plot: the top of the y axis (a vertical line in the text colour).
fn plot_top(svg: &str) -> f64 {
    tags(svg, "polyline")
        .into_iter()
        .filter(|t| matches!(attr(t, "stroke"), Some("#16181D" | "#E8EAEF")))
        .filter_map(|t| {
            let pts: Vec<(f64, f64)> = attr(t, "points")?
                .split_whitespace()
                .filter_map(|p| {
                    let (x, y) = p.split_once(',')?;
                    Some((x.parse().ok()?, y.parse().ok()?))
                })
                .collect();
            (pts.len() == 2 && pts[0].0 == pts[1].0).then(|| pts[0].1.min(pts[1].1))
        })
        .fold(f64::INFINITY, f64::min)
}

fn synthetic(values: &[f64], capacity: Option<f64>, current: Option<u64>) -> Sweep {
    Sweep {
        series: vec![Series {
            name: String::new(),
            points: values
                .iter()
                .enumerate()
                .map(|(i, v)| (1u64 << i, (v * GIB) as u64))
                .collect(),
        }],
        primary: 0,
        capacity_bytes: capacity.map(|c| (c * GIB) as u64),
        largest_fit: None,
        current,
    }
}

#[test]
fn an_outlier_does_not_set_the_axis_and_is_marked_at_the_top() {
    let mut values: Vec<f64> = (1..=8).map(|i| 2.0 + i as f64).collect();
    values[5] = 700.0;
    let sweep = synthetic(&values, Some(16.0), None);
    for size in SIZES {
        let svg = sweep_svg("outlier", &sweep, &text(&["memory"]), size, false);
        let max = max_tick(&svg);
        assert!((10.0..100.0).contains(&max), "{size:?}: axis top {max}");
        assert!(svg.contains("↑ 700"), "{size:?}: clip marker");
        // The capacity (16 GiB, within 2× of the data) is a line.
        assert!(
            !polylines(&svg, CAPACITY).is_empty(),
            "{size:?}: capacity line"
        );
        assert!(!svg.contains("usable GPU memory: "), "{size:?}");
    }
}

#[test]
fn a_capacity_far_above_the_data_is_written_at_the_top_instead_of_drawn() {
    let sweep = synthetic(&[1.0, 1.5, 2.0, 3.0, 5.0], Some(80.0), None);
    for size in SIZES {
        let svg = sweep_svg("far-capacity", &sweep, &text(&[""]), size, false);
        assert!(svg.contains("usable GPU memory: 80 GiB ↑"), "{size:?}");
        assert!(
            polylines(&svg, CAPACITY).is_empty() && !svg.contains("stroke=\"#B3261E\""),
            "{size:?}: no off-scale capacity line"
        );
        let max = max_tick(&svg);
        assert!((5.0..10.0).contains(&max), "{size:?}: axis top {max}");
        // The note sits above the plot.
        let note = texts(&svg)
            .into_iter()
            .find(|t| t.content.contains('↑'))
            .expect("note");
        assert!(note.y < top_tick_y(&svg), "{size:?}: note above the plot");
        assert!(note.x >= 0.0 && note.x < size.0 as f64);
    }
}

#[test]
fn the_current_setting_is_a_ring_on_the_main_line() {
    let m = smol();
    let s = Scenario {
        batch: 6,
        ..Scenario::default()
    };
    let usable = 24 << 30;
    let fit = compute::train_max_batch(&m.spec, &s, usable);
    let sweep = compute::train_batch_sweep(&m.spec, &s, usable, fit);
    assert_eq!(sweep.current, Some(6));
    let xs: Vec<u64> = sweep.series[0].points.iter().map(|p| p.0).collect();
    assert!(
        xs.contains(&6) && xs.contains(&4) && xs.contains(&8),
        "{xs:?}"
    );
    for size in SIZES {
        let svg = sweep_svg("batch", &sweep, &text(&[""]), size, false);
        let circles = tags(&svg, "circle");
        let ring = circles
            .iter()
            .find(|c| attr(c, "fill") == Some(BLUE) && attr(c, "r") == Some("6"))
            .expect("ring");
        let (cx, cy) = (attr(ring, "cx"), attr(ring, "cy"));
        assert!(
            circles.iter().any(|c| attr(c, "fill") == Some("#FFFFFF")
                && attr(c, "r") == Some("3")
                && attr(c, "cx") == cx
                && attr(c, "cy") == cy),
            "{size:?}: the ring's hole"
        );
        // A thin vertical line through it.
        let x: f64 = cx.and_then(|v| v.parse().ok()).unwrap_or(-1.0);
        let vertical = tags(&svg, "polyline").into_iter().any(|t| {
            let pts: Vec<&str> = attr(t, "points").unwrap_or("").split_whitespace().collect();
            pts.len() == 2
                && pts
                    .iter()
                    .all(|p| p.split(',').next().and_then(|v| v.parse::<f64>().ok()) == Some(x))
        });
        assert!(vertical, "{size:?}: vertical line at the current batch");
        if let Some(f) = fit {
            assert!(svg.contains(&format!("largest that fits = {f}")));
        }
    }
    // Inference sweeps mark the context length.
    let inf = Scenario {
        seq_len: 5000,
        ..Scenario::inference()
    };
    let (mem, seqs) = compute::infer_context_sweeps(&m.spec, &inf, None);
    assert_eq!((mem.current, seqs.current), (Some(5000), Some(5000)));
    assert!(mem.series[0].points.iter().any(|p| p.0 == 5000));
}

#[test]
fn the_legend_is_above_the_plot_not_over_the_data() {
    let m = smol();
    let sweep = compute::train_seq_sweep(
        &m.spec,
        &Scenario::default(),
        24 << 30,
        Some(16384),
        ["eager", "SDPA"],
    );
    for size in SIZES {
        for dark in [false, true] {
            let svg = sweep_svg("legend", &sweep, &text(&["eager", "SDPA"]), size, dark);
            let top = plot_top(&svg);
            assert!(top <= top_tick_y(&svg));
            let data_top = polylines(&svg, ORANGE)
                .iter()
                .filter(|(_, p)| p.len() >= 3)
                .flat_map(|(_, p)| p.iter().map(|q| q.1))
                .fold(f64::INFINITY, f64::min);
            let legend: Vec<Text> = texts(&svg)
                .into_iter()
                .filter(|t| {
                    ["eager", "SDPA", "usable GPU memory", "largest that fits"]
                        .iter()
                        .any(|l| t.content.starts_with(l))
                })
                .collect();
            assert!(legend.len() >= 3, "{size:?}: legend entries");
            for t in &legend {
                assert!(
                    t.y < top && t.y < data_top,
                    "{size:?}: legend '{}' at y {} (plot top {top}, data top {data_top})",
                    t.content,
                    t.y
                );
            }
            // Every text starts inside the canvas.
            for t in texts(&svg) {
                assert!(
                    t.x >= 0.0 && t.x <= size.0 as f64 && t.y >= 0.0 && t.y <= size.1 as f64,
                    "{size:?}: '{}' at ({}, {})",
                    t.content,
                    t.x,
                    t.y
                );
            }
        }
    }
}

#[test]
fn y_tick_labels_leave_room_for_the_y_title() {
    let sweep = synthetic(&[1000.0, 2000.0, 12000.0, 45000.0], None, None);
    for size in SIZES {
        let svg = sweep_svg("wide-ticks", &sweep, &text(&[""]), size, false);
        let title = texts(&svg)
            .into_iter()
            .find(|t| t.content == "GiB")
            .expect("y title");
        for t in texts(&svg).into_iter().filter(|t| t.anchor == "end") {
            // Right-aligned at x: starts at x − width (≈ 0.6 em per character at most); the rotated
            // title spans one line height right of its x.
            let left = t.x - t.content.chars().count() as f64 * t.size * 0.6;
            assert!(
                left > title.x + title.size * 1.2,
                "{size:?}: '{}' overlaps the title",
                t.content
            );
        }
    }
}

fn training_bars(size: (u32, u32), name: &str) -> String {
    let m = load_preset("meta-llama__Llama-3.1-8B").expect("preset");
    let r = compute::train_result(&m.spec, &Scenario::default(), 80 << 30).expect("estimate");
    let mut b = r.breakdown.clone();
    b.phases = b
        .phases
        .iter()
        .map(|p| vram_web::i18n_page::phase(Lang::En, p))
        .collect();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        let t = ChartText {
            title: "Training — memory per phase".into(),
            x_label: "phase".into(),
            ..text(&[])
        };
        draw_phase_bars(&root, &b, 80 << 30, GIB, &t, &ChartTheme::LIGHT).expect("draw");
    }
    keep(name, size, &svg);
    svg
}

#[test]
fn phase_labels_are_short_on_a_phone_and_never_overlap() {
    let narrow = training_bars((390, 300), "phases");
    for l in ["load", "F1", "B1", "O1", "F2", "B2", "O2"] {
        assert!(narrow.contains(&format!("\n{l}\n")), "short label {l}");
    }
    assert!(!narrow.contains("steady-state"));
    let wide = training_bars((800, 400), "phases");
    assert!(wide.contains("steady-state"), "full names on a wide chart");
    for svg in [&narrow, &wide] {
        let mut labels: Vec<Text> = texts(svg)
            .into_iter()
            .filter(|t| t.anchor == "middle" && t.y > top_tick_y(svg))
            .collect();
        labels.sort_by(|a, b| a.x.total_cmp(&b.x));
        for w in labels.windows(2) {
            if (w[0].y - w[1].y).abs() > 1.0 {
                continue;
            }
            let half = |t: &Text| t.content.chars().count() as f64 * 14.0 * 0.3;
            assert!(
                w[0].x + half(&w[0]) <= w[1].x - half(&w[1]) + 1.0,
                "'{}' and '{}' overlap",
                w[0].content,
                w[1].content
            );
        }
    }
}

#[test]
fn bars_are_not_squashed_by_a_far_capacity() {
    let m = smol();
    let r = compute::infer_result(&m.spec, &Scenario::inference()).expect("estimate");
    let peak = r.breakdown.peaks.iter().copied().max().unwrap_or(0) as f64 / GIB;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (390, 300)).into_drawing_area();
        draw_phase_bars(
            &root,
            &r.breakdown,
            80 << 30,
            GIB,
            &text(&[]),
            &ChartTheme::DARK,
        )
        .expect("draw");
    }
    keep("bars-far-capacity", (390, 300), &svg);
    assert!(svg.contains("usable GPU memory: 80 GiB ↑"));
    let max = max_tick(&svg);
    assert!(
        max < 2.0 * peak.max(0.01) + 0.01,
        "axis {max} for bars of {peak}"
    );
}

#[test]
fn short_labels_follow_the_translated_names() {
    let en: Vec<String> = [
        "load",
        "forward",
        "backward",
        "optimizer",
        "forward_2",
        "backward_2",
        "optimizer_2",
    ]
    .iter()
    .map(|p| vram_web::i18n_page::phase(Lang::En, p))
    .collect();
    assert_eq!(
        short_phase_labels(&en),
        ["load", "F1", "B1", "O1", "F2", "B2", "O2"]
    );
    let zh: Vec<String> = ["load", "forward", "backward", "optimizer", "forward_2"]
        .iter()
        .map(|p| vram_web::i18n_page::phase(Lang::Zh, p))
        .collect();
    assert_eq!(
        short_phase_labels(&zh),
        ["加载", "前1", "反1", "优1", "稳态前向"]
    );
}
