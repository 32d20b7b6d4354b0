// Measures the figures of docs/performance.md against the bundle served at VRAM_E2E_URL:
// first-load bytes (raw and gzip) of dist/, time to interactive (navigation start → the app's
// `vram:mounted` mark, median of 5 cold loads), and input-change-to-redraw latency over 200 batch
// changes (the `vram:redraw` measures between the `vram:input` mark and the last chart redrawn).
// Usage: VRAM_E2E_URL=http://127.0.0.1:PORT/ node e2e/perf.mjs
import fs from 'node:fs';
import path from 'node:path';
import zlib from 'node:zlib';
import { launch, REPO, openApp, waitFor } from './harness.mjs';

const url = process.env.VRAM_E2E_URL;
const dist = path.join(REPO, 'dist');
console.log('| file | raw bytes | gzip -9 bytes |\n|---|---:|---:|');
for (const f of fs.readdirSync(dist).sort()) {
  const buf = fs.readFileSync(path.join(dist, f));
  console.log(`| ${f.replace(/-[0-9a-f]{16}/, '-HASH')} | ${buf.length} | ${zlib.gzipSync(buf, { level: 9 }).length} |`);
}

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

const ctx = await browser.newContext({ viewport: { width: 1440, height: 900 } });
const page = await ctx.newPage();
await openApp(page, url);
await page.selectOption('[data-testid="preset-select"]', process.env.VRAM_PERF_PRESET || 'meta-llama__Llama-3.1-8B');
await waitFor(page, () => document.querySelectorAll('canvas').length >= 6, null, 'six charts');
const charts = await page.evaluate(() => document.querySelectorAll('canvas').length);
const durations = [];
for (let i = 0; i < 200; i++) {
  const before = await page.evaluate(() => performance.getEntriesByName('vram:redraw').length);
  await page.evaluate((v) => {
    performance.clearMarks('vram:input');
    const el = document.querySelector('[data-testid="f-batch"]');
    el.value = String(v);
    el.dispatchEvent(new Event('change', { bubbles: true }));
  }, 1 + (i % 4) + (i % 4 === 0 && i % 8 === 0 ? 4 : 0));
  await waitFor(page, ([b, n]) => performance.getEntriesByName('vram:redraw').length >= b + n, [before, charts], 'the redraw');
  const d = await page.evaluate((b) => Math.max(...performance.getEntriesByName('vram:redraw').slice(b).map((e) => e.duration)), before);
  durations.push(d);
}
console.log(`input-change-to-redraw over ${durations.length} changes (${charts} charts): p50 ${q(durations, 50).toFixed(1)} ms, p95 ${q(durations, 95).toFixed(1)} ms, max ${Math.max(...durations).toFixed(1)} ms`);
await browser.close();
