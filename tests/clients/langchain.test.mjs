// LangChain (npm `@langchain/openai` + `@langchain/core`) against the real `qvl serve` with the tiny
// fixture model: withStructuredOutput by each method (functionCalling, jsonMode, jsonSchema) must
// return an object that fits the zod schema (never undefined), and bindTools with tool_choice
// "required" must give tool calls with valid args; on chat completions and, where LangChain offers
// it, on the Responses API (useResponsesApi).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { ChatOpenAI } from '@langchain/openai';
import { tool } from '@langchain/core/tools';
import { z } from 'zod';
import { startQvl, explain, MODEL } from './qvl_server.mjs';

let server;

before(async () => { server = await startQvl(); });
after(async () => server?.stop());

const chatModel = (extra = {}) => new ChatOpenAI({
  model: MODEL,
  apiKey: server.apiKey,
  configuration: { baseURL: server.baseURL },
  temperature: 0,
  maxTokens: 300,
  maxRetries: 0,
  ...extra,
});

const Movie = z.object({
  title: z.string().max(20).describe('the title'),
  genre: z.enum(['drama', 'comedy', 'horror']),
  sequel: z.boolean(),
});

const check = (result, what) => {
  assert.notEqual(result, undefined, `${what}: withStructuredOutput returned undefined`);
  const p = Movie.safeParse(result);
  assert.ok(p.success, `${what}: ${JSON.stringify(result)} does not fit the schema\n${p.error}`);
};

for (const [api, extra] of [['chat', {}], ['responses', { useResponsesApi: true }]]) {
  for (const method of ['functionCalling', 'jsonSchema']) {
    test(`withStructuredOutput ${method} (${api})`, async () => {
      const m = chatModel(extra).withStructuredOutput(Movie, { method, name: 'movie' });
      const r = await explain(`withStructuredOutput ${method} via ${api}`, server,
        () => m.invoke('Invent a movie. Answer in JSON.'));
      check(r, method);
    });
  }

  test(`bindTools with tool_choice required (${api})`, async () => {
    const weather = tool(async ({ city }) => `22 C in ${city}`, {
      name: 'get_weather',
      description: 'Current weather in a city',
      schema: z.object({ city: z.string().max(20), unit: z.enum(['c', 'f']) }),
    });
    // @langchain/openai 1.5.8 drops a string tool_choice ("required", "auto", "none") on its
    // Responses path (only objects survive its conversion), so there the call is forced by naming
    // the tool, which it sends as {"type": "function", "name"}.
    const choice = api === 'responses' ? 'get_weather' : 'required';
    const m = chatModel(extra).bindTools([weather], { tool_choice: choice });
    const msg = await explain(`bindTools via ${api}`, server, () => m.invoke('What is the weather in Paris?'));
    assert.ok(msg.tool_calls?.length >= 1, `no tool_calls: ${JSON.stringify(msg.content)}`);
    for (const c of msg.tool_calls) {
      assert.equal(c.name, 'get_weather');
      assert.ok(c.id, 'a tool call without an id');
      assert.ok(weather.schema.safeParse(c.args).success, JSON.stringify(c.args));
    }
    // The round trip: the tool's answer, then a text reply.
    const result = await weather.invoke(msg.tool_calls[0]);
    const reply = await explain(`tool result via ${api}`, server, () => chatModel({ ...extra, maxTokens: 16 })
      .bindTools([weather], { tool_choice: 'none' })
      .invoke([['human', 'What is the weather in Paris?'], msg, result]));
    assert.equal(typeof reply.text, 'string');
  });

  // json_object mode constrains the answer to a JSON object, not to the schema: LangChain sends
  // only {"type": "json_object"} and describes the schema nowhere the server sees. So what is
  // asserted is the server's part: the raw answer is a JSON object, and LangChain's parse of it
  // (includeRaw: a mismatch gives parsed null instead of throwing) fits when it succeeds.
  test(`withStructuredOutput jsonMode (${api}): the answer is a JSON object`, async () => {
    const m = chatModel(extra).withStructuredOutput(Movie, { method: 'jsonMode', name: 'movie', includeRaw: true });
    const r = await explain(`withStructuredOutput jsonMode via ${api}`, server,
      () => m.invoke('Invent a movie. Answer in JSON with keys title, genre, sequel.'));
    assert.ok(r.raw, 'no raw message');
    const text = typeof r.raw.content === 'string' ? r.raw.content : r.raw.text;
    let v;
    assert.doesNotThrow(() => { v = JSON.parse(text); }, `jsonMode answer is not JSON: ${text}`);
    assert.ok(v && typeof v === 'object' && !Array.isArray(v), `jsonMode answer is not a JSON object: ${text}`);
    if (r.parsed != null) check(r.parsed, 'jsonMode');
  });

  // The full promise of jsonMode (an object that fits) needs a model that follows the prompt's
  // description of the schema; with the fixture's random weights it cannot hold.
  test(`withStructuredOutput jsonMode (${api}): the object fits the schema`,
    { todo: 'needs real weights: json_object mode does not send the schema' }, async () => {
      const m = chatModel(extra).withStructuredOutput(Movie, { method: 'jsonMode', name: 'movie' });
      check(await m.invoke('Invent a movie. Answer in JSON with keys title, genre, sequel.'), 'jsonMode');
    });
}
