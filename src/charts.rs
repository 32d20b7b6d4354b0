//! The charts, drawn by functions generic over the plotters backend: the page draws them on a
//! `<canvas>` (plotters-canvas), the PNG/SVG downloads and the native tests render the same functions
//! to SVG (`SVGBackend::with_string`). Data comes from `compute.rs` (that is, from `vram_core`).

use crate::compute::{Breakdown, Sweep};
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::ops::Range;

/// Colours of one colour scheme.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChartTheme {
    /// Background.
    pub background: RGBColor,
    /// Text and axes.
    pub foreground: RGBColor,
    /// Grid lines.
    pub grid: RGBColor,
    /// The GPU capacity line.
    pub capacity: RGBColor,
    /// The largest-fit marker.
    pub marker: RGBColor,
    /// Device pixels per CSS pixel (HiDPI canvases are drawn at full resolution).
    pub scale: f64,
}

impl ChartTheme {
    /// Light scheme.
    pub const LIGHT: ChartTheme = ChartTheme {
        background: RGBColor(255, 255, 255),
        foreground: RGBColor(22, 24, 29),
        grid: RGBColor(225, 228, 234),
        capacity: RGBColor(179, 38, 30),
        marker: RGBColor(27, 122, 58),
        scale: 1.0,
    };
    /// Dark scheme.
    pub const DARK: ChartTheme = ChartTheme {
        background: RGBColor(27, 30, 37),
        foreground: RGBColor(232, 234, 239),
        grid: RGBColor(60, 65, 77),
        capacity: RGBColor(255, 155, 147),
        marker: RGBColor(127, 217, 154),
        scale: 1.0,
    };

    /// This theme at `scale` device pixels per CSS pixel.
    pub fn scaled(self, scale: f64) -> ChartTheme {
        ChartTheme {
            scale: scale.clamp(1.0, 4.0),
            ..self
        }
    }

    fn px(&self, css: u32) -> u32 {
        (css as f64 * self.scale).round() as u32
    }
}

/// Series colours (colour-blind-safe Okabe–Ito palette).
pub const PALETTE: [RGBColor; 8] = [
    RGBColor(0, 114, 178),
    RGBColor(230, 159, 0),
    RGBColor(0, 158, 115),
    RGBColor(204, 121, 167),
    RGBColor(86, 180, 233),
    RGBColor(213, 94, 0),
    RGBColor(240, 228, 66),
    RGBColor(120, 120, 120),
];

/// Texts of a chart (already translated).
#[derive(Clone, Debug, PartialEq)]
pub struct ChartText {
    /// Title.
    pub title: String,
    /// X axis label.
    pub x_label: String,
    /// Y axis label (the unit of memory charts, e.g. `GiB`).
    pub y_label: String,
    /// Legend text of the capacity line.
    pub capacity: String,
    /// Legend text of the largest-fit marker.
    pub largest_fit: String,
    /// Legend texts of the rows or series (in order).
    pub series: Vec<String>,
}

/// Result of a draw.
pub type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Below this many CSS pixels of width a chart counts as narrow (phone): smaller font, short phase
/// labels.
const NARROW_CSS_PX: f64 = 640.0;

fn font_size(area_w: u32, theme: &ChartTheme) -> u32 {
    let css_w = area_w as f64 / theme.scale;
    theme.px(if css_w < 500.0 { 12 } else { 14 })
}

fn is_narrow(area_w: u32, theme: &ChartTheme) -> bool {
    (area_w as f64 / theme.scale) < NARROW_CSS_PX
}

fn font(size: u32, colour: RGBColor) -> TextStyle<'static> {
    ("sans-serif", size).into_font().color(&colour)
}

/// Width in pixels of `text` at `size`: in the browser measured with a canvas's `measureText` (the
/// font the canvas backend draws with), elsewhere the backend's estimate. Plotters' own estimate
/// measures a DOM element's `offsetWidth`, which forces a layout of the page per call: 19 ms per
/// input in the page's profile (docs/performance.md), `measureText` none.
fn text_width<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, text: &str, size: u32) -> i32 {
    if let Some(w) = canvas_text_width(text, size) {
        return w.ceil() as i32;
    }
    let style: TextStyle = ("sans-serif", size).into_font().into();
    area.estimate_text_size(text, &style)
        .map(|(w, _)| w as i32)
        .unwrap_or_else(|_| (text.chars().count() as f64 * size as f64 * 0.6) as i32)
}

