// Takes the page screenshots of docs/screenshots/ (1440 and 390 px wide, light and dark) against the
// bundle served at VRAM_E2E_URL. Usage: VRAM_E2E_URL=http://127.0.0.1:PORT/ node e2e/screenshots.mjs [OUT_DIR]
import { launch, openApp, waitForTotal, dropFile, presetBytes } from './harness.mjs';
import fs from 'node:fs';
import path from 'node:path';

const out = process.argv[2] || path.join(path.dirname(new URL(import.meta.url).pathname), '..', 'docs', 'screenshots');
fs.mkdirSync(out, { recursive: true });
const browser = await launch();
const shots = [];
for (const width of [1440, 390]) {
  for (const scheme of ['light', 'dark']) {
    for (const view of (process.env.VRAM_SHOT_VIEWS || 'model').split(',')) {
      const context = await browser.newContext({ viewport: { width, height: 900 }, colorScheme: scheme, deviceScaleFactor: 1 });
      const page = await context.newPage();
      await openApp(page, process.env.VRAM_E2E_URL + (process.env['VRAM_SHOT_QUERY_' + view] || ''));
      if (view === 'local') {
        // The llama.cpp view: Llama-3.1-8B on an RTX 4090, 8192 tokens of context.
        await page.selectOption('[data-testid="preset-select"]', 'meta-llama__Llama-3.1-8B');
        await page.selectOption('[data-testid="f-mode"]', 'infer');
        await page.selectOption('[data-testid="f-gpu"]', 'rtx4090');
        await page.selectOption('[data-testid="f-engine"]', 'llama.cpp');
        await page.fill('[data-testid="f-llama_ctx"]', '8192');
        await page.dispatchEvent('[data-testid="f-llama_ctx"]', 'change');
        await page.waitForFunction(() => document.querySelectorAll('[data-testid="fit-row"]').length > 0);
      }
      if (view === 'model' || view === 'empty') {
        if (view === 'model') {
          await dropFile(page, 'meta-llama__Llama-3.1-8B.json', presetBytes('meta-llama__Llama-3.1-8B'));
          await waitForTotal(page, '8030261248');
        }
      }
      await page.waitForTimeout(300);
      const file = path.join(out, `${view === 'local' ? 'local' : 'page'}-${width}-${scheme}.png`);
      await page.screenshot({ path: file, fullPage: true });
      shots.push(file);
      await context.close();
    }
  }
}
await browser.close();
console.log(shots.join('\n'));
