import { test } from 'node:test';
import assert from 'node:assert/strict';
import { SseParser, readChunk } from '../js/sse.js';
import { describeHttpError, describeStreamError, describeTimings, formatBytes } from '../js/errors.js';

test('events split across chunks, CRLF, comments, multi-line data', () => {
  const p = new SseParser();
  assert.deepEqual(p.push('data: {"a"'), []);
  assert.deepEqual(p.push(':1}\n\n: keep-alive\n\ndata: x\r\ndata: y\r'), ['{"a":1}']);
  assert.deepEqual(p.push('\n\r\ndata:[DONE]\n'), ['x\ny']);
  assert.deepEqual(p.end(), ['[DONE]']);
});

test('chat chunks: delta, finish reason, usage with timings, done, in-stream error', () => {
  const delta = readChunk('{"id":"c1","object":"chat.completion.chunk","choices":[{"index":0,' +
    '"delta":{"content":"Hel"},"finish_reason":null}]}');
  assert.equal(delta.delta, 'Hel');
  assert.equal(delta.finishReason, null);
  const fin = readChunk('{"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}');
  assert.equal(fin.delta, '');
  assert.equal(fin.finishReason, 'length');
  const usage = readChunk('{"choices":[],"usage":{"prompt_tokens":90,"completion_tokens":5},' +
    '"timings":{"queue_ms":3,"prefill_ms":120}}');
  assert.equal(usage.usage.prompt_tokens, 90);
  assert.equal(usage.timings.prefill_ms, 120);
  assert.deepEqual(readChunk('[DONE]'), { done: true });
  const err = readChunk('{"error":{"message":"deadline exceeded","type":"timeout_error","code":"timeout"}}');
  assert.equal(err.error.message, 'deadline exceeded');
  assert.match(describeStreamError(err.error), /timeout/);
  assert.match(readChunk('not json').error.message, /unreadable/);
  assert.equal(delta.toolCalls, null);
});

test('chat chunks: tool call deltas are passed on as they are', () => {
  const first = readChunk('{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function",' +
    '"function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}');
  assert.deepEqual(first.toolCalls, [{ index: 0, id: 'call_1', type: 'function',
    function: { name: 'get_weather', arguments: '' } }]);
  assert.equal(first.delta, '');
  const piece = readChunk('{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\\"ci"}}]}}]}');
  assert.equal(piece.toolCalls[0].function.arguments, '{\"ci');
  assert.equal(readChunk('{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}').finishReason, 'tool_calls');
});

test('HTTP errors read as sentences that say what to do', () => {
  const body = (m) => ({ error: { message: m, type: 'invalid_request_error' } });
  assert.match(describeHttpError(429, null, '2'), /queue is full.*2 s/);
  assert.match(describeHttpError(504, body('deadline 180 s')), /timeout.*deadline 180 s/);
  assert.match(describeHttpError(413, body('body is 40 MB, limit 32 MB')), /Too large.*40 MB/);
  assert.match(describeHttpError(400, body('image 1: not a decodable image')), /refused.*not a decodable/);
  assert.match(describeHttpError(401, body('missing API key')), /API key/);
  assert.match(describeHttpError(500, null), /HTTP 500/);
  // A refused schema: the server's message, which names the field; the param added when it does not.
  const refused = { error: { message: "response schema keyword 'pattern' is not supported by qvl's constrained " +
    'decoding (at response_format.json_schema.schema.properties.code.pattern)',
  param: 'response_format.json_schema.schema.properties.code.pattern', type: 'invalid_request_error' } };
  const sentence = describeHttpError(400, refused);
  assert.match(sentence, /^The server refused the request: response schema keyword 'pattern' is not supported/);
  assert.equal(sentence.split('response_format.json_schema.schema.properties.code.pattern').length, 2, 'param once');
  assert.match(sentence, /Change the answer format in Settings\.$/);
  assert.match(describeHttpError(400, { error: { message: 'unknown field', param: 'tools[0].function.strictly' } }),
    /unknown field \(tools\[0\]\.function\.strictly\) Change the tools in Settings\.$/);
  assert.doesNotMatch(describeHttpError(400, body('bad image')), /Settings/);
});

test('timings line and sizes', () => {
  const line = describeTimings({ queue_ms: 4, image_ms: 35.2, vision_ms: 1520, prefill_ms: 800,
    prefill_tok_s: 250.4, decode_tok_s: 12.34 }, { prompt_tokens: 200, completion_tokens: 40 });
  assert.equal(line, 'queue 4 ms · image 35 ms · vision 1.5 s · prefill 800 ms (250 tok/s) · ' +
    'decode 12.3 tok/s · 200 prompt tok · 40 answer tok');
  assert.equal(describeTimings(null, null), '');
  // A follow-up about the same image: the cache hits are shown.
  assert.equal(describeTimings({ vision_ms: 0.4, image_cache_hits: 1, image_cache_misses: 0, prefill_ms: 350 },
    { prompt_tokens: 242, completion_tokens: 3, prompt_tokens_details: { cached_tokens: 225 } }),
  'vision cached · prefill 350 ms · 242 prompt tok (225 cached) · 3 answer tok');
  assert.equal(describeTimings({ vision_ms: 1520, image_cache_hits: 1, image_cache_misses: 1 }, null),
    'vision 1.5 s');
  assert.equal(formatBytes(512), '512 B');
  assert.equal(formatBytes(2048), '2.0 KB');
  assert.equal(formatBytes(3 * 1024 * 1024), '3.0 MB');
});

test('chat chunks: a Thinking model\'s delta.reasoning_content is read apart from its content', () => {
  const r = readChunk('{"choices":[{"index":0,"delta":{"reasoning_content":"Count the"},"finish_reason":null}]}');
  assert.equal(r.reasoning, 'Count the');
  assert.equal(r.delta, '');
  const c = readChunk('{"choices":[{"index":0,"delta":{"content":"3"},"finish_reason":null}]}');
  assert.equal(c.reasoning, '');
  assert.equal(c.delta, '3');
});
