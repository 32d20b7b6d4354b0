// A checkpoint's safetensors headers in the page: config.json + a sparse multi-GB model.safetensors
// give the headers' exact count (equal to `vram estimate FOLDER --json`), read header-only; an index
// alone or headers alone show the checkpoint card and keep the model; broken headers are refused.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test, assert, assertEq, openApp, waitFor, waitForTotal, shownTotal, presetBytes, axeSerious, recordReads, readLog, choosePreset } from '../harness.mjs';
import { cliJson } from '../cli.mjs';

const LLAMA_1B = 'meta-llama__Llama-3.2-1B-Instruct';
const LLAMA_1B_PARAMS = '1235814400';

/** Llama-3.2-1B's tensors as its checkpoint names and shapes them (tied embeddings: no lm_head). */
function llama1bTensors() {
  const t = [['model.embed_tokens.weight', [128256, 2048]]];
  for (let l = 0; l < 16; l++) {
    const p = `model.layers.${l}`;
    t.push(
      [`${p}.self_attn.q_proj.weight`, [2048, 2048]],
      [`${p}.self_attn.k_proj.weight`, [512, 2048]],
      [`${p}.self_attn.v_proj.weight`, [512, 2048]],
      [`${p}.self_attn.o_proj.weight`, [2048, 2048]],
      [`${p}.mlp.gate_proj.weight`, [8192, 2048]],
      [`${p}.mlp.up_proj.weight`, [8192, 2048]],
      [`${p}.mlp.down_proj.weight`, [2048, 8192]],
      [`${p}.input_layernorm.weight`, [2048]],
      [`${p}.post_attention_layernorm.weight`, [2048]],
    );
  }
  t.push(['model.norm.weight', [2048]]);
  return t;
}

/**
 * Writes a safetensors file of these BF16 tensors, back to back, sparse: the header and then the
 * file truncated (extended) to 8 + header + data bytes, so it takes no disk space.
 */
function writeSafetensors(file, tensors) {
  const obj = { __metadata__: { format: 'pt' } };
  let at = 0;
  let params = 0;
  for (const [name, shape] of tensors) {
    const n = shape.reduce((a, b) => a * b, 1);
    obj[name] = { dtype: 'BF16', shape, data_offsets: [at, at + 2 * n] };
    at += 2 * n;
    params += n;
  }
  const json = Buffer.from(JSON.stringify(obj));
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  fs.writeFileSync(file, Buffer.concat([len, json]));
  fs.truncateSync(file, 8 + json.length + at);
  return { headerBytes: 8 + json.length, dataBytes: at, fileBytes: 8 + json.length + at, params };
}

/** A folder with Llama-3.2-1B-Instruct's config.json and its sparse 2.47 GB model.safetensors. */
function writeLlama1bFolder() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vram-safetensors-'));
  const config = path.join(dir, 'config.json');
  fs.writeFileSync(config, presetBytes(LLAMA_1B));
  const weights = path.join(dir, 'model.safetensors');
  const st = writeSafetensors(weights, llama1bTensors());
  return { dir, config, weights, ...st };
}

async function loadPreset(page, id) {
  await choosePreset(page, id);
  await waitFor(page, () => !!document.querySelector('[data-testid="total-params"]'), null, 'the preset');
  return shownTotal(page);
}

test('checkpoint: config.json + a sparse 2.47 GB model.safetensors count 1,235,814,400 from the header only, as vram estimate FOLDER does', async ({ page }) => {
  const f = writeLlama1bFolder();
  try {
    assertEq(String(f.params), LLAMA_1B_PARAMS, 'the fixture holds the model\'s parameters');
    assert(f.fileBytes > 2.4e9, `a several-GB file (${f.fileBytes} B)`);
    const cli = cliJson(['estimate', f.dir, '--json']);
    assertEq(String(cli.parameters.total), LLAMA_1B_PARAMS, 'vram estimate FOLDER parameters.total');
    assertEq(cli.model.support, 'header', 'the CLI counted from the header');
    await recordReads(page, 'total-params', 'raw', String(cli.parameters.total));
    await openApp(page);
    await page.setInputFiles('[data-testid="file-input"]', [f.config, f.weights]);
    await waitForTotal(page, String(cli.parameters.total));
    const { changedAt, shownAt, reads } = await readLog(page);
    const ms = shownAt - changedAt;
    assert(ms < 1000, `total shown ${ms.toFixed(0)} ms after the files were chosen (limit 1000)`);
    assertEq(await page.textContent('[data-testid="total-params"]'), '1,235,814,400', 'shown total');
    // only the header of the big file: 8 bytes, then 8 + n
    const big = reads.filter((r) => r.of === f.fileBytes);
    const largest = Math.max(...reads.map((r) => r.size));
    assert(big.length > 0, 'the page read the safetensors file');
    assertEq(largest, f.headerBytes, 'the largest read is the header');
    assert(reads.every((r) => r.start === 0 && r.size < f.fileBytes / 1000), 'no read of the tensor data');
    assertEq(big.filter((r) => r.op === 'slice').map((r) => r.size).join(','), `8,${f.headerBytes}`, 'slices of the safetensors file');
    console.log(`     ${reads.length} reads, largest ${largest} B (header ${f.headerBytes} B, file ${f.fileBytes} B); total ${ms.toFixed(0)} ms after the change`);
    // the model card says where the count came from
    const src = await page.textContent('[data-testid="checkpoint-source"]');
    assert(/counted from 1 safetensors header\b/.test(src), 'checkpoint source: ' + src);
    assertEq(await page.getAttribute('[data-testid="checkpoint-source"]', 'data-bytes'), String(f.dataBytes), 'weight bytes from the header');
    assertEq(await page.$('[data-testid="load-error"]'), null, 'no load error');
    assertEq(await page.$('[data-testid="model-warnings"]'), null, 'the config and the header agree');
    assertEq(await page.$('[data-testid="checkpoint-card"]'), null, 'no checkpoint card with a config');
    // in Chinese too
    await page.selectOption('[data-testid="lang-select"]', 'zh-CN');
    await waitFor(page, () => /safetensors 文件头计数/.test(document.querySelector('[data-testid="checkpoint-source"]')?.textContent ?? ''), null, 'the Chinese source line');
  } finally {
    fs.rmSync(f.dir, { recursive: true, force: true });
  }
});