#[cfg(target_arch = "wasm32")]
fn canvas_text_width(text: &str, size: u32) -> Option<f64> {
    use wasm_bindgen::JsCast;
    thread_local! {
        /// A detached canvas's 2D context, kept for measuring (never drawn, never in the DOM).
        static MEASURE: Option<web_sys::CanvasRenderingContext2d> = web_sys::window()
            .and_then(|w| w.document())
            .and_then(|d| d.create_element("canvas").ok())
            .and_then(|c| c.dyn_into::<web_sys::HtmlCanvasElement>().ok())
            .and_then(|c| c.get_context("2d").ok().flatten())
            .and_then(|c| c.dyn_into::<web_sys::CanvasRenderingContext2d>().ok());
    }
    MEASURE.with(|ctx| {
        let ctx = ctx.as_ref()?;
        // the font string plotters-canvas sets before `fillText` ("normal {size}px sans-serif")
        ctx.set_font(&format!("normal {size}px sans-serif"));
        ctx.measure_text(text).ok().map(|m| m.width())
    })
}

#[cfg(not(target_arch = "wasm32"))]
fn canvas_text_width(_text: &str, _size: u32) -> Option<f64> {
    None
}

/// `text`, cut with an ellipsis to at most `max_w` pixels.
fn fit_text<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    size: u32,
    max_w: i32,
) -> String {
    if text_width(area, text, size) <= max_w {
        return text.to_string();
    }
    let chars: Vec<char> = text.chars().collect();
    let mut n = chars.len();
    while n > 0 {
        n -= 1;
        let cut: String = chars[..n].iter().collect::<String>().trim_end().to_string() + "…";
        if text_width(area, &cut, size) <= max_w {
            return cut;
        }
    }
    String::new()
}

/// A figure for tick labels and markers: thousands grouped, at most two decimals for small values.
pub fn fmt_value(v: f64) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let a = v.abs();
    if a >= 1000.0 {
        let digits = (v.round() as i64).unsigned_abs().to_string();
        let mut out = String::new();
        for (i, c) in digits.chars().enumerate() {
            if i > 0 && (digits.len() - i).is_multiple_of(3) {
                out.push(',');
            }
            out.push(c);
        }
        if v < 0.0 {
            out.insert(0, '-');
        }
        return out;
    }
    let s = if a >= 100.0 {
        format!("{v:.0}")
    } else if a >= 10.0 {
        format!("{v:.1}")
    } else {
        format!("{v:.2}")
    };
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// Short tick labels for phase names: names of a run that share a prefix (`1st step forward`,
/// `1st step backward`, ...) become the first letter of what differs plus the run's number (`F1`,
/// `B1`, `O1`, then `F2`, ... for the next run); a name in no run is kept when short (`load`), else cut.
/// Works on translated names.
pub fn short_phase_labels(names: &[String]) -> Vec<String> {
    fn common_prefix(a: &[char], b: &[char]) -> usize {
        a.iter().zip(b).take_while(|(x, y)| x == y).count()
    }
    let chars: Vec<Vec<char>> = names.iter().map(|n| n.chars().collect()).collect();
    // Runs of consecutive names sharing at least two leading characters.
    let mut runs: Vec<(usize, usize, usize)> = Vec::new(); // (start, end, prefix length)
    let mut i = 0;
    while i < chars.len() {
        let mut j = i + 1;
        let mut prefix = chars[i].len();
        while j < chars.len() {
            let p = common_prefix(&chars[i], &chars[j]).min(prefix);
            if p < 2 {
                break;
            }
            prefix = p;
            j += 1;
        }
        runs.push((i, j, if j - i > 1 { prefix } else { 0 }));
        i = j;
    }
    let mut out = vec![String::new(); names.len()];
    let mut run_no = 0;
    for (start, end, prefix) in runs {
        if end - start == 1 {
            let c = &chars[start];
            out[start] = if c.len() <= 8 {
                c.iter().collect()
            } else {
                c[..6].iter().collect::<String>() + "…"
            };
            continue;
        }
        run_no += 1;
        let rests: Vec<Vec<char>> = (start..end)
            .map(|k| {
                chars[k][prefix..]
                    .iter()
                    .copied()
                    .skip_while(|c| c.is_whitespace() || *c == '-')
                    .collect()
            })
            .collect();
        // The fewest leading characters that tell the run's names apart (up to 3).
        let take = (1..=3)
            .find(|&t| {
                let heads: Vec<Vec<char>> = rests.iter().map(|r| head(r, t)).collect();
                heads
                    .iter()
                    .enumerate()
                    .all(|(a, h)| heads.iter().skip(a + 1).all(|o| o != h))
            })
            .unwrap_or(3);
        for (k, r) in rests.iter().enumerate() {
            let h: String = head(r, take).iter().collect();
            let mut cs = h.chars();
            let cap: String = match cs.next() {
                Some(f) => f.to_uppercase().chain(cs).collect(),
                None => String::new(),
            };
            out[start + k] = format!("{cap}{run_no}");
        }
    }
    out
}

/// `text` broken at spaces into at most `max_lines` lines of at most `max_w` pixels; None when it
/// does not fit.
fn wrap_label<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    text: &str,
    size: u32,
    max_w: i32,
    max_lines: usize,
) -> Option<Vec<String>> {
    let mut lines: Vec<String> = Vec::new();
    for word in text.split_whitespace() {
        let joined = match lines.last() {
            Some(l) => format!("{l} {word}"),
            None => word.to_string(),
        };
        match lines.last_mut() {
            Some(l) if text_width(area, &joined, size) <= max_w => *l = joined,
            _ => lines.push(word.to_string()),
        }
    }
    (lines.len() <= max_lines && lines.iter().all(|l| text_width(area, l, size) <= max_w))
        .then_some(lines)
}

