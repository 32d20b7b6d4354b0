#![no_main]
//! Fuzzes the safetensors header and index readers: never a panic, never an unbounded allocation.
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(h) = vram_core::safetensors_file::parse_header(data) {
        let _ = h.data_bytes();
        let _ = vram_core::checkpoint::count(&[h], None);
    }
    let _ = vram_core::safetensors_file::parse_index(data);
});
