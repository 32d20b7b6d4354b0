//! The vram web app (Leptos CSR). Every figure on the page comes from `vram_core`; this crate only
//! reads input, keeps state and renders.

pub mod answer;
pub mod app;
pub mod chart_view;
pub mod charts;
pub mod checkpoint_view;
pub mod compute;
pub mod deferred;
pub mod export;
pub mod fit;
pub mod i18n;
pub mod i18n_local;
pub mod i18n_page;
pub mod i18n_parallel;
pub mod launch;
pub mod load;
pub mod local;
pub mod local_view;
pub mod measured;
pub mod model_input;
pub mod model_view;
pub mod page_scenario;
pub mod parallel_view;
pub mod perf;
pub mod results_view;
pub mod scenario_form;
pub mod share;
pub mod state;
pub mod units_fmt;
pub mod verdict_view;

/// Mounts the app on `<body>`.
pub fn start() {
    console_error_panic_hook::set_once();
    leptos::mount::mount_to_body(app::App);
    perf::mark_mounted();
    deferred::prefetch_when_idle();
}
