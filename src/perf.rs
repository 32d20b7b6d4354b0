//! Input-to-redraw timing with the User Timing API. `vram:input` is marked when a scenario input is
//! applied; each chart redrawn adds a `vram:redraw` measure from it (charts are redrawn in a task after
//! the first frame); `vram:shown` measures from it to the end of the work the input causes before the
//! browser can paint (the reactive effects: the verdict, its bars and the breakdown table), including
//! style and layout; `vram:settled` measures to the end of the follow-up task (solvers, make-it-fit,
//! the precision strip and the sweeps) and its layout.
//! docs/performance.md reads these measures (p50/p95 over 200 changes).

fn performance() -> Option<web_sys::Performance> {
    web_sys::window()?.performance()
}

/// Marks an input change and measures `vram:shown` once the effects it triggers have run.
pub fn mark_input() {
    if let Some(p) = performance() {
        let _ = p.mark("vram:input");
        measure_after_effects("vram:shown");
    }
}

/// Measures `name` from the latest `vram:input` in a task queued now: Leptos runs effects in
/// microtasks, so the task runs after every effect the current work triggered. Forces style and
/// layout first (reading `offsetHeight`), so the measure includes them; painting is not included.
pub fn measure_after_effects(name: &'static str) {
    leptos::leptos_dom::helpers::set_timeout(
        move || {
            let Some(p) = performance() else { return };
            if let Some(body) = web_sys::window()
                .and_then(|w| w.document())
                .and_then(|d| d.body())
            {
                let _ = body.offset_height();
            }
            if p.get_entries_by_name_with_entry_type("vram:input", "mark")
                .length()
                > 0
            {
                let _ = p.measure_with_start_mark(name, "vram:input");
            }
        },
        std::time::Duration::ZERO,
    );
}

/// Marks the end of one chart's redraw and measures from the latest input (each chart adds one
/// `vram:redraw` measure per input; the redraw of an input ends with the last of them).
pub fn mark_drawn() {
    let Some(p) = performance() else { return };
    if p.get_entries_by_name_with_entry_type("vram:input", "mark")
        .length()
        == 0
    {
        return;
    }
    let _ = p.measure_with_start_mark("vram:redraw", "vram:input");
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
