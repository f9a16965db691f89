import { test } from 'node:test';
import assert from 'node:assert/strict';
import { buildMessages, buildRequestBody, checkSchemaText, checkToolsText, formatAndToolFields, modeSummary }
  from '../js/request.js';
import { DEFAULTS } from '../js/settings.js';

const CONFIG = { model: 'Qwen/Qwen3-VL-2B-Instruct', patch_size: 16, merge_size: 2, min_pixels: 65536,
  max_pixels: 1048576 };
const WEATHER = { type: 'function', function: { name: 'get_weather', description: 'Weather in a city',
  parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } } };
const SCHEMA = { type: 'object', properties: { ok: { type: 'boolean' } }, required: ['ok'] };
const ask = (text) => [{ text, images: [], answer: { text: '', toolCalls: [] } }];

test('default settings: the plain request, no response_format, no tools', () => {
  const { body, error } = buildRequestBody({ settings: DEFAULTS, config: CONFIG, messages: [] });
  assert.equal(error, undefined);
  assert.deepEqual(body, { model: CONFIG.model, messages: [], stream: true, stream_options: { include_usage: true },
    temperature: 0.7 });
  const s = { ...DEFAULTS, maxTokens: 64, maxPixels: 1 << 30, temperature: 0 };
  const b = buildRequestBody({ settings: s, config: CONFIG, messages: [] }).body;
  assert.equal(b.max_tokens, 64);
  assert.equal(b.max_pixels, CONFIG.max_pixels, 'clamped to the server cap');
  assert.equal(buildRequestBody({ settings: DEFAULTS, config: { ...CONFIG, model: '' }, messages: [] }).body.model, 'qvl');
});

test('answer format: json_object and json_schema become response_format', () => {
  const obj = buildRequestBody({ settings: { ...DEFAULTS, answerFormat: 'json_object' }, config: CONFIG, messages: [] });
  assert.deepEqual(obj.body.response_format, { type: 'json_object' });
  const sch = buildRequestBody({ settings: { ...DEFAULTS, answerFormat: 'json_schema', jsonSchema: JSON.stringify(SCHEMA) },
    config: CONFIG, messages: [] });
  assert.deepEqual(sch.body.response_format,
    { type: 'json_schema', json_schema: { name: 'answer', schema: SCHEMA, strict: true } });
  // OpenAI's whole json_schema object, pasted, is used as it is.
  const whole = { name: 'verdict', schema: SCHEMA, strict: false, description: 'yes or no' };
  assert.deepEqual(formatAndToolFields({ ...DEFAULTS, answerFormat: 'json_schema', jsonSchema: JSON.stringify(whole) })
    .fields.response_format.json_schema, whole);
  // A schema kept from before is not sent while the format is Text.
  assert.deepEqual(formatAndToolFields({ ...DEFAULTS, jsonSchema: JSON.stringify(SCHEMA) }).fields, {});
});

test('an invalid schema is an error and no body', () => {
  for (const [text, re] of [['', /Write a JSON schema/], ['{"type": "object",', /not valid JSON/],
    ['[1, 2]', /must be a JSON object/], ['"string"', /must be a JSON object/],
    ['{"name": "has space", "schema": {}}', /name/]]) {
    const r = buildRequestBody({ settings: { ...DEFAULTS, answerFormat: 'json_schema', jsonSchema: text }, config: CONFIG,
      messages: [] });
    assert.equal(r.body, undefined, text);
    assert.match(r.error, /^Answer format: /, text);
    assert.match(r.error, re, text);
    assert.match(checkSchemaText(text).error, re);
  }
});