fn head(r: &[char], n: usize) -> Vec<char> {
    r.iter().copied().take(n).collect()
}

/// Where the GPU capacity goes on a chart.
#[derive(Clone, Copy, Debug, PartialEq)]
enum CapPlace {
    /// No capacity.
    None,
    /// A line at this value (inside the y range).
    Line(f64),
    /// Far above the data: written at the top with an arrow instead of stretching the axis.
    Above(f64),
}

/// The top of the data range from the main values (not from limits or outliers) and where the
/// capacity goes: a value more than 10× the next one is an outlier (clipped, at most a third of the
/// points); with `cap_clip`, points above 4× the capacity are clipped when at least half the points
/// are below it; the capacity is in range when within 2× of the top.
fn y_range(values: &[f64], cap: Option<f64>, cap_clip: bool) -> (f64, CapPlace) {
    let mut v: Vec<f64> = values
        .iter()
        .copied()
        .filter(|x| x.is_finite() && *x >= 0.0)
        .collect();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    let mut k = n;
    while k >= 3 && n - (k - 1) <= n / 3 && v[k - 2] > 0.0 && v[k - 1] > 10.0 * v[k - 2] {
        k -= 1;
    }
    let mut top = if k > 0 { v[k - 1] } else { 0.0 };
    let cap = cap.filter(|c| c.is_finite() && *c > 0.0);
    if let (Some(c), true) = (cap, cap_clip) {
        let below = v[..k].iter().filter(|&&x| x <= 4.0 * c).count();
        if top > 4.0 * c && below >= 2 && below * 2 >= k {
            top = v[..below].last().copied().unwrap_or(top).max(c);
        }
    }
    let place = match cap {
        None => CapPlace::None,
        Some(c) if top <= 0.0 || c <= 2.0 * top => {
            top = top.max(c);
            CapPlace::Line(c)
        }
        Some(c) => CapPlace::Above(c),
    };
    (if top > 0.0 { top } else { 1.0 }, place)
}

/// Tick values 0, step, 2·step, ... up to `y_max` with a 1-2-5 step, at most `max_n` + 1 of them.
fn nice_ticks(y_max: f64, max_n: usize) -> Vec<f64> {
    let raw = y_max / max_n.max(1) as f64;
    if !(raw.is_finite() && raw > 0.0) {
        return vec![0.0];
    }
    let mag = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * mag)
        .find(|s| *s >= raw * 0.999)
        .unwrap_or(10.0 * mag);
    (0..=max_n + 1)
        .map(|i| i as f64 * step)
        .take_while(|t| *t <= y_max * 1.0001)
        .collect()
}

