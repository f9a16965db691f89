// Embedding and rerank clients against the real `qvl serve --task embed` / `--task rerank` with the
// tiny fixture model used as Qwen3-VL-Embedding / -Reranker: the OpenAI SDK's embeddings.create
// (its default base64 encoding and float), LangChain's OpenAIEmbeddings, LlamaIndex's
// OpenAIEmbedding, and a Cohere/Jina-style rerank call (POST /v1/rerank and Cohere v2's
// /v2/rerank, as those clients send them). The vectors are checked against the golden embeddings
// (tests/fixtures/golden-embed/manifest.json, atol 1e-3 per component).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import OpenAI from 'openai';
import { OpenAIEmbeddings } from '@langchain/openai';
import { OpenAIEmbedding } from '@llamaindex/openai';
import { startQvl, explain, ROOT, MODEL } from './qvl_server.mjs';

const golden = JSON.parse(readFileSync(path.join(ROOT, 'tests/fixtures/golden-embed/manifest.json'), 'utf8'));
const embeddingCase = (name) => golden.embeddings.find((c) => c.name === name);
const rerankCase = (name) => golden.rerank.find((c) => c.name === name);

function assertNear(got, want, atol, what) {
  assert.equal(got.length, want.length, `${what}: length`);
  const worst = Math.max(...got.map((x, i) => Math.abs(x - want[i])));
  assert.ok(worst <= atol, `${what}: max |diff| ${worst} > ${atol}`);
}

let embedServer;
let rerankServer;
before(async () => {
  [embedServer, rerankServer] = await Promise.all([
    startQvl(['--task', 'embed', '--weights', 'f32']),
    startQvl(['--task', 'rerank', '--weights', 'f32']),
  ]);
});
after(async () => Promise.all([embedServer?.stop(), rerankServer?.stop()]));

const query = embeddingCase('query_default');
const doc = embeddingCase('doc_short');

test('OpenAI SDK embeddings.create: base64 (the default) and float', async () => {
  const client = new OpenAI({ baseURL: embedServer.baseURL, apiKey: embedServer.apiKey, maxRetries: 0 });
  const b64 = await explain('embeddings.create', embedServer,
    () => client.embeddings.create({ model: MODEL, input: [query.input.text, doc.input.text] }));
  assert.equal(b64.data.length, 2);
  assertNear(b64.data[0].embedding, query.embedding, 1e-3, 'base64 query');
  assertNear(b64.data[1].embedding, doc.embedding, 1e-3, 'base64 doc');
  assert.equal(b64.usage.prompt_tokens, query.num_tokens + doc.num_tokens);
  const floats = await client.embeddings.create({
    model: MODEL, input: query.input.text, encoding_format: 'float', dimensions: 16,
  });
  assertNear(floats.data[0].embedding, query.mrl['16'], 1e-3, 'float mrl 16');
  await assert.rejects(client.embeddings.create({ model: MODEL, input: 'a', dimensions: 65 }),
    (e) => e.status === 400 && /dimensions/.test(e.message));
});

test("LangChain's OpenAIEmbeddings", async () => {
  const embeddings = new OpenAIEmbeddings({
    model: MODEL, apiKey: embedServer.apiKey, configuration: { baseURL: embedServer.baseURL }, maxRetries: 0,
  });
  const docs = await explain('embedDocuments', embedServer, () => embeddings.embedDocuments([doc.input.text]));
  assertNear(docs[0], doc.embedding, 1e-3, 'embedDocuments');
  assertNear(await embeddings.embedQuery(query.input.text), query.embedding, 1e-3, 'embedQuery');
});

test("LlamaIndex's OpenAIEmbedding", async () => {
  const embedding = new OpenAIEmbedding({
    model: MODEL, apiKey: embedServer.apiKey, additionalSessionOptions: { baseURL: embedServer.baseURL }, maxRetries: 0,
  });
  const v = await explain('getTextEmbedding', embedServer, () => embedding.getTextEmbedding(query.input.text));
  assertNear(v, query.embedding, 1e-3, 'getTextEmbedding');
});

test('Cohere/Jina-style rerank', async () => {
  const cal = rerankCase('calibrated_text');
  const pos = rerankCase('text_text');
  const base = rerankServer.baseURL.replace(/\/v1$/, '');
  for (const route of ['/v1/rerank', '/v2/rerank']) {
    const res = await fetch(base + route, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${rerankServer.apiKey}` },
      body: JSON.stringify({
        model: MODEL, query: cal.input.query.text, documents: [cal.input.document.text, pos.input.document.text],
        top_n: 2, return_documents: true,
      }),
    });
    const body = await res.json();
    assert.equal(res.status, 200, JSON.stringify(body));
    assert.deepEqual(body.results.map((r) => r.index), [1, 0]);
    assert.ok(Math.abs(body.results[1].relevance_score - cal.score) <= 0.025, JSON.stringify(body.results[1]));
    assert.equal(body.results[1].document.text, cal.input.document.text);
  }
});
