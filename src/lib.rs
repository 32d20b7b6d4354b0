//! The vram web app (Leptos CSR). Every figure comes from `vram_core`.

/// Mounts the app on `<body>`.
pub fn start() {}
