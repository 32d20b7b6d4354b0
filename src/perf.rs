//! Input-to-redraw timing with the User Timing API: `vram:input` is marked when a scenario input is
//! applied, `vram:drawn` when the charts have been redrawn, and `vram:redraw` measures between them.
//! docs/performance.md reads these measures (p50/p95 over 200 changes).

fn performance() -> Option<web_sys::Performance> {
    web_sys::window()?.performance()
}

/// Marks an input change.
pub fn mark_input() {
    if let Some(p) = performance() {
        let _ = p.mark("vram:input");
    }
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
