// The offline page: golden cases pasted and classified in the browser's
// worker, with no request but for the page's own files; bad input shows its
// line and column; a big dump shows its progress and can be cancelled.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DIST, href, launch, watchErrors, serveDist, cases, shot } from './helpers.mjs';

/** One of the engine's own golden cases (classify-wasm/cases). */
function engineCase(name) {
  return JSON.parse(readFileSync(new URL(`../../classify-wasm/cases/${name}.json`, import.meta.url), 'utf8'));
}

/** The requests that are not for the page's own files. The worker's
 * script, and the page's module, snippets and wasm that it loads, are the
 * page's: exactly the JS and wasm files of the build in dist/ (named by
 * the build's hash, which Trunk does not pad to a fixed length); anything
 * else would be the page sending something somewhere. */
function notOwnFiles(requests) {
  const own = new Set(readdirSync(DIST, { recursive: true })
    .filter((f) => /\.(js|wasm)$/.test(f))
    .map((f) => `/${f.split(sep).join('/')}`));
  return requests.filter((u) => new URL(u).origin !== site.url || !own.has(new URL(u).pathname));
}

let browser, site;
before(async () => { browser = await launch(); site = await serveDist(); });
after(async () => { await browser?.close(); await site?.close(); });

async function openOffline() {
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.goto(`${site.url}/offline`);
  await page.waitForSelector('#privacy');
  const requests = [];
  page.on('request', (r) => requests.push(r.url()));
  return { page, errors, requests };
}

test('golden cases: state, cause and detail shown equal expected', async () => {
  const { page, errors, requests } = await openOffline();
  const all = cases();
  assert.ok(all.length >= 5);
  for (const c of all) {
    await page.fill('#input', JSON.stringify(c.snapshot, null, 2));
    await page.click('#classify');
    if (c.expected.length === 0) {
      await page.waitForSelector('#empty');
      continue;
    }
    // The worker answers later than the click: wait for this case's rows.
    const keys = c.expected.map((o) => `${o.object.kind}/${o.object.namespace}/${o.object.name}`);
    await page.waitForFunction((keys) => document.querySelectorAll('table.obs tbody tr').length === keys.length
      && keys.every((k) => document.querySelector(`table.obs tbody tr[data-key="${k}"]`)), keys);
    for (const o of c.expected) {
      const key = `${o.object.kind}/${o.object.namespace}/${o.object.name}`;
      const row = page.locator(`table.obs tbody tr[data-key="${key}"]`);
      assert.equal(await row.count(), 1, `${c.name}: row ${key}`);
      assert.equal(await row.getAttribute('data-state'), o.state, `${c.name}: state of ${key}`);
      assert.equal(await row.getAttribute('data-cause'), o.cause.kind, `${c.name}: cause of ${key}`);
      assert.equal(await row.locator('td.detail').textContent(), o.cause.detail, `${c.name}: detail of ${key}`);
      // The badges carry the words, not only a colour.
      assert.equal((await row.locator('.badge').first().textContent()).trim(), o.state);
    }
  }
  assert.deepEqual(notOwnFiles(requests), [], 'the offline page makes no request but for its own files');
  await shot(page, 'offline-table');
  assert.deepEqual(errors, []);
  await page.close();
});

test('bad input shows the error with its line and column', async () => {
  const { page, errors, requests } = await openOffline();
  await page.fill('#input', '{\n  "kind": "Snapshot",\n  "mode": "sideways",\n  "items": []\n}');
  await page.click('#classify');
  const text = await page.locator('#input-error').textContent();
  assert.match(text, /^Line 3, column \d+: .*mode/);
  await page.fill('#input', 'items:\n  - kind: Pod\n    metadata: [oops\n');
  await page.click('#classify');
  assert.match(await page.locator('#input-error').textContent(), /^Line \d+, column \d+: /);
  await shot(page, 'offline-error');
  assert.deepEqual(notOwnFiles(requests), []);
  assert.deepEqual(errors, []);
  await page.close();
});

