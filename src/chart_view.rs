//! Charts on `<canvas>`: the draw functions of `charts.rs` on plotters-canvas, at the device pixel
//! ratio (crisp on HiDPI), in the page's colour scheme, with PNG and SVG downloads of the same chart.

use crate::charts::{ChartText, ChartTheme};
use crate::state::use_state;
use leptos::html;
use leptos::prelude::*;
use plotters::prelude::*;
use plotters_canvas::CanvasBackend;
use std::sync::Arc;
use wasm_bindgen::JsCast;

/// Draws a chart on a canvas; false when there is nothing to draw.
pub type CanvasDraw = Arc<
    dyn Fn(&DrawingArea<CanvasBackend, plotters::coord::Shift>, &ChartTheme) -> bool + Send + Sync,
>;

/// Renders the same chart to SVG text at a size.
pub type SvgDraw = Arc<dyn Fn((u32, u32), &ChartTheme) -> String + Send + Sync>;

/// Whether the page is in dark mode (the browser's colour scheme).
pub fn prefers_dark() -> bool {
    web_sys::window()
        .and_then(|w| w.match_media("(prefers-color-scheme: dark)").ok().flatten())
        .is_some_and(|m| m.matches())
}

fn theme() -> ChartTheme {
    if prefers_dark() {
        ChartTheme::DARK
    } else {
        ChartTheme::LIGHT
    }
}

/// Copies `text` to the clipboard (where the browser allows it).
pub fn copy_text(text: &str) {
    use wasm_bindgen::JsCast;
    let Some(w) = web_sys::window() else { return };
    let clipboard = js_sys::Reflect::get(&w.navigator(), &"clipboard".into()).ok();
    if let Some(cb) = clipboard.filter(|c| !c.is_undefined()) {
        if let Ok(f) = js_sys::Reflect::get(&cb, &"writeText".into()) {
            if let Ok(f) = f.dyn_into::<js_sys::Function>() {
                let _ = f.call1(&cb, &text.into());
            }
        }
    }
}

/// Triggers a download of `href` as `name`.
pub fn download(name: &str, href: &str) {
    let Some(doc) = web_sys::window().and_then(|w| w.document()) else {
        return;
    };
    let Ok(a) = doc.create_element("a") else {
        return;
    };
    let Ok(a) = a.dyn_into::<web_sys::HtmlAnchorElement>() else {
        return;
    };
    a.set_href(href);
    a.set_download(name);
    if let Some(body) = doc.body() {
        let _ = body.append_child(&a);
        a.click();
        let _ = body.remove_child(&a);
    }
}

/// A data: URL of `text` with `mime`.
pub fn data_url(mime: &str, text: &str) -> String {
    format!(
        "data:{mime};charset=utf-8,{}",
        String::from(js_sys::encode_uri_component(text))
    )
}

/// One chart: a canvas redrawn whenever `draw`'s inputs change, plus PNG/SVG download buttons.
/// `draw_canvas` draws on the canvas backend; `draw_svg` produces the SVG text for the download.
#[component]
pub fn ChartCanvas(
    /// `data-testid` and file name stem.
    id: &'static str,
    /// Accessible description (the chart's title).
    title: Signal<String>,
    /// Draws on a canvas backend with a theme; returns false when there is nothing to draw.
    draw_canvas: CanvasDraw,
    /// Renders the same chart to SVG text at a CSS size.
    draw_svg: SvgDraw,
    /// Changes whenever the chart must be redrawn.
    version: Signal<u64>,
) -> impl IntoView {
    let state = use_state();
    let canvas_ref: NodeRef<html::Canvas> = NodeRef::new();
    let draw_for_effect = draw_canvas.clone();
    // The canvas's CSS width, read (a forced layout) on the first draw and after a window resize
    // only, so a redraw after an input does not force a layout of the page.
    let (resized, set_resized) = signal(0u32);
    let resize_handle =
        window_event_listener(leptos::ev::resize, move |_| set_resized.update(|n| *n += 1));
    on_cleanup(move || resize_handle.remove());
    let css_width = std::rc::Rc::new(std::cell::Cell::new(0i32));
    let last_resized = std::rc::Rc::new(std::cell::Cell::new(0u32));
    Effect::new(move |_| {
        let _ = version.get();
        let _ = state.lang.get();
        let r = resized.get();
        let Some(canvas) = canvas_ref.get() else {
            return;
        };
        let dpr = web_sys::window()
            .map_or(1.0, |w| w.device_pixel_ratio())
            .max(1.0);
        if css_width.get() == 0 || last_resized.get() != r {
            css_width.set(canvas.client_width());
            last_resized.set(r);
        }
        let css_w = css_width.get().max(280) as f64;
        let css_h = (css_w * 0.55).clamp(240.0, 420.0);
        let (w, h) = ((css_w * dpr).round() as u32, (css_h * dpr).round() as u32);
        if canvas.width() != w || canvas.height() != h {
            let _ = canvas.style(("height", format!("{css_h}px")));
            canvas.set_width(w);
            canvas.set_height(h);
        }
        let canvas_el: web_sys::HtmlCanvasElement = canvas.clone();
        if let Some(backend) = CanvasBackend::with_canvas_object(canvas_el) {
            let root = backend.into_drawing_area();
            draw_for_effect(&root, &theme().scaled(dpr));
        }
        crate::perf::mark_drawn();
    });
    let png = move |_| {
        if let Some(c) = canvas_ref.get() {
            if let Ok(url) = c.to_data_url_with_type("image/png") {
                download(&format!("vram-{id}.png"), &url);
            }
        }
    };
    let svg_fn = draw_svg.clone();
    let svg = move |_| {
        let w = canvas_ref
            .get()
            .map_or(800, |c| c.client_width().max(280) as u32);
        let h = ((w as f64) * 0.55).clamp(240.0, 420.0) as u32;
        let text = svg_fn((w, h), &theme());
        download(&format!("vram-{id}.svg"), &data_url("image/svg+xml", &text));
    };
    let t = move || state.lang.get().page();
    view! {
        <figure class=if id.ends_with("phases") { "chart wide" } else { "chart" } data-testid=format!("chart-{id}")>
            <canvas
                node_ref=canvas_ref
                role="img"
                aria-label=move || title.get()
                data-version=move || version.get().to_string()
                data-testid=format!("canvas-{id}")
            ></canvas>
            <figcaption>
                <span>{move || title.get()}</span>
                <span class="chart-buttons">
                    <button type="button" class="secondary small" data-testid=format!("png-{id}") on:click=png>
                        {move || t().png}
                    </button>
                    <button type="button" class="secondary small" data-testid=format!("svg-{id}") on:click=svg>
                        {move || t().svg}
                    </button>
                </span>
            </figcaption>
        </figure>
    }
}

/// Texts for a chart in the current language.
pub fn chart_text(title: &str, x: &str, y: &str, series: Vec<String>) -> ChartText {
    let lang = use_state().lang.get_untracked();
    ChartText {
        title: title.into(),
        x_label: x.into(),
        y_label: y.into(),
        capacity: lang.page().capacity.into(),
        largest_fit: lang.page().largest_fit.into(),
        series,
    }
}
