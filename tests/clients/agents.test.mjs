// The OpenAI Agents SDK (npm `@openai/agents`) against the real `qvl serve` with the tiny fixture
// model, on the Responses API (its default) and on chat completions (setOpenAIAPI, and an explicit
// OpenAIChatCompletionsModel): an agent with a zod-typed function tool and toolChoice "required"
// runs the tool with schema-valid arguments and then ends; an agent with a zod outputType ends with
// a finalOutput that fits it; a streamed run gives the same shapes.
//
// @openai/agents 0.14.3 is the newest release whose `openai` dependency (^6) supports Node 20: from
// 0.15.0 on it needs openai ^7, whose engines field asks for Node >= 22.
//
// Random weights: after the forced tool call the agent's next turn (tool choice reset to auto) may
// answer in text or call the tool again, so a run either ends with a string finalOutput or with
// MaxTurnsExceededError, tolerated only when the tool ran with valid arguments.
//
// Two tests hold what this SDK needed of qvl: a z.number().int() anywhere in a schema (zod 4 writes
// the safe-integer minimum/maximum for it) is enforced, and a non-streamed response labels a
// function_call cut off by max_output_tokens "incomplete", as the stream does.
import { test, before, after, beforeEach } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import {
  Agent, run, tool, setDefaultOpenAIClient, setOpenAIAPI, setTracingDisabled,
  MaxTurnsExceededError, OpenAIChatCompletionsModel,
} from '@openai/agents';
import { z } from 'zod';
import { startQvl, exchangeLog, MODEL } from './qvl_server.mjs';

let server;
let client;
// Every request the SDK sends and the status/body the server answers, so a failure shows both.
const log = exchangeLog();
const exchanges = log.exchanges;
const loggingFetch = log.fetch;

const explainRun = (what, fn) => log.explain(what, server, fn);

before(async () => {
  server = await startQvl();
  client = new OpenAI({ baseURL: server.baseURL, apiKey: server.apiKey, maxRetries: 0, fetch: loggingFetch });
  setDefaultOpenAIClient(client);
  setTracingDisabled(true);
});
after(async () => server?.stop());
beforeEach(() => { exchanges.length = 0; });

const WeatherArgs = z.object({ city: z.string().max(20), unit: z.enum(['c', 'f']) });
const Verdict = z.object({
  label: z.enum(['good', 'bad', 'unsure']),
  certain: z.boolean(),
  note: z.string().max(12),
});
// zod 4 writes every z.number().int() with the safe-integer range (minimum -9007199254740991,
// maximum 9007199254740991), so an integer field anywhere in a schema sends minimum/maximum.
const Rating = z.object({ stars: z.number().int(), note: z.string().max(12) });
const settings = { temperature: 0, maxTokens: 300 };

function weatherTool(calls) {
  return tool({
    name: 'get_weather',
    description: 'Current weather in a city',
    parameters: WeatherArgs,
    async execute(args) {
      calls.push(args);
      return `22 degrees ${args.unit} in ${args.city}`;
    },
  });
}

// Runs `agent` and returns the result, or null when it ran out of turns after the tool ran.
async function runToolAgent(agent, calls, what, options = {}) {
  let result = null;
  try {
    result = await explainRun(what, async () => {
      const r = await run(agent, 'What is the weather in Paris?', { maxTurns: 3, ...options });
      if (options.stream) {
        for await (const _ of r) { /* drain */ }
        await r.completed;
        if (r.error) throw r.error;
      }
      return r;
    });
  } catch (e) {
    if (!(e instanceof MaxTurnsExceededError) && !/MaxTurnsExceeded|Max turns/i.test(e.message)) throw e;
    assert.ok(calls.length >= 1, `the run ran out of turns without calling the tool:\n${e.message}`);
  }
  assert.ok(calls.length >= 1, `the tool never ran; final output: ${JSON.stringify(result?.finalOutput)}`);
  for (const args of calls) {
    const p = WeatherArgs.strict().safeParse(args);
    assert.ok(p.success, `execute got arguments that do not fit the schema: ${JSON.stringify(args)}\n${p.error}`);
  }
  if (result) assert.equal(typeof result.finalOutput, 'string', JSON.stringify(result.finalOutput));
  return result;
}

const apis = [
  ['responses', () => { setOpenAIAPI('responses'); return MODEL; }],
  ['chat_completions', () => { setOpenAIAPI('chat_completions'); return MODEL; }],
  ['OpenAIChatCompletionsModel', () => new OpenAIChatCompletionsModel(client, MODEL)],
];

