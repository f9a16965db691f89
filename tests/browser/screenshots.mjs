// DEVELOPMENT AID: renders the page against dev_server.mjs (canned answers) in headless Chromium
// and writes docs/screenshots/{desktop,phone}-{light,dark}.png plus the empty start page.
//
//   cd tests/browser && npm install && node screenshots.mjs
import { chromium } from 'playwright-core';
import path from 'node:path';
import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { startDevServer } from './dev_server.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const OUT = path.resolve(HERE, '../../docs/screenshots');
const SCENE = path.join(HERE, 'assets/scene.png');
export const LAUNCH = {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update'],
};

mkdirSync(OUT, { recursive: true });
const server = await startDevServer({ delayMs: 5 });
const base = `http://127.0.0.1:${server.address().port}/`;
const browser = await chromium.launch(LAUNCH);

const shots = [
  { name: 'desktop', viewport: { width: 1280, height: 900 }, deviceScaleFactor: 1 },
  { name: 'phone', viewport: { width: 390, height: 844 }, deviceScaleFactor: 2, isMobile: true, hasTouch: true },
];
try {
  for (const s of shots) {
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
} finally {
  await browser.close();
  server.close();
}
console.log(`screenshots written to ${OUT}`);
