// A small test harness over playwright-core: launches Debian's /usr/bin/chromium (no browser download),
// gives each test a fresh context, fails any test whose page requests another origin or logs a page
// error, and prints `e2e: N passed, M failed`.
import { chromium } from 'playwright-core';
import fs from 'node:fs';
import path from 'node:path';

export const BASE_URL = process.env.VRAM_E2E_URL; // e.g. http://127.0.0.1:PORT/ (root of dist)
export const ORIGIN = BASE_URL ? new URL(BASE_URL).origin : '';
export const ARTIFACTS = process.env.VRAM_E2E_ARTIFACTS || '/tmp/vram-e2e';
export const REPO = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');

const tests = [];
/**
 * Registers a test. `fn({ page, context, browser })`. `options.ownBrowser`: run in a browser of its
 * own (Chromium stops showing file choosers to a page after some earlier contexts in the same browser).
 */
export function test(name, fn, options = {}) {
  tests.push({ name, fn, options });
}

export async function launch() {
  return chromium.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
  });
}

export function assert(cond, message) {
  if (!cond) throw new Error('assertion failed: ' + message);
}

export function assertEq(actual, expected, what) {
  if (actual !== expected) {
    throw new Error(`${what}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
  }
}

/** Waits until `fn(arg)` (run in the page) returns a truthy non-Promise value. */
export async function waitFor(page, fn, arg, what, timeout = 15000) {
  try {
    await page.waitForFunction(fn, arg, { timeout, polling: 50 });
  } catch (e) {
    throw new Error(`timed out waiting for ${what}`);
  }
}

/** Opens the page and waits until the app has mounted. */
export async function openApp(page, url = BASE_URL) {
  await page.goto(url);
  await waitFor(page, () => !!document.querySelector('[data-testid="drop-zone"]'), null, 'the app to mount');
}

/** Drops a file with these bytes onto the drop zone through a real DataTransfer. */
export async function dropFile(page, name, bytes, type = 'application/json') {
  await page.evaluate(
    ({ name, b64, type }) => {
      const bin = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
      const file = new File([bin], name, { type });
      const dt = new DataTransfer();
      dt.items.add(file);
      const target = document.querySelector('[data-testid="drop-zone"]');
      for (const kind of ['dragenter', 'dragover', 'drop']) {
        target.dispatchEvent(new DragEvent(kind, { bubbles: true, cancelable: true, dataTransfer: dt }));
      }
    },
    { name, b64: Buffer.from(bytes).toString('base64'), type },
  );
}

/** The preset config file from the repository. */
export function presetBytes(id) {
  return fs.readFileSync(path.join(REPO, 'crates/vram_core/presets', id + '.json'));
}

/** `data-raw` of the total parameter count on screen, or null. */
export async function shownTotal(page) {
  return page.evaluate(() => document.querySelector('[data-testid="total-params"]')?.dataset.raw ?? null);
}

export async function waitForTotal(page, raw) {
  await waitFor(
    page,
    (raw) => document.querySelector('[data-testid="total-params"]')?.dataset.raw === raw,
    raw,
    `total-params = ${raw}`,
  );
}

export async function run() {
  if (!BASE_URL) throw new Error('VRAM_E2E_URL is not set (run e2e/run.sh)');
  fs.mkdirSync(ARTIFACTS, { recursive: true });
  const only = process.env.VRAM_E2E_ONLY;
  const browser = await launch();
  let passed = 0;
  let failed = 0;
  for (const t of tests) {
    if (only && !new RegExp(only).test(t.name)) continue;
    const own = t.options.ownBrowser ? await launch() : null;
    const context = await (own || browser).newContext({ viewport: { width: 1280, height: 900 } });
    const page = await context.newPage();
    const foreign = [];
    const pageErrors = [];
    context.on('request', (req) => {
      const u = new URL(req.url());
      if (!['data:', 'blob:'].includes(u.protocol) && u.origin !== ORIGIN) foreign.push(req.url());
    });
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    page.on('console', (m) => {
      if (m.type() === 'error') pageErrors.push('console: ' + m.text());
    });
    const started = Date.now();
    try {
      await t.fn({ page, context, browser: own || browser });
      assert(foreign.length === 0, 'requests left the origin: ' + foreign.join(', '));
      assert(pageErrors.length === 0, 'page errors: ' + pageErrors.join(' | '));
      passed += 1;
      console.log(`ok   ${t.name} (${Date.now() - started} ms)`);
    } catch (e) {
      failed += 1;
      console.log(`FAIL ${t.name}\n     ${String(e && e.stack ? e.stack : e).split('\n').join('\n     ')}`);
      const shot = path.join(ARTIFACTS, t.name.replace(/[^a-z0-9]+/gi, '_') + '.png');
      await page.screenshot({ path: shot, fullPage: true }).catch(() => {});
      console.log(`     screenshot: ${shot}`);
    }
    await context.close();
    if (own) await own.close();
  }
  await browser.close();
  console.log(`e2e: ${passed} passed, ${failed} failed`);
  return failed === 0 && passed > 0;
}

/** The serious and critical axe-core violations on the page, one line each (empty when none). */
export async function axeSerious(page) {
  const { createRequire } = await import('node:module');
  const require = createRequire(import.meta.url);
  await page.addScriptTag({ path: require.resolve('axe-core/axe.min.js') });
  return page.evaluate(async () => {
    const r = await window.axe.run(document, { resultTypes: ['violations'] });
    return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => `${v.id}: ${v.nodes.length} × ${v.nodes[0]?.target}`);
  });
}

/**
 * Before the page loads: records every byte range it reads from a Blob/File (`slice`, whole-blob
 * reads, FileReader), when a file input changes, and when `[data-testid=testid]` first has
 * `dataset[key] === expected`. Read back with {@link readLog}.
 */
export async function recordReads(page, testid, key, expected) {
  await page.addInitScript(([testid, key, expected]) => {
    window.__reads = [];
    const slice = Blob.prototype.slice;
    Blob.prototype.slice = function (...a) {
      const b = slice.apply(this, a);
      window.__reads.push({ op: 'slice', start: a[0] ?? 0, end: a[1] ?? this.size, size: b.size, of: this.size });
      return b;
    };
    for (const op of ['arrayBuffer', 'text', 'stream', 'bytes']) {
      const f = Blob.prototype[op];
      if (!f) continue;
      Blob.prototype[op] = function (...a) {
        window.__reads.push({ op, start: 0, end: this.size, size: this.size, of: this.size });
        return f.apply(this, a);
      };
    }
    const fr = FileReader.prototype.readAsArrayBuffer;
    FileReader.prototype.readAsArrayBuffer = function (b) {
      window.__reads.push({ op: 'FileReader', start: 0, end: b.size, size: b.size, of: b.size });
      return fr.call(this, b);
    };
    document.addEventListener('change', () => { window.__changedAt = performance.now(); }, true);
    new MutationObserver(() => {
      const v = document.querySelector(`[data-testid="${testid}"]`);
      if (v && v.dataset[key] === expected && window.__shownAt === undefined) window.__shownAt = performance.now();
    }).observe(document, { subtree: true, childList: true, attributes: true });
  }, [testid, key, expected]);
}

/** What {@link recordReads} recorded: `{ changedAt, shownAt, reads }`. */
export async function readLog(page) {
  return page.evaluate(() => ({ changedAt: window.__changedAt, shownAt: window.__shownAt, reads: window.__reads }));
}

/** Picks a bundled preset: opens the collapsed loader ("Change model") first when a model is on screen. */
export async function choosePreset(page, id) {
  const collapsed = await page.evaluate(() => !!document.querySelector('.loader.collapsed'));
  if (collapsed) await page.click('[data-testid="change-model"]');
  await page.selectOption('[data-testid="preset-select"]', id);
}

/** Clicks a task tab (`serve`, `finetune`, `train`) and waits until it is selected. */
export async function chooseTask(page, task) {
  await page.click(`[data-testid="task-${task}"]`);
  await waitFor(page, (t) => document.querySelector(`[data-testid="task-${t}"]`)?.getAttribute('aria-selected') === 'true', task, `task ${task}`);
}

/** Types a value into a number field as a person does (select all, type), then leaves the field. */
export async function typeField(page, key, value) {
  const sel = `[data-testid="f-${key}"]`;
  await page.click(sel, { clickCount: 3 });
  await page.keyboard.press('Control+A');
  await page.keyboard.type(String(value));
  await page.keyboard.press('Tab');
}

/** The verdict's data attributes: { fits, total, usable } (numbers as strings). */
export async function verdictOf(page) {
  return page.evaluate(() => {
    const v = document.querySelector('[data-testid="verdict"]');
    return v ? { fits: v.dataset.fits, total: v.dataset.totalBytes, usable: v.dataset.usableBytes } : null;
  });
}

/** Waits until the verdict's compared total equals `bytes`. */
export async function waitVerdictTotal(page, bytes) {
  await waitFor(page, (b) => document.querySelector('[data-testid="verdict"]')?.dataset.totalBytes === b, String(bytes), `verdict total = ${bytes}`);
}

/** Opens the model loader when it is collapsed to its one line. */
export async function openLoader(page) {
  const collapsed = await page.evaluate(() => !!document.querySelector('.loader.collapsed'));
  if (collapsed) await page.click('[data-testid="change-model"]');
}

/** The page the latency figures are measured on (e2e/perf.mjs, e2e/profile.mjs): 1440×900, a
 * preset (VRAM_PERF_PRESET, default Llama-3.1-8B), the Train task with its three charts drawn and
 * the first follow-up task (solvers) done. */
export async function openPerfScenario(browser, url) {
  const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const page = await ctx.newPage();
  await openApp(page, url);
  await page.selectOption('[data-testid="preset-select"]', process.env.VRAM_PERF_PRESET || 'meta-llama__Llama-3.1-8B');
  await page.click('[data-testid="task-train"]');
  await waitFor(page, () => document.querySelectorAll('canvas').length >= 3, null, 'three charts');
  await waitFor(page, () => document.querySelector('[data-testid="train-max-batch"]')?.textContent !== '…', null, 'the solvers');
  return { ctx, page };
}

/** Change number `i` of the perf scenario: the micro-batch typed and committed (1, 2, 3, 4, 5, …). */
export async function perfBatchChange(page, i) {
  await page.evaluate((v) => {
    performance.clearMarks('vram:input');
    const el = document.querySelector('[data-testid="f-batch"]');
    el.value = String(v);
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }, 1 + (i % 4) + (i % 4 === 0 && i % 8 === 0 ? 4 : 0));
}
