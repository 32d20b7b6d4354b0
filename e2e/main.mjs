// Runs every browser test against the bundle served at VRAM_E2E_URL (started by run.sh).
import { run } from './harness.mjs';
import fs from 'node:fs';
import path from 'node:path';

const dir = path.join(path.dirname(new URL(import.meta.url).pathname), 'tests');
for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.mjs')).sort()) {
  await import(path.join(dir, f));
}
process.exit((await run()) ? 0 : 1);
