// Shared helpers of the end-to-end tests: Chromium through playwright-core,
// the real dispatch-dash binary, and a small static server of dist/ (with the
// same headers as the binary) for the pages that need no API.
import { chromium } from 'playwright-core';
import { execFileSync, spawn } from 'node:child_process';
import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
import { readFileSync, readdirSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { join, dirname, extname } from 'node:path';
import { tmpdir } from 'node:os';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
export const DIST = join(ROOT, 'dist');
export const CASES = join(ROOT, '..', 'shared', 'cases');
export const SHOTS = join(ROOT, 'artifacts', 'screenshots');
export const BINARY = process.env.DISPATCH_DASH_BIN ?? join(ROOT, 'target', 'release', 'dispatch-dash');

export const CHROMIUM = ['/usr/lib/chromium/chromium', '/usr/bin/chromium'].find(existsSync);
/** The flags every browser of the tests and benchmarks runs with. */
export const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--disable-sync', '--no-first-run'];
/** The size of every test's and benchmark's page. */
export const VIEWPORT = { width: 1400, height: 900 };

/** A fresh headless Chromium with its own profile directory. */
export async function launch() {
  const profile = mkdtempSync(join(tmpdir(), 'dd-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    viewport: VIEWPORT,
    args: CHROMIUM_ARGS,
  });
  const close = async () => { await context.close(); rmSync(profile, { recursive: true, force: true }); };
  return { context, close };
}

/** Records page errors and console errors (a broken wasm shows up there). */
export function watchErrors(page) {
  const errors = [];
  page.on('pageerror', (e) => errors.push(`pageerror: ${e.message}`));
  page.on('console', (m) => {
    // The browser logs a failed EventSource connection while the server is
    // down on purpose; everything else counts.
    if (m.type() === 'error' && !(page.__expectDisconnect && /ERR_CONNECTION_REFUSED|EventSource|net::/.test(m.text()))) {
      errors.push(`console: ${m.text()}`);
    }
  });
  return errors;
}

export async function shot(page, name) {
  mkdirSync(SHOTS, { recursive: true });
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: false });
}

/** The golden cases, read at test time. */
export function cases() {
  return readdirSync(CASES).filter((f) => f.endsWith('.json')).sort()
    .map((f) => JSON.parse(readFileSync(join(CASES, f), 'utf8')));
}

/** The data of the stream's `rows` event for `snapshot`, as `serve` makes
 * it: the engine's classification of that snapshot, each observation with
 * its attempts, on one line (`classify --output attempts-json` of the real
 * binary prints the same values). */
export function rowsEventData(snapshot) {
  const dir = mkdtempSync(join(tmpdir(), 'dd-rows-'));
  try {
    const file = join(dir, 'snapshot.json');
    writeFileSync(file, JSON.stringify(snapshot));
    const out = execFileSync(BINARY, ['classify', '--output', 'attempts-json', file],
      { maxBuffer: 256 << 20, encoding: 'utf8' });
    return JSON.stringify(JSON.parse(out));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8',
  '.wasm': 'application/wasm', '.css': 'text/css; charset=utf-8', '.svg': 'image/svg+xml' };

/** The CSP the binary sends (server/src/assets.rs), computed the same way. */
export function csp(html) {
  const hashes = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)]
    .filter((m) => !/ src=/.test(m[1]))
    .map((m) => `'sha256-${createHash('sha256').update(m[2]).digest('base64')}'`);
  return `default-src 'self'; script-src 'self' 'wasm-unsafe-eval' ${hashes.join(' ')}; style-src 'self'; `
    + "img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; "
    + "form-action 'self'; frame-ancestors 'none'";
}

/** Serves dist/ like the binary does; `api(req, res)` answers /api paths;
 * `pages` maps other paths to `{ type, body }` (served without the CSP).
 * `headScript`, for the benchmarks, is put first in the page's head (and
 * allowed by its CSP like the page's own inline scripts). */
