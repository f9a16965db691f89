// The Search view in headless Chromium against the real server serving the tiny fixture model as an
// embedding model (`qvl serve --task embed`, its index a SQLite file in a temporary folder): a PDF
// picked in the view is indexed (POST /v1/index), a question shows its pages as thumbnails ranked by
// the model (POST /v1/search, the thumbnails fetched from the server), and "Ask in chat" puts that page
// in the chat composer as an attachment. No answer is canned: the tiny model's vectors are random,
// so the test checks the ranking the server returned, not which page wins.
//
//   cd tests/browser && npm install && QVL_BINARY=../../build/qvl node --test search.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import os from 'node:os';
import { writeFileSync, mkdtempSync, existsSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { makePdf } from './make_pdf.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const MODEL = path.join(ROOT, 'tests/fixtures/tiny-qwen3vl');
const TIME_SCALE = Number(process.env.QVL_TEST_TIME_SCALE) || 1;
const LAUNCH = {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
};

let server, base, browser, dir;
let serverLog = '';

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)); });
  });
}

before(async () => {
  const binary = process.env.QVL_BINARY || path.join(ROOT, 'build/qvl');
  assert.ok(existsSync(binary), `qvl binary not found at ${binary} (set QVL_BINARY)`);
  dir = mkdtempSync(path.join(os.tmpdir(), 'qvl-search-browser-'));
  const port = await freePort();
  server = spawn(binary, ['serve', '--model', MODEL, '--task', 'embed', '--weights', 'f32', '--host', '127.0.0.1',
    '--port', String(port), '--jobs-db', 'memory', '--index-db', `sqlite:${path.join(dir, 'search.db')}`],
  { stdio: ['ignore', 'pipe', 'pipe'] });
  server.stdout.on('data', (d) => { serverLog += d; });
  server.stderr.on('data', (d) => { serverLog += d; });
  base = `http://127.0.0.1:${port}/`;
  const end = Date.now() + 60000 * TIME_SCALE;
  for (;;) {
    try { if ((await fetch(`${base}health`)).ok) break; } catch { /* not listening yet */ }
    if (server.exitCode != null) throw new Error(`qvl serve exited with ${server.exitCode}:\n${serverLog}`);
    if (Date.now() > end) throw new Error(`qvl serve not healthy:\n${serverLog}`);
    await new Promise((r) => setTimeout(r, 100));
  }
  browser = await chromium.launch(LAUNCH);
});

after(async () => {
  if (browser) await browser.close();
  if (server) {
    server.kill('SIGTERM');
    await new Promise((r) => { if (server.exitCode != null) r(); else server.once('exit', r); });
  }
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('Search view: index a PDF, see its pages ranked as thumbnails, ask in chat with a page attached', async () => {
  const ctx = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  await page.goto(base);
  await page.waitForSelector('#status[data-state="ready"]');
  await page.click('#tab-search');
  assert.equal(await page.isVisible('#search-view'), true);
  assert.equal(await page.isVisible('#conversation'), false);

  const pdf = path.join(dir, 'report.pdf');
  // Small pages: at the default 144 dpi each is a few hundred image tokens for the model (a Letter page
  // is 1,800, minutes on a shared machine).
  writeFileSync(pdf, makePdf([{ width: 220, height: 280, lines: ['Invoice', 'Total 31.50'] },
    { width: 280, height: 220, lines: ['Terms'] }]));
  await page.fill('#search-collection', 'browser');
  await page.setInputFiles('#search-file-input', pdf);
  await page.waitForFunction(() => /“report\.pdf”: added \(2 pages\)/.test(document.querySelector('#search-status').textContent),
    null, { timeout: 120000 * TIME_SCALE }).catch(async (e) => {
    throw new Error(`${e.message}; status: ${await page.textContent('#search-status')}; notice: ` +
      `${await page.textContent('#notice')}\n${serverLog.slice(-2000)}`);
  });
  await page.waitForFunction(() => document.querySelector('#search-indexed').textContent.includes('report.pdf · 2 pages'));

  await page.fill('#search-query', 'where is the total?');
  await page.click('#search-btn');
  await page.waitForFunction(() => document.querySelectorAll('.search-hit img[src^="blob:"]').length === 2,
    null, { timeout: 30000 * TIME_SCALE });
  const shown = await page.$$eval('.search-hit', (hits) => hits.map((e) => ({
    id: Number(e.dataset.pageId), label: e.querySelector('.search-label').textContent,
    rank: e.querySelector('.search-rank').textContent, width: e.querySelector('img').naturalWidth })));
  // The same order and pages as the API gives for the same question.
  const api = await (await fetch(`${base}v1/search`, { method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ query: 'where is the total?', collection: 'browser' }) })).json();
  assert.deepEqual(shown.map((s) => s.id), api.data.map((d) => d.page_id));
  assert.deepEqual(shown.map((s) => s.rank), ['#1', '#2']);
  assert.deepEqual(shown.map((s) => s.label).sort(), ['report.pdf · page 1', 'report.pdf · page 2']);
  for (const s of shown) assert.ok(s.width > 0 && s.width <= 256, `a thumbnail of ${s.width} px`);
  // QVL_SEARCH_SCREENSHOT=FILE.png keeps a picture of the results (docs/screenshots/search-light.png).
  if (process.env.QVL_SEARCH_SCREENSHOT) await page.screenshot({ path: process.env.QVL_SEARCH_SCREENSHOT });

  await page.locator('.search-hit').first().getByRole('button', { name: 'Ask in chat' }).click();
  await page.waitForSelector('#conversation:not([hidden])');
  await page.waitForFunction(() => document.querySelectorAll('#attachments li').length === 1);
  const chip = await page.textContent('#attachments');
  assert.match(chip, new RegExp(`report-p${api.data[0].page}\\.jpg`));
  assert.deepEqual(errors, []);
  await ctx.close();
});
