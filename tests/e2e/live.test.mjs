// The live dashboard against the real `dispatch-dash serve --demo`.
//
// Nothing here races the simulation. Most checks run against a STILL
// embedded cluster: the seed and the warm-up steps fix what it holds before
// the server lists it, and nothing changes by itself afterwards, so the job
// that is explained cannot end or vanish mid-test. Only the "a row changes
// live" check uses a LIVING cluster, and it waits for any change at all,
// which the simulation makes every few steps.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { href, launch, watchErrors, startServer, uiFor, freePort, shot } from './helpers.mjs';

const FAILED = ['node-lost', 'preempted', 'out-of-memory', 'non-zero-exit', 'evicted'];
// 60 warm-up steps of seed 7: every story has had time to play, so ended,
// failed, restarted and orphaned jobs are on show.
const STILL = ['--demo-seed', '7', '--demo-warmup-steps', '60', '--demo-still'];
const rows = 'table.obs tbody tr';
const failed = FAILED.map((c) => `${rows}[data-state="ended"][data-cause="${c}"]`).join(', ');

let browser, still, stillPort;
before(async () => {
  browser = await launch();
  stillPort = await freePort();
  still = await startServer(STILL, `127.0.0.1:${stillPort}`);
});
after(async () => { await browser?.close(); await still?.stop(); });

