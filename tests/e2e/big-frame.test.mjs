// A frame of 64 KB or more is written into wasm memory by the browser's
// TextEncoder.encodeInto (web/src/ui/live.rs, message_text): one byte per
// UTF-16 unit for an ASCII text, and a second pass with three when the text
// is not all ASCII. Both passes must give the text exactly as sent.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, watchErrors, serveSnapshot, cases } from './helpers.mjs';

const base = cases().find((c) => c.name === 'complete').snapshot;

/** The case's snapshot, its TrainJob's condition saying `message`, padded
 * past 64 KB by an annotation no rule reads. */
function bigSnapshot(message) {
  const snapshot = structuredClone(base);
  const job = snapshot.items.find((x) => x.kind === 'TrainJob');
  job.metadata.annotations = { ...(job.metadata.annotations ?? {}), 'example.com/padding': 'x'.repeat(70_000) };
  job.status.conditions[0].message = message;
  assert.ok(JSON.stringify(snapshot).length > 64 * 1024);
  return { snapshot, job };
}

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

for (const [label, message] of [
  ['all ASCII', 'jobset completed successfully, every rank exited 0'],
  ['not all ASCII', 'naïve “quotes” – ünïcödé, 日本語 and 🚀 (an astral character)'],
]) {
  test(`a snapshot frame over 64 KB, ${label}, reaches the table exactly`, { timeout: 60_000 }, async () => {
    const { snapshot, job } = bigSnapshot(message);
    const site = await serveSnapshot(snapshot);
    const page = await browser.context.newPage();
    const errors = watchErrors(page);
    try {
      await page.goto(`${site.url}/?ns=team-a`);
      const row = `table.obs tbody tr[data-key="TrainJob/${job.metadata.namespace}/${job.metadata.name}"]`;
      await page.waitForSelector(row, { timeout: 15_000 });
      const detail = await page.$eval(row, (tr) => tr.querySelector('td.detail').textContent);
      assert.ok(detail.endsWith(`: ${message}`), `the detail ends with the message as sent: ${detail}`);
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
      await site.close();
    }
  });
}