test('keyboard: arrows move along rows, Enter opens the explanation; overrides re-classify', async () => {
  const { page, errors } = await openOffline();
  const c = cases().find((x) => x.name === 'failed-oom-earliest');
  await page.fill('#input', JSON.stringify(c.snapshot));
  await page.click('#classify');
  await page.waitForSelector('table.obs tbody tr');
  await page.locator('table.obs tbody tr').first().focus();
  await page.keyboard.press('ArrowDown');
  await page.keyboard.press('ArrowUp');
  await page.keyboard.press('Enter');
  await page.waitForSelector('#decided-by');
  assert.match((await href(page)), /\/offline\?.*kind=TrainJob&name=/);
  assert.ok((await page.locator('#decided-by').textContent()).length > 10);
  assert.equal(await page.locator('svg.timeline .mark[data-winner="true"]').count(), 1);
  await page.click('#objects summary');
  assert.match(await page.locator('#objects pre').textContent(), /kind: TrainJob/);
  await shot(page, 'offline-explain');
  await page.goBack();
  await page.waitForSelector('table.obs');
  // The mode override changes the classification input, and is applied.
  await page.selectOption('#mode', 'kueue');
  await page.waitForSelector('table.obs tbody tr');
  assert.deepEqual(errors, []);
  await page.close();
});

test('attempts: the table counts them, hovers the previous cause, the explanation lists each', async () => {
  const { page, errors, requests } = await openOffline();
  const c = engineCase('attempts-oom-node-lost-exit');
  await page.fill('#input', JSON.stringify(c.snapshot));
  await page.click('#classify');
  const row = page.locator('table.obs tbody tr[data-key="TrainJob/team-a/train-1-s1"]');
  await row.waitFor();
  const cell = row.locator('td.attempts');
  assert.equal((await cell.textContent()).trim(), '3');
  assert.match(await cell.getAttribute('title'), /^previous attempt A=1 J=1: node-lost \(captured-pod\): pod train-1-s1-node-0-0-b1: DisruptionTarget: DeletionByTaintManager/);
  await row.locator('button.open').click();
  await page.waitForSelector('#attempts table.attempts-table');
  const rows = page.locator('#attempts tbody tr');
  assert.equal(await rows.count(), 3);
  const got = [];
  for (let i = 0; i < 3; i++) {
    const r = rows.nth(i);
    got.push([
      await r.getAttribute('data-current'),
      (await r.locator('td.exec').textContent()).trim(),
      (await r.locator('.badge').textContent()).trim(),
      (await r.locator('td.pods').textContent()).trim(),
    ]);
  }
  assert.deepEqual(got, [
    ['true', 'A=1 J=2', 'non-zero-exit', 'train-1-s1-node-0-0-c2'],
    ['false', 'A=1 J=1', 'node-lost', 'train-1-s1-node-0-0-b1'],
    ['false', 'A=1 J=0', 'out-of-memory', 'train-1-s1-node-0-0-a0'],
  ]);
  assert.equal(await rows.nth(0).locator('td.detail').textContent(), c.expected[0].cause.detail);
  assert.equal(await rows.nth(2).locator('td.detail').textContent(),
    'pod train-1-s1-node-0-0-a0: node container terminated: OOMKilled, exit code 137');
  // A dump holds one moment: the page says where a history comes from
  // instead of showing an empty one (and asks no server for it).
  assert.match(await page.locator('#history-text').textContent(), /only by a running dispatch-dash server/);
  assert.equal(await page.locator('#history table.history-table').count(), 0);
  await shot(page, 'offline-attempts');
  assert.deepEqual(notOwnFiles(requests), []);
  assert.deepEqual(errors, []);
  await page.close();
});

test('queues: a dump with Kueue queues shows the CLI\'s queue facts, and says places in line are not known offline', async () => {
  const { page, errors, requests } = await openOffline();
  const c = JSON.parse(readFileSync(new URL('../../classify-wasm/queue-cases/blocked-on-one-resource.json', import.meta.url), 'utf8'));
  // The golden text is the CLI's: a `namespace/name` line, then the lines.
  const [head, ...lines] = c.expectedQueue.trimEnd().split('\n');
  const [ns, name] = head.split('/');
  const facts = lines.map((l) => l.trim());
  await page.fill('#input', JSON.stringify(c.snapshot));
  await page.click('#classify');
  const row = page.locator(`table.obs tbody tr[data-key="TrainJob/${ns}/${name}"]`);
  await row.waitFor();
  const cell = row.locator('td.queue');
  assert.equal((await cell.textContent()).trim(), 'waiting for quota');
  assert.equal(await cell.getAttribute('title'), facts[2], 'the hover is the sentence');
  await row.locator('button.open').click();
  await page.waitForSelector('#queue .queue-lines li');
  const shown = await page.locator('#queue .queue-lines li').allTextContents();
  assert.deepEqual(shown.slice(0, -1), facts, 'the same lines as classify --output explain');
  assert.match(shown.at(-1), /not available offline/);
  await shot(page, 'offline-queue');
  assert.deepEqual(notOwnFiles(requests), []);
  assert.deepEqual(errors, []);
  await page.close();
});

