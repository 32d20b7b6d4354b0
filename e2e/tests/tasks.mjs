// Issue 9: each task performed as a user would (drop or pick a config, choose the task, type and click),
// the answer checked against `vram estimate --json` for the same scenario; make-it-fit suggestions fit
// with 5 % to spare and apply with one click (and undo); offloading shows the host RAM; the verdict is
// on the first screen at 1440×900 and 390×844.
import { ARTIFACTS, test, assert, assertEq, openApp, dropFile, presetBytes, waitFor, waitForTotal, chooseTask, verdictOf, waitVerdictTotal, typeField } from '../harness.mjs';
import { cliEstimate } from '../cli.mjs';

async function suggestions(page) {
  return page.evaluate(() => [...document.querySelectorAll('[data-testid="fit-suggestion"]:not([disabled])')].map((b) => ({
    total: Number(b.dataset.totalBytes), usable: Number(b.dataset.usableBytes), text: b.textContent,
  })));
}

/** Every suggestion leaves 5 % headroom; clicking each one shows its total as the verdict, which then fits; undo restores. */
async function checkSuggestions(page, original) {
  // Stale suggestions (of settings since changed) are shown disabled until the new ones arrive.
  await waitFor(page, () => document.querySelectorAll('[data-testid="fit-suggestion"]:not([disabled])').length > 0, null, 'make-it-fit suggestions');
  const list = await suggestions(page);
  for (const s of list) assert(s.total * 100 <= s.usable * 95, `${s.text}: ${s.total} ≤ 95 % of ${s.usable}`);
  for (let i = 0; i < list.length; i += 1) {
    await page.click(`[data-testid="fit-suggestion"] >> nth=${i}`);
    await waitVerdictTotal(page, list[i].total);
    const v = await verdictOf(page);
    assertEq(v.usable, String(list[i].usable), `${list[i].text}: usable after applying`);
    assert(v.fits === 'fits' || v.fits === 'tight', `${list[i].text}: fits after applying (${v.fits})`);
    await page.click('[data-testid="fit-undo"]');
    await waitVerdictTotal(page, original);
    await waitFor(page, () => document.querySelectorAll('[data-testid="fit-suggestion"]:not([disabled])').length > 0, null, 'suggestions again');
  }
  return list;
}

test('fine-tune: Llama-2-70B QLoRA on one RTX 4090 does not fit, says so, and each suggested change fits when applied', async ({ page }) => {
  await openApp(page);
  await page.selectOption('[data-testid="preset-select"]', 'meta-llama__Llama-2-70b-hf');
  await chooseTask(page, 'finetune');
  await page.selectOption('[data-testid="f-method"]', 'qlora');
  await page.selectOption('[data-testid="f-gpu"]', 'rtx4090');
  const cli = cliEstimate('meta-llama__Llama-2-70b-hf', ['--train', '--dtype', 'bf16', '--mixed-precision', 'bf16', '--lora-r', '16', '--lora-targets', 'all-linear', '--grad-checkpointing', '--lora-base', 'nf4']);
  await waitVerdictTotal(page, cli.train.device_bytes);
  const v = await verdictOf(page);
  assertEq(v.fits, 'no', '35 GB of NF4 weights do not fit 23.58 GiB');
  assertEq(await page.getAttribute('[data-testid="f-grad_checkpointing"]', 'checked') !== null || await page.isChecked('[data-testid="f-grad_checkpointing"]'), true, 'QLoRA turned checkpointing on');
  const list = await checkSuggestions(page, cli.train.device_bytes);
  assert(list.some((s) => /GPU/.test(s.text)), 'more or larger GPUs offered: ' + list.map((s) => s.text).join(' | '));
});

