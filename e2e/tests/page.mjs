// Issue 6 "Done means": the page against `vram estimate --json`, updates, URL round trip, language,
// export, offline, sub-path, bad input, accessibility. (Requests leaving the origin fail every test:
// see harness.mjs.)
import fs from 'node:fs';
import path from 'node:path';
import { test, assert, assertEq, openApp, dropFile, presetBytes, waitFor, waitForTotal, BASE_URL, axeSerious, choosePreset, chooseTask, verdictOf, waitVerdictTotal, typeField } from '../harness.mjs';
import { cliEstimate } from '../cli.mjs';


async function bytesOf(page, testid) {
  return page.evaluate((id) => document.querySelector(`[data-testid="${id}"]`)?.dataset.bytes ?? null, testid);
}

async function waitBytes(page, testid, expected) {
  await waitFor(
    page,
    ([id, v]) => document.querySelector(`[data-testid="${id}"]`)?.dataset.bytes === v,
    [testid, String(expected)],
    `${testid} = ${expected}`,
  );
}

async function setField(page, key, value) {
  await page.fill(`[data-testid="f-${key}"]`, String(value));
  await page.dispatchEvent(`[data-testid="f-${key}"]`, 'change');
}

// The page's three tasks as `vram estimate` flags (the page's defaults: Serve is vLLM with
// max_model_len = the context typed; Fine-tune is LoRA r 16 on all linear layers with checkpointing).
const SERVE = ['--infer', '--engine', 'vllm', '--max-model-len', '4096'];
const FINETUNE = ['--train', '--dtype', 'bf16', '--mixed-precision', 'bf16', '--lora-r', '16', '--lora-targets', 'all-linear', '--grad-checkpointing'];
const TRAIN = ['--train'];

test('each task of three dropped configs shows the verdict total of vram estimate --json', async ({ page }) => {
  await openApp(page);
  for (const id of ['meta-llama__Llama-3.1-8B', 'Qwen__Qwen2.5-7B', 'mistralai__Mixtral-8x7B-v0.1']) {
    await dropFile(page, id + '.json', presetBytes(id));
    const train = cliEstimate(id, TRAIN);
    await waitForTotal(page, String(train.parameters.total));
    for (const [task, args, section] of [['serve', SERVE, 'infer'], ['finetune', FINETUNE, 'train'], ['train', TRAIN, 'train']]) {
      const cli = cliEstimate(id, args);
      await chooseTask(page, task);
      await waitVerdictTotal(page, cli[section].device_bytes);
      await waitBytes(page, `${section}-device`, cli[section].device_bytes);
      assertEq(await bytesOf(page, `${section}-allocated`), String(cli[section].peak_allocated_bytes), `${id} ${task} peak allocated`);
      const v = await verdictOf(page);
      assertEq(v.usable, '85029615043', 'usable bytes of an H100 80 GB (79.19 GiB)');
      if (task === 'serve') {
        const seqs = Math.floor(cli.infer.serving.concurrency_at_context);
        assertEq(await page.getAttribute('[data-testid="serve-concurrency"]', 'data-sequences'), String(seqs), `${id} concurrent 4k requests`);
      }
    }
    await chooseTask(page, 'serve');
  }
});

