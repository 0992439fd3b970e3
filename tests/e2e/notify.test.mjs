// Desktop notifications (web/src/ui/desktop.rs, web/src/notices.rs): the
// page asks for permission only when the toggle is clicked; once on, a
// TrainJob that fails after the page looked produces one notification (the
// same news again produces none), and the choice is kept per namespace
// across a reload. The stand-in server sends the change, so nothing else
// moves meanwhile. The browser's Notification is wrapped to record what is
// shown, and still shows it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, watchErrors, serveSnapshot, cases } from './helpers.mjs';

const complete = cases().find((c) => c.name === 'complete').snapshot;
const job = complete.items.find((x) => x.kind === 'TrainJob');
const runningJob = { ...structuredClone(job), status: { conditions: [] } };
const failedJob = {
  ...structuredClone(job),
  status: {
    conditions: [{ type: 'Failed', status: 'True', reason: 'FailedJobs', message: 'jobs failed',
      lastTransitionTime: '2026-11-29T10:00:00Z' }],
  },
};
const snapshot = { ...complete, items: complete.items.map((x) => (x === job ? runningJob : x)) };
const failure = { upserts: [failedJob], deletes: [], captured: [], capturedDropped: [] };
const row = `table.obs tbody tr[data-key="TrainJob/${job.metadata.namespace}/${job.metadata.name}"]`;

/** Records every notification shown and every permission request. */
const spy = () => {
  const Real = window.Notification;
  window.__notices = [];
  window.__asked = 0;
  class Recorded extends Real {
    constructor(title, options) {
      super(title, options);
      window.__notices.push({ title, body: options?.body, tag: options?.tag });
    }
    static requestPermission(...args) { window.__asked += 1; return Real.requestPermission(...args); }
  }
  window.Notification = Recorded;
};

let browser;
before(async () => { browser = await launch(); await browser.context.addInitScript(spy); });
after(async () => { await browser?.close(); });

test('nothing is asked until the toggle is clicked', { timeout: 60_000 }, async () => {
  const live = await serveSnapshot(snapshot);
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  try {
    await page.goto(`${live.url}/?ns=team-a`);
    await page.waitForSelector(row, { timeout: 15_000 });
    assert.match(await page.textContent('#notify'), /off/);
    live.send(failure);
    await page.waitForFunction((sel) => /ended/.test(document.querySelector(sel)?.textContent ?? ''), row, { timeout: 15_000 });
    assert.equal(await page.evaluate(() => window.__asked), 0, 'no permission asked without a click');
    assert.deepEqual(await page.evaluate(() => window.__notices), [], 'off: nothing shown');
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
    await live.close();
  }
});

test('with permission granted, a job that fails produces one notification, and the choice is kept', { timeout: 60_000 }, async () => {
  const live = await serveSnapshot(snapshot);
  await browser.context.grantPermissions(['notifications'], { origin: live.url });
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  try {
    await page.goto(`${live.url}/?ns=team-a`);
    await page.waitForSelector(row, { timeout: 15_000 });
    await page.click('#notify');
    await page.waitForFunction(() => /on$/.test(document.querySelector('#notify').textContent), null, { timeout: 5_000 });
    assert.equal(await page.getAttribute('#notify', 'aria-pressed'), 'true');
    assert.equal(await page.evaluate(() => localStorage.getItem('dd:notify:team-a')), 'on');

    live.send(failure);
    await page.waitForFunction(() => window.__notices.length > 0, null, { timeout: 15_000 });
    // The same news again is no new notification.
    live.send(failure);
    await page.waitForTimeout(1_000);
    const shown = await page.evaluate(() => window.__notices);
    assert.equal(shown.length, 1, JSON.stringify(shown));
    assert.match(shown[0].title, new RegExp(`^team-a/${job.metadata.name} ended: `));
    assert.equal(shown[0].tag, `dd:team-a/${job.metadata.name}`);

    await page.reload();
    await page.waitForSelector(row, { timeout: 15_000 });
    assert.match(await page.textContent('#notify'), /on$/, 'kept across a reload');
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
    await live.close();
    await browser.context.clearPermissions();
  }
});
