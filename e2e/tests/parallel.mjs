// Issue 10: a parallel training layout on the page (Megatron TP × PP) shows one bar per pipeline
// stage with the bytes `vram estimate --json` gives for each rank, and the largest rank is the
// verdict; the Plan card lists layouts that fit with 5 % headroom on every rank, and applying one
// makes the verdict that layout's largest rank.
import { test, assert, assertEq, openApp, choosePreset, chooseTask, typeField, waitFor, waitVerdictTotal, verdictOf } from '../harness.mjs';
import { cliEstimate, cliJson, presetPath } from '../cli.mjs';

async function rankBytes(page, scope = '[data-testid="ranks"]') {
  return page.evaluate((s) => [...document.querySelectorAll(`${s} [data-testid="rank-row"]`)].map((r) => r.dataset.bytes), scope);
}

test('train: Llama-2-7B with Megatron TP 2 × PP 2 on 8 GPUs shows each stage as vram estimate does, the largest as the verdict', async ({ page }) => {
  await openApp(page);
  await choosePreset(page, 'meta-llama__Llama-2-7b-hf');
  await chooseTask(page, 'train');
  await page.click('[data-testid="layout"] > summary');
  await page.selectOption('[data-testid="f-framework"]', 'megatron');
  await typeField(page, 'tp', 2);
  await typeField(page, 'pp', 2);
  await typeField(page, 'gpus', 8);
  await page.check('[data-testid="f-sequence_parallel"]');
  const cli = cliEstimate('meta-llama__Llama-2-7b-hf', ['--train', '--framework', 'megatron', '--gpus', '8', '--tp', '2', '--pp', '2', '--sequence-parallel']);
  assertEq(cli.train.ranks.length, 2, 'two stages');
  await waitVerdictTotal(page, cli.train.max_rank_device_bytes);
  await waitFor(page, () => document.querySelectorAll('[data-testid="ranks"] [data-testid="rank-row"]').length === 2, null, 'two rank bars');
  assertEq(JSON.stringify(await rankBytes(page)), JSON.stringify(cli.train.ranks.map((r) => String(r.device_bytes))), 'rank bars = vram estimate ranks');
  const launch = await page.textContent('[data-testid="launch-line"]');
  assert(launch.includes('--tensor-model-parallel-size 2') && launch.includes('--pipeline-model-parallel-size 2'), 'Megatron launch line: ' + launch);
});

test('train: Llama-2-7B with torchtitan PP 2 × FSDP2 on 8 GPUs shows each stage as vram estimate does, its fp32 gradient accumulators as gradients', async ({ page }) => {
  await openApp(page);
  await choosePreset(page, 'meta-llama__Llama-2-7b-hf');
  await chooseTask(page, 'train');
  await page.click('[data-testid="layout"] > summary');
  await page.selectOption('[data-testid="f-framework"]', 'torchtitan');
  await typeField(page, 'pp', 2);
  await typeField(page, 'gpus', 8);
  await page.check('[data-testid="f-fsdp2"]');
  const cli = cliEstimate('meta-llama__Llama-2-7b-hf', ['--train', '--framework', 'torchtitan', '--gpus', '8', '--pp', '2', '--fsdp2']);
  assertEq(cli.train.ranks.length, 2, 'two stages');
  await waitVerdictTotal(page, cli.train.max_rank_device_bytes);
  assertEq(JSON.stringify(await page.evaluate(() => [...document.querySelectorAll('[data-testid="verdict-rank"]')].map((r) => r.dataset.bytes))), JSON.stringify(cli.train.ranks.map((r) => String(r.device_bytes))), 'stage bars = vram estimate ranks');
  for (const r of cli.train.ranks) {
    // the stage's unsharded gradients in fp32 (4 B) beside its bf16 parameters kept unsharded (2 B)
    assertEq(r.peak_gradients_bytes, r.communication_bytes * 2, 'fp32 accumulators = twice the bf16 unsharded stage');
    assert(r.peak_gradients_bytes > r.gradients_bytes, 'accumulators above the sharded gradients');
  }
  const legend = await page.evaluate(() => [...document.querySelectorAll('[data-testid="verdict-rank"] .seg')].map((s) => s.title).join(' | '));
  assert(/Communication buffers/.test(legend) && /Gradients/.test(legend), 'stage bar parts: ' + legend);
});

