// The llama.cpp ("local") view against the CLI: `vram estimate … --infer --engine llama.cpp --json`
// and `vram fit … --json` (same core, same scenario), a GGUF file read header-only, accessibility.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test, assert, assertEq, openApp, waitFor, axeSerious, recordReads, readLog, choosePreset } from '../harness.mjs';
import { cliJson, presetPath } from '../cli.mjs';
import { writeLlama8bQ4km, writeLlama8bQ4kmSplit } from '../gguf_writer.mjs';

const LLAMA = 'meta-llama__Llama-3.1-8B';
const QWEN_MOE = 'Qwen__Qwen3-30B-A3B';

async function setField(page, key, value) {
  await page.fill(`[data-testid="f-${key}"]`, String(value));
  await page.dispatchEvent(`[data-testid="f-${key}"]`, 'change');
}

/** Loads the preset and switches the inference form to llama.cpp. */
async function openLocal(page, gpu = 'rtx4090', preset = LLAMA) {
  await openApp(page);
  await choosePreset(page, preset);
  await waitFor(page, () => !!document.querySelector('[data-testid="f-engine"]'), null, 'the form');
  await page.selectOption('[data-testid="f-gpu"]', gpu);
  await page.selectOption('[data-testid="f-engine"]', 'llama.cpp');
  await waitFor(page, () => !!document.querySelector('[data-testid="local-verdict"]'), null, 'the local view');
}

async function waitAttr(page, testid, attr, expected) {
  await waitFor(
    page,
    ([id, a, v]) => document.querySelector(`[data-testid="${id}"]`)?.getAttribute(a) === v,
    [testid, attr, String(expected)],
    `${testid} ${attr} = ${expected}`,
  );
}

function estimate(args) {
  return cliJson(['estimate', ...args, '--infer', '--engine', 'llama.cpp', '--json']).infer.llama_cpp;
}

test('local: llama.cpp figures at a typed context equal vram estimate --engine llama.cpp', async ({ page }) => {
  await openLocal(page);
  // only llama.cpp's inputs are shown
  for (const gone of ['infer_dtype', 'infer_attention', 'logits_to_keep', 'context']) {
    assertEq(await page.$(`[data-testid="f-${gone}"]`), null, `${gone} hidden for llama.cpp`);
  }
  await page.click('[data-testid="f-llama_ctx"]');
  await page.fill('[data-testid="f-llama_ctx"]', '');
  await page.type('[data-testid="f-llama_ctx"]', '8192');
  await page.press('[data-testid="f-llama_ctx"]', 'Tab');
  const cli = estimate([presetPath(LLAMA), '--seq', '8192']);
  await waitAttr(page, 'local-verdict', 'data-gpu-bytes', cli.gpu_total_bytes);
  assertEq(await page.getAttribute('[data-testid="local-verdict"]', 'data-host-bytes'), String(cli.host_total_bytes), 'host bytes');
  assertEq(await page.getAttribute('[data-testid="kv-cells"]', 'data-cells'), String(cli.cells), 'KV cells');
  // the per-device table prints llama.cpp's MiB
  const cuda0 = await page.textContent('[data-testid="device-row"][data-device="CUDA0"]');
  const mib = (b) => (b / 2 ** 20).toFixed(2) + ' MiB';
  assert(cuda0.includes(mib(cli.devices[0].weights_bytes)), 'CUDA0 model buffer: ' + cuda0);
  assert(cuda0.includes(mib(cli.devices[0].kv_bytes)), 'CUDA0 KV buffer: ' + cuda0);
  // the same flags (the file name is the page's model name)
  const noFile = (l) => l.replace(/ -m \S+/, ' -m FILE');
  assertEq(noFile(await page.textContent('[data-testid="launch-line"]')), noFile(cli.launch.llama_server), 'launch line');
  assertEq(await page.textContent('[data-testid="local-verdict-text"]'), 'fits', 'verdict on an RTX 4090');
});

