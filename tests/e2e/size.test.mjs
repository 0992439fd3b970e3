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
  // wasm-bindgen's JS snippets are in subdirectories: every file counts.
  const files = readdirSync(DIST, { recursive: true }).filter((f) => /\.(wasm|js)$/.test(f));
  const bytes = files.reduce((n, f) => n + statSync(join(DIST, f)).size, 0);
  console.log(`# BUDGET wasm+js: ${bytes} bytes (${(bytes / 1024 / 1024).toFixed(3)} MiB) in ${files.join(', ')}`);
  assert.ok(files.some((f) => f.endsWith('.wasm')), 'a wasm file in dist/');
  // Every wasm and JS file in dist/ is one the page loads: named by
  // index.html, imported by the JS it names (the snippets), or started by
  // its wasm (the offline page's worker script).
  const index = readFileSync(join(DIST, 'index.html'), 'utf8');
  const loaded = files.filter((f) => !f.includes('/') && index.includes(f));
  const imports = loaded.filter((f) => f.endsWith('.js')).map((f) => readFileSync(join(DIST, f), 'utf8')).join('\n');
  const wasm = loaded.filter((f) => f.endsWith('.wasm')).map((f) => readFileSync(join(DIST, f)).toString('latin1')).join('\n');
  for (const f of files) {
    assert.ok(loaded.includes(f) || imports.includes(`'./${f}'`) || wasm.includes(`/${f}`),
      `${f} is loaded by index.html, its JS or its wasm`);
  }
  assert.ok(bytes < SIZE_BUDGET, `${bytes} bytes`);
});
