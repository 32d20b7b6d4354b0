// The CLI side of the comparisons: `vram estimate --json` for the same config and scenario.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { REPO } from './harness.mjs';

export function cliEstimate(presetId, args = []) {
  const bin = process.env.VRAM_BIN || path.join(REPO, 'target/debug/vram');
  const config = path.join(REPO, 'crates/vram_core/presets', presetId + '.json');
  return JSON.parse(execFileSync(bin, ['estimate', config, '--json', ...args], { encoding: 'utf8' }));
}

/** `vram ARGS…` parsed as JSON (for any subcommand with --json). */
export function cliJson(args) {
  const bin = process.env.VRAM_BIN || path.join(REPO, 'target/debug/vram');
  return JSON.parse(execFileSync(bin, args, { encoding: 'utf8', maxBuffer: 64 << 20 }));
}

/** The path of a bundled preset's config.json. */
export function presetPath(presetId) {
  return path.join(REPO, 'crates/vram_core/presets', presetId + '.json');
}