test('train: Llama-3.1-8B with transformers tensor parallel 2 on 2 GPUs shows the rank vram estimate gives, with a DistributedConfig launch', async ({ page }) => {
  await openApp(page);
  await choosePreset(page, 'meta-llama__Llama-3.1-8B');
  await chooseTask(page, 'train');
  await page.click('[data-testid="layout"] > summary');
  await typeField(page, 'tp', 2);
  await typeField(page, 'gpus', 2);
  const cli = cliEstimate('meta-llama__Llama-3.1-8B', ['--train', '--framework', 'hf', '--gpus', '2', '--tp', '2']);
  assertEq(cli.train.ranks.length, 1, 'one rank kind');
  await waitVerdictTotal(page, cli.train.max_rank_device_bytes);
  assertEq(JSON.stringify(await rankBytes(page)), JSON.stringify(cli.train.ranks.map((r) => String(r.device_bytes))), 'rank bar = vram estimate rank');
  const launch = await page.evaluate(() => [...document.querySelectorAll('[data-testid="launch-line"]')].map((e) => e.textContent).join('\n'));
  assert(launch.includes('DistributedConfig(tp_size=2)') && launch.includes('torchrun --nproc-per-node 2 train.py'), 'transformers TP launch lines: ' + launch);
});

test('plan: Llama-2-7B training on up to 8 H100s lists layouts that fit with headroom on every rank; using one shows it as the verdict', async ({ page }) => {
  await openApp(page);
  await choosePreset(page, 'meta-llama__Llama-2-7b-hf');
  await chooseTask(page, 'train');
  await page.click('[data-testid="plan-find"]');
  await waitFor(page, () => document.querySelectorAll('[data-testid="plan-item"]').length > 0, null, 'plans', 60000);
  const usable = Number((await verdictOf(page)).usable);
  const plans = await page.evaluate(() => [...document.querySelectorAll('[data-testid="plan-item"]')].map((p) => [...p.querySelectorAll('[data-testid="rank-row"]')].map((r) => Number(r.dataset.bytes))));
  for (const ranks of plans) for (const b of ranks) assert(b * 100 <= usable * 95, `rank ${b} B within 95 % of ${usable} B`);
  const first = Math.max(...plans[0]);
  await page.click('[data-testid="plan-use"] >> nth=0');
  await waitVerdictTotal(page, first);
  const v = await verdictOf(page);
  assert(v.fits === 'fits' || v.fits === 'tight', 'the applied plan fits: ' + v.fits);
  assert((await page.textContent('[data-testid="plan-launch"]')).length > 20, 'the best plan has launch text');
});

test('plan: Llama-3.1-8B training on one RTX 4090 proposes DeepSpeed offload and shows the host RAM vram plan gives', async ({ page }) => {
  await openApp(page);
  await choosePreset(page, 'meta-llama__Llama-3.1-8B');
  await chooseTask(page, 'train');
  await page.selectOption('[data-testid="f-gpu"]', 'rtx4090');
  await page.fill('[data-testid="plan-gpus"]', '1');
  await page.dispatchEvent('[data-testid="plan-gpus"]', 'change');
  await page.click('[data-testid="plan-find"]');
  await waitFor(page, () => document.querySelectorAll('[data-testid="plan-item"]').length > 0, null, 'plans', 60000);
  const cli = cliJson(['plan', presetPath('meta-llama__Llama-3.1-8B'), '--task', 'train', '--gpu', 'rtx4090', '--gpus', '1', '--json']);
  assert(cli.plans.length > 0 && cli.plans[0].cost.offload, 'the CLI plans offload first on one 24 GB card');
  const host = Math.max(...cli.plans[0].ranks.map((r) => r.host_bytes));
  const shown = await page.getAttribute('[data-testid="plan-item"] >> nth=0 >> [data-testid="plan-host-ram"]', 'data-bytes');
  assertEq(shown, String(host), 'host RAM of the first plan = vram plan --json');
  const node = await page.getAttribute('[data-testid="plan-item"] >> nth=0 >> [data-testid="plan-host-ram"]', 'data-node-bytes');
  assertEq(node, String(host * cli.plans[0].gpus), 'per node: every process of the (one) node');
  await page.click('[data-testid="plan-use"] >> nth=0');
  await waitVerdictTotal(page, cli.plans[0].max_rank_device_bytes);
});
