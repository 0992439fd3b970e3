// The live dashboard against the real `dispatch-dash serve --demo`: rows
// appear, change live, filters live in the URL, the explanation of a failed
// job shows its winner, and a restart of the server is survived.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { href, launch, watchErrors, startServer, uiFor, freePort, shot } from './helpers.mjs';

const FAILED = ['node-lost', 'preempted', 'out-of-memory', 'non-zero-exit', 'evicted'];
let browser, server, ui, port;
before(async () => {
  browser = await launch();
  port = await freePort();
  server = await startServer(['--demo-pace-ms', '300'], `127.0.0.1:${port}`);
  ui = await uiFor(server.url);
  console.log(`# UI from ${ui.url}${ui.proxied ? ' (dist/ with /api proxied: the binary serves no UI)' : ' (embedded in the binary)'}`);
});
after(async () => { await browser?.close(); await ui?.close(); await server?.stop(); });

const rows = 'table.obs tbody tr';

test('live dashboard: rows, live change, filter in the URL, explanation, reconnection', { timeout: 180_000 }, async () => {
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${ui.url}/`);
  await page.waitForSelector(rows, { timeout: 30_000 });
  assert.match(await page.locator('#connection').textContent(), /live/);
  assert.match((await href(page)), /\?ns=/, 'the namespace is in the URL');
  await shot(page, 'live-dashboard');
  await page.emulateMedia({ colorScheme: 'dark' });
  await shot(page, 'live-dashboard-dark');
  await page.emulateMedia({ colorScheme: 'light' });

  // An observation changes state while we watch.
  const before = await page.$$eval(rows, (trs) => Object.fromEntries(trs.map((t) => [t.dataset.key, t.dataset.state])));
  await page.waitForFunction((b) => [...document.querySelectorAll('table.obs tbody tr')]
    .some((t) => t.dataset.key in b && b[t.dataset.key] !== t.dataset.state), before, { timeout: 60_000 });
  assert.ok(await page.locator(`${rows}.recent`).count() > 0, 'changed rows are marked');

  // A failed job's explanation shows its winning finding.
  const failed = FAILED.map((c) => `${rows}[data-state="ended"][data-cause="${c}"]`).join(', ');
  await page.waitForSelector(failed, { timeout: 90_000 });
  const key = await page.locator(failed).first().getAttribute('data-key');
  await page.locator(failed).first().locator('button.open').click();
  await page.waitForSelector('#decided-by');
  assert.match((await href(page)), /\/explain\?ns=.*&kind=.*&name=/);
  assert.equal(await page.locator('svg.timeline .mark[data-winner="true"]').count(), 1, `winner of ${key}`);
  assert.equal(await page.locator('table.findings tr.winner').count(), 1);
  await shot(page, 'live-explain');
  await page.locator('#findings').scrollIntoViewIfNeeded();
  await shot(page, 'live-explain-findings');
  // The explanation URL is shareable: a fresh page shows the same object.
  const explainUrl = (await href(page));
  const other = await browser.context.newPage();
  const otherErrors = watchErrors(other);
  await other.goto(explainUrl);
  await other.waitForSelector('#decided-by');
  // (The living namespace may have deleted the job meanwhile; the name is what must match.)
  assert.ok((await other.locator('.explain h2').textContent()).includes(key.split('/')[2]));
  await other.close();
  assert.deepEqual(otherErrors, []);
  await page.goBack();
  await page.waitForSelector(rows);

  // A filter: click a state segment; the URL carries it and reproduces it.
  // The state with the most rows, so that the living namespace still has
  // some when the link is opened again.
  const segs = await page.$$eval('.bar .seg[class*="state-"]', (bs) => bs.map((b) => b.textContent.trim().split(' ')));
  const [state] = segs.sort((a, b) => Number(b[1]) - Number(a[1]))[0];
  const seg = page.locator(`.bar .seg.state-${state}`);
  await seg.click();
  await page.fill('#filter-text', '-');
  assert.match((await href(page)), new RegExp(`state=${state}`));
  assert.match((await href(page)), /q=-/);
  const shown = await page.$$eval(rows, (trs) => trs.map((t) => t.dataset.state));
  assert.ok(shown.every((s) => s === state), `only ${state} rows: ${shown}`);
  const filtered = await browser.context.newPage();
  const filteredErrors = watchErrors(filtered);
  await filtered.goto((await href(page)));
  await filtered.waitForSelector('.bar');
  assert.equal(await filtered.locator(`.bar .seg.state-${state}`).getAttribute('aria-pressed'), 'true');
  assert.equal(await filtered.inputValue('#filter-text'), '-');
  assert.ok((await filtered.$$eval(rows, (trs) => trs.map((t) => t.dataset.state))).every((s) => s === state));
  await shot(filtered, 'live-filtered');
  await filtered.close();
  assert.deepEqual(filteredErrors, []);
  await page.click('#clear-filters');

  // The server goes away: "reconnecting"; it comes back: live again.
  page.__expectDisconnect = true;
  await server.stop();
  await page.waitForFunction(() => /reconnecting|stale/.test(document.querySelector('#connection').textContent), null, { timeout: 30_000 });
  await shot(page, 'live-reconnecting');
  server = await startServer(['--demo-pace-ms', '300'], `127.0.0.1:${port}`);
  await page.waitForFunction(() => document.querySelector('#connection').textContent.trim() === 'live', null, { timeout: 60_000 });
  await page.waitForSelector(rows, { timeout: 30_000 });
  assert.deepEqual(errors, []);
  await page.close();
});
