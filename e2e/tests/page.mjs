// Issue 6 "Done means": the page against `vram estimate --json`, updates, URL round trip, language,
// export, offline, sub-path, bad input, accessibility. (Requests leaving the origin fail every test:
// see harness.mjs.)
import fs from 'node:fs';
import path from 'node:path';
import { test, assert, assertEq, openApp, dropFile, presetBytes, waitFor, waitForTotal, BASE_URL, axeSerious } from '../harness.mjs';
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

test('three dropped configs show the totals of vram estimate --json', async ({ page }) => {
  await openApp(page);
  for (const id of ['meta-llama__Llama-3.1-8B', 'Qwen__Qwen2.5-7B', 'mistralai__Mixtral-8x7B-v0.1']) {
    const train = cliEstimate(id, ['--train']);
    const infer = cliEstimate(id, ['--infer']);
    await dropFile(page, id + '.json', presetBytes(id));
    await waitForTotal(page, String(train.parameters.total));
    await waitBytes(page, 'train-device', train.train.device_bytes);
    await waitBytes(page, 'infer-device', infer.infer.device_bytes);
    assertEq(await bytesOf(page, 'train-allocated'), String(train.train.peak_allocated_bytes), `${id} train peak allocated`);
    assertEq(await bytesOf(page, 'infer-allocated'), String(infer.infer.peak_allocated_bytes), `${id} infer peak allocated`);
  }
});

test('changing the batch updates the numbers and redraws the chart', async ({ page }) => {
  await openApp(page);
  await page.selectOption('[data-testid="preset-select"]', 'Qwen__Qwen2.5-3B');
  const before = cliEstimate('Qwen__Qwen2.5-3B', ['--train']);
  await waitBytes(page, 'train-device', before.train.device_bytes);
  await waitFor(page, () => document.querySelector('[data-testid="canvas-train-batch"]')?.width > 0, null, 'the batch chart');
  const version0 = await page.getAttribute('[data-testid="canvas-train-phases"]', 'data-version');
  const pixels0 = await page.evaluate(() => document.querySelector('[data-testid="canvas-train-phases"]').toDataURL());
  await setField(page, 'batch', 4);
  const after = cliEstimate('Qwen__Qwen2.5-3B', ['--train', '--batch', '4']);
  assert(after.train.device_bytes > before.train.device_bytes, 'batch 4 needs more memory');
  await waitBytes(page, 'train-device', after.train.device_bytes);
  await waitFor(page, (v) => document.querySelector('[data-testid="canvas-train-phases"]').dataset.version !== v, version0, 'a redraw');
  const pixels1 = await page.evaluate(() => document.querySelector('[data-testid="canvas-train-phases"]').toDataURL());
  assert(pixels0 !== pixels1, 'the phase chart pixels changed');
  // The redraw was timed with performance.mark (docs/performance.md).
  const measures = await page.evaluate(() => performance.getEntriesByName('vram:redraw').length);
  assert(measures >= 1, 'a vram:redraw measure exists');
});

test('a rejected scenario value shows the core error and keeps the result', async ({ page }) => {
  await openApp(page);
  await page.selectOption('[data-testid="preset-select"]', 'Qwen__Qwen2.5-3B');
  const train = cliEstimate('Qwen__Qwen2.5-3B', ['--train']);
  await waitBytes(page, 'train-device', train.train.device_bytes);
  await setField(page, 'batch', 0);
  await waitFor(page, () => !!document.querySelector('[data-testid="error-batch"]'), null, 'the batch error');
  assertEq(await page.textContent('[data-testid="error-batch"]'), 'batch: expected an integer from 1 to 16777216, found 0', 'core message');
  assertEq(await bytesOf(page, 'train-device'), String(train.train.device_bytes), 'result kept');
});