test('changing the batch by typing updates the numbers and redraws the chart', async ({ page }) => {
  await openApp(page);
  await choosePreset(page, 'Qwen__Qwen2.5-3B');
  await chooseTask(page, 'train');
  const before = cliEstimate('Qwen__Qwen2.5-3B', TRAIN);
  await waitBytes(page, 'train-device', before.train.device_bytes);
  await waitFor(page, () => document.querySelector('[data-testid="canvas-train-batch"]')?.width > 0, null, 'the batch chart');
  const version0 = await page.getAttribute('[data-testid="canvas-train-phases"]', 'data-version');
  const pixels0 = await page.evaluate(() => document.querySelector('[data-testid="canvas-train-phases"]').toDataURL());
  // Typed, not committed: the result follows the keystrokes (no blur, no Enter).
  await page.click('[data-testid="f-batch"]', { clickCount: 3 });
  await page.keyboard.type('4');
  const after = cliEstimate('Qwen__Qwen2.5-3B', [...TRAIN, '--batch', '4']);
  assert(after.train.device_bytes > before.train.device_bytes, 'batch 4 needs more memory');
  await waitBytes(page, 'train-device', after.train.device_bytes);
  await waitVerdictTotal(page, after.train.device_bytes);
  await waitFor(page, (v) => document.querySelector('[data-testid="canvas-train-phases"]').dataset.version !== v, version0, 'a redraw');
  const pixels1 = await page.evaluate(() => document.querySelector('[data-testid="canvas-train-phases"]').toDataURL());
  assert(pixels0 !== pixels1, 'the phase chart pixels changed');
  const measures = await page.evaluate(() => performance.getEntriesByName('vram:redraw').length);
  assert(measures >= 1, 'a vram:redraw measure exists');
});

test('a rejected scenario value shows the core error next to the field and keeps the result', async ({ page }) => {
  await openApp(page);
  await choosePreset(page, 'Qwen__Qwen2.5-3B');
  await chooseTask(page, 'train');
  const train = cliEstimate('Qwen__Qwen2.5-3B', TRAIN);
  await waitVerdictTotal(page, train.train.device_bytes);
  await setField(page, 'batch', 0);
  await waitFor(page, () => !!document.querySelector('[data-testid="error-batch"]'), null, 'the batch error');
  assertEq(await page.textContent('[data-testid="error-batch"]'), 'batch: expected an integer from 1 to 16777216, found 0', 'core message');
  assertEq((await verdictOf(page)).total, String(train.train.device_bytes), 'verdict kept');
  assertEq(await bytesOf(page, 'train-device'), String(train.train.device_bytes), 'result kept');
});

test('only valid combinations are offered: no fp8 KV cache under transformers, and the result stays', async ({ page }) => {
  await openApp(page);
  await choosePreset(page, 'Qwen__Qwen2.5-3B');
  const kvOptions = async () => page.evaluate(() => [...document.querySelectorAll('[data-testid="f-kv_dtype"] option')].map((o) => o.value));
  // the model is read asynchronously (the page's app chunk): wait for the form, then check
  await waitFor(page, () => [...document.querySelectorAll('[data-testid="f-kv_dtype"] option')].some((o) => o.value === 'fp8'), null, 'vLLM offering an fp8 KV cache');
  await page.selectOption('[data-testid="f-kv_dtype"]', 'fp8');
  const vllm = cliEstimate('Qwen__Qwen2.5-3B', [...SERVE, '--kv-dtype', 'fp8']);
  await waitVerdictTotal(page, vllm.infer.device_bytes);
  // Moving to transformers, which the core refuses with an fp8 cache: the engine change is refused
  // with the reason next to the field and the vLLM result stays, or the engine changes and fp8 is
  // no longer offered; never a raw error in place of the result.
  await page.selectOption('[data-testid="f-engine"]', 'transformers');
  await page.waitForTimeout(300);
  const v = await verdictOf(page);
  assert(v && v.total.length > 0, 'a verdict is on screen');
  const engine = await page.inputValue('[data-testid="f-engine"]');
  if (engine === 'transformers') {
    assert(!(await kvOptions()).includes('fp8'), 'transformers: fp8 KV not offered');
  } else {
    assert(!!(await page.$('[data-testid="error-engine"]')), 'the refusal is explained by the engine field');
    assertEq(v.total, String(vllm.infer.device_bytes), 'the last good result stays');
  }
  assertEq(await page.$('[data-testid="infer-error"]'), null, 'no raw error replaces the result');
});

