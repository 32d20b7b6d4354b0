// CPU profile of the page's input-to-redraw work, by function (Chrome DevTools Protocol's sampling
// profiler): which wasm functions the 200 micro-batch changes of e2e/perf.mjs spend their time in.
// Needs a bundle whose wasm keeps its name section (wasm-opt strips it): see docs/performance.md,
// "Profiling the page". Usage: VRAM_E2E_URL=http://127.0.0.1:PORT/ node e2e/profile.mjs [changes]
import { launch, waitFor, openPerfScenario, perfBatchChange } from './harness.mjs';

const url = process.env.VRAM_E2E_URL;
const changes = Number(process.argv[2] || 100);
const browser = await launch();
const { ctx, page } = await openPerfScenario(browser, url);
const cdp = await ctx.newCDPSession(page);
await cdp.send('Profiler.enable');
await cdp.send('Profiler.setSamplingInterval', { interval: 100 });
await cdp.send('Profiler.start');
for (let i = 0; i < changes; i++) {
  const s0 = await page.evaluate(() => performance.getEntriesByName('vram:settled').length);
  await perfBatchChange(page, i);
  await waitFor(page, (n) => performance.getEntriesByName('vram:settled').length > n, s0, 'vram:settled');
}
const { profile } = await cdp.send('Profiler.stop');
// self time per node = samples × interval; sum by function name
const dt = new Map();
for (let i = 0; i < profile.samples.length; i++) {
  const d = profile.timeDeltas[i] || 0;
  dt.set(profile.samples[i], (dt.get(profile.samples[i]) || 0) + d);
}
const byName = new Map();
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children || []) parent.set(c, n.id);
const nodes = new Map(profile.nodes.map((n) => [n.id, n]));
const nameOf = (n) => n.callFrame.functionName || `(${n.callFrame.url.split('/').pop() || 'anon'})`;
const inclusive = new Map();
for (const n of profile.nodes) {
  const self = dt.get(n.id) || 0;
  byName.set(nameOf(n), (byName.get(nameOf(n)) || 0) + self);
  // inclusive: add self to every distinct ancestor name
  const seen = new Set();
  for (let id = n.id; id !== undefined; id = parent.get(id)) {
    const nm = nameOf(nodes.get(id));
    if (seen.has(nm)) continue;
    seen.add(nm);
    inclusive.set(nm, (inclusive.get(nm) || 0) + self);
  }
}
const total = [...dt.values()].reduce((a, b) => a + b, 0);
const top = (m, k) => [...m.entries()].sort((a, b) => b[1] - a[1]).slice(0, k);
console.log(`total sampled ${(total / 1000).toFixed(0)} ms over ${changes} changes`);
console.log('\nself time:');
for (const [n, t] of top(byName, 40)) console.log(`${(t / 1000).toFixed(1).padStart(9)} ms  ${n.slice(0, 140)}`);
console.log('\ninclusive time:');
for (const [n, t] of top(inclusive, 60)) console.log(`${(t / 1000).toFixed(1).padStart(9)} ms  ${n.slice(0, 140)}`);
await browser.close();
