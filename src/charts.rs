//! The charts, drawn by functions generic over the plotters backend: the page draws them on a
//! `<canvas>` (plotters-canvas), the PNG/SVG downloads and the native tests render the same functions
//! to SVG (`SVGBackend::with_string`). Data comes from `compute.rs` (that is, from `vram_core`).

use crate::compute::{Breakdown, Sweep};
use plotters::coord::Shift;
use plotters::prelude::*;

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
    /// Y axis label.
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

fn font_size(area_w: u32, theme: &ChartTheme) -> u32 {
    let css_w = area_w as f64 / theme.scale;
    theme.px(if css_w < 500.0 { 12 } else { 14 })
}

/// Stacked bars: bytes of each component at each phase's peak, with the GPU capacity line.
/// `unit_bytes` is 2^30 for GiB or 10^9 for GB.
pub fn draw_phase_bars<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    b: &Breakdown,
    capacity_bytes: u64,
    unit_bytes: f64,
    text: &ChartText,
    theme: &ChartTheme,
) -> DrawResult<DB> {
    root.fill(&theme.background)?;
    let w2 = theme.px(2);
    let fs = font_size(root.dim_in_pixel().0, theme);
    let n = b.phases.len().max(1);
    let tallest = b
        .phases
        .iter()
        .enumerate()
        .map(|(i, _)| {
            b.rows
                .iter()
                .map(|r| r.cells.get(i).copied().unwrap_or(0))
                .fold(0u64, u64::saturating_add)
        })
        .max()
        .unwrap_or(0)
        .max(capacity_bytes);
    // Headroom above the tallest bar for the legend.
    let y_max = (tallest as f64 / unit_bytes * (1.25 + 0.07 * b.rows.len() as f64)).max(1e-3);
    let fg = theme.foreground;
    let mut chart = ChartBuilder::on(root)
        .caption(&text.title, ("sans-serif", fs + 2).into_font().color(&fg))
        .margin(theme.px(10))
        .x_label_area_size(fs * 3)
        .y_label_area_size(fs * 4)
        .build_cartesian_2d((0u32..n as u32).into_segmented(), 0f64..y_max)?;
    let phases = b.phases.clone();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(n)
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) => phases.get(*i as usize).cloned().unwrap_or_default(),
            _ => String::new(),
        })
        .y_desc(&text.y_label)
        .x_desc(&text.x_label)
        .label_style(("sans-serif", fs).into_font().color(&fg))
        .axis_style(fg)
        .bold_line_style(theme.grid)
        .light_line_style(TRANSPARENT)
        .draw()?;
    for (ri, row) in b.rows.iter().enumerate() {
        let colour = PALETTE[ri % PALETTE.len()];
        let rects: Vec<Rectangle<(SegmentValue<u32>, f64)>> = (0..b.phases.len())
            .map(|i| {
                let below: u64 = b.rows[..ri]
                    .iter()
                    .map(|r| r.cells.get(i).copied().unwrap_or(0))
                    .fold(0, u64::saturating_add);
                let here = row.cells.get(i).copied().unwrap_or(0);
                let y0 = below as f64 / unit_bytes;
                let y1 = below.saturating_add(here) as f64 / unit_bytes;
                let mut r = Rectangle::new(
                    [
                        (SegmentValue::Exact(i as u32), y0),
                        (SegmentValue::Exact(i as u32 + 1), y1),
                    ],
                    colour.filled(),
                );
                r.set_margin(0, 0, theme.px(6), theme.px(6));
                r
            })
            .collect();
        let label = text
            .series
            .get(ri)
            .cloned()
            .unwrap_or_else(|| row.key.clone());
        chart
            .draw_series(rects)?
            .label(label)
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], colour.filled()));
    }
    if capacity_bytes > 0 {
        let cap = capacity_bytes as f64 / unit_bytes;
        let c = theme.capacity;
        chart
            .draw_series(LineSeries::new(
                [(SegmentValue::Exact(0), cap), (SegmentValue::Last, cap)],
                ShapeStyle::from(&c).stroke_width(w2),
            ))?
            .label(&text.capacity)
            .legend(move |(x, y)| {
                PathElement::new([(x, y), (x + 12, y)], ShapeStyle::from(&c).stroke_width(w2))
            });
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(theme.background.mix(0.85))
        .border_style(theme.grid)
        .label_font(("sans-serif", fs - 1).into_font().color(&fg))
        .draw()?;
    root.present()?;
    Ok(())
}

