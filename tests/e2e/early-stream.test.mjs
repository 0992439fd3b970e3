// The stream index.html opens while the wasm loads (web/index.html,
// take_early_stream in web/src/ui/live.rs): the app takes it over instead
// of opening a second one, and one nobody takes is let go after 1,000
// buffered events or 30 s, so what it holds is bounded.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { launch, watchErrors, serveDist, cases, rowsEventData } from './helpers.mjs';

const rows = 'table.obs tbody tr';
const complete = cases().find((c) => c.name === 'complete');
const { snapshot } = complete;

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

/** A stand-in that answers the namespace list and the session, and on each
 * `snapshots` request sends the snapshot and then `changes` change events;
 * it records each stream's open and close. With `held`, each stream's
 * snapshot waits for `release()`; with `rows`, that `rows` event comes
 * first, at once. */
function standIn({ changes = 0, held = false, rows: rowsData = null } = {}) {
  const streams = [];
  const waiting = [];
  const api = (req, res, path) => {
    const json = (body) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)); };
    if (path === '/api/v1/namespaces') return json({ namespaces: ['team-a'], allNamespaces: false });
    if (path === '/api/v1/session') return json({ user: null, auth: 'none' });
    if (path === '/api/v1/namespaces/team-a/snapshots') {
      const stream = { closed: false };
      streams.push(stream);
      req.on('close', () => { stream.closed = true; });
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
      // The headers now, so that the stream is open while the snapshot waits.
      res.flushHeaders();
      if (rowsData) res.write(`event: rows\ndata: ${rowsData}\n\n`);
      const send = () => {
        res.write(`id: 1\nevent: snapshot\ndata: ${JSON.stringify(snapshot)}\n\n`);
        for (let i = 0; i < changes; i++) {
          res.write(`id: ${i + 2}\nevent: change\ndata: {"upserts":[],"deletes":[]}\n\n`);
        }
      };
      if (held) waiting.push(send);
      else send();
      return;
    }
    res.writeHead(404); res.end();
  };
  const release = () => { for (const send of waiting.splice(0)) send(); };
  return { api, streams, release };
}

