// Sign-in in the browser, against the session contract:
//   any /api route may answer 401 {"error":"unauthorized"};
//   POST /api/v1/session {"token":"..."} -> 200 {user, groups, auth} and an
//     HttpOnly dd_session cookie, or 401 {"error": ...};
//   GET /api/v1/session -> 200 {user, groups, auth} or 401;
//   DELETE /api/v1/session -> 204, and the API answers 401 again;
//   a namespace the signed-in user may not see answers 403 {"error":"forbidden"}.
//
// (a) runs against a Node stand-in of that contract serving dist/, (b)
// against the real `dispatch-dash serve --demo --token S` (a still cluster,
// so nothing races the simulation), (c) against the real binary with
// `--auth kubernetes` on the demo, whose TokenReviews and
// SubjectAccessReviews know the users of `--demo-users`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, writeFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { launch, watchErrors, serveDist, startServer, uiFor, cases, shot } from './helpers.mjs';

const rows = 'table.obs tbody tr';
const STILL = ['--demo-seed', '7', '--demo-warmup-steps', '60', '--demo-still'];

let browser;
before(async () => { browser = await launch(); });
after(async () => { await browser?.close(); });

/** Page errors, minus what the browser logs for each 401 answer: those are
 * the contract at work, not a fault. */
function watchUnexpectedErrors(page) {
  const errors = watchErrors(page);
  return () => errors.filter((e) => !/status of 401|401 \(Unauthorized\)/.test(e));
}

/** The status the API gives this page now (with its cookie, if any). */
function apiStatus(page, path = '/api/v1/namespaces') {
  return page.evaluate((p) => fetch(p).then((r) => r.status), path);
}

async function signIn(page, token) {
  await page.fill('#token', token);
  await page.press('#token', 'Enter');
}

/** A stand-in of the session contract in front of one namespace whose
 * stream sends `snapshot` once and stays open; the namespaces in
 * `forbidden` answer 403 to the signed-in user. */
function standIn({ token, snapshot, rejection, forbidden = [] }) {
  const sessions = new Set();
  const streams = new Set();
  const seen = [];
  const refused = [];
  const user = { user: 'alice', groups: ['team-a'], auth: 'token' };
  const api = (req, res, path) => {
    seen.push(`${req.method} ${path}`);
    const cookie = /(?:^|;\s*)dd_session=([^;]+)/.exec(req.headers.cookie ?? '')?.[1];
    const signedIn = cookie !== undefined && sessions.has(cookie);
    const json = (status, body, headers = {}) => {
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(JSON.stringify(body));
    };
    const unauthorized = () => json(401, { error: 'unauthorized' }, { 'www-authenticate': 'Bearer' });
    if (path === '/api/v1/session' && req.method === 'POST') {
      let body = '';
      req.on('data', (c) => { body += c; });
      req.on('end', () => {
        let presented = null;
        try { presented = JSON.parse(body).token; } catch { /* not JSON: refused below */ }
        if (!/^application\/json/.test(req.headers['content-type'] ?? '') || presented !== token) {
          return json(401, { error: rejection }, { 'www-authenticate': 'Bearer' });
        }
        const id = randomUUID();
        sessions.add(id);
        json(200, user, { 'set-cookie': `dd_session=${id}; HttpOnly; SameSite=Strict; Path=/` });
      });
      return;
    }
    if (path === '/api/v1/session' && req.method === 'DELETE') {
      sessions.delete(cookie);
      res.writeHead(204, { 'set-cookie': 'dd_session=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0' });
      return res.end();
    }
    if (!signedIn) return unauthorized();
    if (path === '/api/v1/session') return json(200, user);
    if (path === '/api/v1/namespaces') return json(200, { namespaces: ['team-a'], demo: false });
    if (forbidden.some((ns) => path.startsWith(`/api/v1/namespaces/${ns}/`))) {
      refused.push(path);
      return json(403, { error: 'forbidden' });
    }
    if (path === '/api/v1/namespaces/team-a/snapshots') {
      res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-store' });
      res.write(`event: snapshot\ndata: ${JSON.stringify(snapshot)}\n\n`);
      streams.add(res);
      res.on('close', () => streams.delete(res));
      return;
    }
    json(404, { error: 'not found' });
  };
  /** Every session ends server-side (expired, or signed out elsewhere),
   * and the open streams with them. */
  const expireAll = () => {
    sessions.clear();
    for (const s of streams) s.end();
  };
  return { api, seen, refused, expireAll };
}