/// Lines against a power-of-two x axis (batch, sequence or context length), with the capacity line
/// and the largest fitting x marked. `unit` divides y values (2^30 for GiB; 1 for counts).
pub fn draw_sweep<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    sweep: &Sweep,
    unit: f64,
    text: &ChartText,
    theme: &ChartTheme,
) -> DrawResult<DB> {
    root.fill(&theme.background)?;
    let w2 = theme.px(2);
    let fs = font_size(root.dim_in_pixel().0, theme);
    let fg = theme.foreground;
    let xs: Vec<u64> = sweep
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.0))
        .collect();
    let x_min = xs.iter().copied().min().unwrap_or(1).max(1) as f64;
    let x_max = xs.iter().copied().max().unwrap_or(2).max(2) as f64;
    let (lx0, lx1) = (x_min.log2(), x_max.log2().max(x_min.log2() + 1.0));
    let y_top = sweep
        .series
        .iter()
        .flat_map(|s| s.points.iter().map(|p| p.1))
        .chain(sweep.capacity_bytes)
        .max()
        .unwrap_or(1) as f64
        / unit;
    let y_max = (y_top * (1.2 + 0.08 * (sweep.series.len() + 2) as f64)).max(1e-3);
    let mut chart = ChartBuilder::on(root)
        .caption(&text.title, ("sans-serif", fs + 2).into_font().color(&fg))
        .margin(theme.px(10))
        .x_label_area_size(fs * 3)
        .y_label_area_size(fs * 4)
        .build_cartesian_2d(lx0..lx1, 0f64..y_max)?;
    chart
        .configure_mesh()
        .x_labels(((lx1 - lx0) as usize + 1).min(12))
        .x_label_formatter(&|lx| {
            let v = 2f64.powf(*lx).round() as u64;
            if v >= 1024 && v.is_multiple_of(1024) {
                format!("{}K", v / 1024)
            } else {
                v.to_string()
            }
        })
        .y_desc(&text.y_label)
        .x_desc(&text.x_label)
        .label_style(("sans-serif", fs).into_font().color(&fg))
        .axis_style(fg)
        .bold_line_style(theme.grid)
        .light_line_style(TRANSPARENT)
        .draw()?;
    for (i, s) in sweep.series.iter().enumerate() {
        let colour = PALETTE[i % PALETTE.len()];
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .map(|&(x, y)| ((x.max(1) as f64).log2(), y as f64 / unit))
            .collect();
        let style = ShapeStyle::from(&colour).stroke_width(w2);
        let series = chart.draw_series(LineSeries::new(pts.clone(), style))?;
        if let Some(label) = text.series.get(i).filter(|l| !l.is_empty()) {
            series
                .label(label.clone())
                .legend(move |(x, y)| PathElement::new([(x, y), (x + 12, y)], style));
        }
        chart.draw_series(
            pts.iter()
                .map(|&p| Circle::new(p, theme.px(3), colour.filled())),
        )?;
    }
    if let Some(cap) = sweep.capacity_bytes.filter(|&c| c > 0) {
        let c = theme.capacity;
        let y = cap as f64 / unit;
        chart
            .draw_series(LineSeries::new(
                [(lx0, y), (lx1, y)],
                ShapeStyle::from(&c).stroke_width(w2),
            ))?
            .label(&text.capacity)
            .legend(move |(x, y)| {
                PathElement::new([(x, y), (x + 12, y)], ShapeStyle::from(&c).stroke_width(w2))
            });
    }
    if let Some(fit) = sweep.largest_fit.filter(|&f| f > 0) {
        let lx = (fit as f64).log2();
        if lx >= lx0 && lx <= lx1 {
            let m = theme.marker;
            chart
                .draw_series(DashedLineSeries::new(
                    [(lx, 0.0), (lx, y_max)],
                    6,
                    4,
                    ShapeStyle::from(&m).stroke_width(w2),
                ))?
                .label(format!("{} = {fit}", text.largest_fit))
                .legend(move |(x, y)| {
                    PathElement::new([(x, y), (x + 12, y)], ShapeStyle::from(&m).stroke_width(w2))
                });
        }
    }
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .background_style(theme.background.mix(0.85))
        .border_style(theme.grid)
        .label_font(("sans-serif", fs - 1).into_font().color(&fg))
        .draw()?;
    root.present()?;
    Ok(())
}
