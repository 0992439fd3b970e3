// Makes the README's two screenshots from the real page: the dashboard of a
// still demo cluster and the explanation of one of its failed jobs, written
// to docs/screenshots/. Run by scripts/screenshots.sh; not a test (its name
// does not end in .test.mjs), but it fails loudly when the page does not show
// what it photographs.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT, launch, watchErrors, startServer } from './helpers.mjs';

// The same still cluster the live dashboard's tests read: seed 7 after 60
// warm-up steps holds running, pending, held and failed jobs.
const STILL = ['--demo-seed', '7', '--demo-warmup-steps', '60', '--demo-still'];
const OUT = join(ROOT, 'docs', 'screenshots');
const rows = 'table.obs tbody tr';

const server = await startServer(STILL);
const browser = await launch();
try {
  const page = await browser.context.newPage();
  const errors = watchErrors(page);
  await page.setViewportSize({ width: 1280, height: 720 });
  await page.goto(`${server.url}/`);
  await page.waitForSelector(rows, { timeout: 30_000 });
  // Wait for the browser's own classification, not only the server's rows.
  await page.waitForFunction(() => !document.body.textContent.includes('classifying'), null, { timeout: 30_000 })
    .catch(() => {});
  mkdirSync(OUT, { recursive: true });
  await page.screenshot({ path: join(OUT, 'dashboard.png') });

  // A job that failed, out of memory when the namespace has one.
  const causes = ['out-of-memory', 'non-zero-exit', 'node-lost', 'preempted', 'evicted'];
  let failed = null;
  for (const cause of causes) {
    const row = page.locator(`${rows}[data-state="ended"][data-cause="${cause}"]`).first();
    if (await row.count() > 0) { failed = row; break; }
  }
  if (!failed) throw new Error('the still demo shows no failed job to explain');
  await failed.locator('button.open').click();
  await page.waitForSelector('#decided-by');
  await page.screenshot({ path: join(OUT, 'explanation.png') });
  if (errors.length) throw new Error(`the page reported errors: ${errors.join('\n')}`);
  console.log(`screenshots: ${join(OUT, 'dashboard.png')}, ${join(OUT, 'explanation.png')}`);
} finally {
  await browser.close();
  await server.stop();
}
