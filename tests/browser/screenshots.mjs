// DEVELOPMENT AID: renders the page against dev_server.mjs (canned answers) in headless Chromium
// and writes docs/screenshots/{desktop,phone}-{light,dark}.png plus the empty start page, and
// tools-{light,dark}.png (tool-call cards), json-{light,dark}.png (a JSON-schema answer) and
// settings-{light,dark}.png (the dialog with the answer-format and tools fields), and
// pdf-{light,dark}.png, pdf-phone-{light,dark}.png (a two-page PDF loaded, page-by-page QwenVL HTML
// results with their boxes), pdf-progress-{light,dark}.png (a three-page document page by page, caught
// with page 1 done, page 2's answer coming in and page 3 queued), and video-{light,dark}.png (an 8-s clip's strip of sampled frames in the
// composer and in a sent question, an answer whose times link to the strip, one of them followed).
// The PDF's and the clip's thumbnails come from the real `qvl serve` when build/qvl (or QVL_BINARY)
// exists, rendered once for the shots; otherwise the dev server's blank ones. The answers and timings
// in every shot are the dev server's canned ones: wherever a shot is shown (README, docs/screenshots/
// README.md) it must say so.
//
//   cd tests/browser && npm install && node screenshots.mjs [--only conversation|tools|pdf|progress|video]
//   QVL_SCREENSHOTS_DIR=/tmp/shots node screenshots.mjs     (somewhere else than docs/screenshots)
import { chromium } from 'playwright-core';
import path from 'node:path';
import { mkdirSync, existsSync, readFileSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { startDevServer } from './dev_server.mjs';
import { makePdf } from './make_pdf.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.resolve(process.env.QVL_SCREENSHOTS_DIR || path.resolve(HERE, '../../docs/screenshots'));
const only = process.argv.includes('--only') ? process.argv[process.argv.indexOf('--only') + 1] : '';
const SCENE = path.join(HERE, 'assets/scene.png');
export const LAUNCH = {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
};

// An invoice-like first page and a landscape second page, laid out where the dev server's canned
// QwenVL HTML boxes point.
const PDF = makePdf([
  { width: 612, height: 792, lines: ['Invoice 2026-042', 'ACME Tools Ltd, 12 Harbour Road', '', 'Hammer   2   24.00',
    'Nails (box)   5   7.50', '', 'Total 31.50 EUR'] },
  { width: 792, height: 612, lines: ['Terms and conditions', 'Payment within 30 days.', 'Late payment: 1% a month.'] },
]);
const PDF_PATH = path.join(process.env.TMPDIR || '/tmp', 'qvl-screenshot-invoice.pdf');

// Three pages asked page by page, for the shot of a document in progress.
const PROGRESS_PDF = makePdf([
  { width: 612, height: 792, lines: ['Invoice 2026-042', 'ACME Tools Ltd, 12 Harbour Road', '', 'Hammer   2   24.00',
    'Nails (box)   5   7.50', '', 'Total 31.50 EUR'] },
  { width: 612, height: 792, lines: ['Invoice 2026-043', 'ACME Tools Ltd, 12 Harbour Road', '', 'Saw   1   18.90',
    'Screws (box)   3   4.20', '', 'Total 31.50 EUR'] },
  { width: 612, height: 792, lines: ['Delivery note 2026-042', 'Delivered 2026-12-02', 'Received by: J. Smith'] },
]);
const PROGRESS_PDF_PATH = path.join(process.env.TMPDIR || '/tmp', 'qvl-screenshot-invoices.pdf');

// An 8-s clip of moving shapes (tests/fixtures/video): 16 sampled frames in 8 groups.
const CLIP_PATH = path.resolve(HERE, '../fixtures/video/videos/long_112x80_24fps.mp4');

// The real server's answers for the PDF's pages (thumbnails rendered by Poppler) and for the clip's
// frames (decoded by libav), each null when there is no binary or it failed.
async function realAnswers(wanted) {
  const none = { pages: null, progressPages: null, frames: null };
  const binary = process.env.QVL_BINARY || path.resolve(HERE, '../../build/qvl');
  if (!wanted.pages && !wanted.progressPages && !wanted.frames) return none;
  if (!existsSync(binary)) return none;
  const port = 20000 + Math.floor(Math.random() * 20000);
  const child = spawn(binary, ['serve', '--model', path.resolve(HERE, '../fixtures/tiny-qwen3vl'), '--port', String(port),
    '--jobs-db', 'memory'], { stdio: 'ignore' });
  const post = async (route, body) => {
    try {
      const res = await fetch(`http://127.0.0.1:${port}${route}`, { method: 'POST',
        headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
      return res.ok ? await res.json() : null;
    } catch {
      return null;
    }
  };
  try {
    for (let k = 0; k < 100; k++) {
      try { if ((await fetch(`http://127.0.0.1:${port}/health`)).ok) break; } catch { /* not yet */ }
      await new Promise((r) => setTimeout(r, 200));
    }
    return {
      pages: wanted.pages ? await post('/v1/qvl/documents/pages',
        { file_data: `data:application/pdf;base64,${PDF.toString('base64')}`, dpi: 144, thumbnail_size: 256 }) : null,
      progressPages: wanted.progressPages ? await post('/v1/qvl/documents/pages',
        { file_data: `data:application/pdf;base64,${PROGRESS_PDF.toString('base64')}`, dpi: 144, thumbnail_size: 256 }) : null,
      frames: wanted.frames ? await post('/v1/qvl/videos/frames',
        { video: `data:video/mp4;base64,${readFileSync(CLIP_PATH).toString('base64')}` }) : null,
    };
  } finally {
    child.kill('SIGTERM');
  }
}

mkdirSync(OUT, { recursive: true });
const { writeFileSync } = await import('node:fs');
writeFileSync(PDF_PATH, PDF);
writeFileSync(PROGRESS_PDF_PATH, PROGRESS_PDF);
const real = await realAnswers({ pages: only === '' || only === 'pdf', progressPages: only === '' || only === 'progress',
  frames: only === '' || only === 'video' });
const server = await startDevServer({ delayMs: 5, documentPages: real.pages, videoFrames: real.frames });
const base = `http://127.0.0.1:${server.address().port}/`;
const browser = await chromium.launch(LAUNCH);

const shots = [
  { name: 'desktop', viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 },
  { name: 'phone', viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true },
];
const TOOLS = [
  { type: 'function', function: { name: 'get_weather', description: 'Current weather in a city',
    parameters: { type: 'object', properties: { city: { type: 'string' }, unit: { type: 'string', enum: ['celsius', 'fahrenheit'] } },
      required: ['city'] } } },
  { type: 'function', function: { name: 'find_objects', description: 'Search the picture for objects',
    parameters: { type: 'object', properties: { query: { type: 'string' }, max_results: { type: 'integer' } },
      required: ['query'] } } },
];
const SCHEMA = { type: 'object', properties: { caption: { type: 'string' }, objects: { type: 'array', items: { type: 'string' } },
  has_text: { type: 'boolean' } }, required: ['caption', 'objects', 'has_text'] };

async function toolShots() {
  for (const scheme of ['light', 'dark']) {
    const ctx = await browser.newContext({ viewport: { width: 1100, height: 820 }, colorScheme: scheme });
    await ctx.addInitScript((s) => localStorage.setItem('qvl.settings.v1', JSON.stringify(s)),
      { tools: JSON.stringify(TOOLS, null, 2), toolChoice: 'auto', answerFormat: 'text', jsonSchema: JSON.stringify(SCHEMA, null, 2) });
    const page = await ctx.newPage();
    await page.goto(base);
    await page.waitForSelector('#status[data-state="ready"]');
    await page.setInputFiles('#file-input', SCENE);
    await page.waitForSelector('.chip');
    await page.fill('#prompt', 'What is the weather like where this was taken? And find the car.');
    await page.press('#prompt', 'Enter');
    await page.waitForSelector('.answer[data-state="done"] .tool-card');
    await page.waitForTimeout(200);
    await page.screenshot({ path: path.join(OUT, `tools-${scheme}.png`) });
    // The settings dialog, switched to a JSON-schema answer, then that answer.
    await page.click('#settings-btn');
    await page.selectOption('#settings select[name="answerFormat"]', 'json_schema');
    await page.evaluate(() => { document.querySelector('#settings').scrollTop = 0; });
    await page.waitForTimeout(200);
    await page.screenshot({ path: path.join(OUT, `settings-${scheme}.png`) });
    await page.fill('#settings textarea[name="tools"]', '');
    await page.click('#settings button.primary-btn');
    await page.fill('#prompt', 'Describe the picture.');
    await page.press('#prompt', 'Enter');
    await page.waitForFunction(() => document.querySelectorAll('.answer[data-state="done"]').length === 2);
    await page.waitForTimeout(200);
    await page.screenshot({ path: path.join(OUT, `json-${scheme}.png`) });
    await ctx.close();
  }
}

async function pdfShots() {
  const views = [
    { name: 'pdf', viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 },
    { name: 'pdf-phone', viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true },
  ];
  for (const v of views) {
    for (const scheme of ['light', 'dark']) {
      const { name, ...opts } = v;
      const ctx = await browser.newContext({ ...opts, colorScheme: scheme });
      const page = await ctx.newPage();
      await page.goto(base);
      await page.waitForSelector('#status[data-state="ready"]');
      await page.setInputFiles('#file-input', PDF_PATH);
      await page.waitForSelector('.doc-card[data-state="ready"]');
      await page.click('.seg label:has-text("Page by page")');
      await page.click('.preset-card[data-preset="doc-html"]');
      await page.waitForSelector('.answer.batch[data-state="done"]', { timeout: 30000 });
      // A PDF loaded again in the composer, as for the next question.
      await page.setInputFiles('#file-input', PDF_PATH);
      await page.waitForSelector('.doc-card[data-state="ready"]');
      await page.evaluate(() => {
        const c = document.getElementById('conversation');
        c.style.scrollBehavior = 'auto';
        const batch = document.querySelector('.answer.batch');
        c.scrollTop += batch.getBoundingClientRect().top - c.getBoundingClientRect().top - 8;
      });
      await page.waitForTimeout(400);
      await page.screenshot({ path: path.join(OUT, `${name}-${scheme}.png`) });
      await ctx.close();
    }
  }
}

// A document in progress: page 1 done, page 2's answer coming in, page 3 queued. The dev server
// streams its canned Markdown into page 2's progress; once half of it has come, the poll's answer
// is held (given again to every poll), so the shot does not depend on timing.
async function progressShots() {
  const dev = await startDevServer({ delayMs: 40, documentPages: real.progressPages });
  try {
    for (const scheme of ['light', 'dark']) {
      const ctx = await browser.newContext({ viewport: { width: 1280, height: 1180 }, deviceScaleFactor: 1, colorScheme: scheme });
      const page = await ctx.newPage();
      let held = null;
      await page.route('**/v1/jobs/batch-*', async (route) => {
        if (route.request().method() !== 'GET') return route.continue();
        if (held) return route.fulfill({ json: held });
        const response = await route.fetch();
        const body = await response.json();
        const [one, two] = body.results;
        if (one.status === 'succeeded' && two.status === 'running' && two.progress && two.progress.tokens >= 26) held = body;
        return route.fulfill({ response, json: body });
      });
      await page.goto(`http://127.0.0.1:${dev.address().port}/`);
      await page.waitForSelector('#status[data-state="ready"]');
      await page.setInputFiles('#file-input', PROGRESS_PDF_PATH);
      await page.waitForSelector('.doc-card[data-state="ready"]');
      await page.click('.seg label:has-text("Page by page")');
      await page.click('.preset-card[data-preset="doc-markdown"]');
      for (const end = Date.now() + 30000; !held;) {
        if (Date.now() > end) throw new Error('page 2 was never seen with half its answer');
        await page.waitForTimeout(50);
      }
      await page.waitForFunction((label) => document.querySelector('.page-result[data-page="2"] .page-status')?.textContent === label,
        `working… ${held.results[1].progress.tokens} tokens`, { timeout: 30000 });
      await page.evaluate(() => {
        const c = document.getElementById('conversation');
        c.style.scrollBehavior = 'auto';
        const batch = document.querySelector('.answer.batch');
        c.scrollTop += batch.getBoundingClientRect().top - c.getBoundingClientRect().top - 8;
      });
      await page.waitForTimeout(400);
      await page.screenshot({ path: path.join(OUT, `pdf-progress-${scheme}.png`) });
      await ctx.close();
    }
  } finally {
    dev.close();
  }
}

async function videoShots() {
  for (const scheme of ['light', 'dark']) {
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1, colorScheme: scheme });
    const page = await ctx.newPage();
    await page.goto(base);
    await page.waitForSelector('#status[data-state="ready"]');
    await page.setInputFiles('#file-input', CLIP_PATH);
    await page.waitForSelector('.video-card[data-state="ready"]');
    await page.fill('#prompt', 'What happens in this video? Give the times.');
    await page.press('#prompt', 'Enter');
    await page.waitForSelector('.answer[data-state="done"] .time-link');
    await page.click('.answer .time-link >> nth=1');
    // The clip loaded again in the composer, as for the next question.
    await page.setInputFiles('#file-input', CLIP_PATH);
    await page.waitForSelector('.video-card[data-state="ready"]');
    await page.waitForTimeout(400);
    await page.screenshot({ path: path.join(OUT, `video-${scheme}.png`) });
    await ctx.close();
  }
}

try {
  if (only === 'pdf') await pdfShots();
  if (only === 'progress') await progressShots();
  if (only === 'video') await videoShots();
  if (only === 'tools') await toolShots();
  for (const s of only && only !== 'conversation' ? [] : shots) {
    for (const scheme of ['light', 'dark']) {
      const ctx = await browser.newContext({ ...s, colorScheme: scheme });
      const page = await ctx.newPage();
      await page.goto(base);
      await page.waitForSelector('#status[data-state="ready"]');
      if (s.name === 'desktop' && scheme === 'light') {
        await page.screenshot({ path: path.join(OUT, 'start-light.png') });
      }
      await page.setInputFiles('#file-input', SCENE);
      await page.waitForSelector('.chip');
      await page.click('.preset-card[data-preset="describe"]');
      await page.waitForSelector('.answer[data-state="done"]');
      await page.setInputFiles('#file-input', SCENE);
      await page.waitForSelector('.chip');
      await page.click('.preset-chip[data-preset="ground"]');
      await page.waitForFunction(() => document.querySelectorAll('.answer[data-state="done"]').length === 2);
      await page.waitForSelector('.grounding .box');
      await page.fill('#prompt', 'Now turn that into a table of objects, please.');
      await page.evaluate(() => {
        const c = document.getElementById('conversation');
        c.style.scrollBehavior = 'auto';
        const last = [...document.querySelectorAll('.turn')].pop();
        c.scrollTop += last.getBoundingClientRect().top - c.getBoundingClientRect().top - 8;
      });
      await page.waitForTimeout(300);
      await page.screenshot({ path: path.join(OUT, `${s.name}-${scheme}.png`) });
      await ctx.close();
    }
  }
  if (!only) await toolShots();
  if (!only) await pdfShots();
  if (!only) await progressShots();
  if (!only) await videoShots();
} finally {
  await browser.close();
  server.close();
}
console.log(`screenshots written to ${OUT}`);
