// Measures the figures of docs/performance.md against the bundle served at VRAM_E2E_URL: time to
// interactive (navigation start → the app's `vram:mounted` mark, median of 5 cold loads), the bytes of
// dist/ (raw and gzip) split into the first load and what comes on first use, a share link's
// navigation-to-verdict time (median of 5 cold loads), and input-change-to-redraw latency over 200 batch
// changes: `vram:shown` (verdict, bars and table updated and laid out), `vram:settled` (the follow-up
// after the first frame: solvers, suggestions, sweeps and every chart redrawn, laid out) and
// `vram:painted` (the frame with all of it rendered), all from the `vram:input` mark.
// Usage: VRAM_E2E_URL=http://127.0.0.1:PORT/ node e2e/perf.mjs   (VRAM_PERF_LOADS_ONLY=1: the load figures only)
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { launch, REPO, openApp, waitFor, openPerfScenario, perfBatchChange, chooseTask, typeField } from './harness.mjs';

const url = process.env.VRAM_E2E_URL;
const dist = path.join(REPO, 'dist');
const q = (xs, p) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)];
};

const browser = await launch();
const tti = [];
for (let i = 0; i < 5; i++) {
  const ctx = await browser.newContext({ serviceWorkers: 'block' });
  const page = await ctx.newPage();
  await openApp(page, url);
  tti.push(await page.evaluate(() => performance.getEntriesByName('vram:mounted')[0].startTime));
  await ctx.close();
}
console.log(`\ntime to interactive (ms, 5 cold loads): ${tti.map((x) => x.toFixed(0)).join(', ')}; median ${q(tti, 50).toFixed(0)}`);

// Which files the first load fetches: the resources the page asked for before the app mounted (the
// split wasm's chunk comes after, at idle or on first use), plus index.html and the service worker
// (registered at `load`). Sizes of the files in dist/, gzip -9 as a static host would send them.
{
  const ctx = await browser.newContext({ serviceWorkers: 'block' });
  const page = await ctx.newPage();
  await openApp(page, url);
  const firstLoad = new Set(['index.html', 'sw.js', ...await page.evaluate(() => {
    const mounted = performance.getEntriesByName('vram:mounted')[0].startTime;
    return performance.getEntriesByType('resource').filter((r) => r.startTime < mounted).map((r) => new URL(r.name).pathname.split('/').pop());
  })]);
  await ctx.close();
  console.log('\n| file | loaded | raw bytes | gzip -9 bytes |\n|---|---|---:|---:|');
  const total = { first: [0, 0], all: [0, 0] };
  for (const f of fs.readdirSync(dist).sort()) {
    const buf = fs.readFileSync(path.join(dist, f));
    const gz = zlib.gzipSync(buf, { level: 9 }).length;
    const first = firstLoad.has(f);
    console.log(`| ${f.replace(/-[0-9a-f]{16}/, '-HASH').replace(/_\d{10,}/, '')} | ${first ? 'first load' : 'on first use'} | ${buf.length} | ${gz} |`);
    for (const k of first ? ['first', 'all'] : ['all']) { total[k][0] += buf.length; total[k][1] += gz; }
  }
  console.log(`| **first load** | | **${total.first[0]}** | **${total.first[1]}** |`);
  console.log(`| **everything** | | **${total.all[0]}** | **${total.all[1]}** |`);
}

// A share link opened cold (no cache, no service worker): navigation start to the verdict on
// screen, which needs the app chunk as well.
{
  const verdict = [];
  for (let i = 0; i < 5; i++) {
    const ctx = await browser.newContext({ serviceWorkers: 'block' });
    const page = await ctx.newPage();
    await page.goto(url + '?p=meta-llama__Llama-3.1-8B&t=serve');
    await waitFor(page, () => !!document.querySelector('[data-testid="verdict"]'), null, 'the verdict');
    verdict.push(await page.evaluate(() => performance.now()));
    await ctx.close();
  }
  console.log(`\nshare link to verdict (ms, 5 cold loads): ${verdict.map((x) => x.toFixed(0)).join(', ')}; median ${q(verdict, 50).toFixed(0)}`);
}
if (process.env.VRAM_PERF_LOADS_ONLY === '1') {
  // Only the load figures above (to compare two bundles back to back).
  await browser.close();
  process.exit(0);
}

