// Never silently wrong (model.support): an unknown model_type is shown with the generic-reading
// banner next to its figures; a layout the generic reading cannot count is refused by key and the
// previous model stays; bundled presets carry no banner.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test, assert, assertEq, openApp, dropFile, waitFor, waitForTotal, choosePreset } from '../harness.mjs';
import { cliJson, cliEstimate } from '../cli.mjs';

const LLAMA_LIKE = {
  hidden_size: 2048,
  intermediate_size: 5632,
  num_hidden_layers: 4,
  num_attention_heads: 16,
  num_key_value_heads: 4,
  vocab_size: 32000,
};

function writeConfig(name, config) {
  const file = path.join(os.tmpdir(), `vram-support-${process.pid}-${name}`);
  fs.writeFileSync(file, JSON.stringify(config));
  return file;
}

test('support: an unknown model_type shows the generic-reading banner beside its figures', async ({ page }) => {
  await openApp(page);
  await choosePreset(page, 'Qwen__Qwen2.5-3B');
  await waitFor(page, () => !!document.querySelector('[data-testid="total-params"]'), null, 'the preset');
  assertEq(await page.$$eval('[data-testid="support-banner"]', (e) => e.length), 0, 'no banner for a modelled preset');
  // OLMo 1 (model_type "olmo"): a real model_type vram does not model
  const config = { model_type: 'olmo', ...LLAMA_LIKE };
  const cli = cliJson(['estimate', writeConfig('olmo.json', config), '--json']);
  assertEq(cli.model.support, 'generic', 'the CLI calls it generic');
  await dropFile(page, 'olmo.json', Buffer.from(JSON.stringify(config)));
  await waitForTotal(page, String(cli.parameters.total));
  await waitFor(page, () => document.querySelectorAll('[data-testid="support-banner"]').length === 2, null, 'a banner with the model and one with the results');
  const text = await page.textContent('[data-testid="support-banner"]');
  assert(text.includes('olmo') && text.includes('not verified'), 'banner text: ' + text);
  assertEq(await page.getAttribute('[data-testid="support-banner"]', 'data-support'), 'generic', 'data-support');
});

test('support: a hybrid layout of an unknown type is refused by key and the previous model stays', async ({ page }) => {
  await openApp(page);
  await choosePreset(page, 'Qwen__Qwen2.5-3B');
  const before = cliEstimate('Qwen__Qwen2.5-3B');
  await waitForTotal(page, String(before.parameters.total));
  // granitemoehybrid (IBM Granite 4): a hybrid vram does not model
  const hybrid = { model_type: 'granitemoehybrid', layers_block_type: ['mamba', 'attention'], ...LLAMA_LIKE };
  await dropFile(page, 'granite4.json', Buffer.from(JSON.stringify(hybrid)));
  await waitFor(page, () => document.querySelector('[data-testid="load-error"]')?.textContent.includes('granite4.json'), null, 'the refusal');
  const err = await page.textContent('[data-testid="load-error"]');
  assert(err.includes('layers_block_type'), 'the error names the key: ' + err);
  await waitForTotal(page, String(before.parameters.total));
});