test('checkpoint: a header missing a tensor is a warning and its count is used', async ({ page }) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vram-safetensors-'));
  try {
    fs.writeFileSync(path.join(dir, 'config.json'), presetBytes(LLAMA_1B));
    const st = writeSafetensors(path.join(dir, 'model.safetensors'), llama1bTensors().filter(([n]) => n !== 'model.norm.weight'));
    const cli = cliJson(['estimate', dir, '--json']);
    assertEq(cli.parameters.total, st.params, 'the CLI counts the header');
    await openApp(page);
    await page.setInputFiles('[data-testid="file-input"]', [path.join(dir, 'config.json'), path.join(dir, 'model.safetensors')]);
    await waitForTotal(page, String(cli.parameters.total));
    const warnings = await page.textContent('[data-testid="model-warnings"]');
    assert(warnings.includes('model.norm.weight'), 'the missing tensor is named: ' + warnings);
    for (const w of cli.warnings) assert(warnings.includes(w), `the CLI's warning is shown: ${w}`);
    // the breakdown is the config's reading: its total is shown beside the headers'
    assert((await page.textContent('[data-testid="config-params"]')).includes('1,235,814,400'), 'the config reading row');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('checkpoint: the index alone shows the checkpoint card with total_size and the previous model stays', async ({ page }) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vram-safetensors-'));
  try {
    const weightMap = {};
    const names = llama1bTensors().map(([n]) => n);
    names.forEach((n, i) => { weightMap[n] = `model-0000${i < 70 ? 1 : 2}-of-00002.safetensors`; });
    const index = path.join(dir, 'model.safetensors.index.json');
    const totalSize = 2471628800;
    fs.writeFileSync(index, JSON.stringify({ metadata: { total_size: totalSize }, weight_map: weightMap }));
    const cli = cliJson(['estimate', index, '--json']);
    await openApp(page);
    const before = await loadPreset(page, 'meta-llama__Llama-3.1-8B');
    await page.setInputFiles('[data-testid="file-input"]', index);
    await waitFor(page, () => !!document.querySelector('[data-testid="checkpoint-card"]'), null, 'the checkpoint card');
    assertEq(await page.getAttribute('[data-testid="checkpoint-card"]', 'data-bytes'), String(totalSize), 'bytes from total_size');
    assertEq(await page.getAttribute('[data-testid="checkpoint-card"]', 'data-bytes'), String(cli.checkpoint.data_bytes), 'bytes as vram estimate INDEX');
    assertEq(await page.getAttribute('[data-testid="checkpoint-card"]', 'data-files'), String(cli.checkpoint.files), 'shards as the CLI');
    assertEq(await page.getAttribute('[data-testid="checkpoint-card"]', 'data-params'), '0', 'no parameters from an index');
    assertEq(await page.getAttribute('[data-testid="checkpoint-card"]', 'data-files'), '2', 'two shards');
    const card = await page.textContent('[data-testid="checkpoint-card"]');
    assert(card.includes('2,471,628,800 B') && card.includes('index alone: 2 shard files'), 'the card: ' + card);
    assert(card.includes('config.json'), 'the card asks for the config.json');
    assertEq(await shownTotal(page), before, 'the previous model stays');
    assertEq(await page.$('[data-testid="load-error"]'), null, 'no load error');
    // a model loaded afterwards replaces the card
    await loadPreset(page, 'openai-community__gpt2');
    await waitFor(page, () => !document.querySelector('[data-testid="checkpoint-card"]'), null, 'the card to go');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('checkpoint: headers alone show the exact count in the checkpoint card (EN and 中文) and the previous model stays', async ({ page }) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vram-safetensors-'));
  try {
    const file = path.join(dir, 'model.safetensors');
    const st = writeSafetensors(file, llama1bTensors());
    const cli = cliJson(['estimate', file, '--json']);
    await openApp(page);
    const before = await loadPreset(page, 'meta-llama__Llama-3.1-8B');
    await page.setInputFiles('[data-testid="file-input"]', file);
    await waitFor(page, () => !!document.querySelector('[data-testid="checkpoint-card"]'), null, 'the checkpoint card');
    assertEq(await page.getAttribute('[data-testid="checkpoint-card"]', 'data-params'), LLAMA_1B_PARAMS, 'exact parameters');
    assertEq(await page.getAttribute('[data-testid="checkpoint-card"]', 'data-bytes'), String(st.dataBytes), 'weight bytes');
    assertEq(String(cli.checkpoint.params), LLAMA_1B_PARAMS, 'vram estimate FILE.safetensors');
    assertEq(await page.getAttribute('[data-testid="checkpoint-card"]', 'data-bytes'), String(cli.checkpoint.data_bytes), 'bytes as the CLI');
    assertEq(await page.getAttribute('[data-testid="checkpoint-dtype"]', 'data-dtype'), 'BF16', 'one BF16 row');
    assertEq(await page.textContent('[data-testid="checkpoint-params"]'), '1,235,814,400', 'shown count');
    assertEq(await shownTotal(page), before, 'the previous model stays');
    await page.selectOption('[data-testid="lang-select"]', 'zh-CN');
    await waitFor(page, () => /config\.json/.test(document.querySelector('[data-testid="checkpoint-ask"]')?.textContent ?? '') && /显存/.test(document.querySelector('[data-testid="checkpoint-ask"]').textContent), null, 'the Chinese request for the config');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('checkpoint: a header length past the end of the file is refused naming the file; the previous model stays', async ({ page }) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vram-safetensors-'));
  try {
    await openApp(page);
    const before = await loadPreset(page, LLAMA_1B);
    const bad = path.join(dir, 'broken.safetensors');
    const h = Buffer.alloc(8 + 16, 0x20);
    h.writeBigUInt64LE(1000000n, 0);
    fs.writeFileSync(bad, h);
    await page.setInputFiles('[data-testid="file-input"]', bad);
    await waitFor(page, () => !!document.querySelector('[data-testid="load-error"]'), null, 'the load error');
    const msg = await page.textContent('[data-testid="load-error"]');
    assert(msg.includes('broken.safetensors') && msg.includes('1000008') && /only 24 bytes/.test(msg), 'the error names the file and the lengths: ' + msg);
    assertEq(await shownTotal(page), before, 'the previous model stays');
    assertEq(await page.$('[data-testid="checkpoint-source"]'), null, 'no checkpoint on the model');
    // with a config too: nothing changes
    fs.writeFileSync(path.join(dir, 'config.json'), presetBytes('openai-community__gpt2'));
    await page.setInputFiles('[data-testid="file-input"]', [path.join(dir, 'config.json'), bad]);
    await waitFor(page, () => (document.querySelector('[data-testid="load-error"]')?.textContent ?? '').includes('broken.safetensors'), null, 'the load error again');
    assertEq(await shownTotal(page), before, 'the previous model stays with a config');
    // a duplicate key: the core's message
    const json = Buffer.from('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}');
    const len = Buffer.alloc(8);
    len.writeBigUInt64LE(BigInt(json.length));
    const dup = path.join(dir, 'dup.safetensors');
    fs.writeFileSync(dup, Buffer.concat([len, json, Buffer.alloc(4)]));
    await page.setInputFiles('[data-testid="file-input"]', dup);
    await waitFor(page, () => /dup\.safetensors.*duplicate/.test(document.querySelector('[data-testid="load-error"]')?.textContent ?? ''), null, 'the duplicate-key error');
    assertEq(await shownTotal(page), before, 'the previous model stays after duplicate keys');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});


for (const [width, scheme] of [[1440, 'light'], [390, 'dark']]) {
  test(`checkpoint: axe-core finds no serious violations with the checkpoint card at ${width} px, ${scheme}`, async ({ browser }) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vram-safetensors-'));
    const context = await browser.newContext({ viewport: { width, height: 900 }, colorScheme: scheme });
    const page = await context.newPage();
    try {
      const file = path.join(dir, 'model.safetensors');
      writeSafetensors(file, llama1bTensors());
      await openApp(page);
      await loadPreset(page, LLAMA_1B);
      await page.setInputFiles('[data-testid="file-input"]', file);
      await waitFor(page, () => !!document.querySelector('[data-testid="checkpoint-card"]'), null, 'the checkpoint card');
      const bad = await axeSerious(page);
      assertEq(bad.join(' | '), '', 'serious/critical violations');
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert(overflow <= 0, `no horizontal page scroll at ${width} px (overflow ${overflow})`);
    } finally {
      await context.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
}
