// The official OpenAI Node SDK (npm `openai`) against the real `qvl serve` with the tiny fixture
// model: the Responses API (plain, streamed, an input_image, text.format json_schema, a tool call
// and its answer by previous_response_id) and chat completions (tool_choice "required" and a full
// tool round trip, logprobs with top_logprobs, n = 2, structured output parsed with zod).
//
// The weights are random, so only what constrained decoding guarantees is asserted: structured
// output parses and fits its schema, calls name the right tool with schema-valid arguments, and the
// shapes and counts are right. Strings are bounded (maxLength) so every constrained value ends
// well inside max_tokens.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { zodResponseFormat, zodTextFormat } from 'openai/helpers/zod';
import { z } from 'zod';
import { startQvl, explain, imageDataUri, MODEL } from './qvl_server.mjs';

let server;
let client;

before(async () => {
  server = await startQvl();
  client = new OpenAI({ baseURL: server.baseURL, apiKey: server.apiKey, maxRetries: 0 });
});
after(async () => server?.stop());

const Person = z.object({
  name: z.string().max(16),
  role: z.enum(['pilot', 'doctor', 'chef']),
  retired: z.boolean(),
});
const personSchema = z.toJSONSchema(Person);
const weatherTool = {
  name: 'get_weather',
  description: 'Current weather in a city',
  parameters: {
    type: 'object',
    properties: { city: { type: 'string', maxLength: 20 }, unit: { type: 'string', enum: ['c', 'f'] } },
    required: ['city', 'unit'],
    additionalProperties: false,
  },
};
const WeatherArgs = z.object({ city: z.string().max(20), unit: z.enum(['c', 'f']) }).strict();

function parseArgs(text, what) {
  let v;
  assert.doesNotThrow(() => { v = JSON.parse(text); }, `${what}: arguments are not JSON: ${text}`);
  const r = WeatherArgs.safeParse(v);
  assert.ok(r.success, `${what}: arguments do not fit the tool's schema: ${text}\n${r.error}`);
  return r.data;
}

// --- Responses API ---------------------------------------------------------------------------

test('responses.create: plain text answer', async () => {
  const r = await explain('responses.create', server, () => client.responses.create({
    model: MODEL, input: 'Say hello.', temperature: 0, max_output_tokens: 16,
  }));
  assert.equal(r.object, 'response');
  assert.match(r.id, /^resp_/);
  assert.ok(['completed', 'incomplete'].includes(r.status), r.status);
  assert.equal(r.output.length, 1, JSON.stringify(r.output));
  assert.equal(r.output[0].type, 'message');
  assert.equal(r.output[0].role, 'assistant');
  assert.equal(typeof r.output_text, 'string');
  assert.equal(r.output_text, r.output[0].content[0].text);
  assert.equal(r.usage.total_tokens, r.usage.input_tokens + r.usage.output_tokens);
  assert.ok(r.usage.output_tokens <= 16);
});

test('responses.create stream: typed events build the plain answer', async () => {
  const params = { model: MODEL, input: 'Count to three.', temperature: 0, max_output_tokens: 20 };
  const plain = await client.responses.create(params);
  const stream = await explain('responses.create stream', server, () => client.responses.create({ ...params, stream: true }));
  const types = [];
  let text = '';
  let last = null;
  let seq = -1;
  for await (const e of stream) {
    types.push(e.type);
    assert.ok(e.sequence_number > seq, `sequence_number not increasing at ${e.type}`);
    seq = e.sequence_number;
    if (e.type === 'response.output_text.delta') text += e.delta;
    if (e.type === 'response.completed' || e.type === 'response.incomplete') last = e.response;
  }
  assert.deepEqual(types.slice(0, 4),
    ['response.created', 'response.in_progress', 'response.output_item.added', 'response.content_part.added']);
  for (const t of ['response.output_text.done', 'response.content_part.done', 'response.output_item.done'])
    assert.ok(types.includes(t), `no ${t} event in ${types.join(', ')}`);
  assert.ok(last, `the stream ended without response.completed/incomplete: ${types.join(', ')}`);
  assert.equal(text, plain.output_text);
  assert.equal(last.output[0].content[0].text, text);
  assert.equal(last.usage.output_tokens, plain.usage.output_tokens);
});

