// Takes the page screenshots of docs/screenshots/: each task (Serve, Fine-tune, Train) and the llama.cpp
// view, at 1440×900 and 390×844, light and dark, as the first screen a user sees after loading a model
// (the verdict must be in it). Usage: VRAM_E2E_URL=http://127.0.0.1:PORT/ node e2e/screenshots.mjs [OUT_DIR]
import { launch, openApp, waitFor, chooseTask } from './harness.mjs';
import fs from 'node:fs';
import path from 'node:path';

const out = process.argv[2] || path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'docs', 'screenshots');
fs.mkdirSync(out, { recursive: true });
const browser = await launch();
const shots = [];
// Each view: the preset, the task, and what the user sets (the example tasks).
const VIEWS = {
  serve: { preset: 'Qwen__Qwen3-32B', task: 'serve', set: { gpus: 2, context: 8192 } },
  finetune: { preset: 'meta-llama__Llama-2-70b-hf', task: 'finetune', method: 'qlora', gpu: 'rtx4090' },
  train: { preset: 'meta-llama__Llama-3.1-8B', task: 'train' },
  local: { preset: 'meta-llama__Llama-3.1-8B', task: 'serve', gpu: 'rtx4090', engine: 'llama.cpp', set: { llama_ctx: 8192 } },
  // Issue 10: a Megatron layout (one bar per pipeline stage) and the Plan card's answer.
  parallel: { preset: 'meta-llama__Llama-2-7b-hf', task: 'train', framework: 'megatron', set: { tp: 2, pp: 4, gpus: 16, seq_len: 4096, global_batch: 64 }, checks: ['sequence_parallel', 'distributed_optimizer'], plan: true },
  // transformers' device_map="auto" over 2 GPUs: one bar per GPU with its layers.
  devicemap: { preset: 'Qwen__Qwen3-32B', task: 'serve', engine: 'transformers', gpu: 'a100-40', set: { gpus: 2 } },
};
const only = process.env.VRAM_SHOT_VIEWS ? process.env.VRAM_SHOT_VIEWS.split(',') : Object.keys(VIEWS);
for (const [width, height] of [[1440, 900], [390, 844]]) {
  for (const scheme of ['light', 'dark']) {
    for (const name of only) {
      const v = VIEWS[name];
      const context = await browser.newContext({ viewport: { width, height }, colorScheme: scheme, deviceScaleFactor: 1 });
      const page = await context.newPage();
      await openApp(page);
      await page.selectOption('[data-testid="preset-select"]', v.preset);
      await chooseTask(page, v.task);
      if (v.method) await page.selectOption('[data-testid="f-method"]', v.method);
      if (v.gpu) await page.selectOption('[data-testid="f-gpu"]', v.gpu);
      if (v.engine) await page.selectOption('[data-testid="f-engine"]', v.engine);
      if (v.framework) {
        await page.click('[data-testid="layout"] > summary');
        await page.selectOption('[data-testid="f-framework"]', v.framework);
      }
      for (const [k, val] of Object.entries(v.set || {})) {
        await page.fill(`[data-testid="f-${k}"]`, String(val));
        await page.dispatchEvent(`[data-testid="f-${k}"]`, 'change');
      }
      for (const c of v.checks || []) await page.check(`[data-testid="f-${c}"]`);
      if (v.plan) {
        await page.click('[data-testid="plan-find"]');
        await waitFor(page, () => document.querySelectorAll('[data-testid="plan-item"]').length > 0, null, 'plans', 60000);
      }
      await waitFor(page, () => !!document.querySelector('[data-testid="verdict"]'), null, 'the verdict');
      await page.waitForTimeout(600);
      await page.evaluate(() => window.scrollTo(0, 0));
      const file = path.join(out, `${name}-${width}-${scheme}.png`);
      await page.screenshot({ path: file });
      shots.push(file);
      if (width === 1440 && scheme === 'light') {
        const full = path.join(out, `${name}-${width}-${scheme}-full.png`);
        await page.screenshot({ path: full, fullPage: true });
        shots.push(full);
      }
      await context.close();
    }
  }
}
await browser.close();
console.log(shots.join('\n'));