test('local: -ngl 20 moves layers to the host as the CLI does', async ({ page }) => {
  await openLocal(page);
  await setField(page, 'llama_ngl', 20);
  const cli = estimate([presetPath(LLAMA), '--ngl', '20']);
  await waitAttr(page, 'ngl-split', 'data-gpu-layers', cli.layers_on_gpu);
  assertEq(await page.getAttribute('[data-testid="ngl-split"]', 'data-n-layer'), String(cli.n_layer), 'n_layer');
  assertEq(await page.getAttribute('[data-testid="ngl-split"]', 'data-host-bytes'), String(cli.host_total_bytes), 'split host bytes');
  assertEq(await page.getAttribute('[data-testid="local-verdict"]', 'data-host-bytes'), String(cli.host_total_bytes), 'verdict host bytes');
  assertEq(await page.getAttribute('[data-testid="local-verdict"]', 'data-gpu-bytes'), String(cli.gpu_total_bytes), 'gpu bytes');
  assert(cli.layers_on_gpu < cli.n_layer, 'fewer layers on the GPU');
  // the host bar shows the host weights
  const hostSegs = await page.$$eval('[data-testid="ngl-split"] .split-row:nth-of-type(2) .seg', (s) => s.map((x) => Number(x.dataset.bytes)));
  assertEq(hostSegs.reduce((a, b) => a + b, 0), cli.host_total_bytes, 'host bar segments sum to the host total');
  // "all" again
  await setField(page, 'llama_ngl', 'all');
  const all = estimate([presetPath(LLAMA)]);
  await waitAttr(page, 'ngl-split', 'data-gpu-layers', all.layers_on_gpu);
  // a quantized V cache needs flash attention: the error sits by the V field and the result stays
  await page.selectOption('[data-testid="f-llama_ctv"]', 'q8_0');
  const q8 = estimate([presetPath(LLAMA), '--kv-dtype-v', 'q8_0']);
  await waitAttr(page, 'local-verdict', 'data-gpu-bytes', q8.gpu_total_bytes);
  await page.selectOption('[data-testid="f-llama_fa"]', 'off');
  await waitFor(page, () => !!document.querySelector('[data-testid="error-llama_ctv"]'), null, 'the V type error');
  assertEq(await page.getAttribute('[data-testid="local-verdict"]', 'data-gpu-bytes'), String(q8.gpu_total_bytes), 'last good result kept');
});

test('local: the can-I-run-it table equals vram fit, and a row click applies its type', async ({ page }) => {
  await openLocal(page, 'rtx4090');
  const fit = cliJson(['fit', presetPath(LLAMA), '--gpu', 'rtx4090', '--json']);
  await waitFor(page, (n) => document.querySelectorAll('[data-testid="fit-row"]').length === n, fit.rows.length, 'the fit rows');
  const rows = await page.$$eval('[data-testid="fit-row"]', (rs) =>
    rs.map((r) => ({ w: r.dataset.weights, ctx: r.dataset.fullGpuContext, p: r.dataset.placement, ngl: r.dataset.ngl, gpu: r.dataset.gpuBytes, host: r.dataset.hostBytes })),
  );
  fit.rows.forEach((f, i) => {
    const r = rows[i];
    assertEq(r.w, f.weights, `row ${i} weights`);
    assertEq(r.ctx, String(f.full_gpu_max_context), `${f.weights} full-GPU context`);
    assertEq(r.p, f.placement, `${f.weights} placement`);
    assertEq(r.ngl, String(f.n_gpu_layers), `${f.weights} -ngl`);
    assertEq(r.gpu, String(f.gpu_bytes), `${f.weights} GPU bytes`);
    assertEq(r.host, String(f.host_bytes), `${f.weights} host bytes`);
  });
  // click Q8_0: the weight type changes and the headline follows
  await page.click('[data-testid="fit-row"][data-weights="Q8_0"]');
  const q8 = estimate([presetPath(LLAMA), '--weights', 'q8_0']);
  await waitAttr(page, 'local-verdict', 'data-gpu-bytes', q8.gpu_total_bytes);
  assertEq(await page.inputValue('[data-testid="f-llama_weights"]'), 'q8_0', 'weights select');
  // the solvers answer
  await waitFor(page, () => /\d/.test(document.querySelector('[data-testid="local-max-ctx"]')?.textContent ?? ''), null, 'the context solver');
});