/// Clips a polyline (data coordinates, y ≥ 0) to y ≤ `y_max`: the pieces inside.
fn clip_polyline(pts: &[(f64, f64)], y_max: f64) -> Vec<Vec<(f64, f64)>> {
    let mut out = Vec::new();
    let mut cur: Vec<(f64, f64)> = Vec::new();
    if let [p] = pts {
        if p.1 <= y_max {
            out.push(vec![*p]);
        }
        return out;
    }
    let cut = |a: (f64, f64), b: (f64, f64)| {
        let t = (y_max - a.1) / (b.1 - a.1);
        (a.0 + t * (b.0 - a.0), y_max)
    };
    for w in pts.windows(2) {
        let (a, b) = (w[0], w[1]);
        match (a.1 <= y_max, b.1 <= y_max) {
            (true, true) => {
                if cur.is_empty() {
                    cur.push(a);
                }
                cur.push(b);
            }
            (true, false) => {
                if cur.is_empty() {
                    cur.push(a);
                }
                cur.push(cut(a, b));
                out.push(std::mem::take(&mut cur));
            }
            (false, true) => cur = vec![cut(a, b), b],
            (false, false) => {}
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// The look of a legend entry's swatch.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Swatch {
    /// A filled square (bars).
    Rect,
    /// A solid line.
    Line,
    /// A light dashed line (comparison).
    Dashed,
    /// A dashed line at full strength (marker).
    Marker,
    /// No swatch: the text is drawn in the entry's colour.
    Text,
}

/// One legend entry.
struct Entry {
    swatch: Swatch,
    colour: RGBColor,
    label: String,
}

/// Legend entries placed in rows: (row, x, fitted label).
struct LegendLayout {
    placed: Vec<(usize, i32, String)>,
    rows: usize,
}

fn layout_legend<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[Entry],
    fs: u32,
    theme: &ChartTheme,
) -> LegendLayout {
    let w = area.dim_in_pixel().0 as i32;
    let (left, right) = (theme.px(10) as i32, w - theme.px(10) as i32);
    let (sw, gap, between) = (theme.px(16) as i32, theme.px(5) as i32, theme.px(14) as i32);
    let mut placed = Vec::new();
    let (mut row, mut x) = (0usize, left);
    for e in entries {
        let lead = if e.swatch == Swatch::Text {
            0
        } else {
            sw + gap
        };
        let label = fit_text(area, &e.label, fs, (right - left - lead).max(0));
        let ew = lead + text_width(area, &label, fs);
        if x > left && x + ew > right {
            row += 1;
            x = left;
        }
        placed.push((row, x, label));
        x += ew + between;
    }
    LegendLayout {
        rows: if placed.is_empty() { 0 } else { row + 1 },
        placed,
    }
}

/// Heights of the title band and of one legend row.
fn band_heights(fs: u32, theme: &ChartTheme) -> (u32, u32) {
    (fs + 2 + theme.px(12), fs + theme.px(8))
}

/// Draws the title and the legend rows in the band above the plot (outside the data) and returns
/// the area below it.
fn draw_header<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    title: &str,
    entries: &[Entry],
    fs: u32,
    theme: &ChartTheme,
) -> Result<DrawingArea<DB, Shift>, DrawingAreaErrorKind<DB::ErrorType>> {
    let (w, h) = root.dim_in_pixel();
    let legend_fs = fs.saturating_sub(theme.px(1)).max(1);
    let layout = layout_legend(root, entries, legend_fs, theme);
    let (title_h, row_h) = band_heights(fs, theme);
    let header_h = (title_h + row_h * layout.rows as u32 + theme.px(2)).min(h / 2);
    let (header, body) = root.split_vertically(header_h);
    let fg = theme.foreground;
    let title = fit_text(&header, title, fs + 2, w as i32 - theme.px(20) as i32);
    header.draw_text(
        &title,
        &font(fs + 2, fg).pos(Pos::new(HPos::Center, VPos::Top)),
        (w as i32 / 2, theme.px(6) as i32),
    )?;
    let (sw, gap) = (theme.px(16) as i32, theme.px(5) as i32);
    let w2 = theme.px(2);
    for ((row, x, label), e) in layout.placed.iter().zip(entries) {
        let cy = (title_h + row_h * *row as u32 + row_h / 2) as i32;
        if cy + row_h as i32 / 2 > header_h as i32 {
            break;
        }
        let c = e.colour;
        let s5 = theme.px(5) as i32;
        match e.swatch {
            Swatch::Rect => header.draw(&Rectangle::new(
                [(x + 2, cy - s5), (x + sw - 4, cy + s5)],
                c.filled(),
            ))?,
            Swatch::Line => header.draw(&PathElement::new(
                [(*x, cy), (x + sw, cy)],
                ShapeStyle::from(&c).stroke_width(w2),
            ))?,
            Swatch::Dashed | Swatch::Marker => {
                let style = if e.swatch == Swatch::Dashed {
                    c.mix(COMPARISON_ALPHA).stroke_width(w2)
                } else {
                    ShapeStyle::from(&c).stroke_width(w2)
                };
                let d = sw * 3 / 8;
                header.draw(&PathElement::new([(*x, cy), (x + d, cy)], style))?;
                header.draw(&PathElement::new([(x + sw - d, cy), (x + sw, cy)], style))?;
            }
            Swatch::Text => {}
        }
        let (tx, colour) = if e.swatch == Swatch::Text {
            (*x, c)
        } else {
            (x + sw + gap, fg)
        };
        header.draw_text(
            label,
            &font(legend_fs, colour).pos(Pos::new(HPos::Left, VPos::Center)),
            (tx, cy),
        )?;
    }
    Ok(body)
}

/// Opacity of comparison lines.
const COMPARISON_ALPHA: f64 = 0.55;

/// A linear f64 axis with given tick values (and the default formatting, overridden by the charts'
/// label formatters).
struct Ticked {
    lo: f64,
    hi: f64,
    ticks: Vec<f64>,
}

impl Ticked {
    fn new(lo: f64, hi: f64, ticks: Vec<f64>) -> Ticked {
        let hi = if hi > lo { hi } else { lo + 1.0 };
        Ticked { lo, hi, ticks }
    }
}

impl Ranged for Ticked {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, v: &f64, limit: (i32, i32)) -> i32 {
        let t = (v - self.lo) / (self.hi - self.lo);
        limit.0 + (t * (limit.1 - limit.0) as f64).round() as i32
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> Range<f64> {
        self.lo..self.hi
    }
}

/// Pixel layout of the plot body: the top strip (for clip markers) and the label areas.
struct BodyLayout {
    strip: u32,
    y_area: u32,
    x_area: u32,
    ticks: Vec<f64>,
}

