// Writes GGUF headers for the browser tests (the layout of crates/vram_core/src/gguf_file.rs, whose
// `encode_header` is the reference): magic, version 3, tensor and key/value counts, the metadata, one
// info record per tensor, zero padding to the 32-byte alignment. The tensor data is not written: the
// file is truncated to its full size instead, so it is sparse (no disk blocks) but as large as the model.
import fs from 'node:fs';

const T = { UINT32: 4, FLOAT32: 6, STRING: 8, ARRAY: 9 };
/** ggml types: id → [block elements, block bytes]. */
export const GGML = { F32: 0, F16: 1, Q4_K: 12, Q6_K: 14 };
const BLOCK = { 0: [1, 4], 1: [1, 2], 12: [256, 144], 14: [256, 210] };
const ALIGN = 32n;

class W {
  constructor() { this.parts = []; this.len = 0; }
  push(b) { this.parts.push(b); this.len += b.length; }
  u32(v) { const b = Buffer.alloc(4); b.writeUInt32LE(v); this.push(b); }
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
 * Encodes a header. `metadata`: [key, {u32 | f32 | str | strArray}]; `tensors`: [name, dims (ne[0] first), type].
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
    if ('u32' in v) { w.u32(T.UINT32); w.u32(v.u32); }
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

/**
 * A Llama-3.1-8B-shaped Q4_K_M GGUF (291 tensors, real names, shapes and types, a 128,256-token
 * vocabulary): the header followed by a sparse data section. Returns { path, headerBytes, fileBytes }.
 */
export function writeLlama8bQ4km(path) {
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
  const { header, dataBytes } = encodeHeader(metadata, tensors);
  fs.writeFileSync(path, header);
  const fileBytes = header.length + Number(dataBytes);
  fs.truncateSync(path, fileBytes);
  return { path, headerBytes: header.length, fileBytes, tensors: tensors.length };
}
