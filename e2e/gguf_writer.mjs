// Writes GGUF headers for the browser tests (the layout of crates/vram_core/src/gguf_file.rs, whose
// `encode_header` is the reference): magic, version 3, tensor and key/value counts, the metadata, one
// info record per tensor, zero padding to the 32-byte alignment. The tensor data is not written: the
// file is truncated to its full size instead, so it is sparse (no disk blocks) but as large as the model.
import fs from 'node:fs';

const T = { UINT16: 2, UINT32: 4, INT32: 5, FLOAT32: 6, STRING: 8, ARRAY: 9 };
/** ggml types: id → [block elements, block bytes]. */
export const GGML = { F32: 0, F16: 1, Q4_K: 12, Q6_K: 14 };
const BLOCK = { 0: [1, 4], 1: [1, 2], 12: [256, 144], 14: [256, 210] };
const ALIGN = 32n;

class W {
  constructor() { this.parts = []; this.len = 0; }
  push(b) { this.parts.push(b); this.len += b.length; }
  u16(v) { const b = Buffer.alloc(2); b.writeUInt16LE(v); this.push(b); }
  u32(v) { const b = Buffer.alloc(4); b.writeUInt32LE(v); this.push(b); }
  i32(v) { const b = Buffer.alloc(4); b.writeInt32LE(v); this.push(b); }
  u64(v) { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(v)); this.push(b); }
  f32(v) { const b = Buffer.alloc(4); b.writeFloatLE(v); this.push(b); }
  str(s) { const b = Buffer.from(s, 'utf8'); this.u64(b.length); this.push(b); }
  bytes() { return Buffer.concat(this.parts); }
}

export function tensorBytes(dims, type) {
  const [blk, size] = BLOCK[type];
  const n = dims.reduce((a, b) => a * BigInt(b), 1n);
  return (n / BigInt(blk)) * BigInt(size);
}

/**
 * Encodes a header. `metadata`: [key, {u16 | u32 | i32 | f32 | str | strArray}]; `tensors`: [name, dims (ne[0] first), type].
 * Returns { header, dataBytes } (dataBytes: the data section, each tensor aligned to 32).
 */
export function encodeHeader(metadata, tensors) {
  const w = new W();
  w.push(Buffer.from('GGUF'));
  w.u32(3);
  w.u64(tensors.length);
  w.u64(metadata.length);
  for (const [key, v] of metadata) {
    w.str(key);
    if ('u16' in v) { w.u32(T.UINT16); w.u16(v.u16); }
    else if ('u32' in v) { w.u32(T.UINT32); w.u32(v.u32); }
    else if ('i32' in v) { w.u32(T.INT32); w.i32(v.i32); }
    else if ('f32' in v) { w.u32(T.FLOAT32); w.f32(v.f32); }
    else if ('str' in v) { w.u32(T.STRING); w.str(v.str); }
    else if ('strArray' in v) {
      w.u32(T.ARRAY); w.u32(T.STRING); w.u64(v.strArray.length);
      for (const s of v.strArray) w.str(s);
    } else throw new Error('unknown value for ' + key);
  }
  let offset = 0n;
  for (const [name, dims, type] of tensors) {
    w.str(name);
    w.u32(dims.length);
    for (const d of dims) w.u64(d);
    w.u32(type);
    w.u64(offset);
    const end = offset + tensorBytes(dims, type);
    offset = ((end + ALIGN - 1n) / ALIGN) * ALIGN;
  }
  let header = w.bytes();
  const padded = Number(((BigInt(header.length) + ALIGN - 1n) / ALIGN) * ALIGN);
  header = Buffer.concat([header, Buffer.alloc(padded - header.length)]);
  return { header, dataBytes: offset };
}

/** llama.cpp's `use_more_bits`: the layers Q4_K_M keeps attn_v and ffn_down in Q6_K. */
function useMoreBits(i, n) {
  return i < n / 8 || i >= (7 * n) / 8 || (i - n / 8) % 3 === 2;
}