async function until(what, check, ms = 30_000) {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

test('the app takes over the stream index.html opened: one request, and the rows', { timeout: 60_000 }, async () => {
  const stand = standIn();
  const site = await serveDist(stand.api);
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  try {
    await page.goto(`${site.url}/?ns=team-a`);
    await page.waitForSelector(rows, { timeout: 30_000 });
    await until('the connection indicator says live', async () => /live/.test(await page.locator('#connection').textContent()));
    assert.equal(stand.streams.length, 1, 'one stream, not a second one opened by the app');
    assert.equal(stand.streams[0].closed, false);
    assert.equal(await page.evaluate(() => window.__ddEarlyStream), undefined, 'taken');
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
    await site.close();
  }
});

// The table is drawn before the first snapshot comes (web/src/ui/live.rs):
// the snapshot's task then only fills its body in, instead of also
// building the counts, the filters and the table around it.
test('the empty table waits for the first snapshot, which fills that same table in', { timeout: 60_000 }, async () => {
  const stand = standIn({ held: true });
  const site = await serveDist(stand.api);
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  try {
    await page.goto(`${site.url}/?ns=team-a`);
    await until('the stream was opened', () => stand.streams.length === 1);
    await page.waitForSelector('table.obs thead', { timeout: 30_000 });
    assert.equal(await page.locator('#loading').textContent(), 'Waiting for the first snapshot…');
    assert.equal(await page.locator(rows).count(), 0);
    await page.evaluate(() => { document.querySelector('table.obs').dataset.before = 'yes'; });
    stand.release();
    await page.waitForSelector(rows, { timeout: 30_000 });
    assert.equal(await page.locator(rows).count(), complete.expected.length);
    assert.equal(await page.locator('table.obs').getAttribute('data-before'), 'yes', 'the table drawn before the snapshot');
    assert.equal(await page.locator('#loading').count(), 0);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
    await site.close();
  }
});

// The server's `rows` event (the engine's classification of the snapshot
// that follows) is drawn while the snapshot is still on its way; the
// snapshot, once loaded, keeps every row it drew (the table is not drawn
// again), and only then are explanations and the download there.
test('the rows event is drawn before its snapshot, which keeps every row element', { timeout: 60_000 }, async () => {
  const stand = standIn({ held: true, rows: rowsEventData(snapshot) });
  const site = await serveDist(stand.api);
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  try {
    await page.goto(`${site.url}/?ns=team-a`);
    await until('the rows are drawn', async () => (await page.locator(rows).count()) === complete.expected.length);
    assert.match(await page.locator('#loading').textContent(), /^The server's classification: loading the snapshot/);
    assert.equal(await page.locator('#download').isDisabled(), true, 'nothing to download yet');
    const early = await page.locator(rows).evaluateAll((trs) => trs.map((tr, i) => {
      tr.dataset.early = String(i);
      return [tr.dataset.key, tr.dataset.state, tr.dataset.cause, tr.querySelector('td.detail').textContent];
    }));
    assert.deepEqual(early.map(([, state, cause, detail]) => [state, cause, detail]),
      complete.expected.map((o) => [o.state, o.cause.kind, o.cause.detail]));
    const draws = () => page.evaluate(() => new Promise((done) => {
      // After two frames, so that an effect the load set off has run.
      requestAnimationFrame(() => requestAnimationFrame(() => done(performance.getEntriesByName('dd:rows-drawn').length)));
    }));
    const drawnBefore = await draws();
    stand.release();
    await until('the snapshot is loaded', async () => (await page.locator('#loading').count()) === 0);
    assert.equal(await draws(), drawnBefore, 'the snapshot drew no row again');
    const after = await page.locator(rows).evaluateAll((trs) => trs.map((tr) => [tr.dataset.early,
      [tr.dataset.key, tr.dataset.state, tr.dataset.cause, tr.querySelector('td.detail').textContent]]));
    assert.deepEqual(after.map(([i]) => i), early.map((_, i) => String(i)), 'the same elements, in the same order');
    assert.deepEqual(after.map(([, row]) => row), early);
    assert.equal(await page.locator('#download').isDisabled(), false);
    assert.deepEqual(errors, []);
  } finally {
    await page.close();
    await site.close();
  }
});

// Without the app (its wasm refused), the early stream is nobody's.
async function withoutTheApp(page) {
  await page.route('**/*.wasm', (route) => route.abort());
}

test('an early stream nobody takes is let go after 1,000 buffered events', { timeout: 60_000 }, async () => {
  const stand = standIn({ changes: 1100 });
  const site = await serveDist(stand.api);
  const page = await browser.context.newPage();
  try {
    await withoutTheApp(page);
    await page.goto(`${site.url}/?ns=team-a`);
    await until('the stream was opened', () => stand.streams.length === 1);
    await until('the stream was closed by the page', () => stand.streams[0].closed);
    assert.equal(await page.evaluate(() => window.__ddEarlyStream), undefined);
  } finally {
    await page.close();
    await site.close();
  }
});

test('an early stream nobody takes is let go after 30 s', { timeout: 60_000 }, async () => {
  const stand = standIn();
  const site = await serveDist(stand.api);
  const page = await browser.context.newPage();
  try {
    await page.clock.install();
    await withoutTheApp(page);
    await page.goto(`${site.url}/?ns=team-a`);
    await until('the stream was opened', () => stand.streams.length === 1);
    await until('the snapshot was buffered', () => page.evaluate(() => window.__ddEarlyStream?.events?.length >= 1));
    await page.clock.runFor(29_000);
    assert.equal(stand.streams[0].closed, false, 'still held before 30 s');
    assert.equal(await page.evaluate(() => window.__ddEarlyStream?.source.readyState), 1, 'open');
    await page.clock.runFor(1_500);
    await until('the stream was closed by the page', () => stand.streams[0].closed);
    assert.equal(await page.evaluate(() => window.__ddEarlyStream), undefined);
  } finally {
    await page.close();
    await site.close();
  }
});