test('responses.stream helper: final response and text', async () => {
  const runner = client.responses.stream({ model: MODEL, input: 'Hi', temperature: 0, max_output_tokens: 8 });
  let text = '';
  runner.on('response.output_text.delta', (e) => { text += e.delta; });
  const final = await explain('responses.stream', server, () => runner.finalResponse());
  assert.equal(final.output_text, text);
});

test('responses.create: input_image in a message', async () => {
  const r = await explain('responses.create with input_image', server, () => client.responses.create({
    model: MODEL,
    instructions: 'Be brief.',
    input: [{
      role: 'user',
      content: [
        { type: 'input_image', image_url: imageDataUri(), detail: 'auto' },
        { type: 'input_text', text: 'What is in this image?' },
      ],
    }],
    temperature: 0,
    max_output_tokens: 12,
  }));
  assert.equal(r.output[0].type, 'message');
  // 320x240 -> 80 image tokens, counted in the input.
  assert.ok(r.usage.input_tokens > 80, JSON.stringify(r.usage));
  assert.equal(r.instructions, 'Be brief.');
});

test('responses.create: text.format json_schema gives JSON that fits', async () => {
  const r = await explain('responses.create json_schema', server, () => client.responses.create({
    model: MODEL,
    input: 'Describe a person as JSON.',
    text: { format: { type: 'json_schema', name: 'person', schema: personSchema, strict: true } },
    temperature: 0,
    max_output_tokens: 300,
  }));
  assert.equal(r.status, 'completed', `status ${r.status}: ${r.output_text}`);
  const v = JSON.parse(r.output_text);
  const p = Person.safeParse(v);
  assert.ok(p.success, `does not fit the schema: ${r.output_text}\n${p.error}`);
});

test('responses.parse with zodTextFormat: output_parsed validates', async () => {
  const r = await explain('responses.parse', server, () => client.responses.parse({
    model: MODEL,
    input: 'Describe a person.',
    text: { format: zodTextFormat(Person, 'person') },
    temperature: 0,
    max_output_tokens: 300,
  }));
  assert.ok(r.output_parsed, `output_parsed is ${r.output_parsed}: ${r.output_text}`);
  assert.ok(Person.safeParse(r.output_parsed).success, JSON.stringify(r.output_parsed));
});

test('responses.create: tool_choice required, then the call answered by previous_response_id', async () => {
  const tools = [{ type: 'function', strict: true, ...weatherTool }];
  const r = await explain('responses.create with tools', server, () => client.responses.create({
    model: MODEL, input: 'What is the weather in Paris?', tools, tool_choice: 'required',
    parallel_tool_calls: false, temperature: 0, max_output_tokens: 300,
  }));
  const calls = r.output.filter((o) => o.type === 'function_call');
  assert.equal(calls.length, 1, `expected one function_call item: ${JSON.stringify(r.output)}`);
  assert.equal(calls[0].name, 'get_weather');
  assert.match(calls[0].call_id, /^call_/);
  assert.equal(calls[0].status, 'completed');
  parseArgs(calls[0].arguments, 'responses function_call');

  const next = await explain('responses.create with function_call_output', server, () => client.responses.create({
    model: MODEL,
    previous_response_id: r.id,
    input: [{ type: 'function_call_output', call_id: calls[0].call_id, output: '{"temperature": 22}' }],
    tools,
    temperature: 0,
    max_output_tokens: 12,
  }));
  assert.equal(next.previous_response_id, r.id);
  assert.ok(next.usage.input_tokens > r.usage.input_tokens, JSON.stringify([r.usage, next.usage]));
});