test('serve: Qwen3-32B with vLLM on 2×H100 at 8k context answers with the concurrency of vram estimate, bf16 vs fp8', async ({ page }) => {
  await openApp(page);
  await dropFile(page, 'config.json', presetBytes('Qwen__Qwen3-32B'));
  const base = ['--infer', '--engine', 'vllm', '--tp', '2', '--seq', '8192', '--max-model-len', '8192'];
  const bf16 = cliEstimate('Qwen__Qwen3-32B', base);
  await waitForTotal(page, String(bf16.parameters.total));
  await typeField(page, 'gpus', 2);
  await typeField(page, 'context', 8192);
  await waitVerdictTotal(page, bf16.infer.device_bytes);
  const seqs = (c) => String(Math.floor(c.infer.serving.concurrency_at_context));
  await waitFor(page, (n) => document.querySelector('[data-testid="serve-concurrency"]')?.dataset.sequences === n, seqs(bf16), 'bf16 concurrency');
  assert((await page.textContent('[data-testid="serve-concurrency"]')).includes('8k'), 'at the user\'s 8k context');
  assertEq((await verdictOf(page)).fits, 'fits', 'fits');
  // the precision strip: click fp8, then fp8 + fp8 KV
  const fp8 = cliEstimate('Qwen__Qwen3-32B', [...base, '--weights', 'fp8']);
  await page.click('[data-testid="precision-row"][data-label="fp8"] button');
  await waitFor(page, (n) => document.querySelector('[data-testid="serve-concurrency"]')?.dataset.sequences === n, seqs(fp8), 'fp8 concurrency');
  const both = cliEstimate('Qwen__Qwen3-32B', [...base, '--weights', 'fp8', '--kv-dtype', 'fp8']);
  await page.click('[data-testid="precision-row"][data-label="fp8 + fp8 KV"] button');
  await waitFor(page, (n) => document.querySelector('[data-testid="serve-concurrency"]')?.dataset.sequences === n, seqs(both), 'fp8 + fp8 KV concurrency');
  assert(Number(seqs(both)) > Number(seqs(fp8)) && Number(seqs(fp8)) > Number(seqs(bf16)), `more requests with smaller formats: ${seqs(bf16)} < ${seqs(fp8)} < ${seqs(both)}`);
  // a load above the concurrency is queued, not refused
  await typeField(page, 'infer_batch', Number(seqs(both)) + 5);
  await waitFor(page, () => document.querySelector('[data-testid="verdict"]')?.dataset.fits === 'tight', null, 'queued load is tight, not "does not fit"');
});

test('serve: Qwen3-32B with transformers on an A100 40GB does not fit; suggestions fit and apply', async ({ page }) => {
  await openApp(page);
  await page.selectOption('[data-testid="preset-select"]', 'Qwen__Qwen3-32B');
  await page.selectOption('[data-testid="f-engine"]', 'transformers');
  await page.selectOption('[data-testid="f-gpu"]', 'a100-40');
  const cli = cliEstimate('Qwen__Qwen3-32B', ['--infer']);
  await waitVerdictTotal(page, cli.infer.device_bytes);
  assertEq((await verdictOf(page)).fits, 'no', '65 GB of bf16 weights on a 40 GB card');
  const list = await checkSuggestions(page, cli.infer.device_bytes);
  const nf4 = cliEstimate('Qwen__Qwen3-32B', ['--infer', '--weights', 'nf4']);
  assert(list.some((s) => s.total === nf4.infer.device_bytes), 'the nf4 suggestion equals vram estimate --weights nf4');
});

test('train: Llama-2-7B with ZeRO-3 on 8 GPUs and the optimizer offloaded shows the host RAM of vram estimate', async ({ page }) => {
  await openApp(page);
  await page.selectOption('[data-testid="preset-select"]', 'meta-llama__Llama-2-7b-hf');
  await chooseTask(page, 'train');
  await typeField(page, 'gpus', 8);
  await page.click('[data-testid="advanced"] summary');
  await page.selectOption('[data-testid="f-zero"]', '3');
  await page.check('[data-testid="f-offload_optimizer"]');
  const cli = cliEstimate('meta-llama__Llama-2-7b-hf', ['--train', '--gpus', '8', '--zero', '3', '--offload-optimizer']);
  await waitVerdictTotal(page, cli.train.device_bytes);
  assert(cli.train.cpu_offload_bytes > 0, 'the CLI offloads');
  await waitFor(page, (b) => document.querySelector('[data-testid="host-ram"]')?.dataset.bytes === b, String(cli.train.cpu_offload_bytes * 8), 'host RAM of 8 processes');
  assertEq(await page.evaluate(() => document.querySelectorAll('.gpu-bar-row').length), 8, 'one bar per GPU');
});

