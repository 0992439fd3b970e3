// The size budget: wasm + JS loaded by the page < 1.5 MB before compression.
// Deterministic for a given build, so it is a test; the timed budgets (first
// useful paint, change to repaint) are a benchmark: tests/e2e/bench/budgets.mjs,
// run by scripts/bench-web.sh.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { DIST } from './helpers.mjs';

export const SIZE_BUDGET = 1.5 * 1000 * 1000;

test('budget: wasm + JS < 1.5 MB', () => {
  const files = readdirSync(DIST).filter((f) => /\.(wasm|js)$/.test(f));
  const bytes = files.reduce((n, f) => n + statSync(join(DIST, f)).size, 0);
  console.log(`# BUDGET wasm+js: ${bytes} bytes (${(bytes / 1024 / 1024).toFixed(3)} MiB) in ${files.join(', ')}`);
  assert.ok(files.some((f) => f.endsWith('.wasm')), 'a wasm file in dist/');
  // Every wasm and JS file in dist/ is one the page loads.
  const index = readFileSync(join(DIST, 'index.html'), 'utf8');
  for (const f of files) assert.ok(index.includes(f), `${f} is referenced by index.html`);
  assert.ok(bytes < SIZE_BUDGET, `${bytes} bytes`);
});