test('responses.create stream with tools: function_call_arguments events', async () => {
  const stream = await explain('responses.create stream with tools', server, () => client.responses.create({
    model: MODEL, input: 'Weather in Oslo?', tools: [{ type: 'function', strict: true, ...weatherTool }],
    tool_choice: { type: 'function', name: 'get_weather' }, temperature: 0, max_output_tokens: 300, stream: true,
  }));
  let deltas = '';
  let done = null;
  let final = null;
  for await (const e of stream) {
    if (e.type === 'response.function_call_arguments.delta') deltas += e.delta;
    if (e.type === 'response.function_call_arguments.done') done = e;
    if (e.type === 'response.completed') final = e.response;
  }
  assert.ok(done, 'no response.function_call_arguments.done event');
  assert.equal(deltas, done.arguments);
  parseArgs(done.arguments, 'streamed function_call');
  assert.equal(final.output.find((o) => o.type === 'function_call').arguments, done.arguments);
});

// --- Chat completions ------------------------------------------------------------------------

const chatTools = [{ type: 'function', function: { ...weatherTool, strict: true } }];

test('chat.completions: tool_choice required and a full tool round trip', async () => {
  const messages = [{ role: 'user', content: 'What is the weather in Paris?' }];
  const r = await explain('chat.completions with tool_choice required', server, () => client.chat.completions.create({
    model: MODEL, messages, tools: chatTools, tool_choice: 'required', temperature: 0, max_tokens: 300,
  }));
  const choice = r.choices[0];
  assert.equal(choice.finish_reason, 'tool_calls', JSON.stringify(choice));
  const calls = choice.message.tool_calls ?? [];
  assert.ok(calls.length >= 1, `no tool_calls: ${JSON.stringify(choice.message)}`);
  for (const c of calls) {
    assert.equal(c.type, 'function');
    assert.equal(c.function.name, 'get_weather');
    assert.ok(c.id, 'a tool call without an id');
    parseArgs(c.function.arguments, 'chat tool call');
  }
  messages.push(choice.message);
  for (const c of calls) messages.push({ role: 'tool', tool_call_id: c.id, content: '{"temperature": 22}' });
  const final = await explain('chat.completions with the tool results', server, () => client.chat.completions.create({
    model: MODEL, messages, tools: chatTools, tool_choice: 'none', temperature: 0, max_tokens: 16,
  }));
  assert.equal(typeof final.choices[0].message.content, 'string');
  assert.ok(['stop', 'length'].includes(final.choices[0].finish_reason), final.choices[0].finish_reason);
  assert.ok(final.usage.prompt_tokens > r.usage.prompt_tokens);
});

test('chat.completions: logprobs with top_logprobs', async () => {
  const r = await explain('chat.completions with logprobs', server, () => client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'Hello' }], temperature: 0, max_tokens: 8,
    logprobs: true, top_logprobs: 3,
  }));
  const content = r.choices[0].logprobs?.content;
  assert.ok(Array.isArray(content), `no logprobs.content: ${JSON.stringify(r.choices[0])}`);
  assert.equal(content.length, r.usage.completion_tokens);
  for (const t of content) {
    assert.equal(typeof t.token, 'string');
    assert.ok(t.logprob <= 0, `logprob ${t.logprob} > 0`);
    assert.equal(t.top_logprobs.length, 3, JSON.stringify(t));
    // Greedy: the chosen token is the most likely one.
    assert.ok(t.logprob >= t.top_logprobs[0].logprob - 1e-4, JSON.stringify(t));
  }
});

test('chat.completions: n = 2 gives two choices', async () => {
  const r = await explain('chat.completions with n = 2', server, () => client.chat.completions.create({
    model: MODEL, messages: [{ role: 'user', content: 'Hello' }], temperature: 1, seed: 7, max_tokens: 8, n: 2,
  }));
  assert.equal(r.choices.length, 2);
  assert.deepEqual(r.choices.map((c) => c.index), [0, 1]);
  for (const c of r.choices) assert.equal(typeof c.message.content, 'string');
});

test('chat.completions.parse with zodResponseFormat: parsed validates', async () => {
  const r = await explain('chat.completions.parse', server, () => client.chat.completions.parse({
    model: MODEL, messages: [{ role: 'user', content: 'Describe a person.' }],
    response_format: zodResponseFormat(Person, 'person'), temperature: 0, max_tokens: 300,
  }));
  const parsed = r.choices[0].message.parsed;
  assert.ok(parsed, `parsed is ${parsed}: ${r.choices[0].message.content}`);
  assert.ok(Person.safeParse(parsed).success, JSON.stringify(parsed));
});