/** The metadata and tensors of a Llama-3.1-8B-shaped Q4_K_M model (291 tensors, real names, shapes and types, a 128,256-token vocabulary). */
function llama8bQ4km() {
  const nLayer = 32, nEmbd = 4096, nFf = 14336, nKv = 1024, nVocab = 128256;
  const tensors = [['token_embd.weight', [nEmbd, nVocab], GGML.Q4_K]];
  for (let i = 0; i < nLayer; i++) {
    const more = useMoreBits(i, nLayer);
    tensors.push(
      [`blk.${i}.attn_norm.weight`, [nEmbd], GGML.F32],
      [`blk.${i}.attn_q.weight`, [nEmbd, nEmbd], GGML.Q4_K],
      [`blk.${i}.attn_k.weight`, [nEmbd, nKv], GGML.Q4_K],
      [`blk.${i}.attn_v.weight`, [nEmbd, nKv], more ? GGML.Q6_K : GGML.Q4_K],
      [`blk.${i}.attn_output.weight`, [nEmbd, nEmbd], GGML.Q4_K],
      [`blk.${i}.ffn_norm.weight`, [nEmbd], GGML.F32],
      [`blk.${i}.ffn_gate.weight`, [nEmbd, nFf], GGML.Q4_K],
      [`blk.${i}.ffn_up.weight`, [nEmbd, nFf], GGML.Q4_K],
      [`blk.${i}.ffn_down.weight`, [nFf, nEmbd], more ? GGML.Q6_K : GGML.Q4_K],
    );
  }
  tensors.push(['output_norm.weight', [nEmbd], GGML.F32], ['output.weight', [nEmbd, nVocab], GGML.Q6_K]);
  const tokens = Array.from({ length: nVocab }, (_, i) => `<tok_${i}>`);
  const metadata = [
    ['general.architecture', { str: 'llama' }],
    ['general.name', { str: 'Meta Llama 3.1 8B' }],
    ['llama.block_count', { u32: nLayer }],
    ['llama.context_length', { u32: 131072 }],
    ['llama.embedding_length', { u32: nEmbd }],
    ['llama.feed_forward_length', { u32: nFf }],
    ['llama.attention.head_count', { u32: 32 }],
    ['llama.attention.head_count_kv', { u32: 8 }],
    ['llama.rope.freq_base', { f32: 500000 }],
    ['llama.attention.layer_norm_rms_epsilon', { f32: 1e-5 }],
    ['llama.rope.dimension_count', { u32: 128 }],
    ['llama.vocab_size', { u32: nVocab }],
    ['general.file_type', { u32: 15 }],
    ['tokenizer.ggml.model', { str: 'gpt2' }],
    ['tokenizer.ggml.tokens', { strArray: tokens }],
  ];
  return { metadata, tensors };
}

/** Writes the header, then truncates the file to its full size (a sparse data section). */
function writeSparse(path, metadata, tensors) {
  const { header, dataBytes } = encodeHeader(metadata, tensors);
  fs.writeFileSync(path, header);
  const fileBytes = header.length + Number(dataBytes);
  fs.truncateSync(path, fileBytes);
  return { path, headerBytes: header.length, fileBytes, tensors: tensors.length };
}

/**
 * A Llama-3.1-8B-shaped Q4_K_M GGUF (291 tensors, real names, shapes and types, a 128,256-token
 * vocabulary): the header followed by a sparse data section. Returns { path, headerBytes, fileBytes }.
 */
export function writeLlama8bQ4km(path) {
  const { metadata, tensors } = llama8bQ4km();
  return writeSparse(path, metadata, tensors);
}

/**
 * The same model split as `llama-gguf-split` writes it: `${prefix}-0000i-of-0000n.gguf` in `dir`, the
 * tensor list cut into `nParts` consecutive runs. Every part carries `split.no` (u16, from 0),
 * `split.count` (u16) and `split.tensors.count` (i32, the whole model's) and its own tensors (offsets
 * from its own data section); only the first part carries the model's metadata. Returns the parts'
 * { path, headerBytes, fileBytes, tensors } in order.
 */
export function writeLlama8bQ4kmSplit(dir, prefix, nParts) {
  const { metadata, tensors } = llama8bQ4km();
  const per = Math.ceil(tensors.length / nParts);
  const pad = (n) => String(n).padStart(5, '0');
  const parts = [];
  for (let i = 0; i < nParts; i++) {
    const split = [
      ['split.no', { u16: i }],
      ['split.count', { u16: nParts }],
      ['split.tensors.count', { i32: tensors.length }],
    ];
    const meta = i === 0 ? [...metadata, ...split] : split;
    const file = `${dir}/${prefix}-${pad(i + 1)}-of-${pad(nParts)}.gguf`;
    parts.push(writeSparse(file, meta, tensors.slice(i * per, (i + 1) * per)));
  }
  return parts;
}