/** Opens the dashboard and waits for the first snapshot's rows. */
async function openDashboard(url) {
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${url}/`);
  // The first snapshot has arrived and been classified when rows show.
  await page.waitForSelector(rows, { timeout: 30_000 });
  return { page, errors };
}

test('a still cluster: rows, the demo banner, a failed job explained, a shareable explanation URL', { timeout: 120_000 }, async () => {
  const ui = await uiFor(still.url);
  const { page, errors } = await openDashboard(ui.url);
  assert.match(await page.locator('#connection').textContent(), /live/);
  // The maps that crafted pod names reach were keyed from crypto.getRandomValues.
  assert.equal(await page.evaluate(() => performance.getEntriesByName('dd:hashes-keyed').length), 1);
  assert.match(await href(page), /\?ns=/, 'the namespace is in the URL');
  assert.match(await page.locator('#demo-banner').textContent(), /Demo cluster/);
  await shot(page, 'live-dashboard');
  await page.emulateMedia({ colorScheme: 'dark' });
  await shot(page, 'live-dashboard-dark');
  await page.emulateMedia({ colorScheme: 'light' });

  // The still cluster holds failed jobs; they are rendered with the rest.
  const candidates = await page.locator(failed).count();
  assert.ok(candidates > 0, 'the warm-up leaves a failed job in the first namespace');
  const first = page.locator(failed).first();
  const key = await first.getAttribute('data-key');
  await first.locator('button.open').click();
  await page.waitForSelector('#decided-by');
  assert.match(await href(page), /\/explain\?ns=.*&kind=.*&name=/);
  assert.equal(await page.locator('svg.timeline .mark[data-winner="true"]').count(), 1, `winner of ${key}`);
  assert.equal(await page.locator('table.findings tr.winner').count(), 1);
  // The server's history of the object: it saw at least its first
  // observation, at a time of its own, and the text ends in the state shown.
  await page.waitForSelector('#history table.history-table tbody tr');
  const state = (await page.locator('.explain h2 .badge').first().textContent()).trim();
  const line = (await page.locator('#history-text').textContent()).trim();
  assert.match(line, /\d\d:\d\d$/, `a timeline: ${line}`);
  assert.ok(line.split(' → ').pop().startsWith(state), `the last change is the state shown (${state}): ${line}`);
  await shot(page, 'live-explain');
  await page.locator('#findings').scrollIntoViewIfNeeded();
  await shot(page, 'live-explain-findings');

  // The explanation URL is shareable: a fresh page shows the same object.
  const explainUrl = await href(page);
  const other = await browser.context.newPage();
  const otherErrors = watchErrors(other);
  await other.goto(explainUrl);
  await other.waitForSelector('#decided-by');
  assert.equal(await other.locator('.explain h2').textContent(), await page.locator('.explain h2').textContent());
  assert.ok((await other.locator('.explain h2').textContent()).includes(key.split('/')[2]));
  await other.close();
  assert.deepEqual(otherErrors, []);
  await page.goBack();
  await page.waitForSelector(rows);
  assert.deepEqual(errors, []);
  await page.close();
  await ui.close();
});

test('a still cluster under Kueue: a waiting job shows its place in line, and the explanation agrees with Find', { timeout: 90_000 }, async () => {
  const ui = await uiFor(still.url);
  const { page, errors } = await openDashboard(ui.url);
  // The queue facts come in their own frame, soon after the snapshot.
  const waiting = `${rows}[data-key^="TrainJob/"] td.queue[title]`;
  await page.waitForSelector(waiting, { timeout: 30_000 });
  const cell = page.locator(waiting).first();
  const tr = page.locator(`${rows}:has(td.queue[title])`).first();
  const key = await tr.getAttribute('data-key');
  const [, ns, name] = key.split('/');
  const text = (await cell.textContent()).trim();
  const title = await cell.getAttribute('title');
  // The server's Find of the same job carries the same facts.
  const found = await page.evaluate(async ([ns, job]) => {
    const r = await fetch(`/api/v1/namespaces/${encodeURIComponent(ns)}/jobs/${encodeURIComponent(job)}`);
    return r.json();
  }, [ns, await tr.locator('td.job').textContent()]);
  const queue = found.find((o) => o.object.kind === 'TrainJob' && o.object.name === name).queue;
  assert.ok(queue, `Find gives ${key} queue facts`);
  assert.ok(title.startsWith(queue.sentence), `the hover is the sentence: ${title} / ${queue.sentence}`);
  if (queue.position?.inLocalQueue) {
    assert.match(text, /^\d+(st|nd|rd|th) of \d+/, `the cell is the place in line: ${text}`);
    assert.ok(title.endsWith(queue.position.sentence), title);
  }
  await shot(page, 'live-queue-column');

  // The explanation's queue section says the same, in the CLI's lines.
  await tr.locator('button.open').click();
  await page.waitForSelector('#queue .queue-lines li');
  const lines = await page.locator('#queue .queue-lines li').allTextContents();
  assert.equal(lines[0], `LocalQueue ${queue.localQueue}${queue.clusterQueue ? `, ClusterQueue ${queue.clusterQueue}` : ''}`);
  assert.equal(lines[1], `wait: ${queue.wait}`);
  assert.equal(lines[2], queue.sentence);
  if (queue.position) assert.equal(lines[3], queue.position.sentence);
  await shot(page, 'live-explain-queue');
  assert.deepEqual(errors, []);
  await page.close();
  await ui.close();
});

test('a still cluster under Kueue: the Queues page draws the bars and the line as the server says, and opens a pending job', { timeout: 90_000 }, async () => {
  const ui = await uiFor(still.url);
  const { page, errors } = await openDashboard(ui.url);
  await page.click('#nav-queues');
  await page.waitForSelector('#queues-page .cluster-queue .qbar', { timeout: 30_000 });
  assert.match(await href(page), /\/queues\?ns=/);
  const ns = new URL(await href(page)).searchParams.get('ns');
  const data = await page.evaluate(async (ns) => (await fetch(`/api/v1/namespaces/${encodeURIComponent(ns)}/queues`)).json(), ns);
  // Every bar of every ClusterQueue, in order, with the server's words and lengths.
  const drawn = await page.locator('#queues-page .cluster-queue .qbar').evaluateAll((bars) => bars.map((b) => [
    b.getAttribute('title'),
    parseFloat(b.querySelector('.qbar-reserved').style.width),
    parseFloat(b.querySelector('.qbar-borrowed').style.width),
    parseFloat(b.querySelector('.qbar-nominal').style.left),
  ]));
  // Per mille of the track, as percentages the browser keeps.
  const pct = (n) => n / 10;
  const expected = data.clusterQueues.flatMap((cq) => cq.bars.map((b) => [
    b.sentence, pct(b.reservedPermille - b.borrowedPermille), pct(b.borrowedPermille), pct(b.nominalPermille),
  ]));
  assert.deepEqual(drawn, expected);
  assert.ok(expected.length > 0, 'the demo ClusterQueue has quota');
  // The pending list, in Kueue's order.
  const line = await page.locator('#queues-page .local-queue ol.pending li').evaluateAll((lis) => lis.map((li) => li.dataset.workload));
  assert.deepEqual(line, data.localQueues.flatMap((lq) => lq.pending.map((p) => p.workload)));
  await shot(page, 'live-queues');
  const first = data.localQueues.flatMap((lq) => lq.pending).find((p) => p.trainJob);
  if (first) {
    await page.locator('#queues-page ol.pending li button.open').first().click();
    await page.waitForSelector('#decided-by');
    assert.ok((await page.locator('.explain h2').textContent()).includes(first.trainJob));
  }
  assert.deepEqual(errors, []);
  await page.close();
  await ui.close();
});

test('a still cluster: a filter lives in the URL and reproduces', { timeout: 60_000 }, async () => {
  const ui = await uiFor(still.url);
  const { page, errors } = await openDashboard(ui.url);
  // The state with the most rows.
  const segs = await page.$$eval('.bar .seg[class*="state-"]', (bs) => bs.map((b) => b.textContent.trim().split(' ')));
  const [state] = segs.sort((a, b) => Number(b[1]) - Number(a[1]))[0];
  await page.locator(`.bar .seg.state-${state}`).click();
  await page.fill('#filter-text', '-');
  assert.match(await href(page), new RegExp(`state=${state}`));
  assert.match(await href(page), /q=-/);
  const shown = await page.$$eval(rows, (trs) => trs.map((t) => t.dataset.state));
  assert.ok(shown.length > 0 && shown.every((s) => s === state), `only ${state} rows: ${shown}`);
  const filtered = await browser.context.newPage();
  const filteredErrors = watchErrors(filtered);
  await filtered.goto(await href(page));
  await filtered.waitForSelector(rows, { timeout: 30_000 });
  assert.equal(await filtered.locator(`.bar .seg.state-${state}`).getAttribute('aria-pressed'), 'true');
  assert.equal(await filtered.inputValue('#filter-text'), '-');
  assert.deepEqual(await filtered.$$eval(rows, (trs) => trs.map((t) => t.dataset.key)),
    await page.$$eval(rows, (trs) => trs.map((t) => t.dataset.key)), 'the same rows');
  await shot(filtered, 'live-filtered');
  await filtered.close();
  assert.deepEqual(filteredErrors, []);
  await page.click('#clear-filters');
  assert.deepEqual(errors, []);
  await page.close();
  await ui.close();
});

test('a still cluster: the server goes away and comes back; the page reconnects by itself', { timeout: 120_000 }, async () => {
  const ui = await uiFor(still.url);
  const { page, errors } = await openDashboard(ui.url);
  const before = await page.$$eval(rows, (trs) => trs.map((t) => t.dataset.key));
  page.__expectDisconnect = true;
  await still.stop();
  await page.waitForFunction(() => /reconnecting|stale/.test(document.querySelector('#connection').textContent), null, { timeout: 30_000 });
  await shot(page, 'live-reconnecting');
  still = await startServer(STILL, `127.0.0.1:${stillPort}`);
  await page.waitForFunction(() => document.querySelector('#connection').textContent.trim() === 'live', null, { timeout: 60_000 });
  await page.waitForSelector(rows, { timeout: 30_000 });
  // The same seed and warm-up: the same objects, row for row.
  assert.deepEqual(await page.$$eval(rows, (trs) => trs.map((t) => t.dataset.key)), before);
  assert.deepEqual(errors, []);
  await page.close();
  await ui.close();
});

async function until(what, check, ms = 45_000) {
  const end = Date.now() + ms;
  for (;;) {
    const got = await check();
    if (got) return got;
    if (Date.now() > end) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

test('a still cluster under Kueue, moved on by SIGUSR1: places in line change live, and a job blocked on quota agrees in the table, the explanation and the Queues page', { timeout: 240_000 }, async () => {
  // A still cluster of its own, so that moving it changes nothing the other
  // tests read. Each SIGUSR1 plays steps until team-a's line changes, and the
  // cluster stands still again: what the page must show is then fixed.
  const moving = await startServer(STILL);
  const ns = 'team-a';
  const api = (path) => fetch(`${moving.url}/api/v1/namespaces/${ns}/${path}`).then((r) => r.json());
  const lineNow = async () => (await api('queues')).localQueues.flatMap((lq) => lq.pending);
  const moved = () => (moving.log().match(/moved on until its line changed/g) ?? []).length;
  try {
    const ui = await uiFor(moving.url);
    const page = await browser.context.newPage();
    const errors = watchErrors(page);
    await page.goto(`${ui.url}/?ns=${ns}`);
    await page.waitForSelector(rows, { timeout: 30_000 });
    const queuesPage = await browser.context.newPage();
    const queuesErrors = watchErrors(queuesPage);
    await queuesPage.goto(`${ui.url}/queues?ns=${ns}`);
    await queuesPage.waitForSelector('#queues-page .local-queue', { timeout: 30_000 });

    /** Each TrainJob row's queue hover (null without one), by key. */
    const cells = () => page.locator(`${rows}[data-key^="TrainJob/${ns}/"]`).evaluateAll((trs) =>
      Object.fromEntries(trs.map((tr) => [tr.dataset.key, tr.querySelector('td.queue')?.getAttribute('title') ?? null])));
    /** Find's facts of the TrainJob `name`, and the hover they make. */
    const found = async (name) => {
      const tr = page.locator(`${rows}[data-key="TrainJob/${ns}/${name}"]`);
      // A row the stream has not brought yet cannot agree.
      if ((await tr.count()) === 0) return { queue: undefined, title: undefined };
      const job = await tr.locator('td.job').textContent();
      const queue = (await api(`jobs/${encodeURIComponent(job)}`)).find((o) => o.object.kind === 'TrainJob' && o.object.name === name)?.queue;
      const shown = queue && !['admitted', 'finished'].includes(queue.wait);
      return { queue, title: shown ? queue.sentence + (queue.position ? `; ${queue.position.sentence}` : '') : null };
    };
    /** Whether every TrainJob of `names` shows what Find says of it. */
    const agree = async (names) => {
      const shown = await cells();
      for (const name of names) {
        if (shown[`TrainJob/${ns}/${name}`] !== (await found(name)).title) return false;
      }
      return true;
    };
    const pendingOnPage = () => queuesPage.locator('#queues-page .local-queue ol.pending li')
      .evaluateAll((lis) => lis.map((li) => li.dataset.workload));

    let line = await lineNow();
    await until('the table agrees with Find before the move', () => agree(line.map((p) => p.trainJob).filter(Boolean)));
    let blocked;
    for (let move = 1; move <= 6 && !blocked; move++) {
      const before = await cells();
      const count = moved();
      moving.child.kill('SIGUSR1');
      await until(`the server logs move ${move}`, () => moved() > count);
      // The server reads the line again within 5 s.
      const next = await until(`the line changes at move ${move}`, async () => {
        const now = await lineNow();
        return JSON.stringify(now) !== JSON.stringify(line) && now;
      });
      const names = [...new Set([...line, ...next].map((p) => p.trainJob).filter(Boolean))];
      line = next;
      await until(`the table agrees with Find after move ${move}`, () => agree(names));
      assert.notDeepEqual(await cells(), before, `a place in line changed on the page at move ${move}`);
      await until(`the Queues page shows the line of move ${move}`, async () =>
        JSON.stringify(await pendingOnPage()) === JSON.stringify(line.map((p) => p.workload)));
      for (const p of line.filter((p) => p.trainJob)) {
        const { queue } = await found(p.trainJob);
        if (queue?.wait === 'quota') blocked = { entry: p, queue };
      }
    }
    assert.ok(blocked, 'within 6 moves of seed 7, a job of team-a waits for quota');

    // The job blocked on quota: the same place and the same resource everywhere.
    const { entry, queue } = blocked;
    const short = queue.room.find((r) => !r.fits);
    assert.ok(short, `a resource blocks: ${JSON.stringify(queue.room)}`);
    assert.match(queue.sentence, new RegExp(`needs ${short.ask} ${short.resource.replace(/\./g, '\\.')}`));
    assert.equal(queue.position.inLocalQueue, entry.inLocalQueue);
    assert.equal(queue.position.inClusterQueue, entry.inClusterQueue);
    const row = page.locator(`${rows}[data-key="TrainJob/${ns}/${entry.trainJob}"]`);
    assert.match(await row.locator('td.queue').textContent(), new RegExp(`^\\d+(st|nd|rd|th) of ${queue.position.of}`));
    // The Queues page: the job at its place, and the bar of the resource that
    // blocks it with the reservation the sentence gives.
    const item = queuesPage.locator('#queues-page .local-queue ol.pending li').nth(entry.inLocalQueue - 1);
    assert.equal(await item.getAttribute('data-workload'), entry.workload);
    assert.equal((await item.locator('button.open').textContent()).trim(), entry.trainJob);
    await until('the Queues page bar has the reservation Find gives', async () => {
      const bar = queuesPage.locator(`#queues-page .cluster-queue .qbar[data-flavor="${short.flavor}"][data-resource="${short.resource}"]`);
      return (await bar.count()) === 1 && (await bar.getAttribute('title')).startsWith(
        `${short.flavor} ${short.resource}: ${short.reserved} of ${short.nominal} reserved`);
    });
    await shot(queuesPage, 'live-queues-blocked');
    // The explanation says the same, in the CLI's lines.
    await row.locator('button.open').click();
    await page.waitForSelector('#queue .queue-lines li');
    const lines = await page.locator('#queue .queue-lines li').allTextContents();
    assert.deepEqual(lines.slice(1, 4), [`wait: ${queue.wait}`, queue.sentence, queue.position.sentence]);
    assert.deepEqual(errors, []);
    assert.deepEqual(queuesErrors, []);
    await page.close();
    await queuesPage.close();
    await ui.close();
  } finally {
    await moving.stop();
  }
});

test('a living cluster: a row changes state while the page is open, and is marked', { timeout: 150_000 }, async () => {
  const living = await startServer(['--demo-pace-ms', '200']);
  try {
    const ui = await uiFor(living.url);
    const { page, errors } = await openDashboard(ui.url);
    const seen = await page.$$eval(rows, (trs) => Object.fromEntries(trs.map((t) => [t.dataset.key, t.dataset.state])));
    // Any row of the first snapshot whose state has changed and is marked
    // as recent; the simulation changes some state every few steps.
    await page.waitForFunction((b) => [...document.querySelectorAll('table.obs tbody tr.recent')]
      .some((t) => t.dataset.key in b && b[t.dataset.key] !== t.dataset.state), seen, { timeout: 120_000 });
    assert.deepEqual(errors, []);
    await page.close();
    await ui.close();
  } finally {
    await living.stop();
  }
});