test('the URL reproduces the view', async ({ page, context }) => {
  await openApp(page);
  await page.selectOption('[data-testid="preset-select"]', 'Qwen__Qwen2.5-3B');
  await setField(page, 'seq_len', 1024);
  await page.selectOption('[data-testid="f-gpu"]', 'rtx4090');
  await page.selectOption('[data-testid="lang-select"]', 'zh-CN');
  const cli = cliEstimate('Qwen__Qwen2.5-3B', ['--train', '--seq', '1024']);
  await waitBytes(page, 'train-device', cli.train.device_bytes);
  const url = page.url();
  assert(url.includes('?s='), 'state in the query: ' + url);
  const other = await context.newPage();
  await openApp(other, url);
  await waitBytes(other, 'train-device', cli.train.device_bytes);
  assertEq(await other.inputValue('[data-testid="f-seq_len"]'), '1024', 'seq field');
  assertEq(await other.inputValue('[data-testid="f-gpu"]'), 'rtx4090', 'gpu');
  assertEq(await other.getAttribute('html', 'lang'), 'zh-CN', 'language');
  assertEq(await other.getAttribute('[data-testid="train-usable"]', 'data-testid'), 'train-usable', 'usable shown');
  assert((await other.textContent('[data-testid="train-usable"]')).startsWith('23.58'), 'RTX 4090 usable 23.58 GiB');
});

test('language switch translates the page and is remembered', async ({ page }) => {
  await openApp(page);
  assertEq(await page.textContent('h1'), 'vram — GPU memory calculator', 'English by default (en-US browser)');
  await page.selectOption('[data-testid="lang-select"]', 'zh-CN');
  await waitFor(page, () => document.querySelector('h1').textContent === 'vram — GPU 显存计算器', null, 'Chinese title');
  await page.selectOption('[data-testid="preset-select"]', 'openai-community__gpt2');
  await waitForTotal(page, '124439808');
  assert((await page.textContent('[data-testid="train-result"] h2')) === '训练', 'results translated');
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
  await page.selectOption('[data-testid="preset-select"]', 'meta-llama__Llama-3.1-8B');
  const train = cliEstimate('meta-llama__Llama-3.1-8B', ['--train']);
  await waitBytes(page, 'train-device', train.train.device_bytes);
  const read = async (testid) => {
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click(`[data-testid="${testid}"]`)]);
    return { name: dl.suggestedFilename(), text: fs.readFileSync(await dl.path(), 'utf8') };
  };
  const csv = await read('export-csv');
  assertEq(csv.name, 'vram-breakdown.csv', 'csv name');
  const lines = csv.text.trim().split('\n');
  assertEq(lines[0], 'mode,component,' + train.train.phases.map((p) => p.name).join(','), 'csv header');
  const weights = lines.find((l) => l.startsWith('train,weights,'));
  assertEq(weights.split(',')[2], String(train.train.weights_bytes), 'csv weights at load');
  assert(lines.some((l) => l.startsWith('infer,kv_cache,')), 'inference rows');
  const md = await read('export-md');
  assert(md.text.includes('| **peak allocated** |'), 'markdown table');
  const json = await read('export-json');
  const doc = JSON.parse(json.text);
  assertEq(doc.schema_version, train.schema_version, 'schema');
  assertEq(doc.parameters.total, train.parameters.total, 'json parameters');
  assertEq(doc.train.device_bytes, train.train.device_bytes, 'json train device bytes');
  assertEq(JSON.stringify(doc.train.phases), JSON.stringify(train.train.phases), 'json phases');
  const svg = await read('svg-train-phases');
  assert(svg.text.startsWith('<svg') && svg.text.includes('usable GPU memory'), 'chart SVG download');
  const png = await Promise.all([page.waitForEvent('download'), page.click('[data-testid="png-infer-context"]')]);
  const pngBytes = fs.readFileSync(await png[0].path());
  assertEq(pngBytes.subarray(1, 4).toString(), 'PNG', 'chart PNG download');
});

test('rows expand to the formula and its source', async ({ page }) => {
  await openApp(page);
  await page.selectOption('[data-testid="preset-select"]', 'meta-llama__Llama-3.1-8B');
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
  await page.selectOption('[data-testid="preset-select"]', 'Qwen__Qwen3-0.6B');
  const cli = cliEstimate('Qwen__Qwen3-0.6B', ['--infer']);
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
      await page.selectOption('[data-testid="preset-select"]', 'meta-llama__Llama-3.1-8B');
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