/// Label areas sized from the font: the y area holds the widest tick label, the tick marks and the
/// rotated y title side by side.
fn body_layout<DB: DrawingBackend>(
    body: &DrawingArea<DB, Shift>,
    y_max: f64,
    fs: u32,
    theme: &ChartTheme,
) -> BodyLayout {
    let h = body.dim_in_pixel().1;
    let strip = fs + theme.px(8);
    let x_area = fs * 2 + theme.px(16);
    let plot_h = h.saturating_sub(strip + x_area + theme.px(6));
    let max_n = (plot_h / (fs * 2).max(1)).clamp(2, 8) as usize;
    let ticks = nice_ticks(y_max, max_n);
    let tick_w = ticks
        .iter()
        .map(|t| text_width(body, &fmt_value(*t), fs))
        .max()
        .unwrap_or(0)
        .max(0) as u32;
    // Plotters puts tick labels 2 × the tick size (5 px) from the axis and the title at the left edge.
    let y_area = tick_w + 10 + fs + theme.px(10);
    BodyLayout {
        strip,
        y_area,
        x_area,
        ticks,
    }
}

/// Marks for values above the top of the axis: a small upward triangle at the plot's top edge and
/// `↑ value` above it (left out where it would overlap the previous one). `marks` are pixel x and
/// the value, in order of x; drawn on `root`.
fn draw_clip_marks<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    marks: &[(i32, f64)],
    top_px: i32,
    colour: RGBColor,
    fs: u32,
    theme: &ChartTheme,
) -> DrawResult<DB> {
    let w = root.dim_in_pixel().0 as i32;
    let (base_x, base_y) = root.get_base_pixel();
    let top = top_px - base_y;
    let a = theme.px(4) as i32;
    let mut last_right = i32::MIN;
    for &(px, v) in marks {
        let x = px - base_x;
        root.draw(&Polygon::new(
            vec![(x - a, top), (x + a, top), (x, top - a - a / 2)],
            colour.filled(),
        ))?;
        let label = format!("↑ {}", fmt_value(v));
        let tw = text_width(root, &label, fs);
        let cx = x.clamp(tw / 2 + 2, (w - tw / 2 - 2).max(tw / 2 + 2));
        if cx - tw / 2 <= last_right + theme.px(4) as i32 {
            continue;
        }
        last_right = cx + tw / 2;
        root.draw_text(
            &label,
            &font(fs, colour).pos(Pos::new(HPos::Center, VPos::Bottom)),
            (cx, top - a - a / 2 - theme.px(1) as i32),
        )?;
    }
    Ok(())
}

/// The capacity note written at the top when the capacity is far above the data.
fn capacity_note(text: &ChartText, cap: f64) -> String {
    let unit = text.y_label.trim();
    if unit.is_empty() {
        format!("{}: {} ↑", text.capacity, fmt_value(cap))
    } else {
        format!("{}: {} {unit} ↑", text.capacity, fmt_value(cap))
    }
}

