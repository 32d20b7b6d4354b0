// Issue 6 item 1: dropping a `vram measure` report loads its config (with its --set overrides) and
// scenario, and shows measured beside estimated per phase and component.
import fs from 'node:fs';
import path from 'node:path';
import { test, assert, assertEq, openApp, dropFile, waitFor, waitForTotal, REPO } from '../harness.mjs';

test('a vram measure report shows measured beside estimated', async ({ page }) => {
  const file = path.join(REPO, 'docs/measurements/smollm2-4l-train-mixed-adamw-b2-s128.json');
  const report = JSON.parse(fs.readFileSync(file, 'utf8'));
  await openApp(page);
  await dropFile(page, path.basename(file), fs.readFileSync(file));
  // The 4-layer SmolLM2 of the report (num_hidden_layers override): its exact count.
  await waitForTotal(page, String(report.measured.total_params));
  await waitFor(page, () => !!document.querySelector('[data-testid="measured-table"]'), null, 'the measured table');
  assertEq(await page.inputValue('[data-testid="f-batch"]'), String(report.scenario.batch), 'scenario batch');
  assertEq(await page.inputValue('[data-testid="f-seq_len"]'), String(report.scenario.seq_len), 'scenario seq');
  const rows = await page.$$eval('[data-testid="measured-table"] tbody tr', (trs) =>
    trs.map((tr) => [tr.querySelector('th').textContent, ...[...tr.querySelectorAll('td[data-bytes]')].map((td) => Number(td.dataset.bytes))]),
  );
  for (const p of report.measured.phases) {
    const row = rows.find((r) => r[0] === `${p.name} (peak)`);
    assert(row, `row for ${p.name}`);
    assertEq(row[1], p.peak_allocated_bytes, `${p.name} measured peak`);
    const rel = Math.abs(row[2] - row[1]) / row[1];
    assert(rel < 0.02, `${p.name}: estimated ${row[2]} within 2 % of measured ${row[1]} (${(rel * 100).toFixed(2)} %)`);
  }
  const weights = rows.find((r) => r[0] === 'Weights');
  assertEq(weights[1], report.measured.weights_bytes, 'measured weights');
});

test('a report for a config that is not bundled asks for the config first', async ({ page }) => {
  const file = path.join(REPO, 'docs/measurements/smollm2-4l-train-mixed-adamw-b2-s128.json');
  const report = JSON.parse(fs.readFileSync(file, 'utf8'));
  report.config.name = 'someone/private-model';
  report.config.path = '/x/private.json';
  await openApp(page);
  await dropFile(page, 'r.json', Buffer.from(JSON.stringify(report)));
  await waitFor(page, () => !!document.querySelector('[data-testid="load-error"]'), null, 'the error');
  assert((await page.textContent('[data-testid="load-error"]')).includes('"someone/private-model"'), 'names the config');
});
