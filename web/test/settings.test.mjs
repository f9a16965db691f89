import { test } from 'node:test';
import assert from 'node:assert/strict';
import { DEFAULTS, loadSettings, saveSettings, sanitizeSettings, STORAGE_KEY } from '../js/settings.js';

function memoryStorage() {
  const m = new Map();
  return { getItem: (k) => (m.has(k) ? m.get(k) : null), setItem: (k, v) => m.set(k, String(v)), m };
}

test('round trip through storage', () => {
  const st = memoryStorage();
  assert.deepEqual(loadSettings(st), DEFAULTS);
  const s = { ...DEFAULTS, system: 'Be brief.', maxTokens: 256, temperature: 0, maxPixels: 200000, theme: 'dark' };
  assert.ok(saveSettings(st, s));
  assert.deepEqual(loadSettings(st), s);
});

test('bad values fall back to defaults', () => {
  assert.deepEqual(sanitizeSettings({ maxTokens: -5, temperature: 'hot', maxPixels: 1e12, theme: 'neon' }),
    DEFAULTS);
  assert.equal(sanitizeSettings({ maxTokens: '300' }).maxTokens, 300);
  assert.equal(sanitizeSettings({ temperature: 1.25 }).temperature, 1.25);
  const st = memoryStorage();
  st.setItem(STORAGE_KEY, '{not json');
  assert.deepEqual(loadSettings(st), DEFAULTS);
  const full = { getItem: () => null, setItem: () => { throw new Error('QuotaExceededError'); } };
  assert.equal(saveSettings(full, DEFAULTS), false);
});

test('answer format, schema, tools and tool choice are remembered; bad values fall back', () => {
  const st = memoryStorage();
  const s = { ...DEFAULTS, answerFormat: 'json_schema', jsonSchema: '{"type": "object"', tools: '[{"type":"function"}]',
    toolChoice: 'required' };
  assert.ok(saveSettings(st, s));
  // Kept as typed, even while not valid JSON: the request builder checks them (request.js).
  assert.deepEqual(loadSettings(st), s);
  const bad = sanitizeSettings({ answerFormat: 'yaml', toolChoice: 'always', jsonSchema: 42, tools: { a: 1 } });
  assert.equal(bad.answerFormat, 'text');
  assert.equal(bad.toolChoice, 'auto');
  assert.equal(bad.jsonSchema, '');
  assert.equal(bad.tools, '');
  assert.equal(sanitizeSettings({ tools: 'x'.repeat(200000) }).tools.length, 100000);
  assert.equal(DEFAULTS.answerFormat, 'text');
});