test('the URL reproduces the view', async ({ page, context }) => {
  await openApp(page);
  await choosePreset(page, 'Qwen__Qwen2.5-3B');
  await chooseTask(page, 'train');
  await setField(page, 'seq_len', 1024);
  await page.selectOption('[data-testid="f-gpu"]', 'rtx4090');
  await page.selectOption('[data-testid="lang-select"]', 'zh-CN');
  const cli = cliEstimate('Qwen__Qwen2.5-3B', ['--train', '--seq', '1024']);
  await waitBytes(page, 'train-device', cli.train.device_bytes);
  // the address bar's link is rewritten once the inputs rest for 250 ms (src/app.rs URL_DELAY)
  await page.waitForTimeout(700);
  const url = page.url();
  assert(url.includes('?'), 'state in the query: ' + url);
  const other = await context.newPage();
  await openApp(other, url);
  await waitBytes(other, 'train-device', cli.train.device_bytes);
  assertEq(await other.getAttribute('[data-testid="task-train"]', 'aria-selected'), 'true', 'task');
  assertEq(await other.inputValue('[data-testid="f-seq_len"]'), '1024', 'seq field');
  assertEq(await other.inputValue('[data-testid="f-gpu"]'), 'rtx4090', 'gpu');
  assertEq(await other.getAttribute('html', 'lang'), 'zh-CN', 'language');
  assert((await other.textContent('[data-testid="train-usable"]')).startsWith('23.58'), 'RTX 4090 usable 23.58 GiB');
});

test('language switch translates the page and is remembered', async ({ page }) => {
  await openApp(page);
  assertEq(await page.textContent('h1'), 'vram — GPU memory calculator', 'English by default (en-US browser)');
  await page.selectOption('[data-testid="lang-select"]', 'zh-CN');
  await waitFor(page, () => document.querySelector('h1').textContent === 'vram — GPU 显存计算器', null, 'Chinese title');
  await choosePreset(page, 'openai-community__gpt2');
  await waitForTotal(page, '124439808');
  assert((await page.textContent('[data-testid="task-train"]')).includes('全参训练'), 'task tabs translated');
  await waitFor(page, () => /放得下|很紧张|放不下/.test(document.querySelector('[data-testid="verdict"]')?.textContent || ''), null, 'verdict translated');
  assert((await page.textContent('[data-testid="model-view"]')).includes('1.24 亿'), 'count in 亿');
  await page.goto(BASE_URL);
  await waitFor(page, () => document.querySelector('h1')?.textContent === 'vram — GPU 显存计算器', null, 'remembered after reload');
});

test('a zh-CN browser gets Chinese', async ({ browser }) => {
  const context = await browser.newContext({ locale: 'zh-CN' });
  const page = await context.newPage();
  await openApp(page);
  assertEq(await page.textContent('h1'), 'vram — GPU 显存计算器', 'Chinese from the browser');
  await context.close();
});

