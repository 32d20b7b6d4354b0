//! Input-to-redraw timing with the User Timing API. `vram:input` is marked when a scenario input is
//! applied; each chart redrawn adds a `vram:redraw` measure from it; `vram:shown` measures from it
//! to the end of the work the input causes before the browser can paint (the reactive effects: the
//! verdict, its bars and the breakdown table), including style and layout, measured in the same
//! microtask checkpoint so no frame is rendered in between; `vram:settled` measures, the same way,
//! to the end of the follow-up that runs after the frame showing the verdict (solvers, make-it-fit,
//! the precision strip, the sweeps and every chart redrawn) and its layout; `vram:painted` to the
//! first task after the next frame, once the browser has also painted all of it.
//! docs/performance.md reads these measures (p50/p95 over 200 changes).

fn performance() -> Option<web_sys::Performance> {
    web_sys::window()?.performance()
}

/// Marks an input change and measures `vram:shown` once the effects it triggers have run.
pub fn mark_input() {
    if let Some(p) = performance() {
        let _ = p.mark("vram:input");
        after_effects(|| {
            measure_now("vram:shown");
            snapshot_shown();
        });
    }
}

/// Executor ticks `vram:shown` waits. Leptos runs effects as tasks of wasm-bindgen's microtask
/// queue; a task woken while a tick runs waits for the next tick, so an effect that sets a signal
/// runs its dependants one tick later. e2e/perf.mjs checks on every input that the verdict and the
/// breakdown table at the measure are the ones shown once everything settled.
const EFFECT_TICKS: u32 = 8;

/// Runs `then` once the effects queued now (and those they wake, up to [`EFFECT_TICKS`] deep) have
/// run, still inside the same microtask checkpoint: the browser cannot render a frame in between,
/// so a measure taken there is the page's work for the input and never a frame's paint.
/// (Measuring from a timer task instead, as before 2026-12-03, counted a frame's paint whenever
/// the browser rendered before running the timer: in most inputs, a Chrome trace showed.)
fn after_effects(then: impl FnOnce() + 'static) {
    leptos::task::spawn_local(async move {
        for _ in 0..EFFECT_TICKS {
            YieldOnce(false).await;
        }
        then();
    });
}

/// Whether e2e/perf.mjs asked for the snapshots (`window.__vramCheckShown`): a user's inputs do
/// not pay for reading the results' text.
fn snapshots_asked(w: &web_sys::Window) -> bool {
    js_sys::Reflect::get(w, &"__vramCheckShown".into()).is_ok_and(|v| v.is_truthy())
}

/// Keeps what the verdict and the breakdown table showed at the `vram:shown` measure in
/// `window.__vramShown`, so e2e/perf.mjs can check, once everything settled, that the measure was
/// taken after the last visible change of the input and not before. Only when the script asks for
/// it (`window.__vramCheckShown`): a user's inputs do not pay for reading the table's text.
fn snapshot_shown() {
    let Some(w) = web_sys::window() else { return };
    if !snapshots_asked(&w) {
        return;
    }
    let Some(d) = w.document() else { return };
    let text = |sel: &str| {
        d.query_selector(sel)
            .ok()
            .flatten()
            .and_then(|e| e.text_content())
            .unwrap_or_default()
    };
    let shown = format!(
        "{}|{}",
        text("[data-testid=\"verdict\"]"),
        text("[data-testid$=\"-breakdown\"]")
    );
    let _ = js_sys::Reflect::set(&w, &"__vramShown".into(), &shown.into());
}

/// A future that is pending once and wakes itself: the task runs again on the executor's next tick.
struct YieldOnce(bool);

impl std::future::Future for YieldOnce {
    type Output = ();
    fn poll(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<()> {
        if self.0 {
            std::task::Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            std::task::Poll::Pending
        }
    }
}

/// Forces style and layout, then measures `name` from the latest `vram:input`.
fn measure_now(name: &'static str) {
    if let Some(body) = web_sys::window()
        .and_then(|w| w.document())
        .and_then(|d| d.body())
    {
        let _ = body.offset_height();
    }
    measure_from_input(name);
}

/// Measures `name` from the latest `vram:input` mark, when there is one (charts drawn at mount
/// have no input to measure from).
fn measure_from_input(name: &'static str) {
    let Some(p) = performance() else { return };
    if p.get_entries_by_name_with_entry_type("vram:input", "mark")
        .length()
        > 0
    {
        let _ = p.measure_with_start_mark(name, "vram:input");
    }
}

/// Measures `vram:settled` once the effects of the follow-up (queued now) have run and laid out, as
/// `vram:shown` is measured; then `vram:painted` in the first task after the next frame, when the
/// browser has painted what the follow-up changed. Called at the end of the follow-up task.
pub fn measure_settled() {
    after_effects(|| {
        measure_now("vram:settled");
        snapshot_settled();
        leptos::leptos_dom::helpers::request_animation_frame(|| {
            leptos::leptos_dom::helpers::set_timeout(
                || measure_from_input("vram:painted"),
                std::time::Duration::ZERO,
            );
        });
    });
}

/// Keeps the results' text and the number of chart redraws at the `vram:settled` measure in
/// `window.__vramSettled` (only when `window.__vramCheckShown` asks for it), so e2e/perf.mjs can
/// check that nothing the input causes changed or was redrawn after the measure.
fn snapshot_settled() {
    let Some(w) = web_sys::window() else { return };
    if !snapshots_asked(&w) {
        return;
    }
    let text = w
        .document()
        .and_then(|d| d.query_selector("[data-testid=\"results\"]").ok().flatten())
        .and_then(|e| e.text_content())
        .unwrap_or_default();
    let redraws = performance().map_or(0, |p| p.get_entries_by_name("vram:redraw").length());
    let _ = js_sys::Reflect::set(
        &w,
        &"__vramSettled".into(),
        &format!("{redraws}|{text}").into(),
    );
}

/// Marks the end of one chart's redraw and measures from the latest input (each chart adds one
/// `vram:redraw` measure per input; the redraw of an input ends with the last of them).
pub fn mark_drawn() {
    measure_from_input("vram:redraw");
}

/// Marks that the app has mounted (time to interactive is read from this mark).
pub fn mark_mounted() {
    if let Some(p) = performance() {
        let _ = p.mark("vram:mounted");
    }
}

/// Runs `work` between the marks `vram:plan-start` and `vram:plan-end` and measures `vram:plan`
/// (the layout planner on a click; docs/performance.md §Planner reads it).
pub fn measure_plan<T>(work: impl FnOnce() -> T) -> T {
    let p = performance();
    if let Some(p) = &p {
        let _ = p.mark("vram:plan-start");
    }
    let out = work();
    if let Some(p) = &p {
        let _ = p.mark("vram:plan-end");
        let _ =
            p.measure_with_start_mark_and_end_mark("vram:plan", "vram:plan-start", "vram:plan-end");
    }
    out
}