test('stand-in: the form on 401, the refusal as text, the dashboard, a reload, a session that ends, sign-out', { timeout: 120_000 }, async () => {
  const snapshot = cases().find((c) => c.name === 'complete').snapshot;
  const rejection = 'bad token <b>x</b>';
  const stand = standIn({ token: 'the-secret', snapshot, rejection });
  const site = await serveDist(stand.api);
  const page = await browser.context.newPage();
  const errors = watchUnexpectedErrors(page);
  try {
    // The offline page makes no request, so it needs no sign-in.
    await page.goto(`${site.url}/offline`);
    await page.waitForSelector('#input', { timeout: 30_000 });
    assert.equal(await page.locator('#signin').count(), 0, 'no form on the offline page');
    assert.deepEqual(stand.seen, [], 'the offline page asked the API nothing');

    await page.goto(`${site.url}/`);
    await page.waitForSelector('form#signin', { timeout: 30_000 });
    assert.equal(await page.locator('#token').getAttribute('type'), 'password');
    assert.equal(await page.locator('#token').getAttribute('autocomplete'), 'current-password');
    assert.equal(await page.locator('label[for="token"]').count(), 1, 'the field is labelled');
    assert.equal(await page.locator(rows).count(), 0, 'no dashboard without a session');
    assert.equal(await page.locator('#signout').count(), 0);
    await shot(page, 'signin-form');

    // A wrong token: the stand-in's words, markup included, as text.
    await signIn(page, 'wrong');
    await page.waitForFunction((t) => document.querySelector('#signin-error')?.textContent.includes(t),
      rejection, { timeout: 10_000 });
    assert.equal(await page.locator('#signin-error b').count(), 0, 'the refusal is not parsed as HTML');
    assert.equal(await page.inputValue('#token'), '', 'the typed token does not stay in the page');
    await shot(page, 'signin-refused');

    // The right token: the dashboard loads without a page reload.
    await page.evaluate(() => { window.__samePage = true; });
    await signIn(page, 'the-secret');
    await page.waitForSelector(rows, { timeout: 30_000 });
    assert.equal(await page.evaluate(() => window.__samePage), true, 'no page reload');
    assert.equal((await page.locator('#whoami').textContent()).trim(), 'alice');
    assert.equal(await page.locator('#signout').count(), 1);
    assert.equal(await page.locator('#signin').count(), 0);
    assert.ok(stand.seen.includes('POST /api/v1/session'));
    await shot(page, 'signin-dashboard');

    // A reload keeps the session (the cookie): straight to the dashboard.
    await page.reload();
    await page.waitForSelector(rows, { timeout: 30_000 });
    await page.waitForFunction(() => document.querySelector('#whoami')?.textContent.trim() === 'alice',
      null, { timeout: 10_000 });
    assert.equal(await page.locator('#signin').count(), 0);

    // The session ends on the server while the stream is open: the
    // stream's reconnect meets a 401, and the page shows the form instead
    // of retrying.
    stand.expireAll();
    await page.waitForSelector('form#signin', { timeout: 30_000 });
    assert.match(await page.locator('#signin-error').textContent(), /session has ended/);
    assert.equal(await page.locator('#whoami').count(), 0);

    // Sign in again, then sign out: the form, and the API says 401 again.
    await signIn(page, 'the-secret');
    await page.waitForSelector(rows, { timeout: 30_000 });
    assert.equal(await page.locator('#signin').count(), 0);
    await page.click('#signout');
    await page.waitForSelector('form#signin', { timeout: 10_000 });
    assert.equal(await page.locator('#signout').count(), 0);
    assert.equal(await page.locator('#whoami').count(), 0);
    assert.ok(stand.seen.includes('DELETE /api/v1/session'));
    assert.equal(await apiStatus(page), 401);
    await page.reload();
    await page.waitForSelector('form#signin', { timeout: 30_000 });
    assert.deepEqual(errors(), []);
  } finally {
    await page.close();
    await site.close();
  }
});

