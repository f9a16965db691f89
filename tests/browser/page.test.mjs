// Browser tests of the web page in real headless Chromium against the real server:
// `qvl serve --model tests/fixtures/tiny-qwen3vl` on a free loopback port (issue 8 acceptance).
//
//   cd tests/browser && npm install && QVL_BINARY=../../build/qvl node --test page.test.mjs
//
// The tiny fixture model has random weights, so its answers are random tokens. Two tests need an
// answer with given text (a Markdown table; an HTML-injection attempt): those two answer the chat
// request inside the browser (page.route) with a stream in the server's format, and say so. Every
// other test goes through the real server.
//
// QVL_BROWSER_DEV=1 runs the same tests against dev_server.mjs (a fake API) to develop the tests
// themselves before the server exists; such a run tests the page only, never qvl.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import os from 'node:os';
import { writeFileSync, readFileSync, mkdtempSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';
import { makePdf, TWO_PAGES } from './make_pdf.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const MODEL = path.join(ROOT, 'tests/fixtures/tiny-qwen3vl');
const IMAGE = path.join(ROOT, 'tests/fixtures/golden/images/gradient_320x240.png');
const DEV = process.env.QVL_BROWSER_DEV === '1';
// How much slower than a release build the server runs: 4 under make sanitize
// (tests/web/CMakeLists.txt), where ASan makes a two-page PDF question take
// over a minute. Every wait for the server is multiplied by it.
const TIME_SCALE = Number(process.env.QVL_TEST_TIME_SCALE) || 1;
const LAUNCH = {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
};

let server;   // child process (real) or http.Server (dev)
let base;
let browser;
let serverLog = '';

function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.on('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

async function waitHealthy(url, ms) {
  const end = Date.now() + ms;
  for (;;) {
    try {
      const res = await fetch(`${url}health`);
      if (res.ok) return;
    } catch {
      // not listening yet
    }
    if (server.exitCode != null) throw new Error(`qvl serve exited with ${server.exitCode}:\n${serverLog}`);
    if (Date.now() > end) throw new Error(`qvl serve not healthy after ${ms} ms:\n${serverLog}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

before(async () => {
  if (DEV) {
    console.log('# QVL_BROWSER_DEV=1: fake API (dev_server.mjs); this run does NOT test qvl');
    const { startDevServer } = await import('./dev_server.mjs');
    server = await startDevServer({ delayMs: 20 });
    base = `http://127.0.0.1:${server.address().port}/`;
  } else {
    const binary = process.env.QVL_BINARY || path.join(ROOT, 'build/qvl');
    assert.ok(existsSync(binary), `qvl binary not found at ${binary} (set QVL_BINARY)`);
    const port = await freePort();
    // One slot: a Stop that did not free it would make the next request wait until the timeout.
    server = spawn(binary, ['serve', '--model', MODEL, '--host', '127.0.0.1', '--port', String(port),
      '--parallel', '1', '--timeout', String(60 * TIME_SCALE), '--jobs-db', 'memory'], { stdio: ['ignore', 'pipe', 'pipe'] });
    server.stdout.on('data', (d) => { serverLog += d; });
    server.stderr.on('data', (d) => { serverLog += d; });
    base = `http://127.0.0.1:${port}/`;
    await waitHealthy(base, 60000);
  }
  browser = await chromium.launch(LAUNCH);
});

after(async () => {
  if (browser) await browser.close();
  if (!server) return;
  if (DEV) { server.close(); return; }
  server.kill('SIGTERM');
  await new Promise((r) => { if (server.exitCode != null) r(); else server.once('exit', r); });
});

// A fresh page with settings chosen through localStorage (as a user's saved settings would be).
// `url`: where the page is loaded from (a StreamHold's, to hold its answers mid-stream).
async function openPage(settings = {}, url = base) {
  const ctx = await browser.newContext({ viewport: { width: 1100, height: 800 } });
  await ctx.addInitScript((s) => {
    localStorage.setItem('qvl.settings.v1', JSON.stringify({ temperature: 0, ...s }));
  }, settings);
  const page = await ctx.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(String(e)));
  // Console errors too: a Content-Security-Policy refusal only shows there.
  page.on('console', (m) => { if (m.type() === 'error' && !/Failed to load resource/.test(m.text())) errors.push(m.text()); });
  await page.goto(url);
  await page.waitForSelector('#status[data-state="ready"]');
  return { page, ctx, errors };
}

const lastAnswer = (page) => page.locator('.answer').last();

// Once `hold` holds the stream, the text of the last answer's first `selector`: it must show
// while the answer is still streaming. Releases the hold.
async function shownWhileHeld(page, hold, selector, what) {
  await hold.held;
  try {
    const el = lastAnswer(page).locator(selector).first();
    await page.waitForFunction((sel) => {
      const answers = document.querySelectorAll('.answer');
      const e = answers.length ? answers[answers.length - 1].querySelector(sel) : null;
      return e && e.textContent.length > 0;
    }, selector, { timeout: 10000 * TIME_SCALE }).catch(() => {
      throw new Error(`no ${what} while the stream was held after its first piece`);
    });
    assert.equal(await lastAnswer(page).getAttribute('data-state'), 'streaming');
    return await el.textContent();
  } finally {
    hold.release();  // even on failure: a held stream would keep the run alive until its timeout
  }
}

// A loopback proxy in front of the server that holds an SSE answer after its first event matching
// `isPiece` (a parsed chunk) until release(). To see that the page renders pieces as they come, a
// test looks at the page while the stream is held: no timing involved. (Throttling the link instead
// let every piece land within one animation frame on a loaded CI machine, and the test failed.)
// What the page should show then is what the proxy had forwarded: a busy server may put several
// tokens, even a whole tool call, in one event, so the test compares with that, not with a guess.
async function startStreamHold(isPiece) {
  const sent = [];  // the chunks forwarded, in order
  let heldAfter = 0;  // how many of them went out before the hold
  let release;
  const released = new Promise((r) => { release = r; });
  let onHeld;
  const held = new Promise((r) => { onHeld = r; });
  const target = new URL(base);
  const proxy = http.createServer((req, res) => {
    const up = http.request({ host: target.hostname, port: target.port, path: req.url, method: req.method,
      headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode, answer.headers);
      if (!/^text\/event-stream/.test(answer.headers['content-type'] || '')) { answer.pipe(res); return; }
      // Whole events only, in order; once one matched, the rest wait for release().
      let buffered = '';
      let holding = false;
      let queue = Promise.resolve();
      answer.setEncoding('utf8');
      answer.on('data', (text) => {
        buffered += text;
        for (let end; (end = buffered.indexOf('\n\n')) >= 0;) {
          const event = buffered.slice(0, end + 2);
          buffered = buffered.slice(end + 2);
          queue = queue.then(async () => {
            if (holding) await released;
            res.write(event);
            const data = event.startsWith('data: ') ? event.slice(6).trim() : '';
            if (!data || data === '[DONE]') return;
            const chunk = JSON.parse(data);
            sent.push(chunk);
            if (!holding && isPiece(chunk)) { holding = true; heldAfter = sent.length; onHeld(); }
          });
        }
      });
      answer.on('end', () => { queue = queue.then(() => res.end(buffered)); });
    });
    up.on('error', (e) => { res.writeHead(502); res.end(String(e)); });
    req.pipe(up);
  });
  await new Promise((r) => proxy.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${proxy.address().port}/`,
    held,
    release,
    // The chunks the page had received when the stream was held, and all of them.
    beforeHold: () => sent.slice(0, heldAfter),
    all: () => sent.slice(),
    close: () => new Promise((r) => { proxy.closeAllConnections(); proxy.close(r); }),
  };
}

// The text and the tool-call arguments a list of streamed chunks carried (the deltas joined).
function deltaText(chunks) {
  return chunks.map((c) => c.choices?.[0]?.delta?.content || '').join('');
}
function deltaArguments(chunks) {
  return chunks.flatMap((c) => c.choices?.[0]?.delta?.tool_calls || []).map((t) => t.function?.arguments || '')
    .join('');
}
const noSpace = (text) => text.replace(/\s/g, '');

// What a streamed answer showed while held (`shown`) and at the end (`final`), against what the
// proxy forwarded (`join` of its chunks: deltaText or deltaArguments): the pieces so far while
// held, all of them at the end, and more at the end if more came after the hold. Whitespace is
// not compared: the page may pretty-print.
function assertShownAsStreamed(hold, join, shown, final, what) {
  assert.equal(noSpace(shown), noSpace(join(hold.beforeHold())), `shown while held: the ${what} streamed so far`);
  assert.equal(noSpace(final), noSpace(join(hold.all())));
  if (join(hold.all()).length > join(hold.beforeHold()).length)
    assert.ok(final.length > shown.length, `${what} did not grow while streaming: ${JSON.stringify([shown, final])}`);
}

// The answer text a chat-completion SSE response carried (the deltas joined).
async function streamedText(response) {
  let text = '';
  for (const line of (await response.text()).split('\n')) {
    if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
    const obj = JSON.parse(line.slice(6));
    if (obj.choices && obj.choices[0] && obj.choices[0].delta) text += obj.choices[0].delta.content || '';
  }
  return text;
}

function chatBodies(page, sessions = []) {
  const bodies = [];
  page.on('request', (r) => {
    if (!r.url().endsWith('/v1/chat/completions') || r.method() !== 'POST') return;
    bodies.push(JSON.parse(r.postData()));
    sessions.push(r.headers()['x-session-id']);
  });
  return bodies;
}

test('upload by file picker, image cost shown, Enter sends, answer streams in', async (t) => {
  const hold = await startStreamHold((chunk) => Boolean(chunk.choices?.[0]?.delta?.content));
  t.after(hold.close);  // also when an assertion fails: a listening proxy would keep the run alive
  const { page, ctx, errors } = await openPage({ maxTokens: 48 }, hold.url);
  const bodies = chatBodies(page);
  await page.setInputFiles('#file-input', IMAGE);
  // 320x240 -> 320x256 (smart_resize) -> 80 image tokens, as the reference fixtures say.
  await assert.doesNotReject(page.waitForSelector('.chip-cost:has-text("320×240 → 320×256 · 80 tokens")'));
  await page.fill('#prompt', 'What is in this');
  await page.press('#prompt', 'Shift+Enter');
  await page.type('#prompt', 'image?');
  assert.equal(await page.inputValue('#prompt'), 'What is in this\nimage?');
  // The tiny model writes 48 tokens in a few milliseconds, which may reach the page in one
  // network read; the stream is held after its first piece of text, which must show by itself.
  await page.press('#prompt', 'Enter');
  const first = await shownWhileHeld(page, hold, '.answer-body', 'answer text');
  await page.waitForSelector('.answer[data-state="done"]', { timeout: 60000 * TIME_SCALE });
  const text = await lastAnswer(page).locator('.answer-body').textContent();
  assert.ok(text.trim().length > 0, 'answer text is empty');
  assertShownAsStreamed(hold, deltaText, first, text, 'answer text');
  assert.equal(bodies.length, 1);
  assert.equal(bodies[0].stream, true);
  assert.equal(bodies[0].max_tokens, 48);
  const parts = bodies[0].messages[0].content;
  assert.equal(parts[0].type, 'image_url');
  assert.match(parts[0].image_url.url, /^data:image\/png;base64,iVBOR/);
  assert.deepEqual(parts[1], { type: 'text', text: 'What is in this\nimage?' });
  // The transparency line carries the server's timings.
  assert.match(await lastAnswer(page).locator('.answer-meta').textContent(), /prefill .* tok\/s/);
  assert.equal(await page.locator('.chip').count(), 0, 'attachments not cleared after sending');
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('Stop mid-answer cancels, and the server slot is free for the next request', async () => {
  const { page, ctx, errors } = await openPage({ maxTokens: 4000 });
  await page.setInputFiles('#file-input', IMAGE);
  await page.waitForSelector('.chip');
  await page.fill('#prompt', 'Describe this image at great length.');
  await page.press('#prompt', 'Enter');
  await page.waitForFunction(() => {
    const b = document.querySelector('.answer .answer-body');
    return b && b.textContent.trim().length > 0;
  }, null, { timeout: 60000 * TIME_SCALE });
  assert.ok(await page.isVisible('#stop-btn'));
  await page.click('#stop-btn');
  await page.waitForSelector('.answer[data-state="stopped"]', { timeout: 5000 * TIME_SCALE });
  assert.match(await lastAnswer(page).locator('.answer-meta').textContent(), /Stopped/);
  assert.ok(await page.isVisible('#send-btn'));
  // A short answer next, set through the Settings dialog (saved like a user's settings).
  await page.click('#settings-btn');
  await page.fill('#settings input[name="maxTokens"]', '8');
  await page.click('#settings button.primary-btn');
  assert.equal(JSON.parse(await page.evaluate(() => localStorage.getItem('qvl.settings.v1'))).maxTokens, 8);
  // With --parallel 1, this answer can only start if the stopped one released its slot.
  const t0 = Date.now();
  await page.fill('#prompt', 'And in one word?');
  await page.press('#prompt', 'Enter');
  await page.waitForFunction(() => document.querySelectorAll('.answer[data-state="done"]').length === 1,
    null, { timeout: 30000 * TIME_SCALE });
  assert.ok(Date.now() - t0 < 30000);
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('a corrupt image is refused by the server and the error is shown', async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'qvl-web-'));
  const broken = path.join(dir, 'broken.png');
  // A PNG signature followed by garbage: looks like a PNG, decodes as nothing.
  writeFileSync(broken, Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    Buffer.from('this is not image data '.repeat(20))]));
  const { page, ctx } = await openPage({ maxTokens: 8 });
  await page.setInputFiles('#file-input', broken);
  await page.waitForSelector('.chip.warn');
  await page.fill('#prompt', 'What is this?');
  await page.press('#prompt', 'Enter');
  const error = lastAnswer(page).locator('.answer-error');
  await error.waitFor({ state: 'visible', timeout: 30000 * TIME_SCALE });
  assert.match(await error.textContent(), /refused the request: .+/);
  assert.equal(await lastAnswer(page).getAttribute('data-state'), 'error');
  await ctx.close();
});

test('multi-turn: the second request carries the history and the same X-Session-Id, both answers shown', async () => {
  const { page, ctx, errors } = await openPage({ maxTokens: 12 });
  const sessions = [];
  const bodies = chatBodies(page, sessions);
  await page.setInputFiles('#file-input', IMAGE);
  await page.waitForSelector('.chip');
  await page.fill('#prompt', 'First question?');
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/v1/chat/completions')),
    page.press('#prompt', 'Enter'),
  ]);
  await page.waitForSelector('.answer[data-state="done"]', { timeout: 60000 * TIME_SCALE });
  const first = await streamedText(response);
  assert.ok(first.length > 0);
  await page.fill('#prompt', 'Second question?');
  await page.press('#prompt', 'Enter');
  await page.waitForFunction(() => document.querySelectorAll('.answer[data-state="done"]').length === 2,
    null, { timeout: 60000 * TIME_SCALE });
  assert.equal(bodies.length, 2);
  const m = bodies[1].messages;
  assert.deepEqual(m.map((x) => x.role), ['user', 'assistant', 'user']);
  assert.equal(m[0].content[0].type, 'image_url');
  assert.equal(m[1].content, first);
  assert.equal(m[2].content, 'Second question?');
  assert.equal(await page.locator('.turn').count(), 2);
  // One conversation, one id (what nginx hashes to keep it on one replica); a cleared one is new.
  assert.match(sessions[0], /^[0-9a-f]{32}$/);
  assert.equal(sessions[1], sessions[0]);
  await page.click('#clear-btn');
  await page.fill('#prompt', 'A new conversation?');
  await page.press('#prompt', 'Enter');
  await page.waitForSelector('.answer[data-state="done"]', { timeout: 60000 * TIME_SCALE });
  assert.equal(bodies.length, 3);
  assert.match(sessions[2], /^[0-9a-f]{32}$/);
  assert.notEqual(sessions[2], sessions[0]);
  assert.deepEqual(errors, []);
  await ctx.close();
});

// The answer text of the next chat request, in the server's SSE format (see the file comment).
async function answerWith(page, text) {
  await page.route('**/v1/chat/completions', async (route) => {
    const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk',
      choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const body = text.match(/[\s\S]{1,7}/g).map((p) => chunk({ content: p })).join('') + chunk({}, 'stop') +
      `data: ${JSON.stringify({ choices: [], usage: { prompt_tokens: 9, completion_tokens: 9 }, timings: {} })}\n\n` +
      'data: [DONE]\n\n';
    await route.fulfill({ status: 200, headers: { 'Content-Type': 'text/event-stream' }, body });
  });
}

test('a Markdown table in an answer is rendered as a table (stream given in the browser)', async () => {
  const { page, ctx } = await openPage();
  await answerWith(page, 'Totals:\n\n| Item | Qty |\n|:--|--:|\n| apples | 3 |\n| **pears** | 12 |\n');
  await page.fill('#prompt', 'Table please');
  await page.press('#prompt', 'Enter');
  await page.waitForSelector('.answer[data-state="done"]');
  const table = lastAnswer(page).locator('table');
  assert.equal(await table.count(), 1);
  assert.deepEqual(await table.locator('th').allTextContents(), ['Item', 'Qty']);
  assert.deepEqual(await table.locator('tbody td').allTextContents(), ['apples', '3', 'pears', '12']);
  assert.equal(await table.locator('tbody strong').textContent(), 'pears');
  await ctx.close();
});

test('a Thinking model\'s reasoning streams into a collapsed "Thinking" block above the reply (stream given in the browser)', async () => {
  const { page, ctx, errors } = await openPage();
  await page.route('**/v1/chat/completions', async (route) => {
    const chunk = (delta, finish = null) => `data: ${JSON.stringify({ id: 'c', object: 'chat.completion.chunk',
      choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const body = chunk({ role: 'assistant', content: '' }) + chunk({ reasoning_content: 'Three cats, ' }) +
      chunk({ reasoning_content: 'one dog.' }) + chunk({ content: 'There are **3** cats.' }) + chunk({}, 'stop') +
      'data: [DONE]\n\n';
    await route.fulfill({ status: 200, headers: { 'Content-Type': 'text/event-stream' }, body });
  });
  await page.fill('#prompt', 'How many cats?');
  await page.press('#prompt', 'Enter');
  await page.waitForSelector('.answer[data-state="done"]');
  const answer = lastAnswer(page);
  const thinking = answer.locator('details.thinking');
  assert.ok(await thinking.isVisible());
  assert.equal(await thinking.evaluate((d) => d.open), false);
  assert.equal(await thinking.locator('summary').textContent(), 'Thinking');
  assert.equal(await thinking.locator('.thinking-text').textContent(), 'Three cats, one dog.');
  assert.equal(await answer.locator('.answer-body strong').textContent(), '3');
  const order = await answer.evaluate((a) => [...a.querySelector('.answer-main').children]
    .filter((e) => !e.hidden && e.textContent.trim()).map((e) => e.className));
  assert.deepEqual(order.slice(0, 2), ['thinking', 'answer-body md']);
  await thinking.locator('summary').click();
  assert.ok(await thinking.locator('.thinking-text').isVisible());
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('an answer that tries to inject HTML is rendered as text (stream given in the browser)', async () => {
  const { page, ctx, errors } = await openPage();
  const evil = 'x <script>window.__pwned = 1</script> <img src=x onerror="window.__pwned = 2"> ' +
    '[link](javascript:window.__pwned=3)\n\n| a |\n|---|\n| <b onmouseover="window.__pwned=4">cell</b> |';
  await answerWith(page, evil);
  await page.fill('#prompt', 'Say something nasty');
  await page.press('#prompt', 'Enter');
  await page.waitForSelector('.answer[data-state="done"]');
  const answer = lastAnswer(page);
  assert.equal(await answer.locator('script, img, b, a[href^="javascript"]').count(), 0);
  assert.equal(await answer.locator('a').count(), 0);
  const text = await answer.locator('.answer-body').textContent();
  assert.ok(text.includes('<script>window.__pwned = 1</script>'), text);
  assert.ok(text.includes('<img src=x onerror="window.__pwned = 2">'), text);
  await answer.locator('td').hover();
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('drop and paste attach images; a file over the server limit is refused before upload', async () => {
  const { page, ctx, errors } = await openPage();
  const png = readFileSync(IMAGE).toString('base64');
  let requests = 0;
  page.on('request', (r) => { if (r.url().endsWith('/v1/chat/completions')) requests++; });
  const limit = await page.evaluate(async () => (await (await fetch('/v1/qvl/config')).json()).max_image_bytes);
  assert.ok(limit > 0, 'server reports max_image_bytes');
  await page.evaluate(({ b64, big }) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const drop = (file) => {
      const dt = new DataTransfer();
      dt.items.add(file);
      for (const type of ['dragenter', 'dragover', 'drop']) {
        window.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
      }
    };
    drop(new File([bytes], 'dropped.png', { type: 'image/png' }));
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], 'pasted.png', { type: 'image/png' }));
    document.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
    drop(new File([new Uint8Array(big)], 'huge.png', { type: 'image/png' }));
  }, { b64: png, big: limit + 1 });
  await page.waitForFunction(() => document.querySelectorAll('.chip').length === 2);
  assert.deepEqual(await page.locator('.chip-name').allTextContents(), ['dropped.png', 'pasted.png']);
  assert.match(await page.locator('#notice').textContent(), /huge\.png.*accepts images up to/);
  assert.ok(await page.isHidden('#drop-overlay'));
  // Remove one with the keyboard: the remove button is focusable and labelled.
  await page.focus('button[aria-label="Remove dropped.png"]');
  await page.keyboard.press('Enter');
  assert.deepEqual(await page.locator('.chip-name').allTextContents(), ['pasted.png']);
  assert.equal(requests, 0);
  assert.deepEqual(errors, []);
  await ctx.close();
});

// ---------------------------------------------------------------- answer format and tools

const WEATHER_TOOL = { type: 'function', function: { name: 'get_weather', description: 'Current weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] } }, required: ['city'],
    additionalProperties: false } } };