test('train: autocast weight copies of Llama-3.1-8B are their own breakdown row, with the figures of vram estimate', async ({ page }) => {
  await openApp(page);
  await page.selectOption('[data-testid="preset-select"]', 'meta-llama__Llama-3.1-8B');
  await chooseTask(page, 'train');
  const cli = cliEstimate('meta-llama__Llama-3.1-8B', ['--train']);
  await waitVerdictTotal(page, cli.train.device_bytes);
  const cellsOf = (key) => page.evaluate((k) => [...document.querySelectorAll(`[data-testid="train-row-${k}"] td`)].map((td) => Number(td.dataset.bytes)), key);
  const component = (phase, key) => Object.fromEntries(cli.train.phases.find((p) => p.name === phase).components)[key] ?? 0;
  const names = cli.train.phases.map((p) => p.name);
  const copies = await cellsOf('autocast_weight_copies');
  const acts = await cellsOf('activations');
  assertEq(copies.length, names.length, 'one cell per phase');
  names.forEach((n, i) => {
    assertEq(copies[i], component(n, 'autocast_weight_copies'), `${n}: autocast weight copies`);
    assertEq(acts[i], component(n, 'activations'), `${n}: activations without the copies`);
  });
  // 7,504,658,432 matmul weights × 2 B live at the forward peak (docs/formulas/training.md)
  assertEq(copies[names.indexOf('forward')], 15009316864, 'forward: every bf16 weight copy');
  const label = await page.textContent('[data-testid="train-row-autocast_weight_copies"] th');
  assert(/Autocast weight copies/.test(label), 'row label: ' + label);
});

test('train: ZeRO-3 on 8 GPUs shows the parameters DeepSpeed keeps gathered as their own row, as vram estimate does', async ({ page }) => {
  await openApp(page);
  await page.selectOption('[data-testid="preset-select"]', 'meta-llama__Llama-3.1-8B');
  await chooseTask(page, 'train');
  await typeField(page, 'gpus', 8);
  await page.click('[data-testid="advanced"] summary');
  await page.selectOption('[data-testid="f-zero"]', '3');
  const cli = cliEstimate('meta-llama__Llama-3.1-8B', ['--train', '--gpus', '8', '--zero', '3']);
  await waitVerdictTotal(page, cli.train.device_bytes);
  const cells = await page.evaluate(() => [...document.querySelectorAll('[data-testid="train-row-zero3_gathered_params"] td')].map((td) => Number(td.dataset.bytes)));
  const names = cli.train.phases.map((p) => p.name);
  assertEq(cells.length, names.length, 'one cell per phase');
  names.forEach((n, i) => {
    const c = Object.fromEntries(cli.train.phases[i].components).zero3_gathered_params ?? 0;
    assertEq(cells[i], c, `${n}: gathered parameters`);
  });
  // from the second step on DeepSpeed's prefetcher holds stage3_max_live_parameters = 1e9
  // elements (docs/formulas/training.md §ZeRO); the optimizer step none
  assert(cells[names.indexOf('forward_2')] >= 2000000000, 'forward_2: the live limit gathered');
  assertEq(cells[names.indexOf('optimizer_2')], 0, 'optimizer_2: nothing gathered');
  const label = await page.textContent('[data-testid="train-row-zero3_gathered_params"] th');
  assert(/ZeRO-3 gathered parameters/.test(label), 'row label: ' + label);
  await page.screenshot({ path: `${ARTIFACTS}/train-zero3-gathered.png`, fullPage: true });
});

for (const [width, height] of [[1440, 900], [390, 844]]) {
  test(`the verdict is on the first screen at ${width}×${height} for every task`, async ({ browser }) => {
    const context = await browser.newContext({ viewport: { width, height } });
    const page = await context.newPage();
    try {
      await openApp(page);
      await page.selectOption('[data-testid="preset-select"]', 'meta-llama__Llama-3.1-8B');
      for (const task of ['serve', 'finetune', 'train']) {
        await chooseTask(page, task);
        await waitFor(page, () => !!document.querySelector('[data-testid="verdict"]'), null, 'verdict');
        await page.evaluate(() => window.scrollTo(0, 0));
        const box = await page.evaluate(() => {
          const r = document.querySelector('[data-testid="verdict"]').getBoundingClientRect();
          return { top: r.top, bottom: r.bottom, left: r.left, right: r.right };
        });
        assert(box.top >= 0 && box.bottom <= height && box.left >= 0 && box.right <= width, `${task}: verdict inside the first viewport ${JSON.stringify(box)}`);
        assertEq(await page.getAttribute('[data-testid="verdict"]', 'aria-live'), 'polite', 'announced to screen readers');
      }
    } finally {
      await context.close();
    }
  });
}

test('task tabs work from the keyboard alone', async ({ page }) => {
  await openApp(page);
  await page.selectOption('[data-testid="preset-select"]', 'Qwen__Qwen3-0.6B');
  await page.focus('[data-testid="task-serve"]');
  await page.keyboard.press('ArrowRight');
  await waitFor(page, () => document.querySelector('[data-testid="task-finetune"]').getAttribute('aria-selected') === 'true', null, 'finetune by arrow');
  assertEq(await page.evaluate(() => document.activeElement?.dataset.testid), 'task-finetune', 'focus follows');
  await page.keyboard.press('ArrowLeft');
  await waitFor(page, () => document.querySelector('[data-testid="task-serve"]').getAttribute('aria-selected') === 'true', null, 'serve by arrow');
});