test('local: a multi-GB GGUF file is read header-only and matches vram estimate FILE.gguf', async ({ page }) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vram-gguf-'));
  const file = path.join(dir, 'Llama-3.1-8B-Q4_K_M.gguf');
  try {
    const g = writeLlama8bQ4km(file);
    const cliDoc = cliJson(['estimate', file, '--infer', '--engine', 'llama.cpp', '--json']);
    const cli = cliDoc.infer.llama_cpp;
    await recordReads(page, 'local-verdict', 'gpuBytes', String(cli.gpu_total_bytes));
    await openApp(page);
    await page.setInputFiles('[data-testid="file-input"]', file);
    await waitAttr(page, 'local-verdict', 'data-gpu-bytes', cli.gpu_total_bytes);
    const { changedAt, shownAt, reads } = await readLog(page);
    const ms = shownAt - changedAt;
    assert(ms < 1000, `figures shown ${ms.toFixed(0)} ms after the file was chosen (limit 1000)`);
    const largest = Math.max(...reads.map((r) => r.size));
    assert(reads.length > 0, 'the page read the file');
    assert(largest <= Math.max(4 * g.headerBytes, 1 << 20), `largest read ${largest} B for a ${g.headerBytes} B header`);
    assert(largest < g.fileBytes / 100, `never the whole ${g.fileBytes} B file`);
    assert(reads.every((r) => r.start === 0), 'reads start at the file start');
    console.log(`     ${reads.filter((r) => r.op === 'arrayBuffer').length} reads, largest ${largest} B (header ${g.headerBytes} B, file ${g.fileBytes} B); figures ${ms.toFixed(0)} ms after the change`);
    // the model, its header's parameter count and type
    assertEq(await page.getAttribute('[data-testid="total-params"]', 'data-raw'), String(cliDoc.parameters.total), 'parameters from the header');
    assertEq(await page.textContent('[data-testid="model-name"]'), 'Llama-3.1-8B-Q4_K_M.gguf', 'model name');
    assert((await page.textContent('[data-testid="gguf-type"]')).includes('Q4_K_M'), 'weight type from the file');
    assertEq(await page.getAttribute('[data-testid="local-verdict"]', 'data-host-bytes'), String(cli.host_total_bytes), 'host bytes');
    assertEq(await page.getAttribute('[data-testid="ngl-split"]', 'data-gpu-layers'), String(cli.layers_on_gpu), 'layers on GPU');
    assertEq(await page.inputValue('[data-testid="f-engine"]'), 'llama.cpp', 'llama.cpp chosen');
    assertEq(await page.textContent('[data-testid="launch-line"]'), cli.launch.llama_server, 'launch line names the file');
    // the file's own type heads the table
    await waitFor(page, () => document.querySelector('[data-testid="fit-row"]')?.dataset.weights === 'Q4_K_M', null, 'the GGUF row');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('local: a broken or oversized GGUF is refused and the previous model stays', async ({ page }) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vram-gguf-'));
  try {
    await openLocal(page);
    const before = await page.getAttribute('[data-testid="total-params"]', 'data-raw');
    const bad = path.join(dir, 'bad.gguf');
    fs.writeFileSync(bad, Buffer.from('NOPE' + '\0'.repeat(60)));
    await page.setInputFiles('[data-testid="file-input"]', bad);
    await waitFor(page, () => !!document.querySelector('[data-testid="load-error"]'), null, 'the load error');
    assert((await page.textContent('[data-testid="load-error"]')).includes('not a GGUF file'), 'bad magic message');
    // a header claiming a 512 MiB string: past the 256 MiB cap
    const big = path.join(dir, 'big.gguf');
    const h = Buffer.alloc(4 + 4 + 8 + 8 + 8);
    h.write('GGUF', 0); h.writeUInt32LE(3, 4); h.writeBigUInt64LE(0n, 8); h.writeBigUInt64LE(1n, 16); h.writeBigUInt64LE(BigInt(512 << 20), 24);
    fs.writeFileSync(big, h);
    fs.truncateSync(big, 600 << 20);
    await page.setInputFiles('[data-testid="file-input"]', big);
    await waitFor(page, () => /256|268435456|limit/.test(document.querySelector('[data-testid="load-error"]')?.textContent ?? '') && !/not a GGUF/.test(document.querySelector('[data-testid="load-error"]').textContent), null, 'the cap error');
    assertEq(await page.getAttribute('[data-testid="total-params"]', 'data-raw'), before, 'previous model kept');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('local: a split GGUF model (2 parts) loads from both files and equals vram estimate PART1.gguf', async ({ page }) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vram-gguf-split-'));
  try {
    const parts = writeLlama8bQ4kmSplit(dir, 'Llama-3.1-8B-Q4_K_M', 2);
    assert(parts[0].tensors + parts[1].tensors === 291, 'the tensors are divided between the parts');
    // the CLI finds the sibling part itself
    const cliDoc = cliJson(['estimate', parts[0].path, '--infer', '--engine', 'llama.cpp', '--json']);
    const cli = cliDoc.infer.llama_cpp;
    // the same model in one file has the same parameters
    const whole = path.join(dir, 'whole.gguf');
    writeLlama8bQ4km(whole);
    const wholeDoc = cliJson(['estimate', whole, '--infer', '--engine', 'llama.cpp', '--json']);
    assertEq(cliDoc.parameters.total, wholeDoc.parameters.total, 'split and whole parameter counts (CLI)');
    await openApp(page);
    // both parts at once, second part first: order does not matter
    await page.setInputFiles('[data-testid="file-input"]', [parts[1].path, parts[0].path]);
    await waitAttr(page, 'local-verdict', 'data-gpu-bytes', cli.gpu_total_bytes);
    assertEq(await page.getAttribute('[data-testid="total-params"]', 'data-raw'), String(cliDoc.parameters.total), 'parameters of both parts');
    assertEq(await page.getAttribute('[data-testid="local-verdict"]', 'data-host-bytes'), String(cli.host_total_bytes), 'host bytes');
    assertEq(await page.textContent('[data-testid="model-name"]'), 'Llama-3.1-8B-Q4_K_M.gguf', 'model name from the parts');
    assertEq(await page.$('[data-testid="load-error"]'), null, 'no load error');
    // only one part: refused with the core's message, the split model stays
    await page.setInputFiles('[data-testid="file-input"]', parts[0].path);
    await waitFor(page, () => !!document.querySelector('[data-testid="load-error"]'), null, 'the one-part error');
    const msg = await page.textContent('[data-testid="load-error"]');
    assert(/part 1 of 2/.test(msg) && /parts together/.test(msg), 'the error names the part: ' + msg);
    assertEq(await page.getAttribute('[data-testid="total-params"]', 'data-raw'), String(cliDoc.parameters.total), 'previous model kept');
    assertEq(await page.getAttribute('[data-testid="local-verdict"]', 'data-gpu-bytes'), String(cli.gpu_total_bytes), 'previous figures kept');
    // the same part twice: refused too
    await page.setInputFiles('[data-testid="file-input"]', [parts[0].path, parts[0].path]);
    await waitFor(page, () => /each part number/.test(document.querySelector('[data-testid="load-error"]')?.textContent ?? ''), null, 'the repeated-part error');
    assertEq(await page.getAttribute('[data-testid="total-params"]', 'data-raw'), String(cliDoc.parameters.total), 'previous model kept after a repeated part');
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('local: --cpu-moe on Qwen3-30B-A3B equals vram estimate --cpu-moe', async ({ page }) => {
  await openLocal(page, 'rtx4090', QWEN_MOE);
  const plain = estimate([presetPath(QWEN_MOE)]);
  await waitAttr(page, 'local-verdict', 'data-gpu-bytes', plain.gpu_total_bytes);
  // next to --n-cpu-moe, labelled
  assert(!!(await page.$('[data-testid="f-llama_n_cpu_moe"]')), '--n-cpu-moe shown for an MoE model');
  assert((await page.textContent('label[for="f-llama_cpu_moe"]')).includes('--cpu-moe'), 'the --cpu-moe label');
  await page.check('[data-testid="f-llama_cpu_moe"]');
  const cli = estimate([presetPath(QWEN_MOE), '--cpu-moe']);
  assert(cli.gpu_total_bytes < plain.gpu_total_bytes, 'the experts leave the GPU');
  await waitAttr(page, 'local-verdict', 'data-gpu-bytes', cli.gpu_total_bytes);
  assertEq(await page.getAttribute('[data-testid="local-verdict"]', 'data-host-bytes'), String(cli.host_total_bytes), 'host bytes');
  assert((await page.textContent('[data-testid="launch-line"]')).includes('--cpu-moe'), 'the launch line has --cpu-moe');
  // unticked: back to the plain estimate
  await page.uncheck('[data-testid="f-llama_cpu_moe"]');
  await waitAttr(page, 'local-verdict', 'data-gpu-bytes', plain.gpu_total_bytes);
  // a dense model has neither expert field
  await choosePreset(page, LLAMA);
  await waitFor(page, () => !document.querySelector('[data-testid="f-llama_cpu_moe"]'), null, 'no --cpu-moe for a dense model');
});

test('local: split proportions 3,1 on two GPUs equal vram estimate --tensor-split 3,1 per device', async ({ page }) => {
  await openLocal(page);
  await setField(page, 'llama_tensor_split', '3,1');
  const cli = estimate([presetPath(LLAMA), '--tensor-split', '3,1']);
  assertEq(cli.devices.length, 2, 'two devices in the CLI');
  await waitFor(page, () => !!document.querySelector('[data-testid="device-row"][data-device="CUDA1"]'), null, 'the CUDA1 row');
  for (const [i, d] of cli.devices.entries()) {
    const sel = `[data-testid="device-row"][data-device="CUDA${i}"]`;
    assertEq(await page.getAttribute(sel, 'data-total-bytes'), String(d.total_bytes), `CUDA${i} total bytes`);
    assertEq(await page.getAttribute(sel, 'data-layers'), String(d.layers), `CUDA${i} layers`);
  }
  assert(cli.devices[0].layers > cli.devices[1].layers, 'CUDA0 holds more layers');
  assertEq(await page.getAttribute('[data-testid="local-verdict"]', 'data-gpu-bytes'), String(cli.gpu_total_bytes), 'gpu bytes');
  assertEq(await page.inputValue('[data-testid="f-llama_gpus"]'), '2', 'the GPU count follows the proportions');
  assertEq(await page.inputValue('[data-testid="f-llama_tensor_split"]'), '3,1', 'the proportions as typed');
  // invalid text: a message by the field naming what is expected; the last good result stays
  for (const bad of ['3;1', '0,0']) {
    await setField(page, 'llama_tensor_split', bad);
    await waitFor(page, () => !!document.querySelector('[data-testid="error-llama_tensor_split"]'), null, `the error for ${bad}`);
    const msg = await page.textContent('[data-testid="error-llama_tensor_split"]');
    assert(msg.includes('tensor_split') && msg.includes('3,1'), `the message says what is expected: ${msg}`);
    assertEq(await page.getAttribute('[data-testid="device-row"][data-device="CUDA0"]', 'data-total-bytes'), String(cli.devices[0].total_bytes), `last good result kept after ${bad}`);
  }
  // the GPU count field resets to an even split
  await setField(page, 'llama_gpus', 2);
  const even = estimate([presetPath(LLAMA), '--tensor-split', '1,1']);
  await waitAttr(page, 'local-verdict', 'data-gpu-bytes', even.gpu_total_bytes);
  assertEq(await page.getAttribute('[data-testid="device-row"][data-device="CUDA1"]', 'data-total-bytes'), String(even.devices[1].total_bytes), 'even split CUDA1');
  assertEq(await page.$('[data-testid="error-llama_tensor_split"]'), null, 'error cleared');
});


for (const [width, scheme] of [[1440, 'light'], [390, 'dark']]) {
  test(`local: axe-core finds no serious violations at ${width} px, ${scheme}`, async ({ browser }) => {
    const context = await browser.newContext({ viewport: { width, height: 900 }, colorScheme: scheme });
    const page = await context.newPage();
    try {
      await openLocal(page);
      await waitFor(page, () => document.querySelectorAll('[data-testid="fit-row"]').length > 0, null, 'the fit table');
      const bad = await axeSerious(page);
      assertEq(bad.join(' | '), '', 'serious/critical violations');
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert(overflow <= 0, `no horizontal page scroll at ${width} px (overflow ${overflow})`);
    } finally {
      await context.close();
    }
  });
}
