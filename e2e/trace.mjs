// Where the time of one input goes: records a Chrome trace over N micro-batch changes of the perf
// scenario (Train, Llama-3.1-8B, H100) and splits each `vram:input` → `vram:settled` window of the
// main thread into the browser's own steps (style, layout, paint, …), the page's script (tasks,
// animation frames, microtasks) and the time the thread is idle (waiting for the next frame).
// Usage: VRAM_E2E_URL=http://127.0.0.1:PORT/ node e2e/trace.mjs [changes]   (VRAM_TRACE_OUT=FILE keeps
// the trace's events as JSON, to look at one window in detail)
import fs from 'node:fs';
import { launch, waitFor, openPerfScenario, perfBatchChange } from './harness.mjs';

const url = process.env.VRAM_E2E_URL;
const changes = Number(process.argv[2] || 60);
const browser = await launch();
const { ctx, page } = await openPerfScenario(browser, url);
const cdp = await ctx.newCDPSession(page);
const events = [];
cdp.on('Tracing.dataCollected', (m) => events.push(...m.value));
const done = new Promise((r) => cdp.once('Tracing.tracingComplete', r));
await cdp.send('Tracing.start', {
  categories: 'devtools.timeline,blink.user_timing,disabled-by-default-devtools.timeline,toplevel',
  transferMode: 'ReportEvents',
});
for (let i = 0; i < changes; i++) {
  const s0 = await page.evaluate(() => performance.getEntriesByName('vram:settled').length);
  await perfBatchChange(page, i);
  await waitFor(page, (n) => performance.getEntriesByName('vram:settled').length > n, s0, 'vram:settled');
  await page.waitForTimeout(60);
}
await cdp.send('Tracing.end');
await done;
await browser.close();
if (process.env.VRAM_TRACE_OUT) fs.writeFileSync(process.env.VRAM_TRACE_OUT, JSON.stringify(events));

// The renderer's main thread: the one with the user-timing marks.
const input = events.filter((e) => e.name === 'vram:input' && (e.ph === 'R' || e.ph === 'I' || e.ph === 'n' || e.ph === 'b'));
const tid = input[0]?.tid;
const pid = input[0]?.pid;
const settledEnds = events.filter((e) => e.name === 'vram:settled' && (e.ph === 'e' || e.ph === 'E')).map((e) => e.ts);
const shownEnds = events.filter((e) => e.name === 'vram:shown' && (e.ph === 'e' || e.ph === 'E')).map((e) => e.ts);
const main = events.filter((e) => e.pid === pid && e.tid === tid && e.ph === 'X' && e.dur !== undefined);
const windows = [];
for (const m of input) {
  const start = m.ts;
  const end = settledEnds.find((t) => t > start);
  const shown = shownEnds.find((t) => t > start);
  if (!end) continue;
  const w = { total: (end - start) / 1000, shown: (shown - start) / 1000, by: {} };
  for (const e of main) {
    if (e.ts + e.dur <= start || e.ts >= end) continue;
    const d = (Math.min(e.ts + e.dur, end) - Math.max(e.ts, start)) / 1000;
    w.by[e.name] = (w.by[e.name] || 0) + d;
  }
  // busy time: union of top-level RunTask slices
  const tops = main.filter((e) => (e.name === 'RunTask' || e.name === 'ThreadControllerImpl::RunTask') && e.ts < end && e.ts + e.dur > start)
    .map((e) => [Math.max(e.ts, start), Math.min(e.ts + e.dur, end)]).sort((a, b) => a[0] - b[0]);
  let busy = 0, cur = null;
  for (const [a, b] of tops) {
    if (!cur || a > cur[1]) { if (cur) busy += cur[1] - cur[0]; cur = [a, b]; } else cur[1] = Math.max(cur[1], b);
  }
  if (cur) busy += cur[1] - cur[0];
  w.busy = busy / 1000;
  windows.push(w);
}
const q = (xs, p) => { const s = [...xs].sort((a, b) => a - b); return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]; };
const names = new Set(windows.flatMap((w) => Object.keys(w.by)));
console.log(`${windows.length} windows input → settled; median / p95 ms`);
console.log(`  total ${q(windows.map((w) => w.total), 50).toFixed(1)} / ${q(windows.map((w) => w.total), 95).toFixed(1)}`);
console.log(`  shown ${q(windows.map((w) => w.shown), 50).toFixed(1)} / ${q(windows.map((w) => w.shown), 95).toFixed(1)}`);
console.log(`  busy  ${q(windows.map((w) => w.busy), 50).toFixed(1)} / ${q(windows.map((w) => w.busy), 95).toFixed(1)}`);
console.log(`  idle  ${q(windows.map((w) => w.total - w.busy), 50).toFixed(1)} / ${q(windows.map((w) => w.total - w.busy), 95).toFixed(1)}`);
const rows = [...names].map((n) => [n, windows.map((w) => w.by[n] || 0)]).map(([n, xs]) => [n, xs.reduce((a, b) => a + b, 0) / xs.length, q(xs, 95)]);
rows.sort((a, b) => b[1] - a[1]);
for (const [n, mean, p95] of rows.slice(0, 30)) console.log(`  ${n.padEnd(40)} mean ${mean.toFixed(2)}  p95 ${p95.toFixed(2)}`);
