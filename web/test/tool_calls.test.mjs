import { test } from 'node:test';
import assert from 'node:assert/strict';
import { accumulateToolCalls, formatJsonText, isJson, looksLikeJson, toApiToolCalls } from '../js/tool_calls.js';

// The deltas of two parallel calls as an OpenAI-style stream sends them (qvl serve sends the same).
const STREAM = [
  [{ index: 0, id: 'call_a1', type: 'function', function: { name: 'get_weather', arguments: '' } }],
  [{ index: 0, function: { arguments: '{"city"' } }],
  [{ index: 0, function: { arguments: ': "Par' } }],
  [{ index: 0, function: { arguments: 'is", "unit": "celsius"}' } }],
  [{ index: 1, id: 'call_b2', type: 'function', function: { name: 'get_time', arguments: '' } }],
  [{ index: 1, function: { arguments: '{"tz": "Europe/Paris"}' } }],
];

test('streamed deltas fold into calls, piece by piece', () => {
  let calls = [];
  const seen = [];
  for (const d of STREAM) {
    calls = accumulateToolCalls(calls, d);
    seen.push(calls.map((c) => c.arguments).join('|'));
  }
  assert.deepEqual(calls, [
    { index: 0, id: 'call_a1', type: 'function', name: 'get_weather', arguments: '{"city": "Paris", "unit": "celsius"}' },
    { index: 1, id: 'call_b2', type: 'function', name: 'get_time', arguments: '{"tz": "Europe/Paris"}' },
  ]);
  // Visible after the first delta already, growing afterwards.
  assert.deepEqual(seen.slice(0, 3), ['', '{"city"', '{"city": "Par']);
  assert.deepEqual(JSON.parse(calls[0].arguments), { city: 'Paris', unit: 'celsius' });
});

test('the accumulator is pure and tolerant', () => {
  const before = accumulateToolCalls([], STREAM[0]);
  const frozen = JSON.stringify(before);
  accumulateToolCalls(before, STREAM[1]);
  assert.equal(JSON.stringify(before), frozen, 'input calls changed');
  // Several calls' pieces in one chunk, out of order; a repeated name is not appended.
  const calls = accumulateToolCalls([], [
    { index: 1, id: 'call_2', function: { name: 'b', arguments: '{}' } },
    { index: 0, id: 'call_1', function: { name: 'a', arguments: '{"x":' } },
    { index: 0, function: { name: 'a', arguments: '1}' } },
  ]);
  assert.deepEqual(calls.map((c) => [c.index, c.name, c.arguments]), [[0, 'a', '{"x":1}'], [1, 'b', '{}']]);
  // Junk is ignored; no deltas leave the calls as they were.
  assert.deepEqual(accumulateToolCalls(calls, [null, 7, 'x']), calls);
  assert.deepEqual(accumulateToolCalls(calls, null), calls);
  // Arguments sent as an object rather than text.
  assert.equal(accumulateToolCalls([], [{ index: 0, id: 'c', function: { name: 'f', arguments: { a: 1 } } }])[0].arguments, '{"a":1}');
});

test('a non-streamed message\'s tool_calls (no index) fold by position', () => {
  const message = [
    { id: 'call_x', type: 'function', function: { name: 'f', arguments: '{"a":1}' } },
    { id: 'call_y', type: 'function', function: { name: 'g', arguments: '{}' } },
  ];
  const calls = accumulateToolCalls([], message);
  assert.deepEqual(calls.map((c) => [c.index, c.id, c.name]), [[0, 'call_x', 'f'], [1, 'call_y', 'g']]);
  assert.deepEqual(toApiToolCalls(calls), message);
});

test('formatJsonText indents like JSON.stringify, on any prefix', () => {
  const values = [
    { city: 'Paris', unit: 'celsius' },
    { a: [], b: {}, c: [1, 2, { d: null }], e: 'x, y: {z}', f: 'quote \\" and \\\\' },
    [true, false, -1.5e3, ''],
    { nested: { deeper: { list: [[], [[]], ['a']] } } },
    'plain string',
    42,
  ];
  for (const v of values) {
    const compact = JSON.stringify(v);
    assert.equal(formatJsonText(compact), JSON.stringify(v, null, 2), compact);
    // Whitespace the model wrote is replaced, not added to.
    assert.equal(formatJsonText(JSON.stringify(v, null, 4)), JSON.stringify(v, null, 2));
    // Every prefix formats without throwing, and grows as a prefix of the final text would.
    for (let k = 0; k <= compact.length; k++) formatJsonText(compact.slice(0, k));
  }
  assert.equal(formatJsonText('{"city": "Par'), '{\n  "city": "Par');
  assert.equal(formatJsonText('{"a": ['), '{\n  "a": [');
  assert.equal(formatJsonText('{"a": [1,'), '{\n  "a": [\n    1,\n    ');
  // Inside strings nothing changes, whitespace and escapes included.
  assert.equal(formatJsonText('{"s":"a  {b}, [c]: \\"d\\""}'), '{\n  "s": "a  {b}, [c]: \\"d\\""\n}');
  assert.equal(formatJsonText(''), '');
});

test('isJson and looksLikeJson', () => {
  assert.equal(isJson('{"ok": true}'), true);
  assert.equal(isJson('{"ok": tr'), false);
  assert.equal(isJson(''), false);
  assert.equal(looksLikeJson('  {"a":1}'), true);
  assert.equal(looksLikeJson('[1]'), true);
  assert.equal(looksLikeJson('true'), true);
  assert.equal(looksLikeJson('The image shows a cat.'), false);
  assert.equal(looksLikeJson('```json\n{}\n```'), false);
});