test('stand-in: a namespace the user may not see stops the retries, says so, and offers the one they may', { timeout: 120_000 }, async () => {
  const snapshot = cases().find((c) => c.name === 'complete').snapshot;
  const stand = standIn({ token: 'the-secret', snapshot, rejection: 'no', forbidden: ['team-b'] });
  const site = await serveDist(stand.api);
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  try {
    await page.goto(`${site.url}/`);
    await page.waitForSelector('form#signin', { timeout: 30_000 });
    await signIn(page, 'the-secret');
    await page.waitForSelector(rows, { timeout: 30_000 });
    // Signed in (the cookie), a link to a namespace this user may not see.
    await page.goto(`${site.url}/?ns=team-b`);
    await page.waitForSelector('#forbidden-message', { timeout: 30_000 });
    assert.equal((await page.locator('#forbidden-message').textContent()).trim(),
      'The signed-in user alice may not see namespace team-b.');
    await page.waitForSelector('#forbidden-offers button', { timeout: 10_000 });
    assert.deepEqual(await page.$$eval('#forbidden-offers button', (bs) => bs.map((b) => b.textContent.trim())), ['team-a']);
    assert.match(await page.locator('#connection').textContent(), /not allowed/);
    assert.equal(await page.locator('form#signin').count(), 0, 'signed in: no form');
    await shot(page, 'signin-forbidden-namespace');

    // The offer opens team-a; team-b was refused exactly twice (the
    // stream, then the probe of its status): never retried.
    await page.click('#forbidden-offers button');
    await page.waitForSelector(rows, { timeout: 30_000 });
    assert.equal(await page.locator('#forbidden').count(), 0);
    assert.deepEqual(stand.refused, ['/api/v1/namespaces/team-b/snapshots', '/api/v1/namespaces/team-b/snapshots'],
      `all requests: ${stand.seen.join(', ')}`);
    assert.deepEqual(errors.filter((e) => !/status of (401|403)|40[13] \((Unauthorized|Forbidden)\)/.test(e)), []);
  } finally {
    await page.close();
    await site.close();
  }
});

test('real binary (--token): sign in, the rows of team-a, a reload, sign-out', { timeout: 180_000 }, async () => {
  const secret = `s-${randomUUID()}`;
  const server = await startServer([...STILL, '--token', secret]);
  const ui = await uiFor(server.url);
  const page = await browser.context.newPage();
  const errors = watchUnexpectedErrors(page);
  const teamA = () => page.$$eval(rows, (trs) => trs.map((t) => t.dataset.key));
  try {
    await page.goto(`${ui.url}/?ns=team-a`);
    await page.waitForSelector('form#signin', { timeout: 30_000 });
    assert.equal(await apiStatus(page), 401, 'the API wants a sign-in');

    await signIn(page, `${secret}-wrong`);
    await page.waitForFunction(() => document.querySelector('#signin-error')?.textContent.includes('unauthorized'),
      null, { timeout: 10_000 });

    await signIn(page, secret);
    await page.waitForSelector(rows, { timeout: 30_000 });
    const keys = await teamA();
    assert.ok(keys.length > 0 && keys.every((k) => k.split('/')[1] === 'team-a'), `rows of team-a: ${keys}`);
    await page.waitForSelector('#signout', { timeout: 10_000 });
    // The header shows whatever name the server gives (none when null).
    const { user } = await page.evaluate(() => fetch('/api/v1/session').then((r) => r.json()));
    if (user) {
      await page.waitForFunction((u) => document.querySelector('#whoami')?.textContent.trim() === u, user, { timeout: 10_000 });
    } else {
      assert.equal(await page.locator('#whoami').count(), 0);
    }

    await page.reload();
    await page.waitForSelector(rows, { timeout: 30_000 });
    assert.deepEqual(await teamA(), keys, 'the same rows after a reload');
    assert.equal(await page.locator('#signin').count(), 0);

    await page.click('#signout');
    await page.waitForSelector('form#signin', { timeout: 10_000 });
    assert.equal(await apiStatus(page), 401, 'signed out for the server too');
    assert.deepEqual(errors(), []);
  } finally {
    await page.close();
    await ui.close();
    await server.stop();
  }
});