test('launch lines and a short share link that opens on the verdict', async ({ page, context }) => {
  await openApp(page);
  await page.selectOption('[data-testid="preset-select"]', 'Qwen__Qwen3-32B');
  await typeField(page, 'gpus', 2);
  await typeField(page, 'context', 8192);
  await page.selectOption('[data-testid="f-kv_dtype"]', 'fp8');
  await waitFor(page, () => (document.querySelector('[data-testid="launch-line"]')?.textContent || '').includes('--kv-cache-dtype fp8'), null, 'the vllm serve line');
  const line = await page.textContent('[data-testid="launch-line"]');
  for (const part of ['vllm serve Qwen/Qwen3-32B', '--tensor-parallel-size 2', '--max-model-len 8192', '--kv-cache-dtype fp8']) {
    assert(line.includes(part), `launch line has ${part}: ${line}`);
  }
  assert(!line.includes('--gpu-memory-utilization'), `the current release's default utilization is left to vLLM: ${line}`);
  // the address bar's link is rewritten once the inputs rest for 250 ms (src/app.rs URL_DELAY)
  await page.waitForTimeout(700);
  const url = page.url();
  const query = url.slice(url.indexOf('?'));
  assert(query.length < 200, `short link (${query.length} chars): ${query}`);
  assert(url.endsWith('#verdict'), 'opens on the verdict: ' + url);
  const other = await context.newPage();
  await openApp(other, url);
  const seqs = await page.getAttribute('[data-testid="serve-concurrency"]', 'data-sequences');
  await waitFor(other, (n) => document.querySelector('[data-testid="serve-concurrency"]')?.dataset.sequences === n, seqs, 'the same answer from the link');
  await waitFor(other, () => window.scrollY > 0 && Math.abs(document.getElementById('verdict').getBoundingClientRect().top) < 30, null, 'the link opens scrolled to the verdict');
  // fine-tune: peft + bitsandbytes arguments for QLoRA
  await chooseTask(page, 'finetune');
  await page.selectOption('[data-testid="f-method"]', 'qlora');
  await waitFor(page, () => [...document.querySelectorAll('[data-testid="launch-line"]')].some((e) => e.textContent.includes('bnb_4bit_quant_type="nf4"')), null, 'the QLoRA snippet');
});

test('serve: Qwen3-32B with transformers on 2 × A100 40GB spreads the layers as device_map="auto" does; one bar per GPU with the bytes of vram estimate', async ({ page }) => {
  await openApp(page);
  await page.selectOption('[data-testid="preset-select"]', 'Qwen__Qwen3-32B');
  await page.selectOption('[data-testid="f-engine"]', 'transformers');
  await page.selectOption('[data-testid="f-gpu"]', 'a100-40');
  // one card does not fit; "spread the layers over 2 × this GPU" is offered and fits
  const one = cliEstimate('Qwen__Qwen3-32B', ['--infer']);
  await waitVerdictTotal(page, one.infer.device_bytes);
  const list = await checkSuggestions(page, one.infer.device_bytes);
  // accelerate balances the layers by each GPU's memory: the A100 40GB's 39.59 GiB (the catalog's)
  const two = cliEstimate('Qwen__Qwen3-32B', ['--infer', '--gpus', '2', '--gpu-mem-gib', '39.59']);
  assertEq(two.infer.devices.length, 2, 'the CLI maps the model onto 2 GPUs');
  const largest = Math.max(...two.infer.devices.map((d) => d.device_bytes));
  assert(list.some((s) => s.total === largest), `a suggestion equals vram estimate --gpus 2 (${largest} B): ${JSON.stringify(list)}`);
  // typing the GPU count as a person does
  await typeField(page, 'gpus', 2);
  await waitVerdictTotal(page, largest);
  await waitFor(page, () => document.querySelectorAll('[data-testid="verdict-rank"]').length === 2, null, 'two GPU bars');
  const bars = await page.evaluate(() => [...document.querySelectorAll('[data-testid="verdict-rank"]')].map((r) => [r.dataset.bytes, r.querySelector('.gpu-bar-label').textContent]));
  assertEq(JSON.stringify(bars.map((b) => b[0])), JSON.stringify(two.infer.devices.map((d) => String(d.device_bytes))), 'GPU bars = vram estimate devices');
  const last = two.infer.devices[1];
  assertEq(bars[0][1], `GPU 0 · layers 0–${two.infer.devices[0].layers - 1} + embedding`, 'GPU 0 label');
  assertEq(bars[1][1], `GPU 1 · layers ${last.first_layer}–${last.first_layer + last.layers - 1} + head`, 'GPU 1 label');
  assert((await page.textContent('[data-testid="launch-line"]')).includes('device_map="auto"'), 'the launch line loads with device_map="auto"');
});