/// Stacked bars: bytes of each component at each phase's peak, with the GPU capacity line.
/// `unit_bytes` is 2^30 for GiB or 10^9 for GB. The y range comes from the bars (the capacity line
/// only when within 2× of the tallest; else it is written at the top); the legend is drawn above
/// the plot; on narrow areas the phase labels are shortened ([`short_phase_labels`]) and never
/// overlap.
pub fn draw_phase_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    b: &Breakdown,
    capacity_bytes: u64,
    unit_bytes: f64,
    text: &ChartText,
    theme: &ChartTheme,
) -> DrawResult<DB> {
    root.fill(&theme.background)?;
    let unit = if unit_bytes.is_finite() && unit_bytes > 0.0 {
        unit_bytes
    } else {
        1.0
    };
    let w2 = theme.px(2);
    let (w, _) = root.dim_in_pixel();
    let fs = font_size(w, theme);
    let fg = theme.foreground;
    let n = b.phases.len().max(1);
    let cell = |r: &crate::compute::BreakdownRow, i: usize| r.cells.get(i).copied().unwrap_or(0);
    let totals: Vec<f64> = (0..b.phases.len())
        .map(|i| {
            b.rows
                .iter()
                .map(|r| cell(r, i))
                .fold(0u64, u64::saturating_add) as f64
                / unit
        })
        .collect();
    let cap = (capacity_bytes > 0).then(|| capacity_bytes as f64 / unit);
    let (top, place) = y_range(&totals, cap, false);
    let y_max = top * 1.05;

    let mut entries: Vec<Entry> = b
        .rows
        .iter()
        .enumerate()
        .map(|(ri, row)| Entry {
            swatch: Swatch::Rect,
            colour: PALETTE[ri % PALETTE.len()],
            label: text
                .series
                .get(ri)
                .cloned()
                .unwrap_or_else(|| row.key.clone()),
        })
        .collect();
    match place {
        CapPlace::Line(_) => entries.push(Entry {
            swatch: Swatch::Line,
            colour: theme.capacity,
            label: text.capacity.clone(),
        }),
        CapPlace::Above(c) => entries.push(Entry {
            swatch: Swatch::Text,
            colour: theme.capacity,
            label: capacity_note(text, c),
        }),
        CapPlace::None => {}
    }
    let body = draw_header(root, &text.title, &entries, fs, theme)?;
    let lay = body_layout(&body, y_max, fs, theme);

    // Phase labels: the full names (wrapped on two lines) where they fit, else the short ones, and
    // only as many as fit side by side.
    let margin = theme.px(10);
    let plot_w = body
        .dim_in_pixel()
        .0
        .saturating_sub(lay.y_area + 2 * margin) as i32;
    let seg_w = plot_w / n as i32;
    let gap = theme.px(8) as i32;
    let full: Option<Vec<Vec<String>>> = if is_narrow(w, theme) {
        None
    } else {
        b.phases
            .iter()
            .map(|p| wrap_label(&body, p, fs, seg_w - gap, 2))
            .collect()
    };
    let labels: Vec<Vec<String>> = full.unwrap_or_else(|| {
        short_phase_labels(&b.phases)
            .into_iter()
            .map(|l| vec![l])
            .collect()
    });
    let widest = labels
        .iter()
        .flatten()
        .map(|l| text_width(&body, l, fs))
        .max()
        .unwrap_or(0);
    let step = ((widest + gap) as f64 / seg_w.max(1) as f64)
        .ceil()
        .max(1.0) as usize;
    let lines = labels.iter().map(Vec::len).max().unwrap_or(1).max(1) as u32;
    let line_h = fs + theme.px(2);
    let x_area = lay.x_area + (lines - 1) * line_h;

    let mut chart = ChartBuilder::on(&body)
        .margin_top(lay.strip)
        .margin_left(margin)
        .margin_right(margin)
        .margin_bottom(theme.px(4))
        .x_label_area_size(x_area)
        .y_label_area_size(lay.y_area)
        .build_cartesian_2d(
            // A segmented 0..k has k + 1 segments.
            (0u32..n as u32 - 1).into_segmented(),
            Ticked::new(0.0, y_max, lay.ticks.clone()),
        )?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|_| String::new())
        .y_label_formatter(&|v| fmt_value(*v))
        .y_desc(&text.y_label)
        .x_desc(&text.x_label)
        .label_style(font(fs, fg))
        .axis_desc_style(font(fs, fg))
        .axis_style(fg)
        .bold_line_style(theme.grid)
        .light_line_style(TRANSPARENT)
        .draw()?;
    let (bx, by) = root.get_base_pixel();
    for (i, label) in labels.iter().enumerate().step_by(step) {
        let (px, py) = chart.backend_coord(&(SegmentValue::CenterOf(i as u32), 0.0));
        for (k, line) in label.iter().enumerate() {
            root.draw_text(
                line,
                &font(fs, fg).pos(Pos::new(HPos::Center, VPos::Top)),
                (
                    px - bx,
                    py - by + theme.px(8) as i32 + (k as u32 * line_h) as i32,
                ),
            )?;
        }
    }
    for (ri, row) in b.rows.iter().enumerate() {
        let colour = PALETTE[ri % PALETTE.len()];
        let rects: Vec<Rectangle<(SegmentValue<u32>, f64)>> = (0..b.phases.len())
            .filter_map(|i| {
                let below: u64 = b.rows[..ri]
                    .iter()
                    .map(|r| cell(r, i))
                    .fold(0, u64::saturating_add);
                let y0 = below as f64 / unit;
                let y1 = below.saturating_add(cell(row, i)) as f64 / unit;
                if y0 >= y_max && y1 > y0 {
                    return None;
                }
                let mut r = Rectangle::new(
                    [
                        (SegmentValue::Exact(i as u32), y0.min(y_max)),
                        (SegmentValue::Exact(i as u32 + 1), y1.min(y_max)),
                    ],
                    colour.filled(),
                );
                r.set_margin(0, 0, theme.px(6), theme.px(6));
                Some(r)
            })
            .collect();
        chart.draw_series(rects)?;
    }
    if let CapPlace::Line(c) = place {
        chart.draw_series(LineSeries::new(
            [(SegmentValue::Exact(0), c), (SegmentValue::Last, c)],
            ShapeStyle::from(&theme.capacity).stroke_width(w2),
        ))?;
    }
    let marks: Vec<(i32, f64)> = totals
        .iter()
        .enumerate()
        .filter(|(_, t)| **t > y_max)
        .map(|(i, t)| {
            (
                chart
                    .backend_coord(&(SegmentValue::CenterOf(i as u32), 0.0))
                    .0,
                *t,
            )
        })
        .collect();
    let top_px = chart.backend_coord(&(SegmentValue::Exact(0), y_max)).1;
    draw_clip_marks(root, &marks, top_px, fg, fs, theme)?;
    root.present()?;
    Ok(())
}