test('a picked dump is classified without its text in the textarea, shown on request; one past the limit is refused before reading', async () => {
  const { page, errors, requests } = await openOffline();
  const dumps = new URL('../../../shared/dumps/', import.meta.url);
  const path = fileURLToPath(new URL('kueue-list.yaml', dumps));
  const expected = JSON.parse(readFileSync(new URL('kueue-list.expected.json', dumps), 'utf8'));
  await page.setInputFiles('#file', path);
  await page.waitForFunction((n) => document.querySelectorAll('table.obs tbody tr').length === n, expected.length);
  for (const o of expected) {
    const row = page.locator(`table.obs tbody tr[data-key="${o.object.kind}/${o.object.namespace}/${o.object.name}"]`);
    assert.equal(await row.getAttribute('data-state'), o.state);
    assert.equal(await row.getAttribute('data-cause'), o.cause.kind);
  }
  // The name and size stand in for the text, which Chromium never lays out.
  const size = statSync(path).size;
  const label = (await page.locator('#picked-name').textContent()).trim();
  assert.ok(label.startsWith('kueue-list.yaml ('), label);
  assert.match(label, size < 1024 ? new RegExp(`\\(${size} bytes\\)`) : /\(\d+\.\d (KiB|MiB)\)/);
  assert.equal(await page.inputValue('#input'), '');
  assert.equal(await page.locator('#input').isHidden(), true);
  await shot(page, 'offline-picked');
  // The worker writes the snapshot to download: the dump's objects, which
  // classify as the dump does.
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
  assert.equal(download.suggestedFilename(), 'snapshot.json');
  const snapshot = JSON.parse(readFileSync(await download.path(), 'utf8'));
  assert.equal(snapshot.kind, 'Snapshot');
  assert.equal(snapshot.mode, 'kueue', 'the mode the dump was classified in');
  const kinds = new Set(snapshot.items.map((i) => i.kind));
  for (const o of expected) assert.ok(kinds.has(o.object.kind), o.object.kind);
  // On request the text is shown, and is then the input, classified the same.
  await page.click('#show-text');
  await page.locator('#picked').waitFor({ state: 'detached' });
  assert.equal(await page.inputValue('#input'), readFileSync(path, 'utf8'));
  await page.click('#classify');
  await page.waitForFunction((n) => document.querySelectorAll('table.obs tbody tr').length === n, expected.length);

  // A sparse file past the limit costs no disk, and is refused by its size.
  const dir = mkdtempSync(join(tmpdir(), 'dd-big-'));
  const big = join(dir, 'big.yaml');
  try {
    writeFileSync(big, '');
    truncateSync(big, 300 * 1024 * 1024);
    await page.setInputFiles('#file', big);
    const refused = await page.locator('#file-error').textContent();
    assert.match(refused, /^big\.yaml is 300\.0 MiB, more than the 256\.0 MiB this page can classify/);
    assert.match(refused, /dispatch-dash classify big\.yaml/);
    // Nothing of it was classified: the page shows no rows.
    assert.equal(await page.locator('table.obs tbody tr').count(), 0);
    await shot(page, 'offline-refused');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.deepEqual(notOwnFiles(requests), [], 'the offline page makes no request but for its own files');
  assert.deepEqual(errors, []);
  await page.close();
});

/** A kubectl List of `jobs` plain TrainJobs and `nodes` Nodes, as JSON: the
 * Nodes are parsed and typed but make no row, so the dump is big to read
 * and parse while its table stays small. */
function bigDump(jobs, nodes) {
  const items = [];
  for (let i = 0; i < jobs; i++) {
    items.push(JSON.stringify({
      apiVersion: 'trainer.kubeflow.org/v1alpha1', kind: 'TrainJob',
      metadata: { name: `job-${i}`, namespace: 'team-a', uid: `uid-job-${i}`, creationTimestamp: '2026-12-01T00:00:00Z' },
      spec: { runtimeRef: { name: 'torch-distributed' } },
    }));
  }
  const conditions = ['MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready'].map((type) => ({
    type, status: type === 'Ready' ? 'True' : 'False', reason: `Kubelet${type}`,
    message: `kubelet reports ${type} as it was last seen`, lastHeartbeatTime: '2026-12-01T00:00:00Z',
    lastTransitionTime: '2026-12-01T00:00:00Z',
  }));
  for (let i = 0; i < nodes; i++) {
    items.push(JSON.stringify({
      apiVersion: 'v1', kind: 'Node',
      metadata: { name: `node-${i}`, uid: `uid-node-${i}`, creationTimestamp: '2026-12-01T00:00:00Z',
        labels: { 'kubernetes.io/hostname': `node-${i}`, 'node.kubernetes.io/instance-type': 'gpu-8x' } },
      spec: { providerID: `cloud://node-${i}` },
      status: { conditions },
    }));
  }
  return `{"apiVersion":"v1","kind":"List","items":[\n${items.join(',\n')}\n]}\n`;
}

test('a big dump is read and classified in a worker: its progress shows, the page never stalls, and Cancel stops it', async () => {
  const { page, errors, requests } = await openOffline();
  const dir = mkdtempSync(join(tmpdir(), 'dd-worker-'));
  const path = join(dir, 'big.json');
  try {
    const jobs = 200;
    writeFileSync(path, bigDump(jobs, 60000));
    // Every text the progress shows, and every long task of the page's
    // thread, from before the pick.
    await page.evaluate(() => {
      window.__seen = [];
      new MutationObserver(() => {
        const t = document.querySelector('#progress-text')?.textContent;
        if (t && window.__seen.at(-1) !== t) window.__seen.push(t);
      }).observe(document.body, { subtree: true, childList: true, characterData: true });
      window.__longest = 0;
      new PerformanceObserver((list) => {
        for (const e of list.getEntries()) window.__longest = Math.max(window.__longest, e.duration);
      }).observe({ type: 'longtask' });
    });
    const started = Date.now();
    await page.setInputFiles('#file', path);
    // Its rows are all classified; those near the view are drawn.
    const classified = (n) => document.querySelector('#shown-count')?.textContent === `${n} of ${n} shown`
      && document.querySelectorAll('table.obs tbody tr').length > 0;
    await page.waitForFunction(classified, jobs, { timeout: 120000 });
    const took = Date.now() - started;
    const seen = await page.evaluate(() => window.__seen);
    assert.ok(seen.some((t) => /^Reading \d+\.\d MiB of \d+\.\d MiB…$/.test(t)), seen.join(' | '));
    assert.ok(seen.some((t) => /^Parsing \d+\.\d MiB…$/.test(t)), seen.join(' | '));
    assert.ok(seen.some((t) => /^Classifying the objects of \d+\.\d MiB…$/.test(t)), seen.join(' | '));
    // The parse ran off the page's thread: had it run on it, one task
    // would have taken most of the load.
    const longest = await page.evaluate(() => window.__longest);
    assert.ok(longest < took / 2, `longest task ${longest} ms of a ${took} ms load`);

    // Cancel while it parses: the worker is stopped, no rows come. The
    // click is made as the page shows "Parsing", in the same task, so the
    // worker cannot have answered first, however fast it is.
    await page.evaluate(() => {
      const observer = new MutationObserver(() => {
        if (/^Parsing/.test(document.querySelector('#progress-text')?.textContent ?? '')) {
          observer.disconnect();
          document.querySelector('#cancel').click();
        }
      });
      observer.observe(document.body, { subtree: true, childList: true, characterData: true });
    });
    await page.setInputFiles('#file', []);
    await page.setInputFiles('#file', path);
    await page.waitForSelector('#cancelled', { timeout: 120000 });
    assert.equal(await page.locator('table.obs tbody tr').count(), 0);
    assert.equal(await page.locator('#progress').count(), 0);
    await shot(page, 'offline-cancelled');
    // Classify starts a new worker, which finishes.
    await page.click('#classify');
    await page.waitForFunction(classified, jobs, { timeout: 120000 });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  assert.deepEqual(notOwnFiles(requests), [], 'the offline page makes no request but for its own files');
  assert.deepEqual(errors, []);
  await page.close();
});