// The Train task (three charts: phases, batch and sequence sweeps), solvers done.
const { page } = await openPerfScenario(browser, url);
await page.evaluate(() => { window.__vramCheckShown = true; });
const charts = await page.evaluate(() => document.querySelectorAll('canvas').length);
const shown = [];
const settled = [];
const painted = [];
const phases = [];
const count = (name) => page.evaluate((n) => performance.getEntriesByName(n).length, name);
for (let i = 0; i < 200; i++) {
  const [s0, t0, p0, r0] = [await count('vram:shown'), await count('vram:settled'), await count('vram:painted'), await count('vram:redraw')];
  const bytes0 = await page.evaluate(() => document.querySelector('[data-testid="train-device"]').dataset.bytes);
  await perfBatchChange(page, i);
  await waitFor(page, (n) => performance.getEntriesByName('vram:shown').length > n, s0, 'vram:shown');
  await waitFor(page, (n) => performance.getEntriesByName('vram:settled').length > n, t0, 'vram:settled');
  await waitFor(page, (n) => performance.getEntriesByName('vram:painted').length > n, p0, 'vram:painted');
  const [sh, st, pa, redraws, bytes1] = await page.evaluate(([a, b, p, c]) => [
    performance.getEntriesByName('vram:shown')[a].duration,
    performance.getEntriesByName('vram:settled')[b].duration,
    performance.getEntriesByName('vram:painted')[p].duration,
    performance.getEntriesByName('vram:redraw').slice(c).map((e) => e.duration),
    document.querySelector('[data-testid="train-device"]').dataset.bytes,
  ], [s0, t0, p0, r0]);
  if (bytes1 === bytes0) throw new Error(`change ${i}: the headline did not change`);
  // vram:shown is measured after the last change the input makes to the verdict and the table,
  // vram:settled after the last change to any result and the last chart redrawn
  const [atShown, atSettled, final] = await page.evaluate(() => [
    window.__vramShown,
    window.__vramSettled,
    [`${document.querySelector('[data-testid="verdict"]').textContent}|${document.querySelector('[data-testid$="-breakdown"]').textContent}`,
      `${performance.getEntriesByName('vram:redraw').length}|${document.querySelector('[data-testid="results"]').textContent}`],
  ]);
  if (atShown !== final[0]) throw new Error(`change ${i}: the verdict or table changed after vram:shown`);
  if (atSettled !== final[1]) throw new Error(`change ${i}: a result changed or a chart was redrawn after vram:settled`);
  // The phase chart is redrawn after the frame that shows the verdict, list and table; the sweeps in
  // the follow-up (all before vram:settled)
  if (!(redraws.length >= 1)) throw new Error(`change ${i}: phase chart not redrawn (${redraws})`);
  phases.push(redraws[0]);
  shown.push(sh);
  settled.push(st);
  painted.push(pa);
}
const stats = (xs) => `p50 ${q(xs, 50).toFixed(1)} ms, p95 ${q(xs, 95).toFixed(1)} ms, max ${Math.max(...xs).toFixed(1)} ms`;
console.log(`over ${shown.length} batch changes (${charts} charts on the page):`);
console.log(`  input → training phase chart redrawn (vram:redraw, after the first frame): ${stats(phases)}`);
console.log(`  input → verdict, bars, table shown, after layout (vram:shown): ${stats(shown)}`);
console.log(`  input → solvers, make-it-fit, precision strip, sweeps and all charts done, after layout (vram:settled): ${stats(settled)}`);
console.log(`  input → the frame with all of it painted (vram:painted): ${stats(painted)}`);

// The layout planner in the page (issue "A fast core": ≤ 300 ms): Llama-2-70B, the Train task with
// micro-batches up to 8, 64 GPUs in nodes of 8, "Find layouts" clicked 10 times; `vram:plan`
// measures the core's planner call.
{
  const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
  const p = await ctx.newPage();
  await openApp(p, url);
  await p.selectOption('[data-testid="preset-select"]', 'meta-llama__Llama-2-70b-hf');
  await chooseTask(p, 'train');
  await typeField(p, 'batch', 8);
  for (const [id, v] of [['plan-gpus', 64], ['plan-per-node', 8]]) {
    await p.fill(`[data-testid="${id}"]`, String(v));
    await p.dispatchEvent(`[data-testid="${id}"]`, 'change');
  }
  const plan = [];
  for (let i = 0; i < 10; i++) {
    const n = await p.evaluate(() => performance.getEntriesByName('vram:plan').length);
    await p.click('[data-testid="plan-find"]');
    await waitFor(p, (k) => performance.getEntriesByName('vram:plan').length > k, n, 'vram:plan', 60000);
    plan.push(await p.evaluate((k) => performance.getEntriesByName('vram:plan')[k].duration, n));
  }
  await waitFor(p, () => document.querySelector('[data-testid="plan-results"]'), null, 'plan results');
  const considered = await p.evaluate(() => document.querySelector('[data-testid="plan-results"]').dataset.considered);
  console.log(`planner, Llama-2-70B, Train (micro-batch ≤ 8), 64 GPUs in nodes of 8: ${considered} layouts estimated; vram:plan ${stats(plan)}`);
  await ctx.close();
}
await browser.close();