export async function serveDist(api, pages = {}, { headScript } = {}) {
  let index = readFileSync(join(DIST, 'index.html'), 'utf8');
  if (headScript) index = index.replace('<head>', `<head><script>${headScript}</script>`);
  const policy = csp(index);
  const server = createServer((req, res) => {
    const path = new URL(req.url, 'http://x').pathname;
    if (path.startsWith('/api/')) {
      if (api) return api(req, res, path);
      res.writeHead(404); return res.end();
    }
    if (Object.hasOwn(pages, path)) {
      res.writeHead(200, { 'content-type': pages[path].type, 'cache-control': 'no-store' });
      return res.end(pages[path].body);
    }
    if (path === '/' || path === '/index.html' || !extname(path)) {
      res.writeHead(200, { 'content-type': TYPES['.html'], 'content-security-policy': policy,
        'x-content-type-options': 'nosniff' });
      return res.end(index);
    }
    const file = join(DIST, path);
    if (!file.startsWith(DIST) || !existsSync(file)) { res.writeHead(404); return res.end(); }
    res.writeHead(200, { 'content-type': TYPES[extname(file)] ?? 'application/octet-stream',
      'content-security-policy': policy, 'x-content-type-options': 'nosniff' });
    res.end(readFileSync(file));
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const url = `http://127.0.0.1:${server.address().port}`;
  return { url, close: () => new Promise((r) => { server.closeAllConnections(); server.close(r); }) };
}

/** Serves dist/ with a stand-in of the server's API for one namespace,
 * `team-a`, that nobody signs in to. Each stream it opens sends `snapshot`,
 * then every frame of `changes` at once; `send(change)` sends a change to
 * every stream open. */
export async function serveSnapshot(snapshot, { changes = [] } = {}) {
  const streams = new Set();
  let id = 0;
  const frame = (event, data) => `id: ${++id}\nevent: ${event}\ndata: ${JSON.stringify(data)}\n\n`;
  const site = await serveDist((req, res, path) => {
    const json = (body) => { res.writeHead(200, { 'content-type': 'application/json' }); res.end(JSON.stringify(body)); };
    if (path === '/api/v1/namespaces') return json({ namespaces: ['team-a'], allNamespaces: false });
    if (path === '/api/v1/session') return json({ user: null, auth: 'none' });
    if (path === '/api/v1/namespaces/team-a/snapshots') {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
      res.write(frame('snapshot', snapshot));
      for (const change of changes) res.write(frame('change', change));
      streams.add(res);
      req.on('close', () => streams.delete(res));
      return;
    }
    res.writeHead(404); res.end();
  });
  const send = (change) => { for (const s of streams) s.write(frame('change', change)); };
  const close = async () => { for (const s of streams) s.end(); await site.close(); };
  return { url: site.url, send, close };
}

/** Starts `dispatch-dash serve --demo` and resolves with its URL once ready. */
export async function startServer(extra = [], listen = '127.0.0.1:0') {
  const child = spawn(BINARY, ['serve', '--demo', '--listen', listen, ...extra],
    { env: { ...process.env, RUST_LOG: 'info', NO_COLOR: '1' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let log = '';
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`no URL logged in 60 s:\n${log}`)), 60_000);
    const read = (chunk) => {
      log += chunk;
      const m = log.match(/serving on (http:\/\/[^\s/]+)\//);
      if (m) { clearTimeout(timer); resolve(m[1]); }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    child.on('exit', (code) => { clearTimeout(timer); reject(new Error(`server exited ${code}:\n${log}`)); });
  });
  // Ready once every watch has listed: what the page reads is then the
  // embedded cluster as it stands.
  const deadline = Date.now() + 60_000;
  for (;;) {
    const r = await fetch(`${url}/readyz`).catch(() => null);
    if (r?.ok) break;
    if (Date.now() > deadline || child.exitCode !== null) {
      child.kill('SIGKILL');
      throw new Error(`server not ready within 60 s:\n${log}`);
    }
    await new Promise((res) => setTimeout(res, 100));
  }
  const stop = () => new Promise((resolve) => {
    if (child.exitCode !== null) return resolve();
    child.once('exit', resolve);
    child.kill('SIGTERM');
  });
  return { url, child, stop, log: () => log };
}

/** A free TCP port on 127.0.0.1. */
export async function freePort() {
  const s = createServer();
  await new Promise((r) => s.listen(0, '127.0.0.1', r));
  const { port } = s.address();
  await new Promise((r) => s.close(r));
  return port;
}

/**
 * Where the browser should load the UI from: the binary itself when it
 * serves the embedded UI, otherwise dist/ with /api proxied to the binary
 * (for a binary whose router does not mount assets yet).
 */
export async function uiFor(apiUrl) {
  const r = await fetch(`${apiUrl}/`).catch(() => null);
  const html = r && r.ok && (r.headers.get('content-type') ?? '').startsWith('text/html');
  if (html) return { url: apiUrl, proxied: false, close: async () => {} };
  const target = new URL(apiUrl);
  const { request } = await import('node:http');
  const site = await serveDist((req, res) => {
    const up = request({ host: target.hostname, port: target.port, path: req.url, method: req.method,
      headers: { ...req.headers, host: target.host } }, (r2) => {
      res.writeHead(r2.statusCode, r2.headers);
      r2.pipe(res);
    });
    up.on('error', () => { if (!res.headersSent) res.writeHead(502); res.end(); });
    req.pipe(up);
  });
  return { ...site, proxied: true };
}

/** The page's address as the page itself has it now (Playwright's page.url()
 * learns of history.replaceState asynchronously). */
export function href(page) {
  return page.evaluate(() => location.href);
}
