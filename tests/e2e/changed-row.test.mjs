// A row whose object changes keeps its element: the table fills it in again
// in place (web/src/table_sync.rs, Plan::refill; web/src/ui/rows.js,
// fillRows). So a focused row stays focused, and what it shows must be
// exactly what a row built fresh for the changed object shows, fields the
// change emptied included. Its "changed" mark goes after RECENT_MS (5 s,
// web/src/ui/table.rs).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, watchErrors, serveSnapshot, cases } from './helpers.mjs';

const snapshot = cases().find((c) => c.name === 'complete').snapshot;
const job = snapshot.items.find((x) => x.kind === 'TrainJob');
// The TrainJob no longer Complete: its state, cause and detail all change.
const changed = structuredClone(job);
changed.status = { conditions: [] };
const withChange = { ...snapshot, items: snapshot.items.map((x) => (x === job ? changed : x)) };
const row = `table.obs tbody tr[data-key="TrainJob/${job.metadata.namespace}/${job.metadata.name}"]`;

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

/** Everything a row shows: its attributes and every element's text and attributes. */
const shown = (tr) => {
  const describe = (e) => ({
    tag: e.tagName,
    attributes: [...e.attributes].map((a) => [a.name, a.value]).filter(([n]) => n !== 'class' || e !== tr),
    text: [...e.childNodes].filter((n) => n.nodeType === 3).map((n) => n.nodeValue).join(''),
    children: [...e.children].map(describe),
  });
  return describe(tr);
};

test('a changed row is filled in again in place: it keeps its element and the focus, and shows what a fresh row shows', { timeout: 60_000 }, async () => {
  const live = await serveSnapshot(snapshot);
  const fresh = await serveSnapshot(withChange);
  const page = await browser.context.newPage();
  const freshPage = await browser.context.newPage();
  const errors = [...watchErrors(page), ...watchErrors(freshPage)];
  try {
    await page.goto(`${live.url}/?ns=team-a`);
    await page.waitForSelector(row, { timeout: 15_000 });
    const before = await page.$eval(row, (tr) => tr.querySelector('td:nth-child(4)').textContent);
    await page.focus(row);
    await page.$eval(row, (tr) => { tr.__shownBefore = true; });

    live.send({ upserts: [changed], deletes: [], captured: [], capturedDropped: [] });
    await page.waitForFunction(([sel, old]) => {
      const tr = document.querySelector(sel);
      return tr && tr.querySelector('td:nth-child(4)').textContent !== old;
    }, [row, before], { timeout: 15_000 });

    assert.equal(await page.locator(row).count(), 1, 'one row for the TrainJob');
    assert.equal(await page.$eval(row, (tr) => tr.__shownBefore === true), true, 'the same element');
    assert.equal(await page.$eval(row, (tr) => document.activeElement === tr), true, 'still focused');
    assert.equal(await page.$eval(row, (tr) => tr.classList.contains('recent')), true, 'marked as changed');

    await freshPage.goto(`${fresh.url}/?ns=team-a`);
    await freshPage.waitForSelector(row, { timeout: 15_000 });
    assert.deepEqual(await page.$eval(row, shown), await freshPage.$eval(row, shown));

    // The page's clock ticks every second: the mark goes within a few
    // seconds of RECENT_MS, on the same element, which stays focused.
    await page.waitForFunction((sel) => !document.querySelector(sel)?.classList.contains('recent'),
      row, { timeout: 20_000 });
    assert.equal(await page.$eval(row, (tr) => tr.__shownBefore === true && document.activeElement === tr), true,
      'the same element, still focused, unmarked');
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
    await freshPage.close();
    await live.close();
    await fresh.close();
  }
});