test('serve: choosing the vLLM release, utilization and --enforce-eager gives the capacity of vram estimate --vllm-version and a matching launch line', async ({ page }) => {
  await openApp(page);
  await page.selectOption('[data-testid="preset-select"]', 'meta-llama__Llama-3.1-8B');
  const base = ['--infer', '--engine', 'vllm', '--max-model-len', '4096', '--gpu', 'h100-80'];
  const seqs = (c) => String(Math.floor(c.infer.serving.concurrency_at_context));
  const current = cliEstimate('meta-llama__Llama-3.1-8B', base);
  await waitVerdictTotal(page, current.infer.device_bytes);
  assertEq(current.infer.serving.inputs.vllm_version, '0.34.0', 'the current release by default');
  await page.click('[data-testid="advanced"] summary');
  await page.selectOption('[data-testid="f-vllm_version"]', '0.19');
  const v019 = cliEstimate('meta-llama__Llama-3.1-8B', [...base, '--vllm-version', '0.19']);
  await waitVerdictTotal(page, v019.infer.device_bytes);
  await waitFor(page, (n) => document.querySelector('[data-testid="serve-concurrency"]')?.dataset.sequences === n, seqs(v019), '0.19 concurrency');
  assert(seqs(v019) !== seqs(current), `the release changes the capacity: ${seqs(current)} vs ${seqs(v019)}`);
  await page.selectOption('[data-testid="f-gpu_util"]', '0.9');
  await page.selectOption('[data-testid="f-cuda_graphs"]', 'eager');
  const eager = cliEstimate('meta-llama__Llama-3.1-8B', [...base, '--vllm-version', '0.19', '--gpu-util', '0.9', '--enforce-eager']);
  await waitVerdictTotal(page, eager.infer.device_bytes);
  assert(eager.infer.serving.cuda_graph_bytes === 0 && v019.infer.serving.cuda_graph_bytes > 0, 'no CUDA graphs with --enforce-eager');
  const line = await page.textContent('[data-testid="launch-line"]');
  for (const part of ['--gpu-memory-utilization 0.9', '--enforce-eager']) {
    assert(line.includes(part), `launch line has ${part}: ${line}`);
  }
});

test('train: a state-space model (falcon-mamba-7b) trains under bf16 autocast with the estimate of vram estimate; each suggested change fits when applied', async ({ page }) => {
  await openApp(page);
  await page.selectOption('[data-testid="preset-select"]', 'tiiuae__falcon-mamba-7b');
  await chooseTask(page, 'train');
  const cli = cliEstimate('tiiuae__falcon-mamba-7b', ['--train']);
  assert(cli.train.activations_bytes > 0, 'the CLI estimates the activations');
  await waitVerdictTotal(page, cli.train.device_bytes);
  assertEq((await verdictOf(page)).fits, 'no', 'the default (2,048 tokens) does not fit one H100');
  const list = await checkSuggestions(page, cli.train.device_bytes);
  assert(list.length > 0, 'at least one change fits');
});

test('train: an encoder–decoder (t5-small) trains with the estimate of vram estimate, both stacks in the layer count; a QLoRA base is refused naming the field', async ({ page }) => {
  await openApp(page);
  await page.selectOption('[data-testid="preset-select"]', 'google-t5__t5-small');
  await chooseTask(page, 'train');
  const cli = cliEstimate('google-t5__t5-small', ['--train']);
  const layers = cli.train.terms.find((t) => t.key === 'activations_layers');
  assert(layers.formula.startsWith('6 encoder + 6 decoder layers'), `both stacks walked: ${layers.formula}`);
  await waitVerdictTotal(page, cli.train.device_bytes);
  assertEq((await verdictOf(page)).fits, 'fits', 't5-small trains on one H100');
  const line = await page.textContent('[data-testid="launch-line"]');
  assert(line.includes('AutoModelForSeq2SeqLM') && line.includes('Seq2SeqTrainingArguments'), `a seq2seq launch line: ${line}`);
  await chooseTask(page, 'finetune');
  await page.selectOption('[data-testid="f-method"]', 'qlora');
  await waitFor(page, () => [...document.querySelectorAll('.field-error')].some((e) => /lora\.base_quant/.test(e.textContent)), null, 'the QLoRA refusal names lora.base_quant');
});
