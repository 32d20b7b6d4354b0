//! Fuzz the config parser and the parameter count: any bytes must give Ok or a ConfigError, never a
//! panic, hang or overflow. Run: `cargo +nightly fuzz run parse_config -- -max_total_time=600`
//! (seed corpus: `cp ../crates/vram_core/presets/*.json corpus/parse_config/`).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(spec) = vram_core::parse_config(text, None) {
            let counts = vram_core::ParamCounts::of(&spec);
            assert!(counts.active <= counts.total);
        }
    }
});