test('tools: a streamed tool call shows as a card, arguments growing live; the next turn replays it', async (t) => {
  const hold = await startStreamHold((chunk) =>
    Boolean(chunk.choices?.[0]?.delta?.tool_calls?.some((c) => c.function?.arguments)));
  t.after(hold.close);  // also when an assertion fails: a listening proxy would keep the run alive
  const { page, ctx, errors } = await openPage({ maxTokens: 80, tools: JSON.stringify([WEATHER_TOOL]),
    toolChoice: 'required' }, hold.url);
  const bodies = chatBodies(page);
  assert.match(await page.locator('#mode-hint').textContent(), /tools \(required\): get_weather/);
  // The stream is held after the call's first piece of arguments, which must show in the card.
  await page.fill('#prompt', 'What is the weather in Paris?');
  await page.press('#prompt', 'Enter');
  const partial = await shownWhileHeld(page, hold, '.tool-card code', 'tool-call arguments');
  await page.waitForSelector('.answer[data-state="done"]', { timeout: 60000 * TIME_SCALE });
  assert.deepEqual(bodies[0].tools, [WEATHER_TOOL]);
  assert.equal(bodies[0].tool_choice, 'required');
  assert.equal(bodies[0].response_format, undefined);
  const card = lastAnswer(page).locator('.tool-card').first();
  assert.equal(await card.locator('.tool-name').textContent(), 'get_weather');
  assert.match(await card.locator('.tool-id').textContent(), /^call_\w+/);
  const args = await card.locator('code').textContent();
  assert.ok(['Paris', 'Oslo'].includes(JSON.parse(args).city), args);
  assert.equal(args, JSON.stringify(JSON.parse(args), null, 2), 'arguments pretty-printed');
  assertShownAsStreamed(hold, deltaArguments, partial, args, 'tool-call arguments');
  assert.match(await lastAnswer(page).locator('.answer-meta').textContent(), /tool call/);
  // The call goes back as the assistant turn's tool_calls, and the server takes it.
  await page.fill('#prompt', 'Thanks.');
  await page.press('#prompt', 'Enter');
  await page.waitForFunction(() => document.querySelectorAll('.answer[data-state="done"]').length === 2,
    null, { timeout: 60000 * TIME_SCALE });
  const history = bodies[1].messages;
  assert.deepEqual(history.map((m) => m.role), ['user', 'assistant', 'user']);
  assert.equal(history[1].tool_calls[0].function.name, 'get_weather');
  assert.deepEqual(JSON.parse(history[1].tool_calls[0].function.arguments), JSON.parse(args));
  assert.equal(await lastAnswer(page).locator('.answer-error').isHidden(), true);
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('answer format JSON schema, set in Settings: the answer is pretty-printed JSON, not Markdown', async () => {
  const { page, ctx, errors } = await openPage({ maxTokens: 40 });
  const bodies = chatBodies(page);
  const schema = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'], additionalProperties: false };
  await page.click('#settings-btn');
  assert.ok(await page.isHidden('#schema-field'));
  await page.selectOption('#settings select[name="answerFormat"]', 'json_schema');
  assert.ok(await page.isVisible('#schema-field'));
  await page.fill('#settings textarea[name="jsonSchema"]', JSON.stringify(schema));
  assert.ok(await page.isHidden('#schema-error'));
  await page.click('#settings button.primary-btn');
  const saved = JSON.parse(await page.evaluate(() => localStorage.getItem('qvl.settings.v1')));
  assert.equal(saved.answerFormat, 'json_schema');
  assert.deepEqual(JSON.parse(saved.jsonSchema), schema);
  await page.fill('#prompt', 'Is everything ok?');
  await page.press('#prompt', 'Enter');
  await page.waitForSelector('.answer[data-state="done"]', { timeout: 60000 * TIME_SCALE });
  assert.deepEqual(bodies[0].response_format, { type: 'json_schema', json_schema: { name: 'answer', schema, strict: true } });
  const code = lastAnswer(page).locator('.answer-body pre.json-answer code');
  assert.equal(await code.count(), 1);
  const text = await code.textContent();
  const value = JSON.parse(text);
  assert.deepEqual(Object.keys(value), ['ok']);
  assert.equal(typeof value.ok, 'boolean');
  assert.equal(text, JSON.stringify(value, null, 2));
  assert.equal(await lastAnswer(page).locator('.json-note').count(), 0);
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('a schema the server refuses ("pattern") shows the server\'s message naming the param', async () => {
  const schema = { type: 'object', properties: { code: { type: 'string', pattern: '^[A-Z]{3}$' } }, required: ['code'] };
  const { page, ctx } = await openPage({ maxTokens: 16, answerFormat: 'json_schema', jsonSchema: JSON.stringify(schema) });
  assert.match(await page.locator('#mode-hint').textContent(), /JSON schema/);
  await page.fill('#prompt', 'Give me a code');
  await page.press('#prompt', 'Enter');
  const error = lastAnswer(page).locator('.answer-error');
  await error.waitFor({ state: 'visible', timeout: 30000 * TIME_SCALE });
  const text = await error.textContent();
  assert.match(text, /refused the request: .*'pattern'/);
  assert.match(text, /response_format\.json_schema\.schema\.properties\.code\.pattern/);
  assert.match(text, /Change the answer format in Settings\.$/);
  assert.equal(await lastAnswer(page).getAttribute('data-state'), 'error');
  await ctx.close();
});

test('invalid JSON in the schema or tools settings shows inline and nothing is sent', async () => {
  const { page, ctx, errors } = await openPage();
  let requests = 0;
  page.on('request', (r) => { if (r.url().endsWith('/v1/chat/completions')) requests++; });
  await page.click('#settings-btn');
  await page.selectOption('#settings select[name="answerFormat"]', 'json_schema');
  await page.fill('#settings textarea[name="jsonSchema"]', '{"type": "object", ');
  assert.match(await page.locator('#schema-error').textContent(), /not valid JSON/);
  assert.equal(await page.getAttribute('#settings textarea[name="jsonSchema"]', 'aria-invalid'), 'true');
  await page.fill('#settings textarea[name="tools"]', '[{"type": "function"}]');
  assert.match(await page.locator('#tools-error').textContent(), /Tool 1 needs a "function" object/);
  // The examples are valid.
  await page.click('#tools-example');
  assert.ok(await page.isHidden('#tools-error'));
  assert.match(await page.locator('#tools-hint').textContent(), /1 tool sent with each request: get_weather/);
  assert.ok(await page.isEnabled('#settings select[name="toolChoice"]'));
  await page.click('#settings button.primary-btn');
  await page.fill('#prompt', 'Describe it');
  await page.press('#prompt', 'Enter');
  assert.match(await page.locator('#notice').textContent(), /Answer format: The schema is not valid JSON.*Settings/);
  assert.equal(await page.inputValue('#prompt'), 'Describe it', 'the message stays in the composer');
  assert.equal(await page.locator('.turn').count(), 0);
  // The inline error is still there when Settings opens again; the example schema fixes it.
  await page.click('#settings-btn');
  assert.ok(await page.isVisible('#schema-error'));
  await page.click('#schema-example');
  assert.ok(await page.isHidden('#schema-error'));
  assert.equal(requests, 0);
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('a non-streamed answer with text and two tool calls: text first, a card per call (answer given in the browser)', async () => {
  const { page, ctx, errors } = await openPage({ tools: JSON.stringify([WEATHER_TOOL]) });
  const bodies = chatBodies(page);
  const calls = [
    { id: 'call_p1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } },
    { id: 'call_o2', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Oslo"}' } },
  ];
  await page.route('**/v1/chat/completions', (route) => route.fulfill({ status: 200,
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ id: 'c', object: 'chat.completion', choices: [{ index: 0, finish_reason: 'tool_calls',
      message: { role: 'assistant', content: 'Checking **both** cities.', tool_calls: calls } }],
    usage: { prompt_tokens: 20, completion_tokens: 30 } }) }));
  await page.fill('#prompt', 'Weather in Paris and Oslo?');
  await page.press('#prompt', 'Enter');
  await page.waitForSelector('.answer[data-state="done"]');
  const answer = lastAnswer(page);
  assert.equal(await answer.locator('.answer-body strong').textContent(), 'both');
  const order = await answer.evaluate((a) => [...a.querySelector('.answer-main').children]
    .filter((e) => !e.hidden && e.textContent.trim()).map((e) => e.className));
  assert.deepEqual(order.slice(0, 2), ['answer-body md', 'tool-calls']);
  assert.deepEqual(await answer.locator('.tool-id').allTextContents(), ['call_p1', 'call_o2']);
  assert.deepEqual(await answer.locator('.tool-card code').allTextContents(),
    ['{\n  "city": "Paris"\n}', '{\n  "city": "Oslo"\n}']);
  assert.match(await answer.locator('.answer-meta').textContent(), /2 tool calls/);
  await page.fill('#prompt', 'And tomorrow?');
  await page.press('#prompt', 'Enter');
  await page.waitForFunction(() => document.querySelectorAll('.answer[data-state="done"]').length === 2);
  assert.deepEqual(bodies[1].messages[1], { role: 'assistant', content: 'Checking **both** cities.', tool_calls: calls });
  assert.deepEqual(errors, []);
  await ctx.close();
});

// ---------------------------------------------------------------- PDF documents (issue 19)
//
// The PDF is written by the test (make_pdf.mjs): page 1 Letter portrait with "Page one", page 2 A4
// landscape with "Page two". The server renders it; the model's words are random, so the tests
// check shapes and plumbing: what is sent, what is shown where.

const PDF_B64 = makePdf(TWO_PAGES).toString('base64');

// Drops the test PDF on the page as a person would (the drag events with a File).
async function dropPdf(page, name = 'two-pages.pdf') {
  await page.evaluate(({ b64, fileName }) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const dt = new DataTransfer();
    dt.items.add(new File([bytes], fileName, { type: 'application/pdf' }));
    for (const type of ['dragenter', 'dragover', 'drop']) {
      window.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
    }
  }, { b64: PDF_B64, fileName: name });
}

// Drops the PDF and waits for its pages; returns what /v1/qvl/documents/pages answered.
async function dropPdfAndWait(page) {
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/v1/qvl/documents/pages')),
    dropPdf(page),
  ]);
  assert.equal(response.status(), 200, await response.text());
  await page.waitForSelector('.doc-card[data-state="ready"]', { timeout: 30000 * TIME_SCALE });
  return response.json();
}

function requestsTo(page, suffix, method = 'POST') {
  const bodies = [];
  page.on('request', (r) => {
    if (r.method() === method && new URL(r.url()).pathname.startsWith(suffix)) bodies.push(r.postData() ? JSON.parse(r.postData()) : null);
  });
  return bodies;
}

const fmtNum = (n) => n.toLocaleString('en-US');

test('PDF: two thumbnails with the server\'s token costs; picking pages changes "pages"; ask once is one streamed request', async () => {
  const { page, ctx, errors } = await openPage({ maxTokens: 8 });
  const chats = chatBodies(page);
  const info = await dropPdfAndWait(page);
  assert.equal(info.object, 'qvl.document');
  assert.equal(info.pages, 2);
  assert.equal(info.page_info.length, 2);
  // Different page sizes, different renders (Letter portrait, A4 landscape).
  assert.ok(info.page_info[0].height > info.page_info[0].width && info.page_info[1].width > info.page_info[1].height);
  const thumbs = page.locator('.doc-card .page-thumb');
  assert.equal(await thumbs.count(), 2);
  for (const [k, p] of info.page_info.entries()) {
    const t = thumbs.nth(k);
    assert.equal(await t.getAttribute('data-page'), String(p.page));
    assert.equal(Number(await t.getAttribute('data-tokens')), p.image_tokens);
    assert.equal(await t.getAttribute('aria-label'), `Page ${p.page}, ${fmtNum(p.image_tokens)} tokens`);
    assert.equal(await t.getAttribute('aria-pressed'), 'true', 'every page picked by default');
    assert.match(await t.locator('img').getAttribute('src'), /^data:image\/(png|jpeg);base64,/);
    assert.ok(await t.locator('img').evaluate((img) => img.complete && img.naturalWidth > 0), 'thumbnail decodes');
  }
  const total = info.page_info[0].image_tokens + info.page_info[1].image_tokens;
  assert.match(await page.locator('.doc-sum').textContent(), new RegExp(`^2 of 2 pages · ${fmtNum(total)} image tokens`));
  assert.match(await page.locator('#budget').textContent(), new RegExp(`${fmtNum(total)} image tokens to send`));
  // Unpick page 1 with the keyboard.
  await thumbs.nth(0).focus();
  await page.keyboard.press('Enter');
  assert.equal(await thumbs.nth(0).getAttribute('aria-pressed'), 'false');
  assert.match(await page.locator('.doc-sum').textContent(), new RegExp(`^1 of 2 pages · ${fmtNum(info.page_info[1].image_tokens)} image tokens`));
  assert.ok(await page.evaluate(() => document.activeElement.dataset.page === '1'), 'focus stays on the page');
  await page.fill('#prompt', 'What does this page say?');
  await page.press('#prompt', 'Enter');
  await page.waitForSelector('.answer[data-state="done"]', { timeout: 60000 * TIME_SCALE });
  assert.equal(chats.length, 1, 'ask once: one chat request');
  assert.equal(chats[0].stream, true);
  const parts = chats[0].messages[0].content;
  assert.deepEqual(parts.map((p) => p.type), ['file', 'text']);
  assert.equal(parts[0].file.pages, '2');
  assert.equal(parts[0].file.filename, 'two-pages.pdf');
  assert.ok(parts[0].file.file_data === `data:application/pdf;base64,${PDF_B64}`, 'the PDF bytes as sent');
  assert.equal(await lastAnswer(page).locator('.answer-error').isHidden(), true);
  // The sent turn shows the page it was about; the composer is free again.
  assert.equal(await page.locator('.user-doc img').count(), 1);
  assert.match(await page.locator('.user-doc-meta').textContent(), /two-pages\.pdf · pages 2 · .* asked once/);
  assert.ok(await page.isHidden('#doc'));
  // Both pages, asked once: "1,2", and the prompt holds both pages' image tokens.
  await dropPdfAndWait(page);
  await page.fill('#prompt', 'And both pages?');
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/v1/chat/completions')),
    page.press('#prompt', 'Enter'),
  ]);
  await page.waitForFunction(() => document.querySelectorAll('.answer[data-state="done"]').length === 2, null, { timeout: 60000 * TIME_SCALE });
  assert.equal(chats.length, 2);
  const last = chats[1].messages[chats[1].messages.length - 1].content;
  assert.equal(last.find((p) => p.type === 'file').file.pages, '1,2');
  let usage = null;
  for (const line of (await response.text()).split('\n')) {
    if (line.startsWith('data: {') && line.includes('"usage"')) usage = JSON.parse(line.slice(6)).usage;
  }
  if (!DEV) assert.ok(usage && usage.prompt_tokens > total, `prompt ${usage && usage.prompt_tokens} tokens, pages ${total}`);
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('PDF page by page: one job per page, progress, two results in page order; copy and download', async () => {
  const { page, ctx, errors } = await openPage({ maxTokens: 8 });
  await ctx.grantPermissions(['clipboard-read', 'clipboard-write']);
  const chats = chatBodies(page);
  const jobs = requestsTo(page, '/v1/jobs');
  const polls = [];
  page.on('response', (r) => { if (r.request().method() === 'GET' && /\/v1\/jobs\/batch-/.test(r.url())) polls.push(r); });
  await dropPdfAndWait(page);
  await page.click('.seg label:has-text("Page by page")');
  assert.ok(await page.isChecked('.seg input[value="pages"]'));
  await page.fill('#prompt', 'Summarise this page.');
  const [started] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/v1/jobs') && r.request().method() === 'POST'),
    page.press('#prompt', 'Enter'),
  ]);
  assert.equal(started.status(), 202, await started.text());
  const batch = await started.json();
  assert.equal(batch.object, 'qvl.job_batch');
  assert.match(batch.id, /^batch-/);
  assert.deepEqual(batch.jobs.map((j) => j.page), [1, 2]);
  assert.equal(jobs.length, 1);
  assert.equal(jobs[0].per_page, true);
  assert.equal(jobs[0].stream, undefined);
  const file = jobs[0].messages[0].content.find((p) => p.type === 'file');
  assert.equal(file.file.pages, '1,2');
  await page.waitForSelector('.answer.batch[data-state="done"]', { timeout: 90000 * TIME_SCALE });
  assert.equal(chats.length, 0, 'page by page sends no chat request');
  assert.ok(polls.length >= 1, 'the batch was polled');
  assert.equal(await page.locator('.batch-label').textContent(), '2 of 2 pages · finished');
  const rows = page.locator('.page-result');
  assert.deepEqual(await rows.evaluateAll((els) => els.map((e) => [e.dataset.page, e.dataset.state])),
    [['1', 'succeeded'], ['2', 'succeeded']]);
  // Each result shows its own page image.
  const thumbs = await page.locator('.user-doc img').evaluateAll((els) => els.map((e) => e.src));
  const shown = await rows.evaluateAll((els) => els.map((e) => e.querySelector('.page-result-fig img').src));
  assert.deepEqual(shown, thumbs);
  // What the server holds for each page, in page order, equals what is shown, copied and downloaded.
  const final = await page.evaluate(async (id) => (await fetch(`/v1/jobs/${id}`)).json(), batch.id);
  assert.equal(final.status, 'succeeded');
  assert.deepEqual(final.progress, { done: 2, total: 2 });
  assert.deepEqual(final.results.map((r) => r.page), [1, 2]);
  const texts = final.results.map((r) => r.result.choices[0].message.content);
  assert.ok(texts.every((t) => typeof t === 'string' && t.length > 0));
  await rows.nth(1).locator('.copy-btn').click();
  await page.waitForFunction(() => document.querySelectorAll('.page-result')[1].querySelector('.copy-btn span').textContent === 'Copied');
  assert.equal(await page.evaluate(() => navigator.clipboard.readText()), texts[1]);
  const [one] = await Promise.all([page.waitForEvent('download'), rows.nth(0).locator('.download-btn').click()]);
  assert.equal(one.suggestedFilename(), 'two-pages-p1.md');
  assert.equal(readFileSync(await one.path(), 'utf8'), texts[0]);
  const [all] = await Promise.all([page.waitForEvent('download'), page.click('.download-all-json')]);
  assert.equal(all.suggestedFilename(), 'two-pages.json');
  const json = JSON.parse(readFileSync(await all.path(), 'utf8'));
  assert.equal(json.document, 'two-pages.pdf');
  assert.deepEqual(json.pages.map((p) => [p.page, p.text ?? JSON.stringify(p.value)]), [[1, texts[0]], [2, texts[1]]].map(([p, t]) => {
    try { return [p, JSON.stringify(JSON.parse(t))]; } catch { return [p, t]; }
  }));
  const [md] = await Promise.all([page.waitForEvent('download'), page.click('.download-all')]);
  assert.equal(md.suggestedFilename(), 'two-pages.md');
  assert.equal(readFileSync(await md.path(), 'utf8'), `<!-- page 1 -->\n\n${texts[0].trim()}\n\n<!-- page 2 -->\n\n${texts[1].trim()}\n`);
  // A batch is not chat history: the next question goes alone.
  await page.fill('#prompt', 'Hello?');
  await page.press('#prompt', 'Enter');
  await page.waitForFunction(() => document.querySelectorAll('.answer[data-state="done"]').length === 2, null, { timeout: 60000 * TIME_SCALE });
  assert.deepEqual(chats[0].messages.map((m) => m.role), ['user']);
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('PDF page by page: Stop cancels the batch (DELETE) and the pages left say cancelled', async () => {
  const { page, ctx, errors } = await openPage({ maxTokens: 4000 });
  const deletes = [];
  page.on('request', (r) => { if (r.method() === 'DELETE' && /\/v1\/jobs\/batch-/.test(r.url())) deletes.push(r.url()); });
  // Long pages: the repetition guard off (the random model loops, and the guard would end a page
  // early), added to the page's request on its way (still the real server).
  await page.route('**/v1/jobs', (route) => route.continue({
    postData: JSON.stringify({ ...JSON.parse(route.request().postData()), repetition_guard: 0 }) }));
  await dropPdfAndWait(page);
  await page.click('.seg label:has-text("Page by page")');
  await page.fill('#prompt', 'Describe this page at great length.');
  const [started] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/v1/jobs') && r.request().method() === 'POST'),
    page.press('#prompt', 'Enter'),
  ]);
  const { id } = await started.json();
  assert.ok(await page.isVisible('#stop-btn'));
  await page.waitForSelector('.batch progress');
  await page.click('#stop-btn');
  await page.waitForSelector('.answer.batch[data-state="cancelled"], .answer.batch[data-state="done"]', { timeout: 30000 * TIME_SCALE });
  assert.deepEqual(deletes.map((u) => new URL(u).pathname), [`/v1/jobs/${id}`], JSON.stringify(deletes));
  assert.ok(await page.isVisible('#send-btn'));
  const final = await page.evaluate(async (bid) => (await fetch(`/v1/jobs/${bid}`)).json(), id);
  const states = await page.locator('.page-result').evaluateAll((els) => els.map((e) => e.dataset.state));
  // Stopped before both pages ended (4000 tokens each): the batch is cancelled, and each page shows
  // what the server says of it.
  const why = JSON.stringify({ final: final.status, server: final.results.map((r) => r.status), page: states });
  assert.equal(final.status, 'cancelled', why);
  assert.deepEqual(states, final.results.map((r) => r.status), why);
  assert.ok(states.includes('cancelled'), JSON.stringify(states));
  assert.equal(await page.locator('.answer.batch').getAttribute('data-state'), 'cancelled');
  // The server is free for the next request (one slot: --parallel 1).
  await page.click('#settings-btn');
  await page.fill('#settings input[name="maxTokens"]', '4');
  await page.click('#settings button.primary-btn');
  await page.fill('#prompt', 'Still there?');
  await page.press('#prompt', 'Enter');
  await page.waitForFunction(() => document.querySelectorAll('.answer[data-state="done"]').length >= 1 &&
    [...document.querySelectorAll('.answer')].pop().dataset.state === 'done', null, { timeout: 30000 * TIME_SCALE });
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('PDF page by page: each page shows its state, and a running page its answer so far, as the server reports it', async () => {
  const { page, ctx, errors } = await openPage({ maxTokens: 4000 });
  // Long pages (the repetition guard off, as in the Stop test), added to the request on its way.
  await page.route('**/v1/jobs', (route) => route.continue({
    postData: JSON.stringify({ ...JSON.parse(route.request().postData()), repetition_guard: 0 }) }));
  // The real server's batch status goes to the page as it is; once page 1 runs with a few tokens,
  // that answer is held (given again for every poll) so the test looks at a page that stands still.
  let held = null;
  let onHeld;
  const heldNow = new Promise((r) => { onHeld = r; });
  const polled = [];
  await page.route('**/v1/jobs/batch-*', async (route) => {
    if (route.request().method() !== 'GET') return route.continue();
    if (held) return route.fulfill({ status: 200, headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(held) });
    const response = await route.fetch();
    const body = await response.json();
    polled.push(body);
    const first = body.results[0];
    if (!held && first.status === 'running' && first.progress && first.progress.tokens >= 3 && first.progress.text) {
      held = body;
      onHeld();
    }
    return route.fulfill({ response, body: JSON.stringify(body) });
  });
  await dropPdfAndWait(page);
  await page.click('.seg label:has-text("Page by page")');
  await page.fill('#prompt', 'Describe this page at great length.');
  await page.press('#prompt', 'Enter');
  await Promise.race([heldNow, new Promise((_, no) => setTimeout(() => no(new Error(
    `page 1 was never seen running with text: ${JSON.stringify(polled.map((b) => b.results.map((r) => r.status)))}`)),
  60000 * TIME_SCALE))]);
  const { tokens, text } = held.results[0].progress;
  const one = page.locator('.page-result[data-page="1"]');
  const two = page.locator('.page-result[data-page="2"]');
  await page.waitForFunction((label) => document.querySelector('.page-result[data-page="1"] .page-status')?.textContent === label,
    `working… ${fmtNum(tokens)} tokens`, { timeout: 10000 * TIME_SCALE });
  assert.equal(await one.getAttribute('data-state'), 'running');
  assert.equal(await one.getAttribute('aria-busy'), 'true');
  // The text so far, rendered by the page's own renderer as a finished answer would be.
  const expected = await page.evaluate(async (t) => {
    const { answerContent } = await import('/js/view.js');
    return answerContent(t, { format: 'text', busy: true }).nodes.map((n) => n.textContent).join('');
  }, text);
  assert.ok(expected.trim().length > 0);
  assert.equal(await one.locator('.answer-body').textContent(), expected);
  assert.ok(await one.locator('.copy-btn').isHidden(), 'no Copy while the page runs');
  assert.equal(await two.getAttribute('data-state'), held.results[1].status);
  assert.equal(await two.locator('.page-status').textContent(), 'queued');
  assert.equal(await page.locator('.batch-label').textContent(), '0 of 2 pages done');
  // Let the polls through again: page 1's answer goes on growing on the page.
  held = null;
  await page.waitForFunction((n) => {
    const m = /working… ([\d,]+) tokens/.exec(document.querySelector('.page-result[data-page="1"] .page-status')?.textContent || '');
    return m && Number(m[1].replace(/,/g, '')) > n;
  }, tokens, { timeout: 30000 * TIME_SCALE });
  assert.ok((await one.locator('.answer-body').textContent()).length >= expected.length);
  await page.click('#stop-btn');
  await page.waitForSelector('.answer.batch[data-state="cancelled"], .answer.batch[data-state="done"]', { timeout: 30000 * TIME_SCALE });
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('PDF presets: invoice fields send the json_schema; regions raise min_pixels and show the raised cost', async () => {
  const { page, ctx, errors } = await openPage({ maxTokens: 24 });
  const chats = chatBodies(page);
  const config = await page.evaluate(async () => (await fetch('/v1/qvl/config')).json());
  await dropPdfAndWait(page);
  // The start page offers the document tasks while a PDF is attached.
  assert.deepEqual(await page.locator('.preset-card').evaluateAll((els) => els.map((e) => e.dataset.preset)),
    ['doc-markdown', 'doc-html', 'doc-fields', 'doc-ground']);
  await page.click('.preset-card[data-preset="doc-fields"]');
  await page.waitForSelector('.answer[data-state="done"]', { timeout: 60000 * TIME_SCALE });
  const rf = chats[0].response_format;
  assert.equal(rf.type, 'json_schema');
  assert.equal(rf.json_schema.name, 'invoice');
  assert.ok(rf.json_schema.schema.properties.total && rf.json_schema.schema.properties.line_items);
  assert.equal(await lastAnswer(page).locator('.answer-error').isHidden(), true, 'the server took the schema');
  assert.equal(await lastAnswer(page).locator('pre.json-answer').count(), 1, 'shown as JSON');
  // Regions: min_pixels = 1024 tokens x (patch x merge)^2, capped by the server's max_pixels.
  await dropPdfAndWait(page);
  const factor = config.patch_size * config.merge_size;
  const minPixels = Math.min(1024 * factor * factor, config.max_pixels);
  const raised = await page.evaluate(async ({ b64, min }) => (await (await fetch('/v1/qvl/documents/pages', {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ file_data: `data:application/pdf;base64,${b64}`, dpi: 144, thumbnail_size: 64, min_pixels: min }),
  })).json()), { b64: PDF_B64, min: minPixels });
  const raisedTotal = raised.page_info.reduce((s, p) => s + p.image_tokens, 0);
  await page.click('.preset-chip[data-preset="doc-ground"]');
  await page.waitForFunction(() => document.querySelectorAll('.answer[data-state="done"]').length === 2, null, { timeout: 60000 * TIME_SCALE });
  assert.equal(chats[1].min_pixels, minPixels);
  assert.ok(chats[1].max_pixels >= minPixels);
  assert.match(await page.locator('.user-doc-meta').last().textContent(),
    new RegExp(`pages 1,2 · ${fmtNum(raisedTotal)} image tokens \\(raised for boxes\\)`));
  // Each page near 1024 tokens or more (smart_resize may land a little under a cap of exactly 1024).
  const cap = Math.min(1024, config.max_pixels / factor / factor);
  assert.ok(raised.page_info.every((p) => p.image_tokens >= 0.9 * cap), JSON.stringify(raised.page_info.map((p) => p.image_tokens)));
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('PDF: an HTML answer with <script>, onerror and a remote <img> renders inert; its boxes are drawn on the page (answer given in the browser)', async () => {
  const { page, ctx, errors } = await openPage();
  const remote = [];
  page.on('request', (r) => { if (/pwned/.test(r.url())) remote.push(r.url()); });
  const evil = '```html\n<html><head><script>window.__pwned = 1</script><link rel="stylesheet" href="' + base + 'pwned.css"></head><body>\n' +
    '<h1 data-bbox="100 50 900 120" onclick="window.__pwned = 2">Page one</h1>\n' +
    '<p data-bbox="100 150 700 200">Invoice <img src="' + base + 'pwned.png" onerror="window.__pwned = 3" data-bbox="600 600 900 900" alt="logo"></p>\n' +
    '<table data-bbox="100 250 900 500"><tr><td colspan="2" style="background:url(' + base + 'pwned-bg.png)">Total</td>' +
    '<td><a href="javascript:window.__pwned=4">31.50</a></td></tr></table>\n' +
    '<svg><script>window.__pwned = 5</script></svg><iframe src="' + base + 'pwned.html"></iframe>' +
    '<form action="' + base + 'pwned"><button>go</button></form>\n</body></html>\n```';
  await answerWith(page, evil);
  await dropPdfAndWait(page);
  await page.click('.preset-card[data-preset="doc-html"]');
  await page.waitForSelector('.answer[data-state="done"]');
  const answer = lastAnswer(page);
  const html = answer.locator('.html-answer');
  assert.equal(await html.locator('h1').textContent(), 'Page one');
  assert.equal(await html.locator('td[colspan="2"]').textContent(), 'Total');
  assert.equal(await html.locator('.html-img').getAttribute('aria-label'), 'image: logo');
  assert.equal(await html.locator('script, img, iframe, svg, form, button, link, a, [style]').count(), 0);
  assert.equal(await answer.locator('script, iframe, form, link, a').count(), 0);
  const attrs = await html.evaluate((root) => [...root.querySelectorAll('*')].flatMap((e) => e.getAttributeNames()));
  assert.deepEqual([...new Set(attrs)].sort(), ['aria-label', 'class', 'colspan', 'data-bbox', 'role'].filter((a) => attrs.includes(a)));
  await html.locator('h1').click();
  await page.waitForTimeout(300);
  assert.equal(await page.evaluate(() => window.__pwned), undefined);
  assert.deepEqual(remote, [], 'nothing remote fetched');
  // Four data-bbox boxes (h1, p, img, table), drawn on page 1's image.
  const fig = answer.locator('.grounding');
  await fig.locator('.box').first().waitFor();
  assert.equal(await fig.locator('.box').count(), 4);
  const page1 = await page.locator('.user-doc img').first().getAttribute('src');
  assert.equal(await fig.locator('.frame img').getAttribute('src'), page1);
  assert.equal(await fig.locator('.img-picker button[aria-pressed="true"]').textContent(), 'Page 1');
  // Source shows the model's text as text; the .html download is the sanitized tree.
  await answer.locator('.source-btn').click();
  assert.ok((await answer.locator('.answer-body pre code').textContent()).includes('<script>window.__pwned = 1</script>'));
  const [dl] = await Promise.all([page.waitForEvent('download'), answer.locator('.download-btn').click()]);
  assert.equal(dl.suggestedFilename(), 'two-pages.html');
  const file = readFileSync(await dl.path(), 'utf8');
  assert.match(file, /<h1 data-bbox="100 50 900 120">Page one<\/h1>/);
  assert.doesNotMatch(file, /<script|onerror|onclick|src=|href=|style="|<iframe|<form|pwned/i);
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('PDF page by page: boxes are drawn on the page they belong to (batch answers given in the browser)', async () => {
  const { page, ctx, errors } = await openPage();
  // The batch's answers, fixed: page 1 has no boxes, page 2 two (bbox_2d, 0-1000).
  const answers = { 1: 'Nothing to locate here.', 2: '```json\n[{"bbox_2d": [100, 100, 500, 400], "label": "title"}, ' +
    '{"bbox_2d": [100, 500, 900, 900], "label": "table"}]\n```' };
  const completion = (text) => ({ object: 'chat.completion', choices: [{ index: 0, message: { role: 'assistant', content: text },
    finish_reason: 'stop' }], usage: { prompt_tokens: 10, completion_tokens: 10 } });
  await page.route('**/v1/jobs', (route) => route.fulfill({ status: 202, headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ id: 'batch-fixed', object: 'qvl.job_batch', status: 'queued', pages: [1, 2],
      jobs: [{ page: 1, id: 'job-1' }, { page: 2, id: 'job-2' }] }) }));
  await page.route('**/v1/jobs/batch-fixed', (route) => route.fulfill({ status: 200, headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ id: 'batch-fixed', object: 'qvl.job_batch', status: 'succeeded', progress: { done: 2, total: 2 },
      results: [1, 2].map((p) => ({ page: p, id: `job-${p}`, status: 'succeeded', result: completion(answers[p]), error: null })) }) }));
  await dropPdfAndWait(page);
  await page.click('.seg label:has-text("Page by page")');
  await page.click('.preset-card[data-preset="doc-ground"]');
  await page.waitForSelector('.answer.batch[data-state="done"]');
  const rows = page.locator('.page-result');
  assert.equal(await rows.nth(0).locator('.box').count(), 0);
  await rows.nth(1).locator('.box').first().waitFor();
  assert.equal(await rows.nth(1).locator('.box').count(), 2);
  assert.deepEqual(await rows.nth(1).locator('.box-label').allTextContents(), ['title', 'table']);
  const page2 = await page.locator('.user-doc img').nth(1).getAttribute('src');
  assert.equal(await rows.nth(1).locator('.frame img').getAttribute('src'), page2);
  // The box sits where 0-1000 says on the drawn image: the table box spans x 10%..90% of it.
  const [img, box] = await Promise.all([rows.nth(1).locator('.frame img').boundingBox(), rows.nth(1).locator('.box').nth(1).boundingBox()]);
  assert.ok(Math.abs(box.x - (img.x + 0.1 * img.width)) < 3 && Math.abs(box.width - 0.8 * img.width) < 4, JSON.stringify({ img, box }));
  assert.deepEqual(errors, []);
  await ctx.close();
});

test('PDF: a QwenVL Markdown answer shows its HTML table as a table and its comment boxes on the page (answer given in the browser)', async () => {
  const { page, ctx, errors } = await openPage();
  const chats = chatBodies(page);
  await answerWith(page, '# Invoice\n\n<!-- Table (100, 300, 900, 600) -->\n<table><tr><th>Item</th><th>Amount</th></tr>' +
    '<tr><td onclick="window.__pwned = 1">Hammer</td><td>24.00</td></tr></table>\n\n**Total** 24.00\n');
  await dropPdfAndWait(page);
  await page.click('.preset-card[data-preset="doc-markdown"]');
  await page.waitForSelector('.answer[data-state="done"]');
  assert.equal(chats[0].messages[0].content.find((p) => p.type === 'text').text, 'qwenvl markdown');
  const answer = lastAnswer(page);
  assert.equal(await answer.locator('h1').textContent(), 'Invoice');
  assert.deepEqual(await answer.locator('.html-answer td').allTextContents(), ['Hammer', '24.00']);
  assert.equal(await answer.locator('.html-answer td[onclick]').count(), 0);
  assert.doesNotMatch(await answer.locator('.answer-body').textContent(), /<!--|Table \(/);
  await answer.locator('.grounding .box').first().waitFor();
  assert.equal(await answer.locator('.grounding .box').count(), 1);
  assert.equal(await answer.locator('.grounding .box-label').textContent(), 'table');
  const [dl] = await Promise.all([page.waitForEvent('download'), answer.locator('.download-btn').click()]);
  assert.equal(dl.suggestedFilename(), 'two-pages.md');
  assert.match(readFileSync(await dl.path(), 'utf8'), /^# Invoice\n\n<!-- Table \(100, 300, 900, 600\) -->/);
  assert.deepEqual(errors, []);
  await ctx.close();
});

// ---------------------------------------------------------------- videos

const VIDEO_DIR = path.join(ROOT, 'tests/fixtures/video');
const videoRef = (name) => JSON.parse(readFileSync(path.join(VIDEO_DIR, 'manifest.json'), 'utf8')).videos[name];
const videoFile = (name) => path.join(VIDEO_DIR, 'videos', `${name}.mp4`);

// The times, thumbnails and cost of a strip against the reference's sampling (manifest.json: what
// transformers' video processor samples), not against what the server said.
async function assertStrip(strip, ref) {
  const idx = ref.sampling.frame_indices;
  const fps = ref.metadata.fps;
  const frames = strip.locator('.video-frame');
  assert.equal(await frames.count(), idx.length);
  assert.deepEqual(await frames.evaluateAll((els) => els.map((e) => Number(e.dataset.index))), idx);
  assert.deepEqual(await strip.locator('.frame-time').allTextContents(), idx.map((i) => `${(i / fps).toFixed(1)} s`));
  // Each frame's title names its temporal group as the prompt does ("<0.3 seconds>").
  const titles = await frames.evaluateAll((els) => els.map((e) => e.title));
  titles.forEach((t, k) => assert.ok(t.endsWith(`the prompt says ${ref.timestamp_texts[Math.floor(k / 2)]}`), t));
  assert.ok(await strip.locator('img').evaluateAll((imgs) => imgs.every((i) => i.complete && i.naturalWidth > 0)),
    'every thumbnail decodes');
}

test('video: drop, paste or pick a clip; the strip shows qvl\'s sampled frames, times and token cost; the question is ' +
  'answered; an answer\'s times jump the strip (second answer given in the browser)', async () => {
  const { page, ctx, errors } = await openPage({ maxTokens: 8 });
  const chats = chatBodies(page);
  const frameRequests = requestsTo(page, '/v1/qvl/videos/frames');
  // Dropped: the tiny clip (7.5 fps, 12 frames -> 4 sampled).
  const tiny = readFileSync(videoFile('tiny_56x48_7.5fps')).toString('base64');
  await page.evaluate((b64) => {
    const dt = new DataTransfer();
    dt.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], 'tiny.mp4', { type: 'video/mp4' }));
    for (const type of ['dragenter', 'dragover', 'drop']) {
      window.dispatchEvent(new DragEvent(type, { dataTransfer: dt, bubbles: true, cancelable: true }));
    }
  }, tiny);
  await page.waitForSelector('.video-card[data-state="ready"]', { timeout: 30000 * TIME_SCALE });
  await assertStrip(page.locator('.video-card .video-strip'), videoRef('tiny_56x48_7.5fps'));
  // Removed, then pasted.
  await page.click('button[aria-label="Remove tiny.mp4"]');
  assert.ok(await page.isHidden('#video'));
  await page.evaluate((b64) => {
    const dt = new DataTransfer();
    dt.items.add(new File([Uint8Array.from(atob(b64), (c) => c.charCodeAt(0))], 'pasted.mp4', { type: 'video/mp4' }));
    document.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
  }, tiny);
  await page.waitForSelector('.video-card[data-state="ready"][aria-label="Video pasted.mp4"]', { timeout: 30000 * TIME_SCALE });
  await assertStrip(page.locator('.video-card .video-strip'), videoRef('tiny_56x48_7.5fps'));
  // Picked: the 8-s clip replaces it (one video at a time).
  const long = videoRef('long_112x80_24fps');
  await page.setInputFiles('#file-input', videoFile('long_112x80_24fps'));
  await page.waitForFunction(() => document.querySelectorAll('.video-card[data-state="ready"] .video-frame').length === 16,
    null, { timeout: 30000 * TIME_SCALE });
  assert.equal(frameRequests.length, 3);
  assert.deepEqual(Object.keys(frameRequests[2]), ['video']);
  const longB64 = readFileSync(videoFile('long_112x80_24fps')).toString('base64');
  assert.ok(frameRequests[2].video === `data:video/mp4;base64,${longB64}`, 'the clip as picked');
  await assertStrip(page.locator('.video-card .video-strip'), long);
  // The cost: the reference's video tokens (8 groups of 4x8 patches merged 2x2 = 64).
  assert.equal(await page.locator('.video-card .video-sum').textContent(),
    `16 frames · ${long.num_video_tokens} video tokens · 8.0 s · 112×80`);
  assert.match(await page.locator('#budget').textContent(), new RegExp(`^${long.num_video_tokens} video tokens to send`));

  // Asked through the server (the real one; the dev server reads the clip as its frames route does):
  // one chat request with the clip as a video_url part, answered.
  await page.fill('#prompt', 'What happens in this video?');
  const [response] = await Promise.all([
    page.waitForResponse((r) => r.url().endsWith('/v1/chat/completions')),
    page.press('#prompt', 'Enter'),
  ]);
  await page.waitForSelector('.answer[data-state="done"]', { timeout: 60000 * TIME_SCALE });
  assert.equal(chats.length, 1);
  const parts = chats[0].messages[0].content;
  assert.deepEqual(parts.map((p) => p.type), ['video_url', 'text']);
  assert.ok(parts[0].video_url.url === `data:video/mp4;base64,${longB64}`, 'the clip as sampled');
  let usage = null;
  for (const line of (await response.text()).split('\n')) {
    if (line.startsWith('data: {') && line.includes('"usage"')) usage = JSON.parse(line.slice(6)).usage;
  }
  assert.equal(usage.prompt_tokens_details.image_tokens, long.num_video_tokens, 'the cost shown is what was charged');
  assert.ok((await lastAnswer(page).locator('.answer-body').textContent()).trim().length > 0, 'answer text is empty');
  assert.ok(await page.isHidden('#video'), 'the composer is free again');
  const strip = page.locator('.user-video .video-strip');
  await assertStrip(strip, long);

  // A known answer, rendered by the page's own code: its time mentions become links.
  await answerWith(page, 'The ring turns at <2.4 seconds> and stops by 0:07; nothing happens at 0:42.');
  await page.fill('#prompt', 'When does it turn?');
  await page.press('#prompt', 'Enter');
  await page.waitForFunction(() => document.querySelectorAll('.answer[data-state="done"]').length === 2);
  assert.equal(chats[1].messages[0].content[0].type, 'video_url', 'the clip is history, sent again');
  const links = lastAnswer(page).locator('.time-link');
  assert.deepEqual(await links.allTextContents(), ['<2.4 seconds>', '0:07'], '0:42 is past the clip: no link');
  const current = () => strip.locator('.video-frame.current');
  // <2.4 seconds>: frame 64 (2.667 s) is nearer than frame 51 (2.125 s).
  await links.nth(0).click();
  assert.equal(await current().count(), 1);
  assert.equal(await current().getAttribute('data-index'), '64');
  assert.equal(await current().getAttribute('aria-current'), 'true');
  // 0:07: frame 166 (6.917 s), off the strip's visible part until the jump scrolls it in.
  const inView = () => strip.evaluate((s) => {
    const f = s.querySelector('.video-frame.current').getBoundingClientRect();
    const r = s.getBoundingClientRect();
    return f.left >= r.left - 1 && f.right <= r.right + 1;
  });
  assert.equal(await strip.evaluate((s) => s.scrollWidth > s.clientWidth), true, 'the strip scrolls');
  const before = await strip.evaluate((s) => s.scrollLeft);
  await links.nth(1).click();
  assert.equal(await current().getAttribute('data-index'), '166');
  assert.equal(await current().locator('.frame-time').textContent(), '6.9 s');
  assert.ok(await inView(), 'the frame jumped to is in view');
  assert.ok(await strip.evaluate((s) => s.scrollLeft) > before, 'the strip scrolled');
  assert.deepEqual(errors, []);
  await ctx.close();
});
