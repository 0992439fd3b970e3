// Changes that arrive between a snapshot and the frame that first draws it
// wait for that frame (web/src/repaint.rs, HeldChanges; web/src/ui/live.rs).
// A page that draws no frames (a hidden tab) must still show them: they
// wait a second at most.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, watchErrors, serveSnapshot, cases } from './helpers.mjs';

const snapshot = cases().find((c) => c.name === 'complete').snapshot;
const job = snapshot.items.find((x) => x.kind === 'TrainJob');
// A second TrainJob, sent as a change right after the snapshot.
const added = structuredClone(job);
added.metadata.name = `${job.metadata.name}-added`;
added.metadata.uid = `${job.metadata.uid}-added`;
const addedRow = `table.obs tbody tr[data-key="TrainJob/${job.metadata.namespace}/${added.metadata.name}"]`;

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

for (const frames of [true, false]) {
  test(`a change right after the snapshot is shown ${frames ? 'after the first frame' : 'when no frame is ever drawn'}`, { timeout: 60_000 }, async () => {
    const change = { upserts: [added], deletes: [], captured: [], capturedDropped: [] };
    const site = await serveSnapshot(snapshot, { changes: [change] });
    const page = await browser.context.newPage();
    const errors = watchErrors(page);
    try {
      if (!frames) {
        // As in a hidden tab: animation-frame callbacks never run.
        await page.addInitScript(() => { window.requestAnimationFrame = () => 0; });
      }
      await page.goto(`${site.url}/?ns=team-a`);
      await page.waitForSelector(addedRow, { timeout: 15_000 });
      const original = `table.obs tbody tr[data-key="TrainJob/${job.metadata.namespace}/${job.metadata.name}"]`;
      assert.equal(await page.locator(original).count(), 1, 'the snapshot\'s row is there too');
      assert.deepEqual(errors, []);
    } finally {
      await page.close();
      await site.close();
    }
  });
}