test('tools and tool_choice are sent when tools are set', () => {
  const none = formatAndToolFields({ ...DEFAULTS, tools: '  \n' });
  assert.deepEqual(none.fields, {});
  assert.deepEqual(formatAndToolFields({ ...DEFAULTS, tools: '[]', toolChoice: 'required' }).fields, {},
    'no tool_choice without tools: the server refuses that');
  const r = buildRequestBody({ settings: { ...DEFAULTS, tools: JSON.stringify([WEATHER]), toolChoice: 'required' },
    config: CONFIG, messages: [] });
  assert.deepEqual(r.body.tools, [WEATHER]);
  assert.equal(r.body.tool_choice, 'required');
  assert.equal(formatAndToolFields({ ...DEFAULTS, tools: JSON.stringify([WEATHER]) }).fields.tool_choice, 'auto');
  assert.equal(formatAndToolFields({ ...DEFAULTS, tools: JSON.stringify([WEATHER]), toolChoice: 'bogus' }).fields.tool_choice,
    'auto');
  // Both together: a JSON answer and tools.
  const both = formatAndToolFields({ ...DEFAULTS, answerFormat: 'json_object', tools: JSON.stringify([WEATHER]),
    toolChoice: 'none' }).fields;
  assert.deepEqual(Object.keys(both).sort(), ['response_format', 'tool_choice', 'tools']);
  // A bare function, or a single tool object, is taken as a list of one tool.
  assert.deepEqual(checkToolsText(JSON.stringify([WEATHER.function])).value, [WEATHER]);
  assert.deepEqual(checkToolsText(JSON.stringify(WEATHER)).value, [WEATHER]);
});

test('invalid tools are an error naming the tool', () => {
  const cases = [
    ['[{"type": "function"', /^Tools is not valid JSON/],
    ['42', /JSON array/],
    ['[1]', /Tool 1 is not an object/],
    ['[{"type": "retrieval", "function": {"name": "f"}}]', /Tool 1: "type" must be "function"/],
    ['[{"type": "function"}]', /Tool 1 needs a "function" object/],
    [JSON.stringify([WEATHER, { type: 'function', function: { name: 'bad name' } }]), /Tool 2: the function "name"/],
    [JSON.stringify([WEATHER, WEATHER]), /Two tools are named "get_weather"/],
    ['[{"type": "function", "function": {"name": "f", "parameters": []}}]', /Tool 1 \(f\): "parameters"/],
  ];
  for (const [text, re] of cases) {
    assert.match(checkToolsText(text).error, re, text);
    const r = buildRequestBody({ settings: { ...DEFAULTS, tools: text }, config: CONFIG, messages: [] });
    assert.equal(r.body, undefined);
    assert.match(r.error, /^Tools: /);
  }
});

test('messages: history replays text and tool calls; the asked turn has no answer', () => {
  const img = { dataUrl: 'data:image/png;base64,AAAA' };
  const turns = [
    { text: 'What is this?', images: [img], answer: { text: 'A cat.', toolCalls: [] } },
    { text: 'Weather in Paris?', images: [], answer: { text: '', toolCalls: [
      { index: 0, id: 'call_1', type: 'function', name: 'get_weather', arguments: '{"city":"Paris"}' }] } },
    { text: 'Both?', images: [], answer: { text: 'Checking.', toolCalls: [
      { index: 0, id: 'call_2', type: 'function', name: 'get_weather', arguments: '{}' }] } },
    { text: 'Thanks', images: [], answer: { text: '', toolCalls: [] } },
  ];
  const m = buildMessages('Be brief.', turns);
  assert.deepEqual(m.map((x) => x.role), ['system', 'user', 'assistant', 'user', 'assistant', 'user', 'assistant', 'user']);
  assert.deepEqual(m[1].content, [{ type: 'image_url', image_url: { url: img.dataUrl } }, { type: 'text', text: 'What is this?' }]);
  assert.deepEqual(m[2], { role: 'assistant', content: 'A cat.' });
  assert.deepEqual(m[4], { role: 'assistant', tool_calls: [
    { id: 'call_1', type: 'function', function: { name: 'get_weather', arguments: '{"city":"Paris"}' } }] });
  assert.equal(m[6].content, 'Checking.');
  assert.equal(m[6].tool_calls[0].id, 'call_2');
  assert.deepEqual(m[7], { role: 'user', content: 'Thanks' });
  assert.deepEqual(buildMessages('  ', ask('hi')), [{ role: 'user', content: 'hi' }]);
});

test('the line under the composer says what is on', () => {
  assert.equal(modeSummary(DEFAULTS), '');
  assert.equal(modeSummary({ ...DEFAULTS, answerFormat: 'json_schema' }), 'JSON schema answers');
  const five = JSON.stringify(['a', 'b', 'c', 'd', 'e'].map((name) => ({ type: 'function', function: { name } })));
  assert.equal(modeSummary({ ...DEFAULTS, answerFormat: 'json_object', tools: five, toolChoice: 'required' }),
    'JSON answers · tools (required): a, b, c +2');
  assert.equal(modeSummary({ ...DEFAULTS, tools: '[' }), 'tools: invalid');
});