/// Lines against a power-of-two x axis (batch, sequence or context length), with the capacity line,
/// the largest fitting x and the current x marked. `unit` divides y values (2^30 for GiB; 1 for
/// counts). The series `sweep.primary` is the main line and sets the y range (with the capacity
/// when within 2× of its maximum; outliers and far values are clipped and marked at the top edge);
/// the others are light dashed comparison lines clipped to the plot. The legend is drawn above the
/// plot.
pub fn draw_sweep<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    sweep: &Sweep,
    unit: f64,
    text: &ChartText,
    theme: &ChartTheme,
) -> DrawResult<DB> {
    root.fill(&theme.background)?;
    let unit = if unit.is_finite() && unit > 0.0 {
        unit
    } else {
        1.0
    };
    let w2 = theme.px(2);
    let (w, _) = root.dim_in_pixel();
    let fs = font_size(w, theme);
    let fg = theme.foreground;
    let lines: Vec<Vec<(f64, f64)>> = sweep
        .series
        .iter()
        .map(|s| {
            let mut p: Vec<(f64, f64)> = s
                .points
                .iter()
                .map(|&(x, y)| ((x.max(1) as f64).log2(), y as f64 / unit))
                .collect();
            p.sort_by(|a, b| a.0.total_cmp(&b.0));
            p
        })
        .collect();
    let primary = sweep.primary.min(lines.len().saturating_sub(1));
    let main: &[(f64, f64)] = lines.get(primary).map(Vec::as_slice).unwrap_or(&[]);
    let main_ys: Vec<f64> = if main.is_empty() {
        lines.iter().flatten().map(|p| p.1).collect()
    } else {
        main.iter().map(|p| p.1).collect()
    };
    let xs: Vec<u64> = sweep
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .chain(sweep.current)
        .collect();
    let x_min = xs.iter().copied().min().unwrap_or(1).max(1);
    let x_max = xs
        .iter()
        .copied()
        .max()
        .unwrap_or(2)
        .max(x_min.saturating_mul(2));
    let (lo, hi) = ((x_min as f64).log2(), (x_max as f64).log2());
    let pad = (hi - lo) * 0.03;
    let (lx0, lx1) = (lo - pad, hi + pad);
    let cap = sweep
        .capacity_bytes
        .filter(|&c| c > 0)
        .map(|c| c as f64 / unit);
    let (top, place) = y_range(&main_ys, cap, true);
    let y_max = top * 1.05;
    let main_colour = PALETTE[primary % PALETTE.len()];
    let fit = sweep
        .largest_fit
        .filter(|&f| f > 0)
        .map(|f| (f, (f as f64).log2()))
        .filter(|(_, lx)| (lx0..=lx1).contains(lx));

    let mut entries = Vec::new();
    let label = |i: usize| text.series.get(i).filter(|l| !l.is_empty()).cloned();
    if let Some(l) = label(primary) {
        entries.push(Entry {
            swatch: Swatch::Line,
            colour: main_colour,
            label: l,
        });
    }
    for i in (0..lines.len()).filter(|&i| i != primary) {
        if let Some(l) = label(i) {
            entries.push(Entry {
                swatch: Swatch::Dashed,
                colour: PALETTE[i % PALETTE.len()],
                label: l,
            });
        }
    }
    match place {
        CapPlace::Line(_) => entries.push(Entry {
            swatch: Swatch::Line,
            colour: theme.capacity,
            label: text.capacity.clone(),
        }),
        CapPlace::Above(c) => entries.push(Entry {
            swatch: Swatch::Text,
            colour: theme.capacity,
            label: capacity_note(text, c),
        }),
        CapPlace::None => {}
    }
    if let Some((f, _)) = fit {
        entries.push(Entry {
            swatch: Swatch::Marker,
            colour: theme.marker,
            label: format!("{} = {f}", text.largest_fit),
        });
    }
    let body = draw_header(root, &text.title, &entries, fs, theme)?;
    let lay = body_layout(&body, y_max, fs, theme);

    // x ticks at whole octaves, every `step`-th so that the labels do not overlap.
    let fmt_x = |v: u64| {
        if v >= 1024 && v.is_multiple_of(1024) {
            format!("{}K", v / 1024)
        } else {
            v.to_string()
        }
    };
    let margin = theme.px(10);
    let plot_w = body
        .dim_in_pixel()
        .0
        .saturating_sub(lay.y_area + 2 * margin) as f64;
    let octaves: Vec<f64> = (lo.ceil() as i64..=hi.floor() as i64)
        .map(|o| o as f64)
        .collect();
    let label_w = octaves
        .iter()
        .map(|o| text_width(&body, &fmt_x(2f64.powf(*o).round() as u64), fs))
        .max()
        .unwrap_or(0)
        + theme.px(10) as i32;
    let per_octave = plot_w / (lx1 - lx0).max(1e-9);
    let step = (label_w as f64 / per_octave.max(1e-9)).ceil().max(1.0) as usize;
    let x_ticks: Vec<f64> = octaves.iter().copied().step_by(step).collect();

    let mut chart = ChartBuilder::on(&body)
        .margin_top(lay.strip)
        .margin_left(margin)
        .margin_right(margin)
        .margin_bottom(theme.px(4))
        .x_label_area_size(lay.x_area)
        .y_label_area_size(lay.y_area)
        .build_cartesian_2d(
            Ticked::new(lx0, lx1, x_ticks),
            Ticked::new(0.0, y_max, lay.ticks.clone()),
        )?;
    chart
        .configure_mesh()
        .x_label_formatter(&|lx| fmt_x(2f64.powf(*lx).round() as u64))
        .y_label_formatter(&|v| fmt_value(*v))
        .y_desc(&text.y_label)
        .x_desc(&text.x_label)
        .label_style(font(fs, fg))
        .axis_desc_style(font(fs, fg))
        .axis_style(fg)
        .bold_line_style(theme.grid)
        .light_line_style(TRANSPARENT)
        .draw()?;

    // Comparison lines first (under the main line): light, dashed, clipped to the plot.
    for (i, pts) in lines.iter().enumerate().filter(|(i, _)| *i != primary) {
        let style = PALETTE[i % PALETTE.len()]
            .mix(COMPARISON_ALPHA)
            .stroke_width(w2);
        for piece in clip_polyline(pts, y_max) {
            chart.draw_series(DashedLineSeries::new(
                piece,
                theme.px(6) as i32,
                theme.px(5) as i32,
                style,
            ))?;
        }
    }
    if let CapPlace::Line(c) = place {
        chart.draw_series(LineSeries::new(
            [(lx0, c), (lx1, c)],
            ShapeStyle::from(&theme.capacity).stroke_width(w2),
        ))?;
    }
    if let Some((_, lx)) = fit {
        chart.draw_series(DashedLineSeries::new(
            [(lx, 0.0), (lx, y_max)],
            theme.px(6) as i32,
            theme.px(4) as i32,
            ShapeStyle::from(&theme.marker).stroke_width(w2),
        ))?;
    }
    // The current setting: a thin vertical line.
    let current = sweep
        .current
        .filter(|&c| c > 0)
        .map(|c| (c as f64).log2())
        .filter(|lx| (lx0..=lx1).contains(lx));
    if let Some(lx) = current {
        chart.draw_series(LineSeries::new(
            [(lx, 0.0), (lx, y_max)],
            fg.mix(0.45).stroke_width(theme.px(1)),
        ))?;
    }
    // The main line: solid, with its points; clipped values marked at the top edge.
    for piece in clip_polyline(main, y_max) {
        chart.draw_series(LineSeries::new(
            piece,
            ShapeStyle::from(&main_colour).stroke_width(w2),
        ))?;
    }
    chart.draw_series(
        main.iter()
            .filter(|p| p.1 <= y_max)
            .map(|&p| Circle::new(p, theme.px(3), main_colour.filled())),
    )?;
    let marks: Vec<(i32, f64)> = main
        .iter()
        .filter(|p| p.1 > y_max)
        .map(|&(x, y)| (chart.backend_coord(&(x, 0.0)).0, y))
        .collect();
    // The current setting: a filled ring on the main line, with its value.
    if let (Some(lx), Some(y)) = (current, interpolate(main, current.unwrap_or(0.0))) {
        let shown = y.min(y_max);
        chart.draw_series([
            Circle::new((lx, shown), theme.px(6), main_colour.filled()),
            Circle::new((lx, shown), theme.px(3), theme.background.filled()),
        ])?;
        if y <= y_max {
            let (px, py) = chart.backend_coord(&(lx, shown));
            let (bx, by) = root.get_base_pixel();
            let label = fmt_value(y);
            let tw = text_width(root, &label, fs);
            let off = theme.px(9) as i32;
            let x = if px - bx + off + tw < w as i32 - 2 {
                px - bx + off
            } else {
                (px - bx - off - tw).max(2)
            };
            let y_txt = (py - by - off).max(fs as i32);
            root.draw(&Rectangle::new(
                [(x - 2, y_txt - fs as i32 + 2), (x + tw + 2, y_txt + 2)],
                theme.background.mix(0.85).filled(),
            ))?;
            root.draw_text(
                &label,
                &font(fs, main_colour).pos(Pos::new(HPos::Left, VPos::Bottom)),
                (x, y_txt),
            )?;
        }
    }
    let top_px = chart.backend_coord(&(lx0, y_max)).1;
    draw_clip_marks(root, &marks, top_px, main_colour, fs, theme)?;
    root.present()?;
    Ok(())
}

/// The y of a polyline (sorted by x) at `x`, interpolated; None outside it.
fn interpolate(pts: &[(f64, f64)], x: f64) -> Option<f64> {
    if let Some(p) = pts.iter().find(|p| (p.0 - x).abs() < 1e-9) {
        return Some(p.1);
    }
    pts.windows(2).find_map(|w| {
        let (a, b) = (w[0], w[1]);
        (a.0 < x && x < b.0).then(|| a.1 + (b.1 - a.1) * (x - a.0) / (b.0 - a.0))
    })
}