test('real binary (--auth kubernetes): alice signs in, sees team-a only, is refused team-b as text, a reload keeps her in', { timeout: 180_000 }, async () => {
  const dir = mkdtempSync(join(tmpdir(), 'dd-users-'));
  const alice = `alice-${randomUUID()}`;
  const users = join(dir, 'users.txt');
  writeFileSync(users, `# token user namespaces\n${alice} alice team-a\n`);
  const server = await startServer([...STILL, '--auth', 'kubernetes', '--demo-users', users]);
  const ui = await uiFor(server.url);
  const page = await browser.context.newPage();
  const errors = watchUnexpectedErrors(page);
  const keys = () => page.$$eval(rows, (trs) => trs.map((t) => t.dataset.key));
  try {
    await page.goto(`${ui.url}/?ns=team-a`);
    await page.waitForSelector('form#signin', { timeout: 30_000 });
    assert.equal(await apiStatus(page), 401, 'no identity: 401');
    // The form says how to get a token this server takes.
    await page.waitForFunction(() => document.querySelector('#signin-hint')?.textContent.includes('kubectl create token'),
      null, { timeout: 10_000 });

    await signIn(page, `${alice}-wrong`);
    await page.waitForFunction(() => document.querySelector('#signin-error')?.textContent.includes('unauthorized'),
      null, { timeout: 10_000 });

    await signIn(page, alice);
    await page.waitForSelector(rows, { timeout: 30_000 });
    const shown = await keys();
    assert.ok(shown.length > 0 && shown.every((k) => k.split('/')[1] === 'team-a'), `rows of team-a: ${shown}`);
    await page.waitForFunction(() => document.querySelector('#whoami')?.textContent.trim() === 'alice', null, { timeout: 10_000 });
    const listed = await page.evaluate(() => fetch('/api/v1/namespaces').then((r) => r.json()));
    assert.deepEqual(listed.namespaces, ['team-a'], 'the cluster\'s RBAC decides what alice sees');
    assert.equal(await apiStatus(page, '/api/v1/namespaces/team-b/snapshot'), 403);

    await page.goto(`${ui.url}/?ns=team-b`);
    await page.waitForSelector('#forbidden-message', { timeout: 30_000 });
    assert.equal((await page.locator('#forbidden-message').textContent()).trim(),
      'The signed-in user alice may not see namespace team-b.');

    await page.goto(`${ui.url}/?ns=team-a`);
    await page.waitForSelector(rows, { timeout: 30_000 });
    await page.reload();
    await page.waitForSelector(rows, { timeout: 30_000 });
    assert.deepEqual(await keys(), shown, 'the same rows after a reload: still signed in');
    await shot(page, 'signin-kubernetes-demo');
    assert.deepEqual(errors().filter((e) => !/status of 403|403 \(Forbidden\)/.test(e)), []);
  } finally {
    await page.close();
    await ui.close();
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
});
