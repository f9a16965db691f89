// The Vercel AI SDK (npm `ai` + `@ai-sdk/openai`) against the real `qvl serve` with the tiny fixture
// model. `openai(model)` speaks the Responses API (/v1/responses) and `openai.chat(model)` chat
// completions; each test runs on both. Random weights: only constrained behaviour is asserted
// (objects fit their zod schema, tool calls name the tool with valid input).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createOpenAI } from '@ai-sdk/openai';
import { generateObject, generateText, streamText, tool, Output } from 'ai';
import { z } from 'zod';
import { startQvl, explain, MODEL } from './qvl_server.mjs';

let server;
let openai;

before(async () => {
  server = await startQvl();
  openai = createOpenAI({ baseURL: server.baseURL, apiKey: server.apiKey });
});
after(async () => server?.stop());

const Recipe = z.object({
  title: z.string().max(20),
  course: z.enum(['starter', 'main', 'dessert']),
  vegetarian: z.boolean(),
  tags: z.array(z.string().max(8)).max(2),
});
const weather = tool({
  description: 'Current weather in a city',
  inputSchema: z.object({ city: z.string().max(20), unit: z.enum(['c', 'f']) }),
});
const settings = { temperature: 0, maxOutputTokens: 300, maxRetries: 0 };

const apis = [
  ['responses', () => openai(MODEL)],
  ['chat', () => openai.chat(MODEL)],
];

for (const [api, model] of apis) {
  test(`generateObject (${api}): the object fits the zod schema`, async () => {
    const r = await explain(`generateObject via ${api}`, server, () => generateObject({
      model: model(), schema: Recipe, schemaName: 'recipe', prompt: 'Invent a recipe.', ...settings,
    }));
    const p = Recipe.safeParse(r.object);
    assert.ok(p.success, `${JSON.stringify(r.object)}\n${p.error}`);
    assert.equal(r.finishReason, 'stop');
  });

  test(`generateText with Output.object (${api}): the output fits the zod schema`, async () => {
    const r = await explain(`generateText output via ${api}`, server, () => generateText({
      model: model(), output: Output.object({ schema: Recipe }), prompt: 'Invent a recipe.', ...settings,
    }));
    assert.ok(Recipe.safeParse(r.output).success, JSON.stringify(r.output));
  });

  test(`generateText with tools and toolChoice required (${api}): tool calls`, async () => {
    const r = await explain(`generateText tools via ${api}`, server, () => generateText({
      model: model(), tools: { get_weather: weather }, toolChoice: 'required',
      prompt: 'What is the weather in Paris?', ...settings,
    }));
    assert.ok(r.toolCalls.length >= 1, `no tool calls; text: ${r.text}; finish: ${r.finishReason}`);
    for (const c of r.toolCalls) {
      assert.equal(c.toolName, 'get_weather');
      assert.ok(c.toolCallId, 'a tool call without an id');
      assert.ok(weather.inputSchema.safeParse(c.input).success, JSON.stringify(c.input));
    }
    assert.equal(r.finishReason, 'tool-calls');
  });

  test(`tool round trip with execute (${api}): call, result, final text`, async () => {
    let executed = 0;
    const r = await explain(`tool round trip via ${api}`, server, () => generateText({
      model: model(),
      tools: { get_weather: tool({ ...weather, execute: async ({ city }) => { executed++; return { city, temperature: 22 }; } }) },
      // The first step must call; the second answers in text.
      prepareStep: ({ stepNumber }) => ({ toolChoice: stepNumber === 0 ? 'required' : 'none' }),
      stopWhen: ({ steps }) => steps.length >= 2,
      prompt: 'What is the weather in Paris?',
      ...settings,
      maxOutputTokens: 300,
    }));
    assert.equal(r.steps.length, 2, `steps: ${r.steps.map((s) => s.finishReason).join(', ')}`);
    assert.ok(executed >= 1, 'the tool was never executed');
    assert.equal(r.steps[0].finishReason, 'tool-calls');
    assert.equal(r.steps[1].toolCalls.length, 0);
    assert.equal(typeof r.text, 'string');
  });

  test(`streamText (${api}): streamed text equals generateText`, async () => {
    const params = { model: model(), prompt: 'Say hello.', temperature: 0, maxOutputTokens: 12, maxRetries: 0 };
    const plain = await generateText(params);
    const s = streamText({ ...params, model: model(), onError: ({ error }) => { throw error; } });
    let text = '';
    for await (const part of s.textStream) text += part;
    assert.equal(text, plain.text);
    assert.equal((await s.usage).outputTokens, plain.usage.outputTokens);
  });
}