test('exports: CSV and Markdown breakdown, JSON as vram estimate --json', async ({ page }) => {
  await openApp(page);
  await choosePreset(page, 'meta-llama__Llama-3.1-8B');
  await chooseTask(page, 'train');
  const train = cliEstimate('meta-llama__Llama-3.1-8B', ['--train']);
  await waitBytes(page, 'train-device', train.train.device_bytes);
  const read = async (testid) => {
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid="${testid}"]`)]);
    return { name: dl.suggestedFilename(), text: fs.readFileSync(await dl.path(), 'utf8') };
  };
  const csv = await read('export-csv');
  assert(/^vram-.*Llama-3\.1-8B-train\.csv$/.test(csv.name), 'csv name carries the model and task: ' + csv.name);
  const lines = csv.text.trim().split('\n');
  assert(lines[0].startsWith('# model,') && lines[0].includes('Llama-3.1-8B'), 'csv starts with the model: ' + lines[0]);
  assert(lines.includes('# task,train') && lines.some((l) => l.startsWith('# gpu,NVIDIA H100')), 'task and GPU: ' + lines.slice(0, 4).join(' | '));
  const header = lines.find((l) => l.startsWith('mode,component,'));
  assertEq(header, 'mode,component,' + train.train.phases.map((p) => p.name + '_bytes').join(','), 'csv header names its unit');
  const weights = lines.find((l) => l.startsWith('train,weights,'));
  assertEq(weights.split(',')[2], String(train.train.weights_bytes), 'csv weights at load');
  const md = await read('export-md');
  assert(/^vram-.*Llama-3\.1-8B-train\.md$/.test(md.name), 'markdown name: ' + md.name);
  assert(/\| model \| .*Llama-3\.1-8B \|/.test(md.text) && md.text.includes('(GiB)'), 'markdown with settings and units');
  const json = await read('export-json');
  const doc = JSON.parse(json.text);
  assertEq(doc.schema_version, train.schema_version, 'schema');
  assertEq(doc.parameters.total, train.parameters.total, 'json parameters');
  assertEq(doc.train.device_bytes, train.train.device_bytes, 'json train device bytes');
  assertEq(JSON.stringify(doc.train.phases), JSON.stringify(train.train.phases), 'json phases');
  const svg = await read('svg-train-phases');
  assert(svg.text.startsWith('<svg') && svg.text.includes('usable GPU memory'), 'chart SVG download');
  const png = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="png-train-batch"]')]);
  const pngBytes = fs.readFileSync(await png[0].path());
  assertEq(pngBytes.subarray(1, 4).toString(), 'PNG', 'chart PNG download');
});

test('rows expand to the formula and its source', async ({ page }) => {
  await openApp(page);
  await choosePreset(page, 'meta-llama__Llama-3.1-8B');
  await page.selectOption('[data-testid="f-engine"]', 'transformers');
  await waitFor(page, () => !!document.querySelector('[data-testid="infer-expand-weights"]'), null, 'the table');
  await page.click('[data-testid="infer-expand-weights"]');
  const text = await page.textContent('[data-testid="infer-terms-weights"]');
  assert(text.includes('8,030,261,248'), 'formula with the numbers: ' + text);
  assert(/Source/.test(text), 'source shown');
  await page.click('[data-testid="unit-gb"]');
  await waitFor(page, () => document.querySelector('[data-testid="infer-device"]').textContent.endsWith(' GB'), null, 'GB unit');
});

test('works offline after the first visit', async ({ page, context }) => {
  await openApp(page);
  await page.evaluate(() => navigator.serviceWorker.ready.then(() => true));
  await waitFor(page, () => !!navigator.serviceWorker.controller || true, null, 'worker');
  // Reload once so the worker controls the page and has cached the shell.
  await page.reload();
  await waitFor(page, () => !!navigator.serviceWorker.controller, null, 'the service worker controlling the page');
  await context.setOffline(true);
  await page.reload();
  await waitFor(page, () => !!document.querySelector('[data-testid="drop-zone"]'), null, 'the app offline');
  await choosePreset(page, 'Qwen__Qwen3-0.6B');
  const cli = cliEstimate('Qwen__Qwen3-0.6B', SERVE);
  await waitBytes(page, 'infer-device', cli.infer.device_bytes);
  await context.setOffline(false);
});

test('served under /sub/path/', async ({ page }) => {
  const urls = [];
  page.on('request', (r) => urls.push(new URL(r.url()).pathname));
  await openApp(page, new URL('sub/path/', BASE_URL).href);
  await dropFile(page, 'meta-llama__Llama-3.1-8B.json', presetBytes('meta-llama__Llama-3.1-8B'));
  await waitForTotal(page, '8030261248');
  const outside = urls.filter((u) => !u.startsWith('/sub/path/'));
  assertEq(outside.join(','), '', 'every request stays under /sub/path/');
});


for (const [width, scheme] of [[1440, 'light'], [1440, 'dark'], [390, 'light'], [390, 'dark']]) {
  test(`axe-core: no serious violations at ${width} px, ${scheme}`, async ({ browser }) => {
    const context = await browser.newContext({ viewport: { width, height: 900 }, colorScheme: scheme });
    const page = await context.newPage();
    try {
      await openApp(page);
      await choosePreset(page, 'meta-llama__Llama-3.1-8B');
      await waitFor(page, () => !!document.querySelector('[data-testid="infer-device"]'), null, 'results');
      const bad = await axeSerious(page);
      assertEq(bad.join(' | '), '', 'serious/critical violations');
      const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
      assert(overflow <= 0, `no horizontal page scroll at ${width} px (overflow ${overflow})`);
    } finally {
      await context.close();
    }
  });
}
