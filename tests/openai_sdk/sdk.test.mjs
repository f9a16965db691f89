// The official OpenAI Node SDK (npm `openai`) against the real `qvl serve` with the tiny fixture
// model, unchanged: a plain completion, a streamed one, one with a base64 image, and an error.
//
//   cd tests/openai_sdk && npm ci && QVL_BINARY=../../build/qvl node --test sdk.test.mjs
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { readFileSync, existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import OpenAI from 'openai';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const ROOT = path.resolve(HERE, '../..');
const MODEL = path.join(ROOT, 'tests/fixtures/tiny-qwen3vl');
const IMAGE = path.join(ROOT, 'tests/fixtures/golden/images/gradient_320x240.png');

let server;
let log = '';
let client;

before(async () => {
  const binary = process.env.QVL_BINARY || path.join(ROOT, 'build/qvl');
  assert.ok(existsSync(binary), `qvl binary not found at ${binary} (set QVL_BINARY)`);
  // Port 0: the server picks a free port and names it on its first line.
  server = spawn(binary, ['serve', '--model', MODEL, '--port', '0', '--threads', '1', '--api-key', 'sdk-test-key', '--jobs-db', 'memory'],
    { stdio: ['ignore', 'ignore', 'pipe'] });
  const port = await new Promise((resolve, reject) => {
    server.stderr.on('data', (d) => {
      log += d;
      const m = /listening on http:\/\/[^:]+:(\d+)/.exec(log);
      if (m) resolve(Number(m[1]));
    });
    server.on('exit', (code) => reject(new Error(`qvl serve exited with ${code}:\n${log}`)));
  });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`${base}/health`)).ok) break;
    } catch { /* not yet */ }
    if (i > 600) throw new Error(`qvl serve not ready:\n${log}`);
    await new Promise((r) => setTimeout(r, 50));
  }
  client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'sdk-test-key', maxRetries: 0 });
});

after(async () => {
  if (!server || server.exitCode != null) return;
  const exited = new Promise((r) => server.once('exit', (code) => r(code)));
  server.kill('SIGTERM');
  assert.equal(await exited, 0, `qvl serve did not exit 0 on SIGTERM:\n${log}`);
});

const ask = (content, extra = {}) => ({
  model: 'whatever-the-client-calls-it',
  messages: [{ role: 'user', content }],
  temperature: 0,
  max_tokens: 12,
  ...extra,
});

test('plain completion', async () => {
  const r = await client.chat.completions.create(ask('Say hello.'));
  assert.equal(r.object, 'chat.completion');
  assert.equal(r.choices.length, 1);
  assert.equal(r.choices[0].message.role, 'assistant');
  assert.ok(r.choices[0].message.content.length > 0);
  assert.ok(['stop', 'length'].includes(r.choices[0].finish_reason));
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + r.usage.completion_tokens);
  const models = await client.models.list();
  assert.equal(models.data[0].id, 'tiny-qwen3vl');
});

test('streamed completion equals the plain one, with usage', async () => {
  const plain = await client.chat.completions.create(ask('Count to three.'));
  const stream = await client.chat.completions.create(
    ask('Count to three.', { stream: true, stream_options: { include_usage: true } }));
  let text = '';
  let usage = null;
  let finish = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    if (chunk.choices.length) {
      text += chunk.choices[0].delta.content ?? '';
      finish = chunk.choices[0].finish_reason ?? finish;
    }
  }
  assert.equal(text, plain.choices[0].message.content);
  assert.equal(finish, plain.choices[0].finish_reason);
  assert.equal(usage.completion_tokens, plain.usage.completion_tokens);
});

test('base64 image in a content part', async () => {
  const url = `data:image/png;base64,${readFileSync(IMAGE).toString('base64')}`;
  const r = await client.chat.completions.create(ask([
    { type: 'image_url', image_url: { url } },
    { type: 'text', text: 'What is in this image?' },
  ]));
  assert.ok(r.choices[0].message.content.length > 0);
  // 320x240 -> 80 image tokens, counted in the prompt.
  assert.ok(r.usage.prompt_tokens > 80, JSON.stringify(r.usage));
});

test('errors surface as the SDK error classes', async () => {
  await assert.rejects(client.chat.completions.create(ask('x', { n: 9 })), (e) => {
    assert.ok(e instanceof OpenAI.BadRequestError, String(e));
    assert.equal(e.status, 400);
    assert.equal(e.param, 'n');
    return true;
  });
  const wrongKey = new OpenAI({ baseURL: client.baseURL, apiKey: 'nope', maxRetries: 0 });
  await assert.rejects(wrongKey.chat.completions.create(ask('x')), OpenAI.AuthenticationError);
});