for (const [api, model] of apis) {
  test(`tool with toolChoice required runs with valid arguments, then the run ends (${api})`, async () => {
    const calls = [];
    const agent = new Agent({
      name: 'weather',
      instructions: 'Answer weather questions with the tool.',
      model: model(),
      tools: [weatherTool(calls)],
      modelSettings: { ...settings, toolChoice: 'required', parallelToolCalls: false },
    });
    const r = await runToolAgent(agent, calls, `tool agent via ${api}`);
    const expectPath = api === 'responses' ? '/responses' : '/chat/completions';
    assert.ok(exchanges.length >= 2, `expected at least two model requests: ${log.last()}`);
    for (const e of exchanges) assert.ok(e.url.endsWith(expectPath), e.url);
    const first = JSON.parse(exchanges[0].request);
    assert.equal(first.tool_choice, 'required', exchanges[0].request);
    assert.equal(first.parallel_tool_calls, false, exchanges[0].request);
    // The forced first turn is one call; later turns (tool choice reset to auto) may call again.
    const answer = JSON.parse(exchanges[0].response);
    const firstCalls = api === 'responses'
      ? answer.output.filter((o) => o.type === 'function_call') : answer.choices[0].message.tool_calls;
    assert.equal(firstCalls?.length, 1, exchanges[0].response);
    assert.notEqual(JSON.parse(exchanges[1].request).tool_choice, 'required', 'the tool choice was not reset');
    if (r) {
      const items = r.newItems.map((i) => i.type);
      assert.ok(items.includes('tool_call_item') && items.includes('tool_call_output_item'), items.join(', '));
    }
  });

  test(`outputType: finalOutput fits the zod schema (${api})`, async () => {
    const agent = new Agent({
      name: 'judge',
      instructions: 'Judge the statement.',
      model: model(),
      outputType: Verdict,
      modelSettings: settings,
    });
    const r = await explainRun(`outputType agent via ${api}`, () => run(agent, 'Pineapple on pizza.', { maxTurns: 2 }));
    const p = Verdict.safeParse(r.finalOutput);
    assert.ok(p.success, `finalOutput ${JSON.stringify(r.finalOutput)} does not fit\n${p.error}`);
  });
}

test('streamed run: tool then end, and a streamed outputType (responses)', async () => {
  setOpenAIAPI('responses');
  const calls = [];
  const agent = new Agent({
    name: 'weather', instructions: 'Use the tool.', model: MODEL,
    tools: [weatherTool(calls)], modelSettings: { ...settings, toolChoice: 'required', parallelToolCalls: false },
  });
  await runToolAgent(agent, calls, 'streamed tool agent', { stream: true });

  const judge = new Agent({ name: 'judge', model: MODEL, outputType: Verdict, modelSettings: settings });
  const s = await explainRun('streamed outputType agent', () => run(judge, 'Cats.', { stream: true, maxTurns: 2 }));
  let text = '';
  for await (const e of s.toTextStream()) text += e;
  await s.completed;
  const p = Verdict.safeParse(s.finalOutput);
  assert.ok(p.success, `streamed finalOutput ${JSON.stringify(s.finalOutput)} does not fit\n${p.error}`);
  assert.deepEqual(JSON.parse(text), s.finalOutput);
});

test('outputType with a z.number().int() field (responses)', async () => {
    setOpenAIAPI('responses');
    const agent = new Agent({ name: 'rater', model: MODEL, outputType: Rating, modelSettings: settings });
    const r = await explainRun('outputType with an int', () => run(agent, 'Rate this film.', { maxTurns: 2 }));
    assert.ok(Rating.safeParse(r.finalOutput).success, JSON.stringify(r.finalOutput));
  });

// Without parallelToolCalls the SDK sends no parallel_tool_calls (its docs say the setting
// "defaults to false", but the field is just left out), so the server's default (parallel, as on
// OpenAI) applies: here the random model writes six calls and max_output_tokens cuts the sixth off.
// The response says status "incomplete", and the cut call's item is "incomplete" too (as the
// streamed answer and GET /v1/responses/{id} say), so the SDK does not run it on unfinished arguments.
test('parallel tool calls cut by max_output_tokens: a "completed" call has whole arguments (responses)', async () => {
    setOpenAIAPI('responses');
    const calls = [];
    const t = tool({
      name: 'get_weather', description: 'w', parameters: WeatherArgs,
      async execute(args) { calls.push(args); return 'sunny'; },
    });
    const agent = new Agent({
      name: 'weather', model: MODEL, tools: [t], modelSettings: { ...settings, toolChoice: 'required' },
    });
    await explainRun('parallel tool agent', () => run(agent, 'Weather in Paris?', { maxTurns: 3 }));
    const first = JSON.parse(exchanges[0].response);
    assert.equal(first.status, 'incomplete', 'this prompt no longer reaches max_output_tokens');
    for (const item of first.output.filter((o) => o.type === 'function_call')) {
      if (item.status !== 'completed') continue;
      assert.doesNotThrow(() => JSON.parse(item.arguments),
        `a function_call with status "completed" has unfinished arguments: ${item.arguments}`);
    }
  });
