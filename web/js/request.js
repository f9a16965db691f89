// The chat-completion request a turn sends, built from the settings and the conversation; and the
// checks of the settings that hold JSON (the answer's schema, the tools). Pure functions, no DOM.
import { effectiveMaxPixels, raisedPixels } from './smart_resize.js';
import { filePart } from './document.js';
import { videoPart } from './video.js';
import { toApiToolCalls } from './tool_calls.js';
import { TOOL_CHOICES } from './settings.js';

const NAME_RE = /^[A-Za-z0-9_-]{1,64}$/;  // what the server (and OpenAI) accept as a name

// JSON.parse with the reason in words: {value} or {error}.
function parseJson(text, what) {
  try {
    return { value: JSON.parse(text) };
  } catch (e) {
    const why = String(e.message).replace(/^JSON\.parse: /, '').replace(/\.?$/, '.');
    return { error: `${what} is not valid JSON: ${why}` };
  }
}

const isObject = (v) => v != null && typeof v === 'object' && !Array.isArray(v);

// The "JSON schema" setting: a schema, or OpenAI's whole json_schema object ({name, schema, strict},
// as pasted from code that uses the API). Returns {value: json_schema object} or {error}.
export function checkSchemaText(text) {
  if (!String(text).trim()) return { error: 'Write a JSON schema for the answer, or choose another answer format.' };
  const parsed = parseJson(text, 'The schema');
  if (parsed.error) return parsed;
  const v = parsed.value;
  if (!isObject(v)) return { error: 'The schema must be a JSON object, such as {"type": "object", …}.' };
  if (isObject(v.schema) && typeof v.name === 'string') {
    if (!NAME_RE.test(v.name)) return { error: 'The schema\'s "name" must be 1 to 64 of a-z, A-Z, 0-9, _ and -.' };
    return { value: { ...v, strict: v.strict ?? true } };
  }
  return { value: { name: 'answer', schema: v, strict: true } };
}

// The "Tools" setting: a JSON array of OpenAI tool definitions, [] or empty for none. A bare
// function ({name, description, parameters}) is taken as {type: "function", function: …}.
// Returns {value: tools array (maybe empty)} or {error}.
export function checkToolsText(text) {
  if (!String(text).trim()) return { value: [] };
  const parsed = parseJson(text, 'Tools');
  if (parsed.error) return parsed;
  let list = parsed.value;
  if (isObject(list)) list = [list];
  if (!Array.isArray(list)) return { error: 'Tools must be a JSON array of tool definitions.' };
  const tools = [];
  const names = new Set();
  for (const [k, t] of list.entries()) {
    const where = `Tool ${k + 1}`;
    if (!isObject(t)) return { error: `${where} is not an object.` };
    const tool = t.type == null && t.function == null && typeof t.name === 'string' ? { type: 'function', function: t } : t;
    if (tool.type !== 'function') return { error: `${where}: "type" must be "function".` };
    if (!isObject(tool.function)) return { error: `${where} needs a "function" object with a "name".` };
    const { name, parameters } = tool.function;
    if (typeof name !== 'string' || !NAME_RE.test(name)) {
      return { error: `${where}: the function "name" must be 1 to 64 of a-z, A-Z, 0-9, _ and -.` };
    }
    if (names.has(name)) return { error: `Two tools are named "${name}".` };
    names.add(name);
    if (parameters != null && !isObject(parameters)) return { error: `${where} (${name}): "parameters" must be a JSON schema object.` };
    tools.push(tool);
  }
  return { value: tools };
}

// The request fields the answer-format and tools settings add: {fields} or {error} (the setting
// is wrong and the request must not go out; the error says what to fix).
export function formatAndToolFields(settings) {
  const fields = {};
  if (settings.answerFormat === 'json_object') {
    fields.response_format = { type: 'json_object' };
  } else if (settings.answerFormat === 'json_schema') {
    const schema = checkSchemaText(settings.jsonSchema);
    if (schema.error) return { error: `Answer format: ${schema.error}` };
    fields.response_format = { type: 'json_schema', json_schema: schema.value };
  }
  const tools = checkToolsText(settings.tools);
  if (tools.error) return { error: `Tools: ${tools.error}` };
  if (tools.value.length) {
    fields.tools = tools.value;
    fields.tool_choice = TOOL_CHOICES.includes(settings.toolChoice) ? settings.toolChoice : 'auto';
  }
  return { fields };
}

// The conversation as messages. `turns` are the turns that go back as history, the last one being
// the question now asked (its answer is not sent). Each turn: {text, images: [{dataUrl}], answer:
// {text, toolCalls}}. An earlier answer's tool calls go back as the assistant message's tool_calls.
export function buildMessages(system, turns) {
  const messages = [];
  if (system.trim()) messages.push({ role: 'system', content: system });
  turns.forEach((t, k) => {
    if (t.images.length || t.doc || t.video) {
      // Images first (a PDF's pages are images too), then the video, then the text: the layout the
      // model was trained on and `qvl run` uses.
      const parts = t.images.map((a) => ({ type: 'image_url', image_url: { url: a.dataUrl } }));
      if (t.doc) parts.push(filePart(t.doc));
      if (t.video) parts.push(videoPart(t.video));
      if (t.text) parts.push({ type: 'text', text: t.text });
      messages.push({ role: 'user', content: parts });
    } else {
      messages.push({ role: 'user', content: t.text });
    }
    if (k === turns.length - 1) return;
    const calls = t.answer.toolCalls || [];
    const m = { role: 'assistant' };
    if (t.answer.text || !calls.length) m.content = t.answer.text;
    if (calls.length) m.tool_calls = toApiToolCalls(calls);
    messages.push(m);
  });
  return messages;
}

// The whole request: {body (an object, to be JSON.stringify'd)} or {error}. A task preset may
// bring its own answer format (`responseFormat`, in place of the setting's) and a higher image
// budget (`minTokens`: min_pixels and max_pixels from raisedPixels).
export function buildRequestBody({ settings, config, messages, preset = null }) {
  const extra = formatAndToolFields(preset && preset.responseFormat ? { ...settings, answerFormat: 'text' } : settings);
  if (extra.error) return { error: extra.error };
  const body = {
    model: config.model || 'qvl',
    messages,
    stream: true,
    stream_options: { include_usage: true },
    temperature: settings.temperature,
  };
  if (settings.maxTokens > 0) body.max_tokens = settings.maxTokens;
  if (settings.maxPixels > 0) body.max_pixels = effectiveMaxPixels(config, settings.maxPixels);
  Object.assign(body, extra.fields);
  if (preset && preset.responseFormat) body.response_format = preset.responseFormat;
  if (preset && preset.minTokens) Object.assign(body, raisedPixels(config, settings.maxPixels, preset.minTokens));
  return { body };
}

// The short line under the composer while a non-default format or tools are in use.
export function modeSummary(settings) {
  const parts = [];
  if (settings.answerFormat === 'json_object') parts.push('JSON answers');
  if (settings.answerFormat === 'json_schema') parts.push('JSON schema answers');
  const tools = checkToolsText(settings.tools);
  if (tools.error) parts.push('tools: invalid');
  else if (tools.value.length) {
    const names = tools.value.map((t) => t.function.name);
    const shown = names.length > 3 ? `${names.slice(0, 3).join(', ')} +${names.length - 3}` : names.join(', ');
    parts.push(`tools (${settings.toolChoice}): ${shown}`);
  }
  return parts.join(' · ');
}
