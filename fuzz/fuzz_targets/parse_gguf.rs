//! Fuzz the GGUF header reader: any bytes must give a header or a GgufError, never a panic, hang or
//! overflow; on a header, every tensor's byte size and the data section size must be computable
//! without overflow (or fail with an error for unknown ggml types), and `NeedMore` must always ask
//! for more bytes than it was given. Run: `cargo +nightly fuzz run parse_gguf -- -max_total_time=600`
//! (seed corpus: the first few MiB of real `.gguf` files, e.g. `head -c 4M model.gguf >
//! corpus/parse_gguf/model`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use vram_core::gguf_file::{parse_header, GgufError};

fuzz_target!(|data: &[u8]| {
    match parse_header(data) {
        Ok(header) => {
            for tensor in &header.tensors {
                let _ = tensor.numel();
                let _ = tensor.bytes();
            }
            let _ = header.data_bytes();
            assert!(header.data_offset % header.alignment == 0);
        }
        Err(GgufError::NeedMore { needed_bytes }) => {
            assert!(needed_bytes > data.len() as u64);
        }
        Err(_) => {}
    }
});
