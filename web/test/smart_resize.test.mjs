import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { roundHalfEven, smartResize, imageCost, effectiveMaxPixels } from '../js/smart_resize.js';

const QWEN3 = { factor: 32, minPixels: 65536, maxPixels: 16777216 };
const CONFIG = { patch_size: 16, merge_size: 2, min_pixels: 65536, max_pixels: 1048576 };

test('round half to even, as Python round()', () => {
  assert.equal(roundHalfEven(14.5), 14);
  assert.equal(roundHalfEven(10.5), 10);
  assert.equal(roundHalfEven(15.5), 16);
  assert.equal(roundHalfEven(0.5), 0);
  assert.equal(roundHalfEven(2.4999), 2);
  assert.equal(roundHalfEven(2.5001), 3);
});

test('464x336 rounds half to even: 14.5 -> 14 and 10.5 -> 10, so 448x320', () => {
  assert.deepEqual(smartResize(464, 336, QWEN3), { width: 448, height: 320 });
});

test('small image is scaled up to min_pixels (ceil), large one down to max_pixels (floor)', () => {
  // 40x36: rounds to 32x32 = 1024 < 65536; beta = sqrt(65536 / 1440) = 6.746;
  // ceil(36 * 6.746 / 32) = 8 -> 256, ceil(40 * 6.746 / 32) = 9 -> 288.
  assert.deepEqual(smartResize(40, 36, QWEN3), { width: 288, height: 256 });
  // 800x600 with max 160000: beta = sqrt(480000 / 160000) = 1.732;
  // floor(600 / 1.732 / 32) = 10 -> 320, floor(800 / 1.732 / 32) = 14 -> 448.
  assert.deepEqual(smartResize(800, 600, { ...QWEN3, maxPixels: 160000 }), { width: 448, height: 320 });
  // In range: just rounded to multiples of 32.
  assert.deepEqual(smartResize(320, 240, QWEN3), { width: 320, height: 256 });
});

test('refuses an aspect ratio over 200:1 and empty images', () => {
  assert.throws(() => smartResize(20100, 100, QWEN3), /aspect ratio/);
  assert.throws(() => smartResize(0, 10, QWEN3), /no pixels/);
});

test('matches every image of the reference fixtures (tests/fixtures/golden/manifest.json)', () => {
  const manifest = JSON.parse(readFileSync(fileURLToPath(
    new URL('../../tests/fixtures/golden/manifest.json', import.meta.url)), 'utf8'));
  const images = Object.entries(manifest.images);
  assert.ok(images.length >= 5);
  for (const [name, img] of images) {
    const got = smartResize(img.width, img.height,
      { factor: 32, minPixels: img.min_pixels, maxPixels: img.max_pixels });
    assert.deepEqual([got.height, got.width], img.resized_hw, name);
    const cost = imageCost(img.width, img.height,
      { patch_size: 16, merge_size: 2, min_pixels: img.min_pixels, max_pixels: img.max_pixels });
    assert.deepEqual([1, cost.gridH, cost.gridW], img.image_grid_thw, name);
    assert.equal(cost.tokens, img.num_image_tokens, name);
  }
});

test('token count: 448x448 is 196 tokens; the server cap bounds a huge image to about 1024', () => {
  assert.equal(imageCost(448, 448, CONFIG).tokens, 196);
  const big = imageCost(4000, 3000, CONFIG);
  assert.ok(big.width * big.height <= CONFIG.max_pixels);
  assert.equal(big.tokens, (big.width / 32) * (big.height / 32));
  assert.ok(big.tokens > 900 && big.tokens <= 1024, String(big.tokens));
});

test('a request max_pixels is clamped to the server cap and to min_pixels', () => {
  assert.equal(effectiveMaxPixels(CONFIG, 0), 1048576);
  assert.equal(effectiveMaxPixels(CONFIG, 200000), 200000);
  assert.equal(effectiveMaxPixels(CONFIG, 99999999), 1048576);
  assert.equal(effectiveMaxPixels(CONFIG, 1000), 65536);
  assert.ok(imageCost(4000, 3000, CONFIG, 200000).tokens < imageCost(4000, 3000, CONFIG).tokens);
});
