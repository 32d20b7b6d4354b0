// Runs the core's speed table (crates/vram_core/examples/speed.rs) compiled to wasm32-wasip1 in
// Node's V8, the engine family of the page's Chromium: the wasm column of docs/performance.md §Core.
//   rustup target add wasm32-wasip1
//   cargo build --release --target wasm32-wasip1 -p vram_core --example speed
//   node scripts/speed-wasm.mjs [CALLS] [warm]   (warm: an untimed pass first, so V8 has tiered up)
import { readFile } from 'node:fs/promises';
import { WASI } from 'node:wasi';
import { argv } from 'node:process';

const wasi = new WASI({ version: 'preview1', args: ['speed', ...argv.slice(2)], env: {} });
const bytes = await readFile(new URL('../target/wasm32-wasip1/release/examples/speed.wasm', import.meta.url));
const module = await WebAssembly.compile(bytes);
const instance = await WebAssembly.instantiate(module, wasi.getImportObject());
wasi.start(instance);
