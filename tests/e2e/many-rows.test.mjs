// A namespace of thousands of TrainJobs: the table draws only the rows near
// the view (web/src/row_window.rs) and pads its body for the rest, so the
// scroll bar is the whole table's. Scrolling draws other rows, the arrow
// keys walk past the drawn ones, and Search finds a row that is not drawn.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, watchErrors, serveSnapshot } from './helpers.mjs';

const JOBS = 2000;

/** A plain-mode snapshot of `JOBS` TrainJobs in team-a, every tenth failed
 * with a message too long for its cell. */
function manyJobs() {
  const items = [];
  for (let i = 0; i < JOBS; i++) {
    const name = `job-${String(i).padStart(4, '0')}`;
    const job = {
      apiVersion: 'trainer.kubeflow.org/v1alpha1', kind: 'TrainJob',
      metadata: { name, namespace: 'team-a', uid: `uid-${name}`, creationTimestamp: '2026-12-01T00:00:00Z' },
      spec: { runtimeRef: { name: 'torch-distributed' } },
      status: {},
    };
    if (i % 10 === 0) {
      job.status.conditions = [{ type: 'Failed', status: 'True', reason: 'DeadlineExceeded',
        message: `${name} ran past its deadline while its ranks were still writing a checkpoint to shared storage`,
        lastTransitionTime: '2026-12-01T01:00:00Z' }];
    }
    items.push(job);
  }
  return { kind: 'Snapshot', mode: 'plain', nodesReadable: false, items };
}

let browser, site;
before(async () => { browser = await launch(); site = await serveSnapshot(manyJobs()); });
after(async () => { await browser?.close(); await site?.close(); });

/** What the table draws: its rows' keys, the rows its padding stands for
 * above and below, and one row's height. */
function drawn(page) {
  return page.evaluate(() => {
    const body = document.querySelector('table.obs tbody');
    const rows = [...body.querySelectorAll('tr')];
    const height = rows[0]?.getBoundingClientRect().height ?? 0;
    const style = getComputedStyle(body);
    return {
      keys: rows.map((r) => r.dataset.key),
      height,
      above: Math.round(parseFloat(style.paddingTop) / height),
      below: Math.round(parseFloat(style.paddingBottom) / height),
      bodyHeight: body.getBoundingClientRect().height,
    };
  });
}

test('thousands of rows: only those near the view are drawn, the padding stands for the rest, and scrolling draws others', async () => {
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${site.url}/?ns=team-a`);
  await page.waitForFunction((n) => document.querySelector('#shown-count')?.textContent === `${n} of ${n} shown`, JOBS);
  await page.waitForSelector('table.obs tbody tr');
  const top = await drawn(page);
  assert.ok(top.keys.length >= 20 && top.keys.length < 300, `${top.keys.length} rows drawn of ${JOBS}`);
  assert.equal(top.above, 0);
  assert.equal(top.above + top.keys.length + top.below, JOBS, 'the padding stands for every row not drawn');
  // Rows have one height, so the body is as tall as all of them.
  assert.ok(Math.abs(top.bodyHeight - JOBS * top.height) < JOBS * 0.01, `${top.bodyHeight} for ${JOBS} × ${top.height}`);
  // The page says find-in-page cannot see what is not drawn.
  assert.match(await page.locator('#drawn-note').textContent(), /Search finds any row/);
  // A long detail does not wrap: its cell's hover has all of it.
  const failed = page.locator('table.obs tbody tr[data-state="ended"] td.detail').first();
  assert.equal(await failed.getAttribute('title'), await failed.textContent());

  // To the end: the last rows are drawn, the first are not.
  await page.evaluate(() => window.scrollTo(0, document.documentElement.scrollHeight));
  await page.waitForFunction(() => parseFloat(getComputedStyle(document.querySelector('table.obs tbody')).paddingBottom || '0') === 0);
  const end = await drawn(page);
  assert.equal(end.below, 0);
  assert.equal(end.above + end.keys.length, JOBS);
  assert.ok(!end.keys.includes(top.keys[0]), 'the first row is no longer drawn');
  assert.deepEqual(errors, []);
  await page.close();
});

test('thousands of rows: the arrow keys walk past the drawn rows, and Search finds a row that is not drawn', async () => {
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${site.url}/?ns=team-a`);
  await page.waitForSelector('table.obs tbody tr');
  const top = await drawn(page);
  await page.locator('table.obs tbody tr').first().focus();
  // Further than the rows first drawn: each step focuses the next row,
  // drawn by then (the view follows the focus, the window the view).
  const steps = top.keys.length + 20;
  for (let i = 0; i < steps; i++) await page.keyboard.press('ArrowDown');
  const focused = await page.evaluate(() => {
    const tr = document.activeElement;
    const body = tr.parentElement;
    const height = tr.getBoundingClientRect().height;
    const above = Math.round(parseFloat(getComputedStyle(body).paddingTop) / height);
    return { key: tr.dataset.key, index: above + [...body.children].indexOf(tr), inBody: body.matches('table.obs tbody') };
  });
  assert.ok(focused.inBody, 'a row of the table is focused');
  assert.equal(focused.index, steps, `row ${steps} is focused: ${focused.key}`);
  await page.keyboard.press('ArrowUp');
  assert.equal(await page.evaluate(() => {
    const tr = document.activeElement;
    return tr.nextElementSibling?.dataset.key;
  }), focused.key, 'up goes back one row');

  // A row far below the view, not drawn, is found by Search.
  const wanted = 'job-1987';
  assert.equal(await page.locator(`table.obs tbody tr[data-key="TrainJob/team-a/${wanted}"]`).count(), 0);
  await page.fill('#filter-text', wanted);
  await page.waitForSelector(`table.obs tbody tr[data-key="TrainJob/team-a/${wanted}"]`);
  assert.equal(await page.locator('#shown-count').textContent(), `1 of ${JOBS} shown`);
  assert.equal(await page.locator('#drawn-note').count(), 0, 'a short table is drawn whole');
  assert.match(page.url(), new RegExp(`q=${wanted}`), 'the search is in the URL');
  assert.deepEqual(errors, []);
  await page.close();
});
